/* model/lr_schedule.c — see lr_schedule.h. */
#include "lr_schedule.h"

#include <math.h>

float lr_at(LrKind kind, float peak, int warmup, float min_frac, int step, int total)
{
    if (step < warmup) return peak * (float)(step + 1) / (float)warmup;
    if (kind == LR_CONSTANT || total <= warmup + 1) return peak;
    double ratio = (double)(step - warmup) / (double)(total - warmup - 1);
    if (ratio > 1.0) ratio = 1.0;
    double coeff = 0.5 * (1.0 + cos(M_PI * ratio));
    double lo = peak * min_frac;
    return (float)(lo + coeff * (peak - lo));
}
