/* ckpt/session.c — see session.h. */
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "session_data.h"
#include "data/dataset.h"
#include "distributed/dist.h"
#include "base/fileio.h"
#include "base/test_hooks.h"

#ifdef TRAIN_GPT_TEST_HOOKS
/* "3", "3,7", "4-9,12": 1-based steps. */
static int parse_nan_steps(RunSession *s, const char *v, char *err, size_t err_len)
{
    const char *p = v;
    while (*p) {
        char *end;
        errno = 0;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p || errno) goto bad;
        p = end;
        if (*p == '-') {
            hi = strtol(++p, &end, 10);
            if (end == p || errno) goto bad;
            p = end;
        }
        if (lo < 1 || hi < lo || hi > INT_MAX || s->n_nan == SESSION_MAX_NAN_RANGES) goto bad;
        s->nan_lo[s->n_nan] = (int)lo;
        s->nan_hi[s->n_nan++] = (int)hi;
        if (*p == ',') p++;
        else if (*p) goto bad;
    }
    return 0;
bad:
    io_err(err, err_len, "TRAIN_GPT_TEST_NAN_STEP=%s: expected steps like 3, 3,7 or 4-9 "
             "(at most %d ranges)", v, SESSION_MAX_NAN_RANGES);
    return -1;
}

/* $name="RANK:STEP:SECONDS" into rss[3]. */
static int parse_rank_step_s(const char *name, const char *v, int rss[3], char *err,
                             size_t err_len)
{
    int used = 0;
    if (sscanf(v, "%d:%d:%d%n", &rss[0], &rss[1], &rss[2], &used) != 3 || v[used] ||
        rss[0] < 0 || rss[1] < 1 || rss[2] < 0) {
        io_err(err, err_len, "%s=%s: expected RANK:STEP:SECONDS", name, v);
        return -1;
    }
    return 0;
}

/* The hooks session.h lists, read once by session_init. */
static int read_test_hooks(RunSession *s, char *err, size_t err_len)
{
    const char *nan = getenv("TRAIN_GPT_TEST_NAN_STEP");
    if (nan && *nan && parse_nan_steps(s, nan, err, err_len) != 0) return -1;
    const char *names[2] = {"TRAIN_GPT_TEST_STALL", "TRAIN_GPT_TEST_CLOCK_JUMP"};
    int *into[2] = {s->stall, s->clock_jump};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(names[i]);
        if (v && *v && parse_rank_step_s(names[i], v, into[i], err, err_len) != 0) return -1;
    }
    return 0;
}
#endif

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The clock --save-minutes is paced by: now_ms, and in the test build the
 * jumps TRAIN_GPT_TEST_CLOCK_JUMP has made. */
static double pace_clock_ms(const RunSession *s)
{
    double ms = now_ms();
    TEST_HOOK(ms += s->clock_jumped_ms);
    return ms;
}

int session_init(RunSession *s, const RunConfig *c, const Dist *d, char *err,
                 size_t err_len)
{
    memset(s, 0, sizeof *s);
    s->cfg = *c;
    s->last_saved = -1;
    s->last_save_ms = now_ms(); /* no jump has been made yet */
    s->rank = d->rank;
    s->world_size = d->world;
    s->lock.fd = -1;
    s->resumed.step = -1;
    TEST_HOOK(if (read_test_hooks(s, err, err_len) != 0) return -1);
    if (c->resume && !c->resume_path && !c->checkpoint_dir) {
        io_err(err, err_len, "--resume: needs --checkpoint-dir DIR (or --resume=DIR)");
        return -1;
    }
    if (c->save_every > 0 && !c->checkpoint_dir && !c->resume_path) {
        io_err(err, err_len, "--save-every: needs --checkpoint-dir DIR");
        return -1;
    }
    if (c->resume_path) { /* an explicit save to resume must exist: never create it */
        struct stat st;
        int missing = stat(c->resume_path, &st) != 0;
        if (missing || !S_ISDIR(st.st_mode)) {
            const char *why = missing ? strerror(errno) : "not a folder", *base;
            char padded[4400] = "";
            base = strrchr(c->resume_path, '/');
            base = base ? base + 1 : c->resume_path;
            int step, used = 0;
            /* step_6 for step_00000006: name the save that exists */
            if (missing && sscanf(base, "step_%d%n", &step, &used) == 1 && !base[used] &&
                step >= 0) {
                char sd[4200], dir[4096];
                int n = (int)(base - c->resume_path); /* "DIR/" or "" */
                snprintf(dir, sizeof dir, "%.*s", n > 1 ? n - 1 : n, c->resume_path);
                ckpt_step_dir(sd, sizeof sd, dir[0] ? dir : ".", step);
                if (stat(sd, &st) == 0 && S_ISDIR(st.st_mode))
                    snprintf(padded, sizeof padded, " (saves are named with 8 digits: "
                             "--resume=%s)", dir[0] ? sd : sd + 2);
            }
            io_err(err, err_len, "--resume=%s: %s%s", c->resume_path, why, padded);
            return -1;
        }
    }
    const char *dir = c->checkpoint_dir;
    char parent[4096];
    if (!dir && c->resume_path) {
        /* Saves continue where the resumed save lives: the folder itself, or
         * the parent of a step_N folder. */
        char mp[4200];
        struct stat st;
        io_err(mp, sizeof mp, "%s/%s", c->resume_path, CKPT_MANIFEST);
        io_err(parent, sizeof parent, "%s", c->resume_path);
        for (size_t n = strlen(parent); n > 1 && parent[n - 1] == '/'; n--) parent[n - 1] = 0;
        if (stat(mp, &st) == 0) {
            char *slash = strrchr(parent, '/');
            if (slash && slash != parent) *slash = 0;
            else io_err(parent, sizeof parent, "%s", slash ? "/" : ".");
        }
        dir = parent;
    }
    if (!dir) return 0;
    if (strlen(dir) >= sizeof s->dir - 32) {
        io_err(err, err_len, "--checkpoint-dir: path too long");
        return -1;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    /* --plan and --generate (not exclusive) only read a save: the folder is
     * neither made nor probed, so a dry run leaves the disk as it was. */
    if (!c->exclusive) return 0;
    /* The folder itself is made here; its parent must exist, so a typo in
     * the path fails now instead of growing a tree somewhere unexpected. */
    char why[4400], up[4096];
    struct stat st;
    if (stat(dir, &st) != 0) {
        s->made_dir = 1;
        io_dirname(dir, up, sizeof up);
        if (io_probe_writable(up, why, sizeof why) != 0) {
            io_err(err, err_len, "--checkpoint-dir %s: its parent folder must exist and be "
                   "writable: %s", dir, why);
            return -1;
        }
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            io_err(err, err_len, "--checkpoint-dir %s: cannot create: %s", dir, strerror(errno));
            return -1;
        }
    }
    if (io_probe_writable(dir, why, sizeof why) != 0) {
        io_err(err, err_len, "--checkpoint-dir %s", why);
        return -1;
    }
    return s->rank == 0 ? own_lock(&s->lock, "--checkpoint-dir", dir, err, err_len) : 0;
}

/* What each rank tells rank 0 of the shared-folder check. */
typedef struct {
    char seen;      /* 1: it read rank 0's probe file, with rank 0's token */
    char host[63];
} SharedSeen;

static void shared_probe_path(char *out, size_t len, const char *dir, uint64_t token)
{
    io_err(out, len, "%s/.train_gpt_shared_%016llx", dir, (unsigned long long)token);
}

int session_check_shared(RunSession *s, Dist *d, char *err, size_t err_len)
{
    if (!s->dir[0] || !s->cfg.exclusive || d->world < 2) return 0;
    /* rank 0 writes a file with a fresh token; every rank reads it back */
    char probe[4300], why[4400] = "";
    struct {
        uint64_t token;
        int rc;
    } made = {own_new_run_id(), 0};
    if (s->rank == 0) {
        shared_probe_path(probe, sizeof probe, s->dir, made.token);
        made.rc = io_write_file(probe, &made.token, sizeof made.token, NULL, 0, why, sizeof why);
    }
    dist_broadcast(d, &made, sizeof made); /* rank 0's token, to every rank */
    if (made.rc != 0) {
        io_err(err, err_len, "--checkpoint-dir %s: %s", s->dir,
               s->rank == 0 ? why : "rank 0 could not write in it");
        return -1;
    }
    shared_probe_path(probe, sizeof probe, s->dir, made.token);
    SharedSeen mine = {0}, *all = s->rank == 0 ? calloc((size_t)d->world, sizeof mine) : NULL;
    gethostname(mine.host, sizeof mine.host - 1);
    FILE *f = fopen(probe, "rb");
    uint64_t got = 0;
    mine.seen = f && fread(&got, sizeof got, 1, f) == 1 && got == made.token;
    if (f) fclose(f);
    dist_gather(d, &mine, sizeof mine, all);
    int bad = 0; /* on rank 0: ranks that did not see it */
    if (s->rank == 0) {
        unlink(probe);
        for (int r = 0; all && r < d->world; r++) bad += !all[r].seen;
        for (int r = 0; all && r < d->world && bad; r++) {
            if (all[r].seen) continue;
            io_err(err, err_len, "--checkpoint-dir %s is not one folder shared by every rank: "
                   "rank %d (host %s) does not see the file rank 0 (host %s) wrote in it%s. "
                   "Every rank writes its own state file into each save and rank 0 lists them "
                   "all, so the folder must be on a file system every node mounts (NFS, Lustre, "
                   "...) at the same path", s->dir, r, all[r].host, all[0].host,
                   bad > 1 ? " (and other ranks neither)" : "");
            break;
        }
        if (!all) bad = 1, io_err(err, err_len, "out of host memory checking --checkpoint-dir");
    }
    free(all);
    dist_broadcast(d, &bad, sizeof bad);
    if (bad && s->rank != 0) {
        io_err(err, err_len, "--checkpoint-dir %s: not shared with rank 0", s->dir);
        /* the folder this rank made is its own (rank 0's is removed by
         * session_abandon); rmdir leaves it when anything is in it */
        if (s->made_dir) rmdir(s->dir);
    }
    return bad ? -1 : 0;
}

void session_fill_state(const RunSession *s, const GPTConfig *cfg,
                        const Loader *ld, int step, int adam_t, int bad_steps, RunState *st)
{
    memset(st, 0, sizeof *st);
    st->layers = cfg->num_layers;
    st->channels = cfg->channels;
    st->heads = cfg->num_heads;
    st->vocab = cfg->vocab_size;
    st->padded_vocab = cfg->padded_vocab;
    st->max_seq_len = cfg->max_seq_len;
    st->batch = s->cfg.batch;
    st->seq_len = s->cfg.seq_len;
    st->grad_accum = s->cfg.grad_accum;
    st->world_size = s->world_size;
    st->zero = s->cfg.zero;
    st->shuffle = s->cfg.shuffle;
    st->lr_schedule = s->cfg.lr_schedule;
    st->warmup = s->cfg.warmup;
    st->seed = s->cfg.seed;
    st->lr = s->cfg.lr;
    st->lr_min_frac = s->cfg.lr_min_frac;
    st->beta1 = s->cfg.beta1;
    st->beta2 = s->cfg.beta2;
    st->eps = s->cfg.eps;
    st->weight_decay = s->cfg.weight_decay;
    st->grad_clip = s->cfg.grad_clip;
    session_data_fill(st, ld);
    st->recompute = s->cfg.recompute;
    st->loss_chunk = s->cfg.loss_chunk;
    st->total_steps = s->cfg.steps;
    st->step = step;
    st->adam_t = adam_t;
    st->bad_steps = bad_steps;
    st->epoch = ld->epoch;
    st->shard_pos = ld->shard_pos;
    st->window_pos = ld->window_pos;
    st->rank = s->rank;
    st->run_id = s->run_id;
}

int session_resume(RunSession *s, const char *save_dir, GPT *g,
                   Loader *ld, SampleRng *rng, int *step, int *bad_steps, char *err,
                   size_t err_len)
{
    CkptManifest man;
    GPTConfig cfg;
    RunState saved = {0}, now = {0};
    float *params = NULL, *m = NULL, *v = NULL;
    size_t np = g->plan.num_params, cnt = g->opt_end - g->opt_begin;
    char why[3000];
    int rc = -1;
    if (ckpt_read_manifest(save_dir, &man, why, sizeof why) != 0) {
        io_err(err, err_len, "cannot resume: %s", why);
        return -1;
    }
    if (ckpt_load_model(save_dir, &man, &cfg, &params, why, sizeof why) != 0) goto fail;
    if (memcmp(&cfg, &g->cfg, sizeof cfg) != 0 || config_num_params(&cfg) != np) {
        io_err(why, sizeof why, "%s/model.bin: its shape differs from the model built", save_dir);
        goto fail;
    }
    m = malloc((cnt ? cnt : 1) * sizeof(float));
    v = malloc((cnt ? cnt : 1) * sizeof(float));
    if (!m || !v) {
        io_err(why, sizeof why, "out of host memory for the optimizer state");
        goto fail;
    }
    if (ckpt_load_state(save_dir, &man, &saved, np, g->opt_begin, cnt, m, v, why, sizeof why) != 0)
        goto fail;
    /* Files of two runs in one folder (a save overwritten by another run)
     * can each be intact: the run id ties the state to the manifest. */
    if (man.has_identity && saved.run_id && saved.run_id != man.id.run_id) {
        io_err(why, sizeof why, "%s: its state files are run %016llx's, its manifest run "
               "%016llx's (files of two runs mixed)", save_dir,
               (unsigned long long)saved.run_id, (unsigned long long)man.id.run_id);
        goto fail;
    }
    session_fill_state(s, &g->cfg, ld, 0, 0, 0, &now);
    char notes[1024], data_why[1500];
    int cfg_bad = run_state_compare(&saved, &now, why, sizeof why, notes, sizeof notes) != 0;
    int data_bad = session_data_check(save_dir, &saved, &now, ld, data_why, sizeof data_why) != 0;
    if (cfg_bad || data_bad) {
        io_err(err, err_len, "cannot resume from %s: the %s differs: %s%s%s", save_dir,
               cfg_bad ? "configuration" : "training data", cfg_bad ? why : "",
               cfg_bad && data_bad ? "; " : "", data_bad ? data_why : "");
        goto out;
    }
    if (saved.step > s->cfg.steps) {
        io_err(err, err_len, "cannot resume from %s: it is at step %lld, beyond --steps %d "
                 "(--steps is the run's total)", save_dir, (long long)saved.step, s->cfg.steps);
        goto out;
    }
    if (saved.adam_t < 0 || saved.adam_t > saved.step || saved.bad_steps < 0 ||
        saved.shard_pos < 0 || saved.shard_pos > INT_MAX) {
        io_err(why, sizeof why, "%s: inconsistent progress (step %lld, adam-t %lld)", save_dir,
                 (long long)saved.step, (long long)saved.adam_t);
        goto fail;
    }
    if (loader_seek(ld, saved.epoch, (int)saved.shard_pos, (long)saved.window_pos, why,
                    sizeof why) != 0)
        goto fail;
    if (notes[0]) printf("note: resuming with a changed setting: %s\n", notes);
    gpt_set_params(g, params);
    g->be->ops->mem_upload(g->be, g->m, m, cnt * sizeof(float));
    g->be->ops->mem_upload(g->be, g->v, v, cnt * sizeof(float));
    g->adam_t = (int)saved.adam_t;
    rng->state = saved.sample_rng;
    *step = (int)saved.step;
    *bad_steps = (int)saved.bad_steps;
    s->last_saved = *step;
    printf("resumed from %s: step %d, AdamW step %d, data epoch %llu shard %d window %ld\n",
           save_dir, *step, g->adam_t, (unsigned long long)saved.epoch, (int)saved.shard_pos,
           (long)saved.window_pos);
    rc = 0;
    goto out;
fail:
    io_err(err, err_len, "cannot resume: %s", why);
out:
    ckpt_manifest_free(&man);
    run_state_free(&saved);
    run_state_free(&now);
    free(params);
    free(m);
    free(v);
    return rc;
}

int session_save_due(const RunSession *s, Dist *d, int step)
{
    /* the early returns depend only on what every rank shares: the
     * collective below is reached by all ranks or by none */
    if (!s->dir[0] || step == s->last_saved) return 0;
    if ((s->cfg.save_every > 0 && step % s->cfg.save_every == 0) || step == s->cfg.steps) return 1;
    if (s->cfg.save_minutes <= 0) return 0;
    /* One clock decides: the ranks' saves end at different moments, and a
     * save is collective. */
    int late = s->rank == 0 && pace_clock_ms(s) - s->last_save_ms >= s->cfg.save_minutes * 60e3;
    return d->world > 1 ? dist_mean(d, late) > 0 : late;
}

/* -1 on every rank when rc != 0 on any (a collective: all ranks call it). */
static int agree(Dist *d, int rc) { return dist_mean(d, rc != 0 ? 1.0 : 0.0) > 0 ? -1 : 0; }

int session_save(RunSession *s, GPT *g, Dist *d, const Loader *ld,
                 const SampleRng *rng, int step, int bad_steps, char *err, size_t err_len)
{
    if (!s->dir[0] || step == s->last_saved) return 0;
    double t0 = now_ms();
    size_t np = g->plan.num_params, cnt = g->opt_end - g->opt_begin, off = g->opt_begin;
    int world = s->world_size, rank = s->rank, delay = io_test_save_delay_ms();
    /* --zero 0: m and v are the same on every rank, so rank 0's file holds
     * them and the others' an empty slice (a copy per rank would make a
     * save W times larger, and rank 0 reads every file back for its CRC) */
    if (!s->cfg.zero && rank > 0) off = np, cnt = 0;
    float *p = malloc(np * sizeof(float)), *m = malloc((cnt ? cnt : 1) * sizeof(float));
    float *v = malloc((cnt ? cnt : 1) * sizeof(float));
    CkptFile *files = calloc((size_t)world + 1, sizeof(CkptFile));
    char step_dir[4200], why[4400] = "";
    int rc = !p || !m || !v || !files, moved = 0;
    if (rc) io_err(why, sizeof why, "out of host memory");
    /* A folder moved, deleted or replaced since start-up: saving would
     * make a new one (ckpt_begin makes missing folders) without the lock. */
    if (!rc && rank == 0 && own_check(&s->lock, "--checkpoint-dir", s->dir, why, sizeof why) != 0)
        rc = moved = 1;
    if (agree(d, rc) != 0) goto out;
    gpt_params_settle(g); /* a deferred host-tier update writes m and v too */
    g->be->ops->sync(g->be);
    rc = dist_get_params(d, p, why, sizeof why); /* the full parameters, on every rank */
    if (agree(d, rc) != 0) goto out;
    g->be->ops->mem_download(g->be, m, g->m, cnt * sizeof(float));
    g->be->ops->mem_download(g->be, v, g->v, cnt * sizeof(float));
    RunState st; /* owns its shard hashes: freed below */
    session_fill_state(s, &g->cfg, ld, step, g->adam_t, bad_steps, &st);
    st.sample_rng = rng->state;
    /* 1. rank 0 makes the folder; 2. every rank writes its state file, rank
     * 0 model.bin; 3. rank 0 lists them all in COMPLETE. */
    rc = rank == 0 ? ckpt_begin(s->dir, step, step_dir, sizeof step_dir, why, sizeof why)
                   : ckpt_step_dir(step_dir, sizeof step_dir, s->dir, step);
    if (agree(d, rc) != 0) goto out;
    rc = rank == 0 ? ckpt_write_model(step_dir, &g->cfg, p, &files[0], why, sizeof why) : 0;
    if (delay) io_sleep_ms(delay);
    if (rc == 0)
        rc = ckpt_write_state(step_dir, rank, &st, np, off, cnt, m, v, &files[rank + 1], why,
                              sizeof why);
    run_state_free(&st);
    if (delay) io_sleep_ms(delay);
    if (agree(d, rc) != 0) goto out;
    if (rank == 0) {
        /* The other ranks' files: read back from the shared folder. */
        for (int r = 1; r < world && rc == 0; r++) {
            char fp[4300];
            snprintf(files[r + 1].name, sizeof files[r + 1].name, "state_r%05d.bin", r);
            io_err(fp, sizeof fp, "%s/%s", step_dir, files[r + 1].name);
            rc = io_file_crc(fp, &files[r + 1].bytes, &files[r + 1].crc, why, sizeof why);
        }
        if (rc == 0) {
            CkptIdentity id = {s->run_id, run_state_config_hash(&st)};
            rc = ckpt_commit(s->dir, step_dir, step, world, files, world + 1,
                             CKPT_PRUNE_LATER, &id, why, sizeof why);
        }
    }
    if (agree(d, rc) != 0) goto out;
    s->last_saved = step;
    s->last_save_ms = pace_clock_ms(s);
    /* the parameters, and m and v once over all the ranks' slices */
    printf("saved %s (%.1f MiB, %.0f ms)\n", step_dir, 3.0 * (double)np * 4 / 1048576.0,
           now_ms() - t0);
    /* --keep's deletions after the save they make room for is said */
    if (rank == 0) {
        CkptIdentity id = {s->run_id, 0};
        ckpt_prune(s->dir, s->cfg.keep, &id);
    }
    fflush(stdout);
out:
    if (moved) {
        io_err(err, err_len, "save at step %d refused: %s", step, why);
    } else if (rc != 0 || s->last_saved != step) {
        /* Name the save a --resume would now use, or say there is none. */
        char kept[4200], ignore[512];
        int kept_step;
        int have = ckpt_find_latest(s->dir, kept, sizeof kept, &kept_step, ignore,
                                    sizeof ignore) == 1;
        io_err(err, err_len, "save at step %d failed: %s (%s%s)", step,
               why[0] ? why : "on another rank",
               have ? "the previous complete save is kept: " : "no complete save exists in ",
               have ? kept : s->dir);
    }
    free(p);
    free(m);
    free(v);
    free(files);
    return s->last_saved == step ? 0 : -1;
}

#ifdef TRAIN_GPT_TEST_HOOKS
void session_test_inject_nan(const RunSession *s, GPT *g, int step)
{
    for (int i = 0; i < s->n_nan; i++)
        if (step >= s->nan_lo[i] && step <= s->nan_hi[i]) {
            /* 0x7fc07fc0 is a NaN read as one fp32 or as two bf16 values. */
            uint32_t bits = 0x7fc07fc0u;
            g->be->ops->mem_upload(g->be, g->grads, &bits, sizeof bits);
            return;
        }
}

void session_test_stall(RunSession *s, int step)
{
    if (s->stall[1] == step && s->stall[0] == s->rank) io_sleep_ms(s->stall[2] * 1000);
    if (s->clock_jump[1] == step && s->clock_jump[0] == s->rank)
        s->clock_jumped_ms += s->clock_jump[2] * 1e3;
}
#endif

void session_close(RunSession *s) { own_unlock(&s->lock); }

void session_abandon(RunSession *s)
{
    if (s->rank != 0 || !s->made_dir || s->lock.fd < 0) return;
    char p[4200];
    io_err(p, sizeof p, "%s/%s", s->dir, OWN_LOCK_FILE);
    unlink(p); /* while still held: no other run can take it in between */
    own_unlock(&s->lock);
    rmdir(s->dir); /* fails, leaving it, if anything else is in it */
}

static int claim(RunSession *s, Dist *d, int move, char *err, size_t err_len)
{
    const CkptEntry *resumed = s->resumed.step >= 0 ? &s->resumed : NULL;
    /* rank 0 decides; {status, run id} to every rank */
    uint64_t out[2] = {0, resumed && resumed->has_identity ? resumed->id.run_id : 0};
    if (s->rank == 0) {
        if (!out[1]) out[1] = own_new_run_id();
        if (s->cfg.exclusive && s->dir[0] &&
            own_claim(s->dir, resumed, s->cfg.overwrite, move, err, err_len) != 0)
            out[0] = 1;
    }
    dist_broadcast(d, out, sizeof out);
    if (!move) s->run_id = out[1];
    if (out[0] && s->rank != 0) io_err(err, err_len, "rank 0 refused --checkpoint-dir %s", s->dir);
    return out[0] ? -1 : 0;
}

int session_claim(RunSession *s, Dist *d, char *err, size_t err_len)
{
    /* the ranks make the folder at once: absent for any of them means this
     * run made it, whichever rank's mkdir came first */
    s->made_dir = dist_mean(d, s->made_dir) > 0;
    return claim(s, d, 0, err, err_len);
}

int session_settle(RunSession *s, Dist *d, char *err, size_t err_len)
{
    return claim(s, d, 1, err, err_len);
}
