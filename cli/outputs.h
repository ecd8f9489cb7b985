/* cli/outputs.h — the files a training run writes outside its checkpoint
 * folder (--save, --log, --dump-grads), guarded so that a new run never
 * replaces one silently.
 *
 * Owns: the start-up decision for each such file. A file that exists and
 * is not empty belongs to someone: an earlier run, or the user.
 *   - a resumed run (--resume found a save, or --resume-llmc) continues the
 *     run that wrote it: kept (--log is appended to; --save is replaced at
 *     the end, the model it held being the resumed save's or later);
 *   - a new run refuses it (exit 1, before anything is built), naming the
 *     flag and the file, unless --overwrite-outputs, which moves it to
 *     FILE.replaced_<time> once the run has started (nothing is deleted).
 * A path that exists as anything but a regular file is refused always: the
 * write at the end would fail after the whole run. An empty file holds
 * nothing to lose. Rank 0 alone calls this (it alone writes these files).
 *
 * Also the final --save itself: a run's weights exist only in memory until
 * it is written, so a save that fails at the end (a full disk, the folder
 * removed during the run) is written elsewhere before the run exits. And
 * a file that appeared at --save while the run trained (a second run given
 * the same --save finished first, checked at its own start when the path
 * was still free) is not replaced silently: it keeps a second name. */
#ifndef RUN_OUTPUTS_H
#define RUN_OUTPUTS_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "model/config.h"

typedef struct {
    const char *flag; /* "--save" */
    const char *path; /* NULL: the flag was not given */
} RunOutput;

/* Check each output; with move, also move aside (overwrite) or note (a
 * resumed run's) those that exist. The trainer checks at start-up and moves
 * once the run has started, so a run refused in between moves nothing.
 * Notes (kept, moved) go to `notes`. Returns 0, or -1 with err naming the
 * flag and file. */
int outputs_claim(const RunOutput *outs, int n, int resumed, int overwrite, int move,
                  FILE *notes, char *err, size_t err_len);

/* What stood at an output path once the run had claimed it: nothing (or
 * an empty file), or this file (a resumed run's --save), by identity. */
typedef struct {
    int present;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} OutputSeen;

/* Record what stands at path now into seen. */
void outputs_note(const char *path, OutputSeen *seen);

/* Before the run writes `path` (given as `flag`): a non-empty file there
 * that is not the one `seen` recorded (another run given the same path
 * finished first) gets a second name, path.replaced_<time> (a hard link;
 * nothing copied or deleted), said on `notes`. Returns 0 when path may be
 * written; -1 when the file could not be given a second name (it is left
 * as it is), with the reason in err. */
int outputs_set_aside(const char *flag, const char *path, const OutputSeen *seen, FILE *notes,
                      char *err, size_t err_len);

/* Write the model file `path` (--save; version MODEL_FILE_FP32 or _BF16).
 * A non-empty file at path that is not the one `seen` recorded (NULL: no
 * check) first gets a second name, path.replaced_<time> (a hard link;
 * nothing copied or deleted), said on `notes`; where it cannot, the model
 * is rescued as below instead. When the write fails, the same file goes to
 * the first of ./NAME.rescued_<time> and $TMPDIR (else
 * /tmp)/NAME.rescued_<time> that takes it. Returns 0 when path was written;
 * else -1 with err naming path and the fault, and where the model went (or
 * that every place failed, and why). */
int outputs_save_model(const char *path, const GPTConfig *cfg, const float *params, int version,
                       const OutputSeen *seen, FILE *notes, char *err, size_t err_len);

#endif
