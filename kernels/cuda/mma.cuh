/* kernels/cuda/mma.cuh — private to kernels/cuda/: warp-level tensor-core
 * products whose operands and accumulators stay in registers.
 *
 * One instruction, PTX mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32:
 * a warp computes D(16x8, fp32) += A(16x16, bf16) . B(16x8, bf16). Each lane
 * holds a fixed piece of every operand (the PTX ISA's fragment layout for
 * this shape), with g = lane / 4 and t = lane % 4:
 *   A: 4 registers of 2 bf16 (lower column in the low half):
 *      a[0] = A[g][2t..2t+1]    a[1] = A[g+8][2t..2t+1]
 *      a[2] = A[g][2t+8..+9]    a[3] = A[g+8][2t+8..+9]
 *   B: 2 registers: b[0] = B[2t..2t+1][g], b[1] = B[2t+8..+9][g]
 *   C, D: 4 floats: c[0..1] = C[g][2t..2t+1], c[2..3] = C[g+8][2t..2t+1]
 * Because the layout is known, code can work on accumulators in place (row
 * scaling, masking, softmax) and can turn two adjacent 16x8 accumulators
 * into one A operand (mma_a_from_c) without a trip through shared memory,
 * which wmma's opaque fragments do not allow.
 *
 * Operands come from shared memory by ldmatrix (below). Tiles are bf16,
 * row-major, with a row stride of 8 more than a multiple of 16 elements: an
 * odd multiple of 16 bytes, so every row is 16-byte aligned and the 8 rows
 * one ldmatrix phase reads fall in 8 distinct groups of 4 banks.
 *
 * In the emulator's build both instructions are emulated from the documented layouts
 * (emu_mma_bf16_16816, emu_ldmatrix_x4 in dev/cuda/emu), which gather
 * every lane's registers or addresses at a warp barrier. */
#ifndef KERNELS_CUDA_MMA_CUH
#define KERNELS_CUDA_MMA_CUH

#include "cuda_common.cuh"

/* Two floats rounded to bf16 (nearest even) in one register, lo in the low
 * half: the element with the lower column index. */
__device__ __forceinline__ uint32_t mma_pack_bf16(float lo, float hi)
{
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16(lo)) |
           (uint32_t)__bfloat16_as_ushort(__float2bfloat16(hi)) << 16;
}

/* d += A . B for one 16x8x16 tile (registers as in the layout above). */
__device__ __forceinline__ void mma_bf16_16816(float d[4], const uint32_t a[4], const uint32_t b[2])
{
    ptx_mma_bf16_16816(d, a, b);
}

/* ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: four 8x8 bf16 matrices
 * from shared memory. Lane l gives the address of row l % 8 of matrix l / 8
 * (16 contiguous bytes, 16-byte aligned). Register i of lane l (g = l / 4,
 * t = l % 4) receives from matrix i: M[g][2t..2t+1], or with .trans
 * M[2t][g] and M[2t+1][g] -- the same pieces an mma operand holds, which
 * is the point: one instruction per lane replaces four 32-bit loads, and
 * .trans reads a row-major K x N tile as the B operand without a
 * transposed copy. */
__device__ __forceinline__ void mma_ldmatrix_x4(uint32_t r[4], const bf16 *p, bool trans)
{
    /* its asm has a "memory" clobber: the read must not move across the
     * stores, cp.async waits and barriers that fill the tile */
    ptx_ldmatrix_x4(r, p, trans);
}

/* A operand: rows r0..r0+15, columns k0..k0+15 of a row-major tile.
 * Matrices 0..3 = (rows +0, cols +0), (+8, +0), (+0, +8), (+8, +8): a[0..3]. */
__device__ __forceinline__ void mma_load_a(uint32_t a[4], const bf16 *tile, int ld, int r0, int k0)
{
    const int l = threadIdx.x % 32;
    mma_ldmatrix_x4(a, tile + (size_t)(r0 + l % 8 + 8 * (l / 8 % 2)) * ld + k0 + 8 * (l / 16),
                    false);
}

/* B operands for output columns n0..n0+15 (two 16x8 products: b[0] for
 * n0..n0+7, b[1] for n0+8..n0+15) over k0..k0+15.
 * mma_load_b_nk: from a tile holding B transposed, tile[n][k] = B[k][n];
 *   matrices (n +0, k +0), (+0, +8), (+8, +0), (+8, +8).
 * mma_load_b_kn: from B itself, row-major tile[k][n], through .trans;
 *   matrices (k +0, n +0), (+8, +0), (+0, +8), (+8, +8). */
__device__ __forceinline__ void mma_load_b_nk(uint32_t b[2][2], const bf16 *tile, int ld, int n0,
                                              int k0)
{
    const int l = threadIdx.x % 32;
    uint32_t r[4];
    mma_ldmatrix_x4(r, tile + (size_t)(n0 + l % 8 + 8 * (l / 16)) * ld + k0 + 8 * (l / 8 % 2),
                    false);
    b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
}
__device__ __forceinline__ void mma_load_b_kn(uint32_t b[2][2], const bf16 *tile, int ld, int k0,
                                              int n0)
{
    const int l = threadIdx.x % 32;
    uint32_t r[4];
    mma_ldmatrix_x4(r, tile + (size_t)(k0 + l % 8 + 8 * (l / 8 % 2)) * ld + n0 + 8 * (l / 16),
                    true);
    b[0][0] = r[0], b[0][1] = r[1], b[1][0] = r[2], b[1][1] = r[3];
}

/* The A operand (16x16, bf16) made of two accumulators side by side:
 * columns 0..7 from c0, 8..15 from c1. Each lane already holds exactly the
 * elements it needs: row g and g+8, columns 2t, 2t+1 of each half. */
__device__ __forceinline__ void mma_a_from_c(uint32_t a[4], const float c0[4], const float c1[4])
{
    a[0] = mma_pack_bf16(c0[0], c0[1]);
    a[1] = mma_pack_bf16(c0[2], c0[3]);
    a[2] = mma_pack_bf16(c1[0], c1[1]);
    a[3] = mma_pack_bf16(c1[2], c1[3]);
}

/* ---- one warp, a 16-row strip ----
 * c[j] holds columns 8j..8j+7 of a 16 x N product in the C layout. */

template <int N> __device__ __forceinline__ void mma_strip_zero(float c[][4])
{
#pragma unroll
    for (int j = 0; j < N / 8; j++) c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.0f;
}

/* c(16 x N) += a . B[k0..k0+15][0..N): a is one 16 x 16 A operand; B is a
 * row-major K x N tile (BT = false: mma_load_b_kn) or given as its
 * transpose, row-major N x K (BT = true: mma_load_b_nk). The one step of
 * every strip product below. */
template <int N, bool BT>
__device__ __forceinline__ void mma_strip_step(float c[][4], const uint32_t a[4], const bf16 *B,
                                               int ldb, int k0)
{
#pragma unroll
    for (int j = 0; j < N / 16; j++) {
        uint32_t b[2][2];
        if (BT) mma_load_b_nk(b, B, ldb, 16 * j, k0);
        else mma_load_b_kn(b, B, ldb, k0, 16 * j);
        mma_bf16_16816(c[2 * j], a, b[0]);
        mma_bf16_16816(c[2 * j + 1], a, b[1]);
    }
}

/* c(16 x N) = A . B: A is rows r0..r0+15 of a row-major tile (K columns
 * used), B is given as a row-major N x K tile Bt (Bt[n][k] = B[k][n]). */
template <int N, int K>
__device__ __forceinline__ void mma_strip(float c[][4], const bf16 *A, int lda, int r0,
                                          const bf16 *Bt, int ldb)
{
    static_assert(N % 16 == 0 && K % 16 == 0, "16-wide pieces");
    mma_strip_zero<N>(c);
#pragma unroll
    for (int kk = 0; kk < K / 16; kk++) {
        uint32_t a[4];
        mma_load_a(a, A, lda, r0, 16 * kk);
        mma_strip_step<N, true>(c, a, Bt, ldb, 16 * kk);
    }
}

/* The A operands of a whole 16 x K strip (rows r0..r0+15 of a row-major
 * tile), to keep in registers: a[kk] covers columns 16kk..16kk+15. */
template <int K>
__device__ __forceinline__ void mma_load_a_strip(uint32_t a[][4], const bf16 *tile, int ld, int r0)
{
#pragma unroll
    for (int kk = 0; kk < K / 16; kk++) mma_load_a(a[kk], tile, ld, r0, 16 * kk);
}

/* c(16 x N) = A . B as mma_strip, with A already in registers
 * (mma_load_a_strip): only B is read from shared memory. */
template <int N, int K>
__device__ __forceinline__ void mma_strip_areg(float c[][4], const uint32_t a[][4], const bf16 *Bt,
                                               int ldb)
{
    static_assert(N % 16 == 0 && K % 16 == 0, "16-wide pieces");
    mma_strip_zero<N>(c);
#pragma unroll
    for (int kk = 0; kk < K / 16; kk++) mma_strip_step<N, true>(c, a[kk], Bt, ldb, 16 * kk);
}

/* c(16 x N) += P . B: P (16 x K) is this warp's own accumulators p[K/8],
 * rounded to bf16 on the way; B is a row-major K x N tile (B[k][n]). */
template <int N, int K>
__device__ __forceinline__ void mma_strip_acc(float c[][4], const float p[][4], const bf16 *B,
                                              int ldb)
{
    static_assert(N % 16 == 0 && K % 16 == 0, "16-wide pieces");
#pragma unroll
    for (int kk = 0; kk < K / 16; kk++) {
        uint32_t a[4];
        mma_a_from_c(a, p[2 * kk], p[2 * kk + 1]);
        mma_strip_step<N, false>(c, a, B, ldb, 16 * kk);
    }
}

/* ---- one warp, two 16-row strips sharing every B fragment ----
 * The FlashAttention-2 shape: a warp owns 32 rows as strips 0 and 1
 * (rows +0..15 and +16..31). Each ldmatrix of B feeds four mma.sync (two
 * per strip) instead of two, halving the shared-memory reads per product. */

/* c0, c1 (16 x N each) = A0 . B, A1 . B as mma_strip_areg, both A strips
 * in registers (mma_load_a_strip), B given transposed (Bt[n][k]). */
template <int N, int K>
__device__ __forceinline__ void mma_strip2_areg(float c0[][4], float c1[][4], const uint32_t a0[][4],
                                                const uint32_t a1[][4], const bf16 *Bt, int ldb)
{
    static_assert(N % 16 == 0 && K % 16 == 0, "16-wide pieces");
    mma_strip_zero<N>(c0);
    mma_strip_zero<N>(c1);
#pragma unroll
    for (int kk = 0; kk < K / 16; kk++)
#pragma unroll
        for (int j = 0; j < N / 16; j++) {
            uint32_t b[2][2];
            mma_load_b_nk(b, Bt, ldb, 16 * j, 16 * kk);
            mma_bf16_16816(c0[2 * j], a0[kk], b[0]);
            mma_bf16_16816(c0[2 * j + 1], a0[kk], b[1]);
            mma_bf16_16816(c1[2 * j], a1[kk], b[0]);
            mma_bf16_16816(c1[2 * j + 1], a1[kk], b[1]);
        }
}

/* c0 += P0 . B, c1 += P1 . B as mma_strip_acc: P0, P1 (16 x K) the warp's
 * own accumulators, rounded to bf16; B row-major K x N (B[k][n]). */
template <int N, int K>
__device__ __forceinline__ void mma_strip2_acc(float c0[][4], float c1[][4], const float p0[][4],
                                               const float p1[][4], const bf16 *B, int ldb)
{
    static_assert(N % 16 == 0 && K % 16 == 0, "16-wide pieces");
#pragma unroll
    for (int kk = 0; kk < K / 16; kk++) {
        uint32_t x0[4], x1[4];
        mma_a_from_c(x0, p0[2 * kk], p0[2 * kk + 1]);
        mma_a_from_c(x1, p1[2 * kk], p1[2 * kk + 1]);
#pragma unroll
        for (int j = 0; j < N / 16; j++) {
            uint32_t b[2][2];
            mma_load_b_kn(b, B, ldb, 16 * kk, 16 * j);
            mma_bf16_16816(c0[2 * j], x0, b[0]);
            mma_bf16_16816(c0[2 * j + 1], x0, b[1]);
            mma_bf16_16816(c1[2 * j], x1, b[0]);
            mma_bf16_16816(c1[2 * j + 1], x1, b[1]);
        }
    }
}

/* A operand rows m0..m0+15, columns k0..k0+15 of A, from a row-major tile
 * holding A transposed (tile[k][m] = A[m][k]), through .trans: matrices
 * (k +0, m +0), (+0, +8), (+8, +0), (+8, +8) give a[0..3]. */
__device__ __forceinline__ void mma_load_a_t(uint32_t a[4], const bf16 *tile, int ld, int m0,
                                             int k0)
{
    const int l = threadIdx.x % 32;
    mma_ldmatrix_x4(a, tile + (size_t)(k0 + l % 8 + 8 * (l / 16)) * ld + m0 + 8 * (l / 8 % 2),
                    true);
}

/* A 16 x N strip c, times s0 (this lane's row g) and s1 (row g + 8), into
 * rows r0.. of a row-major bf16 tile in shared memory (stride ld): one
 * 32-bit store per pair, every lane of a phase on its own bank when ld is
 * an odd multiple of 8 elements. The first half of an epilogue that leaves
 * through 16-byte stores (mma_rows_out). */
template <int N>
__device__ __forceinline__ void mma_strip_to_smem(bf16 *tile, int ld, int r0, const float c[][4],
                                                  float s0, float s1)
{
    const int l = threadIdx.x % 32, g = l / 4, t = l % 4;
#pragma unroll
    for (int j = 0; j < N / 8; j++) {
        *(uint32_t *)(tile + (size_t)(r0 + g) * ld + 8 * j + 2 * t) =
            mma_pack_bf16(c[j][0] * s0, c[j][1] * s0);
        *(uint32_t *)(tile + (size_t)(r0 + g + 8) * ld + 8 * j + 2 * t) =
            mma_pack_bf16(c[j][2] * s1, c[j][3] * s1);
    }
}

/* 16 bytes as four 32-bit words, so that a copy stays in registers */
struct __align__(16) MmaU4 {
    uint32_t x, y, z, w;
};

/* The second half: R rows of a shared-memory tile (stride ld, N columns,
 * written by this warp, which has passed a __syncwarp) to global rows
 * out + r * ldo, r < nrows, the first ncols columns: 16-byte stores when
 * vec (out and ldo 16-byte aligned, ncols a multiple of 8), element stores
 * otherwise. Lane l takes pieces l, l + 32, ...: consecutive lanes write
 * consecutive 16 bytes of a row. */
template <int R, int N>
__device__ __forceinline__ void mma_rows_out(bf16 *out, size_t ldo, int nrows, int ncols,
                                             const bf16 *tile, int ld, bool vec)
{
    const int l = threadIdx.x % 32;
    if (vec) {
#pragma unroll
        for (int i = l; i < R * N / 8; i += 32) {
            const int r = i / (N / 8), d = i % (N / 8) * 8;
            if (r < nrows && d < ncols)
                *(MmaU4 *)vec16_at(out + (size_t)r * ldo + d) =
                    *(const MmaU4 *)vec16_at(tile + (size_t)r * ld + d);
        }
    } else {
        for (int i = l; i < R * N; i += 32) {
            const int r = i / N, d = i % N;
            if (r < nrows && d < ncols) out[(size_t)r * ldo + d] = tile[(size_t)r * ld + d];
        }
    }
}

/* Store a 16 x N strip c to bf16 rows: this lane's rows r0 and r0 + 8 of
 * the output (columns 2t, 2t+1 of every 8) go to base + row * ld, times s0
 * and s1 respectively; rows >= nrows and columns >= ncols are skipped. */
template <int N>
__device__ __forceinline__ void mma_strip_store(bf16 *base, size_t ld, int r0, int nrows,
                                                int ncols, const float c[][4], float s0, float s1)
{
    const int t = threadIdx.x % 4;
#pragma unroll
    for (int half = 0; half < 2; half++) {
        const int row = r0 + 8 * half;
        if (row >= nrows) continue;
        bf16 *out = base + (size_t)row * ld;
        const float sc = half ? s1 : s0;
#pragma unroll
        for (int j = 0; j < N / 8; j++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int d = 8 * j + 2 * t + e;
                if (d < ncols) out[d] = from_f<bf16>(c[j][2 * half + e] * sc);
            }
    }
}

#endif
