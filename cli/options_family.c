/* cli/options_family.c — see cli/options_family.h. */
#include "cli/options_family.h"

#include <stdio.h>
#include <string.h>

#include "cli/option_table.h"

/* A published preset (config_preset: qwen2.5-0.5b, llama-3.2-1b, qwen3-*) fixes
 * its vocabulary, head, norms, qkv bias and RoPE too; flags given win. */
void options_preset_published(TrainOptions *opt, const GPTConfig *cfg)
{
    const OptSpec *t = option_table;
    for (int i = 0; i < option_table_len; i++) {
        if (opt->given[i]) continue;
        const char *n = t[i].name;
        if (strcmp(n, "vocab") == 0) opt->vocab = cfg->vocab_size;
        if (strcmp(n, "lm-head") == 0) opt->lm_head = cfg->untied ? 2 : 1;
        if (strcmp(n, "rope-theta") == 0) opt->rope_theta = cfg->rope_theta;
        if (strcmp(n, "norm-eps") == 0) opt->norm_eps = cfg->norm_eps;
        if (strcmp(n, "qkv-bias") == 0) opt->qkv_bias = cfg->qkv_bias;
        if (strcmp(n, "qk-norm") == 0) opt->qk_norm = cfg->qk_norm;
        if (strcmp(n, "head-dim") == 0) opt->head_dim = cfg->head_dim;
        if (strcmp(n, "rope-scaling") == 0) opt->rope_factor = cfg->rope_factor;
        if (cfg->rope_factor == 0) continue;
        if (strcmp(n, "rope-low-freq-factor") == 0) opt->rope_low_freq = cfg->rope_low_freq;
        if (strcmp(n, "rope-high-freq-factor") == 0) opt->rope_high_freq = cfg->rope_high_freq;
        if (strcmp(n, "rope-original-max-pos") == 0)
            opt->rope_original_max_pos = cfg->rope_original_max_pos;
    }
}

/* --rope-scaling's three without it, or a high-frequency factor not above
 * the low one: the fault, or NULL. */
static const char *rope_scaling_fault(const TrainOptions *opt, char *buf, size_t len)
{
    static const char *const scaling[] = {"rope-low-freq-factor", "rope-high-freq-factor",
                                          "rope-original-max-pos"};
    for (size_t i = 0; i < sizeof scaling / sizeof scaling[0]; i++)
        if (opt->rope_factor == 0 && train_options_given(opt, scaling[i])) {
            snprintf(buf, len, "--%s: applies to --rope-scaling FACTOR (none given)", scaling[i]);
            return buf;
        }
    if (opt->rope_factor != 0 && !(opt->rope_high_freq > opt->rope_low_freq)) {
        snprintf(buf, len, "--rope-high-freq-factor: %g must exceed --rope-low-freq-factor %g",
                 opt->rope_high_freq, opt->rope_low_freq);
        return buf;
    }
    return NULL;
}

/* --arch llama's own flags, and what the family cannot do yet, refused by name. */
int options_check_family(const TrainOptions *opt)
{
    static const char *const llama_only[] = {
        "kv-heads", "ffn", "rope-theta", "lm-head", "qkv-bias", "qk-norm", "head-dim", "norm-eps",
        "rope-scaling", "rope-low-freq-factor", "rope-high-freq-factor", "rope-original-max-pos"};
    if (opt->arch != ARCH_LLAMA) {
        for (size_t i = 0; i < sizeof llama_only / sizeof llama_only[0]; i++)
            if (train_options_given(opt, llama_only[i])) {
                fprintf(stderr, "--%s: applies to --arch llama, not gpt2\n", llama_only[i]);
                return -1;
            }
        return 0;
    }
    char buf[160];
    const char *why = rope_scaling_fault(opt, buf, sizeof buf);
    if (why) {
        fprintf(stderr, "%s\n", why);
        return -1;
    }
    if (!opt->init_from && opt->kv_heads > 0 && opt->heads % opt->kv_heads != 0) {
        snprintf(buf, sizeof buf, "--kv-heads: %d does not divide --heads %d", opt->kv_heads,
                 opt->heads);
        why = buf;
    } else if (!opt->init_from && opt->head_dim % 2 != 0) {
        snprintf(buf, sizeof buf, "--head-dim: %d is odd (RoPE turns pairs of a head's "
                 "features)", opt->head_dim);
        why = buf;
    } else if (!opt->init_from && !opt->head_dim && opt->channels % opt->heads == 0 &&
               opt->channels / opt->heads % 2 != 0) {
        snprintf(buf, sizeof buf, "--heads: --arch llama needs an even head size (RoPE), and "
                 "--channels %d / --heads %d is odd", opt->channels, opt->heads);
        why = buf;
    } else if (opt->llmc_save_dir || opt->llmc_resume)
        why = opt->llmc_resume ? "--resume-llmc: llm.c's checkpoints are GPT-2's, not llama's"
                               : "--save-checkpoint-llmc: llm.c's checkpoints are GPT-2's";
    if (why) fprintf(stderr, "%s\n", why);
    return why ? -1 : 0;
}
