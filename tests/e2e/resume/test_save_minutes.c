/* tests/e2e/resume/test_save_minutes.c — end-to-end: --save-minutes, the saves paced by
 * wall-clock time, so that a crash or a kill -9 (which no handler sees)
 * costs at most that many minutes of training.
 *
 *  - a pace shorter than any step saves after every step, each save
 *    complete; 0 saves only at the end; the header line says which;
 *  - the pace's clock moved 2 minutes on before step 3, with a 1-minute
 *    pace (the clock-jump hook: no waiting): step 3 is saved (time passed)
 *    and steps 1, 2 and 4 are not (each ends well within a minute);
 *  - a run killed with SIGKILL after a time-paced save resumes from it and
 *    ends with the same parameters as a run never killed (bitwise);
 *  - 2 ranks (mpirun, a 3 s pace): rank 0's clock moved past the pace
 *    (the clock-jump hook) makes both save after that step, and a 4 s
 *    stall (a real sleep) on rank 1, which rank 0 waits out in the step's
 *    collectives, makes both save after that step too; every save is
 *    complete, and no other step is saved but the last (the decision is
 *    rank 0's, shared by a collective: ranks deciding by their own clocks,
 *    whose saves end at different moments, could split near the pace and
 *    hang in the save; that race is argued in ckpt/session.c, not shown
 *    here);
 *  - --save-minutes without --checkpoint-dir: exit 2, naming the flag; a
 *    run with nowhere to write its weights says so at start-up. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

#define MPIRUN "timeout 120 " TC_MPIRUN

/* 1 when DIR/step_0000000N holds a complete save (its COMPLETE file). */
static int saved(const char *dir, int step)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/step_%08d/COMPLETE", dir, step);
    return tu_exists(p);
}

static void run_expect(const char *env, const char *args, const char *prefix, int rc)
{
    int got = tc_run(env, args, prefix);
    char e[600];
    snprintf(e, sizeof e, "%s.err", prefix);
    char *msg = tu_read_file(e, NULL);
    cr_assert_eq(got, rc, "train_gpt %s\nexited %d, want %d: %s", args, got, rc, msg ? msg : "");
    free(msg);
}

/* Train `steps` steps of the tiny model under env with --save-minutes pace,
 * checkpoints in d/NAME (all kept), output to d/NAME.out and .err: exit 0. */
static void train_paced(const char *d, const char *name, const char *env, int steps,
                        const char *pace)
{
    char args[4096], prefix[700];
    snprintf(prefix, sizeof prefix, "%s/%s", d, name);
    snprintf(args, sizeof args, "%s --steps %d --checkpoint-dir %s --save-minutes %s --keep 0",
             tc_model_args(d), steps, prefix, pace);
    run_expect(env, args, prefix, 0);
}

Test(save_minutes, a_short_pace_saves_every_step_and_zero_only_the_end, .timeout = 120)
{
    char *d = tu_tempdir(), p[700], ck[700];
    tc_make_shards(d, 1, 400);
    /* 1e-6 minutes = 60 us: shorter than any step */
    train_paced(d, "ck", NULL, 4, "1e-6");
    snprintf(ck, sizeof ck, "%s/ck", d);
    for (int s = 1; s <= 4; s++) cr_expect(saved(ck, s), "step %d not saved", s);
    snprintf(p, sizeof p, "%s/ck.out", d);
    cr_expect(tc_file_has(p, "checkpoints: "), "the header names the saves");
    cr_expect(tc_file_has(p, ", 1e-06 minutes after the previous save, at the end and on a stop "
                             "(keeping all)"), "the header gives the pace");

    train_paced(d, "ck0", NULL, 4, "0");
    snprintf(ck, sizeof ck, "%s/ck0", d);
    for (int s = 1; s <= 3; s++) cr_expect(!saved(ck, s), "step %d saved with the pace off", s);
    cr_expect(saved(ck, 4), "the last step is always saved");
    snprintf(p, sizeof p, "%s/ck0.out", d);
    cr_expect(tc_file_has(p, "ck0, at the end and on a stop (keeping all)"), "pace off");
    cr_expect(!tc_file_has(p, "minutes after"), "pace off");
    tu_remove_tree(d);
}

/* The pace's clock moves 120 s on before step 3 (the clock-jump hook, in
 * place of a real 2 s sleep against a 1.2 s pace: 2 s of the suite's
 * serial part, and a step 4 that had to end within 1.2 s of step 3's save
 * on a loaded machine); the pace is a minute, which a step of the tiny
 * model never takes. That the pace's clock is the wall's (a sleep passes
 * it) is the two-rank test's second half. */
Test(save_minutes, the_pace_is_time_not_steps, .timeout = 120)
{
    char *d = tu_tempdir(), ck[700];
    tc_make_shards(d, 1, 400);
    train_paced(d, "ck", "TRAIN_GPT_TEST_CLOCK_JUMP=0:3:120", 5, "1");
    snprintf(ck, sizeof ck, "%s/ck", d);
    cr_expect(!saved(ck, 1) && !saved(ck, 2), "steps 1 and 2 ended within a minute");
    cr_expect(saved(ck, 3), "2 minutes passed before step 3 ended: it must be saved");
    cr_expect(!saved(ck, 4), "step 4 ended within a minute of step 3's save");
    cr_expect(saved(ck, 5), "the last step");
    tu_remove_tree(d);
}

Test(save_minutes, a_run_killed_resumes_from_its_timed_save, .timeout = 180)
{
    char *d = tu_tempdir(), args[4096], p[700], ck[700], a[700], b[700];
    tc_make_shards(d, 2, 400);
    const char *m = tc_model_args(d);
    snprintf(a, sizeof a, "%s/whole.bin", d);
    snprintf(p, sizeof p, "%s/whole", d);
    snprintf(args, sizeof args, "%s --steps 8 --save %s", m, a);
    run_expect(NULL, args, p, 0);

    /* the same run, saving by time only, held at the start of step 4 (the
     * pause hook: step 3's save is done, step 4's not begun) so that the
     * kill lands while step 3's save is the newest */
    snprintf(ck, sizeof ck, "%s/ck", d);
    snprintf(b, sizeof b, "%s/resumed.bin", d);
    snprintf(args, sizeof args, "%s --steps 8 --checkpoint-dir %s --save-minutes 1e-6 --save %s",
             m, ck, b);
    snprintf(p, sizeof p, "%s/killed", d);
    char pause[4200]; /* tu_path's buffers are reused */
    snprintf(pause, sizeof pause, "%s", tu_path(d, "pause"));
    pid_t pid = tc_spawn(tc_pause_env(pause, "step:4"), args, p);
    cr_assert(tc_paused(pause, "step:4", 60000), "the run did not reach step 4");
    cr_assert(saved(ck, 3), "held at step 4's start, step 3 is not saved");
    cr_assert(!saved(ck, 4), "held at step 4's start, step 4 is saved");
    kill(pid, SIGKILL);
    tc_wait(pid, 10000);
    cr_assert(!tu_exists(b), "a killed run writes no --save");

    snprintf(p, sizeof p, "%s/resume", d);
    snprintf(args, sizeof args, "%s --steps 8 --checkpoint-dir %s --resume --save %s", m, ck, b);
    run_expect(NULL, args, p, 0);
    snprintf(p, sizeof p, "%s/resume.out", d);
    cr_expect(tc_file_has(p, "step_00000003"), "the resume must start from step 3's save");
    cr_expect(tc_files_equal(a, b), "killed and resumed must end as the unbroken run");
    tu_remove_tree(d);
}

Test(save_minutes, two_ranks_save_together_by_rank_0s_clock, .timeout = 180)
{
    char *d = tu_tempdir(), cmd[8192], ck[700];
    tc_make_shards(d, 2, 400);
    snprintf(ck, sizeof ck, "%s/ck", d);
    /* rank 0's clock moves past the pace before step 3 (no sleep: rank 1's
     * does not move), so rank 0 decides to save there, and rank 1 saves
     * with it; at steps 2 and 4 the clock has not passed the pace */
    snprintf(cmd, sizeof cmd, "TRAIN_GPT_TEST_CLOCK_JUMP=0:3:4 %s -np 2 %s %s --steps 4 "
             "--checkpoint-dir %s --save-minutes 0.05 --keep 0 >%s/t.out 2>%s/t.err", MPIRUN,
             tc_bin(), tc_model_args(d), ck, d, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    cr_expect(saved(ck, 3), "the stalled step is saved, by both ranks (COMPLETE)");
    cr_expect(!saved(ck, 2), "step 2 is within the pace");
    cr_expect(saved(ck, 4), "the last step");

    /* rank 1 alone stalls: rank 0 waits for it in the step's collectives,
     * so rank 0's clock passes the pace too and both save after step 2 */
    snprintf(ck, sizeof ck, "%s/ck1", d);
    snprintf(cmd, sizeof cmd, "TRAIN_GPT_TEST_STALL=1:2:4 %s -np 2 %s %s --steps 4 "
             "--checkpoint-dir %s --save-minutes 0.05 --keep 0 >%s/u.out 2>%s/u.err", MPIRUN,
             tc_bin(), tc_model_args(d), ck, d, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    cr_expect(saved(ck, 2) && saved(ck, 4), "steps 2 and 4 saved");
    tu_remove_tree(d);
}

Test(save_minutes, without_a_checkpoint_dir_is_a_usage_error)
{
    char *d = tu_tempdir(), args[4096], p[700];
    tc_make_shards(d, 1, 400);
    snprintf(p, sizeof p, "%s/a", d);
    snprintf(args, sizeof args, "%s --steps 1 --save-minutes 5", tc_model_args(d));
    run_expect(NULL, args, p, 2);
    snprintf(p, sizeof p, "%s/a.err", d);
    cr_expect(tc_file_has(p, "--save-minutes: needs --checkpoint-dir DIR"), "names the flag");
    /* the default pace without --checkpoint-dir is no error: there is
     * nowhere to save, and nothing asked for */
    snprintf(p, sizeof p, "%s/b", d);
    snprintf(args, sizeof args, "%s --steps 1", tc_model_args(d));
    run_expect(NULL, args, p, 0);
    /* but a run that writes its weights nowhere says so before it trains */
    snprintf(p, sizeof p, "%s/b.out", d);
    cr_expect(tc_file_has(p, "note: no --save, --checkpoint-dir or --save-checkpoint-llmc: the "
                             "trained weights will not be written"), "the run must warn");
    snprintf(p, sizeof p, "%s/c", d);
    snprintf(args, sizeof args, "%s --steps 1 --save %s/m.bin", tc_model_args(d), d);
    run_expect(NULL, args, p, 0);
    snprintf(p, sizeof p, "%s/c.out", d);
    cr_expect(!tc_file_has(p, "will not be written"), "--save given: no note");
    tu_remove_tree(d);
}
