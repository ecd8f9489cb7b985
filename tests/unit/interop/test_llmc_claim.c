/* tests/unit/interop/test_llmc_claim.c — interop/llmc_claim.h: an llm.c
 * export folder's files, sorted out by step before a run writes its own.
 * A new run refuses them naming the newest (DONE_ preferred), moves them
 * into replaced_<time>/ only with --overwrite-checkpoints; a run resumed at
 * step R keeps steps up to R, reports R as already there, and moves later
 * steps into abandoned/. Nothing is deleted; other files are not touched. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interop/llmc_claim.h"
#include "tests/lib/test_util.h"

/* The llm.c trio of one step (one rank): model, state and DONE files,
 * each holding its own name so a move can be checked byte for byte. */
static void make_step(const char *dir, int step)
{
    char name[64];
    snprintf(name, sizeof name, "model_%08d.bin", step);
    tu_write_text(tu_path(dir, name), name);
    snprintf(name, sizeof name, "state_%08d_%05d.bin", step, 0);
    tu_write_text(tu_path(dir, name), name);
    snprintf(name, sizeof name, "DONE_%08d", step);
    tu_write_text(tu_path(dir, name), name);
}

static int holds(const char *dir, const char *rel, const char *text)
{
    if (!tu_exists(tu_path(dir, rel))) return 0;
    char *got = tu_read_file(tu_path(dir, rel), NULL);
    int same = got && strcmp(got, text) == 0;
    free(got);
    return same;
}

Test(llmc_claim, a_missing_or_empty_folder_has_nothing_to_claim)
{
    char *d = tu_tempdir(), err[1024] = "";
    int kept = 7;
    cr_expect_eq(llmc_claim(tu_path(d, "absent"), -1, 0, 1, &kept, err, sizeof err), 0, "%s", err);
    cr_expect_eq(kept, -1);
    cr_expect_eq(llmc_claim(d, -1, 0, 1, &kept, err, sizeof err), 0, "%s", err);
    tu_remove_tree(d);
}

Test(llmc_claim, a_new_run_refuses_another_runs_files_naming_the_newest)
{
    char *d = tu_tempdir(), err[2048] = "";
    make_step(d, 10);
    make_step(d, 20);
    tu_write_text(tu_path(d, "notes.txt"), "the user's");
    int kept;
    cr_expect_eq(llmc_claim(d, -1, 0, 1, &kept, err, sizeof err), -1);
    cr_expect(strstr(err, "holds 6 llm.c checkpoint files of another run"), "%s", err);
    char newest[4200];
    snprintf(newest, sizeof newest, "newest %s/DONE_00000020", d);
    cr_expect(strstr(err, newest), "DONE_ names the newest step: %s", err);
    cr_expect(strstr(err, "--resume-llmc") && strstr(err, "--overwrite-checkpoints"), "%s", err);
    cr_expect(holds(d, "model_00000010.bin", "model_00000010.bin"));
    cr_expect(holds(d, "DONE_00000020", "DONE_00000020"));
    tu_remove_tree(d);
}

Test(llmc_claim, overwrite_moves_every_llmc_file_aside_and_only_those)
{
    char *d = tu_tempdir(), err[2048] = "";
    make_step(d, 10);
    tu_write_text(tu_path(d, "notes.txt"), "the user's");
    int kept;
    cr_expect_eq(llmc_claim(d, -1, 1, 0, &kept, err, sizeof err), 0, "%s", err);
    cr_expect(holds(d, "model_00000010.bin", "model_00000010.bin"), "move 0 only checks");
    cr_expect_eq(llmc_claim(d, -1, 1, 1, &kept, err, sizeof err), 0, "%s", err);
    cr_expect(!tu_exists(tu_path(d, "model_00000010.bin")));
    cr_expect(holds(d, "notes.txt", "the user's"), "not an llm.c file: untouched");
    char cmd[4300], *out = NULL;
    snprintf(cmd, sizeof cmd, "cd '%s' && ls replaced_*/ | sort", d);
    cr_assert_eq(tu_run_output(cmd, &out, NULL), 0);
    cr_expect_str_eq(out, "DONE_00000010\nmodel_00000010.bin\nstate_00000010_00000.bin\n", "%s",
                     out);
    free(out);
    tu_remove_tree(d);
}

Test(llmc_claim, a_resume_keeps_its_history_and_abandons_later_steps)
{
    char *d = tu_tempdir(), err[2048] = "";
    make_step(d, 10);
    make_step(d, 20);
    make_step(d, 30);
    int kept;
    cr_expect_eq(llmc_claim(d, 20, 0, 1, &kept, err, sizeof err), 0, "%s", err);
    cr_expect_eq(kept, 20, "step 20's files are there: not exported again");
    cr_expect(holds(d, "model_00000010.bin", "model_00000010.bin"));
    cr_expect(holds(d, "state_00000020_00000.bin", "state_00000020_00000.bin"));
    cr_expect(!tu_exists(tu_path(d, "model_00000030.bin")));
    cr_expect(holds(d, "abandoned/model_00000030.bin", "model_00000030.bin"));
    cr_expect(holds(d, "abandoned/DONE_00000030", "DONE_00000030"));
    tu_remove_tree(d);
}

/* Resumed at a step with no file in the folder: nothing kept, and with
 * move 0 the later steps stay until the run has started. */
Test(llmc_claim, a_resume_between_exports_keeps_nothing_of_its_step)
{
    char *d = tu_tempdir(), err[2048] = "";
    make_step(d, 10);
    make_step(d, 30);
    int kept;
    cr_expect_eq(llmc_claim(d, 20, 0, 0, &kept, err, sizeof err), 0, "%s", err);
    cr_expect_eq(kept, -1);
    cr_expect(holds(d, "model_00000030.bin", "model_00000030.bin"), "move 0 only checks");
    tu_remove_tree(d);
}
