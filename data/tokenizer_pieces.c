/* data/tokenizer_pieces.c — the vocabulary by bytes (tokenizer_pieces.h). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_encode.h"
#include "tokenizer_pieces.h"

#define SHORT_MAX 11 /* longest token whose bytes fit in a slot's 12-byte key */

typedef struct {
    uint64_t k0;
    uint32_t k1;
} PieceKey;

/* A long piece's hash (its bytes don't fit a slot's key). */
static uint64_t long_hash(const uint8_t *p, size_t n)
{
    return tokenizer_mix64(tokenizer_fold_bytes(p, n));
}

static PieceKey piece_key(const uint8_t *p, size_t n)
{
    PieceKey k;
    if (n <= SHORT_MAX) {
        uint8_t b[12] = {(uint8_t)n};
        memcpy(b + 1, p, n);
        memcpy(&k.k0, b, 8);
        memcpy(&k.k1, b + 8, 4);
    } else { /* byte 0 = 0xff: no short key's length byte */
        k.k0 = long_hash(p, n) << 8 | 0xff;
        k.k1 = (uint32_t)n;
    }
    return k;
}

static size_t key_index(PieceKey k, size_t mask)
{
    return tokenizer_mix64(k.k0 ^ (uint64_t)k.k1 << 29) & mask;
}

int tokenizer_piece_map(Tokenizer *tk, int n_ids)
{
    size_t cap = 1024;
    while (cap < 2 * (size_t)n_ids + 2) cap *= 2; /* load < 1/2 */
    free(tk->piece_slot);
    tk->piece_slot = malloc(cap * sizeof *tk->piece_slot);
    if (!tk->piece_slot) return -1;
    for (size_t i = 0; i < cap; i++) tk->piece_slot[i] = (struct TokenizerPieceSlot){0, 0, -1};
    tk->piece_mask = cap - 1;
    for (int id = 0; id < n_ids; id++) {
        const uint8_t *p = tk->tok_bytes + tk->tok_off[id];
        size_t n = tk->tok_off[id + 1] - tk->tok_off[id];
        if (n == 0 || tokenizer_piece_find(tk, p, n) >= 0) continue; /* a gap; a repeat keeps the first */
        PieceKey k = piece_key(p, n);
        size_t i = key_index(k, tk->piece_mask);
        while (tk->piece_slot[i].id >= 0) i = (i + 1) & tk->piece_mask;
        tk->piece_slot[i] = (struct TokenizerPieceSlot){k.k0, k.k1, id};
    }
    return 0;
}

void tokenizer_piece_prefetch(const Tokenizer *tk, const uint8_t *p, size_t n)
{
    __builtin_prefetch(&tk->piece_slot[key_index(piece_key(p, n), tk->piece_mask)]);
}

int32_t tokenizer_piece_find(const Tokenizer *tk, const uint8_t *p, size_t n)
{
    PieceKey k = piece_key(p, n);
    for (size_t i = key_index(k, tk->piece_mask);; i = (i + 1) & tk->piece_mask) {
        const struct TokenizerPieceSlot *s = &tk->piece_slot[i];
        if (s->id < 0) return -1;
        if (s->k0 != k.k0 || s->k1 != k.k1) continue;
        if (n <= SHORT_MAX) return s->id; /* the key is the bytes */
        if (memcmp(tk->tok_bytes + tk->tok_off[s->id], p, n) == 0) return s->id; /* length in k1 */
    }
}
