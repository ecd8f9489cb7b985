/* kernels/cpu/gemm_tiles.c — the cpu backend's products, the same bits at
 * any thread count.
 *
 * Owns: cutting C(M,N) = op(A)(M,K) . op(B)(K,N) (row-major) into tiles
 * whose bounds depend on M and N alone, each one OpenBLAS sgemm on one
 * thread, spread over OpenMP. OpenBLAS's own threading splits a product by
 * the thread count, and its bits change with it (measured at 1 vs 2 threads
 * for every shape tried: dev/notes/openblas-threads.md); here each output
 * element is computed by the same one-thread call, over the whole K, at any
 * thread count. K is never split (that would change the sums).
 * Every BLAS call of the backend goes through this file, each on one
 * thread (one_thread_begin). */
#include <cblas.h>
#include <omp.h>

#include "cpu_ops.h"

/* OpenBLAS's OpenMP build threads a call by omp_get_max_threads() (not by
 * openblas_set_num_threads, which that count overrides at each call),
 * except inside an active parallel region: the calling thread's count is
 * set to 1 around the call, which keeps it on this thread either way. */
static int one_thread_begin(void)
{
    int n = omp_get_max_threads();
    if (n > 1) omp_set_num_threads(1);
    return n;
}

static void one_thread_end(int n)
{
    if (n > 1) omp_set_num_threads(n);
}

void cpu_sgemm_one_thread(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda,
                          const float *B, int ldb, float beta, float *C, int ldc)
{
    int n = one_thread_begin();
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
    one_thread_end(n);
}

/* Tiles of at most CPU_GEMM_TILE x CPU_GEMM_TILE; a product with fewer than
 * CPU_GEMM_MIN_TILES of them has its larger side's tiles halved (down to
 * CPU_GEMM_TILE_MIN) so a few threads share it evenly: a 256 x 768 product
 * (GPT-2 124M at B=4 T=64) is 1 x 6 tiles of 256 x 128. Both bounds are the
 * shapes' alone. */
#define CPU_GEMM_TILE_MIN 64
#define CPU_GEMM_MIN_TILES 6

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

void cpu_gemm_tiles(int M, int N, int *tm, int *tn)
{
    int a = M < CPU_GEMM_TILE ? M : CPU_GEMM_TILE, b = N < CPU_GEMM_TILE ? N : CPU_GEMM_TILE;
    if (a < 1) a = 1;
    if (b < 1) b = 1;
    while (ceil_div(M, a) * ceil_div(N, b) < CPU_GEMM_MIN_TILES) {
        /* halve the side with more elements left per tile, if it may be */
        if (b >= a && b / 2 >= CPU_GEMM_TILE_MIN)
            b /= 2;
        else if (a / 2 >= CPU_GEMM_TILE_MIN)
            a /= 2;
        else if (b / 2 >= CPU_GEMM_TILE_MIN)
            b /= 2;
        else
            break;
    }
    *tm = a;
    *tn = b;
}

void cpu_sgemm(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda,
               const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    int tm, tn;
    cpu_gemm_tiles(M, N, &tm, &tn);
    int mt = ceil_div(M, tm), nt = ceil_div(N, tn), tiles = mt * nt;
    /* dynamic: on a shared machine a descheduled thread's tiles go to the
     * other; which thread runs a tile does not change its bits */
#pragma omp parallel for schedule(dynamic, 1) if (tiles > 1)
    for (int t = 0; t < tiles; t++) {
        int i0 = t / nt * tm, j0 = t % nt * tn;
        int m = M - i0 < tm ? M - i0 : tm, n = N - j0 < tn ? N - j0 : tn;
        /* row-major: op(A)'s rows i0.. are A's rows (no trans) or columns
         * (trans); op(B)'s columns j0.. are B's columns or rows */
        const float *a = trans_a ? A + i0 : A + (size_t)i0 * lda;
        const float *b = trans_b ? B + (size_t)j0 * ldb : B + j0;
        cpu_sgemm_one_thread(trans_a, trans_b, m, n, K, a, lda, b, ldb, beta,
                             C + (size_t)i0 * ldc + j0, ldc);
    }
}

/* y(M) = W(M,K) . x(K) + beta y: rows in fixed blocks of this many, one
 * sgemv each. A product with at most CPU_GEMV_SERIAL_MAX weights (2 MiB of
 * fp32: cache-resident, microseconds) runs on the calling thread, in the
 * same blocks: a decode step makes many such, and a team for each would
 * wait on a descheduled thread. */
#define CPU_GEMV_ROWS 1024
#define CPU_GEMV_SERIAL_MAX ((size_t)1 << 19)

void cpu_sgemv(int M, int K, const float *W, int ldw, const float *x, float beta, float *y)
{
    int blocks = ceil_div(M, CPU_GEMV_ROWS);
#pragma omp parallel for schedule(dynamic, 1) if (blocks > 1 && (size_t)M * K > CPU_GEMV_SERIAL_MAX)
    for (int bl = 0; bl < blocks; bl++) {
        int r0 = bl * CPU_GEMV_ROWS, m = M - r0 < CPU_GEMV_ROWS ? M - r0 : CPU_GEMV_ROWS;
        int n = one_thread_begin();
        cblas_sgemv(CblasRowMajor, CblasNoTrans, m, K, 1.0f, W + (size_t)r0 * ldw, ldw, x, 1,
                    beta, y + r0, 1);
        one_thread_end(n);
    }
}
