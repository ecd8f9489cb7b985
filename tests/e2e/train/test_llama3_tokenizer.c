/* tests/e2e/train/test_llama3_tokenizer.c — a model trained on Llama 3's
 * tokens, end to end (docs/tokenizer.md):
 *
 *  - ./tokenize --tokenizer tokenizer.json writes uint32 shards (version 7:
 *    128,256 ids do not fit uint16) and a manifest recording the file's
 *    sha256 under the name "llama3" (not GPT-2's digests);
 *  - a tiny --arch llama model trains on them, and a run stopped at step 3
 *    and resumed gives the unbroken run's losses bit for bit;
 *  - --generate --tokenizer decodes the samples with that tokenizer: the
 *    text starts with the prompt, is valid UTF-8, and re-encodes to ids
 *    that decode back to it; the prompt's chat tokens stay their text;
 *  - --generate with no tokenizer flag on that model reads and prints ids,
 *    with a note naming --tokenizer; refusals (exit 2): --encoding
 *    cl100k_base names both identities;
 *    a small tokenizer.json (256 byte tokens) gives --hellaswag a version-1
 *    eval file of its ids;
 *  - ./tokenize --hellaswag --tokenizer writes a version-2 eval file (ids
 *    past 65534: " pancakes" is 80960) whose records decode back to the
 *    jsonl's texts; a --vocab 128256 llama model scores it, and scores a
 *    version-1 file and its version-2 widening (by hand here) identically,
 *    and two ZeRO-3 ranks splitting the version-2 examples give one
 *    process's scores bit for bit; a version-2 file recording another
 *    tokenizer is refused, both ids named;
 *  - a --encoding cl100k_base dataset's manifest names cl100k_base and
 *    the rank file's published sha256.
 * The tokenizer file comes from data/source.h's chain
 * ($TRAIN_GPT_LLAMA3_TOKENIZER, the user's cache: scripts/fetch_tokenizers.sh). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/source.h"
#include "eval/eval_file.h"
#include "interop/model_file.h"
#include "model/config.h"
#include "data/tokenizer.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

#define LLAMA_MODEL                                                                            \
    "--arch llama --layers 1 --channels 16 --heads 2 --kv-heads 1 --ffn 32 --vocab 128256 "   \
    "--seq-len 16 --batch 2 --device cpu --threads 1 --lr 1e-3 --seed 7"

/* Run; returns the exit status, stdout and stderr (malloc'd) in *out, *err. */
static int run(const char *d, const char *name, const char *args, char **out, char **err)
{
    char p[700], e[800];
    snprintf(p, sizeof p, "%s/%s", d, name);
    int rc = tc_run(NULL, args, p);
    snprintf(e, sizeof e, "%s.err", p);
    *err = tu_read_file(e, NULL);
    snprintf(e, sizeof e, "%s.out", p);
    *out = tu_read_file(e, NULL);
    return rc;
}

/* 12 KB of tinyshakespeare tokenized with Llama 3's tokenizer into d/ts_*. */
static const char *tokenize_llama(const char *d)
{
    const char *json = tu_source_path(&SOURCE_LLAMA3, 0);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "head -c 12000 '%s' | %s --quiet --tokenizer '%s' --out %s/ts "
             "--shard-size 1500 --val-tokens 0 -", TU_SHAKESPEARE, tc_tokenize_bin(), json, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    return json;
}

static int valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        int k = s[i] < 0x80 ? 0 : (s[i] & 0xE0) == 0xC0 ? 1 : (s[i] & 0xF0) == 0xE0 ? 2
                : (s[i] & 0xF8) == 0xF0 ? 3 : -1;
        if (k < 0 || i + (size_t)k >= n + (k == 0)) return 0;
        for (int j = 1; j <= k; j++)
            if ((s[i + j] & 0xC0) != 0x80) return 0;
        i += (size_t)k + 1;
    }
    return 1;
}

Test(llama3_tokenizer, tokenize_train_resume_generate, .timeout = 240)
{
    char *d = tu_tempdir(), args[8192], *out, *err;
    const char *json = tokenize_llama(d);

    /* uint32 shards, and the manifest names this tokenizer by its sha256 */
    size_t n;
    char *shard = tu_read_file(tu_path(d, "ts_train_000000.bin"), &n);
    cr_assert(shard && n > 1024);
    int32_t magic, version;
    memcpy(&magic, shard, 4), memcpy(&version, shard + 4, 4);
    cr_expect(magic == 20240801 && version == 7, "header %d %d: not uint32 shards", magic,
              version);
    free(shard);
    char *man = tu_read_file(tu_path(d, "ts.manifest.json"), NULL);
    cr_assert(man);
    cr_expect(strstr(man, "\"llama3\"") && strstr(man, SOURCE_LLAMA3.sha256[0]) &&
                  !strstr(man, GPT2_ENCODER_SHA256),
              "manifest does not record Llama 3's tokenizer: %s", man);
    free(man);

    /* unbroken: 6 steps; broken: 3, then resumed to 6 */
    snprintf(args, sizeof args, "%s --train-data '%s/ts_train_*.bin' --steps 6 --log %s/a.jsonl "
             "--save %s/a.bin", LLAMA_MODEL, d, d, d);
    int rc = run(d, "a", args, &out, &err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err ? err : "");
    free(out), free(err);
    snprintf(args, sizeof args, "%s --train-data '%s/ts_train_*.bin' --steps 3 --checkpoint-dir "
             "%s/ck --log %s/b1.jsonl", LLAMA_MODEL, d, d, d);
    rc = run(d, "b1", args, &out, &err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err ? err : "");
    free(out), free(err);
    snprintf(args, sizeof args, "%s --train-data '%s/ts_train_*.bin' --steps 6 --checkpoint-dir "
             "%s/ck --resume --log %s/b2.jsonl", LLAMA_MODEL, d, d, d);
    rc = run(d, "b2", args, &out, &err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err ? err : "");
    free(out), free(err);
    int sa[16], sb[16];
    double la[16], lb[16];
    int na = tc_log_losses(tu_path(d, "a.jsonl"), sa, la, NULL, 16);
    int nb = tc_log_losses(tu_path(d, "b2.jsonl"), sb, lb, NULL, 16);
    cr_assert(na == 6 && nb >= 3, "logged %d and %d steps", na, nb);
    for (int i = 0; i < nb; i++) {
        int k = 0;
        while (k < na && sa[k] != sb[i]) k++;
        cr_assert(k < na, "step %d of the resumed run is not in the unbroken one", sb[i]);
        cr_expect(la[k] == lb[i], "step %d: loss %.9g resumed, %.9g unbroken", sb[i], lb[i],
                  la[k]);
    }

    /* samples decoded with the tokenizer: greedy, 12 tokens, a chat prompt */
    const char *prompt = "<|start_header_id|>user<|end_header_id|>ROMEO:";
    snprintf(args, sizeof args, "--arch llama --init-from %s/a.bin --device cpu --threads 1 --generate 12 "
             "--temperature 0 --stop-at-eot 0 --tokenizer '%s' --prompt '%s'", d, json, prompt);
    rc = run(d, "gen", args, &out, &err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err ? err : "");
    /* stdout: a note on --seq-len, then the sample (the prompt first) */
    const char *text = out ? strstr(out, prompt) : NULL;
    cr_assert(text, "sample: %s", out ? out : "");
    size_t len = strlen(text);
    cr_expect(len > strlen(prompt) + 1 && valid_utf8((const unsigned char *)text, len),
              "sample is not valid UTF-8 text: %s", text);
    /* re-encoded (special tokens as ids), the text decodes to itself; the
     * prompt's chat tokens are one id each */
    Tokenizer tk;
    char why[4096];
    TokenizerChoice tc = {.hf_json = json, .allow_special = 1, .quiet = 1};
    cr_assert_eq(tokenizer_open(&tk, &tc, why, sizeof why), 0, "%s", why);
    TokenIds ids = {0};
    TokenText back = {0};
    cr_assert_eq(tokenizer_encode(&tk, (const uint8_t *)text, len - 1, &ids, why, sizeof why), 0);
    cr_expect(ids.len > 4 && ids.data[0] >= 128000 && ids.data[2] >= 128000,
              "chat tokens not encoded as special ids");
    cr_assert_eq(tokenizer_decode(&tk, ids.data, ids.len, &back, why, sizeof why), 0);
    cr_expect(back.len == len - 1 && memcmp(back.data, text, len - 1) == 0, "round trip differs");
    free(ids.data), free(back.data), free(out), free(err);
    tokenizer_free(&tk);
    tu_remove_tree(d);
}

Test(llama3_tokenizer, refusals_name_the_tokenizer, .timeout = 180)
{
    char *d = tu_tempdir(), args[8192], *out, *err;
    tokenize_llama(d);
    snprintf(args, sizeof args, "%s --train-data '%s/ts_train_*.bin' --steps 1 --save %s/m.bin",
             LLAMA_MODEL, d, d);
    int rc = run(d, "train", args, &out, &err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err ? err : "");
    free(out), free(err);

    /* no flag: GPT-2's is not the model's, so ids in and out, with a note */
    snprintf(args, sizeof args, "--arch llama --init-from %s/m.bin --device cpu --generate 2 "
             "--prompt '128000 40'", d);
    rc = run(d, "noflag", args, &out, &err);
    cr_expect_eq(rc, 0, "exit %d: %s", rc, err ? err : "");
    cr_expect(err && strstr(err, "--tokenizer") && strstr(err, "not GPT-2's"), "message: %s",
              err ? err : "");
    cr_expect(out && strstr(out, "128000 40 "), "ids: %s", out ? out : "");
    free(out), free(err);

    /* another tokenizer named: both identities in the message */
    snprintf(args, sizeof args, "--arch llama --init-from %s/m.bin --device cpu --generate 4 --encoding "
             "cl100k_base", d);
    rc = run(d, "cl100k", args, &out, &err);
    cr_expect_eq(rc, 2, "exit %d: %s", rc, err ? err : "");
    cr_expect(err && strstr(err, "--encoding cl100k_base") && strstr(err, "the model records"),
              "message: %s", err ? err : "");
    free(out), free(err);

    char cmd[8192];
    tu_write_text(tu_path(d, "hs.jsonl"), "{\"ctx\": \"A man\", \"endings\": [\"a\", \"b\", "
                  "\"c\", \"d\"], \"label\": 1}\n");
    /* a byte-level tokenizer.json of 256 tokens fits: "A man" is its bytes */
    char json[16384];
    size_t k = (size_t)snprintf(json, sizeof json, "{\"version\":\"1.0\",\"added_tokens\":[],"
                                "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"ByteLevel\","
                                "\"add_prefix_space\":false},\"post_processor\":null,"
                                "\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":"
                                "\"BPE\",\"vocab\":{");
    for (unsigned b = 0; b < 256; b++) { /* GPT-2's bytes_to_unicode */
        int printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
        unsigned n = 0;
        for (unsigned c = 0; c < b && !printable; c++)
            n += !((c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || c >= 0xae);
        k += (size_t)snprintf(json + k, sizeof json - k, "%s\"\\u%04x\":%u", b ? "," : "",
                              printable ? b : 0x100 + n, b);
    }
    snprintf(json + k, sizeof json - k, "},\"merges\":[]}}");
    tu_write_text(tu_path(d, "bytes.json"), json);
    snprintf(cmd, sizeof cmd, "%s --quiet --hellaswag %s/hs.jsonl --tokenizer %s/bytes.json "
             "--out %s/hs 2> %s/hs.err", tc_tokenize_bin(), d, d, d, d);
    rc = tu_run(cmd);
    err = tu_read_file(tu_path(d, "hs.err"), NULL);
    cr_expect_eq(rc, 0, "exit %d: %s", rc, err ? err : "");
    free(err);
    size_t n;
    char *hs = tu_read_file(tu_path(d, "hs.bin"), &n);
    const uint16_t want[] = {'A', ' ', 'm', 'a', 'n'};
    int found = 0;
    for (size_t i = 1024; hs && i + sizeof want <= n && !found; i += 2)
        found = memcmp(hs + i, want, sizeof want) == 0;
    cr_expect(found, "the context's byte ids are not in the eval file");
    free(hs);

    /* a tiktoken dataset records the encoding */
    snprintf(cmd, sizeof cmd, "head -c 2000 '%s' | %s --quiet --encoding cl100k_base --out %s/cl "
             "--val-tokens 0 -", TU_SHAKESPEARE, tc_tokenize_bin(), d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    char *man = tu_read_file(tu_path(d, "cl.manifest.json"), NULL);
    cr_expect(man && strstr(man, "\"cl100k_base\"") && strstr(man, SOURCE_CL100K.sha256[0]),
              "manifest: %s", man ? man : "");
    free(man);
    tu_remove_tree(d);
}

/* The dump of --eval-file path scored by d/model.bin (TRAIN_GPT_TEST_EVAL_DUMP). */
static char *score(const char *d, const char *name)
{
    char args[4096], env[800], p[700];
    snprintf(args, sizeof args, "--arch llama --init-from %s/model.bin --steps 0 --seq-len 32 "
             "--batch 4 --train-data '%s/ts_train_*.bin' --val-every 0 --device cpu --threads 2 "
             "--eval-file %s/%s.bin", d, d, d, name);
    snprintf(env, sizeof env, "TRAIN_GPT_TEST_EVAL_DUMP=%s/%s.dump", d, name);
    snprintf(p, sizeof p, "%s/%s.run", d, name);
    int rc = tc_run(env, args, p);
    snprintf(p, sizeof p, "%s/%s.run.err", d, name);
    char *why = tu_read_file(p, NULL);
    cr_assert_eq(rc, 0, "%s: exit %d: %s", args, rc, why ? why : "");
    free(why);
    snprintf(p, sizeof p, "%s/%s.dump", d, name);
    return tu_read_file(p, NULL);
}

/* Version 1's bytes widened to version 2's, by the layout in eval_file.h. */
static void widen(const char *from, const char *to)
{
    size_t n;
    char *b = tu_read_file(from, &n);
    cr_assert(b && n > 1024 && (n - 1024) % 2 == 0);
    char *w = malloc(1024 + 2 * (n - 1024));
    memcpy(w, b, 1024);
    int32_t h[4];
    memcpy(h, b, sizeof h);
    cr_assert_eq(h[1], 1, "%s is not version 1", from);
    h[1] = 2, h[3] *= 2;
    memcpy(w, h, sizeof h);
    for (size_t k = 0, at = 1024; at < n; k++, at += 2) {
        uint16_t v;
        memcpy(&v, b + at, 2);
        uint32_t x = v == 65535 ? 0xFFFFFFFFu : v; /* the marker; ids here are < 65535 */
        memcpy(w + 1024 + 4 * k, &x, 4);
    }
    /* each record's length field (its second value) counts bytes: doubled */
    for (size_t at = 1024; at < 1024 + 2 * (n - 1024);) {
        uint32_t len;
        memcpy(&len, w + at + 4, 4);
        len *= 2;
        memcpy(w + at + 4, &len, 4);
        at += len;
    }
    tu_write_file(to, w, 1024 + 2 * (n - 1024));
    free(w), free(b);
}

Test(llama3_tokenizer, hellaswag_version_2_round_trips_and_scores, .timeout = 240)
{
    char *d = tu_tempdir(), cmd[8192], why[512];
    const char *json = tu_source_path(&SOURCE_LLAMA3, 0);
    static const char *ctx[2] = {"A woman is making pancakes in a kitchen. She",
                                 "A boy rides a skateboard down the street. He"};
    static const char *end[2][4] = {
        {"flips the pancakes with a spatula.", "rides a skateboard down the hill.",
         "pours the batter into a frying pan.", "feeds her kitten."},
        {"jumps over a curb.", "eats pancakes.", "falls off the board.", "waves at a friend."}};
    FILE *f = fopen(tu_path(d, "hs.jsonl"), "w");
    for (int i = 0; i < 2; i++)
        fprintf(f, "{\"ctx\": \"%s\", \"endings\": [\"%s\", \"%s\", \"%s\", \"%s\"], "
                "\"label\": %d}\n", ctx[i], end[i][0], end[i][1], end[i][2], end[i][3], i);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s --quiet --hellaswag %s/hs.jsonl --tokenizer '%s' --out %s/hs",
             tc_tokenize_bin(), d, json, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    EvalSet es;
    cr_assert_eq(eval_file_read(tu_path(d, "hs.bin"), &es, why, sizeof why), 0, "%s", why);
    cr_expect_eq(es.version, 2, "Llama 3's ids past 65534 need version 2");
    cr_assert_eq(es.num_examples, 2);
    Tokenizer tk;
    TokenizerChoice tc = {.hf_json = json, .quiet = 1};
    cr_assert_eq(tokenizer_open(&tk, &tc, why, sizeof why), 0, "%s", why);
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(es.ex[i].label, i);
        for (int part = -1; part < 4; part++) {
            const EvalExample *e = &es.ex[i];
            size_t off = part < 0 ? e->ctx_off : e->comp_off[part];
            int len = part < 0 ? e->ctx_len : e->comp_len[part];
            int32_t ids[64];
            cr_assert(len <= 64);
            for (int k = 0; k < len; k++) ids[k] = (int32_t)es.tokens[off + (size_t)k];
            TokenText back = {0};
            cr_assert_eq(tokenizer_decode(&tk, ids, (size_t)len, &back, why, sizeof why), 0);
            char want[128];
            snprintf(want, sizeof want, "%s%s", part < 0 ? "" : " ",
                     part < 0 ? ctx[i] : end[i][part]);
            cr_expect(back.len == strlen(want) && memcmp(back.data, want, back.len) == 0,
                      "example %d part %d: decoded '%.*s', expected '%s'", i, part,
                      (int)back.len, (const char *)back.data, want);
            free(back.data);
        }
    }
    tokenizer_free(&tk);

    /* a --vocab 128256 llama model, random; one narrow layer (its size is
     * the vocabulary's: every run below allocates and reads it) */
    GPTConfig cfg = tu_tiny_config();
    cfg.arch = ARCH_LLAMA;
    cfg.vocab_size = cfg.padded_vocab = 128256;
    cfg.max_seq_len = 32;
    cfg.num_layers = 1;
    cfg.channels = 16;
    cfg.num_heads = 2;
    cfg.kv_heads = 1;
    cfg.ffn = 32;
    cfg.rope_theta = 10000.0f;
    cfg.norm_eps = 1e-5f;
    float *p = tu_random_params(&cfg, 5);
    cr_assert_eq(model_file_save(tu_path(d, "model.bin"), &cfg, p, why, sizeof why), 0, "%s",
                 why);
    free(p);
    tokenize_llama(d);
    char *v2 = score(d, "hs");
    cr_assert(v2);
    int lines = 0;
    for (const char *q = v2; *q; q++) lines += *q == '\n';
    cr_expect_eq(lines, 8, "one dump line per completion: %s", v2);
    cr_expect(es.tokenizer_id != 0, "version 2 records the tokenizer's identity");
    /* two ZeRO-3 ranks split the version-2 examples: the same lines, bitwise */
    {
        snprintf(cmd, sizeof cmd, "TRAIN_GPT_TEST_EVAL_DUMP=%s/z3.dump timeout 120 " TC_MPIRUN
                 " -np 2 %s --arch llama --init-from %s/model.bin --steps 0 --seq-len 32 "
                 "--batch 4 --train-data '%s/ts_train_*.bin' --val-every 0 --device cpu "
                 "--threads 2 --zero 3 --eval-file %s/hs.bin > %s/z3.out 2>&1 && cat "
                 "%s/z3.dump.rank0 %s/z3.dump.rank1 > %s/z3.dump", d, tc_bin(), d, d, d, d, d,
                 d, d);
        cr_expect_eq(tu_run(cmd), 0, "%s", cmd);
        char *z3 = tu_read_file(tu_path(d, "z3.dump"), NULL);
        cr_expect(z3 && strcmp(z3, v2) == 0, "ZeRO-3 over 2 ranks: %s\none process: %s",
                  z3 ? z3 : "(none)", v2);
        free(z3);
    }
    /* the same file recording another tokenizer: refused, both named */
    {
        size_t n;
        char *raw = tu_read_file(tu_path(d, "hs.bin"), &n), args[4096], p2[700];
        raw[16] ^= 1; /* header[4]: the identity's low half */
        tu_write_file(tu_path(d, "other.bin"), raw, n);
        free(raw);
        snprintf(args, sizeof args, "--arch llama --init-from %s/model.bin --steps 0 --seq-len 32 "
                 "--train-data '%s/ts_train_*.bin' --device cpu --eval-file %s/other.bin", d, d, d);
        snprintf(p2, sizeof p2, "%s/other.run", d);
        int rc = tc_run(NULL, args, p2);
        snprintf(p2, sizeof p2, "%s/other.run.err", d);
        char *msg = tu_read_file(p2, NULL);
        cr_expect(rc != 0 && msg && strstr(msg, "other.bin: made with tokenizer") &&
                  strstr(msg, "but the model was trained on tokenizer"), "exit %d: %s", rc,
                  msg ? msg : "");
        free(msg);
    }

    /* the same examples with their ids folded below 65535 (a version-1
     * file), and that file widened by hand: the same scores, bit for bit */
    EvalSet small = {0};
    for (int i = 0; i < 2; i++) {
        const EvalExample *e = &es.ex[i];
        int32_t t[5][64];
        const int32_t *cp[4];
        int lens[4];
        for (int part = -1; part < 4; part++) {
            size_t off = part < 0 ? e->ctx_off : e->comp_off[part];
            int len = part < 0 ? e->ctx_len : e->comp_len[part];
            for (int k = 0; k < len; k++) t[part + 1][k] = (int32_t)(es.tokens[off + k] % 65535);
            if (part >= 0) cp[part] = t[part + 1], lens[part] = len;
        }
        cr_assert_eq(eval_set_append(&small, e->label, t[0], e->ctx_len, cp, lens, why,
                                     sizeof why), 0, "%s", why);
    }
    cr_assert_eq(small.version, 1);
    cr_assert_eq(eval_file_write(tu_path(d, "v1.bin"), &small, why, sizeof why), 0, "%s", why);
    eval_set_free(&small);
    char v1path[700], wpath[700];
    snprintf(v1path, sizeof v1path, "%s/v1.bin", d);
    snprintf(wpath, sizeof wpath, "%s/wide.bin", d);
    widen(v1path, wpath);
    EvalSet w;
    cr_assert_eq(eval_file_read(wpath, &w, why, sizeof why), 0, "%s", why);
    cr_expect_eq(w.version, 2);
    eval_set_free(&w);
    char *a = score(d, "v1"), *b = score(d, "wide");
    cr_assert(a && b);
    cr_expect_str_eq(a, b, "version 1 and its widening score differently");
    cr_expect_str_neq(a, v2, "folding the ids changed no score: ids past 65534 were not used");
    free(a), free(b), free(v2);
    eval_set_free(&es);
    tu_remove_tree(d);
}
