/* kernels/cpu/matmul.c — linear layers through OpenBLAS.
 *
 * forward:  out(N,OC) = inp(N,IC) . w(OC,IC)^T + bias(OC) (one row: sgemv)
 * backward: dinp(N,IC) = dout(N,OC) . w(OC,IC)
 *           dw(OC,IC) += dout^T . inp
 *           dbias(OC) += sum_n dout       (column blocks, rows in order)
 * OpenBLAS partitions sgemm by output tiles for a fixed thread count, so
 * each output element is summed in one fixed order: repeatable bits. */
#include <cblas.h>
#include <string.h>

#include "cpu_ops.h"

/* A one-row product with at most this many weights (2 MiB of fp32: cache-
 * resident, microseconds of work) runs on the calling thread: OpenBLAS
 * would otherwise open a team for each of a decode step's small matmuls,
 * and on a shared machine each such region waits for a descheduled thread.
 * sgemv gives each output element to one thread, in the same order at any
 * thread count, so the bits do not depend on it. */
#define CPU_GEMV_SERIAL_MAX ((size_t)1 << 19)

static void gemv_one_row(float *out, const float *inp, const float *weight, float beta, int IC,
                         int OC)
{
    int threads = (size_t)OC * IC <= CPU_GEMV_SERIAL_MAX ? openblas_get_num_threads() : 1;
    if (threads > 1) openblas_set_num_threads(1);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, OC, IC, 1.0f, weight, IC, inp, 1, beta, out, 1);
    if (threads > 1) openblas_set_num_threads(threads);
}

void cpu_matmul_forward(Backend *be, void *out_, const void *inp, const void *weight,
                        const void *bias_, int N, int IC, int OC)
{
    float *out = out_;
    const float *bias = bias_;
    float beta = 0.0f;
    if (bias) {
#pragma omp parallel for if ((size_t)N * OC >= CPU_PAR_MIN_ELEMS)
        for (int n = 0; n < N; n++) memcpy(out + (size_t)n * OC, bias, sizeof(float) * OC);
        beta = 1.0f;
    }
    if (N == 1) /* a decode step: sgemm would pack all of weight for one row */
        gemv_one_row(out, inp, weight, beta, IC, OC);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, inp, IC, weight,
                    IC, beta, out, OC);
}

void cpu_matmul_backward(Backend *be, void *dinp, void *dweight, void *dbias_, const void *dout_,
                         const void *inp, const void *weight, int N, int IC, int OC)
{
    const float *dout = dout_;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.0f, dout, OC, weight, IC,
                0.0f, dinp, IC);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.0f, dout, OC, inp, IC, 1.0f,
                dweight, IC);
    if (dbias_) {
        float *db = dbias_;
        int nblocks = (OC + CPU_COL_BLOCK - 1) / CPU_COL_BLOCK;
#pragma omp parallel for
        for (int cb = 0; cb < nblocks; cb++) {
            int c0 = cb * CPU_COL_BLOCK, c1 = c0 + CPU_COL_BLOCK < OC ? c0 + CPU_COL_BLOCK : OC;
            for (int n = 0; n < N; n++) {
                const float *d = dout + (size_t)n * OC;
                for (int c = c0; c < c1; c++) db[c] += d[c];
            }
        }
    }
}
