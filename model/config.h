/* model/config.h — the shape of a GPT-2 model and of one micro-batch.
 *
 * Owns: GPTConfig (the architecture hyper-parameters, llm.c's header fields)
 * and the presets d12/d24/d36/d48 (also named gpt2, gpt2-medium, gpt2-large,
 * gpt2-xl). Pure data; no allocation. */
#ifndef MODEL_CONFIG_H
#define MODEL_CONFIG_H

#include <stddef.h>

typedef struct {
    int max_seq_len;  /* maxT: rows of the position embedding */
    int vocab_size;   /* V: real vocabulary */
    int padded_vocab; /* Vp: V rounded up to a multiple of 128 */
    int num_layers;   /* L */
    int num_heads;    /* NH */
    int channels;     /* C; head size is C / NH */
} GPTConfig;

/* Number of parameter tensors, in llm.c's order (their names and sizes: model/config.c). */
#define NUM_PARAM_TENSORS 16

/* V rounded up to a multiple of 128, as llm.c pads the embedding. */
int config_pad_vocab(int vocab_size);

/* Fill *cfg with a named GPT-2 shape: "d12" or "gpt2" (124M), "d24" or
 * "gpt2-medium" (350M), "d36" or "gpt2-large" (774M), "d48" or "gpt2-xl"
 * (1558M). Returns 0, or -1 for an unknown name. */
int config_preset(GPTConfig *cfg, const char *name);

/* 0 when the shape is usable; otherwise writes a one-line reason into
 * msg (size msg_len) and returns -1. */
int config_validate(const GPTConfig *cfg, char *msg, size_t msg_len);

/* llm.c's name of parameter tensor i (0 .. NUM_PARAM_TENSORS-1): "wte",
 * "wpe", "ln1w", ... "lnfb"; "?" outside the range. */
const char *config_param_name(int i);

/* Element count of each parameter tensor (llm.c order) and their sum. */
void config_param_sizes(const GPTConfig *cfg, size_t sizes[NUM_PARAM_TENSORS]);
size_t config_num_params(const GPTConfig *cfg);

#endif
