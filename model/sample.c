/* model/sample.c — see sample.h. */
#include "sample.h"

#include "base/rng.h"

#include <math.h>

void sample_seed(SampleRng *rng, uint64_t seed) { rng->state = seed; }

float sample_uniform(SampleRng *rng)
{
    /* top 24 bits: exactly representable floats in [0, 1) */
    return (float)(rng_next(&rng->state) >> 40) / 16777216.0f;
}

int sample_token(const float *logits, int V, float temperature, SampleRng *rng)
{
    int best = 0;
    for (int v = 1; v < V; v++)
        if (logits[v] > logits[best]) best = v;
    if (temperature <= 0.0f) return best;
    double sum = 0.0;
    for (int v = 0; v < V; v++) sum += exp((logits[v] - logits[best]) / temperature);
    double r = sample_uniform(rng) * sum, acc = 0.0;
    for (int v = 0; v < V; v++) {
        acc += exp((logits[v] - logits[best]) / temperature);
        if (r < acc) return v;
    }
    return best; /* r landed past the last partial sum by rounding */
}
