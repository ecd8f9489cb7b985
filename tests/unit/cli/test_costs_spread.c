/* tests/unit/cli/test_costs_spread.c — the step-time report's spread and
 * its noisy flag (cli/costs.h costs_spread), on canned step times whose
 * median, min, max and spread are worked out by hand below. */
#include <criterion/criterion.h>

#include "cli/costs.h"

Test(costs_spread, steady_steps_are_not_noisy)
{
    double ms[] = {101, 99, 100, 102, 98}; /* sorted 98..102: median 100, spread 4% */
    StepSpread s;
    costs_spread(ms, 5, &s);
    cr_assert_float_eq(s.median, 100, 1e-12);
    cr_assert_float_eq(s.min, 98, 1e-12);
    cr_assert_float_eq(s.max, 102, 1e-12);
    cr_assert_float_eq(s.spread, 0.04, 1e-12);
    cr_assert_eq(s.noisy, 0);
}

Test(costs_spread, steps_that_differ_by_more_than_a_tenth_are_noisy)
{
    /* three runs of one budget gave 3.76, 1.74 and 0.99 times the
     * prediction: steps like these, median 1.74, spread (3.76-0.99)/1.74 */
    double ms[] = {3.76, 0.99, 1.74};
    StepSpread s;
    costs_spread(ms, 3, &s);
    cr_assert_float_eq(s.median, 1.74, 1e-12);
    cr_assert_float_eq(s.spread, (3.76 - 0.99) / 1.74, 1e-12);
    cr_assert_eq(s.noisy, 1);
    double edge[] = {100, 105, 95}; /* spread exactly 10%: not over it */
    costs_spread(edge, 3, &s);
    cr_assert_eq(s.noisy, 0);
}

Test(costs_spread, fewer_than_three_steps_are_noisy)
{
    double two[] = {100, 100}; /* no spread, but two steps measure nothing */
    StepSpread s;
    costs_spread(two, 2, &s);
    cr_assert_float_eq(s.median, 100, 1e-12);
    cr_assert_eq(s.noisy, 1);
    costs_spread(two, 0, &s);
    cr_assert_eq(s.noisy, 1);
}
