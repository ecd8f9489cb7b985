/* model/opcost_file.c — see opcost_file.h. */
#include "opcost_file.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/json.h"

int opcost_cache_dir(char *buf, size_t len)
{
    const char *own = getenv("TRAIN_GPT_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (own && *own) snprintf(buf, len, "%s", own);
    else if (xdg && *xdg) snprintf(buf, len, "%s/train_gpt", xdg);
    else if (home && *home) snprintf(buf, len, "%s/.cache/train_gpt", home);
    else return -1;
    return 0;
}

/* The shape fields of a file, in order; values from a PlanInput. */
enum { K_LAYERS, K_CHANNELS, K_HEADS, K_SEQ, K_BATCH, K_VOCAB, K_PVOCAB, K_CHUNK, K_WORLD,
       K_ZERO, K_NUM };
static const char *KEY_NAMES[K_NUM] = {"layers", "channels", "heads", "seq_len", "batch",
                                       "vocab", "padded_vocab", "loss_chunk", "world_size",
                                       "zero"};

static void key_of(const PlanInput *in, long long k[K_NUM])
{
    int N = in->B * in->T;
    int chunk = in->loss_chunk > 0 ? in->loss_chunk
                                   : planner_default_loss_chunk(in->B, in->T,
                                                                in->cfg.padded_vocab, in->dtype);
    k[K_LAYERS] = in->cfg.num_layers;
    k[K_CHANNELS] = in->cfg.channels;
    k[K_HEADS] = in->cfg.num_heads;
    k[K_SEQ] = in->T;
    k[K_BATCH] = in->B;
    k[K_VOCAB] = in->cfg.vocab_size;
    k[K_PVOCAB] = in->cfg.padded_vocab;
    k[K_CHUNK] = chunk < N ? chunk : N;
    k[K_WORLD] = in->world_size > 1 ? in->world_size : 1;
    k[K_ZERO] = in->zero ? 1 : 0;
}

/* A family other than GPT-2 is keyed by name and its own widths, and its
 * file names its block's ops (its description's); GPT-2's files (which
 * name no family) keep their keys and names. */
static int is_gpt2(const PlanInput *in) { return in->cfg.arch == ARCH_GPT2; }
enum { KA_KV_HEADS, KA_FFN, KA_NUM };
static const char *ARCH_KEY_NAMES[KA_NUM] = {"kv_heads", "ffn"};

static void arch_key_of(const PlanInput *in, long long k[KA_NUM])
{
    k[KA_KV_HEADS] = config_kv_heads(&in->cfg);
    k[KA_FFN] = config_ffn(&in->cfg);
}

void opcost_cache_file(const char *dir, const char *device, const PlanInput *in, char *buf,
                       size_t len)
{
    long long k[K_NUM], ka[KA_NUM];
    key_of(in, k);
    arch_key_of(in, ka);
    char text[512];
    int n = snprintf(text, sizeof text, "%s|%s", device, dtype_name(in->dtype));
    for (int i = 0; i < K_NUM && n < (int)sizeof text; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "|%lld", k[i]);
    if (!is_gpt2(in) && n < (int)sizeof text)
        n += snprintf(text + n, sizeof text - (size_t)n, "|%s|%lld|%lld",
                      config_arch_name(in->cfg.arch), ka[KA_KV_HEADS], ka[KA_FFN]);
    /* a head size of its own (--head-dim) keys it too; none: the old name */
    if (!is_gpt2(in) && in->cfg.head_dim && n < (int)sizeof text)
        n += snprintf(text + n, sizeof text - (size_t)n, "|hd%d", in->cfg.head_dim);
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const char *p = text; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    snprintf(buf, len, "%s/op_costs_%016llx.json", dir, (unsigned long long)h);
}

/* json_get_whole into a long long. */
static int get_int(const cJSON *obj, const char *key, double lo, double hi, long long *out)
{
    double d;
    if (json_get_whole(obj, key, lo, hi, &d) != 0) return -1;
    *out = (long long)d;
    return 0;
}

static int parse(const char *text, size_t len, const char *path, const PlanInput *in,
                 char *device, size_t device_len, OpCosts *out, char *err, size_t err_len)
{
    cJSON *root = cJSON_ParseWithLength(text, len);
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(root, "device");
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(root, "shape");
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(root, "ops_ns");
    long long v, want[K_NUM];
    int rc = -1;
    if (!root) {
        io_err(err, err_len, "%s: not valid JSON (truncated or corrupt op-cost file)", path);
        goto out;
    }
    /* version 1 had no copy costs: refused (a cache's is measured again), not
     * read as a copy engine of no cost; version 2 named the ops of every
     * family by GPT-2's slots: GPT-2's names are its block's, so its files
     * are read, another family's are refused below */
    int version = 0;
    if (json_check_format(root, path, "train_gpt op costs", OPCOST_FILE_VERSION_MIN,
                          OPCOST_FILE_VERSION, &version, err, err_len) != 0)
        goto out;
    if (!cJSON_IsString(dev) || !cJSON_IsString(dt) || !cJSON_IsObject(shape) ||
        !cJSON_IsObject(ops)) {
        io_err(err, err_len, "%s: \"device\", \"dtype\" (strings), \"shape\" and \"ops_ns\" "
               "(objects) are required", path);
        goto out;
    }
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "arch");
    const char *fam = cJSON_IsString(arch) ? arch->valuestring : "gpt2";
    if (version < 3 && strcmp(fam, "gpt2") != 0) {
        io_err(err, err_len, "%s: version %d, which timed --arch %s's block in GPT-2's op "
               "slots; this build names the block's own ops (version %d): measure again "
               "(--op-costs measure)", path, version, fam, OPCOST_FILE_VERSION);
        goto out;
    }
    rc = -2;
    if (strcmp(fam, config_arch_name(in->cfg.arch)) != 0) {
        io_err(err, err_len, "%s: measured the ops of --arch %s's block, this run is --arch %s",
               path, fam, config_arch_name(in->cfg.arch));
        goto out;
    }
    rc = -1;
    /* the op names are the run's block description's (opcost_op_name) */
    opcost_init(out, planner_block(in), OPCOST_NS);
    for (int op = 0; op < opcost_n_ops(out); op++)
        if (get_int(ops, opcost_op_name(out, op), 0, 1e15, opcost_at(out, op)) != 0) {
            io_err(err, err_len, "%s: \"ops_ns\".\"%s\" missing or not an integer in 0..1e15",
                   path, opcost_op_name(out, op));
            goto out;
        }
    if (get_int(root, "reps", 0, 1e9, &v) != 0) {
        io_err(err, err_len, "%s: \"reps\" missing or not an integer", path);
        goto out;
    }
    out->reps = (int)v;
    const cJSON *cp = cJSON_GetObjectItemCaseSensitive(root, "copy");
    if (!cJSON_IsObject(cp) || get_int(cp, "latency_ns", 0, 1e15, &out->copy_lat_ns) != 0 ||
        get_int(cp, "bytes_per_s", 0, 1e15, &out->copy_bw) != 0) {
        io_err(err, err_len, "%s: \"copy\" missing, or its \"latency_ns\" or \"bytes_per_s\" "
               "not an integer in 0..1e15", path);
        goto out;
    }
    snprintf(device, device_len, "%s", dev->valuestring);
    rc = -2;
    if (strcmp(dt->valuestring, dtype_name(in->dtype)) != 0) {
        io_err(err, err_len, "%s: measured in %s, this run is %s", path, dt->valuestring,
               dtype_name(in->dtype));
        goto out;
    }
    long long wa[KA_NUM];
    arch_key_of(in, wa);
    for (int i = 0; i < KA_NUM && !is_gpt2(in); i++)
        if (get_int(shape, ARCH_KEY_NAMES[i], 0, 2147483647.0, &v) != 0 || v != wa[i]) {
            io_err(err, err_len, "%s: measured at another shape: \"shape\".\"%s\" is not %lld "
                   "(this run's)", path, ARCH_KEY_NAMES[i], wa[i]);
            goto out;
        }
    /* "head_dim": written with --head-dim only, so a file without it is of
     * heads C / NH wide */
    long long hd = 0;
    if (!is_gpt2(in) && cJSON_GetObjectItemCaseSensitive(shape, "head_dim") &&
        get_int(shape, "head_dim", 0, 2147483647.0, &hd) != 0)
        hd = -1;
    if (!is_gpt2(in) && hd != in->cfg.head_dim) {
        io_err(err, err_len, "%s: measured at another shape: \"shape\".\"head_dim\" is not %d "
               "(this run's; 0: channels / heads)", path, in->cfg.head_dim);
        goto out;
    }
    key_of(in, want);
    for (int i = 0; i < K_NUM; i++)
        if (get_int(shape, KEY_NAMES[i], 0, 2147483647.0, &v) != 0 || v != want[i]) {
            io_err(err, err_len, "%s: measured at another shape: \"shape\".\"%s\" is not %lld "
                   "(this run's)", path, KEY_NAMES[i], want[i]);
            goto out;
        }
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}

int opcost_file_read(const char *path, const PlanInput *in, char *device, size_t device_len,
                     OpCosts *out, char *err, size_t err_len)
{
    char *text;
    size_t len;
    int rc = io_read_whole(path, 1, OPCOST_FILE_MAX_BYTES, "an op-cost file", &text, &len, err,
                           err_len);
    if (rc == 0) rc = parse(text, len, path, in, device, device_len, out, err, err_len);
    free(text);
    return rc;
}

int opcost_file_write(const char *path, const char *device, const PlanInput *in,
                      const OpCosts *oc, char *err, size_t err_len)
{
    long long k[K_NUM];
    if (opcost_block(oc) != planner_block(in)) { /* its op names would be another block's */
        io_err(err, err_len, "%s: the costs are of block %s, this run's is %s", path,
               opcost_block(oc)->family, planner_block(in)->family);
        return -1;
    }
    key_of(in, k);
    cJSON *root = cJSON_CreateObject(), *shape = cJSON_CreateObject(), *ops = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "train_gpt op costs");
    cJSON_AddNumberToObject(root, "version", OPCOST_FILE_VERSION);
    cJSON_AddStringToObject(root, "device", device);
    cJSON_AddStringToObject(root, "dtype", dtype_name(in->dtype));
    for (int i = 0; i < K_NUM; i++) cJSON_AddNumberToObject(shape, KEY_NAMES[i], (double)k[i]);
    if (!is_gpt2(in)) {
        long long ka[KA_NUM];
        arch_key_of(in, ka);
        cJSON_AddStringToObject(root, "arch", config_arch_name(in->cfg.arch));
        for (int i = 0; i < KA_NUM; i++)
            cJSON_AddNumberToObject(shape, ARCH_KEY_NAMES[i], (double)ka[i]);
        if (in->cfg.head_dim) cJSON_AddNumberToObject(shape, "head_dim", in->cfg.head_dim);
    }
    cJSON_AddItemToObject(root, "shape", shape);
    cJSON_AddNumberToObject(root, "reps", oc->reps);
    for (int op = 0; op < opcost_n_ops(oc); op++)
        cJSON_AddNumberToObject(ops, opcost_op_name(oc, op), (double)opcost_get(oc, op));
    cJSON_AddItemToObject(root, "ops_ns", ops);
    cJSON *cp = cJSON_CreateObject();
    cJSON_AddNumberToObject(cp, "latency_ns", (double)oc->copy_lat_ns);
    cJSON_AddNumberToObject(cp, "bytes_per_s", (double)oc->copy_bw);
    cJSON_AddItemToObject(root, "copy", cp);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) {
        io_err(err, err_len, "%s: out of host memory", path);
        return -1;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash && slash != dir) {
        *slash = '\0';
        rc = io_mkdirs(dir, err, err_len);
    }
    if (rc == 0) rc = io_write_file(path, text, strlen(text), "\n", 1, err, err_len);
    cJSON_free(text);
    return rc;
}
