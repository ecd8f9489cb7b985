/* data/shard.c — shard validation and the data loader (see shard.h). */
#include "shard.h"

#include "base/rng.h"
#include "base/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int shard_check(const char *path, size_t *n, char *err, size_t err_len)
{
    off_t size;
    int fd = io_open_regular(path, &size, err, err_len);
    if (fd < 0) return -1;
    int32_t h[SHARD_HEADER_INTS];
    int rc = -1;
    if (size < SHARD_HEADER_BYTES ||
               pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h) {
        snprintf(err, err_len, "%s: truncated header (%lld bytes; a shard starts with a 1024-byte "
                 "header)", path, (long long)size);
    } else if (h[0] != SHARD_MAGIC) {
        snprintf(err, err_len, "%s: bad magic %d (expected %d: not an llm.c token shard)", path,
                 h[0], SHARD_MAGIC);
    } else if (h[1] != SHARD_VERSION) {
        snprintf(err, err_len, "%s: unsupported version %d (expected %d)", path, h[1],
                 SHARD_VERSION);
    } else if (h[2] < 0) {
        snprintf(err, err_len, "%s: negative token count %d in header", path, h[2]);
    } else if ((long long)size != SHARD_HEADER_BYTES + 2LL * h[2]) {
        snprintf(err, err_len, "%s: size %lld bytes, but the header's %d tokens need %lld (%s)",
                 path, (long long)size, h[2], SHARD_HEADER_BYTES + 2LL * h[2],
                 (long long)size < SHARD_HEADER_BYTES + 2LL * h[2] ? "truncated"
                                                                         : "trailing bytes");
    } else {
        *n = (size_t)h[2];
        rc = 0;
    }
    close(fd);
    return rc;
}

/* The loader's only randomness: base/rng.h, seeded from (seed, epoch). */
static void shuffle_long(long *a, long n, uint64_t *state)
{
    for (long i = n - 1; i > 0; i--) {
        long j = (long)(rng_next(state) % (uint64_t)(i + 1));
        long t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

static long steps_in_shard(const Loader *ld, int shard)
{
    return (long)((ld->ntok[shard] - 1) / ((size_t)ld->nranks * ld->B * ld->T));
}

/* Open the shard at position shard_pos of the order and lay out its steps. */
static int enter_shard(Loader *ld, char *err, size_t err_len)
{
    int shard = ld->shard_order[ld->shard_pos];
    if (ld->loaded != shard) {
        if (ld->fd >= 0) close(ld->fd);
        ld->fd = open(ld->paths[shard], O_RDONLY);
        if (ld->fd < 0) {
            snprintf(err, err_len, "%s: cannot open: %s", ld->paths[shard], strerror(errno));
            ld->loaded = -1;
            return -1;
        }
        ld->loaded = shard;
    }
    /* window_order was sized at open for the largest shard: no allocation
     * while training. */
    ld->num_windows = steps_in_shard(ld, shard);
    for (long i = 0; i < ld->num_windows; i++) ld->window_order[i] = i;
    if (ld->shuffle) {
        uint64_t st = ld->seed ^ (ld->epoch * 0x2545f4914f6cdd1dull) ^ ((uint64_t)ld->shard_pos << 32);
        shuffle_long(ld->window_order, ld->num_windows, &st);
    }
    ld->window_pos = 0;
    return 0;
}

static void order_shards(Loader *ld)
{
    for (int i = 0; i < ld->num_shards; i++) ld->shard_order[i] = i;
    if (ld->shuffle && ld->num_shards > 1) {
        long tmp[ld->num_shards];
        for (int i = 0; i < ld->num_shards; i++) tmp[i] = i;
        uint64_t st = ld->seed ^ (ld->epoch * 0x9e3779b97f4a7c15ull) ^ 0x5bd1e995u;
        shuffle_long(tmp, ld->num_shards, &st);
        for (int i = 0; i < ld->num_shards; i++) ld->shard_order[i] = (int)tmp[i];
    }
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
    glob_t gl;
    int g = glob(pattern, 0, NULL, &gl);
    if (g == GLOB_NOMATCH || (g == 0 && gl.gl_pathc == 0)) {
        snprintf(err, err_len, "%s: glob matched no files", pattern);
        if (g == 0) globfree(&gl);
        return -1;
    }
    if (g != 0) {
        snprintf(err, err_len, "%s: glob failed (read error or out of memory)", pattern);
        return -1;
    }
    ld->num_shards = (int)gl.gl_pathc;
    ld->paths = calloc(gl.gl_pathc, sizeof(char *));
    ld->ntok = calloc(gl.gl_pathc, sizeof(size_t));
    ld->shard_order = calloc(gl.gl_pathc, sizeof(int));
    ld->window = malloc(sizeof(uint16_t) * ((size_t)B * T + 1));
    if (!ld->paths || !ld->ntok || !ld->shard_order || !ld->window) {
        snprintf(err, err_len, "%s: out of host memory", pattern);
        globfree(&gl);
        loader_close(ld);
        return -1;
    }
    /* glob() sorts its results, so the shard order is the sorted names. */
    size_t need = (size_t)nranks * B * T + 1;
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        ld->paths[i] = strdup(gl.gl_pathv[i]);
        if (!ld->paths[i]) {
            snprintf(err, err_len, "%s: out of host memory", pattern);
            globfree(&gl);
            loader_close(ld);
            return -1;
        }
        if (shard_check(ld->paths[i], &ld->ntok[i], err, err_len) != 0) {
            globfree(&gl);
            loader_close(ld);
            return -1;
        }
        if (ld->ntok[i] < need) {
            snprintf(err, err_len, "%s: %zu tokens, fewer than the %zu one step needs "
                     "(ranks %d x batch %d x seq-len %d + 1)", ld->paths[i], ld->ntok[i], need,
                     nranks, B, T);
            globfree(&gl);
            loader_close(ld);
            return -1;
        }
    }
    globfree(&gl);
    long most = 0;
    for (int i = 0; i < ld->num_shards; i++)
        most = steps_in_shard(ld, i) > most ? steps_in_shard(ld, i) : most;
    ld->window_order = malloc(sizeof(long) * (size_t)most);
    if (!ld->window_order) {
        snprintf(err, err_len, "%s: out of host memory", pattern);
        loader_close(ld);
        return -1;
    }
    order_shards(ld);
    if (enter_shard(ld, err, err_len) != 0) {
        loader_close(ld);
        return -1;
    }
    return 0;
}

long loader_offset(const Loader *ld)
{
    long s = ld->window_order[ld->window_pos];
    return (s * ld->nranks + ld->rank) * (long)ld->B * ld->T;
}

const char *loader_current_path(const Loader *ld)
{
    return ld->paths[ld->shard_order[ld->shard_pos]];
}

int loader_next(Loader *ld, int *inputs, int *targets, char *err, size_t err_len)
{
    size_t n = (size_t)ld->B * ld->T;
    long off = loader_offset(ld);
    const char *path = loader_current_path(ld);
    ssize_t want = (ssize_t)((n + 1) * sizeof(uint16_t));
    if (pread(ld->fd, ld->window, (size_t)want, SHARD_HEADER_BYTES + 2 * (off_t)off) != want) {
        snprintf(err, err_len, "%s: short read at token offset %ld (file changed?)", path, off);
        return -1;
    }
    for (size_t i = 0; i <= n; i++)
        if (ld->window[i] >= ld->vocab_size) {
            snprintf(err, err_len, "%s: token %u at offset %ld is outside the vocabulary "
                     "(size %d)", path, ld->window[i], off + (long)i, ld->vocab_size);
            return -1;
        }
    for (size_t i = 0; i < n; i++) {
        inputs[i] = ld->window[i];
        targets[i] = ld->window[i + 1];
    }
    /* Advance: next step in this shard, else the next shard (new epoch
     * after the last one). */
    if (++ld->window_pos >= ld->num_windows) {
        if (++ld->shard_pos >= ld->num_shards) {
            ld->shard_pos = 0;
            ld->epoch++;
            order_shards(ld);
        }
        if (enter_shard(ld, err, err_len) != 0) return -1;
    }
    return 0;
}

int loader_seek(Loader *ld, uint64_t epoch, int shard_pos, long window_pos, char *err,
                size_t err_len)
{
    if (shard_pos < 0 || shard_pos >= ld->num_shards) {
        snprintf(err, err_len, "data position: shard %d does not exist (%d shard(s))", shard_pos,
                 ld->num_shards);
        return -1;
    }
    ld->epoch = epoch;
    order_shards(ld);
    ld->shard_pos = shard_pos;
    if (enter_shard(ld, err, err_len) != 0) return -1;
    if (window_pos < 0 || window_pos >= ld->num_windows) {
        snprintf(err, err_len, "data position: step %ld of %s does not exist (it has %ld)",
                 window_pos, loader_current_path(ld), ld->num_windows);
        return -1;
    }
    ld->window_pos = window_pos;
    return 0;
}

int loader_reset(Loader *ld, char *err, size_t err_len)
{
    ld->epoch = 0;
    ld->shard_pos = 0;
    order_shards(ld);
    /* reopens the first shard if another is open: that can fail (file gone) */
    return enter_shard(ld, err, err_len);
}

void loader_close(Loader *ld)
{
    if (ld->fd >= 0) close(ld->fd);
    if (ld->paths)
        for (int i = 0; i < ld->num_shards; i++) free(ld->paths[i]);
    free(ld->paths);
    free(ld->ntok);
    free(ld->shard_order);
    free(ld->window_order);
    free(ld->window);
    memset(ld, 0, sizeof *ld);
    ld->fd = -1;
}
