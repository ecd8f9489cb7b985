/* model/gpt.h — the model (GPT-2 or Llama family): buffers, the training
 * step, evaluation.
 *
 * Owns: GPT (parameters, gradients, optimizer state and activation buffers,
 * all carved from planner-sized arenas) and the interpreter that runs a
 * recompute schedule (model/schedule.h) through a backend's op table. The
 * order of ops is written once here for every backend; the policy of what
 * is stored is the schedule's.
 *
 * Architecture (llm.c's GPT-2): x0 = wte[tok] + wpe[pos]; per block
 *   r = x + attproj(attn(ln1(x)));  x' = r + fcproj(gelu(fc(ln2(r))));
 * then logits = lnf(x_L) . wte^T over the padded vocab (tied head). */
#ifndef MODEL_GPT_H
#define MODEL_GPT_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "config.h"
#include "kernels/ops.h"
#include "planner.h"
#include "schedule.h"

/* Pointers into one block tape (layout: model/tape.h's TapeLayout). The
 * tensors a tape's kind drops point into the one shared tape workspace: a
 * forward writes them there and its later ops read them, and a backward
 * rebuilds each just before its first use (tape_rebuilds_before). */
typedef struct {
    /* act[t]: tape tensor t of the block's description (block_desc.h);
     * f32[s]: its side output s. GPT-2's code names them (gpt2_block.h's
     * order), the Llama family's indexes them (llama_block.h). */
    union {
        struct { void *ln1, *qkv, *atty, *res2, *ln2, *fch, *fch_gelu; };
        void *act[BLOCK_MAX_TENSORS];
    };
    union {
        struct { float *ln1_mean, *ln1_rstd, *lse, *ln2_mean, *ln2_rstd; };
        float *f32[BLOCK_MAX_SIDES];
    };
    int kind; /* tape.h: what it drops */
} BlockTape;

typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
    float grad_clip; /* 0 = off */
} AdamWConfig;

/* Data-parallel placement of this model (the CLI fills it from the
 * distributed layer's rank and world; NULL = one process). zero = 1 shards the AdamW state and master weights (planner.h,
 * PLANNER_SHARD_ALIGN): this rank's optimizer updates only its range;
 * zero = 2 also keeps only that range of the gradients (GradScatterFn);
 * zero = 3 also of the parameters, gathered before use (ParamGatherFn). */
typedef struct {
    int world, rank, zero;
    /* OFFLOAD_* bits (model/planner.h): what lives in the host tier, on a
     * backend with a copy engine (ops.h copy_async; the cpu's). */
    int offload;
} GPTShard;

/* Called during backward as gradients become final, with n flat element
 * ranges [offsets[k], offsets[k] + counts[k]) of the gradient vector that
 * no later op of this micro-batch writes: the LN_f tensors after their
 * backward, block l's twelve slices right after BACKWARD(l) (re-forwarded
 * blocks included), wte and wpe after the embedding backward. distributed/ uses
 * it to launch the gradient all-reduce layer by layer. */
typedef void (*GradReadyFn)(void *ctx, const size_t *offsets, const size_t *counts, int n);

/* ZeRO-2 (GPTShard zero = 2): the same moments, in every micro-batch, with
 * src[k] the full-size buffer (par dtype, counts[k] elements) holding this
 * rank's gradient of flat range [offsets[k], offsets[k] + counts[k]). On
 * return the hook has added the sum over ranks of that range, cut to this
 * rank's optimizer range, into the gradient shard (gpt_grads_shard_add);
 * src may be overwritten. Without a hook the model adds its own src (one
 * rank). */
typedef void (*GradScatterFn)(void *ctx, void *const *src, const size_t *offsets,
                              const size_t *counts, int n);

/* ZeRO-3 (GPTShard zero = 3): before a block's parameters are read, and
 * wte/wpe/LN_f's once a pass, for each k fill dst[k] (par dtype, counts[k]
 * elements on the device) with flat range [offsets[k], offsets[k] +
 * counts[k]) of the parameters, each rank sending the part in its shard
 * (an all-gather with one count per rank). Complete for later backend ops
 * on return, or with async = 1 (a prefetch) once ParamWaitFn has returned:
 * until then nothing reads or writes dst. Without a hook the model copies
 * from its own shard (one process: the shard is the whole vector). */
typedef void (*ParamGatherFn)(void *ctx, void *const *dst, const size_t *offsets,
                              const size_t *counts, int n, int async);
typedef void (*ParamWaitFn)(void *ctx);

/* Called after each schedule step (a block's forward, re-forward or
 * backward; `done` of the schedule's n_steps finished, the step just run is
 * sched.steps[done - 1]) and once after the loss head (done = n_forward,
 * again), and after each block of a decode pass (gpt_decode_feed, done =
 * 0). For progress displays and prompt stops: a non-zero return
 * abandons the pass at that boundary. The rest of the pass is skipped,
 * g->abandoned is set, gpt_forward_backward and gpt_eval_loss return NAN
 * and gpt_logits_at's logits are undefined; the gradients are then partial,
 * while parameters and optimizer state are untouched (no update ran). */
/* --offload optimizer's update, deferred to the next forward (gpt_optim.c):
 * update units [0, next) are enqueued on the copy engine, [0, waited] have been
 * waited for; pending 0 once all have. The step's arguments are kept for the
 * units still to be enqueued. */
typedef struct {
    int pending, next, waited;
    /* final: gpt_set_final_micro's; early: this pass copied every gradient
     * into the staging during its backward (gpt_update then does not) */
    int final, early;
    AdamWConfig opt;
    float lr, scale;
    int t;
} GPTDeferred;

/* The order the model enqueues, waits and runs in, for tests (test build only,
 * base/test_hooks.h: the product records nothing). GPT_TRACE_ENQUEUE(u): update
 * unit u's host AdamW and upload were enqueued (gpt_tensors.h: unit 0 the
 * embeddings, 1 + l block l); GPT_TRACE_WAIT(u): the forward waited for unit u;
 * GPT_TRACE_FORWARD(l) / GPT_TRACE_BACKWARD(l): block l's forward (first or re-)
 * or backward step returned; GPT_TRACE_STAGED(l): the final backward enqueued
 * block l's gradients into the host tier (gpt_set_final_micro). */
#define GPT_TRACE_CAP 4096
#define GPT_TRACE_ENQUEUE(u) (0x10000 + (u))
#define GPT_TRACE_WAIT(u) (0x20000 + (u))
#define GPT_TRACE_FORWARD(l) (0x30000 + (l))
#define GPT_TRACE_BACKWARD(l) (0x40000 + (l))
#define GPT_TRACE_STAGED(l) (0x50000 + (l)) /* block l's gradients enqueued to the host */
typedef struct {
    int code[GPT_TRACE_CAP];
    int n;
} GPTTrace;

struct GPT;
typedef int (*BlockHookFn)(void *ctx, const struct GPT *g, int done);

typedef struct GPT {
    GPTConfig cfg;
    Backend *be;
    int B, T;
    Schedule sched;
    MemoryPlan plan;
    Arena arenas[MEM_NUM_CATEGORIES];
    size_t param_sizes[NUM_PARAM_TENSORS]; /* elements */
    void *params, *grads;                  /* par dtype, padded_params each; under
                                            * ZeRO-2 grads is the shard: element k is
                                            * flat element opt_begin + k */
    /* ZeRO-2: the full-size buffers the backward writes (planner.h): grad_t
     * of wte, wpe, LN_f points into grad_outer, of a block's tensors into
     * grad_layer (the same for every block: G(i, l) ignores l); NULL else */
    void *grad_outer, *grad_layer;
    /* the receive buffer of the ordered sums over ranks (plan.comm_bytes,
     * world x plan.reduce_chunk par elements; planner.h); NULL at world 1 */
    void *reduce_buf;
    /* ZeRO-3: params is this rank's shard (element k is flat element
     * opt_begin + k) and param_t points into the gather buffers (planner.h):
     * wte, wpe, LN_f into param_outer, a block's tensors into param_blocks,
     * block l's in buffer l & 1 (param_block_bytes apart: P(i, l)).
     * held[b]: the block buffer b holds (-1: none); NULL/0 else */
    void *param_outer, *param_blocks;
    size_t param_block_bytes;
    int held[2], past_head;
    int inflight; /* the block whose prefetch was started and not waited for, or -1 */
    int no_prefetch; /* 1: gpt_gather_prefetch gathers at once, blocking (--zero-prefetch off) */
    /* ZeRO-2/3: parameter elements gathered before the loss head and after
     * it, gradient elements reduce-scattered, over `passes` calls of
     * gpt_forward_backward since gpt_init (evaluation's gathers are not
     * counted): the plan's comm_gathered, comm_regathered, comm_scattered a
     * micro-batch, times passes. `counting` is set inside those calls. */
    size_t gathered, regathered, scattered;
    int passes, counting;
    /* ZeRO-3: ns the counted passes waited in parameter gathers (blocking
     * ones and prefetches' waits; wte/wpe/LN_f's included), wall clock */
    double gather_wait_ns;
    void *param_t[NUM_PARAM_TENSORS], *grad_t[NUM_PARAM_TENSORS];
    float *master, *m, *v;                 /* fp32; master NULL unless be->has_master */
    void **res_slots;                      /* n_res_slots residual buffers (N,C); with
                                            * offloaded checkpoints the stored ones are
                                            * NULL: they are host_res, through ring */
    /* The host tier (--offload): its arenas (planner.h's HOST_* categories),
     * the stored inputs' host slots (n_res_stored), the device ring
     * (plan.n_ring slots, from the activations arena) and the copies
     * (schedule.h, OffloadProgram; n_ring 0 without offload). */
    Arena host_arenas[HOST_NUM_CATEGORIES];
    void **host_res, **ring;
    OffloadProgram off;
    /* --offload optimizer: master, m and v above point into the host tier,
     * with the staging the host's AdamW works through (par dtype, the
     * optimizer range): the gradients copied in, the parameters out */
    void *host_grads, *host_params;
    GPTDeferred deferred;
    GPTTrace *trace; /* NULL unless a test set it */
    BlockTape *tapes;                      /* n_tape_slots */
    void *tape_ws;                         /* the tape workspace (plan.tape_ws_bytes), or NULL */
    void *final_res, *lnf, *dres, *dsmall, *dbig; /* scratch act */
    void *attn_scratch;        /* the backend's attention scratch (plan.attn_scratch_bytes;
                                * NULL when 0), handed over before each attention op */
    float *lnf_mean, *lnf_rstd, *losses;          /* scratch f32 (N); Llama's final
                                                   * RMSNorm uses lnf_rstd */
    float *rope;                                  /* Llama: the RoPE table (T rows of hs,
                                                   * kernels/rope.h), scratch f32; else NULL */
    int *tokens, *targets;                        /* backend int32 (N) */
    float *chunk_buf;                             /* head (chunk,Vp) */
    float *host_losses;                           /* N, host */
    int adam_t;                                   /* AdamW steps taken */
    /* optimizer range: m, v, master hold elements [opt_begin, opt_end) of
     * the flat vector ([0, num_params) unless ZeRO-1 shards it) */
    size_t opt_begin, opt_end;
    GradReadyFn grad_ready;
    void *grad_ready_ctx;
    GradScatterFn grad_scatter;
    void *grad_scatter_ctx;
    ParamGatherFn param_gather;
    ParamWaitFn param_wait;
    void *param_gather_ctx;
    BlockHookFn block_hook;
    void *block_hook_ctx;
    int abandoned; /* the last pass was abandoned by block_hook */
} GPT;

/* Build the schedule for `recompute` (schedule_build's modes), plan, and
 * carve every buffer. loss_chunk 0 lets the planner choose. Returns 0, or
 * -1 with a message. */
int gpt_init(GPT *g, const GPTConfig *cfg, Backend *be, int B, int T, int recompute,
             int loss_chunk, char *err, size_t err_len);
/* The same, for one rank of a data-parallel job (shard NULL = gpt_init). */
int gpt_init_shard(GPT *g, const GPTConfig *cfg, Backend *be, int B, int T, int recompute,
                   int loss_chunk, const GPTShard *shard, char *err, size_t err_len);
/* Told how far gpt_init_schedule is: `done` of `total` bytes (the arenas
 * it zeroes: params, grads, optimizer state) after each 64 MiB piece, with
 * the name of the arena the piece is in. */
typedef void (*AllocProgressFn)(void *ctx, const char *arena, size_t done, size_t total);

/* The same for a schedule built by the caller (segments with a chosen k,
 * auto), which g takes over: gpt_free frees it, and so does a failure. The
 * buffers are zeroed in 64 MiB pieces with a stop polled between them
 * (base/stop.h): a stop fails the call, STOP_MESSAGE in err; progress
 * (NULL: none) is called after each piece. */
int gpt_init_schedule(GPT *g, const GPTConfig *cfg, Backend *be, int B, int T, Schedule *sched,
                      int loss_chunk, const GPTShard *shard, AllocProgressFn progress,
                      void *progress_ctx, char *err, size_t err_len);
void gpt_free(GPT *g);

/* Bytes carved from all arenas: their high-water mark, as nothing is
 * released before gpt_free. Equals plan.total when the model and the
 * planner agree. */
size_t gpt_arena_high_water(const GPT *g);
/* The same for the host tier's arenas: equals plan.host_total. */
size_t gpt_host_high_water(const GPT *g);

/* Install (fn != NULL) or remove the gradient-ready callback. */
void gpt_set_grad_hook(GPT *g, GradReadyFn fn, void *ctx);
/* ZeRO-2: install (fn != NULL) or remove the gradient reduce-scatter. */
void gpt_set_grad_scatter(GPT *g, GradScatterFn fn, void *ctx);
/* ZeRO-3: install (fn and wait != NULL) or remove the parameter gather. */
void gpt_set_param_gather(GPT *g, ParamGatherFn fn, ParamWaitFn wait, void *ctx);
/* ZeRO-2: shard[flat - opt_begin ...] += src[0 .. n) (par dtype, on the
 * device); [flat, flat + n) lies in the optimizer range. */
void gpt_grads_shard_add(GPT *g, size_t flat, const void *src, size_t n);
/* Install (fn != NULL) or remove the per-block callback. */
void gpt_set_block_hook(GPT *g, BlockHookFn fn, void *ctx);

/* Parameters as fp32 on the host, llm.c order, config_num_params() floats.
 * Under ZeRO-1 with a master copy, gpt_get_params reads this rank's range
 * from its master and the rest from the working copy (dist_get_params
 * gathers the other ranks' masters). */
void gpt_set_params(GPT *g, const float *host);
void gpt_get_params(GPT *g, float *host);
/* Under ZeRO-3 both read and write this rank's range only (the shard;
 * dist_get_params gathers the rest). */
/* grads as fp32; under ZeRO-2 only this rank's optimizer range of host is
 * written (dist_get_grads gathers the rest) */
void gpt_get_grads(GPT *g, float *host);

/* GPT-2 initialisation into a host array: N(0, 0.02); the residual output
 * projections (attprojw, fcprojw) N(0, 0.02/sqrt(2L)); LayerNorm weights 1,
 * biases 0; padded vocab rows 0. Deterministic in seed. Returns 0, or 1
 * when a stop was asked for (base/stop.h): host is then part-filled. */
int gpt_init_weights(const GPTConfig *cfg, uint64_t seed, float *host);

/* The same initialisation as a stream, for start-up to fill and upload
 * the parameters a piece at a time (gpt_set_params_stream) rather than
 * hold a host copy of all of them (475 MiB at 124M): next writes the
 * following n values (n may cross tensors); pieces of any size give
 * gpt_init_weights' bits. Returns 1 when a stop was asked for. */
typedef struct {
    GPTConfig cfg;
    uint64_t state; /* splitmix64 (base/rng.h) under Box-Muller */
    int has_spare;
    double spare;
    int tensor;    /* the tensor being filled (config.h order) */
    size_t pos;    /* the next element in it */
} GptInitStream;
void gpt_init_stream_start(GptInitStream *s, const GPTConfig *cfg, uint64_t seed);
int gpt_init_stream_next(GptInitStream *s, float *out, size_t n);

/* The parameters set a piece at a time: fill(ctx, buf, n) writes the
 * next n of them in llm.c's order (0; 1 for a stop; -1 with err for a
 * fault), and each piece is uploaded as gpt_set_params would. The one
 * host buffer holds GPT_PARAMS_PIECE floats at most, which the memory
 * plan counts with the host copies (gpt_params_piece_bytes). Returns 0,
 * or fill's first nonzero rc (-1 with err when the buffer cannot be had). */
#define GPT_PARAMS_PIECE ((size_t)1 << 20) /* floats: 4 MiB */
typedef int (*GptParamsFill)(void *ctx, float *buf, size_t n, char *err, size_t len);
int gpt_set_params_stream(GPT *g, GptParamsFill fill, void *ctx, char *err, size_t len);
size_t gpt_params_piece_bytes(const GPTConfig *cfg);

void gpt_zero_grads(GPT *g);

/* One forward + backward over a micro-batch of B*T inputs and targets
 * (host int32). Gradients accumulate into g->grads, scaled by dloss per
 * token (1/(B*T*grad_accum)). Returns the micro-batch's mean loss. */
double gpt_forward_backward(GPT *g, const int *inputs, const int *targets, float dloss);

/* Forward only: mean loss of a micro-batch (validation). */
double gpt_eval_loss(GPT *g, const int *inputs, const int *targets);

/* Forward only: the loss at every position, -log softmax(logits)[target]
 * over the real vocabulary, as B*T floats on the host (row-major (B,T)),
 * valid until the model's next call. Multiple-choice evaluation reads the
 * positions of each completion. When the block hook abandoned the forward
 * (g->abandoned), the values are stale and the caller must not use them. */
const float *gpt_eval_token_losses(GPT *g, const int *inputs, const int *targets);

/* Logits (padded vocab, fp32, host) at position pos of batch row 0 after a
 * forward over inputs (B*T, host int32). For sampling. */
void gpt_logits_at(GPT *g, const int *inputs, int pos, float *logits);

/* Incremental decoding for generation: a KV cache of batch row 0.
 * gpt_decode_feed runs the blocks for n new positions only: their tokens'
 * embeddings at positions len .. len+n-1, each block's K and V appended to
 * the cache, each row attending to positions [0, its own], then len += n.
 * The ops are the forward's with N = n (a prompt or a re-prefilled context
 * in one batch, up to GPT_DECODE_ROWS rows a pass; one row a drawn token),
 * so the logits are the full forward's at that position to within the
 * matmuls' rounding (bit for bit where the backend's matmul sums a row the
 * same way at any N). Positions stop at the model's T: the caller starts a
 * new cache (gpt_decode_reset) for a context that has moved (GPT-2's
 * position embeddings are absolute; the Llama family's RoPE turns each
 * row by its position t, so the same). The buffers (2 * L * T * KVH * hs
 * act for K and V, 2 L T C for GPT-2; ~16 C act and 2 f32 a row of
 * scratch for GPT_DECODE_ROWS rows, or T if fewer) are the backend's, allocated outside the planner's arenas: a
 * sampler's, not a training step's, and small beside them. */
enum { GPT_DECODE_ROWS = 64 }; /* rows of one batched pass: gemm-sized, scratch small */
typedef struct {
    void *k, *v;                                /* L x (KVH, T, hs) act each */
    void *x, *ln, *qkv, *atty, *res2, *fch, *fch_gelu, *lnf; /* rows x (C..4C) act */
    float *mean, *rstd;                         /* rows f32 */
    int *token;                                 /* backend int32 (rows) */
    size_t bytes;                               /* all of the above */
    int rows;                                   /* scratch rows: min(T, GPT_DECODE_ROWS) */
    int len;                                    /* positions cached */
} GPTDecode;

/* 1 when g's backend has the decode op (else callers re-run the forward). */
/* The bytes of the backend's attention scratch at cfg's shape and the
 * thread count in force (ops.h attention_scratch_bytes; 0 where none):
 * what a plan's PlanInput.attn_scratch holds for a run on be. */
size_t gpt_attn_scratch_bytes(Backend *be, const GPTConfig *cfg);
int gpt_decode_supported(const GPT *g);
/* Allocate an empty cache (len 0); 0, or -1 with a message. */
int gpt_decode_open(GPT *g, GPTDecode *d, char *err, size_t err_len);
void gpt_decode_close(GPT *g, GPTDecode *d);
/* Forget the cached positions (len 0): the next feed starts at position 0.
 * Nothing is freed or cleared (each row is written before it is read). */
static inline void gpt_decode_reset(GPTDecode *d) { d->len = 0; }
/* Feed tokens[0..n) at positions d->len .. d->len+n-1 (d->len + n <= g->T,
 * n >= 1); logits (padded vocab, fp32, host) of the last of them when
 * non-NULL (NULL skips the head). Polls the block hook after each block of
 * each pass, as a forward does (done = 0); when it abandons, g->abandoned
 * is set and the cache is left part-written (reset it). */
void gpt_decode_feed(GPT *g, GPTDecode *d, const int *tokens, int n, float *logits);
/* One token: gpt_decode_feed of n = 1. */
void gpt_decode_step(GPT *g, GPTDecode *d, int token, float *logits);

/* Global gradient norm (before clipping): of this process's vector, i.e.
 * the whole one unless ZeRO-1/2 shard it over ranks (then
 * gpt_grad_norm_sq_local, summed by distributed/). */
double gpt_grad_norm(GPT *g);
/* Sum of squared gradients over this rank's optimizer range (the whole
 * vector without ZeRO-1); distributed/ sums it over ranks. */
double gpt_grad_norm_sq_local(GPT *g);
/* Sum of squared gradients over flat elements [flat, flat + n) of a full
 * (unsharded, --zero 0) gradient vector. */
double gpt_grad_norm_sq_range(GPT *g, size_t flat, size_t n);

/* AdamW step on every tensor (on this rank's optimizer range of each). `norm` is gpt_grad_norm()'s value: when
 * grad_clip > 0 and norm > grad_clip, gradients are scaled by
 * grad_clip/norm. Weight decay applies to the 2-D tensors (embeddings and
 * matmul weights), not to LayerNorm parameters or biases, as llm.c's GPU
 * trainer and nanoGPT do. */
void gpt_update(GPT *g, const AdamWConfig *opt, float lr, double norm);
/* With --offload optimizer the update runs in the host tier and overlaps the
 * next forward: gpt_update enqueues this rank's gradients (and in fp32, which
 * has no master, its parameters) into the host tier, then AdamW and the upload
 * of the updated parameters unit by unit (the embeddings, then block by block),
 * and returns at once; the next forward waits for each unit's parameters just
 * before it reads them (model/gpt_optim.c). Under ZeRO-1 gpt_update waits for
 * all before it returns (the all-gather reads them). The same bits as without
 * offload. */

/* Wait until a deferred update's parameters are all back on the device and
 * the optimizer state in the host tier is final; nothing when none is pending.
 * gpt_get_params, gpt_set_params and gpt_decode_step call it; so must anything
 * else that reads the parameters, master, m or v (the checkpoint writers). */
void gpt_params_settle(GPT *g);
/* gpt_zero_grads' wait: the deferred update has copied the gradients out. */
void gpt_opt_grads_taken(GPT *g);
/* Before each micro-batch's gpt_forward_backward: final = 1 when it is the
 * last of the step and nothing but this process changes the gradients after
 * its backward (one rank: no reduction). With --offload optimizer, that
 * backward then copies each layer's gradients into the host tier as soon as
 * they are final (the gradient hook's moments), beside the rest of the
 * backward, and gpt_update's AdamW finds them there. */
void gpt_set_final_micro(GPT *g, int final);

#endif
