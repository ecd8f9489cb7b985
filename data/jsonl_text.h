/* data/jsonl_text.h — the text of one JSON line, every byte of it.
 *
 * cJSON decodes a string into a NUL-terminated C string, so "a\u0000b"
 * (valid JSON) reaches the caller as "a", and it lets a raw control
 * character inside a string through (invalid JSON). A document must be
 * tokenized whole, so the tokenizer checks the raw line here first, lets
 * cJSON judge the structure (an object, the field, its type), then takes
 * the field's string from the raw line with its length, decoded by this
 * module's own RFC 8259 escape decoder.
 *
 * Owns: the string rules of RFC 8259 (escapes, raw control characters,
 * UTF-16 surrogate pairs) and finding a top-level member's raw value.
 * The structure of the rest of the line is cJSON's. */
#ifndef DATA_JSONL_TEXT_H
#define DATA_JSONL_TEXT_H

#include <stddef.h>

/* Every string of the JSON text s[0, n): no raw control character
 * (U+0000..U+001F) inside one, only the escapes RFC 8259 allows, no lone
 * surrogate (\ud800 without its low half, or a low half alone); outside
 * strings, no control character but tab and carriage return. 0, or -1
 * with the fault in why ("a raw control character in a string", "a lone
 * surrogate \ud800 in a string", ...). An unterminated string is left to
 * the parser. */
int jsonl_text_check(const char *s, size_t n, char *why, size_t why_len);

/* The string value of the top-level member `key` of the JSON object
 * s[0, n) (the first member of that name, as cJSON finds it), decoded:
 * *out (malloc'd, the caller frees; NUL-terminated past *out_len for
 * convenience only) and *out_len, NULs inside kept. 0, or -1 when s is no
 * object, has no such member, its value is no string, or a string is
 * malformed (jsonl_text_check's faults). */
int jsonl_text_member(const char *s, size_t n, const char *key, char **out, size_t *out_len);

/* Decodes the body of one JSON string: s points just past its opening
 * quote. Writes the decoded bytes to out (when not NULL; they never
 * outnumber the raw ones) and their count to *out_len, and the index just
 * past the closing quote to *end. 0; 1 when no closing quote comes before
 * n; -1 with the fault in why. */
int jsonl_text_decode(const char *s, size_t n, char *out, size_t *out_len, size_t *end,
                      char *why, size_t why_len);

#endif
