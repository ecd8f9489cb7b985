/* cli/generate.h — text from the model: --sample-every during training and
 * --generate from a saved model.
 *
 * Owns: TextCodec, which turns ids into text for the model's vocabulary
 * (a BPE tokenizer: --tokenizer FILE or --encoding NAME, else GPT-2's when
 * V = 50257; raw bytes when V = 256, numbers otherwise) and checks that
 * tokenizer's identity against the model's (docs/tokenizer.md),
 * and TextSampler, the sampling flags put together: the prompt (--prompt
 * or --prompt-file, encoded once), the draw (--temperature, --top-k,
 * --top-p; model/sample.h), --num-samples, --stop-at-eot and the RNG
 * (seeded by --seed; a checkpoint saves and restores it). */
#ifndef CLI_GENERATE_H
#define CLI_GENERATE_H

#include <stdio.h>

#include "data/tokenizer.h"
#include "model/gpt.h"
#include "model/sample.h"
#include "cli/options.h"

/* CODEC_GPT2: a BPE tokenizer, GPT-2's or the one --tokenizer/--encoding
 * names (the name is historical). */
typedef enum { CODEC_GPT2, CODEC_BYTES, CODEC_IDS } CodecKind;

#define CODEC_MAX_STOPS 4

typedef struct {
    CodecKind kind;
    Tokenizer tk;                 /* CODEC_GPT2 only */
    int32_t start;                /* the token a sample without a prompt continues */
    int32_t stop[CODEC_MAX_STOPS]; /* --stop-at-eot's end tokens */
    int num_stops;
} TextCodec;

/* The codec's returns: 0; -1 (a file, memory); CODEC_REFUSED: the tokenizer
 * named is not the model's (a usage error: train_gpt exits 2). */
enum { CODEC_REFUSED = -2 };

/* Choose the codec for vocab_size. tokenizer_json / encoding: the flags
 * (NULL: not given; at most one). model_tok / data_tok: the identity the
 * model records and the one the training data's manifest records (0:
 * unknown). With a flag, the tokenizer's identity (data/dataset.h's
 * dataset_tokenizer_of) must equal each known one and its vocabulary fit
 * vocab_size; its special tokens written in a prompt are their ids. Without
 * one, GPT-2's (V = 50257) when the known identities are GPT-2's; for a
 * model or data of another recorded tokenizer, ids (CODEC_IDS) with a note
 * on stderr naming the flags. */
int codec_open(TextCodec *c, int vocab_size, const char *tokenizer_json, const char *encoding,
               uint64_t model_tok, uint64_t data_tok, char *err, size_t err_len);
void codec_close(TextCodec *c);

/* Encode len bytes of prompt text. CODEC_IDS takes space-separated ids (up
 * to the first NUL). `flag` names the source in messages. Returns 0, or -1
 * with a message (an id outside the vocabulary, say). */
int codec_encode(TextCodec *c, const char *text, size_t len, int vocab_size, const char *flag,
                 TokenIds *out, char *err, size_t err_len);

/* The context rule past the window (docs/sampling.md): the model sees
 * ctx[start..len), its first token at position 0. While len - start <= T
 * the start stays; once a token makes the context longer than T, it shifts
 * to keep the last T - T/2 tokens (half the window, rounded up), which the
 * model then sees at positions 0 .. from a fresh prefill. Returns the new
 * start (start on entry: the previous one; 0 at first). */
int sample_context_start(int start, int len, int T);

/* Generate up to n tokens after the prompt, printing each as it comes
 * (prompt first). The model sees the context sample_context_start keeps
 * (a prompt longer than T: its last T tokens, then the rule); only batch
 * row 0 is used, and only one position's logits are computed per token.
 * With stop_at_eot and a tokenizer codec, generation ends at one of its
 * end tokens (c->stop), which is not printed. work: vocab ints (top-k/top-p
 * scratch). ids, when non-NULL, receives the generated ids. kv_cache 1
 * decodes through a KV cache (gpt.h's GPTDecode) where the backend has the
 * op: the prompt, and the kept half after a shift, in one batched feed,
 * then a row a token; with 0 each token re-runs the forward over the
 * context. Both see the same tokens at the same positions. Returns how
 * many were generated, or -1 (out of host memory, message printed). When
 * the model's block hook abandons a forward (a signal), generation stops
 * there with g->abandoned set: the tokens so far are printed, with a
 * newline. */
int sample_generate(GPT *g, TextCodec *c, const int32_t *prompt, int nprompt, int n,
                    const SampleParams *p, int stop_at_eot, int kv_cache, SampleRng *rng,
                    int *work, FILE *out, int32_t *ids);

typedef struct {
    TextCodec codec;
    TokenIds prompt;
    SampleRng rng;
    SampleParams params;
    int num_samples, stop_at_eot, vocab_size;
    int kv_cache; /* --kv-cache: 1 = decode through gpt.h's GPTDecode */
    int *work; /* vocab_size ints */
} TextSampler;

/* Codec (codec_open with o's --tokenizer/--encoding and the identities),
 * prompt (--prompt, or --prompt-file read whole: a regular file of at most
 * 16 MiB), draw parameters, and the RNG seeded by --seed. Returns 0, or -1
 * or CODEC_REFUSED with a message naming the flag or file. */
int text_sampler_open(TextSampler *s, const TrainOptions *o, int vocab_size, uint64_t model_tok,
                      uint64_t data_tok, char *err, size_t err_len);
void text_sampler_close(TextSampler *s);

/* --num-samples samples of n tokens each. Before each sample a line
 * "<header>:" (with " k/N" after the header when N > 1); when header is
 * NULL, a line "sample k/N:" only when N > 1. */
void text_sampler_print(TextSampler *s, GPT *g, int n, const char *header, FILE *out);

#endif
