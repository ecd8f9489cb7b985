/* cli/recompute.c — see cli/recompute.h. */
#include "cli/recompute.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "base/procmem.h"
#include "base/test_hooks.h"
#include "interop/hf_folder.h"
#include "kernels/backend.h"
#include "kernels/device_info.h"
#include "model/plan_choose.h"
#include "model/planner.h"
#include "model/solver.h"
#include "base/signals.h"

/* Host memory the kernel says is available (MemAvailable), or 0. */
static size_t host_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    if (f) fclose(f);
    return (size_t)kb * 1024;
}

/* What OpenBLAS's buffers still grow by after matmul_prepare has touched
 * them at the run's shapes: at most 0.8 MiB a product (measured with bare
 * cblas_sgemm calls, VmRSS before and after, up to 2048 x 50304 x 768). */
#define BLAS_BUFFER_BYTES ((size_t)1 << 20)

/* The matmuls a run at this shape makes (a block's four, by its family,
 * and the loss head's chunks), touched before the resident set is read.
 * (N, in, out): GPT-2's qkv 3C, projection, fc 4C and its projection;
 * Llama's q and the KV heads' k and v, projection, gate and up 2F, down. */
static void prepare_matmuls(Backend *be, const TrainOptions *o, const GPTConfig *cfg, DType dt)
{
    if (!be->ops->matmul_prepare) return;
    int N = o->batch * o->seq_len, C = cfg->channels;
    int qkv = 3 * C, up = 4 * C, down = 4 * C, wo_in = C;
    if (cfg->arch == ARCH_LLAMA) {
        int hs = config_head_dim(cfg), F = config_ffn(cfg);
        qkv = config_q_width(cfg) + 2 * config_kv_heads(cfg) * hs, up = 2 * F, down = F;
        wo_in = config_q_width(cfg);
    }
    const int mm[4][3] = {{N, C, qkv}, {N, wo_in, C}, {N, C, up}, {N, down, C}};
    int rows = o->loss_chunk > 0 ? o->loss_chunk
                                 : planner_default_loss_chunk(o->batch, o->seq_len,
                                                              cfg->padded_vocab, dt);
    be->ops->matmul_prepare(be, mm, 4, rows < N ? rows : N, cfg->vocab_size, C);
}

size_t recompute_baseline(Backend *be, const TrainOptions *o, const GPTConfig *cfg)
{
    /* the suite's runs whose budgets are the arenas' plans, to the byte */
    TEST_HOOK(if (getenv("TRAIN_GPT_TEST_BASELINE")) return (size_t)strtoull(
                  getenv("TRAIN_GPT_TEST_BASELINE"), NULL, 10));
    size_t free_b = 0, total_b = 0;
    if (be->ops->mem_info(be, &free_b, &total_b) == 0)
        return total_b > free_b ? total_b - free_b : 0;
    prepare_matmuls(be, o, cfg, be->act_bytes == 2 ? DTYPE_BF16 : DTYPE_FP32);
    /* rounded up to a MiB: the resident set moves by some pages from run
     * to run, and auto's schedule (which fills the budget less the
     * baseline) should not move with it */
    size_t mib = (size_t)1 << 20;
    return (procmem_rss() + BLAS_BUFFER_BYTES + mib - 1) / mib * mib;
}

int recompute_budget(Backend *be, size_t baseline, size_t *budget, char *err, size_t len)
{
    size_t free_b = 0, total_b = 0, margin;
    const char *what;
    if (be->ops->mem_info(be, &free_b, &total_b) == 0) {
        margin = (size_t)512 << 20;
        what = "free device memory";
    } else {
        free_b = host_available();
        margin = free_b / 10;
        what = "available host memory (/proc/meminfo MemAvailable)";
    }
    if (free_b <= margin) {
        snprintf(err, len, "--memory-budget: cannot derive a default (%s: %zu bytes); pass one",
                 what, free_b);
        return -1;
    }
    /* the baseline is held already, so it is outside what is free */
    *budget = free_b - margin + baseline;
    char a[32], b[32], c[32], d[32];
    printf("memory budget: %s (%s %s minus a margin of %s, plus the baseline of %s this process "
           "holds already; set --memory-budget to change)\n",
           planner_format_bytes(*budget, a, sizeof a), what,
           planner_format_bytes(free_b, b, sizeof b), planner_format_bytes(margin, c, sizeof c),
           planner_format_bytes(baseline, d, sizeof d));
    return 0;
}

int recompute_check(const TrainOptions *o, const GPTConfig *cfg, char *err, size_t len)
{
    if (o->checkpoint_every > cfg->num_layers) {
        snprintf(err, len, "--checkpoint-every: must be in 1..%d (the layer count); got %d",
                 cfg->num_layers, o->checkpoint_every);
        return 2;
    }
    return 0;
}

/* What this build's model can place in the host tier when training (the
 * planner sizes every combination for --plan). */
static int offload_check(const TrainOptions *o, Backend *be, char *err, size_t len)
{
    if (!o->offload) return 0;
    if (!be->ops->copy_async) {
        snprintf(err, len, "--offload %s: the %s backend has no copy engine for the host tier "
                           "yet (the cpu backend has); --plan sizes it on any backend",
                 planner_offload_name(o->offload), be->name);
        return -1;
    }
    return 0;
}

/* The largest host copy the run's outputs make while the arenas are live
 * (the buffers of cli/outputs.c, ckpt/session.c, interop/llmc_ckpt.c and
 * interop/model_file.c), bytes: the parameters as fp32 for --save (and
 * their bf16 copy with --save-dtype bf16) and --dump-grads' gradients; for
 * a checkpoint, written or resumed from (ours or llm.c's), the parameters
 * and AdamW's m and v (ours: and the piece its files are read back
 * through), and llm.c's fp32 master. */
static size_t host_copies(const TrainOptions *o, const GPTConfig *cfg)
{
    size_t np = config_num_params(cfg), p = np * sizeof(float), big = 0;
    if (o->save) big = p + (o->save_dtype ? np * 2 : 0);
    if (o->dump_grads && p > big) big = p;
    /* and the piece each file is read back through for its crc32 */
    size_t ours = 3 * p + IO_READ_CHUNK_BYTES;
    if (o->checkpoint_dir || o->resume || o->resume_path) big = ours > big ? ours : big;
    if (o->llmc_save_dir || o->llmc_resume) big = 3 * p > big ? 3 * p : big;
    /* the piece start-up streams the first parameters through (cli/params_load.c),
     * and from a Hugging Face folder the reader's scratch beside it */
    size_t start = gpt_params_piece_bytes(cfg);
    if (o->init_from && hf_folder_is(o->init_from)) start += hf_folder_scratch_bytes(cfg);
    if (start > big) big = start;
    return big;
}

/* The planner's input from the flags; the caller adds what a backend
 * holds: its baseline, the host copies when the host is the device (the
 * cpu backend, whose budget holds them: host_copies) and the attention's
 * tile scratch (gpt_attn_scratch_bytes). */
static PlanInput plan_input(const TrainOptions *o, const GPTConfig *cfg, DType dtype,
                            const GPTShard *shard)
{
    PlanInput in = {.cfg = *cfg, .B = o->batch, .T = o->seq_len, .dtype = dtype,
                    .loss_chunk = o->loss_chunk, .world_size = shard->world,
                    .zero = shard->zero, .offload = o->offload,
                    .host_budget = o->host_budget_given ? o->host_budget : 0};
    return in;
}

/* What the flags ask of the planner (model/plan_choose.h): --recompute,
 * --checkpoint-every, --memory-budget (auto's budget is filled in by the
 * caller when none was given), --host-budget and --offload, in in. */
static PlanRequest plan_request(const TrainOptions *o, const PlanInput *in)
{
    PlanRequest rq = {.mode = o->recompute, .checkpoint_every = o->checkpoint_every,
                      .budget = o->memory_budget, .budget_given = o->memory_budget_given,
                      .host_budget_given = o->host_budget_given,
                      .grad_accum = o->grad_accum, .in = *in};
    return rq;
}

/* Past the solver's layer limit, say which restricted search chose the
 * schedule (planner.h, AutoFamily); the DP's choice needs no note. */
static void auto_print_family(FILE *f, const GPTConfig *cfg, const AutoResult *r)
{
    if (r->family == AUTO_SOLVER) return;
    fprintf(f, "recompute auto: %d layers, past the solver's %d: searched every block input kept "
               "with tapes of two kinds on the top blocks, or segments; ",
            cfg->num_layers, SOLVER_MAX_LAYERS);
    if (r->family == AUTO_SEGMENTS)
        fprintf(f, "chose segments of k = %d blocks\n", r->checkpoint_every);
    else
        fprintf(f, "chose every input kept\n");
}

/* Why the plan was refused, in err (exit 2); auto's smallest-peak schedule
 * s is printed to stderr first, as the message points to it. */
static void refusal(const TrainOptions *o, const GPTConfig *cfg, const Schedule *s,
                    const MemoryPlan *plan, const PlanVerdict *v, char *err, size_t len)
{
    char a[32], b[32], c[32];
    switch (v->limit) {
    case PLAN_AUTO_NO_FIT:
        auto_print_family(stderr, cfg, &v->autor);
        fprintf(stderr, "the schedule with the smallest peak at this shape:\n");
        schedule_print(stderr, s, 1);
        snprintf(err, len, "--recompute auto: no schedule fits the budget of %zu bytes (%s)%s; "
                           "the smallest achievable peak is %zu bytes (%s), reached by the "
                           "schedule printed above",
                 v->allowed, planner_format_bytes(v->allowed, a, sizeof a),
                 (o->offload & OFFLOAD_CHECKPOINTS) && o->host_budget_given
                     ? " with its host bytes within --host-budget" : "",
                 v->needed, planner_format_bytes(v->needed, b, sizeof b));
        break;
    case PLAN_OVER_HOST:
        snprintf(err, len, "--host-budget: --recompute %s with --offload %s needs %zu host bytes "
                           "(%s), more than the host budget of %zu bytes (%s)",
                 schedule_mode_flag(o->recompute), planner_offload_name(o->offload),
                 v->needed, planner_format_bytes(v->needed, a, sizeof a),
                 v->allowed, planner_format_bytes(v->allowed, b, sizeof b));
        break;
    default: /* PLAN_OVER_DEVICE */
        snprintf(err, len, "--memory-budget: --recompute %s needs %zu bytes (%s, of which %s "
                           "the process holds before its arenas), more than the budget of %zu "
                           "bytes (%s); try --recompute auto",
                 schedule_mode_flag(o->recompute), v->needed,
                 planner_format_bytes(v->needed, a, sizeof a),
                 planner_format_bytes(plan->baseline, c, sizeof c), v->allowed,
                 planner_format_bytes(v->allowed, b, sizeof b));
        break;
    }
}

/* auto's choice, before the copy engine is checked: its peak within the
 * budget, its recompute, and with measured costs its tape kinds. */
static void auto_print_choice(const PlanRequest *rq, const TrainCosts *tc, const PlanVerdict *v)
{
    const AutoResult *r = &v->autor;
    printf("recompute auto: predicted peak %zu bytes within the budget of %zu; recomputes "
           "%.2f%% of a step's FLOPs\n", r->peak, rq->budget,
           100.0 * (double)r->recompute_flops / (double)v->step_flops);
    if (tc->have) {
        const BlockDesc *b = planner_block(&rq->in);
        char hi[BLOCK_MAX_TENSORS + 1], lo[BLOCK_MAX_TENSORS + 1];
        KindCost *front = malloc(sizeof *front * (size_t)tape_kinds(b));
        printf("recompute auto: least predicted time, tape kinds %s and %s (of %d on the "
               "frontier)\n", tape_kind_name(b, r->hi_kind, hi), tape_kind_name(b, r->lo_kind, lo),
               front ? opcost_frontier(&tc->oc, &rq->in, front) : 0);
        free(front);
    }
}

/* auto's schedule, and with --offload checkpoints where it put the stored
 * inputs (the run offloads only what auto chose: cli/startup.c hands
 * plan->offload on). */
static void auto_print_schedule(const TrainOptions *o, const GPTConfig *cfg, const Schedule *s,
                                const PlanVerdict *v)
{
    const AutoResult *r = &v->autor;
    if (o->offload & OFFLOAD_CHECKPOINTS) {
        if (r->offload)
            printf("recompute auto: stored block inputs offloaded to the host (%zu host "
                   "bytes); their copies predicted to add %.3f ms a micro-batch beyond the "
                   "compute that hides them\n", r->host, r->copy / 1e6);
        else
            printf("recompute auto: stored block inputs kept on the device (offloading them "
                   "predicts no gain at this budget)\n");
    }
    auto_print_family(stdout, cfg, r);
    schedule_print(stdout, s, 0);
}

/* The predicted step (the verdict's: the ops, and with offloaded
 * checkpoints the copies' exposed time). The start-up's estimate prints
 * it, the one step time a run states (cli/progress.h); the costs' source
 * gains what the figure covers. */
static void predict(const TrainOptions *o, TrainCosts *tc, const MemoryPlan *plan,
                    const PlanVerdict *v, long long *step_ns)
{
    *step_ns = v->step_ns;
    size_t n = strlen(tc->source);
    if (*step_ns >= 0)
        snprintf(tc->source + n, sizeof tc->source - n, "; %d micro-batch%s%s", o->grad_accum,
                 o->grad_accum == 1 ? "" : "es",
                 plan->n_ring ? "; copies of the offloaded inputs included" : "");
    else if (tc->have)
        printf("note: the op costs predict no step time (the copy engine's costs are not in "
               "%s)\n", tc->source);
}

int recompute_schedule(const TrainOptions *o, const GPTConfig *cfg, Backend *be,
                          const GPTShard *shard, Schedule *s, MemoryPlan *plan,
                          TrainCosts *tc, long long *step_ns, char *err, size_t len)
{
    size_t free_b = 0, total_b = 0;
    PlanInput in = plan_input(o, cfg, be->act_bytes == 2 ? DTYPE_BF16 : DTYPE_FP32, shard);
    if (be->ops->mem_info(be, &free_b, &total_b) != 0) /* no device memory: the host's */
        in.host_copies = host_copies(o, cfg);
    in.attn_scratch = gpt_attn_scratch_bytes(be, cfg);
    PlanRequest rq = plan_request(o, &in);
    *step_ns = -1;
    const int how = (o->recompute == RECOMPUTE_AUTO ? COSTS_MEASURE_IF_ABSENT : 0) |
                    (shard->rank == 0 ? COSTS_WRITE_CACHE : 0);
    if (costs_get(o, &rq.in, be, how, tc, err, len) != 0) return -1;
    /* After the op costs' measurement, which fits its buffers into the
     * arenas every schedule has (model/opcost_measure.c) and frees them:
     * what it leaves behind (heap pages, allocator caches, about 1 MiB at
     * L=4 C=128 V=50257) is then part of the baseline, not a peak over
     * the plan. */
    rq.in.baseline = recompute_baseline(be, o, cfg);
    if (o->recompute == RECOMPUTE_AUTO && !o->memory_budget_given &&
        recompute_budget(be, rq.in.baseline, &rq.budget, err, len) != 0)
        return -1;
    /* --checkpoint-every past the layer count was refused by recompute_check */
    PlanVerdict v;
    int rc = planner_choose(&rq, tc->have ? &tc->oc : NULL, s, plan, &v, err, len);
    if (rc != 0) return rc;
    if (!v.fits) {
        refusal(o, cfg, s, plan, &v, err, len);
        schedule_free(s);
        return 2;
    }
    if (o->recompute == RECOMPUTE_AUTO) auto_print_choice(&rq, tc, &v);
    if (offload_check(o, be, err, len) != 0) {
        schedule_free(s);
        return 2;
    }
    if (o->recompute == RECOMPUTE_AUTO) auto_print_schedule(o, cfg, s, &v);
    predict(o, tc, plan, &v, step_ns);
    return 0;
}

/* --plan's closing lines for the --recompute and --offload given: that
 * choice's device and host totals (auto: the schedule it picks at the
 * budget, chosen as in the table; with --offload checkpoints and measured
 * copy costs, as a run would choose, offloading or not). Returns 0, or -1
 * with err. */
static int plan_choice(const TrainOptions *o, const PlanInput *in, size_t budget,
                       const TrainCosts *tc, char *err, size_t len)
{
    PlanRequest rq = plan_request(o, in);
    rq.dry_run = 1;
    rq.budget = budget;
    rq.budget_given = rq.host_budget_given = 0; /* the totals, whatever the budgets */
    /* auto chooses with the measured costs only where it weighs offloaded
     * checkpoints with them; otherwise by FLOPs */
    int weighs = planner_weighs_offload(in, tc->have ? &tc->oc : NULL);
    Schedule s;
    MemoryPlan p;
    PlanVerdict v;
    if (planner_choose(&rq, weighs ? &tc->oc : NULL, &s, &p, &v, err, len) != 0) return -1;
    schedule_free(&s);
    printf("--recompute %s --offload %s:%s\n", schedule_mode_flag(o->recompute),
           planner_offload_name(o->offload),
           o->recompute == RECOMPUTE_AUTO && (in->offload & OFFLOAD_CHECKPOINTS)
               ? ((p.offload & OFFLOAD_CHECKPOINTS)
                      ? " auto offloads the stored block inputs"
                      : weighs ? " auto keeps the stored block inputs on the device"
                               : " (no copy costs measured: auto's choice without offloaded "
                                 "checkpoints)")
               : "");
    printf("device: %zu bytes (%.3f GiB)\n", p.total, p.total / 1073741824.0);
    printf("host: %zu bytes (%.3f GiB)\n", p.host_total, p.host_total / 1073741824.0);
    return 0;
}

/* The margin recompute_budget keeps off a device's free memory. */
#define DEVICE_MARGIN ((size_t)512 << 20)

/* --plan for a CUDA device this process does not open: --plan-device, a
 * CUDA build that sees no GPU (a laptop, a login node: planning the GPU
 * run is what --plan is for there, and the cpu backend is not it), or a
 * build without CUDA asked for bf16 or --device cuda. NULL otherwise: the
 * plan is for the backend this binary would open. *dev is the card whose
 * memory makes the default budget (--plan-device, else an H100; NULL with
 * --memory-budget). */
static const char *unopened_gpu(const TrainOptions *o, const PlanDevice **dev)
{
    const char *why = NULL;
    *dev = NULL;
    if (o->plan_device) {
        *dev = device_plan_find(o->plan_device);
        return "--plan-device";
    }
    if (strcmp(o->device, "cpu") == 0) return NULL;
#ifdef HAVE_CUDA
    if (cuda_device_count() == 0) why = "no CUDA device is visible here";
#else
    if (strcmp(o->device, "cuda") == 0 || strcmp(o->dtype, "bf16") == 0)
        why = "this binary was built without CUDA";
#endif
    if (why && !o->memory_budget_given) *dev = device_plan_find("h100");
    return why;
}

/* The unopened GPU's lines: what the plan is for and its budget (the
 * card's memory less a run's margin, unless --memory-budget). */
static void unopened_print(const TrainOptions *o, const char *why, const PlanDevice *dev,
                           DType dtype, size_t *budget)
{
    const char *dt = dtype == DTYPE_BF16 ? "bf16" : "fp32";
    if (strcmp(why, "--plan-device") != 0)
        printf("note: %s: planning for a CUDA device in %s, not the cpu backend%s\n", why, dt,
               dev ? " (an H100 unless --plan-device names another)" : "");
    if (dev) {
        const char *row = NULL;
        double peak = device_peak_flops(dev->match, dtype == DTYPE_BF16, &row);
        printf("plan device: %s (--plan-device %s): %zu bytes (%.2f GiB) of memory, dense %s "
               "peak %.1f TFLOP/s (data sheets, kernels/device_info.c)\n", row, dev->flag,
               dev->memory, dev->memory / 1073741824.0, dt, peak / 1e12);
    }
    if (!o->memory_budget_given) {
        char a[32], b[32];
        *budget = dev->memory - DEVICE_MARGIN;
        printf("memory budget: %s (the card's %s minus the margin of 512 MiB a run keeps; set "
               "--memory-budget to change)\n", planner_format_bytes(*budget, a, sizeof a),
               planner_format_bytes(dev->memory, b, sizeof b));
    }
    printf("baseline: not measured (%s); a run on the GPU counts the device memory in use at "
           "its start-up (the CUDA context and the backend's workspaces) against the budget "
           "too\n", o->memory_budget_given ? "with --memory-budget, --plan opens no device"
                                           : "--plan opens no device here");
}

/* Op costs for an unopened GPU: a FILE measured on one, or FLOPs; the
 * cache and a measurement would time this machine instead. Returns 0, or
 * 2 with err. */
static int unopened_costs(const TrainOptions *o, const PlanInput *in, TrainCosts *tc,
                          char *err, size_t len)
{
    memset(tc, 0, sizeof *tc);
    if (strcmp(o->op_costs, "measure") == 0) {
        snprintf(err, len, "--op-costs measure: no CUDA device to time the ops on here (the "
                           "plan is for one); give --op-costs FILE, costs a run wrote on the "
                           "GPU, or flops");
        return 2;
    }
    if (strcmp(o->op_costs, "auto") == 0) return 0; /* the cache is this machine's */
    return costs_get(o, in, NULL, COSTS_LOOKUP, tc, err, len) != 0 ? 1 : 0;
}

/* With ranks (--world-size, or a launcher's) or --zero: what one rank
 * holds of the parameters, gradients and optimizer state, the categories
 * no schedule changes; every rank plans the same bytes. */
static int plan_print_rank(const PlanInput *in, char *err, size_t len)
{
    if (in->world_size <= 1 && !in->zero) return 0;
    MemoryPlan p;
    if (planner_sizes(in, 0, &p, err, len) != 0) return -1;
    printf("per rank, each of %d (--zero %d): params %zu B, grads %zu B, optimizer %zu B",
           p.world_size, p.zero, p.bytes[MEM_PARAMS], p.bytes[MEM_GRADS], p.bytes[MEM_OPTIMIZER]);
    if (p.zero == 3)
        printf(" (params: shard %zu B + gather buffers for two blocks %zu B + wte/wpe/LN_f "
               "gather buffer %zu B)",
               p.param_shard_bytes, p.param_gather_bytes, p.param_outer_bytes);
    /* the receive buffer of the ordered sums over ranks (planner.h) */
    if (p.zero >= 2)
        printf(" (grads: shard %zu B + block buffer %zu B + wte/wpe/LN_f buffer %zu B + "
               "receive buffer %zu B)",
               p.grad_shard_bytes, p.grad_layer_bytes, p.grad_outer_bytes, p.comm_bytes);
    else if (p.comm_bytes)
        printf(" (grads: the vector %zu B + receive buffer %zu B)",
               p.bytes[MEM_GRADS] - p.comm_bytes, p.comm_bytes);
    printf("; the peaks above are one rank's\n");
    if (p.zero == 3) {
        /* recompute 0's program; the other modes' differ only in mode 2's
         * segment re-gathers (the memory plan of a run prints its own) */
        size_t ab = (size_t)dtype_bytes(in->dtype);
        size_t all = p.comm_gathered + p.comm_regathered + p.comm_scattered;
        printf("communication per micro-batch, per rank's collectives (--zero 3, recompute 0 and "
               "1): all-gathered %zu B, re-gathered %zu B, reduce-scattered %zu B = %.3fx the "
               "parameter bytes (%zu B)\n",
               p.comm_gathered * ab, p.comm_regathered * ab, p.comm_scattered * ab,
               p.num_params ? (double)all / p.num_params : 0.0, p.num_params * ab);
    }
    return 0;
}

/* The table and --offload's closing lines, at budget. */
static int plan_print(const TrainOptions *o, const PlanInput *in, size_t budget,
                      const TrainCosts *tc, char *err, size_t len)
{
    if (planner_print_modes(stdout, in, budget, o->checkpoint_every, tc->have ? &tc->oc : NULL,
                            o->grad_accum, err, len) != 0 ||
        plan_print_rank(in, err, len) != 0)
        return -1;
    if (train_options_given(o, "offload") && plan_choice(o, in, budget, tc, err, len) != 0)
        return -1;
    return 0;
}

/* --plan for a CUDA device not opened here (unopened_gpu). */
static int plan_unopened(const TrainOptions *o, const GPTConfig *cfg, const GPTShard *shard,
                         const char *why, const PlanDevice *dev)
{
    char err[1024];
    size_t budget = o->memory_budget;
    DType dtype = strcmp(o->dtype, "fp32") == 0 ? DTYPE_FP32 : DTYPE_BF16;
    unopened_print(o, why, dev, dtype, &budget);
    /* a GPU's attention keeps no cpu tile scratch */
    PlanInput in = plan_input(o, cfg, dtype, shard); /* no baseline, host copies or tile scratch */
    TrainCosts tc;
    int rc = unopened_costs(o, &in, &tc, err, sizeof err);
    if (rc == 0 && plan_print(o, &in, budget, &tc, err, sizeof err) != 0) rc = 1;
    if (rc != 0) fprintf(stderr, "error: %s\n", err);
    return rc;
}

int recompute_plan(const TrainOptions *o, const GPTConfig *cfg, const GPTShard *shard)
{
    const PlanDevice *dev;
    const char *why = unopened_gpu(o, &dev);
    if (why) return plan_unopened(o, cfg, shard, why, dev);
    char err[1024];
    size_t budget = o->memory_budget;
    DType dtype = DTYPE_FP32;
    /* The run this plans is the same binary: its start-up holds what this
     * process holds now (on a GPU, what the open backend finds in use). */
    size_t baseline = 0, attn_scratch = 0;
    int cpu = 0; /* the plan is for the cpu backend */
    const char *base_what = "this process's resident memory once the BLAS has touched its "
                            "buffers at this shape's matmuls, and 1 MiB";
    if (!o->memory_budget_given) {
        Backend *be = backend_open(o->device, o->dtype, o->threads, err, sizeof err);
        if (!be) {
            fprintf(stderr, "error: %s\n", err);
            return 1;
        }
        size_t free_b, total_b;
        baseline = recompute_baseline(be, o, cfg);
        if (be->ops->mem_info(be, &free_b, &total_b) == 0)
            base_what = "the device memory in use now, with this process's context";
        else
            cpu = 1;
        int rc = recompute_budget(be, baseline, &budget, err, sizeof err);
        dtype = be->act_bytes == 2 ? DTYPE_BF16 : DTYPE_FP32;
        attn_scratch = gpt_attn_scratch_bytes(be, cfg);
        backend_close(be);
        if (rc != 0) {
            fprintf(stderr, "error: %s\n", err);
            return 1;
        }
    } else if (strcmp(o->dtype, "bf16") == 0) {
        dtype = DTYPE_BF16;
    } else if (strcmp(o->dtype, "auto") == 0 && strcmp(o->device, "cpu") != 0) {
        /* auto means bf16 where cuda would run */
        int gpu = strcmp(o->device, "cuda") == 0;
#ifdef HAVE_CUDA
        gpu = gpu || cuda_device_count() > 0;
#endif
        dtype = gpu ? DTYPE_BF16 : DTYPE_FP32;
    }
    /* A plan for a GPU given its budget opened no device: the host's
     * resident bytes are not what the device's budget holds. */
    if (o->memory_budget_given && (dtype == DTYPE_BF16 || strcmp(o->device, "cuda") == 0)) {
        printf("baseline: not measured (with --memory-budget, --plan opens no device); a run "
               "on the GPU counts the device memory in use at its start-up (the CUDA context "
               "and the backend's workspaces) against the budget too\n");
    } else if (o->memory_budget_given) {
        /* a cpu run: its baseline is this process's, the BLAS's buffers touched */
        Backend *be = backend_open("cpu", "fp32", o->threads, err, sizeof err);
        if (!be) {
            fprintf(stderr, "error: %s\n", err);
            return 1;
        }
        baseline = recompute_baseline(be, o, cfg);
        attn_scratch = gpt_attn_scratch_bytes(be, cfg);
        backend_close(be);
        cpu = 1;
    }
    PlanInput in = plan_input(o, cfg, dtype, shard);
    in.baseline = baseline;
    in.host_copies = cpu ? host_copies(o, cfg) : 0;
    in.attn_scratch = attn_scratch;
    char bb[32];
    if (baseline)
        printf("baseline: %zu bytes (%s), %s: a run of this binary holds about as much before "
               "its arenas, and the peaks below count it; the run measures its own at start-up\n",
               baseline, planner_format_bytes(baseline, bb, sizeof bb), base_what);
    TrainCosts tc;
    if (costs_get(o, &in, NULL, COSTS_WRITE_CACHE, &tc, err, sizeof err) != 0 ||
        plan_print(o, &in, budget, &tc, err, sizeof err) != 0) {
        if (signals_pending()) { /* the measurement gave up (base/stop.h) */
            printf("stopped by signal %d during --plan (measuring the op costs); nothing "
                   "written\n", signals_pending());
            return TRAIN_EXIT_STOPPED_NOTHING;
        }
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    return 0;
}

