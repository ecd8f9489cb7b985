/* tests/lib/ref_batch.c — a test's cases against one run of a reference
 * script (ref_batch.h). */
#include "tests/lib/ref_batch.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/test_util.h"

const char *ref_batch_dir(RefBatch *rb)
{
    if (!rb->checking) {
        cr_assert_lt(rb->n, REF_BATCH_MAX, "more than %d reference cases", REF_BATCH_MAX);
        rb->dir[rb->n++] = tu_tempdir();
    }
    cr_assert_lt(rb->k, rb->n, "the second pass has more cases than the first");
    return rb->dir[rb->k++];
}

int ref_batch_job(RefBatch *rb, const char *fmt, ...)
{
    if (rb->checking) return 1;
    size_t k = strlen(rb->cmd);
    int n = snprintf(rb->cmd + k, sizeof rb->cmd - k, " %s ", rb->sep);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof rb->cmd - k)
        n += vsnprintf(rb->cmd + k + n, sizeof rb->cmd - k - n, fmt, ap);
    va_end(ap);
    cr_assert(n >= 0 && (size_t)n < sizeof rb->cmd - k, "the reference's command is too long");
    return 0;
}

void ref_batch_twice(const char *prog, const char *sep, const char *pass, const char *needs,
                     void (*cases)(RefBatch *))
{
    RefBatch rb = {.sep = sep};
    cases(&rb);
    /* the first job's separator becomes the program */
    size_t skip = strlen(sep) + 2;
    char *cmd = malloc(strlen(prog) + strlen(rb.cmd) + 2), *out = NULL;
    cr_assert(cmd && strlen(rb.cmd) > skip, "no reference job");
    sprintf(cmd, "%s %s", prog, rb.cmd + skip);
    int rc = tu_run_output(cmd, &out, &out);
    cr_assert(rc == 0 && out && strstr(out, pass), "%s: exit %d: %s (%s)", cmd, rc,
              out ? out : "", needs);
    free(out), free(cmd);
    rb.checking = 1, rb.k = 0;
    cases(&rb);
    cr_assert_eq(rb.k, rb.n, "the second pass has fewer cases than the first");
    for (int i = 0; i < rb.n; i++) tu_remove_tree(rb.dir[i]);
}
