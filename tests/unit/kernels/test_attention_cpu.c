/* tests/unit/kernels/test_attention_cpu.c — the cpu attention's tiles
 * (kernels/cpu/attention*.c) on their own:
 *   - forward (out, lse) and backward (dqkv) against a double-precision
 *     reference worked row by row from the definitions (ops.h), within
 *     1e-5 of the largest value, at head sizes that take each vector path
 *     (12: scalar tails; 64: 4x32 blocks) and T that ends mid-tile;
 *   - the same bits at 1, 2 and 3 threads, with and without the planned
 *     scratch handed over (ops.h attention_scratch), and with a scratch of
 *     one slot only (fewer threads run);
 *   - decode's row t, from a cache the forward's k and v fill, bit for bit
 *     the forward's row t, on both sides of tile edges. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/test_util.h"

static float *rnd(size_t n, unsigned s)
{
    float *p = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = ((s >> 8) / 16777216.0f - 0.5f) * 2.0f;
    }
    return p;
}

typedef struct {
    int B, T, C, NH;
    float *qkv, *dout, *out, *lse, *dqkv;
} Case;

static Case make_case(int B, int T, int NH, int hs)
{
    Case c = {.B = B, .T = T, .C = NH * hs, .NH = NH};
    size_t N = (size_t)B * T;
    c.qkv = rnd(N * 3 * c.C, 3);
    c.dout = rnd(N * c.C, 4);
    c.out = malloc(sizeof(float) * N * c.C);
    c.lse = malloc(sizeof(float) * B * NH * T);
    c.dqkv = malloc(sizeof(float) * N * 3 * c.C);
    return c;
}

static void free_case(Case *c)
{
    free(c->qkv), free(c->dout), free(c->out), free(c->lse), free(c->dqkv);
}

static void run(Backend *be, Case *c)
{
    be->ops->attention_forward(be, c->out, c->lse, c->qkv, c->B, c->T, c->C, c->NH, c->NH);
    be->ops->attention_backward(be, c->dqkv, c->dout, c->qkv, c->out, c->lse, c->B, c->T, c->C,
                                c->NH, c->NH);
}

static double worst(const double *ref, const float *got, size_t n)
{
    double big = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        big = fmax(big, fabs(ref[i]));
        d = fmax(d, fabs(ref[i] - got[i]));
    }
    return d / (big > 0 ? big : 1);
}

/* The definitions in double: p_tj = softmax_j<=t(q_t.k_j / sqrt(hs)),
 * out_t = sum p_tj v_j, and ops.h's backward formulas. */
static void check_reference(int B, int T, int NH, int hs)
{
    Case c = make_case(B, T, NH, hs);
    Backend *be = tu_cpu();
    run(be, &c);
    int C = c.C;
    size_t N = (size_t)B * T, C3 = 3 * (size_t)C;
    double *out = calloc(N * C, sizeof(double)), *lse = calloc((size_t)B * NH * T, sizeof(double));
    double *dqkv = calloc(N * C3, sizeof(double)), *p = malloc(sizeof(double) * T);
    double sc = 1.0 / sqrt((double)hs);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *q = c.qkv + ((size_t)b * T + t) * C3 + h * hs;
                double m = -INFINITY, l = 0, D = 0;
                for (int j = 0; j <= t; j++) {
                    const float *k = c.qkv + ((size_t)b * T + j) * C3 + C + h * hs;
                    double s = 0;
                    for (int d = 0; d < hs; d++) s += (double)q[d] * k[d];
                    p[j] = s * sc;
                    m = fmax(m, p[j]);
                }
                for (int j = 0; j <= t; j++) l += exp(p[j] - m);
                double *o = out + ((size_t)b * T + t) * C + h * hs;
                for (int j = 0; j <= t; j++) {
                    p[j] = exp(p[j] - m) / l;
                    const float *v = c.qkv + ((size_t)b * T + j) * C3 + 2 * C + h * hs;
                    for (int d = 0; d < hs; d++) o[d] += p[j] * v[d];
                }
                lse[((size_t)b * NH + h) * T + t] = m + log(l);
                const float *dy = c.dout + ((size_t)b * T + t) * C + h * hs;
                for (int d = 0; d < hs; d++) D += dy[d] * o[d];
                double *dq = dqkv + ((size_t)b * T + t) * C3 + h * hs;
                for (int j = 0; j <= t; j++) {
                    const float *k = c.qkv + ((size_t)b * T + j) * C3 + C + h * hs, *v = k + C;
                    double *dk = dqkv + ((size_t)b * T + j) * C3 + C + h * hs, *dv = dk + C;
                    double dp = 0;
                    for (int d = 0; d < hs; d++) dp += dy[d] * (double)v[d];
                    double ds = p[j] * (dp - D) * sc;
                    for (int d = 0; d < hs; d++) {
                        dv[d] += p[j] * dy[d];
                        dq[d] += ds * k[d];
                        dk[d] += ds * q[d];
                    }
                }
            }
    double eo = worst(out, c.out, N * C), el = worst(lse, c.lse, (size_t)B * NH * T),
           ed = worst(dqkv, c.dqkv, N * C3);
    cr_expect_lt(eo, 1e-5, "hs %d T %d: out off by %g", hs, T, eo);
    cr_expect_lt(el, 1e-5, "hs %d T %d: lse off by %g", hs, T, el);
    cr_expect_lt(ed, 1e-5, "hs %d T %d: dqkv off by %g", hs, T, ed);
    free(out), free(lse), free(dqkv), free(p);
    free_case(&c);
}

Test(attention_cpu, matches_the_definitions_in_double, .timeout = 120)
{
    check_reference(2, 150, 3, 12);
    check_reference(1, 130, 2, 64);
    check_reference(1, 64, 1, 40); /* one whole tile; hs = 32 + 8 */
}

/* The bits of one (forward, backward) at a thread count and a scratch:
 * scratch_slots 0 = none handed over (stacks), else that many slots. */
static void run_at(Case *c, int threads, int scratch_slots, float *out, float *lse, float *dqkv)
{
    Backend *be = tu_cpu(); /* opened first: opening sets the thread count */
    int saved = omp_get_max_threads();
    omp_set_num_threads(scratch_slots ? scratch_slots : 1);
    size_t bytes = be->ops->attention_scratch_bytes(be, c->C, c->NH);
    omp_set_num_threads(threads);
    void *ws = scratch_slots ? malloc(bytes) : NULL;
    be->ops->attention_scratch(be, ws, ws ? bytes : 0);
    run(be, c);
    be->ops->attention_scratch(be, NULL, 0);
    free(ws);
    omp_set_num_threads(saved);
    size_t N = (size_t)c->B * c->T;
    memcpy(out, c->out, sizeof(float) * N * c->C);
    memcpy(lse, c->lse, sizeof(float) * c->B * c->NH * c->T);
    memcpy(dqkv, c->dqkv, sizeof(float) * N * 3 * c->C);
}

Test(attention_cpu, same_bits_at_any_thread_count_and_scratch, .timeout = 120)
{
    Case c = make_case(2, 200, 3, 64);
    size_t N = 2 * 200, no = N * c.C, nl = 2 * 3 * 200, nd = N * 3 * c.C;
    float *o0 = malloc(4 * no), *l0 = malloc(4 * nl), *d0 = malloc(4 * nd);
    float *o1 = malloc(4 * no), *l1 = malloc(4 * nl), *d1 = malloc(4 * nd);
    run_at(&c, 1, 0, o0, l0, d0);
    static const int runs[][2] = {{2, 0}, {3, 0}, {2, 2}, {3, 3}, {3, 1}, {1, 2}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        run_at(&c, runs[r][0], runs[r][1], o1, l1, d1);
        cr_expect(memcmp(o0, o1, 4 * no) == 0, "out: %d threads, %d slots", runs[r][0], runs[r][1]);
        cr_expect(memcmp(l0, l1, 4 * nl) == 0, "lse: %d threads, %d slots", runs[r][0], runs[r][1]);
        cr_expect(memcmp(d0, d1, 4 * nd) == 0, "dqkv: %d threads, %d slots", runs[r][0],
                  runs[r][1]);
    }
    free(o0), free(l0), free(d0), free(o1), free(l1), free(d1);
    free_case(&c);
}

/* Decode fills the cache row by row as generation does; every row's output
 * is compared with the forward's row of batch row 0. */
static void check_decode(int T, int NH, int hs)
{
    Case c = make_case(1, T, NH, hs);
    Backend *be = tu_cpu();
    be->ops->attention_forward(be, c.out, c.lse, c.qkv, 1, T, c.C, NH, NH);
    int C = c.C;
    float *kc = malloc(sizeof(float) * NH * T * hs), *vc = malloc(sizeof(float) * NH * T * hs);
    for (size_t i = 0; i < (size_t)NH * T * hs; i++) kc[i] = vc[i] = NAN; /* rows not yet written */
    float *o = malloc(sizeof(float) * C);
    for (int t = 0; t < T; t++) {
        be->ops->attention_decode(be, o, kc, vc, c.qkv + (size_t)t * 3 * C, t, T, C, NH, NH);
        cr_expect(memcmp(o, c.out + (size_t)t * C, sizeof(float) * C) == 0,
                  "hs %d: decode row %d is not the forward's", hs, t);
    }
    free(kc), free(vc), free(o);
    free_case(&c);
}

Test(attention_cpu, decode_row_is_the_forward_row_bit_for_bit, .timeout = 120)
{
    check_decode(140, 2, 64);
    check_decode(70, 3, 12);
}
