/* tests/unit/ckpt/test_ownership.c — ckpt/ownership.h: a checkpoint folder
 * belongs to one run at a time. The lock refuses a second holder by name;
 * the claim refuses another run's saves, moves them into replaced_<time>/
 * only when asked, moves this run's newer saves into abandoned/, leaves
 * saves cut short where they are, and deletes nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/fileio.h"
#include "ckpt/checkpoint.h"
#include "ckpt/ownership.h"
#include "tests/lib/test_util.h"

/* One small file of a save, with its manifest entry. */
static CkptFile put(const char *step_dir, const char *name, const char *body)
{
    char err[512];
    size_t n = strlen(body);
    cr_assert_eq(io_write_file(tu_path(step_dir, name), body, n, NULL, 0, err, sizeof err), 0,
                 "%s", err);
    CkptFile f = {.bytes = n, .crc = (uint32_t)crc32(0L, (const Bytef *)body, (uInt)n)};
    snprintf(f.name, sizeof f.name, "%s", name);
    return f;
}

/* A complete save of `step` by run `run_id` (0: a version 1 save, without
 * an identity): the two files a one-rank save holds, with stand-in bytes,
 * and its COMPLETE manifest, as ckpt_commit writes it. */
static void make_save(const char *dir, int step, uint64_t run_id)
{
    char step_dir[4200], err[512], body[64];
    cr_assert_eq(ckpt_begin(dir, step, step_dir, sizeof step_dir, err, sizeof err), 0, "%s", err);
    snprintf(body, sizeof body, "weights of step %d", step);
    CkptFile f[2] = {put(step_dir, "model.bin", body), put(step_dir, "state_r00000.bin", "m v")};
    CkptIdentity id = {.run_id = run_id, .config_hash = 7};
    cr_assert_eq(ckpt_commit(dir, step_dir, step, 1, f, 2, 0, run_id ? &id : NULL, err,
                             sizeof err), 0, "%s", err);
}

static CkptEntry resumed_at(int step, uint64_t run_id)
{
    CkptEntry e = {.step = step, .complete = 1, .has_identity = 1};
    e.id.run_id = run_id;
    e.id.config_hash = 7;
    return e;
}

static int has(const char *dir, const char *rel)
{
    return tu_exists(tu_path(dir, rel));
}

/* The first replaced_<time>/ folder in dir, or NULL. */
static char *replaced_folder(const char *dir)
{
    char cmd[4300], *out = NULL;
    snprintf(cmd, sizeof cmd, "ls -d '%s'/replaced_* 2>/dev/null | head -1", dir);
    tu_run_output(cmd, &out, NULL);
    if (out && *out) {
        out[strcspn(out, "\n")] = 0;
        return out;
    }
    free(out);
    return NULL;
}

Test(ownership, a_second_lock_is_refused_naming_the_holder)
{
    char *d = tu_tempdir(), err[1024] = "";
    OwnLock a = {.fd = -1}, b = {.fd = -1};
    cr_assert_eq(own_lock(&a, "--checkpoint-dir", d, err, sizeof err), 0, "%s", err);
    cr_assert_geq(a.fd, 0);
    cr_expect(has(d, OWN_LOCK_FILE));
    cr_expect_eq(own_lock(&b, "--checkpoint-dir", d, err, sizeof err), -1);
    char pid[32];
    snprintf(pid, sizeof pid, "pid %d", (int)getpid());
    cr_expect(strstr(err, "--checkpoint-dir") && strstr(err, pid), "%s", err);
    own_unlock(&a);
    cr_expect_eq(a.fd, -1);
    cr_expect_eq(own_lock(&b, "--checkpoint-dir", d, err, sizeof err), 0,
                 "free once released: %s", err);
    own_unlock(&b);
    tu_remove_tree(d);
}

Test(ownership, run_ids_are_fresh_and_never_zero)
{
    uint64_t seen[64];
    for (int i = 0; i < 64; i++) {
        seen[i] = own_new_run_id();
        cr_expect_neq(seen[i], 0);
        for (int j = 0; j < i; j++) cr_expect_neq(seen[i], seen[j]);
    }
}

/* A new run refuses another run's saves, naming the run and the newest
 * save, and changes nothing. */
Test(ownership, a_new_run_refuses_another_runs_saves)
{
    char *d = tu_tempdir(), err[2048] = "";
    make_save(d, 2, 0xabcdef0123456789ull);
    make_save(d, 4, 0xabcdef0123456789ull);
    cr_expect_eq(own_claim(d, NULL, 0, 1, err, sizeof err), -1);
    cr_expect(strstr(err, "holds 2 saves of another run (run id abcdef0123456789; newest "
                          "step_00000004)"), "%s", err);
    cr_expect(strstr(err, "--overwrite-checkpoints"), "%s", err);
    cr_expect(has(d, "step_00000002/COMPLETE") && has(d, "step_00000004/COMPLETE"));
    cr_expect_null(replaced_folder(d));
    tu_remove_tree(d);
}

/* With --overwrite-checkpoints the saves move into replaced_<time>/ whole;
 * with move 0 (the start-up check) nothing moves yet. */
Test(ownership, overwrite_moves_them_aside_and_deletes_nothing)
{
    char *d = tu_tempdir(), err[2048] = "";
    make_save(d, 3, 42);
    cr_expect_eq(own_claim(d, NULL, 1, 0, err, sizeof err), 0, "%s", err);
    cr_expect(has(d, "step_00000003/COMPLETE"), "move 0 only checks");
    cr_expect_eq(own_claim(d, NULL, 1, 1, err, sizeof err), 0, "%s", err);
    cr_expect(!has(d, "step_00000003"));
    char *r = replaced_folder(d);
    cr_assert_not_null(r);
    char *got = tu_read_file(tu_path(r, "step_00000003/model.bin"), NULL);
    cr_expect_str_eq(got, "weights of step 3");
    free(got);
    free(r);
    tu_remove_tree(d);
}

/* A resumed run keeps its saves up to the one resumed, moves its newer
 * ones into abandoned/ (a rollback), and leaves a folder without a
 * manifest (a save cut short) where it is. */
Test(ownership, a_resume_abandons_this_runs_newer_saves)
{
    char *d = tu_tempdir(), err[2048] = "";
    make_save(d, 2, 99);
    make_save(d, 4, 99);
    make_save(d, 6, 99);
    char cut[4200];
    snprintf(cut, sizeof cut, "mkdir -p '%s/step_00000008' && echo partial > '%s/step_00000008/"
             "model.bin'", d, d);
    cr_assert_eq(tu_run(cut), 0);
    CkptEntry at4 = resumed_at(4, 99);
    cr_expect_eq(own_claim(d, &at4, 0, 1, err, sizeof err), 0, "%s", err);
    cr_expect(has(d, "step_00000002/COMPLETE") && has(d, "step_00000004/COMPLETE"));
    cr_expect(!has(d, "step_00000006"));
    cr_expect(has(d, "abandoned/step_00000006/COMPLETE"));
    cr_expect(has(d, "step_00000008/model.bin"), "debris stays for the next save to reuse");
    tu_remove_tree(d);
}

/* Resuming one run in a folder that also holds another run's save is
 * refused: the message says the save is not of the run being resumed. */
Test(ownership, a_resume_refuses_a_foreign_save_beside_its_own)
{
    char *d = tu_tempdir(), err[2048] = "";
    make_save(d, 2, 99);
    make_save(d, 5, 1234);
    CkptEntry at2 = resumed_at(2, 99);
    cr_expect_eq(own_claim(d, &at2, 0, 1, err, sizeof err), -1);
    cr_expect(strstr(err, "not of the run being resumed") && strstr(err, "step_00000005"), "%s",
              err);
    cr_expect(has(d, "step_00000005/COMPLETE"));
    tu_remove_tree(d);
}

/* Saves made before run ids existed count as the resumed run's own. */
Test(ownership, version_1_saves_count_as_the_resumed_runs)
{
    char *d = tu_tempdir(), err[2048] = "";
    make_save(d, 2, 0);
    CkptEntry at2 = resumed_at(2, 99);
    cr_expect_eq(own_claim(d, &at2, 0, 1, err, sizeof err), 0, "%s", err);
    cr_expect(has(d, "step_00000002/COMPLETE"));
    cr_expect_eq(own_claim(d, NULL, 0, 0, err, sizeof err), -1, "a new run still refuses it");
    cr_expect(strstr(err, "made before saves carried a run id"), "%s", err);
    tu_remove_tree(d);
}
