/* data/tokenize_job.h — text files -> GPT-2 token shards: the work of ./tokenize.
 *
 * Owns: what a document is, the train/val split, shard naming, and leaving
 * no partial output behind.
 *
 * Documents. Each input (a file, or standard input as "-") is one document;
 * with split_blank_lines, a document also ends right after every "\n\n"
 * (scanning left to right, non-overlapping), so the blank line stays with the
 * document before it, as llm.c's dev/data/tinyshakespeare.py does with
 * text.replace("\n\n", "\n\n<|endoftext|>"). Every document is preceded by
 * the tokenizer's document token (tokenizer.h's doc_id: GPT-2's EOT 50256,
 * llm.c's convention; Llama 3's <|begin_of_text|>; tiktoken's
 * <|endoftext|>), so the stream starts with it. A tokenizer with more than
 * 65,536 ids needs uint32 shards, which are not written yet: such a job is
 * refused once the tokenizer is loaded.
 *
 * JSON lines (jsonl). Each input is then one JSON object per line, plain or
 * gzip-compressed (told apart by the magic bytes, zlib), and each line is a
 * document: its text_field's string ("text" by default) as cJSON decodes
 * it (escapes, \uXXXX, surrogate pairs, to UTF-8), preceded by EOT as above;
 * a blank line is skipped. A line that is not a JSON object, or lacks the
 * field (or holds no string there), fails the job naming the file and the
 * line number. A string holding \u0000 ends at it (a C string).
 *
 * Split. The token stream (EOTs included) is cut once, at a token: the first
 * V tokens go to val, the rest to train, where V = val_tokens when that is
 * >= 0 (more than the total is refused: TOKENIZE_JOB_USAGE), else
 * V = floor(val_fraction * total + 0.5). So,
 * like llm.c's tinyshakespeare.py, val is the start of the data and the cut
 * may fall inside a document. Each part is written as shards of shard_size
 * tokens (the last one shorter): <out>_val_000000.bin, <out>_val_000001.bin,
 * ..., <out>_train_000000.bin, ... (format: shard.h: uint16 tokens, or
 * uint32 when the tokenizer's vocab_size is over 65536). A part with no
 * tokens gets no shard. The manifest records the width and the tokenizer's
 * identity (data/dataset.h; GPT-2's from the two hashes its files were
 * checked against).
 *
 * Output safety. The new dataset is written whole into a staging folder
 * beside the prefix and switched in for the old one only when every shard
 * and the manifest (PREFIX.manifest.json) are written and fsynced
 * (data/dataset.h: the protocol and exactly what a failure or a crash
 * leaves). Tokens are first spooled to an already-unlinked file in that
 * folder (disk, not memory: any input size); every input is checked
 * readable before any is read. If anything fails, the old dataset is as it
 * was and the staging folder is removed. A prefix that holds a dataset
 * already is refused before any input is read, unless overwrite: then its
 * files move into PREFIX.replaced_<time>/ at the switch (none when it was
 * this same dataset), so a loader glob never mixes two runs and nothing is
 * deleted.
 */
#ifndef DATA_TOKENIZE_JOB_H
#define DATA_TOKENIZE_JOB_H

#include <stddef.h>

typedef struct {
    const char *out_prefix;        /* required, e.g. "datasets/tinyshakespeare" */
    double val_fraction;           /* 0 <= f < 1; used when val_tokens < 0 */
    long long val_tokens;          /* >= 0: exactly this many tokens to val */
    size_t shard_size;             /* tokens per shard, 1 .. INT32_MAX */
    int split_blank_lines;
    int jsonl;                     /* inputs are JSON lines (above); not with split_blank_lines */
    const char *text_field;        /* jsonl: the field holding the text; NULL = "text" */
    const char *encoder_path;      /* NULL: tokenizer_find_files */
    const char *vocab_path;        /* NULL: tokenizer_find_files */
    const char *tokenizer_json;    /* a Hugging Face tokenizer.json instead of GPT-2's */
    const char *encoding;          /* a tiktoken encoding instead ("cl100k_base", "o200k_base") */
    int allow_special;             /* special tokens' text in the input are their ids */
    int quiet;                     /* no progress and no summary */
    int overwrite;                 /* replace a dataset at the prefix (moved aside) */
    const char *const *inputs;     /* paths; "-" is standard input */
    int num_inputs;                /* 0: standard input */
} TokenizeJob;

typedef struct {
    size_t bytes;                  /* input bytes read */
    size_t docs;                   /* documents (= EOT tokens) */
    size_t tokens;                 /* all tokens, EOTs included */
    size_t val_tokens, train_tokens;
    int val_shards, train_shards;
} TokenizeStats;

enum { TOKENIZE_JOB_USAGE = -2, TOKENIZE_JOB_UNSUPPORTED = -3 };

/* Defaults: val_fraction 0.1, val_tokens -1, shard_size 100,000,000. */
void tokenize_job_defaults(TokenizeJob *job);

/* Run the job. Returns 0, or -1 with a message naming the file or folder and
 * the fault in err (then no shard of this run is left on disk, and the old
 * dataset under the prefix is untouched, unless the message says the
 * switch itself failed; dataset.h), or TOKENIZE_JOB_USAGE when a setting
 * proves wrong once the input is read (val_tokens above its token count;
 * the message names --val-tokens and both numbers; nothing is written,
 * as for -1), or TOKENIZE_JOB_UNSUPPORTED when the tokenizer file uses a
 * feature not implemented (tokenizer.h's TOKENIZER_UNSUPPORTED). Progress
 * (above 4 MB of input) and a summary go to stderr unless job->quiet. st may
 * be NULL. */
int tokenize_job_run(const TokenizeJob *job, TokenizeStats *st, char *err, size_t err_len);

#endif
