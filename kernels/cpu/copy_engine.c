/* kernels/cpu/copy_engine.c — the cpu backend's copy engine (cpu_ops.h): the host
 * tier's copies (ops.h: copy_async, event_wait) on a thread of their own, so that the
 * overlap and ordering the model relies on on a GPU (a copy stream and events) runs,
 * and is tested, where CI runs.
 *
 * One thread takes jobs first in, first out. Each job names an event; an event counts
 * the jobs enqueued on it (issued) and the jobs done (done): event_wait blocks until
 * done catches up with issued as it was when the wait began. Jobs finish in queue
 * order, so waiting on an event also waits for every job enqueued before its last. The
 * cpu's ops run on the caller's thread and are finished when they return, which is
 * what "starts once every op enqueued before it has finished" asks of copy_async.
 *
 * host_adamw_update is a job of the same queue (ev -1: it completes no event), as it
 * is a host function on the cuda copy stream: it runs after the copies before it (its
 * gradients coming in) and before those after it (its parameters going back), while
 * the caller's thread goes on with the next forward. */
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_ops.h"
#include "kernels/host_adamw.h"

/* A copy (ev >= 0), or an AdamW (ev -1) with its arguments in a. */
typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
    int ev;
    struct {
        float *m, *v;
        size_t n;
        float lr, beta1, beta2, b1c, b2c, eps, wd, scale;
    } a;
} CopyJob;

#define QUEUE_CAP 256 /* jobs in flight; copy_async blocks while it is full */

struct CpuCopyEngine {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work, done_cv; /* work: a job or the stop arrived; done_cv: a job ended */
    CopyJob q[QUEUE_CAP];
    int head, count, stop, started;
    unsigned long long issued[OPS_COPY_EVENTS], done[OPS_COPY_EVENTS];
};

static void *copy_main(void *arg)
{
    CpuCopyEngine *e = arg;
    /* The host AdamW here runs beside the ops, which hold the --threads cores: one
     * thread of its own, not a second OpenMP team of the default size spinning
     * against theirs (on 2 cores that made the median step 3.8x the on-device
     * optimizer's, its rounds 0.86x to 7.0x; one thread: 1.14x, 1.04x to 1.22x;
     * dev/bench/bench_offload_optimizer.sh). */
    omp_set_num_threads(1);
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (!e->count && !e->stop) pthread_cond_wait(&e->work, &e->mu);
        if (!e->count) break; /* stopped with nothing left */
        CopyJob j = e->q[e->head];
        pthread_mutex_unlock(&e->mu);
        if (j.ev >= 0)
            memcpy(j.dst, j.src, j.bytes);
        else /* the cpu's parameters are fp32 and it keeps no master */
            host_adamw(j.dst, NULL, j.src, 0, j.a.m, j.a.v, j.a.n, j.a.lr, j.a.beta1, j.a.beta2,
                       j.a.b1c, j.a.b2c, j.a.eps, j.a.wd, j.a.scale);
        pthread_mutex_lock(&e->mu);
        e->head = (e->head + 1) % QUEUE_CAP;
        e->count--;
        if (j.ev >= 0) e->done[j.ev]++;
        pthread_cond_broadcast(&e->done_cv);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

CpuCopyEngine *cpu_copy_engine_new(void)
{
    CpuCopyEngine *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->work, NULL);
    pthread_cond_init(&e->done_cv, NULL);
    return e;
}

/* Drains the queue, then joins the thread. */
void cpu_copy_engine_free(CpuCopyEngine *e)
{
    if (!e) return;
    if (e->started) {
        pthread_mutex_lock(&e->mu);
        e->stop = 1;
        pthread_cond_signal(&e->work);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->thread, NULL);
    }
    pthread_cond_destroy(&e->work);
    pthread_cond_destroy(&e->done_cv);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

static CpuCopyEngine *engine(Backend *be) { return ((CpuState *)be->state)->copy; }

/* Queue job j; 0, or -1 when no thread can be had (the caller then runs it at once:
 * with nothing queued, that keeps the order). */
static int enqueue(CpuCopyEngine *e, const CopyJob *j)
{
    pthread_mutex_lock(&e->mu);
    /* started lazily: runs without --offload never make the thread */
    if (!e->started) {
        if (pthread_create(&e->thread, NULL, copy_main, e) != 0) {
            pthread_mutex_unlock(&e->mu);
            return -1;
        }
        e->started = 1;
    }
    while (e->count == QUEUE_CAP) pthread_cond_wait(&e->done_cv, &e->mu);
    e->q[(e->head + e->count) % QUEUE_CAP] = *j;
    e->count++;
    if (j->ev >= 0) e->issued[j->ev]++;
    pthread_cond_signal(&e->work);
    pthread_mutex_unlock(&e->mu);
    return 0;
}

void cpu_copy_async(Backend *be, void *dst, const void *src, size_t bytes, int ev)
{
    CopyJob j = {dst, src, bytes, ev, {0}};
    if (enqueue(engine(be), &j) != 0) memcpy(dst, src, bytes);
}

void cpu_host_adamw_update(Backend *be, void *params, float *master, const void *grads,
                           float *m, float *v, size_t n, float lr, float beta1, float beta2,
                           float eps, float weight_decay, float grad_scale, int t)
{
    (void)master; /* none on the cpu */
    /* the bias corrections as cpu_adamw_update computes them */
    CopyJob j = {params, grads, 0, -1,
                 {m, v, n, lr, beta1, beta2, 1.0f - powf(beta1, (float)t),
                  1.0f - powf(beta2, (float)t), eps, weight_decay, grad_scale}};
    if (n && enqueue(engine(be), &j) != 0)
        cpu_adamw_update(be, params, NULL, grads, m, v, n, lr, beta1, beta2, eps, weight_decay,
                         grad_scale, t);
}

void cpu_event_wait(Backend *be, int ev)
{
    CpuCopyEngine *e = engine(be);
    pthread_mutex_lock(&e->mu);
    unsigned long long want = e->issued[ev];
    while (e->done[ev] < want) pthread_cond_wait(&e->done_cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
}

void *cpu_host_alloc(Backend *be, size_t bytes)
{
    size_t rounded = (bytes + 255) / 256 * 256;
    return aligned_alloc(256, rounded ? rounded : 256);
}

void cpu_host_free(Backend *be, void *p) { free(p); }
