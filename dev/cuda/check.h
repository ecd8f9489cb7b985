/* dev/cuda/check.h — the harness behind build/check_kernels: both
 * backends, random tensors, NaN poisoning, error measures and the report.
 *
 * Error measure, per output tensor: max_i |gpu_i - ref_i| / max_i |ref_i|
 * (absolute when the reference is all zeros); any non-finite gpu value is
 * an infinite error. The reference is the cpu backend (fp32) run on exactly
 * the values the gpu sees: in bf16 mode every act/par input is rounded to
 * bf16 first and the cpu gets the rounded values. */
#ifndef TESTS_CUDA_CHECK_H
#define TESTS_CUDA_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "attention_variants.h"
#include "kernels/backend.h"

#define CK_MAX_ROWS 2048 /* the table's rows; further checks still count, unlisted */

typedef struct {
    char op[32], shape[48], worst[24];
    int bf16;
    double err, tol;
    int deterministic; /* two gpu runs gave the same bits */
    int pass;
} CkRow;

typedef struct {
    Backend *cpu, *gpu;
    int bf16;          /* the gpu backend computes in bf16 */
    uint64_t rng;
    CkRow rows[CK_MAX_ROWS];
    int nrows, fails;
    const char *skip_variants; /* --skip-variants: comma-separated names, or NULL */
    const char *only_variants; /* --only-variants: the same; NULL = all */
} Ctx;

/* Whether --skip-variants names this attention variant, or --only-variants
 * does not: left out of the variant rows and the sweep, so that a variant
 * that might fault the device (an unmeasured one) can be checked in a
 * process of its own. */
int ck_variant_skipped(const Ctx *c, const char *name);

/* One output of an op: where the gpu writes it, the cpu's result, its
 * element count and type (f32: always float; else the gpu's act/par type),
 * and, for "+=" outputs, the initial contents (NULL: "=", poisoned with NaN
 * before each gpu run). */
typedef struct {
    const char *name;
    void *dev;
    const float *ref;
    size_t n;
    int f32;
    const float *init;
} CkOut;

/* random numbers: uniform in [0,1); magnitudes in [lo,hi] with random sign */
double ck_uniform(Ctx *c);
float *ck_rand(Ctx *c, size_t n, float lo, float hi);     /* never zero when lo > 0 */
float *ck_rand_pos(Ctx *c, size_t n, float lo, float hi); /* positive */
void ck_round(Ctx *c, float *h, size_t n);                /* to bf16 in bf16 mode */
float *ck_copy(const float *h, size_t n);
float *ck_alloc(size_t n); /* host floats, exits on failure */

/* gpu tensors; f32 selects float, else the gpu's act/par element type */
void *ck_dev(Ctx *c, size_t n, int f32);
void *ck_dev_from(Ctx *c, const float *h, size_t n, int f32);
void ck_dev_set(Ctx *c, void *d, const float *h, size_t n, int f32);
void ck_dev_poison(Ctx *c, void *d, size_t n, int f32);
void ck_dev_get(Ctx *c, float *h, const void *d, size_t n, int f32);
void ck_dev_free(Ctx *c, void *d);

double ck_rel_err(const float *got, const float *ref, size_t n);

/* Runs `run` on the gpu twice (outputs re-initialised before each run),
 * checks the two runs match bit for bit, compares the first with the
 * references and records one row (the worst output). tol < 0 selects the
 * dtype's tolerance (1e-5 fp32, 2e-2 bf16). Returns 1 on pass. */
typedef void (*CkRun)(Ctx *c, void *arg);
int ck_check(Ctx *c, const char *op, const char *shape, CkOut *outs, int nouts, CkRun run,
             void *arg, double tol);
void ck_record(Ctx *c, const char *op, const char *shape, const char *worst, double err,
               double tol, int deterministic);
void ck_print_table(Ctx *c);

/* A model shape: batch, sequence length, channels, heads, vocabulary. */
typedef struct {
    int B, T, C, NH, V;
} Shape;
void shape_name(char *buf, size_t len, const Shape *s); /* "B%d T%d C%d NH%d V%d" */

/* check_attention.c: the attention ops at shape s (named sh); variants: also
 * every variant of the bf16 kernels in the sweep's table
 * (attention_variants.cu) where the head size pads to 64; grouped: also
 * with NH / 2 key/value heads (NH even, > 2) and with one (NH > 1). */
void check_attention(Ctx *c, const Shape *s, const char *sh, int variants, int grouped);
/* check_attention.c: attention_decode (group "decode") at s's C and NH,
 * a cache of s->T rows, at positions 0, 128 and T-1. */
void check_attention_decode(Ctx *c, const Shape *s, const char *sh);

/* check_llama.c: RMSNorm and SwiGLU (group "llama") at s's rows and C */
void check_llama(Ctx *c, const Shape *s, const char *sh);

/* check_offload.c: the host tier (group "offload") */
void check_offload(Ctx *c);

/* check_rank_sum.c: kernels/rank_sum.h on n elements (group "optimizer") */
void check_rank_sum(Ctx *c, size_t n, const char *sh);

/* check_fused.c: the fused ops (group "fused") */
void check_residual_layernorm(Ctx *c, const char *sh, int N, int C);
void check_matmul_gelu(Ctx *c, const char *sh, int N, int IC, int OC);

#endif
