/* cli/options.h — the command line of ./train_gpt.
 *
 * Owns: TrainOptions, its defaults, getopt_long parsing and --help. Every
 * flag is listed once, in the table in cli/option_table.c, with its default
 * and help text; --help prints that table. A bad flag or value prints one
 * line naming the flag and the accepted values and exits with status 2. */
#ifndef CLI_OPTIONS_H
#define CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "ckpt/session.h"

/* Room for every flag of the table in cli/option_table.c (checked in cli/options.c). */
#define TRAIN_OPTIONS_MAX 128

typedef struct {
    /* shape (fresh models; a model file's header wins) */
    const char *preset;
    int layers, channels, heads, seq_len, max_seq_len, vocab;
    int arch;          /* --arch: ARCH_* (model/config.h) */
    int kv_heads, ffn; /* --kv-heads, --ffn: 0 = the family's default */
    float rope_theta;  /* --rope-theta */
    int lm_head;       /* --lm-head: 0 auto (gpt2 tied, llama untied), 1 tied, 2 untied */
    int qkv_bias, qk_norm; /* --qkv-bias, --qk-norm */
    int head_dim;      /* --head-dim: 0 = channels / heads */
    float norm_eps;    /* --norm-eps */
    /* --rope-scaling (0 = none) and its three */
    float rope_factor, rope_low_freq, rope_high_freq;
    int rope_original_max_pos;
    /* batch and length */
    int batch, grad_accum, steps;
    long total_batch;  /* tokens per optimizer step over all ranks; 0 = B*T*grad_accum*world */
    int grad_accum_given;
    /* optimizer */
    float lr, lr_min_frac, beta1, beta2, eps, weight_decay, grad_clip;
    int lr_schedule, warmup; /* LrKind */
    /* recompute and memory */
    int recompute, loss_chunk; /* recompute: RecomputeMode (model/schedule.h) */
    int checkpoint_every;      /* --recompute 2's k; 0 = round(sqrt(L)) */
    size_t memory_budget;      /* bytes; see memory_budget_given */
    int memory_budget_given, plan;
    const char *plan_device;   /* --plan-device: a GPU to plan for (kernels/device_info.h) */
    const char *offload_list;  /* --offload as given */
    int offload;               /* its OFFLOAD_* bits (model/planner.h) */
    size_t host_budget;        /* --host-budget bytes; see host_budget_given */
    int host_budget_given;
    const char *op_costs;      /* --op-costs: "auto", "measure", "flops" or a file */
    /* data parallelism */
    int zero;          /* 1: ZeRO-1, 2: ZeRO-2, 3: ZeRO-3 */
    int zero_prefetch; /* --zero-prefetch: 1 on (default), 0 off */
    int world_size;    /* --plan for this many ranks (0: the launcher's) */
    float collective_timeout; /* seconds; 0 = none (distributed/dist.h) */
    /* data */
    const char *train_data, *val_data;
    int train_data_given, val_data_given;
    int shuffle, val_every, val_batches;
    uint64_t seed;
    /* model files */
    const char *init_from, *save;
    int save_dtype;    /* 0 = fp32 (llm.c version 3), 1 = bf16 (version 5) */
    /* checkpoints and failures (ckpt/session.h) */
    const char *checkpoint_dir, *resume_path;
    int save_every, keep, resume, max_bad_steps, overwrite_checkpoints;
    float save_minutes; /* --checkpoint-dir saves also by wall-clock time; 0 = off */
    /* llm.c's checkpoints (interop/llmc_ckpt.h) */
    const char *llmc_save_dir, *llmc_resume;
    /* other */
    const char *log_path, *device, *dtype, *dump_grads;
    const char *config_path; /* --config: read first (cli/run_record.h) */
    int log_errors; /* 0 fail, 1 ignore */
    int overwrite_outputs; /* cli/outputs.h */
    int threads, profile_ops;
    float peak_tflops; /* 0 = the device table's (kernels/device_info.h) */
    /* text samples */
    int sample_every, sample_tokens, generate;
    float temperature, top_p;
    int top_k, num_samples, stop_at_eot, kv_cache;
    const char *prompt, *prompt_file;
    const char *tokenizer_json, *encoding; /* --tokenizer, --encoding (cli/generate.h) */
    /* multiple-choice evaluation (eval/score.h) */
    const char *eval_file;
    int eval_every;
    /* which flags the command line gave (not defaults), by table index;
     * ask with train_options_given() */
    unsigned char given[TRAIN_OPTIONS_MAX];
} TrainOptions;

/* Parse argv into opt (defaults first). Returns 0 to run, 1 when -h/--help
 * or --version was printed (exit 0), or 2 after printing a one-line error
 * (exit 2). */
int train_options_parse(TrainOptions *opt, int argc, char **argv);

/* 1 when the command line gave --name (without the dashes), else 0; a
 * name that is not a flag is a programming error (aborts). */
int train_options_given(const TrainOptions *opt, const char *name);

/* The part of the flags that ckpt/ (checkpoints, resume) needs to know;
 * its strings point into opt's (argv). */
RunConfig train_options_run_config(const TrainOptions *opt);

/* The flags one by one (for comparing them over ranks, cli/guard.c):
 * how many there are; the i-th's name; whether it must be the same on
 * every rank; its value as text, with " (default)" when the flag was not
 * given and whether it was given matters. */
int train_options_count(void);
const char *train_options_name(int i);
int train_options_must_agree(int i);
void train_options_format(const TrainOptions *opt, int i, char *out, size_t len);
/* The value alone (no " (default)"): what --config reads back. */
void train_options_format_value(const TrainOptions *opt, int i, char *out, size_t len);

/* For recording and reading a configuration (cli/run_record.h): the i-th
 * flag's value type; whether it has a default; the index of a flag name
 * (-1: none); set the i-th flag from text as the command line would,
 * marking it given unless the value is the default (0, or 2 after the
 * flag's one-line error, without its newline's prefix). */
typedef enum {
    TRAIN_OPT_NUMBER,        /* integers, reals, byte counts */
    TRAIN_OPT_TEXT,          /* a string or a choice, always set */
    TRAIN_OPT_OPTIONAL_TEXT, /* a string that may be unset (NULL); --resume[=DIR] */
    TRAIN_OPT_SWITCH         /* a flag without a value */
} TrainOptionType;
TrainOptionType train_options_type(int i);
int train_options_has_default(int i);
int train_options_index(const char *name);
int train_options_set(TrainOptions *opt, int i, const char *value);

/* Puts "FLAG: " before err, a message about that flag's file ("x.bin:
 * cannot open: ..."), so that it names both; the message's end is cut to
 * fit len, never the flag. */
void train_options_name_flag(const char *flag, char *err, size_t len);

#endif
