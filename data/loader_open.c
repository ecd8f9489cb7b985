/* data/loader_open.c — what a loader's glob may hold (shard.h): one
 * dataset, every shard its manifest lists, shards large enough for a step;
 * and the shards' content hashes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* qsort_r */
#endif
#include "loader.h"

#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fileio.h"
#include "dataset.h"

/* One file the glob matched. */
typedef struct {
    char *path;
    size_t ntok;
    uint64_t id;
    int tbytes;      /* 2 or 4 */
    int listed;      /* in its manifest, whose hash is in sha */
    unsigned char sha[SHARD_SHA256_BYTES];
} Found;

typedef struct {
    Found *f;
    int n;
    int *sorted;     /* indices into f sorted by path (strcmp), for lookups */
} FoundList;

static void found_free(FoundList *l)
{
    for (int i = 0; i < l->n; i++) free(l->f[i].path);
    free(l->f);
    free(l->sorted);
    memset(l, 0, sizeof *l);
}

static int path_cmp(const void *a, const void *b, void *ctx)
{
    const Found *f = ctx;
    return strcmp(f[*(const int *)a].path, f[*(const int *)b].path);
}

/* 1 when the glob matched path. */
static int found_has(const FoundList *l, const char *path)
{
    int lo = 0, hi = l->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(l->f[l->sorted[mid]].path, path);
        if (c == 0) return 1;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return 0;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Append a formatted line to *notes (grown with realloc; dropped when out
 * of memory: notes are informational). */
static void add_note(char **notes, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(char **notes, const char *fmt, ...)
{
    char line[4600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t old = *notes ? strlen(*notes) : 0, add = strlen(line);
    char *p = realloc(*notes, old + add + 2);
    if (!p) return;
    memcpy(p + old, line, add);
    p[old + add] = '\n';
    p[old + add + 1] = 0;
    *notes = p;
}

/* Expand the glob and check every file's header and size. */
static int collect(const char *pattern, FoundList *l, char *err, size_t err_len)
{
    glob_t gl;
    int g = glob(pattern, 0, NULL, &gl);
    if (g == GLOB_NOMATCH || (g == 0 && gl.gl_pathc == 0)) {
        io_err(err, err_len, "%s: glob matched no files", pattern);
        if (g == 0) globfree(&gl);
        return -1;
    }
    if (g != 0) {
        io_err(err, err_len, "%s: glob failed (read error or out of memory)", pattern);
        return -1;
    }
    int rc = -1;
    if (gl.gl_pathc > LOADER_MAX_SHARDS) {
        io_err(err, err_len, "%s: matched %zu files, more than the %d shards one run takes",
               pattern, gl.gl_pathc, LOADER_MAX_SHARDS);
        goto out;
    }
    l->f = calloc(gl.gl_pathc, sizeof *l->f);
    if (!l->f) {
        io_err(err, err_len, "%s: out of host memory", pattern);
        goto out;
    }
    /* glob() sorts its results, so the shard order is the sorted names. */
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        Found *f = &l->f[l->n];
        if (!(f->path = strdup(gl.gl_pathv[i]))) {
            io_err(err, err_len, "%s: out of host memory", pattern);
            goto out;
        }
        l->n++;
        if (shard_check_info(f->path, &f->ntok, &f->id, &f->tbytes, err, err_len) != 0) goto out;
    }
    if (!(l->sorted = malloc(gl.gl_pathc * sizeof *l->sorted))) {
        io_err(err, err_len, "%s: out of host memory", pattern);
        goto out;
    }
    for (int i = 0; i < l->n; i++) l->sorted[i] = i;
    qsort_r(l->sorted, (size_t)l->n, sizeof *l->sorted, path_cmp, l->f);
    rc = 0;
out:
    globfree(&gl);
    return rc;
}

/* "a, b, c and 4 more" from up to 4 names. */
static void name_list(char *out, size_t len, const char *const *names, int n)
{
    out[0] = 0;
    for (int i = 0; i < n && i < 4; i++)
        io_err(out + strlen(out), len - strlen(out), "%s%s", i ? ", " : "", names[i]);
    if (n > 4) io_err(out + strlen(out), len - strlen(out), " and %d more", n - 4);
}

/* The shards whose name gives manifest path `mp`, against that manifest. */
static int check_against(const char *pattern, const char *mp, const DatasetManifest *m,
                         FoundList *l, char *err, size_t err_len)
{
    const char *bad[4], *missing[4];
    int nbad = 0, nmissing = 0;
    char why[600] = "", mpi[4200];
    for (int i = 0; i < l->n; i++) {
        Found *f = &l->f[i];
        if (dataset_manifest_path_for(f->path, mpi, sizeof mpi) != 0 || strcmp(mpi, mp) != 0)
            continue;
        int k = dataset_manifest_find(m, base_name(f->path));
        if (k < 0) {
            if (nbad++ == 0) io_err(why, sizeof why, "not listed there");
        } else if (f->id != m->id) {
            if (nbad++ == 0)
                io_err(why, sizeof why, "dataset id %016llx, the manifest's is %016llx",
                       (unsigned long long)f->id, (unsigned long long)m->id);
        } else if (f->ntok != m->shards[k].tokens) {
            if (nbad++ == 0)
                io_err(why, sizeof why, "%zu tokens, the manifest lists %llu", f->ntok,
                       (unsigned long long)m->shards[k].tokens);
        } else if (f->tbytes != m->token_bytes) {
            if (nbad++ == 0)
                io_err(why, sizeof why, "uint%d tokens, the manifest's are uint%d", 8 * f->tbytes,
                       8 * m->token_bytes);
        } else {
            f->listed = 1;
            memcpy(f->sha, m->shards[k].sha256, SHARD_SHA256_BYTES);
            continue;
        }
        if (nbad <= 4) bad[nbad - 1] = f->path;
    }
    char names[1200];
    if (nbad) {
        name_list(names, sizeof names, bad, nbad);
        io_err(err, err_len, "%s: %d shard(s) are not of the dataset in %s (the first: %s): %s. "
               "The folder mixes shards of two ./tokenize runs (an interrupted one?); run "
               "./tokenize --overwrite again for that prefix (the stray shards are moved "
               "aside), or move them away", pattern, nbad, mp, why, names);
        return -1;
    }
    /* Every listed shard that the glob would match must be there. */
    size_t dl = strlen(mp) - strlen(base_name(mp));
    for (int k = 0; k < m->num_shards; k++) {
        char full[4600];
        io_err(full, sizeof full, "%.*s%s", (int)dl, mp, m->shards[k].name);
        if (fnmatch(pattern, full, FNM_PATHNAME | FNM_PERIOD) != 0 || found_has(l, full))
            continue;
        if (nmissing++ < 4) missing[nmissing - 1] = m->shards[k].name;
    }
    if (nmissing) {
        name_list(names, sizeof names, missing, nmissing);
        io_err(err, err_len, "%s: %d shard(s) that %s lists, and the glob would match, are "
               "missing: %s (deleted, or not copied?)", pattern, nmissing, mp, names);
        return -1;
    }
    return 0;
}

/* Every shard named like ./tokenize's output whose manifest exists. The
 * manifests are few (one per prefix): a list of those done. */
static int check_manifests(const char *pattern, FoundList *l, Loader *ld, char *err,
                           size_t err_len)
{
    enum { MAX_SEEN = 64 };
    char *seen[MAX_SEEN], mp[4200];
    int nseen = 0, rc = 0;
    for (int i = 0; i < l->n && rc == 0; i++) {
        if (dataset_manifest_path_for(l->f[i].path, mp, sizeof mp) != 0) continue;
        int done = 0;
        for (int j = 0; j < nseen && !done; j++) done = strcmp(seen[j], mp) == 0;
        if (done) continue;
        if (nseen == MAX_SEEN) {
            io_err(err, err_len, "%s: shards of more than %d dataset prefixes", pattern, MAX_SEEN);
            rc = -1;
            break;
        }
        if (!(seen[nseen] = strdup(mp))) {
            io_err(err, err_len, "%s: out of host memory", mp);
            rc = -1;
            break;
        }
        nseen++;
        struct stat st;
        if (stat(mp, &st) != 0 && errno == ENOENT) continue; /* no manifest: llm.c's files */
        DatasetManifest m;
        rc = dataset_manifest_read(mp, &m, err, err_len);
        if (rc == 0) rc = check_against(pattern, mp, &m, l, err, err_len);
        if (rc == 0 && !ld->manifest && !(ld->manifest = strdup(mp))) {
            io_err(err, err_len, "%s: out of host memory", mp);
            rc = -1;
        }
        if (rc == 0 && !ld->tokenizer_id && m.tok.id) {
            ld->tokenizer_id = m.tok.id;
            dataset_tokenizer_describe(&m.tok, ld->tokenizer_desc, sizeof ld->tokenizer_desc);
        }
        dataset_manifest_free(&m);
    }
    for (int j = 0; j < nseen; j++) free(seen[j]);
    return rc;
}

/* All shards must carry one dataset id (0, no id, counts as one). */
static int check_one_dataset(const char *pattern, const FoundList *l, uint64_t *id, char *err,
                             size_t err_len)
{
    *id = l->f[0].id;
    int other = -1;
    for (int i = 1; i < l->n && other < 0; i++)
        if (l->f[i].id != *id) other = i;
    if (other < 0) return 0;
    char desc[2][700];
    uint64_t ids[2] = {l->f[0].id, l->f[other].id};
    for (int k = 0; k < 2; k++) {
        int count = 0;
        const char *first = NULL;
        for (int i = 0; i < l->n; i++)
            if (l->f[i].id == ids[k] && count++ == 0) first = l->f[i].path;
        char idtext[40];
        if (ids[k]) io_err(idtext, sizeof idtext, "dataset %016llx", (unsigned long long)ids[k]);
        else io_err(idtext, sizeof idtext, "no dataset id");
        char more[32] = "";
        if (count > 1) io_err(more, sizeof more, " and %d more", count - 1);
        io_err(desc[k], sizeof desc[k], "%s (%s)%s", first, idtext, more);
    }
    io_err(err, err_len, "%s: mixes shards of different datasets: %s; %s. One glob must hold "
           "one dataset: run ./tokenize --overwrite again for a prefix that mixes two runs, or "
           "tokenize the texts together", pattern, desc[0], desc[1]);
    return -1;
}

/* A vocabulary over uint16's ids: every shard must be uint32 (loader.h). */
static int check_width(const Loader *ld, const char *pattern, const FoundList *l, char *err,
                       size_t err_len)
{
    if (shard_token_bytes_for(ld->vocab_size) == 2) return 0;
    int narrow = 0, first = -1;
    for (int i = 0; i < l->n; i++)
        if (l->f[i].tbytes == 2 && narrow++ == 0) first = i;
    if (!narrow) return 0;
    io_err(err, err_len, "%s: %s holds uint16 tokens (llm.c's version 1 shard, ids below %d)%s, "
           "but the model's vocabulary is %d: such shards were made with another tokenizer. "
           "Tokenize the text with this model's tokenizer (uint32 shards, version 7), or train "
           "a model of that vocabulary", pattern, l->f[first].path, SHARD_U16_VOCAB,
           narrow > 1 ? " (and more)" : "", ld->vocab_size);
    return -1;
}

/* Move the shards with at least `need` tokens into the loader; a note for
 * each one skipped. */
static int keep_usable(Loader *ld, const char *pattern, FoundList *l, char *err, size_t err_len)
{
    size_t need = (size_t)ld->nranks * ld->B * ld->T + 1;
    int biggest = 0, usable = 0;
    char why[400];
    for (int i = 0; i < l->n; i++) {
        if (l->f[i].ntok > l->f[biggest].ntok) biggest = i;
        usable += l->f[i].ntok >= need;
    }
    io_err(why, sizeof why, "fewer than the %zu one step needs (ranks %d x batch %d x seq-len "
           "%d + 1)", need, ld->nranks, ld->B, ld->T);
    if (usable == 0) {
        if (l->n == 1)
            io_err(err, err_len, "%s: %zu tokens, %s", l->f[0].path, l->f[0].ntok, why);
        else
            io_err(err, err_len, "%s: none of the %d shards is large enough; the largest, %s: "
                   "%zu tokens, %s", pattern, l->n, l->f[biggest].path, l->f[biggest].ntok, why);
        return -1;
    }
    ld->paths = calloc((size_t)usable, sizeof *ld->paths);
    ld->ntok = calloc((size_t)usable, sizeof *ld->ntok);
    ld->tbytes = calloc((size_t)usable, 1);
    ld->sha = calloc((size_t)usable, sizeof *ld->sha);
    ld->sha_from = calloc((size_t)usable, 1);
    if (!ld->paths || !ld->ntok || !ld->tbytes || !ld->sha || !ld->sha_from) {
        io_err(err, err_len, "%s: out of host memory", pattern);
        return -1;
    }
    for (int i = 0; i < l->n; i++) {
        Found *f = &l->f[i];
        if (f->ntok < need) {
            add_note(&ld->notes, "note: %s: %zu tokens, %s: skipped", f->path, f->ntok, why);
            ld->num_skipped++;
            continue;
        }
        int k = ld->num_shards++;
        ld->paths[k] = f->path;
        f->path = NULL; /* moved */
        ld->ntok[k] = f->ntok;
        ld->tbytes[k] = (unsigned char)f->tbytes;
        if (f->listed) {
            memcpy(ld->sha[k], f->sha, SHARD_SHA256_BYTES);
            ld->sha_from[k] = LOADER_SHA_MANIFEST;
        }
    }
    return 0;
}

int loader_open(Loader *ld, const char *pattern, int B, int T, int rank, int nranks,
                int vocab_size, int shuffle, uint64_t seed, char *err, size_t err_len)
{
    memset(ld, 0, sizeof *ld);
    ld->fd = -1;
    ld->loaded = -1;
    ld->B = B;
    ld->T = T;
    ld->rank = rank;
    ld->nranks = nranks;
    ld->vocab_size = vocab_size;
    ld->shuffle = shuffle;
    ld->seed = seed;
    FoundList l = {0};
    int rc = collect(pattern, &l, err, err_len);
    if (rc == 0) rc = check_manifests(pattern, &l, ld, err, err_len);
    if (rc == 0) rc = check_one_dataset(pattern, &l, &ld->dataset_id, err, err_len);
    if (rc == 0) rc = check_width(ld, pattern, &l, err, err_len);
    if (rc == 0) rc = keep_usable(ld, pattern, &l, err, err_len);
    found_free(&l);
    if (rc != 0) {
        loader_close(ld);
        return -1;
    }
    /* window_order is sized for the largest shard: no allocation while training. */
    size_t most = 0, per_step = (size_t)nranks * B * T;
    for (int i = 0; i < ld->num_shards; i++)
        if ((ld->ntok[i] - 1) / per_step > most) most = (ld->ntok[i] - 1) / per_step;
    ld->window = malloc(sizeof(uint32_t) * ((size_t)B * T + 1));
    ld->shard_order = calloc((size_t)ld->num_shards, sizeof(int));
    ld->window_order = malloc(sizeof(long) * most);
    if (!ld->window || !ld->shard_order || !ld->window_order) {
        io_err(err, err_len, "%s: out of host memory", pattern);
        loader_close(ld);
        return -1;
    }
    if (loader_reset(ld, err, err_len) != 0) {
        loader_close(ld);
        return -1;
    }
    return 0;
}

void loader_describe_mismatch(const char *path, const unsigned char *got,
                              const unsigned char *listed, char *err, size_t err_len)
{
    char mp[4200];
    if (dataset_manifest_path_for(path, mp, sizeof mp) != 0) mp[0] = 0;
    io_err(err, err_len, "%s: its content differs from its dataset manifest %s (sha256 "
           "%02x%02x%02x%02x..., the manifest lists %02x%02x%02x%02x...): the file was changed "
           "after ./tokenize wrote it", path, mp, got[0], got[1], got[2], got[3], listed[0],
           listed[1], listed[2], listed[3]);
}

int loader_hash(Loader *ld, int mode, uint64_t *bytes_read, char *err, size_t err_len)
{
    uint64_t total = 0;
    for (int i = 0; i < ld->num_shards; i++) {
        if (mode == LOADER_HASH_TRUST && ld->sha_from[i] != LOADER_SHA_NONE) continue;
        unsigned char sha[SHARD_SHA256_BYTES];
        uint64_t bytes;
        if (shard_hash_file(ld->paths[i], sha, &bytes, err, err_len) != 0) return -1;
        total += bytes;
        if (ld->sha_from[i] == LOADER_SHA_MANIFEST && memcmp(sha, ld->sha[i], sizeof sha) != 0) {
            loader_describe_mismatch(ld->paths[i], sha, ld->sha[i], err, err_len);
            return -1;
        }
        memcpy(ld->sha[i], sha, sizeof sha);
        ld->sha_from[i] = LOADER_SHA_READ;
    }
    if (bytes_read) *bytes_read = total;
    return 0;
}

int loader_has_hashes(const Loader *ld)
{
    for (int i = 0; i < ld->num_shards; i++)
        if (ld->sha_from[i] == LOADER_SHA_NONE) return 0;
    return ld->num_shards > 0;
}
