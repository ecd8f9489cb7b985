/* tests/e2e/stops/test_stalled_console.c — end-to-end: a stop reaches its
 * save whatever stdout does, and the schedulers' SIGUSR1 and SIGUSR2 stop
 * like SIGTERM.
 *
 *  - stdout into a fifo that the test holds open and never reads: the run
 *    fills the pipe's 64 KiB and blocks in a write; a SIGTERM then still
 *    saves (the step folder's COMPLETE exists) and exits 75;
 *  - SIGUSR1 and SIGUSR2 each, mid-step: exit 75, the previous step saved,
 *    the same line as for SIGTERM. */
#define _GNU_SOURCE /* F_GETPIPE_SZ */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt/checkpoint.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

static int exit_status(int st) { return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1; }

Test(stalled_console, sigterm_saves_with_stdout_into_a_full_pipe, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    /* stdout is d/s.out, a fifo this test opens for reading and writing (so
     * the run's open does not wait for a reader) and never reads */
    const char *fifo = tu_path(d, "s.out");
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    int held = open(fifo, O_RDWR);
    cr_assert(held >= 0);
    /* no block delay: about a hundred bytes of step line a step, the pipe is
     * full after a few hundred steps */
    snprintf(args, sizeof args, "%s --steps 100000 --checkpoint-dir %s/ck --log %s",
             tc_model_args(d), d, tu_path(d, "s.jsonl"));
    pid_t pid = tc_spawn(NULL, args, tu_path(d, "s"));
    /* blocked in a write: the kernel says the run waits in the pipe's write
     * (/proc/PID/wchan: pipe_write, anon_pipe_write), the pipe nearly full;
     * polled, the 90 s only a failure guard */
    int cap = fcntl(held, F_GETPIPE_SZ), queued = 0, stalled = 0, last = -1;
    cr_assert_gt(cap, 0);
    char wchan_path[64];
    snprintf(wchan_path, sizeof wchan_path, "/proc/%d/wchan", (int)pid);
    for (int t = 0; t < 90000 && !stalled; t += 10) {
        tc_sleep_ms(10);
        cr_assert_eq(ioctl(held, FIONREAD, &queued), 0);
        char wchan[128] = "";
        FILE *f = fopen(wchan_path, "r"); /* a /proc file: no size to read by */
        if (f && !fgets(wchan, sizeof wchan, f)) wchan[0] = 0;
        if (f) fclose(f);
        stalled = queued > cap - 8192 && strstr(wchan, "pipe_write");
    }
    cr_assert(stalled, "the run's stdout never filled the pipe (%d bytes queued)", queued);
    last = tc_log_losses(tu_path(d, "s.jsonl"), NULL, NULL, NULL, 1 << 20);
    kill(pid, SIGTERM);
    int rc = exit_status(tc_wait(pid, 30000));
    cr_expect_eq(rc, 75, "a SIGTERM with stdout into a stalled pipe: exit %d, not 75", rc);
    char sd[1024], err[512];
    int step = -1;
    cr_expect_eq(ckpt_find_latest(tu_path(d, "ck"), sd, sizeof sd, &step, err, sizeof err), 1,
                 "no complete save after the stop: %s", err);
    cr_expect_geq(step, last, "the save is of step %d, the log had %d", step, last);
    cr_expect(tc_file_has(tu_path(d, "s.err"), "signal received: stopping at the next block"));
    close(held);
    free(d);
}

/* Signal the run held at the start of step 3 (TRAIN_GPT_TEST_PAUSE_AT)
 * with sig; expects the SIGTERM outcome: exit 75 and step 2 saved. */
static void stops_like_sigterm(int sig)
{
    char *d = tu_tempdir(), args[4096], line[256];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s --steps 6 --checkpoint-dir %s/ck", tc_model_args(d), d);
    char pause[4200]; /* tu_path's buffers are reused */
    snprintf(pause, sizeof pause, "%s", tu_path(d, "pause"));
    pid_t pid = tc_spawn(tc_pause_env(pause, "step:3"), args, tu_path(d, "s"));
    cr_assert(tc_paused(pause, "step:3", 60000), "no step 3");
    kill(pid, sig);
    int rc = exit_status(tc_wait(pid, 30000));
    cr_expect_eq(rc, 75, "signal %d: exit %d, not 75 (stopped with a save)", sig, rc);
    snprintf(line, sizeof line, "stopped by signal %d during step 3 (its partial work is "
             "discarded); step 2 is saved in ", sig);
    cr_expect(tc_file_has(tu_path(d, "s.out"), line), "%s", line);
    cr_expect(tc_file_has(tu_path(d, "s.err"), "SIGUSR1 or SIGUSR2 received"));
    char sd[1024], err[512];
    int step = -1;
    cr_expect_eq(ckpt_find_latest(tu_path(d, "ck"), sd, sizeof sd, &step, err, sizeof err), 1);
    cr_expect_eq(step, 2);
    free(d);
}

Test(stalled_console, sigusr1_stops_and_saves, .timeout = 120) { stops_like_sigterm(SIGUSR1); }

Test(stalled_console, sigusr2_stops_and_saves, .timeout = 120) { stops_like_sigterm(SIGUSR2); }
