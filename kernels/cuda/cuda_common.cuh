/* kernels/cuda/cuda_common.cuh — private to kernels/cuda/.
 *
 * Owns: the CUDA backend's state (CudaState), the error-check macros, the
 * element-type helpers (fp32 / bf16), warp reductions, the launch macro, and
 * the interfaces between the .cu files of this folder (one per op family).
 *
 * Element types: every op is a template over the activation type T (float or
 * __nv_bfloat16); all arithmetic is fp32, values are rounded to T (round to
 * nearest even) only when stored. The op-table entry points (ops.h) dispatch
 * on CudaState.bf16.
 *
 * Memory the backend owns besides what the model allocates (fixed, allocated
 * once at open, reported by cuda_backend_fixed_bytes()):
 *   workspace  CUDA_LT_WORKSPACE_BYTES, for cuBLASLt only;
 *   scratch    CUDA_SCRATCH_BYTES, for this folder's multi-pass reductions
 *              (per-block partial sums) and parameter staging. Ops run in
 *              stream order, so each op may use all of it between its own
 *              launches; nothing in it lives across ops.
 *
 * CUDA_EMU: the same sources compile with g++ against dev/cuda/emu/emu.h, a
 * CPU emulator of the few CUDA features used here, so CI (no GPU) can run
 * the hand-written kernels (dev/cuda/README.md). That is why launches go
 * through LAUNCH() and dynamic shared memory through DYN_SMEM(). The
 * emulator build puts its folder on the include path (-Idev/cuda/emu), so
 * this layer names no test path. */
#ifndef KERNELS_CUDA_CUDA_COMMON_CUH
#define KERNELS_CUDA_CUDA_COMMON_CUH

#ifdef CUDA_EMU
#include <emu.h> /* dev/cuda/emu/, on the emulator build's include path; it
                    defines ptx.cuh's instructions too */
#define CUDA_WIDE_BLOCK 256
#else
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "ptx.cuh" /* the inline-PTX instructions */
#define CUDA_WIDE_BLOCK 1024
#endif
/* CUDA_WIDE_BLOCK: the widest block a kernel sized by it takes (head.cu):
 * 1024 threads on a GPU; 256 on the emulator, one fiber per thread, where
 * such a kernel's paths depend on the count only through its tile size
 * and run 4x faster. */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <type_traits>

extern "C" {
#include "kernels/backend.h"
#include "kernels/ops.h"
}

typedef __nv_bfloat16 bf16;

#define CUDA_LT_WORKSPACE_BYTES ((size_t)32 << 20) /* cuBLASLt's advice for Hopper */
#define CUDA_SCRATCH_BYTES ((size_t)16 << 20)

/* ---- error checks: name the call, the file and the line, then exit ---- */
static inline void cuda_check_(cudaError_t e, const char *call, const char *file, int line)
{
    if (e == cudaSuccess) return;
    fprintf(stderr, "cuda error: %s failed: %s (%s) at %s:%d\n", call, cudaGetErrorName(e),
            cudaGetErrorString(e), file, line);
    exit(1);
}
#define CUDA_CHECK(call) cuda_check_((call), #call, __FILE__, __LINE__)

/* A fault the op cannot run with (unsupported shape, scratch too small). */
#define CUDA_FATAL(...)                                                                        \
    do {                                                                                       \
        fprintf(stderr, "cuda backend: ");                                                     \
        fprintf(stderr, __VA_ARGS__);                                                          \
        fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__);                                     \
        exit(1);                                                                               \
    } while (0)

/* LAUNCH(kern, grid, block, smem_bytes, stream, args...): kern is a plain
 * identifier (use a local function pointer for multi-parameter templates).
 * The launch's own error (bad configuration) is checked at once. */
#ifdef CUDA_EMU
#define LAUNCH(kern, grid, block, smem, stream, ...)                                           \
    (emu_stream_drain(stream), /* the kernel starts after its stream's queue */                \
     emu_launch(emu_kernel_key(kern), dim3(grid), dim3(block), (size_t)(smem),                \
                [&]() { kern(__VA_ARGS__); }))
#else
#define LAUNCH(kern, grid, block, smem, stream, ...)                                           \
    do {                                                                                       \
        kern<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__);                              \
        CUDA_CHECK(cudaGetLastError());                                                        \
    } while (0)
#endif

/* Dynamic shared memory, 128-byte aligned (16-byte vector accesses need 16). */
#ifndef CUDA_EMU
#define DYN_SMEM(name) extern __shared__ __align__(128) unsigned char name[]
#endif

/* ---- backend state ---- */
struct GemmCache; /* gemm.cu */

typedef struct CudaState {
    int bf16;              /* 1: activations/params bf16 (+ fp32 master); 0: fp32 */
    int device;
    int num_sms;
    int cc;                /* compute capability, 10 major + minor (90: H100/H200) */
    size_t smem_optin;     /* max dynamic shared memory per block, bytes */
    int max_grid_y;        /* max gridDim.y and gridDim.z: 65535 on every GPU so far */
    int max_grid_z;
    cudaStream_t stream;   /* every op runs on it, in order */
    /* the host tier (host_tier.cu): its copies and host AdamWs run in order on
     * copy_stream; compute_ev orders a copy after the ops before it, copy_ev[e]
     * is the copy engine's event e (ops.h copy_async, event_wait) */
    cudaStream_t copy_stream;
    cudaEvent_t compute_ev;
    cudaEvent_t copy_ev[OPS_COPY_EVENTS];
    void *lt;              /* cublasLtHandle_t (void here so emu builds need no cuBLASLt) */
    void *workspace;       /* CUDA_LT_WORKSPACE_BYTES, cuBLASLt's */
    void *scratch;         /* CUDA_SCRATCH_BYTES, see the top of this file */
    struct GemmCache *gemm;
    const Backend *owner;  /* the Backend holding this state (its profile: --profile-ops) */
    /* switches read from the environment at open (backend.cu), 0 or 1 */
    int fuse_gelu;         /* TRAIN_GPT_FUSE_GELU: GELU in cuBLASLt's epilogues (default 0) */
    int gemm_tune;         /* TRAIN_GPT_GEMM_TUNE: time the heuristic's candidates (default 1) */
    int gemm_verbose;      /* TRAIN_GPT_GEMM_VERBOSE: print each algorithm choice (default 0) */
} CudaState;

static inline CudaState *cuda_state(Backend *be) { return (CudaState *)be->state; }

/* ---- element types ---- */
__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(bf16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 from_f<bf16>(float x) { return __float2bfloat16(x); }

/* 2^x by the special-function unit: ex2.approx.ftz.f32, one MUFU.EX2,
 * subnormal inputs and results flushed to zero. exp2f would add a range
 * check and two multiplies for subnormal results; values that small are 0
 * in bf16 anyway, and the relative error (about 2^-22, PTX ISA) is far
 * inside the fp32 checks' 1e-5. The emulator flushes the same way
 * (emu_ex2_approx_ftz); 2^-inf = 0. Used by the cross-entropy (head.cu) and the bf16
 * attention (attention_mma*.cu), with the scale folded into one FFMA. */
__device__ __forceinline__ float exp2_approx(float x) { return ptx_ex2_approx_ftz(x); }

/* Reductions over a warp with an xor butterfly: every lane ends with the same
 * bits (each step adds the same two values, in either order). */
__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ double warp_sum_d(double v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* 16 bytes of T (8 bf16 or 4 floats), the unit of vectorised loads and
 * stores: one instruction moves what a warp of scalar accesses would move in
 * eight (bf16) or four. vec16_at(p) needs p 16-byte aligned; the emulator
 * checks it, as the GPU would fault. */
template <typename T> struct __align__(16) Vec16 {
    static constexpr int N = 16 / (int)sizeof(T);
    T v[N];
};
template <typename T> __device__ __forceinline__ Vec16<T> *vec16_at(T *p)
{
#ifdef CUDA_EMU
    emu_align_check(p, 16, "16-byte vector access");
#endif
    return (Vec16<T> *)p;
}
template <typename T> __device__ __forceinline__ const Vec16<T> *vec16_at(const T *p)
{
    return vec16_at((T *)p);
}
/* Host side: may accesses through p be Vec16s? (NULL counts as aligned.) */
static inline int aligned16(const void *p) { return (uintptr_t)p % 16 == 0; }

/* Row access of the norms (layernorm.cu, rmsnorm.cu). A row is walked in
 * pieces of V = Vec16<T>::N consecutive elements, lane l taking pieces l,
 * l+32, ...: with vec (C % V == 0 and every pointer 16-byte aligned, checked
 * on the host) a piece is one 16-byte access, otherwise V scalar ones, zero
 * past C. The arithmetic and its order are the same either way. */
template <typename T>
__device__ __forceinline__ void ln_load(float *dst, const T *p, int c, int C, int vec)
{
    constexpr int V = Vec16<T>::N;
    if (vec) {
        const Vec16<T> x = *vec16_at(p + c);
#pragma unroll
        for (int k = 0; k < V; k++) dst[k] = to_f(x.v[k]);
    } else {
#pragma unroll
        for (int k = 0; k < V; k++) dst[k] = c + k < C ? to_f(p[c + k]) : 0.0f;
    }
}

template <typename T>
__device__ __forceinline__ void ln_store(T *p, const float *src, int c, int C, int vec)
{
    constexpr int V = Vec16<T>::N;
    if (vec) {
        Vec16<T> o;
#pragma unroll
        for (int k = 0; k < V; k++) o.v[k] = from_f<T>(src[k]);
        *vec16_at(p + c) = o;
    } else {
#pragma unroll
        for (int k = 0; k < V; k++)
            if (c + k < C) p[c + k] = from_f<T>(src[k]);
    }
}

static inline unsigned ceil_div(size_t a, size_t b) { return (unsigned)((a + b - 1) / b); }

/* A size the checks shrink to reach a kernel's rarer paths at their small
 * shapes: under the emulator, EMU_<name> from the environment when it is a
 * positive number below dflt; dflt otherwise, and always on a GPU build,
 * which reads no environment here. */
static inline int cuda_test_param(const char *name, int dflt)
{
#ifdef CUDA_EMU
    char var[64];
    snprintf(var, sizeof var, "EMU_%s", name);
    const char *e = getenv(var);
    if (e && atoi(e) > 0 && atoi(e) < dflt) return atoi(e);
#endif
    (void)name;
    return dflt;
}

/* Grid for an elementwise kernel with a grid-stride loop: fixed by n alone
 * (never by the device) so results cannot depend on the GPU. */
static inline unsigned elementwise_grid(size_t n, int threads)
{
    size_t g = (n + threads - 1) / threads;
    if (g > 65535) g = 65535;
    return (unsigned)(g > 0 ? g : 1);
}

/* Rows per chunk for a column reduction over (N, C) whose per-chunk partials
 * (nbufs arrays of nchunks*C floats) live in the scratch. A function of N
 * and C only, so the summation order is fixed by the shape. */
static inline int colsum_chunk_rows(int N, int C, int nbufs)
{
    size_t max_chunks = CUDA_SCRATCH_BYTES / ((size_t)nbufs * C * sizeof(float));
    if (max_chunks < 1) CUDA_FATAL("column reduction: C = %d too wide for the scratch", C);
    if (max_chunks > 1024) max_chunks = 1024;
    size_t rows = 64;
    if (((size_t)N + rows - 1) / rows > max_chunks) rows = ((size_t)N + max_chunks - 1) / max_chunks;
    return (int)rows;
}

/* ---- interfaces between the files of this folder ---- */

/* gemm.cu (cuBLASLt). Column-major, as cuBLAS sees it:
 *   D(m,n) = op(A) . op(B) + beta * D (+ bias(m) broadcast over columns)
 * op(A) is m x k (A stored k x m when ta = GEMM_T, m x k when GEMM_N),
 * op(B) is k x n (B stored n x k when tb = GEMM_T). A and B have type
 * ab_bf16 ? bf16 : fp32; D and bias dd_bf16.
 * Compute and accumulation are fp32 (CUBLAS_COMPUTE_32F, no TF32). The
 * descriptors and the algorithm (timed among the heuristic's candidates,
 * gemm.cu) are made once per problem and cached. Enqueued on st->stream;
 * returns at once, except the first call of a problem, which times its
 * candidates (synchronously). */
enum { GEMM_N = 0, GEMM_T = 1 };
void cuda_gemm(CudaState *st, int ta, int tb, int m, int n, int k, const void *A, int lda,
               const void *B, int ldb, void *D, int ldd, int ab_bf16, int dd_bf16,
               const void *bias, float beta);
/* The same with an epilogue; aux is m x n in D's type, column-major with
 * leading dimension ldaux (a multiple of 8, >= m):
 *   GEMM_EPI_GELU_AUX: aux = op(A).op(B) + bias, D = gelu(op(A).op(B) + bias),
 *       GELU taken by cuBLASLt from the unrounded fp32 sum (which GELU it
 *       computes is established by check_kernels on a GPU); beta must be 0;
 *   GEMM_EPI_DGELU: D = (op(A).op(B)) * gelu'(aux); no bias, beta 0.
 * dev/cuda/emu/emu_gemm.cpp models both with the cpu backend's GELU. */
enum { GEMM_EPI_NONE = 0, GEMM_EPI_GELU_AUX = 1, GEMM_EPI_DGELU = 2 };
void cuda_gemm_epi(CudaState *st, int ta, int tb, int m, int n, int k, const void *A, int lda,
                   const void *B, int ldb, void *D, int ldd, int ab_bf16, int dd_bf16,
                   const void *bias, float beta, int epi, void *aux, int ldaux);
void cuda_gemm_init(CudaState *st);    /* at open */
void cuda_gemm_destroy(CudaState *st); /* at close */

/* ---- op entry points (the BackendOps table in backend.cu) ---- */
void *cuda_mem_alloc(Backend *be, size_t bytes);
void cuda_mem_free(Backend *be, void *p);
void cuda_mem_zero(Backend *be, void *p, size_t bytes);
void cuda_mem_upload(Backend *be, void *dst, const void *host, size_t bytes);
void cuda_mem_download(Backend *be, void *host, const void *src, size_t bytes);
void cuda_sync(Backend *be);
int cuda_mem_info(Backend *be, size_t *free_bytes, size_t *total_bytes);
void *cuda_native_stream(Backend *be);
void cuda_params_upload(Backend *be, void *params, float *master, const float *host, size_t n);
void cuda_params_download(Backend *be, float *host, const void *params, const float *master,
                          size_t n);
void cuda_encoder_forward(Backend *be, void *out, const int *tokens, const void *wte,
                          const void *wpe, int B, int T, int C);
void cuda_encoder_backward(Backend *be, void *dwte, void *dwpe, const void *dout,
                           const int *tokens, int B, int T, int C);
void cuda_layernorm_forward(Backend *be, void *out, float *mean, float *rstd, const void *inp,
                            const void *weight, const void *bias, int N, int C);
void cuda_layernorm_backward(Backend *be, void *dinp, void *dweight, void *dbias,
                             const void *dout, const void *inp, const void *weight,
                             const float *mean, const float *rstd, int N, int C);
void cuda_matmul_forward(Backend *be, void *out, const void *inp, const void *weight,
                         const void *bias, int N, int IC, int OC);
void cuda_matmul_backward(Backend *be, void *dinp, void *dweight, void *dbias, const void *dout,
                          const void *inp, const void *weight, int N, int IC, int OC);
/* KVH: ops.h's key/value heads (KVH < NH: grouped-query attention); one
 * that does not divide NH is fatal, naming the op. */
void cuda_attention_forward(Backend *be, void *out, float *lse, const void *qkv, int B, int T,
                            int C, int NH, int KVH);
void cuda_attention_backward(Backend *be, void *dqkv, const void *dout, const void *qkv,
                             const void *out, const float *lse, int B, int T, int C, int NH,
                             int KVH);
void cuda_attention_decode(Backend *be, void *out, void *kcache, void *vcache, const void *qkv,
                           int t, int maxT, int C, int NH, int KVH);
void cuda_rmsnorm_forward(Backend *be, void *out, float *rstd, const void *inp,
                          const void *weight, int N, int C, float eps);
void cuda_rmsnorm_backward(Backend *be, void *dinp, void *dweight, const void *dout,
                           const void *inp, const void *weight, const float *rstd, int N, int C);
void cuda_rope_forward(Backend *be, void *out, const void *inp, const float *table, int B, int T,
                       int C, int NH, int KVH);
void cuda_rope_backward(Backend *be, void *dinp, const void *dout, const float *table, int B,
                        int T, int C, int NH, int KVH);
void cuda_qknorm_forward(Backend *be, void *out, float *rstd, const void *inp, const void *wq,
                         const void *wk, int N, int C, int NH, int KVH, float eps);
void cuda_qknorm_backward(Backend *be, void *dinp, void *dwq, void *dwk, const void *dout,
                          const void *inp, const void *wq, const void *wk, const float *rstd,
                          int N, int C, int NH, int KVH);
void cuda_swiglu_forward(Backend *be, void *out, const void *inp, int N, int F);
void cuda_swiglu_backward(Backend *be, void *dinp, const void *inp, const void *dout, int N,
                          int F);
void cuda_gelu_forward(Backend *be, void *out, const void *inp, size_t n);
void cuda_gelu_backward(Backend *be, void *dinp, const void *inp, const void *dout, size_t n);
void cuda_residual_forward(Backend *be, void *out, const void *a, const void *b, size_t n);
void cuda_residual_layernorm_forward(Backend *be, void *res, void *out, float *mean, float *rstd,
                                     const void *a, const void *b, const void *weight,
                                     const void *bias, int N, int C);
void cuda_matmul_gelu_forward(Backend *be, void *out, void *pre, const void *inp,
                              const void *weight, const void *bias, int N, int IC, int OC);
void cuda_matmul_backward_gelu(Backend *be, void *dinp, void *dweight, void *dbias,
                               const void *dout, const void *inp, const void *weight,
                               const void *pre, int N, int IC, int OC);
void cuda_head_forward_backward(Backend *be, float *losses, void *dx, void *dwte, const void *x,
                                const void *wte, const int *targets, void *chunk_buf, int N,
                                int C, int V, int Vp, int chunk, float dloss);
void cuda_head_logits(Backend *be, float *logits, const void *x, const void *wte, int n, int C,
                      int Vp);
void *cuda_host_alloc(Backend *be, size_t bytes);
void cuda_host_free(Backend *be, void *p);
void cuda_copy_async(Backend *be, void *dst, const void *src, size_t bytes, int ev);
void cuda_event_wait(Backend *be, int ev);
void cuda_host_adamw_update(Backend *be, void *params, float *master, const void *grads,
                            float *m, float *v, size_t n, float lr, float beta1, float beta2,
                            float eps, float weight_decay, float grad_scale, int t);
double cuda_grad_norm_sq(Backend *be, const void *grads, size_t n);
void cuda_adamw_update(Backend *be, void *params, float *master, const void *grads, float *m,
                       float *v, size_t n, float lr, float beta1, float beta2, float eps,
                       float weight_decay, float grad_scale, int t);

#endif
