/* kernels/cuda/memory.cu — device memory, host transfers and the fp32 <->
 * working-dtype parameter crossings (ops.h: mem_*, sync, mem_info,
 * native_stream, params_upload, params_download).
 *
 * Transfers are stream-ordered and return when the host buffer may be
 * reused: uploads wait for the copy, downloads for the data. Their kind is
 * cudaMemcpyDefault (unified addressing tells from the pointers): with
 * --offload the model's optimizer state lives in the pinned host tier, and a
 * resume or a save moves it through these same calls. */
#include "cuda_common.cuh"

void *cuda_mem_alloc(Backend *be, size_t bytes)
{
    (void)be;
    void *p = NULL;
    if (bytes == 0) bytes = 1; /* a distinct, freeable pointer */
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        (void)cudaGetLastError(); /* an out-of-memory error is not sticky; clear it */
        return NULL;
    }
    return p;
}

void cuda_mem_free(Backend *be, void *p)
{
    if (!p) return;
    /* the stream may still use p */
    CUDA_CHECK(cudaStreamSynchronize(cuda_state(be)->stream));
    CUDA_CHECK(cudaFree(p));
}

void cuda_mem_zero(Backend *be, void *p, size_t bytes)
{
    if (bytes == 0) return;
    CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, cuda_state(be)->stream));
}

void cuda_mem_upload(Backend *be, void *dst, const void *host, size_t bytes)
{
    if (bytes == 0) return;
    CudaState *st = cuda_state(be);
    CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyDefault, st->stream));
    CUDA_CHECK(cudaStreamSynchronize(st->stream));
}

void cuda_mem_download(Backend *be, void *host, const void *src, size_t bytes)
{
    if (bytes == 0) return;
    CudaState *st = cuda_state(be);
    CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDefault, st->stream));
    CUDA_CHECK(cudaStreamSynchronize(st->stream));
}

void cuda_sync(Backend *be)
{
    CUDA_CHECK(cudaStreamSynchronize(cuda_state(be)->stream));
}

void *cuda_native_stream(Backend *be) { return (void *)cuda_state(be)->stream; }

int cuda_mem_info(Backend *be, size_t *free_bytes, size_t *total_bytes)
{
    (void)be;
    size_t f = 0, t = 0;
    CUDA_CHECK(cudaMemGetInfo(&f, &t));
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
    return 0;
}

/* ---- parameters: fp32 on the host, T on the device ---- */

template <typename Dst, typename Src>
__global__ void convert_kernel(Dst *dst, const Src *src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = from_f<Dst>(to_f(src[i]));
}

template <typename Dst, typename Src>
static void convert(CudaState *st, Dst *dst, const Src *src, size_t n)
{
    if (n == 0) return;
    auto kern = convert_kernel<Dst, Src>;
    LAUNCH(kern, elementwise_grid(n, 256), 256, 0, st->stream, dst, src, n);
}

void cuda_params_upload(Backend *be, void *params, float *master, const float *host, size_t n)
{
    CudaState *st = cuda_state(be);
    size_t bytes = n * sizeof(float);
    if (!st->bf16) {
        cuda_mem_upload(be, params, host, bytes);
        if (master) cuda_mem_upload(be, master, host, bytes);
        return;
    }
    bf16 *p = (bf16 *)params;
    if (master) { /* the master is the truth; the working copy is its rounding */
        cuda_mem_upload(be, master, host, bytes);
        convert(st, p, master, n);
        return;
    }
    /* no master: stage fp32 through scratch, a chunk at a time */
    size_t chunk = CUDA_SCRATCH_BYTES / sizeof(float);
    float *stage = (float *)st->scratch;
    for (size_t off = 0; off < n; off += chunk) {
        size_t k = n - off < chunk ? n - off : chunk;
        cuda_mem_upload(be, stage, host + off, k * sizeof(float));
        convert(st, p + off, stage, k);
    }
    CUDA_CHECK(cudaStreamSynchronize(st->stream));
}

void cuda_params_download(Backend *be, float *host, const void *params, const float *master,
                          size_t n)
{
    CudaState *st = cuda_state(be);
    if (master || !st->bf16) {
        cuda_mem_download(be, host, master ? (const void *)master : params, n * sizeof(float));
        return;
    }
    size_t chunk = CUDA_SCRATCH_BYTES / sizeof(float);
    float *stage = (float *)st->scratch;
    const bf16 *p = (const bf16 *)params;
    for (size_t off = 0; off < n; off += chunk) {
        size_t k = n - off < chunk ? n - off : chunk;
        convert(st, stage, p + off, k);
        cuda_mem_download(be, host + off, stage, k * sizeof(float));
    }
}
