/* model/opcost_copy.c — the copy engine's cost (opcost.h: opcost_copy,
 * opcost_measure_copy): latency and bandwidth of one device-to-host copy,
 * measured at start-up beside the op costs and cached with them. */
#include "opcost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/stop.h"

#define COPY_SIZES 4
#define COPY_MIN_BYTES ((size_t)4 << 10) /* 4 KiB: the smallest timed, mostly latency */

long long opcost_copy(const OpCosts *oc, size_t bytes)
{
    if (oc->copy_bw <= 0) return -1;
    return oc->copy_lat_ns + llround((double)bytes * 1e9 / (double)oc->copy_bw);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median seconds of OPCOST_COPY_REPS copies of n bytes, each from its
 * enqueue to the end of the wait on its event; -1 on a stop. */
static double time_copy(Backend *be, void *host, const void *dev, size_t n)
{
    const BackendOps *o = be->ops;
    double t[OPCOST_COPY_REPS];
    o->copy_async(be, host, dev, n, 0); /* warm-up: the thread, the pages */
    o->event_wait(be, 0);
    o->sync(be);
    for (int r = 0; r < OPCOST_COPY_REPS; r++) {
        if (stop_requested()) return -1.0;
        double t0 = now_s();
        o->copy_async(be, host, dev, n, 0);
        o->event_wait(be, 0);
        o->sync(be); /* a GPU's event_wait only orders the stream: wait for it here */
        t[r] = now_s() - t0;
    }
    qsort(t, OPCOST_COPY_REPS, sizeof t[0], cmp_double);
    return t[OPCOST_COPY_REPS / 2];
}

int opcost_measure_copy(Backend *be, size_t max_bytes, OpCosts *oc, char *err, size_t err_len)
{
    const BackendOps *o = be->ops;
    oc->copy_lat_ns = oc->copy_bw = 0;
    if (!o->copy_async || !o->event_wait || !o->host_alloc) return 0;
    if (max_bytes < 4 * COPY_MIN_BYTES) max_bytes = 4 * COPY_MIN_BYTES;
    /* 4 KiB, then max/16, max/4 and max: latency at the small end, bandwidth
     * at the sizes a run copies (one residual slot) */
    size_t sizes[COPY_SIZES] = {COPY_MIN_BYTES, max_bytes / 16, max_bytes / 4, max_bytes};
    for (int i = 1; i < COPY_SIZES; i++)
        if (sizes[i] < sizes[i - 1]) sizes[i] = sizes[i - 1];
    void *dev = o->mem_alloc(be, max_bytes), *host = o->host_alloc(be, max_bytes);
    int rc = 0;
    if (!dev || !host) {
        snprintf(err, err_len, "--op-costs measure: out of memory for the copy engine's timing "
                 "buffers (%zu bytes on the %s device and as much on the host)", max_bytes,
                 be->name);
        rc = -1;
        goto done;
    }
    o->mem_zero(be, dev, max_bytes);
    /* least squares of seconds against bytes over the sizes' medians */
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < COPY_SIZES; i++) {
        double y = time_copy(be, host, dev, sizes[i]), x = (double)sizes[i];
        if (y < 0) {
            snprintf(err, err_len, "--op-costs measure: %s", STOP_MESSAGE);
            rc = -1;
            goto done;
        }
        sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    double n = COPY_SIZES, den = n * sxx - sx * sx;
    double slope = den > 0 ? (n * sxy - sx * sy) / den : 0; /* s per byte */
    double icpt = (sy - slope * sx) / n;                    /* s */
    if (slope <= 0) slope = sy / sx; /* flat or noisy: the mean rate */
    oc->copy_bw = llround(1.0 / slope) > 0 ? llround(1.0 / slope) : 1;
    oc->copy_lat_ns = icpt > 0 ? llround(icpt * 1e9) : 0;
done:
    if (dev) o->mem_free(be, dev);
    if (host) o->host_free(be, host);
    return rc;
}

/* The overlap model, per micro-batch, in ns. Each of the n_stored offloaded
 * inputs goes out once: the copy of x_{l+1} is issued after block l's
 * forward and waited for before block l+2 writes its ring slot, so block
 * l+1's forward (opcost_block_fwd) runs beside it, and only the part of the
 * copy longer than that forward shows in the step. All but the ring's
 * slots (still in the ring at the head) come back in: the prefetch of x_l
 * runs beside block l+1's backward (opcost_block_bwd, without its rebuilds
 * or re-forward: a lower bound of what hides it, so the model errs towards
 * the copy's cost). exposed = n_stored * max(0, copy - fwd)
 *                           + (n_stored - ring) * max(0, copy - bwd),
 * copy = latency + res_bytes / bandwidth. */
long long opcost_offload_copy(const OpCosts *oc, size_t res_bytes, int n_stored)
{
    long long c = opcost_copy(oc, res_bytes);
    if (c < 0) return -1;
    int ring = n_stored < OFFLOAD_RING_SLOTS ? n_stored : OFFLOAD_RING_SLOTS;
    long long out = c - opcost_block_fwd(oc), in = c - opcost_block_bwd(oc);
    return (long long)n_stored * (out > 0 ? out : 0) +
           (long long)(n_stored - ring) * (in > 0 ? in : 0);
}
