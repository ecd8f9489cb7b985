/* dev/bench/bench_gemm_tiles.c — the GPT-2 124M step's products, OpenBLAS's
 * own threading against kernels/cpu/gemm_tiles.c's tiles (one OpenBLAS
 * thread each, spread over OpenMP), in one process, alternating: per round
 * every product of one block's forward and backward and the loss head's
 * three, once each side; CPU time (CLOCK_PROCESS_CPUTIME_ID) and wall per
 * round; medians and min..max over the rounds.
 * usage: bench_gemm_tiles N ROUNDS THREADS   (N = B*T rows; the head at N rows)
 * Built and run by dev/bench/bench_gemm_tiles_op.sh. */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void cpu_sgemm(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda,
               const float *B, int ldb, float beta, float *C, int ldc);

static double now(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

typedef struct {
    int ta, tb, M, N, K;
    float beta;
} Prod;

static void run(int tiles, const Prod *p, int n, const float *a, const float *b, float *c)
{
    for (int i = 0; i < n; i++) {
        int lda = p[i].ta ? p[i].M : p[i].K, ldb = p[i].tb ? p[i].K : p[i].N;
        if (tiles)
            cpu_sgemm(p[i].ta, p[i].tb, p[i].M, p[i].N, p[i].K, a, lda, b, ldb, p[i].beta, c,
                      p[i].N);
        else
            cblas_sgemm(CblasRowMajor, p[i].ta ? CblasTrans : CblasNoTrans,
                        p[i].tb ? CblasTrans : CblasNoTrans, p[i].M, p[i].N, p[i].K, 1.0f, a,
                        lda, b, ldb, p[i].beta, c, p[i].N);
    }
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    int N = argc > 1 ? atoi(argv[1]) : 256, rounds = argc > 2 ? atoi(argv[2]) : 5;
    int threads = argc > 3 ? atoi(argv[3]) : 2;
    const int C = 768, V = 50257;
    /* per linear (IC -> OC): forward out(N,OC) = inp . w^T; backward
     * dinp(N,IC) = dout . w, dw(OC,IC) += dout^T . inp */
    int lin[4][2] = {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}};
    Prod p[16];
    int n = 0;
    for (int l = 0; l < 4; l++) {
        int IC = lin[l][0], OC = lin[l][1];
        p[n++] = (Prod){0, 1, N, OC, IC, 0.0f};
        p[n++] = (Prod){0, 0, N, IC, OC, 0.0f};
        p[n++] = (Prod){1, 0, OC, IC, N, 1.0f};
    }
    p[n++] = (Prod){0, 1, N, V, C, 0.0f}; /* head logits */
    p[n++] = (Prod){0, 0, N, C, V, 0.0f}; /* head dx */
    p[n++] = (Prod){1, 0, V, C, N, 1.0f}; /* head dwte */
    size_t big = (size_t)V * (N > 4 * C ? N : 4 * C);
    float *a = calloc(big, 4), *b = calloc(big, 4), *c = calloc(big, 4);
    for (size_t i = 0; i < big; i++) a[i] = b[i] = (float)((i * 2654435761u) % 1000) * 1e-3f;
    double *cpu[2], *wall[2];
    for (int s = 0; s < 2; s++) cpu[s] = calloc(rounds, 8), wall[s] = calloc(rounds, 8);
    /* old: OpenBLAS threads the call (its OpenMP build: by omp_get_max_threads) */
    omp_set_num_threads(threads);
    run(0, p, n, a, b, c); /* warm both */
    run(1, p, n, a, b, c);
    for (int r = 0; r < rounds; r++)
        for (int s = 0; s < 2; s++) {
            double c0 = now(CLOCK_PROCESS_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
            run(s, p, n, a, b, c);
            cpu[s][r] = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
            wall[s][r] = now(CLOCK_MONOTONIC) - w0;
        }
    const char *name[2] = {"openblas-threads", "tiles"};
    for (int s = 0; s < 2; s++) {
        qsort(cpu[s], rounds, 8, cmp), qsort(wall[s], rounds, 8, cmp);
        printf("N=%d threads=%d %-16s CPU s median %.3f (%.3f..%.3f)  wall s median %.3f "
               "(%.3f..%.3f)\n",
               N, threads, name[s], cpu[s][rounds / 2], cpu[s][0], cpu[s][rounds - 1],
               wall[s][rounds / 2], wall[s][0], wall[s][rounds - 1]);
    }
    return 0;
}
