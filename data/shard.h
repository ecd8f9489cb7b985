/* data/shard.h — llm.c's token shard format: reading, validating, writing.
 *
 * Owns: the on-disk format and the data loader's window order.
 *
 * Format: a header of 256 int32 (magic 20240520, version 1, token count n,
 * the rest zero), then n uint16 tokens. File size is exactly 1024 + 2n.
 *
 * Order (shuffle off, llm.c's): step s of rank r reads B*T+1 tokens at token
 * offset (s*nranks + r)*B*T within the current shard. A shard of n tokens
 * has floor((n-1) / (nranks*B*T)) such steps: the loader moves to the next
 * shard (wrapping to the first) when the windows of all ranks for the next
 * step would not fit, so ranks always change shards together. With shuffle
 * on, the shard order and the order of steps inside each shard are permuted
 * by an RNG seeded from (seed, epoch); every rank draws the same
 * permutation, so the rank windows stay disjoint. */
#ifndef DATA_SHARD_H
#define DATA_SHARD_H

#include <stddef.h>
#include <stdint.h>

#define SHARD_MAGIC 20240520
#define SHARD_VERSION 1
#define SHARD_HEADER_INTS 256
#define SHARD_HEADER_BYTES (SHARD_HEADER_INTS * 4)

/* Write tokens to path as one shard: to "<path>.tmp" first, then renamed
 * over path, so a crash never leaves a partial shard. Returns 0, or -1 with
 * a reason (naming the file) in err. */
int shard_write(const char *path, const uint16_t *tokens, size_t n, char *err, size_t err_len);

/* Check a shard's header and size. On success stores the token count in *n
 * and returns 0; otherwise -1 with "<path>: <fault>" in err. */
int shard_check(const char *path, size_t *n, char *err, size_t err_len);

typedef struct {
    char **paths;        /* the matching shards, sorted */
    size_t *ntok;        /* tokens in each */
    int num_shards;
    int B, T, rank, nranks;
    int vocab_size;      /* tokens >= this are rejected as batches are read */
    int shuffle;
    uint64_t seed;
    /* position */
    int shard_pos;       /* index into shard_order */
    long window_pos;     /* index into window order of the current shard */
    int *shard_order;
    long *window_order;  /* permutation of windows (shuffle) or identity */
    long num_windows;    /* windows of the current shard for this rank */
    uint64_t epoch;      /* times all shards were consumed */
    /* the current shard: an open descriptor; each window is read with
     * pread, so memory use does not grow with shard size */
    int loaded;          /* shard index open, -1 none */
    int fd;
    uint16_t *window;    /* B*T+1 tokens */
} Loader;

/* Expand a glob, validate every shard (header, size, at least
 * nranks*B*T+1 tokens), and position at the start. Returns 0, or -1 with a
 * message naming the glob or file in err. */
int loader_open(Loader *ld, const char *glob_pattern, int B, int T, int rank, int nranks,
                int vocab_size, int shuffle, uint64_t seed, char *err, size_t err_len);

/* Next micro-batch: inputs and targets, B*T int32 each. Returns 0, or -1
 * with a message (file, offset, token id) when a token is >= vocab_size or
 * the read fails. */
int loader_next(Loader *ld, int *inputs, int *targets, char *err, size_t err_len);

/* Move to a saved position: `epoch` (which decides the shuffle order),
 * shard_pos into the shard order and window_pos into that shard's window
 * order. Returns 0, or -1 with a message when the position does not exist
 * for these shards (a different data set, batch or world size). */
int loader_seek(Loader *ld, uint64_t epoch, int shard_pos, long window_pos, char *err,
                size_t err_len);

/* Back to the first window of the first shard (validation restarts).
 * Returns 0, or -1 with a message when the first shard cannot be reopened. */
int loader_reset(Loader *ld, char *err, size_t err_len);

/* Token offset, in the current shard, of the window loader_next would read
 * next (for tests and for saving the position). */
long loader_offset(const Loader *ld);
const char *loader_current_path(const Loader *ld);

void loader_close(Loader *ld);

#endif
