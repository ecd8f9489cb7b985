/* interop/llmc_ckpt.h — moving a run to llm.c and back: llm.c's checkpoint
 * trio for one step,
 *   DIR/model_%08d.bin        the model file (interop/model_file.h: version
 *                             3 fp32, or 5 bf16)
 *   DIR/state_%08d_%05d.bin   each rank's optimizer state and data position
 *                             (llmc_state.h), by step and rank
 *   DIR/DONE_%08d             empty, written last: the step is complete
 * written from a live run (llmc_ckpt_export) and read into one
 * (llmc_ckpt_import).
 *
 * Owns: the mapping between a run here and llm.c's state.
 *   - step: llm.c's step is the optimizer updates completed, and its next
 *     AdamW update uses t = step+1. Here that is the run's step, and AdamW's
 *     count (g->adam_t) is set to it on import; an export of a run that
 *     skipped non-finite steps (adam_t < step) says so, as llm.c will count
 *     them in its bias correction.
 *   - parameters: the fp32 parameters are written as the master weights
 *     (header [4] = 1) whatever the model file's precision, so a bf16
 *     export loses nothing; on import the master weights are taken when
 *     present, else the model file's values (bf16 widened for version 5).
 *   - data: both loaders read step s of rank r as B*T+1 tokens at token
 *     offset (s*ranks + r)*B*T of the current shard, with (n-1)/(ranks*B*T)
 *     steps in a shard of n tokens, shards in sorted glob order, wrapping
 *     (data/shard.h). So current_shard_idx is the loader's shard_pos and
 *     current_sample_idx its window_pos, exactly, provided that no shard
 *     was skipped as too short (llm.c refuses such a glob) and shuffling is
 *     off (llm.c's shuffle is not this project's: refused both ways). The
 *     state file does not record B, T or the glob: an import must be given
 *     the llm.c run's -b, -t and -i as --batch, --seq-len and --train-data.
 *   - rng_state: llm.c's stochastic-rounding RNG has no counterpart here.
 *     Exports write the text sampler's RNG state into both rng fields
 *     (without --sample-every, llm.c's own starting value 13371337 + rank:
 *     never zero, which llm.c's xorshift needs); imports take rng_state
 *     back as the sampler's state when it is non-zero.
 *   - ZeRO-1: llm.c shards m, v and the master weights in equal slices;
 *     this project's --zero 1 slices differ. Only unsharded optimizer
 *     state (every rank holding all of it) is written or read; a slice is
 *     refused, naming the file.
 * Every function returns 0, or -1 with "<path>: <fault>" in err. */
#ifndef INTEROP_LLMC_CKPT_H
#define INTEROP_LLMC_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "data/loader.h"
#include "distributed/dist.h"
#include "model/gpt.h"
#include "model/sample.h"

typedef struct {
    char dir[4096];
    char model[4200], state[4200];
    int step;
    int done; /* DONE_%08d exists */
} LlmcFiles;

/* llm.c's checkpoint file names (no folder): model_%08d.bin,
 * state_%08d_%05d.bin (step, rank) and DONE_%08d. */
typedef enum { LLMC_NAME_NONE = 0, LLMC_NAME_MODEL, LLMC_NAME_STATE, LLMC_NAME_DONE } LlmcName;

/* Which of llm.c's names `name` is, with its step (and rank, for a state
 * file; 0 otherwise); LLMC_NAME_NONE for any other name. */
LlmcName llmc_name_parse(const char *name, int *step, int *rank);

/* The checkpoint an import reads, for this rank: PATH is a folder (its
 * newest step with DONE_%08d whose model file and this rank's state file
 * exist; newer DONE steps missing a file are skipped, with a note on
 * stderr) or a state file named state_%08d_%05d.bin (that step; this
 * rank's file of it, and its model file, must exist). */
int llmc_ckpt_locate(const char *path, int rank, LlmcFiles *f, char *err, size_t err_len);

/* Write the trio for `step` into dir (made if missing): rank 0 the model
 * file (model_version: 3 or 5) after gathering the parameters, every rank
 * its state file, then rank 0 DONE_%08d once all are written (a DONE of
 * an earlier export of this step is removed first). The data position is
 * the loader's. Collective. */
int llmc_ckpt_export(const char *dir, int step, int model_version, GPT *g, Dist *d,
                     const Loader *ld, const SampleRng *rng, char *err, size_t err_len);

/* Load f into a model and a train loader built with this run's flags: the
 * parameters (model shape must be the model's), AdamW m and v, the step
 * (*step and g->adam_t), the data position and the sampler's RNG. Refuses
 * (naming the file) another process count or rank, shuffling, a ZeRO-1
 * slice, sizes that are not the model's, non-finite values, and a data
 * position outside the train data. */
int llmc_ckpt_import(const LlmcFiles *f, GPT *g, const Dist *d, Loader *ld, SampleRng *rng,
                     int *step, char *err, size_t err_len);

#endif
