/* cli/stop.h — what a stopped run keeps.
 *
 * Owns: the stop policy. On a stop (a signal, or --max-bad-steps non-finite
 * steps) the run keeps what its flags ask for, as of its last completed
 * step: a resumable checkpoint with --checkpoint-dir or
 * --save-checkpoint-llmc, the model file with --save; and says plainly what
 * it kept, or that nothing was. A stop during start-up keeps nothing and
 * removes the folders the run made. A checkpoint that fails during the run
 * still leaves --save's model file. Also the ranks' agreement on a signal,
 * and with one rank the stop at a block boundary (the model's block hook). */
#ifndef CLI_STOP_H
#define CLI_STOP_H

#include <stddef.h>

#include "distributed/dist.h"
#include "cli/trainer.h"

/* One rank: a pending signal abandons the pass in progress at the next
 * block boundary (model/gpt.h's block hook; cli/loop.c discards the cut
 * step). Replaces progress_init's hook on g with one that still draws p's
 * in-step line; call it after progress_init. Several ranks never install
 * it: they stop together at a step's end (stop_agreed_signal). */
void stop_install_block_hook(GPT *g, Progress *p);

/* The signal any rank has received, or 0; every rank gets the same answer
 * (a collective under several ranks). */
int stop_agreed_signal(Dist *d);

/* Start-up's stop point, after each long phase (`phase` names it: "initialising
 * the parameters"): when any rank has a stop signal (base/signals.h), every rank prints
 * what a stop before the first step keeps (nothing; a resume's save is still
 * there) and exits with TRAIN_EXIT_STOPPED_NOTHING, or _RESUMABLE when
 * resuming. The phases give up early on the flag (base/stop.h), so a stop
 * lands here within a fraction of a second. Collective; before
 * session_settle only (nothing moved yet). */
void stop_check_startup(Trainer *tr, const char *phase);

/* After the loop's TRAIN_STOPPED (cli/loop.h): keep what the flags ask,
 * print what was kept, and return the exit status (base/signals.h's
 * TRAIN_EXIT_STOPPED_*), or -1 with err when a save failed. Collective. */
int stop_keep(Trainer *tr, char *err, size_t len);

/* --max-bad-steps reached after `step`: keep what the flags ask, say so
 * (with the command line that returns to the last good save), and return
 * TRAIN_EXIT_NONFINITE. Collective. */
int stop_nonfinite(Trainer *tr, int step, char *err, size_t len);

/* A checkpoint of `step` (--checkpoint-dir's, or llm.c's export) failed
 * (err says how; the previous save is kept): --save's model file is still
 * written before the run exits 1 (rescued elsewhere when its own write
 * fails too, cli/outputs.h), and err says where it went. Collective, as
 * the failed save was. */
void stop_after_failed_save(Trainer *tr, int step, char *err, size_t len);

#endif
