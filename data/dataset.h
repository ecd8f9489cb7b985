/* data/dataset.h — a dataset as a whole: the shards ./tokenize writes under
 * one prefix, their manifest, and replacing one dataset by another.
 *
 * Owns: the manifest format (dataset_manifest.c) and the staging and switch
 * protocol (dataset_stage.c).
 *
 * Manifest: PREFIX.manifest.json beside the shards PREFIX_val_NNNNNN.bin,
 * PREFIX_train_NNNNNN.bin (format: shard.h), JSON:
 *   {"format":"train_gpt dataset","version":1,"dataset_id":"<16 hex>",
 *    "hash":"sha256","tokens":T,"sha256":"<64 hex>","token_bytes":w,
 *    "tokenizer":{"name":"gpt2","vocab_size":V,"id":"<16 hex>",
 *                 "files":[{"name":"encoder.json","sha256":"<64 hex>"},...]},
 *    "shards":[{"name":"x_val_000000.bin","tokens":n,"bytes":b,
 *               "sha256":"<64 hex>"}, ...]}
 * "token_bytes" is 2 (uint16 shards) or 4 (uint32, for a vocabulary over
 * 65536 ids; shard.h); absent, 2 (manifests older than it). "name" is a
 * file name in the manifest's folder (no '/'); "bytes" is 1024 + w n; each
 * "sha256" is that of the whole shard file (`sha256sum`
 * prints the same); the top "sha256" is the SHA-256 of the shards' 32-byte
 * digests in the order listed, and "tokens" their sum. The dataset id is in
 * every shard's header too (shard.h): the first 8 bytes, big-endian, of the
 * SHA-256 of the token stream and the split and shard-size settings, so the
 * same input tokenized the same way gives the same bytes, and two different
 * datasets have different ids (up to a 2^-64 chance).
 *
 * Tokenizer identity ("tokenizer", absent in older manifests): the
 * tokenizer the tokens came from, as the SHA-256 of each of its files
 * (GPT-2: encoder.json, then vocab.bpe; a Hugging Face or tiktoken
 * tokenizer: its one file), each under the file's base name, its vocabulary
 * size, and "id": the first 8 bytes, big-endian, of the SHA-256 of the
 * files' 32-byte digests in the order listed (never 0), so the same files
 * give the same id wherever they lie. A reader checks the id against the
 * files and that the vocabulary fits the shards' width. The trainer keeps
 * the id with the model (interop/model_file.h) and refuses shards of
 * another tokenizer.
 *
 * Staging and switch (./tokenize). A new dataset never replaces another
 * unasked: when the prefix holds a manifest or shards (PREFIX.manifest.json,
 * PREFIX_{val,train}_<digits>.bin: an earlier ./tokenize, or llm.c's own
 * shards), ./tokenize refuses at start, before reading any input, unless
 * told to overwrite. A new dataset is written into the
 * folder PREFIX.tokenize-PID.tmp/ beside the prefix, on the same file
 * system: every shard, then the manifest, each fsynced, then the folder.
 * Only then is the old dataset replaced:
 *   1. every target name is checked (absent or a regular file);
 *   2. the old dataset's files move into PREFIX.replaced_<time>/ (renames,
 *      nothing deleted), except when the old manifest has the new dataset's
 *      id: its files are then the new ones byte for byte (same tokens, split
 *      and shard size) and only shards it does not list move;
 *   3. each new shard is renamed into place, then the manifest, the
 *      folders fsynced; the staging folder is removed.
 * Guarantees:
 *   - any failure before step 2 (input errors, a full disk, a file size
 *     limit, a name taken by a folder) leaves the old dataset untouched,
 *     and the staging folder is removed;
 *   - a crash before step 2 leaves the old dataset untouched and a staging
 *     folder, which the next ./tokenize for that prefix removes;
 *   - a crash (or a failed rename, which needs an I/O error) during steps 2
 *     and 3 leaves the old files split between the prefix and the
 *     replaced_ folder, or part of the new dataset without its manifest;
 *     the loader refuses such a glob, naming the shards whose dataset id
 *     differs from the manifest's or that no manifest lists; running
 *     ./tokenize --overwrite again repairs it. Steps 2 and 3 are renames
 *     only: milliseconds.
 * The old and the new dataset both need room on the disk until the switch.
 * Two ./tokenize runs on one prefix at once: each holds a lock (flock) on
 * its staging folder, and a run that finds another's locked folder refuses
 * to start. */
#ifndef DATA_DATASET_H
#define DATA_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "shard.h"
#include "tokenizer.h"

#define DATASET_MANIFEST_SUFFIX ".manifest.json"
#define DATASET_MANIFEST_MAX_BYTES (256u << 20)
#define DATASET_NAME_MAX 256

typedef struct {
    char name[DATASET_NAME_MAX]; /* file name in the manifest's folder */
    uint64_t tokens, bytes;
    unsigned char sha256[SHARD_SHA256_BYTES];
} DatasetShard;

#define DATASET_TOKENIZER_MAX_FILES 4
#define DATASET_TOKENIZER_NAME_MAX 64

typedef struct {
    char name[DATASET_TOKENIZER_NAME_MAX]; /* "gpt2", or the kind ./tokenize names */
    int vocab_size;
    int num_files;
    struct {
        char name[DATASET_NAME_MAX];       /* the file's base name */
        unsigned char sha256[SHARD_SHA256_BYTES];
    } files[DATASET_TOKENIZER_MAX_FILES];
    uint64_t id;                 /* dataset_tokenizer_id of the files; 0: none recorded */
} DatasetTokenizer;

typedef struct {
    uint64_t id;                 /* non-zero */
    int token_bytes;             /* 2 or 4 (the shards' width) */
    DatasetTokenizer tok;        /* tok.id 0: none recorded */
    uint64_t tokens;             /* sum over the shards */
    unsigned char sha256[SHARD_SHA256_BYTES]; /* over the shards' digests */
    int num_shards;
    DatasetShard *shards;        /* in the order listed: val, then train */
    int *by_name;                /* shard indices sorted by name (parse), or NULL */
} DatasetManifest;

/* Parse and check a manifest held in memory; `what` names it in messages.
 * Checks every field, the names (a plain file name, each once), bytes =
 * 1024 + token_bytes x tokens, the tokenizer's identity when present, and
 * both totals. Returns 0, or -1 with a message. */
int dataset_manifest_parse(const char *text, size_t len, const char *what, DatasetManifest *m,
                           char *err, size_t err_len);
/* Read and parse a manifest file (a regular file of at most
 * DATASET_MANIFEST_MAX_BYTES). */
int dataset_manifest_read(const char *path, DatasetManifest *m, char *err, size_t err_len);
/* Fill the totals (tokens, sha256) from the shards, then write the file
 * crash-safely (base/fileio.h). */
int dataset_manifest_write(const char *path, DatasetManifest *m, char *err, size_t err_len);
void dataset_manifest_free(DatasetManifest *m);
/* Build m->by_name (parse does): 0, or -1 when out of memory. */
int dataset_manifest_index(DatasetManifest *m);
/* Index of the shard named `name`, or -1 (a binary search once indexed). */
int dataset_manifest_find(const DatasetManifest *m, const char *name);

/* For a shard path ".../PREFIX_val_NNNNNN.bin" or ".../PREFIX_train_N...bin"
 * (one or more digits), the manifest path ".../PREFIX.manifest.json" into
 * out: 0; -1 when the name does not follow that pattern (or is too long). */
int dataset_manifest_path_for(const char *shard_path, char *out, size_t len);

/* SHA-256 of the manifest's shard digests, in order (its "sha256"). */
void dataset_manifest_digest(const DatasetManifest *m, unsigned char out[SHARD_SHA256_BYTES]);

/* ---- the tokenizer's identity (dataset_manifest.c) ---- */
/* Add a tokenizer file to t: its SHA-256 (read whole) under its base name;
 * then t->id is recomputed. 0, or -1 naming the file. */
int dataset_tokenizer_add_file(DatasetTokenizer *t, const char *path, char *err, size_t err_len);
/* The same from a digest known already (64 hex digits), e.g. GPT-2's
 * files, whose hashes tokenizer_load checked. */
int dataset_tokenizer_add_digest(DatasetTokenizer *t, const char *name, const char *sha256_hex,
                                 char *err, size_t err_len);
/* The identity of t's files (see above); never 0. */
uint64_t dataset_tokenizer_id(const DatasetTokenizer *t);
/* The identity of a loaded tokenizer tk, opened from choice c (the same
 * for ./tokenize, ./train_gpt and the HellaSwag maker): GPT-2's two
 * published digests, name "gpt2"; a tokenizer.json: the file's own sha256,
 * name "llama3" when it is data/source.h's Llama 3 file, else the file's base
 * name; a tiktoken encoding: its rank file's published sha256 (checked when
 * found), name the encoding. vocab_size from tk. 0, or -1 naming the file. */
int dataset_tokenizer_of(DatasetTokenizer *t, const Tokenizer *tk, const TokenizerChoice *c,
                         char *err, size_t err_len);
/* "gpt2 (id 0123456789abcdef: encoder.json 196139668be6..., vocab.bpe
 * 1ce1664773c5...)" into out. */
void dataset_tokenizer_describe(const DatasetTokenizer *t, char *out, size_t len);

/* ---- staging (./tokenize) ---- */
typedef struct {
    char prefix[4096];           /* as given, e.g. "datasets/tiny" */
    char dir[4096];              /* its folder */
    char base[DATASET_NAME_MAX]; /* its last part, "tiny" */
    char stage[4200];            /* the staging folder */
    int lock_fd;                 /* open on the staging folder, flock'ed; -1 none */
    int num_val, num_train;      /* shards staged so far */
    int switching;               /* commit started renaming into place (step 2) */
    DatasetManifest man;         /* what is staged */
    char notes[1024];            /* "note: ..." lines for the caller (leftovers removed) */
    int overwrite;               /* the old dataset may be moved aside (step 2) */
    int old_manifest, old_shards;    /* what the prefix held at begin */
    unsigned long long old_bytes;    /* their sizes */
    uint64_t old_id;             /* the old manifest's dataset id; 0 none or unreadable */
    char replaced[4400];         /* the folder the old files moved into; "" none */
    int moved;                   /* old files moved there */
} DatasetStage;

/* Create and lock the staging folder for prefix (whose folder must exist);
 * remove staging folders of the same prefix left by runs that died (a note
 * in s->notes); refuse when another live run holds one, and, unless
 * overwrite, when the prefix holds a dataset (the message names it, its
 * id and size, and --overwrite). */
int dataset_stage_begin(DatasetStage *s, const char *prefix, int overwrite, char *err,
                        size_t err_len);

/* A path inside the staging folder for a scratch file (e.g. the token
 * spool); removed by dataset_stage_close when still there. */
int dataset_stage_scratch(const DatasetStage *s, const char *name, char *out, size_t len);

/* Write the next shard of `split` ("val" or "train") into the staging
 * folder, with dataset id s->man.id (set it first), and list it: n tokens
 * of s->man.token_bytes each (set it first; 0 counts as 2: uint16_t). */
int dataset_stage_add(DatasetStage *s, const char *split, const void *tokens, size_t n,
                      char *err, size_t err_len);

/* Write the manifest, then switch (steps 1-3 above). On an error before
 * the switch the old dataset is untouched. After it, s->replaced names the
 * folder the old files went to ("" when none moved) and s->moved counts
 * them. */
int dataset_stage_commit(DatasetStage *s, char *err, size_t err_len);

/* After commit, or after any failure: remove the staging folder and what
 * is left in it, release the lock, free. */
void dataset_stage_close(DatasetStage *s);

#endif
