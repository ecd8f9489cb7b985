/* dev/cuda/check_rank_sum.c — check_kernels' row for kernels/rank_sum.h,
 * the NCCL path's rank-order sum (group "optimizer"), exact against the loop
 * it must equal (distributed/dist_mpi.c's): W = 3 copies of n par-dtype
 * elements, the rank's own in place, the others in slots `stride` apart
 * (stride > n, so a wrong stride reads the wrong values); fp32 adds from
 * rank 0's value, one rounding to the par dtype at the end; as the first
 * and as the last rank; each run twice (the same bits). A sum in another
 * order fails in fp32 (8.4e-8, tried: ranks added last to first). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/rank_sum.h"

void check_rank_sum(Ctx *c, size_t n, const char *sh)
{
    enum { W = 3 };
    size_t stride = n + 5;
    float *x = ck_rand(c, W * stride, -1.0f, 1.0f), *ref = ck_alloc(n), *got = ck_alloc(n);
    ck_round(c, x, W * stride); /* the copies are par-dtype values */
    void *slots = ck_dev_from(c, x, W * stride, 0), *out = ck_dev(c, n, 0);
    void *stream = c->gpu->ops->native_stream(c->gpu);
    double worst = 0.0;
    int same = 1;
    for (int rank = 0; rank < W; rank += W - 1) { /* first and last */
        for (size_t i = 0; i < n; i++) {
            float acc = x[i];
            for (int q = 1; q < W; q++) acc += x[(size_t)q * stride + i];
            ref[i] = acc;
        }
        ck_round(c, ref, n);
        for (int run = 0; run < 2; run++) {
            ck_dev_set(c, out, x + (size_t)rank * stride, n, 0); /* in place: its own copy */
            int e = cuda_rank_sum(stream, out, slots, stride, n, W, rank, c->gpu->par_bytes == 2);
            if (e) {
                fprintf(stderr, "cuda_rank_sum: launch failed (%d)\n", e);
                exit(1);
            }
            c->gpu->ops->sync(c->gpu);
            ck_dev_get(c, got, out, n, 0);
            same &= memcmp(got, ref, n * sizeof(float)) == 0;
            double err = ck_rel_err(got, ref, n);
            if (err > worst) worst = err;
        }
    }
    ck_record(c, "rank_sum", sh, "exact", same ? worst : (worst > 0 ? worst : 1.0), 0.0, 1);
    ck_dev_free(c, slots), ck_dev_free(c, out);
    free(x), free(ref), free(got);
}
