/* cli/loop.c — the training loop (see cli/loop.h); what a stop keeps is
 * cli/stop.c's.
 *
 * A signal is honoured at the next block boundary (model/gpt.h's block
 * hook, installed by cli/stop.c) with one rank: a step cut short is
 * discarded whole — no update ran, so parameters, AdamW state and the
 * sampler's RNG are those after the previous step, and the data loader is
 * moved back to where that step left it — which is why a save of the
 * previous step resumes bitwise like a run that never stopped. Under
 * several ranks the ranks must agree, so they stop together after the step
 * in progress. */
#include <math.h>
#include <stdio.h>

#include "base/signals.h"
#include "base/test_hooks.h"
#include "model/lr_schedule.h"
#include "cli/llmc_folder.h"
#include "cli/loop.h"
#include "cli/outputs.h"
#include "cli/stop.h"

/* Record a stop after `step` completed steps; returns TRAIN_STOPPED. */
static int stopped(Trainer *tr, int sig, int step, const char *when)
{
    progress_clear(&tr->prog);
    tr->stop.sig = sig ? sig : tr->stop.sig ? tr->stop.sig : signals_pending();
    tr->stop.step = step;
    snprintf(tr->stop.when, sizeof tr->stop.when, "%s", when);
    return TRAIN_STOPPED;
}

/* The mean val loss over --val-batches micro-batches. Before this
 * process's first step each batch prints "val k/n" as it finishes (the
 * start-up is otherwise silent for minutes on a big model); later ones
 * show only on a terminal's in-step line. 0, -1 with err, or 1 when a
 * signal abandoned it: at a block with one rank, after the batch in
 * progress with several (agreed, tr->stop.sig set). */
static int eval_val(Trainer *tr, double *loss, char *err, size_t len)
{
    int n = tr->opt.val_batches, lines = tr->prog.done == 0;
    if (loader_reset(tr->val, err, len) != 0) return -1;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        char label[64];
        snprintf(label, sizeof label, "val %d/%d", i + 1, n);
        progress_begin(&tr->prog, label, 0);
        if (loader_next(tr->val, tr->batch.inputs, tr->batch.targets, err, len) != 0) return -1;
        sum += gpt_eval_loss(&tr->model, tr->batch.inputs, tr->batch.targets);
        if (tr->model.abandoned) return 1;
        progress_clear(&tr->prog);
        if (lines) printf("%s\n", label);
        /* several ranks (no stop at a block): all stop after the same batch */
        if (tr->dist.world > 1 && (tr->stop.sig = stop_agreed_signal(&tr->dist)) != 0) return 1;
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

int loop_run(Trainer *tr, char *err, size_t len)
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
        if (tr->eval && o->eval_every > 0 && (step - 1) % o->eval_every == 0) {
            double t0 = progress_now_ms();
            if (train_eval_run(tr->eval, &tr->model, d, step - 1, &tr->out.log, err, len) != 0)
                return -1;
            progress_tail_measured(&tr->prog, PROGRESS_EVAL, progress_now_ms() - t0);
        }
        if (tr->val && o->val_every > 0 && (step - 1) % o->val_every == 0) {
            int rc = validate(tr, step - 1, err, len);
            if (rc < 0) return -1;
            snprintf(when, sizeof when, "during the val loss before step %d", step);
            if (rc > 0) return stopped(tr, 0, step - 1, when);
        }
        TEST_HOOK(session_test_stall(&tr->sess, step));
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
            if (loader_next(&tr->train, tr->batch.inputs, tr->batch.targets, err, len) != 0) return -1;
            dist_begin_micro(d, micro == o->grad_accum - 1);
            /* one process: the last backward's gradients are final as it makes them */
            gpt_set_final_micro(&tr->model, micro == o->grad_accum - 1 && d->world == 1);
            loss += gpt_forward_backward(&tr->model, tr->batch.inputs, tr->batch.targets, dloss);
            if (tr->model.abandoned) {
                if (loader_seek(&tr->train, epoch, shard, window, err, len) != 0) return -1;
                snprintf(when, sizeof when, "during step %d (its partial work is discarded)",
                         step);
                return stopped(tr, 0, step - 1, when);
            }
        }
        dist_finish_grads(d);
        loss = dist_mean(d, loss / o->grad_accum);
        TEST_HOOK(session_test_inject_nan(&tr->sess, &tr->model, step));
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
        if (tr->times.ms) tr->times.ms[tr->times.n++] = ms;
        progress_clear(&tr->prog);
        StepFigures fig;
        char figs[200];
        progress_step_done(&tr->prog, step, ms, &fig);
        progress_format(&fig, d->world, figs, sizeof figs);
        printf("step %5d/%d | loss %.6f | lr %.3e | norm %.4f | %.1f ms | %.0f tok/s%s%s%s\n",
               step, o->steps, loss, lr, norm, ms, tokens_per_step / (ms / 1e3),
               d->world > 1 ? " (all ranks)" : "", figs,
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
        if (tr->bad_steps >= o->max_bad_steps) return stop_nonfinite(tr, step, err, len);
        snprintf(when, sizeof when, "during the sample after step %d", step);
        if (cut) return stopped(tr, 0, step, when);
        if (session_save_due(&tr->sess, d, step) &&
            session_save(&tr->sess, &tr->model, d, &tr->train, &tr->sampler.rng, step, tr->bad_steps,
                         err, len) != 0) {
            stop_after_failed_save(tr, step, err, len);
            return -1;
        }
        if (llmc_folder_due(&tr->llmc, o, step) &&
            llmc_folder_export(&tr->llmc, o, step, &tr->model, d, &tr->train, &tr->sampler.rng,
                               err, len) != 0) {
            stop_after_failed_save(tr, step, err, len);
            return -1;
        }
        /* A signal reaches the ranks at different moments: stop when any
         * rank has one, all after the same step. */
        int sig = stop_agreed_signal(d);
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
    if (tr->val) {
        int rc = validate(tr, o->steps, err, len);
        if (rc < 0) return -1;
        if (rc > 0) return stopped(tr, 0, o->steps, "during the final val loss");
    }
    if (tr->eval && train_eval_run(tr->eval, &tr->model, d, o->steps, &tr->out.log, err, len))
        return -1;
    return 0;
}
