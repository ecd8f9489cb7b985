/* kernels/rope.h — the rotary position embedding's table (ops.h
 * rope_forward, rope_backward), the same on every backend.
 *
 * Owns: RopeConfig and the table's size and contents. The table is f32,
 * maxT rows of hs floats: row t = cos(t f_i) for i < hs/2, then
 * sin(t f_i). It is filled in host memory here (double precision, rounded
 * once to float) and uploaded by the caller (mem_upload); its size is
 * rope_table_floats(maxT, hs), known before anything runs, for the plan.
 *
 * Frequencies: f_i = theta^(-2i/hs), i < hs/2 (theta 10000 in Llama 2,
 * 500000 in Llama 3, 1000000 in Qwen2.5). With Llama 3's frequency scaling
 * (scale_factor > 0; Llama 3.1: factor 8, 3.2: 32, low 1, high 4,
 * original positions 8192), the published rule, with wavelength
 * w_i = 2 pi / f_i, L = original_max_pos:
 *   w_i < L / high_freq_factor:  f_i unchanged
 *   w_i > L / low_freq_factor:   f_i / factor
 *   between: s = (L / w_i - low) / (high - low),
 *            f_i = (1 - s) f_i / factor + s f_i. */
#ifndef KERNELS_ROPE_H
#define KERNELS_ROPE_H

#include <stddef.h>

typedef struct {
    double theta;            /* the frequencies' base, > 0 */
    double scale_factor;     /* Llama 3's scaling: 0 = none, else > 0 */
    double low_freq_factor;  /* with scaling: > 0 */
    double high_freq_factor; /* with scaling: > low_freq_factor */
    int original_max_pos;    /* with scaling: > 0, the positions the model was first trained at */
} RopeConfig;

/* Floats in the table of positions 0..maxT-1 at head size hs. */
size_t rope_table_floats(int maxT, int hs);

/* The hs/2 frequencies f_i, scaling applied (double). Returns 0, or -1
 * with a one-line reason in err for a bad config or odd hs. */
int rope_frequencies(double *freq, int hs, const RopeConfig *rc, char *err, size_t err_len);

/* table (host, rope_table_floats(maxT, hs) floats) = the rows of positions
 * 0..maxT-1. Returns 0, or -1 with a reason as rope_frequencies. */
int rope_table(float *table, int maxT, int hs, const RopeConfig *rc, char *err, size_t err_len);

#endif
