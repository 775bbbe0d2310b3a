/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of pfi's curves calibrated on the other jobs' out-of-fold errors (study/sla_calib.h),
 * on straight curves whose numbers are worked out by hand in each comment. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "study/sla_calib.h"

/* Straight curves from 400 to 1000 W, T0 1000: slowdown at cap u * 1000 W is s (1 - u), the
 * truth's s in ts[], the prediction's in ps[]. */
static void make_jobs(const double *ts, const double *ps, int n, double (*tt)[2],
                      double (*tq)[2], double *cap, pfi_alloc_job *tj, pfi_alloc_job *pj)
{
    cap[0] = 400, cap[1] = 1000;
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < 2; i++) {
            tt[j][i] = 1000 * (1 - ts[j] * (1 - cap[i] / 1000));
            tq[j][i] = 1000 * (1 - ps[j] * (1 - cap[i] / 1000));
        }
        tj[j] = (pfi_alloc_job){.id = "j", .n_gpus = 1, .min_cap_w = 400, .max_cap_w = 1000,
                                .cap_w = cap, .tput = tt[j], .n_points = 2, .p0_w = 1000,
                                .t0 = NAN, .sla = NAN};
        pj[j] = tj[j];
        pj[j].tput = tq[j];
    }
}

/* Four jobs, predicted s 0.2, 0.4, 0.6, 0.3, true s 0.3, 0.5, 0.9, 0.5.  Job 3's line is fitted
 * on jobs 0-2 only: at u, x = p (1 - u), y = t (1 - u); p deviates -0.2, 0, 0.2 from its mean
 * 0.4, t deviates -0.8/3, -0.2/3, 1/3 from its mean 1.7/3, so b = (0.16/3 + 0.2/3) / 0.08 = 1.5
 * and a = (1 - u)(1.7/3 - 1.5 x 0.4) = -(1 - u) / 30: at u = 0.4, a = -0.02.  Job 3's
 * calibrated slowdown at 400 W: -0.02 + 1.5 x 0.3 x 0.6 = 0.25, so 750 (its curve said 820,
 * the truth 700); at 1000 W every slowdown is 0 (no spread: b = 1, a = 0), so 1000. */
static void test_lines_and_curve(void **state)
{
    (void)state;
    double ts[4] = {0.3, 0.5, 0.9, 0.5}, ps[4] = {0.2, 0.4, 0.6, 0.3};
    double tt[4][2], tq[4][2], cap[2];
    pfi_alloc_job tj[4], pj[4];
    make_jobs(ts, ps, 4, tt, tq, cap, tj, pj);
    int g = pfi_calib_grid_n();
    assert_int_equal(g, 13);
    double a[4 * 13], b[4 * 13];
    assert_int_equal(pfi_calib_lines(tj, pj, 4, a, b), 0);
    assert_true(fabs(b[3 * g + 0] - 1.5) < 1e-9);
    assert_true(fabs(a[3 * g + 0] + 0.02) < 1e-9);
    assert_true(fabs(b[3 * g + 12] - 1) < 1e-12 && fabs(a[3 * g + 12]) < 1e-12);
    pfi_alloc_curve buf;
    pfi_alloc_job out;
    pfi_calib_curve(&pj[3], a + 3 * g, b + 3 * g, &buf, &out);
    assert_int_equal(out.n_points, 2);
    assert_true(fabs(out.tput[0] - 750) < 1e-6);
    assert_true(fabs(out.tput[1] - 1000) < 1e-9);
    assert_true(out.cap_w[0] == 400 && out.cap_w[1] == 1000 && out.max_cap_w == 1000);
    /* job 3's own truth has no say in its line */
    tt[3][0] = 100;
    double a2[4 * 13], b2[4 * 13];
    assert_int_equal(pfi_calib_lines(tj, pj, 4, a2, b2), 0);
    for (int i = 0; i < g; i++)
        assert_true(fabs(a2[3 * g + i] - a[3 * g + i]) < 1e-12 &&
                    fabs(b2[3 * g + i] - b[3 * g + i]) < 1e-12);
    assert_true(fabs(b2[0] - b[0]) > 0.01); /* while job 0's line, fitted on job 3 too, moves */
}

/* Three jobs: each line has only two other jobs, so b = 1 and a = the mean of true less
 * predicted slowdown.  Job 0: (0.5 - 0.4 + 0.9 - 0.6) / 2 x (1 - u) = 0.2 x 0.6 = 0.12 at 400
 * W; calibrated slowdown 0.12 + 0.2 x 0.6 = 0.24, so 760. */
static void test_too_few_pairs(void **state)
{
    (void)state;
    double ts[3] = {0.3, 0.5, 0.9}, ps[3] = {0.2, 0.4, 0.6};
    double tt[3][2], tq[3][2], cap[2];
    pfi_alloc_job tj[3], pj[3];
    make_jobs(ts, ps, 3, tt, tq, cap, tj, pj);
    int g = pfi_calib_grid_n();
    double a[3 * 13], b[3 * 13];
    assert_int_equal(pfi_calib_lines(tj, pj, 3, a, b), 0);
    assert_true(b[0] == 1);
    assert_true(fabs(a[0] - 0.12) < 1e-9);
    pfi_alloc_curve buf;
    pfi_alloc_job out;
    pfi_calib_curve(&pj[0], a, b, &buf, &out);
    assert_true(fabs(out.tput[0] - 760) < 1e-6);
    assert_true(b[2 * g] == 1); /* job 2 too */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_and_curve),
        cmocka_unit_test(test_too_few_pairs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
