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
 * Shared-memory tiles are bf16, row-major, with a row stride ld (elements)
 * of 8 more than a multiple of 16: 32-bit loads stay aligned, and ld/2 words
 * is an odd multiple of 4, so the 8 rows x 4 words a fragment load touches
 * fall in 32 distinct banks. B operands are read from a tile that holds B
 * transposed (row n = column n of B), so both loads are the same pattern.
 *
 * Under CUDA_EMU the instruction is emulated from the same layout by
 * emu_mma_bf16_16816 (tests/cuda/emu), which gathers every lane's registers
 * at a warp barrier. */
#ifndef KERNELS_CUDA_MMA_CUH
#define KERNELS_CUDA_MMA_CUH

#include "cuda_common.cuh"

/* Two floats rounded to bf16 (nearest even) in one register, lo in the low
 * half: the element with the lower column index. */
__device__ __forceinline__ uint32_t mma_pack_bf16(float lo, float hi)
{
#ifdef CUDA_EMU
    return (uint32_t)__float2bfloat16(lo).bits | (uint32_t)__float2bfloat16(hi).bits << 16;
#else
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16(lo)) |
           (uint32_t)__bfloat16_as_ushort(__float2bfloat16(hi)) << 16;
#endif
}

/* p[0] and p[1] as one register; p is 4-byte aligned. */
__device__ __forceinline__ uint32_t mma_ld_pair(const bf16 *p)
{
#ifdef CUDA_EMU
    uint32_t v;
    emu_align_check(p, 4, "mma operand load");
    memcpy(&v, p, 4);
    return v;
#else
    return *(const uint32_t *)p;
#endif
}

/* d += A . B for one 16x8x16 tile (registers as in the layout above). */
__device__ __forceinline__ void mma_bf16_16816(float d[4], const uint32_t a[4], const uint32_t b[2])
{
#ifdef CUDA_EMU
    emu_mma_bf16_16816(d, a, b);
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/* A operand: rows r0..r0+15, columns k0..k0+15 of a row-major tile. */
__device__ __forceinline__ void mma_load_a(uint32_t a[4], const bf16 *tile, int ld, int r0, int k0)
{
    const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
    const bf16 *p = tile + (size_t)(r0 + g) * ld + k0 + 2 * t;
    a[0] = mma_ld_pair(p);
    a[1] = mma_ld_pair(p + 8 * ld);
    a[2] = mma_ld_pair(p + 8);
    a[3] = mma_ld_pair(p + 8 * ld + 8);
}

/* B operand for output columns n0..n0+7 and k0..k0+15, from a tile holding
 * B transposed: tile[n][k] = B[k][n]. */
__device__ __forceinline__ void mma_load_b(uint32_t b[2], const bf16 *tile, int ld, int n0, int k0)
{
    const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
    const bf16 *p = tile + (size_t)(n0 + g) * ld + k0 + 2 * t;
    b[0] = mma_ld_pair(p);
    b[1] = mma_ld_pair(p + 8);
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

/* c(16 x N) = A . B: A is rows r0..r0+15 of a row-major tile (K columns
 * used), B is given as a row-major N x K tile Bt (Bt[n][k] = B[k][n]). */
template <int N, int K>
__device__ __forceinline__ void mma_strip(float c[][4], const bf16 *A, int lda, int r0,
                                          const bf16 *Bt, int ldb)
{
#pragma unroll
    for (int j = 0; j < N / 8; j++) c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < K / 16; kk++) {
        uint32_t a[4];
        mma_load_a(a, A, lda, r0, 16 * kk);
#pragma unroll
        for (int j = 0; j < N / 8; j++) {
            uint32_t b[2];
            mma_load_b(b, Bt, ldb, 8 * j, 16 * kk);
            mma_bf16_16816(c[j], a, b);
        }
    }
}

/* c(16 x N) += P . B: P (16 x K) is this warp's own accumulators p[K/8],
 * rounded to bf16 on the way; B as in mma_strip. */
template <int N, int K>
__device__ __forceinline__ void mma_strip_acc(float c[][4], const float p[][4], const bf16 *Bt,
                                              int ldb)
{
#pragma unroll
    for (int kk = 0; kk < K / 16; kk++) {
        uint32_t a[4];
        mma_a_from_c(a, p[2 * kk], p[2 * kk + 1]);
#pragma unroll
        for (int j = 0; j < N / 8; j++) {
            uint32_t b[2];
            mma_load_b(b, Bt, ldb, 8 * j, 16 * kk);
            mma_bf16_16816(c[j], a, b);
        }
    }
}

#endif
