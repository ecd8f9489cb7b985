/* train_options.c — see train_options.h. */
#include "train_options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"
#include "model/planner.h"

/* K_OPTSTR: an optional string, attached as --name=VALUE (getopt_long's
 * rule for optional arguments); the flag alone stores NULL. K_BYTES: a
 * size_t byte count, planner_parse_bytes's syntax. K_FLAG: an int set to 1
 * by the flag alone (no value). */
typedef enum { K_INT, K_LONG, K_FLOAT, K_U64, K_STR, K_CHOICE, K_OPTSTR, K_BYTES, K_FLAG } Kind;

typedef struct {
    const char *name;
    Kind kind;
    size_t offset;      /* into TrainOptions */
    const char *def;    /* default, parsed like a user value; NULL = none */
    double lo, hi;      /* accepted range for numbers */
    const char *choices;/* K_CHOICE: '|'-separated; stored as the index */
    const char *group, *help;
} OptSpec;

#define O(f) offsetof(TrainOptions, f)
static const OptSpec SPECS[] = {
    {"model", K_STR, O(preset), NULL, 0, 0, NULL, "Shape",
     "GPT-2 preset d12|d24|d36|d48 (124M/350M/774M/1558M); shape flags given too win"},
    {"layers", K_INT, O(layers), "12", 1, 4096, NULL, "Shape", "transformer blocks L"},
    {"channels", K_INT, O(channels), "768", 1, 65536, NULL, "Shape", "embedding width C"},
    {"heads", K_INT, O(heads), "12", 1, 65536, NULL, "Shape", "attention heads NH (divides C)"},
    {"seq-len", K_INT, O(seq_len), "1024", 1, 1048576, NULL, "Shape", "sequence length T"},
    {"max-seq-len", K_INT, O(max_seq_len), "0", 0, 1048576, NULL, "Shape",
     "rows of the position embedding (0 = seq-len)"},
    {"vocab", K_INT, O(vocab), "50257", 2, 65536, NULL, "Shape",
     "vocabulary V (padded to a multiple of 128)"},
    {"batch", K_INT, O(batch), "4", 1, 1 << 20, NULL, "Batch", "micro-batch size B"},
    {"grad-accum", K_INT, O(grad_accum), "1", 1, 1 << 20, NULL, "Batch",
     "micro-batches per optimizer step"},
    {"total-batch", K_LONG, O(total_batch), "0", 0, 1e15, NULL, "Batch",
     "tokens per optimizer step over all ranks; sets grad-accum = total / (B*T*ranks), "
     "which must divide exactly (0 = off)"},
    {"steps", K_INT, O(steps), "20", 0, 1 << 30, NULL, "Batch", "optimizer steps"},
    {"lr", K_FLOAT, O(lr), "3e-4", 0, 10, NULL, "Optimizer", "peak learning rate"},
    {"lr-schedule", K_CHOICE, O(lr_schedule), "constant", 0, 0, "constant|cosine", "Optimizer",
     "decay after warmup"},
    {"warmup", K_INT, O(warmup), "0", 0, 1 << 30, NULL, "Optimizer", "linear warmup steps"},
    {"lr-min-frac", K_FLOAT, O(lr_min_frac), "0.0", 0, 1, NULL, "Optimizer",
     "cosine floor as a fraction of --lr"},
    {"beta1", K_FLOAT, O(beta1), "0.9", 0, 0.999999, NULL, "Optimizer", "AdamW beta1"},
    {"beta2", K_FLOAT, O(beta2), "0.95", 0, 0.999999, NULL, "Optimizer", "AdamW beta2"},
    {"eps", K_FLOAT, O(eps), "1e-8", 1e-30, 1, NULL, "Optimizer", "AdamW epsilon"},
    {"weight-decay", K_FLOAT, O(weight_decay), "0.0", 0, 10, NULL, "Optimizer",
     "decoupled weight decay (2-D tensors only)"},
    {"grad-clip", K_FLOAT, O(grad_clip), "1.0", 0, 1e30, NULL, "Optimizer",
     "clip the global gradient norm (0 = off)"},
    /* the choices' order is RecomputeMode's: 0, 1, 2, selective = 3, auto = 4 */
    {"recompute", K_CHOICE, O(recompute), "0", 0, 0, "0|1|2|selective|auto", "Recompute",
     "0 = store every block's activations; 1 = store block inputs, re-forward in backward; "
     "2 = store every k-th block input, re-run segments; selective = store all but LayerNorm "
     "and GELU outputs; auto = least recompute that fits --memory-budget"},
    {"checkpoint-every", K_INT, O(checkpoint_every), "0", 0, 4096, NULL, "Recompute",
     "--recompute 2: blocks per segment k (0 = round(sqrt(layers)))"},
    {"memory-budget", K_BYTES, O(memory_budget), NULL, 0, 0, NULL, "Recompute",
     "bytes with an optional KiB|MiB|GiB suffix: auto's budget; other modes exit 2 when their "
     "plan exceeds it [default: free device memory minus a printed margin]"},
    {"plan", K_FLAG, O(plan), NULL, 0, 0, NULL, "Recompute",
     "dry run: print each recompute mode's memory and recompute at this shape, allocate "
     "nothing, exit"},
    {"loss-chunk", K_INT, O(loss_chunk), "0", 0, 1 << 30, NULL, "Recompute",
     "tokens per loss-head chunk (0 = planner's choice)"},
    {"zero", K_CHOICE, O(zero), "0", 0, 0, "0|1", "Data parallel",
     "1 = ZeRO-1: shard AdamW m, v (and master weights) over the ranks"},
    {"train-data", K_STR, O(train_data), "datasets/tinyshakespeare_train_*.bin", 0, 0, NULL, "Data",
     "training shards (glob)"},
    {"val-data", K_STR, O(val_data), "datasets/tinyshakespeare_val_*.bin", 0, 0, NULL, "Data",
     "validation shards (glob); the default is used only with the default --train-data, and skipped when absent"},
    {"shuffle", K_CHOICE, O(shuffle), "0", 0, 0, "0|1", "Data", "permute shards and windows"},
    {"seed", K_U64, O(seed), "1337", 0, 0, NULL, "Data", "seed for init and shuffling"},
    {"val-every", K_INT, O(val_every), "20", 0, 1 << 30, NULL, "Data",
     "steps between val losses (0 = only at the end)"},
    {"val-batches", K_INT, O(val_batches), "5", 1, 1 << 20, NULL, "Data",
     "micro-batches per val loss, per rank"},
    {"init-from", K_STR, O(init_from), NULL, 0, 0, NULL, "Model files",
     "llm.c model file to start from (version 3 or 5)"},
    {"save", K_STR, O(save), NULL, 0, 0, NULL, "Model files",
     "write the final model (llm.c's format; see --save-dtype)"},
    {"save-dtype", K_CHOICE, O(save_dtype), "fp32", 0, 0, "fp32|bf16", "Model files",
     "--save's precision: fp32 = llm.c version 3, bf16 = version 5 (what llm.c's CUDA trainer "
     "loads)"},
    {"sample-every", K_INT, O(sample_every), "0", 0, 1 << 30, NULL, "Text",
     "print a sample from the model every N steps (0 = never)"},
    {"sample-tokens", K_INT, O(sample_tokens), "64", 1, 1 << 20, NULL, "Text",
     "tokens per sample"},
    {"generate", K_INT, O(generate), "0", 0, 1 << 20, NULL, "Text",
     "no training: print N tokens from the model (use with --init-from) and exit"},
    {"prompt", K_STR, O(prompt), NULL, 0, 0, NULL, "Text",
     "text the samples continue (default: the end-of-text token)"},
    {"prompt-file", K_STR, O(prompt_file), NULL, 0, 0, NULL, "Text",
     "read the prompt from file S, all of it (at most 16 MiB; not with --prompt)"},
    {"temperature", K_FLOAT, O(temperature), "1.0", 0, 100, NULL, "Text",
     "sampling temperature (0 = greedy); samples are seeded by --seed"},
    {"top-k", K_INT, O(top_k), "0", 0, 1 << 20, NULL, "Text",
     "draw only from the N most likely tokens (0 = all)"},
    {"top-p", K_FLOAT, O(top_p), "1.0", 0, 1, NULL, "Text",
     "draw only from the fewest most likely tokens whose probability reaches X (1 = all); "
     "applied after --top-k"},
    {"num-samples", K_INT, O(num_samples), "1", 1, 1 << 20, NULL, "Text",
     "samples per --generate and per --sample-every, each continuing the prompt"},
    {"stop-at-eot", K_CHOICE, O(stop_at_eot), "1", 0, 0, "0|1", "Text",
     "1 = a sample ends at GPT-2's end-of-text token, which is not printed"},
    {"eval-file", K_STR, O(eval_file), NULL, 0, 0, NULL, "Evaluation",
     "llm.c multiple-choice eval file (HellaSwag: `make hellaswag` writes "
     "datasets/hellaswag_val.bin), scored at the end and every --eval-every steps"},
    {"eval-every", K_INT, O(eval_every), "0", 0, 1 << 30, NULL, "Evaluation",
     "steps between --eval-file scores (0 = only at the end)"},
    {"checkpoint-dir", K_STR, O(checkpoint_dir), NULL, 0, 0, NULL, "Checkpoints",
     "folder for resumable saves (DIR/step_N/{model.bin,state_r00000.bin,COMPLETE})"},
    {"save-every", K_INT, O(save_every), "0", 0, 1 << 30, NULL, "Checkpoints",
     "save every N steps (0 = only at the end, on a signal, or on a non-finite abort)"},
    {"keep", K_INT, O(keep), "3", 0, 1 << 30, NULL, "Checkpoints",
     "complete saves to keep, newest first (0 = all)"},
    {"resume", K_OPTSTR, O(resume_path), NULL, 0, 0, NULL, "Checkpoints",
     "continue from the newest complete save in --checkpoint-dir (a new run if none), or "
     "--resume=DIR: from DIR (a checkpoint folder or one step_N folder; must exist)"},
    {"max-bad-steps", K_INT, O(max_bad_steps), "5", 1, 1 << 30, NULL, "Checkpoints",
     "consecutive non-finite (NaN/Inf loss or gradient norm) steps, skipped, before saving "
     "and aborting"},
    {"log", K_STR, O(log_path), NULL, 0, 0, NULL, "Other", "JSON-lines log file"},
    {"threads", K_INT, O(threads), "0", 0, 1024, NULL, "Other",
     "CPU threads per rank (0 = OMP_NUM_THREADS, else the cores / ranks on the node)"},
    {"device", K_STR, O(device), "auto", 0, 0, NULL, "Other", "auto|cpu|cuda"},
    {"dtype", K_STR, O(dtype), "auto", 0, 0, NULL, "Other",
     "auto|fp32|bf16 (auto: bf16 on cuda, fp32 on cpu)"},
    {"dump-grads", K_STR, O(dump_grads), NULL, 0, 0, NULL, "Other",
     "after step 1's backward, write the loss and all gradients (fp32) to FILE"},
    {"profile-ops", K_FLAG, O(profile_ops), NULL, 0, 0, NULL, "Other",
     "time each op alone (a device sync around each; slower run) and print where a step's "
     "time goes, the first step left out"},
};
#define NUM_SPECS ((int)(sizeof SPECS / sizeof SPECS[0]))
_Static_assert(NUM_SPECS <= TRAIN_OPTIONS_MAX, "raise TRAIN_OPTIONS_MAX");

int train_options_given(const TrainOptions *opt, const char *name)
{
    for (int i = 0; i < NUM_SPECS; i++)
        if (strcmp(SPECS[i].name, name) == 0) return opt->given[i];
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

/* Store one value; 0 on success, else prints the error line and returns 2. */
static int set_value(TrainOptions *opt, const OptSpec *s, const char *value)
{
    char *end = NULL;
    void *field = (char *)opt + s->offset;
    errno = 0;
    switch (s->kind) {
    case K_INT: {
        long v = strtol(value, &end, 10);
        if (errno || end == value || *end || v < s->lo || v > s->hi) {
            fprintf(stderr, "--%s: expected an integer in %.0f..%.0f, got '%s'\n", s->name, s->lo,
                    s->hi, value);
            return 2;
        }
        *(int *)field = (int)v;
        return 0;
    }
    case K_LONG: {
        long long v = strtoll(value, &end, 10);
        if (errno || end == value || *end || v < s->lo || v > s->hi) {
            fprintf(stderr, "--%s: expected an integer in %.0f..%.0f, got '%s'\n", s->name, s->lo,
                    s->hi, value);
            return 2;
        }
        *(long *)field = (long)v;
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
        if (errno || end == value || *end || value[0] == '-') {
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

static void print_help(void)
{
    printf("usage: ./train_gpt [flags]\n"
           "Trains a GPT-2 model on llm.c token shards, printing the planned and measured memory.\n");
    const char *group = "";
    for (int i = 0; i < NUM_SPECS; i++) {
        const OptSpec *s = &SPECS[i];
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
        printf("  %-30s %s", left, s->help);
        if (s->def) printf(" [default: %s]", s->def);
        printf("\n");
    }
    printf("\n  %-30s %s\n", "--help", "this list");
}

int train_options_parse(TrainOptions *opt, int argc, char **argv)
{
    memset(opt, 0, sizeof *opt);
    for (int i = 0; i < NUM_SPECS; i++)
        if (SPECS[i].def && set_value(opt, &SPECS[i], SPECS[i].def) != 0) return 2;

    struct option longopts[NUM_SPECS + 2];
    for (int i = 0; i < NUM_SPECS; i++)
        longopts[i] = (struct option){SPECS[i].name,
                                      SPECS[i].kind == K_OPTSTR ? optional_argument
                                      : SPECS[i].kind == K_FLAG ? no_argument
                                                                : required_argument,
                                      NULL, 256 + i};
    longopts[NUM_SPECS] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[NUM_SPECS + 1] = (struct option){0, 0, 0, 0};

    unsigned char *given = opt->given;
    opterr = 0;
    optind = 1;
    int c;
    /* "+": stop at the first non-flag, so "--resume DIR" is caught below. */
    while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
        if (c == 'h') {
            print_help();
            return 1;
        }
        if (c == '?') {
            /* getopt_long sets optopt to the flag's value when its argument
             * is missing, and to 0 for an unknown flag. */
            const char *arg = argv[optind - 1];
            if (optopt >= 256)
                fprintf(stderr, "--%s: missing value (see --help)\n", SPECS[optopt - 256].name);
            else
                fprintf(stderr, "%s: unknown flag (see --help for the accepted flags)\n", arg);
            return 2;
        }
        c -= 256;
        if (set_value(opt, &SPECS[c], optarg) != 0) return 2;
        given[c] = 1;
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
    for (int i = 0; i < NUM_SPECS; i++) {
        if (strcmp(SPECS[i].name, "train-data") == 0) opt->train_data_given = given[i];
        if (strcmp(SPECS[i].name, "val-data") == 0) opt->val_data_given = given[i];
        if (strcmp(SPECS[i].name, "grad-accum") == 0) opt->grad_accum_given = given[i];
        if (strcmp(SPECS[i].name, "resume") == 0) opt->resume = given[i];
        if (strcmp(SPECS[i].name, "memory-budget") == 0) opt->memory_budget_given = given[i];
    }
    if (opt->preset) {
        GPTConfig cfg = {0};
        if (config_preset(&cfg, opt->preset) != 0) {
            fprintf(stderr, "--model: expected one of d12|d24|d36|d48, got '%s'\n", opt->preset);
            return 2;
        }
        for (int i = 0; i < NUM_SPECS; i++) {
            if (given[i]) continue; /* explicit shape flags win over the preset */
            if (strcmp(SPECS[i].name, "layers") == 0) opt->layers = cfg.num_layers;
            if (strcmp(SPECS[i].name, "heads") == 0) opt->heads = cfg.num_heads;
            if (strcmp(SPECS[i].name, "channels") == 0) opt->channels = cfg.channels;
        }
    }
    if (strcmp(opt->device, "auto") && strcmp(opt->device, "cpu") && strcmp(opt->device, "cuda")) {
        fprintf(stderr, "--device: expected one of auto|cpu|cuda, got '%s'\n", opt->device);
        return 2;
    }
    if (strcmp(opt->dtype, "auto") && strcmp(opt->dtype, "fp32") && strcmp(opt->dtype, "bf16")) {
        fprintf(stderr, "--dtype: expected one of auto|fp32|bf16, got '%s'\n", opt->dtype);
        return 2;
    }
    if (opt->checkpoint_every != 0 && opt->recompute != 2 && !opt->plan) {
        fprintf(stderr, "--checkpoint-every: applies to --recompute 2 (got --recompute %s)\n",
                schedule_mode_flag(opt->recompute));
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
    if (opt->channels % opt->heads != 0) {
        fprintf(stderr, "--heads: %d does not divide --channels %d\n", opt->heads, opt->channels);
        return 2;
    }
    return 0;
}
