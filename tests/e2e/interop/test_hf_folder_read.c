/* tests/e2e/interop/test_hf_folder_read.c — the Hugging Face folder read
 * tensor by tensor (interop/hf_folder_read.c): the parameters read in pieces
 * of odd sizes (1 to ~1000 floats, so pieces start and end inside tensors,
 * inside rows and inside GPT-2's transposed Conv1D weights) equal, bit for
 * bit, those of scripts/import_hf.py (an independent reader, numpy) of the
 * same folder, for GPT-2, a tied Llama (its lm_head compared with the
 * embedding at open), an untied one, and a bf16 folder sharded at 20 kB.
 * Needs numpy (the scripts). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interop/hf_folder.h"
#include "interop/model_file.h"
#include "tests/lib/test_util.h"

/* Random weights with the padded vocabulary rows zero (the export drops them). */
static void save_model(const char *path, const GPTConfig *cfg, uint64_t seed)
{
    char err[256];
    float *p = tu_random_params(cfg, seed);
    size_t C = (size_t)cfg->channels, pad = (size_t)(cfg->padded_vocab - cfg->vocab_size) * C;
    memset(p + (size_t)cfg->vocab_size * C, 0, pad * sizeof(float));
    if (cfg->untied)
        memset(p + (size_t)cfg->padded_vocab * C + (size_t)cfg->vocab_size * C, 0,
               pad * sizeof(float));
    cr_assert_eq(model_file_save(path, cfg, p, err, sizeof err), 0, "%s", err);
    free(p);
}

static void pieces_equal_import(const char *d, const GPTConfig *cfg, const char *flags)
{
    char cmd[4096], err[4096], *out = NULL;
    save_model(tu_path(d, "m.bin"), cfg, 5);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/export_hf.py %s/m.bin %s/hf %s && "
             "/usr/bin/python3 scripts/import_hf.py %s/hf %s/back.bin", d, d, flags, d, d);
    int rc = tu_run_output(cmd, &out, &out);
    cr_assert_eq(rc, 0, "%s:\n%s", cmd, out ? out : "");
    free(out);
    GPTConfig ref_cfg, c;
    float *ref;
    cr_assert_eq(model_file_load(tu_path(d, "back.bin"), &ref_cfg, &ref, err, sizeof err), 0,
                 "%s", err);
    HfFolder *h;
    cr_assert_eq(hf_folder_open(&h, tu_path(d, "hf"), &c, err, sizeof err), 0, "%s", err);
    size_t n = config_num_params(&c);
    cr_assert_eq(n, config_num_params(&ref_cfg));
    float *p = malloc(n * sizeof(float));
    cr_assert(p);
    memset(p, 0xff, n * sizeof(float)); /* NaNs: a float no piece writes shows */
    size_t pieces = 0;
    for (size_t at = 0, k = 1; at < n; at += k, k = k * 7 % 997 + 1, pieces++) {
        if (k > n - at) k = n - at;
        cr_assert_eq(hf_folder_read(h, at, p + at, k, err, sizeof err), 0, "%s", err);
    }
    hf_folder_close(h);
    cr_expect(memcmp(p, ref, n * sizeof(float)) == 0, "%s: the pieces (%zu) differ from "
              "import_hf.py's parameters", flags, pieces);
    float *whole;
    cr_assert_eq(hf_folder_load(tu_path(d, "hf"), &c, &whole, err, sizeof err), 0, "%s", err);
    cr_expect(memcmp(whole, ref, n * sizeof(float)) == 0, "hf_folder_load differs");
    free(whole), free(p), free(ref);
}

Test(hf_folder_read, pieces_equal_an_independent_reader, .timeout = 120)
{
    GPTConfig g = tu_tiny_config();
    g.vocab_size = 200, g.padded_vocab = 256, g.max_seq_len = 16;
    char *d = tu_tempdir();
    pieces_equal_import(d, &g, "");
    tu_remove_tree(d);

    GPTConfig l = g;
    l.arch = ARCH_LLAMA, l.kv_heads = 2, l.ffn = 64;
    d = tu_tempdir();
    pieces_equal_import(d, &l, "");
    tu_remove_tree(d);
    l.untied = 1;
    d = tu_tempdir();
    pieces_equal_import(d, &l, "--dtype bf16 --max-shard-size 20kB");
    tu_remove_tree(d);
}
