/* interop/hf_folder.c — see hf_folder.h. The config checks mirror
 * scripts/hf_llama.py's check_config (the same refusals, the same words). */
#include "hf_folder.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"

#define INDEX_NAME "model.safetensors.index.json"
#define MAX_HEADER (100u << 20) /* a safetensors header beyond 100 MB is not one */

/* The message into err; returns -1. */
static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

int hf_folder_is(const char *path)
{
    struct stat st;
    char config[4200];
    snprintf(config, sizeof config, "%s/config.json", path);
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode) && stat(config, &st) == 0;
}

/* The whole of a small file (config.json, an index) parsed as JSON. */
static cJSON *read_json(const char *path, char *err, size_t len)
{
    off_t size;
    int fd = io_open_regular(path, &size, err, len);
    if (fd < 0) return NULL;
    char *text = size < (off_t)MAX_HEADER ? malloc((size_t)size + 1) : NULL;
    if (!text || io_pread_exact(fd, text, (size_t)size, 0, path, err, len) != 0) {
        if (!text) snprintf(err, len, "%s: too large for a JSON file (%lld bytes)", path,
                            (long long)size);
        free(text);
        close(fd);
        return NULL;
    }
    close(fd);
    text[size] = 0;
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j || !cJSON_IsObject(j)) {
        snprintf(err, len, "%s: not a JSON object", path);
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

/* c[key] as an integer >= 1 into *out: 0, or -1 (absent or not one). */
static int get_int(const cJSON *c, const char *key, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 1 ||
        v->valuedouble > 1 << 30)
        return -1;
    *out = (int)v->valuedouble;
    return 0;
}

static double get_num(const cJSON *c, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static int is_true(const cJSON *c, const char *key)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, key));
}

static int listed(const char *const *list, const char *s)
{
    for (; *list; list++)
        if (strcmp(*list, s) == 0) return 1;
    return 0;
}

/* Keys read, and keys that change nothing the model computes. */
static const char *const USED[] = {
    "architectures", "model_type", "vocab_size", "hidden_size", "intermediate_size",
    "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "hidden_act",
    "max_position_embeddings", "rms_norm_eps", "rope_theta", "rope_scaling",
    "tie_word_embeddings", "attention_bias", "mlp_bias", "use_sliding_window", "sliding_window",
    "max_window_layers", "layer_types", "attention_dropout", "llmc_defaults", "pretraining_tp",
    NULL};
static const char *const INERT[] = {
    "bos_token_id", "eos_token_id", "pad_token_id", "torch_dtype", "dtype", "use_cache",
    "initializer_range", "transformers_version", "_name_or_path", "use_bfloat16",
    "tokenizer_class", "_attn_implementation_autoset", NULL};

/* The field was 0 ("the default") in the model file export_hf.py read. */
static int was_default(const cJSON *c, const char *key)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(c, "llmc_defaults"), *e;
    cJSON_ArrayForEach(e, d) if (cJSON_IsString(e) && strcmp(e->valuestring, key) == 0) return 1;
    return 0;
}

static int llama_rope_scaling(const cJSON *rs, const char *w, GPTConfig *cfg, char *err,
                              size_t len)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!t) t = cJSON_GetObjectItemCaseSensitive(rs, "type");
    const char *kind = cJSON_IsString(t) ? t->valuestring : "?";
    if (strcmp(kind, "default") == 0) return 0;
    if (strcmp(kind, "llama3") != 0)
        return fail(err, len, "%s: rope_scaling type '%s' is not supported (llama3 only)",
                        w, kind);
    static const char *const keys[] = {"rope_type", "type", "factor", "low_freq_factor",
                                       "high_freq_factor", "original_max_position_embeddings",
                                       NULL};
    const cJSON *e;
    cJSON_ArrayForEach(e, rs) if (!listed(keys, e->string))
        return fail(err, len, "%s: rope_scaling key '%s' not supported", w, e->string);
    cfg->rope_factor = (float)get_num(rs, "factor", 0);
    cfg->rope_low_freq = (float)get_num(rs, "low_freq_factor", 0);
    cfg->rope_high_freq = (float)get_num(rs, "high_freq_factor", 0);
    cfg->rope_original_max_pos = (int)get_num(rs, "original_max_position_embeddings", 0);
    return 0;
}

static int llama_config(const cJSON *c, const char *w, const char *mt, GPTConfig *cfg, char *err,
                        size_t len)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, c) if (!listed(USED, e->string) && !listed(INERT, e->string))
        return fail(err, len, "%s: key '%s' is not understood by this reader; if it does not "
                    "change the model's outputs, convert with scripts/import_hf.py --allow-key "
                    "%s", w, e->string, e->string);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(c, "hidden_act");
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(c, "layer_types");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(c, "rope_scaling");
    if (act && !(cJSON_IsString(act) && strcmp(act->valuestring, "silu") == 0))
        return fail(err, len, "%s: hidden_act '%s' is not supported (the MLP is SwiGLU: "
                        "silu only)", w, cJSON_IsString(act) ? act->valuestring : "?");
    if (is_true(c, "mlp_bias"))
        return fail(err, len, "%s: mlp_bias true is not supported", w);
    if (is_true(c, "use_sliding_window"))
        return fail(err, len, "%s: use_sliding_window true is not supported (attention is "
                        "full causal)", w);
    cJSON_ArrayForEach(e, lt) if (!cJSON_IsString(e) || strcmp(e->valuestring, "full_attention"))
        return fail(err, len, "%s: layer_types holds sliding attention; only "
                        "full_attention is supported", w);
    if (get_num(c, "attention_dropout", 0) != 0)
        return fail(err, len, "%s: attention_dropout is not supported (0 only)", w);
    int C, L, NH, V, F, NKV, hd;
    if (get_int(c, "hidden_size", &C) || get_int(c, "num_hidden_layers", &L) ||
        get_int(c, "num_attention_heads", &NH) || get_int(c, "vocab_size", &V) ||
        get_int(c, "intermediate_size", &F))
        return fail(err, len, "%s: hidden_size, num_hidden_layers, num_attention_heads, "
                        "vocab_size and intermediate_size must be positive integers", w);
    if (get_int(c, "num_key_value_heads", &NKV)) NKV = NH;
    /* head_dim: Hugging Face's default is hidden_size / num_attention_heads;
     * another (Qwen3's 128 at 1024 / 16) is recorded, the default is not */
    if (!cJSON_GetObjectItemCaseSensitive(c, "head_dim") ||
        cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(c, "head_dim")))
        hd = 0;
    else if (get_int(c, "head_dim", &hd))
        return fail(err, len, "%s: head_dim must be a positive integer", w);
    if (C % NH && !hd)
        return fail(err, len, "%s: num_attention_heads does not divide hidden_size and no "
                        "head_dim is given", w);
    if (C % NH == 0 && hd == C / NH) hd = 0;
    if (cJSON_IsObject(rs) && llama_rope_scaling(rs, w, cfg, err, len) != 0) return -1;
    if (get_int(c, "max_position_embeddings", &cfg->max_seq_len))
        return fail(err, len, "%s: no positive integer max_position_embeddings", w);
    cfg->arch = ARCH_LLAMA;
    cfg->channels = C, cfg->num_layers = L, cfg->num_heads = NH, cfg->vocab_size = V;
    cfg->padded_vocab = config_pad_vocab(V);
    cfg->kv_heads = was_default(c, "num_key_value_heads") && NKV == NH ? 0 : NKV;
    int ffn_default = F == config_default_ffn(ARCH_LLAMA, C);
    cfg->ffn = was_default(c, "intermediate_size") && ffn_default ? 0 : F;
    cfg->rope_theta = (float)get_num(c, "rope_theta", 10000.0);
    if (was_default(c, "rope_theta") && cfg->rope_theta == 10000.0f) cfg->rope_theta = 0;
    cfg->norm_eps = (float)get_num(c, "rms_norm_eps", 1e-6);
    if (was_default(c, "rms_norm_eps") && cfg->norm_eps == 1e-5f) cfg->norm_eps = 0;
    cfg->untied = !is_true(c, "tie_word_embeddings");
    cfg->qkv_bias = strcmp(mt, "qwen2") == 0 || is_true(c, "attention_bias");
    cfg->qk_norm = strcmp(mt, "qwen3") == 0;
    cfg->head_dim = hd;
    return 0;
}

static int gpt2_config(const cJSON *c, const char *w, GPTConfig *cfg, char *err, size_t len)
{
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(c, "activation_function");
    if (act && !(cJSON_IsString(act) && strcmp(act->valuestring, "gelu_new") == 0))
        return fail(err, len, "%s: activation_function '%s' is not supported (gelu_new "
                        "only)", w, cJSON_IsString(act) ? act->valuestring : "?");
    if (fabs(get_num(c, "layer_norm_epsilon", 1e-5) - 1e-5) > 1e-12)
        return fail(err, len, "%s: layer_norm_epsilon is not 1e-5", w);
    if (get_int(c, "n_layer", &cfg->num_layers) || get_int(c, "n_head", &cfg->num_heads) ||
        get_int(c, "n_embd", &cfg->channels) || get_int(c, "vocab_size", &cfg->vocab_size) ||
        (get_int(c, "n_positions", &cfg->max_seq_len) && get_int(c, "n_ctx", &cfg->max_seq_len)))
        return fail(err, len, "%s: n_layer, n_head, n_embd, n_positions and vocab_size must "
                        "be positive integers", w);
    cfg->arch = ARCH_GPT2;
    cfg->padded_vocab = config_pad_vocab(cfg->vocab_size);
    return 0;
}

int hf_folder_config(const char *path, GPTConfig *cfg, char *err, size_t len)
{
    char w[4200];
    snprintf(w, sizeof w, "%s/config.json", path);
    cJSON *c = read_json(w, err, len);
    if (!c) return -1;
    memset(cfg, 0, sizeof *cfg);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "model_type");
    const char *mt = cJSON_IsString(t) ? t->valuestring : "?";
    int rc;
    if (strcmp(mt, "gpt2") == 0)
        rc = gpt2_config(c, w, cfg, err, len);
    else if (!strcmp(mt, "llama") || !strcmp(mt, "qwen2") || !strcmp(mt, "qwen3"))
        rc = llama_config(c, w, mt, cfg, err, len);
    else
        rc = fail(err, len, "%s: model_type '%s' is not one of gpt2, llama, qwen2, qwen3",
                      w, mt);
    cJSON_Delete(c);
    char why[200];
    if (rc == 0 && config_validate(cfg, why, sizeof why) != 0)
        return fail(err, len, "%s: %s", w, why);
    return rc;
}

/* ---- the weights -------------------------------------------------------- */

/* One tensor the model wants: its Hugging Face name, where it goes in the
 * flat parameter vector, its stored shape (rows x cols; cols 0 = 1-D) and
 * whether it is stored (in, out), to be transposed (GPT-2's Conv1D). */
typedef struct {
    char name[80];
    size_t off;
    int rows, cols, transpose, filled;
} Want;

typedef struct {
    const char *folder;
    GPTConfig cfg;
    float *p;
    Want *want;
    int n;
    float *head;   /* a tied lm_head.weight, compared with the embedding at the end */
    int head_seen;
} Load;

static void want(Load *ld, size_t off, int rows, int cols, int transpose, const char *fmt, int l)
{
    Want *w = &ld->want[ld->n++];
    snprintf(w->name, sizeof w->name, fmt, l);
    w->off = off, w->rows = rows, w->cols = cols, w->transpose = transpose, w->filled = 0;
}

static void want_table(Load *ld)
{
    const GPTConfig *c = &ld->cfg;
    size_t sz[NUM_PARAM_TENSORS], b[NUM_PARAM_TENSORS], at = 0;
    config_param_sizes(c, sz);
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) b[t] = at, at += sz[t];
    int C = c->channels, L = c->num_layers, V = c->vocab_size;
    size_t Cz = (size_t)C;
    ld->want = calloc((size_t)L * 16 + 8, sizeof(Want));
    if (c->arch == ARCH_GPT2) {
        want(ld, b[0], V, C, 0, "wte.weight", 0);
        want(ld, b[1], c->max_seq_len, C, 0, "wpe.weight", 0);
        for (int l = 0; l < L; l++) {
            size_t k = (size_t)l;
            want(ld, b[2] + k * Cz, C, 0, 0, "h.%d.ln_1.weight", l);
            want(ld, b[3] + k * Cz, C, 0, 0, "h.%d.ln_1.bias", l);
            want(ld, b[4] + k * 3 * Cz * Cz, C, 3 * C, 1, "h.%d.attn.c_attn.weight", l);
            want(ld, b[5] + k * 3 * Cz, 3 * C, 0, 0, "h.%d.attn.c_attn.bias", l);
            want(ld, b[6] + k * Cz * Cz, C, C, 1, "h.%d.attn.c_proj.weight", l);
            want(ld, b[7] + k * Cz, C, 0, 0, "h.%d.attn.c_proj.bias", l);
            want(ld, b[8] + k * Cz, C, 0, 0, "h.%d.ln_2.weight", l);
            want(ld, b[9] + k * Cz, C, 0, 0, "h.%d.ln_2.bias", l);
            want(ld, b[10] + k * 4 * Cz * Cz, C, 4 * C, 1, "h.%d.mlp.c_fc.weight", l);
            want(ld, b[11] + k * 4 * Cz, 4 * C, 0, 0, "h.%d.mlp.c_fc.bias", l);
            want(ld, b[12] + k * 4 * Cz * Cz, 4 * C, C, 1, "h.%d.mlp.c_proj.weight", l);
            want(ld, b[13] + k * Cz, C, 0, 0, "h.%d.mlp.c_proj.bias", l);
        }
        want(ld, b[14], C, 0, 0, "ln_f.weight", 0);
        want(ld, b[15], C, 0, 0, "ln_f.bias", 0);
        return;
    }
    int hs = config_head_dim(c), Q = config_q_width(c), K = config_kv_heads(c) * hs;
    int F = config_ffn(c);
    size_t Qz = (size_t)Q, W = Qz + 2 * (size_t)K, Fz = (size_t)F;
    want(ld, b[0], V, C, 0, "model.embed_tokens.weight", 0);
    if (c->untied) want(ld, b[1], V, C, 0, "lm_head.weight", 0);
    for (int l = 0; l < L; l++) {
        size_t k = (size_t)l, q = b[4] + k * W * Cz, qb = b[5] + k * W;
        want(ld, b[2] + k * Cz, C, 0, 0, "model.layers.%d.input_layernorm.weight", l);
        want(ld, q, Q, C, 0, "model.layers.%d.self_attn.q_proj.weight", l);
        want(ld, q + Qz * Cz, K, C, 0, "model.layers.%d.self_attn.k_proj.weight", l);
        want(ld, q + (Qz + K) * Cz, K, C, 0, "model.layers.%d.self_attn.v_proj.weight", l);
        if (c->qkv_bias) {
            want(ld, qb, Q, 0, 0, "model.layers.%d.self_attn.q_proj.bias", l);
            want(ld, qb + Qz, K, 0, 0, "model.layers.%d.self_attn.k_proj.bias", l);
            want(ld, qb + Qz + K, K, 0, 0, "model.layers.%d.self_attn.v_proj.bias", l);
        }
        if (c->qk_norm) {
            want(ld, b[3] + k * hs, hs, 0, 0, "model.layers.%d.self_attn.q_norm.weight", l);
            want(ld, b[9] + k * hs, hs, 0, 0, "model.layers.%d.self_attn.k_norm.weight", l);
        }
        want(ld, b[6] + k * Cz * Qz, C, Q, 0, "model.layers.%d.self_attn.o_proj.weight", l);
        want(ld, b[8] + k * Cz, C, 0, 0, "model.layers.%d.post_attention_layernorm.weight", l);
        want(ld, b[10] + k * 2 * Fz * Cz, F, C, 0, "model.layers.%d.mlp.gate_proj.weight", l);
        want(ld, b[10] + k * 2 * Fz * Cz + Fz * Cz, F, C, 0, "model.layers.%d.mlp.up_proj.weight",
             l);
        want(ld, b[12] + k * Cz * Fz, C, F, 0, "model.layers.%d.mlp.down_proj.weight", l);
    }
    want(ld, b[14], C, 0, 0, "model.norm.weight", 0);
}

static float half_to_float(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v = e == 0 ? ldexpf((float)m, -24)
              : e == 31 ? (m ? NAN : INFINITY)
                        : ldexpf((float)(m | 0x400), e - 25);
    return h >> 15 ? -v : v;
}

/* src (n elements of dtype width) widened into dst[i] (or transposed:
 * stored rows x cols, written cols x rows). */
static void widen(float *dst, const unsigned char *src, int width, int f16, int rows, int cols,
                  int transpose)
{
    size_t n = (size_t)rows * (size_t)(cols ? cols : 1);
    for (size_t i = 0; i < n; i++) {
        float v;
        if (width == 4) {
            memcpy(&v, src + 4 * i, 4);
        } else {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            uint32_t bits = (uint32_t)h << 16;
            if (f16) v = half_to_float(h);
            else memcpy(&v, &bits, 4);
        }
        size_t o = transpose ? (i % (size_t)cols) * (size_t)rows + i / (size_t)cols : i;
        dst[o] = v;
    }
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
    if (!w && (tied_head || o_bias)) w = &tmp;
    if (!w)
        return fail(err, len, "%s: tensor %s: not a tensor of this model", path, name);
    if (!width)
        return fail(err, len, "%s: tensor %s: dtype %s (F32, BF16 or F16 are read)", path,
                        name, dtype);
    int dims = cJSON_GetArraySize(shape), r = -1, c = 0;
    if (dims >= 1) r = shape_dim(cJSON_GetArrayItem(shape, 0));
    if (dims == 2) c = shape_dim(cJSON_GetArrayItem(shape, 1));
    if (dims < 1 || dims > 2 || r != w->rows || c != w->cols)
        return fail(err, len, "%s: tensor %s has the wrong shape (expected %d x %d)", path,
                        name, w->rows, w->cols);
    size_t n = (size_t)r * (size_t)(c ? c : 1), bytes = n * (size_t)width;
    double lo = cJSON_GetArraySize(offs) == 2 ? cJSON_GetArrayItem(offs, 0)->valuedouble : -1;
    double hi = cJSON_GetArraySize(offs) == 2 ? cJSON_GetArrayItem(offs, 1)->valuedouble : -1;
    if (lo < 0 || hi - lo != (double)bytes || hi > (double)size || base + (off_t)hi > size)
        return fail(err, len, "%s: tensor %s: data_offsets do not hold %s %d x %d", path,
                        name, dtype, r, c);
    if (w->filled++)
        return fail(err, len, "%s: tensor %s appears twice", path, name);
    unsigned char *raw = malloc(bytes ? bytes : 1);
    float *into = w == &tmp ? malloc(n * sizeof(float)) : ld->p + w->off;
    int rc = raw && into ? io_pread_exact(fd, raw, bytes, base + (off_t)lo, path, err, len)
                         : fail(err, len, "%s: out of host memory", path);
    if (rc == 0) widen(into, raw, width, dtype[1] == '1', r, c, w->transpose);
    free(raw);
    if (w != &tmp) return rc;
    if (rc == 0 && o_bias)
        for (size_t i = 0; i < n && rc == 0; i++)
            if (into[i] != 0)
                rc = fail(err, len, "%s: tensor %s is not zero (this model has no o_proj "
                              "bias)", path, name);
    if (rc == 0 && tied_head) {
        ld->head = into, ld->head_seen = 1;
        return 0;
    }
    free(into);
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
    uint64_t hn = 0;
    unsigned char b8[8];
    int rc = size < 8 ? -1 : io_pread_exact(fd, b8, 8, 0, path, err, len);
    for (int i = 7; rc == 0 && i >= 0; i--) hn = hn << 8 | b8[i];
    if (size < 8 || (rc == 0 && (hn > MAX_HEADER || (off_t)(8 + hn) > size))) {
        snprintf(err, len, "%s: not a safetensors file (header length %llu, file %lld bytes)",
                 path, (unsigned long long)hn, (long long)size);
        close(fd);
        return -1;
    }
    char *text = rc == 0 ? malloc(hn + 1) : NULL;
    if (text && (rc = io_pread_exact(fd, text, hn, 8, path, err, len)) == 0) text[hn] = 0;
    cJSON *h = text && rc == 0 ? cJSON_Parse(text) : NULL;
    free(text);
    if (!h && rc == 0) rc = fail(err, len, "%s: the safetensors header is not JSON", path);
    /* names come from the object's keys: an array's items have none */
    if (h && rc == 0 && !cJSON_IsObject(h))
        rc = fail(err, len, "%s: the safetensors header is not a JSON object", path);
    const cJSON *t;
    cJSON_ArrayForEach(t, h)
    {
        if (rc != 0) break;
        if (strcmp(t->string, "__metadata__") == 0) continue;
        const cJSON *m = map ? cJSON_GetObjectItemCaseSensitive(map, t->string) : NULL;
        if (map && !(cJSON_IsString(m) && strcmp(m->valuestring, fname) == 0))
            rc = fail(err, len, "%s: holds %s, which %s does not put there", path,
                          t->string, INDEX_NAME);
        else
            rc = take(ld, path, t->string, t, fd, (off_t)(8 + hn), size, err, len);
    }
    cJSON_Delete(h);
    close(fd);
    return rc;
}

/* model.safetensors, or each shard the index names (each once). */
static int read_weights(Load *ld, char *err, size_t len)
{
    char ipath[4400];
    snprintf(ipath, sizeof ipath, "%s/%s", ld->folder, INDEX_NAME);
    if (access(ipath, F_OK) != 0) return read_file(ld, "model.safetensors", NULL, err, len);
    cJSON *idx = read_json(ipath, err, len);
    if (!idx) return -1;
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(idx, "weight_map"), *e, *f;
    int rc = cJSON_IsObject(map) ? 0 : fail(err, len, "%s: no weight_map", ipath);
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
            rc = fail(err, len, "%s: %s: not a file of the folder", ipath, e->string);
        else if (first)
            rc = read_file(ld, e->valuestring, map, err, len);
    }
    cJSON_Delete(idx);
    return rc;
}

int hf_folder_load(const char *path, GPTConfig *cfg, float **params, char *err, size_t len)
{
    *params = NULL;
    Load ld = {.folder = path};
    if (hf_folder_config(path, &ld.cfg, err, len) != 0) return -1;
    size_t n = config_num_params(&ld.cfg);
    ld.p = calloc(n ? n : 1, sizeof(float)); /* the padded rows stay 0 */
    want_table(&ld);
    if (!ld.p || !ld.want) {
        free(ld.p), free(ld.want);
        return fail(err, len, "%s: out of host memory for %zu parameters", path, n);
    }
    int rc = read_weights(&ld, err, len);
    for (int i = 0; rc == 0 && i < ld.n; i++)
        if (!ld.want[i].filled)
            rc = fail(err, len, "%s: tensor %s is missing%s", path, ld.want[i].name,
                          strcmp(ld.want[i].name, "lm_head.weight") == 0
                              ? " (config.json: tie_word_embeddings false)" : "");
    size_t VC = (size_t)ld.cfg.vocab_size * (size_t)ld.cfg.channels;
    if (rc == 0 && ld.head_seen && memcmp(ld.head, ld.p, VC * sizeof(float)) != 0)
        rc = fail(err, len, "%s: lm_head.weight differs from the embedding, but the model "
                      "ties them", path);
    free(ld.head);
    free(ld.want);
    if (rc != 0) {
        free(ld.p);
        return -1;
    }
    *cfg = ld.cfg;
    *params = ld.p;
    return 0;
}
