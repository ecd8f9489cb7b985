/* tests/unit/model/test_opcost_file.c — op costs on disk (model/opcost_file.h) and
 * ./train_gpt's --op-costs: a file round-trips, every fault is named with
 * the file and exits 1, the cache is written once and read after, a
 * corrupt cache entry is measured again, a run prints its predicted and
 * measured step time side by side (stdout and the log's summary), and
 * --plan with costs prints planner_print_modes' table with times; the
 * family is in the key (GPT-2's keys as before). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/flops.h"
#include "model/llama_block.h"
#include "model/opcost.h"
#include "model/opcost_file.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

#define SHAPE "--layers 3 --channels 32 --heads 4 --seq-len 16 --vocab 256 --batch 2"

static PlanInput shape_input(void)
{
    PlanInput in = {.cfg = {.max_seq_len = 16, .vocab_size = 256, .padded_vocab = 256,
                            .num_layers = 3, .num_heads = 4, .channels = 32},
                    .B = 2, .T = 16, .dtype = DTYPE_FP32};
    return in;
}

/* Costs of the ops of in's block (its description's), each its own number. */
static OpCosts costs_for(const PlanInput *in)
{
    OpCosts oc;
    opcost_init(&oc, planner_block(in), OPCOST_NS);
    oc.reps = 5;
    for (int op = 0; op < opcost_n_ops(&oc); op++) *opcost_at(&oc, op) = 1000 * (op + 1) + 7;
    oc.copy_lat_ns = 41000;
    oc.copy_bw = 5200000000LL;
    return oc;
}

static OpCosts some_costs(void)
{
    PlanInput in = shape_input();
    return costs_for(&in);
}

/* path's text with the first `from` replaced by `to` */
static void edit_file(const char *path, const char *from, const char *to)
{
    char *text = tu_read_file(path, NULL), *at = strstr(text, from), out[16384];
    cr_assert_not_null(at, "%s not in %s", from, text);
    *at = '\0';
    snprintf(out, sizeof out, "%s%s%s", text, to, at + strlen(from));
    tu_write_text(path, out);
    free(text);
}

Test(opcost_file, round_trip_and_faults)
{
    char *d = tu_tempdir(), path[512], dev[256], err[1024];
    PlanInput in = shape_input();
    OpCosts oc = some_costs(), back;
    snprintf(path, sizeof path, "%s/sub/costs.json", d);
    cr_assert_eq(opcost_file_write(path, "cpu: test", &in, &oc, err, sizeof err), 0, "%s", err);
    cr_assert_eq(opcost_file_read(path, &in, dev, sizeof dev, &back, err, sizeof err), 0, "%s",
                 err);
    cr_assert_str_eq(dev, "cpu: test");
    cr_assert_eq(memcmp(&oc, &back, sizeof oc), 0);
    /* another shape or dtype: -2, naming the field */
    PlanInput other = in;
    other.B = 4;
    cr_assert_eq(opcost_file_read(path, &other, dev, sizeof dev, &back, err, sizeof err), -2);
    cr_assert(strstr(err, "\"batch\"") && strstr(err, path), "%s", err);
    other = in;
    other.dtype = DTYPE_BF16;
    cr_assert_eq(opcost_file_read(path, &other, dev, sizeof dev, &back, err, sizeof err), -2);
    cr_assert(strstr(err, "measured in fp32, this run is bf16"), "%s", err);
    /* faults: -1, "<path>: <fault>" */
    char *good = tu_read_file(path, NULL);
    struct { const char *from, *to, *fault; } cases[] = {
        {"\"ops_ns\"", "\"ops\"", "are required"},
        {"\"gelu_bwd\"", "\"gelu_back\"", "\"ops_ns\".\"gelu_bwd\" missing"},
        {"\"train_gpt op costs\"", "\"other\"", "\"format\" is not"},
        /* version 1 (no copy costs) is another version, never read as free copies */
        {"\"version\":\t3", "\"version\":\t1", "unsupported or missing \"version\""},
        {"\"copy\"", "\"copies\"", "\"copy\" missing"},
        {"\"bytes_per_s\":\t5200000000", "\"bytes_per_s\":\t-1", "\"bytes_per_s\" not an"},
        {"\"adamw\":\t27007", "\"adamw\":\t-5", "\"ops_ns\".\"adamw\" missing or not"},
        {"\"adamw\":\t27007", "\"adamw\":\t1.5", "\"ops_ns\".\"adamw\" missing or not"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *bad = strdup(good), *at = strstr(bad, cases[i].from), text[8192];
        cr_assert_not_null(at, "%s not in %s", cases[i].from, good);
        *at = '\0';
        snprintf(text, sizeof text, "%s%s%s", bad, cases[i].to, at + strlen(cases[i].from));
        tu_write_text(path, text);
        cr_assert_eq(opcost_file_read(path, &in, dev, sizeof dev, &back, err, sizeof err), -1,
                     "case %zu", i);
        cr_assert(strstr(err, path) && strstr(err, cases[i].fault), "case %zu: %s", i, err);
        free(bad);
    }
    tu_write_text(path, "{\"format\": \"train_gpt op c");
    cr_assert_eq(opcost_file_read(path, &in, dev, sizeof dev, &back, err, sizeof err), -1);
    cr_assert(strstr(err, "not valid JSON"), "%s", err);
    tu_write_text(path, "");
    cr_assert_eq(opcost_file_read(path, &in, dev, sizeof dev, &back, err, sizeof err), -1);
    snprintf(path, sizeof path, "%s/absent.json", d);
    cr_assert_eq(opcost_file_read(path, &in, dev, sizeof dev, &back, err, sizeof err), -1);
    cr_assert(strstr(err, path), "%s", err);
    free(good), free(d);
}

Test(opcost_file, cache_folder_and_name)
{
    char dir[4096], a[4200], b[4200];
    setenv("TRAIN_GPT_CACHE_DIR", "/x/own", 1);
    setenv("XDG_CACHE_HOME", "/x/xdg", 1);
    cr_assert_eq(opcost_cache_dir(dir, sizeof dir), 0);
    cr_assert_str_eq(dir, "/x/own");
    unsetenv("TRAIN_GPT_CACHE_DIR");
    cr_assert_eq(opcost_cache_dir(dir, sizeof dir), 0);
    cr_assert_str_eq(dir, "/x/xdg/train_gpt");
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/x/home", 1);
    cr_assert_eq(opcost_cache_dir(dir, sizeof dir), 0);
    cr_assert_str_eq(dir, "/x/home/.cache/train_gpt");
    PlanInput in = shape_input(), other = in;
    opcost_cache_file("/c", "cpu: a", &in, a, sizeof a);
    opcost_cache_file("/c", "cpu: a", &in, b, sizeof b);
    cr_assert_str_eq(a, b);
    cr_assert(strncmp(a, "/c/op_costs_", 12) == 0 && strlen(a) == 12 + 16 + 5, "%s", a);
    opcost_cache_file("/c", "cpu: b", &in, b, sizeof b);
    cr_assert_str_neq(a, b, "the device is in the key");
    other.T = 8;
    opcost_cache_file("/c", "cpu: a", &other, b, sizeof b);
    cr_assert_str_neq(a, b, "the shape is in the key");
}

/* The family in the key: GPT-2's cache name is the FNV-1a hash of
 * "device|dtype|shape..." as before families (pinned here by hashing that
 * text by hand), a Llama run at the same shape gets another name, and one
 * with other key/value heads another again, and one with --head-dim
 * another (a file without "head_dim" refused for it, and the other way
 * round); a file of one family is
 * refused (-2, naming both) for a run of the other. */
Test(opcost_file, the_family_keys_the_costs)
{
    PlanInput in = shape_input(), llama = in, llama4;
    llama.cfg.arch = ARCH_LLAMA;
    llama.cfg.kv_heads = 2;
    llama.cfg.ffn = 64;
    llama4 = llama;
    llama4.cfg.kv_heads = 4;
    char a[4200], b[4200], c[4200], text[256], want[4200];
    int chunk = planner_default_loss_chunk(2, 16, 256, DTYPE_FP32);
    snprintf(text, sizeof text, "cpu: a|fp32|3|32|4|16|2|256|256|%d|1|0", chunk < 32 ? chunk : 32);
    unsigned long long h = 1469598103934665603ULL;
    for (const char *p = text; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    snprintf(want, sizeof want, "/c/op_costs_%016llx.json", h);
    opcost_cache_file("/c", "cpu: a", &in, a, sizeof a);
    cr_assert_str_eq(a, want, "GPT-2's cache name is unchanged");
    opcost_cache_file("/c", "cpu: a", &llama, b, sizeof b);
    opcost_cache_file("/c", "cpu: a", &llama4, c, sizeof c);
    cr_assert_str_neq(a, b, "the family is in the key");
    cr_assert_str_neq(b, c, "the Llama widths are in the key");
    char *d = tu_tempdir(), path[512], dev[256], err[1024];
    OpCosts oc = costs_for(&llama), back;
    snprintf(path, sizeof path, "%s/llama.json", d);
    cr_assert_eq(opcost_file_write(path, "cpu: a", &llama, &oc, err, sizeof err), 0, "%s", err);
    cr_assert_eq(opcost_file_read(path, &llama, dev, sizeof dev, &back, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(memcmp(&oc, &back, sizeof oc), 0);
    cr_assert_eq(opcost_file_read(path, &in, dev, sizeof dev, &back, err, sizeof err), -2);
    cr_assert(strstr(err, "--arch llama's block, this run is --arch gpt2"), "%s", err);
    cr_assert_eq(opcost_file_read(path, &llama4, dev, sizeof dev, &back, err, sizeof err), -2);
    cr_assert(strstr(err, "\"kv_heads\" is not 4"), "%s", err);
    /* --head-dim keys it too (named only when given: the files above have none) */
    PlanInput hd = llama;
    hd.cfg.head_dim = 16;
    char e[4200];
    opcost_cache_file("/c", "cpu: a", &hd, e, sizeof e);
    cr_assert_str_neq(b, e, "the head size is in the key");
    cr_assert_eq(opcost_file_read(path, &hd, dev, sizeof dev, &back, err, sizeof err), -2);
    cr_assert(strstr(err, "\"head_dim\" is not 16"), "%s", err);
    snprintf(path, sizeof path, "%s/hd.json", d);
    OpCosts ohd = costs_for(&hd);
    cr_assert_eq(opcost_file_write(path, "cpu: a", &hd, &ohd, err, sizeof err), 0, "%s", err);
    cr_assert_eq(opcost_file_read(path, &hd, dev, sizeof dev, &back, err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(opcost_file_read(path, &llama, dev, sizeof dev, &back, err, sizeof err), -2);
    cr_assert(strstr(err, "\"head_dim\" is not 0"), "%s", err);
    snprintf(path, sizeof path, "%s/gpt2.json", d);
    oc = some_costs();
    cr_assert_eq(opcost_file_write(path, "cpu: a", &in, &oc, err, sizeof err), 0, "%s", err);
    cr_assert_eq(opcost_file_read(path, &llama, dev, sizeof dev, &back, err, sizeof err), -2);
    cr_assert(strstr(err, "--arch gpt2's block, this run is --arch llama"), "%s", err);
    tu_remove_tree(d);
}

/* The ops in a file are the block description's, by its names: GPT-2's
 * (as version 2 named them, so its version-2 files still load), the Llama
 * block's own (rms1_fwd, rope_fwd, ... swiglu_bwd); a version-2 Llama file,
 * which timed the Llama ops in GPT-2's slots, is refused by its version. */
Test(opcost_file, op_names_are_the_descriptions)
{
    PlanInput in = shape_input(), llama = in;
    llama.cfg.arch = ARCH_LLAMA;
    llama.cfg.kv_heads = 2;
    llama.cfg.ffn = 64;
    char *d = tu_tempdir(), path[512], dev[256], err[1024];
    OpCosts oc = some_costs(), back;
    const char *gpt2_names[] = {"ln1_fwd", "qkv_fwd", "attn_fwd", "attproj_fwd", "resid1_fwd",
        "ln2_fwd", "fc_fwd", "gelu_fwd", "fcproj_fwd", "resid2_fwd", "fcproj_bwd", "gelu_bwd",
        "fc_bwd", "ln2_bwd", "attproj_bwd", "attn_bwd", "qkv_bwd", "ln1_bwd", "encoder_fwd",
        "lnf_fwd", "head_fwd_bwd", "zero_dres", "lnf_bwd", "encoder_bwd", "zero_grads",
        "grad_norm", "adamw"};
    cr_assert_eq(opcost_n_ops(&oc), 27);
    for (int op = 0; op < 27; op++) cr_assert_str_eq(opcost_op_name(&oc, op), gpt2_names[op]);
    /* a GPT-2 file of version 2 (the names it had) loads */
    snprintf(path, sizeof path, "%s/gpt2.json", d);
    cr_assert_eq(opcost_file_write(path, "cpu: a", &in, &oc, err, sizeof err), 0, "%s", err);
    edit_file(path, "\"version\":\t3", "\"version\":\t2");
    cr_assert_eq(opcost_file_read(path, &in, dev, sizeof dev, &back, err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(memcmp(&oc, &back, sizeof oc), 0);
    /* the Llama block's file: every op of its description by name */
    oc = costs_for(&llama);
    cr_assert_eq(opcost_block(&oc), &LLAMA_BLOCK);
    cr_assert_eq(opcost_n_ops(&oc), LLAMA_FWD_OPS + LLAMA_BWD_OPS + OP_COUNT);
    snprintf(path, sizeof path, "%s/llama.json", d);
    cr_assert_eq(opcost_file_write(path, "cpu: a", &llama, &oc, err, sizeof err), 0, "%s", err);
    char *text = tu_read_file(path, NULL);
    for (int op = 0; op < LLAMA_BLOCK.n_fwd; op++)
        cr_assert(strstr(text, LLAMA_BLOCK.fwd[op].name), "%s", LLAMA_BLOCK.fwd[op].name);
    for (int op = 0; op < LLAMA_BLOCK.n_bwd; op++)
        cr_assert(strstr(text, LLAMA_BLOCK.bwd[op].name), "%s", LLAMA_BLOCK.bwd[op].name);
    cr_assert(strstr(text, "\"rope_fwd\"") && strstr(text, "\"swiglu_bwd\"") &&
              !strstr(text, "\"ln1_fwd\"") && !strstr(text, "\"gelu_fwd\""), "%s", text);
    free(text);
    cr_assert_eq(opcost_file_read(path, &llama, dev, sizeof dev, &back, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(memcmp(&oc, &back, sizeof oc), 0);
    /* costs of one block are not written for a run of another */
    OpCosts g2 = some_costs();
    cr_assert_eq(opcost_file_write(path, "cpu: a", &llama, &g2, err, sizeof err), -1);
    cr_assert(strstr(err, "of block gpt2, this run's is llama"), "%s", err);
    /* version 2 of the Llama family: refused, naming the version and the fix */
    edit_file(path, "\"version\":\t3", "\"version\":\t2");
    cr_assert_eq(opcost_file_read(path, &llama, dev, sizeof dev, &back, err, sizeof err), -1);
    cr_assert(strstr(err, path) && strstr(err, "version 2") && strstr(err, "--arch llama") &&
              strstr(err, "measure again"), "%s", err);
    tu_remove_tree(d);
}

/* ---- ./train_gpt ---- */

static int run(const char *dir, const char *args, char **out, char **err)
{
    char cmd[4096];
    /* no baseline: the budgets here are the arenas' (tests/e2e/train/test_memory_budget.c) */
    snprintf(cmd, sizeof cmd, "TRAIN_GPT_CACHE_DIR=%s/cache TRAIN_GPT_TEST_BASELINE=0 %s %s "
             "--device cpu --threads 1", dir, tc_bin(), args);
    return tu_run_output(cmd, out, err);
}

static char *train_args(const char *d, const char *extra)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, SHAPE " --train-data '%s/train_*.bin' --val-every 0 --steps 3 %s",
             d, extra);
    return buf;
}

static void expect_exit_1(const char *d, const char *args, const char *needle)
{
    char *out, *err;
    cr_assert_eq(run(d, args, &out, &err), 1, "%s: stdout %s stderr %s", args, out, err);
    cr_assert(err && strstr(err, needle), "%s: stderr '%s' lacks '%s'", args, err, needle);
    free(out), free(err);
}

Test(opcost_file, bad_cost_files_exit_1_naming_the_file, .timeout = 60)
{
    char *d = tu_tempdir(), path[512], args[2048], e[1024];
    tc_make_shards(d, 1, 20000);
    snprintf(args, sizeof args, "%s --op-costs %s/absent.json", train_args(d, ""), d);
    snprintf(path, sizeof path, "--op-costs %s/absent.json: ", d);
    expect_exit_1(d, args, path);
    /* a mistyped word is taken as a file name: the message lists the words */
    snprintf(args, sizeof args, "%s --op-costs mesure", train_args(d, ""));
    expect_exit_1(d, args, "--op-costs mesure: cannot open: No such file or directory (--op-costs "
                           "takes auto, measure, flops or a FILE of costs)");
    snprintf(path, sizeof path, "%s/bad.json", d);
    tu_write_text(path, "not json");
    snprintf(args, sizeof args, "%s --op-costs %s", train_args(d, "--recompute auto"), path);
    expect_exit_1(d, args, "bad.json: not valid JSON");
    /* measured for another batch */
    PlanInput in = shape_input();
    in.B = 4;
    OpCosts oc = some_costs();
    cr_assert_eq(opcost_file_write(path, "cpu: x", &in, &oc, e, sizeof e), 0, "%s", e);
    expect_exit_1(d, args, "measured at another shape: \"shape\".\"batch\" is not 2");
    /* --plan reads it too */
    snprintf(args, sizeof args, SHAPE " --plan --memory-budget 10MiB --op-costs %s", path);
    expect_exit_1(d, args, "bad.json: measured at another shape");
    free(d);
}

static cJSON *summary_of(const char *log)
{
    cJSON *sum = tc_log_last_with(log, "event");
    cr_assert_not_null(sum);
    return sum;
}

/* auto measures once and caches; the next run reads the cache; both print
 * the predicted and measured step time, and log them. A fixed mode uses
 * the cache when it is there; a corrupt entry is measured again. */
Test(opcost_file, measure_cache_and_predicted_vs_measured, .timeout = 120)
{
    char *d = tu_tempdir(), log[512], extra[700], *out, *err;
    tc_make_shards(d, 1, 20000);
    /* a fixed mode with nothing cached predicts nothing, and says why */
    cr_assert_eq(run(d, train_args(d, "--recompute 1"), &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "none predicted: op costs not cached for cpu: "), "%s", out);
    free(out), free(err);
    snprintf(log, sizeof log, "%s/log.jsonl", d);
    snprintf(extra, sizeof extra, "--recompute auto --memory-budget 10MiB --log %s", log);
    cr_assert_eq(run(d, train_args(d, extra), &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "op costs: measured on cpu: ") && strstr(out, "; cached in "), "%s",
              out);
    cr_assert(strstr(out, "tape kinds on the frontier") && strstr(out, "least predicted time"),
              "%s", out);
    cr_assert(strstr(out, "step time: predicted "), "%s", out);
    cJSON *sum = summary_of(log);
    cJSON *p = cJSON_GetObjectItem(sum, "step_ms_predicted"),
          *m = cJSON_GetObjectItem(sum, "step_ms_measured");
    cr_assert(cJSON_IsNumber(p) && cJSON_IsNumber(m) && p->valuedouble > 0 &&
              m->valuedouble > 0);
    /* the line is what the log says */
    char want[128];
    snprintf(want, sizeof want, "step time: predicted %.3f ms, measured %.3f ms", p->valuedouble,
             m->valuedouble);
    cr_assert(strstr(out, want), "'%s' not in %s", want, out);
    cJSON_Delete(sum);
    free(out), free(err);
    /* again: from the cache, no measurement (no --log: a new run would not
     * replace the first one's) */
    snprintf(extra, sizeof extra, "--recompute auto --memory-budget 10MiB");
    cr_assert_eq(run(d, train_args(d, extra), &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "op costs: cached in ") && !strstr(out, "op costs: measured on"), "%s",
              out);
    free(out), free(err);
    /* a fixed mode reads the cache, and predicts */
    cr_assert_eq(run(d, train_args(d, "--recompute 1"), &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "op costs: cached in ") && strstr(out, "step time: predicted "), "%s",
              out);
    free(out), free(err);
    /* flops: nothing predicted */
    cr_assert_eq(run(d, train_args(d, "--recompute 1 --op-costs flops"), &out, &err), 0, "%s",
                 err);
    cr_assert(strstr(out, "none predicted: op costs flops"), "%s", out);
    free(out), free(err);
    /* a corrupt cache entry: noted, measured again, rewritten */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "for f in %s/cache/op_costs_*.json; do echo '{' > $f; done", d);
    cr_assert_eq(tu_run(cmd), 0);
    cr_assert_eq(run(d, train_args(d, extra), &out, &err), 0, "%s", err);
    cr_assert(strstr(err, "not valid JSON") && strstr(err, "measuring the op costs again"),
              "%s", err);
    cr_assert(strstr(out, "op costs: measured on cpu: "), "%s", out);
    /* the copy engine was timed beside the ops, and is in the report */
    cr_assert(strstr(out, "  copy engine: latency "), "%s", out);
    free(out), free(err);
    /* a version-1 entry (from before the copy costs) is measured again, not read
     * as copies of no cost */
    snprintf(cmd, sizeof cmd, "for f in %s/cache/op_costs_*.json; do sed -i "
             "'s/\"version\":\t3/\"version\":\t1/' $f; done", d);
    cr_assert_eq(tu_run(cmd), 0);
    cr_assert_eq(run(d, train_args(d, extra), &out, &err), 0, "%s", err);
    cr_assert(strstr(err, "unsupported or missing \"version\"") &&
              strstr(err, "measuring the op costs again"), "%s", err);
    cr_assert(strstr(out, "op costs: measured on cpu: "), "%s", out);
    free(out), free(err), free(d);
}

/* --plan with a cost file: the costs, then planner_print_modes' table with
 * a predicted step time per mode. */
Test(opcost_file, plan_with_costs_prints_step_times)
{
    char *d = tu_tempdir(), path[512], args[1024], e[1024], *out, *err, *want = NULL;
    PlanInput in = shape_input();
    OpCosts oc = some_costs();
    snprintf(path, sizeof path, "%s/costs.json", d);
    cr_assert_eq(opcost_file_write(path, "cuda: elsewhere", &in, &oc, e, sizeof e), 0, "%s", e);
    /* the run's plan holds the cpu attention's scratch for its one thread */
    Backend *be = tu_cpu(); /* opened first: opening sets the thread count */
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    in.attn_scratch = gpt_attn_scratch_bytes(be, &in.cfg);
    in.host_copies = gpt_params_piece_bytes(&in.cfg); /* start-up's piece, as the CLI */
    omp_set_num_threads(threads);
    snprintf(args, sizeof args, SHAPE " --plan --memory-budget 3000000 --grad-accum 2 "
             "--op-costs %s", path);
    cr_assert_eq(run(d, args, &out, &err), 0, "%s", err);
    char first[600];
    snprintf(first, sizeof first, "op costs: %s (measured on cuda: elsewhere)\n", path);
    cr_assert(strncmp(out, first, strlen(first)) == 0, "%s", out);
    size_t len = 0;
    FILE *f = open_memstream(&want, &len);
    cr_assert_eq(planner_print_modes(f, &in, 3000000, 0, &oc, 2, e, sizeof e), 0, "%s", e);
    fclose(f);
    char *table = strstr(out, "parameters: ");
    cr_assert_not_null(table);
    cr_assert_str_eq(table, want);
    *strstr(table, "stored/L/tok:") = '\0';
    cr_assert_null(strstr(table, " - "), "every row has a time: %s", table);
    free(out), free(err), free(want), free(d);
}
