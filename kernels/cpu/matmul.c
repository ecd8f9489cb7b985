/* kernels/cpu/matmul.c — linear layers through OpenBLAS.
 *
 * forward:  out(N,OC) = inp(N,IC) . w(OC,IC)^T + bias(OC) (one row: sgemv)
 * backward: dinp(N,IC) = dout(N,OC) . w(OC,IC)
 *           dw(OC,IC) += dout^T . inp
 *           dbias(OC) += sum_n dout       (column blocks, rows in order)
 * The products are gemm_tiles.c's: tiles fixed by the shapes, one thread
 * each, so each output element is summed in one order at any thread count. */
#include <omp.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu_ops.h"

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
        cpu_sgemv(OC, IC, weight, IC, inp, beta, out);
    else
        cpu_sgemm(0, 1, N, OC, IC, inp, IC, weight, IC, beta, out, OC);
}

void cpu_matmul_backward(Backend *be, void *dinp, void *dweight, void *dbias_, const void *dout_,
                         const void *inp, const void *weight, int N, int IC, int OC)
{
    const float *dout = dout_;
    cpu_sgemm(0, 0, N, IC, OC, dout, OC, weight, IC, 0.0f, dinp, IC);
    cpu_sgemm(1, 0, OC, IC, N, dout, OC, inp, IC, 1.0f, dweight, IC);
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

/* One tile of cpu_sgemm's product C(M,N) = op(A)(M,K) . op(B)(K,N), its
 * full rows and at most PREPARE_COLS columns, on the calling thread. a, b:
 * zero operands as large as the product's; out: PREPARE_COLS columns for
 * the tile's rows, one slice per thread. */
static void warm_tile(int ta, int tb, int M, int N, int K, const float *a, const float *b,
                      float *out)
{
    int tm, tn;
    cpu_gemm_tiles(M, N, &tm, &tn);
    int n = cols(tn);
    out += (size_t)omp_get_thread_num() * tm * n;
    cpu_sgemm_one_thread(ta, tb, tm, n, K, a, ta ? tm : K, b, tb ? K : n, 0.0f, out, n);
}

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
    size_t a_elems = 0, b_elems = 0; /* b: PREPARE_COLS wide */
    /* out: a tile's rows (at most CPU_GEMM_TILE) by PREPARE_COLS, per thread */
    size_t out_elems = (size_t)omp_get_max_threads() * CPU_GEMM_TILE * PREPARE_COLS;
    for (int i = 0; i < n_mm; i++) {
        size_t N = (size_t)mm[i][0], IC = (size_t)mm[i][1], OC = (size_t)mm[i][2];
        a_elems = max3(a_elems, N * IC, N * OC);
        b_elems = max3(b_elems, max3(IC, OC, N) * PREPARE_COLS, 0);
    }
    if (head_rows > 0) {
        size_t R = (size_t)head_rows;
        a_elems = max3(a_elems, R * V, R * C);
        b_elems = max3(b_elems, max3(C, V, R) * PREPARE_COLS, 0);
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
    /* Each thread runs the largest tile of each product once (its own
     * OpenBLAS buffer: gemm_tiles.c's tiles are one-thread calls), all
     * threads at once, so every buffer a later product may take is touched. */
#pragma omp parallel
    {
        for (int i = 0; i < n_mm; i++) {
            int N = mm[i][0], IC = mm[i][1], OC = mm[i][2];
            /* the three products of matmul_forward and matmul_backward */
            warm_tile(0, 1, N, OC, IC, a, b, out);
            warm_tile(0, 0, N, IC, OC, a, b, out);
            warm_tile(1, 0, OC, IC, N, a, b, out);
        }
        if (head_rows > 0) { /* kernels/cpu/head.c's three */
            int R = head_rows;
            warm_tile(0, 1, R, V, C, a, b, out);
            warm_tile(0, 0, R, C, V, a, b, out);
            warm_tile(1, 0, V, C, R, a, b, out);
        }
    }
out:
    if (in != MAP_FAILED) munmap(in, in_bytes);
    if (out != MAP_FAILED) munmap(out, out_bytes);
}
