/* tests/lib/token_reference.h — token ids from the independent tokenizers of
 * dev/reference/tokenizer_ids.js (node), computed once per input and kept.
 *
 * Owns: the reference-id cache. Starting node and loading a tokenizer in it
 * is most of what a reference costs (1 to 2.5 CPU-s a start on the 2-core
 * build VM; the ids of a 1.1 MB text about as much again), and the ids
 * depend on nothing but the inputs. So one start encodes every text of the
 * caller's list that the cache lacks, and each result is kept in
 * $TRAIN_GPT_REFERENCE_CACHE (a folder), else in the project's cache folder
 * ($TRAIN_GPT_CACHE_DIR, $XDG_CACHE_HOME/train_gpt, ~/.cache/train_gpt)
 * under reference_ids/, as <which>-<key>.ids.
 *
 * The key is the sha256 of everything the ids depend on: the encoding's
 * name, the special-token switch, the text's bytes, the script's bytes,
 * the installed npm packages (node_modules/.package-lock.json of the
 * folder the script reads: versions and integrity hashes) and the node
 * program on PATH (its path, size and modification time). Change any and
 * the reference runs again; delete the folder to run it again anyway.
 * Each file is written whole then renamed into place (base/fileio.h), and
 * one computation at a time per encoding holds <which>.lock (flock: tests
 * run in parallel processes; the second waits for the first's files, not
 * for a clock). Test-only; not in the library. */
#ifndef TESTS_TOKEN_REFERENCE_H
#define TESTS_TOKEN_REFERENCE_H

#include <stddef.h>

#include "data/tokenizer.h"

/* One text to encode: a file (path), or bytes[0..len) when path is NULL;
 * allow_special: special tokens' text is their id (tokenizer_ids.js's
 * --allow-special). The text must be valid UTF-8 (node decodes it). */
typedef struct {
    const char *path;
    const char *bytes;
    size_t len;
    int allow_special;
} RefText;

/* The reference's ids of texts[k] under `which` (llama3, qwen2_5, qwen3,
 * cl100k_base, o200k_base): from the cache; else one node start encodes
 * every text of texts[0..n) the cache lacks and stores them all. The
 * caller frees .data. Asserts (naming the command and its stderr) when
 * the reference cannot run. */
TokenIds token_reference(const char *which, const RefText *texts, int n, int k);

#endif
