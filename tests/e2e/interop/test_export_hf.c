/* tests/e2e/interop/test_export_hf.c — scripts/export_hf.py: an llm.c model file as a
 * Hugging Face GPT-2 state dict. dev/reference/hf_export_check.py runs the
 * repository's PyTorch reference on the model file and an HF-convention
 * forward (Conv1D weights stored (in, out)) on the exported dict, and
 * requires the same logits (1e-9 relative, float64); here for a version 3
 * (fp32) and a version 5 (bf16) file of the tiny model, both in one run of
 * the check a run (tests/lib/run_once.h). Needs Debian's python3-torch
 * (scripts/setup.sh installs it). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interop/model_file.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/run_once.h"
#include "tests/lib/script_runs.h"

/* A model file of random weights (seed) at path, llm.c version 3 or 5. */
static void save_random_model(const char *path, const GPTConfig *cfg, uint64_t seed, int version)
{
    char err[256];
    float *p = tu_random_params(cfg, seed);
    cr_assert_eq(model_file_save_as(path, cfg, p, version, err, sizeof err), 0, "%s", err);
    free(p);
}

/* dev/reference/NAME.py MODEL DIR must exit 0 and print "NAME: PASS". */
static void expect_check_passes(const char *name, const char *model, const char *dir)
{
    char cmd[4096], *out;
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 dev/reference/%s.py %s %s", name, model, dir);
    int rc = tu_run_output(cmd, &out, &out);
    cr_expect_eq(rc, 0, "%s", out);
    char pass[64];
    snprintf(pass, sizeof pass, "%s: PASS", name);
    cr_expect(out && strstr(out, pass), "%s", out);
    free(out);
}

/* run_once's build: the version 3 and 5 files of the tiny model (seed 21)
 * in dir/v3 and dir/v5, and hf_export_check.py on both in one start of
 * torch (most of a check's time); its output in dir/check.txt, whatever its
 * status: each test finds its own model's line. */
static void build_checks(const char *dir, void *arg)
{
    (void)arg;
    char cmd[4096], *out = NULL;
    GPTConfig cfg = tu_tiny_config();
    for (int version = 3; version <= 5; version += 2) {
        snprintf(cmd, sizeof cmd, "mkdir %s/v%d", dir, version);
        cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
        snprintf(cmd, sizeof cmd, "%s/v%d/m.bin", dir, version);
        save_random_model(cmd, &cfg, 21, version);
    }
    /* in dir, so that the lines name v3/m.bin and v5/m.bin, not the
     * folder's name while it is built */
    char cwd[1024];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    snprintf(cmd, sizeof cmd, "cd %s && /usr/bin/python3 %s/dev/reference/hf_export_check.py "
             "v3/m.bin v3 v5/m.bin v5", dir, cwd);
    tu_run_output(cmd, &out, &out);
    tu_write_text(tu_path(dir, "check.txt"), out ? out : "");
    free(out);
}

/* The check of the version's file, from the run's one run of the
 * reference (tests/lib/run_once.h): "hf_export_check: MODEL: PASS". */
static void check_export(int version)
{
    char *d = tu_tempdir(), path[600], sub[16], pass[700];
    GPTConfig cfg = tu_tiny_config();
    snprintf(path, sizeof path, "%s/m.bin", d);
    save_random_model(path, &cfg, 21, version);
    char *shared = run_once("export_hf_check", build_checks, NULL);
    snprintf(sub, sizeof sub, "v%d/m.bin", version);
    char *model = strdup(tu_path(shared, sub));
    cr_assert(tc_files_equal(path, model), "%s is not this test's model file", model);
    char *out = tu_read_file(tu_path(shared, "check.txt"), NULL);
    snprintf(pass, sizeof pass, "hf_export_check: v%d/m.bin: PASS", version);
    cr_expect(out && strstr(out, pass), "no '%s' in:\n%s (needs /usr/bin/python3 with torch)",
              pass, out);
    free(out), free(model), free(shared);
    tu_remove_tree(d);
}

Test(export_hf, fp32_model_gives_the_reference_logits, .timeout = 120) { check_export(3); }
Test(export_hf, bf16_model_gives_the_reference_logits, .timeout = 120) { check_export(5); }

/* What would fail after the work with a Python traceback is refused first,
 * exit 1, one line naming the path: a missing or folder MODEL.bin, an OUT
 * (a folder, or a weights file) in a missing folder, a file where the
 * folder is to be. The five runs are forks of one Python
 * (tests/lib/script_runs.h), each with its own status and output. */
Test(export_hf, bad_paths_are_named_without_a_traceback, .timeout = 60)
{
    char *d = tu_tempdir(), model[600], cmd[4096];
    GPTConfig cfg = tu_tiny_config();
    snprintf(model, sizeof model, "%s/m.bin", d);
    save_random_model(model, &cfg, 21, 3);
    char none[700], plain[700], missing[700], nodir[700];
    snprintf(none, sizeof none, "%s/none.bin", d);
    snprintf(plain, sizeof plain, "%s/plain", d);
    tu_write_text(plain, "mine");
    snprintf(missing, sizeof missing, "%s/no/x.pt", d);
    snprintf(nodir, sizeof nodir, "%s/no/hf", d);
    struct {
        const char *src, *out, *msg;
    } c[] = {
        {none, missing, "none.bin: no such file"},
        {d, missing, ": a folder, not a model file"},
        {model, plain, "plain: is a file, not a folder"},
        {model, nodir, "no/hf: its folder"},
        {model, missing, "no/x.pt: its folder"},
    };
    ScriptRuns sr = script_runs_new(d);
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s %s", c[i].src, c[i].out);
        script_runs_add(&sr, "scripts/export_hf.py", cmd);
    }
    script_runs_go(&sr, 0);
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        cr_expect_eq(script_runs_rc(&sr, (int)i), 1, "case %zu", i);
        char *e = script_runs_output(&sr, (int)i); /* stdout and stderr */
        cr_expect(strstr(e, "export_hf: ") && strstr(e, c[i].msg) && !strstr(e, "Traceback"),
                  "case %zu: %s", i, e);
        free(e);
    }
    script_runs_free(&sr);
    tu_remove_tree(d);
}

/* Nothing is replaced unasked: an existing OUT, or a config.json beside it
 * that describes another model, exits 1 before anything is written, both
 * files left as they were; --overwrite keeps the old ones under a second
 * name (.replaced_<time>); an unknown flag is a bad command line (exit 2).
 * (The code before replaced both silently.) The OUTs are safetensors files:
 * the same checks as a .pt's, without a start of torch per export. */
Test(export_hf, existing_files_are_kept, .timeout = 120)
{
    char *d = tu_tempdir(), m1[600], m2[600], cmd[4096];
    GPTConfig cfg = tu_tiny_config();
    snprintf(m1, sizeof m1, "%s/m1.bin", d);
    save_random_model(m1, &cfg, 21, 3);
    cfg.num_layers += 1;
    snprintf(m2, sizeof m2, "%s/m2.bin", d);
    save_random_model(m2, &cfg, 22, 3);
    const char *py = "/usr/bin/python3 scripts/export_hf.py";
    /* a user's file at OUT */
    tu_write_text(tu_path(d, "a.safetensors"), "mine");
    snprintf(cmd, sizeof cmd, "%s %s %s/a.safetensors 2> %s/err.txt", py, m1, d, d);
    cr_expect_eq(tu_run(cmd), 1);
    char *e = tu_read_file(tu_path(d, "err.txt"), NULL);
    cr_expect(e && strstr(e, "a.safetensors: the file exists (4 bytes) and would be replaced; "
              "nothing was written") && !strstr(e, "Traceback"), "%s", e);
    free(e);
    char *a = tu_read_file(tu_path(d, "a.safetensors"), NULL);
    cr_expect(a && strcmp(a, "mine") == 0, "a.safetensors changed");
    free(a);
    cr_expect_neq(access(tu_path(d, "config.json"), F_OK), 0, "config.json written");
    /* m1 exported; then m2 into the same folder: its config.json differs */
    snprintf(cmd, sizeof cmd, "%s %s %s/b.safetensors > /dev/null && cp %s/config.json "
             "%s/c1.json && %s %s %s/c.safetensors 2> %s/err.txt", py, m1, d, d, d, py, m2, d, d);
    cr_expect_eq(tu_run(cmd), 1);
    e = tu_read_file(tu_path(d, "err.txt"), NULL);
    cr_expect(e && strstr(e, "config.json: describes another model than") &&
              strstr(e, "Export into a folder of its own"), "%s", e);
    free(e);
    cr_expect_neq(access(tu_path(d, "c.safetensors"), F_OK), 0,
                  "c.safetensors written though refused");
    snprintf(cmd, sizeof cmd, "cmp -s %s/config.json %s/c1.json", d, d);
    cr_expect_eq(tu_run(cmd), 0, "config.json changed");
    /* --overwrite: written; the old config.json kept beside it */
    snprintf(cmd, sizeof cmd, "%s %s %s/c.safetensors --overwrite > /dev/null && cmp -s "
             "%s/c1.json %s/config.json.replaced_* && grep -q '\"n_layer\": %d' %s/config.json",
             py, m2, d, d, d, cfg.num_layers, d);
    cr_expect_eq(tu_run(cmd), 0, "--overwrite did not keep the old config.json: %s", cmd);
    snprintf(cmd, sizeof cmd, "%s %s %s/d.safetensors --bogus 2> /dev/null", py, m1, d);
    cr_expect_eq(tu_run(cmd), 2);
    tu_remove_tree(d);
}

/* scripts/import_hf.py, the inverse: dev/reference/hf_import_check.py imports
 * export_hf.py's .pt, and an OpenAI-style .safetensors (no prefix, mask
 * buffers, --heads), each back to the model file byte for byte, and checks
 * its refusals. With --dtype bf16 the file is model_file_save_as's version 5
 * of the same weights, byte for byte (round to nearest even, in C here). */
Test(export_hf, import_gives_the_model_file_back, .timeout = 180)
{
    char *d = tu_tempdir(), path[600], v5[600];
    GPTConfig cfg = tu_tiny_config();
    snprintf(path, sizeof path, "%s/m.bin", d);
    save_random_model(path, &cfg, 23, 3);
    snprintf(v5, sizeof v5, "%s/m5.bin", d);
    save_random_model(v5, &cfg, 23, 5);
    /* it also writes d/b16.bin: import_hf.py --dtype bf16 of the .pt export */
    expect_check_passes("hf_import_check", path, d);
    cr_assert(tu_exists(tu_path(d, "b16.bin")), "hf_import_check wrote no b16.bin");
    cr_expect(tc_files_equal(tu_path(d, "b16.bin"), v5), "bf16 import differs from the C writer's");
    tu_remove_tree(d);
}

/* A file the scripts write (export_hf.write_via_temp, which import_hf uses
 * too) is on disk before its name is: fsync of the temporary file, then
 * the rename, then fsync of the folder. Recorded by wrapping os.fsync and
 * os.replace. Before, the temporary file was renamed unsynced (a power cut
 * could leave OUT empty): no fsync of it was recorded. */
Test(export_hf, each_file_is_synced_before_its_rename, .timeout = 60)
{
    char *d = tu_tempdir(), cmd[4096];
    tu_write_text(tu_path(d, "sync_check.py"),
                  "import os, sys\n"
                  "sys.path.insert(0, 'scripts')\n"
                  "import export_hf\n"
                  "seen = []\n"
                  "real_fsync, real_replace = os.fsync, os.replace\n"
                  "def fsync(fd):\n"
                  "    seen.append('fsync ' + os.readlink('/proc/self/fd/%d' % fd))\n"
                  "    real_fsync(fd)\n"
                  "def replace(a, b):\n"
                  "    seen.append('rename ' + os.path.basename(a) + ' ' + b)\n"
                  "    real_replace(a, b)\n"
                  "os.fsync, os.replace = fsync, replace\n"
                  "out = sys.argv[1] + '/out.pt'\n"
                  "def write(tmp):\n"
                  "    with open(tmp, 'w') as f: f.write('x')\n"
                  "export_hf.write_via_temp(out, write)\n"
                  "print('\\n'.join(seen))\n");
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s > %s 2>&1", tu_path(d, "sync_check.py"), d,
             tu_path(d, "seen.txt"));
    int rc = tu_run(cmd);
    char *seen = tu_read_file(tu_path(d, "seen.txt"), NULL);
    cr_assert_eq(rc, 0, "%s", seen);
    /* three lines: fsync D/out.pt.XXXX.tmp, rename out.pt.XXXX.tmp D/out.pt, fsync D */
    char *l1 = seen, *l2 = strchr(l1, '\n'), *l3 = l2 ? strchr(l2 + 1, '\n') : NULL;
    cr_assert(l2 && l3, "fewer than 3 steps recorded:\n%s", seen);
    *l2++ = 0, *l3++ = 0;
    char *end = strchr(l3, '\n');
    if (end) *end = 0;
    char want[1200];
    snprintf(want, sizeof want, "fsync %s/out.pt.", d);
    cr_expect(strncmp(l1, want, strlen(want)) == 0 && strstr(l1, ".tmp"),
              "first, not the temp file's fsync: %s", l1);
    snprintf(want, sizeof want, " %s/out.pt", d);
    cr_expect(strncmp(l2, "rename out.pt.", 14) == 0 && strstr(l2, want), "then: %s", l2);
    snprintf(want, sizeof want, "fsync %s", d);
    cr_expect_str_eq(l3, want, "last, not the folder's fsync");
    free(seen);
    tu_remove_tree(d);
}

/* A SIGTERM or SIGHUP while a file is being written ends either script as
 * Ctrl-C does: exit 128 + N, the temporary file removed, OUT not made. The
 * script's own main() runs; sync_file (called on the written temporary
 * file, before the rename) is wrapped to send the signal, so it lands with
 * the temporary file complete on disk. Before, the default action killed
 * the script and left OUT.XXXX.tmp behind. The files are safetensors, which
 * both scripts write through the same write_via_temp as torch.save's, so
 * that no run imports torch (1.5 to 6 s a start on the 2-core build VM). */
Test(export_hf, a_signal_mid_write_leaves_no_temporary_file, .timeout = 60)
{
    static const int sigs[] = {15, 1};
    char *d = tu_tempdir(), model[600];
    GPTConfig cfg = tu_tiny_config();
    snprintf(model, sizeof model, "%s/m.bin", d);
    save_random_model(model, &cfg, 21, 3);
    tu_write_text(tu_path(d, "term.py"),
                  "import os, sys\n"
                  "sys.path.insert(0, 'scripts')\n"
                  "import export_hf, import_hf\n"
                  "sig, script = int(sys.argv[1]), sys.argv[2]\n"
                  "def sync_file(path):\n"
                  "    os.kill(os.getpid(), sig)\n"
                  "export_hf.sync_file = sync_file\n"
                  "sys.argv = [script] + sys.argv[3:]\n"
                  "(export_hf if script == 'export' else import_hf).main()\n");
    /* the five runs as forks of one Python (tests/lib/script_runs.h), in
     * order: the two exports under the wrapper, a plain export for the
     * imports to read, the two imports under the wrapper */
    char cmd[4096], script_path[700], *out;
    snprintf(cmd, sizeof cmd, "mkdir %s/hf %s/o0 %s/o1 %s/o2 %s/o3", d, d, d, d, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    snprintf(script_path, sizeof script_path, "%s/term.py", d);
    ScriptRuns sr = script_runs_new(d);
    int run[4], plain = -1;
    for (int i = 0; i < 4; i++) {
        if (i == 2) {
            snprintf(cmd, sizeof cmd, "%s %s/hf/model.safetensors", model, d);
            plain = script_runs_add(&sr, "scripts/export_hf.py", cmd);
        }
        snprintf(cmd, sizeof cmd, "%d %s %s/%s %s/o%d/%s", sigs[i % 2], i < 2 ? "export" : "import",
                 d, i < 2 ? "m.bin" : "hf", d, i, i < 2 ? "out.safetensors" : "out.bin");
        run[i] = script_runs_add(&sr, script_path, cmd);
    }
    script_runs_go(&sr, 0);
    out = script_runs_output(&sr, plain);
    cr_assert_eq(script_runs_rc(&sr, plain), 0, "the plain export: %s", out);
    free(out);
    for (int i = 0; i < 4; i++) {
        int sig = sigs[i % 2];
        const char *script = i < 2 ? "export" : "import";
        char want[16], *ls;
        snprintf(cmd, sizeof cmd, "ls %s/o%d", d, i);
        tu_run_output(cmd, &ls, &ls);
        cr_assert_not_null(ls);
        out = script_runs_output(&sr, run[i]);
        snprintf(want, sizeof want, "rc=%d", script_runs_rc(&sr, run[i]));
        cr_expect_eq(script_runs_rc(&sr, run[i]), 128 + sig, "%s, signal %d: not rc=%d:\n%s%s",
                     script, sig, 128 + sig, want, out);
        cr_expect(strstr(ls, ".tmp") == NULL, "%s, signal %d left a temporary file:\n%s", script,
                  sig, ls);
        cr_expect(strstr(ls, "out.") == NULL, "%s, signal %d: OUT made:\n%s", script, sig, ls);
        free(out), free(ls);
    }
    script_runs_free(&sr);
    tu_remove_tree(d);
}
