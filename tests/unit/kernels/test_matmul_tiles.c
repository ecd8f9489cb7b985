/* tests/unit/kernels/test_matmul_tiles.c — the cpu backend's products
 * (kernels/cpu/gemm_tiles.c, through matmul_forward and matmul_backward)
 * at awkward shapes: primes, one row (the sgemv path, in row blocks and on
 * the calling thread), rows and columns below, at and above a tile's side
 * (CPU_GEMM_TILE, 256):
 *   - the same bits at 1, 2 and 3 threads (the ops.h contract; OpenBLAS's
 *     own threading broke it: dev/notes/openblas-threads.md);
 *   - each output element against a double-precision sum of the same terms
 *     within (K + 2) * 2^-24 * (the sum of the terms' magnitudes), the
 *     bound for fp32 sums of K terms in any order (with or without fused
 *     multiply-adds), so it holds whatever order OpenBLAS picks. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "tests/lib/test_util.h"

static float *rnd(size_t n, unsigned s)
{
    float *p = malloc(sizeof(float) * (n ? n : 1));
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = ((s >> 8) / 16777216.0f - 0.5f) * 2.0f;
    }
    return p;
}

typedef struct {
    int N, IC, OC;
} Shape;

/* N rows, IC inputs, OC outputs: primes and one-offs around 256 */
static const Shape shapes[] = {
    {1, 131, 5003}, /* one row, 655k weights: sgemv in blocks across threads */
    {1, 37, 41},    /* one row, small: sgemv on the calling thread */
    {7, 13, 5},     {257, 131, 769}, {255, 509, 97}, {61, 1031, 263}, {600, 67, 1031},
    {256, 64, 256},
};

typedef struct {
    float *out, *dinp, *dw, *db;
} Result;

/* forward (with bias) and backward (dweight and dbias accumulated onto
 * fixed non-zero values) at `threads` threads */
static Result run_at(const Shape *s, int threads, const float *inp, const float *w,
                     const float *bias, const float *dout)
{
    Backend *be = tu_cpu(); /* first: opening it sets the thread count */
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    size_t N = (size_t)s->N, IC = (size_t)s->IC, OC = (size_t)s->OC;
    Result r = {malloc(4 * N * OC), malloc(4 * N * IC), rnd(OC * IC, 11), rnd(OC, 12)};
    be->ops->matmul_forward(be, r.out, inp, w, bias, s->N, s->IC, s->OC);
    be->ops->matmul_backward(be, r.dinp, r.dw, r.db, dout, inp, w, s->N, s->IC, s->OC);
    omp_set_num_threads(saved);
    return r;
}

static void result_free(Result *r) { free(r->out), free(r->dinp), free(r->dw), free(r->db); }

/* |got - sum| within the any-order bound; terms: K products a_k b_k (their
 * double sum and magnitude), plus `init` (a bias or the accumulated value) */
static void expect_sum(const char *what, const Shape *s, size_t i, float got, double sum,
                       double mag, int K)
{
    double tol = (K + 2) * ldexp(1.0, -24) * mag;
    cr_expect(fabs(got - sum) <= tol, "%s[%zu] at %dx%dx%d: %.9g vs %.9g (tolerance %.3g)",
              what, i, s->N, s->IC, s->OC, got, sum, tol);
}

static void check_reference(const Shape *s, const Result *r, const float *inp, const float *w,
                            const float *bias, const float *dout)
{
    int N = s->N, IC = s->IC, OC = s->OC;
    float *dw0 = rnd((size_t)OC * IC, 11);
    for (int n = 0; n < N; n++) /* out = inp . w^T + bias: K = IC */
        for (int o = 0; o < OC; o++) {
            double sum = bias[o], mag = fabs(bias[o]);
            for (int k = 0; k < IC; k++) {
                double t = (double)inp[(size_t)n * IC + k] * w[(size_t)o * IC + k];
                sum += t, mag += fabs(t);
            }
            expect_sum("out", s, (size_t)n * OC + o, r->out[(size_t)n * OC + o], sum, mag, IC);
        }
    for (int n = 0; n < N; n++) /* dinp = dout . w: K = OC */
        for (int i = 0; i < IC; i++) {
            double sum = 0, mag = 0;
            for (int k = 0; k < OC; k++) {
                double t = (double)dout[(size_t)n * OC + k] * w[(size_t)k * IC + i];
                sum += t, mag += fabs(t);
            }
            expect_sum("dinp", s, (size_t)n * IC + i, r->dinp[(size_t)n * IC + i], sum, mag, OC);
        }
    for (int o = 0; o < OC; o++) /* dw += dout^T . inp: K = N */
        for (int i = 0; i < IC; i++) {
            size_t at = (size_t)o * IC + i;
            double sum = dw0[at], mag = fabs(dw0[at]);
            for (int k = 0; k < N; k++) {
                double t = (double)dout[(size_t)k * OC + o] * inp[(size_t)k * IC + i];
                sum += t, mag += fabs(t);
            }
            expect_sum("dweight", s, at, r->dw[at], sum, mag, N);
        }
    free(dw0);
}

/* OpenBLAS's OpenMP build sets OpenMP's thread count when the backend sets
 * OpenBLAS's to 1, and resets OpenBLAS's by OpenMP's at a call outside a
 * parallel region: the backend must leave OpenMP at --threads (else every
 * team has one thread and 1 vs 2 threads compares nothing), through a
 * product too. */
Test(matmul_tiles, the_backend_keeps_the_thread_count)
{
    char err[256];
    int saved = omp_get_max_threads();
    Backend *be = backend_open("cpu", "fp32", 3, err, sizeof err);
    cr_assert_not_null(be, "%s", err);
    cr_expect_eq(omp_get_max_threads(), 3, "after backend_open(3)");
    const Shape s = {7, 13, 5};
    float *inp = rnd(7 * 13, 1), *w = rnd(5 * 13, 2), *out = malloc(4 * 7 * 5);
    be->ops->matmul_forward(be, out, inp, w, NULL, s.N, s.IC, s.OC);
    cr_expect_eq(omp_get_max_threads(), 3, "after a product");
    free(inp), free(w), free(out);
    backend_close(be);
    omp_set_num_threads(saved);
}

Test(matmul_tiles, same_bits_at_1_2_3_threads_and_the_double_sums, .timeout = 240)
{
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        const Shape *s = &shapes[c];
        size_t N = (size_t)s->N, IC = (size_t)s->IC, OC = (size_t)s->OC;
        float *inp = rnd(N * IC, 1), *w = rnd(OC * IC, 2), *bias = rnd(OC, 3);
        float *dout = rnd(N * OC, 4);
        Result r1 = run_at(s, 1, inp, w, bias, dout);
        check_reference(s, &r1, inp, w, bias, dout);
        for (int t = 2; t <= 3; t++) {
            Result rt = run_at(s, t, inp, w, bias, dout);
            cr_expect(memcmp(r1.out, rt.out, 4 * N * OC) == 0, "out at %zux%zux%zu: %d threads",
                      N, IC, OC, t);
            cr_expect(memcmp(r1.dinp, rt.dinp, 4 * N * IC) == 0,
                      "dinp at %zux%zux%zu: %d threads", N, IC, OC, t);
            cr_expect(memcmp(r1.dw, rt.dw, 4 * OC * IC) == 0,
                      "dweight at %zux%zux%zu: %d threads", N, IC, OC, t);
            cr_expect(memcmp(r1.db, rt.db, 4 * OC) == 0, "dbias at %zux%zux%zu: %d threads", N,
                      IC, OC, t);
            result_free(&rt);
        }
        result_free(&r1);
        free(inp), free(w), free(bias), free(dout);
    }
}
