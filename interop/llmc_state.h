/* interop/llmc_state.h — llm.c's optimizer state file (state_%08d_%05d.bin,
 * written by llm.c's CUDA trainer beside model_%08d.bin): reading and
 * writing it, nothing more. What this project does with it (the checkpoint
 * trio, the data position, the refusals) is in llmc_ckpt.h.
 *
 * Owns: the format, as llm.c's save_state/load_state lay it out
 * (little-endian, no checksum):
 *   int32 header[256], zero except
 *     [0] magic 20240527   [1] version 1   [2] num_processes  [3] rank
 *     [4] use_master_weights (1: an fp32 master copy follows m and v)
 *     [5] should_shuffle (the data loader's shuffling)
 *     [10] step: optimizer updates completed (the next update's AdamW t is
 *          step+1)
 *     [20..21] rng_state, [22..23] rng_state_last_update (u64, llm.c's
 *          stochastic-rounding RNG), [30..31] current_shard_idx,
 *          [32..33] current_sample_idx (u64; low 32 bits first)
 *   then `count` float32 each: AdamW m, then v, then (when [4] is 1) the
 *   master weights. count is the parameters this rank holds: all of them
 *   (padded vocab included, llm.c's order, as in the model file) without
 *   ZeRO, a 1/num_processes slice with ZeRO-1. The file does not record
 *   count: a reader derives it from the size, exactly
 *   1024 + 4 * count * (2 + [4]). */
#ifndef INTEROP_LLMC_STATE_H
#define INTEROP_LLMC_STATE_H

#include <stddef.h>
#include <stdint.h>

#define LLMC_STATE_MAGIC 20240527
#define LLMC_STATE_VERSION 1
#define LLMC_STATE_HEADER_BYTES 1024
#define LLMC_STATE_MAX_PROCESSES 4096
#define LLMC_STATE_MAX_COUNT ((uint64_t)1 << 40)

typedef struct {
    int num_processes, rank;
    int use_master_weights, should_shuffle; /* 0 or 1 */
    int64_t step;                           /* >= 0 */
    uint64_t rng_state, rng_state_last_update;
    uint64_t shard_idx, sample_idx;         /* the train data loader's position */
} LlmcState;

/* Write path crash-safely (temp, fsync, rename, fsync the folder): the
 * header from st, then count floats of m, v and, when
 * st->use_master_weights, master. Returns 0, or -1 with "<path>: <fault>". */
int llmc_state_write(const char *path, const LlmcState *st, uint64_t count, const float *m,
                     const float *v, const float *master, char *err, size_t err_len);

/* Check the header and the size (magic, version, process count and rank,
 * the 0/1 flags, step >= 0, a size that is exactly a header and whole
 * arrays) from 1024 header bytes and the file size; fills st and *count.
 * `what` names the file in messages. Returns 0, or -1 with the fault. */
int llmc_state_parse_header(const unsigned char *header, uint64_t file_bytes, const char *what,
                            LlmcState *st, uint64_t *count, char *err, size_t err_len);

/* Open path and parse its header (llmc_state_parse_header). */
int llmc_state_read_header(const char *path, LlmcState *st, uint64_t *count, char *err,
                           size_t err_len);

/* Read the arrays of a file whose header gave st and count: m and v
 * (count floats each) and, when master is not NULL and the file has them,
 * the master weights. The size is checked again (a file changed since its
 * header was read is refused). */
int llmc_state_read_arrays(const char *path, const LlmcState *st, uint64_t count, float *m,
                           float *v, float *master, char *err, size_t err_len);

#endif
