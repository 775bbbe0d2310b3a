/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of core/cost.h: GPU-seconds and work lost per level, against hand-computed figures. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "core/cost.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-9 * (1 + fabs((double)(b))))

/* Three levels on 8 GPUs, the baseline (700 W) first: 60 s at 1000 tok/s, 40 s at 900 tok/s,
 * 50 s at 700 tok/s.  GPU-s: 480, 320, 400 = 1200.  Lost: 0, 100*40 = 4000, 300*50 = 15000 =
 * 19000 of the 1000*150 = 150000 tokens the baseline would have made: 0.12666... */
static void test_sweep_top_baseline(void **state)
{
    double dur[] = {60, 40, 50}, cap[] = {700, 560, 420}, tput[] = {1000, 900, 700};
    pfi_cost c;
    pfi_err e;
    assert_int_equal(pfi_cost_levels(dur, cap, tput, 3, 8, NAN, &c, &e), PFI_OK);
    assert_int_equal(c.baseline, 0);
    NEAR(c.t0, 1000);
    NEAR(c.gpu_s[0], 480);
    NEAR(c.gpu_s[1], 320);
    NEAR(c.gpu_s[2], 400);
    NEAR(c.gpu_s_total, 1200);
    NEAR(c.seconds, 150);
    NEAR(c.lost[0], 0);
    NEAR(c.lost[1], 4000);
    NEAR(c.lost[2], 15000);
    NEAR(c.lost_total, 19000);
    NEAR(c.lost_frac, 19000.0 / 150000.0);
}

/* The baseline is the highest cap wherever it sits, and a stated baseline rate wins over it.
 * A level faster than the baseline counts negative (net). */
static void test_baseline_choice(void **state)
{
    double dur[] = {10, 20}, cap[] = {300, 400}, tput[] = {50, 100};
    pfi_cost c;
    assert_int_equal(pfi_cost_levels(dur, cap, tput, 2, 1, 0, &c, NULL), PFI_OK);
    assert_int_equal(c.baseline, 1);
    NEAR(c.lost[0], 500);
    NEAR(c.lost[1], 0);
    /* A probe: one level, the job's stated baseline 80/s: (80 - 50) * 10 = 300, and the
     * 400 W level measured above it loses -20 * 20 = -400. */
    assert_int_equal(pfi_cost_levels(dur, cap, tput, 2, 4, 80, &c, NULL), PFI_OK);
    assert_int_equal(c.baseline, -1);
    NEAR(c.lost[0], 300);
    NEAR(c.lost[1], -400);
    NEAR(c.lost_total, -100);
    NEAR(c.gpu_s_total, 120);
}

/* Unknown durations make the level's figures and the totals NAN, never a partial sum. */
static void test_unknown_duration(void **state)
{
    double dur[] = {10, NAN}, cap[] = {400, 300}, tput[] = {100, 80};
    pfi_cost c;
    assert_int_equal(pfi_cost_levels(dur, cap, tput, 2, 2, NAN, &c, NULL), PFI_OK);
    NEAR(c.gpu_s[0], 20);
    assert_true(isnan(c.gpu_s[1]) && isnan(c.lost[1]));
    assert_true(isnan(c.gpu_s_total) && isnan(c.lost_total) && isnan(c.seconds));
}

static void test_bad_input(void **state)
{
    double dur[] = {10, -1}, cap[] = {400, 300}, tput[] = {100, 80}, zero[] = {0, 80};
    pfi_cost c = {.n_levels = 77};
    pfi_err e;
    assert_int_equal(pfi_cost_levels(dur, cap, tput, 2, 1, NAN, &c, &e), PFI_EINVAL);
    assert_int_equal(c.n_levels, 77); /* unchanged */
    assert_int_equal(pfi_cost_levels(dur, cap, tput, 0, 1, NAN, &c, &e), PFI_EINVAL);
    assert_int_equal(pfi_cost_levels(dur, cap, tput, 1, 0, NAN, &c, &e), PFI_EINVAL);
    /* The top level has no rate and none was stated. */
    assert_int_equal(pfi_cost_levels(dur, cap, zero, 1, 1, NAN, &c, &e), PFI_EINVAL);
    assert_int_equal(c.n_levels, 77);
}

int main(void)
{
    const struct CMUnitTest t[] = {
        cmocka_unit_test(test_sweep_top_baseline),
        cmocka_unit_test(test_baseline_choice),
        cmocka_unit_test(test_unknown_duration),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(t, NULL, NULL);
}
