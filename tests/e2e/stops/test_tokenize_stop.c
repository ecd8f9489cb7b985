/* tests/e2e/stops/test_tokenize_stop.c — ./tokenize stopped by a signal mid-job.
 *
 * The input is a FIFO that this test keeps writing text into, so the job is
 * certainly inside its read loop when the signal comes, however slow the
 * build (the ASan one included). Expected, for SIGINT, SIGTERM and SIGHUP:
 * exit 128 + N within the bound, one line naming the signal and the prefix,
 * no staging folder left (its unlinked token spool had grown by then), and
 * the dataset already at the prefix unchanged, file for file. Before, the
 * default action killed the job (statuses 2, 15, 1 from the wait) and its
 * staging folder stayed on disk (with the shards written so far, had it
 * reached them) until the next ./tokenize of that prefix. The poll between
 * shards is the same flag; it is not reached here (the FIFO never ends). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

/* The bound after the signal: 5 s, 60 s in the sanitizer build (whose
 * encoder is many times slower; a poll comes every 4 MiB read). */
static int bound_ms(void) { return strstr(tc_tokenize_bin(), "asan") ? 60000 : 5000; }

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* ls -A of dir as one string (sorted), with each file's size. */
static char *listing(const char *dir)
{
    char cmd[1200], *out = NULL;
    snprintf(cmd, sizeof cmd, "cd '%s' && LC_ALL=C ls -lA --time-style=+ | awk 'NR > 1 "
             "{print $5, $NF}'", dir);
    cr_assert_eq(tu_run_output(cmd, &out, NULL), 0);
    return out;
}

/* Write into fd (non-blocking) for up to ms, or until child exits;
 * returns the child's wait status, or -1 if it is still running. */
static int feed_until_exit(int fd, pid_t child, double ms, size_t *fed)
{
    static const char text[] = "To be, or not to be, that is the question:\n"
                               "Whether 'tis nobler in the mind to suffer\n";
    char chunk[1 << 16];
    for (size_t i = 0; i < sizeof chunk; i++) chunk[i] = text[i % (sizeof text - 1)];
    double end = now_ms() + ms;
    int st;
    while (now_ms() < end) {
        pid_t w = waitpid(child, &st, WNOHANG);
        if (w == child) return st;
        ssize_t n = write(fd, chunk, sizeof chunk);
        if (n > 0) *fed += (size_t)n;
        else if (n < 0 && errno != EAGAIN) cr_assert_fail("write to the FIFO: %s", strerror(errno));
        else usleep(1000);
    }
    return -1;
}

static void stop_mid_job(int sig, const char *name)
{
    char *d = tu_tempdir(), cmd[4096], fifo[700], prefix[700], err[700];
    snprintf(prefix, sizeof prefix, "%s/ds", d);
    snprintf(fifo, sizeof fifo, "%s/text.fifo", d);
    snprintf(err, sizeof err, "%s/tok.err", d);
    /* the dataset the stopped job must leave as it is */
    snprintf(cmd, sizeof cmd, "%s --quiet --out '%s' '%s'", tc_tokenize_bin(), prefix,
             TU_SHAKESPEARE);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    char *before = listing(d);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    /* read-write: never blocks, and a reader always exists, so a write
     * never raises SIGPIPE, whenever ./tokenize opens or closes its end */
    int fd = open(fifo, O_RDWR | O_NONBLOCK);
    cr_assert(fd >= 0);
    pid_t child = fork();
    cr_assert(child >= 0);
    if (child == 0) {
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (e < 0 || dup2(e, 2) < 0) _exit(99);
        close(fd);
        for (int s = 1; s < 32; s++) signal(s, SIG_DFL); /* as a shell starts it */
        execl(tc_tokenize_bin(), "tokenize", "--overwrite", "--out", prefix, fifo, (char *)NULL);
        _exit(98);
    }
    /* 16 MiB in: the vocabulary is loaded and the job is in its read loop */
    size_t fed = 0;
    while (fed < (16u << 20)) {
        int st = feed_until_exit(fd, child, 100, &fed);
        cr_assert_eq(st, -1, "./tokenize ended before the signal (status %d): %s", st,
                     tu_read_file(err, NULL));
    }
    cr_assert_eq(kill(child, sig), 0);
    double t0 = now_ms();
    int st = feed_until_exit(fd, child, bound_ms(), &fed);
    double took = now_ms() - t0;
    if (st == -1) {
        kill(child, SIGKILL);
        waitpid(child, &st, 0);
        cr_assert_fail("%s: ./tokenize still running %.0f ms after the signal", name, took);
    }
    close(fd);
    unlink(fifo);
    char *msg = tu_read_file(err, NULL);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 128 + sig, "%s: status %d, want exit %d: %s",
              name, st, 128 + sig, msg);
    char want[1024];
    snprintf(want, sizeof want, "tokenize: stopped by %s: the shards written so far were removed, "
             "and nothing under %s was changed\n", name, prefix);
    cr_expect(msg && strstr(msg, want), "%s: not '%s' in:\n%s", name, want, msg);
    unlink(err);
    char *after = listing(d);
    cr_expect_str_eq(after, before, "%s: the folder changed (a staging folder left?)", name);
    cr_log_info("%s: %.0f ms from the signal to exit, %zu MiB fed", name, took, fed >> 20);
    free(msg), free(before), free(after);
    tu_remove_tree(d);
}

Test(tokenize_stop, sigint_mid_job_removes_the_partial_shards, .timeout = 120)
{
    stop_mid_job(SIGINT, "SIGINT");
}

Test(tokenize_stop, sigterm_mid_job_removes_the_partial_shards, .timeout = 120)
{
    stop_mid_job(SIGTERM, "SIGTERM");
}

Test(tokenize_stop, sighup_mid_job_removes_the_partial_shards, .timeout = 120)
{
    stop_mid_job(SIGHUP, "SIGHUP");
}
