/* SPDX-License-Identifier: Apache-2.0 */
#include "core/stats.h"

#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_statistics_double.h>

int pfi_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double pfi_median(double *v, int n)
{
    if (n <= 0)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, pfi_cmp_double);
    return gsl_stats_median_from_sorted_data(v, 1, (size_t)n);
}

double pfi_quantile_sorted(const double *v, int n, double q)
{
    if (n <= 0)
        return NAN;
    double pos = q * (n - 1);
    int i = (int)floor(pos);
    if (i >= n - 1)
        return v[n - 1];
    return v[i] + (v[i + 1] - v[i]) * (pos - i);
}
