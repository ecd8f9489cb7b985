/* dev/cuda/check_kernels.c — every op of the CUDA backend against the cpu
 * backend (the fp32 reference), in fp32 and bf16, on fresh random inputs.
 *
 * usage: dev/cuda/check_kernels [--dtype fp32|bf16|both] [--quick]
 *                                 [--seed N] [--time] [--only GROUP]
 *                                 [--skip-variants NAME,...] [--only-variants NAME,...]
 *   --quick  skip the realistic shape (B=4, T=1024, C=768, V=50257)
 *   --time   instead of checking, time the main ops at the realistic shape
 *            (CUDA events, median of 20 after 3 warm-ups; check_timing.c)
 *   --sweep  instead, check every bf16 attention kernel variant against the
 *            default and time it at 124M's and XL's shapes (check_sweep.c;
 *            with --quick one small shape, which the emulator can run)
 *   --only   one group of ops: encoder, layernorm, attention, decode (the
 *            KV-cache attention_decode), elementwise, llama (RMSNorm,
 *            SwiGLU and RoPE: check_llama.c), matmul, fused, head
 *            or optimizer (with the NCCL path's rank-order sum,
 *            kernels/rank_sum.h; fused: check_fused.c; run it
 *            with TRAIN_GPT_FUSE_GELU=1 for the cuBLASLt GELU epilogues)
 *   --sweep-b B,...  with --sweep: only the shapes of these batch sizes
 *            (dev/gpu_check/gpu_check.sh's first-run plan: 4,64)
 *   --skip-variants, --only-variants  leave these attention variants out
 *            of the variant rows and the sweep, or all others
 *            (dev/gpu_check/gpu_check.sh checks an unmeasured one in a process of
 *            its own, so that a fault there loses only its row)
 * Prints one PASS/FAIL line per op, shape and dtype, then a table; exits 1
 * on any failure. Tolerances and the error measure: check.h. Every gpu
 * output is NaN-poisoned (or, for "+=" outputs, set to random values) before
 * each run, and every op runs twice: the two runs must agree bit for bit.
 * Output is line-buffered: a process stopped by gpu_check's timeout keeps
 * every line it printed. CHECK_KERNELS_TEST_HANG=1 (the emulator build
 * only: dev/cuda/check_hang.cu) launches a kernel that never returns
 * before the second shape's checks, for the hang rehearsal.
 * CHECK_KERNELS_TOKENS=FILE (an llm.c token shard): the encoder checked
 * once more on the file's first 4096 ids (text: one id on 311 positions). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static int pad_vocab(int V) { return (V + 127) / 128 * 128; }

/* ---- encoder ---- */
typedef struct {
    void *out, *wte, *wpe, *dwte, *dwpe, *dout;
    int *tokens;
    int B, T, C;
} EncArgs;

static void run_enc_fwd(Ctx *c, void *p)
{
    EncArgs *a = p;
    c->gpu->ops->encoder_forward(c->gpu, a->out, a->tokens, a->wte, a->wpe, a->B, a->T, a->C);
}
static void run_enc_bwd(Ctx *c, void *p)
{
    EncArgs *a = p;
    c->gpu->ops->encoder_backward(c->gpu, a->dwte, a->dwpe, a->dout, a->tokens, a->B, a->T, a->C);
}

static int *rand_tokens(Ctx *c, int N, int V)
{
    int *t = malloc((size_t)N * sizeof(int));
    if (!t) exit(2);
    for (int i = 0; i < N; i++) t[i] = (int)(ck_uniform(c) * V) % V;
    /* guaranteed repeats, also far apart: every 5th position reuses an earlier token */
    for (int i = 5; i < N; i += 5) t[i] = t[(int)(ck_uniform(c) * i)];
    return t;
}

/* CHECK_KERNELS_TOKENS=FILE: an llm.c token shard (a 256-int32 header, then
 * uint16 ids, e.g. `make data`'s datasets/tinyshakespeare_train_000000.bin):
 * its first B*T ids for the text shape's encoder checks (main). */
static int *read_text_tokens(const char *path, int n, int V)
{
    FILE *f = fopen(path, "rb");
    int32_t h[256];
    if (!f || fread(h, sizeof h, 1, f) != 1 || h[0] != 20240520 || h[2] < n) {
        fprintf(stderr, "check_kernels: CHECK_KERNELS_TOKENS=%s: %s\n", path,
                f ? "not an llm.c token shard of enough ids" : "cannot open it");
        exit(2);
    }
    uint16_t *ids = malloc((size_t)n * sizeof *ids);
    int *tok = malloc((size_t)n * sizeof *tok);
    if (fread(ids, sizeof *ids, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "check_kernels: CHECK_KERNELS_TOKENS=%s: short file\n", path);
        exit(2);
    }
    fclose(f);
    for (int i = 0; i < n; i++) tok[i] = ids[i] < V ? ids[i] : 0;
    free(ids);
    return tok;
}

/* skew 1: tokens like text's, where a few are most of the positions: 3/4
 * of them the largest id (V - 1), 1/8 token 1, the rest uniform; runs of
 * hundreds to thousands of positions that cross the backward's slices,
 * and (V > 65536) a third digit for its radix sort. text: these ids
 * instead (N of them). nopos: no position table (wpe and dwpe NULL, the
 * Llama family's embedding): out is wte's rows, bit for bit. */
static void test_encoder_pos(Ctx *c, const Shape *s, const char *sh0, int skew, const int *text,
                             int nopos)
{
    int N = s->B * s->T, C = s->C, Vp = pad_vocab(s->V), maxT = s->T + 3;
    int *tok = rand_tokens(c, N, s->V);
    char sh[64];
    snprintf(sh, sizeof sh, "%s%s%s", sh0, text ? " text" : skew ? " skewed" : "",
             nopos ? " nopos" : "");
    if (skew) {
        int *sel = rand_tokens(c, N, 8);
        for (int i = 0; i < N; i++) tok[i] = sel[i] < 6 ? s->V - 1 : sel[i] == 6 ? 1 : tok[i];
        free(sel);
    }
    if (text) memcpy(tok, text, (size_t)N * sizeof *tok);
    float *wte = ck_rand(c, (size_t)Vp * C, 0.05f, 1.0f), *wpe = ck_rand(c, (size_t)maxT * C, 0.05f, 1.0f);
    ck_round(c, wte, (size_t)Vp * C);
    ck_round(c, wpe, (size_t)maxT * C);
    float *ref = ck_alloc((size_t)N * C);
    c->cpu->ops->encoder_forward(c->cpu, ref, tok, wte, nopos ? NULL : wpe, s->B, s->T, C);
    EncArgs a = {0};
    a.B = s->B, a.T = s->T, a.C = C;
    a.tokens = c->gpu->ops->mem_alloc(c->gpu, (size_t)N * sizeof(int));
    c->gpu->ops->mem_upload(c->gpu, a.tokens, tok, (size_t)N * sizeof(int));
    a.wte = ck_dev_from(c, wte, (size_t)Vp * C, 0);
    a.wpe = nopos ? NULL : ck_dev_from(c, wpe, (size_t)maxT * C, 0);
    a.out = ck_dev(c, (size_t)N * C, 0);
    CkOut of[] = {{"out", a.out, ref, (size_t)N * C, 0, NULL}};
    ck_check(c, "encoder_forward", sh, of, 1, run_enc_fwd, &a, -1);

    float *dout = ck_rand(c, (size_t)N * C, 0.05f, 1.0f);
    ck_round(c, dout, (size_t)N * C);
    float *dwte0 = ck_rand(c, (size_t)Vp * C, 0.05f, 1.0f), *dwpe0 = ck_rand(c, (size_t)maxT * C, 0.05f, 1.0f);
    ck_round(c, dwte0, (size_t)Vp * C);
    ck_round(c, dwpe0, (size_t)maxT * C);
    float *dwte = ck_copy(dwte0, (size_t)Vp * C), *dwpe = ck_copy(dwpe0, (size_t)maxT * C);
    c->cpu->ops->encoder_backward(c->cpu, dwte, nopos ? NULL : dwpe, dout, tok, s->B, s->T, C);
    a.dout = ck_dev_from(c, dout, (size_t)N * C, 0);
    a.dwte = ck_dev(c, (size_t)Vp * C, 0);
    a.dwpe = nopos ? NULL : ck_dev(c, (size_t)maxT * C, 0);
    CkOut ob[] = {{"dwte", a.dwte, dwte, (size_t)Vp * C, 0, dwte0},
                  {"dwpe", a.dwpe, dwpe, (size_t)maxT * C, 0, dwpe0}};
    ck_check(c, "encoder_backward", sh, ob, nopos ? 1 : 2, run_enc_bwd, &a, -1);

    void *devs[] = {a.tokens, a.wte, a.wpe, a.out, a.dout, a.dwte, a.dwpe};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++)
        if (devs[i]) ck_dev_free(c, devs[i]);
    free(tok), free(wte), free(wpe), free(ref), free(dout), free(dwte0), free(dwpe0);
    free(dwte), free(dwpe);
}

static void test_encoder(Ctx *c, const Shape *s, const char *sh0, int skew, const int *text)
{
    test_encoder_pos(c, s, sh0, skew, text, 0);
}

/* ---- layernorm ---- */
typedef struct {
    void *out, *inp, *w, *b, *dinp, *dw, *db, *dout;
    float *mean, *rstd;
    int N, C;
} LnArgs;

static void run_ln_fwd(Ctx *c, void *p)
{
    LnArgs *a = p;
    c->gpu->ops->layernorm_forward(c->gpu, a->out, a->mean, a->rstd, a->inp, a->w, a->b, a->N, a->C);
}
static void run_ln_bwd(Ctx *c, void *p)
{
    LnArgs *a = p;
    c->gpu->ops->layernorm_backward(c->gpu, a->dinp, a->dw, a->db, a->dout, a->inp, a->w, a->mean,
                                    a->rstd, a->N, a->C);
}

static void test_layernorm(Ctx *c, const Shape *s, const char *sh)
{
    int N = s->B * s->T, C = s->C;
    size_t nc = (size_t)N * C;
    float *inp = ck_rand(c, nc, 0.05f, 2.0f);
    for (size_t i = 0; i < nc; i++) inp[i] += 0.5f; /* a non-zero mean */
    float *w = ck_rand_pos(c, C, 0.5f, 1.5f), *b = ck_rand(c, C, 0.05f, 0.5f);
    ck_round(c, inp, nc), ck_round(c, w, C), ck_round(c, b, C);
    float *out = ck_alloc(nc), *mean = ck_alloc(N), *rstd = ck_alloc(N);
    c->cpu->ops->layernorm_forward(c->cpu, out, mean, rstd, inp, w, b, N, C);
    LnArgs a = {0};
    a.N = N, a.C = C;
    a.inp = ck_dev_from(c, inp, nc, 0), a.w = ck_dev_from(c, w, C, 0), a.b = ck_dev_from(c, b, C, 0);
    a.out = ck_dev(c, nc, 0), a.mean = ck_dev(c, N, 1), a.rstd = ck_dev(c, N, 1);
    CkOut of[] = {{"out", a.out, out, nc, 0, NULL},
                  {"mean", a.mean, mean, (size_t)N, 1, NULL},
                  {"rstd", a.rstd, rstd, (size_t)N, 1, NULL}};
    ck_check(c, "layernorm_forward", sh, of, 3, run_ln_fwd, &a, -1);

    /* backward from the cpu's mean/rstd, given to both */
    ck_dev_set(c, a.mean, mean, N, 1);
    ck_dev_set(c, a.rstd, rstd, N, 1);
    float *dout = ck_rand(c, nc, 0.05f, 1.0f);
    float *dinp0 = ck_rand(c, nc, 0.05f, 1.0f), *dw0 = ck_rand(c, C, 0.05f, 1.0f),
          *db0 = ck_rand(c, C, 0.05f, 1.0f);
    ck_round(c, dout, nc), ck_round(c, dinp0, nc), ck_round(c, dw0, C), ck_round(c, db0, C);
    float *dinp = ck_copy(dinp0, nc), *dw = ck_copy(dw0, C), *db = ck_copy(db0, C);
    c->cpu->ops->layernorm_backward(c->cpu, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
    a.dout = ck_dev_from(c, dout, nc, 0);
    a.dinp = ck_dev(c, nc, 0), a.dw = ck_dev(c, C, 0), a.db = ck_dev(c, C, 0);
    CkOut ob[] = {{"dinp", a.dinp, dinp, nc, 0, dinp0},
                  {"dweight", a.dw, dw, (size_t)C, 0, dw0},
                  {"dbias", a.db, db, (size_t)C, 0, db0}};
    ck_check(c, "layernorm_backward", sh, ob, 3, run_ln_bwd, &a, -1);

    void *devs[] = {a.inp, a.w, a.b, a.out, a.mean, a.rstd, a.dout, a.dinp, a.dw, a.db};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) ck_dev_free(c, devs[i]);
    free(inp), free(w), free(b), free(out), free(mean), free(rstd), free(dout);
    free(dinp0), free(dw0), free(db0), free(dinp), free(dw), free(db);
}

/* ---- matmul ---- */
typedef struct {
    void *out, *inp, *w, *bias, *dinp, *dw, *db, *dout;
    int N, IC, OC;
} MmArgs;

static void run_mm_fwd(Ctx *c, void *p)
{
    MmArgs *a = p;
    c->gpu->ops->matmul_forward(c->gpu, a->out, a->inp, a->w, a->bias, a->N, a->IC, a->OC);
}
static void run_mm_bwd(Ctx *c, void *p)
{
    MmArgs *a = p;
    c->gpu->ops->matmul_backward(c->gpu, a->dinp, a->dw, a->db, a->dout, a->inp, a->w, a->N, a->IC,
                                 a->OC);
}

/* dbias's column sums read 16 bytes at a time when dout is aligned and one
 * element at a time otherwise, adding the same values in the same order:
 * the two must agree bit for bit. The unaligned run reads dout from one
 * element past an allocation's start. */
static void check_dbias_paths(Ctx *c, const char *name, MmArgs *a, const float *dout,
                              const float *db0)
{
    const size_t no = (size_t)a->N * a->OC, es = c->bf16 ? 2 : 4;
    float *shifted = ck_alloc(no + 1), *got[2];
    shifted[0] = 0.0f;
    memcpy(shifted + 1, dout, no * sizeof(float));
    void *buf = ck_dev_from(c, shifted, no + 1, 0), *aligned_dout = a->dout;
    for (int k = 0; k < 2; k++) {
        a->dout = k ? (char *)buf + es : aligned_dout;
        ck_dev_set(c, a->db, db0, (size_t)a->OC, 0);
        run_mm_bwd(c, a);
        got[k] = ck_alloc((size_t)a->OC);
        ck_dev_get(c, got[k], a->db, (size_t)a->OC, 0);
    }
    a->dout = aligned_dout;
    int differ = 0; /* elements whose bits differ: the row's "error", tolerance 0 */
    for (int i = 0; i < a->OC; i++) differ += memcmp(&got[0][i], &got[1][i], sizeof(float)) != 0;
    ck_record(c, "dbias aligned=unaligned", name, "dbias", differ, 0.0, 1);
    ck_dev_free(c, buf);
    free(shifted), free(got[0]), free(got[1]);
}

static void test_matmul(Ctx *c, const char *sh, int N, int IC, int OC, int with_bias)
{
    char name[64];
    snprintf(name, sizeof name, "%s IC%d OC%d%s", sh, IC, OC, with_bias ? "" : " nobias");
    size_t ni = (size_t)N * IC, no = (size_t)N * OC, nw = (size_t)OC * IC;
    float ws = 1.0f / sqrtf((float)IC);
    float *inp = ck_rand(c, ni, 0.05f, 1.0f), *w = ck_rand(c, nw, 0.05f * ws, ws);
    float *bias = with_bias ? ck_rand(c, OC, 0.05f, 0.5f) : NULL;
    ck_round(c, inp, ni), ck_round(c, w, nw);
    if (bias) ck_round(c, bias, OC);
    float *out = ck_alloc(no);
    c->cpu->ops->matmul_forward(c->cpu, out, inp, w, bias, N, IC, OC);
    MmArgs a = {0};
    a.N = N, a.IC = IC, a.OC = OC;
    a.inp = ck_dev_from(c, inp, ni, 0), a.w = ck_dev_from(c, w, nw, 0);
    a.bias = bias ? ck_dev_from(c, bias, OC, 0) : NULL;
    a.out = ck_dev(c, no, 0);
    CkOut of[] = {{"out", a.out, out, no, 0, NULL}};
    ck_check(c, "matmul_forward", name, of, 1, run_mm_fwd, &a, -1);

    float *dout = ck_rand(c, no, 0.05f, 1.0f), *dw0 = ck_rand(c, nw, 0.05f, 1.0f);
    float *db0 = ck_rand(c, OC, 0.05f, 1.0f);
    ck_round(c, dout, no), ck_round(c, dw0, nw), ck_round(c, db0, OC);
    float *dinp = ck_alloc(ni), *dw = ck_copy(dw0, nw), *db = ck_copy(db0, OC);
    c->cpu->ops->matmul_backward(c->cpu, dinp, dw, with_bias ? db : NULL, dout, inp, w, N, IC, OC);
    a.dout = ck_dev_from(c, dout, no, 0);
    a.dinp = ck_dev(c, ni, 0), a.dw = ck_dev(c, nw, 0);
    a.db = with_bias ? ck_dev(c, OC, 0) : NULL;
    CkOut ob[] = {{"dinp", a.dinp, dinp, ni, 0, NULL},
                  {"dweight", a.dw, dw, nw, 0, dw0},
                  {"dbias", a.db, db, (size_t)OC, 0, db0}};
    ck_check(c, "matmul_backward", name, ob, with_bias ? 3 : 2, run_mm_bwd, &a, -1);
    if (with_bias) check_dbias_paths(c, name, &a, dout, db0);

    void *devs[] = {a.inp, a.w, a.bias, a.out, a.dout, a.dinp, a.dw, a.db};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++)
        if (devs[i]) ck_dev_free(c, devs[i]);
    free(inp), free(w), free(bias), free(out), free(dout), free(dw0), free(db0);
    free(dinp), free(dw), free(db);
}

/* ---- elementwise ---- */
typedef struct {
    void *out, *inp, *dout, *dinp, *a, *b;
    size_t n;
    int alias;
} EwArgs;

static void run_gelu_fwd(Ctx *c, void *p)
{
    EwArgs *a = p;
    c->gpu->ops->gelu_forward(c->gpu, a->out, a->inp, a->n);
}
static void run_gelu_bwd(Ctx *c, void *p)
{
    EwArgs *a = p; /* alias: dinp is dout, whose contents the harness sets as "init" */
    c->gpu->ops->gelu_backward(c->gpu, a->dinp, a->inp, a->alias ? a->dinp : a->dout, a->n);
}
static void run_residual(Ctx *c, void *p)
{
    EwArgs *a = p; /* alias: out is a, set by the harness */
    c->gpu->ops->residual_forward(c->gpu, a->out, a->alias ? a->out : a->a, a->b, a->n);
}

static void test_elementwise(Ctx *c, const Shape *s, const char *sh)
{
    size_t n = (size_t)s->B * s->T * 4 * s->C;
    float *x = ck_rand(c, n, 0.01f, 3.0f), *dy = ck_rand(c, n, 0.05f, 1.0f), *y = ck_rand(c, n, 0.05f, 1.0f);
    ck_round(c, x, n), ck_round(c, dy, n), ck_round(c, y, n);
    float *ref = ck_alloc(n);
    EwArgs a = {0};
    a.n = n;
    a.inp = ck_dev_from(c, x, n, 0);
    a.out = ck_dev(c, n, 0);
    c->cpu->ops->gelu_forward(c->cpu, ref, x, n);
    CkOut o1[] = {{"out", a.out, ref, n, 0, NULL}};
    ck_check(c, "gelu_forward", sh, o1, 1, run_gelu_fwd, &a, -1);

    c->cpu->ops->gelu_backward(c->cpu, ref, x, dy, n);
    a.dout = ck_dev_from(c, dy, n, 0);
    a.dinp = ck_dev(c, n, 0);
    CkOut o2[] = {{"dinp", a.dinp, ref, n, 0, NULL}};
    ck_check(c, "gelu_backward", sh, o2, 1, run_gelu_bwd, &a, -1);
    a.alias = 1; /* dinp == dout: the harness loads dy into dinp before each run */
    CkOut o3[] = {{"dinp", a.dinp, ref, n, 0, dy}};
    ck_check(c, "gelu_backward(alias)", sh, o3, 1, run_gelu_bwd, &a, -1);

    a.alias = 0;
    a.a = ck_dev_from(c, x, n, 0), a.b = ck_dev_from(c, y, n, 0);
    c->cpu->ops->residual_forward(c->cpu, ref, x, y, n);
    ck_check(c, "residual_forward", sh, o1, 1, run_residual, &a, -1);
    a.alias = 1;
    CkOut o4[] = {{"out", a.out, ref, n, 0, x}};
    ck_check(c, "residual_forward(alias)", sh, o4, 1, run_residual, &a, -1);

    /* The kernels move 16 bytes per access when every pointer is aligned and
     * take a scalar loop for the tail and for unaligned pointers: n - 3
     * elements leave a tail; pointers one element past an allocation's
     * start are unaligned. */
    const size_t es = c->bf16 ? 2 : 4, m = n - 3;
    EwArgs t = {0};
    t.n = m, t.inp = a.inp, t.out = a.out;
    c->cpu->ops->gelu_forward(c->cpu, ref, x, m);
    CkOut o5[] = {{"out", t.out, ref, m, 0, NULL}};
    ck_check(c, "gelu_forward(tail)", sh, o5, 1, run_gelu_fwd, &t, -1);
    t.a = (char *)a.a + es, t.b = (char *)a.b + es, t.out = (char *)a.out + es;
    c->cpu->ops->residual_forward(c->cpu, ref, x + 1, y + 1, m);
    CkOut o6[] = {{"out", t.out, ref, m, 0, NULL}};
    ck_check(c, "residual_forward(unaligned)", sh, o6, 1, run_residual, &t, -1);

    void *devs[] = {a.inp, a.out, a.dout, a.dinp, a.a, a.b};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) ck_dev_free(c, devs[i]);
    free(x), free(dy), free(y), free(ref);
}

/* ---- head ---- */
typedef struct {
    float *losses, *buf, *logits;
    void *dx, *dwte, *x, *wte;
    int *targets;
    int N, C, V, Vp, chunk, eval, nlog;
    float dloss;
} HeadArgs;

static void run_head(Ctx *c, void *p)
{
    HeadArgs *a = p;
    c->gpu->ops->head_forward_backward(c->gpu, a->losses, a->eval ? NULL : a->dx, a->dwte, a->x,
                                       a->wte, a->targets, a->buf, a->N, a->C, a->V, a->Vp,
                                       a->chunk, a->dloss);
}
static void run_head_logits(Ctx *c, void *p)
{
    HeadArgs *a = p;
    c->gpu->ops->head_logits(c->gpu, a->logits, a->x, a->wte, a->nlog, a->C, a->Vp);
}

/* Vp: the padded vocabulary (pad_vocab(V), or one that is not a multiple
 * of 8, whose rows the loss kernel cannot read 16 bytes at a time) */
static void test_head(Ctx *c, const Shape *s, const char *sh, int chunk, int Vp)
{
    int N = s->B * s->T, C = s->C, V = s->V;
    size_t nx = (size_t)N * C, nw = (size_t)Vp * C, nb = (size_t)chunk * Vp;
    char name[64];
    snprintf(name, sizeof name, "%s chunk%d%s", sh, chunk, Vp == pad_vocab(V) ? "" : " Vp odd");
    float *x = ck_rand(c, nx, 0.05f, 1.0f), *wte = ck_rand(c, nw, 0.01f, 0.1f);
    float *dwte0 = ck_rand(c, nw, 0.05f, 1.0f);
    ck_round(c, x, nx), ck_round(c, wte, nw), ck_round(c, dwte0, nw);
    int *tgt = malloc((size_t)N * sizeof(int));
    if (!tgt) exit(2);
    for (int i = 0; i < N; i++) tgt[i] = (int)(ck_uniform(c) * V) % V;
    float dloss = 1.0f / N;
    float *losses = ck_alloc(N), *dx = ck_alloc(nx), *dwte = ck_copy(dwte0, nw), *buf = ck_alloc(nb);
    c->cpu->ops->head_forward_backward(c->cpu, losses, dx, dwte, x, wte, tgt, buf, N, C, V, Vp,
                                       chunk, dloss);
    HeadArgs a = {0};
    a.N = N, a.C = C, a.V = V, a.Vp = Vp, a.chunk = chunk, a.dloss = dloss;
    a.targets = c->gpu->ops->mem_alloc(c->gpu, (size_t)N * sizeof(int));
    c->gpu->ops->mem_upload(c->gpu, a.targets, tgt, (size_t)N * sizeof(int));
    a.x = ck_dev_from(c, x, nx, 0), a.wte = ck_dev_from(c, wte, nw, 0);
    a.losses = ck_dev(c, N, 1), a.dx = ck_dev(c, nx, 0), a.dwte = ck_dev(c, nw, 0);
    a.buf = ck_dev(c, nb, 1);
    ck_dev_poison(c, a.buf, nb, 1);
    CkOut o[] = {{"losses", a.losses, losses, (size_t)N, 1, NULL},
                 {"dx", a.dx, dx, nx, 0, NULL},
                 {"dwte", a.dwte, dwte, nw, 0, dwte0}};
    ck_check(c, "head_forward_backward", name, o, 3, run_head, &a, -1);
    /* evaluation: losses only; dwte must come back untouched */
    a.eval = 1;
    CkOut oe[] = {{"losses", a.losses, losses, (size_t)N, 1, NULL},
                  {"dwte", a.dwte, dwte0, nw, 0, dwte0}};
    ck_check(c, "head_forward(eval)", name, oe, 2, run_head, &a, -1);

    a.nlog = N < 5 ? N : 5;
    float *logits = ck_alloc((size_t)a.nlog * Vp);
    c->cpu->ops->head_logits(c->cpu, logits, x, wte, a.nlog, C, Vp);
    a.logits = ck_dev(c, (size_t)a.nlog * Vp, 1);
    CkOut ol[] = {{"logits", a.logits, logits, (size_t)a.nlog * Vp, 1, NULL}};
    ck_check(c, "head_logits", name, ol, 1, run_head_logits, &a, -1);

    void *devs[] = {a.targets, a.x, a.wte, a.losses, a.dx, a.dwte, a.buf, a.logits};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) ck_dev_free(c, devs[i]);
    free(x), free(wte), free(dwte0), free(tgt), free(losses), free(dx), free(dwte), free(buf);
    free(logits);
}

/* ---- optimizer and parameters ---- */
typedef struct {
    void *params, *grads;
    float *master, *m, *v;
    size_t n;
    int t;
} OptArgs;

static void run_adamw(Ctx *c, void *p)
{
    OptArgs *a = p;
    c->gpu->ops->adamw_update(c->gpu, a->params, a->master, a->grads, a->m, a->v, a->n, 3e-3f,
                              0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, a->t);
}

static void test_optimizer(Ctx *c, size_t n, const char *sh)
{
    float *p = ck_rand(c, n, 0.05f, 1.0f), *g = ck_rand(c, n, 0.001f, 0.1f);
    float *m = ck_rand(c, n, 0.001f, 0.05f), *v = ck_rand_pos(c, n, 1e-5f, 1e-3f);
    ck_round(c, g, n);
    if (!c->gpu->has_master) ck_round(c, p, n); /* fp32: no-op */
    OptArgs a = {0};
    a.n = n, a.t = 3;
    a.grads = ck_dev_from(c, g, n, 0);
    /* grad_norm_sq: one double, checked here by hand */
    double gn = c->gpu->ops->grad_norm_sq(c->gpu, a.grads, n);
    double gn2 = c->gpu->ops->grad_norm_sq(c->gpu, a.grads, n);
    double gr = c->cpu->ops->grad_norm_sq(c->cpu, g, n);
    ck_record(c, "grad_norm_sq", sh, "norm", fabs(gn - gr) / gr, 1e-5, gn == gn2);

    /* cpu reference on fp32 params (the gpu's master in bf16 mode) */
    float *pr = ck_copy(p, n), *mr = ck_copy(m, n), *vr = ck_copy(v, n);
    c->cpu->ops->adamw_update(c->cpu, pr, NULL, g, mr, vr, n, 3e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f,
                              a.t);
    a.params = ck_dev(c, n, 0), a.m = ck_dev(c, n, 1), a.v = ck_dev(c, n, 1);
    a.master = c->gpu->has_master ? ck_dev(c, n, 1) : NULL;
    float *pw = ck_copy(p, n); /* working-copy init: the rounded master */
    ck_round(c, pw, n);
    CkOut o[] = {{"params", a.params, pr, n, 0, pw},
                 {"m", a.m, mr, n, 1, m},
                 {"v", a.v, vr, n, 1, v},
                 {"master", a.master, pr, n, 1, p}};
    ck_check(c, "adamw_update", sh, o, a.master ? 4 : 3, run_adamw, &a, -1);

    /* params_upload / params_download: exact */
    void *wp = ck_dev(c, n, 0);
    float *back = ck_alloc(n), *rounded = ck_copy(p, n);
    ck_round(c, rounded, n);
    c->gpu->ops->params_upload(c->gpu, wp, a.master, p, n);
    c->gpu->ops->params_download(c->gpu, back, wp, NULL, n);
    double e1 = ck_rel_err(back, rounded, n);
    double e2 = 0.0;
    if (a.master) {
        c->gpu->ops->params_download(c->gpu, back, wp, a.master, n);
        e2 = ck_rel_err(back, p, n);
    }
    c->gpu->ops->params_upload(c->gpu, wp, NULL, p, n); /* the staged path */
    c->gpu->ops->params_download(c->gpu, back, wp, NULL, n);
    double e3 = ck_rel_err(back, rounded, n);
    double e = e1 > e2 ? e1 : e2;
    ck_record(c, "params_up/download", sh, "exact", e > e3 ? e : e3, 0.0, 1);

    void *devs[] = {a.grads, a.params, a.m, a.v, a.master, wp};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++)
        if (devs[i]) ck_dev_free(c, devs[i]);
    free(p), free(g), free(m), free(v), free(pr), free(mr), free(vr), free(pw), free(back);
    free(rounded);
}

static const char *only; /* --only GROUP */

#ifdef CUDA_EMU
void check_hang_launch(void); /* dev/cuda/check_hang.cu */
#endif
/* CHECK_KERNELS_TEST_HANG: spin before the second shape, after the first
 * shape's rows are printed (the rehearsal looks for them in the log). */
static void maybe_hang(int shape_index)
{
    const char *e = getenv("CHECK_KERNELS_TEST_HANG");
    if (!e || !*e || shape_index != 1) return;
#ifdef CUDA_EMU
    printf("check_kernels: CHECK_KERNELS_TEST_HANG set: launching a kernel that never returns\n");
    check_hang_launch();
#else
    printf("check_kernels: CHECK_KERNELS_TEST_HANG ignored (the emulator build only)\n");
#endif
}
static int want(const char *group) { return !only || strcmp(only, group) == 0; }

static void check_shape(Ctx *c, const Shape *s)
{
    char sh[48];
    shape_name(sh, sizeof sh, s);
    int N = s->B * s->T;
    if (want("encoder")) {
        test_encoder(c, s, sh, 0, NULL);
        test_encoder_pos(c, s, sh, 0, NULL, 1); /* the Llama family's: no position table */
        if (N >= 600) test_encoder(c, s, sh, 1, NULL); /* runs of 450 (N = 600) to 3000 */
        if (N == 600) {                           /* and a vocabulary past 2^16 */
            Shape big = *s;
            big.V = 70000;
            shape_name(sh, sizeof sh, &big);
            test_encoder(c, &big, sh, 1, NULL);
            shape_name(sh, sizeof sh, s);
        }
    }
    if (want("layernorm")) test_layernorm(c, s, sh);
    /* variants: 124M's shape; grouped: the small ones */
    if (want("attention")) check_attention(c, s, sh, s->T >= 1024, s->T < 1024);
    if (want("decode")) check_attention_decode(c, s, sh);
    if (want("elementwise")) test_elementwise(c, s, sh);
    if (want("matmul")) {
        test_matmul(c, sh, N, s->C, 3 * s->C, 1);
        test_matmul(c, sh, N, s->C, 4 * s->C, 1);
        test_matmul(c, sh, N, 4 * s->C, s->C, 0);
    }
    if (want("llama")) check_llama(c, s, sh);
    if (want("fused")) {
        check_residual_layernorm(c, sh, N, s->C);
        check_matmul_gelu(c, sh, N, s->C, 4 * s->C);
    }
    if (want("head")) {
        int chunk = N > 64 ? 48 : N; /* several chunks and a short last one */
        if (N >= 4096) chunk = 1000;
        test_head(c, s, sh, chunk, pad_vocab(s->V));
        if (N <= 64) test_head(c, s, sh, N + 7, pad_vocab(s->V)); /* chunk larger than N */
        if (N <= 64) test_head(c, s, sh, chunk, s->V + 3);
    }
}

int check_timing(Backend *gpu, int bf16); /* check_timing.c */
int check_sweep(Ctx *c, int quick, const char *batches); /* check_sweep.c */

int main(int argc, char **argv)
{
    int quick = 0, timing = 0, sweep = 0, dt_fp32 = 1, dt_bf16 = 1;
    const char *skip = NULL, *only_v = NULL, *sweep_b = NULL;
    setvbuf(stdout, NULL, _IOLBF, 0);
    uint64_t seed = (uint64_t)time(NULL);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--time")) timing = 1;
        else if (!strcmp(argv[i], "--sweep")) sweep = 1;
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--skip-variants") && i + 1 < argc) skip = argv[++i];
        else if (!strcmp(argv[i], "--sweep-b") && i + 1 < argc) sweep_b = argv[++i];
        else if (!strcmp(argv[i], "--only-variants") && i + 1 < argc) only_v = argv[++i];
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
            const char *d = argv[++i];
            dt_fp32 = !strcmp(d, "fp32") || !strcmp(d, "both");
            dt_bf16 = !strcmp(d, "bf16") || !strcmp(d, "both");
            if (!dt_fp32 && !dt_bf16) {
                fprintf(stderr, "check_kernels: --dtype: expected fp32, bf16 or both, got '%s'\n", d);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: %s [--dtype fp32|bf16|both] [--quick] [--seed N] [--time | --sweep] "
                            "[--only encoder|layernorm|attention|decode|elementwise|llama|matmul|fused|head|optimizer|offload] "
                            "[--sweep-b B,...] [--skip-variants NAME,...] [--only-variants NAME,...]\n",
                    argv[0]);
            return 2;
        }
    }
    static Ctx ctx;
    Ctx *c = &ctx;
    c->skip_variants = skip;
    c->only_variants = only_v;
    int sweep_fail = 0;
    char err[256];
    if (cuda_device_count() < 1) {
        fprintf(stderr, "check_kernels: no CUDA device is visible\n");
        return 2;
    }
    c->cpu = cpu_backend_open(0, err, sizeof err);
    if (!c->cpu) {
        fprintf(stderr, "check_kernels: %s\n", err);
        return 2;
    }
    printf("check_kernels: seed %llu (rerun with --seed %llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    c->rng = seed * 2654435761ULL + 1;
    static const Shape shapes[] = {
        {2, 1, 40, 4, 100},   /* T = 1, hs = 10 */
        {2, 65, 40, 4, 100},  /* T not a multiple of any tile, hs = 10 */
        {1, 65, 32, 4, 300},  /* hs = 8 */
        {2, 64, 160, 2, 500}, /* hs = 80, exactly one 64-row tile */
        {1, 130, 256, 2, 1000}, /* hs = 128, three 64-row tiles, the last of 2 rows */
        {3, 200, 48, 4, 700}, /* hs = 12, N = 600: several 256-token tiles in the sort */
        {2, 150, 128, 2, 200}, /* hs = 64 (124M's), three 64-row tiles, the last of 22 */
        {1, 97, 96, 3, 100},  /* hs = 32 */
        {1, 33, 42, 3, 4200}, /* C not a multiple of 8 or 4: rows by scalar accesses;
                                 V over the loss kernel's 4096-value fp32 tile */
        {1, 3, 40, 4, 9000},  /* the emulator's loss kernel: fp32 rows past its
                                 registers (the tiled path; on a GPU 124M's fp32 rows
                                 take it), bf16 rows in 5 pieces a thread */
        {4, 1024, 768, 12, 50257}, /* GPT-2 124M, realistic */
    };
    int nshapes = (int)(sizeof shapes / sizeof shapes[0]) - (quick ? 1 : 0);
    for (int d = 0; d < 2; d++) {
        if ((d == 0 && !dt_fp32) || (d == 1 && !dt_bf16)) continue;
        c->bf16 = d;
        if (sweep && !d) {
            printf("check_kernels --sweep: fp32 has no kernel variants; skipped\n");
            continue;
        }
        c->gpu = cuda_backend_open(d ? "bf16" : "fp32", err, sizeof err);
        if (!c->gpu) {
            fprintf(stderr, "check_kernels: %s\n", err);
            return 2;
        }
        if (timing) {
            if (check_timing(c->gpu, d) != 0) return 1;
        } else if (sweep) {
            sweep_fail |= check_sweep(c, quick, sweep_b);
        } else {
            for (int i = 0; i < nshapes; i++) {
                maybe_hang(i);
                check_shape(c, &shapes[i]);
            }
            /* attention only: every bf16 variant at hs = 64 (T = 130: 3
             * tiles of 64, the last of 2 rows; 2 of 128), and the
             * element-by-element kernels of head sizes padded to 32, 64 and
             * 128 (hs not a multiple of 8) */
            static const Shape att_shapes[] = {
                {1, 130, 128, 2, 100}, /* hs = 64: the variants */
                {1, 50, 60, 3, 100},   /* hs = 20 */
                {1, 97, 120, 2, 100},  /* hs = 60 */
                {1, 70, 200, 2, 100},  /* hs = 100 */
            };
            for (size_t i = 0; i < sizeof att_shapes / sizeof att_shapes[0] && want("attention");
                 i++) {
                char sh[48];
                shape_name(sh, sizeof sh, &att_shapes[i]);
                check_attention(c, &att_shapes[i], sh, i == 0, i > 0);
            }
            if (want("optimizer")) test_optimizer(c, 100003, "n100003");
            if (want("optimizer")) check_rank_sum(c, 4099, "n4099");
            if (want("offload")) check_offload(c);
            /* the embedding backward on text's ids: GPT-2 124M's B=4 T=1024
             * at C=64 (the emulator's cost is in C) */
            const char *text = getenv("CHECK_KERNELS_TOKENS");
            if (text && *text && want("encoder")) {
                static const Shape ts = {4, 1024, 64, 4, 50257};
                char sh[48];
                int *tok = read_text_tokens(text, ts.B * ts.T, ts.V);
                shape_name(sh, sizeof sh, &ts);
                test_encoder(c, &ts, sh, 0, tok);
                free(tok);
            }
        }
        attn_variants_close(); /* what the variants keep on c->gpu */
        cuda_backend_close(c->gpu);
    }
    cpu_backend_close(c->cpu);
    if (timing) return 0;
    if (sweep) return sweep_fail;
    ck_print_table(c);
    printf("%s\n", c->fails ? "check_kernels: FAIL" : "check_kernels: all PASS");
    return c->fails ? 1 : 0;
}
