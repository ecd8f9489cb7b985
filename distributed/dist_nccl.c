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
 * on it, so a layer's sum begins when that layer's backward has finished
 * and runs while the compute stream goes on with earlier layers. wait
 * records an event on the comm stream and makes the compute stream wait
 * on it: the optimizer sees summed gradients, and no host sync is needed.
 *
 * Sums: in rank order, ours, not NCCL's (dist.h, Order of sums): NCCL's
 * ncclAllReduce, ncclReduceScatter and ncclReduce add in the order of
 * their algorithm (ring, tree or NVLS, by topology, size, version and
 * NCCL_ALGO) and in bf16 round each partial sum, so --zero 0 and --zero
 * 1..3 could differ in the last bits from 3 GPUs. Here NCCL only moves
 * bytes (ncclSend/ncclRecv; ncclBroadcast and ncclAllGather for
 * parameters) and a kernel of ours adds (ordered_sum, kernels/rank_sum.h). Each rank's loss gradient
 * already carries the 1/world factor. The cost against NCCL's ring,
 * unmeasured (no machine here has two GPUs): the same bytes leave each
 * rank, (W-1)/W of the range, but as W-1 point-to-point messages at once
 * instead of a pipelined ring; each rank's sum is one extra kernel
 * reading W slices (NCCL fuses the add into its copy); --zero 0 sends
 * the sums back the same way (W-1 sends of each rank's piece) instead of
 * the ring all-gather half of an all-reduce. Within a node (NVLink, all pairs connected) the
 * bytes are the same; across nodes the all-to-all pattern loads the
 * network at once where a ring spreads it, and NCCL's tree and NVLS
 * algorithms, which can beat a ring at scale, are not used. */
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
#include "kernels/rank_sum.h"

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

/* Elements of a piece of `count` that round `i` (of `chunk` elements each) holds. */
static size_t round_part(size_t count, size_t i, size_t chunk)
{
    return count > i ? (count - i < chunk ? count - i : chunk) : 0;
}

/* The ordered sum (dist.h, Order of sums), enqueued on the comm stream
 * (the caller has ordered it after the compute stream): buf is world
 * pieces of counts[q] elements in rank order; rank r's piece becomes,
 * element by element, ((x_0 + x_1) + x_2) + ... + x_{W-1}. In one group
 * each rank sends piece q to rank q (ncclSend) and receives every other
 * rank's copy of its own piece into slot q of reduce_buf (ncclRecv); then
 * cuda_rank_sum adds the copies in rank order from rank 0's, its own read
 * in place. Pieces longer than reduce_chunk go in rounds, as on MPI; the
 * next round's receives follow the kernel on the same stream, so they
 * never overwrite slots it still reads. Returns where this rank's sum lies
 * in buf (its own piece). */
static size_t ordered_sum(NcclComm *n, void *buf, const size_t *counts)
{
    const Dist *d = n->base.d;
    int W = d->world, r = d->rank;
    size_t chunk = d->m.reduce_chunk, most = 0, pos = 0, mine = 0;
    for (int q = 0; q < W; q++) {
        if (q == r) mine = pos;
        pos += counts[q];
        if (counts[q] > most) most = counts[q];
    }
    if (W == 1) return mine;
    if (!d->m.reduce_buf || !chunk)
        dist_fail(d, 1, "internal error: no receive buffer for sums over ranks");
    for (size_t i = 0; i < most; i += chunk) {
        size_t nr = round_part(counts[r], i, chunk), off = 0;
        NCCL_OK(n, n->nc->GroupStart());
        for (int q = 0; q < W; q++) {
            size_t nq = round_part(counts[q], i, chunk);
            if (q != r && nr)
                NCCL_OK(n, n->nc->Recv(at(n, d->m.reduce_buf, (size_t)q * chunk), nr, n->dtype, q,
                                       n->comm, n->stream));
            if (q != r && nq)
                NCCL_OK(n, n->nc->Send(at(n, buf, off + i), nq, n->dtype, q, n->comm, n->stream));
            off += counts[q];
        }
        NCCL_OK(n, n->nc->GroupEnd());
        /* every round on every rank, nr = 0 too: see kernels/rank_sum.h */
        CUDA_OK(d, (cudaError_t)cuda_rank_sum(n->stream, at(n, buf, mine + i), d->m.reduce_buf,
                                              chunk, nr, W, r, n->elem_bytes == 2));
    }
    return mine;
}

/* --zero 0, as the grad hook reports a range final: the ordered sum of its
 * pieces, then, in one group, each rank sends its piece's sums to every
 * other rank and receives theirs into place (an all-gather with one count
 * per rank: bytes move, nothing is added; ncclAllGather needs equal
 * blocks), both on the comm stream after the backward so far, so they
 * overlap the backward of earlier layers; nccl_wait orders the optimizer
 * after them. */
static void nccl_allreduce_start(DistComm *c, void *buf, const size_t *counts)
{
    NcclComm *n = (NcclComm *)c;
    int W = c->d->world, r = c->d->rank;
    if (W == 1) return;
    comm_after_compute(n);
    size_t mine = ordered_sum(n, buf, counts), off = 0;
    NCCL_OK(n, n->nc->GroupStart());
    for (int q = 0; q < W; q++) {
        if (q != r && counts[r])
            NCCL_OK(n, n->nc->Send(at(n, buf, mine), counts[r], n->dtype, q, n->comm, n->stream));
        if (q != r && counts[q])
            NCCL_OK(n, n->nc->Recv(at(n, buf, off), counts[q], n->dtype, q, n->comm, n->stream));
        off += counts[q];
    }
    NCCL_OK(n, n->nc->GroupEnd());
}

static void nccl_wait(DistComm *c)
{
    NcclComm *n = (NcclComm *)c;
    if (!n->pending) return;
    CUDA_OK(c->d, cudaEventRecord(n->done, n->stream));
    CUDA_OK(c->d, cudaStreamWaitEvent(n->compute, n->done, 0));
    n->pending = 0;
}

/* ZeRO-1 (the whole padded vector, after backward) and ZeRO-2/3 (each
 * piece of a block as its backward ends): the ordered sum, then the
 * compute stream waits for it (nccl_wait) before the optimizer or the
 * shard's add reads it and the next block's backward overwrites the
 * buffer. Unmeasured on GPUs: no machine here has two. */
static size_t nccl_reduce_scatterv(DistComm *c, void *buf, const size_t *counts)
{
    NcclComm *n = (NcclComm *)c;
    if (c->d->world == 1) return 0;
    comm_after_compute(n);
    size_t mine = ordered_sum(n, buf, counts);
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
