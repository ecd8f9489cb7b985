/* kernels/cuda/host_tier.cu — the host tier on the GPU (ops.h: host_alloc,
 * host_free, copy_async, event_wait, host_adamw_update; --offload).
 *
 * Memory is pinned (cudaHostAlloc), so copies run on the copy engines and the
 * GPU reads it directly where it must (params_upload's rounding of a master
 * held here, through unified addressing). Every copy and host AdamW runs in
 * enqueue order on st->copy_stream, which is non-blocking and made once at
 * open (backend.cu):
 *   copy_async(ev): record compute_ev on the compute stream, have the copy
 *     stream wait for it (the copy sees every op enqueued before it), copy,
 *     then record copy_ev[ev] on the copy stream;
 *   event_wait(ev): the compute stream waits for copy_ev[ev]'s latest record.
 *     The copy stream runs in order, so that is every copy on ev before it,
 *     and every copy before those. The host thread never blocks here.
 *   host_adamw_update: kernels/host_adamw.c's loop on the host's cores, put on
 *     the copy stream by cudaLaunchHostFunc: it starts once the copies before
 *     it (its gradients coming in) are done, the copies after it (the updated
 *     weights going back) wait for it, and the compute stream goes on beside.
 * The one host synchronisation is host_free's, before pinned memory is given
 * back (a queued copy or AdamW may still use it). */
#include "cuda_common.cuh"

extern "C" {
#include "kernels/host_adamw.h"
}

void *cuda_host_alloc(Backend *be, size_t bytes)
{
    (void)be;
    void *p = NULL;
    if (bytes == 0) bytes = 1; /* a distinct, freeable pointer */
    if (cudaHostAlloc(&p, bytes, cudaHostAllocDefault) != cudaSuccess) {
        (void)cudaGetLastError(); /* out of pinnable memory is not sticky; clear it */
        return NULL;
    }
    return p;
}

void cuda_host_free(Backend *be, void *p)
{
    if (!p) return;
    CudaState *st = cuda_state(be);
    CUDA_CHECK(cudaStreamSynchronize(st->copy_stream));
    CUDA_CHECK(cudaStreamSynchronize(st->stream));
    CUDA_CHECK(cudaFreeHost(p));
}

static cudaEvent_t copy_event(CudaState *st, int ev, const char *op)
{
    if (ev < 0 || ev >= OPS_COPY_EVENTS)
        CUDA_FATAL("%s: copy event %d is not in 0..%d", op, ev, OPS_COPY_EVENTS - 1);
    return st->copy_ev[ev];
}

void cuda_copy_async(Backend *be, void *dst, const void *src, size_t bytes, int ev)
{
    CudaState *st = cuda_state(be);
    cudaEvent_t done = copy_event(st, ev, "copy_async");
    CUDA_CHECK(cudaEventRecord(st->compute_ev, st->stream));
    CUDA_CHECK(cudaStreamWaitEvent(st->copy_stream, st->compute_ev, 0));
    if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, st->copy_stream));
    CUDA_CHECK(cudaEventRecord(done, st->copy_stream));
}

void cuda_event_wait(Backend *be, int ev)
{
    CudaState *st = cuda_state(be);
    CUDA_CHECK(cudaStreamWaitEvent(st->stream, copy_event(st, ev, "event_wait"), 0));
}

/* One host AdamW's arguments, owned by the host function that runs it. */
typedef struct {
    void *params;
    float *master;
    const void *grads;
    float *m, *v;
    size_t n;
    int bf16;
    float lr, beta1, beta2, b1c, b2c, eps, weight_decay, grad_scale;
} HostAdamW;

/* On the CUDA runtime's callback thread: no CUDA call may be made here. */
static void host_adamw_run(void *arg)
{
    HostAdamW *a = (HostAdamW *)arg;
    host_adamw(a->params, a->master, a->grads, a->bf16, a->m, a->v, a->n, a->lr, a->beta1,
               a->beta2, a->b1c, a->b2c, a->eps, a->weight_decay, a->grad_scale);
    free(a);
}

void cuda_host_adamw_update(Backend *be, void *params, float *master, const void *grads,
                            float *m, float *v, size_t n, float lr, float beta1, float beta2,
                            float eps, float weight_decay, float grad_scale, int t)
{
    CudaState *st = cuda_state(be);
    if (n == 0) return;
    HostAdamW *a = (HostAdamW *)malloc(sizeof *a);
    if (!a) CUDA_FATAL("host_adamw_update: out of host memory");
    /* the bias corrections exactly as cuda_adamw_update computes them */
    HostAdamW args = {params, master, grads, m, v, n, st->bf16, lr, beta1, beta2,
                      1.0f - powf(beta1, (float)t), 1.0f - powf(beta2, (float)t), eps,
                      weight_decay, grad_scale};
    *a = args;
    CUDA_CHECK(cudaLaunchHostFunc(st->copy_stream, host_adamw_run, a));
}
