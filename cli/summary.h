/* cli/summary.h — what a finished run reports about itself.
 *
 * Owns: the end-of-run report: the memory planner's predicted peak against
 * the arenas' high-water mark and the measured peak (the process's peak
 * RSS on the cpu; the device bytes used since before the arenas on a
 * device backend), --op-costs' predicted step time against the measured
 * one (cli/costs.h), and the "summary" line of --log with all of it. */
#ifndef CLI_SUMMARY_H
#define CLI_SUMMARY_H

#include "cli/trainer.h"

/* Print the report to stdout and log it (--log), after the last step.
 * Every rank calls it; only rank 0's stdout and log are kept. */
void summary_print(Trainer *tr);

#endif
