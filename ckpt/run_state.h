/* ckpt/run_state.h — the run state file: everything but the parameters that
 * a run needs to continue exactly.
 *
 * Owns: RunState (configuration, progress, data-loader position) and its
 * on-disk format, one file per optimizer shard ("state_rNNNNN.bin" in a
 * checkpoint folder; see checkpoint.h for the folder).
 *
 * Format (version 2, little-endian):
 *   header, 64 bytes:
 *     0  magic "TGPTSTAT"            8  u32 version (2; 1 is read too)
 *     12 u32 entries E (1..RUN_STATE_MAX_ENTRIES; 1..256 in version 1)
 *     16 u32 arrays A (2: AdamW m, then v)
 *     20 u32 crc32 of the header with this field zero
 *     24 u64 num_params P (the whole model, <= 2^40)
 *     32 u64 offset, 40 u64 count: this file holds elements [offset,
 *        offset+count) of each array (a ZeRO-1 shard, or all of them)
 *     48 u64 file bytes (= 64 + 32 E + 4 A count)
 *     56 u32 crc32 of every byte after the header   60 u32 zero
 *   E entries of 32 bytes: name (23 bytes, NUL-padded, NUL-terminated),
 *     u8 type (1 int64, 2 float64, 3 uint64), 8 value bytes;
 *   then A arrays of `count` fp32 values.
 * A reader checks the size, both checksums, every count against the file
 * size (without overflow) and that each entry it needs is present once.
 * Entries a reader does not know are skipped, and entries added later
 * ("run-id") read as 0 when absent.
 *
 * The training data ("--train-data") is recorded as "train-shards" (the
 * count) and either
 *   - "train-data-sha" (u64) and one "shard-sha-NNNNNNN" (u64) per shard,
 *     N from 0: the first 8 bytes, read big-endian, of the SHA-256 of the
 *     shards' digests in order, and of each shard's SHA-256 (shard.h), so
 *     a changed shard is named; 64 bits per shard leave a 2^-64 chance that
 *     a change goes unseen. Written when the loader has content hashes;
 *   - or "train-tokens-hash" (u64): FNV-1a over the shards' token counts,
 *     all that version 1 recorded (its content is then not checked).
 * Version 1 files (no content hashes) are still read; version 2 (more
 * entries than version 1's limit of 256) is refused by older readers. */
#ifndef CKPT_RUN_STATE_H
#define CKPT_RUN_STATE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    /* configuration that must match to resume exactly */
    int64_t layers, channels, heads, vocab, padded_vocab, max_seq_len;
    int64_t batch, seq_len, grad_accum, world_size, zero;
    int64_t shuffle, lr_schedule, warmup;
    uint64_t seed;
    double lr, lr_min_frac, beta1, beta2, eps, weight_decay, grad_clip;
    int64_t num_shards;
    /* the train data: see "The training data" above */
    int64_t data_kind;         /* RUN_STATE_DATA_SHA or RUN_STATE_DATA_COUNTS */
    uint64_t data_fingerprint; /* "train-data-sha" or "train-tokens-hash" */
    uint64_t *shard_sha;       /* num_shards values (DATA_SHA), else NULL; malloc'd and
                                * owned by the RunState: run_state_free */
    /* configuration that may change on resume (reported) */
    int64_t recompute, loss_chunk, total_steps;
    /* progress */
    int64_t step;      /* optimizer steps done, skipped ones included */
    int64_t adam_t;    /* AdamW updates applied (skipped steps excluded) */
    int64_t bad_steps; /* consecutive non-finite steps at the save */
    uint64_t epoch;    /* data loader: epoch, shard_pos, window_pos */
    int64_t shard_pos, window_pos;
    uint64_t sample_rng; /* the sampler's RNG (--sample-every), model/sample.h */
    int64_t rank;      /* the rank that wrote this file */
    uint64_t run_id;   /* the run's identity (checkpoint.h); 0 in files older than it */
} RunState;

typedef struct {
    RunState st;
    uint64_t num_params, offset, count;
    uint32_t n_entries, payload_crc;
} RunStateInfo;

#define RUN_STATE_HEADER_BYTES 64
#define RUN_STATE_ENTRY_BYTES 32
#define RUN_STATE_MAX_PARAMS ((uint64_t)1 << 40)
#define RUN_STATE_MAX_SHARDS 1000000
#define RUN_STATE_MAX_ENTRIES (256 + RUN_STATE_MAX_SHARDS)
enum { RUN_STATE_DATA_COUNTS = 1, RUN_STATE_DATA_SHA = 2 };

/* Free what a RunState owns (shard_sha); safe on a zeroed RunState. */
void run_state_free(RunState *st);

/* Write a state file crash-safely (temp, fsync, rename; the caller fsyncs
 * the folder). m and v hold `count` host floats for elements [offset,
 * offset+count). *bytes and *crc receive the whole file's size and crc32
 * (for the manifest). */
int run_state_write(const char *path, const RunState *st, uint64_t num_params, uint64_t offset,
                    uint64_t count, const float *m, const float *v, uint64_t *bytes,
                    uint32_t *crc, char *err, size_t err_len);

/* Validate the header and entries (not yet the arrays' checksum). On
 * success info->st owns its shard_sha (run_state_free). */
int run_state_read_info(const char *path, RunStateInfo *info, char *err, size_t err_len);

/* Read the whole file, verifying the payload crc32, and copy the part of
 * its slice that falls in [want_off, want_off+want_count) into m and v
 * (indexed from want_off). Returns 0, or -1 naming the file and the fault. */
int run_state_read_range(const char *path, const RunStateInfo *info, uint64_t want_off,
                         uint64_t want_count, float *m, float *v, char *err, size_t err_len);

/* Compare a saved configuration with this run's. Returns -1 when a field
 * that decides the exact continuation differs, with every difference named
 * in err ("--batch: the save has 4, this run 8; ..."); 0 otherwise, with
 * the harmless differences (recompute, steps) in notes. The
 * train data's hashes are not compared here: the caller knows the shards'
 * names (ckpt/session.c). */
int run_state_compare(const RunState *saved, const RunState *now, char *err, size_t err_len,
                      char *notes, size_t notes_len);

/* A hash of the fields that must match to resume (the strict ones): the
 * configuration's identity, recorded in each save's manifest. */
uint64_t run_state_config_hash(const RunState *st);

#endif
