/* ckpt/run_state.c — see run_state.h. */
#include "run_state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/fileio.h"

#define MAGIC "TGPTSTAT"
#define VERSION 2
#define NUM_ARRAYS 2
#define V1_MAX_ENTRIES 256
#define DATA_SHA "train-data-sha"
#define DATA_COUNTS "train-tokens-hash"
#define SHARD_PREFIX "shard-sha-"

enum { T_I64 = 1, T_F64 = 2, T_U64 = 3 };
enum { STRICT, NOTE, PROGRESS };

typedef struct {
    const char *name; /* the key on disk: the flag it comes from, or the progress field */
    int type, cls;
    size_t offset;
    const char *label; /* in messages; NULL = "--name" */
    int optional;      /* added after version 1's first files: 0 when absent */
} Field;

#define F(name, type, cls, field) {name, type, cls, offsetof(RunState, field), NULL, 0}
#define FL(name, type, cls, field, label) {name, type, cls, offsetof(RunState, field), label, 0}
#define FOPT(name, type, cls, field) {name, type, cls, offsetof(RunState, field), NULL, 1}
static const Field FIELDS[] = {
    F("layers", T_I64, STRICT, layers), F("channels", T_I64, STRICT, channels),
    F("heads", T_I64, STRICT, heads), F("vocab", T_I64, STRICT, vocab),
    FL("padded-vocab", T_I64, STRICT, padded_vocab, "padded vocab"),
    F("max-seq-len", T_I64, STRICT, max_seq_len),
    F("batch", T_I64, STRICT, batch), F("seq-len", T_I64, STRICT, seq_len),
    F("grad-accum", T_I64, STRICT, grad_accum),
    FL("world-size", T_I64, STRICT, world_size, "world size (ranks)"),
    F("zero", T_I64, STRICT, zero), F("shuffle", T_I64, STRICT, shuffle),
    F("lr-schedule", T_I64, STRICT, lr_schedule), F("warmup", T_I64, STRICT, warmup),
    F("seed", T_U64, STRICT, seed), F("lr", T_F64, STRICT, lr),
    F("lr-min-frac", T_F64, STRICT, lr_min_frac), F("beta1", T_F64, STRICT, beta1),
    F("beta2", T_F64, STRICT, beta2), F("eps", T_F64, STRICT, eps),
    F("weight-decay", T_F64, STRICT, weight_decay), F("grad-clip", T_F64, STRICT, grad_clip),
    FL("train-shards", T_I64, STRICT, num_shards, "--train-data (number of shards)"),
    /* the head's chunk sets the order dW sums its chunks in: a changed one
     * moves step losses by ~1e-8, so it is strict (recompute is bitwise) */
    F("recompute", T_I64, NOTE, recompute), F("loss-chunk", T_I64, STRICT, loss_chunk),
    F("steps", T_I64, NOTE, total_steps),
    F("step", T_I64, PROGRESS, step), F("adam-t", T_I64, PROGRESS, adam_t),
    F("bad-steps", T_I64, PROGRESS, bad_steps), F("epoch", T_U64, PROGRESS, epoch),
    F("shard-pos", T_I64, PROGRESS, shard_pos), F("window-pos", T_I64, PROGRESS, window_pos),
    F("sample-rng", T_U64, PROGRESS, sample_rng), F("rank", T_I64, PROGRESS, rank),
    FOPT("run-id", T_U64, PROGRESS, run_id),
};
#define NUM_FIELDS ((int)(sizeof FIELDS / sizeof FIELDS[0]))

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* One entry: name (NUL-padded to 23 bytes), type, 8 value bytes. */
static void put_entry(unsigned char *e, const char *name, int type, uint64_t bits)
{
    memcpy(e, name, strlen(name)); /* names are < 23 chars */
    e[23] = (unsigned char)type;
    put64(e + 24, bits);
}

static uint64_t field_bits(const RunState *st, const Field *f)
{
    uint64_t bits;
    memcpy(&bits, (const char *)st + f->offset, 8); /* int64, uint64 and double: 8 bytes each */
    return bits;
}

/* The arrays are fp32 in memory and on disk; the format is little-endian,
 * like every machine this trainer targets. */
_Static_assert(sizeof(float) == 4, "fp32 arrays");

int run_state_write(const char *path, const RunState *st, uint64_t num_params, uint64_t offset,
                    uint64_t count, const float *m, const float *v, uint64_t *bytes,
                    uint32_t *crc, char *err, size_t err_len)
{
    if (num_params > RUN_STATE_MAX_PARAMS || offset > num_params || count > num_params - offset) {
        io_err(err, err_len, "%s: slice [%llu, +%llu) outside the %llu parameters", path,
                 (unsigned long long)offset, (unsigned long long)count,
                 (unsigned long long)num_params);
        return -1;
    }
    int sha = st->data_kind == RUN_STATE_DATA_SHA;
    if ((sha && !st->shard_sha) || (!sha && st->data_kind != RUN_STATE_DATA_COUNTS) ||
        st->num_shards < 0 || st->num_shards > RUN_STATE_MAX_SHARDS) {
        io_err(err, err_len, "%s: internal error: train data record (kind %lld, %lld shards)",
               path, (long long)st->data_kind, (long long)st->num_shards);
        return -1;
    }
    size_t n_entries = NUM_FIELDS + 1 + (sha ? (size_t)st->num_shards : 0);
    size_t eb = n_entries * RUN_STATE_ENTRY_BYTES;
    unsigned char *entries = calloc(n_entries, RUN_STATE_ENTRY_BYTES);
    if (!entries) {
        io_err(err, err_len, "%s: out of host memory", path);
        return -1;
    }
    for (int i = 0; i < NUM_FIELDS; i++)
        put_entry(entries + i * RUN_STATE_ENTRY_BYTES, FIELDS[i].name, FIELDS[i].type,
                  field_bits(st, &FIELDS[i]));
    put_entry(entries + NUM_FIELDS * RUN_STATE_ENTRY_BYTES, sha ? DATA_SHA : DATA_COUNTS, T_U64,
              st->data_fingerprint);
    for (int64_t k = 0; sha && k < st->num_shards; k++) {
        char name[24];
        io_err(name, sizeof name, SHARD_PREFIX "%07lld", (long long)k); /* k < 10^7 */
        put_entry(entries + (NUM_FIELDS + 1 + k) * RUN_STATE_ENTRY_BYTES, name, T_U64,
                  st->shard_sha[k]);
    }
    /* The payload crc is needed in the header: compute it before writing. */
    uLong pc = crc32(0L, Z_NULL, 0);
    pc = crc32(pc, entries, (uInt)eb); /* eb < 2^26 */
    const float *arrays[NUM_ARRAYS] = {m, v};
    for (int a = 0; a < NUM_ARRAYS; a++)
        for (uint64_t i = 0; i < count;) {
            uint64_t k = count - i < (1u << 28) ? count - i : (1u << 28);
            pc = crc32(pc, (const unsigned char *)(arrays[a] + i), (uInt)(k * 4));
            i += k;
        }
    unsigned char h[RUN_STATE_HEADER_BYTES];
    memset(h, 0, sizeof h);
    memcpy(h, MAGIC, 8);
    put32(h + 8, VERSION);
    put32(h + 12, (uint32_t)n_entries);
    put32(h + 16, NUM_ARRAYS);
    put64(h + 24, num_params);
    put64(h + 32, offset);
    put64(h + 40, count);
    put64(h + 48, RUN_STATE_HEADER_BYTES + eb + 4ull * NUM_ARRAYS * count);
    put32(h + 56, (uint32_t)pc);
    put32(h + 20, (uint32_t)crc32(crc32(0L, Z_NULL, 0), h, sizeof h));

    IoWriter w;
    if (io_create(&w, path, err, err_len) != 0) {
        free(entries);
        return -1;
    }
    int ok = io_write(&w, h, sizeof h, err, err_len) == 0 &&
             io_write(&w, entries, eb, err, err_len) == 0;
    free(entries);
    for (int a = 0; ok && a < NUM_ARRAYS; a++)
        ok = io_write(&w, arrays[a], count * 4, err, err_len) == 0;
    if (!ok) {
        io_abort(&w);
        return -1;
    }
    *bytes = w.bytes;
    *crc = w.crc;
    return io_commit(&w, err, err_len);
}

void run_state_free(RunState *st)
{
    free(st->shard_sha);
    st->shard_sha = NULL;
}

/* "shard-sha-NNNNNNN" -> N, or -1. */
static long shard_index(const char *name)
{
    size_t p = strlen(SHARD_PREFIX);
    if (strncmp(name, SHARD_PREFIX, p) != 0 || strlen(name) != p + 7) return -1;
    long k = 0;
    for (const char *c = name + p; *c; c++) {
        if (*c < '0' || *c > '9') return -1;
        k = k * 10 + (*c - '0');
    }
    return k;
}

/* The train data's entries (see run_state.h), after the FIELDS are read. */
static int read_data_entries(const char *path, uint32_t version, const unsigned char *entries,
                             uint32_t n_entries, RunState *st, char *err, size_t err_len)
{
    int n_sha = 0, n_counts = 0;
    for (uint32_t i = 0; i < n_entries; i++) {
        const unsigned char *e = entries + (size_t)i * RUN_STATE_ENTRY_BYTES;
        int is_sha = strcmp((const char *)e, DATA_SHA) == 0;
        if (!is_sha && strcmp((const char *)e, DATA_COUNTS) != 0) continue;
        if (e[23] != T_U64) {
            io_err(err, err_len, "%s: entry '%s' has type %u (expected %d)", path,
                   (const char *)e, e[23], T_U64);
            return -1;
        }
        if (is_sha) n_sha++;
        else n_counts++;
        st->data_kind = is_sha ? RUN_STATE_DATA_SHA : RUN_STATE_DATA_COUNTS;
        st->data_fingerprint = get64(e + 24);
    }
    if (n_sha + n_counts != 1 || (version == 1 && n_sha)) {
        io_err(err, err_len, "%s: needs exactly one entry '%s'%s (found %d and %d)", path,
               DATA_COUNTS, version == 1 ? "" : " or '" DATA_SHA "'", n_counts, n_sha);
        return -1;
    }
    if (st->num_shards < 0 || st->num_shards > RUN_STATE_MAX_SHARDS ||
        (n_sha && (uint64_t)st->num_shards > n_entries)) {
        io_err(err, err_len, "%s: train-shards %lld outside 0..%d (or more than its entries)",
               path, (long long)st->num_shards, RUN_STATE_MAX_SHARDS);
        return -1;
    }
    if (!n_sha) return 0;
    st->shard_sha = malloc(((size_t)st->num_shards + 1) * sizeof *st->shard_sha);
    unsigned char *seen = calloc((size_t)st->num_shards + 1, 1);
    int rc = -1;
    if (!st->shard_sha || !seen) {
        io_err(err, err_len, "%s: out of host memory", path);
        goto out;
    }
    for (uint32_t i = 0; i < n_entries; i++) {
        const unsigned char *e = entries + (size_t)i * RUN_STATE_ENTRY_BYTES;
        long k = shard_index((const char *)e);
        if (k < 0) continue;
        if (k >= st->num_shards || seen[k]++ || e[23] != T_U64) {
            io_err(err, err_len, "%s: entry '%s': %s", path, (const char *)e,
                   k >= st->num_shards ? "beyond train-shards" : seen[k] > 1 ? "appears twice"
                                                                            : "not a u64");
            goto out;
        }
        st->shard_sha[k] = get64(e + 24);
    }
    for (int64_t k = 0; k < st->num_shards; k++)
        if (!seen[k]) {
            io_err(err, err_len, "%s: entry '" SHARD_PREFIX "%07lld' is missing", path,
                   (long long)k);
            goto out;
        }
    rc = 0;
out:
    free(seen);
    if (rc != 0) run_state_free(st);
    return rc;
}

/* Every entry: the FIELDS (each once, of its type), then the train data. */
static int read_entries(const char *path, uint32_t version, const unsigned char *entries,
                        uint32_t n_entries, RunState *st, char *err, size_t err_len)
{
    int seen[NUM_FIELDS] = {0};
    for (uint32_t i = 0; i < n_entries; i++) {
        const unsigned char *e = entries + (size_t)i * RUN_STATE_ENTRY_BYTES;
        if (memchr(e, 0, 23) == NULL) {
            io_err(err, err_len, "%s: entry %u: name not terminated", path, i);
            return -1;
        }
        for (int k = 0; k < NUM_FIELDS; k++) {
            if (strcmp((const char *)e, FIELDS[k].name) != 0) continue;
            if (seen[k]++) {
                io_err(err, err_len, "%s: entry '%s' appears twice", path, FIELDS[k].name);
                return -1;
            }
            if (e[23] != FIELDS[k].type) {
                io_err(err, err_len, "%s: entry '%s' has type %u (expected %d)", path,
                       FIELDS[k].name, e[23], FIELDS[k].type);
                return -1;
            }
            uint64_t bits = get64(e + 24);
            memcpy((char *)st + FIELDS[k].offset, &bits, 8);
        }
        /* Entries this version does not know are skipped. */
    }
    for (int k = 0; k < NUM_FIELDS; k++)
        if (!seen[k] && !FIELDS[k].optional) {
            io_err(err, err_len, "%s: entry '%s' is missing", path, FIELDS[k].name);
            return -1;
        }
    return read_data_entries(path, version, entries, n_entries, st, err, err_len);
}

int run_state_read_info(const char *path, RunStateInfo *info, char *err, size_t err_len)
{
    memset(info, 0, sizeof *info);
    off_t size;
    int fd = io_open_regular(path, &size, err, err_len);
    if (fd < 0) return -1;
    unsigned char h[RUN_STATE_HEADER_BYTES], *entries = NULL;
    int rc = -1;
    if (size < RUN_STATE_HEADER_BYTES) {
        io_err(err, err_len, "%s: truncated: %lld bytes, shorter than the %d-byte header", path,
                 (long long)size, RUN_STATE_HEADER_BYTES);
        goto out;
    }
    if (io_pread_exact(fd, h, sizeof h, 0, path, err, err_len) != 0) goto out;
    if (memcmp(h, MAGIC, 8) != 0) {
        io_err(err, err_len, "%s: bad magic (not a train_gpt run state file)", path);
        goto out;
    }
    uint32_t version = get32(h + 8), n_entries = get32(h + 12), n_arrays = get32(h + 16);
    uint32_t hcrc = get32(h + 20);
    put32(h + 20, 0);
    if (version != 1 && version != VERSION) {
        io_err(err, err_len, "%s: unsupported version %u (this build reads 1 and %d)", path,
               version, VERSION);
        goto out;
    }
    if ((uint32_t)crc32(crc32(0L, Z_NULL, 0), h, sizeof h) != hcrc) {
        io_err(err, err_len, "%s: header checksum mismatch (corrupt file)", path);
        goto out;
    }
    uint64_t np = get64(h + 24), off = get64(h + 32), count = get64(h + 40);
    uint64_t fbytes = get64(h + 48);
    uint32_t max_entries = version == 1 ? V1_MAX_ENTRIES : RUN_STATE_MAX_ENTRIES;
    if (n_entries < 1 || n_entries > max_entries) {
        io_err(err, err_len, "%s: entry count %u outside 1..%u", path, n_entries, max_entries);
        goto out;
    }
    if (n_arrays != NUM_ARRAYS) {
        io_err(err, err_len, "%s: %u arrays (expected %d: AdamW m and v)", path, n_arrays,
                 NUM_ARRAYS);
        goto out;
    }
    if (np == 0 || np > RUN_STATE_MAX_PARAMS || off > np || count > np - off) {
        io_err(err, err_len, "%s: bad sizes: slice [%llu, +%llu) of %llu parameters", path,
                 (unsigned long long)off, (unsigned long long)count, (unsigned long long)np);
        goto out;
    }
    /* count <= 2^40, so this cannot overflow. */
    uint64_t want = RUN_STATE_HEADER_BYTES + (uint64_t)RUN_STATE_ENTRY_BYTES * n_entries +
                    4ull * n_arrays * count;
    if (fbytes != want || (uint64_t)size != want) {
        io_err(err, err_len, "%s: size %lld bytes, but the header implies %llu (%s)", path,
                 (long long)size, (unsigned long long)want,
                 (uint64_t)size < want ? "truncated" : fbytes != want ? "inconsistent header"
                                                                      : "trailing bytes");
        goto out;
    }
    size_t eb = (size_t)RUN_STATE_ENTRY_BYTES * n_entries;
    entries = malloc(eb);
    if (!entries) {
        io_err(err, err_len, "%s: out of host memory", path);
        goto out;
    }
    if (io_pread_exact(fd, entries, eb, RUN_STATE_HEADER_BYTES, path, err, err_len) != 0)
        goto out;
    if (read_entries(path, version, entries, n_entries, &info->st, err, err_len) != 0) goto out;
    info->num_params = np;
    info->offset = off;
    info->count = count;
    info->n_entries = n_entries;
    info->payload_crc = get32(h + 56);
    rc = 0;
out:
    free(entries);
    close(fd);
    return rc;
}

int run_state_read_range(const char *path, const RunStateInfo *info, uint64_t want_off,
                         uint64_t want_count, float *m, float *v, char *err, size_t err_len)
{
    off_t size;
    int fd = io_open_regular(path, &size, err, err_len);
    if (fd < 0) return -1;
    uint64_t entries_bytes = (uint64_t)RUN_STATE_ENTRY_BYTES * info->n_entries;
    uint64_t want_size = RUN_STATE_HEADER_BYTES + entries_bytes + 8ull * info->count;
    const size_t CHUNK = IO_READ_CHUNK_BYTES;
    unsigned char *buf = malloc(CHUNK);
    int rc = -1;
    if ((uint64_t)size != want_size) {
        io_err(err, err_len, "%s: size changed since its header was read", path);
        goto out;
    }
    if (!buf) {
        io_err(err, err_len, "%s: out of host memory", path);
        goto out;
    }
    /* One pass over the payload: checksum everything, copy the overlap of
     * this file's slice with the wanted range. */
    uLong c = crc32(0L, Z_NULL, 0);
    uint64_t pos = RUN_STATE_HEADER_BYTES, end = (uint64_t)size;
    uint64_t arrays_at = RUN_STATE_HEADER_BYTES + entries_bytes;
    uint64_t lo = want_off > info->offset ? want_off : info->offset;
    uint64_t hi_a = want_off + want_count, hi_b = info->offset + info->count;
    uint64_t hi = hi_a < hi_b ? hi_a : hi_b;
    while (pos < end) {
        size_t k = end - pos < CHUNK ? (size_t)(end - pos) : CHUNK;
        if (io_pread_exact(fd, buf, k, (off_t)pos, path, err, err_len) != 0) goto out;
        c = crc32(c, buf, (uInt)k);
        /* Bytes [pos, pos+k) against each array's wanted bytes. */
        for (int a = 0; a < NUM_ARRAYS && lo < hi; a++) {
            float *dst = a == 0 ? m : v;
            uint64_t a0 = arrays_at + 4ull * info->count * a;
            uint64_t w0 = a0 + 4 * (lo - info->offset), w1 = a0 + 4 * (hi - info->offset);
            uint64_t s = pos > w0 ? pos : w0, e = pos + k < w1 ? pos + k : w1;
            if (s < e)
                memcpy((char *)dst + (4 * (lo - want_off) + (s - w0)), buf + (s - pos), e - s);
        }
        pos += k;
    }
    if ((uint32_t)c != info->payload_crc) {
        io_err(err, err_len, "%s: checksum mismatch (corrupt file)", path);
        goto out;
    }
    rc = 0;
out:
    free(buf);
    close(fd);
    return rc;
}

static void append(char *buf, size_t len, const char *verb, const Field *f, const char *a,
                   const char *b)
{
    size_t used = strlen(buf);
    if (used + 1 >= len) return;
    char label[64];
    if (f->label) snprintf(label, sizeof label, "%s", f->label);
    else snprintf(label, sizeof label, "--%s", f->name);
    snprintf(buf + used, len - used, "%s%s: the save %s %s, this run %s", used ? "; " : "", label,
             verb, a, b);
}

static void format_value(char *out, size_t len, const RunState *st, const Field *f)
{
    uint64_t bits = field_bits(st, f);
    if (f->type == T_I64) io_err(out, len, "%lld", (long long)(int64_t)bits);
    else if (f->type == T_U64) io_err(out, len, "%llu", (unsigned long long)bits);
    else {
        double d;
        memcpy(&d, &bits, 8);
        io_err(out, len, "%.9g", d);
    }
}

int run_state_compare(const RunState *saved, const RunState *now, char *err, size_t err_len,
                      char *notes, size_t notes_len)
{
    err[0] = 0;
    if (notes_len) notes[0] = 0;
    for (int i = 0; i < NUM_FIELDS; i++) {
        const Field *f = &FIELDS[i];
        if (f->cls == PROGRESS || field_bits(saved, f) == field_bits(now, f)) continue;
        char a[48], b[48];
        format_value(a, sizeof a, saved, f);
        format_value(b, sizeof b, now, f);
        if (f->cls == STRICT)
            append(err, err_len, "has", f, a, b);
        else if (notes_len)
            append(notes, notes_len, "had", f, a, b);
    }
    return err[0] ? -1 : 0;
}

uint64_t run_state_config_hash(const RunState *st)
{
    /* FNV-1a over the strict fields' 8 bytes each, then the train data's
     * fingerprint (which run_state_compare leaves to ckpt/session.c) */
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i <= NUM_FIELDS; i++) {
        if (i < NUM_FIELDS && FIELDS[i].cls != STRICT) continue;
        uint64_t v = i < NUM_FIELDS ? field_bits(st, &FIELDS[i]) : st->data_fingerprint;
        for (int b = 0; b < 8; b++) {
            h ^= (v >> (8 * b)) & 0xff;
            h *= 1099511628211ull;
        }
    }
    return h;
}
