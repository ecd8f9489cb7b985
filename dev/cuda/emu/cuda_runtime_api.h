/* dev/cuda/emu/cuda_runtime_api.h — <cuda_runtime_api.h> for the emulator's
 * build (-Idev/cuda/emu): the emulated runtime of emu.h, so that a host file
 * written against the toolkit's header (distributed/dist_nccl.c, compiled as
 * C++ for build/train_gpt_emu) calls the emulator's streams and events.
 * Owns nothing of its own. */
#ifndef DEV_CUDA_EMU_CUDA_RUNTIME_API_H
#define DEV_CUDA_EMU_CUDA_RUNTIME_API_H
#ifndef __cplusplus
#error "dev/cuda/emu/cuda_runtime_api.h is the emulator's and C++ only (see dev/cuda/README.md)"
#endif
#include "emu.h"
#endif
