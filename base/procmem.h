/* base/procmem.h — what the kernel says this process holds in memory.
 *
 * Owns: reading /proc/self/status for the resident set (VmRSS) and its
 * high-water mark (VmHWM), the figures a cgroup's or a scheduler's memory
 * limit is held against. --memory-budget counts the process's resident
 * bytes at start-up (the program, its libraries, the CUDA runtime's mapped
 * pages) as the plan's baseline row, and the end-of-run report compares
 * VmHWM with the plan's total. */
#ifndef BASE_PROCMEM_H
#define BASE_PROCMEM_H

#include <stddef.h>

/* VmRSS / VmHWM in bytes; 0 where /proc/self/status is not readable (not
 * Linux, or /proc not mounted). */
size_t procmem_rss(void);
size_t procmem_peak(void);

#endif
