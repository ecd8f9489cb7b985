/* kernels/rank_sum.h — the rank-order sum of the ranks' copies of a
 * gradient piece on the device (kernels/cuda/rank_sum.cu), for the NCCL
 * path's ordered reduce-scatter (distributed/dist_nccl.c; distributed/dist.h,
 * "Order of sums").
 *
 * Owns: that one kernel's entry point. It is not a backend op (ops.h): it
 * runs on the stream the caller names (NCCL's communication stream, where
 * the pieces arrive), not on the backend's compute stream, so that the
 * sums of --zero 0 overlap the backward as NCCL's all-reduce did. HAVE_CUDA
 * builds only. */
#ifndef KERNELS_RANK_SUM_H
#define KERNELS_RANK_SUM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[i] = ((x_0 + x_1) + x_2) + ... + x_{W-1} for i < n, element by
 * element, x_q being rank q's copy: x_rank is out[i] itself (in place),
 * any other x_q is slots[q * stride + i] (slot `rank` is not read).
 * Elements are fp32, or bf16 when bf16 != 0, then added in fp32 and
 * rounded once at the end. Enqueued on `stream` (a cudaStream_t); returns
 * the launch's cudaError_t (0: cudaSuccess), not waiting for it. n = 0
 * launches nothing; callers under NCCL call it at the same points on every
 * rank all the same (the CUDA emulator runs a stream's queued NCCL work
 * at a launch on it, dev/cuda/README.md). */
int cuda_rank_sum(void *stream, void *out, const void *slots, size_t stride, size_t n,
                  int world, int rank, int bf16);

#ifdef __cplusplus
}
#endif
#endif
