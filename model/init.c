/* model/init.c — GPT-2's initialisation (gpt_init_weights, see gpt.h).
 *
 * Normals come from splitmix64 (base/rng.h) feeding Box-Muller: simple, fast and fully
 * determined by the seed, which is all a reproducible init needs. */
#include <math.h>
#include <string.h>

#include "gpt.h"
#include "base/rng.h"
#include "base/stop.h"

typedef struct {
    uint64_t state;
    int has_spare;
    double spare;
} NormalRng;

static double uniform01(NormalRng *r) /* in (0, 1] */
{
    return ((rng_next(&r->state) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

static double normal(NormalRng *r)
{
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u = uniform01(r), v = uniform01(r);
    double rad = sqrt(-2.0 * log(u)), th = 2.0 * M_PI * v;
    r->spare = rad * sin(th);
    r->has_spare = 1;
    return rad * cos(th);
}

/* Returns 1 when a stop was asked for (base/stop.h), polled every 2^20
 * values (about 25 ms on one core): the fill is the long part of a big
 * model's start-up (4 s for 177M parameters on one core). */
static int fill_normal(NormalRng *r, float *p, size_t n, double std)
{
    for (size_t i = 0; i < n; i++) {
        if ((i & ((1u << 20) - 1)) == 0 && stop_requested()) return 1;
        p[i] = (float)(normal(r) * std);
    }
    return 0;
}

static void fill_const(float *p, size_t n, float value)
{
    for (size_t i = 0; i < n; i++) p[i] = value;
}

int gpt_init_weights(const GPTConfig *cfg, uint64_t seed, float *host)
{
    size_t sz[NUM_PARAM_TENSORS];
    config_param_sizes(cfg, sz);
    NormalRng rng = {.state = seed};
    double std = 0.02, proj_std = 0.02 / sqrt(2.0 * cfg->num_layers);
    float *p = host;
    for (int i = 0; i < NUM_PARAM_TENSORS; i++) {
        switch (i) {
        case 2: case 8: case 14: /* LayerNorm weights */
            fill_const(p, sz[i], 1.0f);
            break;
        case 3: case 5: case 7: case 9: case 11: case 13: case 15: /* biases */
            fill_const(p, sz[i], 0.0f);
            break;
        case 6: case 12: /* residual output projections */
            if (fill_normal(&rng, p, sz[i], proj_std)) return 1;
            break;
        default: /* wte, wpe, qkvw, fcw */
            if (fill_normal(&rng, p, sz[i], std)) return 1;
        }
        if (i == 0) /* padded vocab rows stay zero */
            memset(p + (size_t)cfg->vocab_size * cfg->channels, 0,
                   sizeof(float) * (size_t)(cfg->padded_vocab - cfg->vocab_size) * cfg->channels);
        p += sz[i];
    }
    return 0;
}
