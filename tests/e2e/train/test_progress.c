/* tests/e2e/train/test_progress.c — end-to-end: what ./train_gpt tells its user
 * while it runs (cli/progress.h).
 *
 *  - stdout to a file (not a terminal): the header, the memory plan, the
 *    speed and estimate lines, "initializing N parameters..." and each
 *    "val k/n" are in the file while the first step is still running, so
 *    nothing waits in a buffer;
 *  - each step's FLOP/s is the hand-counted FLOPs of a step (model/flops.h's
 *    convention, worked out below for the test model) over its time, MFU is
 *    that over --peak-tflops, and the JSON log carries elapsed_s, eta_s,
 *    tflops and mfu; with no peak (the CPU) mfu is null and the line has no
 *    MFU;
 *  - the last step's ETA is the final val loss still to run: priced at the
 *    step's pace by FLOPs (a forward's share) before any val ran, and the
 *    measured time of the previous val after one ran;
 *  - a run estimated to take over an hour warns on stderr at start-up, a
 *    short one does not. (The in-step line on a terminal is checked in
 *    test_stops.c, under a pty.)
 *  - one predicted step time at start-up, with its source: the op costs
 *    (equal to the summary's prediction) or a rough guess from a matmul. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

Test(progress, lines_reach_a_file_as_printed, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s --steps 50 --val-every 10 --val-batches 2",
             tc_model_args(d));
    /* held at step 1's start, the val loss before it done: every line
     * printed so far must be in the file while the run is alive */
    char pause[4200]; /* tu_path's buffers are reused */
    snprintf(pause, sizeof pause, "%s", tu_path(d, "pause"));
    pid_t pid = tc_spawn(tc_pause_env(pause, "step:1"), args, tu_path(d, "s"));
    cr_assert(tc_paused(pause, "step:1", 60000), "the run did not reach step 1");
    cr_expect(tc_file_has(tu_path(d, "s.out"), "val 2/2\n"), "no 'val 2/2' line");
    const char *want[] = {"train_gpt: backend cpu", "memory plan", "speed: ", "estimate: ",
                          "initializing 34176 parameters (seed 1337)...\n", "val 1/2\n"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(tc_file_has(tu_path(d, "s.out"), want[i]), "'%s' not yet in the file", want[i]);
    cr_expect(!tc_file_has(tu_path(d, "s.out"), "step     1/50"), "step 1 was already done");
    kill(pid, SIGTERM);
    int st = tc_wait(pid, 30000);
    cr_assert(st != -1 && WIFEXITED(st));
    cr_expect_eq(WEXITSTATUS(st), 77);
    free(d);
}

/* model/flops.h's count of one step of tc_model_args's model, by hand:
 * L=2, C=32, NH=4, T=16, B=2 (N=32), V=Vp=256. */
static double hand_step_flops(void)
{
    double N = 32, C = 32, T = 16, B = 2, Vp = 256, L = 2;
    double mm = 24 * N * C * C, attn = 2 * B * T * T * C, elem = 54 * N * C;
    double block = (mm + attn + elem) + (2 * mm + 2.5 * attn + 2 * elem);
    double head = 3 * (8 * N * C + 2 * N * C * Vp + 5 * N * Vp);
    return 3 * N * C + L * block + head; /* embedding forward + backward */
}

/* The forward of one micro-batch (a val batch), the same count's forward
 * parts: embedding N*C, each block's forward, final LayerNorm 8NC and the
 * head's logits and loss 2NCVp + 5NVp. */
static double hand_fwd_flops(void)
{
    double N = 32, C = 32, T = 16, B = 2, Vp = 256, L = 2;
    double mm = 24 * N * C * C, attn = 2 * B * T * T * C, elem = 54 * N * C;
    return N * C + L * (mm + attn + elem) + (8 * N * C + 2 * N * C * Vp + 5 * N * Vp);
}

/* The runs here are tc_model_args's: val data, --val-batches 1, --val-every
 * 0, so the last step's ETA is the final val loss alone, and with no val
 * measured yet it is priced at that step's pace: one forward's share of the
 * step's FLOPs (accum micro-batches) times the step's ms. */
static void check_log(const char *log, double peak_tflops, int accum, int steps)
{
    char *text = tu_read_file(log, NULL);
    cr_assert_not_null(text);
    int n = 0;
    double last_elapsed = -1;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        cr_assert_not_null(j);
        cJSON *ms = cJSON_GetObjectItem(j, "ms");
        if (!ms) {
            cJSON_Delete(j);
            continue;
        }
        n++;
        cJSON *tf = cJSON_GetObjectItem(j, "tflops"), *mfu = cJSON_GetObjectItem(j, "mfu");
        cJSON *el = cJSON_GetObjectItem(j, "elapsed_s"), *eta = cJSON_GetObjectItem(j, "eta_s");
        cJSON *step = cJSON_GetObjectItem(j, "step");
        cr_assert(cJSON_IsNumber(tf) && cJSON_IsNumber(el) && cJSON_IsNumber(eta) && mfu,
                  "step line lacks a time field: %s", line);
        double flops = tf->valuedouble * 1e12 * ms->valuedouble / 1e3;
        double want = hand_step_flops() * accum;
        cr_expect(fabs(flops / want - 1) < 1e-9, "FLOPs of a step %.9g, want %.9g", flops, want);
        if (peak_tflops > 0)
            cr_expect(cJSON_IsNumber(mfu) &&
                          fabs(mfu->valuedouble / (tf->valuedouble / peak_tflops) - 1) < 1e-6,
                      "mfu is not tflops / peak");
        else
            cr_expect(cJSON_IsNull(mfu), "no peak: mfu must be null");
        cr_expect_geq(el->valuedouble, last_elapsed);
        last_elapsed = el->valuedouble;
        cr_expect_geq(eta->valuedouble, 0);
        if (step->valueint == steps) {
            double tail = hand_fwd_flops() / (hand_step_flops() * accum) * ms->valuedouble / 1e3;
            cr_expect(eta->valuedouble > 0 && fabs(eta->valuedouble / tail - 1) < 1e-6,
                      "ETA after the last step %.9g s, want the final val's %.9g s",
                      eta->valuedouble, tail);
        }
        cJSON_Delete(j);
    }
    cr_expect_eq(n, steps);
    free(text);
}

Test(progress, step_figures_follow_the_flop_count, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 3 --grad-accum 2 --peak-tflops 0.001 --log %s", m,
             tu_path(d, "a.jsonl"));
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "a")), 0);
    check_log(tu_path(d, "a.jsonl"), 0.001, 2, 3);
    cr_expect(tc_file_has(tu_path(d, "a.out"), "MFU against 0.001 TFLOP/s (--peak-tflops)"));
    cr_expect(tc_file_has(tu_path(d, "a.out"),
                          "% | elapsed 0:00:0"), "no MFU or elapsed on the line");
    cr_expect(tc_file_has(tu_path(d, "a.out"), " | ETA 0:00:00\n"));
    cr_expect(!tc_file_has(tu_path(d, "a.err"), "warning"), "a short run warned");

    snprintf(args, sizeof args, "%s --steps 2 --log %s", m, tu_path(d, "b.jsonl"));
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "b")), 0);
    check_log(tu_path(d, "b.jsonl"), 0, 1, 2);
    cr_expect(tc_file_has(tu_path(d, "b.out"), "no peak is known for"));
    cr_expect(!tc_file_has(tu_path(d, "b.out"), "| MFU "), "an MFU without a peak");
    free(d);
}

Test(progress, warns_when_the_run_takes_over_an_hour, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s --steps 1000000000", tc_model_args(d));
    char pause[4200]; /* tu_path's buffers are reused */
    snprintf(pause, sizeof pause, "%s", tu_path(d, "pause"));
    pid_t pid = tc_spawn(tc_pause_env(pause, "step:1"), args, tu_path(d, "s"));
    cr_assert(tc_paused(pause, "step:1", 60000), "the run did not reach step 1");
    cr_assert(tc_file_has(tu_path(d, "s.err"),
                          "warning: this run as configured will take more than "
                          "an hour (about "),
              "no warning for a billion steps");
    kill(pid, SIGTERM);
    int st = tc_wait(pid, 30000);
    cr_assert(st != -1 && WIFEXITED(st));
    cr_expect_eq(WEXITSTATUS(st), 77);
    cr_expect(tc_file_has(tu_path(d, "s.out"), "estimate: "));
    free(d);
}

/* The last step's ETA is the final val loss still to run. Measured: with
 * --val-every 2 a val ran before step 3 of 3, and the final one is
 * expected to take as long. By hand: TRAIN_GPT_TEST_BLOCK_CLOCK_MS=300
 * moves the run's clock 300 ms on at each block of a val batch's forward
 * (the hook, L = 2 blocks), so 2 batches take at least 2 x 2 x 300 = 1.2 s
 * by it, and the tiny model's compute adds little: the ETA must be in
 * [1.2, 1.8] s. The line shows it rounded (0:00:01). (The hook's sleeping
 * twin, TRAIN_GPT_TEST_BLOCK_DELAY_MS, made this test wait 7 s for blocks
 * of every val and step.) */
Test(progress, eta_of_the_last_step_counts_the_final_val, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s --steps 3 --val-every 2 --val-batches 2 --log %s",
             tc_model_args(d), tu_path(d, "v.jsonl"));
    cr_assert_eq(tc_run("TRAIN_GPT_TEST_BLOCK_CLOCK_MS=300", args, tu_path(d, "v")), 0);
    cJSON *j = tc_log_last_with(tu_path(d, "v.jsonl"), "eta_s");
    cr_assert_not_null(j);
    cr_expect_eq(cJSON_GetObjectItem(j, "step")->valueint, 3);
    double eta = cJSON_GetObjectItem(j, "eta_s")->valuedouble;
    cr_expect(eta >= 1.2 && eta <= 1.8, "ETA after step 3 of 3: %.3f s, want the 1.2 s val "
              "(+ at most 0.6 s)", eta);
    cr_expect(tc_file_has(tu_path(d, "v.out"), " | ETA 0:00:01\n"));
    cJSON_Delete(j);
    free(d);
}

/* One predicted step time at start-up, saying where it came from: from the
 * op costs when they are measured (the figure the summary holds the
 * measured step against, to the millisecond), else a rough guess from one
 * matmul; never a second "predicted step time:" line beside it. */
Test(progress, one_step_time_with_its_source, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], env[700];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s --steps 2 --val-every 0 --op-costs flops", tc_model_args(d));
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "g")), 0);
    char *out = tu_read_file(tu_path(d, "g.out"), NULL);
    cr_assert(out && strstr(out, "estimate: ") && strstr(strstr(out, "estimate: "),
              "a rough guess: "), "%s", out);
    cr_expect(!strstr(out, "predicted step time"), "%s", out);
    free(out);
    snprintf(env, sizeof env, "TRAIN_GPT_CACHE_DIR='%s/cache'", d);
    snprintf(args, sizeof args, "%s --steps 2 --val-every 0 --recompute auto --memory-budget 1GiB "
             "--op-costs measure", tc_model_args(d));
    cr_assert_eq(tc_run(env, args, tu_path(d, "m")), 0);
    out = tu_read_file(tu_path(d, "m.out"), NULL);
    char *est = out ? strstr(out, "estimate: ") : NULL;
    char *sum = out ? strstr(out, "step time: predicted ") : NULL;
    cr_assert(est && sum && strstr(est, "a step (predicted from the op costs, measured on"),
              "%s", out);
    cr_expect(!strstr(out, "predicted step time"), "%s", out);
    /* the estimate's figure is the summary's prediction, rounded as format_duration does */
    double e = 0, p = 0;
    char unit[8] = "";
    cr_assert_eq(sscanf(est, "estimate: %lf %7s", &e, unit), 2, "%s", est);
    cr_assert_eq(sscanf(sum, "step time: predicted %lf ms", &p), 1, "%s", sum);
    double e_ms = strcmp(unit, "s") == 0 ? e * 1e3 : e;
    cr_expect(strcmp(unit, "ms") == 0 ? fabs(e_ms - p) <= 0.5 : fabs(e_ms - p) <= 0.05 * p,
              "estimate %g %s, summary %g ms", e, unit, p);
    free(out), free(d);
}
