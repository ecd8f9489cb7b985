/* dev/cuda/check_attention.c — check_kernels' attention group: the
 * forward and backward against the cpu backend (check.h's measures), with
 * a key/value head per head and grouped (KVH < NH), and every variant of
 * the bf16 kernels in the sweep's table (KVH = NH: the variants have no
 * groups). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* v[k]: the variant of kernel k to run (0: the backend's own op) */
typedef struct {
    void *out, *qkv, *dqkv, *dout;
    float *lse;
    int B, T, C, NH, KVH;
    int v[ATTN_KERNELS]; /* all 0 unless KVH = NH */
} AttArgs;

static void run_att_fwd(Ctx *c, void *p)
{
    AttArgs *a = p;
    if (a->KVH != a->NH) {
        c->gpu->ops->attention_forward(c->gpu, a->out, a->lse, a->qkv, a->B, a->T, a->C, a->NH,
                                       a->KVH);
        return;
    }
    attn_variant_forward(c->gpu, a->v[ATTN_FWD], a->out, a->lse, a->qkv, a->B, a->T, a->C,
                         a->NH);
}
static void run_att_bwd(Ctx *c, void *p)
{
    AttArgs *a = p;
    if (a->KVH != a->NH) {
        c->gpu->ops->attention_backward(c->gpu, a->dqkv, a->dout, a->qkv, a->out, a->lse, a->B,
                                        a->T, a->C, a->NH, a->KVH);
        return;
    }
    attn_variant_backward(c->gpu, a->v[ATTN_DQ], a->v[ATTN_DKDV], a->dqkv, a->dout, a->qkv,
                          a->out, a->lse, a->B, a->T, a->C, a->NH);
}

/* The ops at s with KVH key/value heads: qkv and dqkv rows C + 2 KVH hs
 * wide (ops.h); rows named sh, and " KVH%d" when grouped. */
static void check_attention_at(Ctx *c, const Shape *s, const char *sh0, int variants, int KVH)
{
    int N = s->B * s->T, C = s->C;
    char sh[64];
    if (KVH == s->NH) snprintf(sh, sizeof sh, "%.40s", sh0);
    else snprintf(sh, sizeof sh, "%.40s KVH%d", sh0, KVH);
    size_t W = (size_t)C + (size_t)2 * KVH * (C / s->NH); /* the qkv row */
    size_t n3 = (size_t)N * W, nc = (size_t)N * C, nl = (size_t)s->B * s->NH * s->T;
    float *qkv = ck_rand(c, n3, 0.05f, 1.5f);
    ck_round(c, qkv, n3);
    float *out = ck_alloc(nc), *lse = ck_alloc(nl);
    c->cpu->ops->attention_forward(c->cpu, out, lse, qkv, s->B, s->T, C, s->NH, KVH);
    AttArgs a = {0};
    a.B = s->B, a.T = s->T, a.C = C, a.NH = s->NH, a.KVH = KVH;
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
    c->cpu->ops->attention_backward(c->cpu, dqkv, dout, qkv, out, lse, s->B, s->T, C, s->NH,
                                    KVH);
    a.dout = ck_dev_from(c, dout, nc, 0);
    a.dqkv = ck_dev(c, n3, 0);
    CkOut ob[] = {{"dqkv", a.dqkv, dqkv, n3, 0, NULL}};
    ck_check(c, "attention_backward", sh, ob, 1, run_att_bwd, &a, -1);

    /* bf16 at GPT-2's padded head size on the 16-byte path: every variant
     * of the three kernels (dev/cuda/attention_variants.cu), one at a time,
     * the other two as shipped; the row is the variant */
    const int hs = C / s->NH;
    of[0].ref = out_ref;
    if (variants && KVH == s->NH && c->bf16 && hs > 32 && hs <= 64 && hs % 8 == 0 && C % 8 == 0) {
        for (int k = 0; k < ATTN_KERNELS; k++) {
            if (k == ATTN_DQ) { /* the forward variants overwrote out and lse */
                ck_dev_set(c, a.out, out, nc, 0);
                ck_dev_set(c, a.lse, lse, nl, 1);
            }
            for (int i = 1; i < attn_variant_count(k); i++) {
                const char *name = attn_variant_name(k, i);
                if (ck_variant_skipped(c, name)) {
                    printf("  %s: skipped (--skip-variants, --only-variants)\n", name);
                    continue;
                }
                if (!attn_variant_usable(c->gpu, k, i)) { /* e.g. wgmma off Hopper */
                    printf("  %s: skipped (this GPU cannot run it)\n", name);
                    continue;
                }
                a.v[k] = i;
                if (k == ATTN_FWD) ck_check(c, name, sh, of, 2, run_att_fwd, &a, -1);
                else ck_check(c, name, sh, ob, 1, run_att_bwd, &a, -1);
                a.v[k] = 0;
            }
        }
    }

    void *devs[] = {a.qkv, a.out, a.lse, a.dout, a.dqkv};
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) ck_dev_free(c, devs[i]);
    free(qkv), free(out), free(out_ref), free(lse), free(dout), free(dqkv);
}

void check_attention(Ctx *c, const Shape *s, const char *sh, int variants, int grouped)
{
    check_attention_at(c, s, sh, variants, s->NH);
    if (!grouped || s->NH < 2) return;
    /* grouped: two query heads a key/value head where NH is even (and
     * that is not one), then one key/value head for all; on data of their
     * own that leaves the random stream where it was, so every other row
     * sees the inputs it saw before these rows existed */
    const uint64_t rng = c->rng;
    if (s->NH % 2 == 0 && s->NH > 2) check_attention_at(c, s, sh, 0, s->NH / 2);
    check_attention_at(c, s, sh, 0, 1);
    c->rng = rng;
}

/* ---- attention_decode: one position against a K/V cache ---- */

typedef struct {
    void *out, *kc, *vc, *qkv;
    int t, maxT, C, NH, KVH;
} DecArgs;

static void run_att_dec(Ctx *c, void *p)
{
    DecArgs *a = p;
    c->gpu->ops->attention_decode(c->gpu, a->out, a->kc, a->vc, a->qkv, a->t, a->maxT, a->C,
                                  a->NH, a->KVH);
}

/* Position t of a cache of maxT rows, rows before t random (as earlier
 * steps left them) and the rows after too (they must stay untouched): the
 * caches are "+=" outputs, checked whole against the cpu's. KVH key/value
 * heads: the row is C + 2*KVH*hs wide, each cache (KVH, maxT, hs). */
static void check_decode_at(Ctx *c, const Shape *s, const char *sh, int t, int KVH)
{
    int C = s->C, maxT = s->T, hs = C / s->NH;
    size_t n3 = (size_t)C + (size_t)2 * KVH * hs, nk = (size_t)maxT * KVH * hs;
    float *qkv = ck_rand(c, n3, 0.05f, 1.5f), *kc = ck_rand(c, nk, 0.05f, 1.5f);
    float *vc = ck_rand(c, nk, 0.05f, 1.5f);
    ck_round(c, qkv, n3), ck_round(c, kc, nk), ck_round(c, vc, nk);
    float *out = ck_alloc((size_t)C), *kr = ck_copy(kc, nk), *vr = ck_copy(vc, nk);
    c->cpu->ops->attention_decode(c->cpu, out, kr, vr, qkv, t, maxT, C, s->NH, KVH);
    DecArgs a = {ck_dev(c, (size_t)C, 0), ck_dev(c, nk, 0), ck_dev(c, nk, 0),
                 ck_dev_from(c, qkv, n3, 0), t, maxT, C, s->NH, KVH};
    CkOut o[] = {{"out", a.out, out, (size_t)C, 0, NULL},
                 {"kcache", a.kc, kr, nk, 0, kc},
                 {"vcache", a.vc, vr, nk, 0, vc}};
    char shape[64];
    if (KVH == s->NH) snprintf(shape, sizeof shape, "%.30s t%d", sh, t);
    else snprintf(shape, sizeof shape, "%.30s t%d KVH%d", sh, t, KVH);
    ck_check(c, "attention_decode", shape, o, 3, run_att_dec, &a, -1);
    void *devs[] = {a.out, a.kc, a.vc, a.qkv};
    for (int i = 0; i < 4; i++) ck_dev_free(c, devs[i]);
    free(qkv), free(kc), free(vc), free(out), free(kr), free(vr);
}

void check_attention_decode(Ctx *c, const Shape *s, const char *sh)
{
    /* the first row, one past a 128-key chunk where T allows, and the last;
     * every head its own keys, then grouped (two query heads a key head,
     * and one key head for all) */
    int kvh[3] = {s->NH, s->NH % 2 == 0 ? s->NH / 2 : s->NH, 1}, n = s->NH > 1 ? 3 : 1;
    for (int k = 0; k < n; k++) {
        if (k == 1 && kvh[1] == kvh[0]) continue;
        check_decode_at(c, s, sh, 0, kvh[k]);
        if (s->T > 129) check_decode_at(c, s, sh, 128, kvh[k]);
        if (s->T > 1) check_decode_at(c, s, sh, s->T - 1, kvh[k]);
    }
}
