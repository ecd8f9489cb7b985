/* tests/lib/ref_batch.c — a test's cases against one run of a reference
 * script (ref_batch.h). */
#include "tests/lib/ref_batch.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "tests/lib/run_once.h"
#include "tests/lib/test_util.h"

const char *ref_batch_dir(RefBatch *rb)
{
    if (rb->base) { /* ref_batch_shared: base/k, made in the first pass */
        char name[16];
        cr_assert_lt(rb->k, REF_BATCH_MAX, "more than %d reference cases", REF_BATCH_MAX);
        snprintf(name, sizeof name, "%d", rb->k);
        char *d = rb->dir[rb->k++] = strdup(tu_path(rb->base, name));
        cr_assert_not_null(d);
        if (!rb->checking) {
            cr_assert_eq(mkdir(d, 0755), 0, "%s: cannot make it", d);
            rb->n++;
        }
        cr_assert(tu_exists(d), "%s: the shared run has no such case", d);
        return d;
    }
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

typedef struct {
    const char *prog, *sep, *pass, *needs, *extra;
    void (*const *groups)(RefBatch *);
    int ngroups;
} Shared;

/* run_once's build: every group's first pass in dir/gG, then prog once;
 * its output kept in dir/output.txt. */
static void build_shared(const char *dir, void *arg)
{
    const Shared *sh = arg;
    size_t cap = strlen(sh->prog) + strlen(sh->extra) + 16, len = 0;
    char *cmd = malloc(cap), *out = NULL;
    cr_assert_not_null(cmd);
    len = (size_t)sprintf(cmd, "%s", sh->prog);
    for (int g = 0; g < sh->ngroups; g++) {
        char name[16], *base;
        snprintf(name, sizeof name, "g%d", g);
        base = strdup(tu_path(dir, name));
        cr_assert_eq(mkdir(base, 0755), 0, "%s: cannot make it", base);
        RefBatch rb = {.sep = sh->sep, .base = base};
        sh->groups[g](&rb);
        for (int i = 0; i < rb.k; i++) free(rb.dir[i]);
        cr_assert(strlen(rb.cmd) > strlen(sh->sep) + 2, "group %d added no job", g);
        /* the first job's separator is dropped: prog's first job follows it */
        const char *jobs = rb.cmd + (g == 0 ? strlen(sh->sep) + 2 : 0);
        cap += strlen(rb.cmd) + 2;
        cmd = realloc(cmd, cap);
        cr_assert_not_null(cmd);
        len += (size_t)sprintf(cmd + len, " %s", jobs);
        free(base);
    }
    sprintf(cmd + len, " %s", sh->extra);
    int rc = tu_run_output(cmd, &out, &out);
    cr_assert(rc == 0 && out && strstr(out, sh->pass), "%s: exit %d: %s (%s)", cmd, rc,
              out ? out : "", sh->needs);
    tu_write_text(tu_path(dir, "output.txt"), out);
    free(out), free(cmd);
}

char *ref_batch_shared(const char *prog, const char *sep, const char *pass, const char *needs,
                       const char *key, void (*const *groups)(RefBatch *), int ngroups, int mine,
                       const char *extra)
{
    Shared sh = {prog, sep, pass, needs, extra, groups, ngroups};
    char *dir = run_once(key, build_shared, &sh), name[16];
    char *out = tu_read_file(tu_path(dir, "output.txt"), NULL);
    cr_assert_not_null(out, "%s: no output.txt", dir);
    if (mine >= 0) {
        snprintf(name, sizeof name, "g%d", mine);
        char *base = strdup(tu_path(dir, name));
        RefBatch rb = {.sep = sep, .base = base, .checking = 1};
        groups[mine](&rb);
        for (int i = 0; i < rb.k; i++) free(rb.dir[i]);
        snprintf(name, sizeof name, "%d", rb.k);
        cr_assert(!tu_exists(tu_path(base, name)), "the second pass has fewer cases than the "
                  "first");
        free(base);
    }
    free(dir);
    return out;
}
