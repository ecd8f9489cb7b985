/* tests/fuzz/fuzz_tokenizer.c — the tokenizer's files and its input text. The
 * first input byte picks what the rest is:
 *   0: an encoder.json candidate, 1: a vocab.bpe candidate (loaded with the
 *      real other file; only GPT-2's exact files pass the sha256 gate);
 *   2: text to encode: decode(encode(x)) must give x back, byte for byte;
 *   3: int32 ids to decode: ids outside the vocabulary must be refused;
 *   0xF0..0xFF: a JSON line for ./tokenize --jsonl: when it passes the
 *      string check and cJSON finds a string "text", the raw-line reader
 *      (data/jsonl_text.h) must find it too, with cJSON's bytes up to the
 *      first NUL (where cJSON stops), and the bytes must round-trip
 *      through the tokenizer.
 * Needs GPT-2's files, found along data/source.h's chain:
 * $TRAIN_GPT_GPT2_DIR (CI sets it, .ci/run), else the user's cache (which
 * `make data` / scripts/setup.sh fill), else a fetch. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "data/jsonl_text.h"
#include "data/tokenizer.h"
#include "fuzz_common.h"

/* Loaded once: a fuzz target is one process, inputs run one at a time. */
static Tokenizer tk;
static char enc_path[4096], voc_path[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char err[8192], from[8192];
    if (tokenizer_find_files(enc_path, voc_path, sizeof enc_path, from, sizeof from, err,
                             sizeof err) != 0 ||
        tokenizer_load(&tk, enc_path, voc_path, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err);
        exit(1);
    }
    return 0;
}

static void fuzz_jsonl_line(const char *line, size_t n)
{
    char why[256], err[1024];
    if (jsonl_text_check(line, n, why, sizeof why) != 0) return;
    cJSON *j = cJSON_ParseWithLength(line, n);
    const cJSON *t = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "text") : NULL;
    if (cJSON_IsString(t)) {
        char *text;
        size_t len;
        if (jsonl_text_member(line, n, "text", &text, &len) != 0) abort();
        size_t upto = strnlen(text, len);
        if (strlen(t->valuestring) != upto || memcmp(text, t->valuestring, upto) != 0) abort();
        TokenIds ids = {0};
        TokenText back = {0};
        if (tokenizer_encode(&tk, (const uint8_t *)text, len, &ids, err, sizeof err) != 0 ||
            tokenizer_decode(&tk, ids.data, ids.len, &back, err, sizeof err) != 0 ||
            back.len != len || (len && memcmp(back.data, text, len) != 0))
            abort();
        free(ids.data);
        free(back.data);
        free(text);
    }
    cJSON_Delete(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int mode = data[0] >= 0xF0 ? 4 : data[0] % 4;
    data++, size--;
    char err[1024];
    if (mode == 4) {
        fuzz_jsonl_line((const char *)data, size);
        return 0;
    }
    if (mode <= 1) {
        char path[64];
        int fd = fuzz_file(data, size, path, sizeof path);
        Tokenizer t2;
        if (tokenizer_load(&t2, mode == 0 ? path : enc_path, mode == 1 ? path : voc_path, err,
                           sizeof err) == 0)
            tokenizer_free(&t2);
        close(fd);
    } else if (mode == 2) {
        TokenIds ids = {0};
        TokenText text = {0};
        if (tokenizer_encode(&tk, data, size, &ids, err, sizeof err) != 0) abort();
        if (tokenizer_decode(&tk, ids.data, ids.len, &text, err, sizeof err) != 0) abort();
        if (text.len != size || (size && memcmp(text.data, data, size) != 0)) abort();
        free(ids.data);
        free(text.data);
    } else {
        size_t n = size / sizeof(int32_t);
        int32_t *ids = malloc(n ? n * sizeof(int32_t) : 1);
        memcpy(ids, data, n * sizeof(int32_t));
        TokenText text = {0};
        int rc = tokenizer_decode(&tk, ids, n, &text, err, sizeof err);
        int out_of_range = 0;
        for (size_t i = 0; i < n; i++) out_of_range |= ids[i] < 0 || ids[i] >= tk.vocab_size;
        if ((rc != 0) != out_of_range) abort(); /* refused exactly when an id is bad */
        free(text.data);
        free(ids);
    }
    return 0;
}
