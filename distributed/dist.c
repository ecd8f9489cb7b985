/* distributed/dist.c — the world, the trainer-facing steps, scalars and errors
 * (see dist.h). The collectives on gradient and parameter buffers are in
 * dist_mpi.c (cpu) and dist_nccl.c (cuda). */
#include "dist.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist_internal.h"

/* A NO_MPI build (make NO_MPI=1) never sets d->mpi: dist_init refuses a
 * launcher. Every MPI call sits behind that test and is compiled out with
 * WITH_MPI(call), so no MPI header or library is needed. */
#ifdef NO_MPI
#define WITH_MPI(...) ((void)0)
#else
#define WITH_MPI(...) ((void)(__VA_ARGS__))
#endif

/* The launcher's variable that is set, or NULL. */
static const char *launcher_var(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
                                 "MV2_COMM_WORLD_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return vars[i];
    return NULL;
}

int dist_launched(void) { return launcher_var() != NULL; }

void dist_build_info(char *buf, size_t len)
{
#ifdef NO_MPI
    snprintf(buf, len, "distributed: none (built with NO_MPI=1: one process only)");
#else
    /* "Open MPI v4.1.4, package: ...": the library's name and version; callable
     * before MPI_Init */
    char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int n = 0;
    if (MPI_Get_library_version(v, &n) != MPI_SUCCESS) snprintf(v, sizeof v, "unknown version");
    v[strcspn(v, ",\n")] = 0;
#ifdef HAVE_CUDA
    snprintf(buf, len, "distributed: MPI (%s); NCCL for the cuda backend", v);
#else
    snprintf(buf, len, "distributed: MPI (%s)", v);
#endif
#endif
}

/* A non-negative integer from the environment, else -1. */
static int env_int(const char *name)
{
    const char *s = getenv(name);
    if (!s || !*s) return -1;
    char *end;
    long v = strtol(s, &end, 10);
    return *end || v < 0 || v > INT_MAX ? -1 : (int)v;
}

int dist_local_rank(int rank, int node_rank)
{
    /* Set by the process's own launcher: Open MPI's mpirun, MPICH's and
     * Intel MPI's mpiexec (Hydra), MVAPICH2's mpirun_rsh. */
    static const char *vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                 "MV2_COMM_WORLD_LOCAL_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        int r = env_int(vars[i]);
        if (r >= 0) return r;
    }
    /* SLURM_LOCALID is this process's only when srun started it as this
     * rank. An mpiexec inside an allocation starts its per-node proxies
     * with srun, and every rank a proxy forks inherits the proxy's
     * SLURM_PROCID and SLURM_LOCALID (0 on one node): taken as the local
     * rank, that puts every rank of the node on device 0. */
    int r = env_int("SLURM_LOCALID");
    if (r >= 0 && env_int("SLURM_PROCID") == rank) return r;
    return node_rank;
}

int dist_init(Dist *d, int *argc, char ***argv, char *err, size_t err_len)
{
    memset(d, 0, sizeof *d);
    d->world = d->local_world = 1;
    d->device = -1;
    /* srun sets SLURM_STEP_NUM_TASKS for the tasks of its step (a batch
     * script's own shell has none); the tasks form one world only through
     * PMI. Without it each task would train alone as rank 0 of 1: copies of
     * one run writing the same files, all on device 0. */
    int step_tasks = env_int("SLURM_STEP_NUM_TASKS"), by_srun = env_int("SLURM_PROCID") >= 0;
    static const char srun_fix[] =
        "launch with srun --mpi=pmix (`srun --mpi=list` names what this Slurm offers; Open MPI "
        "must be built with the same PMIx), or with mpirun inside the allocation";
    if (!dist_launched()) {
        if (step_tasks > 1 && by_srun) {
            snprintf(err, err_len, "srun started %d tasks (SLURM_STEP_NUM_TASKS) without an MPI "
                     "process interface (no PMIX_RANK or PMI_RANK in the environment), so each "
                     "would train alone as rank 0 of 1: %s", step_tasks, srun_fix);
            return -1;
        }
        return 0;
    }
#ifdef NO_MPI
    snprintf(err, err_len, "a launcher started this process (%s is set), but this train_gpt "
             "was built with NO_MPI=1: one process only, no ranks. Run it without mpirun/srun, "
             "or rebuild without NO_MPI=1 (MPI: libopenmpi-dev and openmpi-bin)", launcher_var());
    (void)argc, (void)argv;
    return -1;
#else
    /* an mpirun or mpiexec started this process (inside an allocation it
     * starts its daemons with srun, whose SLURM_ variables the ranks inherit) */
    int by_mpirun = getenv("OMPI_COMM_WORLD_SIZE") || getenv("MPI_LOCALRANKID") ||
                    getenv("MV2_COMM_WORLD_SIZE");
    int provided;
    /* FUNNELED: OpenMP threads compute, only the main thread calls MPI. */
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        snprintf(err, err_len, "MPI_Init_thread failed (launched by mpirun/srun?)");
        return -1;
    }
    d->mpi = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->world);
    if (d->world == 1 && step_tasks > 1 && by_srun && !by_mpirun) {
        snprintf(err, err_len, "srun started %d tasks (SLURM_STEP_NUM_TASKS), but MPI sees a "
                 "world of 1: the MPI library did not reach Slurm's process interface, so each "
                 "task would train alone as rank 0 of 1: %s", step_tasks, srun_fix);
        return -1;
    }
    /* The node-local communicator gives the local size always, and the
     * local rank when the launcher does not export it. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &node);
    int node_rank;
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &d->local_world);
    MPI_Comm_free(&node);
    d->local_rank = dist_local_rank(d->rank, node_rank);
    return 0;
#endif
}

int dist_select_device(Dist *d, char *err, size_t err_len)
{
#ifdef HAVE_CUDA
    return dist_nccl_select_device(d->local_rank, &d->device, err, err_len);
#else
    (void)d, (void)err, (void)err_len;
    return 0;
#endif
}

/* counts[q]: how much of [lo, hi) of the flat vector lies in rank q's
 * block [q B, (q+1) B); the blocks are contiguous and in rank order, so
 * the parts are too. */
static void cut_to_blocks(const Dist *d, size_t lo, size_t hi, size_t *counts)
{
    size_t B = d->m.block_params;
    for (int q = 0; q < d->world; q++) {
        size_t b = (size_t)q * B, e = b + B;
        size_t plo = lo > b ? lo : b, phi = hi < e ? hi : e;
        counts[q] = phi > plo ? phi - plo : 0;
    }
}

/* --zero 0 on NCCL: each range's ordered sum starts as soon as the range
 * is final, on NCCL's stream (allreduce_start), overlapping the backward
 * of earlier layers. ZeRO-1 sums after backward instead, ZeRO-2/3 through
 * dist_grads_scatter, and MPI at --zero 0 in dist_finish_grads (see
 * dist.h). */
void dist_grads_ready(void *ctx, const size_t *offs, const size_t *counts, int n)
{
    Dist *d = ctx;
    if (!d->armed || !d->comm || d->m.zero || !d->comm->allreduce_start || d->world == 1) return;
    size_t eb = (size_t)d->m.be->par_bytes;
    for (int k = 0; k < n; k++) {
        cut_to_blocks(d, offs[k], offs[k] + counts[k], d->rs_counts);
        d->comm->allreduce_start(d->comm, (char *)d->m.grads + offs[k] * eb, d->rs_counts);
    }
}

/* Ordered sums after backward: --zero 0 sums the whole gradient (each
 * rank its block) and all-gathers the sums, ZeRO-1 the padded vector,
 * each rank keeping its block's. */
static void ordered_finish(Dist *d)
{
    if (d->m.zero >= 2 || d->world == 1) return; /* >= 2: summed block by block */
    if (!d->m.zero && d->comm->allreduce_start) return; /* summed during backward */
    size_t n = d->m.zero ? d->m.padded_params : d->m.num_params;
    cut_to_blocks(d, 0, n, d->rs_counts);
    size_t at = d->comm->reduce_scatterv(d->comm, d->m.grads, d->rs_counts);
    if (!d->m.zero)
        d->comm->allgatherv(d->comm, (char *)d->m.grads + at * (size_t)d->m.be->par_bytes,
                            d->m.grads, d->rs_counts, 0);
}

void dist_grads_scatter(void *ctx, void *const *src, const size_t *offs, const size_t *counts,
                        int n)
{
    Dist *d = ctx;
    if (!d->comm || !d->rs_counts) return;
    size_t S = d->m.shard_params, eb = (size_t)d->m.be->par_bytes;
    for (int k = 0; k < n; k++) {
        size_t lo = offs[k], hi = offs[k] + counts[k];
        cut_to_blocks(d, lo, hi, d->rs_counts);
        size_t at = d->comm->reduce_scatterv(d->comm, src[k], d->rs_counts);
        size_t mine = d->rs_counts[d->rank], b = (size_t)d->rank * S;
        if (mine)
            d->m.grads_add(d->m.model, lo > b ? lo : b, (char *)src[k] + at * eb, mine);
    }
}

void dist_params_wait(void *ctx)
{
    Dist *d = ctx;
    if (d->comm) d->comm->gather_wait(d->comm);
}

void dist_params_gather(void *ctx, void *const *dst, const size_t *offs, const size_t *counts,
                        int n, int async)
{
    Dist *d = ctx;
    if (!d->comm || !d->rs_counts) return;
    size_t S = d->m.shard_params, eb = (size_t)d->m.be->par_bytes, b = (size_t)d->rank * S;
    for (int k = 0; k < n; k++) {
        /* rank q's part, cut as dist_grads_scatter cuts it */
        size_t lo = offs[k], hi = offs[k] + counts[k];
        for (int q = 0; q < d->world; q++) {
            size_t qb = (size_t)q * S, qe = qb + S;
            size_t plo = lo > qb ? lo : qb, phi = hi < qe ? hi : qe;
            d->rs_counts[q] = phi > plo ? phi - plo : 0;
        }
        size_t from = lo > b ? lo - b : 0; /* in the shard, elements */
        d->comm->allgatherv(d->comm, (const char *)d->m.params + from * eb, dst[k], d->rs_counts,
                            async);
    }
}

int dist_attach(Dist *d, const DistModel *m, char *err, size_t err_len)
{
    d->m = *m;
    if (!d->mpi) return 0;
    d->rs_counts = calloc((size_t)d->world, sizeof(size_t));
    if (!d->rs_counts) {
        snprintf(err, err_len, "out of host memory for %d ranks' counts", d->world);
        return -1;
    }
    if (d->m.zero && m->shard_params > (size_t)INT_MAX) {
        snprintf(err, err_len, "--zero %d: a shard of %zu elements is more than MPI's int count "
                 "allows; use more ranks", m->zero, m->shard_params);
        return -1;
    }
#ifdef NO_MPI
    snprintf(err, err_len, "internal error: ranks in a NO_MPI build");
#else
    if (strcmp(m->be->name, "cuda") == 0) {
#ifdef HAVE_CUDA
        d->comm = dist_nccl_open(d, m->be, err, err_len);
#else
        snprintf(err, err_len, "internal error: a cuda backend in a build without CUDA");
#endif
    } else {
        d->comm = dist_mpi_open(d, m->be, err, err_len);
    }
#endif
    return d->comm ? 0 : -1;
}

const char *dist_library(const Dist *d, const char *be_name)
{
    if (d->comm) return d->comm->name;
    if (!d->mpi) return "none (no launcher)";
    return be_name && strcmp(be_name, "cuda") == 0 ? "nccl" : "mpi";
}

void dist_begin_micro(Dist *d, int last) { d->armed = last && d->comm; }

void dist_finish_grads(Dist *d)
{
    if (!d->comm) return;
    ordered_finish(d);
    d->comm->wait(d->comm);
    d->armed = 0;
}

/* x[0..n) summed over ranks in rank order (Order of sums): every rank's
 * values are all-gathered and each rank adds them, x_0 + x_1 + ... (an
 * all-gather copies, so every rank adds the same values alike). */
static void sum_ordered(const Dist *d, double *x, int n, const char *what)
{
    if (!d->mpi || d->world == 1 || n <= 0) return;
#ifdef NO_MPI
    (void)x; (void)what; /* never here: a NO_MPI build has no ranks (d->mpi 0) */
#else
    double *all = malloc(sizeof(double) * (size_t)n * (size_t)d->world);
    if (!all) dist_fail(d, 1, "out of host memory summing %d values over %d ranks", n, d->world);
    dist_watch_begin(d, what);
    WITH_MPI(MPI_Allgather(x, n, MPI_DOUBLE, all, n, MPI_DOUBLE, MPI_COMM_WORLD));
    dist_watch_end(d);
    for (int i = 0; i < n; i++) {
        double s = all[i];
        for (int q = 1; q < d->world; q++) s += all[(size_t)q * (size_t)n + (size_t)i];
        x[i] = s;
    }
    free(all);
#endif
}

static double sum_over_ranks(const Dist *d, double x)
{
    sum_ordered(d, &x, 1, "in MPI_Allgather (a scalar: loss, norm or a stop)");
    return x;
}

double dist_grad_norm(Dist *d)
{
    /* On the NCCL path the norm is the host's first wait for the step's
     * reduction (it reads the reduced gradients back). With ranks, the
     * squared norm is the sum in rank order of each rank block's
     * (block_params, as the sums are cut): each rank adds its own under
     * --zero 1..3, and under --zero 0, where every rank holds all the
     * sums, each adds all the blocks' alike, so every stage computes the
     * same expression. */
    dist_watch_begin(d, "waiting for the gradients' reduction (the norm)");
    void *g = d->m.model;
    double norm;
    if (!d->comm) {
        norm = d->m.grad_norm(g);
    } else if (d->m.zero) {
        norm = sqrt(sum_over_ranks(d, d->m.grad_norm_sq_local(g)));
    } else {
        double sq = 0.0;
        for (int q = 0; q < d->world; q++) {
            size_t lo = (size_t)q * d->m.block_params, hi = lo + d->m.block_params;
            if (hi > d->m.num_params) hi = d->m.num_params;
            double part = lo < hi ? d->m.grad_norm_sq_range(g, lo, hi - lo) : 0.0;
            sq = q ? sq + part : part;
        }
        norm = sqrt(sq);
    }
    dist_watch_end(d);
    return norm;
}

void dist_share_params(Dist *d)
{
    if (d->comm && d->m.zero && d->m.zero < 3) { /* ZeRO-3 gathers before use */
        d->comm->allgather(d->comm, d->m.params, d->m.shard_params);
        /* NCCL's all-gather is queued: wait for it here, where it is timed. */
        dist_watch_begin(d, "waiting for ZeRO-1's parameter all-gather");
        d->m.be->ops->sync(d->m.be);
        dist_watch_end(d);
    }
}

double dist_mean(Dist *d, double x) { return sum_over_ranks(d, x) / d->world; }

void dist_sum(Dist *d, double *x, int n)
{
    /* timed like every wait: the ranks' evaluation slices end at different
     * moments, and a rank gone would otherwise leave the others here */
    sum_ordered(d, x, n, "in MPI_Allgather (evaluation sums)");
}

/* Gather every rank's ZeRO-1 block of a host vector of world * shard
 * floats into all ranks (each rank's own block is already in place). */
static void allgather_host(const Dist *d, float *buf, size_t shard)
{
    dist_watch_begin(d, "in MPI_Allgather (parameters for a save)");
    WITH_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, (int)shard, MPI_FLOAT,
                           MPI_COMM_WORLD));
    dist_watch_end(d);
}

/* Read a vector the model hands out whole (get) into host; under ZeRO-1
 * only this rank's block is right, so all-gather the blocks. */
static int gather_full(Dist *d, float *host, void (*get)(void *, float *), int sharded,
                       char *err, size_t err_len)
{
    const DistModel *m = &d->m;
    if (!d->comm || !d->m.zero || !sharded) {
        get(m->model, host);
        return 0;
    }
    float *tmp = calloc(m->padded_params, sizeof(float));
    if (!tmp) {
        snprintf(err, err_len, "out of host memory gathering %zu parameters", m->padded_params);
        return -1;
    }
    get(m->model, tmp);
    allgather_host(d, tmp, m->shard_params);
    memcpy(host, tmp, m->num_params * sizeof(float));
    free(tmp);
    return 0;
}

int dist_get_params(Dist *d, float *host, char *err, size_t err_len)
{
    /* Without a master copy the all-gathered working parameters are the
     * fp32 values themselves; with one, only this rank's master is exact. */
    return gather_full(d, host, d->m.get_params, d->m.has_master || d->m.zero == 3, err,
                       err_len);
}

int dist_get_grads(Dist *d, float *host, char *err, size_t err_len)
{
    return gather_full(d, host, d->m.get_grads, 1, err, err_len);
}

uint64_t dist_hash_floats(const float *x, size_t n)
{
    return dist_hash_floats_more(DIST_HASH_START, x, n);
}

uint64_t dist_hash_floats_more(uint64_t h, const float *x, size_t n)
{
    /* FNV-1a over 32-bit words (the bits of each float). */
    for (size_t i = 0; i < n; i++) {
        uint32_t w;
        memcpy(&w, x + i, sizeof w);
        h = (h ^ w) * 0x100000001b3ull;
    }
    return h;
}

int dist_replicas_agree(Dist *d, uint64_t hash)
{
    if (!d->mpi) return 1;
    unsigned char differs;
    dist_differs(d, &hash, 1, &differs);
    return !differs;
}

void dist_broadcast(Dist *d, void *buf, size_t bytes)
{
    if (!d->mpi) return;
    dist_watch_begin(d, "in MPI_Bcast (start-up)");
    for (size_t off = 0; off < bytes; off += DIST_MPI_CHUNK)
        WITH_MPI(MPI_Bcast((char *)buf + off,
                           (int)(bytes - off < DIST_MPI_CHUNK ? bytes - off : DIST_MPI_CHUNK),
                           MPI_BYTE, 0, MPI_COMM_WORLD));
    dist_watch_end(d);
}

void dist_differs(Dist *d, const uint64_t *v, int n, unsigned char *differs)
{
    memset(differs, 0, (size_t)n);
    if (!d->mpi || n <= 0) return;
    /* Rank 0's values to all; each rank flags its own differences; a max
     * over ranks gives every rank the same flags. */
    uint64_t *ref = malloc(sizeof(uint64_t) * (size_t)n);
    int *flag = malloc(sizeof(int) * (size_t)n);
    if (!ref || !flag) dist_fail(d, 1, "out of host memory comparing %d values over ranks", n);
    memcpy(ref, v, sizeof(uint64_t) * (size_t)n);
    dist_broadcast(d, ref, sizeof(uint64_t) * (size_t)n);
    for (int i = 0; i < n; i++) flag[i] = ref[i] != v[i];
    dist_watch_begin(d, "in MPI_Allreduce (comparing the ranks' settings)");
    WITH_MPI(MPI_Allreduce(MPI_IN_PLACE, flag, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    dist_watch_end(d);
    for (int i = 0; i < n; i++) differs[i] = flag[i] != 0;
    free(ref);
    free(flag);
}

void dist_gather(Dist *d, const void *mine, size_t bytes, void *all)
{
    if (!d->mpi) {
        memcpy(all, mine, bytes);
        return;
    }
    if (bytes > (size_t)INT_MAX) dist_fail(d, 1, "internal error: dist_gather of %zu bytes", bytes);
    dist_watch_begin(d, "in MPI_Gather (start-up)");
    WITH_MPI(MPI_Gather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, 0,
                        MPI_COMM_WORLD));
    dist_watch_end(d);
}

static void vprint_error(const Dist *d, const char *fmt, va_list ap)
{
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (d && d->mpi)
        fprintf(stderr, "error: rank %d of %d: %s\n", d->rank, d->world, msg);
    else
        fprintf(stderr, "error: %s\n", msg);
    fflush(stderr);
}

void dist_fail(const Dist *d, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint_error(d, fmt, ap);
    va_end(ap);
    if (d && d->mpi) WITH_MPI(MPI_Abort(MPI_COMM_WORLD, status));
    exit(status);
}

void dist_exit_all(Dist *d, int code, const char *fmt, ...)
{
    if (d->rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        char msg[2048];
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fprintf(stderr, "error: %s\n", msg);
        fflush(stderr);
    }
    dist_finalize(d);
    exit(code);
}

void dist_finalize(Dist *d)
{
    if (d->comm) {
        dist_watch_begin(d, "closing the collectives");
        d->comm->close(d->comm);
        dist_watch_end(d);
        d->comm = NULL;
        d->armed = 0;
    }
    free(d->rs_counts);
    d->rs_counts = NULL;
    if (d->mpi) {
        dist_watch_begin(d, "in MPI_Finalize");
        WITH_MPI(MPI_Finalize());
        dist_watch_end(d);
        dist_watch_stop(d);
        d->mpi = 0;
    }
}
