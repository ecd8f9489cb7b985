/* data/loader_verify.c — a fresh run's check of its shards against their
 * dataset manifest, read in a background thread (data/loader.h), and the
 * shards a train and a val loader share. */
#include "loader.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/fileio.h"

/* One shard to read: its path and the hash its manifest lists. */
typedef struct {
    char *path;
    unsigned char listed[SHARD_SHA256_BYTES];
} Listed;

struct LoaderVerify {
    pthread_t thread;
    Listed *shards;
    int n;
    /* the thread's result, read after pthread_join */
    int rc, done;
    volatile sig_atomic_t cancel; /* an exit is waiting: stop after this shard */
    uint64_t bytes;
    double read_s;
    char err[4600];
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *verify_main(void *arg)
{
    LoaderVerify *v = arg;
    double t0 = now_s();
    for (int i = 0; i < v->n && v->rc == 0 && !v->cancel; i++) {
        unsigned char got[SHARD_SHA256_BYTES];
        uint64_t bytes = 0;
        if (shard_hash_file(v->shards[i].path, got, &bytes, v->err, sizeof v->err) != 0) {
            v->rc = -1;
            break;
        }
        v->bytes += bytes;
        v->done++;
        if (memcmp(got, v->shards[i].listed, sizeof got) != 0) {
            loader_describe_mismatch(v->shards[i].path, got, v->shards[i].listed, v->err,
                                     sizeof v->err);
            v->rc = -1;
        }
    }
    v->read_s = now_s() - t0;
    return NULL;
}

/* The check running now, if any. An error exit on the main thread (exit(),
 * with no loader_verify_finish) runs OpenSSL's atexit clean-up, which frees
 * the locks the hashing thread holds: the thread then faulted, and a clean
 * exit 1 became a SIGSEGV. This handler, registered after OpenSSL's, runs
 * before it: the thread stops after its current shard and is joined. */
static LoaderVerify *running;

static void verify_at_exit(void)
{
    LoaderVerify *v = running;
    if (!v) return;
    running = NULL;
    v->cancel = 1;
    pthread_join(v->thread, NULL);
}

static void verify_free(LoaderVerify *v)
{
    for (int i = 0; i < v->n; i++) free(v->shards[i].path);
    free(v->shards);
    free(v);
}

int loader_verify_start(LoaderVerify **out, const Loader *const *loaders, int n, char *err,
                        size_t err_len)
{
    *out = NULL;
    size_t count = 0;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < loaders[k]->num_shards; i++)
            count += loaders[k]->sha_from[i] == LOADER_SHA_MANIFEST;
    if (count == 0) return 0;
    LoaderVerify *v = calloc(1, sizeof *v);
    if (!v || !(v->shards = calloc(count, sizeof *v->shards))) {
        free(v);
        io_err(err, err_len, "out of host memory to check the shards against their manifest");
        return -1;
    }
    for (int k = 0; k < n; k++)
        for (int i = 0; i < loaders[k]->num_shards; i++) {
            if (loaders[k]->sha_from[i] != LOADER_SHA_MANIFEST) continue;
            Listed *s = &v->shards[v->n];
            if (!(s->path = strdup(loaders[k]->paths[i]))) {
                verify_free(v);
                io_err(err, err_len, "out of host memory to check the shards against their "
                       "manifest");
                return -1;
            }
            memcpy(s->listed, loaders[k]->sha[i], sizeof s->listed);
            v->n++;
        }
    /* the thread starts with every signal blocked, so the handlers run on
     * the caller's threads and interrupt their system calls as they expect */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&v->thread, NULL, verify_main, v);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        verify_free(v);
        io_err(err, err_len, "cannot start a thread to check the shards against their manifest: "
               "%s", strerror(rc));
        return -1;
    }
    static int registered;
    if (!registered) registered = atexit(verify_at_exit) == 0;
    running = v;
    *out = v;
    return 0;
}

int loader_verify_finish(LoaderVerify *v, LoaderVerifyStats *st, char *err, size_t err_len)
{
    if (st) memset(st, 0, sizeof *st);
    if (!v) return 0;
    double t0 = now_s();
    running = NULL;
    pthread_join(v->thread, NULL);
    if (st) {
        st->shards = v->done;
        st->bytes = v->bytes;
        st->read_s = v->read_s;
        st->wait_s = now_s() - t0;
    }
    int rc = v->rc;
    if (rc != 0) io_err(err, err_len, "%s", v->err);
    verify_free(v);
    return rc;
}

const char *loader_shared_shard(const Loader *train, const Loader *val)
{
    /* each file stat'ed once: a train glob may hold many shards */
    struct stat *ts = calloc((size_t)train->num_shards + 1, sizeof *ts);
    if (!ts) return NULL; /* a warning only: skipped when out of memory */
    char *ok = calloc((size_t)train->num_shards + 1, 1);
    for (int i = 0; ok && i < train->num_shards; i++) ok[i] = stat(train->paths[i], &ts[i]) == 0;
    const char *shared = NULL;
    for (int j = 0; ok && j < val->num_shards && !shared; j++) {
        struct stat vs;
        if (stat(val->paths[j], &vs) != 0) continue;
        for (int i = 0; i < train->num_shards && !shared; i++)
            if (ok[i] && ts[i].st_dev == vs.st_dev && ts[i].st_ino == vs.st_ino)
                shared = val->paths[j];
    }
    free(ok);
    free(ts);
    return shared;
}
