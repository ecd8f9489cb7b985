/* cli/startup.c — the trainer's start-up, phase by phase (cli/startup.h). */
#include "cli/startup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/signals.h"
#include "base/test_hooks.h"
#include "data/loader.h"
#include "distributed/dist.h"
#include "kernels/backend.h"
#include "kernels/profile.h"
#include "model/gpt.h"
#include "interop/model_file.h"
#include "ckpt/checkpoint.h"
#include "ckpt/session.h"
#include "cli/dist_attach.h"
#include "cli/guard.h"
#include "cli/limits.h"
#include "cli/llmc_folder.h"
#include "cli/outputs.h"
#include "cli/params_load.h"
#include "cli/recompute.h"
#include "cli/run_log.h"
#include "cli/run_record.h"
#include "cli/stop.h"
#include "cli/train_data.h"

/* A fatal error: under several ranks the message carries the rank and the
 * whole job is aborted (dist_fail). */
static _Noreturn void fail(Trainer *tr, const char *msg) { dist_fail(&tr->dist, 1, "%s", msg); }

/* Shape flags given with --init-from must agree with the file's shape,
 * which is the model's: a contradiction is an error with both shapes (exit
 * 2), never a silently different model. --model's preset counts as its
 * layers, channels and heads. (A resume's save: cli/guard.h.) */
static int check_shape_flags(Trainer *tr, const char *from, char *err, size_t len)
{
    const TrainOptions *o = &tr->opt;
    const GPTConfig *c = &tr->cfg;
    int preset = o->preset != NULL;
    struct {
        const char *flag;
        int asked, file, given;
    } f[] = {
        {"layers", o->layers, c->num_layers, train_options_given(o, "layers") || preset},
        {"channels", o->channels, c->channels, train_options_given(o, "channels") || preset},
        {"heads", o->heads, c->num_heads, train_options_given(o, "heads") || preset},
        {"vocab", o->vocab, c->vocab_size, train_options_given(o, "vocab")},
        {"max-seq-len", o->max_seq_len, c->max_seq_len, train_options_given(o, "max-seq-len")},
    };
    char bad[256] = "";
    int n = 0, want[5];
    for (int i = 0; i < 5; i++) {
        want[i] = f[i].given ? f[i].asked : f[i].file;
        if (want[i] == f[i].file) continue;
        snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "%s--%s %d", n++ ? ", " : "",
                 f[i].flag, f[i].asked);
    }
    if (n == 0) return 0;
    if (preset)
        snprintf(bad + strlen(bad), sizeof bad - strlen(bad), " (--model %s)", o->preset);
    snprintf(err, len, "%s: contradicts the shape of %.600s: the file has L=%d C=%d NH=%d V=%d "
             "max-seq-len=%d, the flags ask for L=%d C=%d NH=%d V=%d max-seq-len=%d (the file's "
             "shape is the model's: drop the shape flags, or start from another file)", bad,
             from, c->num_layers, c->channels, c->num_heads, c->vocab_size, c->max_seq_len,
             want[0], want[1], want[2], want[3], want[4]);
    return 2;
}

/* The model's shape: from --init-from's header, else from the flags. */
static int resolve_config(Trainer *tr, char *err, size_t len)
{
    const TrainOptions *o = &tr->opt;
    char resumed[4200];
    const char *from = o->llmc_resume ? tr->files.llmc.from.model : o->init_from;
    if (tr->files.resume_dir[0]) { /* resuming: the save's shape */
        snprintf(resumed, sizeof resumed, "%s/model.bin", tr->files.resume_dir);
        from = resumed;
    }
    if (from) {
        int version;
        if (model_file_read_header(from, &tr->cfg, &version, err, len) != 0) {
            if (from == o->init_from) train_options_name_flag("--init-from", err, len);
            return -1;
        }
        if (tr->cfg.arch != o->arch) { /* a family is never converted */
            snprintf(err, len, "--arch %s: %.600s holds a %s model (give --arch %s, or start "
                     "from another file)", config_arch_name(o->arch), from,
                     config_arch_name(tr->cfg.arch), config_arch_name(tr->cfg.arch));
            return 2;
        }
        if (guard_check_family_flags(o, &tr->cfg, from, err, len) != 0) return 2;
        return tr->files.resume_dir[0]
                   ? guard_check_resume_shape(o, &tr->cfg, tr->files.resume_dir, err, len)
                   : check_shape_flags(tr, from, err, len);
    }
    tr->cfg.num_layers = o->layers;
    tr->cfg.channels = o->channels;
    tr->cfg.num_heads = o->heads;
    tr->cfg.vocab_size = o->vocab;
    tr->cfg.padded_vocab = config_pad_vocab(o->vocab);
    tr->cfg.max_seq_len = o->max_seq_len ? o->max_seq_len : o->seq_len;
    tr->cfg.arch = o->arch;
    if (o->arch == ARCH_LLAMA) {
        tr->cfg.kv_heads = o->kv_heads;
        tr->cfg.ffn = o->ffn;
        tr->cfg.rope_theta = o->rope_theta;
        tr->cfg.untied = o->lm_head != 1; /* auto: untied */
        tr->cfg.qkv_bias = o->qkv_bias;
        tr->cfg.qk_norm = o->qk_norm;
        /* the default's own value is recorded as the default (0): the same file */
        int fits = o->heads > 0 && o->channels % o->heads == 0;
        tr->cfg.head_dim = fits && o->head_dim == o->channels / o->heads ? 0 : o->head_dim;
        tr->cfg.norm_eps = o->norm_eps;
        if (o->rope_factor != 0) {
            tr->cfg.rope_factor = o->rope_factor;
            tr->cfg.rope_low_freq = o->rope_low_freq;
            tr->cfg.rope_high_freq = o->rope_high_freq;
            tr->cfg.rope_original_max_pos = o->rope_original_max_pos;
        }
    }
    return config_validate(&tr->cfg, err, len);
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

/* --init-from a model whose position table is shorter than the default
 * --seq-len (a 128-token Shakespeare model, say): without --seq-len the run
 * takes the file's length, with a note, rather than stopping at exit 2 on a
 * flag the user never gave. Done before anything records seq-len (the
 * session's run config, --total-batch), so a resume of such a run, given the
 * same command line, compares the same value. A file that cannot be read is
 * reported later, by resolve_config. */
static void adopt_file_seq_len(Trainer *tr)
{
    TrainOptions *o = &tr->opt;
    GPTConfig cfg;
    int version;
    char err[512];
    if (!o->init_from || train_options_given(o, "seq-len")) return;
    if (model_file_read_header(o->init_from, &cfg, &version, err, sizeof err) != 0) return;
    if (cfg.max_seq_len >= o->seq_len) return;
    printf("note: --seq-len %d, the maximum sequence length of --init-from %s (the default %d "
           "is longer)\n", cfg.max_seq_len, o->init_from, o->seq_len);
    o->seq_len = cfg.max_seq_len;
}

/* Where the model's maximum sequence length came from, for a message. */
static const char *seq_len_source(const Trainer *tr)
{
    if (tr->files.resume_dir[0]) return tr->files.resume_dir;
    if (tr->opt.llmc_resume) return tr->files.llmc.from.model;
    return tr->opt.init_from ? tr->opt.init_from : "--max-seq-len";
}

/* Start-up up to the model's shape: the world, the ranks' agreement, the
 * paths that will be written, the checkpoint folder, the save to resume. */
static void start(Trainer *tr, int argc, char **argv)
{
    char err[1024] = "";
    TrainOptions *o = &tr->opt;
    tr->stop.cmd = (CommandLine){argc, argv};
    outputs_init(&tr->files.out);
    if (dist_init(&tr->dist, &argc, &argv, err, sizeof err) != 0) fail(tr, err);
    Dist *d = &tr->dist;
    if (dist_set_timeout(d, o->collective_timeout, err, sizeof err) != 0) fail(tr, err);
    guard_check_flags(o, d); /* before anything a rank could do differently */
    /* Logs from rank 0 only; errors (stderr) from any rank, with its rank. */
    if (d->rank != 0 && !freopen("/dev/null", "w", stdout))
        dist_fail(d, 1, "cannot silence stdout on rank %d", d->rank);
    adopt_file_seq_len(tr); /* its note from rank 0 only */
    if (signals_install() != 0) fail(tr, "cannot install the signal handlers (SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGUSR1, SIGUSR2)");
    resolve_total_batch(tr); /* sets grad-accum, which the session records */
    outputs_check_paths(o, d);
    RunConfig run = train_options_run_config(o);
    if (session_init(&tr->files.sess, &run, d, err, sizeof err) != 0) fail(tr, err);
    if (session_check_shared(&tr->files.sess, d, err, sizeof err) != 0) {
        session_abandon(&tr->files.sess);
        dist_exit_all(d, 1, "%s", err);
    }
    int rc = session_locate(&tr->files.sess, d, tr->files.resume_dir, sizeof tr->files.resume_dir,
                            err, sizeof err);
    if (rc < 0) fail(tr, err);
    if (rc == 0) tr->files.resume_dir[0] = 0;
    /* before the claims, which move the saves newer than the resumed one into
     * abandoned/ (and, with --overwrite-outputs, the old outputs aside) */
    if (rc > 0 && run.exclusive && tr->files.sess.resumed.step > o->steps)
        dist_fail(d, 1,
                  "cannot resume from %s: it is at step %d, beyond --steps %d (--steps "
                  "is the run's total)",
                  tr->files.resume_dir, tr->files.sess.resumed.step, o->steps);
    /* moves nothing yet: settle */
    outputs_check_all(&tr->files.out, o, d, rc > 0 || o->llmc_resume);
    if (session_claim(&tr->files.sess, d, err, sizeof err) != 0) dist_exit_all(d, 1, "%s", err);
    llmc_folder_start(&tr->files.llmc, o, d, tr->files.sess.dir,
                      tr->files.resume_dir[0] ? tr->files.sess.resumed.step : -1);
    /* --dump-grads is written at step 1, which a resumed run never trains */
    int from = rc > 0 ? tr->files.sess.resumed.step : o->llmc_resume ? tr->files.llmc.from.step : 0;
    if (o->dump_grads && from > 0 && run.exclusive)
        dist_exit_all(d, 2,
                      "--dump-grads: writes step 1's gradients, and this run resumes at "
                      "step %d (%s)",
                      from, rc > 0 ? tr->files.resume_dir : tr->files.llmc.from.state);
    if (rc > 0 && o->init_from)
        printf("note: resuming from %s; --init-from %s is not used\n", tr->files.resume_dir,
               o->init_from);
}

/* The header: shape, ranks, the memory plan; printed before the arenas
 * are allocated, so a run that a memory limit kills has shown its plan. */
static void print_header(Trainer *tr)
{
    const TrainOptions *o = &tr->opt;
    const Dist *d = &tr->dist;
    char fam[256] = "", scaling[96] = ""; /* GPT-2's line as it always was */
    const GPTConfig *c = &tr->cfg;
    if (c->rope_factor != 0)
        snprintf(scaling, sizeof scaling, " rope-scaling=%g/%g/%g/%d", (double)c->rope_factor,
                 (double)c->rope_low_freq, (double)c->rope_high_freq, c->rope_original_max_pos);
    if (c->arch == ARCH_LLAMA)
        snprintf(fam, sizeof fam, " | llama NKV=%d F=%d hs=%d rope-theta=%g%s %s head%s%s eps=%g",
                 config_kv_heads(c), config_ffn(c), config_head_dim(c), config_rope_theta(c),
                 scaling,
                 c->untied ? "untied" : "tied", c->qkv_bias ? " qkv-bias" : "",
                 c->qk_norm ? " qk-norm" : "", (double)config_norm_eps(c));
    printf("train_gpt: backend %s (%s) | L=%d C=%d NH=%d T=%d V=%d (padded %d) | B=%d "
           "grad-accum=%d%s\n", tr->be->name, tr->be->act_bytes == 2 ? "bf16" : "fp32",
           tr->cfg.num_layers, tr->cfg.channels, tr->cfg.num_heads, o->seq_len,
           tr->cfg.vocab_size, tr->cfg.padded_vocab, o->batch, o->grad_accum, fam);
    printf("data parallel: %d rank%s, collectives %s | zero %d | %ld tokens per step\n",
           d->world, d->world == 1 ? "" : "s", dist_library(d, tr->be->name), o->zero,
           (long)o->batch * o->seq_len * o->grad_accum * d->world);
    printf("parameters: %zu\n", tr->plan.num_params);
    planner_print(stdout, &tr->plan,
                  tr->cfg.arch == ARCH_LLAMA && o->recompute == RECOMPUTE_SELECTIVE
                      ? (tr->cfg.qk_norm ? "selective (store tapes without the RMSNorm, "
                                           "qk-norm and SwiGLU outputs)"
                                         : "selective (store tapes without the RMSNorm and "
                                           "SwiGLU outputs)")
                      : schedule_mode_name(o->recompute));
    printf("predicted peak: %zu bytes (the baseline and the arenas, which are allocated whole "
           "at start-up, next)\n", tr->plan.total);
    if (tr->data.train.num_shards > 0)
        printf("train data: %d shard(s) from %s\n", tr->data.train.num_shards, o->train_data);
    else
        printf("train data: none (--steps 0)\n");
    /* when a crash or a kill would cost: the saves this run will make */
    if (tr->files.sess.dir[0]) {
        char every[64] = "", mins[64] = "", keep[32] = "all";
        if (tr->files.sess.cfg.save_every > 0)
            snprintf(every, sizeof every, "every %d steps, ", tr->files.sess.cfg.save_every);
        if (tr->files.sess.cfg.save_minutes > 0)
            snprintf(mins, sizeof mins, "%g minutes after the previous save, ",
                     tr->files.sess.cfg.save_minutes);
        if (tr->files.sess.cfg.keep > 0)
            snprintf(keep, sizeof keep, "the newest %d", tr->files.sess.cfg.keep);
        printf("checkpoints: %s, %s%sat the end and on a stop (keeping %s)\n", tr->files.sess.dir,
               every, mins, keep);
    } else if (!o->save && !o->llmc_save_dir && o->steps > 0) {
        printf("note: no --save, --checkpoint-dir or --save-checkpoint-llmc: the trained weights "
               "will not be written\n");
    }
}

/* Progress, and the run's estimated length before the parameters are made
 * (which alone takes half a minute for a 380M model on a CPU). */
static void start_progress(Trainer *tr, double t_start)
{
    const TrainOptions *o = &tr->opt;
    int from = 0; /* the step a resume starts from, from its manifest */
    CkptManifest man;
    char why[512];
    if (tr->files.resume_dir[0] &&
        ckpt_read_manifest(tr->files.resume_dir, &man, why, sizeof why) == 0) {
        from = man.step;
        ckpt_manifest_free(&man);
    }
    if (o->llmc_resume) from = tr->files.llmc.from.step;
    progress_init(&tr->prog, &tr->model, t_start, o->grad_accum, o->peak_tflops, o->steps);
    if (tr->dist.world == 1) stop_install_block_hook(&tr->model, &tr->prog);
    /* the final val loss and --eval-file score follow the last step (its ETA) */
    progress_set_tail(&tr->prog, &tr->model, o->grad_accum, tr->data.val ? o->val_batches : 0,
                      tr->eval ? train_eval_passes(tr->eval, o->batch) : 0);
    if (tr->dist.rank != 0) return; /* the estimate is printed once, its warning too */
    progress_print_peak(&tr->prog, stdout);
    int steps = o->steps > from ? o->steps - from : 0;
    int evals =
        !tr->data.val ? 0 : 1 + (o->val_every > 0 ? (steps + o->val_every - 1) / o->val_every : 0);
    progress_estimate(&tr->prog, &tr->model, o->grad_accum, tr->perf.step_ns_predicted,
                      tr->perf.costs.source, steps, evals, o->val_batches, stdout);
}

void startup_shape(Trainer *tr, int argc, char **argv)
{
    char err[1024] = "";
    const TrainOptions *o = &tr->opt;
    start(tr, argc, argv);
    Dist *d = &tr->dist;
    int rc = resolve_config(tr, err, sizeof err);
    guard_exit_if_any(d, rc == 2, 2, err);
    if (rc != 0) fail(tr, err);
    if (o->seq_len > tr->cfg.max_seq_len)
        dist_fail(d, 2, "--seq-len: %d exceeds the model's maximum sequence length %d (the "
                  "position table of %s): pass --seq-len %d or less", o->seq_len,
                  tr->cfg.max_seq_len, seq_len_source(tr), tr->cfg.max_seq_len);
    guard_exit_if_any(d, recompute_check(o, &tr->cfg, err, sizeof err) != 0, 2, err);
}

/* This rank's share of the model under data parallelism. */
static GPTShard rank_shard(const Trainer *tr)
{
    return (GPTShard){tr->dist.world, tr->dist.rank, tr->opt.zero, tr->opt.offload};
}

int startup_plan(Trainer *tr)
{
    char err[1024] = "";
    const TrainOptions *o = &tr->opt;
    Dist *d = &tr->dist;
    GPTShard shard = rank_shard(tr);
    /* --world-size: rank 0 of a job that size (every rank plans the same bytes) */
    if (o->world_size > 0) shard.world = o->world_size, shard.rank = 0;
    /* under a launcher each rank measures its own device, not device 0 */
    if (strcmp(o->device, "cpu") != 0 && dist_select_device(d, err, sizeof err) != 0)
        fail(tr, err);
    int rc = recompute_plan(o, &tr->cfg, &shard);
    dist_finalize(d);
    return rc;
}

/* --generate's model holds one row and keeps every activation, with the
 * planner's loss chunk; its progress counts no training steps. */
enum { GENERATE_ROWS = 1, GENERATE_GRAD_ACCUM = 1, GENERATE_STEPS = 0, LOSS_CHUNK_PLANNED = 0 };

int startup_generate(Trainer *tr)
{
    char err[1024];
    const TrainOptions *o = &tr->opt;
    int rc = text_sampler_open(&tr->sampler, o, tr->cfg.vocab_size, tr->cfg.tokenizer_id, 0, err,
                               sizeof err);
    if (rc != 0) dist_fail(&tr->dist, rc == CODEC_REFUSED ? 2 : 1, "%s", err);
    if (!o->init_from && tr->dist.rank == 0)
        fprintf(stderr, "note: --generate without --init-from samples a fresh initialisation "
                "(seed %llu), not a trained model: the text is noise\n",
                (unsigned long long)o->seed);
    if (strcmp(o->device, "cpu") != 0 && dist_select_device(&tr->dist, err, sizeof err) != 0)
        fail(tr, err);
    tr->be = backend_open(o->device, o->dtype, o->threads, err, sizeof err);
    if (!tr->be) fail(tr, err);
    if (gpt_init(&tr->model, &tr->cfg, tr->be, GENERATE_ROWS, o->seq_len, RECOMPUTE_NONE,
                 LOSS_CHUNK_PLANNED, err, sizeof err) != 0 ||
        params_load(tr, err, sizeof err) != 0)
        fail(tr, err);
    /* no label: the tokens are the progress; a signal stops at a block */
    progress_init(&tr->prog, &tr->model, progress_now_ms(), GENERATE_GRAD_ACCUM, o->peak_tflops,
                  GENERATE_STEPS);
    stop_install_block_hook(&tr->model, &tr->prog);
    text_sampler_print(&tr->sampler, &tr->model, o->generate, NULL, stdout);
    int cut = tr->model.abandoned;
    if (cut)
        printf("stopped by signal %d during --generate; nothing to save\n", signals_pending());
    gpt_free(&tr->model);
    text_sampler_close(&tr->sampler);
    backend_close(tr->be);
    dist_finalize(&tr->dist);
    return cut ? TRAIN_EXIT_STOPPED_NOTHING : 0;
}

/* The data: --train-data and --val-data opened (their manifest check
 * started), --eval-file read, and the ranks' agreement on them. */
static void open_data(Trainer *tr)
{
    char err[1024] = "";
    const TrainOptions *o = &tr->opt;
    Dist *d = &tr->dist;
    int rc = train_data_open(tr, err, sizeof err);
    if (rc != 0 && !signals_pending()) fail(tr, err);
    stop_check_startup(tr, "reading the data (hashing its shards)");
    if (o->eval_file) {
        tr->eval = calloc(1, sizeof *tr->eval);
        if (!tr->eval) fail(tr, "out of host memory for --eval-file");
        if (train_eval_open(tr->eval, o->eval_file, tr->cfg.vocab_size, tr->cfg.tokenizer_id,
                            o->seq_len, d, o->zero == 3, err, sizeof err) != 0) {
            train_options_name_flag("--eval-file", err, sizeof err);
            if (access(o->eval_file, F_OK) != 0)
                snprintf(err + strlen(err), sizeof err - strlen(err),
                         " (`make hellaswag` writes datasets/hellaswag_val.bin)");
            fail(tr, err);
        }
    }
    guard_check_data(d, session_data_fingerprint(&tr->data.train));
}

/* The device and its backend, and the device memory in use before the
 * arenas (the summary's baseline). */
static void open_backend(Trainer *tr)
{
    char err[1024] = "";
    const TrainOptions *o = &tr->opt;
    Dist *d = &tr->dist;
    if (strcmp(o->device, "cpu") != 0 && dist_select_device(d, err, sizeof err) != 0)
        fail(tr, err);
    /* before the first BLAS call, which would retry a failed map forever */
    if (strcmp(o->device, "cpu") == 0 &&
        limits_check_address_space(cpu_threads(tr), err, sizeof err) != 0)
        fail(tr, err);
    tr->be = backend_open(o->device, o->dtype, cpu_threads(tr), err, sizeof err);
    if (!tr->be) fail(tr, err);
    guard_check_backend(d, tr->be);
    tr->perf.mem.known =
        tr->be->ops->mem_info(tr->be, &tr->perf.mem.free_before, &tr->perf.mem.total) == 0;
}

/* The recompute schedule and the memory plan (cli/recompute.h), which may
 * keep the checkpoints on the device (shard->offload). */
static void plan_memory(Trainer *tr, GPTShard *shard, Schedule *sched)
{
    char err[1024] = "";
    const TrainOptions *o = &tr->opt;
    Dist *d = &tr->dist;
    int rc = recompute_schedule(o, &tr->cfg, tr->be, shard, sched, &tr->plan, &tr->perf.costs,
                               &tr->perf.step_ns_predicted, err, sizeof err);
    if (rc != 0 && !signals_pending()) dist_fail(d, rc == 2 ? 2 : 1, "%s", err);
    /* --recompute auto may keep the checkpoints on the device: the plan says */
    if (rc == 0) shard->offload = tr->plan.offload;
    stop_check_startup(tr, "planning the memory (measuring the op costs)");
    /* after the op costs were measured: they time the backend's own ops */
    if (o->profile_ops) profile_attach(&tr->perf.prof, tr->be);
}

/* The header, then the arenas (the model takes sched over), the model
 * handed to the ranks, and the host's batch and step times. */
static void allocate(Trainer *tr, const GPTShard *shard, Schedule *sched)
{
    char err[1024] = "";
    const TrainOptions *o = &tr->opt;
    Dist *d = &tr->dist;
    print_header(tr);
    /* on the cpu the arenas are this process's address space */
    if (strcmp(tr->be->name, "cpu") == 0 &&
        limits_check_plan(tr->plan.total - tr->plan.baseline + tr->plan.host_total,
                          tr->plan.bytes[MEM_PARAMS] + tr->plan.bytes[MEM_GRADS] +
                              tr->plan.bytes[MEM_OPTIMIZER], err, sizeof err) != 0)
        fail(tr, err);
    AllocShow show;
    alloc_show_start(&show, tr->plan.total - tr->plan.baseline, stdout);
    int rc = gpt_init_schedule(&tr->model, &tr->cfg, tr->be, o->batch, o->seq_len, sched,
                               o->loss_chunk, shard, alloc_show_update, &show, err, sizeof err);
    alloc_show_end(&show);
    if (rc != 0 && !signals_pending()) fail(tr, err);
    stop_check_startup(tr, "allocating the model's memory");
    tr->model.no_prefetch = !o->zero_prefetch; /* --zero-prefetch off (ZeRO-3 only) */
    if (dist_attach_gpt(d, &tr->model, err, sizeof err) != 0) fail(tr, err);
    tr->data.batch.inputs = malloc(sizeof(int) * o->batch * o->seq_len);
    tr->data.batch.targets = malloc(sizeof(int) * o->batch * o->seq_len);
    tr->perf.times.ms = malloc(sizeof(double) * (size_t)(o->steps + 1));
    if (!tr->data.batch.inputs || !tr->data.batch.targets || !tr->perf.times.ms)
        fail(tr, "out of host memory for a batch");
}

/* The sampler, then the parameters: a resume's save, llm.c's checkpoint,
 * --init-from, or a fresh initialisation. */
static void load_start(Trainer *tr)
{
    char err[1024] = "";
    const TrainOptions *o = &tr->opt;
    Dist *d = &tr->dist;
    /* Sampling first: it seeds the sampler's RNG, which a resume then
     * restores; on every rank under ZeRO-3 (loop.c's sample_due). */
    int rc = 0;
    if (o->sample_every > 0 && (d->rank == 0 || o->zero == 3))
        rc = text_sampler_open(&tr->sampler, o, tr->cfg.vocab_size, tr->cfg.tokenizer_id,
                               tr->data.train.tokenizer_id, err, sizeof err);
    if (rc != 0) dist_fail(d, rc == CODEC_REFUSED ? 2 : 1, "%s", err);
    if (tr->files.resume_dir[0]) {
        printf("resuming from %s...\n", tr->files.resume_dir);
        rc =
            session_resume(&tr->files.sess, tr->files.resume_dir, &tr->model, &tr->data.train,
                           &tr->sampler.rng, &tr->start_step, &tr->stop.bad_steps, err, sizeof err);
    } else if (o->llmc_resume) {
        printf("resuming from llm.c's checkpoint %s...\n", tr->files.llmc.from.state);
        rc = llmc_folder_resume(&tr->files.llmc, o, &tr->model, d, &tr->data.train,
                                &tr->sampler.rng, &tr->start_step, err, sizeof err);
    } else {
        if (o->init_from)
            printf("loading %zu parameters from %s...\n", tr->model.plan.num_params,
                   o->init_from);
        else
            printf("initializing %zu parameters (seed %llu)...\n", tr->model.plan.num_params,
                   (unsigned long long)o->seed);
        TEST_HOOK(io_test_pause("startup", "params"));
        rc = params_load(tr, err, sizeof err); /* checks for a stop itself */
    }
    if (rc != 0 && !signals_pending()) fail(tr, err);
    stop_check_startup(tr, tr->files.resume_dir[0] || o->llmc_resume ? "loading the save to resume"
                           : o->init_from ? "loading --init-from"
                                          : "initialising the parameters");
}

/* The run has started: what the folders' claims only checked at start-up
 * is moved aside now, so a run refused before this point (a changed flag,
 * other data, a bad file) leaves both folders and the old outputs as they
 * were. */
static void settle(Trainer *tr)
{
    char err[1024] = "";
    const TrainOptions *o = &tr->opt;
    Dist *d = &tr->dist;
    train_data_finish_check(tr); /* before anything is moved aside, the log or a save written */
    stop_check_startup(tr, "checking the data against its manifest");
    guard_check_start_step(d, tr->start_step);
    if (session_settle(&tr->files.sess, d, err, sizeof err) != 0) dist_exit_all(d, 1, "%s", err);
    llmc_folder_settle(&tr->files.llmc, o, d, tr->files.sess.dir,
                       tr->files.resume_dir[0] ? tr->files.sess.resumed.step : -1);
    outputs_move_aside(&tr->files.out, o, d, tr->files.resume_dir[0] || o->llmc_resume);
}

/* --log, from rank 0. A resumed run (--resume or --resume-llmc) appends to
 * its log, cut back to the resumed step, so the log covers the whole run
 * with each step once; a new one starts with what made the run
 * (cli/run_record.h). */
static void open_log(Trainer *tr)
{
    char err[1024] = "";
    const TrainOptions *o = &tr->opt;
    if (tr->dist.rank != 0) return;
    int resumed = tr->files.resume_dir[0] || o->llmc_resume;
    /* the log's run id: the checkpoint run's (kept across resumes); an
     * llm.c resume starts a new id, so its log is not checked */
    char run_id[32];
    snprintf(run_id, sizeof run_id, "%016llx", (unsigned long long)tr->files.sess.run_id);
    if (run_log_open(&tr->files.out.log, o->log_path, resumed ? tr->start_step : -1,
                     o->llmc_resume ? NULL : run_id, o->log_errors, err, sizeof err) != 0)
        fail(tr, err);
    if (resumed) return;
    char backend[64];
    snprintf(backend, sizeof backend, "%s %s", tr->be->name,
             tr->be->act_bytes == 2 ? "bf16" : "fp32");
    char *rec = run_record_json(o, &tr->cfg, o->batch, o->seq_len,
                                session_data_fingerprint(&tr->data.train), backend, tr->dist.world,
                                o->llmc_resume ? NULL : run_id);
    if (!rec) fail(tr, "out of host memory for the log's first line");
    run_log_line(&tr->files.out.log, rec);
    free(rec);
}

void startup_run(Trainer *tr, double t_start)
{
    GPTShard shard = rank_shard(tr);
    Schedule sched;
    char err[1024];
    if (limits_check_files(err, sizeof err) != 0) fail(tr, err); /* before the first save fails */
    open_data(tr);
    open_backend(tr);
    plan_memory(tr, &shard, &sched);
    allocate(tr, &shard, &sched);
    start_progress(tr, t_start);
    stop_check_startup(tr, "timing a matmul for the estimate");
    load_start(tr);
    settle(tr);
    open_log(tr);
}
