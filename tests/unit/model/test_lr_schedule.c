/* tests/unit/model/test_lr_schedule.c — warmup and cosine decay at hand-computed steps. */
#include <criterion/criterion.h>
#include <math.h>

#include "model/lr_schedule.h"

Test(lr_schedule, warmup_then_constant)
{
    /* warmup 4: (s+1)/4 of the peak */
    cr_expect_float_eq(lr_at(LR_CONSTANT, 1.0f, 4, 0.0f, 0, 10), 0.25f, 1e-7);
    cr_expect_float_eq(lr_at(LR_CONSTANT, 1.0f, 4, 0.0f, 3, 10), 1.0f, 1e-7);
    cr_expect_float_eq(lr_at(LR_CONSTANT, 1.0f, 4, 0.0f, 9, 10), 1.0f, 1e-7);
}

Test(lr_schedule, cosine_from_peak_to_floor)
{
    /* warmup 2, 12 steps: decay over steps 2..11; midpoint 6.5 is not a step,
     * so check the ends and step 2 + 9/3 = 5 where ratio = 1/3. */
    cr_expect_float_eq(lr_at(LR_COSINE, 2.0f, 2, 0.1f, 2, 12), 2.0f, 1e-6);
    cr_expect_float_eq(lr_at(LR_COSINE, 2.0f, 2, 0.1f, 11, 12), 0.2f, 1e-6);
    float want = 0.2f + 0.5f * (1.0f + cosf((float)M_PI / 3.0f)) * 1.8f;
    cr_expect_float_eq(lr_at(LR_COSINE, 2.0f, 2, 0.1f, 5, 12), want, 1e-6);
}
