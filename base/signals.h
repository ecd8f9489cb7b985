/* base/signals.h — stopping promptly on SIGINT, SIGTERM, SIGHUP, SIGPIPE,
 * SIGUSR1 and SIGUSR2.
 *
 * Owns: the process-wide flag the signal handler sets, and the exit
 * statuses of a stopped run. The first SIGINT, SIGTERM, SIGHUP, SIGPIPE,
 * SIGUSR1 or SIGUSR2 only records the signal: the trainer stops at the next block boundary
 * (model/gpt.h's block hook), saves what its flags ask for, and exits with
 * one of the TRAIN_EXIT_STOPPED_* statuses. During start-up the flag
 * answers base/stop.h's poll, so the long loops there (parameter init,
 * hashing, loading, op-cost timing) give up within a fraction of a second.
 *
 * A second SIGINT or SIGTERM (after a first one) exits at once with status
 * 128 + signal number, removing the temp file of a write in progress
 * (base/fileio.h), so no half-written file is left under any name.
 * SIGHUP, SIGPIPE, SIGUSR1 and SIGUSR2 never do: a dropped terminal delivers SIGHUP more than
 * once (the kernel to the foreground group, the shell to its jobs), and
 * every later write to a closed pipe raises SIGPIPE again; by default
 * either would kill the run with every step since its last save. SIGHUP
 * ignored at start (nohup) stays ignored: the run trains on. SIGPIPE is a
 * stop because the output's reader (`| tee`) is gone, as it is when a
 * Ctrl-C or hangup ended it too; writes to a vanished terminal or pipe
 * then fail (EIO, EPIPE) and are ignored, never ending the save.
 * SIGUSR1 and SIGUSR2 are what schedulers send ahead of a time limit
 * (Slurm's --signal=USR1@SECONDS): a stop and save like SIGTERM, whose
 * repeat (Slurm signals every process of the step) changes nothing.
 * From the first stop signal on, stdout and stderr into a pipe or socket
 * are non-blocking: a reader that stalled (a pipe nobody reads, a paused
 * `| less`) cannot hold the stop, and text it cannot take is dropped.
 * SIGXFSZ is ignored, so a file-size limit makes a write fail with EFBIG
 * and get a message, as a full disk does. */
#ifndef BASE_SIGNALS_H
#define BASE_SIGNALS_H

/* Exit statuses of ./train_gpt beyond 0 (done), 1 (error), 2 (usage). */
#define TRAIN_EXIT_NONFINITE 4      /* --max-bad-steps consecutive non-finite steps */
#define TRAIN_EXIT_STOPPED_RESUMABLE 75 /* stopped by a signal; a checkpoint to --resume from
                                         * is in --checkpoint-dir (EX_TEMPFAIL) */
#define TRAIN_EXIT_STOPPED_MODEL 76 /* stopped by a signal; only --save's model file written
                                     * (not resumable: no optimizer state, no data position) */
#define TRAIN_EXIT_STOPPED_NOTHING 77 /* stopped by a signal; nothing saved (no --checkpoint-dir,
                                       * no --save, or no step trained yet; --generate) */

/* Install the handlers (sigaction, SA_RESTART: see signals.c) and
 * base/stop.h's poll.
 * Returns 0 or -1. */
int signals_install(void);

/* The first stop signal received (SIGINT, SIGTERM, SIGHUP, SIGPIPE,
 * SIGUSR1, SIGUSR2), or 0. */
int signals_pending(void);

#endif
