/* tests/e2e/interop/test_export_hf_faults.c — scripts/export_hf.py and
 * scripts/import_hf.py on a full disk: one line on stderr naming the file
 * and the fault (no traceback), exit 1, and nothing of the run left: no
 * temporary file, no file it made, no folder it made, each old file it had
 * moved aside put back.
 *
 * The full disk is simulated by wrapping os.fsync to fail with ENOSPC on
 * the temporary file of one chosen name (a delayed allocation failing at
 * fsync, as on ext4 or NFS), so each step of an export can be hit; and,
 * where a private mount namespace is allowed, made real with a 64 KiB
 * tmpfs. Before, the error escaped as a Python traceback and the files
 * and folders written before it stayed: half an export. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interop/model_file.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

static const char WRAPPER[] =
    "import errno, os, sys\n"
    "sys.path.insert(0, 'scripts')\n"
    "import export_hf\n"
    "fail_at, script = sys.argv[1], sys.argv[2]\n"
    "if script == 'import': import import_hf  # it names the messages import_hf\n"
    "real_fsync = os.fsync\n"
    "def fsync(fd):\n"
    "    p = os.readlink('/proc/self/fd/%d' % fd)\n"
    "    if os.path.basename(p).startswith(fail_at + '.') and p.endswith('.tmp'):\n"
    "        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))\n"
    "    real_fsync(fd)\n"
    "os.fsync = fsync\n"
    "sys.argv = [script] + sys.argv[3:]\n"
    "(import_hf if script == 'import' else export_hf).main()\n";

static char *setup(char *model, size_t len)
{
    char *d = tu_tempdir(), err[256];
    GPTConfig cfg = tu_tiny_config();
    snprintf(model, len, "%s/m.bin", d);
    float *p = tu_random_params(&cfg, 5);
    cr_assert_eq(model_file_save_as(model, &cfg, p, 3, err, sizeof err), 0, "%s", err);
    free(p);
    tu_write_text(tu_path(d, "full.py"), WRAPPER);
    return d;
}

/* The wrapped script failing at `fail_at`: exit 1 and exactly one stderr
 * line holding `want`. */
static void expect_one_line(const char *d, const char *fail_at, const char *script,
                            const char *args, const char *want)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/full.py %s %s %s > %s/out.txt 2> %s/err.txt",
             d, fail_at, script, args, d, d);
    int rc = tu_run(cmd);
    char *err = tu_read_file(tu_path(d, "err.txt"), NULL);
    cr_expect_eq(rc, 1, "%s: exit %d: %s", cmd, rc, err);
    cr_expect(err && strstr(err, want), "%s: want '%s' in: %s", fail_at, want, err);
    cr_expect(err && strchr(err, '\n') == err + strlen(err) - 1, "not one line: %s", err);
    free(err);
}

/* `ls -A dir` as one string ("" when empty; "(none)" when it is gone). */
static char *listing(const char *dir)
{
    char cmd[1200], *out = NULL;
    snprintf(cmd, sizeof cmd, "ls -A '%s' 2>/dev/null | tr '\\n' ' ' || true", dir);
    if (access(dir, F_OK) != 0) return strdup("(none)");
    tu_run_output(cmd, &out, NULL);
    return out ? out : strdup("");
}

/* A folder export failing at its weights, or at its last file: the folders
 * it made is gone, with everything it had written in them. */
Test(export_hf_faults, a_failed_folder_export_leaves_no_folder, .timeout = 120)
{
    char model[700], args[2048], want[1200];
    char *d = setup(model, sizeof model);
    snprintf(args, sizeof args, "%s %s/new", model, d);
    snprintf(want, sizeof want, "export_hf: %s/new/model.safetensors: cannot write: No "
             "space left on device; nothing was written", d);
    expect_one_line(d, "model.safetensors", "export", args, want);
    cr_expect(access(tu_path(d, "new"), F_OK) != 0, "new/ left behind: %s",
              listing(tu_path(d, "new")));
    snprintf(args, sizeof args, "%s %s/new2", model, d);
    snprintf(want, sizeof want, "export_hf: %s/new2/generation_config.json: cannot write", d);
    expect_one_line(d, "generation_config.json", "export", args, want);
    cr_expect(access(tu_path(d, "new2"), F_OK) != 0, "new2/ left behind: %s",
              listing(tu_path(d, "new2")));
    tu_remove_tree(d);
}

/* An existing folder keeps what it held: its own file, and an old
 * config.json that --overwrite had moved aside is put back. */
Test(export_hf_faults, a_failed_export_into_a_folder_puts_back_what_it_held, .timeout = 120)
{
    char model[700], args[2048], want[1200];
    char *d = setup(model, sizeof model);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir %s/ex", d);
    cr_assert_eq(tu_run(cmd), 0);
    tu_write_text(tu_path(d, "ex/keep.txt"), "mine\n");
    tu_write_text(tu_path(d, "ex/config.json"), "{\"old\": true}\n");
    snprintf(args, sizeof args, "%s %s/ex --overwrite", model, d);
    snprintf(want, sizeof want, "export_hf: %s/ex/generation_config.json: cannot write", d);
    expect_one_line(d, "generation_config.json", "export", args, want);
    char *ls = listing(tu_path(d, "ex"));
    cr_expect_str_eq(ls, "config.json keep.txt ", "ex/ holds: %s", ls);
    free(ls);
    size_t n;
    char *old = tu_read_file(tu_path(d, "ex/config.json"), &n);
    cr_expect(old && strcmp(old, "{\"old\": true}\n") == 0, "config.json not put back: %s", old);
    free(old);
    tu_remove_tree(d);
}

/* The one-file form (OUT.safetensors, config.json beside it) and
 * import_hf.py: no OUT, no temporary file. The OUT is a .safetensors file:
 * it is written by the same write_via_temp as a .pt (whose writer is
 * torch.save), which this fault hits at its fsync either way, and it needs
 * no start of torch (2 to 3 CPU-s on the 2-core build VM). */
Test(export_hf_faults, a_failed_file_export_or_import_leaves_no_file, .timeout = 180)
{
    char model[700], args[2048], want[1200], cmd[2048], *out;
    char *d = setup(model, sizeof model);
    snprintf(cmd, sizeof cmd, "mkdir %s/f %s/hf %s/imp", d, d, d);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(args, sizeof args, "%s %s/f/model.safetensors", model, d);
    snprintf(want, sizeof want, "export_hf: %s/f/model.safetensors: cannot write: No space "
             "left on device", d);
    expect_one_line(d, "model.safetensors", "export", args, want);
    char *ls = listing(tu_path(d, "f"));
    cr_expect_str_eq(ls, "", "f/ holds: %s", ls);
    free(ls);
    /* an export to import from, made without the wrapper */
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/export_hf.py %s %s/hf", model, d);
    cr_assert_eq(tu_run_output(cmd, &out, &out), 0, "%s", out);
    free(out);
    snprintf(args, sizeof args, "%s/hf %s/imp/out.bin", d, d);
    snprintf(want, sizeof want, "import_hf: %s/imp/out.bin: cannot write: No space left on "
             "device", d);
    expect_one_line(d, "out.bin", "import", args, want);
    ls = listing(tu_path(d, "imp"));
    cr_expect_str_eq(ls, "", "imp/ holds: %s", ls);
    free(ls);
    tu_remove_tree(d);
}

/* A real full disk: a 64 KiB tmpfs, in a private mount namespace, is too
 * small for the weights. */
Test(export_hf_faults, a_real_full_tmpfs, .timeout = 120)
{
    char model[700], cmd[4096];
    char *d = setup(model, sizeof model);
    if (tu_run("unshare -m --propagation private sh -c 'mount -t tmpfs -o size=64k tmpfs /mnt' "
               "2>/dev/null") != 0)
        cr_skip_test("no private mount namespace with a tmpfs here");
    snprintf(cmd, sizeof cmd, "mkdir %s/small && unshare -m --propagation private sh -c '"
             "mount -t tmpfs -o size=64k tmpfs %s/small && "
             "/usr/bin/python3 scripts/export_hf.py %s %s/small/hf > %s/out.txt 2> %s/err.txt;"
             " echo $? > %s/rc.txt; ls -A %s/small > %s/ls.txt'", d, d, model, d, d, d, d, d,
             d);
    cr_assert_eq(tu_run(cmd), 0);
    char *rc = tu_read_file(tu_path(d, "rc.txt"), NULL);
    char *err = tu_read_file(tu_path(d, "err.txt"), NULL);
    char *ls = tu_read_file(tu_path(d, "ls.txt"), NULL);
    cr_expect(rc && atoi(rc) == 1, "exit %s: %s", rc, err);
    cr_expect(err && strstr(err, "small/hf/model.safetensors: cannot write: No space left on "
                            "device"), "%s", err);
    cr_expect(err && strchr(err, '\n') == err + strlen(err) - 1, "not one line: %s", err);
    cr_expect(ls && ls[0] == 0, "the tmpfs holds: %s", ls);
    free(rc), free(err), free(ls);
    tu_remove_tree(d);
}
