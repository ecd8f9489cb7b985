/* tests/test_export_hf.c — scripts/export_hf.py: an llm.c model file as a
 * Hugging Face GPT-2 state dict. tests/hf_export_check.py runs the
 * repository's PyTorch reference on the model file and an HF-convention
 * forward (Conv1D weights stored (in, out)) on the exported dict, and
 * requires the same logits (1e-9 relative, float64); here for a version 3
 * (fp32) and a version 5 (bf16) file of the tiny model. Needs Debian's
 * python3-torch (scripts/setup.sh installs it). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_file.h"
#include "test_util.h"

static void check_export(int version)
{
    char *d = tu_tempdir(), path[600], cmd[4096], err[256];
    GPTConfig cfg = tu_tiny_config();
    float *p = tu_random_params(&cfg, 21);
    snprintf(path, sizeof path, "%s/m.bin", d);
    cr_assert_eq(model_file_save_as(path, &cfg, p, version, err, sizeof err), 0, "%s", err);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/hf_export_check.py %s %s > %s/out.txt 2>&1",
             path, d, d);
    int rc = tu_run(cmd);
    snprintf(path, sizeof path, "%s/out.txt", d);
    char *out = tu_read_file(path, NULL);
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect(out && strstr(out, "hf_export_check: PASS"), "%s", out);
    free(out);
    free(p);
    snprintf(cmd, sizeof cmd, "rm -rf %s", d);
    tu_run(cmd);
    free(d);
}

Test(export_hf, fp32_model_gives_the_reference_logits, .timeout = 120) { check_export(3); }
Test(export_hf, bf16_model_gives_the_reference_logits, .timeout = 120) { check_export(5); }

/* What would fail after the work with a Python traceback is refused first,
 * exit 1, one line naming the path: a missing or folder MODEL.bin, an OUT
 * that is a folder, or one in a missing folder. */
Test(export_hf, bad_paths_are_named_without_a_traceback, .timeout = 60)
{
    char *d = tu_tempdir(), model[600], cmd[4096], err[256];
    GPTConfig cfg = tu_tiny_config();
    float *p = tu_random_params(&cfg, 21);
    snprintf(model, sizeof model, "%s/m.bin", d);
    cr_assert_eq(model_file_save(model, &cfg, p, err, sizeof err), 0, "%s", err);
    free(p);
    char none[700], outdir[700], missing[700];
    snprintf(none, sizeof none, "%s/none.bin", d);
    snprintf(outdir, sizeof outdir, "%s/", d);
    snprintf(missing, sizeof missing, "%s/no/x.pt", d);
    struct {
        const char *src, *out, *msg;
    } c[] = {
        {none, missing, "none.bin: no such file"},
        {d, missing, ": a folder, not a model file"},
        {model, d, ": is a folder; give a file name"},
        {model, outdir, ": is a folder; give a file name"},
        {model, missing, "no/x.pt: its folder"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/export_hf.py %s %s 2> %s/err.txt",
                 c[i].src, c[i].out, d);
        cr_expect_eq(tu_run(cmd), 1, "case %zu", i);
        char *e = tu_read_file(tu_path(d, "err.txt"), NULL);
        cr_expect(e && strstr(e, "export_hf: ") && strstr(e, c[i].msg) && !strstr(e, "Traceback"),
                  "case %zu: %s", i, e);
        free(e);
    }
    tu_remove_tree(d);
}
