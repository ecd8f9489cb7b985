/* tests/fuzz/fuzz_shard.c — the token shard reader: shard_check, then the loader
 * over the file (open, read batches across the epoch wrap, seek). Any input
 * must be refused with a message or read within bounds. */
#include <string.h>

#include "data/loader.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512];
    int fd = fuzz_file(data, size, path, sizeof path);
    size_t n;
    if (shard_check(path, &n, err, sizeof err) == 0) {
        Loader ld;
        /* B=1, T=4, vocab 300: some inputs hold tokens outside it */
        if (loader_open(&ld, path, 1, 4, 0, 1, 300, 1, 7, err, sizeof err) == 0) {
            int in[4], tg[4];
            for (int i = 0; i < 8; i++)
                if (loader_next(&ld, in, tg, err, sizeof err) != 0) break;
            loader_seek(&ld, 3, 0, 1, err, sizeof err);
            loader_close(&ld);
        }
    }
    close(fd);
    return 0;
}
