/* data/shard.h — llm.c's token shard format: reading, validating, writing,
 * and a shard's content hash. The loader over a glob of shards is
 * data/loader.h.
 *
 * Owns: the on-disk format and the content hash of a shard.
 *
 * Format: a header of 256 int32 (magic, version, token count n, [3] and [4]
 * the dataset id's low and high 32 bits, the rest zero), then n tokens, in
 * one of llm.c's two widths:
 *   - magic 20240520, version 1: uint16 tokens (GPT-2's vocabulary and any
 *     other of at most 65536 ids); file size exactly 1024 + 2n;
 *   - magic 20240801, version 7: uint32 tokens (llm.c's Llama 3 shards, for
 *     vocabularies over 65536 ids); file size exactly 1024 + 4n.
 * A writer picks the width from the vocabulary (shard_token_bytes_for), so
 * GPT-2's shards are byte for byte what they were. llm.c's readers look at
 * [0..2] only, so the id costs no compatibility; llm.c's own files have id
 * 0 ("no dataset id"). ./tokenize gives every shard of one dataset the same
 * non-zero id (data/dataset.h), so shards of two datasets cannot be mixed
 * up unnoticed.
 *
 * Content hash: the SHA-256 of the whole file (header included), so
 * `sha256sum FILE` gives the same digest. OpenSSL's implementation streams
 * at about 1.6 GB/s per core where the CPU has SHA instructions.
 * */
#ifndef DATA_SHARD_H
#define DATA_SHARD_H

#include <stddef.h>
#include <stdint.h>

#define SHARD_MAGIC 20240520      /* uint16 tokens */
#define SHARD_VERSION 1
#define SHARD_MAGIC_U32 20240801  /* uint32 tokens */
#define SHARD_VERSION_U32 7
/* The most ids a uint16 shard holds: a larger vocabulary needs uint32. */
#define SHARD_U16_VOCAB 65536
#define SHARD_HEADER_INTS 256
#define SHARD_HEADER_BYTES (SHARD_HEADER_INTS * 4)

#define SHARD_SHA256_BYTES 32

/* Bytes per token of the shards for a vocabulary of vocab_size ids: 2 up
 * to SHARD_U16_VOCAB, else 4. */
int shard_token_bytes_for(long long vocab_size);

/* Write tokens to path as one shard with dataset id 0: to "<path>.tmp"
 * first, then renamed over path, so a crash never leaves a partial shard.
 * Returns 0, or -1 with a reason (naming the file) in err. */
int shard_write(const char *path, const uint16_t *tokens, size_t n, char *err, size_t err_len);

/* The same, with a dataset id in the header; the file's SHA-256 (computed
 * from the bytes as they are written) goes to sha256 when not NULL. */
int shard_write_id(const char *path, uint64_t dataset_id, const uint16_t *tokens, size_t n,
                   unsigned char sha256[SHARD_SHA256_BYTES], char *err, size_t err_len);

/* The same for either width: tokens holds n values of token_bytes (2:
 * uint16_t, 4: uint32_t) each, written as a version 1 or a version 7 shard. */
int shard_write_as(const char *path, uint64_t dataset_id, const void *tokens, int token_bytes,
                   size_t n, unsigned char sha256[SHARD_SHA256_BYTES], char *err, size_t err_len);

/* shard_write for uint32 tokens (a version 7 shard, dataset id 0). */
int shard_write32(const char *path, const uint32_t *tokens, size_t n, char *err, size_t err_len);

/* Check a shard's header and size. On success stores the token count in *n
 * (and the dataset id in *dataset_id, when not NULL) and returns 0;
 * otherwise -1 with "<path>: <fault>" in err. */
int shard_check(const char *path, size_t *n, char *err, size_t err_len);
int shard_check_id(const char *path, size_t *n, uint64_t *dataset_id, char *err, size_t err_len);
/* Either width: *token_bytes (when not NULL) receives 2 or 4. */
int shard_check_info(const char *path, size_t *n, uint64_t *dataset_id, int *token_bytes,
                     char *err, size_t err_len);

/* SHA-256 of a whole file, read in 1 MiB chunks; *bytes = its size. A stop
 * asked for (base/stop.h) is polled between chunks and fails the read. */
int shard_hash_file(const char *path, unsigned char sha256[SHARD_SHA256_BYTES], uint64_t *bytes,
                    char *err, size_t err_len);

#endif
