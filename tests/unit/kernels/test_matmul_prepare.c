/* tests/unit/kernels/test_matmul_prepare.c — BackendOps.matmul_prepare on
 * the cpu: after it, the product a run makes at that shape leaves the
 * resident set where it was, so a baseline read after it counts OpenBLAS's
 * buffers (cli/recompute.h). The reference is the kernel's own count,
 * VmRSS, before and after the full-width product. */
#include <cblas.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "base/procmem.h"
#include "kernels/backend.h"

/* An operand of zero pages: read, never resident. */
static float *zeros(size_t n)
{
    void *p = mmap(NULL, n * sizeof(float), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    return p;
}

/* The loss head's weight gradient at GPT-2's vocabulary (kernels/cpu/head.c:
 * dwte(V,C) += dlogits^T . x), the product whose buffers are the largest:
 * about 30 MiB at two threads and 512-row chunks. */
Test(matmul_prepare, the_real_product_touches_less_than_a_mib_more, .timeout = 120)
{
    char err[256];
    Backend *be = backend_open("cpu", "fp32", 2, err, sizeof err);
    cr_assert_not_null(be, "%s", err);
    cr_assert_not_null(be->ops->matmul_prepare, "the cpu backend has no matmul_prepare");
    const int rows = 512, V = 50257, C = 128;
    size_t before = procmem_rss();
    be->ops->matmul_prepare(be, NULL, 0, rows, V, C);
    size_t prepared = procmem_rss();
    float *dlogits = zeros((size_t)rows * V), *x = zeros((size_t)rows * C);
    float *dwte = zeros((size_t)V * C);
    size_t mid = procmem_rss();
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, C, rows, 1.0f, dlogits, V, x, C,
                1.0f, dwte, C);
    /* dwte's own pages, which the product writes, are the caller's */
    size_t written = (size_t)V * C * sizeof(float), after = procmem_rss();
    size_t grown = after - mid > written ? after - mid - written : 0;
    cr_expect_gt(prepared, before + ((size_t)8 << 20),
                 "matmul_prepare touched only %zu bytes: nothing to count?", prepared - before);
    cr_expect_leq(grown, (size_t)1 << 20,
                  "the product grew the resident set by %zu bytes beyond what it wrote", grown);
    backend_close(be);
}
