/* kernels/cpu/cpu_ops.h — the cpu backend's op functions (private).
 *
 * fp32 throughout, OpenMP across rows or channels. Every reduction runs in
 * an order fixed by the shapes alone (never by thread timing), so results
 * are bitwise repeatable; matmuls go through OpenBLAS cblas_sgemm, in tiles
 * fixed by the shapes (gemm_tiles.c), so at any thread count too.
 * Signatures are exactly those of ops.h, with float in place of void. */
#ifndef KERNELS_CPU_CPU_OPS_H
#define KERNELS_CPU_CPU_OPS_H

#include <stddef.h>

#include "kernels/ops.h"

/* The host tier's copy engine (copy_engine.c): one thread, a FIFO queue of
 * copies, event counters. be->state holds it. */
typedef struct CpuCopyEngine CpuCopyEngine;
CpuCopyEngine *cpu_copy_engine_new(void);
void cpu_copy_engine_free(CpuCopyEngine *e);

/* be->state: the copy engine, and the attention scratch the model handed
 * over last (ops.h attention_scratch; NULL, 0 until then). */
typedef struct {
    CpuCopyEngine *copy;
    float *att_ws;
    size_t att_ws_bytes;
} CpuState;
void cpu_copy_async(Backend *be, void *dst, const void *src, size_t bytes, int ev);
/* ops.h host_adamw_update: cpu_adamw_update's loop as a job of the copy thread */
void cpu_host_adamw_update(Backend *be, void *params, float *master, const void *grads,
                           float *m, float *v, size_t n, float lr, float beta1, float beta2,
                           float eps, float weight_decay, float grad_scale, int t);
void cpu_event_wait(Backend *be, int ev);
void *cpu_host_alloc(Backend *be, size_t bytes);
void cpu_host_free(Backend *be, void *p);

void cpu_encoder_forward(Backend *be, void *out, const int *tokens, const void *wte,
                         const void *wpe, int B, int T, int C);
void cpu_encoder_backward(Backend *be, void *dwte, void *dwpe, const void *dout,
                          const int *tokens, int B, int T, int C);
void cpu_layernorm_forward(Backend *be, void *out, float *mean, float *rstd, const void *inp,
                           const void *weight, const void *bias, int N, int C);
void cpu_layernorm_backward(Backend *be, void *dinp, void *dweight, void *dbias, const void *dout,
                            const void *inp, const void *weight, const float *mean,
                            const float *rstd, int N, int C);
void cpu_matmul_forward(Backend *be, void *out, const void *inp, const void *weight,
                        const void *bias, int N, int IC, int OC);
void cpu_matmul_prepare(Backend *be, const int (*mm)[3], int n_mm, int head_rows, int V, int C);
void cpu_matmul_backward(Backend *be, void *dinp, void *dweight, void *dbias, const void *dout,
                         const void *inp, const void *weight, int N, int IC, int OC);
void cpu_attention_forward(Backend *be, void *out, float *lse, const void *qkv, int B, int T,
                           int C, int NH, int KVH);
void cpu_attention_backward(Backend *be, void *dqkv, const void *dout, const void *qkv,
                            const void *out, const float *lse, int B, int T, int C, int NH,
                            int KVH);
void cpu_attention_decode(Backend *be, void *out, void *kcache, void *vcache, const void *qkv,
                          int t, int maxT, int C, int NH, int KVH);
size_t cpu_attention_scratch_bytes(Backend *be, int C, int NH);
void cpu_attention_scratch(Backend *be, void *p, size_t bytes);
void cpu_rmsnorm_forward(Backend *be, void *out, float *rstd, const void *inp, const void *weight,
                         int N, int C, float eps);
void cpu_rmsnorm_backward(Backend *be, void *dinp, void *dweight, const void *dout,
                          const void *inp, const void *weight, const float *rstd, int N, int C);
void cpu_rope_forward(Backend *be, void *out, const void *inp, const float *table, int B, int T,
                      int C, int NH, int KVH);
void cpu_rope_backward(Backend *be, void *dinp, const void *dout, const float *table, int B,
                       int T, int C, int NH, int KVH);
void cpu_swiglu_forward(Backend *be, void *out, const void *inp, int N, int F);
void cpu_swiglu_backward(Backend *be, void *dinp, const void *inp, const void *dout, int N, int F);
void cpu_qknorm_forward(Backend *be, void *out, float *rstd, const void *inp, const void *wq,
                        const void *wk, int N, int C, int NH, int KVH, float eps);
void cpu_qknorm_backward(Backend *be, void *dinp, void *dwq, void *dwk, const void *dout,
                         const void *inp, const void *wq, const void *wk, const float *rstd,
                         int N, int C, int NH, int KVH);
void cpu_gelu_forward(Backend *be, void *out, const void *inp, size_t n);
void cpu_gelu_backward(Backend *be, void *dinp, const void *inp, const void *dout, size_t n);
void cpu_residual_forward(Backend *be, void *out, const void *a, const void *b, size_t n);
void cpu_residual_layernorm_forward(Backend *be, void *res, void *out, float *mean, float *rstd,
                                    const void *a, const void *b, const void *weight,
                                    const void *bias, int N, int C);
void cpu_matmul_gelu_forward(Backend *be, void *out, void *pre, const void *inp,
                             const void *weight, const void *bias, int N, int IC, int OC);
void cpu_matmul_backward_gelu(Backend *be, void *dinp, void *dweight, void *dbias,
                              const void *dout, const void *inp, const void *weight,
                              const void *pre, int N, int IC, int OC);
void cpu_head_forward_backward(Backend *be, float *losses, void *dx, void *dwte, const void *x,
                               const void *wte, const int *targets, void *chunk_buf, int N, int C,
                               int V, int Vp, int chunk, float dloss);
void cpu_head_logits(Backend *be, float *logits, const void *x, const void *wte, int n, int C,
                     int Vp);
double cpu_grad_norm_sq(Backend *be, const void *grads, size_t n);
void cpu_adamw_update(Backend *be, void *params, float *master, const void *grads, float *m,
                      float *v, size_t n, float lr, float beta1, float beta2, float eps,
                      float weight_decay, float grad_scale, int t);

/* gemm_tiles.c. C(M,N) = op(A) . op(B) + beta C, row-major, alpha 1
 * (trans_a: A is (K,M); trans_b: B is (N,K)): tiles of cpu_gemm_tiles's
 * size, each one one-thread sgemm over the whole K, so every element's bits
 * are the same at any thread count. */
void cpu_sgemm(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda,
               const float *B, int ldb, float beta, float *C, int ldc);
/* one cblas_sgemm (the same arguments as cpu_sgemm) on the calling thread */
void cpu_sgemm_one_thread(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda,
                          const float *B, int ldb, float beta, float *C, int ldc);
/* the largest tile side */
#define CPU_GEMM_TILE 256
/* the tile (tm rows, tn columns) cpu_sgemm cuts a product of M x N into:
 * a function of M and N alone */
void cpu_gemm_tiles(int M, int N, int *tm, int *tn);
/* y(M) = W(M,K) . x + beta y (W's row stride ldw), in fixed row blocks */
void cpu_sgemv(int M, int K, const float *W, int ldw, const float *x, float beta, float *y);

/* Column-block width for reductions over rows: each thread owns a block of
 * columns and walks the rows in order, so the sum order is fixed. */
#define CPU_COL_BLOCK 32
/* Elementwise and row-wise forward ops on fewer elements than this run on
 * the calling thread: a decode step's one row (a few C floats) costs less
 * than waking the team, and a team left spinning between such regions
 * takes a core from OpenBLAS's threads in the matmuls around them. Each
 * element or row is computed the same way either side of it (same bits). */
#define CPU_PAR_MIN_ELEMS ((size_t)1 << 15)

#endif
