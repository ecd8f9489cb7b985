/* tests/e2e/eval/test_hellaswag_cli.c — --eval-file / --eval-every through ./train_gpt,
 * and ./tokenize --hellaswag's errors.
 *
 *  - the reference model of tests/data/eval_reference_tiny.bin as an llm.c
 *    model file, scored by ./train_gpt --steps 0 --eval-file: the log line
 *    {"eval":"hellaswag","acc","acc_norm","n"} with the PyTorch counts, and
 *    every completion in the TRAIN_GPT_TEST_EVAL_DUMP file within 1e-5;
 *  - --eval-every N during training: a line at steps 0, N, 2N, ... and at
 *    the end; 2 ranks (mpirun) give the counts 1 process gives (21
 *    examples: ranks score 11 and 10);
 *  - errors: a token outside the model's vocabulary, a completion longer
 *    than --seq-len, --eval-every without --eval-file, a missing file; bad
 *    jsonl lines named by file and line, shard flags refused with
 *    --hellaswag, and nothing written on failure. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eval/eval_file.h"
#include "interop/model_file.h"
#include "base/rng.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

#define JSONL "tests/data/hellaswag_tiny.jsonl"
#define REFERENCE "tests/data/eval_reference_tiny.bin"
#define MPIRUN "timeout 120 " TC_MPIRUN

typedef struct {
    double acc, acc_norm, n, correct, correct_norm;
    int step;
} EvalLine;

/* The log's eval lines, in order; returns how many. */
static int eval_lines(const char *log, EvalLine *out, int max)
{
    FILE *f = fopen(log, "r");
    if (!f) return 0;
    char line[4096];
    int k = 0;
    while (k < max && fgets(line, sizeof line, f)) {
        cJSON *j = cJSON_Parse(line);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "eval");
        if (cJSON_IsString(e) && strcmp(e->valuestring, "hellaswag") == 0) {
#define NUM(name) cJSON_GetObjectItemCaseSensitive(j, name)->valuedouble
            out[k] = (EvalLine){NUM("acc"), NUM("acc_norm"), NUM("n"), NUM("correct"),
                                NUM("correct_norm"), (int)NUM("step")};
#undef NUM
            k++;
        }
        cJSON_Delete(j);
    }
    fclose(f);
    return k;
}

/* n examples of tokens < 256 (byte models), contexts of 1..10 tokens and
 * completions of 1..8, labels cycling; written to path. */
static void write_byte_eval(const char *path, int n, uint64_t seed, int long_completion)
{
    EvalSet es = {0};
    char err[512];
    for (int i = 0; i < n; i++) {
        int32_t ctx[10], comp[4][20];
        const int32_t *cp[4] = {comp[0], comp[1], comp[2], comp[3]};
        int cl = 1 + (int)(rng_next(&seed) % 10), len[4];
        for (int t = 0; t < cl; t++) ctx[t] = (int32_t)(rng_next(&seed) % 256);
        for (int c = 0; c < 4; c++) {
            len[c] = long_completion && i == n - 1 && c == 2 ? 20 : 1 + (int)(rng_next(&seed) % 8);
            for (int t = 0; t < len[c]; t++) comp[c][t] = (int32_t)(rng_next(&seed) % 256);
        }
        cr_assert_eq(eval_set_append(&es, i % 4, ctx, cl, cp, len, err, sizeof err), 0, "%s", err);
    }
    cr_assert_eq(eval_file_write(path, &es, err, sizeof err), 0, "%s", err);
    eval_set_free(&es);
}

Test(hellaswag_cli, eval_at_end_matches_pytorch, .timeout = 300)
{
    char *d = tu_tempdir(), path[600], args[4096], cmd[4096], err[512], env[700];
    size_t len;
    char *ref = tu_read_file(REFERENCE, &len);
    cr_assert_not_null(ref);
    int32_t h[32];
    memcpy(h, ref, sizeof h);
    GPTConfig cfg = {.num_layers = h[2], .num_heads = h[3], .channels = h[4],
                     .vocab_size = h[5], .padded_vocab = h[6], .max_seq_len = h[7]};
    float *p = tu_random_params(&cfg, (uint64_t)h[9]);
    snprintf(path, sizeof path, "%s/model.bin", d);
    cr_assert_eq(model_file_save(path, &cfg, p, err, sizeof err), 0, "%s", err);
    free(p);
    tc_make_shards(d, 1, 400);
    const char *tok = getenv("TRAIN_GPT_TOKENIZE_BIN");
    snprintf(cmd, sizeof cmd, "%s --quiet --hellaswag " JSONL " --out %s/hs",
             tok ? tok : "./tokenize", d);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(args, sizeof args, "--init-from %s/model.bin --steps 0 --seq-len 64 --batch 4 "
             "--train-data '%s/train_*.bin' --val-every 0 --device cpu --threads 2 "
             "--eval-file %s/hs.bin --log %s/log.jsonl", d, d, d, d);
    snprintf(env, sizeof env, "TRAIN_GPT_TEST_EVAL_DUMP=%s/dump.txt", d);
    snprintf(path, sizeof path, "%s/run", d);
    cr_assert_eq(tc_run(env, args, path), 0, "train_gpt %s failed", args);
    snprintf(path, sizeof path, "%s/log.jsonl", d);
    EvalLine e[4];
    cr_assert_eq(eval_lines(path, e, 4), 1, "one eval line (at the end)");
    cr_expect(e[0].n == 20 && e[0].correct == h[13] && e[0].correct_norm == h[14] &&
              e[0].step == 0, "log: n %g correct %g/%g step %d; PyTorch %d/%d", e[0].n,
              e[0].correct, e[0].correct_norm, e[0].step, h[13], h[14]);
    cr_expect(fabs(e[0].acc - h[13] / 20.0) < 1e-12 && fabs(e[0].acc_norm - h[14] / 20.0) < 1e-12);
    snprintf(path, sizeof path, "%s/run.out", d);
    cr_expect(tc_file_has(path, "hellaswag acc") && tc_file_has(path, "9 of 80 completions do not"
              " fit --seq-len 64"), "stdout lacks the eval line or the truncation note");
    /* the dump: one line per completion, against the reference's T = 64 block */
    snprintf(path, sizeof path, "%s/dump.txt", d);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    int lines = 0, i, c, used, l;
    double s, m, worst = 0;
    while (fscanf(f, "%d %d %d %d %lf %lf", &i, &c, &used, &l, &s, &m) == 6) {
        const char *rec = ref + 136 + 24 * (4 * i + c);
        int32_t ru, rl;
        double rs, rm;
        memcpy(&ru, rec, 4), memcpy(&rl, rec + 4, 4), memcpy(&rs, rec + 8, 8), memcpy(&rm, rec + 16, 8);
        cr_expect(ru == used && rl == l, "example %d completion %d: row differs", i, c);
        worst = fmax(worst, fmax(fabs(s - rs) / fabs(rs), fabs(m - rm) / fabs(rm)));
        lines++;
    }
    fclose(f);
    cr_expect_eq(lines, 80);
    cr_expect(worst <= 1e-5, "worst relative difference %.3g", worst);
    free(ref);
    tu_remove_tree(d);
}

Test(hellaswag_cli, eval_every_and_two_ranks, .timeout = 300)
{
    char *d = tu_tempdir(), path[600], args[4096], cmd[8192];
    tc_make_shards(d, 1, 400);
    snprintf(path, sizeof path, "%s/bytes.bin", d);
    write_byte_eval(path, 21, 7, 0);
    EvalLine e[8], e2[8];
    /* during training: steps 0 and 2, and the end (4) */
    snprintf(args, sizeof args, "%s --steps 4 --eval-every 2 --eval-file %s/bytes.bin "
             "--log %s/train.jsonl", tc_model_args(d), d, d);
    snprintf(path, sizeof path, "%s/train", d);
    cr_assert_eq(tc_run(NULL, args, path), 0, "%s", args);
    snprintf(path, sizeof path, "%s/train.jsonl", d);
    cr_assert_eq(eval_lines(path, e, 8), 3);
    for (int k = 0; k < 3; k++)
        cr_expect(e[k].step == 2 * k && e[k].n == 21, "line %d: step %d n %g", k, e[k].step,
                  e[k].n);
    /* 1 process against 2 ranks, the same (initial) model */
    snprintf(args, sizeof args, "%s --steps 0 --eval-file %s/bytes.bin --batch 3 --log %s/one.jsonl",
             tc_model_args(d), d, d);
    snprintf(path, sizeof path, "%s/one", d);
    cr_assert_eq(tc_run(NULL, args, path), 0);
    snprintf(cmd, sizeof cmd, MPIRUN " -np 2 %s %s --steps 0 --eval-file %s/bytes.bin --batch 3 "
             "--log %s/two.jsonl > %s/two.out 2> %s/two.err", tc_bin(), tc_model_args(d), d, d,
             d, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    snprintf(path, sizeof path, "%s/one.jsonl", d);
    cr_assert_eq(eval_lines(path, e, 8), 1);
    snprintf(path, sizeof path, "%s/two.jsonl", d);
    cr_assert_eq(eval_lines(path, e2, 8), 1);
    cr_expect(e[0].n == 21 && e2[0].n == 21 && e[0].correct == e2[0].correct &&
              e[0].correct_norm == e2[0].correct_norm, "1 process %g/%g/%g, 2 ranks %g/%g/%g",
              e[0].n, e[0].correct, e[0].correct_norm, e2[0].n, e2[0].correct,
              e2[0].correct_norm);
    tu_remove_tree(d);
}

/* 3 ranks split n examples in ceil(n/3) runs: 22 -> 8, 8, 6; 4 -> 2, 2 and
 * none (a rank with nothing to score still joins the sum); 1 -> 1, 0, 0.
 * Each count scored by 3 ranks must equal one process's, exactly. */
Test(hellaswag_cli, three_ranks_uneven_split_equals_one_process, .timeout = 120)
{
    char *d = tu_tempdir(), path[600], args[4096], cmd[8192];
    tc_make_shards(d, 1, 400);
    const int counts[] = {22, 4, 1};
    for (int k = 0; k < 3; k++) {
        int n = counts[k];
        snprintf(path, sizeof path, "%s/e%d.bin", d, n);
        write_byte_eval(path, n, 11 + (uint64_t)n, 0);
        snprintf(args, sizeof args, "%s --steps 0 --eval-file %s --log %s/one%d.jsonl",
                 tc_model_args(d), path, d, n);
        snprintf(cmd, sizeof cmd, "%s/one%d", d, n);
        cr_assert_eq(tc_run(NULL, args, cmd), 0, "%s", args);
        snprintf(cmd, sizeof cmd, MPIRUN " -np 3 %s %s --steps 0 --eval-file %s --log "
                 "%s/three%d.jsonl > %s/three%d.out 2>&1", tc_bin(), tc_model_args(d), path, d, n,
                 d, n);
        cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
        EvalLine e1, e3;
        snprintf(path, sizeof path, "%s/one%d.jsonl", d, n);
        cr_assert_eq(eval_lines(path, &e1, 1), 1);
        snprintf(path, sizeof path, "%s/three%d.jsonl", d, n);
        cr_assert_eq(eval_lines(path, &e3, 1), 1);
        cr_expect(e1.n == n && e3.n == n && e1.correct == e3.correct &&
                  e1.correct_norm == e3.correct_norm, "%d examples: 1 process %g/%g/%g, 3 ranks "
                  "%g/%g/%g", n, e1.n, e1.correct, e1.correct_norm, e3.n, e3.correct,
                  e3.correct_norm);
    }
    tu_remove_tree(d);
}

static void expect_fails(const char *d, const char *args, int status, const char *msg)
{
    char p[700], e[800];
    snprintf(p, sizeof p, "%s/fail", d);
    int rc = tc_run(NULL, args, p);
    snprintf(e, sizeof e, "%s.err", p);
    char *err = tu_read_file(e, NULL);
    cr_expect_eq(rc, status, "%s: exit %d (expected %d): %s", args, rc, status, err);
    cr_expect(err && strstr(err, msg), "%s: stderr lacks '%s': %s", args, msg, err);
    free(err);
}

Test(hellaswag_cli, eval_errors_name_the_file_and_fault, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], cmd[2048];
    tc_make_shards(d, 1, 400);
    const char *tok = getenv("TRAIN_GPT_TOKENIZE_BIN");
    snprintf(cmd, sizeof cmd, "%s --quiet --hellaswag " JSONL " --out %s/gpt2",
             tok ? tok : "./tokenize", d);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(args, sizeof args, "%s --steps 1 --eval-file %s/gpt2.bin", tc_model_args(d), d);
    expect_fails(d, args, 1, "gpt2.bin: example 0 context: token ");
    expect_fails(d, args, 1, "is outside the model's vocabulary (256)");
    snprintf(cmd, sizeof cmd, "%s/long.bin", d);
    write_byte_eval(cmd, 5, 3, 1);
    snprintf(args, sizeof args, "%s --steps 1 --eval-file %s/long.bin", tc_model_args(d), d);
    expect_fails(d, args, 1, "long.bin: example 4 completion 2 has 20 tokens; --seq-len 16 "
                 "scores completions of at most 16");
    snprintf(args, sizeof args, "%s --steps 1 --eval-every 2", tc_model_args(d));
    expect_fails(d, args, 2, "--eval-every: needs --eval-file");
    snprintf(args, sizeof args, "%s --steps 1 --eval-file %s/none.bin", tc_model_args(d), d);
    expect_fails(d, args, 1, "none.bin: cannot open");
    tu_remove_tree(d);
}

/* ./tokenize --hellaswag with bad input: exit 1 (2 for a bad command line),
 * the file and line named, no output left behind. */
Test(hellaswag_cli, tokenize_hellaswag_errors, .timeout = 60)
{
    char *d = tu_tempdir(), cmd[2048], in[600], out[600], e[700];
    const char *tok = getenv("TRAIN_GPT_TOKENIZE_BIN");
    static const struct {
        const char *text, *msg;
    } cases[] = {
#define ENDS "\"endings\":[\"b\",\"c\",\"d\",\"e\"]"
        {"{\"ctx\":\"a\"," ENDS ",\"label\":1}\n{oops\n", ":2: not a JSON object"},
        {"{\"ctx\":\"a\",\"endings\":[\"b\",\"c\",\"d\"],\"label\":1}\n",
         ":1: \"endings\" must be an array of 4"},
        {"{\"ctx\":\"a\"," ENDS ",\"label\":4}\n", ":1: \"label\" missing or not 0..3"},
        {"{\"ctx\":\"a\"," ENDS ",\"label\":\"x\"}\n", ":1: \"label\" missing"},
        {"\n{" ENDS ",\"label\":0}\n", ":2: \"ctx\" missing or not a string"},
        {"{\"ctx\":\"\"," ENDS ",\"label\":0}\n", ":1: the context has no tokens"},
        {"{\"ctx\":\"a\",\"endings\":[\"b\",7,\"d\",\"e\"],\"label\":0}\n",
         ":1: \"endings\"[1] is not a string"},
#undef ENDS
        {"\n\n", ": no examples"},
    };
    snprintf(in, sizeof in, "%s/in.jsonl", d);
    snprintf(out, sizeof out, "%s/out.bin", d);
    snprintf(e, sizeof e, "%s/err.txt", d);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        FILE *f = fopen(in, "w");
        fputs(cases[k].text, f);
        fclose(f);
        snprintf(cmd, sizeof cmd, "%s --quiet --hellaswag %s --out %s/out 2> %s",
                 tok ? tok : "./tokenize", in, d, e);
        cr_expect_eq(tu_run(cmd), 1, "case %zu", k);
        char *err = tu_read_file(e, NULL);
        cr_expect(err && strstr(err, in) && strstr(err, cases[k].msg), "case %zu: %s", k, err);
        free(err);
        struct stat st;
        cr_expect(stat(out, &st) != 0, "case %zu left %s", k, out);
    }
    snprintf(cmd, sizeof cmd, "%s --hellaswag " JSONL " --out %s/x --val-tokens 5 2> %s",
             tok ? tok : "./tokenize", d, e);
    cr_expect_eq(tu_run(cmd), 2);
    cr_expect(tc_file_has(e, "--val-tokens applies to token shards, not to --hellaswag"));
    snprintf(cmd, sizeof cmd, "%s --hellaswag " JSONL " --out %s/x extra.txt 2> %s",
             tok ? tok : "./tokenize", d, e);
    cr_expect_eq(tu_run(cmd), 2);
    cr_expect(tc_file_has(e, "--hellaswag reads only its jsonl file"));
    /* the output's folder is checked before the work, and named with --out */
    snprintf(cmd, sizeof cmd, "%s --hellaswag " JSONL " --out %s/no/x 2> %s",
             tok ? tok : "./tokenize", d, e);
    cr_expect_eq(tu_run(cmd), 1);
    char want[1400];
    snprintf(want, sizeof want, "tokenize: --out %s/no/x: %s/no/x.bin: its folder must exist and "
             "be writable: %s/no: the folder does not exist", d, d, d);
    cr_expect(tc_file_has(e, want), "%s", want);
    tu_remove_tree(d);
}

/* --hellaswag never replaces an eval file unasked: an existing PREFIX.bin
 * is refused (exit 1, the file left as it was); --overwrite keeps the old
 * one as PREFIX.bin.replaced_<time> (a second name of the same bytes), and
 * keeps no copy when the new file is byte-identical. (The code before
 * replaced it silently.) */
Test(hellaswag_cli, tokenize_hellaswag_keeps_an_existing_file, .timeout = 60)
{
    char *d = tu_tempdir(), cmd[2048], out[600], e[700];
    const char *tok = getenv("TRAIN_GPT_TOKENIZE_BIN");
    tok = tok ? tok : "./tokenize";
    snprintf(out, sizeof out, "%s/hs.bin", d);
    snprintf(e, sizeof e, "%s/err.txt", d);
    tu_write_text(out, "the user's own file");
    snprintf(cmd, sizeof cmd, "%s --quiet --hellaswag " JSONL " --out %s/hs 2> %s", tok, d, e);
    cr_expect_eq(tu_run(cmd), 1);
    char want[1400];
    snprintf(want, sizeof want, "tokenize: --out: %s exists (19 bytes) and would be replaced; "
             "nothing was written. Give another --out, or pass --overwrite", out);
    cr_expect(tc_file_has(e, want), "%s", want);
    char *kept = tu_read_file(out, NULL);
    cr_expect(kept && strcmp(kept, "the user's own file") == 0, "the file changed: %s", kept);
    free(kept);
    /* --overwrite: the new file at the name, the old one beside it */
    snprintf(cmd, sizeof cmd, "%s --hellaswag " JSONL " --out %s/hs --overwrite 2> %s", tok, d,
             e);
    cr_expect_eq(tu_run(cmd), 0);
    EvalSet es;
    char err[512];
    cr_expect_eq(eval_file_read(out, &es, err, sizeof err), 0, "%s", err);
    eval_set_free(&es);
    snprintf(cmd, sizeof cmd, "cat %s/hs.bin.replaced_* > %s/old.txt && ls %s | grep -c "
             "replaced_ > %s/n.txt", d, d, d, d);
    cr_expect_eq(tu_run(cmd), 0);
    snprintf(out, sizeof out, "%s/old.txt", d);
    kept = tu_read_file(out, NULL);
    cr_expect(kept && strcmp(kept, "the user's own file") == 0, "old file not kept: %s", kept);
    free(kept);
    snprintf(want, sizeof want, "note: --overwrite: the old %s/hs.bin is kept as %s/hs.bin."
             "replaced_", d, d);
    cr_expect(tc_file_has(e, want), "%s", want);
    /* the same file again: no second copy */
    snprintf(cmd, sizeof cmd, "%s --quiet --hellaswag " JSONL " --out %s/hs --overwrite && ls %s "
             "| grep -c replaced_ > %s/n.txt", tok, d, d, d);
    cr_expect_eq(tu_run(cmd), 0);
    snprintf(out, sizeof out, "%s/n.txt", d);
    kept = tu_read_file(out, NULL);
    cr_expect(kept && atoi(kept) == 1, "copies kept: %s", kept);
    free(kept);
    tu_remove_tree(d);
}

/* HellaSwag along data/source.h's chain (tests/unit/data/test_source.c tests the
 * chain itself): $HELLASWAG_JSONL that fails the sha256 check is an error;
 * offline with nothing found, the places tried are named; a download
 * (curl replaced by a script first on PATH) with the wrong checksum leaves
 * nothing in the cache. scripts/get_hellaswag.sh stops on each, exit 1.
 * (The real file is not here, so no success is tested: its sha256 is the
 * published one, data/source.c.) */
Test(hellaswag_cli, fetch_hellaswag_chain, .timeout = 120)
{
    char *d = tu_tempdir(), cmd[4096], e[700];
    const char *tok = getenv("TRAIN_GPT_TOKENIZE_BIN");
    tok = tok ? tok : "./tokenize";
    snprintf(e, sizeof e, "%s/err.txt", d);
    snprintf(cmd, sizeof cmd, "XDG_DATA_HOME=%s/xdg HELLASWAG_JSONL=" JSONL " %s --fetch hellaswag "
             "> %s/out.txt 2> %s", d, tok, d, e);
    cr_expect_eq(tu_run(cmd), 1);
    cr_expect(tc_file_has(e, JSONL ": sha256 is ") &&
              tc_file_has(e, "expected 0aa3b88843990f3f10a97b9575c94d7b71fb2205240ba04ae4884d9e9c992588"),
              "checksum message");
    snprintf(cmd, sizeof cmd, "env -u HELLASWAG_JSONL XDG_DATA_HOME=%s/xdg TRAIN_GPT_OFFLINE=1 %s --fetch hellaswag "
             "> %s/out.txt 2> %s", d, tok, d, e);
    cr_expect_eq(tu_run(cmd), 1);
    cr_expect(tc_file_has(e, "HELLASWAG_JSONL") && tc_file_has(e, "hellaswag"), "offline message");
    /* curl that "downloads" the wrong file */
    snprintf(cmd, sizeof cmd, "mkdir -p %s/bin && printf '#!/bin/sh\necho garbage > \"$7\"\n' > "
             "%s/bin/curl && chmod +x %s/bin/curl", d, d, d);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(cmd, sizeof cmd, "env -u HELLASWAG_JSONL PATH=%s/bin:$PATH XDG_DATA_HOME=%s/xdg %s --fetch hellaswag "
             "> %s/out.txt 2> %s", d, d, tok, d, e);
    cr_expect_eq(tu_run(cmd), 1);
    cr_expect(tc_file_has(e, "sha256"), "bad download message");
    snprintf(cmd, sizeof cmd, "test ! -e %s/xdg/train_gpt/hellaswag/hellaswag_val.jsonl", d);
    cr_expect_eq(tu_run(cmd), 0, "a wrong download was kept in the cache");
    snprintf(cmd, sizeof cmd, "env -u HELLASWAG_JSONL XDG_DATA_HOME=%s/xdg TRAIN_GPT_OFFLINE=1 scripts/get_hellaswag.sh "
             "%s/hs > %s/out.txt 2> %s", d, d, d, e);
    cr_expect_eq(tu_run(cmd), 1);
    cr_expect(tc_file_has(e, "get_hellaswag: no HellaSwag validation jsonl"));
    tu_remove_tree(d);
}
