/* dev/cuda/emu/emu.h — a CPU emulator for the subset of CUDA that
 * kernels/cuda/ uses, so its hand-written kernels run (slowly) without a GPU.
 *
 * Owns: the emulated runtime API (memory is host memory, streams are
 * synchronous), the SIMT model (each CUDA thread is a fiber; blocks run one
 * after another), __syncthreads/__syncwarp/shuffles as fiber barriers, bf16,
 * mma.sync m16n8k16 (bf16) from its per-lane register layout, ldmatrix,
 * wgmma m64nNk16 (bf16; emu_wgmma.cpp), cp.async (copies that land at the
 * issuing thread's wait_group) and ex2.approx.ftz.
 *
 * What it checks beyond the arithmetic: a barrier that not every live thread
 * of the block (or warp) reaches is reported and aborts; device memory
 * and dynamic shared memory start as NaN bytes (the latter at every block;
 * static __shared__ arrays keep the previous block's contents); each warp runs a
 * whole phase between two __syncthreads before the next warp starts, and
 * lanes run one after another between warp barriers, in an order chosen by
 * EMU_ORDER (fwd, rev or a seeded shuffle "rand"), so a read of data another
 * thread writes in the same phase (a missing barrier) gives a different
 * answer in fwd or in rev order;
 * an emulated mma.sync reads every lane's registers at a warp barrier, so
 * a lane whose fragment is wrong corrupts the result; a cp.async copy lands
 * only at the issuing thread's wait_group, so a tile read before its wait
 * (and barrier) is NaN. It does not model the
 * memory system (coalescing, bank conflicts, caches) or timing, and cuBLASLt
 * is replaced by a plain product (emu_gemm.cpp).
 *
 * Only compiled with -DCUDA_EMU by g++ (see dev/cuda/README.md). */
#ifndef TESTS_CUDA_EMU_H
#define TESTS_CUDA_EMU_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <functional>
#include <type_traits>

/* ---- language ---- */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static /* blocks run one at a time, so a static is per block */
#define __align__(n) alignas(n)
#define DYN_SMEM(name) unsigned char *name = emu_dyn_smem()

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

struct EmuThread; /* one fiber */
extern EmuThread *emu_cur;
extern dim3 emu_block_idx, emu_block_dim, emu_grid_dim;
const dim3 &emu_thread_idx(void);
#define threadIdx (emu_thread_idx())
#define blockIdx (emu_block_idx)
#define blockDim (emu_block_dim)
#define gridDim (emu_grid_dim)

unsigned char *emu_dyn_smem(void);
/* kern identifies the kernel (its address) for the shared-memory opt-in check:
 * over 48 KiB of dynamic shared memory needs cudaFuncSetAttribute first. */
void emu_launch(const void *kern, dim3 grid, dim3 block, size_t smem,
                const std::function<void()> &body);
template <typename K> inline const void *emu_kernel_key(K k)
{
    return reinterpret_cast<const void *>(k);
}

/* barriers */
void emu_syncthreads(void);
void emu_syncwarp(void);
inline void __syncthreads(void) { emu_syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    (void)mask;
    emu_syncwarp();
}

/* shuffles: deposit, warp barrier, read, warp barrier */
void emu_shfl_put(double v);
double emu_shfl_get(int src_lane);
int emu_lane(void);
template <typename V> inline V __shfl_xor_sync(unsigned mask, V v, int lane_mask)
{
    (void)mask;
    emu_shfl_put((double)v);
    emu_syncwarp();
    double r = emu_shfl_get(emu_lane() ^ lane_mask);
    emu_syncwarp();
    return (V)r;
}

/* ---- bf16 ---- */
struct __nv_bfloat16 {
    uint16_t bits;
};
inline float __bfloat162float(__nv_bfloat16 b)
{
    uint32_t u = (uint32_t)b.bits << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
inline __nv_bfloat16 __float2bfloat16(float f) /* round to nearest even */
{
    uint32_t u;
    memcpy(&u, &f, 4);
    __nv_bfloat16 b;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        b.bits = 0x7fc0;
        return b;
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    b.bits = (uint16_t)(u >> 16);
    return b;
}

/* What the hardware requires of a load or store of `bytes` (4, 8, 16) at
 * once and a CPU would not notice: an address that is a multiple of it.
 * Aborts, naming `what`, otherwise. */
void emu_align_check(const void *p, size_t bytes, const char *what);

/* ---- mma.sync.m16n8k16.row.col.f32.bf16.bf16.f32 (kernels/cuda/mma.cuh) ----
 * d += A(16x16) . B(16x8), every operand in the PTX ISA's per-lane fragment
 * layout: each lane deposits its registers, the warp meets, each lane forms
 * its four outputs from all 32 lanes' registers, the warp meets again. Needs
 * the whole warp, as the instruction does. */
void emu_mma_bf16_16816(float d[4], const uint32_t a[4], const uint32_t b[2]);

/* ---- ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16 (kernels/cuda/mma.cuh) ----
 * Lane l deposits the address of row l % 8 of matrix l / 8 (16 bytes,
 * 16-byte aligned), the warp meets, and register i of lane l (g = l / 4,
 * t = l % 4) gets M_i[g][2t..2t+1], or M_i[2t][g], M_i[2t+1][g] with trans,
 * read through the other lanes' addresses; the warp meets again. */
void emu_ldmatrix_x4(uint32_t r[4], const void *p, bool trans);

/* ---- cp.async (kernels/cuda/async_copy.cuh) ----
 * cp.async.{ca,cg}.shared.global [dst], [src], size, src_size copies `size`
 * bytes (4, 8 or 16; both addresses aligned to it, dst in the block's
 * dynamic shared memory) of which the first src_size come from src and the
 * rest are zeros. The hardware may land the copy at any time before the
 * issuing thread's cp.async.wait_group says it is complete, so the emulator
 * takes the latest moment: the destination turns to NaN bytes at issue, and
 * the copy is done when that thread's wait_group retires its group. A read
 * of the tile before the wait (or by another thread before the barrier that
 * follows the waits) sees NaN; a copy issued into a buffer that another warp
 * still reads poisons what that warp reads. A thread that ends with copies
 * outstanding aborts. */
void emu_cp_async(void *dst, const void *src, int size, int src_size);
void emu_cp_async_commit(void);     /* cp.async.commit_group */
void emu_cp_async_wait(int pending); /* cp.async.wait_group pending */
/* fence.proxy.async.shared::cta. cp.async writes shared memory in the
 * generic proxy; wgmma.mma_async reads it in the async proxy, and the PTX
 * ISA asks for an async proxy fence between the two. The emulator keeps,
 * per byte of dynamic shared memory, whether a cp.async landed there and
 * its issuing thread has not run this fence since; a wgmma that reads
 * such a byte aborts. (The thread's fence must come before the barrier
 * that publishes the tile: placed after it, the reading warp runs first
 * in one of EMU_ORDER's orders.) */
void emu_fence_proxy_async(void);
bool emu_smem_unfenced(const void *p); /* for emu_wgmma.cpp */

/* ---- wgmma (sm_90a warpgroup MMA; dev/cuda/wgmma.cuh, emu_wgmma.cpp) ----
 * wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16: D(64 x N, fp32)
 * (+)= A(64 x 16) . B(16 x N) over the 128 threads of a warpgroup (4
 * consecutive warps, the first a multiple of 4). D: N/2 floats per thread
 * (d[i]: row 16 (warp % 4) + lane/4 + 8 ((i/2) % 2), column 8 (i/4) +
 * 2 (lane % 4) + i % 2). A: four registers in mma.sync's A layout on the
 * warp's 16 rows (a != NULL), or shared memory by the descriptor adesc
 * (a == NULL; trans_a 1: M-major). B: shared memory by bdesc (trans_b 1:
 * N-major). scale_d 0: D = A B. The descriptor (bits 0-13 start, 16-29
 * leading and 32-45 stride byte offsets, all >> 4; 62-63 swizzle: 0 none,
 * 1 128B, 2 64B, 3 32B) is decoded as the PTX ISA's canonical layouts
 * (emu_wgmma.cpp). Results land at the wait_group that retires the group
 * (the accumulators hold NaN until then); shared memory and A registers an
 * in-flight wgmma reads must not change before that wait, nor the
 * accumulators be written (abort); an mma_async needs a wgmma.fence since
 * the thread's start or its last wait (abort); every thread of a
 * warpgroup must issue the same number (checked at block barriers). */
void emu_wgmma_fence(void);
void emu_wgmma_bf16(float *d, int N, const uint32_t *a, uint64_t adesc, int trans_a,
                    uint64_t bdesc, int trans_b, int scale_d);
void emu_wgmma_commit(void);
void emu_wgmma_wait(int pending);
/* __cvta_generic_to_shared: offset in the block's dynamic shared memory
 * (abort for any other pointer) */
uint32_t emu_smem_addr(const void *p);
/* emulator internals shared by emu.cpp and emu_wgmma.cpp */
[[noreturn]] void emu_fail(const char *what);
int emu_warp(void);
size_t emu_dyn_smem_size(void);
void emu_wgmma_block_start(size_t nthreads); /* each block's start */
void emu_wgmma_block_barrier(void);          /* every block barrier and the block's end */
void emu_wgmma_thread_end(void);             /* a thread's end: nothing in flight */

/* ex2.approx.ftz.f32: 2^x with subnormal inputs and results flushed to
 * zero (of the input's sign for inputs; +0 for results). The hardware's
 * MUFU.EX2 is accurate to about 2 ulp; the emulator uses exp2f. */
inline float emu_ex2_approx_ftz(float x)
{
    if (fpclassify(x) == FP_SUBNORMAL) x = 0.0f;
    const float y = exp2f(x);
    return fpclassify(y) == FP_SUBNORMAL ? 0.0f : y;
}

/* ---- kernels/cuda/ptx.cuh's instructions, under the names the kernels
 * call in either build (cuda_common.cuh includes ptx.cuh on the GPU build
 * only) ---- */
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.bits; }
template <int SIZE> inline void ptx_cp_async(void *dst, const void *src, int src_bytes)
{
    emu_cp_async(dst, src, SIZE, src_bytes);
}
inline void ptx_cp_async_commit(void) { emu_cp_async_commit(); }
template <int N> inline void ptx_cp_async_wait(void) { emu_cp_async_wait(N); }
inline void ptx_mma_bf16_16816(float d[4], const uint32_t a[4], const uint32_t b[2])
{
    emu_mma_bf16_16816(d, a, b);
}
inline void ptx_ldmatrix_x4(uint32_t r[4], const void *p, bool trans)
{
    emu_ldmatrix_x4(r, p, trans);
}
inline float ptx_bf16_elem(const __nv_bfloat16 *v, int u) { return __bfloat162float(v[u]); }
inline float ptx_ex2_approx_ftz(float x) { return emu_ex2_approx_ftz(x); }

/* ---- math missing from libm ---- */
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
/* the rounded single operations nvcc never fuses; the emulator build has no
 * -mfma, so g++ never fuses either */
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }

/* ---- runtime API ---- */
typedef enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorNoDevice = 100,
} cudaError_t;
typedef void *cudaStream_t;
typedef void *cudaEvent_t;
enum cudaMemcpyKind {
    cudaMemcpyHostToHost,
    cudaMemcpyHostToDevice,
    cudaMemcpyDeviceToHost,
    cudaMemcpyDeviceToDevice,
    cudaMemcpyDefault
};
enum cudaDeviceAttr {
    cudaDevAttrComputeCapabilityMajor,
    cudaDevAttrComputeCapabilityMinor,
    cudaDevAttrMultiProcessorCount,
    cudaDevAttrMaxSharedMemoryPerBlockOptin,
    cudaDevAttrMaxGridDimY,
    cudaDevAttrMaxGridDimZ
};
enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize,
    cudaFuncAttributePreferredSharedMemoryCarveout
};
enum cudaSharedCarveout { cudaSharedmemCarveoutDefault = -1, cudaSharedmemCarveoutMaxShared = 100 };
/* the fields of cudaDeviceProp the backend reads */
struct cudaDeviceProp {
    char name[256];
    int major, minor, multiProcessorCount;
};
#define cudaStreamNonBlocking 1u
#define cudaEventDisableTiming 2u
#define cudaHostAllocDefault 0u
typedef void (*cudaHostFn_t)(void *user_data);

const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);
cudaError_t cudaGetLastError(void);
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaGetDevice(int *d);
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int d);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaFree(void *p);
cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind k,
                            cudaStream_t s);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
/* Streams and events (emu.cpp): each stream is a queue of work (copies,
 * memsets, host functions, event records and waits) that runs at the
 * latest moment CUDA allows (EMU_ORDER=fwd, the default: when a kernel is
 * launched on the stream, the stream or device is synchronised, or a wait
 * needs an event) or the earliest (EMU_ORDER=rev: at once, as far as the
 * waits allow). Kernels run at their launch, after their stream's queue. A
 * host function that calls the runtime aborts. */
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *user_data);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void *p);
void emu_stream_drain(cudaStream_t s); /* runs s's queue to its end (emu_launch) */
/* true when [p, p + bytes) lies inside one live cudaMalloc allocation (its
 * size as asked, not as rounded): the emulated NCCL's bounds check. */
bool emu_device_span(const void *p, size_t bytes);
/* true when work enqueued on s now is ordered after every kernel launched so
 * far on every other stream (s waited, through events, for records made
 * after them, or the host synchronised with them); else false with why. The
 * emulator runs kernels at their launch, so a missing wait for one never
 * shows in the data: the emulated NCCL asks this instead (its collectives
 * read what the compute stream's kernels wrote). */
bool emu_stream_ordered(cudaStream_t s, char *why, size_t len);
cudaError_t emu_func_set_attribute(const void *kern, cudaFuncAttribute a, int v);
template <typename K> inline cudaError_t cudaFuncSetAttribute(K kern, cudaFuncAttribute a, int v)
{
    return emu_func_set_attribute(emu_kernel_key(kern), a, v);
}
template <typename V> inline cudaError_t cudaMalloc(V **p, size_t bytes)
{
    return cudaMalloc((void **)p, bytes);
}

#endif
