/* tests/fuzz/fuzz_model_file.c — the llm.c model file reader (header check and
 * full load, fp32 and bf16). */
#include <stdlib.h>

#include "fuzz_common.h"
#include "interop/model_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512];
    int fd = fuzz_file(data, size, path, sizeof path);
    GPTConfig cfg;
    int version;
    float *params = NULL;
    if (model_file_read_header(path, &cfg, &version, err, sizeof err) == 0 &&
        model_file_load(path, &cfg, &params, err, sizeof err) == 0) {
        /* touch the last parameter: the size check must cover it */
        volatile float last = params[config_num_params(&cfg) - 1];
        (void)last;
        free(params);
    }
    close(fd);
    return 0;
}
