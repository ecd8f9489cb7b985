/* distributed/dist_mpi.c — collectives on host memory with MPI, for the cpu
 * backend (fp32 gradients and parameters).
 *
 * Sums over ranks are ours, not MPI's (dist.h, Order of sums): one ordered
 * reduce-scatter, mpi_reduce_scatterv, with MPI_Isend/MPI_Irecv of each
 * rank's pieces and the adds done here in rank order. --zero 0 follows it
 * with an all-gather of the sums (MPI_Allgatherv in place), ZeRO-1 runs it
 * once over the whole gradient after backward, ZeRO-2 and 3 once for each
 * piece of a block as the block's backward finishes. Blocking: the
 * buffers are reused by the next block's backward. ZeRO-3's gather of a
 * piece is MPI_Allgatherv, blocking too, or for a prefetch of the next
 * block MPI_Iallgatherv, waited before the block runs; all-gathers copy,
 * so they change no value.
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

/* The tag of the ordered reduction's pieces (the only point-to-point
 * messages on the communicator). */
#define TAG_PIECE 41

typedef struct {
    DistComm base;
    MPI_Request *reqs; /* 2 x world: one round's receives and sends */
    size_t *offs;      /* world: where each rank's piece starts in the buffer */
    int *counts; /* world: ZeRO-3's gather counts */
    int *displs; /* world: ZeRO-3's gather offsets */
    /* ZeRO-3's prefetch: MPI_Iallgatherv requests in flight, each with its
     * own counts and displacements (MPI reads them until it completes) */
    MPI_Request greqs[MPI_GATHERS];
    int *gargs; /* MPI_GATHERS x 2 x world */
    int ngreq;
} MpiComm;

/* The ordered sum (dist.h, Order of sums). buf is world pieces of
 * counts[q] elements in rank order; rank r's piece becomes, element by
 * element, ((x_0 + x_1) + x_2) + ... + x_{W-1}, x_q being rank q's value
 * of that element: each rank sends piece q to rank q, receives every
 * rank's copy of its own piece into reduce_buf (slot q from rank q, its
 * own copied in) and adds the slots in rank order, starting from rank 0's
 * value. Pieces longer than reduce_chunk go in rounds of reduce_chunk
 * elements; a round changes which elements travel together, never an
 * element's sum. Each rank sends (W-1)/W of buf, as a ring reduce-scatter
 * does. Returns where this rank's sum lies in buf: its own piece. */
static size_t mpi_reduce_scatterv(DistComm *c, void *buf, const size_t *counts)
{
    MpiComm *m = (MpiComm *)c;
    const Dist *d = c->d;
    int W = d->world, r = d->rank;
    float *g = buf, *slot = d->m.reduce_buf;
    size_t chunk = d->m.reduce_chunk, most = 0, at = 0;
    for (int q = 0; q < W; q++) {
        m->offs[q] = at;
        at += counts[q];
        if (counts[q] > most) most = counts[q];
    }
    at = m->offs[r];
    if (W == 1) return at;
    if (!slot || !chunk) dist_fail(d, 1, "internal error: no receive buffer for sums over ranks");
    size_t mine = counts[r];
    dist_watch_begin(d, "in the ordered reduce-scatter (gradient pieces, MPI_Waitall)");
    for (size_t i = 0; i < most; i += chunk) {
        size_t n = mine > i ? (mine - i < chunk ? mine - i : chunk) : 0;
        int nr = 0;
        for (int q = 0; q < W; q++) {
            if (q == r) continue;
            size_t nq = counts[q] > i ? (counts[q] - i < chunk ? counts[q] - i : chunk) : 0;
            if (n)
                MPI_Irecv(slot + (size_t)q * chunk, (int)n, MPI_FLOAT, q, TAG_PIECE, c->world,
                          &m->reqs[nr++]);
            if (nq)
                MPI_Isend(g + m->offs[q] + i, (int)nq, MPI_FLOAT, q, TAG_PIECE, c->world,
                          &m->reqs[nr++]);
        }
        MPI_Waitall(nr, m->reqs, MPI_STATUSES_IGNORE);
        if (!n) continue;
        float *out = g + at + i;
        memcpy(slot + (size_t)r * chunk, out, n * sizeof(float));
        /* rank order, element by element: out = x_0, out += x_1, ... */
        memcpy(out, slot, n * sizeof(float));
        for (int q = 1; q < W; q++) {
            const float *x = slot + (size_t)q * chunk;
            for (size_t j = 0; j < n; j++) out[j] += x[j];
        }
    }
    dist_watch_end(d);
    return at;
}

/* The sums are ordered and blocking (mpi_reduce_scatterv): nothing is in
 * flight between collectives. */
static void mpi_wait(DistComm *c) { (void)c; }

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
            dist_fail(c->d, 1, "--zero %d: an all-gathered piece at %zu of %zu elements is "
                      "more than MPI's int count allows; use --zero 3 or more ranks",
                      c->d->m.zero, off, counts[q]);
        cnt[q] = (int)counts[q];
        dsp[q] = (int)off;
        off += counts[q];
    }
    /* in place when mine is this rank's piece of buf (--zero 0's sums) */
    if (mine == (const char *)buf + (size_t)dsp[c->d->rank] * sizeof(float)) mine = MPI_IN_PLACE;
    if (async) {
        MPI_Iallgatherv(mine, cnt[c->d->rank], MPI_FLOAT, buf, cnt, dsp, MPI_FLOAT, c->world,
                        &m->greqs[m->ngreq++]);
        return;
    }
    dist_watch_begin(c->d, "in MPI_Allgatherv (ZeRO-3 parameters or --zero 0's sums)");
    MPI_Allgatherv(mine, cnt[c->d->rank], MPI_FLOAT, buf, cnt, dsp, MPI_FLOAT, c->world);
    dist_watch_end(c->d);
}

static void mpi_close(DistComm *c)
{
    MpiComm *m = (MpiComm *)c;
    free(m->displs);
    free(m->gargs);
    free(m->reqs);
    free(m->offs);
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
    if (m) m->reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)d->world);
    if (m) m->offs = malloc(sizeof(size_t) * (size_t)d->world);
    if (m) m->counts = malloc(sizeof(int) * (size_t)d->world);
    if (m) m->displs = malloc(sizeof(int) * (size_t)d->world);
    if (m) m->gargs = malloc(sizeof(int) * 2 * MPI_GATHERS * (size_t)d->world);
    if (!m || !m->reqs || !m->offs || !m->counts || !m->displs || !m->gargs) {
        if (m) free(m->reqs);
        if (m) free(m->offs);
        if (m) free(m->counts);
        if (m) free(m->displs);
        if (m) free(m->gargs);
        free(m);
        snprintf(err, err_len, "out of host memory for MPI's %d-rank requests", d->world);
        return NULL;
    }
    m->base = (DistComm){.name = "mpi",
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
