/* dev/cuda/wgmma.cuh — private to dev/cuda/attention_mma*_wg.cu: Hopper's warpgroup
 * tensor-core product (PTX wgmma, sm_90a only), beside kernels/cuda/mma.cuh's
 * warp-level mma.sync.
 *
 * wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16: the 128 threads of
 * a warpgroup (4 consecutive warps, the first a multiple of 4) compute
 * D(64 x N, fp32) (+)= A(64 x 16, bf16) . B(16 x N, bf16). Warp w of the
 * group owns rows 16w..16w+15 of A and D, in the same per-lane layout as
 * mma.sync m16n8k16 (mma.cuh), repeated over N / 8 column blocks: with
 * g = lane / 4, t = lane % 4, a thread's accumulators d[j][0..1] are row g,
 * columns 8j+2t..+1, d[j][2..3] row g+8 (so mma.cuh's strip code reads
 * them unchanged), and its A registers are mma.sync's a[0..3] on the
 * warp's rows. B comes from shared memory through a 64-bit matrix
 * descriptor (wgmma_desc): start address, leading and stride byte offsets
 * (each >> 4, 14 bits), swizzle mode 0 here.
 *
 * Layout used (no swizzle, the PTX ISA's "interleaved" canonical layout):
 * a tile of R rows x HSP bf16 is stored as 8 x 8 core matrices of 128
 * contiguous bytes (8 rows of 16 bytes), row group rg and column chunk c at
 * rg * HSP * 16 + c * 128 bytes: element (r, d) at byte
 * (r/8) HSP 16 + (d/8) 128 + (r%8) 16 + (d%8) 2 (wgmma_core_off).
 * The same tile is B = tile^T, K-major (Q K^T: k = d), with LBO = 128
 * (next 8 k), SBO = HSP 16 (next 8 n); or B = tile, N-major (P V: k = r,
 * imm-trans-b 1), with LBO = HSP 16 (next 8 k), SBO = 128 (next 8 n).
 *
 * Asynchrony (the PTX ISA's rules, which the compiler does not know):
 * wgmma_fence() before the first product and after any other instruction
 * touched its accumulators or A registers; wgmma_proxy_fence() by every
 * thread that wrote a B tile (cp.async included), after its writes landed
 * and before the barrier the products follow; products are committed into a
 * group (wgmma_commit) and wgmma_wait<N>() waits until at most N groups are
 * in flight. Until then the accumulators and A registers must not be read
 * or written and the shared memory read must not change. wgmma_hold()
 * after the wait ties the registers to it, so that the compiler neither
 * reads the accumulators before the wait nor reuses the A registers early.
 *
 * Compiled only where it can run: the asm exists under
 * __CUDA_ARCH_FEAT_SM90_ALL (nvcc -gencode arch=compute_90a,code=sm_90a);
 * elsewhere the wrappers are empty and the host never launches a kernel
 * that uses them (the wgmma variants' launches check compute capability
 * 9.0).
 * Under CUDA_EMU the emulator (dev/cuda/emu/emu_wgmma.cpp) runs them. */
#ifndef KERNELS_CUDA_WGMMA_CUH
#define KERNELS_CUDA_WGMMA_CUH

#include "kernels/cuda/cuda_common.cuh"

#if defined(CUDA_EMU) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WGMMA_OK 1
#else
#define WGMMA_OK 0
#endif

/* Byte offset of element (r, d) of an R x HSP tile in the core-matrix
 * layout above. */
template <int HSP> __host__ __device__ constexpr int wgmma_core_off(int r, int d)
{
    return r / 8 * HSP * 16 + d / 8 * 128 + r % 8 * 16 + d % 8 * 2;
}

/* A descriptor, no swizzle: p 16-byte aligned in shared memory, lbo and
 * sbo in bytes (multiples of 16). */
__device__ __forceinline__ uint64_t wgmma_desc(const void *p, uint32_t lbo, uint32_t sbo)
{
#ifdef CUDA_EMU
    const uint32_t a = emu_smem_addr(p);
#else
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
#endif
    return (uint64_t)((a & 0x3ffffu) >> 4) | (uint64_t)((lbo & 0x3ffffu) >> 4) << 16 |
           (uint64_t)((sbo & 0x3ffffu) >> 4) << 32;
}

__device__ __forceinline__ void wgmma_fence(void)
{
#ifdef CUDA_EMU
    emu_wgmma_fence();
#elif WGMMA_OK
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

/* fence.proxy.async.shared::cta: this thread's earlier shared-memory
 * writes (its cp.async copies included: they are generic-proxy writes)
 * made visible to the async proxy, in which wgmma.mma_async reads its
 * shared-memory operands (PTX ISA, wgmma "Async Proxy": without it the
 * product may read stale bytes). Each writer runs it after its
 * cp.async.wait_group and before the barrier that publishes the tile;
 * wgmma.fence orders registers only, not this. The completion of a wgmma
 * carries the fence the other way (async to generic) by itself. */
__device__ __forceinline__ void wgmma_proxy_fence(void)
{
#ifdef CUDA_EMU
    emu_fence_proxy_async();
#elif WGMMA_OK
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_commit(void)
{
#ifdef CUDA_EMU
    emu_wgmma_commit();
#elif WGMMA_OK
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

template <int N> __device__ __forceinline__ void wgmma_wait(void)
{
#ifdef CUDA_EMU
    emu_wgmma_wait(N);
#elif WGMMA_OK
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

/* After wgmma_wait: the registers "change" here, so the compiler keeps
 * every access of them after the wait (and the A registers alive until
 * it). R registers of type V. */
__device__ __forceinline__ void wgmma_hold1(float &x)
{
#if !defined(CUDA_EMU) && WGMMA_OK
    asm volatile("" : "+f"(x)::"memory");
#else
    (void)x;
#endif
}
__device__ __forceinline__ void wgmma_hold1(uint32_t &x)
{
#if !defined(CUDA_EMU) && WGMMA_OK
    asm volatile("" : "+r"(x)::"memory");
#else
    (void)x;
#endif
}
template <int R, typename V> __device__ __forceinline__ void wgmma_hold(V *r)
{
#pragma unroll
    for (int i = 0; i < R; i++) wgmma_hold1(r[i]);
}

/* d(64 x 64 over the warpgroup; this thread's 32) (+)= A . B, m64n64k16:
 * A in registers (a[0..3], mma.sync's A layout on the warp's 16 rows),
 * B by descriptor; TRANS_B 1: B N-major. scale_d 0: d = A B (d ignored). */
template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n64k16_rs(float d[8][4], const uint32_t a[4],
                                                   uint64_t bdesc, int scale_d)
{
#ifdef CUDA_EMU
    emu_wgmma_bf16(&d[0][0], 64, a, 0, 0, bdesc, TRANS_B, scale_d);
#elif WGMMA_OK
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %36, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
                 "%31}, {%32, %33, %34, %35}, %37, p, 1, 1, %38;\n}\n"
                 : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]),
                   "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]),
                   "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]),
                   "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
                   "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]),
                   "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),
                   "+f"(d[7][2]), "+f"(d[7][3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(scale_d), "l"(bdesc),
                   "n"(TRANS_B)
                 : "memory");
#else
    (void)d, (void)a, (void)bdesc, (void)scale_d;
#endif
}

#endif
