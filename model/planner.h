/* model/planner.h — one pure function owns every byte the trainer allocates.
 *
 * Owns: MemoryPlan, the byte size of every buffer for a (config, B, T,
 * schedule, dtype) and the layout of one block tape. The model allocates
 * exactly these sizes in one arena per category (model/arena.h), the
 * start-up table prints them, and the tests check them. Nothing else
 * computes a buffer size. */
#ifndef MODEL_PLANNER_H
#define MODEL_PLANNER_H

#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "schedule.h"

typedef enum { DTYPE_FP32 = 0, DTYPE_BF16 = 1 } DType;

int dtype_bytes(DType d);
const char *dtype_name(DType d);

/* Everything the sizes depend on. */
typedef struct {
    GPTConfig cfg;
    int B, T;          /* micro-batch */
    DType dtype;       /* activations and working params */
    int loss_chunk;    /* tokens per head chunk; 0 = planner's default */
    int world_size;    /* data-parallel ranks; 0 is read as 1 */
    int zero;          /* 1: ZeRO-1, AdamW state (and master) sharded over ranks */
} PlanInput;

/* ZeRO-1 sharding (--zero 1). The flat parameter vector (llm.c order,
 * num_params elements) is padded with zeros to padded_params = world *
 * shard_params elements; rank r's optimizer owns the contiguous range
 * [r * shard_params, min((r+1) * shard_params, num_params)). shard_params
 * is ceil(num_params / world) rounded up to PLANNER_SHARD_ALIGN elements so
 * every shard starts 256-byte aligned. The working parameters and the
 * gradients are padded_params long (reduce-scatter and all-gather need
 * equal blocks); AdamW m, v and the fp32 master hold shard_params each.
 * Without --zero: shard_params = padded_params = num_params. */
#define PLANNER_SHARD_ALIGN 64

/* Element offsets (in elements of their own type) inside one block tape.
 * Activation fields are laid out in one act buffer, fp32 stats in another. */
typedef struct {
    size_t ln1, qkv, atty, res2, ln2, fch, fch_gelu, act_elems;   /* act, per tape */
    size_t ln1_mean, ln1_rstd, lse, ln2_mean, ln2_rstd, f32_elems; /* f32, per tape */
} TapeLayout;

/* Categories, in the order they are printed and allocated. */
enum {
    MEM_PARAMS, MEM_GRADS, MEM_OPTIMIZER, MEM_ACTIVATIONS, MEM_WORKSPACE, MEM_SCRATCH,
    MEM_HEAD, MEM_NUM_CATEGORIES
};

typedef struct {
    size_t bytes[MEM_NUM_CATEGORIES];
    size_t total;
    /* detail behind the categories */
    size_t num_params;
    size_t residual_bytes;   /* one residual slot (B,T,C) */
    size_t tape_act_bytes;   /* activation part of one tape */
    size_t tape_f32_bytes;   /* fp32 stats of one tape */
    size_t master_bytes, moment_bytes;      /* fp32 master (0 in fp32) and m + v, per rank */
    int world_size, zero;
    size_t padded_params, shard_params;     /* elements; see PLANNER_SHARD_ALIGN */
    size_t scratch_act_bytes, scratch_f32_bytes, scratch_int_bytes;
    int loss_chunk;          /* chosen head chunk, tokens */
    int n_res_stored, n_res_work, n_tape_stored, n_tape_work;
    TapeLayout tape;
} MemoryPlan;

/* The scratch buffers, in act elements per token: final residual, LN_f
 * output, residual-stream gradient, a (N,C) gradient buffer and a (N,4C)
 * one that serves d(GELU), d(fc) and d(qkv) in turn. */
#define SCRATCH_ACT_PER_TOKEN_C 8 /* 1 + 1 + 1 + 1 + 4, times C */

/* Default head chunk: enough rows to keep a matmul efficient, capped so the
 * chunk buffer stays near 32 MiB of fp32 logits. */
int planner_default_loss_chunk(int B, int T, int padded_vocab);

/* The planner. Pure: no allocation beyond the caller's struct. */
void planner_plan(const PlanInput *in, const Schedule *sched, MemoryPlan *out);

/* Convenience: build the schedule for `mode` and plan it. Returns 0, or -1
 * with a reason in err. */
int planner_sizes(const PlanInput *in, int mode, MemoryPlan *out, char *err, size_t err_len);

const char *planner_category_name(int cat);

/* Rank r's ZeRO-1 range [*begin, *end) of the flat parameter vector (empty
 * when the shard lies wholly in the padding). The whole vector without
 * --zero. Checkpoints of a sharded optimizer state use it to re-shard. */
void planner_shard_range(const MemoryPlan *p, int rank, size_t *begin, size_t *end);

/* Print the start-up memory table to f. */
void planner_print(FILE *f, const MemoryPlan *plan, const char *mode_name);

#endif
