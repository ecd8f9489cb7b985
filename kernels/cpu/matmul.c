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
#include <sys/mman.h>

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

/* Output columns of the warm-up products. OpenBLAS sizes what it packs by
 * the rows and the reduction (measured: after a warm-up with 16 columns, the
 * full-width product touched at most 0.8 MiB more, at every layout and
 * shape tried up to 2048 x 50304 x 768), so 16 columns touch its buffers as
 * the full width would, at a fraction of the FLOPs. */
#define PREPARE_COLS 16

static int cols(int n) { return n < PREPARE_COLS ? n : PREPARE_COLS; }

static size_t max3(size_t a, size_t b, size_t c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }

void cpu_matmul_prepare(Backend *be, const int (*mm)[3], int n_mm, int head_rows, int V, int C)
{
    (void)be;
    /* in: the operands, zero pages mapped read-only (not resident, on most
     * kernels; where a read faults in real pages, as in a Firecracker
     * guest's 6.18, they are at most the loss head's chunk of logits, which
     * the arenas hold anyway, so the peak is not moved, and they are unmapped
     * before the baseline is read);
     * out: the products, PREPARE_COLS columns, the only pages written */
    size_t a_elems = 0, b_elems = 0, out_elems = 0; /* b, out: PREPARE_COLS wide */
    for (int i = 0; i < n_mm; i++) {
        size_t N = (size_t)mm[i][0], IC = (size_t)mm[i][1], OC = (size_t)mm[i][2];
        a_elems = max3(a_elems, N * IC, N * OC);
        b_elems = max3(b_elems, max3(IC, OC, N) * PREPARE_COLS, 0);
        out_elems = max3(out_elems, N * PREPARE_COLS, OC * PREPARE_COLS);
    }
    if (head_rows > 0) {
        size_t R = (size_t)head_rows;
        a_elems = max3(a_elems, R * V, R * C);
        b_elems = max3(b_elems, max3(C, V, R) * PREPARE_COLS, 0);
        out_elems = max3(out_elems, R * PREPARE_COLS, (size_t)V * PREPARE_COLS);
    }
    size_t in_bytes = (a_elems + b_elems) * sizeof(float), out_bytes = out_elems * sizeof(float);
    if (!in_bytes) return;
    float *in = mmap(NULL, in_bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    float *out = mmap(NULL, out_bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    /* No room to map them (a tight ulimit -v): the run goes on and the
     * baseline is what it was; the buffers are touched later. */
    if (in == MAP_FAILED || out == MAP_FAILED) goto out;
    const float *a = in, *b = in + a_elems;
    for (int i = 0; i < n_mm; i++) {
        int N = mm[i][0], IC = mm[i][1], OC = mm[i][2];
        /* the three products of matmul_forward and matmul_backward */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, cols(OC), IC, 1.0f, a, IC, b, IC,
                    0.0f, out, cols(OC));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, cols(IC), OC, 1.0f, a, OC, b,
                    cols(IC), 0.0f, out, cols(IC));
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, cols(IC), N, 1.0f, a, OC, b,
                    cols(IC), 0.0f, out, cols(IC));
    }
    if (head_rows > 0) { /* kernels/cpu/head.c's three */
        int R = head_rows;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, R, cols(V), C, 1.0f, a, C, b, C, 0.0f,
                    out, cols(V));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, R, cols(C), V, 1.0f, a, V, b,
                    cols(C), 0.0f, out, cols(C));
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, cols(C), R, 1.0f, a, V, b, cols(C),
                    0.0f, out, cols(C));
    }
out:
    if (in != MAP_FAILED) munmap(in, in_bytes);
    if (out != MAP_FAILED) munmap(out, out_bytes);
}
