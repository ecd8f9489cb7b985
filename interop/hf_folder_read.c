/* interop/hf_folder_read.c — see hf_folder.h: the safetensors files of a
 * folder, read tensor by tensor (hf_folder_open, _read, _close). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "hf_folder_priv.h"


static float half_to_float(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v = e == 0 ? ldexpf((float)m, -24)
              : e == 31 ? (m ? NAN : INFINITY)
                        : ldexpf((float)(m | 0x400), e - 25);
    return h >> 15 ? -v : v;
}

/* Element i of src (width 4: F32; 2: BF16, or F16 when f16) as fp32. */
static float widen_one(const unsigned char *src, int width, int f16, size_t i)
{
    float v;
    if (width == 4) {
        memcpy(&v, src + 4 * i, 4);
        return v;
    }
    uint16_t h;
    memcpy(&h, src + 2 * i, 2);
    if (f16) return half_to_float(h);
    uint32_t bits = (uint32_t)h << 16;
    memcpy(&v, &bits, 4);
    return v;
}

/* The scratch at least n bytes: 0, or -1 out of memory. */
static int scratch(Load *ld, size_t n)
{
    if (n <= ld->raw_cap) return 0;
    unsigned char *r = realloc(ld->raw, n);
    if (!r) return -1;
    ld->raw = r, ld->raw_cap = n, ld->raw_of = -1;
    return 0;
}

/* Elements [from, from + n) of w's stored tensor widened into dst, read
 * IO_READ_CHUNK_BYTES at a time (bounded memory: a check over a whole
 * tensor reads it in pieces). */
static int read_run(Load *ld, const Want *w, size_t from, size_t n, float *dst, char *err,
                    size_t len)
{
    size_t per = IO_READ_CHUNK_BYTES / (size_t)w->width;
    while (n > 0) {
        size_t k = n < per ? n : per;
        if (scratch(ld, k * (size_t)w->width) != 0)
            return hf_fail(err, len, "%s: out of host memory", ld->folder);
        if (io_pread_exact(w->fd, ld->raw, k * (size_t)w->width,
                           w->at + (off_t)(from * (size_t)w->width), ld->folder, err, len) != 0)
            return -1;
        ld->raw_of = -1;
        for (size_t i = 0; i < k; i++) dst[i] = widen_one(ld->raw, w->width, w->f16, i);
        dst += k, from += k, n -= k;
    }
    return 0;
}

/* Skipped: GPT-2's attention-mask buffers, old Llama's inv_freq buffers. */
static int skipped(const char *name)
{
    size_t n = strlen(name);
    static const char *const tails[] = {".attn.bias", ".attn.masked_bias", "rotary_emb.inv_freq"};
    for (int i = 0; i < 3; i++) {
        size_t k = strlen(tails[i]);
        if (n >= k && strcmp(name + n - k, tails[i]) == 0) return 1;
    }
    return 0;
}

/* Tensor `name` (header entry t) of the file open at fd, data starting at
 * base: checked and widened into its place. */

/* One entry of a tensor's "shape" as an int: -1 unless a whole number in
 * 0..2^30, so a value outside int's range (a hostile header's 3e118) never
 * reaches the conversion, which would be undefined. */
static int shape_dim(const cJSON *v)
{
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble > (double)(1 << 30))
        return -1;
    return (int)v->valuedouble;
}
static int take(Load *ld, const char *path, const char *name, const cJSON *t, int fd, off_t base,
                off_t size, char *err, size_t len)
{
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
    const char *dtype = cJSON_IsString(dt) ? dt->valuestring : "?";
    int width = !strcmp(dtype, "F32") ? 4 : !strcmp(dtype, "BF16") || !strcmp(dtype, "F16") ? 2 : 0;
    if (ld->cfg.arch == ARCH_GPT2 && strncmp(name, "transformer.", 12) == 0) name += 12;
    if (skipped(name)) return 0;
    int tied_head = strcmp(name, "lm_head.weight") == 0 && !ld->cfg.untied;
    size_t nl = strlen(name);
    int o_bias = ld->cfg.arch == ARCH_LLAMA && nl > 12 && !strcmp(name + nl - 12, ".o_proj.bias");
    Want *w = NULL, tmp = {.rows = ld->cfg.vocab_size, .cols = ld->cfg.channels};
    for (int i = 0; i < ld->n && !w; i++)
        if (strcmp(ld->want[i].name, name) == 0) w = &ld->want[i];
    if (o_bias) tmp.rows = ld->cfg.channels, tmp.cols = 0;
    if (tied_head) tmp.filled = ld->head_seen;
    if (!w && (tied_head || o_bias)) w = &tmp;
    if (!w)
        return hf_fail(err, len, "%s: tensor %s: not a tensor of this model", path, name);
    if (!width)
        return hf_fail(err, len, "%s: tensor %s: dtype %s (F32, BF16 or F16 are read)", path,
                        name, dtype);
    int dims = cJSON_GetArraySize(shape), r = -1, c = 0;
    if (dims >= 1) r = shape_dim(cJSON_GetArrayItem(shape, 0));
    if (dims == 2) c = shape_dim(cJSON_GetArrayItem(shape, 1));
    if (dims < 1 || dims > 2 || r != w->rows || c != w->cols)
        return hf_fail(err, len, "%s: tensor %s has the wrong shape (expected %d x %d)", path,
                        name, w->rows, w->cols);
    size_t n = (size_t)r * (size_t)(c ? c : 1), bytes = n * (size_t)width;
    double lo = cJSON_GetArraySize(offs) == 2 ? cJSON_GetArrayItem(offs, 0)->valuedouble : -1;
    double hi = cJSON_GetArraySize(offs) == 2 ? cJSON_GetArrayItem(offs, 1)->valuedouble : -1;
    if (lo < 0 || hi - lo != (double)bytes || hi > (double)size || base + (off_t)hi > size)
        return hf_fail(err, len, "%s: tensor %s: data_offsets do not hold %s %d x %d", path,
                        name, dtype, r, c);
    if (w->filled++)
        return hf_fail(err, len, "%s: tensor %s appears twice", path, name);
    w->fd = fd, w->at = base + (off_t)lo, w->width = width, w->f16 = dtype[1] == '1';
    if (tied_head) {
        ld->head = tmp, ld->head_seen = 1;
        return 0;
    }
    if (!o_bias) return 0;
    float *v = malloc(n * sizeof(float)); /* C floats */
    int rc = v ? read_run(ld, w, 0, n, v, err, len)
               : hf_fail(err, len, "%s: out of host memory", path);
    for (size_t i = 0; i < n && rc == 0; i++)
        if (v[i] != 0)
            rc = hf_fail(err, len, "%s: tensor %s is not zero (this model has no o_proj bias)",
                      path, name);
    free(v);
    return rc;
}

/* Every tensor of one safetensors file; with an index (map), each must be
 * the one the weight_map puts in this file. */
static int read_file(Load *ld, const char *fname, const cJSON *map, char *err, size_t len)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", ld->folder, fname);
    off_t size;
    int fd = io_open_regular(path, &size, err, len);
    if (fd < 0) return -1;
    if (ld->nfd == (int)(sizeof ld->fds / sizeof ld->fds[0])) {
        close(fd);
        return hf_fail(err, len, "%s: more than %d safetensors files", path, ld->nfd);
    }
    ld->fds[ld->nfd++] = fd; /* open until hf_folder_close: tensors are read from it later */
    uint64_t hn = 0;
    unsigned char b8[8];
    int rc = size < 8 ? -1 : io_pread_exact(fd, b8, 8, 0, path, err, len);
    for (int i = 7; rc == 0 && i >= 0; i--) hn = hn << 8 | b8[i];
    if (size < 8 || (rc == 0 && (hn > MAX_HEADER || (off_t)(8 + hn) > size))) {
        snprintf(err, len, "%s: not a safetensors file (header length %llu, file %lld bytes)",
                 path, (unsigned long long)hn, (long long)size);
        return -1;
    }
    char *text = rc == 0 ? malloc(hn + 1) : NULL;
    if (text && (rc = io_pread_exact(fd, text, hn, 8, path, err, len)) == 0) text[hn] = 0;
    cJSON *h = text && rc == 0 ? cJSON_Parse(text) : NULL;
    free(text);
    if (!h && rc == 0) rc = hf_fail(err, len, "%s: the safetensors header is not JSON", path);
    /* names come from the object's keys: an array's items have none */
    if (h && rc == 0 && !cJSON_IsObject(h))
        rc = hf_fail(err, len, "%s: the safetensors header is not a JSON object", path);
    const cJSON *t;
    cJSON_ArrayForEach(t, h)
    {
        if (rc != 0) break;
        if (strcmp(t->string, "__metadata__") == 0) continue;
        const cJSON *m = map ? cJSON_GetObjectItemCaseSensitive(map, t->string) : NULL;
        if (map && !(cJSON_IsString(m) && strcmp(m->valuestring, fname) == 0))
            rc = hf_fail(err, len, "%s: holds %s, which %s does not put there", path,
                          t->string, INDEX_NAME);
        else
            rc = take(ld, path, t->string, t, fd, (off_t)(8 + hn), size, err, len);
    }
    cJSON_Delete(h);
    return rc;
}

/* model.safetensors, or each shard the index names (each once). */
static int read_weights(Load *ld, char *err, size_t len)
{
    char ipath[4400];
    snprintf(ipath, sizeof ipath, "%s/%s", ld->folder, INDEX_NAME);
    if (access(ipath, F_OK) != 0) return read_file(ld, "model.safetensors", NULL, err, len);
    cJSON *idx = hf_read_json(ipath, err, len);
    if (!idx) return -1;
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(idx, "weight_map"), *e, *f;
    int rc = cJSON_IsObject(map) ? 0 : hf_fail(err, len, "%s: no weight_map", ipath);
    cJSON_ArrayForEach(e, map)
    {
        if (rc != 0) break;
        int first = 1; /* read each shard at its first mention */
        cJSON_ArrayForEach(f, map)
        {
            if (f == e) break;
            if (cJSON_IsString(f) && cJSON_IsString(e) && !strcmp(f->valuestring, e->valuestring))
                first = 0;
        }
        if (!cJSON_IsString(e) || strchr(e->valuestring, '/'))
            rc = hf_fail(err, len, "%s: %s: not a file of the folder", ipath, e->string);
        else if (first)
            rc = read_file(ld, e->valuestring, map, err, len);
    }
    cJSON_Delete(idx);
    return rc;
}

void hf_folder_close(HfFolder *ld)
{
    if (!ld) return;
    for (int i = 0; i < ld->nfd; i++) close(ld->fds[i]);
    free(ld->want);
    free(ld->raw);
    free(ld);
}

/* A tied lm_head.weight equal to the embedding, compared a row block at a
 * time (two IO_READ_CHUNK_BYTES pieces of floats, not two tensors). */
static int same_head(Load *ld, char *err, size_t len)
{
    size_t n = (size_t)ld->cfg.vocab_size * (size_t)ld->cfg.channels, per = 1u << 18;
    float *a = malloc(per * sizeof(float)), *b = malloc(per * sizeof(float));
    int rc = a && b ? 0 : hf_fail(err, len, "%s: out of host memory", ld->folder);
    for (size_t at = 0; rc == 0 && at < n; at += per) {
        size_t k = n - at < per ? n - at : per;
        rc = read_run(ld, &ld->head, at, k, a, err, len);
        if (rc == 0) rc = read_run(ld, &ld->want[0], at, k, b, err, len);
        if (rc == 0 && memcmp(a, b, k * sizeof(float)) != 0)
            rc = hf_fail(err, len, "%s: lm_head.weight differs from the embedding, but the model "
                      "ties them", ld->folder);
    }
    free(a), free(b);
    return rc;
}

int hf_folder_open(HfFolder **out, const char *path, GPTConfig *cfg, char *err, size_t len)
{
    *out = NULL;
    Load *ld = calloc(1, sizeof *ld);
    if (!ld) return hf_fail(err, len, "%s: out of host memory", path);
    ld->folder = path, ld->raw_of = -1;
    if (hf_folder_config(path, &ld->cfg, err, len) != 0) {
        free(ld);
        return -1;
    }
    hf_want_table(ld);
    int rc = ld->want ? read_weights(ld, err, len)
                      : hf_fail(err, len, "%s: out of host memory", path);
    for (int i = 0; rc == 0 && i < ld->n; i++)
        if (!ld->want[i].filled)
            rc = hf_fail(err, len, "%s: tensor %s is missing%s", path, ld->want[i].name,
                      strcmp(ld->want[i].name, "lm_head.weight") == 0
                          ? " (config.json: tie_word_embeddings false)" : "");
    if (rc == 0 && ld->head_seen) rc = same_head(ld, err, len);
    if (rc != 0) {
        hf_folder_close(ld);
        return -1;
    }
    *cfg = ld->cfg;
    *out = ld;
    return 0;
}

int hf_folder_read(HfFolder *ld, size_t at, float *out, size_t k, char *err, size_t len)
{
    memset(out, 0, k * sizeof(float)); /* the padded rows, and any slot no tensor fills */
    for (int i = 0; i < ld->n; i++) {
        Want *w = &ld->want[i];
        size_t n = (size_t)w->rows * (size_t)(w->cols ? w->cols : 1);
        size_t lo = w->off > at ? w->off : at, hi = w->off + n < at + k ? w->off + n : at + k;
        if (lo >= hi) continue;
        if (!w->transpose) {
            if (read_run(ld, w, lo - w->off, hi - lo, out + (lo - at), err, len) != 0) return -1;
            continue;
        }
        /* stored rows x cols, wanted cols x rows: the piece's elements are
         * strided in the file, so the whole tensor is read once and kept
         * while the pieces go through it (GPT-2's Conv1D weights) */
        size_t bytes = n * (size_t)w->width;
        if (ld->raw_of != i) {
            if (scratch(ld, bytes) != 0)
                return hf_fail(err, len, "%s: out of host memory for tensor %s", ld->folder,
                               w->name);
            if (io_pread_exact(w->fd, ld->raw, bytes, w->at, ld->folder, err, len) != 0) return -1;
            ld->raw_of = i;
        }
        size_t R = (size_t)w->rows, Cc = (size_t)w->cols;
        for (size_t o = lo - w->off; o < hi - w->off; o++)
            out[o + w->off - at] = widen_one(ld->raw, w->width, w->f16, (o % R) * Cc + o / R);
    }
    return 0;
}

int hf_folder_load(const char *path, GPTConfig *cfg, float **params, char *err, size_t len)
{
    *params = NULL;
    HfFolder *h;
    if (hf_folder_open(&h, path, cfg, err, len) != 0) return -1;
    size_t n = config_num_params(cfg);
    float *p = malloc((n ? n : 1) * sizeof(float));
    int rc = p ? hf_folder_read(h, 0, p, n, err, len)
               : hf_fail(err, len, "%s: out of host memory for %zu parameters", path, n);
    hf_folder_close(h);
    if (rc != 0) {
        free(p);
        return -1;
    }
    *params = p;
    return 0;
}

size_t hf_folder_scratch_bytes(const GPTConfig *cfg)
{
    /* a piece's bytes (read_run), or GPT-2's largest transposed weight
     * (c_fc, c_proj of the MLP: 4C x C) as fp32; and same_head's 2 x 1 MiB */
    size_t C = (size_t)cfg->channels, t = cfg->arch == ARCH_GPT2 ? 4 * C * C * sizeof(float) : 0;
    size_t piece = IO_READ_CHUNK_BYTES;
    return (t > piece ? t : piece) + 2 * IO_READ_CHUNK_BYTES;
}
