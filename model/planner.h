/* model/planner.h — one pure function owns every byte the trainer allocates.
 *
 * Owns: MemoryPlan, the byte size of every buffer for a (config, B, T,
 * schedule, dtype) (a tape's from its kind's layout, model/tape.h), the
 * byte costs the recompute solver works with (PlanUnits), --recompute
 * auto (planner_auto.c), the --plan table (one row per recompute mode,
 * planner_modes.c), the parsing of --memory-budget sizes and of --offload,
 * and the split of those bytes between the device and the host tier.
 * The model allocates exactly these sizes in one arena per category
 * (model/arena.h), the start-up table prints them, and the tests check
 * them. Nothing else computes a buffer size.
 *
 * Every arena is allocated whole before the first step, so a run's peak
 * is the plan's total: the baseline + fixed + n_res*res + the tape slots,
 * each its kind's bytes, + the tape workspace: the largest any kind
 * present needs. The baseline is what the process holds before its arenas
 * (measured by the caller: resident bytes on the CPU, the device memory in
 * use on a GPU); the model's own plan (gpt.h) has none. */
#ifndef MODEL_PLANNER_H
#define MODEL_PLANNER_H

#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "schedule.h"
#include "tape.h"

typedef enum { DTYPE_FP32 = 0, DTYPE_BF16 = 1 } DType;

/* --offload: what lives in the host tier (a bit set; 0 = none).
 *   OFFLOAD_CHECKPOINTS  the stored block inputs (the schedule's stored
 *       residual slots) live on the host; the device keeps a ring of
 *       OFFLOAD_RING_SLOTS residual slots (fewer when fewer are stored)
 *       through which every stored input passes: written by a forward,
 *       copied out, and in backward copied back in ahead of its use.
 *       Stored tapes stay on the device.
 *   OFFLOAD_OPTIMIZER    AdamW's m and v and the fp32 master (bf16 only:
 *       fp32 has no master) live on the host; the device keeps the
 *       working parameters and the gradients. The host also holds the
 *       two buffers its AdamW works through: the gradients copied in and
 *       the updated working parameters copied back (par dtype each), so
 *       16 bytes a parameter in bf16 and in fp32.
 * The host tier is pinned memory on a GPU, a second arena on the CPU
 * backend; either way the planner counts it as host bytes. */
enum { OFFLOAD_CHECKPOINTS = 1, OFFLOAD_OPTIMIZER = 2 };
/* The device ring: one slot being read by the running block (forward: its
 * input; backward: x_l) while the other is being filled or drained by the
 * copy engine (forward: the previous output going out; backward: x_{l-1}
 * coming in), i.e. a prefetch distance of one block. One block's compute
 * (forward or re-forward + backward) is the time a copy of one (B,T,C)
 * slot has to hide in; a distance of k blocks would need k + 1 slots. */
#define OFFLOAD_RING_SLOTS 2

/* Host-tier categories. */
enum { HOST_CHECKPOINTS, HOST_OPTIMIZER, HOST_NUM_CATEGORIES };

int dtype_bytes(DType d);
const char *dtype_name(DType d);

/* Everything the sizes depend on. */
typedef struct {
    GPTConfig cfg;
    int B, T;          /* micro-batch */
    DType dtype;       /* activations and working params */
    int loss_chunk;    /* tokens per head chunk; 0 = planner's default */
    int world_size;    /* data-parallel ranks; 0 is read as 1 */
    int zero;          /* 1: ZeRO-1, AdamW state (and master) sharded over ranks;
                        * 2: ZeRO-2, the gradients too; 3: ZeRO-3, the parameters
                        * too (see PLANNER_SHARD_ALIGN) */
    int offload;       /* OFFLOAD_* bits: what lives in the host tier */
    /* --host-budget: the bound on the host tier that the --plan table's
     * fits and max_B apply beside the device budget (0 = no bound). No
     * byte count depends on it. */
    size_t host_budget;
    size_t baseline;   /* bytes the process holds before its arenas; counted in the total
                        * and in every budget, allocated by no arena */
    /* The largest copy of the parameters or optimizer state that the run's
     * outputs stage in host memory while the arenas are live (--save,
     * --dump-grads, checkpoints; cli/recompute.c sizes it). Counted in the
     * total where the host is the device (the cpu backend), else 0. */
    size_t host_copies;
    /* The backend's own scratch for its attention ops at this shape (ops.h
     * attention_scratch_bytes: the cpu's per-thread tiles; 0 where none).
     * One buffer of the scratch category, which the model hands over. */
    size_t attn_scratch;
} PlanInput;

/* ZeRO-1 sharding (--zero 1). The flat parameter vector (llm.c order,
 * num_params elements) is padded with zeros to padded_params = world *
 * shard_params elements; rank r's optimizer owns the contiguous range
 * [r * shard_params, min((r+1) * shard_params, num_params)). shard_params
 * is ceil(num_params / world) rounded up to PLANNER_SHARD_ALIGN elements so
 * every shard starts 256-byte aligned. The working parameters and the
 * gradients are padded_params long (reduce-scatter and all-gather need
 * equal blocks); AdamW m, v and the fp32 master hold shard_params each.
 * Without --zero: shard_params = padded_params = num_params.
 * ZeRO-2 (--zero 2) shards the same ranges and keeps, of the gradients, only
 * rank r's shard (shard_params elements) plus two full-size buffers the
 * backward writes into before each piece is reduce-scattered: one for the
 * tensors outside the blocks (wte, wpe, LN_f: live from the head's
 * backward to the encoder's) and one for a block's twelve slices (live
 * during that block's backward). MEM_GRADS is the three and comm_bytes,
 * each rounded.
 * ZeRO-3 (--zero 3) keeps ZeRO-2's gradients and, of the parameters, only
 * rank r's shard plus the buffers they are all-gathered into before use:
 * two blocks' (the running block and the next one, prefetched) and one
 * for wte, wpe and LN_f (gathered once a micro-batch). MEM_PARAMS is the
 * shard and the gather buffers (the gathers work in place in them), each
 * rounded. A micro-batch gathers every
 * parameter once before the head, re-gathers each block for its re-forward
 * and backward (a segment's re-forwards and their backwards apart, mode 2:
 * twice) unless the two block buffers still hold it (the last two blocks
 * at the head), and reduce-scatters every gradient once: about 3x the
 * parameter bytes at recompute 0 and 1. The counts follow the model's
 * gathers (model/gpt_gather.c) step for step; a run prints both. */
#define PLANNER_SHARD_ALIGN 64

/* Sums over ranks are added in rank order by the trainer, not by the
 * collective library (distributed/dist.h, "Order of sums"): each rank
 * receives every rank's piece of its block into a receive buffer of world
 * x reduce_chunk elements (par dtype) and adds them. reduce_chunk is
 * min(PLANNER_REDUCE_CHUNK, block_params): longer pieces go in rounds of
 * that many elements, which bounds the buffer and leaves each element's
 * sum as it is. comm_bytes is that buffer, rounded, in MEM_GRADS at every
 * --zero when world > 1 (0 at world 1). */
#define PLANNER_REDUCE_CHUNK ((size_t)1 << 20)

/* Categories, in the order they are printed and allocated. */
enum {
    MEM_PARAMS, MEM_GRADS, MEM_OPTIMIZER, MEM_ACTIVATIONS, MEM_WORKSPACE, MEM_SCRATCH,
    MEM_HEAD, MEM_NUM_CATEGORIES
};

typedef struct {
    size_t bytes[MEM_NUM_CATEGORIES]; /* device (the CPU backend's "device" arenas) */
    size_t baseline;                  /* PlanInput's: not an arena */
    size_t host_copies;               /* PlanInput's: not an arena */
    size_t total;                     /* device total: baseline + host_copies + every category */
    /* The host tier (--offload): what the device categories no longer
     * hold. The stored block inputs (HOST_CHECKPOINTS: n_res_stored
     * residual slots, while MEM_ACTIVATIONS keeps n_ring of them) and the
     * optimizer state (HOST_OPTIMIZER: master_bytes + moment_bytes +
     * staging_bytes, while MEM_OPTIMIZER is 0). All 0 without --offload. */
    size_t host[HOST_NUM_CATEGORIES];
    size_t host_total;
    int offload;             /* OFFLOAD_* bits in force */
    int n_ring;              /* device ring slots (OFFLOAD_CHECKPOINTS); 0 otherwise */
    int n_res_host;          /* stored inputs on the host (schedule_res_host); 0 without */
    /* detail behind the categories */
    size_t num_params;
    /* Every *_bytes below is one buffer's size rounded up to ARENA_ALIGN
     * (model/arena.h), as arena_take carves it. */
    size_t residual_bytes;   /* one residual slot (B,T,C) */
    size_t tape_act_bytes;   /* activation part of one full tape */
    size_t tape_f32_bytes;   /* fp32 stats (and LSE) of one full tape */
    size_t tape_ws_bytes;    /* the tape workspace: the largest any kind in the schedule
                              * needs (tape.h); 0 when every tape is full */
    size_t master_bytes, moment_bytes;      /* fp32 master (0 in fp32) and m + v, per rank */
    size_t staging_bytes;    /* OFFLOAD_OPTIMIZER: the host's gradient and parameter
                              * staging, shard_params par-dtype elements each; else 0 */
    int world_size, zero;
    size_t padded_params, shard_params;     /* elements; see PLANNER_SHARD_ALIGN */
    size_t block_params;     /* the rank blocks sums over ranks are cut into: shard_params
                              * under --zero, the same ceil/align cut at --zero 0 */
    size_t reduce_chunk;     /* elements per rank piece in the receive buffer (comm_bytes);
                              * 0 at world 1. See PLANNER_REDUCE_CHUNK */
    /* ZeRO-2's MEM_GRADS: the shard, the outer tensors' and one block's
     * full-size buffers (bytes, rounded); 0 otherwise */
    size_t grad_shard_bytes, grad_outer_bytes, grad_layer_bytes;
    /* ZeRO-3's MEM_PARAMS: the shard, the two block gather buffers (both
     * together), the wte/wpe/LN_f gather buffer (bytes, rounded; 0
     * otherwise); comm_bytes: the reduction's receive buffer, in MEM_GRADS
     * at every stage (PLANNER_REDUCE_CHUNK) */
    size_t param_shard_bytes, param_gather_bytes, param_outer_bytes, comm_bytes;
    size_t layer_params, outer_params; /* elements of one block, and outside the blocks
                                        * (zero >= 2; 0 otherwise) */
    /* Collectives per micro-batch, parameter elements (zero >= 2; 0
     * otherwise): all-gathered before the head (ZeRO-3: every parameter),
     * re-gathered after it (ZeRO-3: the blocks' re-forwards and backwards),
     * reduce-scattered (every gradient). Bytes: times the dtype's. */
    size_t comm_gathered, comm_regathered, comm_scattered;
    size_t scratch_act_bytes, scratch_f32_bytes, scratch_int_bytes;
    size_t attn_scratch_bytes; /* PlanInput's attn_scratch, rounded; 0 when none */
    int loss_chunk;          /* chosen head chunk, tokens */
    int n_res_stored, n_res_work, n_tape_stored, n_tape_work; /* tape counts: every kind */
    int n_part_stored, n_part_work;  /* of which partial (any kind but full) */
    TapeLayout tape;         /* full tape */
} MemoryPlan;

/* The byte costs a schedule is made of, for schedules whose tapes are of
 * two kinds, hi and lo (full and selective unless said); the plan's total
 * for a schedule with n_res residual slots, n_hi and n_lo tape slots is
 * planner_slots_total(). The solver minimises work under it. */
typedef struct {
    size_t fixed;  /* baseline, params, grads, optimizer, scratch, head: no schedule
                    * changes them */
    size_t res;    /* one residual slot */
    size_t hi, lo; /* one tape slot of the hi / lo kind (act + f32) */
    size_t ws_hi, ws_lo; /* the tape workspace each kind needs (0 for a full tape); a
                          * schedule's is the larger of those of the kinds it has */
} PlanUnits;

/* The scratch act buffers: final residual, LN_f output, residual-stream
 * gradient and a (N,C) gradient buffer, then a (N,4C) one that serves
 * d(GELU), d(fc) and d(qkv) in turn: 8 C act values per token, plus each
 * buffer's rounding to ARENA_ALIGN. */

/* Default head chunk, in tokens (at most B*T). In bf16 (the GPU path) it is
 * 4096 rows: chunks must be large enough to fill a GPU's matmuls (412 MB
 * of bf16 logits at Vp = 50304, still far below the (B*T, Vp) logits it
 * replaces at large batch). The head buffer holds chunk x Vp logits in the
 * act dtype (at least Vp fp32 for head_logits). In fp32 (the CPU and the GPU's
 * comparison mode) the buffer is capped near 32 MiB of logits, at least 64
 * rows: a CPU's sgemm is efficient well below that, and memory is the point. */
int planner_default_loss_chunk(int B, int T, int padded_vocab, DType dtype);

/* The planner. Pure: no allocation beyond the caller's struct. */
void planner_plan(const PlanInput *in, const Schedule *sched, MemoryPlan *out);

/* Convenience: build the schedule for `mode` (0, 1, 2 with the default k,
 * selective) and plan it. Returns 0, or -1 with a reason in err. */
int planner_sizes(const PlanInput *in, int mode, MemoryPlan *out, char *err, size_t err_len);

/* Units for hi = full and lo = selective tapes, and for any two kinds. */
void planner_units(const PlanInput *in, PlanUnits *out);
void planner_units_kinds(const PlanInput *in, int hi_kind, int lo_kind, PlanUnits *out);
size_t planner_slots_total(const PlanUnits *u, int n_res, int n_hi, int n_lo);
/* Floats of the table a model of cfg at sequence length T keeps in its
 * scratch (its block's table_floats: the Llama family's RoPE table; 0 for
 * GPT-2). */
size_t planner_table_floats(const GPTConfig *cfg, int T);
/* The block of in's config (block_desc_of) and its shape at in's B, T. */
const BlockDesc *planner_block(const PlanInput *in);
void planner_block_shape(const PlanInput *in, BlockShape *sh);
/* The layout of a tape of `kind` at this shape, and the bytes of its slot
 * (act part and f32 part, each rounded to ARENA_ALIGN). */
void planner_tape_layout(const PlanInput *in, int kind, TapeLayout *out);
size_t planner_tape_bytes(const PlanInput *in, int kind);

/* Parse a byte count with an optional KiB, MiB or GiB suffix ("40GiB",
 * "512MiB", "123456KiB", "1000"). Digits only: no sign, no fraction, no
 * space. Returns 0, or -1 for garbage, an empty string or overflow. */
int planner_parse_bytes(const char *s, size_t *out);
/* Parse an --offload value: "none", or a comma-separated list of
 * "checkpoints" and "optimizer" (each at most once). Returns 0 and the
 * OFFLOAD_* bits, or -1. */
int planner_parse_offload(const char *s, int *out);
/* "none", "checkpoints", "optimizer" or "checkpoints,optimizer". */
const char *planner_offload_name(int offload);
const char *planner_host_category_name(int cat);
/* "12.34 GiB"-style rendering of bytes into buf; returns buf. */
char *planner_format_bytes(size_t bytes, char *buf, size_t len);

/* ---- --recompute auto (planner_auto.c) ---- */
/* Costs: NULL or FLOP costs (opcost.h) search today's two tape kinds, full
 * and selective, for the least recomputed FLOPs: --op-costs flops. Measured
 * costs (nanoseconds) search the kinds on the frontier (opcost_frontier)
 * for the least predicted time: first the inputs-kept family for every
 * pair of frontier kinds (closed form, O(L) each), whose best pair (hi,
 * lo) the DP then runs with; the DP's schedule is never slower than the
 * family's (it models a superset). One DP table either way.
 *
 * Where the schedule comes from. Up to SOLVER_MAX_LAYERS (64) layers the
 * solver's DP (solver.h), optimal over every schedule it models with its
 * two kinds. Past it the DP's tables (L^4) are too large, and auto
 * searches two families in closed form instead, O(L) candidates per pair
 * of kinds: every block input kept with hi tapes on the top blocks and lo
 * tapes below them (schedule_build_inputs_kept), and, for budgets below
 * mode 1's peak, Chen's segments for every k (schedule_build_segments). */
typedef enum { AUTO_SOLVER = 0, AUTO_INPUTS_KEPT = 1, AUTO_SEGMENTS = 2 } AutoFamily;

typedef struct OpCosts OpCosts; /* opcost.h */

typedef struct {
    int fits;               /* 1: peak <= budget; 0: nothing fits, the schedule is the
                             * smallest-peak one */
    size_t peak;            /* planner total of the chosen schedule */
    size_t min_peak;        /* smallest peak any schedule searched reaches at this shape */
    long long recompute_flops;
    long long recompute;    /* in the costs' unit (opcost_recompute); FLOPs without costs */
    int n_res, n_full, n_sel; /* slots of the chosen schedule: residual, hi kind, lo kind */
    int hi_kind, lo_kind;   /* the two tape kinds searched with (full, selective in FLOPs) */
    int family;             /* AutoFamily that produced it */
    int checkpoint_every;   /* AUTO_SEGMENTS: k; 0 otherwise */
    /* --offload checkpoints allowed (planner_auto): OFFLOAD_CHECKPOINTS when
     * the chosen schedule's stored inputs go to the host, else 0 (kept on
     * the device); the host bytes of the choice (with --offload optimizer's);
     * the copies' exposed time per micro-batch (opcost_offload_copy; 0 when
     * kept). */
    int offload;
    size_t host;
    long long copy;
} AutoResult;

/* The schedule with the least recompute (FLOPs, or predicted time with
 * measured costs) whose planned peak fits budget (ties: fewer bytes); when
 * none fits, the smallest-peak schedule (ties: less recompute) with fits =
 * 0. The solver's DP up to SOLVER_MAX_LAYERS layers, planner_auto_family
 * past it. Writes the schedule into *sched (caller frees). Returns 0, or
 * -1 with a reason in err (bad shape, out of memory, OFFLOAD_CHECKPOINTS
 * without measured op and copy costs, or an internal mismatch between the
 * search's bytes or costs and planner_plan's or opcost_recompute's).
 * OFFLOAD_OPTIMIZER it counts: the fixed bytes lose the optimizer state.
 * OFFLOAD_CHECKPOINTS lets it choose where the stored block inputs live
 * (planner_auto.c, auto_offload): on the device, or all on the host
 * through the ring, by predicted time (recompute + the copies' exposed
 * time, opcost_offload_copy) within the device budget and
 * in->host_budget; res->offload says which, and the caller plans and
 * runs with that bit (cleared when 0). */
int planner_auto(const PlanInput *in, size_t budget, const OpCosts *costs, Schedule *sched,
                 AutoResult *res, char *err, size_t err_len);
/* Whether planner_auto weighs offloaded checkpoints here: in->offload has
 * OFFLOAD_CHECKPOINTS and the costs are measured, with the copy engine's. */
int planner_weighs_offload(const PlanInput *in, const OpCosts *costs);
/* The same over the restricted families only (AUTO_INPUTS_KEPT, then
 * AUTO_SEGMENTS), at any layer count: what planner_auto does past the
 * solver's limit, callable below it to compare with the DP. */
int planner_auto_family(const PlanInput *in, size_t budget, const OpCosts *costs,
                        Schedule *sched, AutoResult *res, char *err, size_t err_len);
/* Whether any schedule of the kinds hi and lo fits budget at in's shape
 * (past the solver's limit: any of the families). */
int planner_auto_fits(const PlanInput *in, size_t budget, int hi_kind, int lo_kind);

/* One row of the --plan table. */
typedef struct {
    int mode, checkpoint_every;
    int fits;               /* auto: a schedule fits the budget at this B */
    size_t stored, workspace, peak;
    long long recompute_flops, step_flops;
    double recompute_pct;   /* 100 * recompute_flops / step_flops */
    long long step_ns;      /* predicted step (opcost_step) with measured costs; -1 without */
    int max_batch;          /* largest B (same T) whose peak fits the budget (and whose
                             * host bytes fit in->host_budget); 0 if none */
    size_t host;            /* host-tier bytes (--offload) */
} PlanRow;
#define PLAN_NUM_ROWS 5     /* 0, selective, 1, 2, auto */

/* Rows for modes 0, selective, 1, 2 (checkpoint_every k; 0 = default) and
 * auto at budget, each from planner_plan / planner_auto and flops.h; with
 * measured costs (NULL or FLOP costs: none) also the predicted time of a
 * step of grad_accum micro-batches, and auto by time. Past
 * SOLVER_MAX_LAYERS the auto row is planner_auto_family's.
 * Returns 0, or -1 with a reason in err. */
int planner_mode_rows(const PlanInput *in, size_t budget, int checkpoint_every,
                      const OpCosts *costs, int grad_accum, PlanRow rows[PLAN_NUM_ROWS],
                      char *err, size_t err_len);
/* Print the --plan table (the rows above), after the model's parameter count.
 * Returns 0, or -1 with err. */
int planner_print_modes(FILE *f, const PlanInput *in, size_t budget, int checkpoint_every,
                        const OpCosts *costs, int grad_accum, char *err, size_t err_len);

const char *planner_category_name(int cat);

/* Rank r's ZeRO-1 range [*begin, *end) of the flat parameter vector (empty
 * when the shard lies wholly in the padding). The whole vector without
 * --zero. Checkpoints of a sharded optimizer state use it to re-shard. */
void planner_shard_range(const MemoryPlan *p, int rank, size_t *begin, size_t *end);

/* Print the start-up memory table to f. */
void planner_print(FILE *f, const MemoryPlan *plan, const char *mode_name);

#endif
