/* cli/loop.h — the training loop.
 *
 * Owns: the steps from the resumed one (or 0) to --steps: the val loss and
 * --eval-file score between them, each step's line and log line, samples,
 * the saves and llm.c exports due, --dump-grads after step 1, --profile-ops'
 * table, and where a signal stopped the run (Trainer's stop record; what
 * that stop keeps is cli/stop.h's). */
#ifndef CLI_LOOP_H
#define CLI_LOOP_H

#include <stddef.h>

#include "cli/trainer.h"

/* loop_run's return when a signal stopped the run (tr->stop). */
#define TRAIN_STOPPED 1000

/* Steps start_step+1 .. --steps, with val losses, samples, saves, and the
 * final val loss. Returns 0, -1 with err, TRAIN_EXIT_NONFINITE (after
 * keeping what the flags ask, cli/stop.h), or TRAIN_STOPPED. Collective. */
int loop_run(Trainer *tr, char *err, size_t len);

#endif
