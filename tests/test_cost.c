/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of core/cost.h: GPU-seconds and work lost per level, against hand-computed figures. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/cost.h"
#include "core/pfi.h"
#include "study/cost_eval.h"

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

/* A run whose throughput falls in proportion to the power drawn (PFI = 1 at every depth), 8
 * levels from 700 W down to 350 W: every k-level part reads PFI30 = 1 exactly (its levels
 * reach a 50% shed, and the interpolation of proportional points is exact), and costs k/8 of the
 * sweep, (k-1)/7 without the baseline. */
static void proportional_run(pfi_run *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "proportional");
    r->n_gpus = 1;
    r->min_limit_w = 300;
    r->max_limit_w = r->default_limit_w = 700;
    r->meta.params_b = NAN;
    r->n_levels = 8;
    for (int i = 0; i < 8; i++) {
        pfi_level *l = &r->levels[i];
        l->cap_w = l->enforced_w = 700 - 50 * i;
        l->power_w = 0.98 * l->cap_w;
        l->tput = 1000 * l->cap_w / 700;
        l->tput_lo = l->tput_hi = NAN;
    }
}

static void test_evaluate(void **state)
{
    static pfi_run run;
    proportional_run(&run);
    const pfi_run *runs[] = {&run};
    pfi_cost_eval ce;
    pfi_err e;
    assert_int_equal(pfi_cost_evaluate(runs, 1, &ce, &e), PFI_OK);
    assert_int_equal(ce.n_truth, 1);
    assert_int_equal(ce.row[0].probe, 1);
    assert_int_equal(ce.row[0].n + ce.row[0].failed, 1);
    NEAR(ce.row[0].cost_median, 2.0 / 8);
    for (int k = 3; k <= 6; k++) {
        const pfi_cost_eval_row *w = &ce.row[k - 1];
        assert_int_equal(w->levels, k);
        assert_int_equal(w->n, 1);
        assert_true(w->err_median < 1e-9 && w->err_p90 < 1e-9);
        NEAR(w->cost_median, k / 8.0);
        NEAR(w->cost_excl_median, (k - 1) / 7.0);
    }
    /* The deepest shed 29.5%: the index still reads its fit there (within 0.01, marked as
     * extrapolated), but that is no measured PFI30 to score against; the run is left out. */
    for (int i = 0; i < 8; i++) {
        run.levels[i].cap_w = run.levels[i].enforced_w = 700 - 29.5 * i;
        run.levels[i].power_w = 0.98 * run.levels[i].cap_w;
        run.levels[i].tput = 1000 * run.levels[i].cap_w / 700;
    }
    pfi_index_opts io = pfi_index_defaults();
    io.n_boot = 0;
    pfi_index ix;
    assert_int_equal(pfi_index_run(&run, &io, &ix, NULL), PFI_OK);
    assert_true(ix.extrapolated && isfinite(ix.pfi_head) && !isfinite(ix.pfi_interp));
    assert_int_equal(pfi_cost_evaluate(runs, 1, &ce, &e), PFI_EINVAL);
    assert_int_equal(ce.n_truth, 0);
    /* No shed reaches 30%: nothing to score against, an error. */
    for (int i = 0; i < 8; i++)
        run.levels[i].cap_w = run.levels[i].enforced_w = 700 - 5 * i;
    for (int i = 0; i < 8; i++)
        run.levels[i].power_w = 0.98 * run.levels[i].cap_w;
    assert_int_equal(pfi_cost_evaluate(runs, 1, &ce, &e), PFI_EINVAL);
}

int main(void)
{
    const struct CMUnitTest t[] = {
        cmocka_unit_test(test_sweep_top_baseline),
        cmocka_unit_test(test_baseline_choice),
        cmocka_unit_test(test_unknown_duration),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_evaluate),
    };
    return cmocka_run_group_tests(t, NULL, NULL);
}
