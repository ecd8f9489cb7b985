/* distributed/dist_internal.h — private to distributed/: the interface between dist.c and
 * the two collective libraries (dist_mpi.c on host memory, dist_nccl.c on
 * CUDA memory). Buffers are the model's parameter or gradient vectors, in
 * the backend's par dtype (be->par_bytes wide); counts are in elements. */
#ifndef DISTRIBUTED_DIST_INTERNAL_H
#define DISTRIBUTED_DIST_INTERNAL_H

#ifndef NO_MPI
#include <mpi.h>
#endif
#include <stddef.h>

#include "dist.h"

struct DistComm {
    const char *name; /* "mpi" or "nccl" */
    /* 1: reduce_scatterv adds in rank order (dist.h, Order of sums) and
     * serves every stage; allreduce_start and reduce_scatter_start are
     * NULL. 0 (NCCL): the library's order. */
    int ordered;
    /* Start summing n ranges [offs[k], offs[k] + counts[k]) of grads over
     * ranks, in place; returns before they finish. */
    void (*allreduce_start)(DistComm *c, void *grads, const size_t *offs, const size_t *counts,
                            int n);
    /* Start the ZeRO-1 reduce-scatter of grads (world * shard elements):
     * rank r's block [r * shard, (r+1) * shard) receives the sum over ranks. */
    void (*reduce_scatter_start)(DistComm *c, void *grads, size_t shard);
    /* Sum buf over ranks, where buf is world pieces of counts[q] elements
     * in rank order (any may be 0), rank q receiving the sum of piece q.
     * Returns the element offset in buf at which this rank's sum lies (with
     * ordered: its own piece's); complete for later backend ops on return. */
    size_t (*reduce_scatterv)(DistComm *c, void *buf, const size_t *counts);
    /* Everything started is complete as far as later backend ops see it. */
    void (*wait)(DistComm *c);
    /* All-gather params: rank r's block [r * shard, (r+1) * shard) to every
     * rank; complete for later backend ops on return. */
    void (*allgather)(DistComm *c, void *params, size_t shard);
    /* ZeRO-3: buf is world pieces of counts[q] elements in rank order (any
     * may be 0); piece q is rank q's `mine` on every rank after the call
     * (mine: this rank's counts[rank] elements, not inside buf); complete
     * for later backend ops on return, or, with async, after gather_wait
     * (neither buffer touched until then). */
    void (*allgatherv)(DistComm *c, const void *mine, void *buf, const size_t *counts, int async);
    void (*gather_wait)(DistComm *c);
    void (*close)(DistComm *c);
    const Dist *d;
#ifndef NO_MPI
    MPI_Comm world;
#endif
};

/* Open over be's memory. NULL with a message in err on failure. Neither
 * is built with NO_MPI (no process but rank 0 of 1, so nothing to open). */
DistComm *dist_mpi_open(const Dist *d, Backend *be, char *err, size_t err_len);
DistComm *dist_nccl_open(const Dist *d, Backend *be, char *err, size_t err_len); /* HAVE_CUDA */
int dist_nccl_select_device(int local_rank, int *device, char *err, size_t err_len); /* HAVE_CUDA */

/* Mark a wait on the other ranks for the watchdog (dist_watch.c); what
 * names it in the timeout's message ("in MPI_Allreduce (a scalar)").
 * Nested pairs count as one. No-ops without a timeout. */
void dist_watch_begin(const Dist *d, const char *what);
void dist_watch_end(const Dist *d);
void dist_watch_stop(Dist *d);

/* Asked by the watchdog during each wait (from its own thread): 1 with a
 * message when the collectives have failed for good (NCCL's asynchronous
 * error), else 0. dist_watch_probe(d, NULL, NULL) removes it; it is
 * never running once that returns. No-op without a timeout. */
typedef int (*DistProbe)(void *ctx, char *msg, size_t len);
void dist_watch_probe(const Dist *d, DistProbe probe, void *ctx);

/* MPI counts are int: collectives on longer vectors are split into pieces
 * of at most this many elements. */
#define DIST_MPI_CHUNK ((size_t)1 << 30)

#endif
