/* distributed/dist.h — data-parallel training over processes: MPI launches the
 * ranks and agrees on scalars; NCCL (cuda backend) or MPI (cpu backend)
 * moves gradients and parameters.
 *
 * Owns: the world (rank, local rank, world size), the choice of collective
 * library, averaging gradients during backward, ZeRO-1's reduce-scatter and
 * all-gather, ZeRO-2's reduce-scatter of each block's gradients, averages of scalars (loss, val loss), sums of counts
 * (evaluation), gathering full fp32 parameters for saving, and fatal
 * errors that must end every rank.
 *
 * Launch. MPI is initialised only when a launcher started the process
 * (mpirun/mpiexec: OMPI_COMM_WORLD_SIZE, MV2_COMM_WORLD_SIZE; srun or
 * another PMI launcher such as Hydra: PMIX_RANK, PMI_RANK or PMI_SIZE). Without one the process is rank 0 of 1
 * and never calls MPI: no collectives, no MPI start-up cost. Under a
 * launcher the collectives run even at world size 1 (mpirun -np 1 checks
 * the path end to end). srun tasks that cannot form one world (a step of
 * several tasks, SLURM_STEP_NUM_TASKS > 1, without PMI variables, or an
 * MPI that finds a world of 1 there) are refused: each would train alone.
 * A build without MPI (make NO_MPI=1) refuses any launcher: it is one
 * process, rank 0 of 1, with neither MPI nor NCCL collectives.
 *
 * Devices. Local rank (dist_local_rank: the launcher's variable,
 * OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or MV2_COMM_WORLD_LOCAL_RANK,
 * else SLURM_LOCALID when srun started this rank, else the rank in
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)) picks CUDA device
 * local_rank % visible devices, before the backend opens (srun
 * --gpus-per-task=1 shows each rank one device: device 0 of its own). NCCL
 * refuses two ranks on one device; that error names the rank.
 *
 * Order of sums. Every float sum over ranks is added by train_gpt in a
 * fixed order, not by the collective library (whose algorithm, and so
 * order, changes with message size and world size), on both paths: each
 * element's sum is ((x_0 + x_1) + x_2) + ... + x_{W-1}, x_q being rank q's
 * value, at every --zero, message size and world size. The gradient
 * vector is cut into rank blocks (block_params: ZeRO-1's shards, the same
 * cut at --zero 0); for any range of it, each rank sends every other rank
 * the part inside that rank's block and adds the W copies of its own part
 * in rank order (an ordered reduce-scatter): on MPI (cpu) with
 * MPI_Isend/MPI_Irecv and a loop (dist_mpi.c), on NCCL (cuda) with
 * ncclSend/ncclRecv in one group and a kernel (dist_nccl.c,
 * kernels/rank_sum.h; bf16 copies are added in fp32 and rounded once).
 * Received pieces go through a buffer of W x reduce_chunk elements that
 * the planner plans (model/planner.h, PLANNER_REDUCE_CHUNK; device memory
 * on cuda); longer pieces go in rounds, which changes no element's sum.
 * Each rank sends (W-1)/W of the range, as a ring reduce-scatter does, but
 * as W-1 messages at once to every other rank instead of a ring's W-1
 * steps to one neighbour (on GPUs also one more kernel, and no NCCL tree
 * or NVLS: dist_nccl.c; unmeasured, no machine here has two GPUs). The
 * gradient norm is the rank-order sum
 * of each block's squared norm at every stage; scalars (loss, val loss,
 * counts, evaluation sums) are all-gathered and added in rank order (MPI on
 * the host, on both paths). So --zero 0, 1, 2 and 3 give the same bits at
 * any world size (with one micro-batch a step; see ZeRO-2 for grad-accum),
 * on either path (the two paths' kernels differ, so cpu and cuda do not
 * give each other's bits).
 *
 * Gradients (--zero 0). Each rank's backward scales its loss gradient by
 * 1/(B*T*grad_accum*world). MPI: after the last micro-batch's backward
 * (dist_finish_grads) the whole gradient is summed by the ordered
 * reduce-scatter and the sums all-gathered (MPI_Allgatherv, a copy), so
 * nothing overlaps the backward. NCCL: on the last micro-batch of a step,
 * every layer's gradient slices are summed over ranks (the ordered
 * reduce-scatter of each slice, then each rank's sums sent to every rank,
 * a copy, on a separate CUDA stream that waits on an event of the compute
 * stream) as soon as the model's grad hook reports them final, so
 * the reduction overlaps the backward of earlier layers; dist_finish_grads
 * makes the compute stream wait.
 *
 * ZeRO-1 (--zero 1). AdamW m, v and the fp32 master are sharded by
 * contiguous ranges of the flat parameter vector (model/planner.h:
 * planner_shard_range, PLANNER_SHARD_ALIGN). After backward the padded
 * gradient vector is reduce-scattered (the ordered reduce-scatter): rank r
 * receives the sum of its own block. The
 * clipping norm is the square root of the sum over ranks of each shard's
 * squared norm, i.e. the norm of the full reduced gradient. Each rank
 * updates its range (weight decay follows each element's tensor), then the
 * parameters are all-gathered (MPI_Allgather / ncclAllGather) so every rank
 * holds identical parameters again. The reduce-scatter runs once, after
 * backward: shards are ranges of the flat vector, which cut across layers,
 * so no shard is final before the last layer's backward. With --zero 1 the
 * optimizer state of a checkpoint is the concatenation of the ranks'
 * shards in rank order, truncated to num_params: it can be re-split for
 * any other world size with planner_shard_range.
 *
 * ZeRO-2 (--zero 2). The same ranges and the same all-gather, and each
 * rank keeps only its block of the gradients. The model's backward writes
 * the full gradients of one block (or of wte, wpe and LN_f) into a
 * full-size buffer; as soon as a range is final (dist_grads_scatter, in
 * every micro-batch, not only the last) it is reduce-scattered with one
 * count per rank (the ordered reduce-scatter), and each rank adds its
 * part into its shard. Blocking, so the buffer can be reused
 * by the next block: no overlap with backward. With one micro-batch a
 * step the shard holds the same sums as ZeRO-1's block; with grad-accum
 * the ranks' micro-batch sums are added in micro-batch order instead of
 * each rank first summing its own micro-batches (float rounding).
 *
 * ZeRO-3 (--zero 3). ZeRO-2's gradients, and each rank keeps only its block
 * of the parameters (DistModel params is the shard): the model asks for
 * each slice it is about to read (dist_params_gather: MPI_Allgatherv with
 * one count per rank; on NCCL one ncclBroadcast per owning rank in a
 * group, compiled, not run), and dist_share_params does nothing.
 *
 * Errors. dist_fail prints the message with the rank and, under MPI, calls
 * MPI_Abort so the whole job exits non-zero instead of hanging in a
 * collective.
 *
 * Timeouts. A rank that stops taking part (a crash the launcher did not
 * notice, a wedged device, a node gone) would leave the others waiting in
 * a collective for ever. dist_set_timeout starts a watchdog thread
 * (dist_watch.c): every wait on the other ranks is timed, MPI collectives
 * on either path, and on the NCCL path the host's waits for NCCL's work
 * (communicator set-up, the gradient norm after the all-reduce or
 * reduce-scatter, the device sync after ZeRO-1's all-gather). A wait longer
 * than the timeout prints one line naming it and exits with
 * DIST_EXIT_TIMEOUT; the launcher then ends the rest, and each rank's own
 * watchdog ends it anyway. The timeout must exceed the longest time one
 * rank can work alone while others wait: rank 0 writing a save or
 * printing a sample. On the NCCL path the watchdog also polls the
 * communicator's asynchronous error during each wait (ncclCommGetAsyncError:
 * a peer gone, a network error), and ends the rank with status 1 and
 * NCCL's reason at once instead of waiting out the timeout. */
#ifndef DISTRIBUTED_DIST_H
#define DISTRIBUTED_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/backend.h"

typedef struct DistComm DistComm; /* the collective library, dist_internal.h */
typedef struct DistWatch DistWatch; /* the watchdog, dist_watch.c */

/* Exit status of a rank whose wait on the others timed out. */
#define DIST_EXIT_TIMEOUT 3

/* The model as this layer sees it. distributed/ sits beside model/ and
 * includes none of it: the layer above both (the CLI's cli/dist_attach.c) fills
 * this from a GPT. Vectors are flat, on the backend's device, in its par
 * dtype (be->par_bytes wide); lengths are in elements. */
typedef struct {
    Backend *be;                 /* the model's backend: its stream, sync, dtype */
    void *params, *grads;        /* padded_params elements each (ZeRO-2 grads, ZeRO-3
                                  * params: the shard_params of this rank's block) */
    size_t num_params;           /* real parameters (a saved vector's length) */
    size_t padded_params;        /* world * shard_params */
    size_t shard_params;         /* one rank's ZeRO-1 block */
    size_t block_params;         /* the blocks sums over ranks are cut into (Order of
                                  * sums): shard_params under --zero, the same cut at 0 */
    void *reduce_buf;            /* world x reduce_chunk elements: the receive buffer of
                                  * the ordered sums (device memory; NULL at world 1) */
    size_t reduce_chunk;         /* elements per rank piece in it */
    int zero;                    /* 1: AdamW state sharded (ZeRO-1); 2: and the
                                  * gradients (ZeRO-2); 3: and the parameters */
    int has_master;              /* fp32 master copies beside bf16 params */
    void *model;                 /* handed back to the functions below */
    /* num_params floats of the vector, as fp32, to host; under ZeRO-1
     * only this rank's block of a sharded vector is right. */
    void (*get_params)(void *model, float *host);
    void (*get_grads)(void *model, float *host);
    double (*grad_norm)(void *model);          /* of the whole gradient vector */
    double (*grad_norm_sq_local)(void *model); /* squared, of this rank's block */
    /* squared, of [flat, flat + n) of the full vector (--zero 0) */
    double (*grad_norm_sq_range)(void *model, size_t flat, size_t n);
    /* ZeRO-2: add n elements of src (device, par dtype) into this rank's
     * gradient shard at flat element `flat` (inside its block). */
    void (*grads_add)(void *model, size_t flat, const void *src, size_t n);
} DistModel;

typedef struct {
    int rank, world;             /* 0 and 1 without a launcher */
    int local_rank, local_world; /* on this node */
    int mpi;                     /* 1 when MPI was initialised */
    int device;                  /* CUDA device chosen, -1 none */
    DistModel m;                 /* set by dist_attach */
    DistComm *comm;              /* NULL without MPI */
    int armed;                   /* this micro-batch's gradients are reduced */
    DistWatch *watch;            /* NULL: no timeout */
    size_t *rs_counts;           /* world counts, one a rank (under MPI; else NULL) */
} Dist;

/* 1 when a launcher (mpirun, srun) started this process. */
int dist_launched(void);

/* One line for --version: "distributed: MPI (Open MPI v4.1.4)" (and NCCL
 * with CUDA), or "distributed: none (built with NO_MPI=1: one process
 * only)". */
void dist_build_info(char *buf, size_t len);

/* Join the world (MPI_Init_thread when launched, see the top). Returns 0,
 * or -1 with a message in err (after MPI_Init when d->mpi is set). */
int dist_init(Dist *d, int *argc, char ***argv, char *err, size_t err_len);

/* The rank of this process among those on its node, which picks its
 * device: the launcher's word for it (see Devices above; SLURM_LOCALID
 * only when SLURM_PROCID is `rank`), else node_rank (this rank's place
 * among the ranks sharing its memory, MPI_COMM_TYPE_SHARED). */
int dist_local_rank(int rank, int node_rank);

/* Time every wait on the other ranks: one longer than `seconds` ends
 * the process with DIST_EXIT_TIMEOUT (see the top). No-op without MPI or
 * when seconds <= 0. */
int dist_set_timeout(Dist *d, double seconds, char *err, size_t err_len);

/* Before the backend opens: make CUDA device local_rank % count current
 * (cuda builds with a visible device; a no-op otherwise). */
int dist_select_device(Dist *d, char *err, size_t err_len);

/* After the model is placed (rank r of world, ZeRO-1 or not): open the
 * collectives for its backend (NCCL for cuda, MPI for cpu). The caller then
 * installs dist_grads_ready as the model's gradient hook. Returns 0, or -1
 * with a message. Without MPI it only records m. */
int dist_attach(Dist *d, const DistModel *m, char *err, size_t err_len);

/* The model's gradient hook (ctx = the Dist): ranges [offs[k], offs[k] +
 * counts[k]) of the gradient vector are final for this step; on the last
 * micro-batch under --zero 0 their sum over ranks starts at once. */
void dist_grads_ready(void *ctx, const size_t *offs, const size_t *counts, int n);

/* The model's ZeRO-2 gradient hook (ctx = the Dist; model/gpt.h,
 * GradScatterFn): in every micro-batch, for each range [offs[k], offs[k] +
 * counts[k]) held whole in src[k], the part each rank's block covers is
 * summed onto that rank (a reduce-scatter with one count per rank) and
 * added into its shard with grads_add. Blocking (see ZeRO-2 above). */
void dist_grads_scatter(void *ctx, void *const *src, const size_t *offs, const size_t *counts,
                        int n);

/* The model's ZeRO-3 parameter hook (ctx = the Dist; model/gpt.h,
 * ParamGatherFn): for each range [offs[k], offs[k] + counts[k]), every
 * rank sends the part its block covers from its shard (params) and dst[k]
 * receives the whole range (an all-gather with one count per rank).
 * Blocking, or with async (a prefetch) complete once dist_params_wait (the
 * model's ParamWaitFn) returns. */
void dist_params_gather(void *ctx, void *const *dst, const size_t *offs, const size_t *counts,
                        int n, int async);
void dist_params_wait(void *ctx);

/* "nccl", "mpi", or "none (no launcher)": the collectives the ranks use,
 * or, before dist_attach opens them, the ones they will use with backend
 * `be_name` ("cuda" ranks use NCCL, cpu ranks MPI). */
const char *dist_library(const Dist *d, const char *be_name);

/* Before each micro-batch's forward/backward: the gradients are reduced
 * during this backward when `last` (the last micro-batch of the step). */
void dist_begin_micro(Dist *d, int last);

/* After the last micro-batch: gradients are summed over ranks (ZeRO-1:
 * this rank's block only) and ready for the optimizer. */
void dist_finish_grads(Dist *d);

/* Norm of the full reduced gradient (identical on every rank). */
double dist_grad_norm(Dist *d);

/* After the optimizer updated this rank's range: ZeRO-1 all-gathers the
 * parameters so every rank holds them all again (a no-op otherwise). */
void dist_share_params(Dist *d);

/* Mean of x over ranks (x itself without MPI). */
double dist_mean(Dist *d, double x);

/* x[0..n) summed over ranks, in place, on every rank (counts: exact below
 * 2^53). Without MPI x is left as it is. */
void dist_sum(Dist *d, double *x, int n);

/* Full fp32 parameters (num_params floats) on every rank; under ZeRO-1
 * with master weights the ranks' master shards are all-gathered. */
int dist_get_params(Dist *d, float *host, char *err, size_t err_len);

/* Full fp32 reduced gradients (num_params floats), for --dump-grads. */
int dist_get_grads(Dist *d, float *host, char *err, size_t err_len);

/* 64-bit FNV-1a hash (over 32-bit words) of n floats, and whether every rank's hash of its
 * own parameters equals rank 0's (1 = identical replicas). */
uint64_t dist_hash_floats(const float *x, size_t n);
/* The same hash over an array given in pieces: h starts at
 * DIST_HASH_START and each piece is folded in, in order. */
#define DIST_HASH_START 0xcbf29ce484222325ull
uint64_t dist_hash_floats_more(uint64_t h, const float *x, size_t n);
int dist_replicas_agree(Dist *d, uint64_t hash);

/* Rank 0's `bytes` bytes of buf to every rank (no-op without MPI). */
void dist_broadcast(Dist *d, void *buf, size_t bytes);

/* For each of n values: differs[i] = 1 when some rank's v[i] is not rank
 * 0's, else 0 (identical on every rank afterwards). */
void dist_differs(Dist *d, const uint64_t *v, int n, unsigned char *differs);

/* Every rank's `bytes` bytes to rank 0: all (world * bytes, rank order) is
 * filled on rank 0 only; other ranks may pass NULL. */
void dist_gather(Dist *d, const void *mine, size_t bytes, void *all);

/* Print "error: <msg>" (with "rank r of W" under MPI) to stderr and end
 * the job with `status`: MPI_Abort(MPI_COMM_WORLD, status) under MPI, so
 * no rank is left waiting in a collective; exit(status) otherwise. */
_Noreturn void dist_fail(const Dist *d, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An error every rank finds alike because it follows from the flags and
 * the world size alone (--total-batch), or from values already agreed by
 * a collective: rank 0 prints it, every rank finalises and exits with
 * `code`. Anything read from files or devices uses dist_fail instead. */
_Noreturn void dist_exit_all(Dist *d, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Close the collectives (the model stays; the caller removes the gradient
 * hook first, or it becomes a no-op) and finalise MPI. */
void dist_finalize(Dist *d);

#endif
