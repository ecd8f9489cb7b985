/* distributed/dist_mpi.c — collectives on host memory with MPI, for the cpu
 * backend (fp32 gradients and parameters).
 *
 * All-reduce: one MPI_Iallreduce per range (split at DIST_MPI_CHUNK), in
 * place, started from the model's grad hook; MPI_Testall after each start
 * lets the library progress them while the next layers' backward runs, and
 * wait is MPI_Waitall. The sum of a float vector is the same on every rank
 * (each element is reduced once and the result distributed, or the
 * partners add the same two values), so the replicas stay bitwise equal;
 * the trainer checks that at the end with dist_replicas_agree.
 *
 * ZeRO-2's reduce-scatter of a piece is MPI_Reduce_scatter with one count
 * per rank (a piece of a tensor's slice cuts the ranks' ranges unevenly),
 * blocking: the full-size buffer is reused by the next block's backward.
 * ZeRO-3's gather of a piece is MPI_Allgatherv, blocking too, or for a
 * prefetch of the next block MPI_Iallgatherv, waited before the block runs.
 *
 * Not built with NO_MPI (make NO_MPI=1: one process, no collectives). */
#ifndef NO_MPI
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist_internal.h"

/* ZeRO-3 gathers one prefetch may hold in flight: a block's twelve slices */
#define MPI_GATHERS 16

typedef struct {
    DistComm base;
    MPI_Request *reqs;
    int nreq, cap;
    int *counts; /* world: ZeRO-2's receive counts, ZeRO-3's gather counts */
    int *displs; /* world: ZeRO-3's gather offsets */
    /* ZeRO-3's prefetch: MPI_Iallgatherv requests in flight, each with its
     * own counts and displacements (MPI reads them until it completes) */
    MPI_Request greqs[MPI_GATHERS];
    int *gargs; /* MPI_GATHERS x 2 x world */
    int ngreq;
} MpiComm;

/* Requests one step's all-reduces can hold before the array grows: a GPT
 * reports about 12 ranges a layer plus 4 (see gpt_set_grad_hook). */
#define MPI_REQS_FIRST 256

/* Double the request array. Request handles are values, so those still
 * in flight move with the copy. */
static void grow_requests(MpiComm *m)
{
    MPI_Request *r = realloc(m->reqs, sizeof(MPI_Request) * (size_t)m->cap * 2);
    if (!r)
        dist_fail(m->base.d, 1, "out of host memory for %d MPI requests", m->cap * 2);
    m->reqs = r;
    m->cap *= 2;
}

static void mpi_allreduce_start(DistComm *c, void *grads, const size_t *offs,
                                const size_t *counts, int n)
{
    MpiComm *m = (MpiComm *)c;
    float *g = grads;
    for (int k = 0; k < n; k++)
        for (size_t i = 0; i < counts[k]; i += DIST_MPI_CHUNK) {
            size_t len = counts[k] - i < DIST_MPI_CHUNK ? counts[k] - i : DIST_MPI_CHUNK;
            if (m->nreq == m->cap) grow_requests(m);
            MPI_Iallreduce(MPI_IN_PLACE, g + offs[k] + i, (int)len, MPI_FLOAT, MPI_SUM, c->world,
                           &m->reqs[m->nreq++]);
        }
    int flag;
    MPI_Testall(m->nreq, m->reqs, &flag, MPI_STATUSES_IGNORE);
}

static void mpi_reduce_scatter_start(DistComm *c, void *grads, size_t shard)
{
    /* In place, MPI_Reduce_scatter_block leaves this rank's sum at the
     * start of the buffer; move it to the rank's own block. */
    float *g = grads;
    dist_watch_begin(c->d, "in MPI_Reduce_scatter_block (ZeRO-1 gradients)");
    MPI_Reduce_scatter_block(MPI_IN_PLACE, g, (int)shard, MPI_FLOAT, MPI_SUM, c->world);
    dist_watch_end(c->d);
    if (c->d->rank > 0) memcpy(g + (size_t)c->d->rank * shard, g, shard * sizeof(float));
}

static size_t mpi_reduce_scatterv(DistComm *c, void *buf, const size_t *counts)
{
    /* In place, MPI_Reduce_scatter leaves this rank's sum at the start of
     * buf. Counts are a piece of one tensor's slice: dist_attach checked
     * they fit an int. */
    MpiComm *m = (MpiComm *)c;
    for (int q = 0; q < c->d->world; q++) {
        if (counts[q] > (size_t)INT_MAX)
            dist_fail(c->d, 1, "--zero 2: a gradient piece of %zu elements is more than MPI's "
                      "int count allows; use --zero 1", counts[q]);
        m->counts[q] = (int)counts[q];
    }
    dist_watch_begin(c->d, "in MPI_Reduce_scatter (ZeRO-2 gradients)");
    MPI_Reduce_scatter(MPI_IN_PLACE, buf, m->counts, MPI_FLOAT, MPI_SUM, c->world);
    dist_watch_end(c->d);
    return 0;
}

static void mpi_wait(DistComm *c)
{
    MpiComm *m = (MpiComm *)c;
    dist_watch_begin(c->d, "in MPI_Waitall (the gradient all-reduce)");
    MPI_Waitall(m->nreq, m->reqs, MPI_STATUSES_IGNORE);
    dist_watch_end(c->d);
    m->nreq = 0;
}

static void mpi_allgather(DistComm *c, void *params, size_t shard)
{
    dist_watch_begin(c->d, "in MPI_Allgather (ZeRO-1 parameters)");
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, params, (int)shard, MPI_FLOAT, c->world);
    dist_watch_end(c->d);
}

static void mpi_gather_wait(DistComm *c)
{
    MpiComm *m = (MpiComm *)c;
    if (!m->ngreq) return;
    dist_watch_begin(c->d, "in MPI_Waitall (a ZeRO-3 prefetch)");
    MPI_Waitall(m->ngreq, m->greqs, MPI_STATUSES_IGNORE);
    dist_watch_end(c->d);
    m->ngreq = 0;
}

/* ZeRO-3: blocking, or (async, a prefetch) MPI_Iallgatherv completed by
 * mpi_gather_wait. */
static void mpi_allgatherv(DistComm *c, const void *mine, void *buf, const size_t *counts,
                           int async)
{
    MpiComm *m = (MpiComm *)c;
    int W = c->d->world;
    if (async && m->ngreq == MPI_GATHERS) mpi_gather_wait(c);
    int *cnt = async ? m->gargs + (size_t)m->ngreq * 2 * W : m->counts;
    int *dsp = async ? cnt + W : m->displs;
    size_t off = 0;
    for (int q = 0; q < W; q++) {
        if (counts[q] > (size_t)INT_MAX || off > (size_t)INT_MAX)
            dist_fail(c->d, 1, "--zero 3: a parameter piece at %zu of %zu elements is more "
                      "than MPI's int count allows; use --zero 2", off, counts[q]);
        cnt[q] = (int)counts[q];
        dsp[q] = (int)off;
        off += counts[q];
    }
    if (async) {
        MPI_Iallgatherv(mine, cnt[c->d->rank], MPI_FLOAT, buf, cnt, dsp, MPI_FLOAT, c->world,
                        &m->greqs[m->ngreq++]);
        return;
    }
    dist_watch_begin(c->d, "in MPI_Allgatherv (ZeRO-3 parameters)");
    MPI_Allgatherv(mine, cnt[c->d->rank], MPI_FLOAT, buf, cnt, dsp, MPI_FLOAT, c->world);
    dist_watch_end(c->d);
}

static void mpi_close(DistComm *c)
{
    MpiComm *m = (MpiComm *)c;
    free(m->displs);
    free(m->gargs);
    free(m->reqs);
    free(m->counts);
    free(m);
}

DistComm *dist_mpi_open(const Dist *d, Backend *be, char *err, size_t err_len)
{
    if (be->par_bytes != 4) {
        snprintf(err, err_len, "internal error: MPI collectives take fp32 host buffers; the %s "
                 "backend keeps %d-byte parameters", be->name, be->par_bytes);
        return NULL;
    }
    MpiComm *m = calloc(1, sizeof *m);
    if (m) m->cap = MPI_REQS_FIRST;
    if (m) m->reqs = malloc(sizeof(MPI_Request) * (size_t)m->cap);
    if (m) m->counts = malloc(sizeof(int) * (size_t)d->world);
    if (m) m->displs = malloc(sizeof(int) * (size_t)d->world);
    if (m) m->gargs = malloc(sizeof(int) * 2 * MPI_GATHERS * (size_t)d->world);
    if (!m || !m->reqs || !m->counts || !m->displs || !m->gargs) {
        if (m) free(m->reqs);
        if (m) free(m->counts);
        if (m) free(m->displs);
        if (m) free(m->gargs);
        free(m);
        snprintf(err, err_len, "out of host memory for MPI requests");
        return NULL;
    }
    m->base = (DistComm){.name = "mpi", .allreduce_start = mpi_allreduce_start,
                         .reduce_scatter_start = mpi_reduce_scatter_start,
                         .reduce_scatterv = mpi_reduce_scatterv, .wait = mpi_wait,
                         .allgather = mpi_allgather, .allgatherv = mpi_allgatherv,
                         .gather_wait = mpi_gather_wait,
                         .close = mpi_close, .d = d,
                         .world = MPI_COMM_WORLD};
    return &m->base;
}

#else
/* A NO_MPI build has no MPI path; ISO C wants a declaration here. */
typedef int dist_mpi_not_built;
#endif
