/* dev/cuda/emu/emu_nccl.cpp — NCCL for the emulator (nccl.h here): the
 * collectives distributed/dist_nccl.c calls, over MPI, on the emulator's
 * device memory (host memory) and streams, so that build/train_gpt_emu runs
 * the NCCL path of --device cuda under mpirun (dev/cuda/README.md, "The NCCL
 * path on the emulator"). It also defines cuda_libs_nccl(), the table
 * kernels/cuda_libs.c would dlopen libnccl for: linked into the emulator's
 * trainer only, in place of cuda_libs.o.
 *
 * Semantics, NCCL's: a collective is checked when it is called (arguments,
 * the in-place layouts NCCL defines, every buffer inside one live device
 * allocation, and, stricter than NCCL, that its stream is ordered after
 * every kernel launched before the call: emu_stream_ordered, since the
 * emulator runs kernels at their launch and a missing wait would never
 * show in the sums) and runs on its stream, in the stream's order, as a host
 * function (cudaLaunchHostFunc): when the emulator runs that stream's queue
 * (EMU_ORDER), not at the call. Between ncclGroupStart and ncclGroupEnd the
 * calls are collected and enqueued at the outermost ncclGroupEnd, as one
 * item, on their one stream; ncclSend and ncclRecv in a group are posted
 * (MPI_Isend/MPI_Irecv) before its collectives run and completed after, so
 * a group may hold every rank's sends and receives in any order, as on NCCL.
 * Sums run in the order of NCCL's ring, modelled, not in rank order: the
 * sum that ends on rank k (a reduce-scatter's block k, a reduce's root k,
 * an all-reduce's k-th of W equal chunks) starts from rank k+1's value and
 * adds the ranks in ring order, k+2, ..., ending with rank k's, rounding
 * to the data type after each add (NCCL on a GPU rounds bf16 at each step
 * of its ring). So, from 3 ranks, an all-reduce and a reduce-scatter of
 * the same values differ in the last bits, as they may on GPUs, and a
 * caller that needs one order whatever the collective (dist_nccl.c's
 * rank-order sums, with ncclSend/ncclRecv and a kernel of its own) is
 * checked against a library order that is not its own. The bits are
 * still the same on every rank and at every run; they are not a GPU's
 * (whose ring, tree or NVLS order follows topology and size).
 *
 * Limits: a communicator spans MPI_COMM_WORLD in its rank order (what
 * dist_nccl_open makes); one stream per group; ncclSum on ncclFloat32 and
 * ncclBfloat16 only (the rest: ncclInvalidArgument); counts up to INT_MAX
 * bytes per rank (MPI's int counts); no asynchronous errors (a failed MPI
 * call aborts the job, MPI's default). */
#include "nccl.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vector>

/* cuda_libs.h declares the table under HAVE_CUDA; this file is the emulated
 * CUDA build's, whatever the tree's own build is. */
#ifndef HAVE_CUDA
#define HAVE_CUDA 1
#endif
#include "kernels/cuda_libs.h"

#ifndef NO_MPI
#include <mpi.h>

struct ncclComm {
    MPI_Comm mpi; /* a duplicate of MPI_COMM_WORLD: its own matching space */
    int rank, nranks;
};

/* NCCL keeps the last error's text per process (ncclGetLastError). */
static char last_error[512];

static ncclResult_t fail(ncclResult_t r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return r;
}

enum OpKind { OP_ALLREDUCE, OP_REDUCESCATTER, OP_ALLGATHER, OP_BROADCAST, OP_REDUCE, OP_SEND,
              OP_RECV };

struct Op {
    OpKind kind;
    const void *send;
    void *recv;
    size_t count; /* elements: per rank's block for ReduceScatter (recvcount) and
                     AllGather (sendcount), else the whole buffer */
    size_t elem;  /* bytes per element */
    int bf16;
    int root;     /* ncclSend/ncclRecv: the peer */
    ncclComm_t comm;
    cudaStream_t stream;
};

/* ncclGroupStart/End nest; calls inside are collected. Process-wide, as
 * NCCL's group state is per host thread and the trainer calls from one. */
struct Group {
    int depth;
    std::vector<Op> ops;
};
static Group group;

/* ---- the work, on a stream (a host function: no CUDA runtime calls) ---- */

static float load(const Op &o, const char *p, size_t i)
{
    if (!o.bf16) {
        float f;
        memcpy(&f, p + i * 4, 4);
        return f;
    }
    __nv_bfloat16 b;
    memcpy(&b.bits, p + i * 2, 2);
    return __bfloat162float(b);
}

static void store(const Op &o, char *p, size_t i, float v)
{
    if (!o.bf16) {
        memcpy(p + i * 4, &v, 4);
        return;
    }
    const __nv_bfloat16 b = __float2bfloat16(v);
    memcpy(p + i * 2, &b.bits, 2);
}

/* A value rounded to the op's data type (bf16: to nearest even). */
static float round_to(const Op &o, float v)
{
    return o.bf16 ? __bfloat162float(__float2bfloat16(v)) : v;
}

/* dst[i] = the ranks' blocks[q][i] summed in the ring order that ends on
 * rank last(i) (see the top: from last + 1 round to last, each partial sum
 * rounded to the data type), i < n; blocks[q] at all + q * stride bytes.
 * last(i) is `last`, or with chunk > 0 the chunk i lies in (i / chunk, an
 * all-reduce's). */
static void sum_blocks(const Op &o, char *dst, const char *all, size_t stride, size_t n,
                       int last, size_t chunk)
{
    const int world = o.comm->nranks;
    for (size_t i = 0; i < n; i++) {
        const int k = chunk ? (int)(i / chunk) % world : last;
        float acc = load(o, all + (size_t)((k + 1) % world) * stride, i);
        for (int s = 2; s <= world; s++)
            acc = round_to(o, acc + load(o, all + (size_t)((k + s) % world) * stride, i));
        store(o, dst, i, acc);
    }
}

static void run_op(const Op &o)
{
    const ncclComm &c = *o.comm;
    const size_t n = o.count * o.elem; /* bytes */
    const int bytes = (int)n;          /* checked at the call */
    std::vector<char> tmp;
    switch (o.kind) {
    case OP_ALLREDUCE:
        tmp.resize(n * (size_t)c.nranks);
        MPI_Allgather(o.send, bytes, MPI_BYTE, tmp.data(), bytes, MPI_BYTE, c.mpi);
        sum_blocks(o, (char *)o.recv, tmp.data(), n, o.count, 0,
                   (o.count + (size_t)c.nranks - 1) / (size_t)c.nranks);
        break;
    case OP_REDUCESCATTER:
        /* rank q's block of every rank's send buffer goes to rank q */
        tmp.resize(n * (size_t)c.nranks);
        MPI_Alltoall(o.send, bytes, MPI_BYTE, tmp.data(), bytes, MPI_BYTE, c.mpi);
        sum_blocks(o, (char *)o.recv, tmp.data(), n, o.count, c.rank, 0);
        break;
    case OP_ALLGATHER:
        tmp.assign((const char *)o.send, (const char *)o.send + n); /* in place: send is in recv */
        MPI_Allgather(tmp.data(), bytes, MPI_BYTE, o.recv, bytes, MPI_BYTE, c.mpi);
        break;
    case OP_BROADCAST:
        if (c.rank == o.root && o.send != o.recv) memmove(o.recv, o.send, n);
        MPI_Bcast(o.recv, bytes, MPI_BYTE, o.root, c.mpi);
        break;
    case OP_REDUCE:
        if (c.rank == o.root) tmp.resize(n * (size_t)c.nranks);
        MPI_Gather(o.send, bytes, MPI_BYTE, tmp.data(), bytes, MPI_BYTE, o.root, c.mpi);
        if (c.rank == o.root) sum_blocks(o, (char *)o.recv, tmp.data(), n, o.count, o.root, 0);
        break;
    case OP_SEND:
    case OP_RECV:
        break; /* posted and completed by run_ops */
    }
}

/* The tag of ncclSend/ncclRecv's messages on a communicator's MPI
 * duplicate (its only point-to-point messages: pairs match in order). */
#define TAG_P2P 7

/* A group's sends and receives are posted first, its collectives run in
 * order, then the point-to-point requests complete: every rank posts all
 * of a group's before it waits, so no order of them within a group can
 * deadlock (NCCL's rule for grouped ncclSend/ncclRecv). */
static void run_ops(void *p)
{
    std::vector<Op> *ops = (std::vector<Op> *)p;
    std::vector<MPI_Request> reqs;
    for (const Op &o : *ops) {
        const int bytes = (int)(o.count * o.elem); /* checked at the call */
        if (o.kind != OP_SEND && o.kind != OP_RECV) continue;
        reqs.emplace_back();
        if (o.kind == OP_SEND)
            MPI_Isend(o.send, bytes, MPI_BYTE, o.root, TAG_P2P, o.comm->mpi, &reqs.back());
        else
            MPI_Irecv(o.recv, bytes, MPI_BYTE, o.root, TAG_P2P, o.comm->mpi, &reqs.back());
    }
    for (const Op &o : *ops) run_op(o);
    if (!reqs.empty()) MPI_Waitall((int)reqs.size(), reqs.data(), MPI_STATUSES_IGNORE);
    delete ops;
}

static ncclResult_t enqueue(std::vector<Op> *ops)
{
    if (cudaLaunchHostFunc((*ops)[0].stream, run_ops, ops) != cudaSuccess) {
        delete ops;
        return fail(ncclUnhandledCudaError, "cudaLaunchHostFunc failed on the emulator");
    }
    return ncclSuccess;
}

/* ---- the calls: checked now, run on the stream ---- */

static bool overlap(const void *a, size_t an, const void *b, size_t bn)
{
    const char *x = (const char *)a, *y = (const char *)b;
    return x < y + bn && y < x + an;
}

/* what: the function's name. send_n, recv_n: the bytes NCCL reads from
 * send and writes to recv on this rank (0: none). in_place: the address
 * NCCL's in-place form puts send at (NULL: none). */
static ncclResult_t issue(const char *what, Op o, ncclDataType_t dt, ncclRedOp_t op,
                          size_t send_n, size_t recv_n, const void *in_place)
{
    if (!o.comm) return fail(ncclInvalidArgument, "%s: comm is NULL", what);
    if (dt != ncclFloat32 && dt != ncclBfloat16)
        return fail(ncclInvalidArgument, "%s: data type %d (the emulator sums ncclFloat32 and "
                    "ncclBfloat16 only)", what, (int)dt);
    if (op != ncclSum)
        return fail(ncclInvalidArgument, "%s: reduction %d (the emulator has ncclSum only)",
                    what, (int)op);
    if (o.root < 0 || o.root >= o.comm->nranks)
        return fail(ncclInvalidArgument, "%s: %s %d of %d ranks", what,
                    o.kind == OP_SEND || o.kind == OP_RECV ? "peer" : "root", o.root,
                    o.comm->nranks);
    o.elem = dt == ncclBfloat16 ? 2 : 4;
    o.bf16 = dt == ncclBfloat16;
    if (o.count > (size_t)INT_MAX / o.elem / (size_t)o.comm->nranks)
        return fail(ncclInvalidArgument, "%s: %zu elements (the emulator's MPI counts are int)",
                    what, o.count);
    const size_t es = o.elem;
    send_n *= es;
    recv_n *= es;
    if ((send_n && !o.send) || (recv_n && !o.recv))
        return fail(ncclInvalidArgument, "%s: a NULL buffer", what);
    if (send_n && !emu_device_span(o.send, send_n))
        return fail(ncclInvalidArgument, "%s (rank %d): sendbuff %p + %zu bytes is not inside "
                    "one device allocation", what, o.comm->rank, o.send, send_n);
    if (recv_n && !emu_device_span(o.recv, recv_n))
        return fail(ncclInvalidArgument, "%s (rank %d): recvbuff %p + %zu bytes is not inside "
                    "one device allocation", what, o.comm->rank, o.recv, recv_n);
    if (send_n && recv_n && o.send != in_place && overlap(o.send, send_n, o.recv, recv_n))
        return fail(ncclInvalidArgument, "%s (rank %d): sendbuff and recvbuff overlap but not "
                    "as the in-place form (sendbuff %p, in place %p)", what, o.comm->rank,
                    o.send, in_place);
    char why[256];
    if (!emu_stream_ordered(o.stream, why, sizeof why))
        return fail(ncclInvalidUsage, "%s (rank %d): %s: on a GPU it could read its buffers "
                    "before those kernels wrote them", what, o.comm->rank, why);
    if (group.depth) {
        if (!group.ops.empty() && group.ops[0].stream != o.stream)
            return fail(ncclInvalidUsage, "%s: a second stream in one group (the emulator "
                        "takes one stream per group)", what);
        group.ops.push_back(o);
        return ncclSuccess;
    }
    return enqueue(new std::vector<Op>(1, o));
}

extern "C" {

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream)
{
    Op o = {OP_ALLREDUCE, sendbuff, recvbuff, count, 0, 0, 0, comm, stream};
    return issue("ncclAllReduce", o, datatype, op, count, count, recvbuff);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream)
{
    Op o = {OP_REDUCESCATTER, sendbuff, recvbuff, recvcount, 0, 0, 0, comm, stream};
    const int r = comm ? comm->rank : 0, w = comm ? comm->nranks : 1;
    const size_t es = datatype == ncclBfloat16 ? 2 : 4;
    /* in place: recvbuff is this rank's block of sendbuff */
    return issue("ncclReduceScatter", o, datatype, op, recvcount * (size_t)w, recvcount,
                 (const char *)recvbuff - (size_t)r * recvcount * es);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    Op o = {OP_ALLGATHER, sendbuff, recvbuff, sendcount, 0, 0, 0, comm, stream};
    const int r = comm ? comm->rank : 0, w = comm ? comm->nranks : 1;
    const size_t es = datatype == ncclBfloat16 ? 2 : 4;
    /* in place: sendbuff is this rank's block of recvbuff */
    return issue("ncclAllGather", o, datatype, ncclSum, sendcount, sendcount * (size_t)w,
                 (const char *)recvbuff + (size_t)r * sendcount * es);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream)
{
    Op o = {OP_BROADCAST, sendbuff, recvbuff, count, 0, 0, root, comm, stream};
    const int is_root = comm && comm->rank == root;
    return issue("ncclBroadcast", o, datatype, ncclSum, is_root ? count : 0, count, recvbuff);
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream)
{
    Op o = {OP_REDUCE, sendbuff, recvbuff, count, 0, 0, root, comm, stream};
    const int is_root = comm && comm->rank == root;
    return issue("ncclReduce", o, datatype, op, count, is_root ? count : 0, recvbuff);
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream)
{
    Op o = {OP_SEND, sendbuff, NULL, count, 0, 0, peer, comm, stream};
    return issue("ncclSend", o, datatype, ncclSum, count, 0, NULL);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream)
{
    Op o = {OP_RECV, NULL, recvbuff, count, 0, 0, peer, comm, stream};
    return issue("ncclRecv", o, datatype, ncclSum, 0, count, NULL);
}

ncclResult_t ncclGroupStart(void)
{
    group.depth++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
    if (group.depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--group.depth || group.ops.empty()) return ncclSuccess;
    std::vector<Op> *ops = new std::vector<Op>;
    ops->swap(group.ops);
    return enqueue(ops);
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    /* unique enough for one machine: the process and a count */
    static unsigned made;
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "emu-nccl pid %ld #%u", (long)getpid(), ++made);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    int init = 0, world = 0, me = 0;
    MPI_Initialized(&init);
    if (!init)
        return fail(ncclInvalidUsage, "ncclCommInitRank: the emulated NCCL runs over MPI, and "
                    "MPI is not initialised");
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (nranks != world || rank != me)
        return fail(ncclInvalidUsage, "ncclCommInitRank: rank %d of %d, but the emulator's "
                    "communicator is MPI_COMM_WORLD (rank %d of %d)", rank, nranks, me, world);
    ncclComm *c = new ncclComm;
    c->rank = rank;
    c->nranks = nranks;
    MPI_Comm_dup(MPI_COMM_WORLD, &c->mpi);
    /* Every rank must pass rank 0's id (the caller broadcasts it) and, as
     * NCCL requires, a device of its own on its host. */
    struct {
        ncclUniqueId id;
        char host[64];
        int device;
    } mine, *all = new decltype(mine)[(size_t)world];
    memset(&mine, 0, sizeof mine);
    mine.id = commId;
    gethostname(mine.host, sizeof mine.host - 1);
    cudaGetDevice(&mine.device);
    MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, c->mpi);
    ncclResult_t r = ncclSuccess;
    for (int q = 0; q < world && r == ncclSuccess; q++) {
        if (memcmp(&all[q].id, &all[0].id, sizeof all[0].id))
            r = fail(ncclInvalidUsage, "ncclCommInitRank: rank %d's ncclUniqueId is not rank "
                     "0's", q);
        for (int p = 0; p < q && r == ncclSuccess; p++)
            if (!strcmp(all[p].host, all[q].host) && all[p].device == all[q].device)
                r = fail(ncclInvalidUsage, "ncclCommInitRank: duplicate GPU: rank %d and rank "
                         "%d both on CUDA device %d of %s (EMU_DEVICES sets the emulator's "
                         "device count)", p, q, all[q].device, all[q].host);
    }
    delete[] all;
    if (r != ncclSuccess) {
        MPI_Comm_free(&c->mpi);
        delete c;
        return r;
    }
    *comm = c;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (!comm) return fail(ncclInvalidArgument, "ncclCommDestroy: comm is NULL");
    MPI_Comm_free(&comm->mpi);
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    if (!comm) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: comm is NULL");
    *asyncError = ncclSuccess;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return last_error;
}

} /* extern "C" */

/* kernels/cuda_libs.h: the table dist_nccl.c calls through, here the
 * functions above, linked in (see the header comment). */
const CudaNcclApi *cuda_libs_nccl(char *err, size_t err_len)
{
    (void)err, (void)err_len;
#define EMU_NCCL_FN(prefix, name) prefix##name,
    static const CudaNcclApi api = {CUDA_LIBS_NCCL_FUNCS(EMU_NCCL_FN)};
#undef EMU_NCCL_FN
    return &api;
}

#else
/* NO_MPI: no ranks, so no communicator (dist_nccl.c builds no NCCL path). */
const CudaNcclApi *cuda_libs_nccl(char *err, size_t err_len)
{
    snprintf(err, err_len, "the emulated NCCL needs MPI (a NO_MPI build)");
    return NULL;
}
#endif
