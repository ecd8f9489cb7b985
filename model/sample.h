/* model/sample.h — drawing the next token from logits.
 *
 * Owns: the sampler's RNG and the draw: softmax with temperature, then
 * optionally top-k, then top-p (nucleus), then one uniform draw.
 *
 * The draw, for logits l over the real vocabulary [0, V):
 *   temperature 0: the argmax (the lowest id on ties); nothing is drawn.
 *   otherwise w_v = exp((l_v - max l) / temperature), in double;
 *   top-k (k > 0): keep the k largest logits (ties broken by the lower id);
 *   top-p (p < 1): of what is kept, in order of decreasing logit, keep the
 *     shortest prefix whose share of the kept mass reaches p (at least one
 *     token);
 *   then draw u in [0, 1) and return the token where the running sum of
 *   the kept w first exceeds u * (their total): in id order when nothing
 *   is filtered, in order of decreasing logit otherwise.
 * The draw depends only on the logits' values and the RNG, so a seeded run
 * gives the same tokens on any backend whose fp32 logits agree (a sample
 * differs only if u lands within rounding of a boundary). */
#ifndef MODEL_SAMPLE_H
#define MODEL_SAMPLE_H

#include <stdint.h>

typedef struct {
    uint64_t state;
} SampleRng;

typedef struct {
    float temperature; /* 0 = greedy */
    int top_k;         /* 0 = off */
    float top_p;       /* 1 = off; in (0, 1] */
} SampleParams;

void sample_seed(SampleRng *rng, uint64_t seed);

/* A uniform float in [0, 1). */
float sample_uniform(SampleRng *rng);

/* Draw an id in [0, V) as described above; V is the real vocabulary
 * (padded columns are never drawn). work: V ints of scratch, needed only
 * when top-k or top-p filters (may be NULL otherwise). */
int sample_draw(const float *logits, int V, const SampleParams *p, SampleRng *rng, int *work);

/* sample_draw with temperature only (no top-k, no top-p). */
int sample_token(const float *logits, int V, float temperature, SampleRng *rng);

#endif
