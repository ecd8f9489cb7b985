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
