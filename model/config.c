/* model/config.c — see config.h. */
#include "config.h"

#include <stdio.h>
#include <string.h>

int config_pad_vocab(int vocab_size) { return (vocab_size + 127) / 128 * 128; }

/* The published shapes: their Hugging Face config.json's fields. */
typedef struct {
    const char *name;
    int V, qkv_bias, qk_norm, head_dim;
    float theta, eps, factor, low, high;
    int orig;
} Published;

static const Published PUBLISHED[] = {
    /* Qwen/Qwen2.5-0.5B: 494,032,768 parameters, tied */
    {"qwen2.5-0.5b", 151936, 1, 0, 0, 1000000.0f, 1e-6f, 0, 0, 0, 0},
    /* meta-llama/Llama-3.2-1B: 1,235,814,400 parameters, tied */
    {"llama-3.2-1b", 128256, 0, 0, 0, 500000.0f, 1e-5f, 32.0f, 1.0f, 4.0f, 8192},
    /* Qwen/Qwen3-0.6B: 596,049,920 parameters, tied; heads of 128 at C 1024 */
    {"qwen3-0.6b", 151936, 0, 1, 128, 1000000.0f, 1e-6f, 0, 0, 0, 0},
    /* Qwen/Qwen3-4B: 4,022,468,096 parameters, tied; heads of 128 at C 2560 */
    {"qwen3-4b", 151936, 0, 1, 128, 1000000.0f, 1e-6f, 0, 0, 0, 0},
};

int config_preset(GPTConfig *cfg, const char *name)
{
    static const struct { const char *name; int L, NH, C, arch, NKV, F; } presets[] = {
        {"d12", 12, 12, 768, ARCH_GPT2, 0, 0}, {"d24", 24, 16, 1024, ARCH_GPT2, 0, 0},
        {"d36", 36, 20, 1280, ARCH_GPT2, 0, 0}, {"d48", 48, 25, 1600, ARCH_GPT2, 0, 0},
        /* Hugging Face's names of the same four */
        {"gpt2", 12, 12, 768, ARCH_GPT2, 0, 0}, {"gpt2-medium", 24, 16, 1024, ARCH_GPT2, 0, 0},
        {"gpt2-large", 36, 20, 1280, ARCH_GPT2, 0, 0}, {"gpt2-xl", 48, 25, 1600, ARCH_GPT2, 0, 0},
        /* Llama: head size 64, grouped-query attention; ~58M and ~153M
         * parameters with an untied head at GPT-2's vocabulary */
        {"llama-60m", 12, 6, 384, ARCH_LLAMA, 2, 1024},
        {"llama-125m", 12, 12, 768, ARCH_LLAMA, 4, 2048},
        /* published (PUBLISHED has the rest) */
        {"qwen2.5-0.5b", 24, 14, 896, ARCH_LLAMA, 2, 4864},
        {"llama-3.2-1b", 16, 32, 2048, ARCH_LLAMA, 8, 8192},
        {"qwen3-0.6b", 28, 16, 1024, ARCH_LLAMA, 8, 3072},
        {"qwen3-4b", 36, 32, 2560, ARCH_LLAMA, 8, 9728},
    };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        if (strcmp(name, presets[i].name) == 0) {
            cfg->num_layers = presets[i].L;
            cfg->num_heads = presets[i].NH;
            cfg->channels = presets[i].C;
            cfg->arch = presets[i].arch;
            cfg->kv_heads = presets[i].NKV;
            cfg->ffn = presets[i].F;
            for (size_t j = 0; j < sizeof PUBLISHED / sizeof PUBLISHED[0]; j++) {
                const Published *p = &PUBLISHED[j];
                if (strcmp(name, p->name) != 0) continue;
                cfg->vocab_size = p->V;
                cfg->padded_vocab = config_pad_vocab(p->V);
                cfg->qkv_bias = p->qkv_bias;
                cfg->qk_norm = p->qk_norm;
                cfg->head_dim = p->head_dim;
                cfg->rope_theta = p->theta;
                cfg->norm_eps = p->eps;
                cfg->rope_factor = p->factor;
                cfg->rope_low_freq = p->low;
                cfg->rope_high_freq = p->high;
                cfg->rope_original_max_pos = p->orig;
                cfg->untied = 0;
            }
            return 0;
        }
    }
    return -1;
}

const char *config_arch_name(int arch)
{
    return arch == ARCH_GPT2 ? "gpt2" : arch == ARCH_LLAMA ? "llama" : "?";
}

int config_arch_parse(const char *name)
{
    return strcmp(name, "gpt2") == 0 ? ARCH_GPT2 : strcmp(name, "llama") == 0 ? ARCH_LLAMA : -1;
}

int config_kv_heads(const GPTConfig *cfg)
{
    return cfg->arch == ARCH_LLAMA && cfg->kv_heads > 0 ? cfg->kv_heads : cfg->num_heads;
}

int config_default_ffn(int arch, int channels)
{
    if (arch != ARCH_LLAMA) return 4 * channels;
    long f = (8L * channels + 2) / 3; /* ceil(8C/3) */
    return (int)((f + 255) / 256 * 256);
}

int config_ffn(const GPTConfig *cfg)
{
    if (cfg->arch != ARCH_LLAMA) return 4 * cfg->channels;
    return cfg->ffn > 0 ? cfg->ffn : config_default_ffn(cfg->arch, cfg->channels);
}

float config_rope_theta(const GPTConfig *cfg)
{
    return cfg->rope_theta > 0 ? cfg->rope_theta : 10000.0f;
}

int config_head_dim(const GPTConfig *cfg)
{
    if (cfg->arch == ARCH_LLAMA && cfg->head_dim > 0) return cfg->head_dim;
    return cfg->num_heads > 0 ? cfg->channels / cfg->num_heads : 0;
}

int config_q_width(const GPTConfig *cfg) { return cfg->num_heads * config_head_dim(cfg); }

float config_norm_eps(const GPTConfig *cfg) { return cfg->norm_eps > 0 ? cfg->norm_eps : 1e-5f; }

/* The Llama family's fields: GPT-2 takes none of them. */
static int validate_family(const GPTConfig *cfg, char *msg, size_t msg_len)
{
    int NH = cfg->num_heads, NKV = config_kv_heads(cfg), hs = config_head_dim(cfg);
    if (cfg->arch != ARCH_GPT2 && cfg->arch != ARCH_LLAMA)
        snprintf(msg, msg_len, "unknown architecture %d (expected gpt2 or llama)", cfg->arch);
    else if (cfg->arch == ARCH_GPT2 && ((cfg->kv_heads && cfg->kv_heads != NH) ||
                                        (cfg->ffn && cfg->ffn != 4 * cfg->channels) ||
                                        cfg->untied || cfg->qkv_bias || cfg->qk_norm ||
                                        cfg->rope_factor != 0 ||
                                        (cfg->head_dim && cfg->head_dim != cfg->channels / NH)))
        snprintf(msg, msg_len, "gpt2 has kv-heads = heads, ffn = 4 x channels, head-dim = "
                 "channels / heads and a tied head (and no qkv bias, qk norm or rope scaling)");
    else if (cfg->arch == ARCH_GPT2)
        return 0;
    else if (cfg->kv_heads < 0 || NH % NKV != 0)
        snprintf(msg, msg_len, "kv-heads (%d) must divide heads (%d)", NKV, NH);
    else if (cfg->head_dim < 0 || cfg->head_dim > 1024)
        snprintf(msg, msg_len, "head-dim must be in 1..1024 (got %d)", cfg->head_dim);
    else if (hs % 2 != 0)
        snprintf(msg, msg_len, "llama's head size (head-dim, default channels/heads: %d) must be "
                 "even (RoPE)", hs);
    else if ((long)NH * hs > 65536)
        snprintf(msg, msg_len, "heads x head-dim (%ld) must be at most 65536", (long)NH * hs);
    else if (cfg->ffn < 0 || config_ffn(cfg) > 1 << 20)
        snprintf(msg, msg_len, "ffn must be in 1..1048576 (got %d)", cfg->ffn);
    else if (!(cfg->rope_theta >= 0) || !(cfg->norm_eps >= 0 && cfg->norm_eps < 1))
        snprintf(msg, msg_len, "rope-theta must be > 0 and norm eps in (0, 1)");
    else if ((cfg->qkv_bias != 0 && cfg->qkv_bias != 1) || (cfg->qk_norm != 0 && cfg->qk_norm != 1))
        snprintf(msg, msg_len, "qkv-bias and qk-norm are 0 or 1 (got %d, %d)", cfg->qkv_bias,
                 cfg->qk_norm);
    else if (cfg->rope_factor != 0 &&
             (!(cfg->rope_factor > 0) || !(cfg->rope_low_freq > 0) ||
              !(cfg->rope_high_freq > cfg->rope_low_freq) || cfg->rope_original_max_pos < 1))
        snprintf(msg, msg_len, "rope scaling needs factor > 0, 0 < low-freq factor < high-freq "
                 "factor and original positions >= 1 (got %g, %g, %g, %d)",
                 (double)cfg->rope_factor, (double)cfg->rope_low_freq,
                 (double)cfg->rope_high_freq, cfg->rope_original_max_pos);
    else
        return 0;
    return -1;
}

int config_validate(const GPTConfig *cfg, char *msg, size_t msg_len)
{
    if (cfg->num_layers < 1 || cfg->num_layers > 4096)
        snprintf(msg, msg_len, "layers must be in 1..4096 (got %d)", cfg->num_layers);
    else if (cfg->channels < 1 || cfg->channels > 65536)
        snprintf(msg, msg_len, "channels must be in 1..65536 (got %d)", cfg->channels);
    else if (cfg->num_heads < 1 ||
             (cfg->channels % cfg->num_heads != 0 && !(cfg->arch == ARCH_LLAMA && cfg->head_dim)))
        snprintf(msg, msg_len, "heads (%d) must be >= 1 and divide channels (%d) "
                 "unless llama's head-dim is given",
                 cfg->num_heads, cfg->channels);
    else if (cfg->vocab_size < 2 || cfg->vocab_size > 1 << 20)
        snprintf(msg, msg_len, "vocab must be in 2..1048576 (got %d)", cfg->vocab_size);
    else if (cfg->padded_vocab < cfg->vocab_size || cfg->padded_vocab > 1 << 20)
        snprintf(msg, msg_len, "padded vocab %d is smaller than vocab %d or too large",
                 cfg->padded_vocab, cfg->vocab_size);
    else if (cfg->max_seq_len < 1 || cfg->max_seq_len > 1 << 20)
        snprintf(msg, msg_len, "max sequence length must be in 1..1048576 (got %d)",
                 cfg->max_seq_len);
    else
        return validate_family(cfg, msg, msg_len);
    return -1;
}

const char *config_param_name(int i)
{
    static const char *const names[NUM_PARAM_TENSORS] = {
        "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
        "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"};
    return i >= 0 && i < NUM_PARAM_TENSORS ? names[i] : "?";
}

const char *config_tensor_name(const GPTConfig *cfg, int i)
{
    static const char *const names[NUM_PARAM_TENSORS] = {
        "tok_emb", "lm_head", "rms1w", "q_norm", "wqkv", "bqkv", "wo", "bo",
        "rms2w", "k_norm", "w_gateup", "b_gateup", "w_down", "b_down", "rmsfw", "rmsfb"};
    if (cfg->arch != ARCH_LLAMA) return config_param_name(i);
    return i >= 0 && i < NUM_PARAM_TENSORS ? names[i] : "?";
}

/* The Llama family's sixteen slots (config.h): the head in wpe's slot
 * when untied, the qkv bias in qkvb's with qkv_bias, the q and k norms'
 * weights in ln1b's and ln2b's with qk_norm; the other biases empty. */
static void llama_param_sizes(const GPTConfig *cfg, size_t s[NUM_PARAM_TENSORS])
{
    size_t Vp = (size_t)cfg->padded_vocab, C = (size_t)cfg->channels;
    size_t L = (size_t)cfg->num_layers, F = (size_t)config_ffn(cfg);
    size_t hs = (size_t)config_head_dim(cfg), Q = (size_t)config_q_width(cfg);
    size_t QKV = Q + 2 * (size_t)config_kv_heads(cfg) * hs;
    for (int i = 0; i < NUM_PARAM_TENSORS; i++) s[i] = 0;
    s[0] = Vp * C;                    /* tok_emb */
    s[1] = cfg->untied ? Vp * C : 0;  /* lm_head */
    s[2] = L * C;                     /* rms1w */
    s[3] = cfg->qk_norm ? L * hs : 0; /* q_norm */
    s[4] = L * QKV * C;               /* wqkv */
    s[5] = cfg->qkv_bias ? L * QKV : 0;
    s[6] = L * C * Q;                 /* wo: NH hs -> C */
    s[8] = L * C;                     /* rms2w */
    s[9] = cfg->qk_norm ? L * hs : 0; /* k_norm */
    s[10] = L * 2 * F * C;            /* w_gateup */
    s[12] = L * C * F;                /* w_down */
    s[14] = C;                        /* rmsfw */
}

void config_param_sizes(const GPTConfig *cfg, size_t s[NUM_PARAM_TENSORS])
{
    size_t Vp = (size_t)cfg->padded_vocab, C = (size_t)cfg->channels;
    size_t L = (size_t)cfg->num_layers, maxT = (size_t)cfg->max_seq_len;
    if (cfg->arch == ARCH_LLAMA) {
        llama_param_sizes(cfg, s);
        return;
    }
    s[0] = Vp * C;          /* wte */
    s[1] = maxT * C;        /* wpe */
    s[2] = L * C;           /* ln1w */
    s[3] = L * C;           /* ln1b */
    s[4] = L * 3 * C * C;   /* qkvw */
    s[5] = L * 3 * C;       /* qkvb */
    s[6] = L * C * C;       /* attprojw */
    s[7] = L * C;           /* attprojb */
    s[8] = L * C;           /* ln2w */
    s[9] = L * C;           /* ln2b */
    s[10] = L * 4 * C * C;  /* fcw */
    s[11] = L * 4 * C;      /* fcb */
    s[12] = L * C * 4 * C;  /* fcprojw */
    s[13] = L * C;          /* fcprojb */
    s[14] = C;              /* lnfw */
    s[15] = C;              /* lnfb */
}

size_t config_num_params(const GPTConfig *cfg)
{
    size_t s[NUM_PARAM_TENSORS], n = 0;
    config_param_sizes(cfg, s);
    for (int i = 0; i < NUM_PARAM_TENSORS; i++) n += s[i];
    return n;
}
