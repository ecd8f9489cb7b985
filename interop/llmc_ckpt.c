/* interop/llmc_ckpt.c — llm.c's checkpoint trio: see llmc_ckpt.h. */
#include "llmc_ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "llmc_state.h"
#include "interop/model_file.h"

/* Exactly n decimal digits at s, or -1. */
static int read_digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

LlmcName llmc_name_parse(const char *n, int *step, int *rank)
{
    *rank = 0;
    if (!strncmp(n, "DONE_", 5) && (*step = read_digits(n + 5, 8)) >= 0 && !n[13])
        return LLMC_NAME_DONE;
    if (!strncmp(n, "model_", 6) && (*step = read_digits(n + 6, 8)) >= 0 &&
        !strcmp(n + 14, ".bin"))
        return LLMC_NAME_MODEL;
    if (!strncmp(n, "state_", 6) && (*step = read_digits(n + 6, 8)) >= 0 && n[14] == '_' &&
        (*rank = read_digits(n + 15, 5)) >= 0 && !strcmp(n + 20, ".bin"))
        return LLMC_NAME_STATE;
    *rank = 0;
    return LLMC_NAME_NONE;
}

static void file_names(LlmcFiles *f, int step, int rank)
{
    f->step = step;
    io_err(f->model, sizeof f->model, "%s/model_%08d.bin", f->dir, step);
    io_err(f->state, sizeof f->state, "%s/state_%08d_%05d.bin", f->dir, step, rank);
    char done[4200];
    io_err(done, sizeof done, "%s/DONE_%08d", f->dir, step);
    f->done = access(done, F_OK) == 0;
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* An explicit DIR/state_%08d_%05d.bin. */
static int locate_file(const char *path, int rank, LlmcFiles *f, char *err, size_t err_len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    int step, r;
    if (llmc_name_parse(base, &step, &r) != LLMC_NAME_STATE) {
        io_err(err, err_len, "--resume-llmc %s: not a folder, nor a file named like llm.c's "
               "state_%%08d_%%05d.bin (step, rank)", path);
        return -1;
    }
    io_dirname(path, f->dir, sizeof f->dir);
    file_names(f, step, rank);
    const char *missing = !is_file(f->state) ? f->state : !is_file(f->model) ? f->model : NULL;
    if (missing) {
        io_err(err, err_len, "%s: missing (llm.c's checkpoint of step %d needs it)", missing,
               step);
        return -1;
    }
    if (!f->done)
        fprintf(stderr, "note: %s/DONE_%08d is missing: llm.c had not finished that save; "
                "reading it as given\n", f->dir, step);
    return 0;
}

static int cmp_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

int llmc_ckpt_locate(const char *path, int rank, LlmcFiles *f, char *err, size_t err_len)
{
    memset(f, 0, sizeof *f);
    struct stat st;
    if (stat(path, &st) != 0) {
        io_err(err, err_len, "--resume-llmc %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) return locate_file(path, rank, f, err, err_len);
    io_err(f->dir, sizeof f->dir, "%s", path);
    DIR *dir = opendir(path);
    if (!dir) {
        io_err(err, err_len, "--resume-llmc %s: cannot list: %s", path, strerror(errno));
        return -1;
    }
    int *steps = NULL, n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        int s, r;
        if (llmc_name_parse(e->d_name, &s, &r) != LLMC_NAME_DONE) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            int *grown = realloc(steps, sizeof(int) * (size_t)cap);
            if (!grown) break;
            steps = grown;
        }
        steps[n++] = s;
    }
    closedir(dir);
    if (n > 1) qsort(steps, (size_t)n, sizeof(int), cmp_desc);
    for (int i = 0; i < n; i++) {
        file_names(f, steps[i], rank);
        if (is_file(f->model) && is_file(f->state)) {
            free(steps);
            return 0;
        }
        fprintf(stderr, "note: %s: DONE_%08d is there but %s is missing: skipped\n", path,
                steps[i], is_file(f->model) ? f->state : f->model);
    }
    free(steps);
    io_err(err, err_len, "--resume-llmc %s: no complete llm.c checkpoint in it (DONE_%%08d "
           "with model_%%08d.bin and state_%%08d_%05d.bin)", path, rank);
    return -1;
}

/* -1 on every rank when rc != 0 on any (a collective). */
static int agree(Dist *d, int rc) { return dist_mean(d, rc != 0 ? 1.0 : 0.0) > 0 ? -1 : 0; }

/* What an export cannot carry: refused before anything is written. */
static int export_check(const GPT *g, const Loader *ld, const char *dir, char *err,
                        size_t err_len)
{
    if (g->opt_begin != 0 || g->opt_end != g->plan.num_params) {
        io_err(err, err_len, "--save-checkpoint-llmc %s: this rank holds a ZeRO-1 slice of the "
               "optimizer state, which llm.c's state files cannot take (run with --zero 0)", dir);
        return -1;
    }
    if (ld->shuffle || ld->num_skipped) {
        io_err(err, err_len, "--save-checkpoint-llmc %s: %s", dir, ld->shuffle
               ? "--shuffle 1 is this project's order, not llm.c's"
               : "--train-data has shards too short for one step, which llm.c refuses");
        return -1;
    }
    return 0;
}

/* The sampler's RNG state; without a sampler (0), llm.c's own starting
 * value, 13371337 + rank: a zero xorshift state would stay zero. */
static uint64_t rng_or_default(const SampleRng *rng, int rank)
{
    return rng->state ? rng->state : 13371337u + (uint64_t)rank;
}

int llmc_ckpt_export(const char *dir, int step, int model_version, GPT *g, Dist *d,
                     const Loader *ld, const SampleRng *rng, char *err, size_t err_len)
{
    size_t np = g->plan.num_params;
    char why[4400] = "", p[4200];
    float *params = NULL, *m = NULL, *v = NULL;
    int rc = export_check(g, ld, dir, why, sizeof why);
    if (rc == 0 && d->rank == 0) {
        rc = io_mkdirs(dir, why, sizeof why);
        io_err(p, sizeof p, "%s/DONE_%08d", dir, step); /* a DONE of an earlier export */
        if (rc == 0 && unlink(p) != 0 && errno != ENOENT) {
            io_err(why, sizeof why, "%s: cannot delete: %s", p, strerror(errno));
            rc = -1;
        }
        if (rc == 0) rc = io_sync_dir(dir, why, sizeof why);
    }
    if (agree(d, rc) != 0) goto out;
    params = malloc(np * sizeof(float));
    m = malloc(np * sizeof(float));
    v = malloc(np * sizeof(float));
    rc = !params || !m || !v;
    if (rc) io_err(why, sizeof why, "out of host memory for the llm.c export");
    if (agree(d, rc) != 0) goto out;
    gpt_params_settle(g); /* a deferred host-tier update writes m and v too */
    g->be->ops->sync(g->be);
    rc = dist_get_params(d, params, why, sizeof why);
    if (agree(d, rc) != 0) goto out;
    g->be->ops->mem_download(g->be, m, g->m, np * sizeof(float));
    g->be->ops->mem_download(g->be, v, g->v, np * sizeof(float));
    if (d->rank == 0) {
        io_err(p, sizeof p, "%s/model_%08d.bin", dir, step);
        rc = model_file_save_as(p, &g->cfg, params, model_version, why, sizeof why);
    }
    LlmcState st = {.num_processes = d->world, .rank = d->rank, .use_master_weights = 1,
                    .should_shuffle = 0, .step = step,
                    .rng_state = rng_or_default(rng, d->rank),
                    .rng_state_last_update = rng_or_default(rng, d->rank),
                    .shard_idx = (uint64_t)ld->shard_pos, .sample_idx = (uint64_t)ld->window_pos};
    io_err(p, sizeof p, "%s/state_%08d_%05d.bin", dir, step, d->rank);
    if (rc == 0) rc = llmc_state_write(p, &st, np, m, v, params, why, sizeof why);
    if (agree(d, rc) != 0) goto out;
    if (d->rank == 0) {
        io_err(p, sizeof p, "%s/DONE_%08d", dir, step);
        rc = io_write_file(p, "", 0, NULL, 0, why, sizeof why);
    }
    if (agree(d, rc) != 0) goto out;
    printf("llm.c checkpoint of step %d written: %s/{model_%08d.bin (version %d), "
           "state_%08d_*.bin, DONE_%08d}\n", step, dir, step, model_version, step, step);
    if (g->adam_t != step)
        printf("note: %d of the %d steps were skipped as non-finite: llm.c's next AdamW update "
               "will use t = %d, this run's would use %d\n", step - g->adam_t, step, step + 1,
               g->adam_t + 1);
out:
    if (rc != 0)
        io_err(err, err_len, "llm.c checkpoint of step %d not written: %s", step,
               why[0] ? why : "failed on another rank");
    free(params);
    free(m);
    free(v);
    return rc != 0 ? -1 : 0;
}

/* The state header against this run: process count, rank, shuffle, size. */
static int import_check(const LlmcFiles *f, const LlmcState *st, uint64_t count, const GPT *g,
                        const Dist *d, const Loader *ld, char *err, size_t err_len)
{
    uint64_t np = g->plan.num_params;
    if (count != np && count * (uint64_t)st->num_processes >= np && count < np)
        io_err(err, err_len, "%s: holds a ZeRO-1 slice (%llu of the model's %llu parameters); "
               "only unsharded llm.c state (zero_stage 0) can be read", f->state,
               (unsigned long long)count, (unsigned long long)np);
    else if (count != np)
        io_err(err, err_len, "%s: holds AdamW state for %llu parameters, the model (%s) has "
               "%llu", f->state, (unsigned long long)count, f->model, (unsigned long long)np);
    else if (st->num_processes != d->world || st->rank != d->rank)
        io_err(err, err_len, "%s: written by rank %d of %d processes, read by rank %d of %d "
               "(start this run with %d rank%s)", f->state, st->rank, st->num_processes, d->rank,
               d->world, st->num_processes, st->num_processes == 1 ? "" : "s");
    else if (st->should_shuffle)
        io_err(err, err_len, "%s: the llm.c run shuffled its data (should_shuffle 1); its "
               "order cannot be continued here", f->state);
    else if (st->step > INT_MAX - 1)
        io_err(err, err_len, "%s: step %lld is too large", f->state, (long long)st->step);
    else if (g->opt_begin != 0 || g->opt_end != np)
        io_err(err, err_len, "%s: this run shards the optimizer state (--zero 1); an llm.c "
               "state file can be read with --zero 0 only", f->state);
    else if (ld->shuffle || ld->num_skipped)
        io_err(err, err_len, "%s: %s", f->state, ld->shuffle
               ? "--shuffle 1 is this project's order, not llm.c's"
               : "--train-data has shards too short for one step, which llm.c refuses: "
                 "its shard indices would not match");
    else
        return 0;
    return -1;
}

/* The first non-finite value of a[0..n), or -1. */
static long first_nonfinite(const float *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(a[i])) return (long)i;
    return -1;
}

int llmc_ckpt_import(const LlmcFiles *f, GPT *g, const Dist *d, Loader *ld, SampleRng *rng,
                     int *step, char *err, size_t err_len)
{
    size_t np = g->plan.num_params;
    GPTConfig cfg;
    LlmcState st;
    uint64_t count;
    float *params = NULL, *m = NULL, *v = NULL, *master = NULL;
    int rc = -1;
    if (model_file_load(f->model, &cfg, &params, err, err_len) != 0) return -1;
    if (memcmp(&cfg, &g->cfg, sizeof cfg) != 0 || config_num_params(&cfg) != np) {
        io_err(err, err_len, "%s: its shape differs from the model built", f->model);
        goto out;
    }
    if (llmc_state_read_header(f->state, &st, &count, err, err_len) != 0 ||
        import_check(f, &st, count, g, d, ld, err, err_len) != 0)
        goto out;
    m = malloc(np * sizeof(float));
    v = malloc(np * sizeof(float));
    master = st.use_master_weights ? malloc(np * sizeof(float)) : NULL;
    if (!m || !v || (st.use_master_weights && !master)) {
        io_err(err, err_len, "%s: out of host memory", f->state);
        goto out;
    }
    if (llmc_state_read_arrays(f->state, &st, count, m, v, master, err, err_len) != 0) goto out;
    const char *names[3] = {"AdamW m", "AdamW v", "master weights"};
    const float *arrays[3] = {m, v, master};
    for (int a = 0; a < 3; a++) {
        long i = arrays[a] ? first_nonfinite(arrays[a], np) : -1;
        if (i >= 0) {
            io_err(err, err_len, "%s: its %s hold a non-finite value (element %ld)", f->state,
                   names[a], i);
            goto out;
        }
    }
    char why[1024];
    if (st.shard_idx >= (uint64_t)ld->num_shards || st.sample_idx > LONG_MAX ||
        loader_seek(ld, 0, (int)st.shard_idx, (long)st.sample_idx, why, sizeof why) != 0) {
        io_err(err, err_len, "%s: its data position (shard %llu, sample %llu) is not in "
               "--train-data (%d shard%s): give the llm.c run's -i, -b and -t as --train-data, "
               "--batch and --seq-len (the state file does not record them)", f->state,
               (unsigned long long)st.shard_idx, (unsigned long long)st.sample_idx,
               ld->num_shards, ld->num_shards == 1 ? "" : "s");
        goto out;
    }
    gpt_set_params(g, master ? master : params);
    g->be->ops->mem_upload(g->be, g->m, m, np * sizeof(float));
    g->be->ops->mem_upload(g->be, g->v, v, np * sizeof(float));
    g->adam_t = (int)st.step;
    if (st.rng_state) rng->state = st.rng_state;
    *step = (int)st.step;
    printf("resumed from llm.c's checkpoint %s: step %d, %s, data shard %llu sample %llu\n",
           f->state, *step, master ? "fp32 master weights" : "the model file's weights",
           (unsigned long long)st.shard_idx, (unsigned long long)st.sample_idx);
    rc = 0;
out:
    free(params);
    free(m);
    free(v);
    free(master);
    return rc;
}
