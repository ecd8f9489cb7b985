/* data/shard_write.c — writing one llm.c token shard crash-safely (shard.h),
 * through run/fileio's temp-file, fsync, rename protocol. */
#include <stdio.h>

#include "base/fileio.h"
#include "shard.h"

int shard_write(const char *path, const uint16_t *tokens, size_t n, char *err, size_t err_len)
{
    if (n > 0x7fffffffu) {
        snprintf(err, err_len, "%s: %zu tokens do not fit the int32 header count", path, n);
        return -1;
    }
    int32_t header[SHARD_HEADER_INTS] = {0};
    header[0] = SHARD_MAGIC;
    header[1] = SHARD_VERSION;
    header[2] = (int32_t)n;
    return io_write_file(path, header, sizeof header, tokens, n * sizeof(uint16_t), err, err_len);
}
