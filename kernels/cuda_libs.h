/* kernels/cuda_libs.h — cuBLASLt and NCCL, opened when first used.
 *
 * Owns: loading libcublasLt (the cuda backend's matrix products,
 * kernels/cuda/gemm.cu) and libnccl (distributed/dist_nccl.c) with
 * dlopen, and the tables of their functions. Linked into every program,
 * the two libraries cost each start about 0.4 CPU-s of static
 * initialisers and page faults before main (dev/notes/suite-speed.md),
 * also for --help, --plan and runs on the cpu backend; opened here, only
 * a run that makes a cuda backend (cuBLASLt) or NCCL ranks (NCCL) pays.
 *
 * Each table member has the type of the function it points to, taken
 * from the library's own header (CUDA_LIBS_TYPEOF), so a call with the
 * wrong arguments does not compile. The sonames are the ones the build
 * found in $(CUDA_HOME)/lib64 (the Makefile's CUDA_LIBS_*_SONAME).
 *
 * CUDA_EMU (build/train_gpt_emu, dev/cuda/README.md): no cuBLASLt (the
 * emulator replaces the products), and <nccl.h> is the emulator's
 * (dev/cuda/emu/nccl.h); dev/cuda/emu/emu_nccl.cpp defines
 * cuda_libs_nccl() there, its table the emulated NCCL's functions, linked
 * in rather than opened (they run on the emulator's own streams). */
#ifndef KERNELS_CUDA_LIBS_H
#define KERNELS_CUDA_LIBS_H
#ifdef HAVE_CUDA

#include <stddef.h>

#ifndef CUDA_EMU
#include <cublasLt.h>
#endif
#include <nccl.h> /* on the emulator's build: dev/cuda/emu/nccl.h */

#ifdef __cplusplus
#define CUDA_LIBS_TYPEOF(f) decltype(f)
extern "C" {
#else
#define CUDA_LIBS_TYPEOF(f) __typeof__(f)
#endif

/* X(prefix, name): the function prefix##name, as table member name. */
#define CUDA_LIBS_LT_FUNCS(X)                                                                  \
    X(cublasLt, Create)                                                                        \
    X(cublasLt, Destroy)                                                                       \
    X(cublasLt, GetStatusString)                                                               \
    X(cublasLt, Matmul)                                                                        \
    X(cublasLt, MatmulAlgoConfigGetAttribute)                                                  \
    X(cublasLt, MatmulAlgoGetHeuristic)                                                        \
    X(cublasLt, MatmulDescCreate)                                                              \
    X(cublasLt, MatmulDescDestroy)                                                             \
    X(cublasLt, MatmulDescSetAttribute)                                                        \
    X(cublasLt, MatmulPreferenceCreate)                                                        \
    X(cublasLt, MatmulPreferenceDestroy)                                                       \
    X(cublasLt, MatmulPreferenceSetAttribute)                                                  \
    X(cublasLt, MatrixLayoutCreate)                                                            \
    X(cublasLt, MatrixLayoutDestroy)

#define CUDA_LIBS_NCCL_FUNCS(X)                                                                \
    X(nccl, AllGather)                                                                         \
    X(nccl, AllReduce)                                                                         \
    X(nccl, Broadcast)                                                                         \
    X(nccl, CommDestroy)                                                                       \
    X(nccl, CommGetAsyncError)                                                                 \
    X(nccl, CommInitRank)                                                                      \
    X(nccl, GetErrorString)                                                                    \
    X(nccl, GetLastError)                                                                      \
    X(nccl, GetUniqueId)                                                                       \
    X(nccl, GroupEnd)                                                                          \
    X(nccl, GroupStart)                                                                        \
    X(nccl, Recv)                                                                              \
    X(nccl, Reduce)                                                                            \
    X(nccl, ReduceScatter)                                                                     \
    X(nccl, Send)

#define CUDA_LIBS_MEMBER(prefix, name) CUDA_LIBS_TYPEOF(prefix##name) *name;
#ifndef CUDA_EMU
typedef struct CudaLtApi {
    CUDA_LIBS_LT_FUNCS(CUDA_LIBS_MEMBER)
} CudaLtApi;
#endif
typedef struct CudaNcclApi {
    CUDA_LIBS_NCCL_FUNCS(CUDA_LIBS_MEMBER)
} CudaNcclApi;
#undef CUDA_LIBS_MEMBER

/* The first call opens the library (dlopen, RTLD_NOW: a missing
 * dependency fails here, not in a later call) and resolves every
 * function; later calls return the same table. NULL when it cannot, with
 * err saying which library or symbol and dlerror's reason (every later
 * call says the same). Called from the one host thread that makes the
 * backend or the communicator. The tables live until the process ends:
 * the libraries are never closed. */
#ifndef CUDA_EMU
const CudaLtApi *cuda_libs_lt(char *err, size_t err_len);
#endif
const CudaNcclApi *cuda_libs_nccl(char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
#endif /* HAVE_CUDA */
#endif
