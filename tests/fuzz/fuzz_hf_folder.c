/* tests/fuzz/fuzz_hf_folder.c — the Hugging Face folder reader's safetensors
 * parsing (interop/hf_folder_read.c): each input is the model.safetensors of a
 * folder whose config.json is fixed (a Llama of 1 layer, C 8, 2 heads, 1 kv
 * head, F 16, V 16, tied), written into a folder made once under /dev/shm. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include "interop/hf_folder.h"

static const char CONFIG[] =
    "{\"model_type\": \"llama\", \"hidden_size\": 8, \"num_hidden_layers\": 1, "
    "\"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"intermediate_size\": 16, "
    "\"vocab_size\": 16, \"max_position_embeddings\": 8, \"tie_word_embeddings\": true}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char dir[64];
    char path[128], err[512];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/dev/shm/fuzz_hf_folder.%d", (int)getpid());
        mkdir(dir, 0700);
        snprintf(path, sizeof path, "%s/config.json", dir);
        FILE *f = fopen(path, "w");
        if (!f || fwrite(CONFIG, 1, sizeof CONFIG - 1, f) != sizeof CONFIG - 1) abort();
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "w");
    if (!f || (size && fwrite(data, 1, size, f) != size)) abort();
    fclose(f);
    GPTConfig cfg;
    float *params = NULL;
    if (hf_folder_load(dir, &cfg, &params, err, sizeof err) == 0) {
        volatile float last = params[config_num_params(&cfg) - 1];
        (void)last;
        free(params);
    }
    return 0;
}
