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
    /* Every float sum over ranks goes through reduce_scatterv or
     * allreduce_start, both adding in rank order (dist.h, Order of sums). */
    /* Optional (NCCL; NULL on MPI, where --zero 0 sums the whole vector
     * after backward: reduce_scatterv, then allgatherv). Start --zero 0's
     * sum of buf over ranks, in place: buf is world pieces of counts[q]
     * elements in rank order (a range of the gradient cut at the rank
     * blocks), piece q is summed in rank order on rank q, then every
     * rank's sums are gathered to every rank. Returns before it finishes;
     * complete for later backend ops after wait. */
    void (*allreduce_start)(DistComm *c, void *buf, const size_t *counts);
    /* Sum buf over ranks, where buf is world pieces of counts[q] elements
     * in rank order (any may be 0), rank q receiving the sum of piece q.
     * Returns the element offset in buf at which this rank's sum lies (its
     * own piece's); complete for later backend ops on return. */
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
