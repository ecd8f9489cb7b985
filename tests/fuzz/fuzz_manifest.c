/* tests/fuzz/fuzz_manifest.c — the COMPLETE manifest of a checkpoint folder
 * (JSON, parsed with cJSON, then every field checked). */
#include "fuzz_common.h"
#include "ckpt/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    CkptManifest man;
    char err[512];
    if (ckpt_parse_manifest((const char *)data, size, "COMPLETE", &man, err, sizeof err) == 0)
        ckpt_manifest_free(&man);
    return 0;
}
