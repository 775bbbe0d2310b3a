/* SPDX-License-Identifier: Apache-2.0 */
/* steady.c: window statistics and the steady-state rule (see meter.h). */
#include <math.h>

#include <gsl/gsl_cdf.h>

#include "measure/meter.h"

void pfi_steady_defaults(pfi_steady_cfg *c)
{
    c->settle_s = 3.0;
    c->min_window_s = 5.0;
    c->min_samples = 5;
    c->rel_ci = 0.01;
}

#define MAX_BATCHES 10

void pfi_meter_window(const pfi_meter *m, double from, double to, pfi_window_stats *out)
{
    out->mean = out->lo = out->hi = NAN;
    out->t0 = out->t1 = NAN;
    out->n = out->batches = 0;
    int first = -1, last = -1;
    for (int i = 0; i < m->n; i++) {
        if (m->s[i].t0 < from || m->s[i].t1 > to)
            continue;
        if (first < 0)
            first = i;
        last = i;
        out->n++;
    }
    if (out->n == 0)
        return;
    double sw = 0, swr = 0;
    for (int i = first; i <= last; i++) {
        if (m->s[i].t0 < from || m->s[i].t1 > to)
            continue;
        double w = m->s[i].t1 - m->s[i].t0;
        sw += w;
        swr += w * m->s[i].rate;
    }
    out->mean = swr / sw;
    out->t0 = m->s[first].t0;
    out->t1 = m->s[last].t1;
    if (out->n < 3)
        return;
    /* Batch means: consecutive samples grouped so that autocorrelated neighbours (moving
     * averages in the log) fall in the same batch. */
    int k = out->n < MAX_BATCHES ? out->n : MAX_BATCHES;
    double bm[MAX_BATCHES] = {0}, bw[MAX_BATCHES] = {0};
    int j = 0;
    for (int i = first; i <= last; i++) {
        if (m->s[i].t0 < from || m->s[i].t1 > to)
            continue;
        int b = (int)((long)j * k / out->n);
        double w = m->s[i].t1 - m->s[i].t0;
        bm[b] += w * m->s[i].rate;
        bw[b] += w;
        j++;
    }
    double mean = 0;
    for (int b = 0; b < k; b++) {
        bm[b] /= bw[b];
        mean += bm[b];
    }
    mean /= k;
    double ss = 0;
    for (int b = 0; b < k; b++)
        ss += (bm[b] - mean) * (bm[b] - mean);
    double se = sqrt(ss / (k - 1) / k);
    double hw = gsl_cdf_tdist_Pinv(0.975, k - 1) * se;
    out->lo = out->mean - hw;
    out->hi = out->mean + hw;
    out->batches = k;
}

/* MSER truncation (White 1997): the start k that minimises the squared standard error of
 * the mean of what remains, var(x_k..x_n) / (n - k), searched over the first half.  A transient
 * inflates the variance more than dropping its samples costs, so it is cut; a stationary
 * series keeps (nearly) everything. */
static double mser_start(const pfi_meter *m, double from, double to, double min_window)
{
    int idx0 = -1, n = 0;
    for (int i = 0; i < m->n; i++) {
        if (m->s[i].t0 < from || m->s[i].t1 > to)
            continue;
        if (idx0 < 0)
            idx0 = i;
        n++;
    }
    if (n < 8)
        return from;
    /* Suffix sums over the window's samples (they are in time order). */
    double sw = 0, swx = 0, swxx = 0, best = INFINITY, best_t = from, stat0 = NAN, mean0 = NAN;
    int j = n;
    for (int i = m->n - 1; i >= idx0; i--) {
        if (m->s[i].t0 < from || m->s[i].t1 > to)
            continue;
        double w = m->s[i].t1 - m->s[i].t0, x = m->s[i].rate;
        sw += w;
        swx += w * x;
        swxx += w * x * x;
        j--;
        int left = n - j;
        double mean = swx / sw;
        double var = fmax(0, swxx / sw - mean * mean);
        double stat = var / left;
        if (j == 0) {
            stat0 = stat;
            mean0 = mean;
        }
        if (j > n / 2 || left < 2 || to - m->s[i].t0 < min_window)
            continue;
        if (stat <= best) {
            best = stat;
            best_t = m->s[i].t0;
        }
    }
    /* Cut only for a clear gain: rounding noise in a flat series must not shrink the window
     * again and again. */
    if (!(best < 0.8 * stat0) || !(sqrt(stat0) > 1e-4 * fabs(mean0)))
        return from;
    return best_t;
}

int pfi_steady_check(const pfi_meter *m, const pfi_steady_cfg *c, double now, double *win_start,
                     pfi_window_stats *st)
{
    double k = mser_start(m, *win_start, now, c->min_window_s);
    if (k > *win_start)
        *win_start = k;
    pfi_meter_window(m, *win_start, now, st);
    if (st->n < c->min_samples || !isfinite(st->lo) || !(st->mean > 0))
        return 0;
    if (st->t1 - st->t0 < c->min_window_s)
        return 0;
    return 0.5 * (st->hi - st->lo) <= c->rel_ci * st->mean;
}
