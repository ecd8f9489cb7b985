/* eval/eval_file.h — llm.c's multiple-choice eval file (HellaSwag, MMLU):
 * reading, validating, building and writing.
 *
 * Owns: the on-disk format and EvalSet, the examples held in memory. How
 * examples become batch rows and scores is eval/score.h's.
 *
 * Format (little-endian; llm.c's dev/data/data_common.py write_evalfile and
 * llmc/dataloader.h's EvalLoader read the same bytes):
 *   int32 header[256]: [0] 20240522 magic, [1] 1 version, [2] number of
 *         examples n, [3] the longest example's record length in bytes,
 *         the rest 0;
 *   then n records of uint16 values, back to back, example i being:
 *         65535              start-of-example marker
 *         record bytes       the whole record's length in bytes, marker and
 *                            this field included (so at most 65534)
 *         i                  the example's index: 0, 1, 2, ... in order
 *         label              index of the correct completion, 0..3
 *         4                  number of completions (llm.c's readers take 4)
 *         m, m tokens        the context, m >= 1
 *         k, k tokens        each completion in turn, k >= 1 (4 times)
 * A file ends right after its last record. n <= 65535 (the index is a
 * uint16). Writers refuse token ids >= 65535, as llm.c's does.
 *
 * Reading checks everything above (header fields; each record's marker,
 * index, length, counts and that its fields fill it exactly; no trailing
 * bytes; the header's longest length equals the longest record) and
 * reports the first fault as "<path>: <fault>", naming the example. */
#ifndef EVAL_EVAL_FILE_H
#define EVAL_EVAL_FILE_H

#include <stddef.h>
#include <stdint.h>

#define EVAL_FILE_MAGIC 20240522
#define EVAL_FILE_VERSION 1
#define EVAL_HEADER_INTS 256
#define EVAL_HEADER_BYTES (EVAL_HEADER_INTS * 4)
#define EVAL_START_MARKER 65535
#define EVAL_COMPLETIONS 4          /* per example: llm.c's ASSUMED_NUM_COMPLETIONS */
#define EVAL_MAX_EXAMPLES 65535     /* indices are uint16 */
#define EVAL_MAX_RECORD_BYTES 65534 /* the length field is a uint16 count of bytes */
/* marker, length, index, label, count, context (count + 1 token), 4 x (count + 1 token) */
#define EVAL_MIN_RECORD_BYTES (2 * (5 + 2 + 2 * EVAL_COMPLETIONS))

/* One example: its tokens are EvalSet.tokens[ctx_off .. ctx_off + ctx_len)
 * and, for completion c, tokens[comp_off[c] .. comp_off[c] + comp_len[c]). */
typedef struct {
    int label;
    int ctx_len;
    size_t ctx_off;
    int comp_len[EVAL_COMPLETIONS];
    size_t comp_off[EVAL_COMPLETIONS];
} EvalExample;

typedef struct {
    int num_examples;
    int longest_bytes;   /* the longest record, in bytes */
    EvalExample *ex;     /* num_examples */
    uint16_t *tokens;    /* every example's tokens, by offset */
    size_t num_tokens, cap_tokens;
    int cap_ex;
} EvalSet;

/* Read and validate path. Returns 0, or -1 with "<path>: <fault>" in err
 * (nothing to free then). */
int eval_file_read(const char *path, EvalSet *es, char *err, size_t err_len);

/* Append one example (an empty EvalSet is all zeros). Token ids must be in
 * 0..65534, the context and every completion non-empty, label 0..3, and the
 * record at most EVAL_MAX_RECORD_BYTES. Returns 0, or -1 with the fault in
 * err (naming no file: the caller knows where the example came from). */
int eval_set_append(EvalSet *es, int label, const int32_t *ctx, int ctx_len,
                    const int32_t *const comp[EVAL_COMPLETIONS],
                    const int comp_len[EVAL_COMPLETIONS], char *err, size_t err_len);

/* Write es to path crash-safely (base/fileio.h: "<path>.tmp", fsync,
 * rename, fsync the folder). At least one example. Returns 0 or -1. */
int eval_file_write(const char *path, const EvalSet *es, char *err, size_t err_len);

/* Every token < vocab_size, else -1 with "<path>: example i <where>: token
 * t is outside the vocabulary (V)". */
int eval_set_check_vocab(const EvalSet *es, int vocab_size, const char *path, char *err,
                         size_t err_len);

void eval_set_free(EvalSet *es);

#endif
