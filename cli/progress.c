/* cli/progress.c — see cli/progress.h. */
#include "cli/progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/test_hooks.h"
#include "kernels/device_info.h"
#include "model/flops.h"
#include "base/stop.h"

#ifdef TRAIN_GPT_TEST_HOOKS
/* ms that TRAIN_GPT_TEST_BLOCK_CLOCK_MS has moved this process's clock on
 * (progress.h): one run, one clock, so the file holds it. */
static double test_clock_ms;
#endif

double progress_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double ms = ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
    TEST_HOOK(ms += test_clock_ms);
    return ms;
}

/* The in-step line: where the pass is, e.g.
 *   "step 3/20: backward 5/48 blocks (re-forwarding block 43) | 12 s". */
static void draw(Progress *p, const GPT *g, int done)
{
    const Schedule *s = &g->sched;
    int L = g->cfg.num_layers, back = 0;
    for (int k = s->n_forward; k < done; k++) back += s->steps[k].kind == STEP_BACKWARD;
    char where[128];
    if (done <= s->n_forward)
        snprintf(where, sizeof where, "forward %d/%d blocks", done, L);
    else if (s->steps[done - 1].kind == STEP_FORWARD)
        snprintf(where, sizeof where, "backward %d/%d blocks (re-forwarding block %d)", back, L,
                 s->steps[done - 1].block);
    else
        snprintf(where, sizeof where, "backward %d/%d blocks", back, L);
    double now = progress_now_ms();
    printf("\r\033[K%s: %s | %.0f s", p->label, where, (now - p->t_pass) / 1e3);
    fflush(stdout);
    p->drawn = 1;
    p->t_drawn = now;
    TEST_HOOK(io_test_pause("drawn", p->label)); /* the in-step line is on the screen */
}

void progress_block_delay(const Progress *p)
{
    if (p->block_delay_ms) io_sleep_ms(p->block_delay_ms);
    TEST_HOOK(test_clock_ms += p->block_clock_ms);
    /* a block boundary of the pass labelled (a signal sent here lands in
     * the pass: cli/stop.c checks right after) */
    TEST_HOOK(io_test_pause("block", p->label));
}

void progress_block_draw(Progress *p, const GPT *g, int done)
{
    if (p->tty && p->label[0] && done > 0) {
        double now = progress_now_ms();
        if (now - p->t_pass >= PROGRESS_SHOW_AFTER_MS && now - p->t_drawn >= 250.0)
            draw(p, g, done);
    }
}

/* model/gpt.h's block hook: shows where the pass is, never abandons it. */
static int on_block(void *ctx, const GPT *g, int done)
{
    progress_block_delay(ctx);
    progress_block_draw(ctx, g, done);
    return 0;
}

void progress_init(Progress *p, GPT *g, double t_start, int grad_accum, double peak_tflops,
                   int steps)
{
    memset(p, 0, sizeof *p);
    p->t_start = t_start;
    p->steps = steps;
    p->tty = isatty(STDOUT_FILENO);
    p->block_delay_ms = TEST_HOOK_MS("TRAIN_GPT_TEST_BLOCK_DELAY_MS");
    p->block_clock_ms = TEST_HOOK_MS("TRAIN_GPT_TEST_BLOCK_CLOCK_MS");
    FlopCounts f;
    flops_count(&g->cfg, g->B, g->T, &f);
    p->step_flops = (double)f.step * grad_accum;
    char name[256];
    device_name(g->be, name, sizeof name);
    int bf16 = g->be->act_bytes == 2;
    const char *row;
    if (peak_tflops > 0) {
        p->peak = peak_tflops * 1e12;
        snprintf(p->peak_what, sizeof p->peak_what, "%.3g TFLOP/s (--peak-tflops)", peak_tflops);
    } else if ((p->peak = device_peak_flops(name, bf16, &row)) > 0) {
        snprintf(p->peak_what, sizeof p->peak_what, "%.1f TFLOP/s, the %s dense %s peak of %s",
                 p->peak / 1e12, row, bf16 ? "bf16" : "fp32", name);
    } else {
        snprintf(p->peak_what, sizeof p->peak_what, "%s", name);
    }
    gpt_set_block_hook(g, on_block, p);
}

void progress_print_peak(const Progress *p, FILE *out)
{
    if (p->peak > 0)
        fprintf(out, "speed: %.3g GFLOP a step (model/flops.h, recompute not counted); MFU "
                "against %s\n", p->step_flops / 1e9, p->peak_what);
    else
        fprintf(out, "speed: %.3g GFLOP a step (model/flops.h, recompute not counted); no peak "
                "is known for %s, so steps show FLOP/s without MFU (--peak-tflops X sets one)\n",
                p->step_flops / 1e9, p->peak_what);
}

/* FLOP/s of one matmul out(rows,4C) = in(rows,C) . W(4C,C)^T on g's
 * backend, in g's scratch buffers (dres (N,C), dbig (N,4C)) with the first
 * 4C*C parameters as W: nothing is allocated, and every step overwrites
 * the scratch anyway. About 0.1 s. */
static double matmul_rate(GPT *g, int *rows_out)
{
    Backend *be = g->be;
    int C = g->cfg.channels, N = g->B * g->T, rows = N;
    double per_row = 2.0 * C * 4.0 * C;
    /* the cpu: at most ~2 GFLOP a call, so the probe stays short */
    if (strcmp(be->name, "cpu") == 0 && rows * per_row > 2e9) rows = (int)(2e9 / per_row);
    if (rows < 1) rows = 1;
    *rows_out = rows;
    be->ops->mem_zero(be, g->dres, (size_t)rows * C * be->act_bytes);
    /* ZeRO-3's params are a shard, maybe smaller than 4C*C; a block buffer holds 12C*C */
    const void *w = g->param_blocks ? g->param_blocks : g->params;
    be->ops->matmul_forward(be, g->dbig, g->dres, w, NULL, rows, C, 4 * C); /* warm-up */
    be->ops->sync(be);
    double t0 = progress_now_ms(), t;
    int reps = 0;
    do {
        be->ops->matmul_forward(be, g->dbig, g->dres, w, NULL, rows, C, 4 * C);
        be->ops->sync(be);
        reps++;
        t = progress_now_ms() - t0;
    } while (t < 100.0 && reps < 1000 && !stop_requested()); /* a stop: cli/stop.h */
    return reps * rows * per_row / (t > 1e-3 ? t / 1e3 : 1e-6);
}

static void format_duration(double s, char *out, size_t len)
{
    if (s < 1) snprintf(out, len, "%.0f ms", s * 1e3);
    else if (s < 10) snprintf(out, len, "%.1f s", s);
    else if (s < 120) snprintf(out, len, "%.0f s", s);
    else if (s < 7200) snprintf(out, len, "%.0f min", s / 60);
    else snprintf(out, len, "%.1f hours", s / 3600);
}

double progress_estimate(Progress *p, GPT *g, int grad_accum, long long step_ns,
                         const char *costs_from, int steps_to_run, int val_evals,
                         int val_batches, FILE *out)
{
    FlopCounts f;
    flops_count(&g->cfg, g->B, g->T, &f);
    double work = ((double)f.step + (double)flops_recompute(&f, &g->sched)) * grad_accum;
    double fwd = (double)f.embed_fwd + (double)g->cfg.num_layers * f.block_fwd + f.head_fwd;
    char how[4700];
    double step_s;
    if (step_ns >= 0) {
        /* every op timed at this shape: the one figure the run should be held to */
        step_s = step_ns / 1e9;
        snprintf(how, sizeof how, "predicted from the op costs, %s", costs_from);
    } else {
        /* one matmul's rate; the other ops run slower, so steps take longer */
        int rows;
        double rate = matmul_rate(g, &rows);
        step_s = work / rate;
        snprintf(how, sizeof how, "a rough guess: %.3g GFLOP with recompute at the %.3g GFLOP/s "
                 "a (%d,%d)x(%d,%d) matmul ran at here just now; other ops run slower, and "
                 "--op-costs measure predicts from every op", work / 1e9, rate / 1e9, rows,
                 g->cfg.channels, g->cfg.channels, 4 * g->cfg.channels);
    }
    /* a val micro-batch is a forward: its share of the step's FLOPs */
    double run_s = steps_to_run * step_s + val_evals * val_batches * step_s * fwd / work;
    char a[32], b[32];
    format_duration(step_s, a, sizeof a);
    format_duration(run_s, b, sizeof b);
    fprintf(out, "estimate: %s a step (%s); %d step%s and %d val loss%s: about %s\n", a, how,
            steps_to_run, steps_to_run == 1 ? "" : "s", val_evals, val_evals == 1 ? "" : "es",
            b);
    if (run_s > 3600)
        fprintf(stderr, "warning: this run as configured will take more than an hour (about %s, "
                "estimate above); fewer --steps, a smaller model or --batch, or a GPU would "
                "shorten it\n", b);
    fflush(out);
    return run_s;
}

void progress_begin(Progress *p, const char *label, int training)
{
    snprintf(p->label, sizeof p->label, "%s", label);
    p->t_pass = progress_now_ms();
    p->t_drawn = 0;
    if (training && p->t_loop == 0) p->t_loop = p->t_pass;
}

void progress_relabel(Progress *p, const char *label)
{
    snprintf(p->label, sizeof p->label, "%s", label);
}

void progress_clear(Progress *p)
{
    if (!p->drawn) return;
    printf("\r\033[K");
    fflush(stdout);
    p->drawn = 0;
}

void progress_set_tail(Progress *p, const GPT *g, int grad_accum, int val_passes,
                       int eval_passes)
{
    FlopCounts f;
    flops_count(&g->cfg, g->B, g->T, &f);
    double fwd = (double)f.embed_fwd + (double)g->cfg.num_layers * f.block_fwd + f.head_fwd;
    double work = ((double)f.step + (double)flops_recompute(&f, &g->sched)) * grad_accum;
    p->fwd_per_step = work > 0 ? fwd / work : 0.0;
    p->tail_passes[PROGRESS_VAL] = val_passes;
    p->tail_passes[PROGRESS_EVAL] = eval_passes;
    p->tail_ms[PROGRESS_VAL] = p->tail_ms[PROGRESS_EVAL] = -1.0;
}

void progress_tail_measured(Progress *p, int kind, double ms) { p->tail_ms[kind] = ms; }

/* Seconds of the work after the last step; step_ms: the last step's time,
 * which prices a forward not yet measured (FLOPs in proportion). */
static double tail_s(const Progress *p, double step_ms)
{
    double s = 0.0;
    for (int k = PROGRESS_VAL; k <= PROGRESS_EVAL; k++)
        if (p->tail_passes[k] > 0)
            s += p->tail_ms[k] >= 0 ? p->tail_ms[k] / 1e3
                                    : p->tail_passes[k] * p->fwd_per_step * step_ms / 1e3;
    return s;
}

void progress_step_done(Progress *p, int step, double ms, StepFigures *f)
{
    double now = progress_now_ms();
    p->done++;
    f->elapsed_s = (now - p->t_start) / 1e3;
    double per_step = p->t_loop > 0 ? (now - p->t_loop) / 1e3 / p->done : ms / 1e3;
    f->eta_s = (p->steps - step) * per_step + tail_s(p, ms);
    f->flops_per_s = ms > 0 ? p->step_flops / (ms / 1e3) : 0.0;
    f->mfu = p->peak > 0 ? f->flops_per_s / p->peak : -1.0;
}

static void hms(double s, char *out, size_t len)
{
    long t = s > 0 ? (long)(s + 0.5) : 0;
    snprintf(out, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

void progress_format(const StepFigures *f, int world, char *out, size_t len)
{
    char el[32], eta[32], mfu[48] = "";
    /* FLOP/s and MFU are this rank's (the step line's tok/s is all ranks') */
    const char *each = world > 1 ? " per rank" : "";
    hms(f->elapsed_s, el, sizeof el);
    hms(f->eta_s, eta, sizeof eta);
    if (f->mfu >= 0) snprintf(mfu, sizeof mfu, " | MFU %.1f%%%s", 100.0 * f->mfu, each);
    double v = f->flops_per_s;
    const char *unit = v >= 1e12 ? "TFLOP/s" : v >= 1e9 ? "GFLOP/s" : "MFLOP/s";
    double scale = v >= 1e12 ? 1e12 : v >= 1e9 ? 1e9 : 1e6;
    snprintf(out, len, " | %.3g %s%s%s | elapsed %s | ETA %s", v / scale, unit, each, mfu, el,
             eta);
}

void progress_log(const StepFigures *f, cJSON *j)
{
    cJSON_AddNumberToObject(j, "elapsed_s", f->elapsed_s);
    cJSON_AddNumberToObject(j, "eta_s", f->eta_s);
    cJSON_AddNumberToObject(j, "tflops", f->flops_per_s / 1e12);
    if (f->mfu >= 0) cJSON_AddNumberToObject(j, "mfu", f->mfu);
    else cJSON_AddNullToObject(j, "mfu");
}

void alloc_show_start(AllocShow *a, size_t planned, FILE *out)
{
    *a = (AllocShow){.t0 = progress_now_ms(), .planned = planned, .out = out,
                     .tty = isatty(fileno(out))};
}

void alloc_show_update(void *ctx, const char *arena, size_t done, size_t total)
{
    AllocShow *a = ctx;
    double now = progress_now_ms();
    if (now - a->t0 < PROGRESS_SHOW_AFTER_MS) return;
    if (a->tty) {
        if (a->shown && now - a->t_drawn < 200 && done < total) return;
        fprintf(a->out, "\rallocating %.2f GiB: %.2f of %.2f GiB zeroed (%s)\033[K",
                a->planned / 1073741824.0, done / 1073741824.0, total / 1073741824.0, arena);
        fflush(a->out);
    } else if (a->arena == arena && now - a->t_drawn < 10000) {
        return;
    } else {
        fprintf(a->out, "allocating %.2f GiB: %.2f of %.2f GiB zeroed, in %s\n",
                a->planned / 1073741824.0, done / 1073741824.0, total / 1073741824.0, arena);
    }
    a->arena = arena;
    a->shown = 1;
    a->t_drawn = now;
}

void alloc_show_end(AllocShow *a)
{
    if (!a->shown) return;
    fprintf(a->out, "%sallocated %.2f GiB in %.1f s (params, grads and optimizer state zeroed; "
            "activations on first use)\n", a->tty ? "\r\033[K" : "",
            a->planned / 1073741824.0, (progress_now_ms() - a->t0) / 1e3);
}
