/* tests/unit/kernels/test_profile.c — kernels/profile.c: the op profiler counts what the
 * schedule really runs, and ./train_gpt --profile-ops prints it.
 *
 * The expected counts are worked out by hand from model/gpt.c (one step of
 * the tiny 2-layer model): a block's forward is LN1, three matmuls (qkv,
 * attention projection, fc projection), one attention, the fc matmul with
 * its GELU (one fused op unless a tape is selective), and two residual
 * adds, each fused with the LayerNorm that reads its output next: LN2
 * inside the block; after it the next block's LN1, or LN_f after the last
 * block, when that forward runs right after (so block 0's LN1 is the only
 * plain LayerNorm of the first pass). Around the blocks, the embedding and
 * the head. --recompute 1 re-runs every block's forward in backward up to
 * the GELU: the fc projection and the last residual add, whose output
 * backward never reads, are not run again, and each re-forward runs its
 * own LN1. The fc projection's backward is fused with the GELU's. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "data/shard.h"
#include "kernels/profile.h"
#include "model/gpt.h"
#include "tests/lib/test_util.h"

static void one_step(int recompute, OpProfile *prof, int *L, int *C)
{
    GPTConfig cfg = tu_tiny_config();
    const int B = 2, T = cfg.max_seq_len;
    *L = cfg.num_layers;
    *C = cfg.channels;
    Backend *be = tu_cpu();
    GPT g;
    char err[256];
    cr_assert_eq(gpt_init(&g, &cfg, be, B, T, recompute, 0, err, sizeof err), 0, "%s", err);
    float *p = tu_random_params(&cfg, 7);
    gpt_set_params(&g, p);
    int in[64], tg[64];
    tu_random_tokens(in, (size_t)B * T, cfg.vocab_size, 1);
    tu_random_tokens(tg, (size_t)B * T, cfg.vocab_size, 2);
    const BackendOps *own = be->ops;
    profile_attach(prof, be);
    cr_assert_neq(be->ops, own, "attach puts the timing table in front");
    gpt_zero_grads(&g);
    gpt_forward_backward(&g, in, tg, 1.0f / (B * T));
    profile_detach(prof, be);
    cr_assert_eq(be->ops, own, "detach restores the backend's own table");
    cr_assert_null(be->profile);
    free(p);
    gpt_free(&g);
    backend_close(be);
}

static long calls_mm(const OpProfile *p, const char *dir, int ic, int oc)
{
    char op[64];
    snprintf(op, sizeof op, "matmul_%s %dx%d", dir, ic, oc);
    return profile_calls(p, op);
}

/* re: blocks forwarded a second time in backward (0 or L); sel: every tape
 * selective (recompute selective: the fc GELU unfused, and the backward
 * rebuilds GELU, LN2 and LN1 of each block) */
static void expect_counts(int recompute, int all_blocks_again, int sel)
{
    OpProfile prof;
    int L, C;
    one_step(recompute, &prof, &L, &C);
    const long f = L + (all_blocks_again ? L : 0); /* forwards up to the GELU */
    cr_expect_eq(profile_calls(&prof, "encoder_forward"), 1);
    cr_expect_eq(profile_calls(&prof, "encoder_backward"), 1);
    cr_expect_eq(profile_calls(&prof, "attention_forward"), f, "recompute %d", recompute);
    cr_expect_eq(profile_calls(&prof, "attention_backward"), L);
    /* block 0's LN1, each re-forward's LN1, a selective backward's LN2 and LN1 */
    cr_expect_eq(profile_calls(&prof, "layernorm_forward"), 1 + (f - L) + (sel ? 2 * L : 0));
    cr_expect_eq(profile_calls(&prof, "residual_layernorm_forward"), f + L);
    cr_expect_eq(profile_calls(&prof, "residual_forward"), 0);
    cr_expect_eq(profile_calls(&prof, "layernorm_backward"), 2 * L + 1);
    cr_expect_eq(profile_calls(&prof, "gelu_forward"), sel ? 2 * L : 0);
    cr_expect_eq(profile_calls(&prof, "gelu_backward"), 0);
    char op[64];
    snprintf(op, sizeof op, "matmul_gelu_forward %dx%d", C, 4 * C);
    cr_expect_eq(profile_calls(&prof, op), sel ? 0 : f);
    snprintf(op, sizeof op, "matmul_backward_gelu %dx%d", 4 * C, C);
    cr_expect_eq(profile_calls(&prof, op), L);
    cr_expect_eq(calls_mm(&prof, "forward", C, 3 * C), f);
    cr_expect_eq(calls_mm(&prof, "forward", C, C), f);
    cr_expect_eq(calls_mm(&prof, "forward", C, 4 * C), sel ? f : 0);
    cr_expect_eq(calls_mm(&prof, "forward", 4 * C, C), L);
    cr_expect_eq(calls_mm(&prof, "backward", C, 3 * C), L);
    cr_expect_eq(calls_mm(&prof, "backward", 4 * C, C), 0);
    cr_expect_eq(profile_calls(&prof, "head_forward_backward"), 1);
    cr_expect_eq(profile_calls(&prof, "adamw_update"), 0, "no optimizer step was taken");
    cr_expect_eq(prof.overflow, 0);
    for (int i = 0; i < prof.nrows; i++)
        cr_expect(prof.rows[i].seconds >= 0.0 && prof.rows[i].calls > 0, "row %s",
                  prof.rows[i].op);
    profile_reset(&prof);
    cr_expect_eq(prof.nrows, 0);
    cr_expect_eq(profile_calls(&prof, "attention_forward"), 0);
}

Test(profile, counts_a_step_recompute0) { expect_counts(0, 0, 0); }
Test(profile, counts_a_step_recompute1_every_block_again) { expect_counts(1, 1, 0); }
Test(profile, counts_a_step_selective_keeps_gelu_apart) { expect_counts(RECOMPUTE_SELECTIVE, 0, 1); }

/* The table: every timed row, largest first, and a total line. */
Test(profile, print_lists_rows_and_total)
{
    OpProfile prof;
    int L, C;
    one_step(0, &prof, &L, &C);
    char *d = tu_tempdir(), path[512];
    snprintf(path, sizeof path, "%s/profile.txt", d);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    profile_print(&prof, f, 1);
    fclose(f);
    char *text = tu_read_file(path, NULL);
    cr_assert_not_null(text);
    cr_expect(strstr(text, "op profile over 1 step "), "%s", text);
    cr_expect(strstr(text, "attention_backward"), "%s", text);
    cr_expect(strstr(text, "all timed ops"), "%s", text);
    int lines = 0;
    for (char *q = text; *q; q++) lines += *q == '\n';
    cr_expect_eq(lines, prof.nrows + 3, "header, column names, one line per row, total");
    free(text);
    free(d);
}

/* ./train_gpt --profile-ops: the table after training, the first step left
 * out of it. */
Test(profile, train_gpt_prints_the_table, .timeout = 120)
{
    char *d = tu_tempdir(), cmd[2048], path[512];
    snprintf(path, sizeof path, "%s/out.txt", d);
    snprintf(cmd, sizeof cmd,
             "./train_gpt --layers 2 --channels 32 --heads 4 --seq-len 16 --vocab 64 --batch 2 "
             "--threads 1 --steps 3 --val-every 0 --train-data '%s/none_*.bin' --profile-ops "
             "> %s 2>&1",
             d, path);
    /* no data: make one small shard */
    char shard[512], err[256];
    snprintf(shard, sizeof shard, "%s/none_000000.bin", d);
    uint16_t tok[4096];
    for (int i = 0; i < 4096; i++) tok[i] = (uint16_t)(i * 7 % 64);
    cr_assert_eq(shard_write(shard, tok, 4096, err, sizeof err), 0, "%s", err);
    cr_expect_eq(tu_run(cmd), 0, "%s", cmd);
    char *text = tu_read_file(path, NULL);
    cr_assert_not_null(text);
    cr_expect(strstr(text, "op profile over 2 steps"), "%s", text);
    cr_expect(strstr(text, "matmul_backward 32x96"), "%s", text);
    cr_expect(strstr(text, "adamw_update"), "%s", text);
    free(text);
    free(d);
}
