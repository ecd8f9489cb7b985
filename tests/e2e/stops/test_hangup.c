/* tests/e2e/stops/test_hangup.c — end-to-end: the run's terminal or the reader of
 * its output goes away, and the steps trained since the last save are kept
 * (base/signals.h).
 *
 *  - hangup: ./train_gpt on a pty of its own (forkpty: the session leader,
 *    as a login shell's foreground job is reached by its shell), the pty's
 *    master closed mid-run as sshd closes it when the connection drops. The
 *    kernel sends SIGHUP; a second SIGHUP follows, as a shell resends it to
 *    its jobs. Wanted: exit 75, the newest save is of the last logged step,
 *    --save's model file written, and --resume continues to the end. Every
 *    write to the hung-up terminal after it fails (EIO), the stop line's
 *    included. Before, SIGHUP's default action killed the run: no save of
 *    the steps since the last --save-every.
 *  - nohup: SIGHUP ignored at exec, as nohup(1) does: the run trains on to
 *    its end after the hangup (exit 0, every step logged).
 *  - `2>&1 | tee`: stdout and stderr a pipe whose reader exits mid-run,
 *    alone (`| head`) or on the Ctrl-C that also reached the trainer.
 *    Wanted: exit 75 and the save of the last logged step. Before, the
 *    next line printed raised SIGPIPE and killed the run, saving nothing.
 *
 * Each run is held at the start of step 3 (the pause hook,
 * TRAIN_GPT_TEST_PAUSE_AT=step:3) while its terminal or reader goes, then
 * let go: steps 1 and 2 are trained and the run is certainly not over. */
#include <criterion/criterion.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt/checkpoint.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"


/* Read fd until `text` has appeared in what it gave (or timeout_ms, or its
 * end); 1 when seen. */
static int read_until(int fd, const char *text, int timeout_ms)
{
    static char seen[1 << 16];
    size_t n = 0;
    seen[0] = 0;
    for (int waited = 0; waited < timeout_ms; waited += 50) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0) continue;
        if (n > sizeof seen / 2) { /* keep the tail, where the text may be arriving */
            memmove(seen, seen + n - 256, 256);
            n = 256;
        }
        ssize_t r = read(fd, seen + n, sizeof seen - 1 - n);
        if (r <= 0) return 0;
        n += (size_t)r;
        seen[n] = 0;
        if (strstr(seen, text)) return 1;
    }
    return 0;
}

/* ./train_gpt args run by sh -c 'exec ...' in the child of fork (on_pty: a
 * forkpty, its pty the controlling terminal and stdin/stdout/stderr; else
 * stdout and stderr into a pipe). *fd: the master, or the pipe's read end.
 * ignore_hup: SIGHUP ignored first, as nohup does. */
static pid_t spawn(const char *env, const char *args, int on_pty, int ignore_hup, int *fd)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "exec env %s %s %s", env, tc_bin(), args);
    int p[2] = {-1, -1};
    pid_t pid;
    if (on_pty) {
        pid = forkpty(fd, NULL, NULL, NULL);
    } else {
        cr_assert_eq(pipe(p), 0);
        pid = fork();
        *fd = p[0];
    }
    cr_assert(pid >= 0);
    if (pid == 0) {
        if (!on_pty && (dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0 || close(p[0]) < 0)) _exit(126);
        if (ignore_hup) signal(SIGHUP, SIG_IGN);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    if (!on_pty) close(p[1]);
    return pid;
}

static int exit_status(pid_t pid)
{
    int st = tc_wait(pid, 60000);
    cr_assert(st != -1, "the run did not end within 60 s");
    cr_assert(WIFEXITED(st), "the run was killed by signal %d", WTERMSIG(st));
    return WEXITSTATUS(st);
}

/* The newest save in d/ck is of the last step in the log, and a model
 * file was saved. */
static void expect_last_step_saved(const char *d)
{
    char sd[1024], err[512];
    int step;
    int logged = tc_log_losses(tu_path(d, "l.jsonl"), NULL, NULL, NULL, TC_MAX_STEPS);
    cr_assert_eq(ckpt_find_latest(tu_path(d, "ck"), sd, sizeof sd, &step, err, sizeof err), 1,
                 "no save: %s", err);
    cr_expect_eq(step, logged, "the newest save is of step %d, the log reaches step %d", step,
                 logged);
    cr_expect_gt(step, 1, "the stop came before the run was under way");
    cr_expect(tu_exists(tu_path(d, "m.bin")), "--save's model file was not written");
}

static const char *run_args(const char *d, int steps)
{
    static char a[4096];
    snprintf(a, sizeof a, "%s --steps %d --checkpoint-dir %s --save %s --log %s",
             tc_model_args(d), steps, tu_path(d, "ck"), tu_path(d, "m.bin"),
             tu_path(d, "l.jsonl"));
    return a;
}

/* A run of `steps` steps on fresh shards in d, spawned as spawn() does,
 * held at the start of step 3 (so it is under way and has a save to make):
 * the caller acts, then lets it go with tc_release(tu_path(d, "pause")). */
static pid_t start(const char *d, int steps, int on_pty, int ignore_hup, int *fd)
{
    tc_make_shards(d, 1, 2000);
    char pause[4200]; /* tu_path's buffers are reused */
    snprintf(pause, sizeof pause, "%s", tu_path(d, "pause"));
    pid_t pid = spawn(tc_pause_env(pause, "step:3"), run_args(d, steps), on_pty, ignore_hup, fd);
    /* what it printed is read (a pty or pipe nobody reads would fill) */
    cr_assert(read_until(*fd, "step     2/", 60000), "the run did not reach step 2");
    cr_assert(tc_paused(pause, "step:3", 60000), "the run did not reach step 3");
    return pid;
}

Test(hangup, a_dropped_terminal_saves_and_stops, .timeout = 180)
{
    char *d = tu_tempdir(), args[4200];
    int master;
    pid_t pid = start(d, 8, 1, 0, &master);
    close(master); /* the connection drops: the kernel hangs the pty up, SIGHUP */
    kill(pid, SIGHUP); /* the shell's own SIGHUP to its jobs */
    tc_release(tu_path(d, "pause"));
    cr_assert_eq(exit_status(pid), 75);
    expect_last_step_saved(d);
    /* the same command with --resume continues it to the end */
    snprintf(args, sizeof args, "%s --resume", run_args(d, 8));
    cr_expect_eq(tc_run(NULL, args, tu_path(d, "r")), 0);
    cr_expect_eq(tc_log_losses(tu_path(d, "l.jsonl"), NULL, NULL, NULL, TC_MAX_STEPS), 8);
    free(d);
}

Test(hangup, under_nohup_the_run_trains_on, .timeout = 180)
{
    char *d = tu_tempdir();
    int master;
    pid_t pid = start(d, 5, 1, 1, &master);
    close(master);
    tc_release(tu_path(d, "pause")); /* the ignored SIGHUP did not end the pause */
    cr_assert_eq(exit_status(pid), 0);
    cr_expect_eq(tc_log_losses(tu_path(d, "l.jsonl"), NULL, NULL, NULL, TC_MAX_STEPS), 5);
    free(d);
}

Test(hangup, the_pipe_reader_gone_saves_and_stops, .timeout = 180)
{
    char *d = tu_tempdir();
    int rd;
    pid_t pid = start(d, 40, 0, 0, &rd);
    close(rd); /* `| head`: the reader has what it wanted */
    tc_release(tu_path(d, "pause")); /* its next line raises SIGPIPE */
    cr_assert_eq(exit_status(pid), 75);
    expect_last_step_saved(d);
    cr_expect_lt(tc_log_losses(tu_path(d, "l.jsonl"), NULL, NULL, NULL, TC_MAX_STEPS), 40,
                 "the run went on to its end");
    free(d);
}

Test(hangup, ctrl_c_through_tee_saves_and_stops, .timeout = 180)
{
    char *d = tu_tempdir();
    int rd;
    pid_t pid = start(d, 40, 0, 0, &rd);
    close(rd); /* tee died of the Ctrl-C */
    kill(pid, SIGINT);
    tc_release(tu_path(d, "pause"));
    cr_assert_eq(exit_status(pid), 75);
    expect_last_step_saved(d);
    free(d);
}
