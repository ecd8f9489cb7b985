/* tests/lib/token_reference.c — see token_reference.h. */
#include "tests/lib/token_reference.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "model/opcost_file.h"
#include "tests/lib/test_util.h"

#define SCRIPT "dev/reference/tokenizer_ids.js"
#define MAX_TEXTS 16

static void cache_dir(char *buf, size_t len)
{
    const char *own = getenv("TRAIN_GPT_REFERENCE_CACHE");
    char base[PATH_MAX];
    if (own && *own) {
        snprintf(buf, len, "%s", own);
    } else if (opcost_cache_dir(base, sizeof base) == 0) {
        cr_assert((size_t)snprintf(buf, len, "%s/reference_ids", base) < len, "%s: too long", base);
    } else { /* no cache folder can be named: this process's own */
        char *d = tu_tempdir();
        snprintf(buf, len, "%s", d);
        free(d);
    }
}

/* The npm folder tokenizer_ids.js reads (its npmDir()), .package-lock.json. */
static void npm_lock_path(char *buf, size_t len)
{
    const char *own = getenv("TRAIN_GPT_NPM_DIR"), *xdg = getenv("XDG_DATA_HOME");
    const char *home = getenv("HOME");
    if (own && *own) snprintf(buf, len, "%s/node_modules/.package-lock.json", own);
    else if (xdg && xdg[0] == '/')
        snprintf(buf, len, "%s/train_gpt/npm/node_modules/.package-lock.json", xdg);
    else snprintf(buf, len, "%s/.local/share/train_gpt/npm/node_modules/.package-lock.json",
                  home ? home : "");
}

/* "path size mtime" of the first executable node on PATH ("" when none). */
static void node_identity(char *buf, size_t len)
{
    const char *path = getenv("PATH");
    buf[0] = 0;
    for (const char *p = path ? path : ""; *p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        char cand[PATH_MAX], real[PATH_MAX];
        struct stat st;
        snprintf(cand, sizeof cand, "%.*s/node", (int)n, n ? p : ".");
        if (access(cand, X_OK) == 0 && realpath(cand, real) && stat(real, &st) == 0) {
            snprintf(buf, len, "%s %lld %lld.%09ld", real, (long long)st.st_size,
                     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
            return;
        }
        p += n + (colon != NULL);
    }
}

static void hash_part(EVP_MD_CTX *ctx, const void *bytes, size_t n)
{
    uint64_t len = n; /* length first: no two part lists hash alike */
    cr_assert(EVP_DigestUpdate(ctx, &len, sizeof len) == 1 &&
              (n == 0 || EVP_DigestUpdate(ctx, bytes, n) == 1));
}

/* The inputs' part of every key (script, packages, node). */
typedef struct {
    char *script, *lock;
    size_t script_len, lock_len;
    char node[PATH_MAX + 64];
} Identity;

static void key_of(const Identity *id, const char *which, int allow, const char *text,
                   size_t len, char hex[65])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    cr_assert(ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1);
    const char tag[] = "token_reference 1";
    hash_part(ctx, tag, sizeof tag - 1);
    hash_part(ctx, which, strlen(which));
    hash_part(ctx, allow ? "1" : "0", 1);
    hash_part(ctx, id->script, id->script_len);
    hash_part(ctx, id->lock ? id->lock : "", id->lock ? id->lock_len : 0);
    hash_part(ctx, id->node, strlen(id->node));
    hash_part(ctx, text, len);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    cr_assert(EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen == 32);
    EVP_MD_CTX_free(ctx);
    for (unsigned i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

/* Ids from "a b c" up to the end of the line; returns where parsing stopped. */
static const char *parse_ids(const char *p, TokenIds *ids)
{
    char *end;
    while (*p == ' ') p++;
    while (*p && *p != '\n') {
        long v = strtol(p, &end, 10);
        if (end == p) break;
        if (ids->len == ids->cap) {
            ids->cap = ids->cap ? 2 * ids->cap : 1024;
            ids->data = realloc(ids->data, ids->cap * sizeof *ids->data);
            cr_assert_not_null(ids->data);
        }
        ids->data[ids->len++] = (int32_t)v;
        for (p = end; *p == ' ';) p++;
    }
    return p;
}

/* The cached ids at path: 1 and *ids filled, or 0 (none, or not whole). */
static int read_cached(const char *path, const char *which, int allow, TokenIds *ids)
{
    char *b = tu_read_file(path, NULL), name[64];
    int a = -1;
    long n = -1;
    if (!b) return 0;
    TokenIds got = {0};
    const char *nl = strchr(b, '\n');
    int ok = nl && sscanf(b, "token_reference %63s %d %ld", name, &a, &n) == 3 &&
             strcmp(name, which) == 0 && a == allow;
    if (ok) {
        const char *end = parse_ids(nl + 1, &got);
        ok = *end == '\n' && end[1] == 0 && (long)got.len == n;
    }
    free(b);
    if (!ok) {
        free(got.data);
        return 0;
    }
    *ids = got;
    return 1;
}

/* One node start for texts[i] of every i with need[i]; each line stored. */
static void compute(const char *dir, const char *which, const RefText *texts, int n,
                    char (*file)[PATH_MAX], const int *need)
{
    size_t cap = 256;
    for (int i = 0; i < n; i++) cap += (texts[i].path ? strlen(texts[i].path) : 0) + PATH_MAX;
    char *cmd = malloc(cap), *tmp = tu_tempdir(), *out = NULL, *errs = NULL;
    cr_assert_not_null(cmd);
    size_t k = (size_t)snprintf(cmd, cap, "node " SCRIPT " %s", which);
    for (int i = 0; i < n; i++) {
        if (!need[i]) continue;
        char name[32];
        const char *p = texts[i].path;
        if (!p) {
            snprintf(name, sizeof name, "text%d.txt", i);
            p = tu_path(tmp, name);
            tu_write_file(p, texts[i].bytes, texts[i].len);
        }
        k += (size_t)snprintf(cmd + k, cap - k, " %s '%s'",
                              texts[i].allow_special ? "--allow-special" : "--plain", p);
    }
    int rc = tu_run_output(cmd, &out, &errs);
    cr_assert_eq(rc, 0, "%s failed (%d): %.500s", cmd, rc, errs ? errs : "");
    const char *line = out ? out : "";
    for (int i = 0; i < n; i++) {
        if (!need[i]) continue;
        TokenIds ids = {0};
        const char *end = parse_ids(line, &ids);
        cr_assert(*end == '\n', "%s: output line for text %d: %.80s", cmd, i, end);
        char head[128], err[512];
        int h = snprintf(head, sizeof head, "token_reference %s %d %zu\n", which,
                         texts[i].allow_special, ids.len);
        size_t body_len = (size_t)(end + 1 - line);
        cr_assert_eq(io_write_file(file[i], head, (size_t)h, line, body_len, err, sizeof err), 0,
                     "%s (the reference cache %s)", err, dir);
        free(ids.data);
        line = end + 1;
    }
    free(out);
    free(errs);
    free(cmd);
    tu_remove_tree(tmp);
}

TokenIds token_reference(const char *which, const RefText *texts, int n, int k)
{
    cr_assert(n > 0 && n <= MAX_TEXTS && k >= 0 && k < n);
    char dir[PATH_MAX], lock[PATH_MAX], err[512];
    char file[MAX_TEXTS][PATH_MAX]; /* 64 KiB of stack */
    cache_dir(dir, sizeof dir);
    if (io_mkdirs(dir, err, sizeof err)) { /* unwritable: this process's own */
        char *d = tu_tempdir();
        snprintf(dir, sizeof dir, "%s", d);
        free(d);
    }
    Identity id = {0};
    id.script = tu_read_file(SCRIPT, &id.script_len);
    cr_assert_not_null(id.script, "%s: cannot read (run the suite from the repository root)",
                       SCRIPT);
    char lock_path[PATH_MAX];
    npm_lock_path(lock_path, sizeof lock_path);
    id.lock = tu_read_file(lock_path, &id.lock_len);
    node_identity(id.node, sizeof id.node);
    for (int i = 0; i < n; i++) {
        size_t len = texts[i].len;
        char *own = texts[i].path ? tu_read_file(texts[i].path, &len) : NULL, hex[65];
        cr_assert(own || !texts[i].path, "%s: cannot read", texts[i].path);
        key_of(&id, which, texts[i].allow_special, own ? own : texts[i].bytes, len, hex);
        cr_assert((size_t)snprintf(file[i], sizeof file[i], "%s/%s-%s.ids", dir, which, hex) <
                      sizeof file[i], "%s: too long", dir);
        free(own);
    }
    free(id.script);
    free(id.lock);

    TokenIds ids = {0};
    if (read_cached(file[k], which, texts[k].allow_special, &ids)) return ids;
    cr_assert((size_t)snprintf(lock, sizeof lock, "%s/%s.lock", dir, which) < sizeof lock,
              "%s: too long", dir);
    int fd = open(lock, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0, "%s: cannot open", lock);
    cr_assert_eq(flock(fd, LOCK_EX), 0, "%s: cannot lock", lock);
    int need[MAX_TEXTS], any = 0;
    for (int i = 0; i < n; i++) {
        TokenIds t = {0};
        need[i] = !read_cached(file[i], which, texts[i].allow_special, &t);
        any |= need[i];
        free(t.data);
    }
    if (any) compute(dir, which, texts, n, file, need);
    close(fd); /* releases the lock */
    cr_assert(read_cached(file[k], which, texts[k].allow_special, &ids),
              "%s: not a whole reference file after computing it", file[k]);
    return ids;
}
