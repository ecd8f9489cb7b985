/* data/tokenizer_scan.h — a hand-written matcher for one pre-tokenizer
 * pattern on ASCII text: the pattern of Llama 3's tokenizer.json and of
 * tiktoken's cl100k_base (the same string),
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *    ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * (\s: Unicode's White_Space, as tokenizer_build.h rewrites it).
 *
 * Owns: the decision, per piece, that PCRE2 would make, where every
 * character it depends on is ASCII. Where it cannot tell (a non-ASCII byte
 * within what decides the piece: a letter, digit, space or case fold that
 * ASCII classes cannot judge) it answers 0 and tokenizer_encode.c asks
 * PCRE2, so ids never depend on which of the two matched a piece. PCRE2's
 * JIT spent ~20% of a Llama 3 encode of tinyshakespeare on pieces this
 * decides in a few compares.
 *
 * Direction: called by tokenizer_encode.c and the loaders (which say
 * whether their pattern is this one); calls nothing of theirs. */
#ifndef DATA_TOKENIZER_SCAN_H
#define DATA_TOKENIZER_SCAN_H

#include <stddef.h>
#include <stdint.h>

/* 1 when pattern (as written in the tokenizer.json or tiktoken, before the
 * \s rewrite) is the one this file matches. */
int tokenizer_scan_fits(const char *pattern);

/* The end of the piece PCRE2 would match at s[pos] (it matches at every
 * place of this pattern), or 0: not decidable from ASCII, ask PCRE2.
 * pos < len. */
size_t tokenizer_scan_piece(const uint8_t *s, size_t len, size_t pos);

#endif
