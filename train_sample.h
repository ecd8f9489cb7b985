/* train_sample.h — text from the model: --sample-every during training and
 * --generate from a saved model.
 *
 * Owns: TextCodec, which turns ids into text for the model's vocabulary:
 * GPT-2 BPE when V = 50257, raw bytes when V = 256, numbers otherwise. */
#ifndef TRAIN_SAMPLE_H
#define TRAIN_SAMPLE_H

#include <stdio.h>

#include "data/tokenizer.h"
#include "model/gpt.h"
#include "model/sample.h"

typedef enum { CODEC_GPT2, CODEC_BYTES, CODEC_IDS } CodecKind;

typedef struct {
    CodecKind kind;
    Tokenizer tk; /* CODEC_GPT2 only */
} TextCodec;

/* Choose the codec for vocab_size (loading the GPT-2 files when needed).
 * Returns 0, or -1 with a message in err. */
int codec_open(TextCodec *c, int vocab_size, char *err, size_t err_len);
void codec_close(TextCodec *c);

/* Encode a prompt. CODEC_IDS takes space-separated ids. Returns 0, or -1
 * with a message (an id outside the vocabulary, say). */
int codec_encode(TextCodec *c, const char *text, int vocab_size, TokenIds *out, char *err,
                 size_t err_len);

/* Generate n tokens after the prompt, printing each as it comes. The model
 * sees at most its T most recent tokens. Only batch row 0 is used, and only
 * one position's logits are computed per token. Returns 0, or 1 when the
 * model's block hook abandoned a forward (a signal): the tokens so far are
 * printed, with a newline. */
int sample_generate(GPT *g, TextCodec *c, const int32_t *prompt, int nprompt, int n,
                     float temperature, SampleRng *rng, FILE *out);

#endif
