/* data/tokenizer_pieces.h — the vocabulary by bytes: a token's bytes -> its
 * id (tk->piece_slot, built once per load).
 *
 * Owns: the piece map's layout and hash. The loaders look up merge halves
 * and tiktoken's splits here (hundreds of thousands of lookups per load);
 * tokenizer_encode.c looks up every whole piece of a whole_piece tokenizer
 * (tiktoken; Hugging Face's ignore_merges: Llama 3) before its piece cache,
 * so the hit path is what a cold encode pays per piece.
 *
 * Layout: open addressing, load under 1/2, one 16-byte slot per token. A
 * token of at most 11 bytes is its own key (length byte, the bytes, zero
 * padding): a lookup compares two words in the one slot, no other memory
 * read. A longer token's key is a marker byte, 56 bits of its hash and its
 * length; a key match is then confirmed against the decode table's bytes.
 *
 * Direction: called by tokenizer_encode.c, tokenizer_build.c and the
 * loaders; calls nothing of theirs. */
#ifndef DATA_TOKENIZER_PIECES_H
#define DATA_TOKENIZER_PIECES_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

struct TokenizerPieceSlot {
    uint64_t k0;                    /* key bytes 0..7 */
    uint32_t k1;                    /* key bytes 8..11 */
    int32_t id;                     /* -1: empty */
};

/* The bytes -> id map over ids [0, n_ids) (tokens of 0 bytes left out; a
 * repeated byte string keeps its first id). -1: out of memory. Loaders call
 * it once the decode table is filled. */
int tokenizer_piece_map(Tokenizer *tk, int n_ids);

/* The id whose bytes are p[0..n), or -1. */
int32_t tokenizer_piece_find(const Tokenizer *tk, const uint8_t *p, size_t n);

/* Start loading the slot where tokenizer_piece_find(tk, p, n) will look
 * first (a hint: no effect on any result). */
void tokenizer_piece_prefetch(const Tokenizer *tk, const uint8_t *p, size_t n);

#endif
