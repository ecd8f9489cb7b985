/* tests/lib/rank_runs.h — what the ranks suites (tests/e2e/ranks/) share:
 * their fixture (a temporary directory with the harness's byte-level
 * shards), the training run they repeat at several --zero and world
 * sizes, and what they compare between two runs whose files are
 * dir/<tag>.<ext>: a file's text, two files byte for byte, the numbers of
 * two JSON-lines logs bit for bit, and a run's arenas against its plan.
 *
 * Owns: the directory rank_runs_setup returns (rank_runs_teardown removes
 * it); Criterion expectations name the tags and `what`. */
#ifndef TESTS_RANK_RUNS_H
#define TESTS_RANK_RUNS_H

/* A new temporary directory holding tc_make_shards(dir, 2, 600): two
 * train shards of 600 tokens and val.bin. */
char *rank_runs_setup(void);
/* rm -rf dir, and free it. */
void rank_runs_teardown(char *dir);

/* Train the harness's tiny model (tc_model_args) with `shape` after it
 * (e.g. "--layers 4 --channels 24", or ""), --steps 3 --weight-decay 0.1,
 * then flags (a later --steps or shape flag wins): through
 * `timeout 120 mpirun -np np` (np 0: one process, no launcher), the model
 * to dir/<tag>.bin, the log to dir/<tag>.log (both removed first), stdout
 * and stderr to dir/<tag>.out. Returns the exit status. */
int rank_runs_train(const char *dir, int np, const char *tag, const char *shape,
                    const char *flags);

/* dir/<tag>.out's "memory: arenas planned X bytes; their high-water mark Y"
 * with X = Y (rank 0's), and no rank saying it differs from the plan. */
void rank_runs_expect_plan_met(const char *dir, const char *tag);

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
