/* kernels/backend.c — see backend.h. */
#include "backend.h"

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
