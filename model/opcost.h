/* model/opcost.h — what the ops of a training step cost, and what a
 * schedule's step costs with them.
 *
 * Owns: OpCosts, the cost of each op of one block (forward and backward,
 * the ops its description lists) and of the rest of a step (embedding, final LayerNorm, head, optimizer)
 * at one shape, in one unit: counted FLOPs (flops_op_costs, flops.h's
 * convention, the optimizer counted 0) or measured nanoseconds
 * (opcost_measure, opcost_measure.c); the block costs derived from them; a
 * schedule's recompute and step cost; and the Pareto frontier of tape
 * kinds (tape.h) by slot bytes and rebuild cost. Costs are integers, so
 * the solver's sums and these agree exactly.
 *
 * The model is additive: a step costs the sum of its ops, each op what it
 * cost timed alone. A block forward into any tape kind runs the same ops
 * (dropped tensors go to the tape workspace); a backward from a kind runs
 * the backward ops plus the ops that make its dropped tensors. */
#ifndef MODEL_OPCOST_H
#define MODEL_OPCOST_H

#include <stddef.h>

#include "kernels/ops.h"
#include "planner.h"
#include "schedule.h"
#include "tape.h"

/* The ops of a step besides one block's: one micro-batch's embedding,
 * final norm, chunked head (forward and backward, every chunk), zeroing of
 * the residual gradient, the final norm's and the embedding's backward;
 * then, once per optimizer step, zeroing the gradients, their norm and
 * AdamW. */
enum {
    OP_ENCODER, OP_LNF, OP_HEAD, OP_ZERO_DRES, OP_LNF_BWD, OP_ENCODER_BWD,
    OP_ZERO_GRADS, OP_GRAD_NORM, OP_ADAMW,
    OP_COUNT
};

typedef enum { OPCOST_FLOPS = 0, OPCOST_NS = 1 } OpCostUnit;

/* The block's ops are its description's (block_desc.h): fwd[i] is what
 * forward op i costs, bwd[i] backward op i; nothing here names a family's
 * op. */
typedef struct OpCosts {
    int unit;             /* OpCostUnit */
    int reps;             /* measured: the timed calls each cost is of; 0 otherwise */
    const BlockDesc *block; /* whose ops fwd and bwd are (NULL: GPT-2's) */
    long long fwd[BLOCK_MAX_FWD_OPS], bwd[BLOCK_MAX_BWD_OPS];
    long long c[OP_COUNT]; /* the rest of a step (OP_*) */
    /* The copy engine (host tier, ops.h copy_async): one copy of n bytes
     * costs copy_lat_ns + n / copy_bw seconds (opcost_copy). copy_bw in
     * bytes per second; 0: not measured (no copy engine, or FLOP costs). */
    long long copy_lat_ns, copy_bw;
} OpCosts;

/* Zero costs of bd's ops in `unit`. */
void opcost_init(OpCosts *oc, const BlockDesc *bd, int unit);
const BlockDesc *opcost_block(const OpCosts *oc);

/* Every op in one list, the order a measured round runs them and cost
 * files and prints list them: the block's forward ops, its backward ops,
 * then OP_COUNT others. Op i's cost and name ("ln1_fwd", "rms1_fwd", ...:
 * the description's, then "encoder_fwd", ...: the names cost files use). */
int opcost_n_ops(const OpCosts *oc);
long long *opcost_at(OpCosts *oc, int i);
long long opcost_get(const OpCosts *oc, int i);
const char *opcost_op_name(const OpCosts *oc, int i);

/* What making tape tensor t costs: the forward ops that make it (res2:
 * attproj and the residual add). */
long long opcost_tensor(const OpCosts *oc, int t);

long long opcost_block_fwd(const OpCosts *oc);      /* writes x_{l+1} */
long long opcost_block_fwd_last(const OpCosts *oc); /* out = SLOT_NONE */
long long opcost_block_bwd(const OpCosts *oc);      /* without rebuilds */
/* The extra work of a backward from a tape of `kind`: the ops that make its
 * dropped tensors (0 for the full tape). */
long long opcost_rebuild(const OpCosts *oc, int kind);

/* Work a schedule repeats: every forward after the loss head (block fwd,
 * or fwd_last when it writes no output) plus the rebuild of every
 * backward's tape. In FLOPs this is flops_recompute. */
long long opcost_recompute(const OpCosts *oc, const Schedule *s);
/* One optimizer step of grad_accum micro-batches under s: per micro-batch
 * the embedding, every schedule step, the head and the rest; then zeroing
 * the gradients, their norm and AdamW. */
long long opcost_step(const OpCosts *oc, const Schedule *s, int grad_accum);

/* One tape kind priced at a shape. */
typedef struct {
    int kind;
    size_t bytes;       /* one slot (planner_tape_bytes) */
    size_t ws;          /* the tape workspace it needs */
    long long rebuild;  /* opcost_rebuild */
} KindCost;

/* The kinds no other kind beats: a kind is dropped when another has no
 * more slot bytes and no more rebuild cost, and fewer of either (or, equal
 * in both, less workspace, or the same and a smaller mask). Sorted by
 * bytes, largest first: the full tape is always first. Returns the count;
 * out holds tape_kinds(planner_block(in)) entries. */
int opcost_frontier(const OpCosts *oc, const PlanInput *in, KindCost *out);

/* Time every op on be at in's shape (B, T, dtype, loss chunk) and family
 * (the block description's bench_op runs its ops): one block's buffers,
 * sized by the description, are allocated (mem_alloc, freed before returning), filled with
 * random values, every op run once to warm up, then in rounds (every op
 * once, in the order a block runs them, 64 MiB written over the caches
 * before its forward and its backward, each call between two syncs), at
 * least min_reps rounds and as many more as fit OPCOST_MIN_SECONDS, at
 * most OPCOST_MAX_REPS; the mean of the middle 60% of each op's calls
 * (opcost_measure.c says why not the median). The head is timed on one chunk and
 * scaled to B*T tokens; the optimizer ops on at most 4M elements and
 * scaled to the parameter count (both are linear in it). Returns 0, or -1
 * with err (out of memory, or a stop asked for between two ops: base/stop.h). */
#define OPCOST_MIN_SECONDS 0.5
#define OPCOST_MAX_REPS 25
int opcost_measure(Backend *be, const PlanInput *in, int min_reps, OpCosts *out, char *err,
                   size_t err_len);

/* One copy of `bytes` on the copy engine, in ns: latency + bytes / bandwidth
 * (rounded to the ns); -1 when the copy costs were not measured. */
long long opcost_copy(const OpCosts *oc, size_t bytes);
/* Time the copy engine (be->ops->copy_async, event_wait, sync) from device
 * memory into host-tier memory at COPY_SIZES sizes up to max_bytes (the
 * run's residual slot), each OPCOST_COPY_REPS times after one warm-up;
 * per size the median, then a least-squares line through (bytes, median):
 * its slope is 1 / bandwidth, its intercept the latency (at least 0). Sets
 * oc->copy_lat_ns and oc->copy_bw; leaves both 0 on a backend without a
 * copy engine. Returns 0, or -1 with err (out of memory, or a stop). */
#define OPCOST_COPY_REPS 9
/* What offloading n_stored block inputs of res_bytes each (--offload
 * checkpoints through the device ring, model/schedule.h) adds to one
 * micro-batch, in ns: each copy costs only the part the compute beside it
 * does not hide (the model is stated in opcost_copy.c). -1 when the copy
 * costs were not measured. */
long long opcost_offload_copy(const OpCosts *oc, size_t res_bytes, int n_stored);
int opcost_measure_copy(Backend *be, size_t max_bytes, OpCosts *oc, char *err, size_t err_len);

/* Print the costs (ms per call, by op) and the frontier to f. */
void opcost_print(FILE *f, const OpCosts *oc, const PlanInput *in);

#endif
