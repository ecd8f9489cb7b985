/* kernels/cuda/async_copy.cuh — private to kernels/cuda/: cp.async, the
 * copy from global to shared memory that bypasses registers (sm_80+), and
 * its groups.
 *
 * A thread issues copies (cp_async), closes them into a group
 * (cp_async_commit), and later waits until at most N of its groups are
 * still in flight (cp_async_wait<N>). The copies are asynchronous to the
 * thread's own instructions, so three rules keep them correct:
 *   1. the data is this thread's only after its wait_group: every thread
 *      waits for its own copies, then __syncthreads() makes all of them
 *      visible to the block (wait first, then the barrier: a barrier alone
 *      orders instructions, not the copy engine's writes);
 *   2. a buffer is refilled only after a barrier that every reader of its
 *      previous contents has passed (a copy may land at once);
 *   3. the compiler must not move shared-memory reads across the copies,
 *      the waits or the barrier: every asm of these (ptx.cuh), and
 *      ldmatrix's, carries a "memory" clobber, and wait/commit are volatile.
 * The emulator (dev/cuda/emu) lands each copy at its thread's wait_group
 * and turns the destination to NaN at issue, so breaking rule 1 or 2 gives
 * NaN in the checker; rule 3 is about the real compiler and is only
 * checked on a GPU. */
#ifndef KERNELS_CUDA_ASYNC_COPY_CUH
#define KERNELS_CUDA_ASYNC_COPY_CUH

#include "cuda_common.cuh"

/* Copy SIZE bytes (4, 8 or 16) from global src to shared dst, both aligned
 * to SIZE; only the first src_bytes are read, the rest of dst is zeroed
 * (src_bytes = 0: a zero fill that reads nothing, src must still be a valid
 * address). 16-byte copies use .cg (L2 only: a tile is read once per block,
 * L1 would only evict); smaller ones must use .ca. */
template <int SIZE>
__device__ __forceinline__ void cp_async(void *dst, const void *src, int src_bytes)
{
    static_assert(SIZE == 4 || SIZE == 8 || SIZE == 16, "cp.async copies 4, 8 or 16 bytes");
    ptx_cp_async<SIZE>(dst, src, src_bytes);
}

/* Close the copies issued since the last commit into one group. */
__device__ __forceinline__ void cp_async_commit(void) { ptx_cp_async_commit(); }

/* Wait until at most N of this thread's committed groups are in flight. */
template <int N> __device__ __forceinline__ void cp_async_wait(void) { ptx_cp_async_wait<N>(); }

#endif
