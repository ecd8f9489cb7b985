/* dev/bench/bench_tokenizer_family.c — encoding speed of GPT-2's tokenizer
 * and the others, side by side (dev/bench/bench_tokenizer_family.sh builds
 * and runs it).
 *
 *   bench_tokenizer_family TEXT ROUNDS NAME...     NAME: gpt2, llama3 (its
 *   tokenizer.json found as data/source.h says), cl100k_base, o200k_base
 *
 * Each round runs every NAME once, in turn (alternating, so that a slower
 * stretch of a shared machine hits all alike): load the tokenizer (not
 * timed), encode the whole TEXT once (timed: a cold piece cache, as
 * ./tokenize meets a new file; thread CPU time), free. Prints each run, then per NAME the
 * median seconds, tokens and tokens/s.
 * Built with -DBENCH_GPT2_ONLY it knows gpt2 only, and so also builds
 * against an older commit's tokenizer (the script's baseline). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/fileio.h"
#include "data/source.h"
#include "data/tokenizer.h"

/* CPU seconds of this thread: on a shared, overloaded machine the wall
 * clock also counts the time spent waiting for a core. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int open_named(Tokenizer *tk, const char *name, char *err, size_t err_len)
{
    if (strcmp(name, "gpt2") == 0) return tokenizer_load_or_find(tk, NULL, NULL, 1, err, err_len);
#ifdef BENCH_GPT2_ONLY
    snprintf(err, err_len, "only gpt2 in this build");
    return -1;
#else
    if (strcmp(name, "llama3") == 0) {
        char paths[SOURCE_MAX_FILES][SOURCE_PATH_MAX], from[SOURCE_PATH_MAX + 200];
        if (source_find(&SOURCE_LLAMA3, NULL, paths, from, sizeof from, err, err_len)) return -1;
        return tokenizer_load_hf(tk, paths[0], 0, err, err_len);
    }
    return tokenizer_load_tiktoken(tk, name, NULL, 0, 1, err, err_len);
#endif
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s TEXT ROUNDS NAME...\n", argv[0]);
        return 2;
    }
    char *text, err[8192];
    size_t len;
    if (io_read_whole(argv[1], 0, (size_t)1 << 31, "a text", &text, &len, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int rounds = atoi(argv[2]), n = argc - 3;
    double *t = calloc((size_t)(rounds * n), sizeof *t);
    size_t *tokens = calloc((size_t)n, sizeof *tokens);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < n; k++) {
            Tokenizer tk;
            if (open_named(&tk, argv[3 + k], err, sizeof err)) {
                fprintf(stderr, "%s: %s\n", argv[3 + k], err);
                return 1;
            }
            TokenIds ids = {0};
            double a = now_s();
            if (tokenizer_encode(&tk, (const uint8_t *)text, len, &ids, err, sizeof err)) {
                fprintf(stderr, "%s: %s\n", argv[3 + k], err);
                return 1;
            }
            t[k * rounds + r] = now_s() - a;
            tokens[k] = ids.len;
            printf("round %d %-12s %.4f s\n", r, argv[3 + k], t[k * rounds + r]);
            free(ids.data);
            tokenizer_free(&tk);
        }
    printf("%-12s %10s %10s %12s %8s\n", "tokenizer", "median s", "tokens", "Mtokens/s", "MB/s");
    for (int k = 0; k < n; k++) {
        qsort(t + k * rounds, (size_t)rounds, sizeof *t, cmp);
        double m = rounds % 2 ? t[k * rounds + rounds / 2]
                              : 0.5 * (t[k * rounds + rounds / 2 - 1] + t[k * rounds + rounds / 2]);
        printf("%-12s %10.4f %10zu %12.3f %8.1f\n", argv[3 + k], m, tokens[k], tokens[k] / m / 1e6,
               len / m / 1e6);
    }
    free(t);
    free(tokens);
    free(text);
    return 0;
}
