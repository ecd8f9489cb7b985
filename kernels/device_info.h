/* kernels/device_info.h — what the trainer says about the hardware it runs
 * on and the binary it runs.
 *
 * Owns: the device's name, the table of known dense matmul peaks (for MFU:
 * achieved model FLOP/s over the device's peak) and the build description
 * --version prints (backends compiled in, their library versions). */
#ifndef KERNELS_DEVICE_INFO_H
#define KERNELS_DEVICE_INFO_H

#include <stddef.h>

#include "ops.h"

/* The device be computes on: the GPU's name (cudaGetDeviceProperties) for
 * cuda, the CPU's model name (/proc/cpuinfo) for cpu. */
void device_name(const Backend *be, char *out, size_t len);

/* The dense peak, in FLOP/s, of the named device for matmuls in bf16
 * (bf16 = 1, fp32 accumulate) or plain fp32 (bf16 = 0: CUDA cores, no
 * TF32, which is what the cuda backend's fp32 path uses). From a table of
 * data-sheet figures matched by name (kernels/device_info.c); 0 when the
 * device is not in the table (every CPU). `row` (may be NULL) receives the
 * table row's label. */
double device_peak_flops(const char *name, int bf16, const char **row);

/* A GPU that --plan can plan for without one at hand (--plan-device):
 * its flag name, the PEAKS row it matches, and its memory as the data
 * sheet gives it (NVIDIA's "80GB" taken as GiB, bytes here; the card
 * reports a little less to cudaMemGetInfo, and a run measures its own). */
typedef struct {
    const char *flag;   /* "h100" */
    const char *match;  /* the name device_peak_flops matches: "H100" */
    size_t memory;      /* bytes */
} PlanDevice;

/* The row named by --plan-device's value, or NULL when it is none. */
const PlanDevice *device_plan_find(const char *flag);

/* The accepted --plan-device names, '|'-separated: "h100|h200|a100-80g". */
const char *device_plan_names(void);

/* One line: the backends this binary was built with and their libraries,
 * e.g. "backends: cpu (OpenBLAS 0.3.21 ...), cuda (CUDA runtime 13.0)". */
void device_build_info(char *out, size_t len);

#endif
