/* data/loader.c — the data loader's window order: reading batches, moving
 * through shards and epochs, seeking to a saved position (shard.h). What a
 * glob may hold is checked by loader_open (data/loader_open.c). */
#include "loader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rng.h"

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
    int w = ld->tbytes[ld->shard_order[ld->shard_pos]];
    ssize_t want = (ssize_t)((n + 1) * (size_t)w);
    if (pread(ld->fd, ld->window, (size_t)want, SHARD_HEADER_BYTES + w * (off_t)off) != want) {
        snprintf(err, err_len, "%s: short read at token offset %ld (file changed?)", path, off);
        return -1;
    }
    if (w == 2) { /* widen in place, from the end: value i moves from byte 2i to 4i */
        const unsigned char *b = (const unsigned char *)ld->window;
        for (size_t i = n + 1; i-- > 0;) {
            uint16_t v;
            memcpy(&v, b + 2 * i, sizeof v);
            ld->window[i] = v;
        }
    }
    for (size_t i = 0; i <= n; i++)
        if (ld->window[i] >= (uint32_t)ld->vocab_size) {
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
    free(ld->tbytes);
    free(ld->sha);
    free(ld->sha_from);
    free(ld->manifest);
    free(ld->notes);
    free(ld->shard_order);
    free(ld->window_order);
    free(ld->window);
    memset(ld, 0, sizeof *ld);
    ld->fd = -1;
}
