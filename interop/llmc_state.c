/* interop/llmc_state.c — llm.c's state file: see llmc_state.h. */
#include "llmc_state.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"

_Static_assert(sizeof(float) == 4, "fp32 arrays");

static void put32(unsigned char *h, int i, uint32_t v)
{
    for (int b = 0; b < 4; b++) h[4 * i + b] = (unsigned char)(v >> (8 * b));
}
static void put64(unsigned char *h, int i, uint64_t v)
{
    put32(h, i, (uint32_t)v);
    put32(h, i + 1, (uint32_t)(v >> 32));
}
static uint32_t get32(const unsigned char *h, int i)
{
    uint32_t v = 0;
    for (int b = 0; b < 4; b++) v |= (uint32_t)h[4 * i + b] << (8 * b);
    return v;
}
static uint64_t get64(const unsigned char *h, int i)
{
    return get32(h, i) | (uint64_t)get32(h, i + 1) << 32;
}

int llmc_state_write(const char *path, const LlmcState *st, uint64_t count, const float *m,
                     const float *v, const float *master, char *err, size_t err_len)
{
    if (count == 0 || count > LLMC_STATE_MAX_COUNT || st->step < 0 || st->step > INT32_MAX ||
        (st->use_master_weights && !master)) {
        io_err(err, err_len, "%s: internal error: %llu parameters, step %lld, master %d", path,
               (unsigned long long)count, (long long)st->step, st->use_master_weights);
        return -1;
    }
    unsigned char h[LLMC_STATE_HEADER_BYTES];
    memset(h, 0, sizeof h);
    put32(h, 0, LLMC_STATE_MAGIC);
    put32(h, 1, LLMC_STATE_VERSION);
    put32(h, 2, (uint32_t)st->num_processes);
    put32(h, 3, (uint32_t)st->rank);
    put32(h, 4, st->use_master_weights ? 1 : 0);
    put32(h, 5, st->should_shuffle ? 1 : 0);
    put32(h, 10, (uint32_t)st->step);
    put64(h, 20, st->rng_state);
    put64(h, 22, st->rng_state_last_update);
    put64(h, 30, st->shard_idx);
    put64(h, 32, st->sample_idx);
    /* header, m, v and (with master weights) the master copy */
    const void *parts[4] = {h, m, v, master};
    const size_t lens[4] = {sizeof h, count * 4, count * 4, count * 4};
    return io_write_parts(path, parts, lens, st->use_master_weights ? 4 : 3, err, err_len);
}

int llmc_state_parse_header(const unsigned char *h, uint64_t file_bytes, const char *what,
                            LlmcState *st, uint64_t *count, char *err, size_t err_len)
{
    memset(st, 0, sizeof *st);
    *count = 0;
    if (file_bytes < LLMC_STATE_HEADER_BYTES) {
        io_err(err, err_len, "%s: %llu bytes, shorter than llm.c's 1024-byte state header", what,
               (unsigned long long)file_bytes);
        return -1;
    }
    uint32_t magic = get32(h, 0), version = get32(h, 1);
    int32_t np = (int32_t)get32(h, 2), rank = (int32_t)get32(h, 3);
    int32_t master = (int32_t)get32(h, 4), shuffle = (int32_t)get32(h, 5);
    int32_t step = (int32_t)get32(h, 10);
    if (magic != LLMC_STATE_MAGIC) {
        io_err(err, err_len, "%s: bad magic %u (an llm.c state file has %d)", what, magic,
               LLMC_STATE_MAGIC);
        return -1;
    }
    if (version != LLMC_STATE_VERSION) {
        io_err(err, err_len, "%s: unsupported llm.c state version %u (only %d is known)", what,
               version, LLMC_STATE_VERSION);
        return -1;
    }
    if (np < 1 || np > LLMC_STATE_MAX_PROCESSES || rank < 0 || rank >= np) {
        io_err(err, err_len, "%s: bad process count %d or rank %d (header [2] and [3])", what,
               np, rank);
        return -1;
    }
    if ((master != 0 && master != 1) || (shuffle != 0 && shuffle != 1)) {
        io_err(err, err_len, "%s: use_master_weights %d and should_shuffle %d must be 0 or 1 "
               "(header [4] and [5])", what, master, shuffle);
        return -1;
    }
    if (step < 0) {
        io_err(err, err_len, "%s: negative step %d (header [10])", what, step);
        return -1;
    }
    uint64_t per = 4ull * (2 + (uint64_t)master), payload = file_bytes - LLMC_STATE_HEADER_BYTES;
    if (payload == 0 || payload % per != 0 || payload / per > LLMC_STATE_MAX_COUNT) {
        io_err(err, err_len, "%s: %llu bytes after the header is not %d whole float32 arrays "
               "(AdamW m, v%s) of 1 to 2^40 values", what, (unsigned long long)payload,
               2 + master, master ? ", master weights" : "");
        return -1;
    }
    st->num_processes = np;
    st->rank = rank;
    st->use_master_weights = master;
    st->should_shuffle = shuffle;
    st->step = step;
    st->rng_state = get64(h, 20);
    st->rng_state_last_update = get64(h, 22);
    st->shard_idx = get64(h, 30);
    st->sample_idx = get64(h, 32);
    *count = payload / per;
    return 0;
}

int llmc_state_read_header(const char *path, LlmcState *st, uint64_t *count, char *err,
                           size_t err_len)
{
    off_t size;
    unsigned char h[LLMC_STATE_HEADER_BYTES];
    int fd = io_open_regular(path, &size, err, err_len);
    if (fd < 0) return -1;
    int rc = size < LLMC_STATE_HEADER_BYTES ? 0
             : io_pread_exact(fd, h, sizeof h, 0, path, err, err_len);
    close(fd);
    if (rc != 0) return -1;
    return llmc_state_parse_header(h, (uint64_t)size, path, st, count, err, err_len);
}

int llmc_state_read_arrays(const char *path, const LlmcState *st, uint64_t count, float *m,
                           float *v, float *master, char *err, size_t err_len)
{
    off_t size;
    int fd = io_open_regular(path, &size, err, err_len);
    if (fd < 0) return -1;
    uint64_t want = LLMC_STATE_HEADER_BYTES + 4ull * count * (2 + (uint64_t)st->use_master_weights);
    if ((uint64_t)size != want) {
        close(fd);
        io_err(err, err_len, "%s: %lld bytes, its header promised %llu (file changed?)", path,
               (long long)size, (unsigned long long)want);
        return -1;
    }
    float *arrays[3] = {m, v, st->use_master_weights ? master : NULL};
    int rc = 0;
    for (int a = 0; rc == 0 && a < 3; a++)
        if (arrays[a])
            rc = io_pread_exact(fd, arrays[a], count * 4,
                                (off_t)(LLMC_STATE_HEADER_BYTES + 4ull * count * (uint64_t)a), path,
                                err, err_len);
    close(fd);
    return rc;
}
