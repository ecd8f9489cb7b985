/* model/lr_schedule.h — the learning rate at each step.
 *
 * Linear warmup over `warmup` steps ((s+1)/warmup of the peak), then either
 * constant, or cosine decay from the peak to peak*min_frac at the last step. */
#ifndef MODEL_LR_SCHEDULE_H
#define MODEL_LR_SCHEDULE_H

typedef enum { LR_CONSTANT = 0, LR_COSINE = 1 } LrKind;

/* step is 0-based, total the number of steps in the run. */
float lr_at(LrKind kind, float peak, int warmup, float min_frac, int step, int total);

#endif
