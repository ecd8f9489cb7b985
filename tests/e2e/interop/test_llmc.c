/* tests/e2e/interop/test_llmc.c — llm.c's checkpoint trio (interop/llmc_ckpt.h) against
 * an independent reference: dev/reference/llmc_state.py, a reader and writer of
 * llm.c's state file written from its published layout, and a simulation
 * of llm.c's data loader.
 *   - an export is checked field by field (header, sizes, master weights
 *     against the model file, v3 and v5; the data position against the
 *     simulated loader, across a shard boundary);
 *   - a state file written by the Python writer is resumed here; the
 *     export after one more step must be one AdamW update (t = step+1) of
 *     the Python file's m, v and master weights (weight decay 0: which
 *     tensors decay is not the file's business), at the simulated position;
 *   - export at step 3 of 6, resume from the llm.c files: the final model
 *     file is bitwise the uninterrupted run's (CPU fp32; fp32 and bf16
 *     model files, the master weights carrying the fp32 values);
 *   - the same on two ranks (mpirun, a state file per rank);
 *   - a --checkpoint-dir save converted (resumed for 0 steps, exported);
 *   - the refusals: a ZeRO-1 slice, shuffling, flags that cannot go
 *     together (exit 2). Damaged files are in test_hostile_inputs.c.
 * Needs python3 with numpy (scripts/setup.sh installs it). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/script_runs.h"

#define PY "/usr/bin/python3 dev/reference/llmc_state.py"

/* Run cmd with its output in d/py.txt; expect exit 0 and "PASS"/"wrote". */
static void py(const char *d, const char *cmd, const char *want)
{
    char full[8192], out[700];
    snprintf(out, sizeof out, "%s/py.txt", d);
    snprintf(full, sizeof full, "%s > '%s' 2>&1", cmd, out);
    int rc = tu_run(full);
    char *text = tu_read_file(out, NULL);
    cr_expect_eq(rc, 0, "%s: %s", cmd, text ? text : "");
    cr_expect(text && strstr(text, want), "%s: %s", cmd, text ? text : "");
    free(text);
}

/* dev/reference/llmc_state.py with each of args[0..n), as forks of one
 * Python (tests/lib/script_runs.h: numpy imported once); each must exit 0
 * and print `want`. */
static void py_runs(const char *d, char (*args)[1024], int n, const char *want)
{
    ScriptRuns sr = script_runs_new(d);
    for (int i = 0; i < n; i++) script_runs_add(&sr, "dev/reference/llmc_state.py", args[i]);
    script_runs_go(&sr, 0);
    for (int i = 0; i < n; i++) {
        char *text = script_runs_output(&sr, i);
        cr_expect_eq(script_runs_rc(&sr, i), 0, "llmc_state.py %s: %s", args[i], text);
        cr_expect(strstr(text, want), "llmc_state.py %s: %s", args[i], text);
        free(text);
    }
    script_runs_free(&sr);
}

static void check_export(const char *dtype)
{
    char *d = tu_tempdir(), args[4096], cmd[4096];
    tc_make_shards(d, 2, 100); /* 3 steps of B*T = 32 tokens per shard */
    snprintf(args, sizeof args, "%s --steps 5 --save-every 4 --save-checkpoint-llmc %s/lc "
             "--save-dtype %s", tc_model_args(d), d, dtype);
    tc_run_expect(d, args, 0, "llm.c checkpoint of step 5 written");
    struct stat st;
    cr_expect(stat(tu_path(d, "lc/DONE_00000004"), &st) == 0 && st.st_size == 0, "DONE_4");
    cr_expect(stat(tu_path(d, "lc/DONE_00000005"), &st) == 0 && st.st_size == 0, "DONE_5");
    snprintf(cmd, sizeof cmd, "ls %s/lc | grep -q tmp", d);
    cr_expect_neq(tu_run(cmd), 0, "a temp file is left in the export folder");
    char checks[2][1024];
    for (int step = 4; step <= 5; step++) /* 4: (shard 1, sample 1); 5: (1, 2) */
        snprintf(checks[step - 4], sizeof checks[0], "check %s/lc/state_%08d_00000.bin "
                 "%s/lc/model_%08d.bin --step %d --shards %s/train_*.bin --reads %d --B 2 --T 16",
                 d, step, d, step, step, d, step);
    py_runs(d, checks, 2, "llmc_state: PASS");
    tu_remove_tree(d);
}

Test(llmc, export_fp32_matches_llmc_layout, .timeout = 120) { check_export("fp32"); }
Test(llmc, export_bf16_matches_llmc_layout, .timeout = 120) { check_export("bf16"); }

/* This project's checkpoint folder to llm.c's trio: resume it for 0 steps. */
Test(llmc, convert_checkpoint_folder, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], cmd[4096];
    tc_make_shards(d, 2, 100);
    snprintf(args, sizeof args, "%s --steps 4 --checkpoint-dir %s/ck", tc_model_args(d), d);
    tc_run_expect(d, args, 0, "saved");
    snprintf(args, sizeof args, "%s --steps 4 --resume=%s/ck --save-checkpoint-llmc %s/lc",
             tc_model_args(d), d, d);
    tc_run_expect(d, args, 0, "llm.c checkpoint of step 4 written");
    snprintf(cmd, sizeof cmd, PY " check %s/lc/state_00000004_00000.bin %s/lc/model_00000004.bin "
             "--step 4 --shards '%s/train_*.bin' --reads 4 --B 2 --T 16", d, d, d);
    py(d, cmd, "llmc_state: PASS");
    tu_remove_tree(d);
}

/* Byte shards in d, one step of training saved as d/m.bin, and a copy of
 * it as llm.c's d/in/model_<step>.bin for a state file to go beside. */
static void one_step_model_in(const char *d, int step)
{
    char args[4096], cmd[4096];
    tc_make_shards(d, 2, 100);
    snprintf(args, sizeof args, "%s --steps 1 --save %s/m.bin", tc_model_args(d), d);
    tc_run_expect(d, args, 0, "saved");
    snprintf(cmd, sizeof cmd, "mkdir %s/in && cp %s/m.bin %s/in/model_%08d.bin", d, d, d, step);
    cr_assert_eq(tu_run(cmd), 0);
}

Test(llmc, resume_python_written_state_is_one_adamw_step_on, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], cmd[4096];
    one_step_model_in(d, 3);
    snprintf(cmd, sizeof cmd, "touch %s/in/DONE_00000003", d);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(cmd, sizeof cmd, PY " write %s/in/state_00000003_00000.bin %s/m.bin --step 3 "
             "--shard 1 --sample 1", d, d);
    py(d, cmd, "llmc_state: wrote");
    snprintf(args, sizeof args, "%s --steps 4 --resume-llmc %s/in "
             "--save-checkpoint-llmc %s/out", tc_model_args(d), d, d);
    tc_run_expect(d, args, 0, "step 3, fp32 master weights, data shard 1 sample 1");
    snprintf(cmd, sizeof cmd, PY " check %s/out/state_00000004_00000.bin "
             "%s/out/model_00000004.bin --step 4 --shards '%s/train_*.bin' --reads 1 "
             "--from-shard 1 --from-sample 1 --B 2 --T 16", d, d, d);
    py(d, cmd, "llmc_state: PASS");
    snprintf(cmd, sizeof cmd, PY " adamw %s/in/state_00000003_00000.bin "
             "%s/out/state_00000004_00000.bin --lr 1e-3 --beta1 0.9 --beta2 0.95 --eps 1e-8 "
             "--wd 0 --t 4", d, d);
    py(d, cmd, "llmc_state: PASS");
    /* without master weights the model file's values are the parameters */
    snprintf(cmd, sizeof cmd, PY " write %s/in/state_00000003_00000.bin %s/m.bin --step 3 "
             "--master 0", d, d);
    py(d, cmd, "llmc_state: wrote");
    snprintf(args, sizeof args, "%s --steps 4 --resume-llmc %s/in", tc_model_args(d), d);
    tc_run_expect(d, args, 0, "step 3, the model file's weights, data shard 0 sample 0");
    tu_remove_tree(d);
}

static void check_bitwise(const char *dtype)
{
    char *d = tu_tempdir(), args[4096], cmd[4096];
    tc_make_shards(d, 2, 100);
    snprintf(args, sizeof args, "%s --steps 6 --save-every 3 --save-dtype %s "
             "--save-checkpoint-llmc %s/lc --save %s/full.bin --log %s/full.jsonl",
             tc_model_args(d), dtype, d, d, d);
    tc_run_expect(d, args, 0, "llm.c checkpoint of step 6 written");
    snprintf(args, sizeof args, "%s --steps 6 --save-dtype %s --resume-llmc "
             "%s/lc/state_00000003_00000.bin --save %s/res.bin --log %s/res.jsonl",
             tc_model_args(d), dtype, d, d, d);
    tc_run_expect(d, args, 0, "resumed from llm.c's checkpoint");
    cr_expect(tc_files_equal(tu_path(d, "full.bin"), tu_path(d, "res.bin")),
              "the resumed run's final model differs from the uninterrupted run's");
    int s1[8], s2[8];
    double l1[8], l2[8];
    int n1 = tc_log_losses(tu_path(d, "full.jsonl"), s1, l1, NULL, 8);
    int n2 = tc_log_losses(tu_path(d, "res.jsonl"), s2, l2, NULL, 8);
    cr_assert(n1 == 6 && n2 == 3, "log lines: %d and %d", n1, n2);
    for (int i = 0; i < 3; i++)
        cr_expect(s2[i] == s1[i + 3] && l2[i] == l1[i + 3], "step %d: loss %.9g, resumed %.9g",
                  s1[i + 3], l1[i + 3], l2[i]);
    /* the folder: its newest step with every file; a step missing one is skipped */
    snprintf(cmd, sizeof cmd, "rm %s/lc/state_00000006_00000.bin", d);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(args, sizeof args, "%s --steps 6 --save-dtype %s --resume-llmc %s/lc "
             "--save %s/res2.bin", tc_model_args(d), dtype, d, d);
    tc_run_expect(d, args, 0, "DONE_00000006 is there but");
    cr_expect(tc_files_equal(tu_path(d, "full.bin"), tu_path(d, "res2.bin")), "from the folder");
    cr_expect(tu_exists(tu_path(d, "lc/DONE_00000003")));
    tu_remove_tree(d);
}

Test(llmc, resume_from_export_is_bitwise_fp32_model, .timeout = 180) { check_bitwise("fp32"); }
Test(llmc, resume_from_export_is_bitwise_bf16_model, .timeout = 180) { check_bitwise("bf16"); }

/* Two ranks (mpirun, --zero 0): one state file each, rank 1's checked as
 * rank 1 of 2 at the same position; the resume on two ranks is bitwise. */
Test(llmc, two_ranks_export_and_resume_bitwise, .timeout = 180)
{
    char *d = tu_tempdir(), args[4096], cmd[8192];
    tc_make_shards(d, 2, 200); /* 199 / (2 ranks x 32 tokens) = 3 steps per shard */
    const char *mpi = "timeout 120 " TC_MPIRUN " -np 2";
    snprintf(cmd, sizeof cmd, "%s %s %s --steps 4 --save-every 2 --save-checkpoint-llmc %s/lc "
             "--save %s/full.bin > %s/a.txt 2>&1", mpi, tc_bin(), tc_model_args(d), d, d, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", tu_read_file(tu_path(d, "a.txt"), NULL));
    char checks[2][1024];
    for (int r = 0; r < 2; r++)
        snprintf(checks[r], sizeof checks[0], "check %s/lc/state_00000002_%05d.bin "
                 "%s/lc/model_00000002.bin --step 2 --nproc 2 --rank %d --shards %s/train_*.bin "
                 "--reads 2 --B 2 --T 16", d, r, d, r, d);
    py_runs(d, checks, 2, "llmc_state: PASS");
    snprintf(cmd, sizeof cmd, "%s %s %s --steps 4 --resume-llmc %s/lc/state_00000002_00000.bin "
             "--save %s/res.bin > %s/b.txt 2>&1", mpi, tc_bin(), tc_model_args(d), d, d, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", tu_read_file(tu_path(d, "b.txt"), NULL));
    cr_expect(tc_files_equal(tu_path(d, "full.bin"), tu_path(d, "res.bin")),
              "two ranks: the resumed run's final model differs");
    /* one rank cannot continue a two-rank run */
    snprintf(args, sizeof args, "%s --steps 4 --resume-llmc %s/lc", tc_model_args(d), d);
    tc_run_expect(d, args, 1, "written by rank 0 of 2 processes, read by rank 0 of 1");
    tu_remove_tree(d);
}

Test(llmc, refusals, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], cmd[4096];
    one_step_model_in(d, 2);
    char st[700];
    snprintf(st, sizeof st, "%s/in/state_00000002_00000.bin", d);
    /* rank 0 of a 2-process ZeRO-1 run: half of the parameters */
    struct stat sb;
    cr_assert_eq(stat(tu_path(d, "m.bin"), &sb), 0);
    long n = (long)(sb.st_size - 1024) / 4;
    snprintf(cmd, sizeof cmd, PY " write %s %s/m.bin --step 2 --nproc 2 --count %ld", st, d,
             n / 2);
    py(d, cmd, "llmc_state: wrote");
    snprintf(args, sizeof args, "%s --steps 3 --resume-llmc %s", tc_model_args(d), st);
    tc_run_expect(d, args, 1, "holds a ZeRO-1 slice");
    snprintf(cmd, sizeof cmd, PY " write %s %s/m.bin --step 2 --nproc 2", st, d);
    py(d, cmd, "llmc_state: wrote");
    tc_run_expect(d, args, 1, "written by rank 0 of 2 processes, read by rank 0 of 1");
    snprintf(cmd, sizeof cmd, PY " write %s %s/m.bin --step 2 --shuffle 1", st, d);
    py(d, cmd, "llmc_state: wrote");
    tc_run_expect(d, args, 1, "the llm.c run shuffled its data");
    snprintf(cmd, sizeof cmd, PY " write %s %s/m.bin --step 2 --shard 0 --sample 3", st, d);
    py(d, cmd, "llmc_state: wrote");
    tc_run_expect(d, args, 1, "its data position (shard 0, sample 3) is not in --train-data");
    snprintf(cmd, sizeof cmd, PY " write %s %s/m.bin --step 2", st, d);
    py(d, cmd, "llmc_state: wrote");
    snprintf(args, sizeof args, "%s --steps 1 --resume-llmc %s", tc_model_args(d), st);
    tc_run_expect(d, args, 1, "beyond --steps 1");
    /* flags that cannot go together: exit 2 before anything is read */
    snprintf(args, sizeof args, "%s --steps 3 --resume-llmc %s --resume=%s/in",
             tc_model_args(d), st, d);
    tc_run_expect(d, args, 2, "--resume-llmc continues an llm.c run");
    snprintf(args, sizeof args, "%s --steps 3 --save-checkpoint-llmc %s/x --shuffle 1",
             tc_model_args(d), d);
    tc_run_expect(d, args, 2, "need --shuffle 0");
    snprintf(args, sizeof args, "%s --steps 3 --resume-llmc %s --zero 1", tc_model_args(d), st);
    tc_run_expect(d, args, 2, "need --zero 0");
    snprintf(args, sizeof args, "%s --steps 3 --resume-llmc %s/in/state_2.bin",
             tc_model_args(d), d);
    tc_run_expect(d, args, 1, "--resume-llmc");
    snprintf(args, sizeof args, "%s --steps 3 --save-checkpoint-llmc %s/no/such/dir",
             tc_model_args(d), d);
    tc_run_expect(d, args, 1, "its parent folder must exist");
    tu_remove_tree(d);
}
