/* tests/test_util.c — see test_util.h. */
#include "test_util.h"

#include "base/rng.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

GPTConfig tu_tiny_config(void)
{
    GPTConfig c = {.max_seq_len = 8, .vocab_size = 64, .padded_vocab = 128, .num_layers = 2,
                   .num_heads = 4, .channels = 32};
    return c;
}

void tu_random_tokens(int *tok, size_t n, int V, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) tok[i] = (int)(rng_next(&seed) % (uint64_t)V);
}

float *tu_random_params(const GPTConfig *cfg, uint64_t seed)
{
    size_t sz[NUM_PARAM_TENSORS], n = config_num_params(cfg);
    config_param_sizes(cfg, sz);
    float *p = malloc(n * sizeof(float));
    cr_assert_not_null(p);
    size_t off = 0;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        int is_ln_weight = t == 2 || t == 8 || t == 14;
        for (size_t i = 0; i < sz[t]; i++) {
            /* sum of 4 uniforms: roughly normal, std 0.1 */
            double u = 0;
            for (int k = 0; k < 4; k++) u += (rng_next(&seed) >> 11) * (1.0 / 9007199254740992.0) - 0.5;
            p[off + i] = (float)((is_ln_weight ? 1.0 : 0.0) + u * 0.1 * 1.7320508);
        }
        if (t == 0)
            memset(p + (size_t)cfg->vocab_size * cfg->channels, 0,
                   sizeof(float) * (size_t)(cfg->padded_vocab - cfg->vocab_size) * cfg->channels);
        off += sz[t];
    }
    return p;
}

Backend *tu_cpu(void)
{
    char err[256];
    Backend *be = cpu_backend_open(2, err, sizeof err);
    cr_assert_not_null(be, "%s", err);
    return be;
}

char *tu_tempdir(void)
{
    char *d = strdup("/tmp/train_gpt_test_XXXXXX");
    cr_assert_not_null(mkdtemp(d));
    return d;
}

void tu_remove_tree(char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    tu_run(cmd);
    free(dir);
}

int tu_run(const char *cmd)
{
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        if (len) *len = (size_t)n;
    }
    return buf;
}

const char *tu_source_path(const SourceSpec *spec, int i)
{
    static char found[2][SOURCE_MAX_FILES][SOURCE_PATH_MAX];
    int k = spec == &SOURCE_GPT2 ? 0 : 1;
    if (!found[k][i][0]) {
        char from[SOURCE_PATH_MAX + 200], err[8192];
        cr_assert_eq(source_find(spec, NULL, found[k], from, sizeof from, err, sizeof err), 0,
                     "%s", err);
    }
    return found[k][i];
}
