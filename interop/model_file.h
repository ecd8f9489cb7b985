/* interop/model_file.h — llm.c's model checkpoint format.
 *
 * Owns: reading and writing model files. Layout: 256 int32 header
 * [0] magic 20240326, [1] version (3 = fp32, 5 = bf16), [2] maxT, [3] V,
 * [4] L, [5] NH, [6] C, [7] padded V, rest 0; then every parameter in
 * llm.c's order (config.h), fp32 or bf16. File size must be exactly
 * 1024 + num_params * (4 or 2). This project's extension, in words llm.c
 * leaves 0 (a GPT-2 file keeps them 0, so it stays llm.c's): [16] the
 * family (ARCH_*, 1 = llama), and for llama [17] KV heads, [18] FFN width,
 * [19] untied head, [20] RoPE theta and [21] RMSNorm eps (float bits; 0 =
 * default), [22] qkv bias, [23] qk-norm (0 or 1), [24] RoPE scaling factor,
 * [25] its low and [26] high frequency factors (float bits; factor 0 = no
 * scaling) and [27] its original positions; parameters then in the Llama
 * slots' order (config.h). llm.c
 * itself reads such a file as a GPT-2 whose size does not match. For
 * either family, [28] and [29] hold the low and high 32 bits of the
 * tokenizer identity (GPTConfig.tokenizer_id; data/dataset.h), 0 when
 * unknown: llm.c ignores them, so a GPT-2 file trained on ./tokenize's
 * shards still loads there (it differs from llm.c's own only in them).
 * For llama, [30] the head size when given (--head-dim; 0 = C / NH).
 *
 * A path that is a folder holding config.json is read as a Hugging Face
 * folder instead (interop/hf_folder.h: GPT-2, Llama, Qwen2, Qwen3;
 * safetensors, sharded or not), as if it were an fp32 model file. */
#ifndef INTEROP_MODEL_FILE_H
#define INTEROP_MODEL_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/config.h"

#define MODEL_FILE_MAGIC 20240326
#define MODEL_FILE_FP32 3
#define MODEL_FILE_BF16 5
#define MODEL_FILE_ARCH 16 /* first word of the extension */
#define MODEL_FILE_TOKENIZER 28 /* the tokenizer identity: [28] low, [29] high */
#define MODEL_FILE_HEAD_DIM 30  /* llama: the head size, 0 = C / NH */

/* Read and validate the header (and the file size against it). On success
 * fills cfg and *version and returns 0; else -1 with "<path>: <fault>". */
int model_file_read_header(const char *path, GPTConfig *cfg, int *version, char *err,
                           size_t err_len);

/* Load a version 3 or 5 file. *params receives a malloc'd fp32 array of
 * config_num_params(cfg) floats (bf16 widened exactly). A file holding any
 * NaN or Inf is refused, naming each tensor that has some and how many.
 * Read in 64 MiB pieces; a stop asked for (base/stop.h) between two fails it. */
int model_file_load(const char *path, GPTConfig *cfg, float **params, char *err, size_t err_len);

/* The same load a piece at a time, for start-up to upload the file
 * without a host copy of the whole (gpt_set_params_stream): open reads
 * and checks the header (filling r->cfg); read_next reads the next k
 * parameters as fp32 into out (0; 1 for a stop; -1 with err for a fault),
 * and the one that reads the last refuses a file with any NaN or Inf, as
 * model_file_load does. */
typedef struct {
    FILE *f;
    const char *path;
    GPTConfig cfg;
    int version;
    size_t at; /* parameters read so far */
    size_t bad[NUM_PARAM_TENSORS], first[NUM_PARAM_TENSORS]; /* non-finite, per tensor */
    struct HfFolder *hf; /* a Hugging Face folder, read tensor by tensor (hf_folder.h) */
} ModelFileReader;
int model_file_open_read(ModelFileReader *r, const char *path, char *err, size_t err_len);
int model_file_read_next(ModelFileReader *r, float *out, size_t k, char *err, size_t err_len);
void model_file_close_read(ModelFileReader *r);

/* Write version 3 (fp32), crash-safely (base/fileio.h: "<path>.tmp", fsync,
 * rename, fsync the folder). */
int model_file_save(const char *path, const GPTConfig *cfg, const float *params, char *err,
                    size_t err_len);

/* Write version 3 (fp32) or 5 (bf16: each parameter rounded to nearest,
 * ties to even, as llm.c's bf16 trainer keeps them; a NaN stays a NaN),
 * crash-safely. llm.c's default CUDA trainer (bf16) loads version 5 only. */
int model_file_save_as(const char *path, const GPTConfig *cfg, const float *params, int version,
                       char *err, size_t err_len);

/* fp32 -> bf16 bits, round to nearest even. */
uint16_t model_file_bf16(float x);

#endif
