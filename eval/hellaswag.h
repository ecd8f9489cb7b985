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

/* Any tokenizer: eval_file_write writes llm.c's version 1 when every id is
 * below 65535 (GPT-2) and this project's uint32 version 2 otherwise
 * (Llama 3, cl100k_base, o200k_base; eval_file.h). */

/* Load the tokenizer, read the jsonl, write the eval file (crash-safe:
 * nothing is left at out_path on failure). Returns 0, or -1 with a message. */
int hellaswag_job_run(const HellaswagJob *job, char *err, size_t err_len);

#endif
