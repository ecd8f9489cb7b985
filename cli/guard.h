/* cli/guard.h — what the command line must agree with before training:
 * the other ranks, and a save being resumed.
 *
 * Owns: the start-up comparison of every rank's flags (each flag that must
 * match is hashed from its value as text, the hashes compared over ranks,
 * the differing values gathered to rank 0 for one message), the same for
 * the data fingerprint, the resumed step and the backend opened; the shape flags given against
 * the shape of a save, the Llama family's flags against a model file's; the exit when only some ranks found an error; and
 * the command line that returns to a save. */
#ifndef CLI_GUARD_H
#define CLI_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "distributed/dist.h"
#include "model/config.h"
#include "ckpt/session.h"
#include "cli/options.h"

/* Every rank's flags against the others'. On any difference every rank
 * exits with status 2, rank 0 printing one message that names each flag
 * and its values by rank. Collective; the first one after dist_init. */
void guard_check_flags(const TrainOptions *o, Dist *d);

/* An error some ranks may have found alone, from a file each rank reads
 * itself (--init-from's header: a node may hold its own copy). When every
 * rank has it (bad), rank 0 says it once and all exit with code; when only
 * some do, those end the job with their own message (alone in an orderly
 * exit they would wait, silent, in MPI_Finalize until the watchdog). A
 * no-op when no rank has it. Collective. */
void guard_exit_if_any(Dist *d, int bad, int code, const char *msg);

/* Every rank's data fingerprint and resumed step against rank 0's; a
 * difference ends every rank with status 1 and one message. Collective. */
void guard_check_data(Dist *d, uint64_t fingerprint);
void guard_check_start_step(Dist *d, int step);

/* After the backend opened: every rank's backend and dtype against the
 * others' (--device auto falls back to the cpu where no CUDA device is
 * visible; the ranks would then open NCCL and MPI collectives against each
 * other and hang). A difference ends every rank with status 1, rank 0
 * naming each rank's backend. Collective. */
void guard_check_backend(Dist *d, const Backend *be);

/* Shape flags given on the command line (--model, --layers, --channels,
 * --heads, --vocab, --max-seq-len) against the shape of the save being
 * resumed: -1 naming every difference with both values, else 0. */
int guard_check_resume_shape(const TrainOptions *o, const GPTConfig *saved, const char *save_dir,
                             char *err, size_t err_len);

/* The Llama family's flags given with a model file or a save (--kv-heads,
 * --ffn, --lm-head, --rope-theta, --qkv-bias, --qk-norm, --norm-eps and
 * --rope-scaling's four) against its header (cfg, read from `from`): -1
 * with one line naming the first flag that contradicts it and both values,
 * else 0. A GPT-2 cfg: 0. */
int guard_check_family_flags(const TrainOptions *o, const GPTConfig *c, const char *from,
                             char *err, size_t len);

/* This process's command line with --resume[=...] and
 * --overwrite-checkpoints replaced by --resume=step_dir, quoted for a POSIX
 * shell: the command that returns to that save. */
void guard_resume_command(int argc, char **argv, const char *step_dir, char *out, size_t len);

/* After a non-finite abort at `step` (bad_steps in a row): on stderr, the
 * rollback point, which --keep spared, and the command that returns to it;
 * or that there is none. */
void guard_print_rollback(const RunSession *s, int argc, char **argv, int step, int bad_steps);

#endif
