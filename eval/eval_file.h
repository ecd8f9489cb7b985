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
 * uint16). Version 1 holds token ids 0..65534 only, as llm.c's writer.
 *
 * Version 2 (this project's extension; llm.c has no wide eval file and its
 * EvalLoader refuses it by version) is for tokenizers over 65,535 ids
 * (Llama 3, cl100k_base, o200k_base): the same header and the same record
 * fields in the same order, but every value a little-endian uint32 — the
 * marker 0xFFFFFFFF, the record length still counted in bytes (a multiple
 * of 4), header[3] the longest record in bytes, header[4] and [5] the low
 * and high 32 bits of the tokenizer's identity (data/dataset.h's
 * dataset_tokenizer_id; 0: not recorded). A record holds at most
 * EVAL_MAX_RECORD_VALUES values in either version. The writer picks
 * version 1 whenever every id is below 65535 (GPT-2 files are unchanged
 * byte for byte) and version 2 otherwise.
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
#define EVAL_FILE_VERSION 1         /* uint16 values (llm.c's) */
#define EVAL_FILE_VERSION_WIDE 2    /* uint32 values (this project's) */
#define EVAL_HEADER_INTS 256
#define EVAL_HEADER_BYTES (EVAL_HEADER_INTS * 4)
#define EVAL_START_MARKER 65535
#define EVAL_COMPLETIONS 4          /* per example: llm.c's ASSUMED_NUM_COMPLETIONS */
#define EVAL_MAX_EXAMPLES 65535     /* indices are uint16 */
#define EVAL_START_MARKER_WIDE 0xFFFFFFFFu
#define EVAL_MAX_RECORD_VALUES 32767 /* v1's uint16 length field: 65534 bytes */
#define EVAL_MAX_RECORD_BYTES (2 * EVAL_MAX_RECORD_VALUES) /* in version 1 */
/* marker, length, index, label, count, context (count + 1 token), 4 x (count + 1 token) */
#define EVAL_MIN_RECORD_VALUES (5 + 2 + 2 * EVAL_COMPLETIONS)
#define EVAL_MIN_RECORD_BYTES (2 * EVAL_MIN_RECORD_VALUES) /* in version 1 */

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
    int version;         /* 1 or 2: read from the file, or what the writer picks */
    int longest_bytes;   /* the longest record, in bytes (in es->version's width) */
    int longest_values;  /* the same record, in values */
    uint64_t tokenizer_id; /* version 2's recorded tokenizer; 0: none (always, in v1) */
    EvalExample *ex;     /* num_examples */
    uint32_t *tokens;    /* every example's tokens, by offset (widened from v1's uint16) */
    size_t num_tokens, cap_tokens;
    int cap_ex;
} EvalSet;

/* Read and validate path. Returns 0, or -1 with "<path>: <fault>" in err
 * (nothing to free then). */
int eval_file_read(const char *path, EvalSet *es, char *err, size_t err_len);

/* Append one example (an empty EvalSet is all zeros). Token ids must be in
 * 0..2^31-1 (ids past 65534 make the file version 2), the context and every completion non-empty, label 0..3, and the
 * record at most EVAL_MAX_RECORD_VALUES values. Returns 0, or -1 with the fault in
 * err (naming no file: the caller knows where the example came from). */
int eval_set_append(EvalSet *es, int label, const int32_t *ctx, int ctx_len,
                    const int32_t *const comp[EVAL_COMPLETIONS],
                    const int comp_len[EVAL_COMPLETIONS], char *err, size_t err_len);

/* Write es to path in es->version (appending sets it: 1 while every id is
 * below 65535, else 2) crash-safely (base/fileio.h: "<path>.tmp", fsync,
 * rename, fsync the folder). At least one example. Returns 0 or -1. */
int eval_file_write(const char *path, const EvalSet *es, char *err, size_t err_len);

/* Every token < vocab_size, else -1 with "<path>: example i <where>: token
 * t is outside the vocabulary (V)". */
int eval_set_check_vocab(const EvalSet *es, int vocab_size, const char *path, char *err,
                         size_t err_len);

void eval_set_free(EvalSet *es);

#endif
