/* tests/lib/ref_batch.h — a test's cases checked against one run of a
 * reference script.
 *
 * Owns: RefBatch. Starting Python and importing torch is most of the time a
 * small reference job takes (1.5 to 6 s on the 2-core build VM, by its
 * load), so a test with several cases runs the script once for all of
 * them: ref_batch_twice calls the test's `cases` twice. In the first pass
 * each case writes its inputs in ref_batch_dir's folder and adds its job
 * (ref_batch_job returns 0); then the script runs every job; in the second
 * pass each case recomputes its values (the ops are deterministic, so they
 * are the first pass's) and compares them with the results in the same
 * folder (ref_batch_job returns 1). ref_batch_shared goes further: the
 * first pass of every test's cases, of a whole suite, and one run of the
 * script for all of them, once a run (run_once.h), each test then checking
 * its own. Test-only; not in the library. */
#ifndef TESTS_REF_BATCH_H
#define TESTS_REF_BATCH_H

#define REF_BATCH_MAX 8

typedef struct {
    const char *sep; /* between two jobs on the command line */
    int checking;    /* the second pass */
    int k, n;        /* the next case; the folders made */
    char *dir[REF_BATCH_MAX];
    const char *base; /* ref_batch_shared: the cases' folders are base/0, base/1, ... */
    char cmd[4096];
} RefBatch;

/* The next case's folder: a new one in the first pass, the same again in
 * the second. Asserts on more than REF_BATCH_MAX cases. */
const char *ref_batch_dir(RefBatch *rb);

/* First pass: appends the job (printf-style) to the command; returns 0.
 * Second pass: returns 1 (the job's results are in its folder). */
int ref_batch_job(RefBatch *rb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Runs cases, then `prog JOB sep JOB ...`, which must exit 0 and print
 * `pass`, then cases again; removes the folders. Asserts, with the
 * command and its output, on a failed run; `needs` says what it needs. */
void ref_batch_twice(const char *prog, const char *sep, const char *pass, const char *needs,
                     void (*cases)(RefBatch *));

/* A suite's groups of cases (one a test) against one run of `prog` a run:
 * the first test to ask (run_once.h, `key`) runs each group's first pass
 * in a folder of the shared one, then `prog` once on all their jobs and
 * `extra` (more jobs, from `sep` on; may be ""), which must exit 0 and
 * print `pass`; then group `mine`'s second pass checks its results.
 * Returns the run's output (malloc'd), for a test that checks a line of
 * it. */
char *ref_batch_shared(const char *prog, const char *sep, const char *pass, const char *needs,
                       const char *key, void (*const *groups)(RefBatch *), int ngroups, int mine,
                       const char *extra);

#endif
