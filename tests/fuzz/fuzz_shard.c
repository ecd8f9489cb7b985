/* tests/fuzz/fuzz_shard.c — the token shard reader, both widths (uint16,
 * version 1; uint32, version 7): shard_check, then the loader over the file
 * (open, read batches across the epoch wrap, seek) with a small vocabulary
 * and one over 65536 ids (which refuses uint16 shards at open). Any input
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
        /* B=1, T=4, vocab 300 and 70000: some inputs hold tokens outside them */
        static const int vocab[2] = {300, 70000};
        for (int v = 0; v < 2; v++) {
            if (loader_open(&ld, path, 1, 4, 0, 1, vocab[v], 1, 7, err, sizeof err) != 0)
                continue;
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
