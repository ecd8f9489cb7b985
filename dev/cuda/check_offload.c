/* dev/cuda/check_offload.c — `check_kernels --only offload`: the cuda backend's
 * host tier (kernels/cuda/host_tier.cu; ops.h host_alloc, copy_async,
 * event_wait, host_adamw_update), the contract the model's OffloadProgram and
 * --offload optimizer rely on (model/schedule.h, model/gpt.c).
 *
 * Rows, each exact (err is the count of differing bytes, tolerance 0):
 *   offload_copy_after   a copy sees every op enqueued before it: a memset on
 *                        the compute stream, then a copy of that buffer out;
 *   offload_wait_holds   event_wait holds later ops back: a copy into device
 *                        memory, event_wait, then a kernel reading it;
 *   offload_race_seen    without the wait, an op that overwrites a copy's
 *                        source races the copy (emulator only: fwd must see the
 *                        new bytes, rev the old), so the two rows above would
 *                        fail if their orderings were missing;
 *   host_adamw_bits      host_adamw_update against adamw_update, both run on
 *                        the same inputs at steps 1 and 3, through the model's
 *                        pipeline (gradients copied in, host AdamW, weights
 *                        copied back, event_wait): params, master, m and v
 *                        compared byte for byte. On a GPU this is the check that
 *                        the device kernel and the host loop round alike.
 *   offload_model_bits   the model itself (model/gpt.c: the OffloadProgram's
 *                        copies and waits; model/gpt_optim.c: the gradients staged
 *                        during backward, the host AdamW deferred into the next
 *                        forward, waited for unit by unit) on this
 *                        backend: a 3-layer GPT, 3 AdamW steps (clipping on,
 *                        weight decay), recompute 1 with --offload checkpoints,
 *                        optimizer and recompute 0 with --offload optimizer
 *                        against recompute 0 without: losses, step-1 gradients
 *                        and the final parameters (the fp32 master in bf16)
 *                        byte for byte.
 * make cuda-emu-check runs it in both EMU_ORDER orders (dev/cuda/emu/emu_stream.cpp
 * says what each order lets run first). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/ops.h"
#include "model/gpt.h"
#include "model/planner.h"
#include "model/schedule.h"

#define OPS(c) ((c)->gpu->ops)

static size_t bytes_differ(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    size_t d = 0;
    for (size_t i = 0; i < n; i++) d += x[i] != y[i];
    return d;
}

static void *host_tier(Ctx *c, size_t bytes)
{
    void *p = OPS(c)->host_alloc(c->gpu, bytes);
    if (!p) {
        fprintf(stderr, "check_kernels: host_alloc of %zu bytes failed\n", bytes);
        exit(2);
    }
    return p;
}

/* n elements of the gpu's act type holding h (rounded in bf16) */
static void *dev_elems(Ctx *c, const float *h, size_t n) { return ck_dev_from(c, h, n, 0); }

static void check_copy_after(Ctx *c, size_t n, const char *sh)
{
    size_t bytes = n * c->gpu->act_bytes;
    float *h = ck_rand(c, n, 0.5f, 1.0f);
    void *a = dev_elems(c, h, n);
    unsigned char *out = host_tier(c, bytes), *zero = calloc(1, bytes);
    OPS(c)->mem_zero(c->gpu, a, bytes); /* queued on the compute stream */
    OPS(c)->copy_async(c->gpu, out, a, bytes, 0);
    OPS(c)->event_wait(c->gpu, 0);
    OPS(c)->sync(c->gpu);
    ck_record(c, "offload_copy_after", sh, "bytes", (double)bytes_differ(out, zero, bytes), 0.0, 1);
    OPS(c)->host_free(c->gpu, out);
    ck_dev_free(c, a);
    free(zero), free(h);
}

static void check_wait_holds(Ctx *c, size_t n, const char *sh)
{
    size_t bytes = n * c->gpu->act_bytes;
    float *h = ck_rand(c, n, 0.5f, 1.0f), *zeros = calloc(n, sizeof(float));
    void *src = dev_elems(c, h, n), *z = dev_elems(c, zeros, n);
    void *b = ck_dev(c, n, 0), *o = ck_dev(c, n, 0);
    unsigned char *stage = host_tier(c, bytes), *want = malloc(bytes), *got = malloc(bytes);
    OPS(c)->mem_download(c->gpu, want, src, bytes); /* the element type's bytes */
    memcpy(stage, want, bytes);
    OPS(c)->copy_async(c->gpu, b, stage, bytes, 1);
    OPS(c)->event_wait(c->gpu, 1);
    OPS(c)->residual_forward(c->gpu, o, b, z, n); /* o = b + 0: b's bits */
    OPS(c)->mem_download(c->gpu, got, o, bytes);
    ck_record(c, "offload_wait_holds", sh, "bytes", (double)bytes_differ(got, want, bytes), 0.0, 1);
    OPS(c)->host_free(c->gpu, stage);
    ck_dev_free(c, src), ck_dev_free(c, z), ck_dev_free(c, b), ck_dev_free(c, o);
    free(h), free(zeros), free(want), free(got);
}

static void check_race_seen(Ctx *c, size_t n, const char *sh)
{
#ifdef CUDA_EMU
    const char *order = getenv("EMU_ORDER");
    int rev = order && !strcmp(order, "rev");
    if (order && strcmp(order, "fwd") && !rev) return; /* rand: either outcome is right */
    size_t bytes = n * c->gpu->act_bytes;
    float *h = ck_rand(c, n, 0.5f, 1.0f);
    void *a = dev_elems(c, h, n);
    unsigned char *out = host_tier(c, bytes), *old = malloc(bytes), *now = calloc(1, bytes);
    OPS(c)->mem_download(c->gpu, old, a, bytes);
    OPS(c)->copy_async(c->gpu, out, a, bytes, 2);
    OPS(c)->mem_zero(c->gpu, a, bytes);               /* against the contract: no wait */
    OPS(c)->residual_forward(c->gpu, a, a, a, n); /* a kernel launch: 0 + 0 */
    OPS(c)->event_wait(c->gpu, 2);
    OPS(c)->sync(c->gpu);
    size_t d = bytes_differ(out, rev ? old : now, bytes);
    ck_record(c, "offload_race_seen", sh, rev ? "rev: old" : "fwd: new", (double)d, 0.0, 1);
    OPS(c)->host_free(c->gpu, out);
    ck_dev_free(c, a);
    free(h), free(old), free(now);
#else
    (void)c, (void)n, (void)sh; /* a real race has no fixed outcome */
#endif
}

/* One optimizer state on the device and its copy in the host tier. */
typedef struct {
    void *params, *grads; /* par dtype */
    float *master, *m, *v;
} OptBufs;

static void check_host_adamw(Ctx *c, size_t n, const char *sh)
{
    Backend *be = c->gpu;
    size_t pb = n * be->par_bytes, fb = n * sizeof(float);
    float *p = ck_rand(c, n, 0.05f, 1.0f), *g = ck_rand(c, n, 0.001f, 0.1f);
    float *m = ck_rand(c, n, 0.001f, 0.05f), *v = ck_rand_pos(c, n, 1e-5f, 1e-3f);
    int master = be->has_master;
    OptBufs d = {ck_dev_from(c, p, n, 0), ck_dev_from(c, g, n, 0),
                 master ? ck_dev_from(c, p, n, 1) : NULL, ck_dev_from(c, m, n, 1),
                 ck_dev_from(c, v, n, 1)};
    OptBufs h = {host_tier(c, pb), host_tier(c, pb), master ? host_tier(c, fb) : NULL,
                 host_tier(c, fb), host_tier(c, fb)};
    void *back = ck_dev(c, n, 0); /* where the host's weights come back to */
    /* the host tier starts as the device's bytes */
    OPS(c)->mem_download(be, h.params, d.params, pb);
    if (master) OPS(c)->mem_download(be, h.master, d.master, fb);
    OPS(c)->mem_download(be, h.m, d.m, fb);
    OPS(c)->mem_download(be, h.v, d.v, fb);
    for (int t = 1; t <= 3; t += 2) {
        float lr = 3e-3f, wd = t == 1 ? 0.1f : 0.0f, scale = t == 1 ? 1.0f : 0.37f;
        OPS(c)->adamw_update(be, d.params, d.master, d.grads, d.m, d.v, n, lr, 0.9f, 0.95f,
                             1e-8f, wd, scale, t);
        /* gpt_optim.c's deferred update, one piece, waited for at once */
        OPS(c)->copy_async(be, h.grads, d.grads, pb, 5);
        OPS(c)->event_wait(be, 5);
        OPS(c)->host_adamw_update(be, h.params, h.master, h.grads, h.m, h.v, n, lr, 0.9f, 0.95f,
                                  1e-8f, wd, scale, t);
        OPS(c)->copy_async(be, back, h.params, pb, 7);
        OPS(c)->event_wait(be, 7);
        OPS(c)->sync(be);
    }
    unsigned char *dp = malloc(pb), *bp = malloc(pb), *df = malloc(fb);
    OPS(c)->mem_download(be, dp, d.params, pb);
    OPS(c)->mem_download(be, bp, back, pb);
    size_t diff = bytes_differ(dp, bp, pb) + bytes_differ(dp, h.params, pb);
    float *pairs[3][2] = {{d.master, h.master}, {d.m, h.m}, {d.v, h.v}};
    for (int k = 0; k < 3; k++) {
        if (!pairs[k][0]) continue;
        OPS(c)->mem_download(be, df, pairs[k][0], fb);
        diff += bytes_differ(df, pairs[k][1], fb);
    }
    ck_record(c, "host_adamw_bits", sh, master ? "params,master,m,v" : "params,m,v",
              (double)diff, 0.0, 1);
    void *hp[] = {h.params, h.grads, h.master, h.m, h.v};
    for (size_t i = 0; i < sizeof hp / sizeof hp[0]; i++)
        if (hp[i]) OPS(c)->host_free(be, hp[i]);
    void *dv[] = {d.params, d.grads, d.master, d.m, d.v, back};
    for (size_t i = 0; i < sizeof dv / sizeof dv[0]; i++)
        if (dv[i]) ck_dev_free(c, dv[i]);
    free(p), free(g), free(m), free(v), free(dp), free(bp), free(df);
}

/* One training run of the tiny model: losses, step-1 gradients, final
 * parameters (all fp32 on the host; the caller frees grads and params). */
typedef struct {
    double loss[3];
    float *grads, *params;
    size_t n;
} ModelRun;

static int model_run(Ctx *c, int mode, int offload, ModelRun *r, char *err, size_t len)
{
    const GPTConfig cfg = {.max_seq_len = 16, .vocab_size = 100, .padded_vocab = 128,
                           .num_layers = 3, .num_heads = 4, .channels = 64};
    const int B = 2, T = 16, N = B * T;
    Schedule s;
    GPT g;
    GPTShard sh = {1, 0, 0, offload};
    if (schedule_build(&s, block_desc_of(&cfg), mode, cfg.num_layers, err, len) != 0 ||
        gpt_init_schedule(&g, &cfg, c->gpu, B, T, &s, 0, &sh, NULL, NULL, err, len) != 0)
        return -1;
    r->n = g.plan.num_params;
    float *p = malloc(r->n * sizeof(float));
    uint64_t seed = 99; /* the same parameters and tokens in every run */
    for (size_t i = 0; i < r->n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        p[i] = ((float)(seed >> 40) / 16777216.0f - 0.5f) * 0.1f;
    }
    gpt_set_params(&g, p);
    r->grads = malloc(r->n * sizeof(float));
    r->params = p;
    int in[N], tg[N];
    AdamWConfig adam = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f}; /* clipping at 0.5: scale < 1 */
    for (int step = 0; step < 3; step++) {
        for (int i = 0; i < N; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            in[i] = (int)((seed >> 33) % 100);
            tg[i] = (int)((seed >> 13) % 100);
        }
        gpt_zero_grads(&g);
        /* as the trainer does on one process: the backward stages the gradients */
        gpt_set_final_micro(&g, 1);
        r->loss[step] = gpt_forward_backward(&g, in, tg, 1.0f / N);
        if (step == 0) gpt_get_grads(&g, r->grads);
        gpt_update(&g, &adam, 1e-2f, gpt_grad_norm(&g));
    }
    gpt_get_params(&g, r->params);
    gpt_free(&g);
    return 0;
}

static void check_model(Ctx *c)
{
    char err[256];
    ModelRun ref, got;
    if (model_run(c, RECOMPUTE_NONE, 0, &ref, err, sizeof err) != 0) {
        ck_record(c, "offload_model_bits", "r0", err, 1.0, 0.0, 1);
        return;
    }
    const struct {
        int mode, offload;
        const char *name;
    } runs[] = {{RECOMPUTE_BLOCK, OFFLOAD_CHECKPOINTS | OFFLOAD_OPTIMIZER, "r1+ckpt,opt"},
                {RECOMPUTE_NONE, OFFLOAD_OPTIMIZER, "r0+opt"}};
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        if (model_run(c, runs[k].mode, runs[k].offload, &got, err, sizeof err) != 0) {
            ck_record(c, "offload_model_bits", runs[k].name, err, 1.0, 0.0, 1);
            continue;
        }
        size_t d = bytes_differ(ref.loss, got.loss, sizeof ref.loss) +
                   bytes_differ(ref.grads, got.grads, ref.n * sizeof(float)) +
                   bytes_differ(ref.params, got.params, ref.n * sizeof(float));
        ck_record(c, "offload_model_bits", runs[k].name, "loss,grads,params", (double)d, 0.0, 1);
        free(got.grads), free(got.params);
    }
    free(ref.grads), free(ref.params);
}

void check_offload(Ctx *c)
{
    if (!c->gpu->ops->copy_async || !c->gpu->ops->host_adamw_update) {
        ck_record(c, "offload (no host tier)", "-", "missing op", 1.0, 0.0, 1);
        return;
    }
    const size_t sizes[] = {4099, 100003}; /* odd: no element count a tile divides */
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char sh[48];
        snprintf(sh, sizeof sh, "n%zu", sizes[i]);
        check_copy_after(c, sizes[i], sh);
        check_wait_holds(c, sizes[i], sh);
        check_race_seen(c, sizes[i], sh);
        check_host_adamw(c, sizes[i], sh);
    }
    check_model(c);
}
