/* data/dataset_stage.c — writing a dataset into a staging folder and
 * switching it in for the old one (the protocol and its guarantees are in
 * dataset.h). */
#include "dataset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/safefile.h"

#define STAGE_TAG ".tokenize-"

/* Remove the staging folder `path` (in the output folder `dir`): its
 * files, then the folder, relative to dir and never through a link (base/
 * safefile.h). Anything else of that name that is not a folder — a link
 * planted there — is unlinked itself, never followed. 0 when gone. */
static int remove_folder(const char *dir, const char *path)
{
    char why[4800];
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int dfd = sf_open_dir(dir, 1, why, sizeof why);
    if (dfd < 0) return -1;
    struct stat st;
    int rc;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
        rc = unlinkat(dfd, name, 0) == 0 || errno == ENOENT ? 0 : -1;
    else
        rc = sf_remove_dir(dfd, name, path, NULL, NULL, why, sizeof why);
    close(dfd);
    return rc;
}

/* "<base>.tokenize-<digits>.tmp": a staging folder of this prefix. */
static int is_stage_name(const char *name, const char *base)
{
    size_t b = strlen(base), t = strlen(STAGE_TAG), n = strlen(name);
    if (n < b + t + 5 || strncmp(name, base, b) != 0 || strncmp(name + b, STAGE_TAG, t) != 0 ||
        strcmp(name + n - 4, ".tmp") != 0)
        return 0;
    for (const char *p = name + b + t; p < name + n - 4; p++)
        if (*p < '0' || *p > '9') return 0;
    return 1;
}

/* "<base>_val_<digits>.bin" or "<base>_train_<digits>.bin": a shard of this prefix. */
static int is_shard_name(const char *name, const char *base)
{
    size_t b = strlen(base), n = strlen(name);
    if (n <= b || strncmp(name, base, b) != 0 || n < 4 || strcmp(name + n - 4, ".bin") != 0)
        return 0;
    const char *p = name + b;
    if (strncmp(p, "_val_", 5) == 0) p += 5;
    else if (strncmp(p, "_train_", 7) == 0) p += 7;
    else return 0;
    if (p == name + n - 4) return 0;
    for (; p < name + n - 4; p++)
        if (*p < '0' || *p > '9') return 0;
    return 1;
}

/* Other staging folders of this prefix: a locked one belongs to a live
 * run (refused); an unlocked one to a run that died (removed, noted). */
static int clear_leftovers(DatasetStage *s, char *err, size_t err_len)
{
    DIR *d = opendir(s->dir);
    if (!d) {
        io_err(err, err_len, "%s: output folder: %s", s->dir, strerror(errno));
        return -1;
    }
    const char *own = strrchr(s->stage, '/') ? strrchr(s->stage, '/') + 1 : s->stage;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        if (!is_stage_name(e->d_name, s->base) || strcmp(e->d_name, own) == 0) continue;
        char p[4600];
        io_err(p, sizeof p, "%s/%s", s->dir, e->d_name);
        /* a link of that name is nobody's staging folder: left alone */
        int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) continue; /* not a folder, or gone already */
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            io_err(err, err_len, "%s: another ./tokenize is writing this dataset now (its "
                   "staging folder %s is locked); wait for it to finish", s->prefix, p);
            rc = -1;
        } else {
            size_t used = strlen(s->notes);
            int gone = remove_folder(s->dir, p) == 0;
            io_err(s->notes + used, sizeof s->notes - used, "note: %s %s, left by an "
                   "interrupted ./tokenize\n", gone ? "removed" : "could not remove", p);
        }
        close(fd);
    }
    closedir(d);
    return rc;
}

/* Whether `name` in the prefix's folder is a file of a dataset there: the
 * manifest (*is_manifest) or a shard name, and a regular file (a folder or
 * link with such a name is no dataset's; step 1 refuses it where the new
 * dataset needs the name). *st gets its stat. */
static int dataset_file(const DatasetStage *s, const char *name, int *is_manifest,
                        struct stat *st)
{
    char manifest[DATASET_NAME_MAX + 32], p[4600];
    snprintf(manifest, sizeof manifest, "%s" DATASET_MANIFEST_SUFFIX, s->base);
    *is_manifest = strcmp(name, manifest) == 0;
    if (!*is_manifest && !is_shard_name(name, s->base)) return 0;
    io_err(p, sizeof p, "%s/%s", s->dir, name);
    return lstat(p, st) == 0 && S_ISREG(st->st_mode);
}

/* What the prefix holds now: its manifest (and, when it parses, the id of
 * the dataset it describes) and its shards. */
static int survey_old(DatasetStage *s, char *err, size_t err_len)
{
    DIR *d = opendir(s->dir);
    if (!d) {
        io_err(err, err_len, "%s: cannot list the output folder: %s", s->dir, strerror(errno));
        return -1;
    }
    s->old_shards = s->old_manifest = 0;
    s->old_bytes = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int is_manifest;
        struct stat st;
        if (!dataset_file(s, e->d_name, &is_manifest, &st)) continue;
        if (is_manifest) s->old_manifest = 1;
        else s->old_shards++;
        s->old_bytes += (unsigned long long)st.st_size;
    }
    closedir(d);
    s->old_id = 0;
    if (s->old_manifest) {
        DatasetManifest m;
        char p[4600], why[512];
        io_err(p, sizeof p, "%s/%s" DATASET_MANIFEST_SUFFIX, s->dir, s->base);
        if (dataset_manifest_read(p, &m, why, sizeof why) == 0) {
            s->old_id = m.id;
            dataset_manifest_free(&m);
        }
    }
    return 0;
}

/* A new dataset never replaces another unasked: the old one may be the
 * only copy of hours of tokenizing, or llm.c's shards downloaded beside it. */
static int refuse_old(const DatasetStage *s, char *err, size_t err_len)
{
    char what[DATASET_NAME_MAX + 160];
    if (s->old_manifest && s->old_id)
        snprintf(what, sizeof what, "a dataset (%s" DATASET_MANIFEST_SUFFIX ", id %016llx, and "
                 "%d shard%s)", s->base, (unsigned long long)s->old_id, s->old_shards,
                 s->old_shards == 1 ? "" : "s");
    else if (s->old_manifest)
        snprintf(what, sizeof what, "%s" DATASET_MANIFEST_SUFFIX " (unreadable) and %d shard%s",
                 s->base, s->old_shards, s->old_shards == 1 ? "" : "s");
    else
        snprintf(what, sizeof what, "%d shard%s without a manifest (llm.c's, or copied "
                 "without it)", s->old_shards, s->old_shards == 1 ? "" : "s");
    return io_err(err, err_len, "%s: holds %s, %llu bytes, which a new dataset would replace; "
                  "nothing was written. Give another --out, or pass --overwrite to move the old "
                  "files into %s.replaced_<time>/ once the new dataset is written (nothing is "
                  "deleted; rewriting the same dataset moves nothing)", s->prefix, what,
                  s->old_bytes, s->prefix);
}

int dataset_stage_begin(DatasetStage *s, const char *prefix, int overwrite, char *err,
                        size_t err_len)
{
    memset(s, 0, sizeof *s);
    s->lock_fd = -1;
    s->overwrite = overwrite;
    const char *slash = strrchr(prefix, '/');
    const char *base = slash ? slash + 1 : prefix;
    if (strlen(prefix) >= sizeof s->prefix - 64 || strlen(base) + 32 >= DATASET_NAME_MAX) {
        io_err(err, err_len, "%s: output prefix too long", prefix);
        return -1;
    }
    if (!*base) {
        io_err(err, err_len, "%s: output prefix names a folder; add a file name prefix (e.g. "
               "%sdata)", prefix, prefix);
        return -1;
    }
    snprintf(s->prefix, sizeof s->prefix, "%s", prefix);
    snprintf(s->base, sizeof s->base, "%s", base);
    if (!slash) snprintf(s->dir, sizeof s->dir, ".");
    else if (slash == prefix) snprintf(s->dir, sizeof s->dir, "/");
    else snprintf(s->dir, sizeof s->dir, "%.*s", (int)(slash - prefix), prefix);
    snprintf(s->stage, sizeof s->stage, "%s" STAGE_TAG "%ld.tmp", prefix, (long)getpid());
    /* The same name from a dead run whose pid came round again: its files go. */
    if (remove_folder(s->dir, s->stage) != 0 || mkdir(s->stage, 0755) != 0) {
        io_err(err, err_len, "%s: cannot write in the output folder: %s", s->dir,
               strerror(errno));
        return -1;
    }
    s->lock_fd = open(s->stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        io_err(err, err_len, "%s: cannot lock the staging folder: %s", s->stage, strerror(errno));
        dataset_stage_close(s);
        return -1;
    }
    if (clear_leftovers(s, err, err_len) != 0 || survey_old(s, err, err_len) != 0 ||
        ((s->old_manifest || s->old_shards) && !overwrite && refuse_old(s, err, err_len))) {
        dataset_stage_close(s);
        return -1;
    }
    return 0;
}

int dataset_stage_scratch(const DatasetStage *s, const char *name, char *out, size_t len)
{
    return (size_t)snprintf(out, len, "%s/%s", s->stage, name) < len ? 0 : -1;
}

int dataset_stage_add(DatasetStage *s, const char *split, const void *tokens, size_t n,
                      char *err, size_t err_len)
{
    int w = s->man.token_bytes ? s->man.token_bytes : 2;
    int *count = strcmp(split, "val") == 0 ? &s->num_val : &s->num_train;
    DatasetShard *more = realloc(s->man.shards, (s->man.num_shards + 1) * sizeof *more);
    if (!more) {
        io_err(err, err_len, "%s: out of host memory", s->stage);
        return -1;
    }
    s->man.shards = more;
    DatasetShard *sh = &more[s->man.num_shards];
    memset(sh, 0, sizeof *sh);
    io_err(sh->name, sizeof sh->name, "%s_%s_%06d.bin", s->base, split, *count);
    char path[4600];
    io_err(path, sizeof path, "%s/%s", s->stage, sh->name);
    if (shard_write_as(path, s->man.id, tokens, w, n, sh->sha256, err, err_len) != 0) return -1;
    sh->tokens = n;
    sh->bytes = SHARD_HEADER_BYTES + (unsigned long long)w * n;
    s->man.num_shards++;
    (*count)++;
    return 0;
}

/* Step 1: every name the switch writes is free or a regular file. */
static int check_targets(const DatasetStage *s, const char *manifest_name, char *err,
                         size_t err_len)
{
    for (int i = -1; i < s->man.num_shards; i++) {
        char p[4600];
        io_err(p, sizeof p, "%s/%s", s->dir, i < 0 ? manifest_name : s->man.shards[i].name);
        struct stat st;
        if (lstat(p, &st) != 0) {
            if (errno == ENOENT) continue;
            io_err(err, err_len, "%s: cannot check it before replacing it: %s", p,
                   strerror(errno));
            return -1;
        }
        if (!S_ISREG(st.st_mode)) {
            io_err(err, err_len, "%s: cannot rename into place: %s has that name", p,
                   S_ISDIR(st.st_mode) ? "a folder" : "something not a regular file");
            return -1;
        }
    }
    return 0;
}

/* Make s->replaced, "PREFIX.replaced_<time>[-k]", a new folder. */
static int make_replaced_folder(DatasetStage *s, char *err, size_t err_len)
{
    char stamp[32];
    io_stamp(stamp, sizeof stamp);
    for (int k = 1; k < 100; k++) {
        if (k == 1) io_err(s->replaced, sizeof s->replaced, "%s.replaced_%s", s->prefix, stamp);
        else io_err(s->replaced, sizeof s->replaced, "%s.replaced_%s-%d", s->prefix, stamp, k);
        if (mkdir(s->replaced, 0755) == 0) return 0;
        if (errno != EEXIST) break;
    }
    io_err(err, err_len, "%s: cannot make a folder for the old dataset: %s", s->replaced,
           strerror(errno));
    s->replaced[0] = 0;
    return -1;
}

/* Step 2: the old dataset's files that the new one does not rewrite byte
 * for byte move into s->replaced. The same dataset id means the same
 * tokens, split and shard size, so the same shard bytes under the same
 * names: those, and the manifest, are renamed over in step 3. */
static int move_old(DatasetStage *s, char *err, size_t err_len)
{
    int same = s->old_id && s->old_id == s->man.id;
    DIR *d = opendir(s->dir);
    if (!d) {
        io_err(err, err_len, "%s: cannot list the output folder: %s", s->dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    s->moved = 0;
    while (rc == 0 && (e = readdir(d))) {
        int is_manifest;
        struct stat st;
        if (!dataset_file(s, e->d_name, &is_manifest, &st)) continue;
        if (same && (is_manifest || dataset_manifest_find(&s->man, e->d_name) >= 0)) continue;
        if (!s->overwrite) {
            rc = io_err(err, err_len, "%s/%s: appeared while tokenizing; a new dataset would "
                        "replace it (pass --overwrite to move it aside)", s->dir, e->d_name);
            break;
        }
        if (!s->replaced[0] && make_replaced_folder(s, err, err_len) != 0) {
            rc = -1;
            break;
        }
        char from[4600], to[4600];
        io_err(from, sizeof from, "%s/%s", s->dir, e->d_name);
        io_err(to, sizeof to, "%s/%s", s->replaced, e->d_name);
        s->switching = 1;
        if (rename(from, to) != 0)
            rc = io_err(err, err_len, "%s: cannot move it into %s: %s. %s", from, s->replaced,
                        strerror(errno), s->moved ? "Part of the old dataset is there, the rest "
                        "where it was" : "The old dataset is untouched");
        else
            s->moved++;
    }
    closedir(d);
    return rc;
}

int dataset_stage_commit(DatasetStage *s, char *err, size_t err_len)
{
    char name[DATASET_NAME_MAX + 32], staged[4600], final[4600];
    snprintf(name, sizeof name, "%s" DATASET_MANIFEST_SUFFIX, s->base);
    io_err(staged, sizeof staged, "%s/%s", s->stage, name);
    /* the manifest, fsynced with the staging folder (io_write_file) */
    if (dataset_manifest_write(staged, &s->man, err, err_len) != 0) return -1;
    if (check_targets(s, name, err, err_len) != 0) return -1;
    dataset_manifest_index(&s->man); /* for the scan of the folder (linear if out of memory) */
    /* Step 2: the old dataset aside; step 3: renames only, the manifest last. */
    if (move_old(s, err, err_len) != 0) return -1;
    s->switching = 1;
    int moved = 0;
    for (int i = 0; i <= s->man.num_shards; i++) {
        const char *n = i < s->man.num_shards ? s->man.shards[i].name : name;
        io_err(staged, sizeof staged, "%s/%s", s->stage, n);
        io_err(final, sizeof final, "%s/%s", s->dir, n);
        if (rename(staged, final) != 0) {
            char where[4400];
            if (s->moved) io_err(where, sizeof where, "the old dataset is in %s", s->replaced);
            return io_err(err, err_len, "%s: cannot rename into place: %s. %s%s%s", final,
                          strerror(errno), moved ? "The folder now holds part of the new "
                          "dataset, which train_gpt refuses; run ./tokenize again with "
                          "--overwrite" : "", moved && s->moved ? "; " : "", s->moved ? where
                          : moved ? "" : "The old dataset is untouched");
        }
        moved++;
    }
    if (s->replaced[0] && io_sync_dir(s->replaced, err, err_len) != 0) return -1;
    return io_sync_dir(s->dir, err, err_len);
}

void dataset_stage_close(DatasetStage *s)
{
    if (s->stage[0]) remove_folder(s->dir, s->stage);
    if (s->lock_fd >= 0) close(s->lock_fd);
    s->lock_fd = -1;
    s->stage[0] = 0;
    dataset_manifest_free(&s->man);
}
