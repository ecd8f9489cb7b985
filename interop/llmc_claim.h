/* interop/llmc_claim.h — whose llm.c checkpoint files an export folder
 * (--save-checkpoint-llmc DIR) holds, sorted out before a training run
 * writes its own there, so that no export overwrites a file silently.
 *
 * Owns: the rule for the llm.c files already in DIR: model_%08d.bin,
 * state_%08d_%05d.bin (any rank) and DONE_%08d (llmc_ckpt.h). They carry
 * no run identity, so the rule goes by step where the native folder's
 * (ownership.h) goes by run id:
 *   - a new run (nothing resumed) refuses a folder holding any of them,
 *     naming the newest, as a new run refuses another run's saves; with
 *     --overwrite-checkpoints they are moved into DIR/replaced_<time>/;
 *   - a run resumed at step R (--resume, --resume-llmc) keeps the files of
 *     the steps up to R: its history, and the one a --resume-llmc may be
 *     reading. Step R, when any file of it is there, is not written again
 *     (complete, it is the same state; incomplete, it may be llm.c's own
 *     files, in a precision this run's export would not reproduce). The
 *     files of later steps, which the run would write over, are moved into
 *     DIR/abandoned/, as the native folder's newer saves are.
 * Nothing is deleted; every move is printed. Rank 0 alone calls it. */
#ifndef INTEROP_LLMC_CLAIM_H
#define INTEROP_LLMC_CLAIM_H

#include <stddef.h>

/* Sort out dir (missing: nothing to do) for a run resumed at resumed_step
 * (-1: a new run). overwrite: --overwrite-checkpoints. move 0: only check
 * (another run's files refused); move 1: also move files aside, as
 * own_claim (ckpt/ownership.h). *kept_step is resumed_step when a file of
 * that step is in dir (not to be exported again), else -1. Returns 0, or
 * -1 with "<dir or file>: <fault>" in err (another run's files, a failed
 * move). */
int llmc_claim(const char *dir, int resumed_step, int overwrite, int move, int *kept_step,
               char *err, size_t err_len);

#endif
