/* interop/llmc_claim.c — see llmc_claim.h. */
#include "llmc_claim.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/safefile.h"
#include "llmc_ckpt.h"

typedef struct {
    char name[40]; /* the longest, state_%08d_%05d.bin, is 24 */
    int step;
    int done; /* DONE_%08d */
} LlmcEntry;

/* By step; within a step DONE first, so a move cut short never leaves a
 * DONE beside a step whose files are gone. */
static int cmp_entry(const void *a, const void *b)
{
    const LlmcEntry *x = a, *y = b;
    if (x->step != y->step) return (x->step > y->step) - (x->step < y->step);
    if (x->done != y->done) return y->done - x->done;
    return strcmp(x->name, y->name);
}

/* dir's llm.c checkpoint files, sorted; 0, or -1 with err. A missing
 * folder holds none. */
static int list_files(const char *dir, LlmcEntry **out, int *n, char *err, size_t err_len)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT) return 0;
        io_err(err, err_len, "--save-checkpoint-llmc %s: cannot list: %s", dir, strerror(errno));
        return -1;
    }
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int step, rank;
        LlmcName kind = llmc_name_parse(e->d_name, &step, &rank);
        if (kind == LLMC_NAME_NONE) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            LlmcEntry *grown = realloc(*out, sizeof(LlmcEntry) * (size_t)cap);
            if (!grown) {
                closedir(d);
                io_err(err, err_len, "--save-checkpoint-llmc %s: out of host memory", dir);
                return -1;
            }
            *out = grown;
        }
        LlmcEntry *f = &(*out)[(*n)++];
        snprintf(f->name, sizeof f->name, "%.39s", e->d_name); /* <= 24 chars */
        f->step = step;
        f->done = kind == LLMC_NAME_DONE;
    }
    closedir(d);
    if (*n > 1) qsort(*out, (size_t)*n, sizeof(LlmcEntry), cmp_entry);
    return 0;
}

/* Move f[0..n) into dir/sub/ (made; name.2, .3, ... when taken), fsync
 * both folders, and say so. */
static int move_files(const char *dir, const char *sub, const LlmcEntry *f, int n,
                      const char *what, char *err, size_t err_len)
{
    char to[4300], src[4400], dst[4400];
    for (int i = 0; i < n; i++) { /* a link is not this run's to move: none is moved */
        io_err(src, sizeof src, "%s/%s", dir, f[i].name);
        const char *refusal = sf_replace_refusal(src);
        if (refusal)
            return io_err(err, err_len, "--save-checkpoint-llmc: %s: %s; it is not moved, nor "
                          "anything else (remove the link)", src, refusal), -1;
    }
    io_err(to, sizeof to, "%s/%s", dir, sub);
    if (io_mkdirs(to, err, err_len) != 0) return -1;
    if (sf_is_link(to)) /* a folder of this run's, never one a link names */
        return io_err(err, err_len, "--save-checkpoint-llmc: %s: is a symbolic link; the files "
                      "are not moved through one (remove the link)", to), -1;
    for (int i = 0; i < n; i++) {
        io_err(src, sizeof src, "%s/%s", dir, f[i].name);
        io_err(dst, sizeof dst, "%s/%s", to, f[i].name);
        for (int k = 2; access(dst, F_OK) == 0 && k < 1000; k++)
            io_err(dst, sizeof dst, "%s/%s.%d", to, f[i].name, k);
        if (rename(src, dst) != 0) {
            io_err(err, err_len, "--save-checkpoint-llmc: cannot move %s to %s: %s", src, dst,
                   strerror(errno));
            return -1;
        }
    }
    if (io_sync_dir(to, err, err_len) != 0 || io_sync_dir(dir, err, err_len) != 0) return -1;
    printf("note: --save-checkpoint-llmc: moved %s (%d file%s, step%s %d to %d) into %s/ "
           "(nothing deleted)\n", what, n, n == 1 ? "" : "s", f[0].step == f[n - 1].step ? "" : "s",
           f[0].step, f[n - 1].step, to);
    fflush(stdout);
    return 0;
}

/* A new run: another run's files are refused, or moved aside. */
static int claim_new(const char *dir, const LlmcEntry *f, int n, int overwrite, int move,
                     char *err, size_t err_len)
{
    if (n == 0) return 0;
    if (!overwrite) {
        const LlmcEntry *newest = &f[n - 1];
        for (int i = n - 1; i >= 0 && f[i].step == newest->step; i--)
            if (f[i].done) newest = &f[i];
        io_err(err, err_len, "--save-checkpoint-llmc %s holds %d llm.c checkpoint file%s of "
               "another run (newest %s/%s): this run's exports would overwrite them or mix with "
               "them. Continue that run with --resume-llmc %s, give this run another "
               "--save-checkpoint-llmc folder, or pass --overwrite-checkpoints to move them "
               "into %s/replaced_<time>/ (nothing is deleted)", dir, n, n == 1 ? "" : "s", dir,
               newest->name, dir, dir);
        return -1;
    }
    if (!move) return 0;
    char sub[64], stamp[32];
    io_stamp(stamp, sizeof stamp);
    snprintf(sub, sizeof sub, "replaced_%s", stamp);
    return move_files(dir, sub, f, n, "--overwrite-checkpoints: the llm.c files of another run",
                      err, err_len);
}

int llmc_claim(const char *dir, int resumed_step, int overwrite, int move, int *kept_step,
               char *err, size_t err_len)
{
    LlmcEntry *f;
    int n, rc = 0;
    *kept_step = -1;
    if (list_files(dir, &f, &n, err, err_len) != 0) return -1;
    if (resumed_step < 0) {
        rc = claim_new(dir, f, n, overwrite, move, err, err_len);
    } else {
        int first_newer = n;
        for (int i = n - 1; i >= 0 && f[i].step > resumed_step; i--) first_newer = i;
        for (int i = 0; i < first_newer; i++)
            if (f[i].step == resumed_step) *kept_step = resumed_step;
        if (move && first_newer < n) {
            char what[160];
            snprintf(what, sizeof what, "the llm.c files of the steps after %d, which this run "
                     "writes again,", resumed_step);
            rc = move_files(dir, "abandoned", f + first_newer, n - first_newer, what, err,
                            err_len);
        }
    }
    free(f);
    return rc;
}
