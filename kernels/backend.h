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

/* The bf16 attention kernels' compiled variants (tile sizes, warps, pipeline
 * stages, launch bounds; kernels/cuda/attention_mma.cu), HAVE_CUDA only.
 * kernel: CUDA_ATTN_FWD, _DQ or _DKDV. Variant 0 is each kernel's default;
 * cuda_backend_open takes TRAIN_GPT_ATTN_VARIANT (comma-separated names,
 * e.g. "fwd-w8-k64-s2-b2,dkdv-w4-q32-s2-b3") and fails naming it when a
 * name is unknown or names a variant this GPU cannot run. count: how many;
 * name: NULL past the end; usable: 1 when this backend's GPU can run
 * variant i (the wgmma variants need compute capability 9.0), else 0;
 * set: -1 when i is out of range or not usable, else 0 (set may choose a
 * check_only variant, which the variable refuses: its memory is outside
 * the plan); fused: 1 when dK/dV variant i writes dQ too, so that the dQ
 * variant does not matter while it is chosen. */
enum { CUDA_ATTN_FWD, CUDA_ATTN_DQ, CUDA_ATTN_DKDV, CUDA_ATTN_KERNELS };
int cuda_attn_variant_count(int kernel);
const char *cuda_attn_variant_name(int kernel, int i);
int cuda_attn_variant_get(Backend *be, int kernel);
int cuda_attn_variant_usable(Backend *be, int kernel, int i);
int cuda_attn_variant_set(Backend *be, int kernel, int i);
int cuda_attn_variant_fused(int kernel, int i);

#endif
