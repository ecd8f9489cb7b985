/* dev/cuda/check_fused.c — check_kernels' fused ops (group "fused"):
 *   residual_layernorm_forward against the cpu (tolerance) and against the
 *     gpu's own residual_forward + layernorm_forward (bit for bit: a
 *     LayerNorm recomputed from the stored residual must match);
 *   matmul_gelu_forward and matmul_backward_gelu against the cpu (its
 *     tanh GELU; tolerance) and against the gpu's unfused ops (bit for bit
 *     when TRAIN_GPT_FUSE_GELU is off; within the dtype's tolerance when on,
 *     as the epilogue takes GELU before rounding). With the switch on, one
 *     "gelu epilogue:" line per check also gives the error against an erf
 *     GELU, so a GPU run shows which GELU cuBLASLt computes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int fuse_gelu_on(void)
{
    const char *e = getenv("TRAIN_GPT_FUSE_GELU");
    return e && strcmp(e, "1") == 0;
}

/* ---- residual + LayerNorm ---- */
typedef struct {
    void *res, *out, *a, *b, *w, *bias;
    float *mean, *rstd;
    int N, C, alias;
} RlnArgs;

static void run_rln(Ctx *c, void *p)
{
    RlnArgs *a = p; /* alias: res is a, set by the harness */
    c->gpu->ops->residual_layernorm_forward(c->gpu, a->res, a->out, a->mean, a->rstd,
                                            a->alias ? a->res : a->a, a->b, a->w, a->bias, a->N,
                                            a->C);
}

/* bits of n gpu values (act type unless f32) that differ between two tensors */
static double differing(Ctx *c, const void *x, const void *y, size_t n, int f32)
{
    float *hx = ck_alloc(n), *hy = ck_alloc(n);
    ck_dev_get(c, hx, x, n, f32);
    ck_dev_get(c, hy, y, n, f32);
    size_t d = 0;
    for (size_t i = 0; i < n; i++) d += memcmp(&hx[i], &hy[i], sizeof(float)) != 0;
    free(hx), free(hy);
    return (double)d;
}

void check_residual_layernorm(Ctx *c, const char *sh, int N, int C)
{
    size_t nc = (size_t)N * C;
    float *a = ck_rand(c, nc, 0.05f, 2.0f), *b = ck_rand(c, nc, 0.05f, 1.0f);
    for (size_t i = 0; i < nc; i++) a[i] += 0.5f; /* a non-zero mean */
    float *w = ck_rand_pos(c, C, 0.5f, 1.5f), *bias = ck_rand(c, C, 0.05f, 0.5f);
    ck_round(c, a, nc), ck_round(c, b, nc), ck_round(c, w, C), ck_round(c, bias, C);
    /* the cpu reference: LayerNorm of the residual as the gpu stores it */
    float *res = ck_alloc(nc), *out = ck_alloc(nc), *mean = ck_alloc(N), *rstd = ck_alloc(N);
    c->cpu->ops->residual_forward(c->cpu, res, a, b, nc);
    ck_round(c, res, nc);
    c->cpu->ops->layernorm_forward(c->cpu, out, mean, rstd, res, w, bias, N, C);
    RlnArgs g = {0};
    g.N = N, g.C = C;
    g.a = ck_dev_from(c, a, nc, 0), g.b = ck_dev_from(c, b, nc, 0);
    g.w = ck_dev_from(c, w, C, 0), g.bias = ck_dev_from(c, bias, C, 0);
    g.res = ck_dev(c, nc, 0), g.out = ck_dev(c, nc, 0);
    g.mean = ck_dev(c, N, 1), g.rstd = ck_dev(c, N, 1);
    CkOut o[] = {{"res", g.res, res, nc, 0, NULL},
                 {"out", g.out, out, nc, 0, NULL},
                 {"mean", g.mean, mean, (size_t)N, 1, NULL},
                 {"rstd", g.rstd, rstd, (size_t)N, 1, NULL}};
    ck_check(c, "residual_layernorm", sh, o, 4, run_rln, &g, -1);
    g.alias = 1; /* res == a, as the model calls it */
    CkOut oa[] = {{"res", g.res, res, nc, 0, a},
                  {"out", g.out, out, nc, 0, NULL},
                  {"mean", g.mean, mean, (size_t)N, 1, NULL},
                  {"rstd", g.rstd, rstd, (size_t)N, 1, NULL}};
    ck_check(c, "residual_layernorm(alias)", sh, oa, 4, run_rln, &g, -1);

    /* the gpu's unfused ops on the same inputs: every output bit for bit */
    void *res2 = ck_dev(c, nc, 0), *out2 = ck_dev(c, nc, 0);
    float *mean2 = ck_dev(c, N, 1), *rstd2 = ck_dev(c, N, 1);
    c->gpu->ops->residual_forward(c->gpu, res2, g.a, g.b, nc);
    c->gpu->ops->layernorm_forward(c->gpu, out2, mean2, rstd2, res2, g.w, g.bias, N, C);
    g.alias = 0;
    run_rln(c, &g);
    c->gpu->ops->sync(c->gpu);
    double d = differing(c, g.res, res2, nc, 0) + differing(c, g.out, out2, nc, 0) +
               differing(c, g.mean, mean2, N, 1) + differing(c, g.rstd, rstd2, N, 1);
    ck_record(c, "residual_layernorm=unfused", sh, "bits", d, 0.0, 1);

    void *devs[] = {g.a, g.b, g.w, g.bias, g.res, g.out, g.mean, g.rstd, res2, out2, mean2, rstd2};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) ck_dev_free(c, devs[i]);
    free(a), free(b), free(w), free(bias), free(res), free(out), free(mean), free(rstd);
}

/* ---- matmul + GELU ---- */
#define SQRT_HALF 0.70710678118654752
#define INV_SQRT_2PI 0.39894228040143268

static float gelu_erf(float x) { return (float)(0.5 * x * (1.0 + erf(x * SQRT_HALF))); }
static float gelu_erf_slope(float x)
{
    return (float)(0.5 * (1.0 + erf(x * SQRT_HALF)) + x * INV_SQRT_2PI * exp(-0.5 * x * x));
}

typedef struct {
    void *out, *pre, *inp, *w, *bias, *dinp, *dw, *db, *dout;
    int N, IC, OC;
} MgArgs;

static void run_mg_fwd(Ctx *c, void *p)
{
    MgArgs *a = p;
    c->gpu->ops->matmul_gelu_forward(c->gpu, a->out, a->pre, a->inp, a->w, a->bias, a->N, a->IC,
                                     a->OC);
}
static void run_mg_bwd(Ctx *c, void *p)
{
    MgArgs *a = p; /* inp = gelu(pre) of the layer being differentiated */
    c->gpu->ops->matmul_backward_gelu(c->gpu, a->dinp, a->dw, a->db, a->dout, a->out, a->w,
                                      a->pre, a->N, a->IC, a->OC);
}

/* "gelu epilogue:" line: the gpu's out against the tanh and erf references */
static void report_gelu(Ctx *c, const char *what, const char *name, const void *dev,
                        const float *ref_tanh, const float *ref_erf, size_t n)
{
    float *h = ck_alloc(n);
    ck_dev_get(c, h, dev, n, 0);
    printf("gelu epilogue: %s %s %s: vs tanh GELU %.3e, vs erf GELU %.3e\n", what, name,
           c->bf16 ? "bf16" : "fp32", ck_rel_err(h, ref_tanh, n), ck_rel_err(h, ref_erf, n));
    free(h);
}

/* the fc layer: inp(N,IC) -> pre, out(N,OC); its backward as the fc
 * projection of the next layer sees it, with IC' = OC, OC' = IC */
void check_matmul_gelu(Ctx *c, const char *sh, int N, int IC, int OC)
{
    const int fused = fuse_gelu_on();
    char name[64];
    snprintf(name, sizeof name, "%s IC%d OC%d%s", sh, IC, OC, fused ? " fused" : "");
    size_t ni = (size_t)N * IC, no = (size_t)N * OC, nw = (size_t)OC * IC;
    float ws = 2.0f / sqrtf((float)IC); /* pre spans GELU's bend, about +-3 */
    float *inp = ck_rand(c, ni, 0.05f, 1.0f), *w = ck_rand(c, nw, 0.05f * ws, ws);
    float *bias = ck_rand(c, OC, 0.05f, 0.5f);
    ck_round(c, inp, ni), ck_round(c, w, nw), ck_round(c, bias, OC);
    float *pre = ck_alloc(no), *out = ck_alloc(no), *out_erf = ck_alloc(no);
    c->cpu->ops->matmul_gelu_forward(c->cpu, out, pre, inp, w, bias, N, IC, OC);
    for (size_t i = 0; i < no; i++) out_erf[i] = gelu_erf(pre[i]);
    MgArgs a = {0};
    a.N = N, a.IC = IC, a.OC = OC;
    a.inp = ck_dev_from(c, inp, ni, 0), a.w = ck_dev_from(c, w, nw, 0);
    a.bias = ck_dev_from(c, bias, OC, 0);
    a.out = ck_dev(c, no, 0), a.pre = ck_dev(c, no, 0);
    CkOut of[] = {{"out", a.out, out, no, 0, NULL}, {"pre", a.pre, pre, no, 0, NULL}};
    ck_check(c, "matmul_gelu_forward", name, of, 2, run_mg_fwd, &a, -1);
    if (fused) report_gelu(c, "forward", name, a.out, out, out_erf, no);
    /* against the gpu's unfused ops */
    void *pre2 = ck_dev(c, no, 0), *out2 = ck_dev(c, no, 0);
    c->gpu->ops->matmul_forward(c->gpu, pre2, a.inp, a.w, a.bias, N, IC, OC);
    c->gpu->ops->gelu_forward(c->gpu, out2, pre2, no);
    run_mg_fwd(c, &a);
    c->gpu->ops->sync(c->gpu);
    float *g1 = ck_alloc(no), *g2 = ck_alloc(no);
    ck_dev_get(c, g1, a.out, no, 0);
    ck_dev_get(c, g2, out2, no, 0);
    if (fused)
        ck_record(c, "matmul_gelu_fwd~unfused", name, "out", ck_rel_err(g1, g2, no),
                  c->bf16 ? 2e-2 : 1e-5, 1);
    else
        ck_record(c, "matmul_gelu_fwd=unfused", name, "bits",
                  differing(c, a.out, out2, no, 0) + differing(c, a.pre, pre2, no, 0), 0.0, 1);

    /* backward of the next layer (IC' = OC): dinp(N,OC) = (dout . W2) * gelu'(pre) */
    const int IC2 = OC, OC2 = IC;
    size_t nw2 = (size_t)OC2 * IC2, nd = (size_t)N * OC2;
    float *w2 = ck_rand(c, nw2, 0.05f / sqrtf((float)IC2), 1.0f / sqrtf((float)IC2));
    float *dout = ck_rand(c, nd, 0.05f, 1.0f), *dw0 = ck_rand(c, nw2, 0.05f, 1.0f);
    float *db0 = ck_rand(c, OC2, 0.05f, 1.0f);
    ck_round(c, w2, nw2), ck_round(c, dout, nd), ck_round(c, dw0, nw2), ck_round(c, db0, OC2);
    ck_round(c, pre, no), ck_round(c, out, no); /* the stored pre and gelu(pre), as the gpu holds them */
    float *dinp = ck_alloc(no), *raw = ck_alloc(no), *dinp_erf = ck_alloc(no);
    float *dw = ck_copy(dw0, nw2), *db = ck_copy(db0, OC2), *dw_s = ck_copy(dw0, nw2),
          *db_s = ck_copy(db0, OC2);
    c->cpu->ops->matmul_backward_gelu(c->cpu, dinp, dw, db, dout, out, w2, pre, N, IC2, OC2);
    c->cpu->ops->matmul_backward(c->cpu, raw, dw_s, db_s, dout, out, w2, N, IC2, OC2);
    for (size_t i = 0; i < no; i++) dinp_erf[i] = raw[i] * gelu_erf_slope(pre[i]);
    MgArgs b = {0};
    b.N = N, b.IC = IC2, b.OC = OC2;
    b.w = ck_dev_from(c, w2, nw2, 0), b.dout = ck_dev_from(c, dout, nd, 0);
    b.out = ck_dev_from(c, out, no, 0), b.pre = ck_dev_from(c, pre, no, 0);
    b.dinp = ck_dev(c, no, 0), b.dw = ck_dev(c, nw2, 0), b.db = ck_dev(c, OC2, 0);
    CkOut ob[] = {{"dinp", b.dinp, dinp, no, 0, NULL},
                  {"dweight", b.dw, dw, nw2, 0, dw0},
                  {"dbias", b.db, db, (size_t)OC2, 0, db0}};
    ck_check(c, "matmul_backward_gelu", name, ob, 3, run_mg_bwd, &b, -1);
    if (fused) report_gelu(c, "backward", name, b.dinp, dinp, dinp_erf, no);
    void *dinp2 = ck_dev(c, no, 0), *dw2 = ck_dev(c, nw2, 0), *db2 = ck_dev(c, OC2, 0);
    ck_dev_set(c, dw2, dw0, nw2, 0);
    ck_dev_set(c, db2, db0, OC2, 0);
    c->gpu->ops->matmul_backward(c->gpu, dinp2, dw2, db2, b.dout, b.out, b.w, N, IC2, OC2);
    c->gpu->ops->gelu_backward(c->gpu, dinp2, b.pre, dinp2, no);
    ck_dev_set(c, b.dw, dw0, nw2, 0);
    ck_dev_set(c, b.db, db0, OC2, 0);
    run_mg_bwd(c, &b);
    c->gpu->ops->sync(c->gpu);
    ck_dev_get(c, g1, b.dinp, no, 0);
    ck_dev_get(c, g2, dinp2, no, 0);
    if (fused)
        ck_record(c, "matmul_bwd_gelu~unfused", name, "dinp", ck_rel_err(g1, g2, no),
                  c->bf16 ? 2e-2 : 1e-5, 1);
    else
        ck_record(c, "matmul_bwd_gelu=unfused", name, "bits",
                  differing(c, b.dinp, dinp2, no, 0) + differing(c, b.dw, dw2, nw2, 0) +
                      differing(c, b.db, db2, OC2, 0),
                  0.0, 1);

    void *devs[] = {a.inp, a.w, a.bias, a.out, a.pre, pre2, out2, b.w, b.dout, b.out, b.pre,
                    b.dinp, b.dw, b.db, dinp2, dw2, db2};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) ck_dev_free(c, devs[i]);
    free(inp), free(w), free(bias), free(pre), free(out), free(out_erf), free(g1), free(g2);
    free(w2), free(dout), free(dw0), free(db0), free(dinp), free(raw), free(dinp_erf);
    free(dw), free(db), free(dw_s), free(db_s);
}
