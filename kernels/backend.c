/* kernels/backend.c — see backend.h. */
#include "backend.h"

#include <omp.h>
#include <stdio.h>
#include <string.h>

int backend_cuda_compiled(void)
{
#ifdef HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}

Backend *backend_open(const char *device, const char *dtype, int threads, char *err,
                      size_t err_len)
{
    int want_cuda = strcmp(device, "cuda") == 0;
    int want_auto = strcmp(device, "auto") == 0;
    if (!want_cuda && !want_auto && strcmp(device, "cpu") != 0) {
        snprintf(err, err_len, "--device: unknown device '%s' (accepted: auto, cpu, cuda)",
                 device);
        return NULL;
    }
#ifdef HAVE_CUDA
    if (want_cuda || want_auto) {
        if (cuda_device_count() > 0) return cuda_backend_open(dtype, err, err_len);
        if (want_cuda) {
            snprintf(err, err_len, "--device cuda: no CUDA device is visible");
            return NULL;
        }
        fprintf(stderr, "note: no CUDA device found; running on the cpu backend\n");
    }
#else
    if (want_cuda) {
        snprintf(err, err_len, "--device cuda: this binary was built without CUDA (nvcc was "
                               "not found at build time)");
        return NULL;
    }
#endif
    if (strcmp(dtype, "fp32") != 0 && strcmp(dtype, "auto") != 0) {
        snprintf(err, err_len, "--dtype %s: the cpu backend computes in fp32 only", dtype);
        return NULL;
    }
    return cpu_backend_open(threads, err, err_len);
}

void backend_close(Backend *be)
{
    if (!be) return;
#ifdef HAVE_CUDA
    if (strcmp(be->name, "cuda") == 0) {
        cuda_backend_close(be);
        return;
    }
#endif
    cpu_backend_close(be);
}

/* "model name : ..." from /proc/cpuinfo, or "unknown CPU". */
static void cpu_model(char *buf, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    snprintf(buf, len, "unknown CPU");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon) continue;
        colon += 1 + (colon[1] == ' ');
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(buf, len, "%s", colon);
        break;
    }
    if (f) fclose(f);
}

void backend_describe(const char *device, int threads, char *buf, size_t len)
{
#ifdef HAVE_CUDA
    if (strcmp(device, "cpu") != 0 && cuda_device_count() > 0) {
        char name[256];
        cuda_device_name(name, sizeof name);
        snprintf(buf, len, "cuda: %s", name);
        return;
    }
#endif
    char model[256];
    cpu_model(model, sizeof model);
    int n = threads > 0 ? threads : omp_get_max_threads();
    snprintf(buf, len, "cpu: %s, %d thread%s", model, n, n == 1 ? "" : "s");
}
