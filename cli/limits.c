/* cli/limits.c — see cli/limits.h. */
#include "cli/limits.h"

#include <dirent.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* Descriptors a run opens beyond those at start-up, at most at once: the
 * --log file, the current train shard, a val shard, and a save's
 * "<file>.tmp" with its step folder and the checkpoint folder, which are
 * opened to be fsync'd. Measured: a 3-step run with --checkpoint-dir and
 * --log failed its first save at ulimit -n 8 and trained at 10. */
enum { FILES_A_RUN_ADDS = 6 };

/* OpenBLAS (0.3.21, Haswell, OpenMP) maps a 128 MiB buffer per thread at
 * the first matmul a thread runs, and OpenMP an 8 MiB stack per thread
 * beyond the first: VmSize grew 136 MiB (139,268 KiB) in a first 256x256
 * sgemm at 2 threads, and a first sgemm on one thread blocks in that
 * 128 MiB map when it fails (seen under ulimit -v 380000). */
#define BLAS_BYTES_A_THREAD ((size_t)139268 << 10)

static long open_descriptors(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    long n = -1; /* the listing's own descriptor */
    while (readdir(d))
        n++;
    closedir(d);
    return n - 2; /* . and .. */
}

int limits_check_files(char *err, size_t len)
{
    struct rlimit r;
    long open = open_descriptors();
    if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY || open < 0) return 0;
    long need = open + FILES_A_RUN_ADDS;
    if ((long)r.rlim_cur >= need) return 0;
    snprintf(err, len, "the open-file limit (ulimit -n) is %ld; this run needs %ld (%ld open at "
             "start-up, and the log, the data and a save's file and folders): raise it with "
             "ulimit -n %ld", (long)r.rlim_cur, need, open, need);
    return -1;
}

static size_t vm_size(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmSize:", 7) == 0) kib = strtoull(line + 7, NULL, 10);
    if (f) fclose(f);
    return kib << 10;
}

int limits_check_address_space(int threads, char *err, size_t len)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return 0;
    int t = threads > 0 ? threads : omp_get_max_threads();
    size_t now = vm_size();
    if (now == 0) return 0;
    size_t need = now + (size_t)t * BLAS_BYTES_A_THREAD;
    if (need <= r.rlim_cur) return 0;
    snprintf(err, len, "the address-space limit (ulimit -v) is %zu KiB; the run needs more than "
             "%zu KiB before its arenas (%zu mapped now and OpenBLAS's %zu KiB for each of %d "
             "thread%s): raise it, or pass --threads 1", (size_t)r.rlim_cur >> 10,
             need >> 10, now >> 10, BLAS_BYTES_A_THREAD >> 10, t, t == 1 ? "" : "s");
    return -1;
}

int limits_check_plan(size_t bytes, size_t fixed, char *err, size_t len)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return 0;
    size_t now = vm_size();
    if (now == 0 || now + bytes <= r.rlim_cur) return 0;
    /* what can shrink the need: --recompute and --batch move only the
     * activations, so when the weights alone are over, say so */
    const char *hint = now + fixed > r.rlim_cur
        ? "the weights, their gradients and AdamW's state alone are over it, whatever "
          "--recompute and --batch: raise it, or a smaller model (--layers, --channels)"
        : "raise it, or --recompute 1 or a smaller --batch (--plan shows each mode's need)";
    snprintf(err, len, "the address-space limit (ulimit -v) is %zu KiB; this run's arenas and "
             "host copies need %zu KiB beyond the %zu KiB mapped now (the plan above), %zu KiB "
             "in all: %s", (size_t)r.rlim_cur >> 10, bytes >> 10, now >> 10,
             (now + bytes) >> 10, hint);
    return -1;
}
