/* interop/hf_tokenizer.h — the tokenizer identity of a Hugging Face folder,
 * for --init-from FOLDER (interop/hf_folder.c asks it while reading
 * config.json).
 *
 * Owns: which of a folder's files are its tokenizer, in the order the
 * dataset manifest's "id" hashes them (data/dataset.h): tokenizer.json;
 * else vocab.json then merges.txt (GPT-2's encoder.json and vocab.bpe under
 * Hugging Face's names, so a GPT-2 folder gets GPT-2's identity); else the
 * folder's one *.tiktoken rank file; else none (0). A config.json listing
 * "tokenizer" under llmc_defaults (scripts/export_hf.py writes it for a model
 * file that recorded none) gives 0 too, so model -> folder -> model keeps
 * header words 28/29 byte for byte. scripts/hf_tokenizer.py is the same
 * rule for scripts/import_hf.py. */
#ifndef INTEROP_HF_TOKENIZER_H
#define INTEROP_HF_TOKENIZER_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* *id: the identity of folder's tokenizer files (config: its parsed
 * config.json); 0 when it has none. 0, or -1 with "<file>: <fault>" in err
 * (a tokenizer file that cannot be read). */
int hf_tokenizer_folder_id(const char *folder, const cJSON *config, uint64_t *id, char *err,
                           size_t err_len);

#endif
