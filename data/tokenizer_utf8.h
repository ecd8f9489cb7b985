/* data/tokenizer_utf8.h — UTF-8 well-formedness and NFC for the encoder.
 *
 * Owns: which bytes of an input are well-formed UTF-8 (Unicode Table 3-7:
 * no overlongs, no surrogates, nothing above U+10FFFF), and the NFC
 * normalization a tokenizer.json's "normalizer": NFC asks for (libutf8proc,
 * COMPOSE | STABLE) around ill-formed bytes.
 *
 * Direction: called by tokenizer_encode.c; calls nothing of the
 * tokenizer's but libutf8proc. */
#ifndef DATA_TOKENIZER_UTF8_H
#define DATA_TOKENIZER_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

/* Length of the well-formed UTF-8 sequence at s (avail bytes there), or 0. */
size_t tokenizer_utf8_len(const uint8_t *s, size_t avail);

/* Offset of the first byte not in a well-formed sequence, or len. */
size_t tokenizer_utf8_first_bad(const uint8_t *s, size_t len);

/* Unicode NFC (utf8proc: canonical decomposition, then composition) of
 * each well-formed UTF-8 run of text[0..len) into tk->norm; every
 * ill-formed byte is copied unchanged and ends the run before it, so no
 * byte is lost and nothing composes across one. *out_len: bytes written.
 * ASCII text is its own NFC and is not copied (*out = text). 0, or -1 with
 * the fault in err (utf8proc's error; out of memory). */
int tokenizer_nfc(Tokenizer *tk, const uint8_t *text, size_t len, const uint8_t **out,
                  size_t *out_len, char *err, size_t err_len);

#endif
