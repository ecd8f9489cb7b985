/* kernels/rope.c — see rope.h. */
#include "rope.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

size_t rope_table_floats(int maxT, int hs) { return (size_t)(maxT > 0 ? maxT : 0) * (hs > 0 ? hs : 0); }

int rope_frequencies(double *freq, int hs, const RopeConfig *rc, char *err, size_t err_len)
{
    if (hs <= 0 || hs % 2) {
        snprintf(err, err_len, "rope: head size %d must be even and positive", hs);
        return -1;
    }
    if (!(rc->theta > 0) || !isfinite(rc->theta)) {
        snprintf(err, err_len, "rope: theta must be positive (got %g)", rc->theta);
        return -1;
    }
    int scaled = rc->scale_factor != 0;
    if (scaled && (!(rc->scale_factor > 0) || !(rc->low_freq_factor > 0) ||
                   !(rc->high_freq_factor > rc->low_freq_factor) || rc->original_max_pos <= 0)) {
        snprintf(err, err_len,
                 "rope: Llama 3 scaling needs factor > 0, 0 < low_freq_factor < "
                 "high_freq_factor and original positions > 0 (got %g, %g, %g, %d)",
                 rc->scale_factor, rc->low_freq_factor, rc->high_freq_factor,
                 rc->original_max_pos);
        return -1;
    }
    double L = rc->original_max_pos;
    for (int i = 0; i < hs / 2; i++) {
        double f = pow(rc->theta, -2.0 * i / hs);
        if (scaled) {
            double wl = 2.0 * M_PI / f;
            if (wl > L / rc->low_freq_factor) {
                f = f / rc->scale_factor;
            } else if (!(wl < L / rc->high_freq_factor)) {
                double s = (L / wl - rc->low_freq_factor) /
                           (rc->high_freq_factor - rc->low_freq_factor);
                f = (1.0 - s) * f / rc->scale_factor + s * f;
            }
        }
        freq[i] = f;
    }
    return 0;
}

int rope_table(float *table, int maxT, int hs, const RopeConfig *rc, char *err, size_t err_len)
{
    if (maxT < 0) {
        snprintf(err, err_len, "rope: %d positions", maxT);
        return -1;
    }
    double *f = malloc(sizeof(double) * (hs > 0 ? hs / 2 + 1 : 1));
    if (!f) {
        snprintf(err, err_len, "rope: out of host memory");
        return -1;
    }
    if (rope_frequencies(f, hs, rc, err, err_len) != 0) {
        free(f);
        return -1;
    }
    int half = hs / 2;
    for (int t = 0; t < maxT; t++) {
        float *row = table + (size_t)t * hs;
        for (int i = 0; i < half; i++) {
            double a = t * f[i];
            row[i] = (float)cos(a);
            row[half + i] = (float)sin(a);
        }
    }
    free(f);
    return 0;
}
