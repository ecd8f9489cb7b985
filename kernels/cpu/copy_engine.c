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
 * what "starts once every op enqueued before it has finished" asks of copy_async. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_ops.h"

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
    int ev;
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
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (!e->count && !e->stop) pthread_cond_wait(&e->work, &e->mu);
        if (!e->count) break; /* stopped with nothing left */
        CopyJob j = e->q[e->head];
        pthread_mutex_unlock(&e->mu);
        memcpy(j.dst, j.src, j.bytes);
        pthread_mutex_lock(&e->mu);
        e->head = (e->head + 1) % QUEUE_CAP;
        e->count--;
        e->done[j.ev]++;
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

static CpuCopyEngine *engine(Backend *be) { return be->state; }

void cpu_copy_async(Backend *be, void *dst, const void *src, size_t bytes, int ev)
{
    CpuCopyEngine *e = engine(be);
    pthread_mutex_lock(&e->mu);
    /* started lazily: runs without --offload never make the thread */
    if (!e->started) {
        if (pthread_create(&e->thread, NULL, copy_main, e) != 0) {
            pthread_mutex_unlock(&e->mu);
            memcpy(dst, src, bytes); /* no thread to be had: the copy, at once */
            return;
        }
        e->started = 1;
    }
    while (e->count == QUEUE_CAP) pthread_cond_wait(&e->done_cv, &e->mu);
    e->q[(e->head + e->count) % QUEUE_CAP] = (CopyJob){dst, src, bytes, ev};
    e->count++;
    e->issued[ev]++;
    pthread_cond_signal(&e->work);
    pthread_mutex_unlock(&e->mu);
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
