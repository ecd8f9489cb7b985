/* model/sample.c — see sample.h. */
#define _GNU_SOURCE /* qsort_r */
#include "sample.h"

#include "base/rng.h"

#include <math.h>
#include <stdlib.h>

void sample_seed(SampleRng *rng, uint64_t seed) { rng->state = seed; }

float sample_uniform(SampleRng *rng)
{
    /* top 24 bits: exactly representable floats in [0, 1) */
    return (float)(rng_next(&rng->state) >> 40) / 16777216.0f;
}

/* A NaN logit ranks below everything, so the order stays a strict order. */
static float key(const float *l, int v) { return isnan(l[v]) ? -INFINITY : l[v]; }

/* 1 when id a comes before id b: larger logit, then lower id. */
static int before(const float *l, int a, int b)
{
    float ka = key(l, a), kb = key(l, b);
    return ka > kb || (ka == kb && a < b);
}

static int cmp_ids(const void *pa, const void *pb, void *ctx)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    return before(ctx, a, b) ? -1 : before(ctx, b, a) ? 1 : 0;
}

/* Restore the heap below i: the root is the id that comes last. */
static void sift_down(const float *l, int *h, int n, int i)
{
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n) return;
        if (c + 1 < n && before(l, h[c], h[c + 1])) c++;
        if (!before(l, h[i], h[c])) return;
        int t = h[i];
        h[i] = h[c];
        h[c] = t;
        i = c;
    }
}

/* work[0..k) = the k ids that come first, in order. O(V log k). */
static void select_top(const float *l, int V, int k, int *work)
{
    for (int i = 0; i < k; i++) work[i] = i;
    for (int i = k / 2 - 1; i >= 0; i--) sift_down(l, work, k, i);
    for (int v = k; v < V; v++)
        if (before(l, v, work[0])) {
            work[0] = v;
            sift_down(l, work, k, 0);
        }
    qsort_r(work, (size_t)k, sizeof *work, cmp_ids, (void *)l);
}

static int argmax(const float *l, int V)
{
    int best = 0;
    for (int v = 1; v < V; v++)
        if (before(l, v, best)) best = v;
    return best;
}

/* The unfiltered draw, in id order. */
static int draw_all(const float *l, int V, float temperature, int best, SampleRng *rng)
{
    double sum = 0.0;
    for (int v = 0; v < V; v++) sum += exp((l[v] - l[best]) / temperature);
    double r = sample_uniform(rng) * sum, acc = 0.0;
    for (int v = 0; v < V; v++) {
        acc += exp((l[v] - l[best]) / temperature);
        if (r < acc) return v;
    }
    return best; /* r landed past the last partial sum by rounding */
}

int sample_draw(const float *l, int V, const SampleParams *p, SampleRng *rng, int *work)
{
    int best = argmax(l, V);
    if (p->temperature <= 0.0f) return best;
    int k = p->top_k > 0 && p->top_k < V ? p->top_k : V;
    int nucleus = p->top_p < 1.0f;
    if (k == V && !nucleus) return draw_all(l, V, p->temperature, best, rng);
    select_top(l, V, k, work); /* work[0] == best */
    double total = 0.0;
    for (int i = 0; i < k; i++) total += exp((l[work[i]] - l[best]) / p->temperature);
    int keep = k;
    double kept = total;
    if (nucleus) {
        double cum = 0.0, need = (double)p->top_p * total;
        for (int i = 0; i < k; i++) {
            cum += exp((l[work[i]] - l[best]) / p->temperature);
            if (cum >= need) {
                keep = i + 1;
                kept = cum;
                break;
            }
        }
    }
    double r = sample_uniform(rng) * kept, acc = 0.0;
    for (int i = 0; i < keep; i++) {
        acc += exp((l[work[i]] - l[best]) / p->temperature);
        if (r < acc) return work[i];
    }
    return work[keep - 1];
}

int sample_token(const float *logits, int V, float temperature, SampleRng *rng)
{
    SampleParams p = {temperature, 0, 1.0f};
    return sample_draw(logits, V, &p, rng, NULL);
}
