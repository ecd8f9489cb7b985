/* kernels/backend.h — choosing and opening a backend.
 *
 * Owns: the registry of backends. This is the only place that knows which
 * backends were compiled in (HAVE_CUDA); the model code only sees ops.h. */
#ifndef KERNELS_BACKEND_H
#define KERNELS_BACKEND_H

#include <stddef.h>

#include "ops.h"

/* device: "cpu", "cuda" or "auto" (cuda when compiled in and a GPU is present,
 * else cpu, with a one-line notice on stderr). dtype: "fp32" or "bf16"
 * (bf16 is cuda-only). threads: OpenMP threads for cpu (0 = default).
 * Returns NULL with a one-line reason in err on failure. */
Backend *backend_open(const char *device, const char *dtype, int threads, char *err,
                      size_t err_len);
void backend_close(Backend *be);

/* 1 when this binary was built with the CUDA backend. */
int backend_cuda_compiled(void);

/* The device the ops would run on, in words, as measured op costs are
 * keyed (model/opcost.h): "cpu: <model name>, N threads" (threads 0: what
 * OpenMP would use) or "cuda: <device name>". device as backend_open
 * takes it ("auto": cuda when compiled in and a GPU is present). */
void backend_describe(const char *device, int threads, char *buf, size_t len);

/* Constructors each backend provides. */
Backend *cpu_backend_open(int threads, char *err, size_t err_len);
void cpu_backend_close(Backend *be);
Backend *cuda_backend_open(const char *dtype, char *err, size_t err_len); /* HAVE_CUDA only */
void cuda_backend_close(Backend *be);
int cuda_device_count(void);                                             /* HAVE_CUDA only */
void cuda_device_name(char *buf, size_t len); /* the current device's; HAVE_CUDA only */
/* Device bytes the cuda backend allocates at open, outside the planner's
 * arenas: cuBLASLt's workspace and its own scratch (48 MiB). HAVE_CUDA only. */
size_t cuda_backend_fixed_bytes(void);

/* check_timing's view into the fused head (HAVE_CUDA only): one of its
 * four steps for a chunk of `rows` tokens, launched exactly as
 * head_forward_backward launches it: logits = x . wte^T into buf (act
 * dtype, rows x Vp); the loss kernel (losses, and dlogits in place when dx
 * != NULL); dx = dlogits . wte; dwte += dlogits^T . x. */
enum { HEAD_PART_LOGITS = 0, HEAD_PART_LOSS = 1, HEAD_PART_DX = 2, HEAD_PART_DWTE = 3 };
void cuda_head_part(Backend *be, int part, float *losses, void *dx, void *dwte, const void *x,
                    const void *wte, const int *targets, void *buf, int rows, int C, int V,
                    int Vp, float dloss);

#endif
