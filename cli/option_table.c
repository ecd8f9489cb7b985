/* cli/option_table.c — see cli/option_table.h. */
#include "cli/option_table.h"

#include "cli/options.h"

#define O(f) offsetof(TrainOptions, f)
const OptSpec option_table[] = {
    {"model", K_STR, O(preset), NULL, 0, 0, NULL, "Shape",
     "GPT-2 preset d12|d24|d36|d48 (124M/350M/774M/1558M), or by Hugging Face's names "
     "gpt2|gpt2-medium|gpt2-large|gpt2-xl; Llama preset llama-60m (C 384, 12 layers, 6 heads, "
     "2 KV heads, FFN 1024) or llama-125m (C 768, 12 layers, 12 heads, 4 KV heads, FFN 2048); "
     "published Llama-family shapes qwen2.5-0.5b (C 896, 24 layers, 14 heads, 2 KV heads, FFN "
     "4864, qkv bias, tied, theta 1e6, eps 1e-6, vocab 151936) or llama-3.2-1b (C 2048, 16 "
     "layers, 32 heads, 8 KV heads, FFN 8192, tied, theta 500000, --rope-scaling 32, eps 1e-5, "
     "vocab 128256), qwen3-0.6b (C 1024, 28 layers, 16 heads, 8 KV heads, head-dim 128, FFN "
     "3072, qk-norm, tied, theta 1e6, eps 1e-6, vocab 151936) or qwen3-4b (C 2560, 36 layers, "
     "32 heads, 8 KV heads, head-dim 128, FFN 9728, the same rest); shape flags given too win"},
    {"arch", K_CHOICE, O(arch), "gpt2", 0, 0, "gpt2|llama", "Shape",
     "the block: gpt2 (LayerNorm, GELU MLP, learned positions, tied head) or llama (RMSNorm, "
     "SwiGLU MLP, RoPE, grouped-query attention, untied head by default)"},
    {"kv-heads", K_INT, O(kv_heads), "0", 0, 65536, NULL, "Shape",
     "--arch llama: key/value heads NKV, dividing --heads (0 = heads)"},
    {"ffn", K_INT, O(ffn), "0", 0, 1048576, NULL, "Shape",
     "--arch llama: the MLP's hidden width F (0 = 8/3 x channels rounded up to a multiple of "
     "256; gpt2's is 4 x channels)"},
    {"rope-theta", K_FLOAT, O(rope_theta), "10000", 1, 1e12, NULL, "Shape",
     "--arch llama: RoPE's base theta"},
    {"qkv-bias", K_FLAG, O(qkv_bias), NULL, 0, 0, NULL, "Shape",
     "--arch llama: biases on the q, k and v projections (Qwen2)"},
    {"qk-norm", K_FLAG, O(qk_norm), NULL, 0, 0, NULL, "Shape",
     "--arch llama: RMSNorm over each q and k head's features, with weights of its own, "
     "before RoPE (Qwen3)"},
    {"head-dim", K_INT, O(head_dim), "0", 0, 1024, NULL, "Shape",
     "--arch llama: each attention head's width D (0 = channels / heads); q projects C to "
     "heads x D, k and v to kv-heads x D, the output projection back to C (Qwen3: 128)"},
    {"norm-eps", K_FLOAT, O(norm_eps), "1e-5", 1e-12, 0.5, NULL, "Shape",
     "--arch llama: the RMSNorms' epsilon"},
    {"rope-scaling", K_FLOAT, O(rope_factor), "0", 0, 1e6, NULL, "Shape",
     "--arch llama: Llama 3's RoPE frequency scaling by this factor (Llama 3.1: 8, 3.2: 32; "
     "0 = none): low frequencies divided by it, high ones kept, a smooth blend between"},
    {"rope-low-freq-factor", K_FLOAT, O(rope_low_freq), "1", 1e-6, 1e6, NULL, "Shape",
     "--rope-scaling: wavelengths above original-max-pos / this are scaled fully"},
    {"rope-high-freq-factor", K_FLOAT, O(rope_high_freq), "4", 1e-6, 1e6, NULL, "Shape",
     "--rope-scaling: wavelengths below original-max-pos / this are kept (above low's)"},
    {"rope-original-max-pos", K_INT, O(rope_original_max_pos), "8192", 1, 1 << 24, NULL,
     "Shape", "--rope-scaling: the positions the model was first trained at"},
    {"lm-head", K_CHOICE, O(lm_head), "auto", 0, 0, "auto|tied|untied", "Shape",
     "--arch llama: the output head tied to the token embedding or a tensor of its own (auto = "
     "untied; gpt2's is tied)"},
    {"layers", K_INT, O(layers), "12", 1, 4096, NULL, "Shape", "transformer blocks L"},
    {"channels", K_INT, O(channels), "768", 1, 65536, NULL, "Shape", "embedding width C"},
    {"heads", K_INT, O(heads), "12", 1, 65536, NULL, "Shape", "attention heads NH (divides C)"},
    {"seq-len", K_INT, O(seq_len), "1024", 1, 1048576, NULL, "Shape",
     "sequence length T (not given: a shorter --init-from model's own maximum)"},
    {"max-seq-len", K_INT, O(max_seq_len), "0", 0, 1048576, NULL, "Shape",
     "rows of the position embedding (0 = seq-len)"},
    {"vocab", K_INT, O(vocab), "50257", 2, 1048576, NULL, "Shape",
     "vocabulary V (padded to a multiple of 128; above 65536 ids, uint32 shards)"},
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
    {"plan-device", K_STR, O(plan_device), NULL, 0, 0, NULL, "Recompute",
     "h100|h200|a100-80g: --plan for that GPU without one at hand (its memory and peak "
     "printed; its memory less a run's 512 MiB margin is the default budget; bf16 unless "
     "--dtype fp32). Without it, --plan in a CUDA build that sees no GPU, or with --dtype "
     "bf16 in a build without CUDA, plans for a CUDA device (an H100 unless --memory-budget) "
     "[default: the device this binary would run on]"},
    {"op-costs", K_STR, O(op_costs), "auto", 0, 0, NULL, "Recompute",
     "what auto and --plan predict time with: measure = time one block's ops now (and cache "
     "them); flops = counted FLOPs, no time (auto then minimises recomputed FLOPs with full "
     "and selective tapes); FILE = costs written by a run (the cache's format); auto = the "
     "cached costs for this device and shape, measured first when absent (--recompute auto; "
     "else used only when cached)"},
    {"loss-chunk", K_INT, O(loss_chunk), "0", 0, 1 << 30, NULL, "Recompute",
     "tokens per loss-head chunk (0 = planner's choice)"},
    {"zero", K_CHOICE, O(zero), "0", 0, 0, "0|1|2|3", "Data parallel",
     "1 = ZeRO-1: shard AdamW m, v (and master weights) over the ranks; 2 = ZeRO-2: and the "
     "gradients, reduce-scattered block by block during backward (each rank keeps its shard); "
     "3 = ZeRO-3: and the parameters, all-gathered block by block before use (GPT-2 on the cpu "
     "backend so far; --plan prints each rank's shard, gather buffers and communication)"},
    {"zero-prefetch", K_CHOICE, O(zero_prefetch), "on", 0, 0, "off|on", "Data parallel",
     "--zero 3: start gathering the next block's parameters while a block runs (on), or "
     "gather them at the same point and wait for them there (off: to measure what the "
     "overlap saves; the summary prints the time spent waiting for gathers either way); the "
     "same bits either way"},
    {"world-size", K_INT, O(world_size), "0", 0, 1 << 20, NULL, "Data parallel",
     "with --plan: plan one rank of a job of this many ranks (--zero shards by it) without "
     "starting them (0 = the ranks this process was launched with)"},
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
     "text the samples continue (default: the tokenizer's document token: GPT-2's end-of-text)"},
    {"prompt-file", K_STR, O(prompt_file), NULL, 0, 0, NULL, "Text",
     "read the prompt from file S, all of it (at most 16 MiB; not with --prompt)"},
    {"tokenizer", K_STR, O(tokenizer_json), NULL, 0, 0, NULL, "Text",
     "encode prompts and decode samples with this Hugging Face tokenizer.json (byte-level BPE, "
     "e.g. Llama 3's; as ./tokenize's, special tokens in a prompt are their ids); its identity "
     "must be the model's (docs/tokenizer.md). Default: GPT-2's"},
    {"encoding", K_STR, O(encoding), NULL, 0, 0, NULL, "Text",
     "the same with a tiktoken encoding cl100k_base|o200k_base (not with --tokenizer)"},
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
     "1 = a sample ends at the tokenizer's end token (GPT-2: <|endoftext|>; others: its "
     "document token and <|end_of_text|>, <|endoftext|>, <|eot_id|>), which is not printed"},
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

const int option_table_len = (int)(sizeof option_table / sizeof option_table[0]);
_Static_assert(sizeof option_table / sizeof option_table[0] <= TRAIN_OPTIONS_MAX,
               "raise TRAIN_OPTIONS_MAX");
