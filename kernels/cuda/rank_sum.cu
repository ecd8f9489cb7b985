/* kernels/cuda/rank_sum.cu — the rank-order sum of the ranks' copies of a
 * gradient piece (kernels/rank_sum.h), for distributed/dist_nccl.c.
 *
 * One thread an element, over a grid-stride loop whose grid is fixed by n
 * (elementwise_grid): each element's sum is the same expression whatever
 * the grid, ((x_0 + x_1) + x_2) + ..., the order the MPI path adds in
 * (distributed/dist_mpi.c), so fp32 sums are bit for bit that loop's.
 *
 * bf16: the W copies are added in fp32 and rounded to bf16 once, at the
 * end: one rounding error in the sum instead of W - 1 (NCCL's ring rounds
 * each partial sum to bf16, so its error grows with the world size), at no
 * cost (the adds are fp32 in registers either way). The stages agree
 * whichever it were, since each element's sum is a function of its W
 * values taken in rank order; one rounding is the more exact. */
#include "cuda_common.cuh"

extern "C" {
#include "kernels/rank_sum.h"
}

template <typename T>
__global__ void rank_sum_kernel(T *out, const T *slots, size_t stride, size_t n, int world,
                                int rank)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float acc = to_f(rank == 0 ? out[i] : slots[i]);
        for (int q = 1; q < world; q++)
            acc += to_f(q == rank ? out[i] : slots[(size_t)q * stride + i]);
        out[i] = from_f<T>(acc);
    }
}

template <typename T>
static int launch(cudaStream_t s, void *out, const void *slots, size_t stride, size_t n,
                  int world, int rank)
{
    auto kern = rank_sum_kernel<T>;
    LAUNCH(kern, elementwise_grid(n, 256), 256, 0, s, (T *)out, (const T *)slots, stride, n,
           world, rank);
    return (int)cudaGetLastError();
}

extern "C" int cuda_rank_sum(void *stream, void *out, const void *slots, size_t stride,
                             size_t n, int world, int rank, int bf16)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (n == 0) {
#ifdef CUDA_EMU
        /* The emulator runs a stream's queue (here NCCL's grouped sends)
         * at a launch on it; every rank calls this at the same points, so
         * every rank runs its queue there, as a launch would, and none is
         * left waiting for a send another rank never ran. */
        emu_stream_drain(s);
#endif
        return (int)cudaSuccess;
    }
    return bf16 ? launch<__nv_bfloat16>(s, out, slots, stride, n, world, rank)
                : launch<float>(s, out, slots, stride, n, world, rank);
}
