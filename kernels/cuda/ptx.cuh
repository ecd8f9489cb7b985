/* kernels/cuda/ptx.cuh — private to kernels/cuda/: the device instructions
 * written in inline PTX, each behind a function, so that the kernels call
 * them by name: cp.async and its groups (async_copy.cuh says how they are
 * used), mma.sync m16n8k16 and ldmatrix (mma.cuh), and a bf16 unpacked by a
 * bit move (head.cu). cuda_common.cuh includes it on the GPU build only;
 * the emulator (dev/cuda/emu/emu.h) defines the same functions from the
 * PTX ISA's documented behaviour, so no kernel file says which build it is
 * in. Every asm that touches shared memory carries a "memory" clobber: the
 * compiler sees no shared-memory operand and must not move the access
 * across the stores, waits and barriers around it. */
#ifndef KERNELS_CUDA_PTX_CUH
#define KERNELS_CUDA_PTX_CUH

#include <cuda_bf16.h>
#include <stdint.h>

/* cp.async of SIZE bytes, src_bytes of them read, the rest zeroed; 16-byte
 * copies by .cg (L2 only), smaller ones by .ca (the only form they have). */
template <int SIZE>
__device__ __forceinline__ void ptx_cp_async(void *dst, const void *src, int src_bytes)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    if (SIZE == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                     "r"(src_bytes)
                     : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src),
                     "n"(SIZE), "r"(src_bytes)
                     : "memory");
}
__device__ __forceinline__ void ptx_cp_async_commit(void)
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void ptx_cp_async_wait(void)
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* 2^x by the special-function unit (MUFU.EX2), subnormals flushed */
__device__ __forceinline__ float ptx_ex2_approx_ftz(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* d += a . b, one m16n8k16 tile, fp32 accumulators, bf16 operands */
__device__ __forceinline__ void ptx_mma_bf16_16816(float d[4], const uint32_t a[4],
                                                   const uint32_t b[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16 from this lane's row p */
__device__ __forceinline__ void ptx_ldmatrix_x4(uint32_t r[4], const void *p, bool trans)
{
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    if (trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(a)
                     : "memory");
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(a)
                     : "memory");
}

/* Element u of bf16s v as fp32: its 16 bits moved into the high half of
 * the 32-bit word that holds it and its neighbour (one AND or SHL; volatile
 * so that the compiler keeps the pair packed rather than converting every
 * element up front, head.cu) */
__device__ __forceinline__ float ptx_bf16_elem(const __nv_bfloat16 *v, int u)
{
    const uint32_t w = reinterpret_cast<const uint32_t *>(v)[u / 2];
    uint32_t r;
    if (u & 1) asm volatile("and.b32 %0, %1, 0xffff0000;" : "=r"(r) : "r"(w));
    else asm volatile("shl.b32 %0, %1, 16;" : "=r"(r) : "r"(w));
    return __uint_as_float(r);
}

#endif
