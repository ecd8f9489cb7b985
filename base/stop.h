/* base/stop.h — asking a long piece of start-up work whether to give up.
 *
 * Owns: the process-wide question "has a stop been asked for?", which the
 * long loops below the CLI poll at natural points (a parameter tensor's
 * fill, a shard's MiB read for hashing, a model file's chunk, an op-cost
 * round's op) without depending on the CLI or ckpt/. The trainer answers it with
 * base/signals.h's flag (signals_install sets the poll); unset, it answers
 * "no", so libraries and tests that install nothing never stop.
 *
 * Work that gives up returns its error value with STOP_MESSAGE in err; the
 * caller that installed the poll tells a stop from a failure by the flag. */
#ifndef BASE_STOP_H
#define BASE_STOP_H

#define STOP_MESSAGE "stopped by a signal"

/* Set the poll (NULL: never stop). */
void stop_set_poll(int (*poll)(void));

/* Nonzero when the poll says stop. Cheap: one call through a pointer. */
int stop_requested(void);

#endif
