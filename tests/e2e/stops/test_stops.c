/* tests/e2e/stops/test_stops.c — end-to-end: a signal stops ./train_gpt at the next
 * block boundary, wherever it is, and the run keeps what its flags ask.
 *
 * Each signal is sent while the run is held by the pause hook
 * (TRAIN_GPT_TEST_PAUSE_AT, base/fileio.h) at a named point: the start of a
 * step, a block of a val batch or of --generate, the in-step line drawn, the
 * --save written by a stop; the signal ends the pause, and each test checks
 * from the output that the stop came there, not at the end of the step.
 *
 *  - mid-step with --checkpoint-dir: exit 75, the step in progress is
 *    discarded, the save is of the previous step, and resuming it matches an
 *    uninterrupted run bitwise (losses and final parameters);
 *  - mid-step with only --save: exit 76, and the file is bitwise the model
 *    an uninterrupted run of the completed steps saves;
 *  - mid-step with neither: exit 77 and a line saying nothing was saved;
 *  - inside the first step after a resume (--resume or --resume-llmc):
 *    exit 75, naming the save resumed from as still the newest;
 *  - during the val loss before step 1, and during --generate: exit 77;
 *  - a second signal while --save's temp file is open: exit 128 + 15 at
 *    once, neither the file nor its temp left behind;
 *  - Ctrl-C typed into a terminal (a pty from script(1)): the in-step
 *    progress line is drawn, and the SIGINT stops the step. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt/checkpoint.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

/* Start the run held at the start of step 3 (its pause file d/pause),
 * signal it there, and return its exit status (-1 if it did not exit). The
 * signal ends the pause; the step's first block boundary abandons it. */
static int stop_in_step_3(const char *d, const char *args, const char *tag, int sig)
{
    const char *pause = tu_path(d, "pause");
    pid_t pid = tc_spawn(tc_pause_env(pause, "step:3"), args, tu_path(d, tag));
    cr_assert(tc_paused(pause, "step:3", 60000), "the run did not reach step 3");
    kill(pid, sig);
    int st = tc_wait(pid, 30000);
    tc_release(pause);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* 400 ms a block: a step of the 2-layer model (4 blocks and the head) lasts
 * 2 s, so the in-step line (drawn after 1 s) appears inside step 2. */
#define SLOW "TRAIN_GPT_TEST_BLOCK_DELAY_MS=400"

Test(stops, mid_step_checkpoint_resumes_bitwise, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 6 --checkpoint-dir %s/ck --log %s", m, d,
             tu_path(d, "s.jsonl"));
    cr_assert_eq(stop_in_step_3(d, args, "s", SIGTERM), 75);
    cr_expect(tc_file_has(tu_path(d, "s.out"),
                          "stopped by signal 15 during step 3 (its partial work "
                          "is discarded); step 2 is saved in "),
              "the stop came inside step 3, and step 2 was saved");
    cr_expect_eq(tc_log_losses(tu_path(d, "s.jsonl"), NULL, NULL, NULL, TC_MAX_STEPS), 2);
    char sd[1024], err[512];
    int step;
    cr_assert_eq(ckpt_find_latest(tu_path(d, "ck"), sd, sizeof sd, &step, err, sizeof err), 1);
    cr_expect_eq(step, 2);
    /* Resume to 6 and compare with 6 uninterrupted steps. */
    snprintf(args, sizeof args, "%s --steps 6 --checkpoint-dir %s/ck --resume --log %s --save %s",
             m, d, tu_path(d, "s.jsonl"), tu_path(d, "resumed.bin"));
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "r")), 0);
    snprintf(args, sizeof args, "%s --steps 6 --log %s --save %s", m, tu_path(d, "ref.jsonl"),
             tu_path(d, "ref.bin"));
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "ref")), 0);
    int sa[8], sb[8];
    double la[8], lb[8];
    cr_assert_eq(tc_log_losses(tu_path(d, "s.jsonl"), sa, la, NULL, 8), 6);
    cr_assert_eq(tc_log_losses(tu_path(d, "ref.jsonl"), sb, lb, NULL, 8), 6);
    for (int i = 0; i < 6; i++)
        cr_expect(sa[i] == sb[i] && la[i] == lb[i], "step %d: loss %.17g, uninterrupted %.17g",
                  sb[i], la[i], lb[i]);
    cr_expect(tc_files_equal(tu_path(d, "resumed.bin"), tu_path(d, "ref.bin")),
              "the resumed parameters differ from the uninterrupted run's");
    free(d);
}

Test(stops, mid_step_with_save_writes_the_last_step, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 6 --save %s", m, tu_path(d, "s.bin"));
    cr_assert_eq(stop_in_step_3(d, args, "s", SIGTERM), 76);
    cr_expect(tc_file_has(tu_path(d, "s.out"),
                          "during step 3 (its partial work is discarded); the "
                          "model after step 2 is in "));
    cr_expect(tc_file_has(tu_path(d, "s.out"), "(a model file only: not resumable)"));
    snprintf(args, sizeof args, "%s --steps 2 --save %s", m, tu_path(d, "ref.bin"));
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "ref")), 0);
    cr_expect(tc_files_equal(tu_path(d, "s.bin"), tu_path(d, "ref.bin")),
              "--save after a stop is not the model of the completed steps");
    free(d);
}

Test(stops, mid_step_without_save_says_so, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s --steps 6", tc_model_args(d));
    cr_assert_eq(stop_in_step_3(d, args, "s", SIGINT), 77);
    cr_expect(tc_file_has(tu_path(d, "s.out"),
                          "stopped by signal 2 during step 3 (its partial work "
                          "is discarded); nothing saved (no --checkpoint-dir or "
                          "--save): the 2 steps trained are lost"));
    cr_expect(tc_file_has(tu_path(d, "s.err"), "signal received: stopping at the next block"));
    free(d);
}

/* Stop a resumed run of 6 steps (resumed at step 2) in step 3: its first
 * step. Returns the exit status; its output is in d/TAG.out. */
static int stop_first_step_after_resume(const char *d, const char *resume_flags, const char *tag)
{
    char args[9000];
    snprintf(args, sizeof args, "%s --steps 6 %s", tc_model_args(d), resume_flags);
    return stop_in_step_3(d, args, tag, SIGTERM);
}

Test(stops, first_step_after_a_resume_keeps_the_save, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], want[2048];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/ck --save-checkpoint-llmc "
             "%s/lc", tc_model_args(d), d, d);
    tc_run_expect(d, args, 0, "llm.c checkpoint of step 2 written");

    snprintf(args, sizeof args, "--checkpoint-dir %s/ck --resume", d);
    cr_expect_eq(stop_first_step_after_resume(d, args, "r1"), 75);
    snprintf(want, sizeof want, "during step 3 (its partial work is discarded); no step "
             "finished since the resume: %s/ck/step_00000002 is still the newest save; resume "
             "with --resume", d);
    cr_expect(tc_file_has(tu_path(d, "r1.out"), want), "%s", want);

    snprintf(args, sizeof args, "--resume-llmc %s/lc", d);
    cr_expect_eq(stop_first_step_after_resume(d, args, "r2"), 75);
    snprintf(want, sizeof want, "during step 3 (its partial work is discarded); no step "
             "finished since the resume: llm.c's checkpoint of step 2 in %s/lc is still the "
             "newest; resume with --resume-llmc", d);
    cr_expect(tc_file_has(tu_path(d, "r2.out"), want), "%s", want);
    free(d);
}

Test(stops, during_validation, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    /* held at a block of the second val batch */
    snprintf(args, sizeof args, "%s --steps 6 --val-every 1 --val-batches 50", tc_model_args(d));
    const char *pause = tu_path(d, "pause");
    pid_t pid = tc_spawn(tc_pause_env(pause, "block:val 2/50"), args, tu_path(d, "s"));
    cr_assert(tc_paused(pause, "block:val 2/50", 60000), "the val loss did not reach batch 2");
    kill(pid, SIGTERM);
    int st = tc_wait(pid, 30000);
    cr_assert(st != -1 && WIFEXITED(st));
    cr_expect_eq(WEXITSTATUS(st), 77);
    cr_expect(tc_file_has(tu_path(d, "s.out"),
                          "stopped by signal 15 during the val loss before step "
                          "1; nothing saved: no step had finished"));
    cr_expect(!tc_file_has(tu_path(d, "s.out"), "val 50/50"), "the val loss ran to its end");
    free(d);
}

Test(stops, during_generate, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s --steps 0 --save %s", tc_model_args(d), tu_path(d, "m.bin"));
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "init")), 0);
    /* 1000 tokens, held at the first block of --generate's model */
    snprintf(args, sizeof args, "--init-from %s --seq-len 16 --generate 1000 --threads 1 --device cpu",
             tu_path(d, "m.bin"));
    const char *pause = tu_path(d, "pause");
    pid_t pid = tc_spawn(tc_pause_env(pause, "block"), args, tu_path(d, "g"));
    cr_assert(tc_paused(pause, "block", 30000), "--generate did not start");
    kill(pid, SIGTERM);
    int st = tc_wait(pid, 10000);
    struct stat sb;
    cr_assert(st != -1 && WIFEXITED(st), "--generate did not stop on SIGTERM");
    cr_expect_eq(WEXITSTATUS(st), 77);
    cr_expect(tc_file_has(tu_path(d, "g.out"),
                          "stopped by signal 15 during --generate; nothing to "
                          "save"));
    cr_assert_eq(stat(tu_path(d, "g.out"), &sb), 0);
    cr_expect_lt(sb.st_size, 600, "%lld bytes out: generation went on", (long long)sb.st_size);
    free(d);
}

Test(stops, second_signal_leaves_no_temp_file, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s --steps 6 --save %s", tc_model_args(d), tu_path(d, "m.bin"));
    /* held at step 2's start for the first signal, then in the --save that
     * stop writes, its temp file open, for the second */
    const char *pause = tu_path(d, "pause");
    pid_t pid = tc_spawn(tc_pause_env(pause, "step:2,commit:m.bin"), args, tu_path(d, "s"));
    cr_assert(tc_paused(pause, "step:2", 60000), "the run did not reach step 2");
    kill(pid, SIGTERM);
    cr_assert(tc_paused(pause, "commit:m.bin", 20000), "the stop did not start writing --save");
    struct stat sb;
    cr_assert_eq(stat(tu_path(d, "m.bin.tmp"), &sb), 0, "--save's temp file is not there");
    kill(pid, SIGTERM);
    int st = tc_wait(pid, 1000);
    cr_assert(st != -1 && WIFEXITED(st), "the second signal did not end the run at once");
    cr_expect_eq(WEXITSTATUS(st), 128 + SIGTERM);
    cr_expect_neq(stat(tu_path(d, "m.bin.tmp"), &sb), 0, "the temp file was left behind");
    cr_expect_neq(stat(tu_path(d, "m.bin"), &sb), 0, "a file appeared under the final name");
    free(d);
}

/* Run ./train_gpt under script(1) (tc_spawn_in_pty); returns script's pid. */
static pid_t spawn_in_pty(const char *env, const char *args, const char *out, int *to_tty)
{
    char cmd[16384];
    /* exec: no shell stays between script and the trainer, so the exit status
     * is the trainer's whichever shell $SHELL names (dash dies of the SIGINT) */
    snprintf(cmd, sizeof cmd, "exec env %s %s %s", env, tc_bin(), args);
    return tc_spawn_in_pty(cmd, out, to_tty);
}

Test(stops, ctrl_c_in_a_terminal, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s --steps 6", tc_model_args(d));
    int tty;
    /* held once the in-step line of step 2 is drawn (after 1 s of the step) */
    const char *pause = tu_path(d, "pause");
    char env[4600];
    snprintf(env, sizeof env, "%s %s", SLOW, tc_pause_env(pause, "drawn:step 2/6"));
    pid_t pid = spawn_in_pty(env, args, tu_path(d, "t.out"), &tty);
    cr_assert(tc_paused(pause, "drawn:step 2/6", 60000), "no progress line inside step 2");
    /* already written to the pty; script(1) copies it to t.out */
    cr_assert(tc_wait_for_text(tu_path(d, "t.out"), "\r\033[Kstep 2/6: forward", 30000),
              "the in-step line of step 2 is not a forward's");
    cr_assert_eq(write(tty, "\003", 1), 1); /* Ctrl-C */
    int st = tc_wait(pid, 30000);
    close(tty);
    cr_assert(st != -1 && WIFEXITED(st), "script did not exit");
    cr_expect_eq(WEXITSTATUS(st), 77);
    cr_expect(tc_file_has(tu_path(d, "t.out"), "stopped by signal 2 during step 2"));
    cr_expect(tc_file_has(tu_path(d, "t.out"),
                          "\r\033[Kstep     1/6 | loss"),
              "the step line does not erase the progress line before it");
    free(d);
}
