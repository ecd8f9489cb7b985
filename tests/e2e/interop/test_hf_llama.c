/* tests/e2e/interop/test_hf_llama.c — scripts/export_hf.py and import_hf.py for the
 * Llama family (Llama, Qwen2 with q/k/v biases, Qwen3 with q/k norms and, as
 * Qwen3-0.6B, a head_dim that is not hidden_size / num_attention_heads, Llama
 * 3's RoPE scaling, tied and untied heads):
 *  - a model file exported to a Hugging Face folder and imported back is the
 *    same file byte for byte, for each family, fp32 (version 3) and bf16
 *    (version 5), one model.safetensors or shards with their index;
 *  - dev/reference/hf_llama_check.py, which reads the folder by Hugging Face's
 *    tensor names and runs its conventions (rotate_half RoPE and its llama3
 *    rule, RMSNorm with rms_norm_eps, repeat_kv) in float64, gives the loss
 *    of ./train_gpt --init-from's val loss on the same batch within 1e-5, and
 *    ./train_gpt --init-from the folder itself (interop/hf_folder.c, also for
 *    GPT-2 folders) the model file's val loss exactly;
 *  - what the C model cannot compute is refused by name, exit 1, one line, no
 *    file written: config values (hidden_act, rope_scaling types, sliding
 *    windows, mlp_bias, an odd head_dim, unknown keys, other families) and an export
 *    no family fits; --init-from a folder refuses the same config values, and
 *    one without config.json names import_hf.py.
 * Most runs of the scripts are forks of one Python (tests/lib/script_runs.h);
 * sharded_export_round_trips starts them as plain processes. Needs Debian's
 * python3-torch (the reference) and numpy (the scripts). */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interop/model_file.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/script_runs.h"
#include "tests/lib/test_util.h"

typedef struct {
    const char *name;
    int untied, qkv_bias, qk_norm, kv_heads;
    float factor; /* Llama 3 scaling: low 2, high 8, original 64 at theta 100 */
    int head_dim; /* 0: C / NH */
} Family;

/* qwen3_hd: 4 heads of 16 at C 32 (attention 64 wide), tied, as Qwen3-0.6B's
 * 16 heads of 128 at 1024 */
static const Family FAMILIES[] = {
    {"llama", 0, 0, 0, 2, 0, 0},         {"llama_untied", 1, 0, 0, 2, 0, 0},
    {"qwen2", 0, 1, 0, 2, 0, 0},         {"qwen3", 1, 0, 1, 1, 0, 0},
    {"llama3_scaled", 0, 0, 0, 4, 4, 0}, {"qwen3_hd", 0, 0, 1, 2, 0, 16},
};
#define NFAM (sizeof FAMILIES / sizeof FAMILIES[0])

/* L=2, C=32, NH=4, F=64, V=200, maxT=16; the
 * scaled family's theta 100 puts its four wavelengths (6.3 to 199 positions)
 * in each of the llama3 rule's three ranges (< 64/8, between, > 64/2). */
static GPTConfig family_config(const Family *f)
{
    GPTConfig c = tu_tiny_config();
    c.arch = ARCH_LLAMA;
    c.vocab_size = 200; /* the byte shards' tokens (ASCII) lie below it */
    c.padded_vocab = config_pad_vocab(200); /* 56 padded rows, which the export drops */
    c.max_seq_len = 16;
    c.kv_heads = f->kv_heads;
    c.ffn = 64;
    c.untied = f->untied;
    c.qkv_bias = f->qkv_bias;
    c.qk_norm = f->qk_norm;
    c.head_dim = f->head_dim;
    c.norm_eps = f->qk_norm ? 1e-6f : 0; /* 0: the default, as train_gpt writes it */
    if (f->factor > 0) {
        c.rope_theta = 100.0f;
        c.rope_factor = f->factor;
        c.rope_low_freq = 2.0f;
        c.rope_high_freq = 8.0f;
        c.rope_original_max_pos = 64;
    }
    return c;
}

/* Random weights (std 0.1, norms near 1); the padded rows of the head, as of
 * the embedding, zero, as train_gpt's initialisation leaves them. */
static void save_model(const char *path, const GPTConfig *cfg, uint64_t seed, int version)
{
    char err[256];
    float *p = tu_random_params(cfg, seed);
    if (cfg->untied) {
        size_t C = (size_t)cfg->channels, head = (size_t)cfg->padded_vocab * C;
        memset(p + head + (size_t)cfg->vocab_size * C, 0,
               sizeof(float) * (size_t)(cfg->padded_vocab - cfg->vocab_size) * C);
    }
    cr_assert_eq(model_file_save_as(path, cfg, p, version, err, sizeof err), 0, "%s", err);
    free(p);
}

/* Run cmd (stdout and stderr together); returns its exit status, the text in *out. */
static int run(const char *cmd, char **out)
{
    int rc = tu_run_output(cmd, out, out);
    if (!*out) *out = strdup("");
    return rc;
}

static void export_import(const char *d, const char *model, const char *hf, const char *flags,
                          const char *import_flags, const char *back)
{
    char cmd[4096], *out;
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/export_hf.py %s %s/%s %s", model, d, hf,
             flags);
    cr_assert_eq(run(cmd, &out), 0, "%s:\n%s", cmd, out);
    free(out);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/import_hf.py %s/%s %s/%s %s", d, hf, d,
             back, import_flags);
    cr_assert_eq(run(cmd, &out), 0, "%s:\n%s", cmd, out);
    free(out);
}

/* Each family's export and import run as forks of one Python
 * (tests/lib/script_runs.h): 24 runs, one import of numpy. */
Test(hf_llama, each_family_round_trips_byte_for_byte, .timeout = 240)
{
    char *d = tu_tempdir(), model[600], hf[64], back[64], cmd[4096], *out;
    static const char *arch[] = {"LlamaForCausalLM", "LlamaForCausalLM", "Qwen2ForCausalLM",
                                 "Qwen3ForCausalLM", "LlamaForCausalLM", "Qwen3ForCausalLM"};
    ScriptRuns sr = script_runs_new(d);
    for (size_t i = 0; i < NFAM; i++) {
        GPTConfig cfg = family_config(&FAMILIES[i]);
        for (int version = 3; version <= 5; version += 2) {
            snprintf(model, sizeof model, "%s/%s_v%d.bin", d, FAMILIES[i].name, version);
            save_model(model, &cfg, 40 + i, version);
            snprintf(cmd, sizeof cmd, "%s %s/hf_%s_v%d", model, d, FAMILIES[i].name, version);
            script_runs_add(&sr, "scripts/export_hf.py", cmd);
            snprintf(cmd, sizeof cmd, "%s/hf_%s_v%d %s/back_%s_v%d.bin %s", d, FAMILIES[i].name,
                     version, d, FAMILIES[i].name, version, version == 5 ? "--dtype bf16" : "");
            script_runs_add(&sr, "scripts/import_hf.py", cmd);
        }
    }
    script_runs_go(&sr, 0);
    for (size_t i = 0; i < NFAM; i++) {
        for (int version = 3; version <= 5; version += 2) {
            int k = (int)(2 * (2 * i + (version == 5)));
            for (int j = k; j <= k + 1; j++) {
                out = script_runs_output(&sr, j);
                cr_assert_eq(script_runs_rc(&sr, j), 0, "%s %s:\n%s", FAMILIES[i].name,
                             j == k ? "export" : "import", out);
                free(out);
            }
            snprintf(model, sizeof model, "%s/%s_v%d.bin", d, FAMILIES[i].name, version);
            snprintf(hf, sizeof hf, "hf_%s_v%d", FAMILIES[i].name, version);
            snprintf(back, sizeof back, "back_%s_v%d.bin", FAMILIES[i].name, version);
            cr_expect(tc_files_equal(model, tu_path(d, back)), "%s version %d: the import "
                      "differs from the model file", FAMILIES[i].name, version);
            snprintf(cmd, sizeof cmd, "grep -q '\"%s\"' %s/%s/config.json && grep -q "
                     "'\"torch_dtype\": \"%s\"' %s/%s/config.json && grep -q '\"%s\"' "
                     "%s/%s/model.safetensors", arch[i], d, hf,
                     version == 3 ? "float32" : "bfloat16", d, hf,
                     version == 3 ? "F32" : "BF16", d, hf);
            cr_expect_eq(tu_run(cmd), 0, "%s: config.json or dtypes: %s", hf, cmd);
        }
    }
    script_runs_free(&sr);
    tu_remove_tree(d);
}

/* Above --max-shard-size the weights are model-0000k-of-0000n.safetensors
 * and model.safetensors.index.json (no model.safetensors); imported back,
 * byte for byte. 20kB: each layer's tensors (12 kB of w_gateup) part ways. */
Test(hf_llama, sharded_export_round_trips, .timeout = 120)
{
    char *d = tu_tempdir(), model[600], cmd[4096], *out;
    GPTConfig cfg = family_config(&FAMILIES[1]);
    snprintf(model, sizeof model, "%s/m.bin", d);
    save_model(model, &cfg, 7, 3);
    export_import(d, model, "hf", "--max-shard-size 20kB", "", "back.bin");
    cr_expect(tc_files_equal(model, tu_path(d, "back.bin")), "the sharded import differs");
    snprintf(cmd, sizeof cmd, "cd %s/hf && ls model-0000*-of-0000*.safetensors | wc -l && "
             "test ! -e model.safetensors && grep -c '\"model.layers.1.mlp.up_proj.weight\": "
             "\"model-' model.safetensors.index.json", d);
    cr_assert_eq(run(cmd, &out), 0, "%s", out);
    int shards = atoi(out);
    cr_expect(shards >= 3 && shards <= 9, "%d shards:\n%s", shards, out);
    free(out);
    tu_remove_tree(d);
}

/* train_gpt's val loss (the first val batch, B=2, T=16, at --steps 0) of
 * model. */
static double train_gpt_val_loss(const char *d, const char *model, const char *tag)
{
    char args[8192], prefix[700], log[700];
    snprintf(log, sizeof log, "%s/%s.jsonl", d, tag);
    snprintf(args, sizeof args, "%s --arch llama --init-from %s --steps 0 --log %s",
             tc_data_args(d), model, log);
    snprintf(prefix, sizeof prefix, "%s/%s", d, tag);
    int rc = tc_run("", args, prefix);
    char out_path[720];
    snprintf(out_path, sizeof out_path, "%s.err", prefix);
    char *e = tu_read_file(out_path, NULL);
    cr_assert_eq(rc, 0, "%s: exit %d: %s", tag, rc, e ? e : "");
    free(e);
    cJSON *j = tc_log_last_with(log, "val_loss");
    cr_assert_not_null(j, "%s: no val_loss in %s", tag, log);
    double v = cJSON_GetObjectItemCaseSensitive(j, "val_loss")->valuedouble;
    cJSON_Delete(j);
    return v;
}

/* The losses of the folders d/hf[0..n) by dev/reference/hf_llama_check.py,
 * one start of torch for them all (the first val batch, B=2, T=16). */
static void reference_losses(const char *d, const char *const *hf, int n, double *loss)
{
    char cmd[8192], *out;
    int len = snprintf(cmd, sizeof cmd, "/usr/bin/python3 dev/reference/hf_llama_check.py %s/%s "
                       "%s/val.bin 2 16", d, hf[0], d);
    for (int i = 1; i < n; i++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %s/%s", d, hf[i]);
    cr_assert_lt((size_t)len, sizeof cmd);
    cr_assert_eq(run(cmd, &out), 0, "%s:\n%s", cmd, out);
    cr_assert(strstr(out, "hf_llama_check: PASS"), "%s", out);
    const char *l = out;
    for (int i = 0; i < n; i++) {
        l = strstr(l, "hf_llama_check: loss ");
        cr_assert_not_null(l, "%s: no loss for %s:\n%s", cmd, hf[i], out);
        l += strlen("hf_llama_check: loss ");
        loss[i] = atof(l);
    }
    free(out);
}

/* The exported folder, read by Hugging Face's names and conventions, gives
 * train_gpt's loss (fp32 in C against float64: measured differences below
 * 1e-6 at these sizes); each family, a bf16 file (BF16 tensors), and the
 * sharded folder (its loss the unsharded one's, exactly). A random model's
 * loss is near ln 200 = 5.3. The seven exports run as forks of one Python
 * (tests/lib/script_runs.h), the reference's seven losses in one start of
 * torch. */
Test(hf_llama, hf_reference_gives_train_gpts_val_loss, .timeout = 600)
{
    char *d = tu_tempdir(), model[600], cmd[4096], *out;
    char hf[NFAM + 1][64];
    const char *hfs[NFAM + 1];
    double ref[NFAM + 1];
    tc_make_shards(d, 1, 2000);
    ScriptRuns sr = script_runs_new(d);
    for (size_t i = 0; i < NFAM; i++) {
        GPTConfig cfg = family_config(&FAMILIES[i]);
        int version = i == 2 ? 5 : 3;
        snprintf(model, sizeof model, "%s/%s.bin", d, FAMILIES[i].name);
        save_model(model, &cfg, 60 + i, version);
        snprintf(hf[i], sizeof hf[i], "hf_%s", FAMILIES[i].name);
        snprintf(cmd, sizeof cmd, "%s %s/%s", model, d, hf[i]);
        script_runs_add(&sr, "scripts/export_hf.py", cmd);
    }
    /* family 1's model again, as bf16 tensors in shards */
    snprintf(hf[NFAM], sizeof hf[NFAM], "sharded");
    snprintf(cmd, sizeof cmd, "%s/%s.bin %s/sharded --max-shard-size 20kB --dtype bf16", d,
             FAMILIES[1].name, d);
    script_runs_add(&sr, "scripts/export_hf.py", cmd);
    script_runs_go(&sr, 0);
    for (size_t i = 0; i <= NFAM; i++) {
        out = script_runs_output(&sr, (int)i);
        cr_assert_eq(script_runs_rc(&sr, (int)i), 0, "export of %s:\n%s", hf[i], out);
        free(out);
        hfs[i] = hf[i];
    }
    reference_losses(d, hfs, NFAM + 1, ref);
    for (size_t i = 0; i < NFAM; i++) {
        int version = i == 2 ? 5 : 3;
        snprintf(model, sizeof model, "%s/%s.bin", d, FAMILIES[i].name);
        double ours = train_gpt_val_loss(d, model, FAMILIES[i].name);
        cr_expect(fabs(ref[i] - ours) <= 1e-5 && ref[i] > 4 && ref[i] < 8, "%s (version %d): "
                  "Hugging Face's convention %.9f, train_gpt %.9f", FAMILIES[i].name, version,
                  ref[i], ours);
        /* --init-from the folder itself (interop/hf_folder.c): the same parameters */
        char tag[64];
        snprintf(tag, sizeof tag, "%s_folder", FAMILIES[i].name);
        cr_expect_eq(train_gpt_val_loss(d, tu_path(d, hf[i]), tag), ours,
                     "%s: --init-from the folder differs from the model file", hf[i]);
        if (i != 1) continue;
        /* bf16 tensors, in shards: the reference and train_gpt on the folder agree */
        double ours16 = train_gpt_val_loss(d, tu_path(d, "sharded"), "sharded_folder");
        cr_expect(fabs(ref[NFAM] - ours16) <= 1e-5 && ref[NFAM] != ref[i],
                  "sharded bf16: %.9f vs %.9f", ref[NFAM], ours16);
    }
    script_runs_free(&sr);
    tu_remove_tree(d);
}

/* Set config.json's keys (a JSON object json[i]) in folder hf[i], or drop
 * the key named by "-KEY", for i < n: one start of Python for them all. */
static void edit_configs(int n, char (*hf)[700], const char *const *json)
{
    char cmd[16384];
    int len = snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c 'import json, sys\n"
                       "for p, e in zip(sys.argv[1::2], sys.argv[2::2]):\n"
                       "    p += \"/config.json\"; c = json.load(open(p))\n"
                       "    c.pop(e[1:]) if e.startswith(\"-\") else c.update(json.loads(e))\n"
                       "    json.dump(c, open(p, \"w\"))'");
    for (int i = 0; i < n; i++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %s '%s'", hf[i], json[i]);
    cr_assert_lt((size_t)len, sizeof cmd);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
}

static void edit_config(const char *hf, const char *json)
{
    char one[1][700];
    snprintf(one[0], sizeof one[0], "%s", hf);
    edit_configs(1, one, &json);
}

/* The refusals' import_hf.py runs, as forks of one Python
 * (tests/lib/script_runs.h): run k imports d/xk, a copy of folder `src`
 * (its config.json edited by the caller), into d/xk.bin. */
static int add_refused_import(ScriptRuns *sr, const char *d, int k, const char *src,
                              const char *flags)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "rm -rf %s/x%d %s/x%d.bin && cp -r %s/%s %s/x%d", d, k, d, k, d,
             src, d, k);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/x%d %s/x%d.bin %s", d, k, d, k, flags);
    return script_runs_add(sr, "scripts/import_hf.py", cmd);
}

/* Run k of add_refused_import: exit 1, one line with `want`, no traceback,
 * no OUT. */
static void expect_import_refused(const ScriptRuns *sr, const char *d, int k, const char *edit,
                                  const char *flags, const char *want)
{
    char *out = script_runs_output(sr, k), name[32];
    int rc = script_runs_rc(sr, k), lines = 0;
    for (const char *p = out; *p; p++) lines += *p == '\n';
    snprintf(name, sizeof name, "x%d.bin", k);
    cr_expect(rc == 1 && strstr(out, want) && lines == 1 && !strstr(out, "Traceback") &&
              !tu_exists(tu_path(d, name)),
              "%s (%s): exit %d, want '%s' in one line:\n%s", edit, flags, rc, want, out);
    free(out);
}

/* The imports and exports run as forks of one Python (tests/lib/script_runs.h),
 * each with its own exit status and output. */
Test(hf_llama, what_the_model_cannot_compute_is_refused_by_name, .timeout = 240)
{
    char *d = tu_tempdir(), model[600], cmd[4096], *out;
    GPTConfig cfg = family_config(&FAMILIES[0]);
    snprintf(model, sizeof model, "%s/m.bin", d);
    save_model(model, &cfg, 5, 3);
    GPTConfig q = family_config(&FAMILIES[2]);
    save_model(tu_path(d, "q.bin"), &q, 6, 3);
    ScriptRuns sr = script_runs_new(d);
    snprintf(cmd, sizeof cmd, "%s %s/hf", model, d);
    script_runs_add(&sr, "scripts/export_hf.py", cmd);
    snprintf(cmd, sizeof cmd, "%s/q.bin %s/hfq", d, d);
    script_runs_add(&sr, "scripts/export_hf.py", cmd);
    script_runs_go(&sr, 0);
    for (int k = 0; k < 2; k++) {
        out = script_runs_output(&sr, k);
        cr_assert_eq(script_runs_rc(&sr, k), 0, "export %d: %s", k, out);
        free(out);
    }
    script_runs_free(&sr);
    struct {
        const char *src, *edit, *flags, *want;
    } c[] = {
        {"hf", "{\"hidden_act\": \"gelu\"}", "", "hidden_act 'gelu' is not supported"},
        {"hf", "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}}", "",
         "rope_scaling type 'yarn' is not supported (llama3 only)"},
        {"hf", "{\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}}", "",
         "rope_scaling type 'linear' is not supported"},
        {"hf", "{\"mlp_bias\": true}", "", "mlp_bias true is not supported"},
        {"hf", "{\"head_dim\": 7}", "", "head_dim 7 is odd"},
        {"hf", "{\"head_dim\": 16}", "", "q_proj.weight has shape (32, 32), expected (64, 32)"},
        {"hf", "{\"model_type\": \"mistral\"}", "", "model_type 'mistral' is not one of"},
        {"hf", "{\"sliding_window_pattern\": 6}", "",
         "key 'sliding_window_pattern' is not understood by this importer"},
        {"hf", "{\"attention_bias\": true}", "", "self_attn.q_proj.bias is missing"},
        {"hf", "{\"tie_word_embeddings\": false}", "",
         "lm_head.weight is missing and tie_word_embeddings is false"},
        {"hfq", "{\"use_sliding_window\": true}", "", "use_sliding_window true is not supported"},
        {"hfq", "{\"layer_types\": [\"full_attention\", \"sliding_attention\"]}", "",
         "holds sliding attention"},
        {"hfq", NULL, "--heads 7", "--heads 7:"},
    };
    int nc = (int)(sizeof c / sizeof c[0]), ne = 0;
    char folders[16][700];
    const char *edits[16];
    sr = script_runs_new(d);
    for (int i = 0; i < nc; i++) {
        add_refused_import(&sr, d, i, c[i].src, c[i].flags);
        if (!c[i].edit) continue;
        snprintf(folders[ne], sizeof folders[ne], "%s/x%d", d, i);
        edits[ne++] = c[i].edit;
    }
    /* an unknown key the user vouches for is taken */
    snprintf(cmd, sizeof cmd, "rm -rf %s/y && cp -r %s/hf %s/y", d, d, d);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(folders[ne], sizeof folders[ne], "%s/y", d);
    edits[ne++] = "{\"sliding_window_pattern\": 6}";
    edit_configs(ne, folders, edits); /* before the runs below read them */
    snprintf(cmd, sizeof cmd, "%s/y %s/y.bin --allow-key sliding_window_pattern", d, d);
    int allow = script_runs_add(&sr, "scripts/import_hf.py", cmd);
    /* export: q/k/v biases with q/k norms fit no Hugging Face family */
    GPTConfig both = family_config(&FAMILIES[3]);
    both.qkv_bias = 1;
    save_model(tu_path(d, "both.bin"), &both, 8, 3);
    snprintf(cmd, sizeof cmd, "%s/both.bin %s/hfb", d, d);
    int hfb = script_runs_add(&sr, "scripts/export_hf.py", cmd);
    snprintf(cmd, sizeof cmd, "%s %s/hfs --max-shard-size 12parsecs", model, d);
    int parsecs = script_runs_add(&sr, "scripts/export_hf.py", cmd);
    script_runs_go(&sr, 0);
    for (int i = 0; i < nc; i++) expect_import_refused(&sr, d, i, c[i].edit, c[i].flags, c[i].want);
    out = script_runs_output(&sr, allow);
    cr_expect(script_runs_rc(&sr, allow) == 0 && tc_files_equal(tu_path(d, "y.bin"), model),
              "--allow-key: %s", out);
    free(out);
    out = script_runs_output(&sr, hfb);
    cr_expect_eq(script_runs_rc(&sr, hfb), 1, "%s", out);
    cr_expect(strstr(out, "qkv bias together with qk-norm fits none of Llama, Qwen2, Qwen3") &&
              !tu_exists(tu_path(d, "hfb")), "%s", out);
    free(out);
    out = script_runs_output(&sr, parsecs);
    cr_expect_eq(script_runs_rc(&sr, parsecs), 1, "%s", out);
    cr_expect(strstr(out, "--max-shard-size: '12parsecs' is not a size"), "%s", out);
    free(out);
    script_runs_free(&sr);
    tu_remove_tree(d);
}

/* ./train_gpt --init-from a Hugging Face folder reads it in C: a GPT-2
 * folder (export_hf.py's, Conv1D weights transposed; and OpenAI's style: no
 * "transformer." prefix, mask buffers, BF16) gives the model file's val loss
 * exactly; a missing shard, and a config.json value the model cannot compute,
 * are refused by name (exit 1); a folder without config.json names
 * import_hf.py. */
Test(hf_llama, init_from_a_folder, .timeout = 120)
{
    char *d = tu_tempdir(), args[8192], cmd[4096], *out;
    tc_make_shards(d, 1, 2000);
    GPTConfig g = tu_tiny_config();
    g.vocab_size = 200, g.padded_vocab = 256, g.max_seq_len = 16;
    save_model(tu_path(d, "g.bin"), &g, 9, 3);
    save_model(tu_path(d, "g16.bin"), &g, 9, 5);
    GPTConfig ls = family_config(&FAMILIES[1]);
    save_model(tu_path(d, "ls.bin"), &ls, 11, 3);
    GPTConfig l = family_config(&FAMILIES[0]);
    save_model(tu_path(d, "l.bin"), &l, 10, 3);
    /* OpenAI's style (below), written from export_hf.py's folder */
    tu_write_text(tu_path(d, "openai.py"),
                  "import sys, json, os, shutil\n"
                  "sys.path.insert(0, 'scripts')\n"
                  "import numpy as np, hf_safetensors as h\n"
                  "src, dst = sys.argv[1], sys.argv[2]\n"
                  "sd = h.read_file(src + '/model.safetensors', sys.exit)\n"
                  "sd = {k[len('transformer.'):]: v for k, v in sd.items()}\n"
                  "for l in range(2):\n"
                  "    sd['h.%d.attn.bias' % l] = np.tril(np.ones((1, 1, 16, 16), np.float32))\n"
                  "head, blobs = h.file_bytes(sd, 'BF16')\n"
                  "os.mkdir(dst)\n"
                  "shutil.copy(src + '/config.json', dst)\n"
                  "open(dst + '/model.safetensors', 'wb').write(head + b''.join(blobs))\n");
    /* the five Python runs as forks of one (tests/lib/script_runs.h), in order */
    ScriptRuns sr = script_runs_new(d);
    static const char *jobs[][2] = {
        {"scripts/export_hf.py", "%s/g.bin %s/hfg"},
        {"scripts/export_hf.py", "%s/g16.bin %s/hfg16"},
        {"%s/openai.py", "%s/hfg16 %s/openai"},
        {"scripts/export_hf.py", "%s/ls.bin %s/hfs --max-shard-size 20kB"},
        {"scripts/export_hf.py", "%s/l.bin %s/hfl"},
    };
    for (int k = 0; k < 5; k++) {
        char script[700];
        snprintf(script, sizeof script, jobs[k][0], d);
        snprintf(cmd, sizeof cmd, jobs[k][1], d, d);
        script_runs_add(&sr, script, cmd);
    }
    script_runs_go(&sr, 0);
    for (int k = 0; k < 5; k++) {
        out = script_runs_output(&sr, k);
        cr_assert_eq(script_runs_rc(&sr, k), 0, "%s %s: %s", jobs[k][0], jobs[k][1], out);
        free(out);
    }
    script_runs_free(&sr);
    snprintf(args, sizeof args, "%s --init-from %s/g.bin --steps 0 --log %s/g.jsonl",
             tc_data_args(d), d, d);
    cr_assert_eq(tc_run("", args, tu_path(d, "g")), 0);
    snprintf(args, sizeof args, "%s --init-from %s/hfg --steps 0 --log %s/hfg.jsonl",
             tc_data_args(d), d, d);
    cr_assert_eq(tc_run("", args, tu_path(d, "hfg")), 0);
    cJSON *a = tc_log_last_with(tu_path(d, "g.jsonl"), "val_loss");
    cJSON *b = tc_log_last_with(tu_path(d, "hfg.jsonl"), "val_loss");
    cr_assert(a && b);
    cr_expect_eq(cJSON_GetObjectItem(a, "val_loss")->valuedouble,
                 cJSON_GetObjectItem(b, "val_loss")->valuedouble, "GPT-2 folder differs");
    cJSON_Delete(b);
    /* OpenAI's style: GPT2Model's names (no "transformer."), the attention-mask
     * buffers present, BF16 tensors: the bf16 model file's loss */
    snprintf(args, sizeof args, "%s --init-from %s/g16.bin --steps 0 --log %s/g16.jsonl",
             tc_data_args(d), d, d);
    cr_assert_eq(tc_run("", args, tu_path(d, "g16")), 0);
    snprintf(args, sizeof args, "%s --init-from %s/openai --steps 0 --log %s/openai.jsonl",
             tc_data_args(d), d, d);
    cr_assert_eq(tc_run("", args, tu_path(d, "openai")), 0);
    b = tc_log_last_with(tu_path(d, "openai.jsonl"), "val_loss");
    cJSON *a16 = tc_log_last_with(tu_path(d, "g16.jsonl"), "val_loss");
    cr_assert(a16 && b);
    cr_expect_eq(cJSON_GetObjectItem(a16, "val_loss")->valuedouble,
                 cJSON_GetObjectItem(b, "val_loss")->valuedouble, "OpenAI-style folder differs");
    cr_expect_neq(cJSON_GetObjectItem(a16, "val_loss")->valuedouble,
                  cJSON_GetObjectItem(a, "val_loss")->valuedouble, "bf16 changed nothing?");
    cJSON_Delete(a), cJSON_Delete(b), cJSON_Delete(a16);
    /* a shard the index names is missing */
    snprintf(cmd, sizeof cmd, "rm %s/hfs/model-00002-of-*", d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    snprintf(args, sizeof args, "%s --arch llama --init-from %s/hfs --steps 0", tc_data_args(d), d);
    tc_run_expect(d, args, 1, "model-00002-of-");
    /* refusals */
    edit_config(tu_path(d, "hfl"), "{\"hidden_act\": \"gelu\"}");
    snprintf(args, sizeof args, "%s --arch llama --init-from %s/hfl --steps 0", tc_data_args(d), d);
    tc_run_expect(d, args, 1, "config.json: hidden_act 'gelu' is not supported");
    edit_config(tu_path(d, "hfl"), "{\"hidden_act\": \"silu\", \"rope_parameters\": {}}");
    tc_run_expect(d, args, 1, "key 'rope_parameters' is not understood by this reader");
    snprintf(args, sizeof args, "%s --arch llama --init-from %s --steps 0", tc_data_args(d), d);
    tc_run_expect(d, args, 1, "a folder without config.json");
    tu_remove_tree(d);
}
