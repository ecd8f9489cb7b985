/* tests/e2e/interop/test_export_hf_layout.c — scripts/export_hf.py's default
 * output, a folder in the layout Hugging Face's from_pretrained reads,
 * checked here against the safetensors specification with a parser of this
 * file's own (cJSON): an 8-byte little-endian header length N; N bytes of
 * JSON, padded with spaces, mapping each tensor name to {"dtype", "shape",
 * "data_offsets": [begin, end]} relative to the byte buffer after the
 * header, plus an optional "__metadata__" of string values; the buffer
 * covered by the tensors back to back, without holes, each end - begin =
 * numel * 4 for F32. The names and shapes are GPT2LMHeadModel's. Then the
 * round trip llm.c model file -> export -> scripts/import_hf.py is the
 * same bytes, and where transformers is installed, it loads the folder
 * (dev/reference/hf_transformers_check.py). */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/source.h"
#include "interop/model_file.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/script_runs.h"
#include "tests/lib/test_util.h"

/* GPT-2's vocabulary on a model small enough to write fast (1.6 MB). */
static GPTConfig gpt2_vocab_config(void)
{
    GPTConfig c = {.max_seq_len = 16, .vocab_size = 50257, .padded_vocab = 50304,
                   .num_layers = 2, .num_heads = 2, .channels = 8};
    return c;
}

static float *save_model(const char *path, const GPTConfig *cfg, uint64_t seed, int version)
{
    char err[256];
    float *p = tu_random_params(cfg, seed);
    cr_assert_eq(model_file_save_as(path, cfg, p, version, err, sizeof err), 0, "%s", err);
    return p;
}

static void run_ok(const char *cmd)
{
    char *out;
    int rc = tu_run_output(cmd, &out, &out);
    cr_assert_eq(rc, 0, "%s:\n%s", cmd, out);
    free(out);
}

typedef struct {
    char name[96];
    size_t shape[2];
    int ndim;
} Expected;

/* GPT2LMHeadModel's names and shapes, lm_head (tied) left out. */
static int expected_tensors(const GPTConfig *c, Expected *e)
{
    size_t C = (size_t)c->channels, n = 0;
#define ADD(nm, d0, d1, nd)                                                                   \
    do {                                                                                      \
        snprintf(e[n].name, sizeof e[n].name, "%s", nm);                                      \
        e[n].shape[0] = (d0), e[n].shape[1] = (d1), e[n].ndim = (nd);                         \
        n++;                                                                                  \
    } while (0)
    ADD("transformer.wte.weight", (size_t)c->vocab_size, C, 2);
    ADD("transformer.wpe.weight", (size_t)c->max_seq_len, C, 2);
    for (int l = 0; l < c->num_layers; l++) {
        static const struct { const char *s; int d0, d1, nd; } per[] = {
            {"ln_1.weight", 1, 0, 1}, {"ln_1.bias", 1, 0, 1},
            {"attn.c_attn.weight", 1, 3, 2}, {"attn.c_attn.bias", 3, 0, 1},
            {"attn.c_proj.weight", 1, 1, 2}, {"attn.c_proj.bias", 1, 0, 1},
            {"ln_2.weight", 1, 0, 1}, {"ln_2.bias", 1, 0, 1},
            {"mlp.c_fc.weight", 1, 4, 2}, {"mlp.c_fc.bias", 4, 0, 1},
            {"mlp.c_proj.weight", 4, 1, 2}, {"mlp.c_proj.bias", 1, 0, 1}};
        for (size_t k = 0; k < sizeof per / sizeof *per; k++) {
            char nm[96];
            snprintf(nm, sizeof nm, "transformer.h.%d.%s", l, per[k].s);
            ADD(nm, per[k].d0 * C, per[k].d1 * C, per[k].nd);
        }
    }
    ADD("transformer.ln_f.weight", C, 0, 1);
    ADD("transformer.ln_f.bias", C, 0, 1);
#undef ADD
    return (int)n;
}

typedef struct {
    size_t begin, end;
} Range;

static int by_begin(const void *a, const void *b)
{
    const Range *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static float le_f32(const unsigned char *b)
{
    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Checks path against the specification and GPT-2's names; returns the
 * header (caller frees) and sets *data to the byte buffer. */
static cJSON *check_safetensors(const char *path, const GPTConfig *cfg, unsigned char **file,
                                const unsigned char **data)
{
    size_t len;
    unsigned char *b = (unsigned char *)tu_read_file(path, &len);
    cr_assert(b && len >= 8, "%s: no 8-byte header length", path);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | b[i];
    cr_assert(8 + n <= len, "header length %llu runs past the file (%zu)", (unsigned long long)n, len);
    cr_expect_eq((8 + n) % 8, 0, "the byte buffer starts at %llu, not 8-byte aligned",
                 (unsigned long long)(8 + n));
    cr_assert_eq(b[8], '{', "the header does not start with '{'");
    cJSON *h = cJSON_ParseWithLength((const char *)b + 8, n);
    cr_assert_not_null(h, "the header is not JSON");
    /* what follows the JSON object within N is padding: spaces only */
    size_t last = n;
    while (last > 0 && b[8 + last - 1] == ' ') last--;
    cr_expect_eq(b[8 + last - 1], '}', "the header's padding is not spaces");
    Expected want[128];
    int nwant = expected_tensors(cfg, want), seen = 0;
    Range r[128];
    cJSON *t;
    cJSON_ArrayForEach(t, h)
    {
        if (strcmp(t->string, "__metadata__") == 0) {
            cJSON *m;
            cJSON_ArrayForEach(m, t) cr_expect(cJSON_IsString(m), "__metadata__.%s is no string",
                                               m->string);
            cJSON *fmt = cJSON_GetObjectItem(t, "format");
            cr_expect(cJSON_IsString(fmt) && strcmp(fmt->valuestring, "pt") == 0,
                      "__metadata__ has no \"format\": \"pt\" (from_pretrained requires it)");
            continue;
        }
        int k = 0;
        while (k < nwant && strcmp(want[k].name, t->string)) k++;
        cr_assert(k < nwant, "tensor %s is not one of GPT2LMHeadModel's", t->string);
        cJSON *dt = cJSON_GetObjectItem(t, "dtype"), *sh = cJSON_GetObjectItem(t, "shape"),
              *off = cJSON_GetObjectItem(t, "data_offsets");
        cr_assert(cJSON_IsString(dt) && strcmp(dt->valuestring, "F32") == 0, "%s: dtype", t->string);
        cr_assert(cJSON_IsArray(sh) && cJSON_GetArraySize(sh) == want[k].ndim, "%s: rank",
                  t->string);
        size_t numel = 1;
        for (int d = 0; d < want[k].ndim; d++) {
            size_t got = (size_t)cJSON_GetArrayItem(sh, d)->valuedouble;
            cr_expect_eq(got, want[k].shape[d], "%s: dim %d is %zu, not %zu", t->string, d, got,
                         want[k].shape[d]);
            numel *= got;
        }
        cr_assert(cJSON_IsArray(off) && cJSON_GetArraySize(off) == 2, "%s: data_offsets",
                  t->string);
        r[seen].begin = (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
        r[seen].end = (size_t)cJSON_GetArrayItem(off, 1)->valuedouble;
        cr_expect_eq(r[seen].end - r[seen].begin, numel * 4, "%s: %zu bytes for %zu F32",
                     t->string, r[seen].end - r[seen].begin, numel);
        seen++;
    }
    cr_expect_eq(seen, nwant, "%d tensors, GPT2LMHeadModel has %d (lm_head tied)", seen, nwant);
    qsort(r, (size_t)seen, sizeof *r, by_begin);
    size_t at = 0;
    for (int i = 0; i < seen; i++) {
        cr_expect_eq(r[i].begin, at, "a hole or an overlap at byte %zu of the buffer", at);
        at = r[i].end;
    }
    cr_expect_eq(8 + n + at, len, "the tensors cover %zu bytes, the buffer is %llu", at,
                 (unsigned long long)(len - 8 - n));
    *file = b;
    *data = b + 8 + n;
    return h;
}

/* The value at (row, col) of the tensor name, from the file's own bytes. */
static float tensor_at(cJSON *h, const unsigned char *data, const char *name, size_t row, size_t col)
{
    cJSON *t = cJSON_GetObjectItem(h, name);
    cr_assert_not_null(t, "%s missing", name);
    size_t begin = (size_t)cJSON_GetArrayItem(cJSON_GetObjectItem(t, "data_offsets"), 0)->valuedouble;
    cJSON *sh = cJSON_GetObjectItem(t, "shape");
    size_t cols = cJSON_GetArraySize(sh) == 2 ? (size_t)cJSON_GetArrayItem(sh, 1)->valuedouble : 1;
    return le_f32(data + begin + 4 * (row * cols + col));
}

/* The folder: config.json, generation_config.json, model.safetensors per the
 * specification, and GPT-2's tokenizer files as the source chain has them.
 * Before, a folder OUT was refused ("is a folder; give a file name"). */
Test(export_hf_layout, folder_holds_what_from_pretrained_reads, .timeout = 120)
{
    char *d = tu_tempdir(), model[600], cmd[4096];
    GPTConfig cfg = gpt2_vocab_config();
    snprintf(model, sizeof model, "%s/m.bin", d);
    float *p = save_model(model, &cfg, 31, 3);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/export_hf.py %s %s/hf", model, d);
    run_ok(cmd);
    char dir[700];
    snprintf(dir, sizeof dir, "%s/hf", d);
    unsigned char *file;
    const unsigned char *data;
    cJSON *h = check_safetensors(tu_path(dir, "model.safetensors"), &cfg, &file, &data);
    /* values where they belong: wte as is, c_attn transposed (HF's Conv1D
     * stores (in, out); llm.c's qkvw is (out, in) = (3C, C), after wte/wpe/ln1) */
    size_t C = (size_t)cfg.channels, Vp = (size_t)cfg.padded_vocab, T = (size_t)cfg.max_seq_len;
    size_t L = (size_t)cfg.num_layers;
    cr_expect_eq(tensor_at(h, data, "transformer.wte.weight", 5, 3), p[5 * C + 3]);
    cr_expect_eq(tensor_at(h, data, "transformer.wte.weight", 50256, 7), p[50256 * C + 7]);
    const float *qkvw = p + Vp * C + T * C + 2 * L * C;
    cr_expect_eq(tensor_at(h, data, "transformer.h.0.attn.c_attn.weight", 2, 13), qkvw[13 * C + 2]);
    cr_expect_eq(tensor_at(h, data, "transformer.h.1.attn.c_attn.weight", 7, 20),
                 qkvw[3 * C * C + 20 * C + 7]);
    cJSON_Delete(h);
    free(file);
    free(p);
    char *text = tu_read_file(tu_path(dir, "config.json"), NULL);
    cJSON *c = cJSON_Parse(text);
    cr_assert_not_null(c, "config.json is not JSON");
    struct { const char *k; int v; } want[] = {{"n_layer", 2}, {"n_head", 2}, {"n_embd", 8},
                                               {"n_positions", 16}, {"vocab_size", 50257}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        cJSON *v = cJSON_GetObjectItem(c, want[i].k);
        cr_expect(cJSON_IsNumber(v) && v->valueint == want[i].v, "config.json %s", want[i].k);
    }
    cJSON *mt = cJSON_GetObjectItem(c, "model_type");
    cr_expect(cJSON_IsString(mt) && strcmp(mt->valuestring, "gpt2") == 0, "model_type");
    cJSON_Delete(c);
    free(text);
    text = tu_read_file(tu_path(dir, "generation_config.json"), NULL);
    c = cJSON_Parse(text);
    cr_assert_not_null(c, "generation_config.json is not JSON");
    cr_expect_eq(cJSON_GetObjectItem(c, "eos_token_id")->valueint, 50256);
    cJSON_Delete(c);
    free(text);
    /* vocab.json is encoder.json's content, merges.txt vocab.bpe's */
    cr_expect(tc_files_equal(tu_path(dir, "vocab.json"), tu_source_path(&SOURCE_GPT2, 0)) ||
              tc_files_equal(tu_path(dir, "vocab.json"), tu_source_path(&SOURCE_GPT2, 1)),
              "vocab.json is not GPT-2's encoder.json");
    cr_expect(tc_files_equal(tu_path(dir, "merges.txt"), tu_source_path(&SOURCE_GPT2, 1)) ||
              tc_files_equal(tu_path(dir, "merges.txt"), tu_source_path(&SOURCE_GPT2, 0)),
              "merges.txt is not GPT-2's vocab.bpe");
    cr_expect(!tc_files_equal(tu_path(dir, "vocab.json"), tu_path(dir, "merges.txt")));
    tu_remove_tree(d);
}

/* model file -> export (the default folder) -> import_hf.py -> the same
 * bytes: fp32 for GPT-2's vocabulary and the tiny one, and a bf16 (version
 * 5) file back through --dtype bf16. The six runs are forks of one Python
 * (tests/lib/script_runs.h), each with its own exit status. */
Test(export_hf_layout, folder_round_trips_byte_exact, .timeout = 180)
{
    char *d = tu_tempdir(), cmd[4096], model[600], *out;
    GPTConfig cfgs[] = {gpt2_vocab_config(), tu_tiny_config(), tu_tiny_config()};
    int versions[] = {3, 3, 5};
    ScriptRuns sr = script_runs_new(d);
    for (int i = 0; i < 3; i++) {
        snprintf(model, sizeof model, "%s/m%d.bin", d, i);
        free(save_model(model, &cfgs[i], 40 + (uint64_t)i, versions[i]));
        snprintf(cmd, sizeof cmd, "%s %s/hf%d", model, d, i);
        script_runs_add(&sr, "scripts/export_hf.py", cmd);
        snprintf(cmd, sizeof cmd, "%s/hf%d %s/back%d.bin%s", d, i, d, i,
                 versions[i] == 5 ? " --dtype bf16" : "");
        script_runs_add(&sr, "scripts/import_hf.py", cmd);
    }
    script_runs_go(&sr, 0);
    for (int i = 0; i < 3; i++) {
        for (int k = 2 * i; k <= 2 * i + 1; k++) {
            out = script_runs_output(&sr, k);
            cr_assert_eq(script_runs_rc(&sr, k), 0, "model %d, %s: %s", i,
                         k == 2 * i ? "export" : "import", out);
            free(out);
        }
        snprintf(model, sizeof model, "%s/m%d.bin", d, i);
        snprintf(cmd, sizeof cmd, "%s/back%d.bin", d, i);
        cr_expect(tc_files_equal(model, cmd), "model %d (version %d): the import differs", i,
                  versions[i]);
    }
    script_runs_free(&sr);
    tu_remove_tree(d);
}

/* Where transformers is installed, GPT2LMHeadModel.from_pretrained loads the
 * folder and gives the reference's logits; skipped, saying so, elsewhere. */
Test(export_hf_layout, transformers_loads_the_folder, .timeout = 300)
{
    char *d = tu_tempdir(), model[600], cmd[4096], *out;
    GPTConfig cfg = gpt2_vocab_config();
    snprintf(model, sizeof model, "%s/m.bin", d);
    free(save_model(model, &cfg, 33, 3));
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 dev/reference/hf_transformers_check.py %s %s",
             model, d);
    int rc = tu_run_output(cmd, &out, &out);
    cr_assert_eq(rc, 0, "%s", out);
    if (strstr(out, "SKIP")) {
        free(out);
        tu_remove_tree(d);
        cr_skip_test("transformers is not installed: from_pretrained not tried");
    }
    cr_expect(strstr(out, "hf_transformers_check: PASS"), "%s", out);
    free(out);
    tu_remove_tree(d);
}
