/* cli/params_load.h — a run's first parameters: --init-from's file, or a
 * fresh initialisation from --seed.
 *
 * Owns: streaming them into the model a 4 MiB piece at a time
 * (gpt_set_params_stream), never a host copy of the whole, so the
 * process's peak at start-up stays within the memory plan (which counts
 * the piece with the host copies), and checking that every rank starts
 * from the same parameters. */
#ifndef CLI_PARAMS_LOAD_H
#define CLI_PARAMS_LOAD_H

#include <stddef.h>

#include "cli/trainer.h"

/* Returns 0, or -1 with err (a stop asked for returns -1 with signals
 * pending: the caller's stop_check_startup reports it). Ranks that differ
 * exit together (exit 1). */
int params_load(Trainer *tr, char *err, size_t len);

#endif
