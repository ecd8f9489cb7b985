/* cli/options.c — see cli/options.h. */
#include "cli/options.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device_info.h"
#include "model/config.h"
#include "model/planner.h"
#include "cli/option_table.h"
#include "cli/options_family.h"
#include "cli/run_record.h"
#include "cli/version.h"

int train_options_given(const TrainOptions *opt, const char *name)
{
    for (int i = 0; i < option_table_len; i++)
        if (strcmp(option_table[i].name, name) == 0) return opt->given[i];
    fprintf(stderr, "internal error: train_options_given: no flag --%s\n", name);
    abort();
}

static int choice_index(const char *choices, const char *value)
{
    size_t vlen = strlen(value);
    int idx = 0;
    for (const char *p = choices;; idx++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == vlen && strncmp(p, value, len) == 0) return idx;
        if (!bar) return -1;
        p = bar + 1;
    }
}

/* A number must start with a digit (or '-' then one, where negatives can
 * be in range): strtol and friends skip blanks and take "-1" for an
 * unsigned, so " -1" would become 2^64-1. */
static int number_starts_right(const OptSpec *s, const char *value)
{
    const char *p = value;
    if (*p == '-' && s->kind != K_U64) p++;
    if (s->kind == K_FLOAT && *p == '.') p++;
    if (isdigit((unsigned char)*p)) return 1;
    fprintf(stderr, "--%s: expected %s, got '%s'\n", s->name,
            s->kind == K_U64 ? "a non-negative integer (digits only)"
            : s->kind == K_FLOAT ? "a number" : "an integer", value);
    return 0;
}

/* Store one value; 0 on success, else prints the error line and returns 2. */
static int set_value(TrainOptions *opt, const OptSpec *s, const char *value)
{
    char *end = NULL;
    void *field = (char *)opt + s->offset;
    errno = 0;
    if ((s->kind == K_INT || s->kind == K_LONG || s->kind == K_FLOAT || s->kind == K_U64) &&
        !number_starts_right(s, value))
        return 2;
    switch (s->kind) {
    case K_INT:
    case K_LONG: { /* [lo, hi] keeps a K_INT within int */
        long long v = strtoll(value, &end, 10);
        if (errno || end == value || *end || v < s->lo || v > s->hi) {
            fprintf(stderr, "--%s: expected an integer in %.0f..%.0f, got '%s'\n", s->name, s->lo,
                    s->hi, value);
            return 2;
        }
        if (s->kind == K_INT) *(int *)field = (int)v;
        else *(long *)field = (long)v;
        return 0;
    }
    case K_FLOAT: {
        double v = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(v) || v < s->lo || v > s->hi) {
            fprintf(stderr, "--%s: expected a number in [%g, %g], got '%s'\n", s->name, s->lo,
                    s->hi, value);
            return 2;
        }
        *(float *)field = (float)v;
        return 0;
    }
    case K_U64: {
        unsigned long long v = strtoull(value, &end, 10);
        if (errno || end == value || *end) {
            fprintf(stderr, "--%s: expected a non-negative integer, got '%s'\n", s->name, value);
            return 2;
        }
        *(uint64_t *)field = v;
        return 0;
    }
    case K_OPTSTR:
        if (!value) return 0;
        /* fall through */
    case K_STR:
        if (!*value) {
            fprintf(stderr, "--%s: expected a non-empty value\n", s->name);
            return 2;
        }
        *(const char **)field = value;
        return 0;
    case K_BYTES:
        if (planner_parse_bytes(value, (size_t *)field) != 0) {
            fprintf(stderr, "--%s: expected a byte count with an optional KiB, MiB or GiB suffix "
                            "(e.g. 40GiB), got '%s'\n", s->name, value);
            return 2;
        }
        return 0;
    case K_FLAG:
        *(int *)field = 1;
        return 0;
    case K_CHOICE: {
        int idx = choice_index(s->choices, value);
        if (idx < 0) {
            fprintf(stderr, "--%s: expected one of %s, got '%s'\n", s->name, s->choices, value);
            return 2;
        }
        *(int *)field = idx;
        return 0;
    }
    }
    return 2;
}

/* arg is "--name" or "--name=...". */
static int flag_written_in_full(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, "--", 2) == 0 && strncmp(arg + 2, name, n) == 0 &&
           (arg[2 + n] == 0 || arg[2 + n] == '=');
}

/* One flag of --help: "  LEFT  help..." with the help wrapped at spaces to
 * HELP_COLUMNS, continuation lines under the help's first column (a LEFT
 * wider than its column puts the help on the next line). \x01 is a space
 * that does not break ("[default: X]" stays whole). */
#define HELP_COLUMNS 100
#define HELP_INDENT 33
static void print_wrapped(const char *left, const char *text)
{
    int col = printf("  %s", left);
    if (col + 1 > HELP_INDENT) printf("\n%*s", HELP_INDENT, "");
    else printf("%*s", HELP_INDENT - col, "");
    col = HELP_INDENT;
    int first = 1;
    for (const char *p = text; *p;) {
        while (*p == ' ') p++;
        size_t n = strcspn(p, " ");
        if (!n) break;
        if (!first && col + 1 + (int)n > HELP_COLUMNS) col = printf("\n%*s", HELP_INDENT, "") - 1;
        else if (!first) col += printf(" ");
        for (size_t k = 0; k < n; k++) putchar(p[k] == '\x01' ? ' ' : p[k]);
        col += (int)n;
        first = 0;
        p += n;
    }
    printf("\n");
}

static void print_help(void)
{
    printf("usage: ./train_gpt [flags]\n"
           "Trains a GPT-2 or Llama model on llm.c token shards, printing the planned and measured memory.\n");
    const char *group = "";
    for (int i = 0; i < option_table_len; i++) {
        const OptSpec *s = &option_table[i];
        if (strcmp(group, s->group) != 0) printf("\n%s:\n", group = s->group);
        char left[64];
        const char *meta = s->kind == K_CHOICE ? s->choices
                           : s->kind == K_OPTSTR ? "[=S]"
                           : s->kind == K_STR  ? "S"
                           : s->kind == K_FLOAT ? "X"
                           : s->kind == K_BYTES ? "SIZE"
                           : s->kind == K_FLAG  ? ""
                                                : "N";
        snprintf(left, sizeof left, "--%s%s%s", s->name, s->kind == K_OPTSTR ? "" : " ", meta);
        char text[1024];
        snprintf(text, sizeof text, "%s%s%s%s", s->help, s->def ? " [default:\x01" : "",
                 s->def ? s->def : "", s->def ? "]" : "");
        print_wrapped(left, text);
    }
    printf("\n  %-30s %s\n", "-h, --help", "this list");
    printf("  %-30s %s\n", "--version", "the commit this binary was built from, and its backends");
}

static int check_checkpoint_flags(const TrainOptions *opt);
static int check_flags_in_use(const TrainOptions *opt);

int train_options_parse(TrainOptions *opt, int argc, char **argv)
{
    memset(opt, 0, sizeof *opt);
    for (int i = 0; i < option_table_len; i++)
        if (option_table[i].def && set_value(opt, &option_table[i], option_table[i].def) != 0) return 2;

    struct option longopts[TRAIN_OPTIONS_MAX + 3];
    for (int i = 0; i < option_table_len; i++)
        longopts[i] = (struct option){option_table[i].name,
                                      option_table[i].kind == K_OPTSTR ? optional_argument
                                      : option_table[i].kind == K_FLAG ? no_argument
                                                                : required_argument,
                                      NULL, 256 + i};
    longopts[option_table_len] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[option_table_len + 1] = (struct option){"version", no_argument, NULL, 'V'};
    longopts[option_table_len + 2] = (struct option){0, 0, 0, 0};

    unsigned char *given = opt->given;
    /* --config first (cli/run_record.c): the command line's flags, parsed
     * next, override its keys */
    for (int i = 1; i < argc; i++) {
        const char *path = strcmp(argv[i], "--config") == 0 && i + 1 < argc ? argv[i + 1]
                           : strncmp(argv[i], "--config=", 9) == 0        ? argv[i] + 9
                                                                           : NULL;
        if (path && run_record_apply(opt, path) != 0) return 2;
        if (path) break;
    }
    opterr = 0;
    optind = 1;
    int c, at = optind;
    /* "+": stop at the first non-flag, so "--resume DIR" is caught below.
     * The one short option is -h; each call reads the flag at argv[at]. */
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        const char *arg = argv[at];
        int idx = c >= 256 ? c - 256 : c == '?' && optopt >= 256 ? optopt - 256 : -1;
        /* getopt_long takes any unique prefix ("--lay" for --layers): a
         * flag must be written in full. */
        const char *full = c == 'h' ? "help" : c == 'V' ? "version"
                           : idx >= 0 ? option_table[idx].name : NULL;
        if (full && strcmp(arg, "-h") != 0 && !flag_written_in_full(arg, full)) {
            fprintf(stderr, "%s: unknown flag (flags are not abbreviated: --%s?)\n", arg, full);
            return 2;
        }
        at = optind;
        if (c == 'h') {
            print_help();
            return 1;
        }
        if (c == 'V') {
            version_print(stdout);
            return 1;
        }
        if (c == '?') {
            /* getopt_long sets optopt to the flag's value when its argument
             * is missing or one was given to a flag that takes none, and to
             * 0 for an unknown flag. */
            if (idx >= 0 && strchr(arg, '='))
                fprintf(stderr, "--%s: takes no value, got '%s' (see --help)\n",
                        option_table[idx].name, arg);
            else if (idx >= 0)
                fprintf(stderr, "--%s: missing value (see --help)\n", option_table[idx].name);
            else
                fprintf(stderr, "%s: unknown flag (see --help for the accepted flags)\n", arg);
            return 2;
        }
        if (set_value(opt, &option_table[idx], optarg) != 0) return 2;
        given[idx] = 1;
    }
    if (optind < argc && optind > 1 && strcmp(argv[optind - 1], "--resume") == 0) {
        fprintf(stderr, "--resume: a folder must be attached with '=': --resume=%s\n",
                argv[optind]);
        return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument (flags take the form --name value)\n",
                argv[optind]);
        return 2;
    }
    for (int i = 0; i < option_table_len; i++) {
        if (strcmp(option_table[i].name, "train-data") == 0) opt->train_data_given = given[i];
        if (strcmp(option_table[i].name, "val-data") == 0) opt->val_data_given = given[i];
        if (strcmp(option_table[i].name, "grad-accum") == 0) opt->grad_accum_given = given[i];
        if (strcmp(option_table[i].name, "resume") == 0) opt->resume = given[i];
        if (strcmp(option_table[i].name, "memory-budget") == 0) opt->memory_budget_given = given[i];
        if (strcmp(option_table[i].name, "host-budget") == 0) opt->host_budget_given = given[i];
    }
    if (planner_parse_offload(opt->offload_list, &opt->offload) != 0) {
        fprintf(stderr, "--offload: expected none or a comma-separated list of checkpoints and "
                        "optimizer, got '%s'\n", opt->offload_list);
        return 2;
    }
    if (opt->preset) {
        GPTConfig cfg = {0};
        if (config_preset(&cfg, opt->preset) != 0) {
            fprintf(stderr, "--model: expected one of d12|d24|d36|d48 (or gpt2|gpt2-medium|"
                    "gpt2-large|gpt2-xl), llama-60m|llama-125m or qwen2.5-0.5b|llama-3.2-1b|"
                    "qwen3-0.6b|qwen3-4b, got '%s'\n", opt->preset);
            return 2;
        }
        if (train_options_given(opt, "arch") && opt->arch != cfg.arch) {
            fprintf(stderr, "--arch %s: contradicts --model %s, a %s preset\n",
                    config_arch_name(opt->arch), opt->preset, config_arch_name(cfg.arch));
            return 2;
        }
        opt->arch = cfg.arch;
        for (int i = 0; i < option_table_len; i++) {
            if (given[i]) continue; /* explicit shape flags win over the preset */
            if (strcmp(option_table[i].name, "layers") == 0) opt->layers = cfg.num_layers;
            if (strcmp(option_table[i].name, "heads") == 0) opt->heads = cfg.num_heads;
            if (strcmp(option_table[i].name, "channels") == 0) opt->channels = cfg.channels;
            if (strcmp(option_table[i].name, "kv-heads") == 0) opt->kv_heads = cfg.kv_heads;
            if (strcmp(option_table[i].name, "ffn") == 0) opt->ffn = cfg.ffn;
        }
        if (cfg.vocab_size > 0) options_preset_published(opt, &cfg);
    }
    if (options_check_family(opt) != 0) return 2;
    if (strcmp(opt->device, "auto") && strcmp(opt->device, "cpu") && strcmp(opt->device, "cuda")) {
        fprintf(stderr, "--device: expected one of auto|cpu|cuda, got '%s'\n", opt->device);
        return 2;
    }
    if (strcmp(opt->dtype, "auto") && strcmp(opt->dtype, "fp32") && strcmp(opt->dtype, "bf16")) {
        fprintf(stderr, "--dtype: expected one of auto|fp32|bf16, got '%s'\n", opt->dtype);
        return 2;
    }
    if (opt->plan_device && !device_plan_find(opt->plan_device)) {
        fprintf(stderr, "--plan-device: expected one of %s, got '%s'\n", device_plan_names(),
                opt->plan_device);
        return 2;
    }
    if (opt->plan_device && !opt->plan) {
        fprintf(stderr, "--plan-device %s: applies to --plan (a run measures the device it "
                "runs on)\n", opt->plan_device);
        return 2;
    }
    if (opt->plan_device && strcmp(opt->device, "cpu") == 0) {
        fprintf(stderr, "--plan-device %s: contradicts --device cpu (a plan is for one "
                "device)\n", opt->plan_device);
        return 2;
    }
    /* --plan only plans (a GPU's bf16 plan may be made anywhere) */
#ifdef HAVE_CUDA
    int cpu_only = strcmp(opt->device, "cpu") == 0;
    const char *instead = "or --device cuda";
#else
    int cpu_only = strcmp(opt->device, "cuda") != 0; /* auto is the cpu in this build */
    const char *instead = "this build has no CUDA backend";
#endif
    if (cpu_only && !opt->plan && strcmp(opt->dtype, "bf16") == 0) {
        fprintf(stderr, "--dtype bf16: the cpu backend computes in fp32 only; give --dtype fp32 "
                "(or auto; %s)\n", instead);
        return 2;
    }
    if (opt->checkpoint_every != 0 && opt->recompute != 2 && !opt->plan) {
        fprintf(stderr, "--checkpoint-every: applies to --recompute 2 (got --recompute %s)\n",
                schedule_mode_flag(opt->recompute));
        return 2;
    }
    if (opt->tokenizer_json && opt->encoding) {
        fprintf(stderr, "--encoding: give either --tokenizer or --encoding, not both\n");
        return 2;
    }
    if (opt->prompt && opt->prompt_file) {
        fprintf(stderr, "--prompt-file: give either --prompt or --prompt-file, not both\n");
        return 2;
    }
    if (opt->eval_every > 0 && !opt->eval_file) {
        fprintf(stderr, "--eval-every: needs --eval-file FILE (what to evaluate)\n");
        return 2;
    }
    /* With --init-from the file's shape is the model's; train_gpt reports
     * shape flags that contradict it, with both shapes. */
    if (!opt->init_from && opt->channels % opt->heads != 0) {
        fprintf(stderr, "--heads: %d does not divide --channels %d\n", opt->heads, opt->channels);
        return 2;
    }
    if (check_flags_in_use(opt) != 0) return 2;
    return check_checkpoint_flags(opt);
}

/* A flag that does nothing without another is refused, not ignored: a
 * mistyped --prompt-file without --generate or --sample-every, or a --keep
 * without --checkpoint-dir, would otherwise pass unnoticed. */
static int check_flags_in_use(const TrainOptions *opt)
{
    static const char *const sampling[] = {"prompt", "prompt-file", "temperature", "top-k",
                                           "top-p", "num-samples", "stop-at-eot", "kv-cache",
                                           "tokenizer", "encoding"};
    int sampled = opt->generate > 0 || opt->sample_every > 0;
    for (size_t i = 0; i < sizeof sampling / sizeof sampling[0]; i++)
        if (!sampled && train_options_given(opt, sampling[i])) {
            fprintf(stderr, "--%s: applies to samples, and none is drawn: give --generate N or "
                    "--sample-every N\n", sampling[i]);
            return 2;
        }
    const char *why = NULL;
    if (train_options_given(opt, "sample-tokens") && opt->sample_every == 0)
        why = opt->generate > 0 ? "--sample-tokens: sets --sample-every's sample length; "
                                  "--generate N draws N tokens"
                                : "--sample-tokens: needs --sample-every N";
    else if (train_options_given(opt, "keep") && !opt->checkpoint_dir && !opt->resume_path)
        why = "--keep: needs --checkpoint-dir DIR (the saves it keeps)";
    else if (train_options_given(opt, "save-dtype") && !opt->save && !opt->llmc_save_dir)
        why = "--save-dtype: needs --save FILE or --save-checkpoint-llmc DIR (the model files "
              "it applies to)";
    else if (train_options_given(opt, "log-errors") && !opt->log_path)
        why = "--log-errors: needs --log FILE";
    else if (opt->dump_grads && (opt->steps == 0 || opt->generate > 0))
        why = opt->generate > 0 ? "--dump-grads: writes step 1's gradients, and --generate "
                                  "trains no step"
                                : "--dump-grads: writes step 1's gradients, and --steps 0 "
                                  "trains none";
    if (why) fprintf(stderr, "%s\n", why);
    return why ? -1 : 0;
}

/* The checkpoint flags that need each other. */
static int check_checkpoint_flags(const TrainOptions *opt)
{
    const char *why = NULL;
    int llmc = opt->llmc_save_dir || opt->llmc_resume;
    if (opt->save_every > 0 && !opt->checkpoint_dir && !opt->resume_path && !opt->llmc_save_dir)
        why = "--save-every: needs --checkpoint-dir DIR or --save-checkpoint-llmc DIR";
    else if (opt->save_minutes > 0 && train_options_given(opt, "save-minutes") &&
             !opt->checkpoint_dir && !opt->resume_path)
        why = "--save-minutes: needs --checkpoint-dir DIR (llm.c's saves follow --save-every "
              "only)";
    else if (opt->llmc_resume && (opt->resume || opt->init_from))
        why = "--resume-llmc continues an llm.c run; --resume and --init-from start from "
              "something else: give one of them";
    else if (llmc && opt->shuffle)
        why = "--save-checkpoint-llmc and --resume-llmc need --shuffle 0 (llm.c's shuffled order "
              "is not this project's)";
    else if (llmc && opt->zero)
        why = "--save-checkpoint-llmc and --resume-llmc need --zero 0 (llm.c's ZeRO-1 slices of "
              "the optimizer state are not this project's; llm.c has no ZeRO-2 or -3)";
    else if (opt->world_size && !opt->plan)
        why = "--world-size: only with --plan (a run's ranks are the launcher's)";
    else if (opt->resume && !opt->resume_path && !opt->checkpoint_dir)
        why = "--resume: needs --checkpoint-dir DIR (or --resume=DIR)";
    else if (opt->overwrite_checkpoints && !opt->checkpoint_dir && !opt->llmc_save_dir)
        why = "--overwrite-checkpoints: needs --checkpoint-dir DIR or --save-checkpoint-llmc DIR";
    else if (opt->overwrite_outputs && !opt->save && !opt->log_path && !opt->dump_grads)
        why = "--overwrite-outputs: needs --save, --log or --dump-grads";
    else if (opt->overwrite_checkpoints && opt->resume && !opt->resume_path)
        why = "--overwrite-checkpoints starts a new run and --resume continues the one in "
              "--checkpoint-dir: give one of them";
    if (why) fprintf(stderr, "%s\n", why);
    return why ? 2 : 0;
}

/* Under several ranks every flag must be the same on all of them
 * (cli/guard.c checks), by value, except these, which change nothing the
 * ranks share; and for these, whether they were given matters too (the
 * program reads it: a preset, a resume, --total-batch, default data). */
static const char *const RANK_LOCAL[] = {"threads", "log", "log-errors", "collective-timeout"};
static const char *const AGREE_GIVEN[] = {"model", "layers", "channels", "heads", "max-seq-len",
                                          "vocab", "grad-accum", "train-data", "val-data",
                                          "memory-budget", "resume"};

static int listed(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0) return 1;
    return 0;
}

int train_options_count(void) { return option_table_len; }
const char *train_options_name(int i) { return option_table[i].name; }
int train_options_must_agree(int i)
{
    return !listed(option_table[i].name, RANK_LOCAL, sizeof RANK_LOCAL / sizeof RANK_LOCAL[0]);
}

void train_options_format(const TrainOptions *opt, int i, char *out, size_t len)
{
    train_options_format_value(opt, i, out, len);
    size_t n_given = sizeof AGREE_GIVEN / sizeof AGREE_GIVEN[0];
    if (!opt->given[i] && listed(option_table[i].name, AGREE_GIVEN, n_given)) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, " (default)");
    }
}

TrainOptionType train_options_type(int i)
{
    switch (option_table[i].kind) {
    case K_INT: case K_LONG: case K_FLOAT: case K_U64: case K_BYTES: return TRAIN_OPT_NUMBER;
    case K_FLAG: return TRAIN_OPT_SWITCH;
    case K_OPTSTR: return TRAIN_OPT_OPTIONAL_TEXT;
    default: return option_table[i].def ? TRAIN_OPT_TEXT : TRAIN_OPT_OPTIONAL_TEXT;
    }
}

int train_options_has_default(int i) { return option_table[i].def != NULL; }

int train_options_index(const char *name)
{
    for (int i = 0; i < option_table_len; i++)
        if (strcmp(option_table[i].name, name) == 0) return i;
    return -1;
}

int train_options_set(TrainOptions *opt, int i, const char *value)
{
    if (set_value(opt, &option_table[i], value) != 0) return 2;
    /* a value equal to the default counts as not given: a recorded
     * configuration lists every flag, and "given" matters to some */
    char mine[512], def[512] = "";
    TrainOptions d;
    memset(&d, 0, sizeof d);
    train_options_format_value(opt, i, mine, sizeof mine);
    if (option_table[i].def && set_value(&d, &option_table[i], option_table[i].def) == 0)
        train_options_format_value(&d, i, def, sizeof def);
    opt->given[i] = !(option_table[i].def && strcmp(mine, def) == 0);
    return 0;
}

void train_options_format_value(const TrainOptions *opt, int i, char *out, size_t len)
{
    const OptSpec *s = &option_table[i];
    const void *f = (const char *)opt + s->offset;
    const char *str;
    switch (s->kind) {
    case K_INT: snprintf(out, len, "%d", *(const int *)f); break;
    case K_LONG: snprintf(out, len, "%ld", *(const long *)f); break;
    case K_FLOAT: snprintf(out, len, "%.9g", *(const float *)f); break;
    case K_U64: snprintf(out, len, "%llu", (unsigned long long)*(const uint64_t *)f); break;
    case K_BYTES: snprintf(out, len, "%zu", *(const size_t *)f); break;
    case K_FLAG: snprintf(out, len, "%s", *(const int *)f ? "on" : "off"); break;
    case K_STR:
    case K_OPTSTR:
        str = *(const char *const *)f;
        snprintf(out, len, "%s", str ? str : "(none)");
        break;
    case K_CHOICE: {
        const char *p = s->choices;
        for (int k = *(const int *)f; k > 0; k--) p = strchr(p, '|') + 1; /* index < count */
        snprintf(out, len, "%.*s", (int)strcspn(p, "|"), p);
        break;
    }
    }
}

RunConfig train_options_run_config(const TrainOptions *o)
{
    return (RunConfig){
        .checkpoint_dir = o->checkpoint_dir, .resume_path = o->resume_path,
        .resume = o->resume, .keep = o->keep, .save_minutes = o->save_minutes,
        /* --save-every with only --save-checkpoint-llmc paces the llm.c saves */
        .save_every = o->checkpoint_dir || o->resume_path ? o->save_every : 0,
        .overwrite = o->overwrite_checkpoints, .exclusive = !o->plan && o->generate == 0,
        .batch = o->batch, .seq_len = o->seq_len, .grad_accum = o->grad_accum,
        .steps = o->steps, .zero = o->zero, .shuffle = o->shuffle,
        .lr_schedule = o->lr_schedule, .warmup = o->warmup, .recompute = o->recompute,
        .loss_chunk = o->loss_chunk, .seed = o->seed, .lr = o->lr,
        .lr_min_frac = o->lr_min_frac, .beta1 = o->beta1, .beta2 = o->beta2, .eps = o->eps,
        .weight_decay = o->weight_decay, .grad_clip = o->grad_clip,
    };
}

/* Put "--flag: " before a message about the flag's file ("x.bin: cannot
 * open: ..."), so that the message names both. */
void train_options_name_flag(const char *flag, char *err, size_t len)
{
    size_t f = strlen(flag) + 2, n = strlen(err);
    if (f + 1 > len) return;
    if (n > len - f - 1) n = len - f - 1; /* the message's end is cut, never the flag */
    memmove(err + f, err, n);
    err[f + n] = 0;
    memcpy(err, flag, f - 2);
    memcpy(err + f - 2, ": ", 2);
}
