/* base/json.h — checked fields of the project's JSON files (checkpoint
 * manifests, dataset manifests, op-cost files), read from a cJSON tree.
 *
 * Owns: what a field must be to be accepted — a whole number in a range,
 * a string — and the "format" and "version" pair each of those files
 * starts with. Parsing is cJSON's; what the fields mean is the reader's. */
#ifndef BASE_JSON_H
#define BASE_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* obj[key] as a whole JSON number in [lo, hi] (exact in a double: keep
 * |hi| <= 2^53) into *out: 0, or -1 when absent, not a number, not whole,
 * not finite or out of range (*out untouched). */
int json_get_whole(const cJSON *obj, const char *key, double lo, double hi, double *out);

/* obj[key] when it is a string, else NULL. */
const char *json_get_string(const cJSON *obj, const char *key);

/* root's "format" must be the string `format` and its "version" a whole
 * number in lo..hi (into *version unless NULL). Otherwise -1 with
 * "<what>: \"format\" is not \"<format>\"" or "<what>: unsupported or
 * missing \"version\" (this build reads <lo> [and|..] <hi>)" in err. */
int json_check_format(const cJSON *root, const char *what, const char *format, int lo, int hi,
                      int *version, char *err, size_t err_len);

#endif
