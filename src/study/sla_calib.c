/* SPDX-License-Identifier: Apache-2.0 */
/* sla_calib.c: pfi's curves calibrated on the other jobs' out-of-fold errors (sla_calib.h). */
#include "study/sla_calib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int pfi_calib_grid_n(void)
{
    return (int)lround((1 - PFI_CALIB_U0) / PFI_CALIB_DU) + 1;
}

static double grid_u(int i)
{
    return i == pfi_calib_grid_n() - 1 ? 1.0 : PFI_CALIB_U0 + i * PFI_CALIB_DU;
}

/* Job k's (predicted, true) slowdown at relative cap u of its max cap; 0 when a curve does
 * not cover that cap or has no throughput at its max. */
static int pair_at(const pfi_alloc_job *t, const pfi_alloc_job *q, double u, double *x,
                   double *y)
{
    double mx = t->max_cap_w, c = u * mx;
    double lo = fmax(t->min_cap_w, q->min_cap_w), hi = fmin(mx, q->max_cap_w);
    double t0 = pfi_alloc_tput_at(t, mx), q0 = pfi_alloc_tput_at(q, q->max_cap_w);
    if (c < lo - 1e-9 || c > hi + 1e-9 || !(t0 > 0) || !(q0 > 0))
        return 0;
    *x = 1 - pfi_alloc_tput_at(q, c) / q0;
    *y = 1 - pfi_alloc_tput_at(t, c) / t0;
    return isfinite(*x) && isfinite(*y);
}

typedef struct sums {
    double n, x, y, xx, xy;
} sums;

static void line_of(const sums *s, double *a, double *b)
{
    if (!(s->n > 0)) {
        *a = 0, *b = 1;
        return;
    }
    double mx = s->x / s->n, my = s->y / s->n;
    double vx = s->xx / s->n - mx * mx, cxy = s->xy / s->n - mx * my;
    if (s->n < PFI_CALIB_MIN_PAIRS || !(vx > 1e-12)) {
        *b = 1, *a = my - mx;
        return;
    }
    *b = cxy / vx;
    *a = my - *b * mx;
}

int pfi_calib_lines(const pfi_alloc_job *tj, const pfi_alloc_job *pj, int n, double *a,
                    double *b)
{
    int g = pfi_calib_grid_n();
    sums *all = calloc((size_t)g, sizeof *all);
    if (!all)
        return -1;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < g; i++) {
            double x, y;
            if (pair_at(&tj[k], &pj[k], grid_u(i), &x, &y))
                all[i].n += 1, all[i].x += x, all[i].y += y, all[i].xx += x * x,
                    all[i].xy += x * y;
        }
    for (int j = 0; j < n; j++)
        for (int i = 0; i < g; i++) {
            sums s = all[i];
            double x, y;
            if (pair_at(&tj[j], &pj[j], grid_u(i), &x, &y)) /* never j's own truth */
                s.n -= 1, s.x -= x, s.y -= y, s.xx -= x * x, s.xy -= x * y;
            line_of(&s, &a[(size_t)j * (size_t)g + (size_t)i], &b[(size_t)j * (size_t)g + (size_t)i]);
        }
    free(all);
    return 0;
}

/* a or b read at relative cap u: linear between grid points, held beyond the ends. */
static double at_u(const double *v, double u)
{
    int g = pfi_calib_grid_n();
    if (u <= grid_u(0))
        return v[0];
    if (u >= grid_u(g - 1))
        return v[g - 1];
    int i = (int)floor((u - PFI_CALIB_U0) / PFI_CALIB_DU);
    if (i > g - 2)
        i = g - 2;
    double u0 = grid_u(i), u1 = grid_u(i + 1);
    return v[i] + (v[i + 1] - v[i]) * (u - u0) / (u1 - u0);
}

void pfi_calib_curve(const pfi_alloc_job *pj, const double *a, const double *b,
                     pfi_alloc_curve *buf, pfi_alloc_job *out)
{
    *out = *pj;
    int m = pj->n_points < PFI_ALLOC_CURVE_PTS ? pj->n_points : PFI_ALLOC_CURVE_PTS;
    double q0 = pfi_alloc_tput_at(pj, pj->max_cap_w);
    for (int i = 0; i < m; i++) {
        double c = pj->cap_w[i], u = pj->max_cap_w > 0 ? c / pj->max_cap_w : 1;
        double sd = q0 > 0 ? 1 - pj->tput[i] / q0 : 0;
        double s = fmin(1, fmax(0, at_u(a, u) + at_u(b, u) * sd));
        buf->cap_w[i] = c;
        buf->tput[i] = q0 > 0 ? q0 * (1 - s) : pj->tput[i];
    }
    out->cap_w = buf->cap_w;
    out->tput = buf->tput;
    out->n_points = m;
}
