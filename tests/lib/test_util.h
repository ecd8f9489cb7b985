/* tests/lib/test_util.h — shared helpers for the Criterion tests: a tiny model
 * on the cpu backend, random parameters and tokens, temp folders. */
#ifndef TESTS_TEST_UTIL_H
#define TESTS_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "data/source.h"
#include "kernels/backend.h"
#include "model/gpt.h"

/* L=2, C=32, NH=4, maxT=8, V=64 (padded 128) unless changed after. */
GPTConfig tu_tiny_config(void);

/* Uniform tokens in [0, V), deterministic in seed. */
void tu_random_tokens(int *tok, size_t n, int V, uint64_t seed);

/* Parameters with std 0.1 noise everywhere (LayerNorm weights 1 + noise),
 * padded vocab rows zero: gradients are not vanishingly small. Caller frees. */
float *tu_random_params(const GPTConfig *cfg, uint64_t seed);

/* A cpu backend with 2 threads; asserts on failure. */
Backend *tu_cpu(void);
/* The cpu attention's scratch (PlanInput.attn_scratch) that a run of cfg
 * at `threads` threads plans; threads 0: what a child process gets by
 * default (OMP_NUM_THREADS, else the processor count). */
size_t tu_attn_scratch(const GPTConfig *cfg, int threads);

/* The folder tests write in: $TMPDIR, which the suite points at its own
 * root under the caller's $TMPDIR (default /tmp) and removes at the end. */
const char *tu_tmp(void);

/* A new folder under tu_tmp(); the caller frees the string. It and what is
 * in it are removed when the test process exits (and with the suite's root
 * at the end in any case). */
char *tu_tempdir(void);

/* "dir/name" in one of 8 rotating static buffers (so a call may use a few). */
const char *tu_path(const char *dir, const char *name);

/* rm -rf dir, then free(dir): a test's temp folder at its end. */
void tu_remove_tree(char *dir);

/* Run a shell command, return its exit status (or -1). Output to files
 * given in the command. */
int tu_run(const char *cmd);

/* Run a shell command with its stdout into *out and its stderr into *err
 * (malloc'd text; NULL drops that stream; out == err gives both streams, in
 * the order written, in one text). Returns the exit status (or -1). */
int tu_run_output(const char *cmd, char **out, char **err);

/* Everything the test wrote to stderr so far, as a malloc'd string, for a
 * test declared with .init = cr_redirect_stderr; stderr is closed after. */
char *tu_captured_stderr(void);

/* 1 when something (a file, a folder, ...) is at path. */
int tu_exists(const char *path);

/* Read a whole file into a malloc'd NUL-terminated buffer (NULL if absent). */
char *tu_read_file(const char *path, size_t *len);

/* Write n bytes (n may be 0) as the whole file at path; asserts on failure. */
void tu_write_file(const char *path, const void *bytes, size_t n);
/* The same for a string (without its NUL). */
void tu_write_text(const char *path, const char *text);

/* Path of file i of a known input (data/source.h), found by the chain the
 * programs use ($TINYSHAKESPEARE / $TRAIN_GPT_GPT2_DIR, the user's cache, a
 * fetch), so the suite runs in a fresh clone too; asserts when it cannot be
 * had. */
const char *tu_source_path(const SourceSpec *spec, int i);
#define TU_ENCODER tu_source_path(&SOURCE_GPT2, 0)
#define TU_VOCAB tu_source_path(&SOURCE_GPT2, 1)
#define TU_SHAKESPEARE tu_source_path(&SOURCE_TINYSHAKESPEARE, 0)

#endif
