/* data/tokenizer_encode.h — the encoding half of the tokenizer: text to ids.
 *
 * Owns: the pre-tokenizer (PCRE2), byte-pair merging over the tables that
 * tokenizer.c loads, and the cache of encoded pieces, plus the hash both
 * halves' open-addressing tables use. tokenizer_encode() and
 * tokenizer_safe_cut() are declared in tokenizer.h for callers.
 *
 * Direction: tokenizer.c (loading, decoding, finding the files) calls into
 * this file; this file calls nothing in tokenizer.c. It reads the Tokenizer
 * struct's merge tables only after tokenizer_load has filled them. */
#ifndef DATA_TOKENIZER_ENCODE_H
#define DATA_TOKENIZER_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"
#include "tokenizer_pieces.h" /* the piece map (tokenizer_pieces.c) */

/* Set up and release the pre-tokenizer, the BPE scratch and the cache
 * (tokenizer_load and tokenizer_free call these). */
int tokenizer_encoder_init(Tokenizer *tk, char *err, size_t err_len);
void tokenizer_encoder_free(Tokenizer *tk);

/* murmur3's 64-bit finaliser: spreads keys over the merge and cache tables. */
uint64_t tokenizer_mix64(uint64_t x);

/* A piece's n bytes folded 8 at a time (one multiply a word: a byte loop cost
 * more than the lookup's cache miss); not yet finalised: each table mixes the
 * result its own way. */
uint64_t tokenizer_fold_bytes(const uint8_t *p, size_t n);

#endif
