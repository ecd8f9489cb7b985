/* tests/e2e/stops/test_startup_stops.c — end-to-end: a SIGINT or SIGTERM during
 * ./train_gpt's start-up stops it there, within a bound, and leaves the
 * disk as it was.
 *
 * The run is held by the pause hook (TRAIN_GPT_TEST_PAUSE_AT, base/fileio.h)
 * at the start of the phase ("startup:op costs", "startup:params"), and
 * signalled there; the signal ends the pause and the phase's work begins.
 * The signal must end the run within STOP_BOUND_MS with exit 77 (nothing
 * saved: docs/resume.md) and the line naming the phase;
 * the --checkpoint-dir it made, --save, --log and the op-cost cache are
 * not there afterwards. Before the fix the signal waited for step 1's
 * first block: the run went on for the rest of the phase.
 *
 * The measurement is given a phase far longer than the bound: --op-costs
 * measure at B=8, T=1024, C=768 on one CPU thread, 5 timed rounds of one
 * block, 46 s measured on the 2-core VM (2026-12-01); stopped at its first
 * op, it costs the test nothing. The parameters' initialisation needs no
 * such size: the signal ends the pause before the first value is drawn,
 * and gpt_init_weights polls at its first value (every 2^20 after), so a
 * tiny model stops there too, in the same call; a big one (240M
 * parameters, as this test had) only added 3 GiB of arenas to zero before
 * the pause, 38 s of the suite. That the init polls, and gives up at the
 * poll, is each_long_loop_polls_and_gives_up's (in-process, below).
 *
 * Under mpirun (two ranks) the ranks agree: both signalled during the
 * measurement stop within the bound; with only rank 1 signalled, rank 0
 * finishes its measurement, and then both stop together at the same point
 * with the same status. In the val loss before step 1 (where two ranks have
 * no stop at a block) a signal to rank 1 alone stops both after the val
 * batch in progress; before, the val loss and step 1 ran first.
 *
 * A --resume's hashing of the train data, stopped by a SIGINT: exit 75
 * within the bound, before the hash ends, nothing changed (a sparse 64 MiB
 * shard and its manifest stand in for GBs of data).
 *
 * In-process, each long loop polls base/stop.h where stated: a poll that
 * says stop at its k-th call ends the loop there, with the loop's error
 * value and STOP_MESSAGE. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/stop.h"
#include "data/dataset.h"
#include "data/shard.h"
#include "model/gpt.h"
#include "interop/model_file.h"
#include "model/opcost.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

/* The bound: 5 s. Under make test-asan (the sanitizer build, whose CPU ops
 * run several times slower, with the polls between them as far apart) 60 s:
 * there the point is the stop paths' memory safety, not their speed. */
static int under_asan(void) { return strstr(tc_bin(), "asan") != NULL; }
#define STOP_BOUND_MS (under_asan() ? 60000 : 5000)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Wait at most bound_ms for pid; its exit status, or -1 (then it is killed).
 * *took_ms: the wait. */
static int exit_within(pid_t pid, int bound_ms, double *took_ms)
{
    double t0 = now_ms();
    int st = tc_wait(pid, bound_ms);
    *took_ms = now_ms() - t0;
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The signalled run (or mpirun) pid ends with status want within the bound. */
static void expect_stop(pid_t pid, int want)
{
    double took;
    int rc = exit_within(pid, STOP_BOUND_MS, &took);
    cr_assert_eq(rc, want, "exit %d %.0f ms after the signal (the bound is %d ms, the status "
                 "wanted %d)", rc, took, STOP_BOUND_MS, want);
}

/* The op-cost measurement's shape: one block of GPT-2 small at B=8, T=1024. */
#define MEASURE_SHAPE                                                                          \
    "--layers 2 --channels 768 --heads 12 --seq-len 1024 --vocab 256 --val-every 0 "         \
    "--device cpu --threads 1 --op-costs measure"

Test(startup_stops, sigterm_during_op_cost_measurement, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], env[9000];
    tc_make_shards(d, 1, 40000);
    snprintf(env, sizeof env, "TRAIN_GPT_CACHE_DIR=%s", tu_path(d, "cache"));
    snprintf(args, sizeof args, "--train-data '%s/train_*.bin' " MEASURE_SHAPE " --batch 8 "
             "--steps 3 --checkpoint-dir %s --save-checkpoint-llmc %s/lc --save %s --log %s", d,
             tu_path(d, "ck"), d, tu_path(d, "m.bin"), tu_path(d, "l.jsonl"));
    char pause[4200]; /* tu_path's buffers are reused */
    snprintf(pause, sizeof pause, "%s", tu_path(d, "pause"));
    snprintf(env + strlen(env), sizeof env - strlen(env), " %s",
             tc_pause_env(pause, "startup:op costs"));
    pid_t pid = tc_spawn(env, args, tu_path(d, "s"));
    cr_assert(tc_paused(pause, "startup:op costs", 30000), "the measurement did not start");
    cr_assert(tc_file_has(tu_path(d, "s.out"), "op costs: measuring one block's ops"));
    kill(pid, SIGTERM);
    expect_stop(pid, 77);
    cr_expect(tc_file_has(tu_path(d, "s.out"),
                          "stopped by signal 15 during start-up (planning the memory (measuring "
                          "the op costs)); nothing saved: no step had run; no file was written or "
                          "moved\n"));
    cr_expect(!tc_file_has(tu_path(d, "s.out"), "op costs: measured"));
    cr_expect(!tu_exists(tu_path(d, "ck")), "the checkpoint folder this run made is left");
    cr_expect(!tu_exists(tu_path(d, "lc")), "the llm.c folder this run made is left");
    cr_expect(!tu_exists(tu_path(d, "m.bin")) && !tu_exists(tu_path(d, "l.jsonl")));
    DIR *c = opendir(tu_path(d, "cache"));
    int cached = 0;
    for (struct dirent *e; c && (e = readdir(c));) cached += e->d_name[0] != '.';
    if (c) closedir(c);
    cr_expect_eq(cached, 0, "a half-measured cost was cached");
    free(d);
}

Test(startup_stops, sigint_during_parameter_init, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    /* an existing checkpoint folder, as a user's: it stays as it was */
    cr_assert_eq(mkdir(tu_path(d, "ck"), 0755), 0);
    tu_write_text(tu_path(d, "ck/notes.txt"), "mine\n");
    snprintf(args, sizeof args, "--train-data '%s/train_*.bin' --val-every 0 --layers 2 "
             "--channels 32 --heads 4 --seq-len 16 --vocab 256 --batch 1 --steps 2 "
             "--device cpu --threads 1 --op-costs flops --checkpoint-dir %s/ck", d, d);
    char pause[4200];
    snprintf(pause, sizeof pause, "%s", tu_path(d, "pause"));
    pid_t pid = tc_spawn(tc_pause_env(pause, "startup:params"), args, tu_path(d, "s"));
    cr_assert(tc_paused(pause, "startup:params", 60000),
              "the run did not reach the parameters' initialisation");
    kill(pid, SIGINT);
    expect_stop(pid, 77);
    cr_expect(tc_file_has(tu_path(d, "s.out"),
                          "stopped by signal 2 during start-up (initialising the parameters); "
                          "nothing saved: no step had run; no file was written or moved\n"));
    cr_expect(!tc_file_has(tu_path(d, "s.out"), "step     1/"), "the run got past the init");
    char *notes = tu_read_file(tu_path(d, "ck/notes.txt"), NULL);
    cr_expect(notes && strcmp(notes, "mine\n") == 0, "the user's folder changed");
    free(notes);
    free(d);
}

/* The pids of mpirun's ranks below `root` (any depth: timeout, mpirun,
 * ranks), by OMPI_COMM_WORLD_RANK in their environment; returns how many
 * were found (ranks[r] = pid of rank r). */
static int find_ranks(pid_t root, pid_t *ranks, int max)
{
    pid_t queue[64];
    int nq = 0, found = 0;
    queue[nq++] = root;
    for (int i = 0; i < nq; i++) {
        char p[128], buf[8192];
        snprintf(p, sizeof p, "/proc/%d/environ", (int)queue[i]);
        FILE *f = fopen(p, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        for (size_t k = 0; k < n; k += strlen(buf + k) + 1) {
            buf[n] = 0;
            int r;
            if (sscanf(buf + k, "OMPI_COMM_WORLD_RANK=%d", &r) == 1 && r >= 0 && r < max) {
                ranks[r] = queue[i];
                found++;
            }
        }
        snprintf(p, sizeof p, "/proc/%d/task/%d/children", (int)queue[i], (int)queue[i]);
        f = fopen(p, "r");
        int c;
        while (f && nq < 64 && fscanf(f, "%d", &c) == 1) queue[nq++] = c;
        if (f) fclose(f);
    }
    return found;
}

/* Both ranks' pause files: d/pause_TAG.0 and .1 (base/fileio.h adds the rank). */
static void pause_files(const char *d, const char *tag, char files[2][1024])
{
    for (int r = 0; r < 2; r++) snprintf(files[r], sizeof files[r], "%s/pause_%s.%d", d, tag, r);
}

/* Run cmd (sh) under mpirun, both ranks held at the pause point `at`
 * (TRAIN_GPT_TEST_PAUSE_AT); its pid (timeout's) and the ranks'. */
static pid_t spawn_held_ranks(const char *d, const char *tag, const char *at, const char *cmd,
                              pid_t ranks[2])
{
    char full[9000], files[2][1024];
    snprintf(full, sizeof full, "export TRAIN_GPT_TEST_PAUSE_AT='%s' "
             "TRAIN_GPT_TEST_PAUSE_FILE='%s/pause_%s'; %s", at, d, tag, cmd);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", full, (char *)NULL);
        _exit(127);
    }
    pause_files(d, tag, files);
    for (int r = 0; r < 2; r++)
        cr_assert(tc_paused(files[r], at, 60000), "rank %d did not reach %s", r, at);
    int found = 0;
    /* both are held: the bound only guards against a process tree never seen */
    for (int t = 0; t < 100 && (found = find_ranks(pid, ranks, 2)) < 2; t++) tc_sleep_ms(50);
    cr_assert_eq(found, 2, "mpirun's two ranks not found under pid %d", (int)pid);
    return pid;
}

/* A measurement that ends in well under a second: for the run whose point
 * is that one rank measures to the end, not that a stop cuts it short. */
#define SHORT_MEASURE_SHAPE                                                                    \
    "--layers 2 --channels 64 --heads 4 --seq-len 64 --vocab 256 --val-every 0 "             \
    "--device cpu --threads 1 --op-costs measure"

/* mpirun -np 2 over the measuring run (shape: MEASURE_SHAPE or
 * SHORT_MEASURE_SHAPE), both ranks held as the measurement starts; its pid
 * (timeout's) and the ranks'. */
static pid_t spawn_two_ranks(const char *d, const char *tag, const char *shape, pid_t ranks[2])
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "export TRAIN_GPT_CACHE_DIR='%s/cache_%s'; exec timeout 120 "
             TC_MPIRUN " -np 2 %s --train-data '%s/train_*.bin' %s --batch 2 "
             "--steps 3 --checkpoint-dir '%s/ck_%s' >'%s/%s.out' 2>'%s/%s.err'", d, tag,
             tc_bin(), d, shape, d, tag, d, tag, d, tag);
    return spawn_held_ranks(d, tag, "startup:op costs", cmd, ranks);
}

/* Let both ranks' pauses go (one ended by a signal already does no harm). */
static void release_ranks(const char *d, const char *tag)
{
    char files[2][1024];
    pause_files(d, tag, files);
    for (int r = 0; r < 2; r++) tc_release(files[r]);
}

Test(startup_stops, two_ranks_stop_together_during_start_up, .timeout = 240)
{
    char *d = tu_tempdir(), out[1024];
    tc_make_shards(d, 1, 40000);
    const char *line = "stopped by signal 15 during start-up (planning the memory (measuring the "
                       "op costs)); nothing saved: no step had run; no file was written or moved\n";
    /* both signalled (as a scheduler does): both stop within the bound */
    pid_t ranks[2];
    pid_t pid = spawn_two_ranks(d, "both", MEASURE_SHAPE, ranks);
    kill(ranks[0], SIGTERM);
    kill(ranks[1], SIGTERM);
    expect_stop(pid, 77);
    release_ranks(d, "both");
    snprintf(out, sizeof out, "%s/both.out", d);
    cr_expect(tc_file_has(out, line));
    cr_expect(!tu_exists(tu_path(d, "ck_both")));

    /* only rank 1 signalled: rank 0 measures to the end, then both stop at
     * the same point, rank 0 reporting SIGTERM for the rank that had it.
     * Rank 0's whole measurement is this half's work, so it is a short one
     * (SHORT_MEASURE_SHAPE; with MEASURE_SHAPE's this test took 82 s on the
     * shared 2-core machine, and minutes under ASan, which skipped it) */
    pid = spawn_two_ranks(d, "one", SHORT_MEASURE_SHAPE, ranks);
    kill(ranks[1], SIGTERM); /* ends rank 1's pause; rank 0's is let go */
    release_ranks(d, "one");
    double took;
    cr_expect_eq(exit_within(pid, 100000, &took), 77);
    snprintf(out, sizeof out, "%s/one.out", d);
    cr_expect(tc_file_has(out, "op costs: measured on"), "rank 0 did not finish measuring");
    cr_expect(tc_file_has(out, line));
    cr_expect(!tc_file_has(out, "step     1/"), "a step ran");
    cr_expect(!tu_exists(tu_path(d, "ck_one")));
    free(d);
}

/* The val loss before step 1 under two ranks (no stop at a block there):
 * with only rank 1 signalled, both stop after the val batch in progress,
 * not after step 1 as before. Both ranks are held at a block of val batch
 * 2 of 8 when rank 1 is signalled, then let go. */
Test(startup_stops, two_ranks_stop_together_in_the_first_val_loss, .timeout = 120)
{
    char *d = tu_tempdir(), cmd[8192], out[700];
    tc_make_shards(d, 1, 4000);
    snprintf(cmd, sizeof cmd, "exec timeout 120 "
             TC_MPIRUN " -np 2 %s %s --steps 4 --val-every 2 --val-batches 8 >'%s/v.out' "
             "2>'%s/v.err'", tc_bin(), tc_model_args(d), d, d);
    pid_t ranks[2];
    pid_t pid = spawn_held_ranks(d, "v", "block:val 2/8", cmd, ranks);
    snprintf(out, sizeof out, "%s/v.out", d);
    kill(ranks[1], SIGTERM);
    release_ranks(d, "v");
    expect_stop(pid, 77);
    cr_expect(tc_file_has(out, "stopped by signal 15 during the val loss before step 1; nothing "
                          "saved: no step had finished\n"));
    cr_expect(!tc_file_has(out, "val 8/8"), "the val loss ran to its end");
    free(d);
}

/* A poll that says stop from its stop_at-th call on, counting its calls. */
static int polls, stop_at;
static int counting_poll(void) { return ++polls >= stop_at; }

static void poll_from(int k)
{
    polls = 0;
    stop_at = k;
    stop_set_poll(counting_poll);
}

Test(startup_stops, each_long_loop_polls_and_gives_up)
{
    char *d = tu_tempdir(), err[512];
    /* shard_hash_file: one poll a MiB; a 3 MiB file stopped at the 2nd */
    size_t n = 3 << 19; /* 3 MiB of tokens, and the header */
    uint16_t *tok = calloc(n, sizeof *tok);
    cr_assert_eq(shard_write(tu_path(d, "s.bin"), tok, n, err, sizeof err), 0, "%s", err);
    free(tok);
    unsigned char sha[SHARD_SHA256_BYTES];
    poll_from(2);
    cr_expect_eq(shard_hash_file(tu_path(d, "s.bin"), sha, NULL, err, sizeof err), -1);
    cr_expect(strstr(err, STOP_MESSAGE), "%s", err);
    cr_expect_eq(polls, 2, "hashing polled %d times before the stop", polls);
    stop_set_poll(NULL);
    cr_expect_eq(shard_hash_file(tu_path(d, "s.bin"), sha, NULL, err, sizeof err), 0, "%s", err);
    /* gpt_init_weights: a poll every 2^20 values; the tiny model's wte is
     * the first tensor filled, so the first poll stops it */
    GPTConfig cfg = tu_tiny_config();
    float *host = malloc(config_num_params(&cfg) * sizeof(float));
    poll_from(1);
    cr_expect_eq(gpt_init_weights(&cfg, 1, host), 1);
    poll_from(1000000);
    cr_expect_eq(gpt_init_weights(&cfg, 1, host), 0);
    cr_expect_gt(polls, 1, "the init polled %d times", polls);
    /* model_file_load: a poll before each 64 MiB piece */
    cr_assert_eq(model_file_save(tu_path(d, "m.bin"), &cfg, host, err, sizeof err), 0, "%s", err);
    free(host);
    GPTConfig back;
    float *p = NULL;
    poll_from(1);
    cr_expect_eq(model_file_load(tu_path(d, "m.bin"), &back, &p, err, sizeof err), -1);
    cr_expect(strstr(err, STOP_MESSAGE) && !p, "%s", err);
    /* opcost_measure: a poll before each op; stopped at the 10th op */
    PlanInput in = {.cfg = tu_tiny_config(), .B = 2, .T = 8, .dtype = DTYPE_FP32};
    OpCosts oc;
    poll_from(10);
    cr_expect_eq(opcost_measure(tu_cpu(), &in, 3, &oc, err, sizeof err), -1);
    cr_expect(strstr(err, STOP_MESSAGE), "%s", err);
    cr_expect_eq(polls, 10);
    stop_set_poll(NULL);
    free(d);
}

/* A resumed run stopped during start-up: exit 75 (the save it resumes is
 * still there, untouched), the message says so, and the log is as the
 * first run left it (a resume cuts and appends to it only once started).
 * The subject is the resume's outcome, not the measurement's poll (the
 * first test here, at a 46 s measurement): the tiny model's measurement
 * is signalled while held at its start as well. (At B=1, T=1024, C=768 the
 * two runs and the unstopped resume took 34 s of the suite.) */
Test(startup_stops, a_resume_stopped_during_start_up_keeps_its_save, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], env[9000];
    tc_make_shards(d, 1, 2000);
    snprintf(env, sizeof env, "TRAIN_GPT_CACHE_DIR=%s", tu_path(d, "cache"));
    const char *shape = "--layers 2 --channels 32 --heads 4 --seq-len 16 --vocab 256 "
                        "--batch 2 --val-every 0 --device cpu --threads 1";
    snprintf(args, sizeof args, "--train-data '%s/train_*.bin' %s --steps 2 --save-every 1 "
             "--checkpoint-dir %s --log %s --op-costs flops", d, shape, tu_path(d, "ck"),
             tu_path(d, "l.jsonl"));
    cr_assert_eq(tc_run(env, args, tu_path(d, "a")), 0);
    /* the resume to step 4 is stopped in its op-cost measurement */
    char *log0 = tu_read_file(tu_path(d, "l.jsonl"), NULL);
    char *ck0 = tu_read_file(tu_path(d, "ck/step_00000002/model.bin"), NULL);
    snprintf(args, sizeof args, "--train-data '%s/train_*.bin' %s --steps 4 --save-every 1 "
             "--checkpoint-dir %s --log %s --op-costs measure --resume", d, shape,
             tu_path(d, "ck"), tu_path(d, "l.jsonl"));
    char pause[4200];
    snprintf(pause, sizeof pause, "%s", tu_path(d, "pause"));
    snprintf(env + strlen(env), sizeof env - strlen(env), " %s",
             tc_pause_env(pause, "startup:op costs"));
    pid_t pid = tc_spawn(env, args, tu_path(d, "r"));
    cr_assert(tc_paused(pause, "startup:op costs", 60000), "the measurement did not start");
    kill(pid, SIGTERM);
    expect_stop(pid, 75);
    char want[1024];
    snprintf(want, sizeof want, "stopped by signal 15 during start-up (planning the memory "
             "(measuring the op costs)); no step had run since the save, %s/ck/step_00000002, "
             "which is still there (the same command resumes it); no file was written or "
             "moved\n", d);
    cr_expect(tc_file_has(tu_path(d, "r.out"), want), "no line: %s", want);
    char *log1 = tu_read_file(tu_path(d, "l.jsonl"), NULL);
    char *ck1 = tu_read_file(tu_path(d, "ck/step_00000002/model.bin"), NULL);
    cr_expect(log0 && log1 && strcmp(log0, log1) == 0, "the log changed");
    cr_expect(ck0 && ck1, "step 2's save is gone");
    free(log0), free(log1), free(ck0), free(ck1);
    /* the same command, unstopped, resumes it */
    snprintf(env, sizeof env, "TRAIN_GPT_CACHE_DIR=%s", tu_path(d, "cache")); /* no pause */
    cr_expect_eq(tc_run(env, args, tu_path(d, "r2")), 0);
    cr_expect(tc_file_has(tu_path(d, "r2.out"), "step     4/4"));
    free(d);
}

/* --plan --op-costs measure: the measurement is all the work; a SIGINT in
 * it ends the dry run within the bound, exit 77, nothing cached. */
Test(startup_stops, sigint_during_plans_measurement, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], env[9000];
    snprintf(env, sizeof env, "TRAIN_GPT_CACHE_DIR=%s", tu_path(d, "cache"));
    snprintf(args, sizeof args, MEASURE_SHAPE " --batch 8 --plan");
    char pause[4200];
    snprintf(pause, sizeof pause, "%s", tu_path(d, "pause"));
    snprintf(env + strlen(env), sizeof env - strlen(env), " %s",
             tc_pause_env(pause, "startup:op costs"));
    pid_t pid = tc_spawn(env, args, tu_path(d, "p"));
    cr_assert(tc_paused(pause, "startup:op costs", 30000), "the measurement did not start");
    kill(pid, SIGINT);
    expect_stop(pid, 77);
    cr_expect(tc_file_has(tu_path(d, "p.out"), "stopped by signal 2 during --plan (measuring the "
                          "op costs); nothing written\n"));
    cr_expect(!tc_file_has(tu_path(d, "p.err"), "error"));
    cr_expect(!tu_exists(tu_path(d, "cache")) || !tc_file_has(tu_path(d, "p.out"), "cached in"));
    free(d);
}

/* One shard of SPARSE_TOKENS tokens, all zero, its token area a hole (no
 * disk used): d/x_train_000000.bin with dataset id 1, and d/x.manifest.json
 * listing it with its SHA-256 (computed here from the bytes it reads as),
 * so that a fresh run trusts the manifest and reads nothing. 64 MiB: the
 * hash is held after its first MiB and polls at each MiB after, so 63 MiB
 * are left when the signal comes, and a hash that did not poll would run
 * to its end and print "train data: read" (the test's check); a bigger
 * shard only costs time (1 GiB took 13 s of the suite: this test's SHA-256
 * of it, and the unstopped resume's). */
#define SPARSE_TOKENS (32u << 20)
static void make_sparse_dataset(const char *d)
{
    int32_t hdr[SHARD_HEADER_INTS] = {SHARD_MAGIC, SHARD_VERSION, (int32_t)SPARSE_TOKENS, 1, 0};
    const char *path = tu_path(d, "x_train_000000.bin");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, hdr, sizeof hdr), (ssize_t)sizeof hdr);
    off_t size = SHARD_HEADER_BYTES + 2 * (off_t)SPARSE_TOKENS;
    cr_assert_eq(ftruncate(fd, size), 0);
    close(fd);
    DatasetShard sh = {.tokens = SPARSE_TOKENS, .bytes = (uint64_t)size};
    snprintf(sh.name, sizeof sh.name, "x_train_000000.bin");
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    static unsigned char zeros[1 << 20];
    unsigned int dn = 0;
    cr_assert(c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1);
    EVP_DigestUpdate(c, hdr, sizeof hdr);
    for (off_t left = 2 * (off_t)SPARSE_TOKENS; left > 0; left -= sizeof zeros)
        EVP_DigestUpdate(c, zeros, sizeof zeros); /* 2n is a multiple of 1 MiB */
    cr_assert(EVP_DigestFinal_ex(c, sh.sha256, &dn) == 1 && dn == SHARD_SHA256_BYTES);
    EVP_MD_CTX_free(c);
    DatasetManifest m = {.id = 1, .num_shards = 1, .shards = &sh};
    char err[512];
    cr_assert_eq(dataset_manifest_write(tu_path(d, "x.manifest.json"), &m, err, sizeof err), 0,
                 "%s", err);
}

/* The names and sizes under dir, recursively (ls -lR, without the times).
 * The lock file by name only: each run that takes the folder writes its
 * own pid there ("pid N on host ..."), whose digits vary (pids wrap at
 * pid_max, 32768 on the build VM), so its size is no sign of a change. */
static char *listing(const char *dir)
{
    char cmd[9000], out[4400];
    snprintf(out, sizeof out, "%s.listing", dir);
    snprintf(cmd, sizeof cmd, "cd '%s' && find . \\( -name train_gpt.lock -printf '%%p\\n' \\) "
             "-o -printf '%%p %%s\\n' | sort > '%s'", dir, out);
    cr_assert_eq(tu_run(cmd), 0);
    return tu_read_file(out, NULL);
}

/* A --resume hashes every train shard (docs/resume.md); a
 * SIGINT while it reads them stops it within the bound, before the hash
 * ends (no "train data: read" line): exit 75, the line naming the phase and
 * the save, and the checkpoint folder and the log as they were. The same
 * command, unstopped, then resumes. Without the poll in shard_hash_file the
 * hash ran to its end first (checked by taking the poll out: this test
 * then fails on the "train data: read" line). */
Test(startup_stops, sigint_while_a_resume_hashes_the_data, .timeout = 240)
{
    char *d = tu_tempdir(), args[4096];
    make_sparse_dataset(d);
    const char *shape = "--val-every 0 --layers 2 --channels 32 --heads 4 --seq-len 16 "
                        "--vocab 256 --batch 2 --device cpu --threads 1 --save-every 1";
    snprintf(args, sizeof args, "--train-data '%s/x_train_*.bin' %s --steps 2 --checkpoint-dir "
             "%s --log %s", d, shape, tu_path(d, "ck"), tu_path(d, "l.jsonl"));
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "a")), 0);
    cr_assert(!tc_file_has(tu_path(d, "a.out"), "train data: read"),
              "the fresh run read the shard rather than trusting its manifest");
    char *ck0 = listing(tu_path(d, "ck")), *log0 = tu_read_file(tu_path(d, "l.jsonl"), NULL);

    snprintf(args, sizeof args, "--train-data '%s/x_train_*.bin' %s --steps 4 --checkpoint-dir "
             "%s --log %s --resume", d, shape, tu_path(d, "ck"), tu_path(d, "l.jsonl"));
    /* held after the hash's first MiB of the 64 MiB shard */
    char pause[4200];
    snprintf(pause, sizeof pause, "%s", tu_path(d, "pause"));
    pid_t pid = tc_spawn(tc_pause_env(pause, "hash"), args, tu_path(d, "r"));
    char here[4300];
    snprintf(here, sizeof here, "hash:%s", tu_path(d, "x_train_000000.bin"));
    cr_assert(tc_paused(pause, here, 120000), "the resume did not start hashing");
    kill(pid, SIGINT);
    expect_stop(pid, 75);
    char want[1024];
    snprintf(want, sizeof want, "stopped by signal 2 during start-up (reading the data (hashing "
             "its shards)); no step had run since the save, %s/ck/step_00000002, which is "
             "still there (the same command resumes it); no file was written or moved\n", d);
    cr_expect(tc_file_has(tu_path(d, "r.out"), want), "no line: %s", want);
    cr_expect(!tc_file_has(tu_path(d, "r.out"), "train data: read"), "the hash ran to its end");
    char *ck1 = listing(tu_path(d, "ck")), *log1 = tu_read_file(tu_path(d, "l.jsonl"), NULL);
    cr_expect_str_eq(ck1, ck0, "the checkpoint folder changed");
    cr_expect(log0 && log1 && strcmp(log0, log1) == 0, "the log changed");
    free(ck0), free(ck1), free(log0), free(log1);
    cr_expect_eq(tc_run(NULL, args, tu_path(d, "r2")), 0, "the same command did not resume");
    cr_expect(tc_file_has(tu_path(d, "r2.out"), "step     4/4"));
    unlink(tu_path(d, "x_train_000000.bin")); /* its page cache with it */
    free(d);
}
