/* model/config.h — the shape of a model (GPT-2 or Llama family) and of one
 * micro-batch.
 *
 * Owns: GPTConfig (the architecture hyper-parameters: llm.c's header fields,
 * then the family and the Llama family's own), the presets d12/d24/d36/d48
 * (also named gpt2, gpt2-medium, gpt2-large, gpt2-xl), llama-60m,
 * llama-125m and the published qwen2.5-0.5b, llama-3.2-1b, qwen3-0.6b and
 * qwen3-4b, and the
 * parameter list of each family. Pure data; no
 * allocation. */
#ifndef MODEL_CONFIG_H
#define MODEL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int max_seq_len;  /* maxT: rows of the position embedding */
    int vocab_size;   /* V: real vocabulary */
    int padded_vocab; /* Vp: V rounded up to a multiple of 128 */
    int num_layers;   /* L */
    int num_heads;    /* NH */
    int channels;     /* C; head size is config_head_dim's */
    /* The family (ARCH_*). A zeroed tail is GPT-2's, so a config filled
     * from llm.c's header fields alone is GPT-2's; the fields below are
     * the Llama family's, and 0 means "the default" where said. */
    int arch;
    int kv_heads;     /* NKV key/value heads (0: NH); divides NH */
    int ffn;          /* F, the MLP's hidden width (0: config_ffn's default) */
    float rope_theta; /* RoPE's base (0: 10000) */
    float norm_eps;   /* RMSNorm's eps (0: 1e-5) */
    int untied;       /* 1: a head of its own (lm_head), not the embedding */
    int qkv_bias;     /* 1: biases on q, k and v (Qwen2): (NH + 2 NKV) hs per layer */
    int qk_norm;      /* 1: RMSNorm over each q and k head's hs features (Qwen3) */
    int head_dim;     /* hs, each head's width (0: C / NH); Llama only (Qwen3: 128) */
    /* RoPE frequency scaling as Llama 3 does it (kernels/rope.h): factor 0
     * = none; else low/high frequency factors and the original positions */
    float rope_factor, rope_low_freq, rope_high_freq;
    int rope_original_max_pos;
    int reserved; /* 0: no padding before the 8-byte field below, so that two
                   * configs compare with memcmp (tests, the ranks' agreement) */
    /* The tokenizer the model was trained on: the identity a dataset
     * manifest records (data/dataset.h), 0 when unknown (a fresh model, or
     * a file from before it or from llm.c). Not part of the shape: no
     * computation reads it; the trainer adopts it from the data and refuses
     * data of another tokenizer (cli/train_data.c). */
    uint64_t tokenizer_id;
} GPTConfig;

enum { ARCH_GPT2 = 0, ARCH_LLAMA = 1 };
/* "gpt2" or "llama"; ARCH_* of a name, or -1. */
const char *config_arch_name(int arch);
int config_arch_parse(const char *name);

/* The resolved Llama-family fields (GPT-2: NKV = NH, F = 4C). The default
 * Llama F is 8/3 C rounded up to a multiple of 256. */
int config_kv_heads(const GPTConfig *cfg);
int config_ffn(const GPTConfig *cfg);
int config_default_ffn(int arch, int channels);
float config_rope_theta(const GPTConfig *cfg);
/* The head size hs: cfg->head_dim, or C / NH when 0 (GPT-2 always). The
 * attention's width is NH hs, which need not be C (Qwen3: 16 x 128 at C
 * 1024): q is (NH hs), k and v (NKV hs) each, wo maps NH hs to C. */
int config_head_dim(const GPTConfig *cfg);
int config_q_width(const GPTConfig *cfg); /* NH hs */
float config_norm_eps(const GPTConfig *cfg);

/* Number of parameter tensors, in llm.c's order (their names and sizes:
 * model/config.c). The Llama family fills the same sixteen slots, some
 * empty (0 elements), so that the flat vector's order, the update units
 * and the weight-decay rule are one code for both (config.c):
 *   wte = tok_emb, wpe = lm_head (untied; else empty), ln1w = rms1w,
 *   qkvw = wqkv ((NH hs + 2 NKV hs) x C per layer: q, k, v stacked),
 *   attprojw = wo (C x NH hs), ln2w = rms2w, fcw = w_gateup (2F x C: gate rows then up rows),
 *   fcprojw = w_down (C x F), lnfw = rmsfw; qkvb = bqkv ((NH + 2 NKV) hs
 *   per layer, with qkv_bias), ln1b = q_norm and ln2b = k_norm (hs per
 *   layer each, with qk_norm); every other bias slot empty. */
#define NUM_PARAM_TENSORS 16

/* V rounded up to a multiple of 128, as llm.c pads the embedding. */
int config_pad_vocab(int vocab_size);

/* Fill *cfg with a named shape: "d12" or "gpt2" (124M), "d24" or
 * "gpt2-medium" (350M), "d36" or "gpt2-large" (774M), "d48" or "gpt2-xl"
 * (1558M), all GPT-2; "llama-60m" (C 384, 12 layers, 6 heads, 2 KV heads,
 * F 1024) and "llama-125m" (C 768, 12 layers, 12 heads, 4 KV heads, F
 * 2048), Llama; and two published shapes of the family: "qwen2.5-0.5b"
 * (C 896, 24 layers, 14 heads, 2 KV heads, F 4864, qkv bias, tied, theta
 * 1e6, eps 1e-6, V 151936) and "llama-3.2-1b" (C 2048, 16 layers, 32
 * heads, 8 KV heads, F 8192, tied, theta 500000 with Llama 3 scaling 32 /
 * 1 / 4 / 8192, eps 1e-5, V 128256); "qwen3-0.6b" (C 1024, 28 layers, 16
 * heads, 8 KV heads, head_dim 128, F 3072, qk norm, tied, theta 1e6, eps
 * 1e-6, V 151936) and "qwen3-4b" (C 2560, 36 layers, 32 heads, 8 KV heads,
 * head_dim 128, F 9728, the rest as 0.6b's). Sets layers, heads, channels, arch,
 * kv_heads, ffn; the published ones also vocab_size (> 0 only for them:
 * their vocabulary, RoPE, eps, qkv bias, qk norm and head, untied 0, are
 * part of the shape), padded_vocab, rope_theta, norm_eps, qkv_bias, qk_norm,
 * head_dim and the rope scaling. Returns 0, or -1 for an unknown name. */
int config_preset(GPTConfig *cfg, const char *name);

/* 0 when the shape is usable; otherwise writes a one-line reason into
 * msg (size msg_len) and returns -1. */
int config_validate(const GPTConfig *cfg, char *msg, size_t msg_len);

/* llm.c's name of parameter tensor i (0 .. NUM_PARAM_TENSORS-1): "wte",
 * "wpe", "ln1w", ... "lnfb"; "?" outside the range. */
const char *config_param_name(int i);
/* The same in cfg's family ("tok_emb", "lm_head", "rms1w", ...). */
const char *config_tensor_name(const GPTConfig *cfg, int i);

/* Element count of each parameter tensor (llm.c order) and their sum. */
void config_param_sizes(const GPTConfig *cfg, size_t sizes[NUM_PARAM_TENSORS]);
size_t config_num_params(const GPTConfig *cfg);

#endif
