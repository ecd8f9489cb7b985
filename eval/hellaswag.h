/* eval/hellaswag.h — HellaSwag's jsonl to llm.c's eval file: the work of
 * ./tokenize --hellaswag.
 *
 * Owns: the jsonl schema and how an example becomes tokens. Each non-blank
 * line is one JSON object with
 *   "ctx"      the context (string),
 *   "endings"  exactly 4 candidate endings (strings),
 *   "label"    the correct ending's index, 0..3 (a number, or a string
 *              holding one digit, as some copies of the data store it);
 * other keys are ignored. As llm.c's dev/data/hellaswag.py renders it, the
 * context is encoded as it stands and each ending as " " + ending, with
 * GPT-2's BPE or the tokenizer --tokenizer / --encoding names (the leading space joins the ending's first word, as it would
 * follow the context in running text). The examples keep the file's order;
 * example i is line i's object. */
#ifndef EVAL_HELLASWAG_H
#define EVAL_HELLASWAG_H

#include <stddef.h>

#include "eval_file.h"
#include "data/tokenizer.h"

/* Read and tokenize every example of a jsonl file into es (appending).
 * Returns 0, or -1 with "<path>:<line>: <fault>" in err. */
int hellaswag_read_jsonl(const char *path, Tokenizer *tk, EvalSet *es, char *err, size_t err_len);

typedef struct {
    const char *jsonl;        /* input */
    const char *out_path;     /* the eval file written */
    const char *encoder_path; /* NULL: tokenizer_find_files (data/source.h's chain) */
    const char *vocab_path;   /* NULL: tokenizer_find_files */
    const char *hf_json;      /* --tokenizer FILE instead of GPT-2's (NULL: not given) */
    const char *encoding;     /* --encoding NAME instead (NULL: not given) */
    int quiet;                /* no summary line on stderr */
} HellaswagJob;

/* llm.c's eval file stores token ids as uint16 below 65535 (eval_file.h):
 * a tokenizer with more ids is refused by name before the jsonl is read
 * (hellaswag_job_run returns HELLASWAG_VOCAB_TOO_BIG) rather than failing
 * on the first large id or truncating it. */
#define HELLASWAG_MAX_VOCAB 65535
enum { HELLASWAG_VOCAB_TOO_BIG = -2 };

/* Load the tokenizer, read the jsonl, write the eval file (crash-safe:
 * nothing is left at out_path on failure). Returns 0, -1 with a message,
 * or HELLASWAG_VOCAB_TOO_BIG. */
int hellaswag_job_run(const HellaswagJob *job, char *err, size_t err_len);

#endif
