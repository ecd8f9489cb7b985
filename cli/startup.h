/* cli/startup.h — the trainer's start-up, from the flags to the first step.
 *
 * Owns: the start-up order. The world and the ranks' agreement on the
 * flags; the paths the run will write, checked; the checkpoint folder and
 * the save to resume; the model's shape (a file's header, or the flags);
 * then the data, the backend, the memory plan, the header, the arenas, the
 * progress estimate, the parameters (or the save), the folders settled and
 * the old outputs moved aside, and the --log file opened. A stop after each
 * long phase exits through stop_check_startup (cli/stop.h), which names
 * the phase. Also --plan's and --generate's ends of it. Every error exits
 * (dist_fail: under several ranks the message carries the rank and the
 * whole job is aborted). */
#ifndef CLI_STARTUP_H
#define CLI_STARTUP_H

#include "cli/trainer.h"

/* Up to the model's shape, which every mode needs: the world, the flags
 * the ranks agree on, the paths to write and the folders claimed (nothing
 * moved yet), the save to resume, the shape resolved and checked against
 * --seq-len and --recompute. */
void startup_shape(Trainer *tr, int argc, char **argv);

/* --plan: the memory plan printed, on this rank's device. Returns the exit
 * status; the ranks are finalised. */
int startup_plan(Trainer *tr);

/* --generate: the model loaded (or initialised) with one row of seq-len
 * tokens, the tokens printed. No data, no training. Returns the exit
 * status (TRAIN_EXIT_STOPPED_NOTHING when a signal cut it); the ranks are
 * finalised. */
int startup_generate(Trainer *tr);

/* The rest of a training run's start-up, after startup_shape: on return
 * the model holds its parameters (or the save's), the log is open, and
 * loop_run (cli/loop.h) may start. t_start: the process's start
 * (progress_now_ms), for elapsed times. */
void startup_run(Trainer *tr, double t_start);

#endif
