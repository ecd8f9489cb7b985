/* cli/generate.c — see cli/generate.h. */
#include "cli/generate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"

#define PROMPT_FILE_MAX_BYTES ((off_t)16 << 20)

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

/* Space-separated ids, up to len bytes or the first NUL. */
static int encode_ids(const char *text, size_t len, int vocab_size, const char *flag,
                      TokenIds *out, char *err, size_t err_len)
{
    char *copy = strndup(text, len);
    if (!copy) goto oom;
    for (const char *p = copy; *p;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p) {
            if (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') {
                p++;
                continue;
            }
            snprintf(err, err_len, "%s: expected space-separated token ids for a vocabulary of "
                     "%d, got '%.200s'", flag, vocab_size, copy);
            free(copy);
            return -1;
        }
        if (errno || v < 0 || v >= vocab_size) {
            snprintf(err, err_len, "%s: token id %ld outside the vocabulary (%d)", flag, v,
                     vocab_size);
            free(copy);
            return -1;
        }
        if (push_id(out, (int32_t)v) != 0) goto oom;
        p = end;
    }
    free(copy);
    return 0;
oom:
    free(copy);
    snprintf(err, err_len, "%s: out of host memory", flag);
    return -1;
}

int codec_encode(TextCodec *c, const char *text, size_t len, int vocab_size, const char *flag,
                 TokenIds *out, char *err, size_t err_len)
{
    switch (c->kind) {
    case CODEC_GPT2: {
        char why[512];
        if (tokenizer_encode(&c->tk, (const uint8_t *)text, len, out, why, sizeof why) == 0)
            return 0;
        snprintf(err, err_len, "%s: %s", flag, why);
        return -1;
    }
    case CODEC_BYTES:
        for (size_t i = 0; i < len; i++)
            if (push_id(out, (unsigned char)text[i]) != 0) {
                snprintf(err, err_len, "%s: out of host memory", flag);
                return -1;
            }
        return 0;
    case CODEC_IDS:
        return encode_ids(text, len, vocab_size, flag, out, err, err_len);
    }
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

int sample_context_start(int start, int len, int T)
{
    if (len - start <= T) return start;
    return len - (T - T / 2); /* keep the last half, rounded up (T = 1 keeps 1) */
}

/* The logits after the context ctx[start..len) (len - start <= T), its
 * first token at position 0. Cached: the tokens the cache has not seen, in
 * one batched feed, heads only for the last; *cache_start is the start the
 * cache was filled from, and a context that moved (a shift) is
 * re-prefilled from position 0. Uncached: the full forward over the
 * context, left-aligned in row 0 (the rest of the row is causally unseen). */
static void next_logits(GPT *g, GPTDecode *d, int cached, int *cache_start, const int *ctx,
                        int start, int len, int *inputs, float *logits)
{
    int used = len - start;
    if (cached) {
        if (*cache_start != start) {
            gpt_decode_reset(d);
            *cache_start = start;
        }
        gpt_decode_feed(g, d, ctx + start + d->len, used - d->len, logits);
        return;
    }
    memcpy(inputs, ctx + start, sizeof *inputs * (size_t)used);
    memset(inputs + used, 0, sizeof *inputs * (size_t)(g->T - used));
    gpt_logits_at(g, inputs, used - 1, logits);
}

int sample_generate(GPT *g, TextCodec *c, const int32_t *prompt, int nprompt, int n,
                    const SampleParams *p, int stop_at_eot, int kv_cache, SampleRng *rng,
                    int *work, FILE *out, int32_t *ids)
{
    int N = g->B * g->T, V = g->cfg.vocab_size;
    int *inputs = calloc((size_t)N, sizeof(int));
    int *ctx = malloc(sizeof(int) * (size_t)(nprompt + n + 1));
    float *logits = malloc(sizeof(float) * (size_t)g->cfg.padded_vocab);
    GPTDecode d = {0};
    char err[256];
    int cached = kv_cache && gpt_decode_supported(g);
    if (!inputs || !ctx || !logits)
        snprintf(err, sizeof err, "out of host memory");
    else if (!cached || gpt_decode_open(g, &d, err, sizeof err) == 0)
        err[0] = 0;
    if (err[0]) {
        fprintf(stderr, "sample: %s\n", err);
        free(inputs), free(ctx), free(logits);
        return -1;
    }
    int len = 0, made = 0, start = nprompt > g->T ? nprompt - g->T : 0, cache_start = start;
    int eot = stop_at_eot && c->kind == CODEC_GPT2 ? GPT2_EOT : -1;
    for (int i = 0; i < nprompt; i++) ctx[len++] = prompt[i];
    for (int i = 0; i < nprompt; i++) print_token(c, prompt[i], out);
    for (; made < n; made++) {
        start = sample_context_start(start, len, g->T);
        next_logits(g, &d, cached, &cache_start, ctx, start, len, inputs, logits);
        if (g->abandoned) break; /* a signal: the block hook gave up the forward */
        int next = sample_draw(logits, V, p, rng, work);
        if (next == eot) break;
        if (ids) ids[made] = next;
        ctx[len++] = next;
        print_token(c, next, out);
        fflush(out);
    }
    fputc('\n', out);
    if (cached) gpt_decode_close(g, &d);
    free(inputs), free(ctx), free(logits);
    return made;
}

/* --prompt-file: the whole file, at most 16 MiB. */
static int read_prompt_file(const char *path, char **text, size_t *len, char *err,
                            size_t err_len)
{
    char why[1024];
    off_t size;
    int fd = io_open_regular(path, &size, why, sizeof why);
    if (fd < 0) {
        snprintf(err, err_len, "--prompt-file %s", why);
        return -1;
    }
    int rc = -1;
    *text = NULL;
    if (size > PROMPT_FILE_MAX_BYTES) {
        snprintf(err, err_len, "--prompt-file %s: %lld bytes; a prompt may have at most 16 MiB "
                 "(the model sees only its last --seq-len tokens)", path, (long long)size);
    } else if (!(*text = malloc((size_t)size + 1))) {
        snprintf(err, err_len, "--prompt-file %s: out of host memory", path);
    } else if (io_pread_exact(fd, *text, (size_t)size, 0, path, why, sizeof why) != 0) {
        snprintf(err, err_len, "--prompt-file %s", why);
    } else {
        (*text)[size] = 0;
        *len = (size_t)size;
        rc = 0;
    }
    close(fd);
    if (rc) free(*text), *text = NULL;
    return rc;
}

int text_sampler_open(TextSampler *s, const TrainOptions *o, int vocab_size, char *err,
                      size_t err_len)
{
    memset(s, 0, sizeof *s);
    s->params = (SampleParams){o->temperature, o->top_k, o->top_p};
    s->num_samples = o->num_samples;
    s->stop_at_eot = o->stop_at_eot;
    s->kv_cache = o->kv_cache;
    s->vocab_size = vocab_size;
    sample_seed(&s->rng, o->seed);
    if (!(s->work = malloc((size_t)vocab_size * sizeof *s->work))) {
        snprintf(err, err_len, "sampling: out of host memory");
        return -1;
    }
    if (codec_open(&s->codec, vocab_size, err, err_len) != 0) return -1;
    if (o->prompt_file) {
        char *text;
        size_t len;
        if (read_prompt_file(o->prompt_file, &text, &len, err, err_len) != 0) return -1;
        char flag[4200];
        snprintf(flag, sizeof flag, "--prompt-file %s", o->prompt_file);
        int rc = codec_encode(&s->codec, text, len, vocab_size, flag, &s->prompt, err, err_len);
        free(text);
        return rc;
    }
    if (!o->prompt) return 0;
    return codec_encode(&s->codec, o->prompt, strlen(o->prompt), vocab_size, "--prompt",
                        &s->prompt, err, err_len);
}

void text_sampler_close(TextSampler *s)
{
    codec_close(&s->codec);
    free(s->prompt.data);
    free(s->work);
    memset(s, 0, sizeof *s);
}

void text_sampler_print(TextSampler *s, GPT *g, int n, const char *header, FILE *out)
{
    /* The tokens samples continue: the prompt's last T tokens, or one start
     * token (end-of-text for GPT-2, a newline for bytes, id 0 otherwise). */
    int32_t start = s->codec.kind == CODEC_GPT2    ? GPT2_EOT
                    : s->codec.kind == CODEC_BYTES ? '\n'
                                                   : 0;
    const int32_t *p = &start;
    int np = 1;
    if (s->prompt.len > 0) {
        np = (int)s->prompt.len < g->T ? (int)s->prompt.len : g->T;
        p = s->prompt.data + s->prompt.len - np;
    }
    for (int k = 1; k <= s->num_samples; k++) {
        if (s->num_samples > 1) fprintf(out, "%s %d/%d:\n", header ? header : "sample", k,
                                        s->num_samples);
        else if (header) fprintf(out, "%s:\n", header);
        sample_generate(g, &s->codec, p, np, n, &s->params, s->stop_at_eot, s->kv_cache,
                        &s->rng, s->work, out, NULL);
    }
}
