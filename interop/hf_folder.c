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
#include "hf_folder_priv.h"
#include "hf_tokenizer.h"


int hf_fail(char *err, size_t len, const char *fmt, ...)
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
cJSON *hf_read_json(const char *path, char *err, size_t len)
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
        return hf_fail(err, len, "%s: rope_scaling type '%s' is not supported (llama3 only)",
                        w, kind);
    static const char *const keys[] = {"rope_type", "type", "factor", "low_freq_factor",
                                       "high_freq_factor", "original_max_position_embeddings",
                                       NULL};
    const cJSON *e;
    cJSON_ArrayForEach(e, rs) if (!listed(keys, e->string))
        return hf_fail(err, len, "%s: rope_scaling key '%s' not supported", w, e->string);
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
        return hf_fail(err, len, "%s: key '%s' is not understood by this reader; if it does not "
                    "change the model's outputs, convert with scripts/import_hf.py --allow-key "
                    "%s", w, e->string, e->string);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(c, "hidden_act");
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(c, "layer_types");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(c, "rope_scaling");
    if (act && !(cJSON_IsString(act) && strcmp(act->valuestring, "silu") == 0))
        return hf_fail(err, len, "%s: hidden_act '%s' is not supported (the MLP is SwiGLU: "
                        "silu only)", w, cJSON_IsString(act) ? act->valuestring : "?");
    if (is_true(c, "mlp_bias"))
        return hf_fail(err, len, "%s: mlp_bias true is not supported", w);
    if (is_true(c, "use_sliding_window"))
        return hf_fail(err, len, "%s: use_sliding_window true is not supported (attention is "
                        "full causal)", w);
    cJSON_ArrayForEach(e, lt) if (!cJSON_IsString(e) || strcmp(e->valuestring, "full_attention"))
        return hf_fail(err, len, "%s: layer_types holds sliding attention; only "
                        "full_attention is supported", w);
    if (get_num(c, "attention_dropout", 0) != 0)
        return hf_fail(err, len, "%s: attention_dropout is not supported (0 only)", w);
    int C, L, NH, V, F, NKV, hd;
    if (get_int(c, "hidden_size", &C) || get_int(c, "num_hidden_layers", &L) ||
        get_int(c, "num_attention_heads", &NH) || get_int(c, "vocab_size", &V) ||
        get_int(c, "intermediate_size", &F))
        return hf_fail(err, len, "%s: hidden_size, num_hidden_layers, num_attention_heads, "
                        "vocab_size and intermediate_size must be positive integers", w);
    if (get_int(c, "num_key_value_heads", &NKV)) NKV = NH;
    /* head_dim: Hugging Face's default is hidden_size / num_attention_heads;
     * another (Qwen3's 128 at 1024 / 16) is recorded, the default is not */
    if (!cJSON_GetObjectItemCaseSensitive(c, "head_dim") ||
        cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(c, "head_dim")))
        hd = 0;
    else if (get_int(c, "head_dim", &hd))
        return hf_fail(err, len, "%s: head_dim must be a positive integer", w);
    if (C % NH && !hd)
        return hf_fail(err, len, "%s: num_attention_heads does not divide hidden_size and no "
                        "head_dim is given", w);
    if (C % NH == 0 && hd == C / NH) hd = 0;
    if (cJSON_IsObject(rs) && llama_rope_scaling(rs, w, cfg, err, len) != 0) return -1;
    if (get_int(c, "max_position_embeddings", &cfg->max_seq_len))
        return hf_fail(err, len, "%s: no positive integer max_position_embeddings", w);
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
        return hf_fail(err, len, "%s: activation_function '%s' is not supported (gelu_new "
                        "only)", w, cJSON_IsString(act) ? act->valuestring : "?");
    if (fabs(get_num(c, "layer_norm_epsilon", 1e-5) - 1e-5) > 1e-12)
        return hf_fail(err, len, "%s: layer_norm_epsilon is not 1e-5", w);
    if (get_int(c, "n_layer", &cfg->num_layers) || get_int(c, "n_head", &cfg->num_heads) ||
        get_int(c, "n_embd", &cfg->channels) || get_int(c, "vocab_size", &cfg->vocab_size) ||
        (get_int(c, "n_positions", &cfg->max_seq_len) && get_int(c, "n_ctx", &cfg->max_seq_len)))
        return hf_fail(err, len, "%s: n_layer, n_head, n_embd, n_positions and vocab_size must "
                        "be positive integers", w);
    cfg->arch = ARCH_GPT2;
    cfg->padded_vocab = config_pad_vocab(cfg->vocab_size);
    return 0;
}

int hf_folder_config(const char *path, GPTConfig *cfg, char *err, size_t len)
{
    char w[4200];
    snprintf(w, sizeof w, "%s/config.json", path);
    cJSON *c = hf_read_json(w, err, len);
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
        rc = hf_fail(err, len, "%s: model_type '%s' is not one of gpt2, llama, qwen2, qwen3",
                      w, mt);
    if (rc == 0) /* the folder's tokenizer is the model's (hf_tokenizer.h) */
        rc = hf_tokenizer_folder_id(path, c, &cfg->tokenizer_id, err, len);
    cJSON_Delete(c);
    char why[200];
    if (rc == 0 && config_validate(cfg, why, sizeof why) != 0)
        return hf_fail(err, len, "%s: %s", w, why);
    return rc;
}

/* ---- the weights the model wants (read by hf_folder_read.c) ---- */

static void want(Load *ld, size_t off, int rows, int cols, int transpose, const char *fmt, int l)
{
    Want *w = &ld->want[ld->n++];
    snprintf(w->name, sizeof w->name, fmt, l);
    w->off = off, w->rows = rows, w->cols = cols, w->transpose = transpose, w->filled = 0;
    w->fd = -1;
}

void hf_want_table(Load *ld)
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
