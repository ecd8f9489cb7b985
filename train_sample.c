/* train_sample.c — see train_sample.h. */
#include "train_sample.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int codec_open(TextCodec *c, int vocab_size, char *err, size_t err_len)
{
    memset(c, 0, sizeof *c);
    if (vocab_size == GPT2_VOCAB_SIZE) {
        char enc[4096], voc[4096], from[4400];
        if (tokenizer_find_files(enc, voc, sizeof enc, from, sizeof from, err, err_len) != 0)
            return -1;
        if (tokenizer_load(&c->tk, enc, voc, err, err_len) != 0) return -1;
        c->kind = CODEC_GPT2;
    } else {
        c->kind = vocab_size == 256 ? CODEC_BYTES : CODEC_IDS;
    }
    return 0;
}

void codec_close(TextCodec *c)
{
    if (c->kind == CODEC_GPT2) tokenizer_free(&c->tk);
}

static int push_id(TokenIds *out, int32_t id)
{
    if (out->len == out->cap) {
        size_t cap = out->cap ? 2 * out->cap : 64;
        int32_t *p = realloc(out->data, cap * sizeof *p);
        if (!p) return -1;
        out->data = p;
        out->cap = cap;
    }
    out->data[out->len++] = id;
    return 0;
}

int codec_encode(TextCodec *c, const char *text, int vocab_size, TokenIds *out, char *err,
                 size_t err_len)
{
    switch (c->kind) {
    case CODEC_GPT2:
        return tokenizer_encode(&c->tk, (const uint8_t *)text, strlen(text), out, err, err_len);
    case CODEC_BYTES:
        for (const unsigned char *p = (const unsigned char *)text; *p; p++)
            if (push_id(out, *p) != 0) goto oom;
        return 0;
    case CODEC_IDS:
        for (const char *p = text; *p;) {
            char *end;
            errno = 0;
            long v = strtol(p, &end, 10);
            if (end == p) {
                if (*p == ' ') {
                    p++;
                    continue;
                }
                snprintf(err, err_len, "--prompt: expected space-separated token ids for a "
                         "vocabulary of %d, got '%s'", vocab_size, text);
                return -1;
            }
            if (errno || v < 0 || v >= vocab_size) {
                snprintf(err, err_len, "--prompt: token id %ld outside the vocabulary (%d)", v,
                         vocab_size);
                return -1;
            }
            if (push_id(out, (int32_t)v) != 0) goto oom;
            p = end;
        }
        return 0;
    }
oom:
    snprintf(err, err_len, "--prompt: out of host memory");
    return -1;
}

static void print_token(TextCodec *c, int32_t id, FILE *out)
{
    if (c->kind == CODEC_GPT2) {
        size_t len;
        const uint8_t *b = tokenizer_token_bytes(&c->tk, id, &len);
        if (b) fwrite(b, 1, len, out);
    } else if (c->kind == CODEC_BYTES) {
        fputc(id, out);
    } else {
        fprintf(out, "%d ", id);
    }
}

int sample_generate(GPT *g, TextCodec *c, const int32_t *prompt, int nprompt, int n,
                    float temperature, SampleRng *rng, FILE *out)
{
    int T = g->T, N = g->B * g->T, V = g->cfg.vocab_size;
    int *inputs = calloc((size_t)N, sizeof(int));
    int *ctx = malloc(sizeof(int) * (size_t)(nprompt + n + 1));
    float *logits = malloc(sizeof(float) * (size_t)g->cfg.padded_vocab);
    if (!inputs || !ctx || !logits) {
        fprintf(stderr, "sample: out of host memory\n");
        free(inputs), free(ctx), free(logits);
        return 0;
    }
    int len = 0;
    for (int i = 0; i < nprompt; i++) ctx[len++] = prompt[i];
    for (int i = 0; i < nprompt; i++) print_token(c, prompt[i], out);
    for (int i = 0; i < n; i++) {
        /* the last min(len, T) tokens, left-aligned in row 0 */
        int start = len > T ? len - T : 0, used = len - start;
        for (int t = 0; t < used; t++) inputs[t] = ctx[start + t];
        gpt_logits_at(g, inputs, used - 1, logits);
        if (g->abandoned) break;
        int next = sample_token(logits, V, temperature, rng);
        ctx[len++] = next;
        print_token(c, next, out);
        fflush(out);
    }
    fputc('\n', out);
    free(inputs), free(ctx), free(logits);
    return g->abandoned;
}
