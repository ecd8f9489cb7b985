/* dev/bench/bench_attention_cpu.c — the cpu attention alone: the tiled
 * kernels (kernels/cpu/attention*.c) against the previous row-at-a-time
 * ones (dev/bench/attention_cpu_old.c, compiled here with its functions
 * renamed; the product does not contain them).
 *
 * usage: bench_attention_cpu T [REPEATS] [B] [NH] [hs]   (defaults 5 1 12 64)
 * Checks the new forward and backward against the old ones (largest
 * relative difference), then times old and new alternately REPEATS times
 * each and prints the median and min..max of each, in ms and in GFLOP/s
 * at model/flops.c's count (forward 2 B T^2 C, backward 2.5 times that),
 * and the work per CPU-second of all threads (robust to other jobs). */
#include <omp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu/cpu_ops.h"

void old_attention_forward(Backend *be, void *out, float *lse, const void *qkv, int B, int T,
                           int C, int NH, int KVH);
void old_attention_backward(Backend *be, void *dqkv, const void *dout, const void *qkv,
                            const void *out, const float *lse, int B, int T, int C, int NH,
                            int KVH);

static double now(void) { return omp_get_wtime(); }

/* CPU seconds of the whole process (all threads): on a machine other jobs
 * share, work per CPU-second moves far less than work per wall second */
static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static float *rnd(size_t n, unsigned s)
{
    float *p = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = ((s >> 8) / 16777216.0f - 0.5f) * 2.0f;
    }
    return p;
}

static double rel_diff(const float *a, const float *b, size_t n)
{
    double big = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        big = fmax(big, fabs(a[i]));
        d = fmax(d, fabs((double)a[i] - b[i]));
    }
    return d / (big > 0 ? big : 1);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void stats(const char *name, double *ms, int n, double gflop)
{
    qsort(ms, n, sizeof *ms, cmp);
    double med = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    printf("  %-12s median %9.2f ms (%.2f..%.2f)  %7.1f GFLOP/s (%.1f..%.1f)\n", name, med, ms[0],
           ms[n - 1], gflop / med * 1e3, gflop / ms[n - 1] * 1e3, gflop / ms[0] * 1e3);
}

int main(int argc, char **argv)
{
    int T = argc > 1 ? atoi(argv[1]) : 1024, reps = argc > 2 ? atoi(argv[2]) : 5;
    int B = argc > 3 ? atoi(argv[3]) : 1, NH = argc > 4 ? atoi(argv[4]) : 12;
    int hs = argc > 5 ? atoi(argv[5]) : 64, C = NH * hs;
    size_t N = (size_t)B * T;
    float *qkv = rnd(N * 3 * C, 1), *dout = rnd(N * C, 2);
    float *o1 = malloc(sizeof(float) * N * C), *o2 = malloc(sizeof(float) * N * C);
    float *l1 = malloc(sizeof(float) * B * NH * T), *l2 = malloc(sizeof(float) * B * NH * T);
    float *d1 = malloc(sizeof(float) * N * 3 * C), *d2 = malloc(sizeof(float) * N * 3 * C);
    Backend be = {0};
    old_attention_forward(&be, o1, l1, qkv, B, T, C, NH, NH);
    cpu_attention_forward(&be, o2, l2, qkv, B, T, C, NH, NH);
    old_attention_backward(&be, d1, dout, qkv, o1, l1, B, T, C, NH, NH);
    cpu_attention_backward(&be, d2, dout, qkv, o2, l2, B, T, C, NH, NH);
    double eo = rel_diff(o1, o2, N * C), el = rel_diff(l1, l2, (size_t)B * NH * T),
           ed = rel_diff(d1, d2, N * 3 * C);
    printf("B=%d T=%d NH=%d hs=%d threads=%d: new vs old, largest |diff|/max|old|: out %.2e "
           "lse %.2e dqkv %.2e\n", B, T, NH, hs, omp_get_max_threads(), eo, el, ed);
    if (!(eo < 1e-5 && el < 1e-5 && ed < 1e-4)) {
        fprintf(stderr, "bench_attention_cpu: new and old disagree\n");
        return 1;
    }
    double *t[4], cpu_s[2] = {0, 0};
    for (int k = 0; k < 4; k++) t[k] = malloc(sizeof(double) * reps);
    for (int r = 0; r < reps; r++) {
        double ca = cpu_now();
        double a = now();
        old_attention_forward(&be, o1, l1, qkv, B, T, C, NH, NH);
        double b = now();
        old_attention_backward(&be, d1, dout, qkv, o1, l1, B, T, C, NH, NH);
        double c = now(), cc = cpu_now();
        cpu_attention_forward(&be, o2, l2, qkv, B, T, C, NH, NH);
        double d = now();
        cpu_attention_backward(&be, d2, dout, qkv, o2, l2, B, T, C, NH, NH);
        double e = now();
        cpu_s[0] += cc - ca, cpu_s[1] += cpu_now() - cc;
        t[0][r] = (b - a) * 1e3, t[1][r] = (c - b) * 1e3;
        t[2][r] = (d - c) * 1e3, t[3][r] = (e - d) * 1e3;
    }
    double fwd = 2.0 * B * T * (double)T * C / 1e9, bwd = 2.5 * fwd;
    double *sum[2];
    for (int k = 0; k < 2; k++) {
        sum[k] = malloc(sizeof(double) * reps);
        for (int r = 0; r < reps; r++) sum[k][r] = t[2 * k][r] + t[2 * k + 1][r];
    }
    stats("old forward", t[0], reps, fwd);
    stats("new forward", t[2], reps, fwd);
    stats("old backward", t[1], reps, bwd);
    stats("new backward", t[3], reps, bwd);
    stats("old fwd+bwd", sum[0], reps, fwd + bwd);
    stats("new fwd+bwd", sum[1], reps, fwd + bwd);
    printf("  fwd+bwd GFLOP per CPU-second (all threads' CPU time, mean): old %.1f, new %.1f\n",
           reps * (fwd + bwd) / cpu_s[0], reps * (fwd + bwd) / cpu_s[1]);
    return 0;
}
