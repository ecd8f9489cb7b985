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
#include <stdlib.h>
#include <time.h>

#include "base/fileio.h"
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
    if (loader_reset(tr->data.val, err, len) != 0) return -1;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        char label[64];
        snprintf(label, sizeof label, "val %d/%d", i + 1, n);
        progress_begin(&tr->prog, label, 0);
        if (loader_next(tr->data.val, tr->data.batch.inputs, tr->data.batch.targets, err, len) != 0)
            return -1;
        sum += gpt_eval_loss(&tr->model, tr->data.batch.inputs, tr->data.batch.targets);
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
    outputs_log(&tr->files.out, j);
    return 0;
}

/* --dump-grads FILE after step 1 (cli/outputs.h). Collective. */
static int dump_grads(Trainer *tr, double loss, char *err, size_t len)
{
    return outputs_dump_grads(&tr->files.out, &tr->opt, &tr->dist, tr->model.plan.num_params, loss,
                              err, len);
}

/* A sample after `step`; 1 when a signal abandoned it. Under ZeRO-3 every
 * rank samples (each block's gather is a collective), the same tokens from
 * the same RNG and gathered bits, and rank 0 alone prints them. */
static int print_sample(Trainer *tr, int step)
{
    char header[64];
    snprintf(header, sizeof header, "step %5d | sample", step);
    FILE *out = stdout;
    if (tr->dist.rank != 0 && !(out = fopen("/dev/null", "w"))) {
        fprintf(stderr, "error: --sample-every at --zero 3: cannot open /dev/null for rank %d's "
                "copy of the sample\n", tr->dist.rank);
        exit(1);
    }
    progress_begin(&tr->prog, "", 0); /* no in-step line across the sample's text */
    text_sampler_print(&tr->sampler, &tr->model, tr->opt.sample_tokens, header, out);
    if (out != stdout) fclose(out);
    return tr->model.abandoned;
}

/* The CPU time of all this process's threads, in ms: on a shared machine a
 * step's CPU time says what it cost where its wall time also counts the
 * other processes' load. */
static double cpu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* One step's outcome, for its line, its log entry and the saves. */
typedef struct {
    double loss, norm; /* agreed over the ranks */
    float lr;
    double ms;         /* the step's wall time */
    double cpu_ms;     /* CPU time of the process's threads over the step (all cores) */
    int skip;          /* a non-finite loss or norm: no update ran */
} StepResult;

/* The val loss and --eval-file score due before `step`: 0, -1 with err, or
 * TRAIN_STOPPED. Collective. */
static int evaluate_due(Trainer *tr, int step, char *err, size_t len)
{
    const TrainOptions *o = &tr->opt;
    if (tr->eval && o->eval_every > 0 && (step - 1) % o->eval_every == 0) {
        double t0 = progress_now_ms();
        if (train_eval_run(tr->eval, &tr->model, &tr->dist, step - 1, &tr->files.out.log, err,
                           len) != 0)
            return -1;
        progress_tail_measured(&tr->prog, PROGRESS_EVAL, progress_now_ms() - t0);
    }
    if (tr->data.val && o->val_every > 0 && (step - 1) % o->val_every == 0) {
        int rc = validate(tr, step - 1, err, len);
        if (rc < 0) return -1;
        char when[96];
        snprintf(when, sizeof when, "during the val loss before step %d", step);
        if (rc > 0) return stopped(tr, 0, step - 1, when);
    }
    return 0;
}

/* Step `step`: every micro-batch's forward and backward, the gradients
 * reduced over the ranks, the norm, the learning rate and the update. The
 * non-finite guard skips the update (AdamW's step not advanced); loss and
 * norm are agreed over the ranks, so every rank decides alike. 0, -1 with
 * err, or TRAIN_STOPPED when a signal abandoned a pass: the step is
 * discarded whole and the loader moved back to where the previous step
 * left it. Collective. */
static int train_step(Trainer *tr, int step, StepResult *r, char *err, size_t len)
{
    const TrainOptions *o = &tr->opt;
    Dist *d = &tr->dist;
    AdamWConfig adam = {o->lr, o->beta1, o->beta2, o->eps, o->weight_decay, o->grad_clip};
    /* Each rank's share of the mean over the global batch: the ranks' summed
     * gradients are then the global mean's. */
    float dloss = 1.0f / ((float)o->batch * o->seq_len * o->grad_accum * d->world);
    /* where the data stood after the previous step: a stop inside this one
     * goes back there */
    uint64_t epoch = tr->data.train.epoch;
    int shard = tr->data.train.shard_pos;
    long window = tr->data.train.window_pos;
    TEST_HOOK(session_test_stall(&tr->files.sess, step));
    TEST_HOOK(char at[16]; snprintf(at, sizeof at, "%d", step); io_test_pause("step", at));
    char label[64];
    snprintf(label, sizeof label, "step %d/%d", step, o->steps);
    progress_begin(&tr->prog, label, 1);
    double t0 = progress_now_ms(), c0 = cpu_now_ms(), loss = 0.0;
    gpt_zero_grads(&tr->model);
    for (int micro = 0; micro < o->grad_accum; micro++) {
        if (o->grad_accum > 1) { /* the in-step line names the micro-batch */
            snprintf(label, sizeof label, "step %d/%d, micro-batch %d/%d", step, o->steps,
                     micro + 1, o->grad_accum);
            progress_relabel(&tr->prog, label);
        }
        if (loader_next(&tr->data.train, tr->data.batch.inputs, tr->data.batch.targets, err, len) !=
            0)
            return -1;
        dist_begin_micro(d, micro == o->grad_accum - 1);
        /* one process: the last backward's gradients are final as it makes them */
        gpt_set_final_micro(&tr->model, micro == o->grad_accum - 1 && d->world == 1);
        loss +=
            gpt_forward_backward(&tr->model, tr->data.batch.inputs, tr->data.batch.targets, dloss);
        if (tr->model.abandoned) {
            if (loader_seek(&tr->data.train, epoch, shard, window, err, len) != 0) return -1;
            char when[96];
            snprintf(when, sizeof when, "during step %d (its partial work is discarded)", step);
            return stopped(tr, 0, step - 1, when);
        }
    }
    dist_finish_grads(d);
    r->loss = dist_mean(d, loss / o->grad_accum);
    TEST_HOOK(session_test_inject_nan(&tr->files.sess, &tr->model, step));
    if (step == 1 && o->dump_grads && dump_grads(tr, r->loss, err, len) != 0) return -1;
    r->norm = dist_grad_norm(d);
    r->lr = lr_at((LrKind)o->lr_schedule, o->lr, o->warmup, o->lr_min_frac, step - 1, o->steps);
    r->skip = !isfinite(r->loss) || !isfinite(r->norm);
    tr->stop.bad_steps = r->skip ? tr->stop.bad_steps + 1 : 0;
    if (!r->skip) {
        gpt_update(&tr->model, &adam, r->lr, r->norm); /* this rank's range under ZeRO-1 */
        dist_share_params(d);
    }
    tr->be->ops->sync(tr->be);
    r->ms = progress_now_ms() - t0;
    r->cpu_ms = cpu_now_ms() - c0;
    return 0;
}

/* Tokens a second over all ranks, for a step of ms. */
static double tokens_per_s(const Trainer *tr, double ms)
{
    const TrainOptions *o = &tr->opt;
    double tokens_per_step = (double)o->batch * o->seq_len * o->grad_accum * tr->dist.world;
    return tokens_per_step / (ms / 1e3);
}

/* The step's line on stdout; its figures in fig, for the log entry. */
static void print_step(Trainer *tr, int step, const StepResult *r, StepFigures *fig)
{
    int world = tr->dist.world;
    char figs[200];
    progress_clear(&tr->prog);
    progress_step_done(&tr->prog, step, r->ms, fig);
    progress_format(fig, world, figs, sizeof figs);
    printf("step %5d/%d | loss %.6f | lr %.3e | norm %.4f | %.1f ms | %.0f tok/s%s%s%s\n",
           step, tr->opt.steps, r->loss, r->lr, r->norm, r->ms, tokens_per_s(tr, r->ms),
           world > 1 ? " (all ranks)" : "", figs,
           r->skip ? " | SKIPPED: non-finite loss or gradient norm, no update" : "");
}

/* The step's --log entry. */
static void log_step(Trainer *tr, int step, const StepResult *r, const StepFigures *fig)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "step", step);
    cJSON_AddNumberToObject(j, "loss", r->loss);
    cJSON_AddNumberToObject(j, "lr", r->lr);
    cJSON_AddNumberToObject(j, "grad_norm", r->norm);
    cJSON_AddNumberToObject(j, "ms", r->ms);
    cJSON_AddNumberToObject(j, "tokens_per_s", tokens_per_s(tr, r->ms));
    cJSON_AddNumberToObject(j, "cpu_ms", r->cpu_ms);
    progress_log(fig, j);
    if (r->skip) cJSON_AddBoolToObject(j, "skipped", 1);
    outputs_log(&tr->files.out, j);
}

/* The sample due after `step`, on rank 0 alone (no collectives inside; on
 * every rank under ZeRO-3, whose gathers are collectives); 1
 * when a signal cut it. A cut sample leaves the sampler's RNG as before
 * it, so a save of this step does not hold a half-used RNG; samples after
 * a resume from that save then differ from an unbroken run's (the losses
 * and parameters do not). */
static int sample_due(Trainer *tr, int step)
{
    const TrainOptions *o = &tr->opt;
    int here = tr->dist.rank == 0 || o->zero == 3;
    if (!(o->sample_every > 0 && step % o->sample_every == 0 && here)) return 0;
    SampleRng before = tr->sampler.rng;
    int cut = print_sample(tr, step) != 0;
    if (cut) tr->sampler.rng = before;
    return cut;
}

/* The checkpoint and llm.c export due after `step`; 0, or -1 with err
 * (--save's model file written all the same: cli/stop.h). Collective. */
static int save_due(Trainer *tr, int step, char *err, size_t len)
{
    const TrainOptions *o = &tr->opt;
    Dist *d = &tr->dist;
    if ((session_save_due(&tr->files.sess, d, step) &&
         session_save(&tr->files.sess, &tr->model, d, &tr->data.train, &tr->sampler.rng, step,
                      tr->stop.bad_steps, err, len) != 0) ||
        (llmc_folder_due(&tr->files.llmc, o, step) &&
         llmc_folder_export(&tr->files.llmc, o, step, &tr->model, d, &tr->data.train,
                            &tr->sampler.rng, err, len) != 0)) {
        stop_after_failed_save(tr, step, err, len);
        return -1;
    }
    return 0;
}

/* After step `step`: its line, the sample, its log entry, --max-bad-steps,
 * the saves due, and the stop the ranks agree on. 0, -1 with err,
 * TRAIN_EXIT_NONFINITE or TRAIN_STOPPED. Collective. */
static int after_step(Trainer *tr, int step, const StepResult *r, char *err, size_t len)
{
    const TrainOptions *o = &tr->opt;
    if (tr->perf.times.ms) tr->perf.times.ms[tr->perf.times.n++] = r->ms;
    StepFigures fig;
    print_step(tr, step, r, &fig);
    int cut = sample_due(tr, step);
    log_step(tr, step, r, &fig);
    if (tr->stop.bad_steps >= o->max_bad_steps) return stop_nonfinite(tr, step, err, len);
    char when[96];
    snprintf(when, sizeof when, "during the sample after step %d", step);
    if (cut) return stopped(tr, 0, step, when);
    if (save_due(tr, step, err, len) != 0) return -1;
    /* A signal reaches the ranks at different moments: stop when any rank
     * has one, all after the same step. */
    int sig = stop_agreed_signal(&tr->dist);
    /* the first step pays for cuBLASLt's heuristics and cold caches */
    if (o->profile_ops && step == tr->start_step + 1 && step < o->steps)
        profile_reset(&tr->perf.prof);
    snprintf(when, sizeof when, "after step %d", step);
    if (sig) return stopped(tr, sig, step, when);
    return 0;
}

/* The final val loss and --eval-file score, after the last step. */
static int evaluate_final(Trainer *tr, char *err, size_t len)
{
    int steps = tr->opt.steps;
    if (tr->data.val) {
        int rc = validate(tr, steps, err, len);
        if (rc < 0) return -1;
        if (rc > 0) return stopped(tr, 0, steps, "during the final val loss");
    }
    if (tr->eval && train_eval_run(tr->eval, &tr->model, &tr->dist, steps, &tr->files.out.log, err,
                                   len))
        return -1;
    return 0;
}

int loop_run(Trainer *tr, char *err, size_t len)
{
    const TrainOptions *o = &tr->opt;
    for (int step = tr->start_step + 1; step <= o->steps; step++) {
        StepResult r;
        int rc = evaluate_due(tr, step, err, len);
        if (rc == 0) rc = train_step(tr, step, &r, err, len);
        if (rc == 0) rc = after_step(tr, step, &r, err, len);
        if (rc != 0) return rc;
    }
    if (o->profile_ops) {
        int n = o->steps - tr->start_step;
        profile_print(&tr->perf.prof, stdout, n > 1 ? n - 1 : n);
    }
    return evaluate_final(tr, err, len);
}
