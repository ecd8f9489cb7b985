/* tests/e2e/train/test_limits.c — limits found at start-up, never a hang:
 * under ulimit -v (where OpenBLAS retried a failed 128 MiB buffer map
 * forever, in its load-time constructor below about 322,000 KiB and in the
 * first matmul above) and ulimit -n (where the first save failed and every
 * step was lost), a run trains or stops with exit 1 and one line. A CUDA
 * build may stop earlier still, in the loader (exit 127, its own one
 * line), when the CUDA libraries do not fit. */
#define _GNU_SOURCE /* close_range */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

#ifdef __SANITIZE_ADDRESS__
#define SKIP_UNDER_ASAN() cr_skip_test("address limits are ASan's own under ASan")
#else
#define SKIP_UNDER_ASAN() ((void)0)
#endif

/* Exit 0, or exit 1 and one line naming a limit in PREFIX.err. */
static void expect_rc(int rc, const char *d, const char *limit)
{
    char *err = tu_read_file(tu_path(d, "run.err"), NULL);
    int loader = rc == 127 && err && strstr(err, "error while loading shared libraries");
    cr_expect(rc == 0 || rc == 1 || loader, "%s: exit %d: %s", limit, rc, err ? err : "");
    if (rc == 1) {
        const char *nl = err ? strchr(err, '\n') : NULL;
        cr_expect(err && strstr(err, "limit") && nl && nl[1] == 0, "%s: not one line: %s", limit,
                  err ? err : "");
    }
    free(err);
}

/* Each run its own checkpoint folder and log: a folder holding another
 * run's save would stop this one for that, not for its limit. */
static void run_args(const char *d, const char *extra, char *args, size_t len)
{
    static int runs;
    runs++;
    snprintf(args, len, "%s --steps 2 --op-costs flops --checkpoint-dir '%s/ck%d' "
             "--log '%s/log%d.jsonl' %s", tc_model_args(d), d, runs, d, runs, extra);
}

static void expect_trains_or_one_line(const char *d, const char *limit, const char *extra)
{
    char args[2048], prefix[600], env[64];
    snprintf(env, sizeof env, "%s;", limit);
    snprintf(prefix, sizeof prefix, "%s/run", d);
    run_args(d, extra, args, sizeof args);
    expect_rc(tc_run(env, args, prefix), d, limit);
}

/* The same under ulimit -n n, with only stdin, stdout and stderr open:
 * the runner's own descriptors would count against the limit (and a shell
 * given ulimit -n 8 beside them exits 2 before train_gpt runs). */
static void expect_trains_or_one_line_files(const char *d, int n)
{
    char args[2048], cmd[8192], limit[32];
    snprintf(limit, sizeof limit, "ulimit -n %d", n);
    run_args(d, "", args, sizeof args);
    /* no redirection in the shell: dash moves descriptors past 10 for one */
    snprintf(cmd, sizeof cmd, "exec %s %s", tc_bin(), args);
    int out = open(tu_path(d, "run.out"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(tu_path(d, "run.err"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(out >= 0 && err >= 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        struct rlimit r;
        if (dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(126);
        close_range(3, ~0U, 0);
        if (getrlimit(RLIMIT_NOFILE, &r) != 0) _exit(126);
        r.rlim_cur = (rlim_t)n;
        if (setrlimit(RLIMIT_NOFILE, &r) != 0) _exit(126);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(126);
    }
    close(out), close(err);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    expect_rc(WIFEXITED(st) ? WEXITSTATUS(st) : -1, d, limit);
}

Test(limits, address_space_limit_stops_or_trains, .timeout = 120)
{
    SKIP_UNDER_ASAN();
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 20000);
    const char *v[] = {"ulimit -v 150000", "ulimit -v 250000", "ulimit -v 400000",
                       "ulimit -v 440000"};
    for (int i = 0; i < 4; i++) expect_trains_or_one_line(d, v[i], "");
    /* one OpenMP thread: one constructor buffer, so 250000 passes the load */
    expect_trains_or_one_line(d, "export OMP_NUM_THREADS=1; ulimit -v 250000", "--threads 1");
    tu_remove_tree(d);
}

/* A limit OpenBLAS fits under but the plan does not: one line naming the
 * limit and the arenas' need, before any arena is allocated. */
Test(limits, address_space_below_the_plan_stops_naming_it, .timeout = 120)
{
    SKIP_UNDER_ASAN();
    char *d = tu_tempdir(), args[2048], prefix[600];
    tc_make_shards(d, 1, 20000);
    snprintf(prefix, sizeof prefix, "%s/run", d);
    /* about 85M parameters: 1.3 GB of weights, gradients and AdamW state */
    snprintf(args, sizeof args, "--train-data '%s/train_*.bin' --val-data '%s/val.bin' "
             "--val-every 0 --layers 12 --channels 768 --heads 12 --seq-len 16 --vocab 256 "
             "--batch 2 --device cpu --threads 1 --steps 1", d, d);
    int rc = tc_run("ulimit -v 700000;", args, prefix);
    char *err = tu_read_file(tu_path(d, "run.err"), NULL);
    int loader = rc == 127 && err && strstr(err, "error while loading shared libraries");
    if (!loader) {
        cr_expect_eq(rc, 1, "exit %d: %s", rc, err ? err : "");
        cr_expect(err && strstr(err, "(ulimit -v) is 700000 KiB; this run's arenas"), "%s",
                  err ? err : "");
        /* 1.3 GB of weights and their state: no --recompute can help */
        cr_expect(err && strstr(err, "a smaller model") && !strstr(err, "--recompute 1"), "%s",
                  err ? err : "");
    }
    free(err);
    tu_remove_tree(d);
}

Test(limits, open_file_limit_stops_or_trains, .timeout = 120)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 20000);
    const int n[] = {8, 10, 12, 16};
    int trained = 0, stopped = 0;
    for (int i = 0; i < 4; i++) {
        expect_trains_or_one_line_files(d, n[i]);
        char *err = tu_read_file(tu_path(d, "run.err"), NULL);
        cr_log_info("ulimit -n %d: %s", n[i], err && *err ? err : "trained\n");
        if (err && strstr(err, "open-file limit")) stopped++;
        else trained++;
        free(err);
    }
    /* 8 is below what a run needs (3 open + 6), 16 above */
    cr_expect(stopped >= 1 && trained >= 1, "stopped %d, trained %d", stopped, trained);
    tu_remove_tree(d);
}
