/* tests/fuzz/fuzz_run_state.c — the run state reader (state_rNNNNN.bin): header
 * and entries, then the arrays with their checksum, read whole and as a
 * sub-range. */
#include <stdlib.h>

#include "fuzz_common.h"
#include "ckpt/run_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512];
    int fd = fuzz_file(data, size, path, sizeof path);
    RunStateInfo info;
    if (run_state_read_info(path, &info, err, sizeof err) == 0 && info.count < (1u << 20)) {
        uint64_t c = info.count ? info.count : 1;
        float *m = malloc(c * 4), *v = malloc(c * 4);
        run_state_read_range(path, &info, info.offset, info.count, m, v, err, sizeof err);
        run_state_read_range(path, &info, info.offset + info.count / 2, (info.count + 1) / 2, m,
                             v, err, sizeof err);
        free(m);
        free(v);
    }
    close(fd);
    return 0;
}
