/* tests/test_sample.c — the sampler: greedy at temperature 0, padded
 * columns never drawn, frequencies follow the softmax. */
#include <criterion/criterion.h>
#include <math.h>

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
