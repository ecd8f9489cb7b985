/* tests/e2e/interop/test_hf_tokenizer.c — the tokenizer identity (model file
 * header words 28/29, docs/file-formats.md) across a Hugging Face folder
 * (scripts/hf_tokenizer.py, interop/hf_tokenizer.c):
 *  - a tiny llama trained on Llama 3's tokens exports with its tokenizer.json
 *    (--tokenizer FILE, or found in the user's cache by the identity the
 *    model records: the same folder byte for byte) and comes back, through
 *    import_hf.py and through ./train_gpt --init-from FOLDER then --save,
 *    as the same bytes (cmp), words 28/29 included; training from the
 *    folder on another tokenizer's shards is then refused naming both
 *    identities (exit 1);
 *  - --tokenizer with another tokenizer's file, or --tokenizer-dir holding
 *    one, is refused naming the flag, the file and both identities (exit 1,
 *    nothing written);
 *  - GPT-2: a model trained on GPT-2's tokens exports GPT-2's vocab.json and
 *    merges.txt and comes back with GPT-2's identity (94c264325d7a03de), both
 *    ways; a model recording none comes back recording none.
 * The identities are the dataset manifests' ("id"), an independent computation
 * (data/dataset_manifest.c, in ./tokenize) of the same rule. Needs numpy (the
 * scripts) and Llama 3's tokenizer.json (scripts/fetch_tokenizers.sh). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/source.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

#define TINY_LLAMA                                                                             \
    "--arch llama --layers 1 --channels 16 --heads 2 --kv-heads 1 --ffn 32 --vocab 128256 "   \
    "--seq-len 16 --batch 2 --device cpu --threads 1 --lr 1e-3 --seed 7"
#define TINY_GPT2                                                                              \
    "--layers 1 --channels 32 --heads 2 --seq-len 16 --batch 2 --device cpu --threads 1 "     \
    "--lr 1e-3 --seed 7"
#define GPT2_ID UINT64_C(0x94c264325d7a03de)

/* Run cmd (stdout and stderr together); the exit status, the text in *out. */
static int run(const char *cmd, char **out)
{
    int rc = tu_run_output(cmd, out, out);
    if (!*out) *out = strdup("");
    return rc;
}

/* 12 KB of tinyshakespeare as d/PREFIX_* with the flag's tokenizer. */
static void tokenize(const char *d, const char *prefix, const char *flag)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "head -c 12000 '%s' | %s --quiet %s --out %s/%s --shard-size 1500 "
             "--val-tokens 0 -", TU_SHAKESPEARE, tc_tokenize_bin(), flag, d, prefix);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
}

/* The "id" the dataset manifest d/PREFIX.manifest.json records. */
static uint64_t manifest_id(const char *d, const char *prefix)
{
    char name[256];
    snprintf(name, sizeof name, "%s.manifest.json", prefix);
    char *m = tu_read_file(tu_path(d, name), NULL);
    cr_assert(m, "%s/%s missing", d, name);
    const char *t = strstr(m, "\"tokenizer\"");
    const char *id = t ? strstr(t, "\"id\"") : NULL;
    cr_assert(id, "no tokenizer id in %s", m);
    id = strchr(id + 4, '"');
    uint64_t v = id ? strtoull(id + 1, NULL, 16) : 0;
    free(m);
    return v;
}

/* Words 28 (low) and 29 (high) of a model file. */
static uint64_t header_id(const char *path)
{
    size_t n;
    char *b = tu_read_file(path, &n);
    cr_assert(b && n >= 1024, "%s: no model file", path);
    uint32_t w[2];
    memcpy(w, b + 4 * 28, 8);
    free(b);
    return (uint64_t)w[1] << 32 | w[0];
}

/* Train 2 steps on d/PREFIX's shards into d/NAME. */
static void train(const char *d, const char *model, const char *prefix, const char *name)
{
    char args[8192], p[600];
    snprintf(args, sizeof args, "%s --train-data '%s/%s_train_*.bin' --steps 2 --save %s/%s",
             model, d, prefix, d, name);
    snprintf(p, sizeof p, "%s/%s.train", d, name);
    int rc = tc_run(NULL, args, p);
    cr_assert_eq(rc, 0, "train %s: exit %d", name, rc);
}

/* d/MODEL -> d/HF (export flags) -> d/BACK (import_hf.py) and, through
 * --init-from the folder and --save, d/BACK.c: both cmp-equal to MODEL. */
static void round_trip(const char *d, const char *model, const char *flags, const char *hf,
                       const char *arch, const char *prefix)
{
    char cmd[8192], *out;
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/export_hf.py %s/%s %s/%s %s", d, model,
             d, hf, flags);
    cr_assert_eq(run(cmd, &out), 0, "%s:\n%s", cmd, out);
    free(out);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/import_hf.py %s/%s %s/%s.back", d, hf, d,
             hf);
    cr_assert_eq(run(cmd, &out), 0, "%s:\n%s", cmd, out);
    free(out);
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/%s", d, model);
    snprintf(b, sizeof b, "%s/%s.back", d, hf);
    cr_expect(tc_files_equal(a, b), "%s: import_hf.py's file differs from %s (id %016" PRIx64
              ", back %016" PRIx64 ")", hf, model, header_id(a), header_id(b));
    char args[8192], p[600];
    snprintf(args, sizeof args, "%s --init-from %s/%s --device cpu --threads 1 --steps 0 "
             "--seq-len 16 --batch 2 --train-data '%s/%s_train_*.bin' --save %s/%s.c", arch, d,
             hf, d, prefix, d, hf);
    snprintf(p, sizeof p, "%s/%s.c", d, hf);
    cr_assert_eq(tc_run(NULL, args, p), 0, "--init-from %s", hf);
    snprintf(b, sizeof b, "%s/%s.c", d, hf);
    cr_expect(tc_files_equal(a, b), "%s: --init-from's --save differs from %s (id %016" PRIx64
              ", back %016" PRIx64 ")", hf, model, header_id(a), header_id(b));
}

Test(hf_tokenizer, llama3_round_trip_keeps_the_identity, .timeout = 300)
{
    char *d = tu_tempdir(), flag[4400], cmd[8192], *out;
    const char *json = tu_source_path(&SOURCE_LLAMA3, 0);
    snprintf(flag, sizeof flag, "--tokenizer '%s'", json);
    tokenize(d, "ts", flag);
    uint64_t llama3 = manifest_id(d, "ts");
    train(d, TINY_LLAMA, "ts", "m.bin");
    cr_assert_eq(header_id(tu_path(d, "m.bin")), llama3, "the model does not record its data's "
                 "tokenizer");

    /* --tokenizer FILE, and found by its identity in the cache: the found
     * export is the first's folder byte for byte, so it comes back as the
     * first does (import_hf.py and --init-from are deterministic: the same
     * files in, the same bytes out) */
    round_trip(d, "m.bin", flag, "hf", "--arch llama", "ts");
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/export_hf.py %s/m.bin %s/hf_found", d, d);
    cr_assert_eq(run(cmd, &out), 0, "%s:\n%s", cmd, out);
    free(out);
    static const char *const files[] = {"config.json", "model.safetensors", "tokenizer.json"};
    for (int i = 0; i < 3; i++) {
        char a[600], b[600];
        snprintf(a, sizeof a, "%s/hf/%s", d, files[i]);
        snprintf(b, sizeof b, "%s/hf_found/%s", d, files[i]);
        cr_expect(tc_files_equal(a, b), "hf_found/%s differs from hf/%s", files[i], files[i]);
    }
    size_t a, b;
    char *x = tu_read_file(json, &a), *y = tu_read_file(tu_path(d, "hf/tokenizer.json"), &b);
    cr_expect(x && y && a == b && memcmp(x, y, a) == 0, "hf/tokenizer.json is not %s", json);
    free(y);
    y = tu_read_file(tu_path(d, "hf_found/tokenizer.json"), &b);
    cr_expect(x && y && a == b && memcmp(x, y, a) == 0, "hf_found/tokenizer.json is not %s",
              json);
    free(x), free(y);

    /* shards of another tokenizer, after the import: refused, both named */
    tokenize(d, "cl", "--encoding cl100k_base");
    snprintf(cmd, sizeof cmd, "%s --init-from %s/hf --train-data '%s/cl_train_*.bin' "
             "--steps 1", TINY_LLAMA, d, d);
    char p[600];
    snprintf(p, sizeof p, "%s/other", d);
    int rc = tc_run(NULL, cmd, p);
    char *err = tu_read_file(tu_path(d, "other.err"), NULL);
    char want[40];
    snprintf(want, sizeof want, "%016" PRIx64, llama3);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, err ? err : "");
    cr_expect(err && strstr(err, "--train-data") && strstr(err, "cl100k_base") &&
                  strstr(err, want), "message: %s", err ? err : "");
    free(err);
    tu_remove_tree(d);
}

Test(hf_tokenizer, another_tokenizer_is_refused_by_name, .timeout = 240)
{
    char *d = tu_tempdir(), flag[4400], cmd[8192], *out;
    snprintf(flag, sizeof flag, "--tokenizer '%s'", tu_source_path(&SOURCE_LLAMA3, 0));
    tokenize(d, "ts", flag);
    train(d, TINY_LLAMA, "ts", "m.bin");
    char want[40];
    snprintf(want, sizeof want, "%016" PRIx64, manifest_id(d, "ts"));
    /* source_find itself: tu_source_path keeps one path for all non-GPT-2 sources */
    static char found[SOURCE_MAX_FILES][SOURCE_PATH_MAX];
    char from[SOURCE_PATH_MAX + 200], why[8192];
    cr_assert_eq(source_find(&SOURCE_CL100K, NULL, found, from, sizeof from, why, sizeof why), 0,
                 "%s", why);
    const char *other = found[0];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/export_hf.py %s/m.bin %s/hf --tokenizer "
             "'%s'", d, d, other);
    int rc = run(cmd, &out);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "--tokenizer") && strstr(out, other) && strstr(out, want) &&
                  strstr(out, "trained with tokenizer"), "message: %s", out);
    cr_expect(!tu_exists(tu_path(d, "hf")), "a refused export wrote %s/hf", d);
    free(out);
    /* a --tokenizer-dir of another tokenizer's files */
    snprintf(cmd, sizeof cmd, "mkdir %s/tdir && cp '%s' %s/tdir/", d, other, d);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/export_hf.py %s/m.bin %s/hf "
             "--tokenizer-dir %s/tdir", d, d, d);
    rc = run(cmd, &out);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "--tokenizer-dir") && strstr(out, want), "message: %s", out);
    cr_expect(!tu_exists(tu_path(d, "hf")), "a refused export wrote %s/hf", d);
    free(out);
    tu_remove_tree(d);
}

Test(hf_tokenizer, gpt2_folders_keep_gpt2s_identity, .timeout = 240)
{
    char *d = tu_tempdir(), cmd[8192];
    tokenize(d, "g", "");
    cr_assert_eq(manifest_id(d, "g"), GPT2_ID);
    train(d, TINY_GPT2, "g", "m.bin");
    cr_assert_eq(header_id(tu_path(d, "m.bin")), GPT2_ID);
    round_trip(d, "m.bin", "", "hf", "", "g");
    cr_expect(tu_exists(tu_path(d, "hf/vocab.json")) && tu_exists(tu_path(d, "hf/merges.txt")),
              "GPT-2's tokenizer files not written");
    cr_expect_eq(header_id(tu_path(d, "hf.c")), GPT2_ID);
    /* a model recording none (an llm.c file): none again after the trip */
    snprintf(cmd, sizeof cmd, "cp %s/m.bin %s/z.bin && printf '\\0\\0\\0\\0\\0\\0\\0\\0' | dd "
             "of=%s/z.bin bs=1 seek=112 conv=notrunc status=none", d, d, d);
    cr_assert_eq(tu_run(cmd), 0);
    cr_assert_eq(header_id(tu_path(d, "z.bin")), 0);
    char *out;
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/export_hf.py %s/z.bin %s/hz && "
             "/usr/bin/python3 scripts/import_hf.py %s/hz %s/hz.back", d, d, d, d);
    cr_assert_eq(run(cmd, &out), 0, "%s", out);
    free(out);
    cr_expect(tc_files_equal(tu_path(d, "z.bin"), tu_path(d, "hz.back")),
              "a model recording no tokenizer came back recording %016" PRIx64,
              header_id(tu_path(d, "hz.back")));
    cr_expect(tu_exists(tu_path(d, "hz/vocab.json")), "GPT-2's files not written for it");
    tu_remove_tree(d);
}
