/* eval/hellaswag.c — HellaSwag jsonl -> llm.c eval file (hellaswag.h). */
#include "hellaswag.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "data/dataset.h"

/* Inputs above this are refused rather than read whole (HellaSwag's
 * validation file is 12 MB, its training file 47 MB). */
#define JSONL_MAX_BYTES ((size_t)1 << 30)

/* "label": a number 0..3, or a string of one digit 0..3. -1 otherwise. */
static int parse_label(const cJSON *v)
{
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        return d >= 0 && d < EVAL_COMPLETIONS && d == (int)d ? (int)d : -1;
    }
    if (cJSON_IsString(v) && v->valuestring[0] >= '0' &&
        v->valuestring[0] < '0' + EVAL_COMPLETIONS && !v->valuestring[1])
        return v->valuestring[0] - '0';
    return -1;
}

/* Encode text (prefixed by one space when `space`) into ids[k]. */
static int encode(Tokenizer *tk, const char *text, int space, TokenIds *ids, char *why,
                  size_t why_len)
{
    ids->len = 0;
    if (space) {
        const uint8_t sp = ' ';
        size_t n = strlen(text);
        uint8_t *buf = malloc(n + 1);
        if (!buf) return snprintf(why, why_len, "out of memory"), -1;
        buf[0] = sp;
        memcpy(buf + 1, text, n);
        int rc = tokenizer_encode(tk, buf, n + 1, ids, why, why_len);
        free(buf);
        return rc;
    }
    return tokenizer_encode(tk, (const uint8_t *)text, strlen(text), ids, why, why_len);
}

/* One line's object -> one example appended to es. */
static int add_example(const cJSON *o, Tokenizer *tk, EvalSet *es, TokenIds ids[5], char *why,
                       size_t why_len)
{
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(o, "ctx");
    const cJSON *ends = cJSON_GetObjectItemCaseSensitive(o, "endings");
    int label = parse_label(cJSON_GetObjectItemCaseSensitive(o, "label"));
    if (!cJSON_IsString(ctx)) return snprintf(why, why_len, "\"ctx\" missing or not a string"), -1;
    if (!cJSON_IsArray(ends) || cJSON_GetArraySize(ends) != EVAL_COMPLETIONS)
        return snprintf(why, why_len, "\"endings\" must be an array of %d strings",
                        EVAL_COMPLETIONS), -1;
    if (label < 0)
        return snprintf(why, why_len, "\"label\" missing or not 0..%d", EVAL_COMPLETIONS - 1), -1;
    if (encode(tk, ctx->valuestring, 0, &ids[0], why, why_len)) return -1;
    const int32_t *comp[EVAL_COMPLETIONS];
    int comp_len[EVAL_COMPLETIONS];
    for (int c = 0; c < EVAL_COMPLETIONS; c++) {
        const cJSON *s = cJSON_GetArrayItem(ends, c);
        if (!cJSON_IsString(s))
            return snprintf(why, why_len, "\"endings\"[%d] is not a string", c), -1;
        if (encode(tk, s->valuestring, 1, &ids[1 + c], why, why_len)) return -1;
        comp[c] = ids[1 + c].data;
        comp_len[c] = (int)ids[1 + c].len;
    }
    return eval_set_append(es, label, ids[0].data, (int)ids[0].len, comp, comp_len, why, why_len);
}

int hellaswag_read_jsonl(const char *path, Tokenizer *tk, EvalSet *es, char *err, size_t err_len)
{
    char *text;
    size_t len;
    if (io_read_whole(path, 0, JSONL_MAX_BYTES, "a HellaSwag jsonl file this reader takes",
                      &text, &len, err, err_len) != 0)
        return -1;
    TokenIds ids[1 + EVAL_COMPLETIONS];
    memset(ids, 0, sizeof ids);
    int rc = 0, line = 0;
    for (char *p = text, *end = text + len; p < end && rc == 0; line++) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *stop = nl ? nl : end;
        size_t n = (size_t)(stop - p);
        char *q = p;
        while (q < stop && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
        if (q < stop) { /* blank lines are skipped */
            char why[512];
            cJSON *o = cJSON_ParseWithLength(p, n);
            if (!cJSON_IsObject(o)) snprintf(why, sizeof why, "not a JSON object");
            if (!cJSON_IsObject(o) || add_example(o, tk, es, ids, why, sizeof why) != 0) {
                io_err(err, err_len, "%s:%d: %s", path, line + 1, why);
                rc = -1;
            }
            cJSON_Delete(o);
        }
        p = stop + 1;
    }
    if (rc == 0 && es->num_examples == 0) {
        io_err(err, err_len, "%s: no examples (an empty file?)", path);
        rc = -1;
    }
    for (int k = 0; k < 1 + EVAL_COMPLETIONS; k++) free(ids[k].data);
    free(text);
    return rc;
}

int hellaswag_job_run(const HellaswagJob *job, char *err, size_t err_len)
{
    Tokenizer tk;
    TokenizerChoice tc = {.encoder_path = job->encoder_path, .vocab_path = job->vocab_path,
                          .hf_json = job->hf_json, .encoding = job->encoding, .quiet = job->quiet};
    if (tokenizer_open(&tk, &tc, err, err_len)) return -1;
    EvalSet es = {0};
    DatasetTokenizer dt;
    memset(&dt, 0, sizeof dt);
    int rc = dataset_tokenizer_of(&dt, &tk, &tc, err, err_len);
    es.tokenizer_id = rc == 0 ? dt.id : 0; /* version 2 records it */
    if (rc == 0) rc = hellaswag_read_jsonl(job->jsonl, &tk, &es, err, err_len);
    if (rc == 0) rc = eval_file_write(job->out_path, &es, err, err_len);
    if (rc == 0 && !job->quiet)
        fprintf(stderr, "tokenize: %d examples from %s (%zu tokens, longest record %d bytes, "
                "version %d) -> %s\n", es.num_examples, job->jsonl, es.num_tokens,
                es.longest_bytes, es.version, job->out_path);
    eval_set_free(&es);
    tokenizer_free(&tk);
    return rc;
}
