/* data/shard.c — the shard format: checking, writing, hashing (shard.h).
 * The loader is data/loader.c. */
#include "shard.h"

#include <openssl/evp.h>

#include "base/fileio.h"
#include "base/test_hooks.h"
#include "base/stop.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int shard_check(const char *path, size_t *n, char *err, size_t err_len)
{
    return shard_check_info(path, n, NULL, NULL, err, err_len);
}

int shard_check_id(const char *path, size_t *n, uint64_t *dataset_id, char *err, size_t err_len)
{
    return shard_check_info(path, n, dataset_id, NULL, err, err_len);
}

int shard_token_bytes_for(long long vocab_size)
{
    return vocab_size > SHARD_U16_VOCAB ? 4 : 2;
}

int shard_check_info(const char *path, size_t *n, uint64_t *dataset_id, int *token_bytes,
                     char *err, size_t err_len)
{
    off_t size;
    int fd = io_open_regular(path, &size, err, err_len);
    if (fd < 0) return -1;
    int32_t h[SHARD_HEADER_INTS];
    int rc = -1;
    /* the magic decides the width; each magic has its one version */
    int w = 0, version = 0;
    if (size < SHARD_HEADER_BYTES ||
               pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h) {
        snprintf(err, err_len, "%s: truncated header (%lld bytes; a shard starts with a 1024-byte "
                 "header)", path, (long long)size);
        goto out;
    }
    if (h[0] == SHARD_MAGIC) w = 2, version = SHARD_VERSION;
    else if (h[0] == SHARD_MAGIC_U32) w = 4, version = SHARD_VERSION_U32;
    if (w == 0) {
        snprintf(err, err_len, "%s: bad magic %d (expected %d, uint16 tokens, or %d, uint32 "
                 "tokens: not an llm.c token shard)", path, h[0], SHARD_MAGIC, SHARD_MAGIC_U32);
    } else if (h[1] != version) {
        snprintf(err, err_len, "%s: unsupported version %d for magic %d (expected %d)", path,
                 h[1], h[0], version);
    } else if (h[2] < 0) {
        snprintf(err, err_len, "%s: negative token count %d in header", path, h[2]);
    } else if ((long long)size != SHARD_HEADER_BYTES + (long long)w * h[2]) {
        snprintf(err, err_len, "%s: size %lld bytes, but the header's %d tokens need %lld (%s), "
                 "at %d bytes a token (magic %d)", path, (long long)size, h[2],
                 SHARD_HEADER_BYTES + (long long)w * h[2],
                 (long long)size < SHARD_HEADER_BYTES + (long long)w * h[2] ? "truncated"
                                                                            : "trailing bytes",
                 w, h[0]);
    } else {
        *n = (size_t)h[2];
        if (dataset_id) *dataset_id = (uint64_t)(uint32_t)h[3] | (uint64_t)(uint32_t)h[4] << 32;
        if (token_bytes) *token_bytes = w;
        rc = 0;
    }
out:
    close(fd);
    return rc;
}


/* The digest of everything an IoWriter wrote, kept alongside it. */
static int digest_update(EVP_MD_CTX *c, const void *p, size_t n)
{
    return c == NULL || EVP_DigestUpdate(c, p, n) == 1;
}

int shard_write_id(const char *path, uint64_t dataset_id, const uint16_t *tokens, size_t n,
                   unsigned char sha256[SHARD_SHA256_BYTES], char *err, size_t err_len)
{
    return shard_write_as(path, dataset_id, tokens, 2, n, sha256, err, err_len);
}

int shard_write_as(const char *path, uint64_t dataset_id, const void *tokens, int token_bytes,
                   size_t n, unsigned char sha256[SHARD_SHA256_BYTES], char *err, size_t err_len)
{
    if (token_bytes != 2 && token_bytes != 4) {
        io_err(err, err_len, "%s: internal error: %d bytes per token (2 or 4)", path, token_bytes);
        return -1;
    }
    if (n > 0x7fffffffu) {
        io_err(err, err_len, "%s: %zu tokens do not fit the int32 header count", path, n);
        return -1;
    }
    int32_t header[SHARD_HEADER_INTS] = {0};
    header[0] = token_bytes == 4 ? SHARD_MAGIC_U32 : SHARD_MAGIC;
    header[1] = token_bytes == 4 ? SHARD_VERSION_U32 : SHARD_VERSION;
    header[2] = (int32_t)n;
    header[3] = (int32_t)(uint32_t)dataset_id;
    header[4] = (int32_t)(uint32_t)(dataset_id >> 32);
    EVP_MD_CTX *c = sha256 ? EVP_MD_CTX_new() : NULL;
    if (sha256 && (!c || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1)) {
        EVP_MD_CTX_free(c);
        io_err(err, err_len, "%s: cannot start a SHA-256 (out of memory)", path);
        return -1;
    }
    IoWriter w;
    unsigned int dn = 0;
    int ok = io_create(&w, path, err, err_len) == 0;
    if (ok) {
        ok = io_write(&w, header, sizeof header, err, err_len) == 0 &&
             io_write(&w, tokens, n * (size_t)token_bytes, err, err_len) == 0;
        if (ok && !(digest_update(c, header, sizeof header) &&
                    digest_update(c, tokens, n * (size_t)token_bytes) &&
                    (!c || (EVP_DigestFinal_ex(c, sha256, &dn) == 1 && dn == 32)))) {
            io_err(err, err_len, "%s: SHA-256 failed", path);
            ok = 0;
        }
        if (!ok) io_abort(&w);
        else ok = io_commit(&w, err, err_len) == 0;
    }
    EVP_MD_CTX_free(c);
    return ok ? 0 : -1;
}

/* Write, then fsync the folder: a shard_write returns with the name durable. */
static int write_synced(const char *path, const void *tokens, int token_bytes, size_t n,
                        char *err, size_t err_len)
{
    if (shard_write_as(path, 0, tokens, token_bytes, n, NULL, err, err_len) != 0) return -1;
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    return io_sync_dir(dir, err, err_len);
}

int shard_write(const char *path, const uint16_t *tokens, size_t n, char *err, size_t err_len)
{
    return write_synced(path, tokens, 2, n, err, err_len);
}

int shard_write32(const char *path, const uint32_t *tokens, size_t n, char *err, size_t err_len)
{
    return write_synced(path, tokens, 4, n, err, err_len);
}

int shard_hash_file(const char *path, unsigned char sha256[SHARD_SHA256_BYTES], uint64_t *bytes,
                    char *err, size_t err_len)
{
    off_t size;
    int fd = io_open_regular(path, &size, err, err_len);
    if (fd < 0) return -1;
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = malloc(CHUNK);
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    int rc = -1;
    uint64_t pos = 0;
    unsigned int dn = 0;
    if (!buf || !c || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
        io_err(err, err_len, "%s: out of host memory", path);
        goto out;
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    for (;;) {
        ssize_t k = read(fd, buf, CHUNK);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            io_err(err, err_len, "%s: read failed at byte %llu: %s", path,
                   (unsigned long long)pos, strerror(errno));
            goto out;
        }
        if (k == 0) break;
        if (stop_requested()) { /* 1 MiB between polls: about a millisecond */
            io_err(err, err_len, "%s: hashing %s", path, STOP_MESSAGE);
            goto out;
        }
        if (EVP_DigestUpdate(c, buf, (size_t)k) != 1) {
            io_err(err, err_len, "%s: SHA-256 failed", path);
            goto out;
        }
        pos += (uint64_t)k;
        /* a test stages its signal here, the hash begun and not ended */
        TEST_HOOK(if (pos == (uint64_t)k) io_test_pause("hash", path));
    }
    if (pos != (uint64_t)size) {
        io_err(err, err_len, "%s: size changed while it was read (%llu bytes, was %lld)", path,
               (unsigned long long)pos, (long long)size);
        goto out;
    }
    if (EVP_DigestFinal_ex(c, sha256, &dn) != 1 || dn != SHARD_SHA256_BYTES) {
        io_err(err, err_len, "%s: SHA-256 failed", path);
        goto out;
    }
    if (bytes) *bytes = pos;
    rc = 0;
out:
    EVP_MD_CTX_free(c);
    free(buf);
    close(fd);
    return rc;
}
