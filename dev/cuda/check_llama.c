/* dev/cuda/check_llama.c — check_kernels' Llama-family ops (group "llama"):
 * rmsnorm_forward and rmsnorm_backward ("+=" outputs started from random
 * values) at the shape's C, and swiglu_forward and swiglu_backward at
 * Llama's MLP width for C (8C/3 rounded up to a multiple of 8: the 16-byte
 * path) and at one more (an odd F: the scalar path), and rope_forward and
 * rope_backward with every head its own key head and with grouped keys
 * (KVH = NH/2), out of place (v copied) and in place, on a table with
 * Llama 3's scaling, and qknorm_forward and qknorm_backward (Qwen3's
 * per-head q and k norm; the weights' gradients "+=" from random values)
 * with grouped keys, out of place (v copied) and in place; each against
 * the cpu backend within the dtype's tolerance, two gpu runs bit for bit
 * (check.h). */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "kernels/rope.h"

/* ---- RMSNorm ---- */
typedef struct {
    void *out, *inp, *w, *dinp, *dw, *dout;
    float *rstd;
    int N, C;
    float eps;
} RnArgs;

static void run_rn_fwd(Ctx *c, void *p)
{
    RnArgs *a = p;
    c->gpu->ops->rmsnorm_forward(c->gpu, a->out, a->rstd, a->inp, a->w, a->N, a->C, a->eps);
}
static void run_rn_bwd(Ctx *c, void *p)
{
    RnArgs *a = p;
    c->gpu->ops->rmsnorm_backward(c->gpu, a->dinp, a->dw, a->dout, a->inp, a->w, a->rstd, a->N,
                                  a->C);
}

static void check_rmsnorm(Ctx *c, const char *sh, int N, int C)
{
    size_t nc = (size_t)N * C;
    float *inp = ck_rand(c, nc, 0.05f, 2.0f), *w = ck_rand_pos(c, C, 0.5f, 1.5f);
    ck_round(c, inp, nc), ck_round(c, w, C);
    float *out = ck_alloc(nc), *rstd = ck_alloc(N);
    RnArgs a = {0};
    a.N = N, a.C = C, a.eps = 1e-5f;
    c->cpu->ops->rmsnorm_forward(c->cpu, out, rstd, inp, w, N, C, a.eps);
    a.inp = ck_dev_from(c, inp, nc, 0), a.w = ck_dev_from(c, w, C, 0);
    a.out = ck_dev(c, nc, 0), a.rstd = ck_dev(c, N, 1);
    CkOut of[] = {{"out", a.out, out, nc, 0, NULL}, {"rstd", a.rstd, rstd, (size_t)N, 1, NULL}};
    ck_check(c, "rmsnorm_forward", sh, of, 2, run_rn_fwd, &a, -1);

    /* backward from the cpu's rstd, given to both */
    ck_dev_set(c, a.rstd, rstd, N, 1);
    float *dout = ck_rand(c, nc, 0.05f, 1.0f);
    float *dinp0 = ck_rand(c, nc, 0.05f, 1.0f), *dw0 = ck_rand(c, C, 0.05f, 1.0f);
    ck_round(c, dout, nc), ck_round(c, dinp0, nc), ck_round(c, dw0, C);
    float *dinp = ck_copy(dinp0, nc), *dw = ck_copy(dw0, C);
    c->cpu->ops->rmsnorm_backward(c->cpu, dinp, dw, dout, inp, w, rstd, N, C);
    a.dout = ck_dev_from(c, dout, nc, 0);
    a.dinp = ck_dev(c, nc, 0), a.dw = ck_dev(c, C, 0);
    CkOut ob[] = {{"dinp", a.dinp, dinp, nc, 0, dinp0}, {"dweight", a.dw, dw, (size_t)C, 0, dw0}};
    ck_check(c, "rmsnorm_backward", sh, ob, 2, run_rn_bwd, &a, -1);

    void *devs[] = {a.inp, a.w, a.out, a.rstd, a.dout, a.dinp, a.dw};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) ck_dev_free(c, devs[i]);
    free(inp), free(w), free(out), free(rstd), free(dout), free(dinp0), free(dw0), free(dinp),
        free(dw);
}

/* ---- SwiGLU ---- */
typedef struct {
    void *out, *inp, *dout, *dinp;
    int N, F;
} SgArgs;

static void run_sg_fwd(Ctx *c, void *p)
{
    SgArgs *a = p;
    c->gpu->ops->swiglu_forward(c->gpu, a->out, a->inp, a->N, a->F);
}
static void run_sg_bwd(Ctx *c, void *p)
{
    SgArgs *a = p;
    c->gpu->ops->swiglu_backward(c->gpu, a->dinp, a->inp, a->dout, a->N, a->F);
}

static void check_swiglu(Ctx *c, const char *sh, int N, int F)
{
    char shf[48];
    snprintf(shf, sizeof shf, "%s F%d", sh, F);
    size_t nf = (size_t)N * F;
    float *inp = ck_rand(c, 2 * nf, 0.01f, 6.0f), *dout = ck_rand(c, nf, 0.05f, 1.0f);
    ck_round(c, inp, 2 * nf), ck_round(c, dout, nf);
    float *out = ck_alloc(nf), *dinp = ck_alloc(2 * nf);
    c->cpu->ops->swiglu_forward(c->cpu, out, inp, N, F);
    c->cpu->ops->swiglu_backward(c->cpu, dinp, inp, dout, N, F);
    SgArgs a = {0};
    a.N = N, a.F = F;
    a.inp = ck_dev_from(c, inp, 2 * nf, 0), a.dout = ck_dev_from(c, dout, nf, 0);
    a.out = ck_dev(c, nf, 0), a.dinp = ck_dev(c, 2 * nf, 0);
    CkOut of[] = {{"out", a.out, out, nf, 0, NULL}};
    ck_check(c, "swiglu_forward", shf, of, 1, run_sg_fwd, &a, -1);
    CkOut ob[] = {{"dinp", a.dinp, dinp, 2 * nf, 0, NULL}};
    ck_check(c, "swiglu_backward", shf, ob, 1, run_sg_bwd, &a, -1);
    void *devs[] = {a.inp, a.dout, a.out, a.dinp};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) ck_dev_free(c, devs[i]);
    free(inp), free(dout), free(out), free(dinp);
}

/* ---- RoPE ---- */
typedef struct {
    void *out, *inp;
    const float *table;
    int B, T, C, NH, KVH, bwd;
} RpArgs;

static void run_rp(Ctx *c, void *p)
{
    RpArgs *a = p;
    if (a->bwd)
        c->gpu->ops->rope_backward(c->gpu, a->out, a->inp, a->table, a->B, a->T, a->C, a->NH,
                                   a->KVH);
    else
        c->gpu->ops->rope_forward(c->gpu, a->out, a->inp, a->table, a->B, a->T, a->C, a->NH,
                                  a->KVH);
}

/* In place: the gpu's input is its output, set from x before each run
 * (CkOut's init) and the reference computed in place on the cpu too. */
static void check_rope(Ctx *c, const char *sh, const Shape *s, int KVH, int bwd, int in_place)
{
    int hs = s->C / s->NH, N = s->B * s->T;
    size_t W = (size_t)s->C + (size_t)2 * KVH * hs, n = (size_t)N * W;
    size_t tf = rope_table_floats(s->T, hs);
    float *table = ck_alloc(tf);
    /* Llama 3.2's scaling at a short original context, so some of the
     * frequencies are scaled, some kept and some between */
    RopeConfig rc = {500000.0, 32.0, 1.0, 4.0, 64};
    char err[256];
    if (rope_table(table, s->T, hs, &rc, err, sizeof err) != 0) {
        fprintf(stderr, "rope table: %s\n", err);
        exit(1);
    }
    float *x = ck_rand(c, n, 0.05f, 2.0f), *ref = ck_alloc(n);
    ck_round(c, x, n);
    void (*op)(Backend *, void *, const void *, const float *, int, int, int, int, int) =
        bwd ? c->cpu->ops->rope_backward : c->cpu->ops->rope_forward;
    op(c->cpu, ref, x, table, s->B, s->T, s->C, s->NH, KVH);
    RpArgs a = {0};
    a.B = s->B, a.T = s->T, a.C = s->C, a.NH = s->NH, a.KVH = KVH, a.bwd = bwd;
    a.table = ck_dev_from(c, table, tf, 1);
    a.out = ck_dev(c, n, 0);
    a.inp = in_place ? a.out : ck_dev_from(c, x, n, 0);
    char shk[80];
    snprintf(shk, sizeof shk, "%s KVH%d%s", sh, KVH, in_place ? " in place" : "");
    CkOut o[] = {{"out", a.out, ref, n, 0, in_place ? x : NULL}};
    ck_check(c, bwd ? "rope_backward" : "rope_forward", shk, o, 1, run_rp, &a, -1);
    if (!in_place) ck_dev_free(c, a.inp);
    ck_dev_free(c, a.out), ck_dev_free(c, (void *)a.table);
    free(table), free(x), free(ref);
}

/* ---- qk-norm ---- */
typedef struct {
    void *out, *inp, *wq, *wk, *dwq, *dwk, *dout;
    float *rstd;
    int N, C, NH, KVH, bwd;
    float eps;
} QnArgs;

static void run_qn(Ctx *c, void *p)
{
    QnArgs *a = p;
    if (a->bwd)
        c->gpu->ops->qknorm_backward(c->gpu, a->out, a->dwq, a->dwk, a->dout, a->inp, a->wq,
                                     a->wk, a->rstd, a->N, a->C, a->NH, a->KVH);
    else
        c->gpu->ops->qknorm_forward(c->gpu, a->out, a->rstd, a->inp, a->wq, a->wk, a->N, a->C,
                                    a->NH, a->KVH, a->eps);
}

/* Forward, then backward from the cpu's rstd; in place: the gpu's output
 * (and the backward's dout) is set from x or dout before each run. */
static void check_qknorm(Ctx *c, const char *sh, const Shape *s, int KVH, int in_place)
{
    int hs = s->C / s->NH, N = s->B * s->T, H = s->NH + KVH;
    size_t W = (size_t)s->C + (size_t)2 * KVH * hs, n = (size_t)N * W, nr = (size_t)N * H;
    float *x = ck_rand(c, n, 0.05f, 2.0f), *wq = ck_rand_pos(c, hs, 0.5f, 1.5f);
    float *wk = ck_rand_pos(c, hs, 0.5f, 1.5f);
    ck_round(c, x, n), ck_round(c, wq, hs), ck_round(c, wk, hs);
    float *ref = ck_alloc(n), *rstd = ck_alloc(nr);
    QnArgs a = {0};
    a.N = N, a.C = s->C, a.NH = s->NH, a.KVH = KVH, a.eps = 1e-6f;
    c->cpu->ops->qknorm_forward(c->cpu, ref, rstd, x, wq, wk, N, s->C, s->NH, KVH, a.eps);
    a.wq = ck_dev_from(c, wq, hs, 0), a.wk = ck_dev_from(c, wk, hs, 0);
    a.out = ck_dev(c, n, 0), a.rstd = ck_dev(c, nr, 1);
    a.inp = in_place ? a.out : ck_dev_from(c, x, n, 0);
    char shk[96];
    snprintf(shk, sizeof shk, "%s KVH%d%s", sh, KVH, in_place ? " in place" : "");
    CkOut of[] = {{"out", a.out, ref, n, 0, in_place ? x : NULL},
                  {"rstd", a.rstd, rstd, nr, 1, NULL}};
    ck_check(c, "qknorm_forward", shk, of, 2, run_qn, &a, -1);
    /* backward: the input x again (in place it was overwritten), the cpu's rstd */
    if (in_place) a.inp = ck_dev_from(c, x, n, 0);
    ck_dev_set(c, a.rstd, rstd, nr, 1);
    float *dout = ck_rand(c, n, 0.05f, 1.0f);
    float *dwq0 = ck_rand(c, hs, 0.05f, 1.0f), *dwk0 = ck_rand(c, hs, 0.05f, 1.0f);
    ck_round(c, dout, n), ck_round(c, dwq0, hs), ck_round(c, dwk0, hs);
    float *dinp = ck_alloc(n), *dwq = ck_copy(dwq0, hs), *dwk = ck_copy(dwk0, hs);
    c->cpu->ops->qknorm_backward(c->cpu, dinp, dwq, dwk, dout, x, wq, wk, rstd, N, s->C, s->NH,
                                 KVH);
    a.bwd = 1;
    a.dwq = ck_dev(c, hs, 0), a.dwk = ck_dev(c, hs, 0);
    a.dout = in_place ? a.out : ck_dev_from(c, dout, n, 0);
    CkOut ob[] = {{"dinp", a.out, dinp, n, 0, in_place ? dout : NULL},
                  {"dwq", a.dwq, dwq, (size_t)hs, 0, dwq0},
                  {"dwk", a.dwk, dwk, (size_t)hs, 0, dwk0}};
    ck_check(c, "qknorm_backward", shk, ob, 3, run_qn, &a, -1);
    if (!in_place) ck_dev_free(c, a.dout);
    ck_dev_free(c, a.inp), ck_dev_free(c, a.out), ck_dev_free(c, a.rstd);
    ck_dev_free(c, a.wq), ck_dev_free(c, a.wk), ck_dev_free(c, a.dwq), ck_dev_free(c, a.dwk);
    free(x), free(wq), free(wk), free(ref), free(rstd), free(dout), free(dwq0), free(dwk0);
    free(dinp), free(dwq), free(dwk);
}

void check_llama(Ctx *c, const Shape *s, const char *sh)
{
    int N = s->B * s->T, F = (8 * s->C / 3 + 7) / 8 * 8;
    check_rmsnorm(c, sh, N, s->C);
    check_swiglu(c, sh, N, F);
    check_swiglu(c, sh, N, F + 1);
    int hs = s->C / s->NH, kvh[2] = {s->NH, s->NH % 2 == 0 ? s->NH / 2 : s->NH};
    if (hs % 2) return; /* RoPE turns pairs: an even head size only */
    for (int k = 0; k < (kvh[1] != kvh[0] ? 2 : 1); k++)
        for (int bwd = 0; bwd < 2; bwd++) check_rope(c, sh, s, kvh[k], bwd, 0);
    check_rope(c, sh, s, kvh[1], 0, 1);
    check_qknorm(c, sh, s, kvh[1], 0);
    check_qknorm(c, sh, s, kvh[1], 1);
}
