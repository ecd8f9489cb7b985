/* dev/cuda/check_hang.cu — a kernel that never returns, for the hang
 * rehearsal of dev/gpu_check/gpu_check.sh (gpu_check_rehearsal.py): with
 * CHECK_KERNELS_TEST_HANG set, check_kernels launches it part-way through
 * its checks, and gpu_check's timeout must stop the process, keep the log
 * it wrote so far, and go on with the next sections.
 *
 * Built into the emulator's checker only (Makefile: EMU_SRC), never into
 * train_gpt, the backend library or the GPU checker: nothing a user runs
 * can spin. It spins on a flag in device memory that nothing sets; the
 * volatile read keeps the compiler from proving the loop endless. */
#include "kernels/cuda/cuda_common.cuh"

__global__ void check_hang_kernel(const volatile int *flag)
{
    while (*flag == 0) {
    }
}

extern "C" void check_hang_launch(void)
{
    int *flag = NULL;
    CUDA_CHECK(cudaMalloc(&flag, sizeof(int)));
    CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(int), 0));
    LAUNCH(check_hang_kernel, 1, 1, 0, 0, flag);
    CUDA_CHECK(cudaStreamSynchronize(0));
    CUDA_CHECK(cudaFree(flag)); /* not reached */
}
