/* data/tokenizer_build.h — what the three vocabulary loaders share: the
 * byte alphabet of GPT-2's files, the merge table, the pattern's \s, the
 * literal tokens and the last steps of every load.
 *
 * Direction: tokenizer.c, tokenizer_hf.c and tokenizer_tiktoken.c call this
 * file; it calls tokenizer_encode.h (the encoder's set-up) and nothing of
 * theirs. */
#ifndef DATA_TOKENIZER_BUILD_H
#define DATA_TOKENIZER_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

/* Decode a token spelled in GPT-2's bytes_to_unicode alphabet (the alphabet
 * of encoder.json, vocab.bpe and Hugging Face's ByteLevel vocabularies;
 * UTF-8 text of len bytes) into raw bytes at out (at most len bytes).
 * Returns the byte count, or -1 when a character is outside the alphabet. */
long tokenizer_spelled_to_bytes(const char *s, size_t len, uint8_t *out);

/* An empty merge table for up to n merges (load under 0.4). -1: out of
 * memory. */
int tokenizer_merges_alloc(Tokenizer *tk, size_t n);

/* (left, right) -> rank and merged id; a pair given again takes the later
 * rank (as a Python dict or a Rust HashMap built from the list would). */
void tokenizer_merge_put(Tokenizer *tk, int32_t left, int32_t right, uint32_t rank, int32_t out);

/* The pattern as PCRE2 should run it: each \s becomes Unicode's White_Space
 * set and each \S its complement, as Rust's regex crate (tiktoken) and
 * Oniguruma (Hugging Face) define \s; PCRE2's own \s adds U+180E. *out is
 * malloc'd. -1 with err when \S stands inside a [...] class (not rewritten)
 * or out of memory. */
int tokenizer_pattern_rewrite(const char *pattern, char **out, char *err, size_t err_len);

/* The last steps of a load, once the decode table, the merges, pattern and
 * whole_piece are set: byte_id from the one-byte tokens (all 256 must be
 * there: "<what>: no token for the single byte 0xNN"), the literal tokens
 * (ids; their bytes in the decode table), the piece map (over ids
 * [0, n_merge_ids), unless built already) and the encoder. 0 or -1 with err. */
int tokenizer_finish(Tokenizer *tk, const char *what, const int32_t *literals, int n_literals,
                     int n_merge_ids, char *err, size_t err_len);

#endif
