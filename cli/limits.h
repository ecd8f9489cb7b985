/* cli/limits.h — the process's limits (ulimit -v, ulimit -n) checked at
 * start-up, where a run that cannot work under them stops with one line
 * (exit 1), rather than hang in OpenBLAS or lose its steps at the first
 * save. */
#ifndef CLI_LIMITS_H
#define CLI_LIMITS_H

#include <stddef.h>

/* RLIMIT_NOFILE against the descriptors open now and those a run adds:
 * the log, a train and a val shard, and a save's file with its folder and
 * the checkpoint folder (fsync'd open). Returns 0, or -1 with err. */
int limits_check_files(char *err, size_t len);

/* RLIMIT_AS against the address space mapped now (VmSize) and what
 * OpenBLAS maps at the first matmul on `threads` threads (0: OpenMP's
 * default). Called before the first BLAS call: OpenBLAS retries a failed
 * buffer map forever. Returns 0, or -1 with err. */
int limits_check_address_space(int threads, char *err, size_t len);

/* RLIMIT_AS against what is mapped now and `bytes` more: the arenas and
 * host copies the plan counts beyond its baseline, which on the cpu are
 * this process's address space. Called after the plan is printed and
 * before the arenas are allocated, so the run stops naming the limit
 * rather than as an allocation that failed. `fixed`, the part of `bytes`
 * that --recompute and --batch cannot shrink (weights, gradients,
 * optimizer), picks the advice. Returns 0, or -1 with err. */
int limits_check_plan(size_t bytes, size_t fixed, char *err, size_t len);

#endif
