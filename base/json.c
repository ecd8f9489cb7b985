/* base/json.c — see json.h. */
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fileio.h"

int json_get_whole(const cJSON *obj, const char *key, double lo, double hi, double *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(it)) return -1;
    double d = it->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < lo || d > hi) return -1;
    *out = d;
    return 0;
}

const char *json_get_string(const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(it) && it->valuestring ? it->valuestring : NULL;
}

int json_check_format(const cJSON *root, const char *what, const char *format, int lo, int hi,
                      int *version, char *err, size_t err_len)
{
    const char *fmt = json_get_string(root, "format");
    if (!fmt || strcmp(fmt, format) != 0) {
        io_err(err, err_len, "%s: \"format\" is not \"%s\"", what, format);
        return -1;
    }
    double v;
    if (json_get_whole(root, "version", lo, hi, &v) != 0) {
        char reads[48];
        if (lo == hi) snprintf(reads, sizeof reads, "%d", lo);
        else snprintf(reads, sizeof reads, hi == lo + 1 ? "%d and %d" : "%d..%d", lo, hi);
        io_err(err, err_len, "%s: unsupported or missing \"version\" (this build reads %s)", what,
               reads);
        return -1;
    }
    if (version) *version = (int)v;
    return 0;
}
