/* SPDX-License-Identifier: Apache-2.0 */
/* settle.c: settling time of a sampled step response.  See settle.h. */
#include "core/settle.h"

#include <math.h>
#include <stdlib.h>

#include "core/stats.h"

/* Median of the finite y[k] with lo <= t[k] <= hi (NAN when none); buf holds n values. */
static double median_in(const double *t, const double *y, int n, double lo, double hi, double *buf)
{
    int m = 0;
    for (int k = 0; k < n; k++)
        if (t[k] >= lo && t[k] <= hi && isfinite(y[k]))
            buf[m++] = y[k];
    return pfi_median(buf, m);
}

double pfi_settle_time(const double *t, const double *y, int n, double step_at, double window_s,
                       double final_s, double band_frac)
{
    if (n < 2)
        return NAN;
    double *buf = malloc(sizeof *buf * (size_t)n);
    if (!buf)
        return NAN;
    double before = median_in(t, y, n, -INFINITY, nextafter(step_at, -INFINITY), buf);
    double final = median_in(t, y, n, t[n - 1] - final_s, t[n - 1], buf);
    double band = band_frac * fabs(final - before);
    double settled = NAN;
    if (isfinite(before) && isfinite(final) && band > 0) {
        /* walk back from the end: the last sample out of band ends the search */
        for (int k = n - 1; k >= 0 && t[k] >= step_at; k--) {
            double m = median_in(t, y, n, t[k] - window_s / 2, t[k] + window_s / 2, buf);
            if (!(fabs(m - final) <= band))
                break;
            settled = t[k] - step_at;
        }
    }
    free(buf);
    return settled;
}

double pfi_final_time(const double *t, const double *y, int n, double step_at)
{
    double at = NAN;
    for (int k = n - 1; k >= 0 && t[k] >= step_at && y[k] == y[n - 1]; k--)
        at = t[k] - step_at;
    return at;
}
