/* model/config.c — see config.h. */
#include "config.h"

#include <stdio.h>
#include <string.h>

int config_pad_vocab(int vocab_size) { return (vocab_size + 127) / 128 * 128; }

int config_preset(GPTConfig *cfg, const char *name)
{
    static const struct { const char *name; int L, NH, C; } presets[] = {
        {"d12", 12, 12, 768}, {"d24", 24, 16, 1024},
        {"d36", 36, 20, 1280}, {"d48", 48, 25, 1600},
        /* Hugging Face's names of the same four */
        {"gpt2", 12, 12, 768}, {"gpt2-medium", 24, 16, 1024},
        {"gpt2-large", 36, 20, 1280}, {"gpt2-xl", 48, 25, 1600},
    };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        if (strcmp(name, presets[i].name) == 0) {
            cfg->num_layers = presets[i].L;
            cfg->num_heads = presets[i].NH;
            cfg->channels = presets[i].C;
            return 0;
        }
    }
    return -1;
}

int config_validate(const GPTConfig *cfg, char *msg, size_t msg_len)
{
    if (cfg->num_layers < 1 || cfg->num_layers > 4096)
        snprintf(msg, msg_len, "layers must be in 1..4096 (got %d)", cfg->num_layers);
    else if (cfg->channels < 1 || cfg->channels > 65536)
        snprintf(msg, msg_len, "channels must be in 1..65536 (got %d)", cfg->channels);
    else if (cfg->num_heads < 1 || cfg->channels % cfg->num_heads != 0)
        snprintf(msg, msg_len, "heads (%d) must be >= 1 and divide channels (%d)",
                 cfg->num_heads, cfg->channels);
    else if (cfg->vocab_size < 2 || cfg->vocab_size > 65536)
        snprintf(msg, msg_len, "vocab must be in 2..65536 (got %d); tokens are uint16",
                 cfg->vocab_size);
    else if (cfg->padded_vocab < cfg->vocab_size || cfg->padded_vocab > 1 << 20)
        snprintf(msg, msg_len, "padded vocab %d is smaller than vocab %d or too large",
                 cfg->padded_vocab, cfg->vocab_size);
    else if (cfg->max_seq_len < 1 || cfg->max_seq_len > 1 << 20)
        snprintf(msg, msg_len, "max sequence length must be in 1..1048576 (got %d)",
                 cfg->max_seq_len);
    else
        return 0;
    return -1;
}

const char *config_param_name(int i)
{
    static const char *const names[NUM_PARAM_TENSORS] = {
        "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
        "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"};
    return i >= 0 && i < NUM_PARAM_TENSORS ? names[i] : "?";
}

void config_param_sizes(const GPTConfig *cfg, size_t s[NUM_PARAM_TENSORS])
{
    size_t Vp = (size_t)cfg->padded_vocab, C = (size_t)cfg->channels;
    size_t L = (size_t)cfg->num_layers, maxT = (size_t)cfg->max_seq_len;
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
