/* tests/e2e/build/test_nvcc_choice.c — the Makefile keeps the NVCC choice
 * of a build folder ($(BUILD)/nvcc.stamp): after `make NVCC=`, a plain
 * `make data` (which builds tokenize) stays CPU-only instead of compiling
 * with the nvcc it finds and relinking tokenize alone with CUDA; after
 * NVCC=PATH, a plain make keeps PATH; NVCC given again overrides. Checked
 * with dry runs (`make -n`) into a fresh build folder: nothing is compiled,
 * and the fake nvcc path is never run. Runs in the source tree's root (where
 * the suite runs), with the caller's make variables cleared. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/test_util.h"

#define FAKE_NVCC "/nonexistent/cuda/bin/nvcc"

/* `make -n BUILD=dir vars target` with its output in dir/out.txt, read back
 * (the caller frees). */
static char *dry_run(const char *dir, const char *vars, const char *target)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u NVCC make -n "
             "--no-print-directory BUILD='%s' %s %s > '%s/out.txt' 2>&1", dir, vars, target, dir);
    int rc = tu_run(cmd);
    char *out = tu_read_file(tu_path(dir, "out.txt"), NULL);
    cr_assert_eq(rc, 0, "%s\nexited %d: %s", cmd, rc, out ? out : "");
    cr_assert_not_null(out);
    return out;
}

Test(nvcc_choice, make_nvcc_empty_stays_cpu_only, .timeout = 60)
{
    cr_assert_eq(access("Makefile", F_OK), 0, "not in the source tree's root");
    char *d = tu_tempdir();
    free(dry_run(d, "NVCC=", "tokenize"));
    char *out = dry_run(d, "", "tokenize"); /* what `make data` builds */
    cr_expect(!strstr(out, "-DHAVE_CUDA") && !strstr(out, "kernels/cuda/"),
              "a plain make after `make NVCC=` builds with CUDA:\n%.2000s", out);
    free(out);
    out = dry_run(d, "", "all");
    cr_expect(strstr(out, "built CPU-only: NVCC= was given earlier"),
              "the message does not say NVCC= was given:\n%.2000s", out);
    cr_expect(!strstr(out, "nvcc not found"), "says nvcc not found:\n%.2000s", out);
    free(out);
    tu_remove_tree(d);
}

Test(nvcc_choice, a_given_nvcc_is_kept_until_given_again, .timeout = 60)
{
    cr_assert_eq(access("Makefile", F_OK), 0, "not in the source tree's root");
    char *d = tu_tempdir();
    free(dry_run(d, "NVCC=" FAKE_NVCC, "tokenize"));
    char *out = dry_run(d, "", "tokenize");
    cr_expect(strstr(out, FAKE_NVCC " ") && strstr(out, "-DHAVE_CUDA"),
              "a plain make did not keep NVCC=" FAKE_NVCC ":\n%.2000s", out);
    free(out);
    /* given again: CPU-only, said so ("all" also compiles the NCCL path
     * against nccl.h, with -DHAVE_CUDA, when the toolkit is installed) */
    out = dry_run(d, "NVCC=", "all");
    cr_expect(!strstr(out, FAKE_NVCC) && !strstr(out, "kernels/cuda/"), "%.2000s", out);
    cr_expect(strstr(out, "built CPU-only: NVCC= was given ("), "%.2000s", out);
    free(out);
    out = dry_run(d, "", "tokenize");
    cr_expect(!strstr(out, FAKE_NVCC) && !strstr(out, "-DHAVE_CUDA"), "%.2000s", out);
    free(out);
    tu_remove_tree(d);
}

/* --version says why there is no CUDA backend: after `make NVCC=`, that
 * NVCC= was given (not "nvcc was not found"), kept with the stamp. */
Test(nvcc_choice, version_says_nvcc_was_given, .timeout = 60)
{
    cr_assert_eq(access("Makefile", F_OK), 0, "not in the source tree's root");
    char *d = tu_tempdir(), target[1200];
    snprintf(target, sizeof target, "'%s/kernels/device_info.o'", d);
    const char *want = "-DTRAIN_GPT_NO_CUDA_WHY='\"a CPU-only build: NVCC= was given";
    char *out = dry_run(d, "NVCC=", target);
    cr_expect(strstr(out, want) && !strstr(out, "nvcc was not found"), "%.2000s", out);
    free(out);
    out = dry_run(d, "", target);
    cr_expect(strstr(out, want), "a plain make after `make NVCC=`:\n%.2000s", out);
    free(out);
    tu_remove_tree(d);
}
