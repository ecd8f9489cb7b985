/* kernels/blas_load.h — OpenBLAS's buffer at load time, under ulimit -v.
 *
 * Owns: the check that train_gpt can start under the process's
 * address-space limit. OpenBLAS (0.3.21, OpenMP build) maps a 128 MiB
 * buffer for each OpenMP thread in its library constructor, before main,
 * and retries a failed map forever: with 2 threads and about 52 MiB of
 * libraries mapped, any `ulimit -v` below about 322,000 KiB hung the
 * program before main could check anything, even for --help. The ELF
 * loader runs a program's .preinit_array before any library's
 * constructor (libgomp's and OpenBLAS's included), so a function there
 * can try the same map first, and stop with one line and exit 1. */
#ifndef KERNELS_BLAS_LOAD_H
#define KERNELS_BLAS_LOAD_H

/* OpenBLAS's buffer in Debian's 0.3.21 (its BUFFER_SIZE, measured: the
 * constructor's blocked mmap asks for 134,217,728 bytes), and room for
 * the small maps it makes beside it. */
#define BLAS_LOAD_BUFFER_BYTES ((unsigned long)128 << 20)
#define BLAS_LOAD_SLACK_BYTES ((unsigned long)8 << 20)

/* Under a limit only: tries a PROT_NONE map of the constructor's buffers
 * (one per OpenMP thread) and the slack, counted against RLIMIT_AS like
 * any other map, and unmaps it; when that fails, writes
 * "error: the address-space limit (ulimit -v) is N KiB; ..." to
 * stderr and exits 1. Does nothing without a limit. */
void blas_load_check(int argc, char **argv, char **envp);

/* Placed once in each program's root .c: runs blas_load_check before any
 * library's constructor. Left out under ASan, whose runtime starts in the
 * same array and owns the address space. */
#if defined(__SANITIZE_ADDRESS__)
#define BLAS_LOAD_CHECK_FIRST
#else
#define BLAS_LOAD_CHECK_FIRST                                                                   \
    __attribute__((section(".preinit_array"), used)) static void (*const blas_load_check_first)( \
        int, char **, char **) = blas_load_check
#endif

#endif
