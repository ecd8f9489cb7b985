/* tests/unit/kernels/test_matmul_prepare.c — BackendOps.matmul_prepare on
 * the cpu: after it, the product a run makes at that shape leaves the
 * resident set where it was, so a baseline read after it counts OpenBLAS's
 * buffers (cli/recompute.h). The reference is the kernel's own count,
 * VmRSS, before and after the full-width products. The products are the
 * backend's own (matmul_backward: the tiles of kernels/cpu/gemm_tiles.c,
 * one OpenBLAS buffer per thread). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "base/procmem.h"
#include "kernels/backend.h"

/* An operand, written (so resident) before the product: whether the kernel
 * counts untouched or zero-page-read memory in VmRSS varies (6.18 in a
 * Firecracker guest counts pages only read), so every operand is made
 * resident first and the product's own growth is what is left. */
static float *operand(size_t n)
{
    float *p = calloc(n, sizeof(float));
    cr_assert_not_null(p);
    memset(p, 0, n * sizeof(float));
    return p;
}

/* The loss head's two backward products at GPT-2's vocabulary
 * (kernels/cpu/head.c: dx(rows,C) = dlogits . wte and dwte(V,C) +=
 * dlogits^T . x), through matmul_backward, which makes the same two at
 * these shapes (N = rows, IC = C, OC = V). */
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
    float *dlogits = operand((size_t)rows * V), *x = operand((size_t)rows * C);
    float *dwte = operand((size_t)V * C), *wte = operand((size_t)V * C);
    float *dx = operand((size_t)rows * C);
    size_t mid = procmem_rss();
    be->ops->matmul_backward(be, dx, dwte, NULL, dlogits, x, wte, rows, C, V);
    size_t after = procmem_rss(), grown = after > mid ? after - mid : 0;
    cr_expect_gt(prepared, before,
                 "matmul_prepare touched only %zu bytes: nothing to count?", prepared - before);
    cr_expect_leq(grown, (size_t)1 << 20,
                  "the product grew the resident set by %zu bytes beyond what it wrote", grown);
    free(dlogits), free(x), free(dwte), free(wte), free(dx);
    backend_close(be);
}
