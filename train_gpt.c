/* train_gpt.c — the command-line trainer: set-up, the training loop, the
 * memory report. Flags live in train_options.c; the model, its recompute
 * schedule and the memory planner in model/; the ops in kernels/; data
 * parallelism over ranks (mpirun/srun) in distributed/. Under several ranks,
 * stdout and the --log file come from rank 0 only, the loss and val loss
 * printed are means over ranks, and rank 0 writes the model files. */
#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "data/shard.h"
#include "distributed/dist.h"
#include "kernels/backend.h"
#include "kernels/profile.h"
#include "model/gpt.h"
#include "model/lr_schedule.h"
#include "model/model_file.h"
#include "run/session.h"
#include "run/signals.h"
#include "train_memory.h"
#include "train_options.h"
#include "train_sample.h"

typedef struct {
    TrainOptions opt;
    Dist dist;
    Backend *be;
    GPTConfig cfg;
    GPT model;
    Loader train, val;
    int have_val;
    FILE *log;
    int *inputs, *targets; /* host, B*T */
    size_t mem_free_before;  /* device bytes free before the arenas (cuda) */
    size_t mem_total;        /* device bytes in all (cuda) */
    int have_mem_info;
    TextCodec codec;         /* when sampling or generating */
    TokenIds prompt;
    SampleRng rng;
    RunSession sess;         /* saves, resume, test hooks (run/session.h) */
    char resume_dir[4096];   /* the save resumed from; "" for a new run */
    int start_step, bad_steps;
    OpProfile prof;          /* --profile-ops (kernels/profile.h) */
} Trainer;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A fatal error: under several ranks the message carries the rank and the
 * whole job is aborted (dist_fail). */
static _Noreturn void fail(Trainer *tr, const char *msg) { dist_fail(&tr->dist, 1, "%s", msg); }

/* The model's shape: from --init-from's header, else from the flags. */
static int resolve_config(Trainer *tr, char *err, size_t len)
{
    const TrainOptions *o = &tr->opt;
    char resumed[4200];
    const char *from = o->init_from;
    if (tr->resume_dir[0]) { /* resuming: the save's shape */
        snprintf(resumed, sizeof resumed, "%s/model.bin", tr->resume_dir);
        from = resumed;
    }
    if (from) {
        int version;
        return model_file_read_header(from, &tr->cfg, &version, err, len);
    }
    tr->cfg.num_layers = o->layers;
    tr->cfg.channels = o->channels;
    tr->cfg.num_heads = o->heads;
    tr->cfg.vocab_size = o->vocab;
    tr->cfg.padded_vocab = config_pad_vocab(o->vocab);
    tr->cfg.max_seq_len = o->max_seq_len ? o->max_seq_len : o->seq_len;
    return config_validate(&tr->cfg, err, len);
}

static int open_data(Trainer *tr, char *err, size_t len)
{
    const TrainOptions *o = &tr->opt;
    int rank = tr->dist.rank, world = tr->dist.world;
    if (loader_open(&tr->train, o->train_data, o->batch, o->seq_len, rank, world,
                    tr->cfg.vocab_size, o->shuffle, o->seed, err, len) != 0) {
        if (!o->train_data_given)
            snprintf(err + strlen(err), len - strlen(err),
                     " (the default dataset: run `make data`, or pass --train-data)");
        return -1;
    }
    if (rank == 0 && tr->train.notes) fputs(tr->train.notes, stderr);
    /* Saves record the shards' content hashes; a resume reads every shard
     * to compare them (run/session.c). A fresh run takes a manifest's. */
    if (tr->sess.dir[0] || tr->resume_dir[0]) {
        double t0 = now_ms();
        uint64_t bytes;
        if (loader_hash(&tr->train, tr->resume_dir[0] ? LOADER_HASH_READ : LOADER_HASH_TRUST,
                        &bytes, err, len) != 0)
            return -1;
        double s = (now_ms() - t0) / 1e3;
        if (rank == 0 && bytes)
            printf("train data: read %.1f MB to hash %d shard(s) in %.2f s (%.0f MB/s)\n",
                   bytes / 1e6, tr->train.num_shards, s, bytes / 1e6 / (s > 1e-9 ? s : 1e-9));
    }
    /* The default val shards belong to the default dataset: validating a
     * run on other --train-data with them would measure the wrong text (or
     * stop on out-of-vocabulary tokens), so they are used only when the
     * train data is the default too. */
    if (o->train_data_given && !o->val_data_given) {
        if (rank == 0)
            fprintf(stderr, "note: --train-data given without --val-data; val loss is skipped\n");
        tr->have_val = 0;
        return 0;
    }
    int rc = loader_open(&tr->val, o->val_data, o->batch, o->seq_len, rank, world,
                         tr->cfg.vocab_size, 0, o->seed, err, len);
    if (rc == 0 && rank == 0 && tr->val.notes) fputs(tr->val.notes, stderr);
    if (rc != 0 && o->val_data_given) return -1;
    if (rc != 0 && rank == 0)
        fprintf(stderr, "note: no validation data (%s); val loss is skipped\n", err);
    tr->have_val = rc == 0;
    return 0;
}

static int load_params(Trainer *tr, char *err, size_t len)
{
    float *host = NULL;
    if (tr->opt.init_from) {
        GPTConfig cfg;
        if (model_file_load(tr->opt.init_from, &cfg, &host, err, len) != 0) return -1;
    } else {
        host = malloc(config_num_params(&tr->cfg) * sizeof(float));
        if (!host) {
            snprintf(err, len, "out of host memory for the initial parameters");
            return -1;
        }
        gpt_init_weights(&tr->cfg, tr->opt.seed, host);
    }
    /* Every rank loads or seeds the same parameters; check rather than trust. */
    if (!dist_replicas_agree(&tr->dist, dist_hash_floats(host, config_num_params(&tr->cfg))))
        dist_exit_all(&tr->dist, 1, "the ranks start from different parameters%s",
                      tr->opt.init_from ? " (is --init-from the same file on every node?)" : "");
    gpt_set_params(&tr->model, host);
    free(host);
    return 0;
}

static void log_json(Trainer *tr, cJSON *obj)
{
    if (tr->log) {
        char *s = cJSON_PrintUnformatted(obj);
        fprintf(tr->log, "%s\n", s);
        fflush(tr->log);
        cJSON_free(s);
    }
    cJSON_Delete(obj);
}

static int eval_val(Trainer *tr, double *loss, char *err, size_t len)
{
    if (loader_reset(&tr->val, err, len) != 0) return -1;
    double sum = 0.0;
    for (int i = 0; i < tr->opt.val_batches; i++) {
        if (loader_next(&tr->val, tr->inputs, tr->targets, err, len) != 0) return -1;
        sum += gpt_eval_loss(&tr->model, tr->inputs, tr->targets);
    }
    *loss = dist_mean(&tr->dist, sum / tr->opt.val_batches);
    return 0;
}

static int dump_grads(Trainer *tr, double loss, char *err, size_t len)
{
    size_t n = tr->model.plan.num_params;
    float *g = malloc(n * sizeof(float));
    if (!g) {
        snprintf(err, len, "--dump-grads: out of host memory");
        return -1;
    }
    if (dist_get_grads(&tr->dist, g, err, len) != 0) return -1; /* collective */
    if (tr->dist.rank != 0) {
        free(g);
        return 0;
    }
    FILE *f = fopen(tr->opt.dump_grads, "wb");
    float l = (float)loss;
    int ok = f != NULL;
    if (ok) {
        ok = fwrite(&l, sizeof l, 1, f) == 1 && fwrite(g, sizeof(float), n, f) == n;
        ok = (fclose(f) == 0) && ok;
    }
    free(g);
    if (!ok) snprintf(err, len, "--dump-grads %s: cannot write", tr->opt.dump_grads);
    return ok ? 0 : -1;
}

/* Measured peak: the process's peak RSS on the cpu; on a device backend,
 * the device bytes the driver reports used since before the arenas. */
static size_t measured_peak(Trainer *tr)
{
    size_t free_b, total_b;
    if (tr->have_mem_info && tr->be->ops->mem_info(tr->be, &free_b, &total_b) == 0)
        return tr->mem_free_before > free_b ? tr->mem_free_before - free_b : 0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (size_t)ru.ru_maxrss * 1024;
}

static void print_summary(Trainer *tr)
{
    const MemoryPlan *p = &tr->model.plan;
    size_t peak = measured_peak(tr);
    double diff = 100.0 * ((double)peak - (double)p->total) / (double)p->total;
    size_t hw = gpt_arena_high_water(&tr->model);
    printf("memory: predicted peak %zu bytes (planner); arenas' high-water mark %zu bytes (%s)\n",
           p->total, hw, hw == p->total ? "equal" : "DIFFERENT: the planner and the model disagree");
    printf("memory: planner total %.2f MiB, measured peak %.2f MiB (%s), difference %+.1f%%\n",
           p->total / 1048576.0, peak / 1048576.0,
           tr->have_mem_info ? "device memory used by the run, per cudaMemGetInfo"
                             : "process peak RSS: arenas plus program, libraries, host buffers",
           diff);
    size_t context = tr->mem_total - tr->mem_free_before;
    if (tr->have_mem_info)
        printf("memory: in use on the device before the arenas (CUDA context, other processes): "
               "%.2f MiB, not counted above\n", context / 1048576.0);
    cJSON *o = cJSON_CreateObject(), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "event", "summary");
    cJSON_AddNumberToObject(o, "recompute", tr->opt.recompute);
    cJSON_AddNumberToObject(o, "world_size", tr->dist.world);
    cJSON_AddNumberToObject(o, "zero", tr->opt.zero);
    cJSON_AddStringToObject(o, "recompute_mode", schedule_mode_flag(tr->opt.recompute));
    cJSON_AddNumberToObject(o, "reforwards", schedule_reforwards(&tr->model.sched));
    cJSON_AddNumberToObject(m, "arena_high_water", (double)hw);
    if (tr->have_mem_info) cJSON_AddNumberToObject(m, "context_overhead", (double)context);
    for (int c = 0; c < MEM_NUM_CATEGORIES; c++)
        cJSON_AddNumberToObject(m, planner_category_name(c), (double)p->bytes[c]);
    cJSON_AddNumberToObject(m, "total", (double)p->total);
    cJSON_AddNumberToObject(m, "peak_measured", (double)peak);
    cJSON_AddItemToObject(o, "memory", m);
    log_json(tr, o);
}

static int open_sampling(Trainer *tr, char *err, size_t len)
{
    if (codec_open(&tr->codec, tr->cfg.vocab_size, err, len) != 0) return -1;
    sample_seed(&tr->rng, tr->opt.seed);
    if (!tr->opt.prompt) return 0;
    return codec_encode(&tr->codec, tr->opt.prompt, tr->cfg.vocab_size, &tr->prompt, err, len);
}

/* The tokens samples continue: --prompt's last T tokens, or one start token
 * (end-of-text for GPT-2, a newline for bytes, id 0 otherwise). */
static const int32_t *prompt_tokens(Trainer *tr, int T, int *n)
{
    static int32_t start;
    start = tr->codec.kind == CODEC_GPT2 ? GPT2_EOT : tr->codec.kind == CODEC_BYTES ? '\n' : 0;
    if (tr->prompt.len == 0) {
        *n = 1;
        return &start;
    }
    *n = (int)tr->prompt.len < T ? (int)tr->prompt.len : T;
    return tr->prompt.data + tr->prompt.len - *n;
}

static void print_sample(Trainer *tr, int step)
{
    int n;
    const int32_t *p = prompt_tokens(tr, tr->model.T, &n);
    printf("step %5d | sample:\n", step);
    sample_generate(&tr->model, &tr->codec, p, n, tr->opt.sample_tokens, tr->opt.temperature,
                    &tr->rng, stdout);
}

static int train(Trainer *tr, char *err, size_t len)
{
    const TrainOptions *o = &tr->opt;
    Dist *d = &tr->dist;
    AdamWConfig adam = {o->lr, o->beta1, o->beta2, o->eps, o->weight_decay, o->grad_clip};
    /* Each rank's share of the mean over the global batch: the ranks' summed
     * gradients are then the global mean's. */
    float dloss = 1.0f / ((float)o->batch * o->seq_len * o->grad_accum * d->world);
    double tokens_per_step = (double)o->batch * o->seq_len * o->grad_accum * d->world;
    for (int step = tr->start_step + 1; step <= o->steps; step++) {
        if (tr->have_val && o->val_every > 0 && (step - 1) % o->val_every == 0) {
            double vl;
            if (eval_val(tr, &vl, err, len) != 0) return -1;
            printf("step %5d | val loss %.6f\n", step - 1, vl);
            cJSON *j = cJSON_CreateObject();
            cJSON_AddNumberToObject(j, "step", step - 1);
            cJSON_AddNumberToObject(j, "val_loss", vl);
            log_json(tr, j);
        }
        double t0 = now_ms(), loss = 0.0;
        gpt_zero_grads(&tr->model);
        for (int micro = 0; micro < o->grad_accum; micro++) {
            if (loader_next(&tr->train, tr->inputs, tr->targets, err, len) != 0) return -1;
            dist_begin_micro(d, micro == o->grad_accum - 1);
            loss += gpt_forward_backward(&tr->model, tr->inputs, tr->targets, dloss);
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
        if (!skip) dist_update(d, &adam, lr, norm);
        tr->be->ops->sync(tr->be);
        double ms = now_ms() - t0;
        printf("step %5d/%d | loss %.6f | lr %.3e | norm %.4f | %.1f ms | %.0f tok/s%s\n", step,
               o->steps, loss, lr, norm, ms, tokens_per_step / (ms / 1e3),
               skip ? " | SKIPPED: non-finite loss or gradient norm, no update" : "");
        fflush(stdout);
        if (o->sample_every > 0 && step % o->sample_every == 0 && d->rank == 0)
            print_sample(tr, step); /* no collectives inside: rank 0 alone */
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "step", step);
        cJSON_AddNumberToObject(j, "loss", loss);
        cJSON_AddNumberToObject(j, "lr", lr);
        cJSON_AddNumberToObject(j, "grad_norm", norm);
        cJSON_AddNumberToObject(j, "ms", ms);
        cJSON_AddNumberToObject(j, "tokens_per_s", tokens_per_step / (ms / 1e3));
        if (skip) cJSON_AddBoolToObject(j, "skipped", 1);
        log_json(tr, j);
        if (tr->bad_steps >= o->max_bad_steps) {
            fprintf(stderr, "error: %d consecutive steps (up to step %d) had a non-finite loss or "
                    "gradient norm (--max-bad-steps %d): saving and aborting\n", tr->bad_steps,
                    step, o->max_bad_steps);
            if (session_save(&tr->sess, &tr->model, d, &tr->train, &tr->rng, step,
                             tr->bad_steps, err, len) != 0)
                fprintf(stderr, "error: %s\n", err);
            return TRAIN_EXIT_NONFINITE;
        }
        /* A signal reaches the ranks at different moments: stop when any
         * rank has one, all after the same step. */
        int sig = signals_pending();
        if (d->world > 1 && dist_mean(d, sig != 0) > 0 && !sig) sig = SIGTERM;
        if ((sig || session_save_due(&tr->sess, step)) &&
            session_save(&tr->sess, &tr->model, d, &tr->train, &tr->rng, step, tr->bad_steps,
                         err, len) != 0)
            return -1;
        /* the first step pays for cuBLASLt's heuristics and cold caches */
        if (o->profile_ops && step == tr->start_step + 1 && step < o->steps)
            profile_reset(&tr->prof);
        if (sig) {
            printf("stopped by signal %d after step %d%s\n", sig, step,
                   tr->sess.dir[0] ? "; resume with --resume"
                                   : " (no --checkpoint-dir: not saved)");
            return TRAIN_EXIT_STOPPED;
        }
    }
    if (o->profile_ops) {
        int n = o->steps - tr->start_step;
        profile_print(&tr->prof, stdout, n > 1 ? n - 1 : n);
    }
    if (tr->have_val) {
        double vl;
        if (eval_val(tr, &vl, err, len) != 0) return -1;
        printf("step %5d | val loss %.6f\n", o->steps, vl);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "step", o->steps);
        cJSON_AddNumberToObject(j, "val_loss", vl);
        log_json(tr, j);
    }
    return 0;
}

/* --generate: load (or initialise) the model with one row of seq-len
 * tokens, print the tokens, exit. No data, no training. */
static int generate_only(Trainer *tr)
{
    char err[1024];
    const TrainOptions *o = &tr->opt;
    if (open_sampling(tr, err, sizeof err) != 0) fail(tr, err);
    if (strcmp(o->device, "cpu") != 0 && dist_select_device(&tr->dist, err, sizeof err) != 0)
        fail(tr, err);
    tr->be = backend_open(o->device, o->dtype, o->threads, err, sizeof err);
    if (!tr->be) fail(tr, err);
    if (gpt_init(&tr->model, &tr->cfg, tr->be, 1, o->seq_len, 0, 0, err, sizeof err) != 0 ||
        load_params(tr, err, sizeof err) != 0)
        fail(tr, err);
    int np;
    const int32_t *p = prompt_tokens(tr, o->seq_len, &np);
    sample_generate(&tr->model, &tr->codec, p, np, o->generate, o->temperature, &tr->rng, stdout);
    gpt_free(&tr->model);
    codec_close(&tr->codec);
    free(tr->prompt.data);
    backend_close(tr->be);
    dist_finalize(&tr->dist);
    return 0;
}

/* CPU threads per rank: --threads, else OMP_NUM_THREADS, else the node's
 * cores shared among its ranks (OpenMP's default would give every rank all
 * of them). */
static int cpu_threads(const Trainer *tr)
{
    if (tr->opt.threads > 0 || getenv("OMP_NUM_THREADS") || tr->dist.local_world <= 1)
        return tr->opt.threads;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long t = cores / tr->dist.local_world;
    return t < 1 ? 1 : t > 1024 ? 1024 : (int)t;
}

/* --total-batch: derive grad-accum from B, T and the world size. */
static void resolve_total_batch(Trainer *tr)
{
    TrainOptions *o = &tr->opt;
    if (o->total_batch == 0) return;
    long per_micro = (long)o->batch * o->seq_len * tr->dist.world;
    if (o->total_batch % per_micro != 0)
        dist_exit_all(&tr->dist, 2,
                      "--total-batch %ld: not a multiple of the %ld tokens one micro-step "
                      "reads over all ranks (batch %d x seq-len %d x %d rank%s)",
                      o->total_batch, per_micro, o->batch, o->seq_len, tr->dist.world,
                      tr->dist.world == 1 ? "" : "s");
    long accum = o->total_batch / per_micro;
    if (o->grad_accum_given && accum != o->grad_accum)
        dist_exit_all(&tr->dist, 2,
                      "--grad-accum %d contradicts --total-batch %ld, which needs %ld "
                      "(batch %d x seq-len %d x %d rank%s); give one of them",
                      o->grad_accum, o->total_batch, accum, o->batch, o->seq_len,
                      tr->dist.world, tr->dist.world == 1 ? "" : "s");
    if (accum > (1 << 20))
        dist_exit_all(&tr->dist, 2, "--total-batch %ld: %ld micro-steps per step is more than "
                      "the 1048576 allowed", o->total_batch, accum);
    o->grad_accum = (int)accum;
}

/* The part of the flags that run/ (checkpoints, resume) needs to know. */
static RunConfig run_config(const TrainOptions *o)
{
    return (RunConfig){
        .checkpoint_dir = o->checkpoint_dir, .resume_path = o->resume_path,
        .resume = o->resume, .save_every = o->save_every, .keep = o->keep,
        .batch = o->batch, .seq_len = o->seq_len, .grad_accum = o->grad_accum,
        .steps = o->steps, .zero = o->zero, .shuffle = o->shuffle,
        .lr_schedule = o->lr_schedule, .warmup = o->warmup, .recompute = o->recompute,
        .loss_chunk = o->loss_chunk, .seed = o->seed, .lr = o->lr,
        .lr_min_frac = o->lr_min_frac, .beta1 = o->beta1, .beta2 = o->beta2, .eps = o->eps,
        .weight_decay = o->weight_decay, .grad_clip = o->grad_clip,
    };
}

/* After training: every rank's parameters must be the same bits; rank 0
 * writes --save. Collective: every rank calls it. */
static int finish(Trainer *tr, char *err, size_t len)
{
    Dist *d = &tr->dist;
    if (!d->mpi && !tr->opt.save) return 0;
    size_t n = tr->model.plan.num_params;
    float *host = malloc(n * sizeof(float));
    if (!host) {
        snprintf(err, len, "out of host memory for the final parameters");
        return -1;
    }
    int rc = dist_get_params(d, host, err, len);
    if (rc == 0 && d->mpi) {
        if (!dist_replicas_agree(d, dist_hash_floats(host, n))) {
            free(host);
            dist_exit_all(d, 1, "internal error: the ranks' final parameters differ");
        }
        printf("replicas: parameters identical on all %d rank%s\n", d->world,
               d->world == 1 ? "" : "s");
    }
    if (rc == 0 && tr->opt.save && d->rank == 0) {
        rc = model_file_save(tr->opt.save, &tr->cfg, host, err, len);
        if (rc == 0) printf("saved %s\n", tr->opt.save);
    }
    free(host);
    return rc;
}

int main(int argc, char **argv)
{
    static Trainer tr;
    char err[1024] = "";
    int rc = train_options_parse(&tr.opt, argc, argv);
    if (rc) return rc == 1 ? 0 : 2;
    TrainOptions *o = &tr.opt;
    if (dist_init(&tr.dist, &argc, &argv, err, sizeof err) != 0) fail(&tr, err);
    Dist *d = &tr.dist;
    /* Logs from rank 0 only; errors (stderr) from any rank, with its rank. */
    if (d->rank != 0 && !freopen("/dev/null", "w", stdout))
        dist_fail(d, 1, "cannot silence stdout on rank %d", d->rank);
    if (signals_install() != 0) fail(&tr, "cannot install the SIGINT/SIGTERM handlers");
    resolve_total_batch(&tr); /* sets grad-accum, which the session records */
    RunConfig run = run_config(o);
    if (session_init(&tr.sess, &run, d, err, sizeof err) != 0) fail(&tr, err);
    rc = session_locate(&tr.sess, tr.resume_dir, sizeof tr.resume_dir, err, sizeof err);
    if (rc < 0) fail(&tr, err);
    if (rc == 0) tr.resume_dir[0] = 0;
    else if (o->init_from)
        printf("note: resuming from %s; --init-from %s is not used\n", tr.resume_dir, o->init_from);

    /* Validate everything that can be checked before any allocation. */
    if (resolve_config(&tr, err, sizeof err) != 0) fail(&tr, err);
    if (o->seq_len > tr.cfg.max_seq_len)
        dist_fail(d, 2, "--seq-len: %d exceeds the model's maximum sequence length %d",
                  o->seq_len, tr.cfg.max_seq_len);
    if (train_memory_check(o, &tr.cfg, err, sizeof err) != 0) dist_exit_all(d, 2, "%s", err);
    GPTShard shard = dist_shard(d, o->zero);
    if (o->plan) {
        rc = train_memory_plan(o, &tr.cfg, &shard);
        dist_finalize(d);
        return rc;
    }
    if (o->generate > 0) return generate_only(&tr);
    if (open_data(&tr, err, sizeof err) != 0) fail(&tr, err);

    if (strcmp(o->device, "cpu") != 0 && dist_select_device(d, err, sizeof err) != 0)
        fail(&tr, err);
    tr.be = backend_open(o->device, o->dtype, cpu_threads(&tr), err, sizeof err);
    if (!tr.be) fail(&tr, err);
    if (o->profile_ops) profile_attach(&tr.prof, tr.be);
    tr.have_mem_info = tr.be->ops->mem_info(tr.be, &tr.mem_free_before, &tr.mem_total) == 0;
    Schedule sched;
    rc = train_memory_schedule(o, &tr.cfg, tr.be, &shard, &sched, err, sizeof err);
    if (rc != 0) dist_fail(d, rc == 2 ? 2 : 1, "%s", err);
    if (gpt_init_schedule(&tr.model, &tr.cfg, tr.be, o->batch, o->seq_len, &sched, o->loss_chunk,
                          &shard, err, sizeof err) != 0)
        fail(&tr, err);
    if (dist_attach(d, &tr.model, err, sizeof err) != 0) fail(&tr, err);
    tr.inputs = malloc(sizeof(int) * o->batch * o->seq_len);
    tr.targets = malloc(sizeof(int) * o->batch * o->seq_len);
    if (!tr.inputs || !tr.targets) fail(&tr, "out of host memory for a batch");
    /* Sampling first: it seeds the sampler's RNG, which a resume then restores. */
    if (o->sample_every > 0 && d->rank == 0 && open_sampling(&tr, err, sizeof err) != 0)
        fail(&tr, err);
    if (tr.resume_dir[0] ? session_resume(&tr.sess, tr.resume_dir, &tr.model, &tr.train,
                                          &tr.rng, &tr.start_step, &tr.bad_steps, err, sizeof err)
                         : load_params(&tr, err, sizeof err))
        fail(&tr, err);
    /* A resumed run appends to its log, so the log covers the whole run. */
    if (d->rank == 0 && o->log_path &&
        !(tr.log = fopen(o->log_path, tr.resume_dir[0] ? "a" : "w")))
        dist_fail(d, 1, "--log %s: cannot open for writing", o->log_path);

    printf("train_gpt: backend %s (%s) | L=%d C=%d NH=%d T=%d V=%d (padded %d) | B=%d "
           "grad-accum=%d\n", tr.be->name, tr.be->act_bytes == 2 ? "bf16" : "fp32",
           tr.cfg.num_layers, tr.cfg.channels, tr.cfg.num_heads, o->seq_len, tr.cfg.vocab_size,
           tr.cfg.padded_vocab, o->batch, o->grad_accum);
    printf("data parallel: %d rank%s, collectives %s | zero %d | %ld tokens per step\n",
           d->world, d->world == 1 ? "" : "s", dist_library(d), o->zero,
           (long)o->batch * o->seq_len * o->grad_accum * d->world);
    printf("parameters: %zu\n", tr.model.plan.num_params);
    planner_print(stdout, &tr.model.plan, schedule_mode_name(o->recompute));
    printf("predicted peak: %zu bytes (the arenas are allocated whole at start-up)\n",
           tr.model.plan.total);
    printf("train data: %d shard(s) from %s\n", tr.train.num_shards, o->train_data);

    rc = train(&tr, err, sizeof err);
    if (rc > 0) { /* stopped by a signal, or too many non-finite steps */
        if (tr.log) fclose(tr.log);
        dist_finalize(d);
        return rc;
    }
    if (rc == 0) rc = finish(&tr, err, sizeof err);
    if (rc != 0) {
        if (tr.log) fclose(tr.log);
        fail(&tr, err);
    }
    print_summary(&tr);
    if (tr.log) fclose(tr.log);
    free(tr.inputs);
    free(tr.targets);
    dist_finalize(d);
    gpt_free(&tr.model);
    loader_close(&tr.train);
    if (tr.have_val) loader_close(&tr.val);
    if (o->profile_ops) profile_detach(&tr.prof, tr.be);
    backend_close(tr.be);
    return 0;
}
