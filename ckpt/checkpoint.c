/* ckpt/checkpoint.c — saving, finding, loading and pruning checkpoint
 * folders (checkpoint.h). The manifest's parser is in manifest.c. */
#include "checkpoint.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/safefile.h"
#include "interop/model_file.h"

int ckpt_step_dir(char *out, size_t len, const char *dir, int step)
{
    return io_err(out, len, "%s/step_%08d", dir, step) < (int)len ? 0 : -1;
}

/* "step_%08d" (exactly eight or more digits) -> step, else -1. */
static int parse_step_name(const char *name)
{
    if (strncmp(name, "step_", 5) != 0) return -1;
    const char *d = name + 5;
    size_t n = strlen(d);
    if (n < 8 || n > 10) return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (d[i] < '0' || d[i] > '9') return -1;
        v = v * 10 + (d[i] - '0');
    }
    return v <= 2147483647L ? (int)v : -1;
}

/* Delete step_dir's manifest first, durably: from then on the folder is no
 * longer a complete save, whatever happens to the rest of it. */
static int unlink_manifest(const char *step_dir, char *err, size_t err_len)
{
    char p[4300];
    io_err(p, sizeof p, "%s/%s", step_dir, CKPT_MANIFEST);
    if (unlink(p) != 0 && errno != ENOENT) {
        io_err(err, err_len, "%s: cannot delete: %s", p, strerror(errno));
        return -1;
    }
    return io_sync_dir(step_dir, err, err_len);
}

/* The names a save folder may hold: its manifest, model.bin, the ranks'
 * state_rNNNNN.bin, and the .tmp of each (a save cut short). Nothing else
 * in it is deleted: whatever else is there keeps the folder. */
static int save_file_name(const char *name, void *ctx)
{
    (void)ctx;
    size_t n = strlen(name);
    if (n > 4 && strcmp(name + n - 4, ".tmp") == 0) n -= 4;
    if (n == strlen(CKPT_MANIFEST) && strncmp(name, CKPT_MANIFEST, n) == 0) return 1;
    if (n == 9 && strncmp(name, "model.bin", 9) == 0) return 1;
    if (n != 16 || strncmp(name, "state_r", 7) != 0 || strncmp(name + 12, ".bin", 4) != 0)
        return 0;
    for (int i = 7; i < 12; i++)
        if (name[i] < '0' || name[i] > '9') return 0;
    return 1;
}

/* Remove a save folder: COMPLETE first (so a half-deleted folder is never
 * taken for a complete save), then the files a save holds, by name, then
 * the folder; relative to the checkpoint folder, never through a link. */
static int remove_save(const char *dir, const char *step_dir, char *err, size_t err_len)
{
    if (sf_is_link(step_dir)) {
        io_err(err, err_len, "%s: is a symbolic link; nothing deleted", step_dir);
        return -1;
    }
    if (unlink_manifest(step_dir, err, err_len) != 0) return -1;
    int dfd = sf_open_dir(dir, 1, err, err_len);
    if (dfd < 0) return -1;
    int rc = sf_remove_dir(dfd, step_dir + strlen(dir) + 1, step_dir, save_file_name, NULL, err,
                           err_len);
    close(dfd);
    return rc;
}

int ckpt_begin(const char *dir, int step, char *step_dir, size_t len, char *err, size_t err_len)
{
    if (ckpt_step_dir(step_dir, len, dir, step) != 0) {
        io_err(err, err_len, "%.200s: path too long", dir);
        return -1;
    }
    if (io_mkdirs(dir, err, err_len) != 0) return -1;
    if (mkdir(step_dir, 0755) != 0) {
        struct stat st;
        if (errno == EEXIST && lstat(step_dir, &st) == 0 && S_ISLNK(st.st_mode)) {
            io_err(err, err_len, "%s: is a symbolic link; a save is never written through one "
                   "(remove the link, or give another --checkpoint-dir)", step_dir);
            return -1;
        }
        if (errno != EEXIST || lstat(step_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            io_err(err, err_len, "%s: cannot create the save folder: %s", step_dir,
                     errno == EEXIST ? "a file of that name is in the way" : strerror(errno));
            return -1;
        }
        /* A folder from an interrupted (or older) save of this step. */
        if (unlink_manifest(step_dir, err, err_len) != 0) return -1;
    }
    return io_sync_dir(dir, err, err_len);
}

int ckpt_write_model(const char *step_dir, const GPTConfig *cfg, const float *params,
                     CkptFile *out, char *err, size_t err_len)
{
    char p[4300];
    io_err(p, sizeof p, "%s/model.bin", step_dir);
    if (model_file_save(p, cfg, params, err, err_len) != 0) return -1;
    /* The llm.c format has no checksum: the manifest carries one. Read the
     * file back rather than duplicate the writer's byte layout here. */
    snprintf(out->name, sizeof out->name, "model.bin");
    return io_file_crc(p, &out->bytes, &out->crc, err, err_len);
}

int ckpt_write_state(const char *step_dir, int rank, const RunState *st, uint64_t num_params,
                     uint64_t offset, uint64_t count, const float *m, const float *v,
                     CkptFile *out, char *err, size_t err_len)
{
    char p[4300];
    snprintf(out->name, sizeof out->name, "state_r%05d.bin", rank);
    io_err(p, sizeof p, "%s/%s", step_dir, out->name);
    return run_state_write(p, st, num_params, offset, count, m, v, &out->bytes, &out->crc, err,
                           err_len);
}

static int cmp_entry(const void *a, const void *b)
{
    int x = ((const CkptEntry *)a)->step, y = ((const CkptEntry *)b)->step;
    return (x > y) - (x < y);
}

/* Fill e for the step folder sd: complete or not, and who made it. */
static void examine(const char *sd, int step, CkptEntry *e)
{
    memset(e, 0, sizeof *e);
    e->step = step;
    CkptManifest man;
    char why[sizeof e->note - 64];
    e->complete = ckpt_read_manifest(sd, &man, why, sizeof why) == 0;
    if (e->complete && man.step != step) {
        io_err(e->note, sizeof e->note, "its manifest says step %d", man.step);
        e->complete = 0;
    } else if (e->complete) {
        e->has_identity = man.has_identity;
        e->id = man.id;
    } else {
        char mp[4400];
        io_err(mp, sizeof mp, "%s/%s", sd, CKPT_MANIFEST);
        if (access(mp, F_OK) == 0) /* a manifest that exists but is bad: worth a note */
            io_err(e->note, sizeof e->note, "%s", why);
    }
    if (e->complete) ckpt_manifest_free(&man);
}

int ckpt_list(const char *dir, CkptEntry **out, int *n, char *err, size_t err_len)
{
    *out = NULL;
    *n = 0;
    struct stat st;
    if (stat(dir, &st) != 0 && errno == ENOENT) return 0;
    DIR *d = opendir(dir);
    if (!d) {
        io_err(err, err_len, "%s: cannot list the checkpoint folder: %s", dir, strerror(errno));
        return -1;
    }
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int step = parse_step_name(e->d_name);
        if (step < 0) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            CkptEntry *grown = realloc(*out, sizeof(CkptEntry) * (size_t)cap);
            if (!grown) {
                closedir(d);
                free(*out);
                *out = NULL;
                *n = 0;
                io_err(err, err_len, "%s: out of host memory", dir);
                return -1;
            }
            *out = grown;
        }
        char sd[4300];
        io_err(sd, sizeof sd, "%s/%s", dir, e->d_name);
        examine(sd, step, &(*out)[*n]);
        (*out)[(*n)++].is_link = sf_is_link(sd);
    }
    closedir(d);
    if (*n > 1) qsort(*out, (size_t)*n, sizeof(CkptEntry), cmp_entry);
    return 0;
}

int ckpt_find_latest(const char *dir, char *out, size_t len, int *step, char *err,
                     size_t err_len)
{
    CkptEntry *saves;
    int n;
    if (ckpt_list(dir, &saves, &n, err, err_len) != 0) return -1;
    int found = 0;
    for (int i = n - 1; i >= 0 && !found; i--)
        if (saves[i].complete) {
            *step = saves[i].step;
            ckpt_step_dir(out, len, dir, saves[i].step);
            found = 1;
        }
    free(saves);
    return found;
}

/* A save of the run `id` (NULL: of any run), or one made before saves
 * carried an identity. */
static int same_run(const CkptEntry *e, const CkptIdentity *id)
{
    return !id || !e->has_identity || e->id.run_id == id->run_id;
}

int ckpt_read_bad_steps(const char *step_dir, int64_t *bad_steps, char *err, size_t err_len)
{
    char p[4300];
    RunStateInfo info;
    io_err(p, sizeof p, "%s/state_r00000.bin", step_dir);
    if (run_state_read_info(p, &info, err, err_len) != 0) return -1;
    *bad_steps = info.st.bad_steps;
    return 0;
}

/* Index in saves[] of the rollback point of run id, or -1. */
static int rollback_index(const char *dir, const CkptEntry *saves, int n, const CkptIdentity *id)
{
    for (int i = n - 1; i >= 0; i--) {
        if (!saves[i].complete || !same_run(&saves[i], id)) continue;
        char sd[4300], why[512];
        int64_t bad;
        ckpt_step_dir(sd, sizeof sd, dir, saves[i].step);
        if (ckpt_read_bad_steps(sd, &bad, why, sizeof why) == 0 && bad == 0) return i;
    }
    return -1;
}

int ckpt_find_rollback(const char *dir, const CkptIdentity *id, int *step)
{
    CkptEntry *saves;
    int n;
    char err[512];
    if (ckpt_list(dir, &saves, &n, err, sizeof err) != 0) return 0;
    int i = rollback_index(dir, saves, n, id);
    if (i >= 0) *step = saves[i].step;
    free(saves);
    return i >= 0;
}

/* Keep the newest `keep` complete saves of run id and its rollback point;
 * delete its older complete ones and every incomplete folder older than
 * the newest complete save, a note on stdout for each. Another run's saves
 * are never touched.
 * Failures here only cost disk space: they are reported, not fatal. */
static void prune(const char *dir, int keep, const CkptIdentity *id)
{
    CkptEntry *saves;
    int n;
    char err[512];
    if (ckpt_list(dir, &saves, &n, err, sizeof err) != 0) {
        fprintf(stderr, "warning: not deleting old saves: %s\n", err);
        return;
    }
    int kept = 0, newest_complete = -1;
    int rollback = keep > 0 ? rollback_index(dir, saves, n, id) : -1;
    for (int i = n - 1; i >= 0; i--) {
        int del;
        if (saves[i].complete) {
            if (newest_complete < 0) newest_complete = saves[i].step;
            if (!same_run(&saves[i], id)) continue;
            /* a linked save (an archive linked in) is not counted: --keep
             * keeps that many of the run's own folders */
            del = keep > 0 && (saves[i].is_link ? kept >= keep : ++kept > keep) && i != rollback;
        } else {
            del = newest_complete >= 0; /* older than a complete save: debris of a crash */
        }
        if (!del) continue;
        char sd[4300];
        ckpt_step_dir(sd, sizeof sd, dir, saves[i].step);
        if (saves[i].is_link) { /* not this run's folder: never emptied */
            printf("note: left %s alone: it is a symbolic link (a save is never deleted "
                   "through one)\n", sd);
            continue;
        }
        if (remove_save(dir, sd, err, sizeof err) != 0) {
            /* once: the folder is incomplete from now on, and the next
             * prune's retry of it says nothing */
            if (saves[i].complete)
                fprintf(stderr, "warning: could not delete an old save: %s (its COMPLETE is "
                        "deleted: it is no longer a save, and later saves retry quietly)\n",
                        err);
        } else if (saves[i].complete) /* said, so that no save goes unannounced */
            printf("note: deleted %s (--keep %d: the newest %d saves of this run are kept)\n",
                   sd, keep, keep);
        else
            printf("note: deleted %s (an incomplete save, older than the complete step %d)\n",
                   sd, newest_complete);
    }
    free(saves);
}

static void put_hex(cJSON *obj, const char *key, uint64_t v)
{
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)v);
    cJSON_AddStringToObject(obj, key, hex);
}

int ckpt_commit(const char *dir, const char *step_dir, int step, int world_size,
                const CkptFile *files, int n_files, int keep, const CkptIdentity *id,
                char *err, size_t err_len)
{
    /* Everything the manifest lists must be durable before it exists. */
    if (io_sync_dir(step_dir, err, err_len) != 0) return -1;
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    cJSON_AddStringToObject(root, "format", "train_gpt checkpoint");
    cJSON_AddNumberToObject(root, "version", id ? 2 : 1);
    cJSON_AddNumberToObject(root, "step", step);
    cJSON_AddNumberToObject(root, "world_size", world_size);
    if (id) {
        put_hex(root, "run_id", id->run_id);
        put_hex(root, "config_hash", id->config_hash);
    }
    for (int i = 0; i < n_files; i++) {
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "name", files[i].name);
        cJSON_AddNumberToObject(f, "bytes", (double)files[i].bytes);
        cJSON_AddNumberToObject(f, "crc32", (double)files[i].crc);
        cJSON_AddItemToArray(arr, f);
    }
    cJSON_AddItemToObject(root, "files", arr);
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) {
        io_err(err, err_len, "%s: out of host memory for the manifest", step_dir);
        return -1;
    }
    char p[4300];
    io_err(p, sizeof p, "%s/%s", step_dir, CKPT_MANIFEST);
    IoWriter w;
    int rc = io_create(&w, p, err, err_len);
    if (rc == 0 && (io_write(&w, text, strlen(text), err, err_len) != 0 ||
                    io_write(&w, "\n", 1, err, err_len) != 0)) {
        io_abort(&w);
        rc = -1;
    }
    cJSON_free(text);
    if (rc == 0) rc = io_commit(&w, err, err_len);
    if (rc == 0) rc = io_sync_dir(step_dir, err, err_len);
    if (rc == 0 && keep != CKPT_PRUNE_LATER) prune(dir, keep, id);
    return rc;
}

void ckpt_prune(const char *dir, int keep, const CkptIdentity *id) { prune(dir, keep, id); }

int ckpt_save(const char *dir, int step, int keep, const CkptIdentity *id, const GPTConfig *cfg,
              const float *params, const RunState *st, uint64_t num_params, const float *m,
              const float *v, char *step_dir, size_t len, char *err, size_t err_len)
{
    CkptFile files[2];
    int delay = io_test_save_delay_ms();
    if (ckpt_begin(dir, step, step_dir, len, err, err_len) != 0) return -1;
    if (ckpt_write_model(step_dir, cfg, params, &files[0], err, err_len) != 0) return -1;
    if (delay) io_sleep_ms(delay);
    if (ckpt_write_state(step_dir, 0, st, num_params, 0, num_params, m, v, &files[1], err,
                         err_len) != 0)
        return -1;
    if (delay) io_sleep_ms(delay);
    return ckpt_commit(dir, step_dir, step, 1, files, 2, keep, id, err, err_len);
}

int ckpt_load_model(const char *step_dir, const CkptManifest *man, GPTConfig *cfg,
                    float **params, char *err, size_t err_len)
{
    char p[4300];
    uint64_t bytes;
    uint32_t crc;
    *params = NULL;
    io_err(p, sizeof p, "%s/%s", step_dir, man->files[0].name);
    if (io_file_crc(p, &bytes, &crc, err, err_len) != 0) return -1;
    if (bytes != man->files[0].bytes || crc != man->files[0].crc) {
        io_err(err, err_len, "%s: %s differs from the manifest (corrupt file)", p,
                 bytes != man->files[0].bytes ? "size" : "crc32");
        return -1;
    }
    return model_file_load(p, cfg, params, err, err_len);
}

int ckpt_load_state(const char *step_dir, const CkptManifest *man, RunState *st,
                    uint64_t num_params, uint64_t offset, uint64_t count, float *m, float *v,
                    char *err, size_t err_len)
{
    memset(st, 0, sizeof *st);
    uint64_t covered = 0, prev_end = 0;
    for (int r = 0; r < man->world_size; r++) {
        char p[4300];
        RunStateInfo info;
        io_err(p, sizeof p, "%s/%s", step_dir, man->files[r + 1].name);
        if (run_state_read_info(p, &info, err, err_len) != 0) goto fail;
        /* rank 0's run state is the one returned; the others' are only checked */
        if (r == 0) *st = info.st;
        else run_state_free(&info.st);
        if (info.num_params != num_params) {
            io_err(err, err_len, "%s: holds state for %llu parameters, the model has %llu", p,
                     (unsigned long long)info.num_params, (unsigned long long)num_params);
            goto fail;
        }
        if (info.st.step != man->step || info.st.rank != r) {
            io_err(err, err_len, "%s: is rank %lld's state at step %lld, the manifest says "
                     "rank %d at step %d", p, (long long)info.st.rank, (long long)info.st.step, r,
                     man->step);
            goto fail;
        }
        /* --zero 0 replicates AdamW's m and v on every rank: rank 0's file
         * holds them and the others' an empty slice. Saves written before
         * that (until 2026-12-01) hold a whole copy in every rank's file:
         * the same numbers, so rank 0's are read and the copies skipped. */
        if (r > 0 && info.st.zero == 0 && info.offset == 0 && info.count == num_params &&
            prev_end == num_params)
            continue;
        /* Slices must be disjoint and in rank order. */
        if (info.offset < prev_end) {
            io_err(err, err_len, "%s: its slice overlaps the previous rank's", p);
            goto fail;
        }
        prev_end = info.offset + info.count;
        uint64_t lo = offset > info.offset ? offset : info.offset;
        uint64_t hi = offset + count < prev_end ? offset + count : prev_end;
        if (hi > lo) covered += hi - lo;
        if (hi > lo || r == 0) /* rank 0 is always read in full: it carries the run state */
            if (run_state_read_range(p, &info, offset, count, m, v, err, err_len) != 0) goto fail;
    }
    if (covered != count) {
        io_err(err, err_len, "%s: the state files hold %llu of the %llu optimizer elements "
                 "asked for", step_dir, (unsigned long long)covered, (unsigned long long)count);
        goto fail;
    }
    return 0;
fail:
    run_state_free(st);
    return -1;
}

int ckpt_verify(const char *step_dir, const CkptManifest *man, char *err, size_t err_len)
{
    for (int i = 0; i < man->n_files; i++) {
        char p[4300];
        uint64_t bytes;
        uint32_t crc;
        io_err(p, sizeof p, "%s/%s", step_dir, man->files[i].name);
        if (io_file_crc(p, &bytes, &crc, err, err_len) != 0) return -1;
        if (bytes != man->files[i].bytes || crc != man->files[i].crc) {
            io_err(err, err_len, "%s: %s differs from the manifest (corrupt file)", p,
                   bytes != man->files[i].bytes ? "size" : "crc32");
            return -1;
        }
    }
    return 0;
}
