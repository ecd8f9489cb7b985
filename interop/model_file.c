/* interop/model_file.c — see model_file.h. */
#include "model_file.h"

#include "base/fileio.h"
#include "base/stop.h"
#include "interop/hf_folder.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Open path for reading through base/fileio (regular files only). A
 * folder with config.json never gets here (interop/hf_folder.h reads it);
 * one without says what a folder would need. */
static FILE *open_regular(const char *path, off_t *size, char *err, size_t err_len)
{
    int fd = io_open_regular(path, size, err, err_len);
    struct stat st;
    if (fd < 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(err, err_len, "%s: not a regular file (a folder without config.json), not an "
                 "llm.c model file nor a Hugging Face folder (scripts/import_hf.py converts one)",
                 path);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        snprintf(err, err_len, "%s: cannot read: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

static int read_header(FILE *f, const char *path, off_t size, GPTConfig *cfg, int *version,
                       char *err, size_t err_len)
{
    int32_t h[256];
    if (size < (off_t)sizeof h || fread(h, sizeof h, 1, f) != 1) {
        snprintf(err, err_len, "%s: truncated header (%lld bytes; a model file starts with a "
                 "1024-byte header)", path, (long long)size);
        return -1;
    }
    if (h[0] != MODEL_FILE_MAGIC) {
        snprintf(err, err_len, "%s: bad magic %d (expected %d: not an llm.c model file)", path,
                 h[0], MODEL_FILE_MAGIC);
        return -1;
    }
    if (h[1] != MODEL_FILE_FP32 && h[1] != MODEL_FILE_BF16) {
        snprintf(err, err_len, "%s: unsupported version %d (accepted: 3 = fp32, 5 = bf16)", path,
                 h[1]);
        return -1;
    }
    memset(cfg, 0, sizeof *cfg); /* every field below, the reserved word 0 */
    cfg->max_seq_len = h[2];
    cfg->vocab_size = h[3];
    cfg->num_layers = h[4];
    cfg->num_heads = h[5];
    cfg->channels = h[6];
    cfg->padded_vocab = h[7];
    /* this project's extension: the family and the Llama fields in words
     * llm.c leaves 0 (so a GPT-2 file is llm.c's, word for word) */
    cfg->arch = h[MODEL_FILE_ARCH];
    cfg->kv_heads = cfg->arch == ARCH_LLAMA ? h[MODEL_FILE_ARCH + 1] : 0;
    cfg->ffn = cfg->arch == ARCH_LLAMA ? h[MODEL_FILE_ARCH + 2] : 0;
    cfg->untied = cfg->arch == ARCH_LLAMA ? h[MODEL_FILE_ARCH + 3] : 0;
    memcpy(&cfg->rope_theta, &h[MODEL_FILE_ARCH + 4], 4);
    memcpy(&cfg->norm_eps, &h[MODEL_FILE_ARCH + 5], 4);
    cfg->qkv_bias = cfg->arch == ARCH_LLAMA ? h[MODEL_FILE_ARCH + 6] : 0;
    cfg->qk_norm = cfg->arch == ARCH_LLAMA ? h[MODEL_FILE_ARCH + 7] : 0;
    memcpy(&cfg->rope_factor, &h[MODEL_FILE_ARCH + 8], 4);
    memcpy(&cfg->rope_low_freq, &h[MODEL_FILE_ARCH + 9], 4);
    memcpy(&cfg->rope_high_freq, &h[MODEL_FILE_ARCH + 10], 4);
    cfg->rope_original_max_pos = cfg->arch == ARCH_LLAMA ? h[MODEL_FILE_ARCH + 11] : 0;
    cfg->head_dim = cfg->arch == ARCH_LLAMA ? h[MODEL_FILE_HEAD_DIM] : 0;
    cfg->tokenizer_id = (uint64_t)(uint32_t)h[MODEL_FILE_TOKENIZER] |
                        (uint64_t)(uint32_t)h[MODEL_FILE_TOKENIZER + 1] << 32;
    if (cfg->arch != ARCH_LLAMA)
        cfg->rope_theta = cfg->norm_eps = cfg->rope_factor = cfg->rope_low_freq =
            cfg->rope_high_freq = 0;
    char why[160];
    if (config_validate(cfg, why, sizeof why) != 0) {
        snprintf(err, err_len, "%s: bad header: %s", path, why);
        return -1;
    }
    size_t esize = h[1] == MODEL_FILE_FP32 ? 4 : 2;
    size_t want = 1024 + config_num_params(cfg) * esize;
    if ((size_t)size != want) {
        snprintf(err, err_len, "%s: size %lld bytes, but the header implies %zu (%s)", path,
                 (long long)size, want, (size_t)size < want ? "truncated" : "trailing bytes");
        return -1;
    }
    *version = h[1];
    return 0;
}

int model_file_read_header(const char *path, GPTConfig *cfg, int *version, char *err,
                           size_t err_len)
{
    if (hf_folder_is(path)) {
        *version = MODEL_FILE_FP32;
        return hf_folder_config(path, cfg, err, err_len);
    }
    off_t size;
    FILE *f = open_regular(path, &size, err, err_len);
    if (!f) return -1;
    int rc = read_header(f, path, size, cfg, version, err, err_len);
    fclose(f);
    return rc;
}

/* Every weight must be finite: NaN or Inf in a model file means a corrupt
 * file or a diverged run, and would only show later as NaN losses or
 * garbage text. finite_tally counts elements [at, at+k) (in p[0..k)) per
 * tensor, so a file read in pieces is checked as one; finite_report names
 * each tensor that has any, with its count and the first one's index. */
static void finite_tally(const GPTConfig *cfg, const float *p, size_t at, size_t k,
                         size_t bad[NUM_PARAM_TENSORS], size_t first[NUM_PARAM_TENSORS])
{
    size_t sizes[NUM_PARAM_TENSORS], off = 0;
    config_param_sizes(cfg, sizes);
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        size_t lo = at > off ? at : off, end = off + sizes[t];
        size_t hi = at + k < end ? at + k : end;
        for (size_t i = lo; i < hi; i++)
            if (!isfinite(p[i - at]) && bad[t]++ == 0) first[t] = i - off;
        off = end;
    }
}

static int finite_report(const char *path, const size_t bad[NUM_PARAM_TENSORS],
                         const size_t first[NUM_PARAM_TENSORS], char *err, size_t err_len)
{
    char list[700] = "";
    size_t total = 0;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        if (bad[t]) {
            size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%s%s: %zu (first at element %zu)",
                     used ? ", " : "", config_param_name(t), bad[t], first[t]);
        }
        total += bad[t];
    }
    if (total == 0) return 0;
    snprintf(err, err_len, "%s: %zu non-finite weight%s (NaN or Inf) in %s; the file is corrupt "
             "or was saved from a diverged run", path, total, total == 1 ? "" : "s", list);
    return -1;
}

static int check_finite(const char *path, const GPTConfig *cfg, const float *p, char *err,
                        size_t err_len)
{
    size_t bad[NUM_PARAM_TENSORS] = {0}, first[NUM_PARAM_TENSORS] = {0};
    finite_tally(cfg, p, 0, config_num_params(cfg), bad, first);
    return finite_report(path, bad, first, err, err_len);
}

int model_file_open_read(ModelFileReader *r, const char *path, char *err, size_t err_len)
{
    off_t size;
    memset(r, 0, sizeof *r);
    r->path = path;
    if (hf_folder_is(path)) { /* each piece read from its tensors when asked for */
        r->version = MODEL_FILE_FP32;
        return hf_folder_open(&r->hf, path, &r->cfg, err, err_len);
    }
    r->f = open_regular(path, &size, err, err_len);
    if (!r->f) return -1;
    if (read_header(r->f, path, size, &r->cfg, &r->version, err, err_len) != 0) {
        fclose(r->f);
        r->f = NULL;
        return -1;
    }
    return 0;
}

int model_file_read_next(ModelFileReader *r, float *out, size_t k, char *err, size_t err_len)
{
    if (stop_requested()) {
        snprintf(err, err_len, "%s: loading %s", r->path, STOP_MESSAGE);
        return 1;
    }
    size_t elem = r->version == MODEL_FILE_FP32 ? sizeof(float) : sizeof(uint16_t);
    if (r->hf) {
        if (hf_folder_read(r->hf, r->at, out, k, err, err_len) != 0) return -1;
    } else if (fread(out, elem, k, r->f) != k) {
        snprintf(err, err_len, "%s: read failed (file changed while reading?)", r->path);
        return -1;
    }
    if (r->version != MODEL_FILE_FP32) {
        /* bf16 is the top half of an fp32: widen in place from the back. */
        uint16_t *h = (uint16_t *)out;
        for (size_t i = k; i-- > 0;) {
            uint32_t bits = (uint32_t)h[i] << 16;
            memcpy(&out[i], &bits, sizeof bits);
        }
    }
    finite_tally(&r->cfg, out, r->at, k, r->bad, r->first);
    r->at += k;
    /* at the end, before the last piece is used: a corrupt file is refused */
    if (r->at == config_num_params(&r->cfg)) return finite_report(r->path, r->bad, r->first, err, err_len);
    return 0;
}

void model_file_close_read(ModelFileReader *r)
{
    if (r->f) fclose(r->f);
    r->f = NULL;
    hf_folder_close(r->hf);
    r->hf = NULL;
}

int model_file_load(const char *path, GPTConfig *cfg, float **params, char *err, size_t err_len)
{
    off_t size;
    int version;
    *params = NULL;
    if (hf_folder_is(path)) {
        if (hf_folder_load(path, cfg, params, err, err_len) != 0) return -1;
        if (check_finite(path, cfg, *params, err, err_len) == 0) return 0;
        free(*params);
        *params = NULL;
        return -1;
    }
    FILE *f = open_regular(path, &size, err, err_len);
    if (!f) return -1;
    if (read_header(f, path, size, cfg, &version, err, err_len) != 0) {
        fclose(f);
        return -1;
    }
    size_t n = config_num_params(cfg);
    float *p = malloc(n * sizeof(float));
    if (!p) {
        snprintf(err, err_len, "%s: out of host memory for %zu parameters", path, n);
        fclose(f);
        return -1;
    }
    /* Read in 64 MiB pieces, polling for a stop (base/stop.h) between them:
     * a 1.5B-parameter file is 6 GB, tens of seconds from a slow disk. */
    size_t elem = version == MODEL_FILE_FP32 ? sizeof(float) : sizeof(uint16_t);
    size_t piece = ((size_t)64 << 20) / elem;
    int ok = 1, stopped = 0;
    for (size_t at = 0; ok && at < n; at += piece) {
        if (stop_requested()) {
            stopped = 1;
            break;
        }
        size_t k = n - at < piece ? n - at : piece;
        ok = fread((char *)p + at * elem, elem, k, f) == k;
    }
    fclose(f);
    if (stopped) {
        snprintf(err, err_len, "%s: loading %s", path, STOP_MESSAGE);
        free(p);
        return -1;
    }
    if (version != MODEL_FILE_FP32) {
        /* bf16 is the top half of an fp32: widen in place from the back. */
        uint16_t *h = (uint16_t *)p;
        for (size_t i = n; ok && i-- > 0;) {
            uint32_t bits = (uint32_t)h[i] << 16;
            memcpy(&p[i], &bits, sizeof bits);
        }
    }
    if (!ok) {
        snprintf(err, err_len, "%s: read failed (file changed while reading?)", path);
        free(p);
        return -1;
    }
    if (check_finite(path, cfg, p, err, err_len) != 0) {
        free(p);
        return -1;
    }
    *params = p;
    return 0;
}

uint16_t model_file_bf16(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x40); /* quiet NaN */
    b += 0x7fffu + ((b >> 16) & 1);
    return (uint16_t)(b >> 16);
}

int model_file_save_as(const char *path, const GPTConfig *cfg, const float *params, int version,
                       char *err, size_t err_len)
{
    if (version != MODEL_FILE_FP32 && version != MODEL_FILE_BF16) {
        snprintf(err, err_len, "%s: cannot write version %d (3 = fp32, 5 = bf16)", path, version);
        return -1;
    }
    int32_t h[256] = {0};
    h[0] = MODEL_FILE_MAGIC;
    h[1] = version;
    h[2] = cfg->max_seq_len;
    h[3] = cfg->vocab_size;
    h[4] = cfg->num_layers;
    h[5] = cfg->num_heads;
    h[6] = cfg->channels;
    h[7] = cfg->padded_vocab;
    if (cfg->arch == ARCH_LLAMA) {
        h[MODEL_FILE_ARCH] = cfg->arch;
        h[MODEL_FILE_ARCH + 1] = cfg->kv_heads;
        h[MODEL_FILE_ARCH + 2] = cfg->ffn;
        h[MODEL_FILE_ARCH + 3] = cfg->untied;
        memcpy(&h[MODEL_FILE_ARCH + 4], &cfg->rope_theta, 4);
        memcpy(&h[MODEL_FILE_ARCH + 5], &cfg->norm_eps, 4);
        h[MODEL_FILE_ARCH + 6] = cfg->qkv_bias;
        h[MODEL_FILE_ARCH + 7] = cfg->qk_norm;
        memcpy(&h[MODEL_FILE_ARCH + 8], &cfg->rope_factor, 4);
        memcpy(&h[MODEL_FILE_ARCH + 9], &cfg->rope_low_freq, 4);
        memcpy(&h[MODEL_FILE_ARCH + 10], &cfg->rope_high_freq, 4);
        h[MODEL_FILE_ARCH + 11] = cfg->rope_original_max_pos;
        h[MODEL_FILE_HEAD_DIM] = cfg->head_dim;
    }
    h[MODEL_FILE_TOKENIZER] = (int32_t)(uint32_t)cfg->tokenizer_id;
    h[MODEL_FILE_TOKENIZER + 1] = (int32_t)(uint32_t)(cfg->tokenizer_id >> 32);
    size_t n = config_num_params(cfg);
    if (version == MODEL_FILE_FP32)
        return io_write_file(path, h, sizeof h, params, n * sizeof(float), err, err_len);
    uint16_t *half = malloc((n ? n : 1) * sizeof(uint16_t));
    if (!half) {
        snprintf(err, err_len, "%s: out of host memory for the bf16 copy", path);
        return -1;
    }
    for (size_t i = 0; i < n; i++) half[i] = model_file_bf16(params[i]);
    int rc = io_write_file(path, h, sizeof h, half, n * sizeof(uint16_t), err, err_len);
    free(half);
    return rc;
}

int model_file_save(const char *path, const GPTConfig *cfg, const float *params, char *err,
                    size_t err_len)
{
    return model_file_save_as(path, cfg, params, MODEL_FILE_FP32, err, err_len);
}
