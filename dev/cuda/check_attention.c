/* dev/cuda/check_attention.c — check_kernels' attention group: the
 * forward and backward against the cpu backend (check.h's measures), every
 * compiled variant of the bf16 kernels, and TRAIN_GPT_ATTN_VARIANT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct {
    void *out, *qkv, *dqkv, *dout;
    float *lse;
    int B, T, C, NH;
} AttArgs;

static void run_att_fwd(Ctx *c, void *p)
{
    AttArgs *a = p;
    c->gpu->ops->attention_forward(c->gpu, a->out, a->lse, a->qkv, a->B, a->T, a->C, a->NH);
}
static void run_att_bwd(Ctx *c, void *p)
{
    AttArgs *a = p;
    c->gpu->ops->attention_backward(c->gpu, a->dqkv, a->dout, a->qkv, a->out, a->lse, a->B, a->T,
                                    a->C, a->NH);
}

void check_attention(Ctx *c, const Shape *s, const char *sh, int variants)
{
    int N = s->B * s->T, C = s->C;
    size_t n3 = (size_t)N * 3 * C, nc = (size_t)N * C, nl = (size_t)s->B * s->NH * s->T;
    float *qkv = ck_rand(c, n3, 0.05f, 1.5f);
    ck_round(c, qkv, n3);
    float *out = ck_alloc(nc), *lse = ck_alloc(nl);
    c->cpu->ops->attention_forward(c->cpu, out, lse, qkv, s->B, s->T, C, s->NH);
    AttArgs a = {0};
    a.B = s->B, a.T = s->T, a.C = C, a.NH = s->NH;
    a.qkv = ck_dev_from(c, qkv, n3, 0);
    a.out = ck_dev(c, nc, 0), a.lse = ck_dev(c, nl, 1);
    CkOut of[] = {{"out", a.out, out, nc, 0, NULL}, {"lse", a.lse, lse, nl, 1, NULL}};
    ck_check(c, "attention_forward", sh, of, 2, run_att_fwd, &a, -1);

    /* backward from the cpu's out (rounded like a gpu activation) and lse */
    float *out_ref = ck_copy(out, nc); /* the forward variants' reference */
    ck_round(c, out, nc);
    ck_dev_set(c, a.out, out, nc, 0);
    ck_dev_set(c, a.lse, lse, nl, 1);
    float *dout = ck_rand(c, nc, 0.05f, 1.0f);
    ck_round(c, dout, nc);
    float *dqkv = ck_alloc(n3);
    c->cpu->ops->attention_backward(c->cpu, dqkv, dout, qkv, out, lse, s->B, s->T, C, s->NH);
    a.dout = ck_dev_from(c, dout, nc, 0);
    a.dqkv = ck_dev(c, n3, 0);
    CkOut ob[] = {{"dqkv", a.dqkv, dqkv, n3, 0, NULL}};
    ck_check(c, "attention_backward", sh, ob, 1, run_att_bwd, &a, -1);

    /* bf16 at GPT-2's padded head size on the 16-byte path: every compiled
     * variant of the three kernels (kernels/cuda/attention_mma.cu), one at
     * a time, the other two at their default; the row is the variant */
    const int hs = C / s->NH;
    of[0].ref = out_ref;
    if (variants && c->bf16 && hs > 32 && hs <= 64 && hs % 8 == 0 && C % 8 == 0) {
        for (int k = 0; k < CUDA_ATTN_KERNELS; k++) {
            if (k == CUDA_ATTN_DQ) { /* the forward variants overwrote out and lse */
                ck_dev_set(c, a.out, out, nc, 0);
                ck_dev_set(c, a.lse, lse, nl, 1);
            }
            for (int i = 1; i < cuda_attn_variant_count(k); i++) {
                const char *name = cuda_attn_variant_name(k, i);
                if (ck_variant_skipped(c, name)) {
                    printf("  %s: skipped (--skip-variants, --only-variants)\n", name);
                    continue;
                }
                if (cuda_attn_variant_set(c->gpu, k, i) != 0) { /* e.g. wgmma off Hopper */
                    printf("  %s: skipped (this GPU cannot run it)\n", name);
                    continue;
                }
                if (k == CUDA_ATTN_FWD) ck_check(c, name, sh, of, 2, run_att_fwd, &a, -1);
                else ck_check(c, name, sh, ob, 1, run_att_bwd, &a, -1);
                cuda_attn_variant_set(c->gpu, k, 0);
            }
        }
    }

    void *devs[] = {a.qkv, a.out, a.lse, a.dout, a.dqkv};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) ck_dev_free(c, devs[i]);
    free(qkv), free(out), free(out_ref), free(lse), free(dout), free(dqkv);
}

/* TRAIN_GPT_ATTN_VARIANT at cuda_backend_open: a valid list selects its
 * variants, an unknown name or two variants of one kernel fail the open
 * with a message naming the variable and the fault, and so does a variant
 * this GPU cannot run (each wgmma variant off compute capability 9.0; on
 * such a GPU it must open and select it), and a check_only variant (the
 * fused dK/dV: memory outside the plan). One row: the number of
 * expectations missed. */
void check_attention_variant_env(Ctx *c, const char *dtype)
{
    static const struct {
        const char *value, *want_err; /* want_err NULL: the open must succeed */
    } cases[] = {
        {"dq-w4-k32-s2-b4,dkdv-w4-q32-s2-b3", NULL},
        {"fwd-w4-k64-s2-b4,bogus-w9", "no attention kernel variant named 'bogus-w9'"},
        {"dq-w4-k32-s2-b4,dq-w4-k64-s1-b4", "names two variants of one kernel"},
        /* its dQ partials' buffer is outside the memory plan */
        {"dkdv-fused-w4-q64-b2", "variant dkdv-fused-w4-q64-b2 is for build/check_kernels only"},
    };
    static const struct {
        int kernel;
        const char *name;
    } wg[] = {{CUDA_ATTN_FWD, "fwd-wgmma-w4-k64-s2-b3"},
              {CUDA_ATTN_DQ, "dq-wgmma-w4-k64-s2-b3"},
              {CUDA_ATTN_DKDV, "dkdv-wgmma-w4-q64-s2-b2"}};
    const char *saved = getenv("TRAIN_GPT_ATTN_VARIANT");
    char *keep = saved ? strdup(saved) : NULL;
    int missed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[512] = "";
        setenv("TRAIN_GPT_ATTN_VARIANT", cases[i].value, 1);
        Backend *be = cuda_backend_open(dtype, err, sizeof err);
        if (cases[i].want_err) {
            if (be || !strstr(err, "TRAIN_GPT_ATTN_VARIANT") || !strstr(err, cases[i].want_err)) {
                printf("  TRAIN_GPT_ATTN_VARIANT=%s: expected an error with '%s', got '%s'\n",
                       cases[i].value, cases[i].want_err, be ? "(opened)" : err);
                missed++;
            }
        } else if (!be) {
            printf("  TRAIN_GPT_ATTN_VARIANT=%s: open failed: %s\n", cases[i].value, err);
            missed++;
        } else {
            const int f = cuda_attn_variant_get(be, CUDA_ATTN_FWD);
            const char *q = cuda_attn_variant_name(CUDA_ATTN_DQ,
                                                   cuda_attn_variant_get(be, CUDA_ATTN_DQ));
            const char *kv = cuda_attn_variant_name(CUDA_ATTN_DKDV,
                                                    cuda_attn_variant_get(be, CUDA_ATTN_DKDV));
            if (f != 0 || strcmp(q, "dq-w4-k32-s2-b4") || strcmp(kv, "dkdv-w4-q32-s2-b3")) {
                printf("  TRAIN_GPT_ATTN_VARIANT=%s: selected %d, %s, %s\n", cases[i].value, f, q,
                       kv);
                missed++;
            }
        }
        if (be) cuda_backend_close(be);
    }
    /* each wgmma variant: refused exactly where this GPU cannot run it */
    for (size_t v = 0; v < sizeof wg / sizeof wg[0]; v++) {
        const int k = wg[v].kernel;
        int wg_i = -1;
        for (int i = 0; i < cuda_attn_variant_count(k); i++)
            if (!strcmp(cuda_attn_variant_name(k, i), wg[v].name)) wg_i = i;
        if (wg_i < 0) {
            printf("  no variant named %s\n", wg[v].name);
            missed++;
            continue;
        }
        char err[512] = "";
        unsetenv("TRAIN_GPT_ATTN_VARIANT");
        Backend *def = cuda_backend_open(dtype, err, sizeof err); /* every kernel's default */
        const int usable = def ? cuda_attn_variant_usable(def, k, wg_i) : 0;
        if (!def) {
            printf("  open failed: %s\n", err);
            missed++;
        } else if (cuda_attn_variant_set(def, k, wg_i) != (usable ? 0 : -1)) {
            printf("  cuda_attn_variant_set(%s) disagrees with usable = %d\n", wg[v].name, usable);
            missed++;
        }
        if (def) cuda_backend_close(def);
        setenv("TRAIN_GPT_ATTN_VARIANT", wg[v].name, 1);
        Backend *be = def ? cuda_backend_open(dtype, err, sizeof err) : NULL;
        if (def && (usable ? !be || cuda_attn_variant_get(be, k) != wg_i
                           : be != NULL || !strstr(err, "needs a GPU of compute capability 9.0"))) {
            printf("  TRAIN_GPT_ATTN_VARIANT=%s on a GPU that %s run it: %s\n", wg[v].name,
                   usable ? "can" : "cannot", be ? "(opened)" : err);
            missed++;
        }
        if (be) cuda_backend_close(be);
    }
    if (keep) setenv("TRAIN_GPT_ATTN_VARIANT", keep, 1);
    else unsetenv("TRAIN_GPT_ATTN_VARIANT");
    free(keep);
    ck_record(c, "TRAIN_GPT_ATTN_VARIANT", "6 values", "missed", missed, 0.0, 1);
}


/* ---- attention_decode: one position against a K/V cache ---- */

typedef struct {
    void *out, *kc, *vc, *qkv;
    int t, maxT, C, NH;
} DecArgs;

static void run_att_dec(Ctx *c, void *p)
{
    DecArgs *a = p;
    c->gpu->ops->attention_decode(c->gpu, a->out, a->kc, a->vc, a->qkv, a->t, a->maxT, a->C,
                                  a->NH);
}

/* Position t of a cache of maxT rows, rows before t random (as earlier
 * steps left them) and the rows after too (they must stay untouched): the
 * caches are "+=" outputs, checked whole against the cpu's. */
static void check_decode_at(Ctx *c, const Shape *s, const char *sh, int t)
{
    int C = s->C, maxT = s->T;
    size_t n3 = (size_t)3 * C, nk = (size_t)maxT * C;
    float *qkv = ck_rand(c, n3, 0.05f, 1.5f), *kc = ck_rand(c, nk, 0.05f, 1.5f);
    float *vc = ck_rand(c, nk, 0.05f, 1.5f);
    ck_round(c, qkv, n3), ck_round(c, kc, nk), ck_round(c, vc, nk);
    float *out = ck_alloc((size_t)C), *kr = ck_copy(kc, nk), *vr = ck_copy(vc, nk);
    c->cpu->ops->attention_decode(c->cpu, out, kr, vr, qkv, t, maxT, C, s->NH);
    DecArgs a = {ck_dev(c, (size_t)C, 0), ck_dev(c, nk, 0), ck_dev(c, nk, 0),
                 ck_dev_from(c, qkv, n3, 0), t, maxT, C, s->NH};
    CkOut o[] = {{"out", a.out, out, (size_t)C, 0, NULL},
                 {"kcache", a.kc, kr, nk, 0, kc},
                 {"vcache", a.vc, vr, nk, 0, vc}};
    char shape[48];
    snprintf(shape, sizeof shape, "%.30s t%d", sh, t);
    ck_check(c, "attention_decode", shape, o, 3, run_att_dec, &a, -1);
    void *devs[] = {a.out, a.kc, a.vc, a.qkv};
    for (int i = 0; i < 4; i++) ck_dev_free(c, devs[i]);
    free(qkv), free(kc), free(vc), free(out), free(kr), free(vr);
}

void check_attention_decode(Ctx *c, const Shape *s, const char *sh)
{
    /* the first row, one past a 128-key chunk where T allows, and the last */
    check_decode_at(c, s, sh, 0);
    if (s->T > 129) check_decode_at(c, s, sh, 128);
    if (s->T > 1) check_decode_at(c, s, sh, s->T - 1);
}
