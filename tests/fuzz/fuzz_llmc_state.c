/* tests/fuzz/fuzz_llmc_state.c — llm.c's state file reader (state_N_R.bin,
 * interop/llmc_state.h): the header and size checks, then the arrays, read
 * with and without the master weights. */
#include <stdlib.h>

#include "fuzz_common.h"
#include "interop/llmc_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512];
    int fd = fuzz_file(data, size, path, sizeof path);
    LlmcState st;
    uint64_t count;
    if (llmc_state_read_header(path, &st, &count, err, sizeof err) == 0 && count < (1u << 20)) {
        float *m = malloc(count * 4), *v = malloc(count * 4), *w = malloc(count * 4);
        llmc_state_read_arrays(path, &st, count, m, v, w, err, sizeof err);
        llmc_state_read_arrays(path, &st, count, m, v, NULL, err, sizeof err);
        free(m);
        free(v);
        free(w);
    }
    close(fd);
    return 0;
}
