/* distributed/dist_watch.c — the collective watchdog (dist.h, "Timeouts").
 *
 * One thread per rank, started by dist_set_timeout. The main thread marks
 * each wait on the other ranks (an MPI collective, a device sync behind
 * NCCL work, communicator set-up) with dist_watch_begin/end; the thread
 * looks every 1/10 of the timeout (at most 1 s) and, when one wait has
 * lasted longer than the timeout, prints one line naming the wait and
 * ends the process with DIST_EXIT_TIMEOUT. It never calls MPI (the library
 * was initialised MPI_THREAD_FUNNELED): the launcher ends the other ranks
 * when one exits, and each of them has its own watchdog besides.
 *
 * During a wait it also asks the collective library's probe (NCCL's
 * asynchronous error: a peer gone, a network error) each tick. NCCL's
 * kernels spin for ever on a failed peer, so the host's wait would
 * otherwise last the whole timeout and end with a message that cannot
 * say why; on an error the thread prints NCCL's reason and ends the rank
 * with status 1 at once. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "dist_internal.h"

struct DistWatch {
    pthread_t thread;
    double timeout_s;
    int rank, world, depth; /* depth: nested begins, main thread only */
    _Atomic long long since_ms; /* start of the current wait; 0 = not waiting */
    _Atomic(const char *) what;
    /* stop, under stop_lock, wakes the thread out of its tick at once: a
     * plain sleep held every rank's exit (the join) up to a tick, 1 s,
     * measured 0.74 s of a 1.3 s two-rank test run */
    int stop;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond; /* on CLOCK_MONOTONIC */
    pthread_mutex_t probe_lock; /* held while the probe runs or changes */
    DistProbe probe;
    void *probe_ctx;
};

/* The probe's verdict, taken under its lock (the main thread may be
 * closing the communicator it asks); 1 with a message. */
static int ask_probe(DistWatch *w, char *msg, size_t len)
{
    pthread_mutex_lock(&w->probe_lock);
    int bad = w->probe && w->probe(w->probe_ctx, msg, len);
    pthread_mutex_unlock(&w->probe_lock);
    return bad;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + 1; /* never 0 */
}

static void *watch_main(void *arg)
{
    DistWatch *w = arg;
    long long tick = (long long)(w->timeout_s * 100); /* a tenth, in ms */
    if (tick > 1000) tick = 1000;
    if (tick < 10) tick = 10;
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += tick / 1000;
        until.tv_nsec += (tick % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&w->stop_lock);
        while (!w->stop &&
               pthread_cond_timedwait(&w->stop_cond, &w->stop_lock, &until) != ETIMEDOUT) {
        }
        int stop = w->stop;
        pthread_mutex_unlock(&w->stop_lock);
        if (stop) break;
        long long since = atomic_load(&w->since_ms);
        char why[512];
        if (since && ask_probe(w, why, sizeof why)) {
            fflush(stdout);
            fprintf(stderr, "error: rank %d of %d: %s while %s; ending this rank with status 1\n",
                    w->rank, w->world, why, atomic_load(&w->what));
            fflush(stderr);
            _exit(1);
        }
        if (!since || (now_ms() - since) / 1e3 <= w->timeout_s) continue;
        fflush(stdout);
        fprintf(stderr, "error: rank %d of %d: no progress for %.0f s while %s "
                "(--collective-timeout %g): another rank has stopped, crashed or fallen far "
                "behind; ending this rank with status %d\n", w->rank, w->world,
                (now_ms() - since) / 1e3, atomic_load(&w->what), w->timeout_s, DIST_EXIT_TIMEOUT);
        fflush(stderr);
        _exit(DIST_EXIT_TIMEOUT);
    }
    return NULL;
}

int dist_set_timeout(Dist *d, double seconds, char *err, size_t err_len)
{
    if (!d->mpi || seconds <= 0 || d->watch) return 0;
    DistWatch *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, err_len, "out of host memory for the collective watchdog");
        return -1;
    }
    w->timeout_s = seconds;
    w->rank = d->rank;
    w->world = d->world;
    atomic_init(&w->since_ms, 0);
    atomic_init(&w->what, "idle");
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->stop_cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w->stop_lock, NULL);
    pthread_mutex_init(&w->probe_lock, NULL);
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        pthread_mutex_destroy(&w->probe_lock);
        pthread_mutex_destroy(&w->stop_lock);
        pthread_cond_destroy(&w->stop_cond);
        free(w);
        snprintf(err, err_len, "cannot start the collective watchdog thread");
        return -1;
    }
    d->watch = w;
    return 0;
}

void dist_watch_begin(const Dist *d, const char *what)
{
    DistWatch *w = d->watch;
    if (!w || w->depth++ > 0) return;
    atomic_store(&w->what, what);
    atomic_store(&w->since_ms, now_ms());
}

void dist_watch_end(const Dist *d)
{
    DistWatch *w = d->watch;
    if (!w || --w->depth > 0) return;
    atomic_store(&w->since_ms, 0);
}

void dist_watch_probe(const Dist *d, DistProbe probe, void *ctx)
{
    DistWatch *w = d->watch;
    if (!w) return;
    pthread_mutex_lock(&w->probe_lock);
    w->probe = probe;
    w->probe_ctx = ctx;
    pthread_mutex_unlock(&w->probe_lock);
}

void dist_watch_stop(Dist *d)
{
    DistWatch *w = d->watch;
    if (!w) return;
    pthread_mutex_lock(&w->stop_lock);
    w->stop = 1;
    pthread_cond_signal(&w->stop_cond);
    pthread_mutex_unlock(&w->stop_lock);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->probe_lock);
    pthread_mutex_destroy(&w->stop_lock);
    pthread_cond_destroy(&w->stop_cond);
    free(w);
    d->watch = NULL;
}
