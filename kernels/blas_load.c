/* kernels/blas_load.c — see kernels/blas_load.h. Runs before the C
 * library's stdio is safe to rely on and before OpenBLAS exists: only
 * system calls and snprintf into a stack buffer. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "kernels/blas_load.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

/* VmSize from /proc/self/status, KiB; 0 when unreadable. */
static unsigned long vm_size_kib(void)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    const char *v = strstr(buf, "VmSize:");
    return v ? strtoul(v + 7, NULL, 10) : 0;
}

/* The threads OpenBLAS's constructor maps a buffer for: OpenMP's default
 * (the first number of OMP_NUM_THREADS, else the CPUs this process may
 * run on), at most those CPUs and OpenBLAS's 64. Measured: under
 * ulimit -v 250000 the constructor blocks at its second buffer with
 * OMP_NUM_THREADS=2 and starts with 1; OPENBLAS_NUM_THREADS=1 does not
 * change it in this OpenMP build. */
static size_t blas_load_threads(char **envp)
{
    cpu_set_t set;
    long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    const char *env = NULL; /* from envp: the C library's environ is not set up yet */
    for (char **e = envp; e && *e; e++)
        if (strncmp(*e, "OMP_NUM_THREADS=", 16) == 0) env = *e + 16;
    long n = env ? strtol(env, NULL, 10) : cpus;
    if (n < 1) n = cpus;
    if (n > cpus) n = cpus;
    return (size_t)(n < 64 ? n : 64);
}

void blas_load_check(int argc, char **argv, char **envp)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return;
    size_t threads = blas_load_threads(envp);
    size_t want = threads * BLAS_LOAD_BUFFER_BYTES + BLAS_LOAD_SLACK_BYTES;
    void *p = mmap(NULL, want, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
        munmap(p, want);
        return;
    }
    const char *prog = argc > 0 && argv[0] ? argv[0] : "train_gpt";
    const char *slash = strrchr(prog, '/');
    unsigned long mapped = vm_size_kib();
    char line[512];
    int len = snprintf(line, sizeof line,
                       "error: the address-space limit (ulimit -v) is %lu KiB; OpenBLAS maps "
                       "%lu KiB of buffers as %s loads, and %lu KiB are mapped already: raise the "
                       "limit above %lu KiB%s\n",
                       (unsigned long)(r.rlim_cur >> 10), (unsigned long)(want >> 10),
                       slash ? slash + 1 : prog, mapped, mapped + (unsigned long)(want >> 10),
                       threads > 1 ? ", or set OMP_NUM_THREADS=1 (one buffer)" : "");
    if (len > 0) {
        size_t n = (size_t)len < sizeof line ? (size_t)len : sizeof line - 1;
        ssize_t w = write(STDERR_FILENO, line, n);
        (void)w;
    }
    _exit(1);
}
