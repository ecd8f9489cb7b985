/* distributed/dist_nccl.c — collectives on CUDA memory with NCCL, for the cuda
 * backend (fp32 or bf16 gradients and parameters). Built with HAVE_CUDA.
 *
 * Bootstrap: rank 0 makes the ncclUniqueId, MPI_Bcast hands it to every
 * rank, and every rank calls ncclCommInitRank on its own device. So a
 * NO_MPI build has no NCCL path either: only dist_nccl_select_device.
 *
 * Streams: the backend runs every op on one compute stream (its
 * native_stream op). Collectives run on a second stream: each start
 * records an event on the compute stream and makes the comm stream wait
 * on it, so a layer's all-reduce begins when that layer's backward has
 * finished and runs while the compute stream goes on with earlier layers.
 * wait records an event on the comm stream and makes the compute stream
 * wait on it: the optimizer sees summed gradients, and no host sync is
 * needed. ncclAllReduce and ncclReduceScatter sum (ncclSum): each rank's
 * loss gradient already carries the 1/world factor. */
#ifdef HAVE_CUDA

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

/* build/train_gpt_emu compiles this file as C++ against the emulator's
 * runtime and NCCL (dev/cuda/emu: cuda_runtime_api.h, nccl.h), so the NCCL
 * path runs under mpirun without a GPU (dev/cuda/README.md); the project's
 * own headers are C. */
#ifdef __cplusplus
#ifndef NO_MPI
#include <mpi.h>
#endif
#define _Noreturn [[noreturn]]
extern "C" {
#endif
#include "dist_internal.h"
#ifdef __cplusplus
}
#endif
#include "kernels/cuda_libs.h"

#ifndef NO_MPI
typedef struct {
    DistComm base;
    const CudaNcclApi *nc; /* NCCL's functions, opened by dist_nccl_open */
    ncclComm_t comm;
    ncclDataType_t dtype;
    size_t elem_bytes;
    cudaStream_t compute, stream;
    cudaEvent_t ready, done;
    int pending;
    /* ZeRO-3's parameter gathers: a communicator and a stream of their own,
     * so that the next block's gather, issued before this block's compute,
     * runs beside it and beside the gradients' reduce-scatters on `stream`
     * (one communicator's collectives run one after another). NULL below
     * --zero 3. */
    ncclComm_t gcomm;
    cudaStream_t gstream;
    cudaEvent_t gready, gdone;
    int gpending;
} NcclComm;

/* A failed CUDA or NCCL call ends the whole job, naming the rank. */
#define CUDA_OK(d, call)                                                                       \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess)                                                                 \
            dist_fail((d), 1, "%s failed: %s (%s:%d)", #call, cudaGetErrorString(e_),           \
                      __FILE__, __LINE__);                                                     \
    } while (0)

#define NCCL_OK(n, call)                                                                       \
    do {                                                                                       \
        ncclResult_t r_ = (call);                                                              \
        if (r_ != ncclSuccess)                                                                 \
            dist_fail((n)->base.d, 1, "%s failed: %s (%s) (%s:%d)", #call,                     \
                      (n)->nc->GetErrorString(r_), (n)->nc->GetLastError(NULL), __FILE__,      \
                      __LINE__);                                                               \
    } while (0)

/* Order the comm stream after everything enqueued on the compute stream. */
static void comm_after_compute(NcclComm *n)
{
    CUDA_OK(n->base.d, cudaEventRecord(n->ready, n->compute));
    CUDA_OK(n->base.d, cudaStreamWaitEvent(n->stream, n->ready, 0));
    n->pending = 1;
}

static char *at(NcclComm *n, void *base, size_t elem)
{
    return (char *)base + elem * n->elem_bytes;
}

static void nccl_allreduce_start(DistComm *c, void *grads, const size_t *offs,
                                 const size_t *counts, int k)
{
    NcclComm *n = (NcclComm *)c;
    comm_after_compute(n);
    NCCL_OK(n, n->nc->GroupStart());
    for (int i = 0; i < k; i++) {
        void *p = at(n, grads, offs[i]);
        NCCL_OK(n, n->nc->AllReduce(p, p, counts[i], n->dtype, ncclSum, n->comm, n->stream));
    }
    NCCL_OK(n, n->nc->GroupEnd());
}

static void nccl_reduce_scatter_start(DistComm *c, void *grads, size_t shard)
{
    NcclComm *n = (NcclComm *)c;
    comm_after_compute(n);
    /* In place: the receive buffer is this rank's own block of the send buffer. */
    void *mine = at(n, grads, (size_t)c->d->rank * shard);
    NCCL_OK(n, n->nc->ReduceScatter(grads, mine, shard, n->dtype, ncclSum, n->comm, n->stream));
}

static void nccl_wait(DistComm *c)
{
    NcclComm *n = (NcclComm *)c;
    if (!n->pending) return;
    CUDA_OK(c->d, cudaEventRecord(n->done, n->stream));
    CUDA_OK(c->d, cudaStreamWaitEvent(n->compute, n->done, 0));
    n->pending = 0;
}

/* ZeRO-2: NCCL's reduce-scatter takes equal blocks, and a piece of a
 * tensor's slice cuts the ranks' ranges unevenly: one ncclReduce per rank,
 * rooted at the rank that owns that part, in place, in one group. The
 * compute stream waits for it (nccl_wait) before the shard's add reads it
 * and the next block's backward overwrites the buffer. Unmeasured: no
 * machine here has two GPUs. */
static size_t nccl_reduce_scatterv(DistComm *c, void *buf, const size_t *counts)
{
    NcclComm *n = (NcclComm *)c;
    comm_after_compute(n);
    size_t off = 0, mine = 0;
    NCCL_OK(n, n->nc->GroupStart());
    for (int q = 0; q < c->d->world; q++) {
        if (q == c->d->rank) mine = off;
        if (counts[q]) {
            void *p = at(n, buf, off);
            NCCL_OK(n, n->nc->Reduce(p, p, counts[q], n->dtype, ncclSum, q, n->comm, n->stream));
        }
        off += counts[q];
    }
    NCCL_OK(n, n->nc->GroupEnd());
    nccl_wait(c);
    return mine;
}

static void nccl_allgather(DistComm *c, void *params, size_t shard)
{
    NcclComm *n = (NcclComm *)c;
    comm_after_compute(n);
    void *mine = at(n, params, (size_t)c->d->rank * shard);
    NCCL_OK(n, n->nc->AllGather(mine, params, shard, n->dtype, n->comm, n->stream));
    nccl_wait(c);
}

/* ZeRO-3: the compute stream waits for the gathers issued so far. */
static void nccl_gather_wait(DistComm *c)
{
    NcclComm *n = (NcclComm *)c;
    if (!n->gpending) return;
    CUDA_OK(c->d, cudaEventRecord(n->gdone, n->gstream));
    CUDA_OK(c->d, cudaStreamWaitEvent(n->compute, n->gdone, 0));
    n->gpending = 0;
}

/* ZeRO-3: the ranks' pieces are unequal (ncclAllGather needs equal
 * blocks): one ncclBroadcast per owning rank into its piece of buf, in one
 * group, on the gather stream. That stream first waits for everything the
 * compute stream has queued: the update that wrote `mine` and the last
 * reads of buf (the block two before, which used this buffer). Without
 * async the compute stream waits for it at once; with async (the next
 * block's prefetch) only at nccl_gather_wait, so the block in between
 * computes meanwhile. Checked on the emulator (dev/cuda/check_nccl_emu.py);
 * unmeasured on GPUs (no machine here has two). */
static void nccl_allgatherv(DistComm *c, const void *mine, void *buf, const size_t *counts,
                            int async)
{
    NcclComm *n = (NcclComm *)c;
    CUDA_OK(c->d, cudaEventRecord(n->gready, n->compute));
    CUDA_OK(c->d, cudaStreamWaitEvent(n->gstream, n->gready, 0));
    n->gpending = 1;
    size_t off = 0;
    NCCL_OK(n, n->nc->GroupStart());
    for (int q = 0; q < c->d->world; q++) {
        void *p = at(n, buf, off);
        if (counts[q])
            NCCL_OK(n, n->nc->Broadcast(q == c->d->rank ? mine : p, p, counts[q], n->dtype, q,
                                        n->gcomm, n->gstream));
        off += counts[q];
    }
    NCCL_OK(n, n->nc->GroupEnd());
    if (!async) nccl_gather_wait(c);
}

/* The watchdog's probe (dist_internal.h): a peer that died or a network
 * error leaves NCCL's kernels spinning; NCCL records it as the
 * communicator's asynchronous error. */
static int nccl_probe(void *ctx, char *msg, size_t len)
{
    NcclComm *n = (NcclComm *)ctx;
    ncclResult_t async = ncclSuccess;
    for (int k = 0; k < 2 && (async == ncclSuccess || async == ncclInProgress); k++) {
        ncclComm_t comm = k ? n->gcomm : n->comm;
        if (comm && n->nc->CommGetAsyncError(comm, &async) != ncclSuccess) async = ncclSuccess;
    }
    if (async == ncclSuccess || async == ncclInProgress) return 0;
    snprintf(msg, len, "NCCL reported an error: %s (NCCL_DEBUG=WARN prints which peer and "
             "why)", n->nc->GetErrorString(async));
    return 1;
}

static void nccl_close(DistComm *c)
{
    NcclComm *n = (NcclComm *)c;
    dist_watch_probe(c->d, NULL, NULL);
    CUDA_OK(c->d, cudaStreamSynchronize(n->stream));
    NCCL_OK(n, n->nc->CommDestroy(n->comm));
    if (n->gcomm) {
        CUDA_OK(c->d, cudaStreamSynchronize(n->gstream));
        NCCL_OK(n, n->nc->CommDestroy(n->gcomm));
        CUDA_OK(c->d, cudaEventDestroy(n->gready));
        CUDA_OK(c->d, cudaEventDestroy(n->gdone));
        CUDA_OK(c->d, cudaStreamDestroy(n->gstream));
    }
    CUDA_OK(c->d, cudaEventDestroy(n->ready));
    CUDA_OK(c->d, cudaEventDestroy(n->done));
    CUDA_OK(c->d, cudaStreamDestroy(n->stream));
    free(n);
}
#endif

int dist_nccl_select_device(int local_rank, int *device, char *err, size_t err_len)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
        (void)cudaGetLastError(); /* no device: the backend falls back or reports it */
        *device = -1;
        return 0;
    }
    *device = local_rank % count;
    cudaError_t e = cudaSetDevice(*device);
    if (e != cudaSuccess) {
        snprintf(err, err_len, "local rank %d: cudaSetDevice(%d) failed: %s", local_rank,
                 *device, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

#ifndef NO_MPI
DistComm *dist_nccl_open(const Dist *d, Backend *be, char *err, size_t err_len)
{
    if (!be->ops->native_stream || !be->ops->native_stream(be)) {
        snprintf(err, err_len, "the %s backend does not expose its compute stream "
                 "(BackendOps.native_stream); NCCL cannot be ordered after it", be->name);
        return NULL;
    }
    NcclComm *n = (NcclComm *)calloc(1, sizeof *n);
    if (!n) {
        snprintf(err, err_len, "out of host memory for the NCCL communicator");
        return NULL;
    }
    n->nc = cuda_libs_nccl(err, err_len);
    if (!n->nc) {
        free(n);
        return NULL;
    }
    n->compute = (cudaStream_t)be->ops->native_stream(be);
    n->elem_bytes = (size_t)be->par_bytes;
    n->dtype = be->par_bytes == 2 ? ncclBfloat16 : ncclFloat32;

    /* id[1]: ZeRO-3's second communicator, for the gathers */
    const int ncomms = d->m.zero == 3 ? 2 : 1;
    ncclUniqueId id[2];
    for (int k = 0; k < ncomms && d->rank == 0; k++) {
        ncclResult_t r = n->nc->GetUniqueId(&id[k]);
        if (r != ncclSuccess)
            dist_fail(d, 1, "ncclGetUniqueId failed: %s", n->nc->GetErrorString(r));
    }
    dist_watch_begin(d, "setting up NCCL (MPI_Bcast of the id, ncclCommInitRank)");
    MPI_Bcast(id, (int)(ncomms * sizeof id[0]), MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclResult_t r = n->nc->CommInitRank(&n->comm, d->world, id[0], d->rank);
    if (r == ncclSuccess && ncomms == 2) {
        r = n->nc->CommInitRank(&n->gcomm, d->world, id[1], d->rank);
        if (r != ncclSuccess) n->nc->CommDestroy(n->comm);
    }
    dist_watch_end(d);
    if (r != ncclSuccess) {
        snprintf(err, err_len, "ncclCommInitRank (rank %d of %d, local rank %d, CUDA device "
                 "%d) failed: %s: %s (NCCL needs one GPU per rank: %d ranks on this node need "
                 "%d visible devices)", d->rank, d->world, d->local_rank, d->device,
                 n->nc->GetErrorString(r), n->nc->GetLastError(NULL), d->local_world,
                 d->local_world);
        free(n);
        return NULL;
    }
    CUDA_OK(d, cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking));
    CUDA_OK(d, cudaEventCreateWithFlags(&n->ready, cudaEventDisableTiming));
    CUDA_OK(d, cudaEventCreateWithFlags(&n->done, cudaEventDisableTiming));
    if (n->gcomm) {
        CUDA_OK(d, cudaStreamCreateWithFlags(&n->gstream, cudaStreamNonBlocking));
        CUDA_OK(d, cudaEventCreateWithFlags(&n->gready, cudaEventDisableTiming));
        CUDA_OK(d, cudaEventCreateWithFlags(&n->gdone, cudaEventDisableTiming));
    }
    n->base = (DistComm){.name = "nccl", .allreduce_start = nccl_allreduce_start,
                         .reduce_scatter_start = nccl_reduce_scatter_start,
                         .reduce_scatterv = nccl_reduce_scatterv, .wait = nccl_wait,
                         .allgather = nccl_allgather, .allgatherv = nccl_allgatherv,
                         .gather_wait = nccl_gather_wait,
                         .close = nccl_close, .d = d,
                         .world = MPI_COMM_WORLD};
    dist_watch_probe(d, nccl_probe, n);
    return &n->base;
}
#endif

#else
/* A build without CUDA has no NCCL path; ISO C wants a declaration here. */
typedef int dist_nccl_not_built;
#endif
