/* data/loader.h — the data loader: a glob of shards (data/shard.h) read as
 * (B, T) windows of inputs and targets, in llm.c's order or shuffled.
 *
 * Owns: the loader's checks (each shard's format, the dataset id they
 * share, the manifest they were made with), their content hashes for a run
 * state and a fresh run's check of them against the manifest, and the
 * window order (data/loader.c, data/loader_open.c, data/loader_verify.c).
 *
 * Order (shuffle off, llm.c's): step s of rank r reads B*T+1 tokens at token
 * offset (s*nranks + r)*B*T within the current shard. A shard of n tokens
 * has floor((n-1) / (nranks*B*T)) such steps: the loader moves to the next
 * shard (wrapping to the first) when the windows of all ranks for the next
 * step would not fit, so ranks always change shards together. With shuffle
 * on, the shard order and the order of steps inside each shard are permuted
 * by an RNG seeded from (seed, epoch); every rank draws the same
 * permutation, so the rank windows stay disjoint.
 *
 * Widths. A glob may hold uint16 and uint32 shards (shard.h), each read at
 * its own width. A model whose vocabulary (vocab_size, the ids a token may
 * take; the padded rows are never a token) is over SHARD_U16_VOCAB is
 * refused uint16 shards at open, naming the shard: such a shard cannot
 * hold that tokenizer's ids, so it was made with another tokenizer. Any
 * token >= vocab_size is refused as its batch is read, as for uint16.
 *
 * Tokenizer. The tokenizer identity of the dataset manifest the shards were
 * checked against (dataset.h) is kept in tokenizer_id (0: none recorded,
 * llm.c's files or an older manifest) for the trainer's check that a model
 * is fed the tokens of the tokenizer it was trained on. */
#ifndef DATA_LOADER_H
#define DATA_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "shard.h"

/* The most shards one glob may match (a run state records each one's hash). */
#define LOADER_MAX_SHARDS 1000000

typedef struct {
    char **paths;        /* the usable shards, sorted */
    size_t *ntok;        /* tokens in each */
    int num_shards;
    int num_skipped;     /* matched, but too small for one step: not used */
    uint64_t dataset_id; /* the shards' common dataset id; 0 = none (llm.c's files) */
    char *manifest;      /* the dataset manifest the shards were checked against, or NULL */
    uint64_t tokenizer_id; /* that manifest's tokenizer identity; 0 none */
    char tokenizer_desc[320]; /* its name and files, for messages ("" none) */
    unsigned char *tbytes; /* bytes per token of each shard: 2 or 4 */
    /* content hashes (loader_hash): sha[i] is valid when sha_from[i] != 0 */
    unsigned char (*sha)[SHARD_SHA256_BYTES];
    unsigned char *sha_from; /* LOADER_SHA_* */
    char *notes;         /* "note: ..." lines for the caller to print, or NULL */
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
    uint32_t *window;    /* B*T+1 tokens (a uint16 shard's read into its first half, then widened) */
} Loader;

enum { LOADER_SHA_NONE = 0, LOADER_SHA_MANIFEST = 1, LOADER_SHA_READ = 2 };

/* Expand a glob and check what it matched, then position at the start:
 *  - every shard: header and size (shard_check);
 *  - one dataset: all shards carry the same dataset id;
 *  - a shard named like ./tokenize's output (PREFIX_val_NNNNNN.bin,
 *    PREFIX_train_NNNNNN.bin) whose PREFIX.manifest.json exists must be
 *    listed there with the same token count, size and dataset id, and
 *    every shard the manifest lists that the glob would match must exist;
 *  - a uint16 shard with a vocab_size over SHARD_U16_VOCAB is refused;
 *  - a shard with fewer than nranks*B*T+1 tokens (too small for one step)
 *    is skipped, with one line in ld->notes; only when no shard is left is
 *    that an error.
 * Returns 0, or -1 with a message naming the glob or file in err. */
int loader_open(Loader *ld, const char *glob_pattern, int B, int T, int rank, int nranks,
                int vocab_size, int shuffle, uint64_t seed, char *err, size_t err_len);

/* Content hashes (SHA-256) of every shard, for the run's data fingerprint.
 * LOADER_HASH_TRUST takes a manifest's hash for the shards it lists (their
 * size and dataset id were checked at open; reading nothing) and reads the
 * others; LOADER_HASH_READ reads every shard, and refuses one whose content
 * differs from its manifest, naming it. *bytes_read (may be NULL) receives
 * the bytes hashed. Returns 0, or -1 with a message in err. */
enum { LOADER_HASH_TRUST = 0, LOADER_HASH_READ = 1 };
int loader_hash(Loader *ld, int mode, uint64_t *bytes_read, char *err, size_t err_len);

/* 1 when every shard has a content hash (loader_hash succeeded). */
int loader_has_hashes(const Loader *ld);

/* "<path>: its content differs from its dataset manifest <manifest> (sha256
 * <got>..., the manifest lists <listed>...): ..." into err. */
void loader_describe_mismatch(const char *path, const unsigned char *got,
                              const unsigned char *listed, char *err, size_t err_len);

/* A fresh run's check of its data (data/loader_verify.c): every shard whose
 * hash the loaders took from a dataset manifest (LOADER_HASH_TRUST, or no
 * loader_hash at all) is read and compared with it, in a thread of its own
 * so that the reading overlaps the rest of start-up (building the model,
 * its arenas, the parameters). The thread works on copies of the paths and
 * hashes (the loaders stay the caller's) and blocks every signal (they
 * reach the caller's threads; a stop asked for, base/stop.h, ends its
 * reading early). start sets *out to NULL when no shard is listed in a
 * manifest (nothing to read); it returns 0, or -1 with a message (out of
 * memory, no thread). */
typedef struct LoaderVerify LoaderVerify;
typedef struct {
    int shards;          /* shards read */
    uint64_t bytes;      /* their bytes */
    double read_s;       /* the thread's time reading them */
    double wait_s;       /* how long finish waited for it */
} LoaderVerifyStats;
int loader_verify_start(LoaderVerify **out, const Loader *const *loaders, int n, char *err,
                        size_t err_len);
/* Wait for the thread and free v (NULL: nothing to do, 0). Returns 0 when
 * every shard matched its manifest; else -1 with the first shard that did
 * not (loader_describe_mismatch's message, which names the shard and the
 * manifest), or that could not be read, in err. st may be NULL. */
int loader_verify_finish(LoaderVerify *v, LoaderVerifyStats *st, char *err, size_t err_len);

/* A shard of `val` that is also one of `train`'s (the same file: device and
 * inode, whatever the path's spelling), or NULL. */
const char *loader_shared_shard(const Loader *train, const Loader *val);

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
