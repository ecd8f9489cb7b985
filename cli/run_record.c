/* cli/run_record.c — see cli/run_record.h. */
#include "cli/run_record.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/version.h"

/* Larger than any record: the record of every flag is about 3 KB. */
#define CONFIG_FILE_MAX (16u << 20)

/* The parsed file: opt's strings point into it until exit. */
static cJSON *kept_doc;

/* FILE's first bytes (a log's first line is all that is read of it). */
static char *read_head(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "--config: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *text = malloc(CONFIG_FILE_MAX + 1);
    size_t n = text ? fread(text, 1, CONFIG_FILE_MAX, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!text || bad) {
        fprintf(stderr, "--config: %s: %s\n", path, text ? "read failed" : "out of memory");
        free(text);
        return NULL;
    }
    text[n] = 0;
    return text;
}

/* The value of key as the command line's text; NULL leaves the flag unset
 * (null, false). *err names the fault. */
static int value_text(int i, const cJSON *v, char *buf, size_t len, const char **text,
                      const char **err)
{
    TrainOptionType t = train_options_type(i);
    *text = NULL;
    if (cJSON_IsNull(v)) return 0;
    if (cJSON_IsBool(v)) {
        if (t == TRAIN_OPT_SWITCH) *text = cJSON_IsTrue(v) ? "on" : NULL;
        else if (t == TRAIN_OPT_OPTIONAL_TEXT) *text = cJSON_IsTrue(v) ? "" : NULL; /* --resume */
        else *err = "expected a number or a string (true and false are for switches)";
        return *err ? -1 : 0;
    }
    if (t == TRAIN_OPT_SWITCH) {
        *err = "expected true, false or null (a flag without a value)";
        return -1;
    }
    if (cJSON_IsString(v)) {
        *text = v->valuestring;
        return 0;
    }
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == floor(d) && fabs(d) < 9.2e18) snprintf(buf, len, "%.0f", d);
        else snprintf(buf, len, "%.17g", d);
        *text = buf;
        return 0;
    }
    *err = "expected a number, a string, true, false or null";
    return -1;
}

/* The first key of obj that an earlier key of it repeats, else NULL
 * (cJSON keeps both; a lookup finds the first, a walk sets both). */
static const char *repeated_key(const cJSON *obj)
{
    for (const cJSON *a = obj->child; a; a = a->next)
        for (const cJSON *b = obj->child; b != a; b = b->next)
            if (a->string && b->string && strcmp(a->string, b->string) == 0) return a->string;
    return NULL;
}

int run_record_apply(TrainOptions *opt, const char *path)
{
    char *text = read_head(path);
    if (!text) return 2;
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithOpts(text, &end, 0);
    if (!cJSON_IsObject(doc)) {
        fprintf(stderr, "--config: %s: not a JSON object (at byte %ld: a flag's name and value "
                "per key, or a --log's first line)\n", path,
                doc ? 0L : (long)(cJSON_GetErrorPtr() - text));
        cJSON_Delete(doc);
        free(text);
        return 2;
    }
    free(text);
    const char *twice = repeated_key(doc);
    cJSON *conf = cJSON_GetObjectItemCaseSensitive(doc, "config");
    if (!twice && cJSON_IsObject(conf)) twice = repeated_key(conf);
    if (twice) {
        fprintf(stderr, "--config: %s: key \"%s\" given twice (which one counts would be "
                "the JSON reader's choice; give it once)\n", path, twice);
        cJSON_Delete(doc);
        return 2;
    }
    if (conf && !cJSON_IsObject(conf)) {
        fprintf(stderr, "--config: %s: \"config\" is not an object of flags\n", path);
        cJSON_Delete(doc);
        return 2;
    }
    if (!conf) conf = doc;
    const cJSON *item;
    cJSON_ArrayForEach(item, conf)
    {
        int i = train_options_index(item->string);
        if (i < 0 || strcmp(item->string, "config") == 0) {
            fprintf(stderr, "--config: %s: unknown key \"%s\" (%s)\n", path, item->string,
                    i < 0 ? "not a flag of ./train_gpt; see --help"
                          : "a configuration cannot name another");
            cJSON_Delete(doc);
            return 2;
        }
        char buf[64];
        const char *value, *why = NULL;
        if (value_text(i, item, buf, sizeof buf, &value, &why) != 0) {
            fprintf(stderr, "--config: %s: key \"%s\": %s\n", path, item->string, why);
            cJSON_Delete(doc);
            return 2;
        }
        if (!value) continue;
        if (train_options_type(i) == TRAIN_OPT_OPTIONAL_TEXT && !*value &&
            strcmp(item->string, "resume") == 0)
            value = NULL; /* --resume without a folder */
        /* the flag's own line ("--lr: expected ..."), then where it came from */
        if (train_options_set(opt, i, value) != 0) {
            fprintf(stderr, "--config: %s: key \"%s\" holds that value\n", path, item->string);
            cJSON_Delete(doc);
            return 2;
        }
    }
    cJSON_Delete(kept_doc);
    kept_doc = doc;
    return 0;
}

static cJSON *flag_value(const TrainOptions *opt, int i)
{
    char text[4096];
    train_options_format_value(opt, i, text, sizeof text);
    int given = opt->given[i];
    switch (train_options_type(i)) {
    case TRAIN_OPT_SWITCH: return cJSON_CreateBool(strcmp(text, "on") == 0);
    case TRAIN_OPT_NUMBER: {
        if (!train_options_has_default(i) && !given) return cJSON_CreateNull();
        double d = strtod(text, NULL);
        /* a JSON number holds integers exactly only below 2^53 */
        if (fabs(d) >= 9007199254740992.0 && !strchr(text, '.') && !strchr(text, 'e'))
            return cJSON_CreateString(text);
        return cJSON_CreateNumber(d);
    }
    case TRAIN_OPT_OPTIONAL_TEXT:
        if (strcmp(text, "(none)") == 0) return given ? cJSON_CreateTrue() : cJSON_CreateNull();
        return cJSON_CreateString(text);
    case TRAIN_OPT_TEXT: break;
    }
    return cJSON_CreateString(text);
}

char *run_record_json(const TrainOptions *opt, const GPTConfig *cfg, int batch, int seq_len,
                      uint64_t data_fingerprint, const char *backend, int world,
                      const char *run_id)
{
    cJSON *rec = cJSON_CreateObject(), *conf = cJSON_CreateObject(), *shape = cJSON_CreateObject();
    cJSON_AddStringToObject(rec, "event", "run");
    if (run_id) cJSON_AddStringToObject(rec, "run_id", run_id); /* whose log (cli/run_log.h) */
    for (int i = 0; i < train_options_count(); i++)
        if (strcmp(train_options_name(i), "config") != 0)
            cJSON_AddItemToObject(conf, train_options_name(i), flag_value(opt, i));
    cJSON_AddItemToObject(rec, "config", conf);
    cJSON_AddNumberToObject(shape, "layers", cfg->num_layers);
    cJSON_AddNumberToObject(shape, "channels", cfg->channels);
    cJSON_AddNumberToObject(shape, "heads", cfg->num_heads);
    if (cfg->arch == ARCH_LLAMA && cfg->head_dim)
        cJSON_AddNumberToObject(shape, "head_dim", cfg->head_dim);
    cJSON_AddNumberToObject(shape, "vocab", cfg->vocab_size);
    cJSON_AddNumberToObject(shape, "padded_vocab", cfg->padded_vocab);
    cJSON_AddNumberToObject(shape, "max_seq_len", cfg->max_seq_len);
    cJSON_AddNumberToObject(shape, "seq_len", seq_len);
    cJSON_AddNumberToObject(shape, "batch", batch);
    cJSON_AddNumberToObject(shape, "params", (double)config_num_params(cfg));
    cJSON_AddItemToObject(rec, "shape", shape);
    char fp[32];
    snprintf(fp, sizeof fp, "%016llx", (unsigned long long)data_fingerprint);
    cJSON_AddStringToObject(rec, "data_fingerprint", fp);
    cJSON_AddStringToObject(rec, "commit", version_commit());
    cJSON_AddStringToObject(rec, "backend", backend);
    cJSON_AddNumberToObject(rec, "world", world);
    char *s = cJSON_PrintUnformatted(rec);
    cJSON_Delete(rec);
    return s;
}
