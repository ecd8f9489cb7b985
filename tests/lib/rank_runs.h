/* tests/lib/rank_runs.h — what the ranks suites (tests/e2e/ranks/) compare
 * between two runs whose files are dir/<tag>.<ext>: a file's text, two
 * files byte for byte, and the numbers of two JSON-lines logs bit for bit.
 *
 * Owns: nothing; Criterion expectations name the tags and `what`. */
#ifndef TESTS_RANK_RUNS_H
#define TESTS_RANK_RUNS_H

/* dir/<tag>.<ext>'s text (asserted to exist); the caller frees it. */
char *rank_runs_read(const char *dir, const char *tag, const char *ext);

/* dir/<a>.<ext> and dir/<b>.<ext> byte for byte (cmp). */
void rank_runs_expect_same_file(const char *dir, const char *a, const char *b, const char *ext,
                                const char *what);

/* Every number of each line of dir/<a>.log and dir/<b>.log under the keys
 * step, loss, val_loss, norm, grad_norm, lr and an evaluation's correct,
 * correct_norm, n (not the timings): the same keys, equal doubles as
 * printed; the logs the same length, 6 numbers compared at least. */
void rank_runs_expect_same_log(const char *dir, const char *a, const char *b, const char *what);

#endif
