/* tests/unit/kernels/test_llama_ops_cpu.c — the Llama family's ops on the cpu
 * backend (kernels/cpu/rmsnorm.c, rope.c, swiglu.c, attention*.c with
 * KVH < NH; the table: kernels/rope.c), each
 *   - against dev/reference/llama_ops_reference.py (PyTorch, float64, from
 *     the published definitions; its autograd is itself checked by
 *     gradcheck, `selfcheck`), run on the same float32 inputs: every output
 *     and input gradient within 1e-4 of that tensor's largest magnitude.
 *     Needs /usr/bin/python3 with torch (Debian's python3-torch;
 *     scripts/setup.sh installs it) and fails without, as the other
 *     reference checks do;
 *   - against central finite differences of L = sum(out * dout) (double
 *     sums of the fp32 outputs) along 3 random directions per input tensor,
 *     step h = 1e-2: |fd - g.d| <= 1e-2 |g.d| + 1e-3;
 *   - for the same bits at 1, 2 and 3 threads, at shapes large enough for
 *     the ops to run their threads (ops.h: deterministic at any count);
 *   - for the contract's details: "+=" of RMSNorm's gradients, RoPE in
 *     place and out of place, its table offset for later positions, the
 *     grouped-query decode row bit for bit the forward's. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/rope.h"
#include "tests/lib/ref_batch.h"
#include "tests/lib/test_util.h"

static float *rnd(size_t n, unsigned s, float scale)
{
    float *p = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = ((s >> 8) / 16777216.0f - 0.5f) * 2.0f * scale;
    }
    return p;
}

static float *zeros(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

static double dot(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

/* ---- the PyTorch reference ---- */

#define REF "/usr/bin/python3 dev/reference/llama_ops_reference.py"

static void put(const char *dir, const char *name, const float *p, size_t n)
{
    char file[64];
    snprintf(file, sizeof file, "%s.f32", name);
    tu_write_file(tu_path(dir, file), p, n * sizeof(float));
}

/* A test's cases share one run of the reference (tests/lib/ref_batch.h):
 * reference() adds a case's job, then says whether its results are there. */
static int reference(RefBatch *rb, const char *op, const char *dir, const char *args)
{
    return ref_batch_job(rb, "%s %s %s", op, dir, args);
}

/* The four ops' cases and the reference's selfcheck share one run of the
 * reference a run of the suite (one start of torch, most of its time;
 * ref_batch_shared, tests/lib/run_once.h); each test checks its own. */
static void rms_cases(RefBatch *rr);
static void rope_cases(RefBatch *rr);
static void swi_cases(RefBatch *rr);
static void att_cases(RefBatch *rr);
static void (*const GROUPS[])(RefBatch *) = {rms_cases, rope_cases, swi_cases, att_cases};

/* group `mine`'s cases (-1: none) against the shared run; its output */
static char *ref_shared(int mine)
{
    return ref_batch_shared(REF, "--", "llama_ops_reference: PASS", "needs /usr/bin/python3 "
                            "with torch: Debian's python3-torch, which scripts/setup.sh "
                            "installs", "llama_ops_cpu", GROUPS, 4, mine, "-- selfcheck");
}

static void ref_twice(void (*cases)(RefBatch *))
{
    int mine = -1;
    for (int g = 0; g < 4; g++)
        if (GROUPS[g] == cases) mine = g;
    cr_assert_geq(mine, 0);
    free(ref_shared(mine));
}

/* The reference's result `name`, n doubles. */
static double *ref_result(const char *dir, const char *name, size_t n)
{
    char file[64];
    size_t len = 0;
    snprintf(file, sizeof file, "ref_%s.f64", name);
    char *p = tu_read_file(tu_path(dir, file), &len);
    cr_assert(p, "reference wrote no %s", file);
    cr_assert_eq(len, n * sizeof(double), "%s: %zu bytes, expected %zu", file, len,
                 n * sizeof(double));
    return (double *)p;
}

/* max |ref - got| / max |ref| */
static double rel_err(const double *ref, const float *got, size_t n)
{
    double big = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        big = fmax(big, fabs(ref[i]));
        d = fmax(d, fabs(ref[i] - got[i]));
    }
    return d / (big > 0 ? big : 1);
}

#define REF_TOL 1e-4

static void expect_ref(const char *dir, const char *name, const float *got, size_t n,
                       const char *what)
{
    double *r = ref_result(dir, name, n);
    double e = rel_err(r, got, n);
    cr_expect_lt(e, REF_TOL, "%s: %s off the reference by %g of its largest magnitude", what, name,
                 e);
    free(r);
}

/* ---- finite differences ---- */

/* L = sum(out * dout) at the op's current inputs. */
typedef double (*LossFn)(void *ctx);

/* Central differences of loss along 3 random directions d of x (n floats,
 * the op's input, modified and restored), against g.d with g the op's
 * gradient of x. g.d uses the perturbations as stored in float. */
static void check_fd(const char *what, LossFn loss, void *ctx, float *x, const float *g, size_t n,
                     unsigned seed)
{
    const float h = 1e-2f;
    float *x0 = malloc(sizeof(float) * n), *xp = malloc(sizeof(float) * n);
    memcpy(x0, x, sizeof(float) * n);
    for (int k = 0; k < 3; k++) {
        float *d = rnd(n, seed + 17 * k, 1.0f);
        for (size_t i = 0; i < n; i++) x[i] = xp[i] = x0[i] + h * d[i];
        double lp = loss(ctx);
        for (size_t i = 0; i < n; i++) x[i] = x0[i] - h * d[i];
        double lm = loss(ctx);
        double gd = 0;
        for (size_t i = 0; i < n; i++) gd += (double)g[i] * ((double)xp[i] - x[i]);
        double fd = lp - lm; /* both over the same 2h along d */
        cr_expect(fabs(fd - gd) <= 1e-2 * fabs(gd) + 1e-3 * 2 * h,
                  "%s: direction %d: finite differences %.8g, gradient %.8g", what, k,
                  fd / (2 * h), gd / (2 * h));
        memcpy(x, x0, sizeof(float) * n);
        free(d);
    }
    free(x0), free(xp);
}

/* ---- RMSNorm ---- */

typedef struct {
    Backend *be;
    int N, C;
    float eps;
    float *inp, *w, *dout, *out, *rstd, *dinp, *dw;
} Rms;

static Rms rms_make(int N, int C, float eps, unsigned seed)
{
    Rms r = {.be = tu_cpu(), .N = N, .C = C, .eps = eps};
    size_t n = (size_t)N * C;
    r.inp = rnd(n, seed, 2.0f);
    r.w = rnd(C, seed + 1, 0.5f);
    for (int c = 0; c < C; c++) r.w[c] += 1.0f;
    r.dout = rnd(n, seed + 2, 1.0f);
    r.out = zeros(n), r.rstd = zeros(N), r.dinp = zeros(n), r.dw = zeros(C);
    return r;
}

static void rms_free(Rms *r)
{
    free(r->inp), free(r->w), free(r->dout), free(r->out), free(r->rstd), free(r->dinp),
        free(r->dw);
}

static void rms_run(Rms *r)
{
    size_t n = (size_t)r->N * r->C;
    r->be->ops->rmsnorm_forward(r->be, r->out, r->rstd, r->inp, r->w, r->N, r->C, r->eps);
    memset(r->dinp, 0, sizeof(float) * n);
    memset(r->dw, 0, sizeof(float) * r->C);
    r->be->ops->rmsnorm_backward(r->be, r->dinp, r->dw, r->dout, r->inp, r->w, r->rstd, r->N,
                                 r->C);
}

static double rms_loss(void *p)
{
    Rms *r = p;
    r->be->ops->rmsnorm_forward(r->be, r->out, r->rstd, r->inp, r->w, r->N, r->C, r->eps);
    return dot(r->out, r->dout, (size_t)r->N * r->C);
}

static void rms_reference(RefBatch *rr, int N, int C, float eps)
{
    Rms r = rms_make(N, C, eps, 11);
    rms_run(&r);
    const char *d = ref_batch_dir(rr);
    char args[128], what[64];
    size_t n = (size_t)N * C;
    put(d, "inp", r.inp, n), put(d, "weight", r.w, C), put(d, "dout", r.dout, n);
    snprintf(args, sizeof args, "N=%d C=%d eps=%.9g", N, C, eps);
    snprintf(what, sizeof what, "rmsnorm N %d C %d", N, C);
    if (reference(rr, "rmsnorm", d, args)) {
        expect_ref(d, "out", r.out, n, what);
        expect_ref(d, "rstd", r.rstd, N, what);
        expect_ref(d, "dinp", r.dinp, n, what);
        expect_ref(d, "dweight", r.dw, C, what);
    }
    rms_free(&r);
}

static void rms_cases(RefBatch *rr)
{
    rms_reference(rr, 7, 40, 1e-5f);
    rms_reference(rr, 5, 33, 1e-6f);
}

Test(llama_ops_cpu, rmsnorm_matches_pytorch, .timeout = 120) { ref_twice(rms_cases); }

Test(llama_ops_cpu, rmsnorm_matches_finite_differences, .timeout = 60)
{
    Rms r = rms_make(5, 24, 1e-5f, 21);
    rms_run(&r);
    float *gi = malloc(sizeof(float) * 5 * 24), *gw = malloc(sizeof(float) * 24);
    memcpy(gi, r.dinp, sizeof(float) * 5 * 24);
    memcpy(gw, r.dw, sizeof(float) * 24);
    check_fd("rmsnorm dinp", rms_loss, &r, r.inp, gi, 5 * 24, 100);
    check_fd("rmsnorm dweight", rms_loss, &r, r.w, gw, 24, 200);
    free(gi), free(gw);
    rms_free(&r);
}

/* dinp and dweight accumulate (ops.h "+="): from a start of s, the result
 * is s plus what a start of zeros gives. */
Test(llama_ops_cpu, rmsnorm_backward_accumulates, .timeout = 60)
{
    int N = 6, C = 50;
    size_t n = (size_t)N * C;
    Rms r = rms_make(N, C, 1e-5f, 31);
    rms_run(&r);
    float *s = rnd(n, 5, 3.0f), *sw = rnd(C, 6, 3.0f);
    float *di = malloc(sizeof(float) * n), *dw = malloc(sizeof(float) * C);
    memcpy(di, s, sizeof(float) * n);
    memcpy(dw, sw, sizeof(float) * C);
    r.be->ops->rmsnorm_backward(r.be, di, dw, r.dout, r.inp, r.w, r.rstd, N, C);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(di[i], s[i] + r.dinp[i], "dinp[%zu] did not accumulate", i);
    for (int c = 0; c < C; c++)
        cr_expect(fabsf(dw[c] - (sw[c] + r.dw[c])) <= 1e-5f * (fabsf(sw[c]) + fabsf(r.dw[c])),
                  "dweight[%d]: %g, expected %g + %g", c, dw[c], sw[c], r.dw[c]);
    free(s), free(sw), free(di), free(dw);
    rms_free(&r);
}

/* ---- RoPE ---- */

typedef struct {
    Backend *be;
    int B, T, NH, KVH, hs, C;
    size_t n; /* B*T*W */
    float *table; /* rows from pos0 on */
    float *tab0;  /* the whole table (pos0 + T rows) */
    float *inp, *dout, *out, *dinp;
} Rope;

static Rope rope_make(int B, int T, int NH, int KVH, int hs, int pos0, const RopeConfig *rc,
                      unsigned seed)
{
    Rope r = {.be = tu_cpu(), .B = B, .T = T, .NH = NH, .KVH = KVH, .hs = hs, .C = NH * hs};
    r.n = (size_t)B * T * (NH + 2 * KVH) * hs;
    char err[256];
    r.tab0 = malloc(sizeof(float) * rope_table_floats(pos0 + T, hs));
    cr_assert_eq(rope_table(r.tab0, pos0 + T, hs, rc, err, sizeof err), 0, "%s", err);
    r.table = r.tab0 + (size_t)pos0 * hs;
    r.inp = rnd(r.n, seed, 1.0f);
    r.dout = rnd(r.n, seed + 1, 1.0f);
    r.out = zeros(r.n), r.dinp = zeros(r.n);
    return r;
}

static void rope_free(Rope *r) { free(r->tab0), free(r->inp), free(r->dout), free(r->out), free(r->dinp); }

static void rope_run(Rope *r)
{
    r->be->ops->rope_forward(r->be, r->out, r->inp, r->table, r->B, r->T, r->C, r->NH, r->KVH);
    r->be->ops->rope_backward(r->be, r->dinp, r->dout, r->table, r->B, r->T, r->C, r->NH, r->KVH);
}

static double rope_loss(void *p)
{
    Rope *r = p;
    r->be->ops->rope_forward(r->be, r->out, r->inp, r->table, r->B, r->T, r->C, r->NH, r->KVH);
    return dot(r->out, r->dout, r->n);
}

static void rope_reference(RefBatch *rr, int B, int T, int NH, int KVH, int hs, int pos0,
                           const RopeConfig *rc)
{
    Rope r = rope_make(B, T, NH, KVH, hs, pos0, rc, 41);
    rope_run(&r);
    const char *d = ref_batch_dir(rr);
    char args[256], what[96];
    put(d, "qkv", r.inp, r.n), put(d, "dout", r.dout, r.n);
    int k = snprintf(args, sizeof args, "B=%d T=%d NH=%d KVH=%d hs=%d theta=%.17g pos0=%d", B, T,
                     NH, KVH, hs, rc->theta, pos0);
    if (rc->scale_factor > 0)
        snprintf(args + k, sizeof args - k, " factor=%.17g low=%.17g high=%.17g orig=%d",
                 rc->scale_factor, rc->low_freq_factor, rc->high_freq_factor,
                 rc->original_max_pos);
    if (!reference(rr, "rope", d, args)) {
        rope_free(&r);
        return;
    }
    snprintf(what, sizeof what, "rope hs %d KVH %d pos0 %d scaling %g", hs, KVH, pos0,
             rc->scale_factor);
    expect_ref(d, "out", r.out, r.n, what);
    expect_ref(d, "dinp", r.dinp, r.n, what);
    /* the frequencies, in double both sides, to rounding */
    double *f = malloc(sizeof(double) * hs / 2), *rf = ref_result(d, "freq", hs / 2);
    char err[256];
    cr_assert_eq(rope_frequencies(f, hs, rc, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < hs / 2; i++)
        cr_expect(fabs(f[i] - rf[i]) <= 1e-12 * fabs(rf[i]), "%s: f[%d] %.17g, reference %.17g",
                  what, i, f[i], rf[i]);
    /* the table's rows pos0.. : float roundings of the reference's */
    double *rt = ref_result(d, "table", (size_t)T * hs);
    for (size_t i = 0; i < (size_t)T * hs; i++)
        cr_expect(fabs(r.table[i] - rt[i]) <= 1e-6, "%s: table[%zu] %.9g, reference %.9g", what,
                  i, r.table[i], rt[i]);
    free(f), free(rf), free(rt);
    rope_free(&r);
}

static const RopeConfig ROPE_PLAIN = {.theta = 10000.0};
/* Llama 3.2's */
static const RopeConfig ROPE_LLAMA3 = {.theta = 500000.0,
                                       .scale_factor = 32.0,
                                       .low_freq_factor = 1.0,
                                       .high_freq_factor = 4.0,
                                       .original_max_pos = 8192};

static void rope_cases(RefBatch *rr)
{
    rope_reference(rr, 2, 9, 4, 2, 16, 0, &ROPE_PLAIN);
    rope_reference(rr, 1, 6, 3, 3, 8, 0, &ROPE_PLAIN);
    /* hs 64 at Llama 3.2's settings: frequencies in all three of the
     * scaling's regimes, at positions past the original 8192 */
    rope_reference(rr, 1, 5, 2, 1, 64, 0, &ROPE_LLAMA3);
    rope_reference(rr, 2, 4, 2, 1, 64, 9000, &ROPE_LLAMA3);
}

Test(llama_ops_cpu, rope_matches_pytorch, .timeout = 120) { ref_twice(rope_cases); }

Test(llama_ops_cpu, rope_matches_finite_differences, .timeout = 60)
{
    Rope r = rope_make(2, 5, 2, 1, 8, 3, &ROPE_LLAMA3, 51);
    rope_run(&r);
    float *g = malloc(sizeof(float) * r.n);
    memcpy(g, r.dinp, sizeof(float) * r.n);
    check_fd("rope dinp", rope_loss, &r, r.inp, g, r.n, 300);
    free(g);
    rope_free(&r);
}

/* In place gives the bits of out of place; v passes through; the
 * backward undoes the forward (a rotation) to rounding. */
Test(llama_ops_cpu, rope_in_place_and_inverse, .timeout = 60)
{
    Rope r = rope_make(2, 7, 4, 2, 16, 0, &ROPE_PLAIN, 61);
    rope_run(&r);
    float *x = malloc(sizeof(float) * r.n);
    memcpy(x, r.inp, sizeof(float) * r.n);
    r.be->ops->rope_forward(r.be, x, x, r.table, r.B, r.T, r.C, r.NH, r.KVH);
    cr_expect(memcmp(x, r.out, sizeof(float) * r.n) == 0, "in place differs from out of place");
    memcpy(x, r.dout, sizeof(float) * r.n);
    r.be->ops->rope_backward(r.be, x, x, r.table, r.B, r.T, r.C, r.NH, r.KVH);
    cr_expect(memcmp(x, r.dinp, sizeof(float) * r.n) == 0, "backward in place differs");
    size_t W = (size_t)(r.NH + 2 * r.KVH) * r.hs, rot = (size_t)(r.NH + r.KVH) * r.hs;
    for (size_t row = 0; row < (size_t)r.B * r.T; row++)
        cr_expect(memcmp(r.out + row * W + rot, r.inp + row * W + rot, sizeof(float) * (W - rot)) == 0,
                  "row %zu: v changed", row);
    r.be->ops->rope_backward(r.be, x, r.out, r.table, r.B, r.T, r.C, r.NH, r.KVH);
    for (size_t i = 0; i < r.n; i++)
        cr_expect(fabsf(x[i] - r.inp[i]) <= 1e-6f, "[%zu]: %g after forward and back, was %g", i,
                  x[i], r.inp[i]);
    /* position 0 is the identity */
    for (size_t i = 0; i < rot; i++) cr_expect_eq(r.out[i], r.inp[i], "position 0 moved [%zu]", i);
    free(x);
    rope_free(&r);
}

Test(llama_ops_cpu, rope_table_refuses_bad_configs, .timeout = 30)
{
    float t[64];
    char err[256];
    RopeConfig bad = ROPE_PLAIN;
    cr_expect_eq(rope_table(t, 2, 7, &bad, err, sizeof err), -1);
    cr_expect(strstr(err, "even"), "%s", err);
    bad.theta = 0;
    cr_expect_eq(rope_table(t, 2, 8, &bad, err, sizeof err), -1);
    cr_expect(strstr(err, "theta"), "%s", err);
    bad = ROPE_LLAMA3;
    bad.high_freq_factor = bad.low_freq_factor;
    cr_expect_eq(rope_table(t, 2, 8, &bad, err, sizeof err), -1);
    cr_expect(strstr(err, "scaling"), "%s", err);
    bad = ROPE_LLAMA3;
    bad.original_max_pos = 0;
    cr_expect_eq(rope_table(t, 2, 8, &bad, err, sizeof err), -1);
    cr_expect_eq(rope_table_floats(100, 64), (size_t)6400);
}

/* ---- SwiGLU ---- */

typedef struct {
    Backend *be;
    int N, F;
    float *inp, *dout, *out, *dinp;
} Swi;

static Swi swi_make(int N, int F, unsigned seed)
{
    Swi s = {.be = tu_cpu(), .N = N, .F = F};
    s.inp = rnd((size_t)N * 2 * F, seed, 4.0f); /* into the sigmoid's tails */
    s.dout = rnd((size_t)N * F, seed + 1, 1.0f);
    s.out = zeros((size_t)N * F), s.dinp = zeros((size_t)N * 2 * F);
    return s;
}

static void swi_free(Swi *s) { free(s->inp), free(s->dout), free(s->out), free(s->dinp); }

static void swi_run(Swi *s)
{
    s->be->ops->swiglu_forward(s->be, s->out, s->inp, s->N, s->F);
    s->be->ops->swiglu_backward(s->be, s->dinp, s->inp, s->dout, s->N, s->F);
}

static double swi_loss(void *p)
{
    Swi *s = p;
    s->be->ops->swiglu_forward(s->be, s->out, s->inp, s->N, s->F);
    return dot(s->out, s->dout, (size_t)s->N * s->F);
}

static void swi_cases(RefBatch *rr)
{
    static const int shapes[][2] = {{6, 37}, {3, 256}};
    for (int k = 0; k < 2; k++) {
        int N = shapes[k][0], F = shapes[k][1];
        Swi s = swi_make(N, F, 71 + k);
        swi_run(&s);
        const char *d = ref_batch_dir(rr);
        char args[64], what[64];
        put(d, "inp", s.inp, (size_t)N * 2 * F), put(d, "dout", s.dout, (size_t)N * F);
        snprintf(args, sizeof args, "N=%d F=%d", N, F);
        snprintf(what, sizeof what, "swiglu N %d F %d", N, F);
        if (reference(rr, "swiglu", d, args)) {
            expect_ref(d, "out", s.out, (size_t)N * F, what);
            expect_ref(d, "dinp", s.dinp, (size_t)N * 2 * F, what);
        }
        swi_free(&s);
    }
}

Test(llama_ops_cpu, swiglu_matches_pytorch, .timeout = 120) { ref_twice(swi_cases); }

Test(llama_ops_cpu, swiglu_matches_finite_differences, .timeout = 60)
{
    Swi s = swi_make(4, 9, 81);
    swi_run(&s);
    float *g = malloc(sizeof(float) * 4 * 18);
    memcpy(g, s.dinp, sizeof(float) * 4 * 18);
    check_fd("swiglu dinp", swi_loss, &s, s.inp, g, 4 * 18, 400);
    free(g);
    swi_free(&s);
}

/* ---- grouped-query attention ---- */

typedef struct {
    Backend *be;
    int B, T, NH, KVH, hs, C;
    size_t nqkv, nout;
    float *qkv, *dout, *out, *lse, *dqkv;
} Att;

static Att att_make(int B, int T, int NH, int KVH, int hs, unsigned seed)
{
    Att a = {.be = tu_cpu(), .B = B, .T = T, .NH = NH, .KVH = KVH, .hs = hs, .C = NH * hs};
    a.nqkv = (size_t)B * T * (NH + 2 * KVH) * hs;
    a.nout = (size_t)B * T * a.C;
    a.qkv = rnd(a.nqkv, seed, 1.0f);
    a.dout = rnd(a.nout, seed + 1, 1.0f);
    a.out = zeros(a.nout), a.lse = zeros((size_t)B * NH * T), a.dqkv = zeros(a.nqkv);
    return a;
}

static void att_free(Att *a) { free(a->qkv), free(a->dout), free(a->out), free(a->lse), free(a->dqkv); }

static void att_run(Att *a)
{
    a->be->ops->attention_forward(a->be, a->out, a->lse, a->qkv, a->B, a->T, a->C, a->NH, a->KVH);
    a->be->ops->attention_backward(a->be, a->dqkv, a->dout, a->qkv, a->out, a->lse, a->B, a->T,
                                   a->C, a->NH, a->KVH);
}

static double att_loss(void *p)
{
    Att *a = p;
    a->be->ops->attention_forward(a->be, a->out, a->lse, a->qkv, a->B, a->T, a->C, a->NH, a->KVH);
    return dot(a->out, a->dout, a->nout);
}

static void att_cases(RefBatch *rr)
{
    /* B T NH KVH hs: groups of 2; one key/value head for 6 (multi-query)
     * over three tiles; groups of 4 at hs 64 (the 4x32 vector paths);
     * KVH == NH through the same reference */
    static const int shapes[][5] = {
        {2, 70, 4, 2, 16}, {1, 130, 6, 1, 12}, {1, 80, 4, 1, 64}, {1, 65, 3, 3, 32}};
    for (int k = 0; k < 4; k++) {
        const int *s = shapes[k];
        Att a = att_make(s[0], s[1], s[2], s[3], s[4], 91 + k);
        att_run(&a);
        const char *d = ref_batch_dir(rr);
        char args[128], what[160];
        put(d, "qkv", a.qkv, a.nqkv), put(d, "dout", a.dout, a.nout);
        snprintf(args, sizeof args, "B=%d T=%d NH=%d KVH=%d hs=%d", s[0], s[1], s[2], s[3], s[4]);
        snprintf(what, sizeof what, "attention %s", args);
        if (reference(rr, "attention", d, args)) {
            expect_ref(d, "out", a.out, a.nout, what);
            expect_ref(d, "lse", a.lse, (size_t)a.B * a.NH * a.T, what);
            expect_ref(d, "dqkv", a.dqkv, a.nqkv, what);
        }
        att_free(&a);
    }
}

Test(llama_ops_cpu, gqa_attention_matches_pytorch, .timeout = 180) { ref_twice(att_cases); }

Test(llama_ops_cpu, gqa_attention_matches_finite_differences, .timeout = 120)
{
    Att a = att_make(1, 70, 4, 2, 8, 101);
    att_run(&a);
    float *g = malloc(sizeof(float) * a.nqkv);
    memcpy(g, a.dqkv, sizeof(float) * a.nqkv);
    check_fd("gqa attention dqkv", att_loss, &a, a.qkv, g, a.nqkv, 500);
    free(g);
    att_free(&a);
}

/* Decode with a (KVH, maxT, hs) cache, filled row by row: every row the
 * forward's bit for bit, on both sides of a tile edge. */
Test(llama_ops_cpu, gqa_decode_row_is_the_forward_row_bit_for_bit, .timeout = 60)
{
    int T = 70, NH = 6, KVH = 2, hs = 16, C = NH * hs;
    size_t W = (size_t)(NH + 2 * KVH) * hs;
    Att a = att_make(1, T, NH, KVH, hs, 111);
    a.be->ops->attention_forward(a.be, a.out, a.lse, a.qkv, 1, T, C, NH, KVH);
    size_t nc = (size_t)KVH * T * hs;
    float *kc = malloc(sizeof(float) * nc), *vc = malloc(sizeof(float) * nc);
    for (size_t i = 0; i < nc; i++) kc[i] = vc[i] = NAN; /* rows not yet written */
    float *o = malloc(sizeof(float) * C);
    for (int t = 0; t < T; t++) {
        a.be->ops->attention_decode(a.be, o, kc, vc, a.qkv + t * W, t, T, C, NH, KVH);
        cr_expect(memcmp(o, a.out + (size_t)t * C, sizeof(float) * C) == 0,
                  "decode row %d is not the forward's", t);
    }
    free(kc), free(vc), free(o);
    att_free(&a);
}

/* ---- the same bits at any thread count ---- */

/* Every op's outputs at `threads` threads, concatenated into buf (which
 * gets *n floats); shapes large enough for each op's threads to run. */
static float *all_ops_at(int threads, size_t *n)
{
    Rms r = rms_make(300, 130, 1e-5f, 121);
    Rope p = rope_make(2, 160, 4, 2, 16, 0, &ROPE_LLAMA3, 131);
    Swi s = swi_make(257, 160, 141);
    Att a = att_make(2, 150, 4, 2, 32, 151);
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    rms_run(&r);
    rope_run(&p);
    swi_run(&s);
    att_run(&a);
    omp_set_num_threads(saved);
    struct {
        const float *p;
        size_t n;
    } parts[] = {{r.out, 300 * 130}, {r.rstd, 300},   {r.dinp, 300 * 130}, {r.dw, 130},
                 {p.out, p.n},       {p.dinp, p.n},   {s.out, 257 * 160},  {s.dinp, 257 * 320},
                 {a.out, a.nout},    {a.lse, 2 * 4 * 150}, {a.dqkv, a.nqkv}};
    size_t total = 0;
    for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) total += parts[k].n;
    float *buf = malloc(sizeof(float) * total), *q = buf;
    for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
        memcpy(q, parts[k].p, sizeof(float) * parts[k].n);
        q += parts[k].n;
    }
    rms_free(&r), rope_free(&p), swi_free(&s), att_free(&a);
    *n = total;
    return buf;
}

Test(llama_ops_cpu, same_bits_at_1_2_and_3_threads, .timeout = 120)
{
    size_t n1, n;
    float *one = all_ops_at(1, &n1);
    for (int th = 2; th <= 3; th++) {
        float *got = all_ops_at(th, &n);
        cr_assert_eq(n, n1);
        size_t i = 0;
        while (i < n && memcmp(&one[i], &got[i], sizeof(float)) == 0) i++;
        cr_expect_eq(i, n, "%d threads: float %zu of %zu differs from 1 thread's", th, i, n);
        free(got);
    }
    free(one);
}

Test(llama_ops_cpu, reference_passes_its_selfcheck, .timeout = 120)
{
    char *out = ref_shared(-1);
    cr_expect(strstr(out, "llama_ops_reference: selfcheck PASS"), "%s", out);
    free(out);
}
