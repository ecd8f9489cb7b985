/* model/sample.h — drawing the next token from logits.
 *
 * Owns: the sampler's RNG and the softmax-with-temperature draw. */
#ifndef MODEL_SAMPLE_H
#define MODEL_SAMPLE_H

#include <stdint.h>

typedef struct {
    uint64_t state;
} SampleRng;

void sample_seed(SampleRng *rng, uint64_t seed);

/* A uniform float in [0, 1). */
float sample_uniform(SampleRng *rng);

/* Draw an id in [0, V) from softmax(logits[0..V) / temperature); V is the
 * real vocabulary (padded columns are never drawn). temperature 0 takes the
 * argmax. */
int sample_token(const float *logits, int V, float temperature, SampleRng *rng);

#endif
