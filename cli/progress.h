/* cli/progress.h — what the trainer tells its user while it runs.
 *
 * Owns: the time figures of each step line (elapsed, ETA, achieved FLOP/s
 * and MFU), the start-up estimate of the run's length, the arenas'
 * allocation progress (AllocShow), the in-step progress
 * line on a terminal, and the model's per-block hook (model/gpt.h) that
 * draws that line. Whether a pending signal abandons the pass at a block
 * is the stop policy's (cli/stop.h), whose hook calls this one's halves.
 *
 * Conventions. FLOPs are model/flops.h's count of one step's forward and
 * backward, times grad-accum, per rank: recompute and the optimizer are not
 * counted (MFU's convention: the work the model needs, not the work this
 * schedule does). MFU is achieved FLOP/s over the device's dense peak
 * (kernels/device_info.h's table, or --peak-tflops); with no known peak
 * (every CPU) only FLOP/s is printed.
 *
 * Test-only environment variables (the test build only, base/test_hooks.h):
 * TRAIN_GPT_TEST_BLOCK_DELAY_MS=MS sleeps
 * after every block, to make steps long enough for a test to land a signal
 * inside one or to see the in-step line; TRAIN_GPT_TEST_BLOCK_CLOCK_MS=MS
 * moves the clock this file's figures read (progress_now_ms: a step's and a
 * val's ms, elapsed, the ETA) MS on at every block, with no sleep, so that
 * a test of the ETA knows the time a pass took without waiting for it. */
#ifndef CLI_PROGRESS_H
#define CLI_PROGRESS_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "model/gpt.h"

/* The in-step line appears once a pass has run this long (terminals only). */
#define PROGRESS_SHOW_AFTER_MS 1000.0

typedef struct {
    /* fixed at set-up */
    double t_start;       /* ms (CLOCK_MONOTONIC): the process's start, for elapsed */
    double step_flops;    /* model FLOPs of one optimizer step on this rank */
    double peak;          /* FLOP/s MFU is measured against; 0 = unknown, no MFU */
    char peak_what[512];  /* where `peak` comes from, for the start-up line */
    int tty;              /* stdout is a terminal: draw the in-step line */
    int block_delay_ms;   /* TRAIN_GPT_TEST_BLOCK_DELAY_MS */
    int block_clock_ms;   /* TRAIN_GPT_TEST_BLOCK_CLOCK_MS */
    int steps;            /* the run's last step (--steps) */
    /* the training loop's pace, for the ETA */
    double t_loop;        /* ms when this process's first step began; 0 before */
    int done;             /* steps this process finished */
    /* the work after the last step (the final val loss and --eval-file
     * score), which the ETA adds: measured when one ran in this process,
     * else counted in forward passes priced at the last step's pace */
    double fwd_per_step;  /* one micro-batch forward's FLOPs / a step's (recompute counted) */
    int tail_passes[2];   /* PROGRESS_VAL, PROGRESS_EVAL: forward passes; 0 = none */
    double tail_ms[2];    /* the last measured one's ms; < 0 = none yet */
    /* the pass in progress */
    char label[64];       /* "step 3/20", "val 2/5"; "" = draw nothing */
    double t_pass, t_drawn;
    int drawn;            /* the in-step line is on the screen */
} Progress;

/* One step's figures, for its line and its log entry. */
typedef struct {
    double elapsed_s, eta_s; /* eta_s < 0 until a step has finished */
    double flops_per_s, mfu; /* mfu < 0 without a peak */
} StepFigures;

/* Set up p for model g (installs its block hook, which only draws).
 * t_start: the process's start (progress_now_ms). peak_tflops > 0
 * overrides the device table. */
void progress_init(Progress *p, GPT *g, double t_start, int grad_accum, double peak_tflops,
                   int steps);

/* The block hook's two halves, for a hook that wraps this one (cli/stop.h)
 * and decides between them: the test delay (above) after a block, then
 * the in-step line drawn when due. */
void progress_block_delay(const Progress *p);
void progress_block_draw(Progress *p, const GPT *g, int done);

/* Print where the MFU's peak comes from (or that there is none). */
void progress_print_peak(const Progress *p, FILE *out);

/* The start-up's one predicted step time, and the run's (steps_to_run
 * steps, val_evals evaluations of val_batches micro-batches), printed to
 * out with where it came from, and a warning to stderr when the run would
 * take more than an hour. The step is step_ns when the op costs predicted
 * it (>= 0; costs_from names them); else a rough guess from the step's
 * FLOPs at the rate of one matmul of the model's MLP shape timed on its
 * backend (a tenth of a second, in the model's scratch buffers). Returns
 * the estimated run seconds. */
double progress_estimate(Progress *p, GPT *g, int grad_accum, long long step_ns,
                         const char *costs_from, int steps_to_run, int val_evals,
                         int val_batches, FILE *out);

/* A pass begins: label it for the in-step line ("" for none). The first
 * training step's (training = 1) starts the clock the ETA is paced by. */
void progress_begin(Progress *p, const char *label, int training);
/* A new label for the pass in progress (its clock goes on). */
void progress_relabel(Progress *p, const char *label);
/* Erase the in-step line, if drawn, before printing a normal line. */
void progress_clear(Progress *p);

/* The work after the last step, for the ETA: val_passes (--val-batches, or
 * 0 without val data) and eval_passes (this rank's --eval-file forwards, 0
 * without one) micro-batch forwards of model g. */
enum { PROGRESS_VAL, PROGRESS_EVAL };
void progress_set_tail(Progress *p, const GPT *g, int grad_accum, int val_passes,
                       int eval_passes);
/* A val loss (PROGRESS_VAL) or --eval-file score (PROGRESS_EVAL) took ms:
 * the final one is expected to take as long. */
void progress_tail_measured(Progress *p, int kind, double ms);

/* A training step finished in ms: its figures; counts it for the ETA, which
 * is the steps left at this process's pace (the vals, evals and saves
 * between steps included) plus the final val loss and --eval-file score. */
void progress_step_done(Progress *p, int step, double ms, StepFigures *f);
/* " | 1.2 TFLOP/s | MFU 0.1% | elapsed 0:01:02 | ETA 0:20:00"; with world > 1
 * ranks, FLOP/s and MFU say " per rank" (they are this rank's figures). */
void progress_format(const StepFigures *f, int world, char *out, size_t len);
/* The same figures as log fields: elapsed_s, eta_s, tflops, mfu. */
void progress_log(const StepFigures *f, cJSON *j);

double progress_now_ms(void);

/* The arenas' allocation (gpt_init_schedule's AllocProgressFn): silent for
 * the first PROGRESS_SHOW_AFTER_MS, then on a terminal one line redrawn
 * ("allocating 7.00 GiB: 3.20 of 5.66 GiB zeroed (params)"), on a pipe or
 * a file a line each time an arena is begun and every 10 s within one. alloc_show_end closes it with the
 * time taken, when it was shown. */
typedef struct {
    double t0, t_drawn;    /* ms */
    size_t planned;        /* the arenas' bytes, for the message */
    int tty, shown;
    const char *arena;     /* the last one a line was printed for */
    FILE *out;
} AllocShow;
void alloc_show_start(AllocShow *a, size_t planned, FILE *out);
void alloc_show_update(void *ctx, const char *arena, size_t done, size_t total);
void alloc_show_end(AllocShow *a);

#endif
