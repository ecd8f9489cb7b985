/* kernels/device_info.c — see device_info.h. */
#include "device_info.h"

#include <stdio.h>
#include <string.h>

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* openblas_get_config(): OpenBLAS's version and build, e.g.
 * "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64". */
char *openblas_get_config(void);

void device_name(const Backend *be, char *out, size_t len)
{
    snprintf(out, len, "%s", be->name);
#ifdef HAVE_CUDA
    if (strcmp(be->name, "cuda") == 0) {
        int dev = 0;
        struct cudaDeviceProp p;
        if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&p, dev) == cudaSuccess)
            snprintf(out, len, "%s", p.name);
        else
            (void)cudaGetLastError();
        return;
    }
#endif
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon) continue;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        colon[strcspn(colon, "\n")] = 0;
        snprintf(out, len, "%s", colon);
        break;
    }
    fclose(f);
}

/* Dense (no sparsity) tensor-core bf16 and CUDA-core fp32 peaks, TFLOP/s,
 * from NVIDIA's data sheets (SXM boards unless the name says otherwise).
 * Matched by substring in order, so the more specific names come first. */
static const struct {
    const char *match, *label;
    double bf16, fp32;
} PEAKS[] = {
    {"H200", "H200 (SXM)", 989.4, 66.9},
    {"H100 PCIe", "H100 PCIe", 756.5, 51.2},
    {"H100 NVL", "H100 NVL", 835.5, 60.0},
    {"H100", "H100 SXM", 989.4, 66.9},
    {"A100", "A100", 312.0, 19.5},
    {"L40S", "L40S", 362.1, 91.6},
};

double device_peak_flops(const char *name, int bf16, const char **row)
{
    for (size_t i = 0; i < sizeof PEAKS / sizeof PEAKS[0]; i++)
        if (strstr(name, PEAKS[i].match)) {
            if (row) *row = PEAKS[i].label;
            return 1e12 * (bf16 ? PEAKS[i].bf16 : PEAKS[i].fp32);
        }
    if (row) *row = NULL;
    return 0.0;
}

/* The GPUs worth planning a run for from a laptop or a login node; their
 * peaks are PEAKS' rows (the SXM boards). */
static const PlanDevice PLAN_DEVICES[] = {
    {"h100", "H100", (size_t)80 << 30},
    {"h200", "H200", (size_t)141 << 30},
    {"a100-80g", "A100", (size_t)80 << 30},
};

const PlanDevice *device_plan_find(const char *flag)
{
    for (size_t i = 0; i < sizeof PLAN_DEVICES / sizeof PLAN_DEVICES[0]; i++)
        if (strcmp(flag, PLAN_DEVICES[i].flag) == 0) return &PLAN_DEVICES[i];
    return NULL;
}

const char *device_plan_names(void) { return "h100|h200|a100-80g"; }

/* Why the build has no CUDA backend, from the Makefile's NVCC choice: nvcc
 * not found, or NVCC= given (a CPU-only build asked for). */
#ifndef TRAIN_GPT_NO_CUDA_WHY
#define TRAIN_GPT_NO_CUDA_WHY "built without nvcc"
#endif

void device_build_info(char *out, size_t len)
{
    const char *blas = openblas_get_config();
    int n = snprintf(out, len, "backends: cpu (fp32; %s)", blas ? blas : "OpenBLAS");
#ifdef HAVE_CUDA
    int drv = 0;
    if (cudaDriverGetVersion(&drv) != cudaSuccess) {
        drv = 0;
        (void)cudaGetLastError();
    }
    char driver[64] = "no CUDA driver found";
    if (drv > 0)
        snprintf(driver, sizeof driver, "driver supports CUDA %d.%d", drv / 1000, drv % 1000 / 10);
    if (n >= 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, ", cuda (bf16 and fp32; built with CUDA runtime %d.%d, "
                 "cuBLASLt, NCCL; %s)", CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, driver);
#else
    if (n >= 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, "; cuda not built (%s)", TRAIN_GPT_NO_CUDA_WHY);
#endif
}
