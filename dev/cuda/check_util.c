/* dev/cuda/check_util.c — see check.h. */
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_FP32 1e-5
#define TOL_BF16 2e-2

void shape_name(char *buf, size_t len, const Shape *s)
{
    snprintf(buf, len, "B%d T%d C%d NH%d V%d", s->B, s->T, s->C, s->NH, s->V);
}

double ck_uniform(Ctx *c)
{
    /* xorshift64* */
    c->rng ^= c->rng >> 12;
    c->rng ^= c->rng << 25;
    c->rng ^= c->rng >> 27;
    return (double)((c->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

float *ck_alloc(size_t n)
{
    float *h = malloc((n ? n : 1) * sizeof(float));
    if (!h) {
        fprintf(stderr, "check_kernels: out of host memory (%zu floats)\n", n);
        exit(2);
    }
    return h;
}

float *ck_rand(Ctx *c, size_t n, float lo, float hi)
{
    float *h = ck_alloc(n);
    for (size_t i = 0; i < n; i++) {
        float mag = lo + (hi - lo) * (float)ck_uniform(c);
        h[i] = ck_uniform(c) < 0.5 ? -mag : mag;
    }
    return h;
}

float *ck_rand_pos(Ctx *c, size_t n, float lo, float hi)
{
    float *h = ck_alloc(n);
    for (size_t i = 0; i < n; i++) h[i] = lo + (hi - lo) * (float)ck_uniform(c);
    return h;
}

static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

int ck_variant_skipped(const Ctx *c, const char *name)
{
    return in_list(c->skip_variants, name) ||
           (c->only_variants && !in_list(c->only_variants, name));
}

float *ck_copy(const float *h, size_t n)
{
    float *r = ck_alloc(n);
    memcpy(r, h, n * sizeof(float));
    return r;
}

static uint16_t f2bf(float f) /* round to nearest even, as the gpu stores */
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float bf2f(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

void ck_round(Ctx *c, float *h, size_t n)
{
    if (!c->bf16) return;
    for (size_t i = 0; i < n; i++) h[i] = bf2f(f2bf(h[i]));
}

static size_t elem(Ctx *c, int f32) { return f32 ? 4 : (size_t)c->gpu->act_bytes; }

void *ck_dev(Ctx *c, size_t n, int f32)
{
    size_t bytes = (n ? n : 1) * elem(c, f32);
    void *d = c->gpu->ops->mem_alloc(c->gpu, bytes);
    if (!d) {
        size_t fr = 0, tot = 0;
        c->gpu->ops->mem_info(c->gpu, &fr, &tot);
        fprintf(stderr, "check_kernels: gpu mem_alloc of %zu bytes failed (%zu free of %zu)\n",
                bytes, fr, tot);
        exit(2);
    }
    return d;
}

void ck_dev_set(Ctx *c, void *d, const float *h, size_t n, int f32)
{
    if (elem(c, f32) == 4) {
        c->gpu->ops->mem_upload(c->gpu, d, h, n * 4);
        return;
    }
    uint16_t *b = malloc((n ? n : 1) * 2);
    if (!b) exit(2);
    for (size_t i = 0; i < n; i++) b[i] = f2bf(h[i]);
    c->gpu->ops->mem_upload(c->gpu, d, b, n * 2);
    free(b);
}

void *ck_dev_from(Ctx *c, const float *h, size_t n, int f32)
{
    void *d = ck_dev(c, n, f32);
    ck_dev_set(c, d, h, n, f32);
    return d;
}

void ck_dev_poison(Ctx *c, void *d, size_t n, int f32)
{
    /* 0xff bytes are NaN in fp32 and in bf16 */
    size_t bytes = n * elem(c, f32);
    unsigned char *p = malloc(bytes ? bytes : 1);
    if (!p) exit(2);
    memset(p, 0xff, bytes);
    c->gpu->ops->mem_upload(c->gpu, d, p, bytes);
    free(p);
}

void ck_dev_get(Ctx *c, float *h, const void *d, size_t n, int f32)
{
    if (elem(c, f32) == 4) {
        c->gpu->ops->mem_download(c->gpu, h, d, n * 4);
        return;
    }
    uint16_t *b = malloc((n ? n : 1) * 2);
    if (!b) exit(2);
    c->gpu->ops->mem_download(c->gpu, b, d, n * 2);
    for (size_t i = 0; i < n; i++) h[i] = bf2f(b[i]);
    free(b);
}

void ck_dev_free(Ctx *c, void *d) { c->gpu->ops->mem_free(c->gpu, d); }

double ck_rel_err(const float *got, const float *ref, size_t n)
{
    double maxdiff = 0.0, maxref = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i]) || !isfinite(ref[i])) return INFINITY;
        double d = fabs((double)got[i] - (double)ref[i]);
        if (d > maxdiff) maxdiff = d;
        if (fabs((double)ref[i]) > maxref) maxref = fabs((double)ref[i]);
    }
    return maxref > 0.0 ? maxdiff / maxref : maxdiff;
}

void ck_record(Ctx *c, const char *op, const char *shape, const char *worst, double err,
               double tol, int deterministic)
{
    int pass = err <= tol && deterministic;
    printf("%s  %-23s %-30s %-4s  err %.3e (tol %.0e, worst: %s)%s\n", pass ? "PASS" : "FAIL", op,
           shape, c->bf16 ? "bf16" : "fp32", err, tol, worst,
           deterministic ? "" : "  NOT DETERMINISTIC");
    fflush(stdout);
    if (!pass) c->fails++;
    if (c->nrows >= CK_MAX_ROWS) return;
    CkRow *r = &c->rows[c->nrows++];
    snprintf(r->op, sizeof r->op, "%s", op);
    snprintf(r->shape, sizeof r->shape, "%s", shape);
    snprintf(r->worst, sizeof r->worst, "%s", worst);
    r->bf16 = c->bf16;
    r->err = err;
    r->tol = tol;
    r->deterministic = deterministic;
    r->pass = pass;
}

int ck_check(Ctx *c, const char *op, const char *shape, CkOut *outs, int nouts, CkRun run,
             void *arg, double tol)
{
    if (tol < 0) tol = c->bf16 ? TOL_BF16 : TOL_FP32;
    float *got[2][8];
    if (nouts > 8) {
        fprintf(stderr, "check_kernels: %s has more than 8 outputs\n", op);
        exit(2);
    }
    for (int rep = 0; rep < 2; rep++) {
        for (int i = 0; i < nouts; i++) {
            if (outs[i].init) ck_dev_set(c, outs[i].dev, outs[i].init, outs[i].n, outs[i].f32);
            else ck_dev_poison(c, outs[i].dev, outs[i].n, outs[i].f32);
        }
        run(c, arg);
        c->gpu->ops->sync(c->gpu);
        for (int i = 0; i < nouts; i++) {
            got[rep][i] = ck_alloc(outs[i].n);
            ck_dev_get(c, got[rep][i], outs[i].dev, outs[i].n, outs[i].f32);
        }
    }
    int det = 1;
    double worst = -1.0;
    const char *worst_name = "-";
    for (int i = 0; i < nouts; i++) {
        /* the downloads are exact images of the gpu's bits (bf16 widens exactly) */
        if (memcmp(got[0][i], got[1][i], outs[i].n * sizeof(float)) != 0) det = 0;
        double e = ck_rel_err(got[0][i], outs[i].ref, outs[i].n);
        if (e > worst || isnan(e)) {
            worst = isnan(e) ? INFINITY : e;
            worst_name = outs[i].name;
        }
        free(got[0][i]);
        free(got[1][i]);
    }
    ck_record(c, op, shape, worst_name, worst, tol, det);
    return worst <= tol && det;
}

void ck_print_table(Ctx *c)
{
    printf("\n%-23s %-30s %-4s %10s %8s %5s %s\n", "op", "shape", "type", "error", "tol", "det",
           "result");
    for (int i = 0; i < c->nrows; i++) {
        const CkRow *r = &c->rows[i];
        printf("%-23s %-30s %-4s %10.3e %8.0e %5s %s\n", r->op, r->shape, r->bf16 ? "bf16" : "fp32",
               r->err, r->tol, r->deterministic ? "yes" : "NO", r->pass ? "PASS" : "FAIL");
    }
    printf("%d checks, %d failed\n", c->nrows, c->fails);
}
