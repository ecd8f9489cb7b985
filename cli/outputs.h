/* cli/outputs.h — the files a training run writes outside its checkpoint
 * folder (--save, --log, --dump-grads): checked and claimed at start-up,
 * written during and at the end of the run, guarded so that a new run never
 * replaces one silently.
 *
 * Owns: Outputs, what the run holds of those files (the open --log, what
 * stood at --save and --dump-grads once claimed), and the start-up decision
 * for each file. A file that exists and is not empty belongs to someone: an
 * earlier run, or the user.
 *   - a resumed run (--resume found a save, or --resume-llmc) continues the
 *     run that wrote it: kept (--log is appended to; --save is replaced at
 *     the end, the model it held being the resumed save's or later);
 *   - a new run refuses it (exit 1, before anything is built), naming the
 *     flag and the file, unless --overwrite-outputs, which moves it to
 *     FILE.replaced_<time> once the run has started (nothing is deleted).
 * A path that exists as anything but a regular file is refused always: the
 * write at the end would fail after the whole run. An empty file holds
 * nothing to lose. Rank 0 alone decides and writes (the others learn the
 * verdict).
 *
 * Also the final --save itself: a run's weights exist only in memory until
 * it is written, so a save that fails at the end (a full disk, the folder
 * removed during the run) is written elsewhere, ./NAME.rescued_<time> or
 * $TMPDIR (else /tmp)/NAME.rescued_<time>, before the run exits. And a file
 * that appeared at --save or --dump-grads while the run trained (a second
 * run given the same path finished first, checked at its own start when the
 * path was still free) is not replaced silently: it keeps a second name,
 * PATH.replaced_<time> (a hard link; nothing copied or deleted). */
#ifndef CLI_OUTPUTS_H
#define CLI_OUTPUTS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "distributed/dist.h"
#include "model/config.h"
#include "cli/options.h"
#include "cli/run_log.h"

/* What stood at an output path once the run had claimed it: nothing (or
 * an empty file), or this file (a resumed run's --save), by identity. */
typedef struct {
    int present;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} OutputSeen;

typedef struct {
    RunLog log;           /* --log, rank 0's (cli/run_log.h); opened by the caller */
    OutputSeen save_seen; /* what --save held once claimed (rank 0) */
    OutputSeen dump_seen; /* the same for --dump-grads */
} Outputs;

/* No log open yet, nothing seen. */
void outputs_init(Outputs *out);

/* Start-up: --save's, --dump-grads' and --log's folders take a new file
 * (exit 1 naming the path). --plan and --generate write none of them;
 * --save's folder is checked all the same. Rank 0 checks. */
void outputs_check_paths(const TrainOptions *o, Dist *d);

/* Start-up: a new run's outputs never replace a file silently (above); a
 * refusal exits every rank with status 1. The trainer checks at start-up
 * (outputs_check_all: nothing moves) and moves once the run has started
 * (outputs_move_aside: --overwrite-outputs' moves happen and what stands at
 * --save and --dump-grads is recorded), so a run refused in between moves
 * nothing. resumed: --resume or --resume-llmc. Notes (kept, moved) go to
 * stdout. Collective. */
void outputs_check_all(Outputs *out, const TrainOptions *o, Dist *d, int resumed);
void outputs_move_aside(Outputs *out, const TrainOptions *o, Dist *d, int resumed);

/* One JSON line to --log (rank 0's), then frees obj. */
void outputs_log(Outputs *out, cJSON *obj);

/* --dump-grads FILE: the loss (float32), then every gradient (float32, the
 * model file's order, num_params of them), written whole or not at all
 * (base/fileio.h) by rank 0, after the file that appeared there meanwhile
 * got its second name. 0, or -1 with err. Collective. */
int outputs_dump_grads(Outputs *out, const TrainOptions *o, Dist *d, size_t num_params,
                       double loss, char *err, size_t len);

/* Write --save (rank 0; rescued elsewhere when that fails, above) after
 * checking, under several ranks, that every rank holds the same
 * parameters. 0, or -1 with err naming the path, the fault and where the
 * model went. Collective. */
int outputs_save_model(Outputs *out, const TrainOptions *o, Dist *d, const GPTConfig *cfg,
                       size_t num_params, char *err, size_t len);

/* Close the log; returns rc, or 1 when rc was 0 and a log line was lost
 * (unless --log-errors ignore; the fault is printed). */
int outputs_close_log(Outputs *out, int rc);

#endif
