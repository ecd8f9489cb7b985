/* base/procmem.c — see procmem.h. */
#include "procmem.h"

#include <stdio.h>
#include <string.h>

/* One "Key:   123 kB" line of /proc/self/status, in bytes. */
static size_t status_field(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kb = 0;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && line[n] == ':' &&
            sscanf(line + n + 1, "%llu", &kb) == 1)
            break;
    if (f) fclose(f);
    return (size_t)kb * 1024;
}

size_t procmem_rss(void) { return status_field("VmRSS"); }
size_t procmem_peak(void) { return status_field("VmHWM"); }
