/* run/outputs.h — the files a training run writes outside its checkpoint
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
 *     FILE.replaced_<time> now (nothing is deleted).
 * A path that exists as anything but a regular file is refused always: the
 * write at the end would fail after the whole run. An empty file holds
 * nothing to lose. Rank 0 alone calls this (it alone writes these files). */
#ifndef RUN_OUTPUTS_H
#define RUN_OUTPUTS_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    const char *flag; /* "--save" */
    const char *path; /* NULL: the flag was not given */
} RunOutput;

/* Check (and with overwrite, move aside) each output. Notes (kept, moved)
 * go to `notes`. Returns 0, or -1 with err naming the flag and file. */
int outputs_claim(const RunOutput *outs, int n, int resumed, int overwrite, FILE *notes,
                  char *err, size_t err_len);

#endif
