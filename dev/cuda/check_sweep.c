/* dev/cuda/check_sweep.c — check_kernels --sweep: every variant of the
 * bf16 attention kernels in the sweep's table (attention_variants.cu,
 * entry 0 the one that ships) at GPT-2 124M's attention shape (T=1024, C=768, NH=12;
 * B = 4, 16, 64) and the 48-layer XL's (C=1600, NH=25, hs=64; B=8).
 *
 * Per shape, the default variants run first and their outputs are the
 * reference (check_kernels' other rows hold the defaults, and every variant
 * at 124M's B=4, against the cpu). Then each variant of one kernel, the
 * other two at their default: its outputs are NaN-poisoned, it runs once
 * and must match the reference, max|v - ref| / max|ref| <= 2e-2 with every
 * element finite (the forward's out and lse, the backward's dqkv), before
 * it is timed: the whole op (the backward with its D kernel), CUDA events,
 * median of 20 after 3 warm-ups. A variant that fails is not timed. Last,
 * the fastest correct variant of each kernel, and the backward with the
 * fastest dQ and dK/dV together (checked and timed again).
 * Rates: 2 B NH T^2 hs FLOPs forward (causal), 2.5 times that backward.
 *
 * --quick (the emulator's build, where this is tested): one small shape
 * (B=1, T=130, C=128, NH=2), 1 warm-up and 2 runs timed with the host
 * clock. Exit status 1 when any variant fails its check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

#ifdef CUDA_EMU
typedef struct {
    struct timespec t0;
} SwTimer;
static void sw_timer_init(SwTimer *t) { (void)t; }
static void sw_timer_free(SwTimer *t) { (void)t; }
static void sw_start(Backend *be, SwTimer *t)
{
    be->ops->sync(be);
    clock_gettime(CLOCK_MONOTONIC, &t->t0);
}
static float sw_stop_ms(Backend *be, SwTimer *t)
{
    struct timespec t1;
    be->ops->sync(be);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (float)((t1.tv_sec - t->t0.tv_sec) * 1e3 + (t1.tv_nsec - t->t0.tv_nsec) * 1e-6);
}
#else
#include <cuda_runtime.h>
typedef struct {
    cudaEvent_t e0, e1;
} SwTimer;
static void sw_cuda(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return;
    fprintf(stderr, "check_kernels --sweep: %s failed: %s\n", what, cudaGetErrorString(e));
    exit(2);
}
static void sw_timer_init(SwTimer *t)
{
    sw_cuda(cudaEventCreate(&t->e0), "cudaEventCreate");
    sw_cuda(cudaEventCreate(&t->e1), "cudaEventCreate");
}
static void sw_timer_free(SwTimer *t)
{
    cudaEventDestroy(t->e0);
    cudaEventDestroy(t->e1);
}
static void sw_start(Backend *be, SwTimer *t)
{
    sw_cuda(cudaEventRecord(t->e0, (cudaStream_t)be->ops->native_stream(be)), "cudaEventRecord");
}
static float sw_stop_ms(Backend *be, SwTimer *t)
{
    float ms = 0.0f;
    sw_cuda(cudaEventRecord(t->e1, (cudaStream_t)be->ops->native_stream(be)), "cudaEventRecord");
    sw_cuda(cudaEventSynchronize(t->e1), "cudaEventSynchronize");
    sw_cuda(cudaEventElapsedTime(&ms, t->e0, t->e1), "cudaEventElapsedTime");
    return ms;
}
#endif

/* One shape's buffers: inputs, the reference outputs (default variants),
 * and the outputs a variant writes. */
typedef struct {
    Backend *be;
    int B, T, C, NH;
    size_t n3, nc, nl;
    void *qkv, *dout, *out0, *dqkv;
    float *lse0;
    void *out;   /* a forward variant's out */
    float *lse;  /* and lse */
    float *h_out0, *h_lse0, *h_dqkv0, *h_got, *h_lse;
    int v[ATTN_KERNELS]; /* the variant of each kernel the runs take */
} Sweep;

static void sw_fwd(Sweep *s)
{
    attn_variant_forward(s->be, s->v[ATTN_FWD], s->out, s->lse, s->qkv, s->B, s->T, s->C, s->NH);
}
static void sw_bwd(Sweep *s)
{
    attn_variant_backward(s->be, s->v[ATTN_DQ], s->v[ATTN_DKDV], s->dqkv, s->dout, s->qkv,
                          s->out0, s->lse0, s->B, s->T, s->C, s->NH);
}

static int cmp_f(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* median of reps timed runs after warm runs */
static float sw_time(Sweep *s, void (*fn)(Sweep *), int warm, int reps)
{
    SwTimer t;
    float ms[20];
    sw_timer_init(&t);
    for (int i = 0; i < warm; i++) fn(s);
    for (int i = 0; i < reps; i++) {
        sw_start(s->be, &t);
        fn(s);
        ms[i] = sw_stop_ms(s->be, &t);
    }
    sw_timer_free(&t);
    qsort(ms, (size_t)reps, sizeof ms[0], cmp_f);
    return reps % 2 ? ms[reps / 2] : 0.5f * (ms[reps / 2 - 1] + ms[reps / 2]);
}

/* run kernel k's variant v (the others at their default), check it against
 * the reference, time it if correct; returns the median ms, or -1 */
static float sw_variant(Ctx *c, Sweep *s, int k, int v, int warm, int reps, double flops)
{
    const double tol = 2e-2;
    s->v[k] = v;
    double err;
    if (k == ATTN_FWD) {
        ck_dev_poison(c, s->out, s->nc, 0);
        ck_dev_poison(c, s->lse, s->nl, 1);
        sw_fwd(s);
        ck_dev_get(c, s->h_got, s->out, s->nc, 0);
        ck_dev_get(c, s->h_lse, s->lse, s->nl, 1);
        double e2 = ck_rel_err(s->h_lse, s->h_lse0, s->nl);
        err = ck_rel_err(s->h_got, s->h_out0, s->nc);
        if (e2 > err) err = e2;
    } else {
        ck_dev_poison(c, s->dqkv, s->n3, 0);
        sw_bwd(s);
        ck_dev_get(c, s->h_got, s->dqkv, s->n3, 0);
        err = ck_rel_err(s->h_got, s->h_dqkv0, s->n3);
    }
    const char *name = attn_variant_name(k, v);
    float ms = -1.0f;
    if (err <= tol) ms = sw_time(s, k == ATTN_FWD ? sw_fwd : sw_bwd, warm, reps);
    if (ms >= 0.0f)
        printf("  %-23s %9.4f ms %8.1f TFLOP/s   err %.1e%s\n", name, ms,
               flops / (ms * 1e-3) / 1e12, err, v == 0 ? "   (default)" : "");
    else
        printf("  %-23s  FAIL: err %.3e (tol %.0e); not timed\n", name, err, tol);
    fflush(stdout);
    s->v[k] = 0;
    return ms;
}

static int sw_shape(Ctx *c, int B, int T, int C, int NH, int quick)
{
    const int warm = quick ? 1 : 3, reps = quick ? 2 : 20;
    Sweep s;
    memset(&s, 0, sizeof s);
    s.be = c->gpu, s.B = B, s.T = T, s.C = C, s.NH = NH;
    s.n3 = (size_t)B * T * 3 * C, s.nc = (size_t)B * T * C, s.nl = (size_t)B * NH * T;
    float *h = ck_rand(c, s.n3, 0.05f, 1.5f);
    s.qkv = ck_dev_from(c, h, s.n3, 0);
    free(h);
    h = ck_rand(c, s.nc, 0.05f, 1.0f);
    s.dout = ck_dev_from(c, h, s.nc, 0);
    free(h);
    s.out0 = ck_dev(c, s.nc, 0), s.out = ck_dev(c, s.nc, 0), s.dqkv = ck_dev(c, s.n3, 0);
    s.lse0 = ck_dev(c, s.nl, 1), s.lse = ck_dev(c, s.nl, 1);
    s.h_out0 = ck_alloc(s.nc), s.h_lse0 = ck_alloc(s.nl), s.h_dqkv0 = ck_alloc(s.n3);
    s.h_got = ck_alloc(s.n3), s.h_lse = ck_alloc(s.nl);

    /* the reference: every kernel as it ships (s.v all 0) */
    c->gpu->ops->attention_forward(c->gpu, s.out0, s.lse0, s.qkv, B, T, C, NH, NH);
    sw_bwd(&s);
    c->gpu->ops->sync(c->gpu);
    ck_dev_get(c, s.h_out0, s.out0, s.nc, 0);
    ck_dev_get(c, s.h_lse0, s.lse0, s.nl, 1);
    ck_dev_get(c, s.h_dqkv0, s.dqkv, s.n3, 0);

    const double ffl = 2.0 * B * NH * (double)T * T * (C / NH);
    printf("\nattention variants (bf16) at B=%d T=%d C=%d NH=%d: median of %d after %d "
           "warm-up%s; err = max|v - default| / max|default|\n",
           B, T, C, NH, reps, warm, warm == 1 ? "" : "s");
    int fails = 0, best[ATTN_KERNELS];
    float best_ms[ATTN_KERNELS];
    static const char *what[ATTN_KERNELS] = {"forward", "backward, dQ variants",
                                             "backward, dK/dV variants"};
    for (int k = 0; k < ATTN_KERNELS; k++) {
        printf(" %s:\n", what[k]);
        best[k] = -1, best_ms[k] = 0.0f;
        for (int v = 0; v < attn_variant_count(k); v++) {
            if (v > 0 && ck_variant_skipped(c, attn_variant_name(k, v))) {
                printf("  %-23s  skipped: --skip-variants, --only-variants\n",
                       attn_variant_name(k, v));
                continue;
            }
            if (!attn_variant_usable(c->gpu, k, v)) { /* e.g. wgmma off Hopper */
                printf("  %-23s  skipped: this GPU cannot run it\n", attn_variant_name(k, v));
                continue;
            }
            float ms = sw_variant(c, &s, k, v, warm, reps, k == ATTN_FWD ? ffl : 2.5 * ffl);
            if (ms < 0.0f) fails++;
            else if (best[k] < 0 || ms < best_ms[k]) best[k] = v, best_ms[k] = ms;
        }
    }
    /* the fastest dQ and dK/dV together */
    float both = -1.0f;
    if (best[ATTN_DQ] >= 0 && best[ATTN_DKDV] >= 0) {
        s.v[ATTN_DQ] = best[ATTN_DQ];
        printf(" backward, fastest dQ with fastest dK/dV%s:\n",
               attn_variant_fused(ATTN_DKDV, best[ATTN_DKDV])
                   ? " (a fused dK/dV: it writes dQ, no dQ kernel runs)"
                   : "");
        both = sw_variant(c, &s, ATTN_DKDV, best[ATTN_DKDV], warm, reps, 2.5 * ffl);
        if (both < 0.0f) fails++;
        s.v[ATTN_DQ] = 0;
    }
    printf("sweep best B=%d T=%d C=%d NH=%d: forward %s %.4f ms; backward %s + %s %.4f ms\n", B,
           T, C, NH, best[0] >= 0 ? attn_variant_name(0, best[0]) : "(none correct)",
           best_ms[0], best[1] >= 0 ? attn_variant_name(1, best[1]) : "(none correct)",
           best[2] >= 0 ? attn_variant_name(2, best[2]) : "(none correct)", both);

    void *devs[] = {s.qkv, s.dout, s.out0, s.out, s.dqkv, s.lse0, s.lse};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) ck_dev_free(c, devs[i]);
    free(s.h_out0), free(s.h_lse0), free(s.h_dqkv0), free(s.h_got), free(s.h_lse);
    return fails;
}

/* batches: NULL for every shape, else a comma-separated list of the B to
 * keep (the others are left out, with a line saying so) */
static int sw_wanted(const char *batches, int B)
{
    if (!batches) return 1;
    for (const char *p = batches; *p;) {
        char *end;
        long b = strtol(p, &end, 10);
        if (end == p) return 0;
        if (b == B) return 1;
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
}

int check_sweep(Ctx *c, int quick, const char *batches)
{
    static const int full[][4] = {
        {4, 1024, 768, 12}, {16, 1024, 768, 12}, {64, 1024, 768, 12}, /* GPT-2 124M */
        {8, 1024, 1600, 25},                                           /* the 48-layer XL */
    };
    static const int small[][4] = {{1, 130, 128, 2}};
    const int (*shapes)[4] = quick ? small : full;
    const int n = quick ? 1 : (int)(sizeof full / sizeof full[0]);
    int fails = 0;
    for (int i = 0; i < n; i++) {
        if (!quick && !sw_wanted(batches, shapes[i][0])) {
            printf("\nsweep: B=%d T=%d C=%d NH=%d left out (--sweep-b %s)\n", shapes[i][0],
                   shapes[i][1], shapes[i][2], shapes[i][3], batches);
            continue;
        }
        fails += sw_shape(c, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], quick);
    }
    printf("\ncheck_kernels --sweep: %s\n", fails ? "FAIL (a variant does not match the default)"
                                                  : "every variant matches the default");
    return fails ? 1 : 0;
}
