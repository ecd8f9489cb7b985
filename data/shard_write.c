/* data/shard_write.c — writing one llm.c token shard crash-safely (shard.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shard.h"

int shard_write(const char *path, const uint16_t *tokens, size_t n, char *err, size_t err_len)
{
    if (n > 0x7fffffffu) {
        snprintf(err, err_len, "%s: %zu tokens do not fit the int32 header count", path, n);
        return -1;
    }
    size_t plen = strlen(path) + 5;
    char *tmp = malloc(plen);
    if (!tmp) {
        snprintf(err, err_len, "%s: out of memory", path);
        return -1;
    }
    snprintf(tmp, plen, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, err_len, "%s: cannot create: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    int32_t header[SHARD_HEADER_INTS] = {0};
    header[0] = SHARD_MAGIC;
    header[1] = SHARD_VERSION;
    header[2] = (int32_t)n;
    int bad = fwrite(header, sizeof header, 1, f) != 1 ||
              (n > 0 && fwrite(tokens, sizeof(uint16_t), n, f) != n) || fflush(f) != 0 ||
              fsync(fileno(f)) != 0;
    int saved_errno = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        saved_errno = errno;
    }
    if (bad || rename(tmp, path) != 0) {
        if (!bad) saved_errno = errno;
        snprintf(err, err_len, "%s: write failed: %s", path, strerror(saved_errno));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}
