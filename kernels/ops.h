/* kernels/ops.h — the op table every backend implements (cpu now, cuda too).
 *
 * Owns: the Backend handle and the signature of every op the model's schedule
 * calls. The model code (model/) calls only these; it never knows which
 * backend runs.
 *
 * Element types. Three kinds of tensor pointer appear below:
 *   act  activations, in the backend's activation dtype (be->act_bytes wide:
 *        4 = fp32 on the CPU, 2 = bf16 by default on CUDA);
 *   par  working parameters and their gradients, be->par_bytes wide;
 *   f32  always float: LayerNorm mean/rstd, RMSNorm rstd, attention
 *        log-sum-exp, the RoPE table, per-token losses, AdamW master
 *        weights and moments.
 * They are all void or float pointers into backend memory (host memory for
 * the cpu backend, device memory for cuda). Integer token buffers are int32.
 *
 * Shapes use N = B*T rows. "=" in a comment means the op overwrites the
 * output; "+=" means it accumulates into it (callers zero it first). Every
 * op must be deterministic: the same inputs and launch shapes give the same
 * bits, which is what makes recompute 0 and 1 bitwise identical. The cpu
 * backend's ops give the same bits at any thread count too (reductions in
 * an order fixed by the shapes; the products in tiles fixed by the shapes,
 * kernels/cpu/gemm_tiles.c; tests/e2e/train/test_thread_bits.c). */
#ifndef KERNELS_OPS_H
#define KERNELS_OPS_H

#include <stddef.h>

typedef struct Backend Backend;

/* Events of a backend's copy engine (copy_async, event_wait). */
#define OPS_COPY_EVENTS 8

typedef struct BackendOps {
    /* ---- memory; mem_alloc returns NULL on failure (never aborts) ---- */
    void *(*mem_alloc)(Backend *be, size_t bytes);
    void (*mem_free)(Backend *be, void *p);
    void (*mem_zero)(Backend *be, void *p, size_t bytes);
    void (*mem_upload)(Backend *be, void *dst, const void *host, size_t bytes);
    void (*mem_download)(Backend *be, void *host, const void *src, size_t bytes);
    void (*sync)(Backend *be);
    /* Device memory as the driver sees it; returns -1 where that has no
     * meaning (cpu), 0 otherwise. */
    int (*mem_info)(Backend *be, size_t *free_bytes, size_t *total_bytes);
    /* Optional (NULL on cpu): the stream every op is enqueued on, as a
     * cudaStream_t. distributed/'s NCCL path orders its collectives after it with
     * events, on a stream of its own. */
    void *(*native_stream)(Backend *be);

    /* Parameters cross the host boundary as fp32. params_upload writes the
     * working copy (par dtype) and, when master != NULL, the fp32 master.
     * params_download reads the master when given, else the working copy. */
    /* ---- the host tier (--offload; model/planner.h). NULL where a backend has
     * none (the CLI then refuses --offload); the cpu's is kernels/cpu/copy_engine.c,
     * the cuda's kernels/cuda/host_tier.cu ----
     * host_alloc/host_free: host-tier memory (pinned on a GPU), NULL on failure.
     * copy_async: copy `bytes` from src to dst (either may be device memory or
     * host tier) on the backend's copy engine. The copy starts once every op
     * enqueued before it has finished and runs beside the ops enqueued after it;
     * copies run one after another in the order they were enqueued. When it is
     * done it completes one count of event ev (0 <= ev < OPS_COPY_EVENTS).
     * event_wait(ev): ops enqueued after it start only once every copy enqueued
     * on ev before it is done (cpu: the caller blocks until then; cuda: the
     * compute stream waits, the caller does not). No copy may
     * write memory an op reads or writes, or read memory an op writes, between
     * its enqueue and the wait that follows it: the model's schedule orders
     * them (model/schedule.h, OffloadProgram). */
    void *(*host_alloc)(Backend *be, size_t bytes);
    void (*host_free)(Backend *be, void *p);
    void (*copy_async)(Backend *be, void *dst, const void *src, size_t bytes, int ev);
    void (*event_wait)(Backend *be, int ev);

    /* Optional (NULL where nothing needs it). Touch, once, what the matmul
     * library keeps resident between calls at these shapes, so that the
     * process's memory measured after it (the plan's baseline) counts it.
     * cpu: OpenBLAS's per-thread packing buffers, which a first sgemm maps
     * and which stay resident (each thread's, for its one-thread tiles:
     * kernels/cpu/gemm_tiles.c). mm[i] = {N, IC, OC} of a
     * matmul_forward/_backward the run makes; the head: chunks of
     * head_rows rows, V classes, C channels. Its operands are fresh
     * mappings, unmapped before it returns (a kernel may count them resident
     * while they are read: no more than the loss head's chunk, which the
     * arenas hold anyway); writes nothing of the caller's; costs about one
     * tenth of a step. */
    void (*matmul_prepare)(Backend *be, const int (*mm)[3], int n_mm, int head_rows, int V,
                           int C);

    void (*params_upload)(Backend *be, void *params, float *master, const float *host, size_t n);
    void (*params_download)(Backend *be, float *host, const void *params, const float *master,
                            size_t n);

    /* ---- embedding ----
     * out(N,C) = wte[tokens[n]] + wpe[n % T]       tokens: int32 (N)
     * wpe NULL: no position table, out = wte[tokens[n]] (the Llama family),
     * and then dwpe NULL in the backward. */
    void (*encoder_forward)(Backend *be, void *out, const int *tokens, const void *wte,
                            const void *wpe, int B, int T, int C);
    /* dwte(Vp,C) +=, dwpe(maxT,C) += from dout(N,C); deterministic order. */
    void (*encoder_backward)(Backend *be, void *dwte, void *dwpe, const void *dout,
                             const int *tokens, int B, int T, int C);

    /* ---- LayerNorm over C, eps 1e-5 ----
     * out(N,C) =, mean(N) =, rstd(N) = */
    void (*layernorm_forward)(Backend *be, void *out, float *mean, float *rstd, const void *inp,
                              const void *weight, const void *bias, int N, int C);
    /* dinp(N,C) +=, dweight(C) +=, dbias(C) += */
    void (*layernorm_backward)(Backend *be, void *dinp, void *dweight, void *dbias,
                               const void *dout, const void *inp, const void *weight,
                               const float *mean, const float *rstd, int N, int C);

    /* ---- matmul: out(N,OC) = inp(N,IC) . weight(OC,IC)^T + bias(OC) ----
     * bias may be NULL. */
    void (*matmul_forward)(Backend *be, void *out, const void *inp, const void *weight,
                           const void *bias, int N, int IC, int OC);
    /* dinp(N,IC) =, dweight(OC,IC) +=, dbias(OC) += (dbias may be NULL). */
    void (*matmul_backward)(Backend *be, void *dinp, void *dweight, void *dbias,
                            const void *dout, const void *inp, const void *weight, int N,
                            int IC, int OC);

    /* ---- causal self-attention: NH query heads and KVH key/value heads, all
     * of size hs = C/NH, NH divisible by KVH (KVH == NH: multi-head
     * attention; KVH < NH: grouped-query attention, query head h reading
     * key/value head h / (NH/KVH), as Llama's repeat_kv). C here, and in
     * attention_decode, attention_scratch_bytes, RoPE and qk-norm below, is
     * the query width NH*hs, which the caller passes: the model's channels
     * for GPT-2, NH * head_dim for the Llama family (not the channels when
     * --head-dim is given: Qwen3-0.6B's 16 x 128 at 1024) ----
     * qkv(N, C + 2*KVH*hs) holds [q | k | v] per row: q NH*hs = C wide, k and
     * v KVH*hs wide each (3C when KVH == NH); head h uses columns
     * h*hs..(h+1)*hs of q, key/value head g columns g*hs..(g+1)*hs of k and
     * of v. out(N,C) =, lse(B,NH,T) = the per-row log-sum-exp of the scaled
     * scores. Never stores (T,T). */
    void (*attention_forward)(Backend *be, void *out, float *lse, const void *qkv, int B, int T,
                              int C, int NH, int KVH);
    /* dqkv(N, C + 2*KVH*hs) = from dout(N,C), using qkv, out and lse from
     * forward; a key/value head's dk, dv sum over its query heads (cuda: in
     * a fixed order, no atomics). */
    void (*attention_backward)(Backend *be, void *dqkv, const void *dout, const void *qkv,
                               const void *out, const float *lse, int B, int T, int C, int NH,
                               int KVH);

    /* One step of incremental decoding (generation with a KV cache), batch
     * row 0, position t < maxT. qkv(1, C + 2*KVH*hs) holds [q | k | v] of
     * position t; kcache, vcache (KVH,maxT,hs) act: row t of each key/value
     * head = that head's k, v (=); rows < t are read as earlier calls wrote
     * them. out(1,C) = for each query head h, with g its key/value head,
     * softmax_{j<=t}(q.k_j / sqrt(hs)) . v_j over head g's cache:
     * attention_forward's row t over the same prefix. Optional: NULL where a
     * backend has none (the caller then re-runs the whole forward). */
    void (*attention_decode)(Backend *be, void *out, void *kcache, void *vcache,
                             const void *qkv, int t, int maxT, int C, int NH, int KVH);
    /* Optional (NULL where the attention ops need no memory of their own):
     * attention_scratch_bytes is the host scratch the attention ops (all
     * three) use at C channels and NH heads, at the thread count in force;
     * the model's plan counts it (MEM_SCRATCH) and the model hands its
     * buffer over with attention_scratch(p, bytes) before each attention op
     * it calls. An op called without one (or with one made for fewer
     * threads) makes do with its threads' stacks or with fewer threads:
     * the same bits either way. */
    size_t (*attention_scratch_bytes)(Backend *be, int C, int NH);
    void (*attention_scratch)(Backend *be, void *p, size_t bytes);

    /* ---- the Llama family's ops: RMSNorm, RoPE, SwiGLU, qk-norm.
     * Optional: NULL where a backend has none (cpu and cuda have them all) ---- */
    /* RMSNorm over C: rstd(N) = 1 / sqrt(mean_c(inp^2) + eps) (f32, =),
     * out(N,C) = inp * rstd * weight (=). */
    void (*rmsnorm_forward)(Backend *be, void *out, float *rstd, const void *inp,
                            const void *weight, int N, int C, float eps);
    /* dinp(N,C) +=, dweight(C) += from dout(N,C), with inp and the forward's
     * rstd: with xhat = inp * rstd,
     *   dinp += rstd * (weight*dout - xhat * mean_c(weight*dout*xhat)),
     *   dweight += sum_n dout * xhat. */
    void (*rmsnorm_backward)(Backend *be, void *dinp, void *dweight, const void *dout,
                             const void *inp, const void *weight, const float *rstd, int N,
                             int C);
    /* Rotary position embedding on the q and k heads of attention_forward's
     * qkv layout (C, NH, KVH as there; v is not rotated), row (b,t) at
     * position t. Each head's vector x (hs even) turns in the pairs
     * (x_i, x_{i+hs/2}), i < hs/2 (Hugging Face's rotate_half), by the
     * angle t * f_i:
     *   out_i = x_i cos - x_{i+hs/2} sin,  out_{i+hs/2} = x_{i+hs/2} cos + x_i sin.
     * table (f32, T rows of hs): kernels/rope.h's rope_table, row t holds
     * cos(t f_i) for i < hs/2, then sin(t f_i); pass table + p*hs for rows
     * that start at position p (decode). out(N, C + 2*KVH*hs) =; out may be
     * inp (in place), else v is copied. */
    void (*rope_forward)(Backend *be, void *out, const void *inp, const float *table, int B,
                         int T, int C, int NH, int KVH);
    /* dinp(N, C + 2*KVH*hs) = from dout: q and k turned back (angle -t f_i),
     * v copied; dinp may be dout (in place). */
    void (*rope_backward)(Backend *be, void *dinp, const void *dout, const float *table, int B,
                          int T, int C, int NH, int KVH);
    /* SwiGLU, the gate of Llama's MLP, at any width F: inp(N,2F) holds
     * [gate | up] per row (one matmul of 2F outputs);
     * out(N,F) = silu(gate) * up (=), silu(g) = g * sigmoid(g). */
    void (*swiglu_forward)(Backend *be, void *out, const void *inp, int N, int F);
    /* dinp(N,2F) = from dout(N,F): dgate = dout * up * silu'(gate),
     * dup = dout * silu(gate); silu'(g) = s (1 + g (1 - s)), s = sigmoid(g). */
    void (*swiglu_backward)(Backend *be, void *dinp, const void *inp, const void *dout, int N,
                            int F);
    /* Qwen3's qk-norm: RMSNorm over each q and k head's hs features of the
     * qkv layout (N, C + 2*KVH*hs) as rope_forward's, q heads weighted by
     * wq (hs), k heads by wk (hs); v is not normed.
     *   rstd(N, NH + KVH) = 1 / sqrt(mean_i(head_i^2) + eps) (f32, =; q heads
     *   then k heads per row), out = head * rstd * w (=); out may be inp
     *   (in place), else v is copied. */
    void (*qknorm_forward)(Backend *be, void *out, float *rstd, const void *inp, const void *wq,
                           const void *wk, int N, int C, int NH, int KVH, float eps);
    /* dinp(N, C + 2*KVH*hs) = from dout (rmsnorm_backward's rule per head,
     * but =; v copied); dinp may be dout (in place). dwq(hs) +=, dwk(hs) +=
     * (sum over rows and heads of dout * xhat). */
    void (*qknorm_backward)(Backend *be, void *dinp, void *dwq, void *dwk, const void *dout,
                            const void *inp, const void *wq, const void *wk, const float *rstd,
                            int N, int C, int NH, int KVH);

    /* ---- GELU (tanh approximation), elementwise over n ----
     * out =; dinp = (dinp may alias dout). */
    void (*gelu_forward)(Backend *be, void *out, const void *inp, size_t n);
    void (*gelu_backward)(Backend *be, void *dinp, const void *inp, const void *dout, size_t n);

    /* out(n) = a + b (out may alias a or b) */
    void (*residual_forward)(Backend *be, void *out, const void *a, const void *b, size_t n);

    /* ---- fusions: each is bit for bit the composition it names, or, where
     * a backend documents otherwise, the same function to within rounding ----
     * res(N,C) = a + b, then out(N,C) =, mean(N) =, rstd(N) = LayerNorm of
     * the stored res: exactly residual_forward then layernorm_forward (a
     * LayerNorm recomputed later from res gives the same bits). res may
     * alias a or b; out aliases none of the inputs. */
    void (*residual_layernorm_forward)(Backend *be, void *res, void *out, float *mean,
                                       float *rstd, const void *a, const void *b,
                                       const void *weight, const void *bias, int N, int C);
    /* pre(N,OC) = inp . weight^T + bias (as matmul_forward), out(N,OC) =
     * gelu(pre). cuda with TRAIN_GPT_FUSE_GELU=1 computes gelu in cuBLASLt's
     * epilogue from the unrounded fp32 sum: the same function, not the same
     * bits as gelu_forward(pre); the model only calls it where nothing
     * recomputes out from pre (model/gpt.c). */
    void (*matmul_gelu_forward)(Backend *be, void *out, void *pre, const void *inp,
                                const void *weight, const void *bias, int N, int IC, int OC);
    /* The backward of a linear layer whose input was inp = gelu(pre):
     * dinp(N,IC) = (dout . weight) * gelu'(pre) (=); dweight +=, dbias += as
     * matmul_backward. Without fusion: matmul_backward, then gelu_backward
     * in place. */
    void (*matmul_backward_gelu)(Backend *be, void *dinp, void *dweight, void *dbias,
                                 const void *dout, const void *inp, const void *weight,
                                 const void *pre, int N, int IC, int OC);

    /* ---- fused, token-chunked LM head + cross-entropy ----
     * For rows of x(N,C) in chunks of `chunk` tokens:
     *   logits = x_chunk . wte^T  into chunk_buf(chunk,Vp), in the act dtype,
     *     columns >= V ignored;
     *   losses[n] = logsumexp(logits[n,:V]) - logits[n,targets[n]];
     *   if dx != NULL: dlogits = (softmax - onehot) * dloss, in place, then
     *     dx(N,C) = dlogits . wte (=) and dwte(Vp,C) += dlogits^T . x_chunk.
     * dx == NULL is evaluation: forward half only, dwte untouched.
     * The full (N,Vp) logits never exist. */
    void (*head_forward_backward)(Backend *be, float *losses, void *dx, void *dwte, const void *x,
                                  const void *wte, const int *targets, void *chunk_buf, int N,
                                  int C, int V, int Vp, int chunk, float dloss);
    /* logits(n,Vp) = x(n,C) . wte^T, fp32 (whatever the act dtype), for
     * sampling a few positions. */
    void (*head_logits)(Backend *be, float *logits, const void *x, const void *wte, int n, int C,
                        int Vp);

    /* ---- optimizer ----
     * Sum of squares of grads(n), accumulated in a fixed order; returned to the host. */
    double (*grad_norm_sq)(Backend *be, const void *grads, size_t n);
    /* AdamW on n elements, llm.c's form, with t the 1-based step:
     *   g = grads * grad_scale; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
     *   p -= lr * (m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps) + wd * p)
     * master (fp32) is the value updated when non-NULL, and params gets its
     * rounded copy; otherwise params (fp32) is updated directly. */
    void (*adamw_update)(Backend *be, void *params, float *master, const void *grads, float *m,
                         float *v, size_t n, float lr, float beta1, float beta2, float eps,
                         float weight_decay, float grad_scale, int t);
    /* The same update on host-tier memory (every pointer there), on the
     * host's cores, bit for bit adamw_update's (--offload optimizer). NULL
     * where a backend has no host tier. It is an op like the others: it runs
     * after the copies enqueued before it and before those enqueued after it
     * (cuda: on the copy stream; cpu: on the copy thread; the caller does not
     * wait for it, and goes on enqueuing ops beside it), so its
     * inputs come in and its outputs go back by copy_async; the caller reads
     * what it wrote only after an event_wait and a sync. */
    void (*host_adamw_update)(Backend *be, void *params, float *master, const void *grads,
                              float *m, float *v, size_t n, float lr, float beta1, float beta2,
                              float eps, float weight_decay, float grad_scale, int t);
} BackendOps;

struct Backend {
    const char *name;       /* "cpu" or "cuda" */
    const BackendOps *ops;
    int act_bytes;          /* bytes per activation element */
    int par_bytes;          /* bytes per working parameter / gradient element */
    int has_master;         /* 1 when fp32 master weights are kept apart */
    void *state;            /* backend-private */
    struct OpProfile *profile; /* non-NULL while kernels/profile.c times the ops */
};

#endif
