/* tests/fuzz/fuzz_common.h — libFuzzer helpers: the readers take paths, so each
 * input is written to an in-memory file (memfd) and read back through
 * /proc/self/fd/N, with no disk traffic per run. */
#ifndef FUZZ_FUZZ_COMMON_H
#define FUZZ_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Returns the memfd (close it after) and its path in `path`. */
static int fuzz_file(const uint8_t *data, size_t size, char *path, size_t len)
{
    int fd = memfd_create("fuzz_input", MFD_CLOEXEC);
    if (fd < 0) abort();
    for (size_t off = 0; off < size;) {
        ssize_t k = write(fd, data + off, size - off);
        if (k <= 0) abort();
        off += (size_t)k;
    }
    snprintf(path, len, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
