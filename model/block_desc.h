/* model/block_desc.h — a transformer block, described once.
 *
 * Owns: BlockDesc, the data the machinery reads about a block: the
 * tensors its forward leaves on the tape for its backward (names, widths
 * as functions of the shape), their f32 side outputs, the forward ops in
 * order (what each makes and reads, so how each tensor is rebuilt), the
 * backward ops in order (what each reads), and the tensors that play a
 * role in the schedule (the selective set, the fusions). model/tape.c
 * computes tape layouts, lifetimes and rebuild orders from it; the
 * schedule, the planner and the solver read the roles; the interpreter of
 * a family (gpt.c for GPT-2) runs the ops, keeping to the description.
 * A family adds one description (model/gpt2_block.c is GPT-2's) and
 * returns it from block_desc_of; docs/architecture.md says how.
 *
 * Terms: N = B*T rows (tokens). A width is a count of elements per row,
 * linear in the shape (BlockDim). A tensor set is a bit mask (bit t:
 * tensor t); tape kinds (model/tape.h) are tensor sets. */
#ifndef MODEL_BLOCK_DESC_H
#define MODEL_BLOCK_DESC_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

typedef struct Backend Backend; /* kernels/ops.h */

/* Upper bounds of a description. 2^BLOCK_MAX_TENSORS tape kinds exist;
 * the auto search prices every one (opcost_frontier), so keep it small. */
#define BLOCK_MAX_TENSORS 12
#define BLOCK_MAX_SIDES 12
#define BLOCK_MAX_FWD_OPS 24
#define BLOCK_MAX_BWD_OPS 24
#define BLOCK_MAX_GRAD_BIG 4

typedef uint32_t TensorSet; /* bit t: tape tensor t */
#define TENSOR_BIT(t) ((TensorSet)1 << (t))

/* The shape a description's widths are functions of. */
typedef struct {
    size_t B, T, N;  /* N = B*T rows */
    size_t C;        /* channels */
    size_t NH, NKV;  /* query heads, key/value heads */
    size_t hs;       /* head size (config_head_dim: C / NH unless given) */
    size_t F;        /* FFN width */
} BlockShape;

/* Elements per row: one + c*C + heads*NH + kv_heads*NKV + q*NH*hs +
 * kv*NKV*hs + ffn*F. GPT-2's qkv is {.q = 1, .kv = 2} (3C), its fch {.ffn
 * = 1} (4C), an attention log-sum-exp {.heads = 1} (f32, NH per row). */
typedef struct {
    int one, c, heads, kv_heads, q, kv, ffn;
} BlockDim;

size_t block_dim(const BlockShape *sh, BlockDim d);

/* A tape tensor: (N, width) activations. */
typedef struct {
    const char *name; /* "ln1" */
    char letter;      /* its character in a tape kind's name (tape_kind_name) */
    BlockDim width;
} BlockTensor;

/* An f32 side output of the op that makes `tensor`, (N, width) f32.
 * SIDE_KEPT: always in the tape's f32 part, whatever the kind drops (a
 * rebuild of its tensor rewrites it with equal values: LayerNorm stats).
 * SIDE_FOLLOWS: where its tensor is: in the tape's f32 part when the
 * tensor is kept, in the tape workspace beside it when dropped (the
 * attention's log-sum-exp). */
enum { SIDE_KEPT = 0, SIDE_FOLLOWS = 1 };
typedef struct {
    const char *name; /* "ln1_mean" */
    int tensor;
    int policy;
    BlockDim width;
} BlockSide;

/* Operands an op may name besides the tape tensors. */
#define BLOCK_X (-1)   /* the block input x_l (a residual slot) */
#define BLOCK_OUT (-2) /* the block output x_{l+1} */

/* A forward op: it writes `makes` (a tape tensor or BLOCK_OUT) and reads
 * the tensors in `reads` (x_l is always readable and not listed). A tensor
 * is made by every op that writes it, in order (res2: attproj, then + x),
 * and rebuilt by running them again: its inputs are what they read. An
 * out_only op is skipped when the block's output is not wanted (a
 * re-forward, out = SLOT_NONE): it must not make a tape tensor. */
typedef struct {
    const char *name; /* "qkv_fwd": the op names cost files use (opcost.h) */
    int makes;
    TensorSet reads;
    int out_only;
} BlockFwdOp;

/* A backward op, in the order the backward runs them, and the tape
 * tensors it reads (side outputs come with their tensors). A dropped
 * tensor is rebuilt right before the first op that reads it. */
typedef struct {
    const char *name; /* "qkv_bwd" */
    TensorSet reads;
} BlockBwdOp;

/* One block's buffers, for timing its ops alone (opcost_measure.c, which
 * allocates them from the description and fills them with small random
 * values): the buffers the family's bench_op hands its ops. */
typedef struct {
    Backend *be;
    const GPTConfig *cfg;
    BlockShape sh;
    void *x, *out;                 /* x_l and x_{l+1}, (N,C) */
    void *act[BLOCK_MAX_TENSORS];  /* the tape tensors, (N, width) */
    float *f32[BLOCK_MAX_SIDES];   /* their side outputs */
    void *dres, *dsmall, *dbig;    /* (N,C), (N,C), (N, block_grad_big) */
    /* config.h's slots: one layer's part of each per-layer tensor, and the
     * final norm's LNFW, LNFB; wte, wpe (T rows) for the embedding */
    void *par[NUM_PARAM_TENSORS], *grad[NUM_PARAM_TENSORS];
    const int *tokens;             /* (N) */
    const float *rope;             /* a RoPE table, (T, hs) f32 */
} BlockBench;

/* What bench_op runs: forward op `op` of the description, backward op
 * `op`, or the step's ops whose code is the family's (op unused): the
 * embedding's forward and backward and the final norm's. */
enum { BENCH_FWD, BENCH_BWD, BENCH_EMBED_FWD, BENCH_NORM_FWD, BENCH_NORM_BWD, BENCH_EMBED_BWD };

typedef struct BlockDesc {
    const char *family; /* "gpt2" */
    int n_tensors;
    BlockTensor tensor[BLOCK_MAX_TENSORS];
    int n_sides;
    BlockSide side[BLOCK_MAX_SIDES]; /* in the order of the tape's f32 part */
    int n_fwd;
    BlockFwdOp fwd[BLOCK_MAX_FWD_OPS];
    int n_bwd;
    BlockBwdOp bwd[BLOCK_MAX_BWD_OPS];
    /* --recompute selective's tape kind: the tensors it drops (cheap to
     * rebuild, large to keep). */
    TensorSet selective;
    /* The closing add of a block may also make the next block's first
     * tensor, fuse_writes, in the same op (the next block's forward then
     * skips the op that makes it), reading fuse_reads of its own tape. The
     * schedule allows it unless both may sit in the one tape workspace:
     * the next kind drops one of fuse_writes and this one one of
     * fuse_reads (schedule_fuse_layernorms). */
    TensorSet fuse_writes, fuse_reads;
    /* Tensors one fused forward op makes together, not bit for bit as its
     * unfused ops would: fused only when no tape of the schedule drops
     * any of them, since a backward rebuilds them unfused. */
    TensorSet inexact_fused;
    /* The gradients the backward holds, one at a time, in its one wide
     * scratch buffer (gpt.c's dbig), per row: the buffer is as wide as the
     * widest (block_grad_big). GPT-2: d(gelu), d(fch) in place (F), then
     * d(qkv) (3C). */
    int n_grad_big;
    BlockDim grad_big[BLOCK_MAX_GRAD_BIG];
    /* Widths of the shape a config leaves open: set sh->NKV and sh->F
     * from sh->C and sh->NH (GPT-2: NKV = NH, F = 4C). A Llama config's
     * own NKV and F then replace them (block_shape). */
    void (*shape_defaults)(BlockShape *sh);
    /* What its ops cost, for the op-cost model (model/opcost.h), which
     * reads a family only through these: the FLOPs of each op at sh in
     * model/flops.h's convention, forward op i in fwd[i], backward op i in
     * bwd[i], the final norm's forward in *norm (its backward: twice); and
     * an op run once on b's buffers (part: BENCH_*), the same kernels and
     * operands the family's block code calls, for opcost_measure to time.
     * A description no run prices (a test's) may leave both NULL. */
    void (*op_flops)(const BlockShape *sh, long long *fwd, long long *bwd, long long *norm);
    void (*bench_op)(const BlockBench *b, int part, int op);
    /* f32 floats of a table the block's ops read at every position, made
     * once a run and kept in the scratch (the Llama family's RoPE table,
     * kernels/rope.h: T rows of hs); NULL: none (GPT-2). The planner and
     * gpt_alloc size it through this alone. */
    size_t (*table_floats)(const GPTConfig *cfg, int T);
} BlockDesc;

/* The description of cfg's block: GPT-2's or the Llama family's (by cfg->arch). */
const BlockDesc *block_desc_of(const GPTConfig *cfg);

/* cfg's shape at micro-batch B x T. */
void block_shape(const BlockDesc *d, const GPTConfig *cfg, size_t B, size_t T, BlockShape *sh);

/* Elements per row of the backward's narrow gradient buffer (gpt.c's
 * dsmall): the gradient of a C-wide tensor or of the attention's output
 * (NH hs, which is C unless the head size is given): max(C, NH hs). */
size_t block_grad_small(const BlockShape *sh);

/* Elements per row of the backward's wide gradient buffer at sh. */
size_t block_grad_big(const BlockDesc *d, const BlockShape *sh);

/* Derived from the ops. The ops that make tensor t, as a bit mask over op
 * indices; the tensors they read (t's inputs: a rebuild of t needs them);
 * the first forward op that writes t and the last that reads it. */
uint32_t block_makers(const BlockDesc *d, int t);
TensorSet block_inputs(const BlockDesc *d, int t);
int block_first_write(const BlockDesc *d, int t);
int block_last_read(const BlockDesc *d, int t);

/* 0 when d is consistent (counts within bounds, every tensor made before
 * it is read, inputs made earlier, roles within the tensors, letters
 * distinct and not '-'); else -1 with the first fault in err. */
int block_desc_check(const BlockDesc *d, char *err, size_t err_len);

#endif
