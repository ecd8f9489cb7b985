/* cli/guard.c — see cli/guard.h. */
#include "cli/guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { VALUE_BYTES = 160 }; /* one flag's value as text, in the gathered table */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Append "; --name: V1 on rank a, V2 on rank b (and k more ranks)" for
 * flag `slot` of the gathered values (world rows of `rec` bytes). */
static void describe(char *msg, size_t len, const char *name, const char *all, size_t rec,
                     int slot, int world)
{
    size_t used = strlen(msg);
    snprintf(msg + used, len - used, "%s--%s: ", used ? "; " : "", name);
    int shown = 0;
    for (int r = 0; r < world; r++) {
        const char *v = all + (size_t)r * rec + (size_t)slot * VALUE_BYTES;
        int seen = 0; /* is this value first held by an earlier rank? */
        for (int q = 0; q < r && !seen; q++)
            seen = strcmp(v, all + (size_t)q * rec + (size_t)slot * VALUE_BYTES) == 0;
        if (seen) continue;
        int more = 0;
        for (int q = r + 1; q < world; q++)
            more += strcmp(v, all + (size_t)q * rec + (size_t)slot * VALUE_BYTES) == 0;
        used = strlen(msg);
        if (shown++ == 4) {
            snprintf(msg + used, len - used, ", ...");
            break;
        }
        snprintf(msg + used, len - used, "%s%s on rank %d", shown > 1 ? ", " : "", v, r);
        if (more) {
            used = strlen(msg);
            snprintf(msg + used, len - used, " (and %d more)", more);
        }
    }
}

void guard_check_flags(const TrainOptions *o, Dist *d)
{
    if (!d->mpi) return;
    int n = train_options_count(), k = 0;
    uint64_t *h = calloc((size_t)n, sizeof *h);
    unsigned char *differs = malloc((size_t)n);
    char value[VALUE_BYTES];
    if (!h || !differs) dist_fail(d, 1, "out of host memory comparing the ranks' flags");
    for (int i = 0; i < n; i++) {
        if (!train_options_must_agree(i)) continue;
        train_options_format(o, i, value, sizeof value);
        h[i] = fnv1a(value);
    }
    dist_differs(d, h, n, differs);
    for (int i = 0; i < n; i++) k += differs[i];
    if (k == 0) {
        free(h), free(differs);
        return;
    }
    /* The values of the flags that differ, from every rank to rank 0. */
    size_t rec = (size_t)k * VALUE_BYTES;
    char *mine = calloc(1, rec), *all = d->rank == 0 ? malloc(rec * (size_t)d->world) : NULL;
    if (!mine || (d->rank == 0 && !all))
        dist_fail(d, 1, "out of host memory comparing the ranks' flags");
    for (int i = 0, slot = 0; i < n; i++)
        if (differs[i]) train_options_format(o, i, mine + (size_t)slot++ * VALUE_BYTES, VALUE_BYTES);
    dist_gather(d, mine, rec, all);
    char msg[4096] = "";
    if (d->rank == 0)
        for (int i = 0, slot = 0; i < n; i++)
            if (differs[i]) describe(msg, sizeof msg, train_options_name(i), all, rec, slot++,
                                     d->world);
    free(h), free(differs), free(mine), free(all);
    dist_exit_all(d, 2, "the ranks were started with different flags (each must be the same on "
                  "every rank; only --log, --log-errors, --threads and --collective-timeout may "
                  "differ): %s", msg);
}

void guard_check_data(Dist *d, uint64_t fingerprint)
{
    if (!dist_replicas_agree(d, fingerprint))
        dist_exit_all(d, 1, "the ranks read different training data: the fingerprint of "
                      "--train-data differs between ranks (is the glob the same files, with "
                      "the same contents, on every node?)");
}

void guard_check_start_step(Dist *d, int step)
{
    if (!dist_replicas_agree(d, (uint64_t)step))
        dist_exit_all(d, 1, "the ranks resumed at different steps (rank 0 at step %d): the "
                      "checkpoint folder changed under them; resume again", step);
}

void guard_check_backend(Dist *d, const Backend *be)
{
    if (!d->mpi) return;
    /* "cuda (bf16)": what decides the collectives (NCCL or MPI) and the
     * width of every vector they move */
    char mine[VALUE_BYTES] = "", msg[4096] = "";
    snprintf(mine, sizeof mine, "%s (%s)", be->name, be->par_bytes == 2 ? "bf16" : "fp32");
    unsigned char differs;
    dist_differs(d, (uint64_t[]){fnv1a(mine)}, 1, &differs);
    if (!differs) return;
    char *all = d->rank == 0 ? malloc((size_t)VALUE_BYTES * (size_t)d->world) : NULL;
    if (d->rank == 0 && !all) dist_fail(d, 1, "out of host memory comparing the ranks' backends");
    dist_gather(d, mine, VALUE_BYTES, all);
    if (d->rank == 0) describe(msg, sizeof msg, "device", all, VALUE_BYTES, 0, d->world);
    free(all);
    dist_exit_all(d, 1, "the ranks opened different backends (%s): with --device auto a rank "
                  "that sees no CUDA device runs on the cpu; make a device visible to every "
                  "rank (CUDA_VISIBLE_DEVICES, the launcher's GPU binding) or give --device "
                  "cuda, which stops at the rank without one", msg);
}

/* One shape flag against the save: append a difference to err. */
static void compare_shape(char *err, size_t len, const char *label, int given_v, int saved_v)
{
    if (given_v == saved_v) return;
    size_t used = strlen(err);
    snprintf(err + used, len - used, "%s%s: the save has %d, this run %d", used ? "; " : "",
             label, saved_v, given_v);
}

int guard_check_resume_shape(const TrainOptions *o, const GPTConfig *saved, const char *save_dir,
                             char *err, size_t err_len)
{
    char diffs[1024] = "", label[128];
    int preset = train_options_given(o, "model");
    static const char *names[3] = {"layers", "channels", "heads"};
    const int mine[3] = {o->layers, o->channels, o->heads};
    const int theirs[3] = {saved->num_layers, saved->channels, saved->num_heads};
    for (int i = 0; i < 3; i++) {
        if (train_options_given(o, names[i]))
            snprintf(label, sizeof label, "--%s", names[i]);
        else if (preset) /* the preset set it */
            snprintf(label, sizeof label, "--model %s (its %s)", o->preset, names[i]);
        else
            continue;
        compare_shape(diffs, sizeof diffs, label, mine[i], theirs[i]);
    }
    if (train_options_given(o, "vocab"))
        compare_shape(diffs, sizeof diffs, "--vocab", o->vocab, saved->vocab_size);
    if (train_options_given(o, "max-seq-len"))
        compare_shape(diffs, sizeof diffs, "--max-seq-len",
                      o->max_seq_len ? o->max_seq_len : o->seq_len, saved->max_seq_len);
    if (!diffs[0]) return 0;
    snprintf(err, err_len, "cannot resume from %s: a resumed run keeps the shape of its save, "
             "and shape flags given here differ (drop them, or start a new run): %s", save_dir,
             diffs);
    return -1;
}

/* Append s to out, single-quoted when it holds anything a shell treats
 * specially. */
static void append_quoted(char *out, size_t len, const char *s)
{
    size_t used = strlen(out);
    int plain = *s != 0;
    for (const char *p = s; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                       "-_./=:,+@%", *p) != NULL;
    if (plain) {
        snprintf(out + used, len - used, "%s%s", used ? " " : "", s);
        return;
    }
    snprintf(out + used, len - used, "%s'", used ? " " : "");
    for (const char *p = s; *p; p++) {
        used = strlen(out);
        if (*p == '\'') snprintf(out + used, len - used, "'\\''"); /* end, \', reopen */
        else snprintf(out + used, len - used, "%c", *p);
    }
    used = strlen(out);
    snprintf(out + used, len - used, "'");
}

void guard_resume_command(int argc, char **argv, const char *step_dir, char *out, size_t len)
{
    out[0] = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--resume") || !strncmp(a, "--resume=", 9) ||
            !strcmp(a, "--overwrite-checkpoints"))
            continue;
        append_quoted(out, len, a);
    }
    char flag[4200];
    snprintf(flag, sizeof flag, "--resume=%s", step_dir);
    append_quoted(out, len, flag);
}

void guard_print_rollback(const RunSession *s, int argc, char **argv, int step, int bad_steps)
{
    char sd[4200], cmd[16384];
    int first_bad = step - bad_steps + 1;
    if (!s->dir[0]) return;
    if (!session_rollback_point(s, sd, sizeof sd)) {
        fprintf(stderr, "note: %s holds no save from before the non-finite steps (the first at "
                "step %d): there is nothing to roll back to\n", s->dir, first_bad);
        return;
    }
    guard_resume_command(argc, argv, sd, cmd, sizeof cmd);
    fprintf(stderr, "note: the newest save before the non-finite steps (the first at step %d) "
            "is %s; to return to it (later saves are moved into %s/abandoned/), run:\n  %s\n",
            first_bad, sd, s->dir, cmd);
}

void guard_exit_if_any(Dist *d, int bad, int code, const char *msg)
{
    double share = dist_mean(d, bad ? 1.0 : 0.0);
    if (share <= 0) return;
    if (share >= 1) dist_exit_all(d, code, "%s", msg);
    if (bad) dist_fail(d, code, "%s", msg);
}

/* The Llama family's options given with a model file must agree with its
 * header: the qkv bias, the qk norm, the head size, the norms' eps and
 * RoPE's scaling. */
static int check_option_flags(const TrainOptions *o, const GPTConfig *c, const char *from,
                              char *err, size_t len)
{
    if (train_options_given(o, "qkv-bias") && !c->qkv_bias)
        snprintf(err, len, "--qkv-bias: contradicts %.600s, whose model has no qkv bias", from);
    else if (train_options_given(o, "qk-norm") && !c->qk_norm)
        snprintf(err, len, "--qk-norm: contradicts %.600s, whose model has no qk norm", from);
    else if (train_options_given(o, "head-dim") &&
             config_head_dim(c) != (o->head_dim ? o->head_dim : c->channels / c->num_heads))
        snprintf(err, len, "--head-dim %d: contradicts %.600s, whose model has %d", o->head_dim,
                 from, config_head_dim(c));
    else if (train_options_given(o, "norm-eps") && config_norm_eps(c) != o->norm_eps)
        snprintf(err, len, "--norm-eps %g: contradicts %.600s, whose model has %g",
                 (double)o->norm_eps, from, (double)config_norm_eps(c));
    else if (train_options_given(o, "rope-scaling") && c->rope_factor != o->rope_factor)
        snprintf(err, len, "--rope-scaling %g: contradicts %.600s, whose model has %g%s",
                 (double)o->rope_factor, from, (double)c->rope_factor,
                 c->rope_factor == 0 ? " (none)" : "");
    else if (train_options_given(o, "rope-low-freq-factor") && c->rope_low_freq != o->rope_low_freq)
        snprintf(err, len, "--rope-low-freq-factor %g: contradicts %.600s, whose model has %g",
                 (double)o->rope_low_freq, from, (double)c->rope_low_freq);
    else if (train_options_given(o, "rope-high-freq-factor") &&
             c->rope_high_freq != o->rope_high_freq)
        snprintf(err, len, "--rope-high-freq-factor %g: contradicts %.600s, whose model has %g",
                 (double)o->rope_high_freq, from, (double)c->rope_high_freq);
    else if (train_options_given(o, "rope-original-max-pos") &&
             c->rope_original_max_pos != o->rope_original_max_pos)
        snprintf(err, len, "--rope-original-max-pos %d: contradicts %.600s, whose model has %d",
                 o->rope_original_max_pos, from, c->rope_original_max_pos);
    else
        return 0;
    return -1;
}

int guard_check_family_flags(const TrainOptions *o, const GPTConfig *c, const char *from,
                             char *err, size_t len)
{
    if (c->arch != ARCH_LLAMA) return 0;
    int untied = o->lm_head != 1;
    if (train_options_given(o, "kv-heads") && config_kv_heads(c) != (o->kv_heads ? o->kv_heads
                                                                                  : c->num_heads))
        snprintf(err, len, "--kv-heads %d: contradicts %.600s, whose model has %d", o->kv_heads,
                 from, config_kv_heads(c));
    else if (train_options_given(o, "ffn") && o->ffn && config_ffn(c) != o->ffn)
        snprintf(err, len, "--ffn %d: contradicts %.600s, whose model has %d", o->ffn, from,
                 config_ffn(c));
    else if (train_options_given(o, "lm-head") && o->lm_head && c->untied != untied)
        snprintf(err, len, "--lm-head %s: contradicts %.600s, whose head is %s",
                 untied ? "untied" : "tied", from, c->untied ? "untied" : "tied");
    else if (train_options_given(o, "rope-theta") && config_rope_theta(c) != o->rope_theta)
        snprintf(err, len, "--rope-theta %g: contradicts %.600s, whose model has %g",
                 o->rope_theta, from, config_rope_theta(c));
    else
        return check_option_flags(o, c, from, err, len);
    return -1;
}
