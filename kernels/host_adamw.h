/* kernels/host_adamw.h — AdamW on host memory, shared by the cpu backend
 * (its adamw_update and host_adamw_update) and the cuda backend's host tier
 * (kernels/cuda/host_tier.cu: host_adamw_update for --offload optimizer).
 *
 * Owns: the one host loop of ops.h's AdamW. It is written to give, bit for
 * bit, what kernels/cuda/adamw.cu's device kernel gives: every step a single
 * IEEE binary32 operation rounded to nearest, in the kernel's order, with no
 * fused multiply-add (the kernel spells each one with __fmul_rn and friends,
 * which nvcc never contracts; host_adamw.c is compiled -ffp-contract=off), and
 * bf16 stores rounded to nearest even as __float2bfloat16 rounds (NaN becomes
 * the canonical 0x7fff). The bias corrections 1 - beta^t are computed by the
 * caller's powf on the host in both backends. */
#ifndef KERNELS_HOST_ADAMW_H
#define KERNELS_HOST_ADAMW_H

#include <stddef.h>
#include <stdint.h>

/* ops.h's adamw_update on n elements in host memory. bf16: params and grads
 * are bf16 (uint16_t bits), else float. master != NULL: the fp32 master is
 * updated and params gets its rounding; otherwise params is read, updated and
 * written in its own type. b1c, b2c: 1 - beta1^t, 1 - beta2^t. */
void host_adamw(void *params, float *master, const void *grads, int bf16, float *m, float *v,
                size_t n, float lr, float beta1, float beta2, float b1c, float b2c, float eps,
                float weight_decay, float grad_scale);

/* bf16 <-> float, as the cuda backend rounds (round to nearest even). */
float host_bf16_to_float(uint16_t b);
uint16_t host_float_to_bf16(float f);

#endif
