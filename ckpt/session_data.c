/* ckpt/session_data.c — see session_data.h. */
#include "session_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "base/fileio.h"
#include "session.h"

/* FNV-1a over each shard's token count: all a version 1 run state
 * recorded of the train data. */
static uint64_t token_counts_hash(const Loader *ld)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < ld->num_shards; i++) {
        uint64_t v = ld->ntok[i];
        for (int b = 0; b < 8; b++) {
            h ^= (v >> (8 * b)) & 0xff;
            h *= 1099511628211ull;
        }
    }
    return h;
}

/* The first 8 bytes of a digest, big-endian: the hex prefix sha256sum prints. */
static uint64_t digest_prefix(const unsigned char *d)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | d[i];
    return v;
}

/* The SHA-256 of the shards' digests in order (the same construction as a
 * dataset manifest's total), first 8 bytes; 0 when out of memory. */
static uint64_t content_fingerprint(const Loader *ld)
{
    DatasetManifest all = {.num_shards = ld->num_shards};
    unsigned char d[SHARD_SHA256_BYTES];
    all.shards = calloc((size_t)ld->num_shards + 1, sizeof *all.shards);
    if (!all.shards) return 0;
    for (int i = 0; i < ld->num_shards; i++) memcpy(all.shards[i].sha256, ld->sha[i], sizeof d);
    dataset_manifest_digest(&all, d);
    free(all.shards);
    return digest_prefix(d);
}

uint64_t session_data_fingerprint(const Loader *ld)
{
    return loader_has_hashes(ld) ? content_fingerprint(ld) : token_counts_hash(ld);
}

void session_data_fill(RunState *st, const Loader *ld)
{
    st->num_shards = ld->num_shards;
    if (!loader_has_hashes(ld)) {
        st->data_kind = RUN_STATE_DATA_COUNTS;
        st->data_fingerprint = token_counts_hash(ld);
        return;
    }
    st->data_kind = RUN_STATE_DATA_SHA;
    st->data_fingerprint = content_fingerprint(ld);
    st->shard_sha = malloc(((size_t)ld->num_shards + 1) * sizeof *st->shard_sha);
    if (!st->shard_sha) return;
    for (int i = 0; i < ld->num_shards; i++) st->shard_sha[i] = digest_prefix(ld->sha[i]);
}

int session_data_check(const char *save_dir, const RunState *saved, const RunState *now,
                       const Loader *ld, char *err, size_t err_len)
{
    err[0] = 0;
    if (saved->num_shards != now->num_shards) return 0; /* "train-shards" says so */
    if (saved->data_kind == RUN_STATE_DATA_COUNTS) {
        if (saved->data_fingerprint != token_counts_hash(ld)) {
            io_err(err, err_len, "--train-data: the shards' token counts differ from the save's");
            return -1;
        }
        printf("note: %s records only the train shards' token counts (an older save): their "
               "content is not checked\n", save_dir);
        return 0;
    }
    if (now->data_kind != RUN_STATE_DATA_SHA || !now->shard_sha) {
        io_err(err, err_len, "--train-data: the shards' content hashes are missing (out of "
               "memory?)");
        return -1;
    }
    int bad = 0;
    for (int64_t i = 0; i < saved->num_shards; i++) {
        if (saved->shard_sha[i] == now->shard_sha[i] || bad++ >= 4) continue;
        size_t used = strlen(err);
        io_err(err + used, err_len - used, "%s--train-data: %s: its content differs from the "
               "save's (sha256 %016llx..., the save recorded %016llx...)", used ? "; " : "",
               ld->paths[i], (unsigned long long)now->shard_sha[i],
               (unsigned long long)saved->shard_sha[i]);
    }
    if (bad > 4) {
        size_t used = strlen(err);
        io_err(err + used, err_len - used, "; and %d more shard(s)", bad - 4);
    }
    if (!bad && saved->data_fingerprint != now->data_fingerprint)
        io_err(err, err_len, "--train-data: the data fingerprint differs from the save's");
    return err[0] ? -1 : 0;
}
