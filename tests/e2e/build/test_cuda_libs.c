/* tests/e2e/build/test_cuda_libs.c — a CUDA build links neither cuBLASLt
 * nor NCCL (kernels/cuda_libs.h opens them on first use): their static
 * initialisers and page faults cost every start 0.4 CPU-s, --help and
 * cpu-backend runs included. Checked on the programs the suite drives
 * (tc_bin, tc_tokenize_bin): no DT_NEEDED entry names either library
 * (`readelf -d`, the ELF dynamic section; the spec is the ELF gABI's
 * DT_NEEDED). The tables themselves: opening resolves every listed
 * function (the libraries are on any machine with the toolkit, GPU or
 * not), and a second call returns the same table. Skipped in a CPU-only
 * build, which has neither. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda_libs.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

#ifdef HAVE_CUDA
/* readelf -d's NEEDED lines for bin (the caller frees). */
static char *needed(const char *bin)
{
    char cmd[4096], *out = NULL, *err = NULL;
    snprintf(cmd, sizeof cmd, "readelf -d '%s' | grep NEEDED", bin);
    int rc = tu_run_output(cmd, &out, &err);
    cr_assert_eq(rc, 0, "%s exited %d: %s", cmd, rc, err ? err : "");
    free(err);
    cr_assert(out && strstr(out, "libc.so"), "%s: no NEEDED lines: %s", cmd, out ? out : "");
    return out;
}

static void expect_not_linked(const char *bin)
{
    char *out = needed(bin);
    cr_expect(!strstr(out, "libcublasLt"), "%s links cuBLASLt:\n%s", bin, out);
    cr_expect(!strstr(out, "libnccl"), "%s links NCCL:\n%s", bin, out);
    free(out);
}
#endif

Test(cuda_libs, programs_do_not_link_cublaslt_or_nccl, .timeout = 30)
{
#ifdef HAVE_CUDA
    expect_not_linked(tc_bin());
    expect_not_linked(tc_tokenize_bin());
#else
    cr_skip_test("a CPU-only build links no CUDA library");
#endif
}

Test(cuda_libs, opening_resolves_every_function, .timeout = 60)
{
#ifdef HAVE_CUDA
    char err[512] = "";
    const CudaLtApi *lt = cuda_libs_lt(err, sizeof err);
    cr_assert_not_null(lt, "cuBLASLt: %s", err);
    const CudaNcclApi *nc = cuda_libs_nccl(err, sizeof err);
    cr_assert_not_null(nc, "NCCL: %s", err);
    /* every member is a function pointer that opening set */
    void *slots[sizeof *lt / sizeof(void *)];
    memcpy(slots, lt, sizeof slots);
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++)
        cr_expect_not_null(slots[i], "cuBLASLt table slot %zu unset", i);
    void *nslots[sizeof *nc / sizeof(void *)];
    memcpy(nslots, nc, sizeof nslots);
    for (size_t i = 0; i < sizeof nslots / sizeof nslots[0]; i++)
        cr_expect_not_null(nslots[i], "NCCL table slot %zu unset", i);
    /* a call through each table: the library's own text for a status (its
     * wording is the library version's: only that it is text, and that
     * success and a failure read differently) */
    const char *ok = lt->GetStatusString(CUBLAS_STATUS_SUCCESS);
    const char *bad = lt->GetStatusString(CUBLAS_STATUS_INVALID_VALUE);
    cr_assert(ok && bad && *ok && *bad, "cublasLtGetStatusString gave no text");
    cr_expect_str_neq(ok, bad, "success and an invalid value read the same: %s", ok);
    ok = nc->GetErrorString(ncclSuccess);
    bad = nc->GetErrorString(ncclInvalidArgument);
    cr_assert(ok && bad && *ok && *bad, "ncclGetErrorString gave no text");
    cr_expect_str_neq(ok, bad, "success and an invalid argument read the same: %s", ok);
    cr_expect_eq(cuda_libs_lt(err, sizeof err), lt, "a second call opened another table");
    cr_expect_eq(cuda_libs_nccl(err, sizeof err), nc, "a second call opened another table");
#else
    cr_skip_test("a CPU-only build links no CUDA library");
#endif
}
