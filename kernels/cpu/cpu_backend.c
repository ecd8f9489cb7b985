/* kernels/cpu/cpu_backend.c — the cpu backend: host memory and the op table.
 *
 * fp32 activations and parameters, no separate master copy; the host tier is
 * host memory too, with its copies on the copy engine's thread (copy_engine.c). The thread
 * count is fixed at open; results are bitwise the same at any count (the
 * products: gemm_tiles.c). */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_ops.h"
#include "kernels/backend.h"

static void *cpu_mem_alloc(Backend *be, size_t bytes)
{
    /* 256-byte aligned like cudaMalloc (model/arena.h's ARENA_ALIGN); pages
     * are committed lazily by the OS, on first touch. */
    size_t rounded = (bytes + 255) / 256 * 256;
    return aligned_alloc(256, rounded ? rounded : 256);
}
static void cpu_mem_free(Backend *be, void *p) { free(p); }
static void cpu_mem_zero(Backend *be, void *p, size_t bytes) { memset(p, 0, bytes); }
static void cpu_mem_copy(Backend *be, void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
}
static void cpu_sync(Backend *be) {}
static int cpu_mem_info(Backend *be, size_t *free_bytes, size_t *total_bytes) { return -1; }

static void cpu_params_upload(Backend *be, void *params, float *master, const float *host, size_t n)
{
    memcpy(params, host, n * sizeof(float));
    if (master) memcpy(master, host, n * sizeof(float));
}
static void cpu_params_download(Backend *be, float *host, const void *params, const float *master,
                                size_t n)
{
    memcpy(host, master ? master : params, n * sizeof(float));
}

static const BackendOps cpu_ops = {
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .mem_zero = cpu_mem_zero,
    .mem_upload = cpu_mem_copy,
    .mem_download = cpu_mem_copy,
    .sync = cpu_sync,
    .mem_info = cpu_mem_info,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_host_free,
    .copy_async = cpu_copy_async,
    .event_wait = cpu_event_wait,
    .params_upload = cpu_params_upload,
    .params_download = cpu_params_download,
    .encoder_forward = cpu_encoder_forward,
    .encoder_backward = cpu_encoder_backward,
    .layernorm_forward = cpu_layernorm_forward,
    .layernorm_backward = cpu_layernorm_backward,
    .matmul_forward = cpu_matmul_forward,
    .matmul_backward = cpu_matmul_backward,
    .matmul_prepare = cpu_matmul_prepare,
    .attention_forward = cpu_attention_forward,
    .attention_backward = cpu_attention_backward,
    .attention_decode = cpu_attention_decode,
    .attention_scratch_bytes = cpu_attention_scratch_bytes,
    .attention_scratch = cpu_attention_scratch,
    .rmsnorm_forward = cpu_rmsnorm_forward,
    .rmsnorm_backward = cpu_rmsnorm_backward,
    .rope_forward = cpu_rope_forward,
    .rope_backward = cpu_rope_backward,
    .swiglu_forward = cpu_swiglu_forward,
    .swiglu_backward = cpu_swiglu_backward,
    .qknorm_forward = cpu_qknorm_forward,
    .qknorm_backward = cpu_qknorm_backward,
    .gelu_forward = cpu_gelu_forward,
    .gelu_backward = cpu_gelu_backward,
    .residual_forward = cpu_residual_forward,
    .residual_layernorm_forward = cpu_residual_layernorm_forward,
    .matmul_gelu_forward = cpu_matmul_gelu_forward,
    .matmul_backward_gelu = cpu_matmul_backward_gelu,
    .head_forward_backward = cpu_head_forward_backward,
    .head_logits = cpu_head_logits,
    .grad_norm_sq = cpu_grad_norm_sq,
    .adamw_update = cpu_adamw_update,
    .host_adamw_update = cpu_host_adamw_update, /* on the copy thread (copy_engine.c) */
};

Backend *cpu_backend_open(int threads, char *err, size_t err_len)
{
    if (threads < 0 || threads > 1024) {
        snprintf(err, err_len, "--threads: must be in 0..1024 (got %d)", threads);
        return NULL;
    }
    Backend *be = calloc(1, sizeof *be);
    if (!be) {
        snprintf(err, err_len, "cpu backend: out of host memory");
        return NULL;
    }
    /* Buffers of 64 KiB or more are mapped apart from the heap and unmapped
     * when freed. glibc's default raises that threshold to the size of the
     * last mapped buffer freed (up to 32 MiB), after which freed buffers of
     * the op-cost measurement stayed resident beside the arenas (34 MiB at
     * L=4 C=128 V=50257): a peak no plan had. */
    mallopt(M_MMAP_THRESHOLD, 64 << 10);
    int team = threads > 0 ? threads : omp_get_max_threads();
    /* OpenBLAS runs each call on the calling thread (gemm_tiles.c): the
     * products are cut into tiles spread over OpenMP, whose bits do not
     * depend on the thread count (OpenBLAS's own split does:
     * dev/notes/openblas-threads.md). One BLAS thread also hands its other
     * threads' buffers back to its pool, for the tiles' concurrent calls.
     * In OpenBLAS's OpenMP build this sets OpenMP's count to 1 too, so
     * ours is set after it. */
    openblas_set_num_threads(1);
    omp_set_num_threads(team);
    be->name = "cpu";
    be->ops = &cpu_ops;
    be->act_bytes = 4;
    be->par_bytes = 4;
    be->has_master = 0;
    CpuState *st = calloc(1, sizeof *st);
    if (!st || !(st->copy = cpu_copy_engine_new())) {
        free(st);
        free(be);
        snprintf(err, err_len, "cpu backend: out of host memory");
        return NULL;
    }
    be->state = st;
    return be;
}

void cpu_backend_close(Backend *be)
{
    if (be) {
        CpuState *st = be->state;
        cpu_copy_engine_free(st->copy);
        free(st);
    }
    free(be);
}
