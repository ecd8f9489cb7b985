/* kernels/cpu/attention_tile.h — the tile pieces of the cpu attention
 * (attention.c: forward and decode; attention_bwd.c: backward). Private.
 *
 * Tiles are ATT_BLK rows (queries) by ATT_BLK columns (keys); a head is hs
 * wide. Every product is mm_acc: C[i][n] += sum_k A[i][k] B[k][n] with k
 * ascending, one multiply-add chain per element whatever the row blocking,
 * so a 1-row call (decode) gives each element the bits of a 64-row call.
 * Score rows are always ATT_BLK wide (columns past the valid keys are
 * packed as zeros and masked), so the per-row max, sum and exp loops see
 * the same trip count in the forward and in decode.
 *
 * The helpers are always inlined into the callers, which are compiled once
 * per instruction set (ATT_CLONES): the forward and decode resolve to the
 * same clone on one machine, so they contract a*b+c to the same FMAs. */
#ifndef KERNELS_CPU_ATTENTION_TILE_H
#define KERNELS_CPU_ATTENTION_TILE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <omp.h>

#include "cpu_ops.h"

#define ATT_BLK 64 /* query and key rows per tile; S is ATT_BLK x ATT_BLK floats */
#define ATT_INLINE static inline __attribute__((always_inline))
/* GCC on x86-64 only (target_clones and its ifunc resolver); sanitizer
 * builds, which check memory rather than speed, keep the one baseline path
 * (under ThreadSanitizer the resolver, instrumented, would run before the
 * runtime is up and crash at load) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define ATT_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ATT_CLONES
#endif

typedef float att_v8 __attribute__((vector_size(32), aligned(4), may_alias));

/* macros, not functions: a function returning a vector draws -Wpsabi in
 * the default (SSE) build */
#define v8_load(p) (*(const att_v8 *)(p))
#define v8_store(p, v) (*(att_v8 *)(p) = (v))

/* C(M,N) += A(M,K) . B(K,N), all row-major with leading dimensions lda,
 * ldb, ldc (floats). Rows in fours and columns in 32s where they fit (16
 * vector accumulators), then single rows, then 8-column and scalar tails;
 * every path runs the same k-ascending chain per element. */
ATT_INLINE void mm_acc(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                       float *C, int ldc)
{
    int n = 0;
    for (; n + 32 <= N; n += 32) {
        int i = 0;
        for (; i + 4 <= M; i += 4) {
            att_v8 c[4][4];
            for (int r = 0; r < 4; r++)
                for (int q = 0; q < 4; q++) c[r][q] = v8_load(C + (size_t)(i + r) * ldc + n + 8 * q);
            for (int k = 0; k < K; k++) {
                const float *b = B + (size_t)k * ldb + n;
                att_v8 b0 = v8_load(b), b1 = v8_load(b + 8), b2 = v8_load(b + 16),
                       b3 = v8_load(b + 24);
                for (int r = 0; r < 4; r++) {
                    float a = A[(size_t)(i + r) * lda + k];
                    c[r][0] += a * b0;
                    c[r][1] += a * b1;
                    c[r][2] += a * b2;
                    c[r][3] += a * b3;
                }
            }
            for (int r = 0; r < 4; r++)
                for (int q = 0; q < 4; q++) v8_store(C + (size_t)(i + r) * ldc + n + 8 * q, c[r][q]);
        }
        for (; i < M; i++) {
            att_v8 c[4];
            for (int q = 0; q < 4; q++) c[q] = v8_load(C + (size_t)i * ldc + n + 8 * q);
            for (int k = 0; k < K; k++) {
                const float *b = B + (size_t)k * ldb + n;
                float a = A[(size_t)i * lda + k];
                for (int q = 0; q < 4; q++) c[q] += a * v8_load(b + 8 * q);
            }
            for (int q = 0; q < 4; q++) v8_store(C + (size_t)i * ldc + n + 8 * q, c[q]);
        }
    }
    for (; n + 8 <= N; n += 8)
        for (int i = 0; i < M; i++) {
            att_v8 c = v8_load(C + (size_t)i * ldc + n);
            for (int k = 0; k < K; k++) c += A[(size_t)i * lda + k] * v8_load(B + (size_t)k * ldb + n);
            v8_store(C + (size_t)i * ldc + n, c);
        }
    for (; n < N; n++)
        for (int i = 0; i < M; i++) {
            float c = C[(size_t)i * ldc + n];
            for (int k = 0; k < K; k++) c += A[(size_t)i * lda + k] * B[(size_t)k * ldb + n];
            C[(size_t)i * ldc + n] = c;
        }
}

/* exp(x) for x <= 0 (scores minus a row's max or log-sum-exp), to about
 * 2 ulp: x = n ln2 + r with |r| <= ln2/2, a degree-6 polynomial for e^r,
 * the exponent field for 2^n. Plain arithmetic, so a loop of it
 * vectorizes; below -87 (e^x < 2^-125) it returns 0. */
ATT_INLINE float att_exp(float x)
{
    const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float xc = x < -87.0f ? -87.0f : x;
    float t = xc * 1.44269504088896341f + magic;
    float nf = t - magic;
    float r = xc - nf * 0.693359375f;
    r = r - nf * -2.12194440e-4f;
    float z = r * r;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * z + r + 1.0f;
    int32_t n = (int32_t)nf;
    int32_t bits = (n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return x < -87.0f ? 0.0f : p * scale;
}

/* Packing: rows of a head's q, k or v sit ld floats apart in qkv (3C) or
 * in the decode cache (hs). */
/* dst(nr, hs) <- rows; rows nr..ATT_BLK-1 zero. */
ATT_INLINE void pack_rows(float *dst, const float *src, size_t ld, int nr, int hs)
{
    for (int r = 0; r < nr; r++) memcpy(dst + (size_t)r * hs, src + r * ld, sizeof(float) * hs);
    memset(dst + (size_t)nr * hs, 0, sizeof(float) * (size_t)(ATT_BLK - nr) * hs);
}

/* dst(hs, ATT_BLK) <- the rows transposed; columns nr.. zero. */
ATT_INLINE void pack_cols(float *dst, const float *src, size_t ld, int nr, int hs)
{
    /* rows read whole (each hs contiguous floats), columns written into
     * the tile, which stays in L1 */
    for (int r = 0; r < nr; r++) {
        const float *s = src + r * ld;
        for (int d = 0; d < hs; d++) dst[(size_t)d * ATT_BLK + r] = s[d];
    }
    for (int d = 0; d < hs; d++)
        for (int r = nr; r < ATT_BLK; r++) dst[(size_t)d * ATT_BLK + r] = 0.0f;
}

/* dst(ATT_BLK, ATT_BLK) = src^T */
ATT_INLINE void transpose_blk(float *restrict dst, const float *restrict src)
{
    for (int i = 0; i < ATT_BLK; i += 8)
        for (int j = 0; j < ATT_BLK; j++)
            for (int r = 0; r < 8; r++) dst[(size_t)j * ATT_BLK + i + r] = src[(size_t)(i + r) * ATT_BLK + j];
}

/* One query row's online-softmax step against one key tile.
 * s: the row's ATT_BLK scores q.k_j (unscaled); keys j >= nv are masked.
 * m, l: the row's running max (scaled scores) and sum of exp.
 * o: the row's running numerator (hs). Turns s into p_j = exp(s_j scale - m')
 * (0 where masked) and rescales o by exp(m - m'); the caller then adds p.V. */
ATT_INLINE void softmax_row_step(float *s, int nv, float scale, float *m, float *l, float *o,
                                 int hs)
{
    float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
    for (int j = 0; j < ATT_BLK; j++) {
        float v = j < nv ? s[j] * scale : -INFINITY;
        s[j] = v;
        mx = v > mx ? v : mx;
    }
    float mnew = mx > *m ? mx : *m;
    float alpha = *m == -INFINITY ? 0.0f : att_exp(*m - mnew);
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < ATT_BLK; j++) {
        float p = j < nv ? att_exp(s[j] - mnew) : 0.0f;
        s[j] = p;
        sum += p;
    }
    *l = *l * alpha + sum;
    *m = mnew;
    for (int d = 0; d < hs; d++) o[d] *= alpha;
}

/* Per-thread scratch of the forward (and decode), in floats: Q and O
 * (ATT_BLK, hs), K^T (hs, ATT_BLK), V (ATT_BLK, hs), S (ATT_BLK, ATT_BLK),
 * m and l (ATT_BLK each). */
ATT_INLINE size_t att_fwd_floats(int hs)
{
    return (size_t)4 * ATT_BLK * hs + (size_t)ATT_BLK * ATT_BLK + 2 * ATT_BLK;
}

/* Per-thread scratch of the backward, in floats: Q, dO, K, dK, dV (ATT_BLK,
 * hs), K^T and V^T (hs, ATT_BLK), P, dS and a transpose (ATT_BLK, ATT_BLK),
 * D and L (ATT_BLK each). */
ATT_INLINE size_t att_bwd_floats(int hs)
{
    return (size_t)7 * ATT_BLK * hs + (size_t)3 * ATT_BLK * ATT_BLK + 2 * ATT_BLK;
}

/* One thread's slot of the planned scratch (ops.h attention_scratch),
 * floats: the backward's need (the larger), rounded to 64 bytes so that
 * no two threads' slots share a cache line. */
ATT_INLINE size_t att_slot_floats(int hs) { return (att_bwd_floats(hs) + 15) / 16 * 16; }

/* The planned scratch handed over (NULL without one, or one too small for
 * a slot) and the threads to run: at most one per slot. A thread without
 * a slot uses its stack. */
ATT_INLINE float *att_pool(Backend *be, int hs, int *nthreads)
{
    const CpuState *st = be ? be->state : NULL;
    *nthreads = omp_get_max_threads();
    if (!st || !st->att_ws) return NULL;
    size_t slots = st->att_ws_bytes / (att_slot_floats(hs) * sizeof(float));
    if (slots == 0) return NULL;
    if ((size_t)*nthreads > slots) *nthreads = (int)slots;
    return st->att_ws;
}

#endif
