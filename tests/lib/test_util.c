/* tests/lib/test_util.c — see test_util.h. */
#include "tests/lib/test_util.h"

#include "base/rng.h"

#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <criterion/redirect.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
        /* norm weights near 1: the LayerNorms' and RMSNorms', and the Llama
         * family's q_norm and k_norm (config.h) */
        int is_ln_weight = t == 2 || t == 8 || t == 14 ||
                           (cfg->arch == ARCH_LLAMA && (t == 3 || t == 9));
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

size_t tu_attn_scratch(const GPTConfig *cfg, int threads)
{
    Backend *be = tu_cpu(); /* first: opening it sets the thread count */
    if (threads <= 0) {
        const char *env = getenv("OMP_NUM_THREADS");
        threads = env && atoi(env) > 0 ? atoi(env) : omp_get_num_procs();
    }
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    size_t bytes = gpt_attn_scratch_bytes(be, cfg);
    omp_set_num_threads(saved);
    cpu_backend_close(be);
    return bytes;
}

/* The suite's one temp root. PRE_ALL runs in Criterion's runner before any
 * test process is started, so every test inherits TMPDIR pointing into it:
 * tu_tempdir's folders, the programs the tests run, mpirun's session files
 * all land there, and POST_ALL removes the whole root, whatever the tests
 * left (a failed assert, a crash, a timeout). TRAIN_GPT_TEST_KEEP=1 keeps
 * it for a post-mortem and prints where it is. */
static char suite_root[PATH_MAX];

static int keep_files(void);

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    const char *base = getenv("TMPDIR");
    snprintf(suite_root, sizeof suite_root, "%s/train_gpt_tests.XXXXXX",
             base && *base ? base : "/tmp");
    if (!mkdtemp(suite_root)) {
        fprintf(stderr, "tests: cannot create a temp folder %s: TMPDIR must be writable\n",
                suite_root);
        exit(1);
    }
    setenv("TMPDIR", suite_root, 1);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    if (!suite_root[0]) return;
    if (keep_files()) {
        fprintf(stderr, "tests: kept the suite's temp folder %s (TRAIN_GPT_TEST_KEEP)\n",
                suite_root);
        return;
    }
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", suite_root);
    if (tu_run(cmd) != 0) fprintf(stderr, "tests: could not remove %s\n", suite_root);
}

const char *tu_tmp(void)
{
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

/* Folders this test process made: removed when it exits (a test that
 * fails an assert exits too; POST_ALL catches the rest). */
#define TU_MAX_DIRS 64
static char *made[TU_MAX_DIRS];
static int n_made;

static int keep_files(void)
{
    const char *keep = getenv("TRAIN_GPT_TEST_KEEP");
    return keep && *keep && strcmp(keep, "0") != 0;
}

static void remove_made(void)
{
    for (int i = 0; i < n_made && !keep_files(); i++) {
        char cmd[PATH_MAX + 32];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", made[i]);
        (void)tu_run(cmd);
        free(made[i]);
    }
    n_made = 0;
}

char *tu_tempdir(void)
{
    char *d = malloc(PATH_MAX);
    cr_assert_not_null(d);
    snprintf(d, PATH_MAX, "%s/train_gpt_test_XXXXXX", tu_tmp());
    cr_assert_not_null(mkdtemp(d), "mkdtemp %s failed", d);
    if (n_made == 0) atexit(remove_made);
    if (n_made < TU_MAX_DIRS) made[n_made++] = strdup(d);
    return d;
}

const char *tu_path(const char *dir, const char *name)
{
    static char buf[8][4200];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
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

int tu_run_output(const char *cmd, char **out, char **err)
{
    char *d = tu_tempdir(), po[PATH_MAX + 16], pe[PATH_MAX + 16];
    snprintf(po, sizeof po, "%s/stdout.txt", d);
    snprintf(pe, sizeof pe, "%s/stderr.txt", d);
    const char *to_out = out ? po : "/dev/null", *to_err = err ? pe : "/dev/null";
    size_t n = strlen(cmd) + 2 * sizeof po + 32;
    char *sh = malloc(n);
    cr_assert_not_null(sh);
    /* a subshell, so that a cmd of several commands (cd ... && ...) is
     * redirected whole */
    if (out && out == err)
        snprintf(sh, n, "( %s ) > '%s' 2>&1", cmd, po);
    else
        snprintf(sh, n, "( %s ) > '%s' 2> '%s'", cmd, to_out, to_err);
    int rc = tu_run(sh);
    free(sh);
    if (out) *out = tu_read_file(po, NULL);
    if (err && err != out) *err = tu_read_file(pe, NULL);
    tu_remove_tree(d);
    return rc;
}

int tu_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
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

void tu_write_file(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    if (n) cr_assert_eq(fwrite(bytes, 1, n, f), n, "short write to %s", path);
    cr_assert_eq(fclose(f), 0, "cannot write %s", path);
}

void tu_write_text(const char *path, const char *text)
{
    tu_write_file(path, text, strlen(text));
}

char *tu_captured_stderr(void)
{
    fflush(stderr);
    FILE *f = cr_get_redirected_stderr();
    fclose(stderr); /* the end of what is captured: the read below sees EOF */
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    for (size_t k; (k = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += k;
        if (n + 1 == cap) {
            buf = realloc(buf, cap *= 2);
            cr_assert_not_null(buf);
        }
    }
    buf[n] = 0;
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
