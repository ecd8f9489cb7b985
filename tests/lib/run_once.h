/* tests/lib/run_once.h — one product for the tests of a run that share it.
 *
 * Owns: the folders $TMPDIR/once-KEY. Criterion runs each test in a process
 * of its own, two at a time under `make test`; a suite whose tests each
 * start the same costly reference (Python and torch: 2 to 3 CPU-s a start
 * on the 2-core build VM) can have the first of them run it once for all
 * and the others read its results. The first test process that asks for
 * KEY builds the folder (in a temporary name, renamed when complete); one
 * that asks meanwhile waits on its lock (flock, no clock) and then reads
 * it. A build that fails ends its test and leaves no folder, so the next
 * test builds again and fails on its own. $TMPDIR is the suite's root
 * (test_util.c), so the folder lives for one run_tests and no longer.
 * Test-only. */
#ifndef TESTS_RUN_ONCE_H
#define TESTS_RUN_ONCE_H

/* The folder of KEY, made by build(dir, arg) in this run's first asker.
 * Returns a malloc'd path. */
char *run_once(const char *key, void (*build)(const char *dir, void *arg), void *arg);

#endif
