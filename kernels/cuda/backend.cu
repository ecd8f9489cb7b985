/* kernels/cuda/backend.cu — opening and closing the CUDA backend, and its op
 * table. See kernels/backend.h for the contract and cuda_common.cuh for the
 * state it keeps. */
#include "cuda_common.cuh"

#include <string.h>

static const BackendOps *cuda_ops_table(void)
{
    static BackendOps ops;
    static int filled = 0;
    if (!filled) {
        ops.mem_alloc = cuda_mem_alloc;
        ops.mem_free = cuda_mem_free;
        ops.mem_zero = cuda_mem_zero;
        ops.mem_upload = cuda_mem_upload;
        ops.mem_download = cuda_mem_download;
        ops.sync = cuda_sync;
        ops.mem_info = cuda_mem_info;
        ops.native_stream = cuda_native_stream;
        ops.host_alloc = cuda_host_alloc;
        ops.host_free = cuda_host_free;
        ops.copy_async = cuda_copy_async;
        ops.event_wait = cuda_event_wait;
        ops.host_adamw_update = cuda_host_adamw_update;
        ops.params_upload = cuda_params_upload;
        ops.params_download = cuda_params_download;
        ops.encoder_forward = cuda_encoder_forward;
        ops.encoder_backward = cuda_encoder_backward;
        ops.layernorm_forward = cuda_layernorm_forward;
        ops.layernorm_backward = cuda_layernorm_backward;
        ops.matmul_forward = cuda_matmul_forward;
        ops.matmul_backward = cuda_matmul_backward;
        ops.attention_forward = cuda_attention_forward;
        ops.attention_backward = cuda_attention_backward;
        ops.attention_decode = cuda_attention_decode;
        ops.rmsnorm_forward = cuda_rmsnorm_forward;
        ops.rmsnorm_backward = cuda_rmsnorm_backward;
        ops.rope_forward = cuda_rope_forward;
        ops.rope_backward = cuda_rope_backward;
        ops.swiglu_forward = cuda_swiglu_forward;
        ops.swiglu_backward = cuda_swiglu_backward;
        ops.qknorm_forward = cuda_qknorm_forward;
        ops.qknorm_backward = cuda_qknorm_backward;
        ops.gelu_forward = cuda_gelu_forward;
        ops.gelu_backward = cuda_gelu_backward;
        ops.residual_forward = cuda_residual_forward;
        ops.residual_layernorm_forward = cuda_residual_layernorm_forward;
        ops.matmul_gelu_forward = cuda_matmul_gelu_forward;
        ops.matmul_backward_gelu = cuda_matmul_backward_gelu;
        ops.head_forward_backward = cuda_head_forward_backward;
        ops.head_logits = cuda_head_logits;
        ops.grad_norm_sq = cuda_grad_norm_sq;
        ops.adamw_update = cuda_adamw_update;
        filled = 1;
    }
    return &ops;
}

extern "C" int cuda_device_count(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* no driver / no device: not an error here */
        return 0;
    }
    return n;
}

extern "C" void cuda_device_name(char *buf, size_t len)
{
    int dev = 0;
    cudaDeviceProp prop;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(buf, len, "unknown CUDA device");
        return;
    }
    snprintf(buf, len, "%s", prop.name);
}

extern "C" size_t cuda_backend_fixed_bytes(void)
{
    return CUDA_LT_WORKSPACE_BYTES + CUDA_SCRATCH_BYTES;
}

/* An environment switch: unset gives dflt, "0" or "1" that value; anything
 * else is an error naming the variable and the value. */
static int env_switch(const char *name, int dflt, int *out, char *err, size_t err_len)
{
    const char *v = getenv(name);
    if (!v) {
        *out = dflt;
        return 0;
    }
    if (strcmp(v, "0") == 0 || strcmp(v, "1") == 0) {
        *out = v[0] == '1';
        return 0;
    }
    snprintf(err, err_len, "--device cuda: %s='%s': expected 0 or 1", name, v);
    return -1;
}

/* Fails softly: a one-line reason in err, NULL back, nothing left allocated. */
#define OPEN_TRY(call)                                                                         \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            snprintf(err, err_len, "--device cuda: %s failed: %s", #call,                      \
                     cudaGetErrorString(e_));                                                  \
            goto fail;                                                                         \
        }                                                                                      \
    } while (0)

extern "C" Backend *cuda_backend_open(const char *dtype, char *err, size_t err_len)
{
    int bf16;
    if (strcmp(dtype, "bf16") == 0 || strcmp(dtype, "auto") == 0) bf16 = 1;
    else if (strcmp(dtype, "fp32") == 0) bf16 = 0;
    else {
        snprintf(err, err_len, "--dtype %s: unknown dtype (accepted: auto, bf16, fp32)", dtype);
        return NULL;
    }
    if (cuda_device_count() < 1) {
        snprintf(err, err_len, "--device cuda: no CUDA device is visible");
        return NULL;
    }
    Backend *be = (Backend *)calloc(1, sizeof(Backend));
    CudaState *st = (CudaState *)calloc(1, sizeof(CudaState));
    if (!be || !st) {
        snprintf(err, err_len, "--device cuda: out of host memory");
        free(be);
        free(st);
        return NULL;
    }
    st->bf16 = bf16;
    if (env_switch("TRAIN_GPT_FUSE_GELU", 0, &st->fuse_gelu, err, err_len) != 0 ||
        env_switch("TRAIN_GPT_GEMM_TUNE", 1, &st->gemm_tune, err, err_len) != 0 ||
        env_switch("TRAIN_GPT_GEMM_VERBOSE", 0, &st->gemm_verbose, err, err_len) != 0)
        goto fail;
    {
        /* the current device: device 0, or the one dist_select_device made
         * current for this rank before the backend opened */
        int major = 0, minor = 0, sms = 0, optin = 0, gy = 0, gz = 0;
        OPEN_TRY(cudaGetDevice(&st->device));
        OPEN_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, st->device));
        OPEN_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, st->device));
        OPEN_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, st->device));
        OPEN_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                        st->device));
        OPEN_TRY(cudaDeviceGetAttribute(&gy, cudaDevAttrMaxGridDimY, st->device));
        OPEN_TRY(cudaDeviceGetAttribute(&gz, cudaDevAttrMaxGridDimZ, st->device));
        if (major < 8) {
            snprintf(err, err_len,
                     "--device cuda: GPU has compute capability %d.%d; this build needs 8.0 or "
                     "newer (bf16 tensor cores; built for sm_80 and sm_90a)",
                     major, minor);
            goto fail;
        }
        st->num_sms = sms;
        st->cc = 10 * major + minor;
        st->smem_optin = (size_t)optin;
        st->max_grid_y = gy;
        st->max_grid_z = gz;
    }
    OPEN_TRY(cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking));
    /* the host tier's (host_tier.cu): made once, idle without --offload */
    OPEN_TRY(cudaStreamCreateWithFlags(&st->copy_stream, cudaStreamNonBlocking));
    OPEN_TRY(cudaEventCreateWithFlags(&st->compute_ev, cudaEventDisableTiming));
    for (int e = 0; e < OPS_COPY_EVENTS; e++)
        OPEN_TRY(cudaEventCreateWithFlags(&st->copy_ev[e], cudaEventDisableTiming));
    OPEN_TRY(cudaMalloc(&st->workspace, CUDA_LT_WORKSPACE_BYTES));
    OPEN_TRY(cudaMalloc(&st->scratch, CUDA_SCRATCH_BYTES));
    cuda_gemm_init(st);

    be->name = "cuda";
    be->ops = cuda_ops_table();
    be->act_bytes = bf16 ? 2 : 4;
    be->par_bytes = bf16 ? 2 : 4;
    be->has_master = bf16;
    be->state = st;
    st->owner = be;
    return be;

fail:
    if (st->scratch) cudaFree(st->scratch);
    if (st->workspace) cudaFree(st->workspace);
    for (int e = 0; e < OPS_COPY_EVENTS; e++)
        if (st->copy_ev[e]) cudaEventDestroy(st->copy_ev[e]);
    if (st->compute_ev) cudaEventDestroy(st->compute_ev);
    if (st->copy_stream) cudaStreamDestroy(st->copy_stream);
    if (st->stream) cudaStreamDestroy(st->stream);
    free(st);
    free(be);
    return NULL;
}

extern "C" void cuda_backend_close(Backend *be)
{
    if (!be) return;
    CudaState *st = cuda_state(be);
    CUDA_CHECK(cudaStreamSynchronize(st->copy_stream));
    CUDA_CHECK(cudaStreamSynchronize(st->stream));
    cuda_gemm_destroy(st);
    CUDA_CHECK(cudaFree(st->scratch));
    CUDA_CHECK(cudaFree(st->workspace));
    for (int e = 0; e < OPS_COPY_EVENTS; e++) CUDA_CHECK(cudaEventDestroy(st->copy_ev[e]));
    CUDA_CHECK(cudaEventDestroy(st->compute_ev));
    CUDA_CHECK(cudaStreamDestroy(st->copy_stream));
    CUDA_CHECK(cudaStreamDestroy(st->stream));
    free(st);
    free(be);
}
