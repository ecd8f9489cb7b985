/* interop/hf_folder.h — a Hugging Face model folder read directly, for
 * --init-from FOLDER (interop/model_file.c dispatches here for a folder).
 *
 * Owns: config.json of GPT2LMHeadModel, LlamaForCausalLM, Qwen2ForCausalLM
 * and Qwen3ForCausalLM as a GPTConfig (what the C model cannot compute refused
 * by name, as scripts/import_hf.py refuses it), and the weights: one
 * model.safetensors, or the shards that model.safetensors.index.json's
 * weight_map names. A safetensors file is an 8-byte little-endian header
 * length N, N bytes of JSON (name -> dtype, shape, data_offsets into the
 * data that follows; "__metadata__" skipped), then raw little-endian data;
 * F32 is taken as is, BF16 and F16 widened exactly to fp32. Tensors land in
 * config.h's parameter order: GPT-2's Conv1D weights, stored (in, out),
 * transposed to (out, in); the Llama family's q/k/v and gate/up stacked
 * into wqkv and w_gateup (scripts/hf_llama.py's table, no row permuted);
 * the padded vocabulary rows zero. A missing, misshapen or unknown tensor,
 * and a tied head that differs from the embedding, are refused by name. */
#ifndef INTEROP_HF_FOLDER_H
#define INTEROP_HF_FOLDER_H

#include <stddef.h>

#include "model/config.h"

/* 1 when path is a folder holding config.json (a Hugging Face folder). */
int hf_folder_is(const char *path);

/* config.json of the folder as cfg (llm.c's padded vocabulary). 0, or -1
 * with "<file>: <fault>" in err. */
int hf_folder_config(const char *path, GPTConfig *cfg, char *err, size_t err_len);

/* The folder read tensor by tensor (interop/hf_folder_read.c): open reads
 * config.json and every safetensors header, makes every refusal (a missing,
 * misshapen, unknown or doubled tensor, a tied head that differs from the
 * embedding, read in 1 MiB pieces), and keeps the files open; read fills
 * out[0..k) with parameters [at, at + k) of config.h's order, reading only
 * those tensors' bytes (pread), so the host holds one piece beyond out, or
 * for GPT-2's transposed Conv1D weights one such tensor (at most 4C x C
 * elements: hf_folder_scratch_bytes). 0, or -1 with "<file>: <fault>". */
typedef struct HfFolder HfFolder;
int hf_folder_open(HfFolder **h, const char *path, GPTConfig *cfg, char *err, size_t err_len);
int hf_folder_read(HfFolder *h, size_t at, float *out, size_t k, char *err, size_t err_len);
void hf_folder_close(HfFolder *h);
/* The most host memory hf_folder_read holds beyond out, bytes. */
size_t hf_folder_scratch_bytes(const GPTConfig *cfg);

/* cfg as hf_folder_config, and *params a malloc'd fp32 array of
 * config_num_params(cfg) floats (open, one read of them all, close). 0, or
 * -1 with a message in err. */
int hf_folder_load(const char *path, GPTConfig *cfg, float **params, char *err, size_t err_len);

#endif
