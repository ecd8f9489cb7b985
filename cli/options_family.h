/* cli/options_family.h — the flags of the model families, for
 * train_options_parse (cli/options.c).
 *
 * Owns: a published preset's fields as flag values (its vocabulary, head,
 * norms, qkv bias and RoPE), and the check that --arch llama's own flags
 * are given only with it (and what the family cannot do yet), each
 * refusal naming the flag. */
#ifndef CLI_OPTIONS_FAMILY_H
#define CLI_OPTIONS_FAMILY_H

#include "cli/options.h"
#include "model/config.h"

/* A published preset (cfg from config_preset, vocab_size > 0): set each
 * flag it fixes that the command line did not give. */
void options_preset_published(TrainOptions *opt, const GPTConfig *cfg);

/* 0, or -1 after one line on stderr naming the flag: a Llama flag without
 * --arch llama, --rope-scaling's three without it, a high-frequency
 * factor not above the low one, a --kv-heads that does not divide
 * --heads, an odd head size, --device cuda, llm.c's checkpoints. */
int options_check_family(const TrainOptions *opt);

#endif
