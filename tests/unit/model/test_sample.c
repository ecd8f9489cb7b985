/* tests/unit/model/test_sample.c — the sampler: greedy at temperature 0, padded
 * columns never drawn, frequencies follow the softmax; top-k never draws
 * outside the k most likely, top-p keeps the smallest set reaching p, both
 * renormalised (frequencies within 0.012 over 40000 draws, > 4 standard
 * deviations), top-p after top-k, ties to the lower id. The golden greedy
 * sample against PyTorch is in test_hellaswag.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "model/sample.h"

Test(sample, greedy_at_zero_temperature)
{
    float logits[5] = {0.1f, 2.0f, -1.0f, 1.9f, 9.0f}; /* column 4 is padding: V = 4 */
    SampleRng rng;
    sample_seed(&rng, 1);
    cr_expect_eq(sample_token(logits, 4, 0.0f, &rng), 1);
}

/* logits ln(1), ln(2), ln(3), ln(4): probabilities 0.1 .. 0.4. With 40000
 * draws each frequency is within 0.01 (over 4 standard deviations). */
Test(sample, frequencies_follow_softmax)
{
    float logits[5] = {0.0f, logf(2), logf(3), logf(4), 50.0f};
    int count[5] = {0};
    SampleRng rng;
    sample_seed(&rng, 7);
    for (int i = 0; i < 40000; i++) count[sample_token(logits, 4, 1.0f, &rng)]++;
    cr_expect_eq(count[4], 0, "a padded column was drawn");
    for (int v = 0; v < 4; v++)
        cr_expect(fabs(count[v] / 40000.0 - (v + 1) / 10.0) < 0.01, "id %d: %d draws", v, count[v]);
}

/* ---- top-k and top-p on a fixed logits vector ----
 * logits ln(w) for weights w = 10, 20, 5, 40, 1, 24 (sum 100), column 6
 * padding: probabilities 0.10, 0.20, 0.05, 0.40, 0.01, 0.24. Order by
 * probability: id 3 (0.40), 5 (0.24), 1 (0.20), 0 (0.10), 2 (0.05), 4 (0.01). */
static const float W[7] = {10, 20, 5, 40, 1, 24, 1e6f};

static void fixed_logits(float *l)
{
    for (int v = 0; v < 7; v++) l[v] = logf(W[v]);
}

/* 40000 draws; every id drawn must be in `allowed`, and each allowed id's
 * frequency within 0.012 of its weight renormalised over `allowed` (more
 * than 4 standard deviations at 40000 draws). */
static void expect_draws(const SampleParams *p, const int *allowed, int n_allowed, uint64_t seed)
{
    float l[7];
    fixed_logits(l);
    int count[7] = {0}, work[6];
    SampleRng rng;
    sample_seed(&rng, seed);
    for (int i = 0; i < 40000; i++) count[sample_draw(l, 6, p, &rng, work)]++;
    double mass = 0;
    for (int k = 0; k < n_allowed; k++) mass += W[allowed[k]];
    for (int v = 0; v < 7; v++) {
        int ok = 0;
        for (int k = 0; k < n_allowed; k++) ok |= allowed[k] == v;
        if (!ok) {
            cr_expect_eq(count[v], 0, "top-k %d top-p %g: id %d drawn %d times", p->top_k,
                         p->top_p, v, count[v]);
            continue;
        }
        double f = count[v] / 40000.0, want = W[v] / mass;
        cr_expect(fabs(f - want) < 0.012, "top-k %d top-p %g: id %d frequency %.4f, want %.4f",
                  p->top_k, p->top_p, v, f, want);
    }
}

Test(sample, top_k_never_emits_outside_the_top_k)
{
    SampleParams p = {1.0f, 1, 1.0f};
    expect_draws(&p, (int[]){3}, 1, 1);
    p.top_k = 2;
    expect_draws(&p, (int[]){3, 5}, 2, 2);
    p.top_k = 3;
    expect_draws(&p, (int[]){3, 5, 1}, 3, 3);
    p.top_k = 6;
    expect_draws(&p, (int[]){0, 1, 2, 3, 4, 5}, 6, 4);
    p.top_k = 1000; /* more than V: all */
    expect_draws(&p, (int[]){0, 1, 2, 3, 4, 5}, 6, 5);
}

/* The smallest set of most likely ids whose mass reaches p: 0.40 alone
 * reaches 0.39; 0.40 + 0.24 = 0.64 reaches 0.5 and 0.63; + 0.20 = 0.84
 * reaches 0.65 and 0.83; + 0.10 = 0.94 reaches 0.85; + 0.05 = 0.99
 * reaches 0.95. */
Test(sample, top_p_keeps_the_smallest_set_reaching_p)
{
    SampleParams p = {1.0f, 0, 0.39f};
    expect_draws(&p, (int[]){3}, 1, 11);
    p.top_p = 0.5f;
    expect_draws(&p, (int[]){3, 5}, 2, 12);
    p.top_p = 0.63f;
    expect_draws(&p, (int[]){3, 5}, 2, 13);
    p.top_p = 0.65f;
    expect_draws(&p, (int[]){3, 5, 1}, 3, 14);
    p.top_p = 0.83f;
    expect_draws(&p, (int[]){3, 5, 1}, 3, 15);
    p.top_p = 0.85f;
    expect_draws(&p, (int[]){3, 5, 1, 0}, 4, 16);
    p.top_p = 0.95f;
    expect_draws(&p, (int[]){3, 5, 1, 0, 2}, 5, 17);
    p.top_p = 0.0f; /* at least one token */
    expect_draws(&p, (int[]){3}, 1, 18);
}

/* top-k first, then top-p of what is left: k = 3 keeps 0.40, 0.24, 0.20
 * (mass 0.84); p = 0.7 of that is 0.588, reached by 0.40 + 0.24. */
Test(sample, top_p_applies_after_top_k)
{
    SampleParams p = {1.0f, 3, 0.7f};
    expect_draws(&p, (int[]){3, 5}, 2, 21);
    p.top_p = 0.8f; /* 0.672 of the top 3: needs all three */
    expect_draws(&p, (int[]){3, 5, 1}, 3, 22);
}

/* Temperature 2 flattens the kept set: weights become sqrt(w). */
Test(sample, temperature_applies_before_the_filters)
{
    float l[7];
    fixed_logits(l);
    SampleParams p = {2.0f, 2, 1.0f};
    int count[7] = {0}, work[6];
    SampleRng rng;
    sample_seed(&rng, 31);
    for (int i = 0; i < 40000; i++) count[sample_draw(l, 6, &p, &rng, work)]++;
    double want3 = sqrt(40.0) / (sqrt(40.0) + sqrt(24.0));
    cr_expect(count[3] + count[5] == 40000);
    cr_expect(fabs(count[3] / 40000.0 - want3) < 0.012, "id 3: %d draws, want %.4f", count[3],
              want3);
}

/* Equal logits: top-k keeps the lower ids; temperature 0 ignores the filters. */
Test(sample, ties_go_to_the_lower_id_and_greedy_ignores_filters)
{
    float l[5] = {1, 3, 3, 3, 0};
    int count[5] = {0}, work[5];
    SampleRng rng;
    sample_seed(&rng, 41);
    SampleParams p = {1.0f, 2, 1.0f};
    for (int i = 0; i < 1000; i++) count[sample_draw(l, 5, &p, &rng, work)]++;
    cr_expect(count[1] > 0 && count[2] > 0 && count[1] + count[2] == 1000, "%d %d %d", count[1],
              count[2], count[3]);
    SampleParams g = {0.0f, 3, 0.2f};
    cr_expect_eq(sample_draw(l, 5, &g, &rng, work), 1);
    float n[4] = {NAN, 0.5f, 2.0f, 1.0f};
    cr_expect_eq(sample_draw(n, 4, &g, &rng, work), 2, "a NaN logit is never the argmax");
}

/* The same seed draws the same ids: the filters use no other randomness. */
Test(sample, seeded_draws_repeat)
{
    float l[7];
    fixed_logits(l);
    SampleParams p = {0.8f, 4, 0.9f};
    int work[6], a[64], b[64];
    SampleRng r1, r2;
    sample_seed(&r1, 99), sample_seed(&r2, 99);
    for (int i = 0; i < 64; i++) a[i] = sample_draw(l, 6, &p, &r1, work);
    for (int i = 0; i < 64; i++) b[i] = sample_draw(l, 6, &p, &r2, work);
    cr_expect_eq(memcmp(a, b, sizeof a), 0);
}
