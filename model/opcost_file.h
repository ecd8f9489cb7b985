/* model/opcost_file.h — measured op costs on disk: the cache of measured
 * costs and --op-costs FILE.
 *
 * Owns: the file format, the cache folder and a key's file name in it,
 * reading with every field checked, and writing crash-safely
 * (base/fileio.h). A file is JSON:
 *   {"format": "train_gpt op costs", "version": 3,
 *    "device": "cpu: AMD EPYC 7B13, 2 threads", "dtype": "fp32",
 *    "shape": {"layers": 12, "channels": 64, "heads": 4, "seq_len": 128,
 *              "batch": 4, "vocab": 256, "padded_vocab": 256,
 *              "loss_chunk": 512, "world_size": 1, "zero": 0},
 *    "reps": 25,   (timed calls of each op)
 *    "ops_ns": {"ln1_fwd": 20113, ... one integer per opcost_op_name: the
 *               block description's op names, then "encoder_fwd" ...},
 *    "copy": {"latency_ns": 41000, "bytes_per_s": 5200000000}}
 *      (the copy engine, opcost.h; 0 and 0 where the backend has none)
 * A family other than GPT-2 adds "arch" ("llama") and, in "shape", its
 * "kv_heads" and "ffn"; a file without "arch" is GPT-2's. A file of one
 * family is refused for a run of another (it times other ops), and the
 * cache keys the families apart.
 * Version 2 files are read for GPT-2 (its op names were already its
 * block's); version 2 files of another family, which timed its ops in
 * GPT-2's slots under GPT-2's names, and version 1 files (no "copy") are
 * refused by version: a cache entry is then measured again and rewritten.
 * Every field named is required; others are ignored. A cache file is
 * named op_costs_<16 hex digits>.json, a hash of the device and shape. */
#ifndef MODEL_OPCOST_FILE_H
#define MODEL_OPCOST_FILE_H

#include <stddef.h>

#include "model/opcost.h"
#include "model/planner.h"

#define OPCOST_FILE_MAX_BYTES (1 << 20)
#define OPCOST_FILE_VERSION 3
#define OPCOST_FILE_VERSION_MIN 2 /* GPT-2's files only */

/* The cache folder: $TRAIN_GPT_CACHE_DIR, else $XDG_CACHE_HOME/train_gpt,
 * else $HOME/.cache/train_gpt. Returns 0, or -1 when none can be named. */
int opcost_cache_dir(char *buf, size_t len);
/* dir/op_costs_<hash>.json for this device and shape. */
void opcost_cache_file(const char *dir, const char *device, const PlanInput *in, char *buf,
                       size_t len);

/* Read costs measured at in's shape and dtype (loss chunk resolved as the
 * planner does) into *out (unit ns); the device they were measured on into
 * device. Returns 0; -1 with "<path>: <fault>" in err for an unreadable,
 * malformed or incomplete file; -2 with err naming the first difference
 * when the file is for another shape or dtype. */
int opcost_file_read(const char *path, const PlanInput *in, char *device, size_t device_len,
                     OpCosts *out, char *err, size_t err_len);
/* Write them (the folder is created). Returns 0, or -1 with err (also when
 * oc's block is not in's: its op names would be another block's). */
int opcost_file_write(const char *path, const char *device, const PlanInput *in,
                      const OpCosts *oc, char *err, size_t err_len);

#endif
