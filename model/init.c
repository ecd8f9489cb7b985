/* model/init.c — GPT-2's initialisation (gpt_init_weights, see gpt.h), and
 * the Llama family's by the same rule in its slots (config.h): RMSNorm
 * weights 1, wo and w_down residual-scaled, lm_head's padded rows 0.
 *
 * Normals come from splitmix64 (base/rng.h) feeding Box-Muller: simple, fast and fully
 * determined by the seed, which is all a reproducible init needs. */
#include <math.h>
#include <string.h>

#include "gpt.h"
#include "base/rng.h"
#include "base/stop.h"

static double uniform01(GptInitStream *r) /* in (0, 1] */
{
    return ((rng_next(&r->state) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

static double normal(GptInitStream *r)
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

void gpt_init_stream_start(GptInitStream *s, const GPTConfig *cfg, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->state = seed;
}

/* The value kind of parameter tensor t: its std, or a constant. */
static int tensor_const(const GPTConfig *cfg, int t, float *value)
{
    if (cfg->arch == ARCH_LLAMA && (t == 3 || t == 9)) { /* q_norm, k_norm weights (config.h) */
        *value = 1.0f;
        return 1;
    }
    switch (t) {
    case 2: case 8: case 14: /* LayerNorm weights */
        *value = 1.0f;
        return 1;
    case 3: case 5: case 7: case 9: case 11: case 13: case 15: /* biases */
        *value = 0.0f;
        return 1;
    default:
        return 0;
    }
}

/* The values are drawn in llm.c's tensor order, one normal per element of
 * a random tensor (the padded vocab rows of wte draw theirs and are then
 * zeroed), so any split of the stream into pieces gives the same bits.
 * Polls for a stop every 2^20 values of a tensor, and as each random one
 * starts (about 25 ms apart on one core): the fill
 * is the long part of a big model's start-up (4 s for 177M parameters on
 * one core). */
int gpt_init_stream_next(GptInitStream *s, float *out, size_t n)
{
    size_t sz[NUM_PARAM_TENSORS];
    config_param_sizes(&s->cfg, sz);
    double std = 0.02, proj_std = 0.02 / sqrt(2.0 * s->cfg.num_layers);
    size_t wte_real = (size_t)s->cfg.vocab_size * s->cfg.channels;
    /* the last tensor with padded vocab rows: wte, and a Llama lm_head
     * (wpe's slot, config.h) */
    int head = s->cfg.arch == ARCH_LLAMA ? 1 : 0;
    size_t done = 0;
    while (done < n && s->tensor < NUM_PARAM_TENSORS) {
        int t = s->tensor;
        size_t k = sz[t] - s->pos < n - done ? sz[t] - s->pos : n - done;
        float value;
        if (tensor_const(&s->cfg, t, &value)) {
            for (size_t i = 0; i < k; i++) out[done + i] = value;
        } else {
            double sd = t == 6 || t == 12 ? proj_std : std; /* residual projections */
            for (size_t i = 0; i < k; i++) {
                if (((s->pos + i) & ((1u << 20) - 1)) == 0 && stop_requested()) return 1;
                float x = (float)(normal(s) * sd);
                out[done + i] = t <= head && s->pos + i >= wte_real ? 0.0f : x;
            }
        }
        done += k;
        s->pos += k;
        if (s->pos == sz[t]) {
            s->tensor++;
            s->pos = 0;
        }
    }
    return 0;
}

int gpt_init_weights(const GPTConfig *cfg, uint64_t seed, float *host)
{
    GptInitStream s;
    gpt_init_stream_start(&s, cfg, seed);
    return gpt_init_stream_next(&s, host, config_num_params(cfg));
}
