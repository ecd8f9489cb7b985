/* tests/train_cli.h — helpers for the end-to-end tests that drive
 * ./train_gpt as a separate process (resume, signals, hostile inputs).
 * The binary is $TRAIN_GPT_BIN when set (make test-asan points it at the
 * sanitizer build), else ./train_gpt. */
#ifndef TESTS_TRAIN_CLI_H
#define TESTS_TRAIN_CLI_H

#include <stddef.h>
#include <sys/types.h>

#define TC_MAX_STEPS 4096

const char *tc_bin(void);
/* ./tokenize, or $TRAIN_GPT_TOKENIZE_BIN when set. */
const char *tc_tokenize_bin(void);

/* Byte-level shards (vocab 256) from ../shared/data/tinyshakespeare:
 * dir/train_0.bin ... each of `tokens` tokens, from consecutive text. */
void tc_make_shards(const char *dir, int nshards, size_t tokens);

/* The flags of the tiny model every end-to-end test trains: L=2, C=32,
 * NH=4, T=16, V=256, B=2, on dir/train_*.bin, no validation until the end,
 * one thread (a busy 2-core machine stalls OpenMP teams, not results). */
const char *tc_model_args(const char *dir);

/* The same without the shape flags (--layers, --channels, --heads,
 * --vocab), for runs whose shape comes from --init-from: shape flags that
 * contradict the file are refused (exit 2). */
const char *tc_data_args(const char *dir);

/* Run "env BIN args" with stdout/stderr to out_prefix.out/.err; returns the
 * exit status (-1 when it did not exit normally, e.g. killed). */
int tc_run(const char *env, const char *args, const char *out_prefix);

/* Start the same in the background; returns the pid of train_gpt itself. */
pid_t tc_spawn(const char *env, const char *args, const char *out_prefix);

/* Wait up to timeout_ms; returns the wait status, or -1 on timeout (the
 * process is then SIGKILLed and reaped). */
int tc_wait(pid_t pid, int timeout_ms);

/* From a JSON-lines log: the training lines ("loss" present), in order.
 * Returns how many; steps/losses/skipped may be NULL. */
int tc_log_losses(const char *path, int *steps, double *losses, int *skipped, int max);

/* 1 when the file contains the text. */
int tc_file_has(const char *path, const char *text);

/* Bytewise equality of two files (both must exist). */
int tc_files_equal(const char *a, const char *b);

void tc_sleep_ms(int ms);

#endif
