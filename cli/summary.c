/* cli/summary.c — the end-of-run report (cli/summary.h). */
#include "cli/summary.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <sys/resource.h>

#include "base/procmem.h"

#include "model/flops.h"
#include "model/planner.h"
#include "model/schedule.h"
#include "cli/costs.h"
#include "cli/outputs.h"

/* Measured peak, held against the plan's total (baseline, host copies and
 * arenas): on the
 * cpu the process's peak resident set (/proc/self/status VmHWM, what a
 * cgroup's limit sees; getrusage's ru_maxrss where /proc is not there); on
 * a device backend the device bytes in use at the end, counting what was
 * in use before the arenas (the baseline) as the plan does. */
static size_t measured_peak(Trainer *tr)
{
    size_t free_b, total_b;
    if (tr->perf.mem.known && tr->be->ops->mem_info(tr->be, &free_b, &total_b) == 0)
        return (tr->perf.mem.free_before > free_b ? tr->perf.mem.free_before - free_b : 0) +
               (tr->perf.mem.total - tr->perf.mem.free_before);
    size_t hwm = procmem_peak();
    if (hwm) return hwm;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (size_t)ru.ru_maxrss * 1024;
}

void summary_print(Trainer *tr)
{
    const MemoryPlan *p = &tr->plan, *arenas = &tr->model.plan;
    size_t peak = measured_peak(tr);
    double diff = 100.0 * ((double)peak - (double)p->total) / (double)p->total;
    size_t hw = gpt_arena_high_water(&tr->model);
    printf("memory: arenas planned %zu bytes; their high-water mark %zu bytes (%s)\n",
           arenas->total, hw,
           hw == arenas->total ? "equal" : "DIFFERENT: the planner and the model disagree");
    char copies[64] = "";
    if (p->host_copies)
        snprintf(copies, sizeof copies, " + host copies %.2f MiB", p->host_copies / 1048576.0);
    printf("memory: planner total %.2f MiB (baseline %.2f MiB%s + arenas %.2f MiB), measured peak "
           "%.2f MiB (%s), difference %+.1f%%\n", p->total / 1048576.0, p->baseline / 1048576.0,
           copies, arenas->total / 1048576.0, peak / 1048576.0,
           tr->perf.mem.known ? "device memory in use at the end, per cudaMemGetInfo"
                             : "process peak RSS, VmHWM",
           diff);
    const GPT *g = &tr->model;
    if (arenas->zero == 3 && g->passes > 0) {
        /* what the run's collectives moved, per micro-batch, beside the plan's count */
        size_t eb = (size_t)tr->be->par_bytes, n = (size_t)g->passes;
        size_t ga = g->gathered / n * eb, rg = g->regathered / n * eb, rs = g->scattered / n * eb;
        int same = g->gathered == arenas->comm_gathered * n &&
                   g->regathered == arenas->comm_regathered * n &&
                   g->scattered == arenas->comm_scattered * n;
        printf("communication (--zero 3), per micro-batch over %d: all-gathered %zu B, re-gathered "
               "%zu B, reduce-scattered %zu B = %.3f x the parameter bytes (%zu B); planned %zu, "
               "%zu, %zu B (%s)\n",
               g->passes, ga, rg, rs, (double)(ga + rg + rs) / (double)(arenas->num_params * eb),
               arenas->num_params * eb, arenas->comm_gathered * eb, arenas->comm_regathered * eb,
               arenas->comm_scattered * eb,
               same ? "equal" : "DIFFERENT: the planner and the model disagree");
        /* the time the compute waited for parameters (gpt_gather.c), rank 0's */
        printf("communication (--zero 3): waited %.3f ms a micro-batch for parameter gathers "
               "(%.1f ms over %d; --zero-prefetch %s)\n", g->gather_wait_ns / 1e6 / g->passes,
               g->gather_wait_ns / 1e6, g->passes, g->no_prefetch ? "off" : "on");
        /* stdout is rank 0's alone: every other rank says so on stderr */
        if (!same || hw != arenas->total)
            fprintf(stderr, "warning: rank %d of %d: %s differ from the plan\n", tr->dist.rank,
                    tr->dist.world, !same ? "the counted collectives" : "the arenas' high-water");
    }
    size_t host_hw = gpt_host_high_water(&tr->model);
    if (p->offload)
        printf("memory: host tier (--offload %s): planned %zu bytes; its arenas' high-water mark "
               "%zu bytes (%s)\n",
               planner_offload_name(p->offload), p->host_total, host_hw,
               host_hw == p->host_total ? "equal"
                                        : "DIFFERENT: the planner and the model disagree");
    size_t context = tr->perf.mem.total - tr->perf.mem.free_before;
    if (tr->perf.mem.known)
        printf("memory: in use on the device before the arenas (CUDA context, other processes): "
               "%.2f MiB, counted as the baseline\n", context / 1048576.0);
    cJSON *o = cJSON_CreateObject(), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "event", "summary");
    cJSON_AddNumberToObject(o, "recompute", tr->opt.recompute);
    cJSON_AddNumberToObject(o, "world_size", tr->dist.world);
    cJSON_AddNumberToObject(o, "zero", tr->opt.zero);
    cJSON_AddStringToObject(o, "recompute_mode", schedule_mode_flag(tr->opt.recompute));
    cJSON_AddNumberToObject(o, "reforwards", schedule_reforwards(&tr->model.sched));
    /* a micro-batch's FLOPs and the forward work its schedule repeats, so a
     * log shows what the memory saved cost (scripts/compare_memory.sh) */
    FlopCounts f;
    flops_count(&tr->cfg, tr->model.B, tr->model.T, &f);
    cJSON_AddNumberToObject(o, "flops_step", (double)f.step);
    cJSON_AddNumberToObject(o, "flops_recomputed", (double)flops_recompute(&f, &tr->model.sched));
    costs_report(&tr->perf.costs, tr->perf.step_ns_predicted, tr->perf.times.ms, tr->perf.times.n,
                       tr->start_step, o);
    cJSON_AddNumberToObject(m, "arena_high_water", (double)hw);
    if (tr->perf.mem.known) cJSON_AddNumberToObject(m, "context_overhead", (double)context);
    for (int c = 0; c < MEM_NUM_CATEGORIES; c++)
        cJSON_AddNumberToObject(m, planner_category_name(c), (double)arenas->bytes[c]);
    /* total: the arenas' (the categories add up to it); process_total adds
     * the baseline and the host copies */
    cJSON_AddNumberToObject(m, "total", (double)arenas->total);
    cJSON_AddNumberToObject(m, "baseline", (double)p->baseline);
    cJSON_AddNumberToObject(m, "host_copies", (double)p->host_copies);
    cJSON_AddNumberToObject(m, "process_total", (double)p->total);
    cJSON_AddNumberToObject(m, "peak_measured", (double)peak);
    if (p->offload) {
        cJSON_AddNumberToObject(m, "host_total", (double)p->host_total);
        cJSON_AddNumberToObject(m, "host_high_water", (double)host_hw);
    }
    cJSON_AddItemToObject(o, "memory", m);
    outputs_log(&tr->files.out, o);
}
