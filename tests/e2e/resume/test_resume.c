/* tests/e2e/resume/test_resume.c — end-to-end: a run stopped and resumed continues
 * exactly (bitwise, on the cpu backend).
 *
 *  - 16 steps in one run == 8 steps, a save, a new process resuming, 8 more:
 *    every logged loss, the final parameters (--save) and the final AdamW
 *    m, v, step and data position are bitwise equal. Shuffle on, 2 shards
 *    of 12 windows and grad-accum 2, so the run crosses a shard and an
 *    epoch boundary; recompute 0, 1, and 0 -> 1 across the resume; the
 *    sample printed after step 12 (--sample-every 4) is the same text, so
 *    the sampler's RNG is restored too;
 *  - a configuration change that would break the continuation is refused,
 *    naming the flag and both values; so is a shape flag given that differs
 *    from the save's shape (--layers, --channels, --heads, --vocab,
 *    --max-seq-len, --model);
 *  - SIGTERM: the step in progress is discarded, the last completed one is
 *    saved, the exit status is 75, and resuming matches an uninterrupted
 *    run (test_stops.c lands the signal inside a step on purpose); a second
 *    signal exits at once (status 128 + 15) and leaves the previous save
 *    loadable;
 *  - kill -9 inside a save of a run saving every step (9 trials, each
 *    held by the pause hook with one of the save's files as a temp file in
 *    turn): the newest complete save always loads (all checksums), never
 *    goes back, and --resume continues it;
 *  - 2 ranks (mpirun) with ZeRO-1 (per-rank optimizer slices) and with
 *    --zero 0 (m and v once, in rank 0's file): exact resume, and a resume
 *    on another world size refused by name. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/checkpoint.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

static void run_ok(const char *env, const char *args, const char *prefix)
{
    int rc = tc_run(env, args, prefix);
    char e[600];
    snprintf(e, sizeof e, "%s.err", prefix);
    char *msg = tu_read_file(e, NULL);
    cr_assert_eq(rc, 0, "train_gpt %s\nexited %d: %s", args, rc, msg ? msg : "");
    free(msg);
}

/* m, v and the run state of the newest complete save under dir. */
typedef struct {
    RunState st;
    float *m, *v, *params;
    size_t n;
} Loaded;

static Loaded load_latest(const char *dir, int want_step)
{
    Loaded L = {0};
    char sd[1024], err[1024];
    int step;
    cr_assert_eq(ckpt_find_latest(dir, sd, sizeof sd, &step, err, sizeof err), 1,
                 "no complete save in %s", dir);
    if (want_step >= 0) cr_assert_eq(step, want_step, "newest save in %s is step %d", dir, step);
    CkptManifest man;
    cr_assert_eq(ckpt_read_manifest(sd, &man, err, sizeof err), 0, "%s", err);
    GPTConfig cfg;
    cr_assert_eq(ckpt_load_model(sd, &man, &cfg, &L.params, err, sizeof err), 0, "%s", err);
    L.n = config_num_params(&cfg);
    L.m = malloc(L.n * 4);
    L.v = malloc(L.n * 4);
    cr_assert_eq(ckpt_load_state(sd, &man, &L.st, L.n, 0, L.n, L.m, L.v, err, sizeof err), 0,
                 "%s", err);
    ckpt_manifest_free(&man);
    return L;
}

static void free_loaded(Loaded *L)
{
    free(L->m), free(L->v), free(L->params);
    run_state_free(&L->st);
}

static void expect_same_losses(const char *a, const char *b, int n)
{
    int sa[TC_MAX_STEPS], sb[TC_MAX_STEPS];
    double la[TC_MAX_STEPS], lb[TC_MAX_STEPS];
    int na = tc_log_losses(a, sa, la, NULL, TC_MAX_STEPS);
    int nb = tc_log_losses(b, sb, lb, NULL, TC_MAX_STEPS);
    cr_assert_eq(na, n, "%s has %d training lines, expected %d", a, na, n);
    cr_assert_eq(nb, n, "%s has %d training lines, expected %d", b, nb, n);
    for (int i = 0; i < n; i++) {
        cr_expect_eq(sa[i], i + 1);
        cr_expect_eq(sb[i], i + 1);
        cr_expect(memcmp(&la[i], &lb[i], sizeof(double)) == 0,
                  "step %d: loss %.17g vs %.17g after resuming", i + 1, la[i], lb[i]);
    }
}

/* Runs a and b in d: the same n losses (a.jsonl, b.jsonl) and bitwise the
 * same final parameters (a.bin, b.bin; `differ` says what it means if not). */
static void expect_same_run(const char *d, int n, const char *differ)
{
    expect_same_losses(tu_path(d, "a.jsonl"), tu_path(d, "b.jsonl"), n);
    cr_expect(tc_files_equal(tu_path(d, "a.bin"), tu_path(d, "b.bin")), "%s", differ);
}

/* The text of the sample printed after step k (between its marker and the
 * next step's line), malloc'd. */
static char *sample_text(const char *out_path, int k)
{
    char *s = tu_read_file(out_path, NULL), begin[64], end[64];
    cr_assert_not_null(s);
    snprintf(begin, sizeof begin, "step %5d | sample:\n", k);
    snprintf(end, sizeof end, "step %5d/", k + 1);
    char *a = strstr(s, begin), *b = a ? strstr(a, end) : NULL;
    cr_assert(a && b, "%s: no sample after step %d", out_path, k);
    char *t = strndup(a, (size_t)(b - a));
    free(s);
    return t;
}

static void exact_resume(int rec_a, int rec_b)
{
    char *d = tu_tempdir(), args[4096], p[600];
    tc_make_shards(d, 2, 400); /* (400-1)/32 = 12 windows per shard */
    const char *m = tc_model_args(d);
    /* one run of 16 steps */
    snprintf(args, sizeof args, "%s --grad-accum 2 --shuffle 1 --recompute %d --steps 16 "
             "--log %s/a.jsonl --save %s/a.bin --checkpoint-dir %s/cka --sample-every 4 "
             "--sample-tokens 8", m, rec_a, d, d, d);
    snprintf(p, sizeof p, "%s/a", d);
    run_ok(NULL, args, p);
    /* 8 steps, saved; then a new process resumes to 16 */
    snprintf(args, sizeof args, "%s --grad-accum 2 --shuffle 1 --recompute %d --steps 8 "
             "--log %s/b.jsonl --checkpoint-dir %s/ckb --sample-every 4 --sample-tokens 8", m,
             rec_a, d, d);
    snprintf(p, sizeof p, "%s/b1", d);
    run_ok(NULL, args, p);
    snprintf(args, sizeof args, "%s --grad-accum 2 --shuffle 1 --recompute %d --steps 16 "
             "--log %s/b.jsonl --save %s/b.bin --checkpoint-dir %s/ckb --resume --sample-every 4 "
             "--sample-tokens 8", m, rec_b, d, d, d);
    snprintf(p, sizeof p, "%s/b2", d);
    run_ok(NULL, args, p);
    char out[700];
    snprintf(out, sizeof out, "%s/b2.out", d);
    cr_expect(tc_file_has(out, "resumed from"), "the second run did not resume");
    /* The sampler's RNG continues too: step 12's sample is the same. */
    char oa[700];
    snprintf(oa, sizeof oa, "%s/a.out", d);
    char *sa = sample_text(oa, 12), *sb = sample_text(out, 12);
    cr_expect_str_eq(sa, sb, "the sample after step 12 differs after resuming");
    free(sa), free(sb);

    char ca[700], cb[700];
    expect_same_run(d, 16, "final parameters differ after resuming");

    /* Optimizer state and data position at the end, and at the save. */
    snprintf(ca, sizeof ca, "%s/cka", d);
    snprintf(cb, sizeof cb, "%s/ckb", d);
    Loaded A = load_latest(ca, 16), B = load_latest(cb, 16);
    cr_expect_eq(memcmp(A.m, B.m, A.n * 4), 0, "AdamW m differs");
    cr_expect_eq(memcmp(A.v, B.v, A.n * 4), 0, "AdamW v differs");
    cr_expect_eq(A.st.adam_t, 16);
    cr_expect_eq(B.st.adam_t, 16);
    /* 32 windows of 24 per epoch: the run wrapped into epoch 1. */
    cr_expect_eq(A.st.epoch, 1);
    cr_expect_eq(B.st.epoch, A.st.epoch);
    cr_expect_eq(B.st.shard_pos, A.st.shard_pos);
    cr_expect_eq(B.st.window_pos, A.st.window_pos);
    free_loaded(&A), free_loaded(&B);
    /* --keep 3 (default) kept both saves of run B: step 8 was mid-shard. */
    snprintf(cb, sizeof cb, "%s/ckb/step_00000008", d);
    CkptManifest man;
    char err[512];
    cr_expect_eq(ckpt_read_manifest(cb, &man, err, sizeof err), 0, "%s", err);
    ckpt_manifest_free(&man);
    free(d);
}

Test(resume, exact_recompute0, .timeout = 120) { exact_resume(0, 0); }
Test(resume, exact_recompute1, .timeout = 120) { exact_resume(1, 1); }
Test(resume, exact_switching_recompute_0_to_1, .timeout = 120) { exact_resume(0, 1); }

Test(resume, refuses_changed_configuration, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], p[600], e[700];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/ck", m, d);
    snprintf(p, sizeof p, "%s/r1", d);
    run_ok(NULL, args, p);
    snprintf(args, sizeof args, "%s --steps 4 --checkpoint-dir %s/ck --resume --batch 3 --lr 2e-3",
             m, d);
    snprintf(p, sizeof p, "%s/r2", d);
    cr_assert_eq(tc_run(NULL, args, p), 1);
    snprintf(e, sizeof e, "%s/r2.err", d);
    cr_expect(tc_file_has(e, "--batch: the save has 2, this run 3"), "message lacks --batch");
    cr_expect(tc_file_has(e, "--lr: the save has 0.001"), "message lacks --lr");
    /* beyond --steps */
    snprintf(args, sizeof args, "%s --steps 1 --checkpoint-dir %s/ck --resume", m, d);
    snprintf(p, sizeof p, "%s/r3", d);
    cr_assert_eq(tc_run(NULL, args, p), 1);
    snprintf(e, sizeof e, "%s/r3.err", d);
    cr_expect(tc_file_has(e, "beyond --steps 1"));
    /* --resume=DIR with no save there is an error; plain --resume starts afresh */
    snprintf(args, sizeof args, "%s --steps 1 --resume=%s/nothing_here", m, d);
    snprintf(p, sizeof p, "%s/r4", d);
    cr_assert_eq(tc_run(NULL, args, p), 1);
    snprintf(args, sizeof args, "%s --steps 1 --checkpoint-dir %s/fresh --resume", m, d);
    snprintf(p, sizeof p, "%s/r5", d);
    run_ok(NULL, args, p);
    snprintf(e, sizeof e, "%s/r5.out", d);
    cr_expect(tc_file_has(e, "starting a new run"));
    /* an older save resumed into a folder with newer ones: they are moved
     * into abandoned/, never mixed with the new timeline, never deleted */
    snprintf(args, sizeof args, "%s --steps 3 --checkpoint-dir %s/ck --resume", m, d);
    snprintf(p, sizeof p, "%s/r7", d);
    run_ok(NULL, args, p); /* ck now has steps 2 and 3 */
    snprintf(args, sizeof args, "%s --steps 4 --resume=%s/ck/step_00000002", m, d);
    snprintf(p, sizeof p, "%s/r8", d);
    run_ok(NULL, args, p);
    snprintf(e, sizeof e, "%s/r8.out", d);
    cr_expect(tc_file_has(e, "moved the saves newer than step 2"), "no note of the move");
    snprintf(e, sizeof e, "%s/ck/abandoned/step_00000003/COMPLETE", d);
    cr_expect_eq(access(e, F_OK), 0, "step 3 not kept in abandoned/");
    /* ...and accepted with saves going elsewhere */
    snprintf(args, sizeof args, "%s --steps 4 --resume=%s/ck/step_00000002 --checkpoint-dir "
             "%s/ck2", m, d, d);
    snprintf(p, sizeof p, "%s/r9", d);
    run_ok(NULL, args, p);
    /* "--resume DIR" (not attached) is a usage error that says how */
    snprintf(args, sizeof args, "%s --resume %s/ck", m, d);
    snprintf(p, sizeof p, "%s/r6", d);
    cr_assert_eq(tc_run(NULL, args, p), 2);
    snprintf(e, sizeof e, "%s/r6.err", d);
    cr_expect(tc_file_has(e, "--resume="));
    free(d);
}

/* --loss-chunk changed on resume is refused, naming both values: the chunk
 * sets the order the head's dW sums in, and resuming a --loss-chunk 5 save
 * with 32 moved step 4's loss from 5.30207897722721 to 5.3020789921283722
 * (measured before the refusal), not the bitwise continuation promised.
 * The same chunk resumes. */
Test(resume, refuses_a_changed_loss_chunk, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], p[600], e[700];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 2 --loss-chunk 5 --checkpoint-dir %s/ck", m, d);
    snprintf(p, sizeof p, "%s/r1", d);
    run_ok(NULL, args, p);
    snprintf(args, sizeof args, "%s --steps 3 --loss-chunk 32 --checkpoint-dir %s/ck --resume",
             m, d);
    snprintf(p, sizeof p, "%s/r2", d);
    cr_assert_eq(tc_run(NULL, args, p), 1);
    snprintf(e, sizeof e, "%s/r2.err", d);
    cr_expect(tc_file_has(e, "--loss-chunk: the save has 5, this run 32"),
              "message lacks --loss-chunk");
    snprintf(args, sizeof args, "%s --steps 3 --loss-chunk 5 --checkpoint-dir %s/ck --resume",
             m, d);
    snprintf(p, sizeof p, "%s/r3", d);
    run_ok(NULL, args, p);
    tu_remove_tree(d);
}

/* A shape flag given on --resume that differs from the
 * save is refused, naming both values; matching ones are accepted. */
Test(resume, refuses_shape_flags_that_differ, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], p[600], e[700];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d); /* gives --layers 2 --channels 32 --heads 4 --vocab 256 */
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/ck", m, d);
    snprintf(p, sizeof p, "%s/s1", d);
    run_ok(NULL, args, p);
    snprintf(args, sizeof args, "%s --steps 3 --checkpoint-dir %s/ck --resume --layers 3 "
             "--channels 48 --heads 6 --vocab 300 --max-seq-len 32", m, d);
    snprintf(p, sizeof p, "%s/s2", d);
    cr_assert_eq(tc_run(NULL, args, p), 1);
    snprintf(e, sizeof e, "%s/s2.err", d);
    cr_expect(tc_file_has(e, "a resumed run keeps the shape of its save"));
    cr_expect(tc_file_has(e, "--layers: the save has 2, this run 3"));
    cr_expect(tc_file_has(e, "--channels: the save has 32, this run 48"));
    cr_expect(tc_file_has(e, "--heads: the save has 4, this run 6"));
    cr_expect(tc_file_has(e, "--vocab: the save has 256, this run 300"));
    cr_expect(tc_file_has(e, "--max-seq-len: the save has 16, this run 32"));
    /* a preset's shape counts as given */
    snprintf(args, sizeof args, "--train-data '%s/train_*.bin' --val-data '%s/train_0.bin' "
             "--seq-len 16 --vocab 256 --batch 2 --lr 1e-3 --device cpu --threads 1 --steps 3 "
             "--checkpoint-dir %s/ck --resume --model d12", d, d, d);
    snprintf(p, sizeof p, "%s/s3", d);
    cr_assert_eq(tc_run(NULL, args, p), 1);
    snprintf(e, sizeof e, "%s/s3.err", d);
    cr_expect(tc_file_has(e, "--model d12 (its layers): the save has 2, this run 12"));
    /* the same shape given again, and no shape flags at all: accepted */
    snprintf(args, sizeof args, "%s --steps 3 --checkpoint-dir %s/ck --resume --max-seq-len 16",
             m, d);
    snprintf(p, sizeof p, "%s/s4", d);
    run_ok(NULL, args, p);
    snprintf(args, sizeof args, "--train-data '%s/train_*.bin' --val-data '%s/train_0.bin' "
             "--seq-len 16 --batch 2 --lr 1e-3 --device cpu --threads 1 --steps 4 "
             "--checkpoint-dir %s/ck --resume", d, d, d);
    snprintf(p, sizeof p, "%s/s5", d);
    run_ok(NULL, args, p);
    free(d);
}

Test(resume, sigterm_saves_and_resumes_exactly, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], p[600], log[700], out[700];
    tc_make_shards(d, 2, 400);
    const char *m = tc_model_args(d);
    snprintf(log, sizeof log, "%s/s.jsonl", d);
    snprintf(args, sizeof args, "%s --shuffle 1 --steps 1000000 --checkpoint-dir %s/ck --log %s",
             m, d, log);
    snprintf(p, sizeof p, "%s/s", d);
    char pause[700];
    snprintf(pause, sizeof pause, "%s/pause", d);
    /* held at step 4's start (3 steps logged), signalled there */
    pid_t pid = tc_spawn(tc_pause_env(pause, "step:4"), args, p);
    cr_assert(tc_paused(pause, "step:4", 30000), "the run did not start");
    kill(pid, SIGTERM);
    int st = tc_wait(pid, 30000);
    cr_assert(st != -1 && WIFEXITED(st), "did not exit after SIGTERM");
    cr_assert_eq(WEXITSTATUS(st), 75, "exit status %d, expected 75", WEXITSTATUS(st));
    /* The save is at the last logged step. */
    int steps[TC_MAX_STEPS];
    int n = tc_log_losses(log, steps, NULL, NULL, TC_MAX_STEPS);
    int k = steps[n - 1];
    char ck[700], sd[1024], err[512];
    snprintf(ck, sizeof ck, "%s/ck", d);
    int saved;
    cr_assert_eq(ckpt_find_latest(ck, sd, sizeof sd, &saved, err, sizeof err), 1);
    cr_assert_eq(saved, k, "saved step %d, last logged step %d", saved, k);
    snprintf(out, sizeof out, "%s/s.out", d);
    cr_expect(tc_file_has(out, "stopped by signal 15"));
    /* Resume for 3 more steps; compare with one uninterrupted run of k+3. */
    snprintf(args, sizeof args, "%s --shuffle 1 --steps %d --checkpoint-dir %s/ck --log %s "
             "--resume --save %s/resumed.bin", m, k + 3, d, log, d);
    snprintf(p, sizeof p, "%s/s2", d);
    run_ok(NULL, args, p);
    snprintf(args, sizeof args, "%s --shuffle 1 --steps %d --log %s/ref.jsonl --save %s/ref.bin",
             m, k + 3, d, d);
    snprintf(p, sizeof p, "%s/ref", d);
    run_ok(NULL, args, p);
    char ref[700], a[700], b[700];
    snprintf(ref, sizeof ref, "%s/ref.jsonl", d);
    expect_same_losses(ref, log, k + 3);
    snprintf(a, sizeof a, "%s/resumed.bin", d);
    snprintf(b, sizeof b, "%s/ref.bin", d);
    cr_expect(tc_files_equal(a, b), "parameters differ from the uninterrupted run");
    free(d);
}

Test(resume, second_signal_exits_at_once, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], p[600], log[700];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    snprintf(log, sizeof log, "%s/s.jsonl", d);
    /* Saves every 2 steps; held at step 4's start (step 2's save complete)
     * for the first signal, then in the save that stop makes, its first
     * file's temp open, for the second. */
    snprintf(args, sizeof args, "%s --steps 1000000 --save-every 2 --checkpoint-dir %s/ck --log %s",
             m, d, log);
    snprintf(p, sizeof p, "%s/s", d);
    char pause[700];
    snprintf(pause, sizeof pause, "%s/pause", d);
    pid_t pid = tc_spawn(tc_pause_env(pause, "step:4,commit"), args, p);
    cr_assert(tc_paused(pause, "step:4", 30000), "the run did not reach step 4");
    kill(pid, SIGTERM);
    cr_assert(tc_paused(pause, "commit:model.bin", 30000), "the stop did not start its save");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kill(pid, SIGTERM);
    int st = tc_wait(pid, 10000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    cr_assert(st != -1 && WIFEXITED(st));
    cr_expect_eq(WEXITSTATUS(st), 128 + SIGTERM);
    cr_expect(ms < 1000, "the second signal took %.0f ms to end the run", ms);
    char ck[700];
    snprintf(ck, sizeof ck, "%s/ck", d);
    Loaded L = load_latest(ck, 2); /* the interrupted save is not taken for complete */
    free_loaded(&L);
    free(d);
}

/* A step folder newer than the newest complete save: a save cut short. */
static int has_unfinished_save(const char *ck)
{
    char sd[1024], err[512], probe[1100];
    int step = -1;
    if (ckpt_find_latest(ck, sd, sizeof sd, &step, err, sizeof err) < 0) return 0;
    ckpt_step_dir(sd, sizeof sd, ck, step + 1);
    snprintf(probe, sizeof probe, "%s", sd);
    return access(probe, F_OK) == 0;
}

Test(resume, sigkill_during_saves, .timeout = 240)
{
    enum { TRIALS = 9 };
    /* a save's files in the order written: each trial is killed in one */
    static const char *const files[] = {"model.bin", "state_r00000.bin", CKPT_MANIFEST};
    char *d = tu_tempdir(), args[4096], p[600], ck[700], sd[1024], err[1024];
    tc_make_shards(d, 2, 400);
    const char *m = tc_model_args(d);
    snprintf(ck, sizeof ck, "%s/ck", d);
    int newest = -1, killed_mid_run = 0, inside_save = 0;
    for (int trial = 0; trial < TRIALS; trial++) {
        /* Save every step; the run's first save is let complete (held
         * before its manifest's rename, then let go), and the second is
         * killed with its file files[trial % 3] open as a temp file, the
         * files before it in place. */
        snprintf(args, sizeof args, "%s --shuffle 1 --steps 1000000 --save-every 1 --keep 2 "
                 "--checkpoint-dir %s --resume", m, ck);
        snprintf(p, sizeof p, "%s/k%d", d, trial);
        char pause[700], at[128];
        snprintf(pause, sizeof pause, "%s/pause", d);
        snprintf(at, sizeof at, "commit:%s,commit:%s", CKPT_MANIFEST, files[trial % 3]);
        pid_t pid = tc_spawn(tc_pause_env(pause, at), args, p);
        cr_assert(tc_paused(pause, "commit:" CKPT_MANIFEST, 60000), "trial %d: no save", trial);
        tc_release(pause);
        snprintf(at, sizeof at, "commit:%s", files[trial % 3]);
        cr_assert(tc_paused(pause, at, 60000), "trial %d: no second save", trial);
        kill(pid, SIGKILL);
        int st = tc_wait(pid, 10000);
        tc_release(pause); /* the killed run's: the next trial waits for its own */
        killed_mid_run += st != -1 && WIFSIGNALED(st);
        inside_save += has_unfinished_save(ck);
        /* Every folder with a manifest is a complete, loadable save. */
        int step, r = ckpt_find_latest(ck, sd, sizeof sd, &step, err, sizeof err);
        cr_assert(r >= 0, "%s", err);
        if (r == 0) {
            cr_assert_eq(newest, -1, "trial %d: the saves up to step %d vanished", trial, newest);
            continue;
        }
        cr_assert(step >= newest, "trial %d: newest save went back from %d to %d", trial, newest,
                  step);
        newest = step;
        Loaded L = load_latest(ck, step);
        cr_assert_eq(L.st.step, step);
        free_loaded(&L);
    }
    cr_expect(newest > 0, "no save completed in %d trials", TRIALS);
    /* The kills must really hit saves, or the test proves little. */
    cr_expect(inside_save >= TRIALS / 2, "only %d of %d kills landed inside a save", inside_save,
              TRIALS);
    cr_expect_eq(killed_mid_run, TRIALS, "some runs ended before the kill");
    /* --resume takes the newest complete save and continues from it. */
    snprintf(args, sizeof args, "%s --shuffle 1 --steps %d --checkpoint-dir %s --resume", m,
             newest + 1, ck);
    snprintf(p, sizeof p, "%s/final", d);
    run_ok(NULL, args, p);
    char out[700], want[200];
    snprintf(out, sizeof out, "%s/final.out", d);
    snprintf(want, sizeof want, "step_%08d: step %d,", newest, newest);
    cr_expect(tc_file_has(out, want), "did not resume from step %d", newest);
    free(d);
}

/* Two ranks with ZeRO-1 (mpirun, as tests/e2e/ranks/test_dist.c runs it): each rank
 * saves its optimizer slice; 4 steps + resume + 4 == 8 steps, bitwise; a
 * resume with another world size is refused by name. */
#define MPIRUN2 "timeout 120 " TC_MPIRUN " -np 2"

static void two_ranks_exact(int zero)
{
    char *d = tu_tempdir(), cmd[8192];
    tc_make_shards(d, 2, 400);
    const char *m = tc_model_args(d);
    snprintf(cmd, sizeof cmd, "%s %s %s --zero %d --shuffle 1 --steps 8 --log %s/a.jsonl "
             "--save %s/a.bin >%s/a.out 2>&1", MPIRUN2, tc_bin(), m, zero, d, d, d);
    cr_assert_eq(tu_run(cmd), 0, "the 2-rank run failed");
    snprintf(cmd, sizeof cmd, "%s %s %s --zero %d --shuffle 1 --steps 4 --log %s/b.jsonl "
             "--checkpoint-dir %s/ck >%s/b1.out 2>&1", MPIRUN2, tc_bin(), m, zero, d, d, d);
    cr_assert_eq(tu_run(cmd), 0);
    char sd[700], err[512];
    snprintf(sd, sizeof sd, "%s/ck/step_00000004", d);
    CkptManifest man;
    cr_assert_eq(ckpt_read_manifest(sd, &man, err, sizeof err), 0, "%s", err);
    cr_expect_eq(man.world_size, 2);
    ckpt_manifest_free(&man);
    snprintf(cmd, sizeof cmd, "%s %s %s --zero %d --shuffle 1 --steps 8 --log %s/b.jsonl "
             "--checkpoint-dir %s/ck --resume --save %s/b.bin >%s/b2.out 2>&1", MPIRUN2,
             tc_bin(), m, zero, d, d, d, d);
    cr_assert_eq(tu_run(cmd), 0);
    expect_same_run(d, 8, "parameters differ after a 2-rank resume");
    /* one process cannot continue a 2-rank run exactly: refused */
    char args[4096], p[700], e[800];
    snprintf(args, sizeof args, "%s --zero %d --shuffle 1 --steps 9 --checkpoint-dir %s/ck "
             "--resume", m, zero, d);
    snprintf(p, sizeof p, "%s/c", d);
    cr_assert_eq(tc_run(NULL, args, p), 1);
    snprintf(e, sizeof e, "%s/c.err", d);
    cr_expect(tc_file_has(e, "world size (ranks): the save has 2, this run 1"));
    free(d);
}

Test(resume, zero1_two_ranks_exact, .timeout = 240) { two_ranks_exact(1); }

/* --zero 0 (the default): m and v are replicated, held once, in rank 0's
 * file. Before 2026-12-01 every rank wrote a whole copy and the resume
 * refused it ("its slice overlaps the previous rank's"): a 2-rank run could
 * not be resumed at all. */
Test(resume, zero0_two_ranks_exact, .timeout = 240)
{
    two_ranks_exact(0);
}

/* ... and rank 1's state file holds its run state only, not a second copy
 * of m and v (the tiny model's m and v are 2 x 4 bytes x about 40k). */
Test(resume, zero0_saves_the_optimizer_once, .timeout = 120)
{
    char *d = tu_tempdir(), cmd[8192];
    tc_make_shards(d, 2, 400);
    snprintf(cmd, sizeof cmd, "%s %s %s --steps 2 --checkpoint-dir %s/ck >%s/a.out 2>&1",
             MPIRUN2, tc_bin(), tc_model_args(d), d, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    size_t r0 = 0, r1 = 0;
    char p[700];
    snprintf(p, sizeof p, "%s/ck/step_00000002/state_r00000.bin", d);
    free(tu_read_file(p, &r0));
    snprintf(p, sizeof p, "%s/ck/step_00000002/state_r00001.bin", d);
    free(tu_read_file(p, &r1));
    cr_expect(r0 > 100000 && r1 < 8192, "state files of %zu and %zu bytes", r0, r1);
    free(d);
}
