/* cli/loop.c — the training loop and its stops (see cli/trainer.h).
 *
 * A signal is honoured at the next block boundary (model/gpt.h's block
 * hook, installed by cli/progress.c) with one rank: a step cut short is
 * discarded whole — no update ran, so parameters, AdamW state and the
 * sampler's RNG are those after the previous step, and the data loader is
 * moved back to where that step left it — which is why a save of the
 * previous step resumes bitwise like a run that never stopped. Under
 * several ranks the ranks must agree, so they stop together after the step
 * in progress. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/lr_schedule.h"
#include "ckpt/checkpoint.h"
#include "cli/outputs.h"
#include "base/signals.h"
#include "cli/trainer.h"
#include "cli/guard.h"

/* The signal any rank has received, or 0; every rank gets the same answer
 * (a collective under several ranks: a signal reaches the ranks at
 * different moments, and a rank without one takes SIGTERM). */
static int agreed_signal(Dist *d)
{
    int sig = signals_pending();
    if (d->world > 1 && dist_mean(d, sig != 0) > 0 && !sig) sig = SIGTERM;
    return sig;
}

void trainer_check_startup(Trainer *tr, const char *phase)
{
    int sig = agreed_signal(&tr->dist);
    if (!sig) return;
    /* Before session_settle and the output claims: nothing of the user's
     * was moved, no log or save written; only the checkpoint folders this
     * run made are there, and they go too. */
    int code = TRAIN_EXIT_STOPPED_NOTHING;
    char what[4600];
    if (tr->resume_dir[0]) {
        code = TRAIN_EXIT_STOPPED_RESUMABLE;
        snprintf(what, sizeof what, "no step had run since the save, %s, which is still there "
                 "(the same command resumes it)", tr->resume_dir);
    } else if (tr->opt.llmc_resume) {
        code = TRAIN_EXIT_STOPPED_RESUMABLE;
        snprintf(what, sizeof what, "no step had run since llm.c's checkpoint %s, which is still "
                 "there (the same command resumes it)", tr->llmc.from.state);
    } else {
        snprintf(what, sizeof what, "nothing saved: no step had run");
    }
    llmc_folder_abandon(&tr->llmc, &tr->opt, &tr->dist);
    session_abandon(&tr->sess);
    printf("stopped by signal %d during start-up (%s); %s; no file was written or moved\n", sig,
           phase, what);
    dist_finalize(&tr->dist);
    exit(code);
}

/* Record a stop after `step` completed steps; returns TRAIN_STOPPED. */
static int stopped(Trainer *tr, int sig, int step, const char *when)
{
    progress_clear(&tr->prog);
    tr->stop_sig = sig ? sig : tr->stop_sig ? tr->stop_sig : signals_pending();
    tr->stop_step = step;
    snprintf(tr->stop_when, sizeof tr->stop_when, "%s", when);
    return TRAIN_STOPPED;
}

/* The mean val loss over --val-batches micro-batches. Before this
 * process's first step each batch prints "val k/n" as it finishes (the
 * start-up is otherwise silent for minutes on a big model); later ones
 * show only on a terminal's in-step line. 0, -1 with err, or 1 when a
 * signal abandoned it: at a block with one rank, after the batch in
 * progress with several (agreed, tr->stop_sig set). */
static int eval_val(Trainer *tr, double *loss, char *err, size_t len)
{
    int n = tr->opt.val_batches, lines = tr->prog.done == 0;
    if (loader_reset(&tr->val, err, len) != 0) return -1;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        char label[64];
        snprintf(label, sizeof label, "val %d/%d", i + 1, n);
        progress_begin(&tr->prog, label, 0);
        if (loader_next(&tr->val, tr->inputs, tr->targets, err, len) != 0) return -1;
        sum += gpt_eval_loss(&tr->model, tr->inputs, tr->targets);
        if (tr->model.abandoned) return 1;
        progress_clear(&tr->prog);
        if (lines) printf("%s\n", label);
        /* several ranks (no stop at a block): all stop after the same batch */
        if (tr->dist.world > 1 && (tr->stop_sig = agreed_signal(&tr->dist)) != 0) return 1;
    }
    *loss = dist_mean(&tr->dist, sum / n);
    return 0;
}

/* The val loss after `step` steps, printed and logged; eval_val's returns. */
static int validate(Trainer *tr, int step, char *err, size_t len)
{
    double vl, t0 = progress_now_ms();
    int rc = eval_val(tr, &vl, err, len);
    if (rc != 0) return rc;
    progress_tail_measured(&tr->prog, PROGRESS_VAL, progress_now_ms() - t0);
    printf("step %5d | val loss %.6f\n", step, vl);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "step", step);
    cJSON_AddNumberToObject(j, "val_loss", vl);
    outputs_log(&tr->out, j);
    return 0;
}

/* --dump-grads FILE after step 1 (cli/outputs.h). Collective. */
static int dump_grads(Trainer *tr, double loss, char *err, size_t len)
{
    return outputs_dump_grads(&tr->out, &tr->opt, &tr->dist, tr->model.plan.num_params, loss,
                              err, len);
}

/* A sample after `step`; 1 when a signal abandoned it. */
static int print_sample(Trainer *tr, int step)
{
    char header[64];
    snprintf(header, sizeof header, "step %5d | sample", step);
    progress_begin(&tr->prog, "", 0); /* no in-step line across the sample's text */
    text_sampler_print(&tr->sampler, &tr->model, tr->opt.sample_tokens, header, stdout);
    return tr->model.abandoned;
}

enum { KEPT_CHECKPOINT = 1, KEPT_MODEL = 2 };

/* llm.c's checkpoint of `step` now (cli/llmc_folder.h). Collective. */
static int llmc_export(Trainer *tr, int step, char *err, size_t len)
{
    return llmc_folder_export(&tr->llmc, &tr->opt, step, &tr->model, &tr->dist, &tr->train,
                              &tr->sampler.rng, err, len);
}

/* --save's model file now (cli/outputs.h). Collective. */
static int save_model(Trainer *tr, char *err, size_t len)
{
    return outputs_save_model(&tr->out, &tr->opt, &tr->dist, &tr->cfg,
                              tr->model.plan.num_params, err, len);
}

/* A checkpoint of `step` (--checkpoint-dir's, or llm.c's export) failed
 * (err says how; the previous save is kept):
 * the weights after it exist only in memory, so --save's model file is
 * still written before the run exits 1 (rescued elsewhere when its own
 * write fails too, cli/outputs.h), and err says where it went.
 * Collective, as the failed save was. */
static void keep_model_after_failed_save(Trainer *tr, int step, char *err, size_t len)
{
    if (!tr->opt.save) return;
    char why[4400];
    size_t n = strlen(err);
    if (save_model(tr, why, sizeof why) == 0)
        snprintf(err + n, len - n, "; the model after step %d is in %s (not resumable)", step,
                 tr->opt.save);
    else
        snprintf(err + n, len - n, "; %s", why);
}

/* Keep what the flags ask for after `step` completed steps: the checkpoint
 * (--checkpoint-dir) and the model file (--save). Writes a description of
 * what was kept into what; returns a mask of KEPT_*, or -1 with err.
 * Collective. */
static int keep_run(Trainer *tr, int step, char *what, size_t wlen, char *err, size_t len)
{
    if (step == tr->start_step) { /* this process finished no step */
        if (tr->resume_dir[0]) {
            snprintf(what, wlen, "no step finished since the resume: %s is still the newest "
                     "save; resume with --resume", tr->resume_dir);
            return KEPT_CHECKPOINT;
        }
        if (tr->llmc.from.step >= 0) {
            snprintf(what, wlen, "no step finished since the resume: llm.c's checkpoint of step "
                     "%d in %s is still the newest; resume with --resume-llmc",
                     tr->llmc.from.step, tr->llmc.from.dir);
            return KEPT_CHECKPOINT;
        }
        snprintf(what, wlen, "nothing saved: no step had finished");
        return 0;
    }
    int kept = 0;
    what[0] = 0;
    if (tr->sess.dir[0]) {
        if (session_save(&tr->sess, &tr->model, &tr->dist, &tr->train, &tr->sampler.rng, step,
                         tr->bad_steps, err, len) != 0) {
            keep_model_after_failed_save(tr, step, err, len);
            return -1;
        }
        char sd[4200];
        ckpt_step_dir(sd, sizeof sd, tr->sess.dir, step);
        snprintf(what, wlen, "step %d is saved in %s (resume with --resume)", step, sd);
        kept |= KEPT_CHECKPOINT;
    }
    if (tr->opt.save) {
        if (save_model(tr, err, len) != 0) return -1;
        size_t n = strlen(what);
        snprintf(what + n, wlen - n, "%sthe model after step %d is in %s%s", n ? "; " : "", step,
                 tr->opt.save, kept ? "" : " (a model file only: not resumable)");
        kept |= KEPT_MODEL;
    }
    if (tr->opt.llmc_save_dir) { /* resumable too, with --resume-llmc */
        if (llmc_export(tr, step, err, len) != 0) return -1;
        size_t n = strlen(what);
        snprintf(what + n, wlen - n, "%sllm.c's checkpoint of step %d is in %s (resume with "
                 "--resume-llmc)", n ? "; " : "", step, tr->opt.llmc_save_dir);
        kept |= KEPT_CHECKPOINT;
    }
    if (!kept)
        snprintf(what, wlen, "nothing saved (no --checkpoint-dir or --save): the %d step%s "
                 "trained are lost", step - tr->start_step, step - tr->start_step == 1 ? "" : "s");
    return kept;
}

int train_stop(Trainer *tr, char *err, size_t len)
{
    char what[9000];
    int kept = keep_run(tr, tr->stop_step, what, sizeof what, err, len);
    if (kept < 0) return -1;
    printf("stopped by signal %d %s; %s\n", tr->stop_sig, tr->stop_when, what);
    return kept & KEPT_CHECKPOINT ? TRAIN_EXIT_STOPPED_RESUMABLE
           : kept & KEPT_MODEL    ? TRAIN_EXIT_STOPPED_MODEL
                                  : TRAIN_EXIT_STOPPED_NOTHING;
}

/* --max-bad-steps reached after `step`: keep what the flags ask, say so.
 * Every rank gets here at the same step (the loss and the gradient norm
 * are reduced over the ranks), so rank 0 alone says it; a failed save is
 * said by each rank that saw it. */
static int abort_nonfinite(Trainer *tr, int step, char *err, size_t len)
{
    int says = tr->dist.rank == 0;
    if (says)
        fprintf(stderr, "error: %d consecutive steps (up to step %d) had a non-finite loss or "
                "gradient norm (--max-bad-steps %d): aborting\n", tr->bad_steps, step,
                tr->opt.max_bad_steps);
    char what[9000];
    if (keep_run(tr, step, what, sizeof what, err, len) < 0)
        fprintf(stderr, "error: %s\n", err); /* a save's fault may be this rank's alone */
    else if (says)
        fprintf(stderr, "aborted after step %d: %s\n", step, what);
    if (says) guard_print_rollback(&tr->sess, tr->argc, tr->argv, step, tr->bad_steps);
    return TRAIN_EXIT_NONFINITE;
}

int train_loop(Trainer *tr, char *err, size_t len)
{
    const TrainOptions *o = &tr->opt;
    Dist *d = &tr->dist;
    AdamWConfig adam = {o->lr, o->beta1, o->beta2, o->eps, o->weight_decay, o->grad_clip};
    /* Each rank's share of the mean over the global batch: the ranks' summed
     * gradients are then the global mean's. */
    float dloss = 1.0f / ((float)o->batch * o->seq_len * o->grad_accum * d->world);
    double tokens_per_step = (double)o->batch * o->seq_len * o->grad_accum * d->world;
    char when[96];
    for (int step = tr->start_step + 1; step <= o->steps; step++) {
        /* where the data stood after the previous step: a stop inside this
         * one goes back there */
        uint64_t epoch = tr->train.epoch;
        int shard = tr->train.shard_pos;
        long window = tr->train.window_pos;
        if (tr->have_eval && o->eval_every > 0 && (step - 1) % o->eval_every == 0) {
            double t0 = progress_now_ms();
            if (train_eval_run(&tr->eval, &tr->model, d, step - 1, &tr->out.log, err, len) != 0)
                return -1;
            progress_tail_measured(&tr->prog, PROGRESS_EVAL, progress_now_ms() - t0);
        }
        if (tr->have_val && o->val_every > 0 && (step - 1) % o->val_every == 0) {
            int rc = validate(tr, step - 1, err, len);
            if (rc < 0) return -1;
            snprintf(when, sizeof when, "during the val loss before step %d", step);
            if (rc > 0) return stopped(tr, 0, step - 1, when);
        }
        session_test_stall(&tr->sess, step);
        char label[64];
        snprintf(label, sizeof label, "step %d/%d", step, o->steps);
        progress_begin(&tr->prog, label, 1);
        double t0 = progress_now_ms(), loss = 0.0;
        gpt_zero_grads(&tr->model);
        for (int micro = 0; micro < o->grad_accum; micro++) {
            if (o->grad_accum > 1) { /* the in-step line names the micro-batch */
                snprintf(label, sizeof label, "step %d/%d, micro-batch %d/%d", step, o->steps,
                         micro + 1, o->grad_accum);
                progress_relabel(&tr->prog, label);
            }
            if (loader_next(&tr->train, tr->inputs, tr->targets, err, len) != 0) return -1;
            dist_begin_micro(d, micro == o->grad_accum - 1);
            loss += gpt_forward_backward(&tr->model, tr->inputs, tr->targets, dloss);
            if (tr->model.abandoned) {
                if (loader_seek(&tr->train, epoch, shard, window, err, len) != 0) return -1;
                snprintf(when, sizeof when, "during step %d (its partial work is discarded)",
                         step);
                return stopped(tr, 0, step - 1, when);
            }
        }
        dist_finish_grads(d);
        loss = dist_mean(d, loss / o->grad_accum);
        session_test_inject_nan(&tr->sess, &tr->model, step);
        if (step == 1 && o->dump_grads && dump_grads(tr, loss, err, len) != 0) return -1;
        double norm = dist_grad_norm(d);
        float lr = lr_at((LrKind)o->lr_schedule, o->lr, o->warmup, o->lr_min_frac, step - 1,
                         o->steps);
        /* Non-finite guard: no update, AdamW's step not advanced. loss and
         * norm are agreed over ranks, so every rank decides alike. */
        int skip = !isfinite(loss) || !isfinite(norm);
        tr->bad_steps = skip ? tr->bad_steps + 1 : 0;
        if (!skip) {
            gpt_update(&tr->model, &adam, lr, norm); /* this rank's range under ZeRO-1 */
            dist_share_params(d);
        }
        tr->be->ops->sync(tr->be);
        double ms = progress_now_ms() - t0;
        if (tr->step_ms) tr->step_ms[tr->n_step_ms++] = ms;
        progress_clear(&tr->prog);
        StepFigures fig;
        char figs[160];
        progress_step_done(&tr->prog, step, ms, &fig);
        progress_format(&fig, figs, sizeof figs);
        printf("step %5d/%d | loss %.6f | lr %.3e | norm %.4f | %.1f ms | %.0f tok/s%s%s\n", step,
               o->steps, loss, lr, norm, ms, tokens_per_step / (ms / 1e3), figs,
               skip ? " | SKIPPED: non-finite loss or gradient norm, no update" : "");
        /* no collectives inside: rank 0 alone.
         * A sample cut short by a signal leaves the sampler's RNG as before
         * it, so the save below does not hold a half-used RNG; samples after
         * a resume from that save then differ from an unbroken run's (the
         * losses and parameters do not). */
        SampleRng before = tr->sampler.rng;
        int cut = o->sample_every > 0 && step % o->sample_every == 0 && d->rank == 0 &&
                  print_sample(tr, step) != 0;
        if (cut) tr->sampler.rng = before;
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "step", step);
        cJSON_AddNumberToObject(j, "loss", loss);
        cJSON_AddNumberToObject(j, "lr", lr);
        cJSON_AddNumberToObject(j, "grad_norm", norm);
        cJSON_AddNumberToObject(j, "ms", ms);
        cJSON_AddNumberToObject(j, "tokens_per_s", tokens_per_step / (ms / 1e3));
        progress_log(&fig, j);
        if (skip) cJSON_AddBoolToObject(j, "skipped", 1);
        outputs_log(&tr->out, j);
        if (tr->bad_steps >= o->max_bad_steps) return abort_nonfinite(tr, step, err, len);
        snprintf(when, sizeof when, "during the sample after step %d", step);
        if (cut) return stopped(tr, 0, step, when);
        if (session_save_due(&tr->sess, d, step) &&
            session_save(&tr->sess, &tr->model, d, &tr->train, &tr->sampler.rng, step, tr->bad_steps,
                         err, len) != 0) {
            keep_model_after_failed_save(tr, step, err, len);
            return -1;
        }
        if (llmc_folder_due(&tr->llmc, o, step) && llmc_export(tr, step, err, len) != 0) {
            keep_model_after_failed_save(tr, step, err, len);
            return -1;
        }
        /* A signal reaches the ranks at different moments: stop when any
         * rank has one, all after the same step. */
        int sig = agreed_signal(d);
        /* the first step pays for cuBLASLt's heuristics and cold caches */
        if (o->profile_ops && step == tr->start_step + 1 && step < o->steps)
            profile_reset(&tr->prof);
        snprintf(when, sizeof when, "after step %d", step);
        if (sig) return stopped(tr, sig, step, when);
    }
    if (o->profile_ops) {
        int n = o->steps - tr->start_step;
        profile_print(&tr->prof, stdout, n > 1 ? n - 1 : n);
    }
    if (tr->have_val) {
        int rc = validate(tr, o->steps, err, len);
        if (rc < 0) return -1;
        if (rc > 0) return stopped(tr, 0, o->steps, "during the final val loss");
    }
    if (tr->have_eval && train_eval_run(&tr->eval, &tr->model, d, o->steps, &tr->out.log, err, len))
        return -1;
    return 0;
}
