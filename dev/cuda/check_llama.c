/* dev/cuda/check_llama.c — check_kernels' Llama-family ops (group "llama"):
 * rmsnorm_forward and rmsnorm_backward ("+=" outputs started from random
 * values) at the shape's C, and swiglu_forward and swiglu_backward at
 * Llama's MLP width for C (8C/3 rounded up to a multiple of 8: the 16-byte
 * path) and at one more (an odd F: the scalar path), each against the cpu
 * backend within the dtype's tolerance, two gpu runs bit for bit (check.h).
 * RoPE has no cuda kernel yet (ops.h: NULL there). */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

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

void check_llama(Ctx *c, const Shape *s, const char *sh)
{
    int N = s->B * s->T, F = (8 * s->C / 3 + 7) / 8 * 8;
    check_rmsnorm(c, sh, N, s->C);
    check_swiglu(c, sh, N, F);
    check_swiglu(c, sh, N, F + 1);
}
