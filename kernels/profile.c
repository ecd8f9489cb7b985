/* kernels/profile.c — see profile.h. */
#include "profile.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static ProfileRow *row_for(OpProfile *p, const char *op)
{
    for (int i = 0; i < p->nrows; i++)
        if (strcmp(p->rows[i].op, op) == 0) return &p->rows[i];
    if (p->nrows == PROFILE_MAX_ROWS) return NULL;
    ProfileRow *r = &p->rows[p->nrows++];
    snprintf(r->op, sizeof r->op, "%s", op);
    r->calls = 0;
    r->seconds = 0.0;
    return r;
}

/* Work queued before the op is not its time: drain it first. */
static double prof_begin(OpProfile *p, Backend *be)
{
    p->inner->sync(be);
    return wall_seconds();
}

static void prof_end(OpProfile *p, Backend *be, const char *op, double t0)
{
    p->inner->sync(be);
    double dt = wall_seconds() - t0;
    ProfileRow *r = row_for(p, op);
    if (!r) {
        p->overflow++;
        return;
    }
    r->calls++;
    r->seconds += dt;
}

/* One wrapper per timed op: the row is the op's name. */
#define TIMED(op, params, args)                                                                \
    static void t_##op params                                                                  \
    {                                                                                          \
        OpProfile *p = be->profile;                                                            \
        double t0 = prof_begin(p, be);                                                         \
        p->inner->op args;                                                                     \
        prof_end(p, be, #op, t0);                                                              \
    }

TIMED(mem_zero, (Backend *be, void *ptr, size_t bytes), (be, ptr, bytes))
TIMED(encoder_forward,
      (Backend *be, void *out, const int *tokens, const void *wte, const void *wpe, int B, int T,
       int C),
      (be, out, tokens, wte, wpe, B, T, C))
TIMED(encoder_backward,
      (Backend *be, void *dwte, void *dwpe, const void *dout, const int *tokens, int B, int T,
       int C),
      (be, dwte, dwpe, dout, tokens, B, T, C))
TIMED(layernorm_forward,
      (Backend *be, void *out, float *mean, float *rstd, const void *inp, const void *weight,
       const void *bias, int N, int C),
      (be, out, mean, rstd, inp, weight, bias, N, C))
TIMED(layernorm_backward,
      (Backend *be, void *dinp, void *dweight, void *dbias, const void *dout, const void *inp,
       const void *weight, const float *mean, const float *rstd, int N, int C),
      (be, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C))
TIMED(attention_forward,
      (Backend *be, void *out, float *lse, const void *qkv, int B, int T, int C, int NH,
       int KVH),
      (be, out, lse, qkv, B, T, C, NH, KVH))
TIMED(attention_backward,
      (Backend *be, void *dqkv, const void *dout, const void *qkv, const void *out,
       const float *lse, int B, int T, int C, int NH, int KVH),
      (be, dqkv, dout, qkv, out, lse, B, T, C, NH, KVH))
TIMED(rmsnorm_forward,
      (Backend *be, void *out, float *rstd, const void *inp, const void *weight, int N, int C,
       float eps),
      (be, out, rstd, inp, weight, N, C, eps))
TIMED(rmsnorm_backward,
      (Backend *be, void *dinp, void *dweight, const void *dout, const void *inp,
       const void *weight, const float *rstd, int N, int C),
      (be, dinp, dweight, dout, inp, weight, rstd, N, C))
TIMED(rope_forward,
      (Backend *be, void *out, const void *inp, const float *table, int B, int T, int C, int NH,
       int KVH),
      (be, out, inp, table, B, T, C, NH, KVH))
TIMED(rope_backward,
      (Backend *be, void *dinp, const void *dout, const float *table, int B, int T, int C,
       int NH, int KVH),
      (be, dinp, dout, table, B, T, C, NH, KVH))
TIMED(swiglu_forward, (Backend *be, void *out, const void *inp, int N, int F),
      (be, out, inp, N, F))
TIMED(swiglu_backward, (Backend *be, void *dinp, const void *inp, const void *dout, int N, int F),
      (be, dinp, inp, dout, N, F))
TIMED(gelu_forward, (Backend *be, void *out, const void *inp, size_t n), (be, out, inp, n))
TIMED(gelu_backward, (Backend *be, void *dinp, const void *inp, const void *dout, size_t n),
      (be, dinp, inp, dout, n))
TIMED(residual_forward, (Backend *be, void *out, const void *a, const void *b, size_t n),
      (be, out, a, b, n))
TIMED(residual_layernorm_forward,
      (Backend *be, void *res, void *out, float *mean, float *rstd, const void *a, const void *b,
       const void *weight, const void *bias, int N, int C),
      (be, res, out, mean, rstd, a, b, weight, bias, N, C))
TIMED(head_forward_backward,
      (Backend *be, float *losses, void *dx, void *dwte, const void *x, const void *wte,
       const int *targets, void *chunk_buf, int N, int C, int V, int Vp, int chunk,
       float dloss),
      (be, losses, dx, dwte, x, wte, targets, chunk_buf, N, C, V, Vp, chunk, dloss))
TIMED(head_logits,
      (Backend *be, float *logits, const void *x, const void *wte, int n, int C, int Vp),
      (be, logits, x, wte, n, C, Vp))
TIMED(adamw_update,
      (Backend *be, void *params, float *master, const void *grads, float *m, float *v,
       size_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
       float grad_scale, int t),
      (be, params, master, grads, m, v, n, lr, beta1, beta2, eps, weight_decay, grad_scale, t))

/* Matmuls: one row per direction and shape (IC x OC). */
static void t_matmul_forward(Backend *be, void *out, const void *inp, const void *weight,
                             const void *bias, int N, int IC, int OC)
{
    OpProfile *p = be->profile;
    char op[48];
    snprintf(op, sizeof op, "matmul_forward %dx%d", IC, OC);
    double t0 = prof_begin(p, be);
    p->inner->matmul_forward(be, out, inp, weight, bias, N, IC, OC);
    prof_end(p, be, op, t0);
}

static void t_matmul_backward(Backend *be, void *dinp, void *dweight, void *dbias,
                              const void *dout, const void *inp, const void *weight, int N,
                              int IC, int OC)
{
    OpProfile *p = be->profile;
    char op[48];
    snprintf(op, sizeof op, "matmul_backward %dx%d", IC, OC);
    double t0 = prof_begin(p, be);
    p->inner->matmul_backward(be, dinp, dweight, dbias, dout, inp, weight, N, IC, OC);
    prof_end(p, be, op, t0);
}

static void t_matmul_gelu_forward(Backend *be, void *out, void *pre, const void *inp,
                                  const void *weight, const void *bias, int N, int IC, int OC)
{
    OpProfile *p = be->profile;
    char op[48];
    snprintf(op, sizeof op, "matmul_gelu_forward %dx%d", IC, OC);
    double t0 = prof_begin(p, be);
    p->inner->matmul_gelu_forward(be, out, pre, inp, weight, bias, N, IC, OC);
    prof_end(p, be, op, t0);
}

static void t_matmul_backward_gelu(Backend *be, void *dinp, void *dweight, void *dbias,
                                   const void *dout, const void *inp, const void *weight,
                                   const void *pre, int N, int IC, int OC)
{
    OpProfile *p = be->profile;
    char op[48];
    snprintf(op, sizeof op, "matmul_backward_gelu %dx%d", IC, OC);
    double t0 = prof_begin(p, be);
    p->inner->matmul_backward_gelu(be, dinp, dweight, dbias, dout, inp, weight, pre, N, IC, OC);
    prof_end(p, be, op, t0);
}

static double t_grad_norm_sq(Backend *be, const void *grads, size_t n)
{
    OpProfile *p = be->profile;
    double t0 = prof_begin(p, be);
    double r = p->inner->grad_norm_sq(be, grads, n);
    prof_end(p, be, "grad_norm_sq", t0);
    return r;
}

void profile_attach(OpProfile *p, Backend *be)
{
    memset(p, 0, sizeof *p);
    p->inner = be->ops;
    p->table = *be->ops; /* memory and host-boundary ops stay the backend's */
    BackendOps *t = &p->table;
    t->mem_zero = t_mem_zero;
    t->encoder_forward = t_encoder_forward;
    t->encoder_backward = t_encoder_backward;
    t->layernorm_forward = t_layernorm_forward;
    t->layernorm_backward = t_layernorm_backward;
    t->matmul_forward = t_matmul_forward;
    t->matmul_backward = t_matmul_backward;
    t->attention_forward = t_attention_forward;
    t->attention_backward = t_attention_backward;
    /* optional ops stay NULL where the backend has none */
#define TIMED_IF_ANY(op) if (t->op) t->op = t_##op
    TIMED_IF_ANY(rmsnorm_forward);
    TIMED_IF_ANY(rmsnorm_backward);
    TIMED_IF_ANY(rope_forward);
    TIMED_IF_ANY(rope_backward);
    TIMED_IF_ANY(swiglu_forward);
    TIMED_IF_ANY(swiglu_backward);
#undef TIMED_IF_ANY
    t->gelu_forward = t_gelu_forward;
    t->gelu_backward = t_gelu_backward;
    t->residual_forward = t_residual_forward;
    t->residual_layernorm_forward = t_residual_layernorm_forward;
    t->matmul_gelu_forward = t_matmul_gelu_forward;
    t->matmul_backward_gelu = t_matmul_backward_gelu;
    t->head_forward_backward = t_head_forward_backward;
    t->head_logits = t_head_logits;
    t->grad_norm_sq = t_grad_norm_sq;
    t->adamw_update = t_adamw_update;
    be->ops = t;
    be->profile = p;
}

void profile_detach(OpProfile *p, Backend *be)
{
    if (be->profile != p) return;
    be->ops = p->inner;
    be->profile = NULL;
}

void profile_reset(OpProfile *p)
{
    p->nrows = 0;
    p->overflow = 0;
}

long profile_calls(const OpProfile *p, const char *op)
{
    for (int i = 0; i < p->nrows; i++)
        if (strcmp(p->rows[i].op, op) == 0) return p->rows[i].calls;
    return 0;
}

static int by_seconds_desc(const void *a, const void *b)
{
    double x = ((const ProfileRow *)a)->seconds, y = ((const ProfileRow *)b)->seconds;
    return x < y ? 1 : x > y ? -1 : strcmp(((const ProfileRow *)a)->op, ((const ProfileRow *)b)->op);
}

void profile_print(const OpProfile *p, FILE *f, int steps)
{
    ProfileRow rows[PROFILE_MAX_ROWS];
    int n = p->nrows;
    memcpy(rows, p->rows, sizeof(ProfileRow) * (size_t)n);
    qsort(rows, (size_t)n, sizeof rows[0], by_seconds_desc);
    double total = 0.0;
    for (int i = 0; i < n; i++) total += rows[i].seconds;
    if (steps < 1) steps = 1;
    fprintf(f, "op profile over %d step%s (each op synced and timed alone; shares, not speed):\n",
            steps, steps == 1 ? "" : "s");
    fprintf(f, "  %-34s %9s %12s %7s\n", "op", "calls", "ms/step", "share");
    for (int i = 0; i < n; i++)
        fprintf(f, "  %-34s %9ld %12.3f %6.1f%%\n", rows[i].op, rows[i].calls,
                rows[i].seconds * 1e3 / steps, total > 0 ? 100.0 * rows[i].seconds / total : 0.0);
    fprintf(f, "  %-34s %9s %12.3f %6.1f%%\n", "all timed ops", "", total * 1e3 / steps,
            total > 0 ? 100.0 : 0.0);
    if (p->overflow)
        fprintf(f, "  (%d calls not counted: more than %d distinct rows)\n", p->overflow,
                PROFILE_MAX_ROWS);
}
