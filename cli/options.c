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

#include "model/config.h"
#include "model/planner.h"
#include "cli/run_record.h"
#include "cli/version.h"

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
     "GPT-2 preset d12|d24|d36|d48 (124M/350M/774M/1558M), or by Hugging Face's names "
     "gpt2|gpt2-medium|gpt2-large|gpt2-xl; shape flags given too win"},
    {"layers", K_INT, O(layers), "12", 1, 4096, NULL, "Shape", "transformer blocks L"},
    {"channels", K_INT, O(channels), "768", 1, 65536, NULL, "Shape", "embedding width C"},
    {"heads", K_INT, O(heads), "12", 1, 65536, NULL, "Shape", "attention heads NH (divides C)"},
    {"seq-len", K_INT, O(seq_len), "1024", 1, 1048576, NULL, "Shape",
     "sequence length T (not given: a shorter --init-from model's own maximum)"},
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
     "and GELU outputs; auto = the least predicted time (--op-costs) that fits --memory-budget"},
    {"checkpoint-every", K_INT, O(checkpoint_every), "0", 0, 4096, NULL, "Recompute",
     "--recompute 2: blocks per segment k (0 = round(sqrt(layers)))"},
    {"memory-budget", K_BYTES, O(memory_budget), NULL, 0, 0, NULL, "Recompute",
     "bytes with an optional KiB|MiB|GiB suffix: auto's budget; other modes exit 2 when their "
     "plan exceeds it. It covers the whole process: the arenas, a baseline measured at "
     "start-up (on the cpu the resident set once the BLAS has touched its buffers at the "
     "run's matmuls; on a GPU the device memory already in use) and, on the cpu, the host "
     "copies that --save, --dump-grads and checkpoints make [default: free device memory "
     "minus a printed margin]"},
    {"offload", K_STR, O(offload_list), "none", 0, 0, NULL, "Recompute",
     "what lives in host memory: checkpoints (the stored block inputs; the device keeps a "
     "ring of two), optimizer (AdamW m, v, the fp32 master and the host AdamW's gradient and "
     "parameter staging), both comma-separated, or none. With --recompute auto, checkpoints "
     "lets auto keep, offload or rebuild the stored inputs by measured op and copy time"},
    {"host-budget", K_BYTES, O(host_budget), NULL, 0, 0, NULL, "Recompute",
     "bytes with an optional KiB|MiB|GiB suffix: the bound on the host tier (--offload); a "
     "plan over it exits 2, and --plan's max_B keeps within it [default: no bound]"},
    {"plan", K_FLAG, O(plan), NULL, 0, 0, NULL, "Recompute",
     "dry run: print each recompute mode's memory and recompute at this shape, allocate "
     "nothing, exit"},
    {"op-costs", K_STR, O(op_costs), "auto", 0, 0, NULL, "Recompute",
     "what auto and --plan predict time with: measure = time one block's ops now (and cache "
     "them); flops = counted FLOPs, no time (auto then minimises recomputed FLOPs with full "
     "and selective tapes); FILE = costs written by a run (the cache's format); auto = the "
     "cached costs for this device and shape, measured first when absent (--recompute auto; "
     "else used only when cached)"},
    {"loss-chunk", K_INT, O(loss_chunk), "0", 0, 1 << 30, NULL, "Recompute",
     "tokens per loss-head chunk (0 = planner's choice)"},
    {"zero", K_CHOICE, O(zero), "0", 0, 0, "0|1", "Data parallel",
     "1 = ZeRO-1: shard AdamW m, v (and master weights) over the ranks"},
    {"collective-timeout", K_FLOAT, O(collective_timeout), "600", 0, 1e9, NULL, "Data parallel",
     "seconds a rank may wait on the others (a collective, or the device behind NCCL) before "
     "it ends the job with status 3; must exceed the longest save (0 = wait for ever)"},
    {"train-data", K_STR, O(train_data), "datasets/tinyshakespeare_train_*.bin", 0, 0, NULL, "Data",
     "training shards (glob)"},
    {"val-data", K_STR, O(val_data), "datasets/tinyshakespeare_val_*.bin", 0, 0, NULL, "Data",
     "validation shards (glob); the default is used only with the default --train-data, and skipped when absent; a shard also in --train-data draws a warning"},
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
     "--save's and --save-checkpoint-llmc's model file precision: fp32 = llm.c version 3, "
     "bf16 = version 5 (what llm.c's CUDA trainer loads)"},
    {"sample-every", K_INT, O(sample_every), "0", 0, 1 << 30, NULL, "Text",
     "print a sample from the model every N steps (0 = never)"},
    {"sample-tokens", K_INT, O(sample_tokens), "64", 1, 1 << 20, NULL, "Text",
     "tokens per sample"},
    {"generate", K_INT, O(generate), "0", 0, 1 << 20, NULL, "Text",
     "no training: print N tokens from the model (use with --init-from) and exit. The model sees "
     "at most --seq-len tokens: when the context outgrows them, it shifts to its last half "
     "(docs/sampling.md)"},
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
    {"kv-cache", K_CHOICE, O(kv_cache), "1", 0, 0, "0|1", "Text",
     "1 = samples decode one position a token against cached keys and values, and re-prefill "
     "the kept half after a context shift in one batch (docs/sampling.md); 0 = re-run the whole "
     "context for each token (the same tokens)"},
    {"eval-file", K_STR, O(eval_file), NULL, 0, 0, NULL, "Evaluation",
     "llm.c multiple-choice eval file (HellaSwag: `make hellaswag` writes "
     "datasets/hellaswag_val.bin), scored at the end and every --eval-every steps"},
    {"eval-every", K_INT, O(eval_every), "0", 0, 1 << 30, NULL, "Evaluation",
     "steps between --eval-file scores (0 = only at the end)"},
    {"checkpoint-dir", K_STR, O(checkpoint_dir), NULL, 0, 0, NULL, "Checkpoints",
     "folder for resumable saves (DIR/step_N/{model.bin,state_r00000.bin,COMPLETE})"},
    {"save-every", K_INT, O(save_every), "0", 0, 1 << 30, NULL, "Checkpoints",
     "save every N steps (0 = only at the end, on a signal, or on a non-finite abort)"},
    {"save-minutes", K_FLOAT, O(save_minutes), "30", 0, 1e6, NULL, "Checkpoints",
     "also save to --checkpoint-dir once X minutes have passed since its last save (or the "
     "start), so that a crash or a kill (out of memory, a lost node) costs at most that much "
     "training; decided by rank 0's clock (0 = off)"},
    {"keep", K_INT, O(keep), "3", 0, 1 << 30, NULL, "Checkpoints",
     "complete saves to keep, newest first (0 = all)"},
    {"resume", K_OPTSTR, O(resume_path), NULL, 0, 0, NULL, "Checkpoints",
     "continue from the newest intact save in --checkpoint-dir (a new run if none), or "
     "--resume=DIR: from DIR (a checkpoint folder, or exactly one step_N folder: newer saves "
     "of the run are then moved into abandoned/)"},
    {"save-checkpoint-llmc", K_STR, O(llmc_save_dir), NULL, 0, 0, NULL, "Checkpoints",
     "also write llm.c's checkpoint (DIR/model_N.bin per --save-dtype, state_N_RANK.bin, "
     "DONE_N) whenever a save is due (--save-every, the last step, a stop)"},
    {"resume-llmc", K_STR, O(llmc_resume), NULL, 0, 0, NULL, "Checkpoints",
     "continue an llm.c run: S is its output folder (newest DONE_N step) or a "
     "state_N_RANK.bin; give its -i, -b, -t as --train-data, --batch, --seq-len"},
    {"overwrite-checkpoints", K_FLAG, O(overwrite_checkpoints), NULL, 0, 0, NULL, "Checkpoints",
     "start this run in a --checkpoint-dir (or --save-checkpoint-llmc folder) that holds "
     "another run's saves, moving them into DIR/replaced_<time>/ (nothing is deleted)"},
    {"max-bad-steps", K_INT, O(max_bad_steps), "5", 1, 1 << 30, NULL, "Checkpoints",
     "consecutive non-finite (NaN/Inf loss or gradient norm) steps, skipped, before saving "
     "and aborting"},
    {"log", K_STR, O(log_path), NULL, 0, 0, NULL, "Other",
     "JSON-lines log file (on --resume, --resume-llmc: appended to, cut back to the resumed "
     "step)"},
    {"log-errors", K_CHOICE, O(log_errors), "fail", 0, 0, "fail|ignore", "Other",
     "a failed --log write: fail = warn, train on, exit 1 at the end; ignore = warn only"},
    {"threads", K_INT, O(threads), "0", 0, 1024, NULL, "Other",
     "CPU threads per rank (0 = OMP_NUM_THREADS, else the cores / ranks on the node)"},
    {"device", K_STR, O(device), "auto", 0, 0, NULL, "Other", "auto|cpu|cuda"},
    {"dtype", K_STR, O(dtype), "auto", 0, 0, NULL, "Other",
     "auto|fp32|bf16 (auto: bf16 on cuda, fp32 on cpu)"},
    {"dump-grads", K_STR, O(dump_grads), NULL, 0, 0, NULL, "Other",
     "after step 1's backward, write the loss and all gradients (fp32) to FILE"},
    {"overwrite-outputs", K_FLAG, O(overwrite_outputs), NULL, 0, 0, NULL, "Other",
     "start a new run whose --save, --log or --dump-grads file holds something already, moving "
     "it to FILE.replaced_<time> (nothing is deleted); without it such a run exits 1 at "
     "start-up (a resumed run keeps them: its --log is continued, its --save replaced)"},
    {"peak-tflops", K_FLOAT, O(peak_tflops), "0", 0, 1e6, NULL, "Other",
     "the device's dense peak in TFLOP/s, for the MFU each step prints (0 = the table of known "
     "GPUs in kernels/device_info.c; the CPU has none: FLOP/s only)"},
    {"config", K_STR, O(config_path), NULL, 0, 0, NULL, "Other",
     "read flags from the JSON object in FILE (keys = flag names, as a --log's first line "
     "records them under \"config\"; that line or the whole log may be given); flags on the "
     "command line override it; an unknown key exits 2"},
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
    for (int i = 0; i < NUM_SPECS; i++)
        if (SPECS[i].def && set_value(opt, &SPECS[i], SPECS[i].def) != 0) return 2;

    struct option longopts[NUM_SPECS + 3];
    for (int i = 0; i < NUM_SPECS; i++)
        longopts[i] = (struct option){SPECS[i].name,
                                      SPECS[i].kind == K_OPTSTR ? optional_argument
                                      : SPECS[i].kind == K_FLAG ? no_argument
                                                                : required_argument,
                                      NULL, 256 + i};
    longopts[NUM_SPECS] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[NUM_SPECS + 1] = (struct option){"version", no_argument, NULL, 'V'};
    longopts[NUM_SPECS + 2] = (struct option){0, 0, 0, 0};

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
                           : idx >= 0 ? SPECS[idx].name : NULL;
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
                        SPECS[idx].name, arg);
            else if (idx >= 0)
                fprintf(stderr, "--%s: missing value (see --help)\n", SPECS[idx].name);
            else
                fprintf(stderr, "%s: unknown flag (see --help for the accepted flags)\n", arg);
            return 2;
        }
        if (set_value(opt, &SPECS[idx], optarg) != 0) return 2;
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
    for (int i = 0; i < NUM_SPECS; i++) {
        if (strcmp(SPECS[i].name, "train-data") == 0) opt->train_data_given = given[i];
        if (strcmp(SPECS[i].name, "val-data") == 0) opt->val_data_given = given[i];
        if (strcmp(SPECS[i].name, "grad-accum") == 0) opt->grad_accum_given = given[i];
        if (strcmp(SPECS[i].name, "resume") == 0) opt->resume = given[i];
        if (strcmp(SPECS[i].name, "memory-budget") == 0) opt->memory_budget_given = given[i];
        if (strcmp(SPECS[i].name, "host-budget") == 0) opt->host_budget_given = given[i];
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
                    "gpt2-large|gpt2-xl), got '%s'\n", opt->preset);
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
                                           "top-p", "num-samples", "stop-at-eot", "kv-cache"};
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
              "the optimizer state are not this project's)";
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

int train_options_count(void) { return NUM_SPECS; }
const char *train_options_name(int i) { return SPECS[i].name; }
int train_options_must_agree(int i)
{
    return !listed(SPECS[i].name, RANK_LOCAL, sizeof RANK_LOCAL / sizeof RANK_LOCAL[0]);
}

void train_options_format(const TrainOptions *opt, int i, char *out, size_t len)
{
    train_options_format_value(opt, i, out, len);
    size_t n_given = sizeof AGREE_GIVEN / sizeof AGREE_GIVEN[0];
    if (!opt->given[i] && listed(SPECS[i].name, AGREE_GIVEN, n_given)) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, " (default)");
    }
}

TrainOptionType train_options_type(int i)
{
    switch (SPECS[i].kind) {
    case K_INT: case K_LONG: case K_FLOAT: case K_U64: case K_BYTES: return TRAIN_OPT_NUMBER;
    case K_FLAG: return TRAIN_OPT_SWITCH;
    case K_OPTSTR: return TRAIN_OPT_OPTIONAL_TEXT;
    default: return SPECS[i].def ? TRAIN_OPT_TEXT : TRAIN_OPT_OPTIONAL_TEXT;
    }
}

int train_options_has_default(int i) { return SPECS[i].def != NULL; }

int train_options_index(const char *name)
{
    for (int i = 0; i < NUM_SPECS; i++)
        if (strcmp(SPECS[i].name, name) == 0) return i;
    return -1;
}

int train_options_set(TrainOptions *opt, int i, const char *value)
{
    if (set_value(opt, &SPECS[i], value) != 0) return 2;
    /* a value equal to the default counts as not given: a recorded
     * configuration lists every flag, and "given" matters to some */
    char mine[512], def[512] = "";
    TrainOptions d;
    memset(&d, 0, sizeof d);
    train_options_format_value(opt, i, mine, sizeof mine);
    if (SPECS[i].def && set_value(&d, &SPECS[i], SPECS[i].def) == 0)
        train_options_format_value(&d, i, def, sizeof def);
    opt->given[i] = !(SPECS[i].def && strcmp(mine, def) == 0);
    return 0;
}

void train_options_format_value(const TrainOptions *opt, int i, char *out, size_t len)
{
    const OptSpec *s = &SPECS[i];
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
