/* tests/unit/kernels/test_host_adamw.c — kernels/host_adamw.c: the host's AdamW
 * that the cpu backend and the cuda host tier (--offload optimizer) share.
 *
 * References, each independent of the code under test:
 *   - bf16 rounding: IEEE round to nearest, ties to even, to 8 significant
 *     bits, worked in double from the two neighbours of a value (the bf16
 *     values with its truncated bits and the next one up), with hand-picked
 *     cases: exact ties both ways, the largest finite bf16's overflow to
 *     infinity, NaN to the canonical 0x7fff (what __float2bfloat16 gives);
 *   - the update: llm.c's AdamW for one element worked out in double by hand
 *     (tolerance 1e-6 relative: float rounding of six operations), and the bf16
 *     path's master bit for bit the fp32 path's on the same (bf16-exact)
 *     gradients, its working copy that master rounded by the reference above.
 * kernels/cuda/adamw.cu's kernel is checked against this loop bit for bit by
 * check_kernels --only offload (dev/cuda/check_offload.c: on the emulator in CI,
 * and on a GPU by gpu_check). */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/host_adamw.h"

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* the reference rounding: the nearer of the two bf16 neighbours, ties to the
 * one with an even last bit; past the largest finite bf16, infinity */
static uint16_t ref_bf16(float f)
{
    uint32_t u = bits_of(f);
    if (isnan(f)) return 0x7fff;
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
    double x = f, a = host_bf16_to_float(lo);
    double b = (lo & 0x7fff) == 0x7f7f ? ldexp(1.0, 128) * (x < 0 ? -1 : 1) : host_bf16_to_float(hi);
    double da = fabs(x - a), db = fabs(x - b);
    if (da < db) return lo;
    if (db < da) return hi;
    return (lo & 1) ? hi : lo;
}

Test(host_adamw, bf16_rounding_to_nearest_even)
{
    /* 1 + 2^-8 is half way between 1 and 1 + 2^-7: ties to 1 (even);
     * 1 + 3 * 2^-8 half way up from 1 + 2^-7 (odd): to 1 + 2^-6 */
    cr_assert_eq(host_float_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    cr_assert_eq(host_float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
    cr_assert_eq(host_float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81); /* just past: up */
    cr_assert_eq(host_float_to_bf16(-1.0f), 0xbf80);
    cr_assert_eq(host_float_to_bf16(FLT_MAX), 0x7f80, "past half way above the largest finite: inf");
    cr_assert_eq(host_float_to_bf16(3.3895314e38f), 0x7f7f, "the largest finite bf16 stays");
    cr_assert_eq(host_float_to_bf16(INFINITY), 0x7f80);
    cr_assert_eq(host_float_to_bf16(NAN), 0x7fff);
    cr_assert_eq(host_float_to_bf16(-NAN), 0x7fff);
    cr_assert_eq(host_bf16_to_float(0x3f80), 1.0f);
    /* a sweep of values against the double-based reference */
    uint32_t seed = 12345;
    for (int i = 0; i < 200000; i++) {
        seed = seed * 1664525u + 1013904223u;
        uint32_t u = seed & 0x7f7fffffu; /* finite */
        float f;
        memcpy(&f, &u, 4);
        if (i & 1) f = -f;
        uint16_t got = host_float_to_bf16(f), want = ref_bf16(f);
        cr_assert_eq(got, want, "%a: got 0x%04x, want 0x%04x", f, got, want);
    }
}

Test(host_adamw, one_element_by_hand)
{
    /* step t = 2: b1c = 1 - 0.9^2 = 0.19, b2c = 1 - 0.95^2 = 0.0975 */
    const double lr = 1e-2, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1, scale = 0.5;
    const double p0 = 0.75, g0 = -0.25, m0 = 0.01, v0 = 0.002;
    double g = g0 * scale, m = b1 * m0 + (1 - b1) * g, v = b2 * v0 + (1 - b2) * g * g;
    double want = p0 - lr * ((m / 0.19) / (sqrt(v / 0.0975) + eps) + wd * p0);
    float p = (float)p0, gr = (float)g0, mm = (float)m0, vv = (float)v0;
    host_adamw(&p, NULL, &gr, 0, &mm, &vv, 1, (float)lr, (float)b1, (float)b2,
               1.0f - 0.9f * 0.9f, 1.0f - 0.95f * 0.95f, (float)eps, (float)wd, (float)scale);
    cr_assert_float_eq(p, want, 1e-6 * fabs(want), "p %.9g, by hand %.9g", p, want);
    cr_assert_float_eq(mm, m, 1e-6 * fabs(m));
    cr_assert_float_eq(vv, v, 1e-6 * fabs(v));
}

Test(host_adamw, bf16_master_is_the_fp32_update_rounded)
{
    enum { N = 4099 };
    static float p32[N], master[N], g32[N], m1[N], v1[N], m2[N], v2[N];
    static uint16_t w16[N], g16[N];
    uint32_t seed = 7;
    for (int i = 0; i < N; i++) {
        seed = seed * 1664525u + 1013904223u;
        float r = (float)(seed >> 8) / 16777216.0f; /* [0, 1) */
        g16[i] = host_float_to_bf16((r - 0.5f) * 0.2f);
        g32[i] = host_bf16_to_float(g16[i]); /* the same gradients in both */
        p32[i] = master[i] = 1.0f - r;
        w16[i] = host_float_to_bf16(master[i]);
        m1[i] = m2[i] = 0.01f * r;
        v1[i] = v2[i] = 1e-4f * r;
    }
    for (int t = 1; t <= 3; t++) {
        float b1c = 1.0f - powf(0.9f, (float)t), b2c = 1.0f - powf(0.95f, (float)t);
        host_adamw(p32, NULL, g32, 0, m1, v1, N, 3e-3f, 0.9f, 0.95f, b1c, b2c, 1e-8f, 0.1f, 0.7f);
        host_adamw(w16, master, g16, 1, m2, v2, N, 3e-3f, 0.9f, 0.95f, b1c, b2c, 1e-8f, 0.1f, 0.7f);
    }
    cr_assert(memcmp(master, p32, sizeof p32) == 0, "the master is the fp32 update, bit for bit");
    cr_assert(memcmp(m1, m2, sizeof m1) == 0 && memcmp(v1, v2, sizeof v1) == 0);
    for (int i = 0; i < N; i++)
        cr_assert_eq(w16[i], ref_bf16(master[i]), "element %d: 0x%04x vs 0x%04x", i, w16[i],
                     ref_bf16(master[i]));
}
