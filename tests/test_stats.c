/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of core/stats.h: the median and quantile rules the reported figures rest on. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>
#include <gsl/gsl_statistics_double.h>

#include "core/stats.h"

static void test_median(void **state)
{
    double odd[] = {3, 1, 2}, even[] = {4, 1, 3, 2}, one[] = {7};
    assert_true(pfi_median(odd, 3) == 2);
    assert_true(odd[0] == 1 && odd[2] == 3); /* sorted in place */
    assert_true(pfi_median(even, 4) == 2.5);
    assert_true(pfi_median(one, 1) == 7);
    assert_true(isnan(pfi_median(one, 0)));
}

static void test_quantile(void **state)
{
    double v[] = {1, 2, 3, 4, 5};
    assert_true(pfi_quantile_sorted(v, 5, 0) == 1);
    assert_true(pfi_quantile_sorted(v, 5, 1) == 5);
    assert_true(pfi_quantile_sorted(v, 5, 0.5) == 3);
    assert_true(fabs(pfi_quantile_sorted(v, 5, 0.1) - 1.4) < 1e-12);
    assert_true(pfi_quantile_sorted(v, 1, 0.975) == 1);
    assert_true(isnan(pfi_quantile_sorted(v, 0, 0.5)));
    /* The rule is a + (b - a) * d, not GSL's (1 - d) * a + d * b: here they differ in the last
     * bit (0.28 against 0.27999999999999997), which is why stats.c writes it out. */
    double w[] = {0.1, 0.7};
    assert_true(pfi_quantile_sorted(w, 2, 0.3) == 0.1 + (0.7 - 0.1) * 0.3);
    double gsl = gsl_stats_quantile_from_sorted_data(w, 1, 2, 0.3);
    assert_true(pfi_quantile_sorted(w, 2, 0.3) != gsl);
}

static void test_cmp(void **state)
{
    double v[] = {0.5, -1, 3, 0.5, 2};
    qsort(v, 5, sizeof *v, pfi_cmp_double);
    for (int i = 1; i < 5; i++)
        assert_true(v[i - 1] <= v[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median),
        cmocka_unit_test(test_quantile),
        cmocka_unit_test(test_cmp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
