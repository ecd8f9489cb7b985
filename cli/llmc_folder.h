/* cli/llmc_folder.h — the trainer's side of llm.c's checkpoints
 * (--resume-llmc, --save-checkpoint-llmc): when they are read and written;
 * the format and the mapping are interop/llmc_ckpt.h's, the sorting of a
 * folder's files interop/llmc_claim.h's.
 *
 * Owns: LlmcFolder, the run's llm.c state: --resume-llmc's files, and the
 * export folder's lock (held to exit), whether this run made the folder,
 * and the step exported last. One run at a time writes a folder, as with
 * --checkpoint-dir; a step the folder has already (the resumed one) is not
 * written again. --plan and --generate write no checkpoint and leave the
 * folder alone. */
#ifndef CLI_LLMC_FOLDER_H
#define CLI_LLMC_FOLDER_H

#include <stddef.h>

#include "data/loader.h"
#include "distributed/dist.h"
#include "model/gpt.h"
#include "model/sample.h"
#include "interop/llmc_ckpt.h"
#include "ckpt/ownership.h"
#include "cli/options.h"

typedef struct {
    LlmcFiles from; /* --resume-llmc's files (step -1: none) */
    int saved;      /* the last export's step, or the resumed one's when the export folder
                     * has it already; -1 none */
    OwnLock lock;   /* --save-checkpoint-llmc's folder, held to exit (rank 0) */
    int made;       /* that folder was absent: this run made it (rank 0) */
} LlmcFolder;

/* At start-up, every rank: find --resume-llmc's files; rank 0, training
 * (not --plan, --generate): make --save-checkpoint-llmc's folder and sort
 * out the llm.c files already in it, telling every rank whether the
 * resumed step is there already. ckpt_dir is --checkpoint-dir's folder
 * ("" none: a folder given to both flags is locked by it), resumed_step
 * the native resume's step (-1 none). Exit 1 naming the path on a fault.
 * Collective; needs the native resume located (session_locate) first. */
void llmc_folder_start(LlmcFolder *f, const TrainOptions *o, Dist *d, const char *ckpt_dir,
                       int resumed_step);

/* A run stopped during start-up: the --save-checkpoint-llmc folder
 * llmc_folder_start made (nothing but its lock in it) is removed. Rank 0. */
void llmc_folder_abandon(LlmcFolder *f, const TrainOptions *o, const Dist *d);

/* Once the run has started: move the files llmc_folder_start only checked
 * (another run's under --overwrite-checkpoints, the steps after the resumed
 * one) aside, so a run refused before that moves nothing. Arguments as
 * llmc_folder_start's. Exit 1 on a fault. Rank 0 works. */
void llmc_folder_settle(LlmcFolder *f, const TrainOptions *o, Dist *d, const char *ckpt_dir,
                        int resumed_step);

/* An export is due after this step (--save-every, the last step). */
int llmc_folder_due(const LlmcFolder *f, const TrainOptions *o, int step);

/* Write step's llm.c checkpoint of the model, the train loader's position
 * and the sampler's RNG (no-op without the flag, or when written already).
 * Collective. */
int llmc_folder_export(LlmcFolder *f, const TrainOptions *o, int step, GPT *g, Dist *d,
                       const Loader *train, const SampleRng *rng, char *err, size_t len);

/* Load --resume-llmc's checkpoint into the built model, train loader and
 * sampler RNG; *start_step is its step. 0, or -1 with err (a step beyond
 * --steps too). */
int llmc_folder_resume(LlmcFolder *f, const TrainOptions *o, GPT *g, Dist *d, Loader *train,
                       SampleRng *rng, int *start_step, char *err, size_t len);

#endif
