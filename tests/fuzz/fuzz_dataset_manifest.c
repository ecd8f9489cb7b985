/* tests/fuzz/fuzz_dataset_manifest.c — the dataset manifest ./tokenize writes
 * beside the shards (data/dataset.h): JSON parsed with cJSON, then every
 * field, name and total checked (the shards' width, "token_bytes", and the
 * tokenizer's identity among them); a parsed one is searched by name, its
 * tokenizer described and its id recomputed. */
#include <stdint.h>
#include <stdlib.h>

#include "data/dataset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    DatasetManifest m;
    char err[512];
    if (dataset_manifest_parse((const char *)data, size, "manifest", &m, err, sizeof err) == 0) {
        for (int i = 0; i < m.num_shards; i++)
            if (dataset_manifest_find(&m, m.shards[i].name) < 0) abort();
        dataset_manifest_find(&m, "x_train_000000.bin");
        char desc[300];
        if (m.tok.id) dataset_tokenizer_describe(&m.tok, desc, sizeof desc);
        if (m.tok.id && m.tok.id != dataset_tokenizer_id(&m.tok)) abort();
        dataset_manifest_free(&m);
    }
    return 0;
}
