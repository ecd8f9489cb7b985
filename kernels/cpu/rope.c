/* kernels/cpu/rope.c — rotary position embedding on attention's q and k
 * (ops.h rope_forward, rope_backward; the table: kernels/rope.h).
 *
 * Rows of qkv(B,T,W), W = C + 2*KVH*hs: the NH query heads then the KVH key
 * heads of a row (its first C + KVH*hs columns) turn by the angles of the
 * row's position t; the v part is copied (or left, in place). Pair i of a
 * head, with c = cos(t f_i), s = sin(t f_i) from table row t:
 *   forward:  (a, b) = (x_i, x_{i+hs/2}) -> (a c - b s, b c + a s)
 *   backward: (a, b) = (dy_i, dy_{i+hs/2}) -> (a c + b s, b c - a s)
 * Each element is one row's arithmetic: parallel over rows, the same bits
 * at any thread count; in place is safe (a pair is read before it is
 * written). */
#include <string.h>

#include "cpu_ops.h"

/* dir +1: forward, -1: backward (the inverse rotation) */
static void rope_rows(float *out, const float *inp, const float *table, int B, int T, int C,
                      int NH, int KVH, int dir)
{
    int hs = C / NH, half = hs / 2, nheads = NH + KVH;
    size_t W = (size_t)C + (size_t)2 * KVH * hs, rot = (size_t)nheads * hs;
    long N = (long)B * T;
    float sg = dir > 0 ? 1.0f : -1.0f;
#pragma omp parallel for if ((size_t)N * W >= CPU_PAR_MIN_ELEMS)
    for (long n = 0; n < N; n++) {
        const float *cs = table + (size_t)(n % T) * hs, *sn = cs + half;
        const float *x = inp + (size_t)n * W;
        float *y = out + (size_t)n * W;
        for (int h = 0; h < nheads; h++) {
            const float *xa = x + (size_t)h * hs, *xb = xa + half;
            float *ya = y + (size_t)h * hs, *yb = ya + half;
            for (int i = 0; i < half; i++) {
                float a = xa[i], b = xb[i], s = sg * sn[i];
                ya[i] = a * cs[i] - b * s;
                yb[i] = b * cs[i] + a * s;
            }
        }
        if (y != x) memcpy(y + rot, x + rot, sizeof(float) * (W - rot));
    }
}

void cpu_rope_forward(Backend *be, void *out, const void *inp, const float *table, int B, int T,
                      int C, int NH, int KVH)
{
    rope_rows(out, inp, table, B, T, C, NH, KVH, 1);
}

void cpu_rope_backward(Backend *be, void *dinp, const void *dout, const float *table, int B,
                       int T, int C, int NH, int KVH)
{
    rope_rows(dinp, dout, table, B, T, C, NH, KVH, -1);
}
