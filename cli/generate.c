/* cli/generate.c — see cli/generate.h. */
#include "cli/generate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "data/dataset.h"

#define PROMPT_FILE_MAX_BYTES ((off_t)16 << 20)

/* The id of the token whose bytes are name, the highest (special tokens
 * come last); -1 when none. */
static int32_t token_named(const Tokenizer *tk, const char *name)
{
    size_t n = strlen(name);
    for (int32_t id = tk->vocab_size - 1; id >= 0; id--) {
        size_t len;
        const uint8_t *b = tokenizer_token_bytes(tk, id, &len);
        if (b && len == n && memcmp(b, name, n) == 0) return id;
    }
    return -1;
}

/* A tokenizer's end tokens: the one ./tokenize puts between documents
 * (GPT-2 and tiktoken: <|endoftext|>; Llama 3: <|begin_of_text|>, which
 * starts the next document, so a model trained on such shards emits it where
 * a text ends), and the end tokens a published model emits: <|end_of_text|>
 * and <|eot_id|> (Llama 3's end of a document and of a chat turn). */
static void find_stops(TextCodec *c)
{
    static const char *const names[] = {"<|endoftext|>", "<|end_of_text|>", "<|eot_id|>"};
    c->num_stops = 0;
    if (c->tk.doc_id >= 0) c->stop[c->num_stops++] = c->tk.doc_id;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int32_t id = token_named(&c->tk, names[i]);
        int dup = id < 0;
        for (int k = 0; k < c->num_stops && !dup; k++) dup = c->stop[k] == id;
        if (!dup && c->num_stops < CODEC_MAX_STOPS) c->stop[c->num_stops++] = id;
    }
    c->start = c->tk.doc_id >= 0 ? c->tk.doc_id : c->num_stops ? c->stop[0] : 0;
}

/* The identity the tokenizer given by flag ("--tokenizer FILE" or
 * "--encoding NAME") must have: err names the known one it is not. */
static int check_identity(const DatasetTokenizer *t, const char *flag, uint64_t model_tok,
                          uint64_t data_tok, char *err, size_t err_len)
{
    uint64_t want = model_tok && model_tok != t->id ? model_tok
                    : data_tok && data_tok != t->id ? data_tok
                                                    : 0;
    if (!want) return 0;
    char desc[512];
    dataset_tokenizer_describe(t, desc, sizeof desc);
    const char *whose = want == model_tok ? "the model records" : "--train-data's manifest records";
    snprintf(err, err_len, "%s: tokenizer %s is not the one %s (id %016llx): give that "
             "tokenizer's --tokenizer FILE or --encoding NAME", flag, desc, whose,
             (unsigned long long)want);
    return CODEC_REFUSED;
}

int codec_open(TextCodec *c, int vocab_size, const char *tokenizer_json, const char *encoding,
               uint64_t model_tok, uint64_t data_tok, char *err, size_t err_len)
{
    memset(c, 0, sizeof *c);
    TokenizerChoice tc = {.hf_json = tokenizer_json, .encoding = encoding, .allow_special = 1,
                          .quiet = 1};
    DatasetTokenizer ident;
    char flag[4200] = "";
    if (tokenizer_json || encoding)
        snprintf(flag, sizeof flag, "%s %s", tokenizer_json ? "--tokenizer" : "--encoding",
                 tokenizer_json ? tokenizer_json : encoding);
    else {
        /* a model or data of a recorded tokenizer other than GPT-2's, none
         * named: ids in and out (its file may not be at hand), with a note */
        Tokenizer none = {.vocab_size = vocab_size};
        if (dataset_tokenizer_of(&ident, &none, &tc, err, err_len) != 0) return -1;
        uint64_t other = model_tok && model_tok != ident.id ? model_tok
                         : data_tok && data_tok != ident.id ? data_tok
                                                            : 0;
        if (other) {
            fprintf(stderr, "note: the %s tokenizer %016llx, not GPT-2's: samples are printed "
                    "as token ids and --prompt is read as ids; give its --tokenizer FILE or "
                    "--encoding NAME for text\n",
                    other == model_tok ? "model records" : "--train-data's manifest records",
                    (unsigned long long)other);
            c->kind = CODEC_IDS;
            return 0;
        }
        if (vocab_size != GPT2_VOCAB_SIZE) {
            c->kind = vocab_size == 256 ? CODEC_BYTES : CODEC_IDS;
            c->start = vocab_size == 256 ? '\n' : 0;
            return 0;
        }
    }
    if (flag[0]) {
        char why[4400];
        if (tokenizer_open(&c->tk, &tc, why, sizeof why) != 0) {
            snprintf(err, err_len, "%s: %s", flag, why);
            return -1;
        }
    } else {
        char enc[4096], voc[4096], from[4400];
        if (tokenizer_find_files(enc, voc, sizeof enc, from, sizeof from, err, err_len) != 0)
            return -1;
        if (tokenizer_load(&c->tk, enc, voc, err, err_len) != 0) return -1;
    }
    c->kind = CODEC_GPT2;
    int rc = dataset_tokenizer_of(&ident, &c->tk, &tc, err, err_len);
    if (rc == 0) rc = check_identity(&ident, flag, model_tok, data_tok, err, err_len);
    if (rc == 0 && c->tk.vocab_size > vocab_size) {
        snprintf(err, err_len, "%s: tokenizer %s has %d tokens, more than the model's vocabulary "
                 "(%d)", flag[0] ? flag : "--tokenizer", c->tk.name, c->tk.vocab_size,
                 vocab_size);
        rc = CODEC_REFUSED;
    }
    if (rc != 0) {
        tokenizer_free(&c->tk);
        c->kind = CODEC_IDS;
        return rc;
    }
    find_stops(c);
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
    for (int i = 0; i < nprompt; i++) ctx[len++] = prompt[i];
    for (int i = 0; i < nprompt; i++) print_token(c, prompt[i], out);
    for (; made < n; made++) {
        start = sample_context_start(start, len, g->T);
        next_logits(g, &d, cached, &cache_start, ctx, start, len, inputs, logits);
        if (g->abandoned) break; /* a signal: the block hook gave up the forward */
        int next = sample_draw(logits, V, p, rng, work);
        int stop = 0;
        for (int k = 0; stop_at_eot && c->kind == CODEC_GPT2 && k < c->num_stops; k++)
            stop |= next == c->stop[k];
        if (stop) break;
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

int text_sampler_open(TextSampler *s, const TrainOptions *o, int vocab_size, uint64_t model_tok,
                      uint64_t data_tok, char *err, size_t err_len)
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
    int rc = codec_open(&s->codec, vocab_size, o->tokenizer_json, o->encoding, model_tok, data_tok,
                        err, err_len);
    if (rc != 0) return rc;
    if (o->prompt_file) {
        char *text;
        size_t len;
        if (read_prompt_file(o->prompt_file, &text, &len, err, err_len) != 0) return -1;
        char flag[4200];
        snprintf(flag, sizeof flag, "--prompt-file %s", o->prompt_file);
        rc = codec_encode(&s->codec, text, len, vocab_size, flag, &s->prompt, err, err_len);
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
     * token (the tokenizer's document token: GPT-2's end-of-text; a newline
     * for bytes, id 0 otherwise). */
    int32_t start = s->codec.start;
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
