/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the simulated grid day (core/grid_day.h) on synthetic jobs: every controlled policy
 * holds the site under each event's target, the day without control does not; the oracle
 * loses no more than the equal cut; the day is reproducible from its seed. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "core/grid_day.h"

/* Two kinds: flexible jobs (lose little when capped) and stiff ones. */
static const double caps[] = {200, 300, 400, 500, 600, 700};
static const double flex[] = {0.80, 0.90, 0.96, 0.99, 1.0, 1.0};
static const double stiff[] = {0.30, 0.45, 0.60, 0.75, 0.90, 1.0};

static void jobs_make(pfi_alloc_job *j, int n)
{
    static double t[16][6];
    for (int i = 0; i < n; i++) {
        const double *shape = i % 2 ? stiff : flex;
        int g = 1 << (i % 4); /* 1, 2, 4, 8 GPUs */
        for (int k = 0; k < 6; k++)
            t[i][k] = 1000.0 * g * shape[k];
        j[i] = (pfi_alloc_job){"j", g, 200, 700, caps, t[i], 6, 680, NAN, NAN, 1};
    }
}

static void test_day(void **state)
{
    (void)state;
    pfi_alloc_job jobs[16];
    jobs_make(jobs, 16);
    pfi_grid_day_opts o;
    pfi_grid_day_defaults(&o);
    o.nodes = 8;
    pfi_grid_day d;
    pfi_err e = {0};
    assert_int_equal(pfi_grid_day_run(jobs, jobs, 16, &o, &d, &e), PFI_OK);
    assert_int_equal(d.n_steps, 1440);
    assert_int_equal(d.n_events, 2);
    for (int ev = 0; ev < 2; ev++) {
        assert_true(d.events[ev].baseline_w > 0);
        for (int p = PFI_GD_PFI; p < PFI_GRID_DAY_NPOL; p++) {
            assert_true(d.cell[ev][p].max_excess_w == 0);
            assert_true(d.cell[ev][p].seconds_over_target == 0);
            assert_true(d.cell[ev][p].energy_shed_kwh > 0);
            assert_true(d.cell[ev][p].tput_lost >= 0);
        }
        /* Uncontrolled, the site stays above the target. */
        assert_true(d.cell[ev][PFI_GD_NONE].seconds_over_target > 0);
        assert_true(d.cell[ev][PFI_GD_ORACLE].tput_lost <=
                    d.cell[ev][PFI_GD_EQUAL].tput_lost + 1e-6);
        /* pfi sees the truth here: it is the oracle. */
        assert_true(fabs(d.cell[ev][PFI_GD_PFI].tput_lost - d.cell[ev][PFI_GD_ORACLE].tput_lost) <
                    1e-6 * (1 + d.cell[ev][PFI_GD_ORACLE].tput_lost));
        assert_true(d.cell[ev][PFI_GD_ORACLE].tput_lost < d.cell[ev][PFI_GD_EQUAL].tput_lost);
    }
    /* Every step inside a window: the draw of each controlled policy within the budget. */
    for (int k = 0; k < d.n_steps; k++)
        for (int p = PFI_GD_PFI; p < PFI_GRID_DAY_NPOL; p++)
            assert_true(d.draw_w[p][k] <= d.budget_w[k] + 1e-6);
    double lost = d.cell[0][PFI_GD_PFI].tput_lost;
    int started = d.n_started;
    pfi_grid_day_free(&d);
    assert_int_equal(pfi_grid_day_run(jobs, jobs, 16, &o, &d, &e), PFI_OK);
    assert_true(d.cell[0][PFI_GD_PFI].tput_lost == lost && d.n_started == started);
    pfi_grid_day_free(&d);
    o.seed = 2;
    assert_int_equal(pfi_grid_day_run(jobs, jobs, 16, &o, &d, &e), PFI_OK);
    assert_true(d.n_started != started || d.cell[0][PFI_GD_PFI].tput_lost != lost);
    pfi_grid_day_free(&d);
    o.nodes = 0;
    assert_int_equal(pfi_grid_day_run(jobs, jobs, 16, &o, &d, &e), PFI_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_day)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
