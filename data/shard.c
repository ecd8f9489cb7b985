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
    return shard_check_id(path, n, NULL, err, err_len);
}

int shard_check_id(const char *path, size_t *n, uint64_t *dataset_id, char *err, size_t err_len)
{
    off_t size;
    int fd = io_open_regular(path, &size, err, err_len);
    if (fd < 0) return -1;
    int32_t h[SHARD_HEADER_INTS];
    int rc = -1;
    if (size < SHARD_HEADER_BYTES ||
               pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h) {
        snprintf(err, err_len, "%s: truncated header (%lld bytes; a shard starts with a 1024-byte "
                 "header)", path, (long long)size);
    } else if (h[0] != SHARD_MAGIC) {
        snprintf(err, err_len, "%s: bad magic %d (expected %d: not an llm.c token shard)", path,
                 h[0], SHARD_MAGIC);
    } else if (h[1] != SHARD_VERSION) {
        snprintf(err, err_len, "%s: unsupported version %d (expected %d)", path, h[1],
                 SHARD_VERSION);
    } else if (h[2] < 0) {
        snprintf(err, err_len, "%s: negative token count %d in header", path, h[2]);
    } else if ((long long)size != SHARD_HEADER_BYTES + 2LL * h[2]) {
        snprintf(err, err_len, "%s: size %lld bytes, but the header's %d tokens need %lld (%s)",
                 path, (long long)size, h[2], SHARD_HEADER_BYTES + 2LL * h[2],
                 (long long)size < SHARD_HEADER_BYTES + 2LL * h[2] ? "truncated"
                                                                         : "trailing bytes");
    } else {
        *n = (size_t)h[2];
        if (dataset_id) *dataset_id = (uint64_t)(uint32_t)h[3] | (uint64_t)(uint32_t)h[4] << 32;
        rc = 0;
    }
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
    if (n > 0x7fffffffu) {
        io_err(err, err_len, "%s: %zu tokens do not fit the int32 header count", path, n);
        return -1;
    }
    int32_t header[SHARD_HEADER_INTS] = {0};
    header[0] = SHARD_MAGIC;
    header[1] = SHARD_VERSION;
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
             io_write(&w, tokens, n * sizeof(uint16_t), err, err_len) == 0;
        if (ok && !(digest_update(c, header, sizeof header) &&
                    digest_update(c, tokens, n * sizeof(uint16_t)) &&
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

int shard_write(const char *path, const uint16_t *tokens, size_t n, char *err, size_t err_len)
{
    if (shard_write_id(path, 0, tokens, n, NULL, err, err_len) != 0) return -1;
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    return io_sync_dir(dir, err, err_len);
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
