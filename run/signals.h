/* run/signals.h — stopping cleanly on SIGINT and SIGTERM.
 *
 * Owns: the process-wide flag the signal handler sets. The first SIGINT or
 * SIGTERM only records the signal (the training loop finishes its step,
 * saves, and exits with TRAIN_EXIT_STOPPED); a second one exits at once with
 * status 128 + signal number. SIGXFSZ is ignored, so a file-size limit
 * makes a write fail with EFBIG and get a message, as a full disk does. */
#ifndef RUN_SIGNALS_H
#define RUN_SIGNALS_H

/* Exit statuses of ./train_gpt beyond 0 (done), 1 (error), 2 (usage). */
#define TRAIN_EXIT_NONFINITE 4 /* --max-bad-steps consecutive non-finite steps */
#define TRAIN_EXIT_STOPPED 75  /* stopped by SIGINT/SIGTERM after the step (EX_TEMPFAIL) */

/* Install the handlers (sigaction, SA_RESTART). Returns 0 or -1. */
int signals_install(void);

/* The first signal received (SIGINT or SIGTERM), or 0. */
int signals_pending(void);

#endif
