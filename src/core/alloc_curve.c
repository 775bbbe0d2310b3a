/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_curve.c: pfi_curve -> allocator arrays (alloc_curve.h). */
#include "core/alloc_curve.h"

#include <math.h>
#include <string.h>

int pfi_alloc_job_from_curve(const pfi_curve *c, int view, int relative, const char *id,
                             double min_cap_w, double max_cap_w, pfi_alloc_curve *buf,
                             pfi_alloc_job *job, pfi_err *err)
{
    double lo = c->min_cap_w, hi = c->max_cap_w;
    if (min_cap_w > 0)
        lo = fmax(lo, min_cap_w);
    if (max_cap_w > 0)
        hi = fmin(hi, max_cap_w);
    if (!(lo > 0) || !(hi > lo))
        return pfi_err_set(err, PFI_EINVAL, "job %s: cap range %g..%g W is empty", id, lo, hi);
    if (!(c->t0 > 0) || !(c->p0_w > 0) || c->n_gpus < 1)
        return pfi_err_set(err, PFI_EINVAL, "job %s: its curve has no baseline", id);
    int measured = (view == PFI_VIEW_MEASURED || view == PFI_VIEW_MONOTONE ||
                    view == PFI_VIEW_AUTO) &&
                   c->n >= 2;
    int n = 0;
    if (measured) {
        buf->cap_w[n++] = lo;
        for (int i = 0; i < c->n && n < PFI_ALLOC_CURVE_PTS - 1; i++)
            if (c->cap_w[i] > buf->cap_w[n - 1] + 1e-9 && c->cap_w[i] < hi - 1e-9)
                buf->cap_w[n++] = c->cap_w[i];
        buf->cap_w[n++] = hi;
    } else {
        int m = (int)ceil((hi - lo) / 10.0) + 1;
        if (m > PFI_ALLOC_CURVE_PTS)
            m = PFI_ALLOC_CURVE_PTS;
        if (m < 2)
            m = 2;
        for (int i = 0; i < m; i++)
            buf->cap_w[n++] = i == m - 1 ? hi : lo + (hi - lo) * i / (m - 1);
    }
    pfi_curve_tput_grid(c, view, buf->cap_w, n, buf->tput, NULL);
    double scale = relative ? c->n_gpus / c->t0 : 1.0;
    for (int i = 0; i < n; i++) {
        buf->tput[i] *= scale;
        if (buf->tput[i] < 0)
            buf->tput[i] = 0; /* a fit extrapolated past total loss */
    }
    memset(job, 0, sizeof *job);
    job->id = id;
    job->n_gpus = c->n_gpus;
    job->min_cap_w = lo;
    job->max_cap_w = hi;
    job->cap_w = buf->cap_w;
    job->tput = buf->tput;
    job->n_points = n;
    job->p0_w = c->p0_w;
    job->t0 = relative ? c->n_gpus : c->t0;
    job->sla = NAN;
    job->weight = 1;
    return PFI_OK;
}

void pfi_draw_model_ratio(double rho, pfi_draw_model *out)
{
    if (!(rho > 0) || !isfinite(rho))
        rho = 1;
    out->n = 2;
    out->u[0] = 0;
    out->d[0] = 0;
    out->u[1] = 1.0 / rho;
    out->d[1] = 1;
}

double pfi_draw_model_at(const pfi_draw_model *m, double u)
{
    if (u <= m->u[0])
        return m->u[0] > 0 ? m->d[0] * u / m->u[0] : m->d[0];
    return pfi_lerp_sorted(m->u, m->d, m->n, u);
}

#define BIN_W 0.05
#define BIN_MIN 5

static void sort_small(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && v[k - 1] > v[k]; k--) {
            double t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
}

void pfi_draw_model_fit(const double *u, const double *d, int n, pfi_draw_model *out)
{
    enum { NB = 30, MAXB = 512 }; /* bins cover cap/P0 in [0, 1.5) */
    static const int nb = NB;
    double vals[MAXB];
    out->n = 0;
    for (int b = 0; b < nb && out->n < PFI_DRAW_PTS; b++) {
        int m = 0;
        for (int i = 0; i < n && m < MAXB; i++)
            if (u[i] >= b * BIN_W && u[i] < (b + 1) * BIN_W && isfinite(d[i]))
                vals[m++] = d[i];
        if (m < BIN_MIN)
            continue;
        sort_small(vals, m);
        double med = m % 2 ? vals[m / 2] : 0.5 * (vals[m / 2 - 1] + vals[m / 2]);
        double v = fmin(1.0, med);
        if (out->n > 0 && v < out->d[out->n - 1])
            v = out->d[out->n - 1]; /* more cap never means less draw */
        out->u[out->n] = (b + 0.5) * BIN_W;
        out->d[out->n] = v;
        out->n++;
    }
    if (out->n == 0)
        pfi_draw_model_ratio(1, out);
}

int pfi_draw_model_from_curve(const pfi_curve *c, pfi_draw_model *out)
{
    pfi_draw_model m = {0};
    for (int i = 0; i < c->n && m.n < PFI_DRAW_PTS; i++) {
        if (!(c->draw_w[i] > 0) || !(c->cap_w[i] > 0) || !(c->p0_w > 0))
            continue;
        double u = c->cap_w[i] / c->p0_w, d = fmin(1.0, c->draw_w[i] / c->p0_w);
        int k = m.n++;
        for (; k > 0 && m.u[k - 1] > u; k--) {
            m.u[k] = m.u[k - 1];
            m.d[k] = m.d[k - 1];
        }
        m.u[k] = u;
        m.d[k] = d;
    }
    for (int i = 1; i < m.n; i++)
        if (m.d[i] < m.d[i - 1])
            m.d[i] = m.d[i - 1]; /* more cap never means less draw */
    if (m.n >= 2)
        *out = m;
    return m.n;
}

void pfi_draw_model_mean(const pfi_draw_model *m, int n, double u_lo, double u_hi,
                         pfi_draw_model *out)
{
    if (n < 1 || !(u_hi > u_lo)) {
        pfi_draw_model_ratio(1, out);
        return;
    }
    out->n = PFI_DRAW_PTS;
    for (int g = 0; g < PFI_DRAW_PTS; g++) {
        double u = u_lo + (u_hi - u_lo) * g / (PFI_DRAW_PTS - 1), sum = 0;
        for (int i = 0; i < n; i++)
            sum += pfi_draw_model_at(&m[i], u);
        out->u[g] = u;
        out->d[g] = sum / n;
    }
}

int pfi_alloc_job_from_prediction(const pfi_curve *pred, const pfi_draw_model *draw,
                                  int relative, const char *id, double min_cap_w,
                                  double max_cap_w, pfi_alloc_curve *buf, pfi_alloc_job *job,
                                  pfi_err *err)
{
    pfi_draw_model one;
    if (!draw) {
        pfi_draw_model_ratio(1, &one);
        draw = &one;
    }
    int rc = pfi_alloc_job_from_curve(pred, PFI_VIEW_FIT, relative, id, min_cap_w, max_cap_w,
                                      buf, job, err);
    if (rc)
        return rc;
    double scale = relative ? pred->n_gpus : pred->t0;
    for (int i = 0; i < job->n_points; i++) {
        double frac = fmin(1.0, pfi_draw_model_at(draw, buf->cap_w[i] / pred->p0_w));
        double s = pfi_fit_s(&pred->fit, 1.0 - frac);
        buf->tput[i] = fmax(0.0, scale * (1.0 - s));
    }
    return PFI_OK;
}

int pfi_alloc_curve_through(const pfi_alloc_job *q, double c0, double s_obs, pfi_alloc_curve *buf,
                            pfi_alloc_job *out, pfi_err *err)
{
    double mx = q->max_cap_w;
    if (q->n_points < 1 || q->n_points > PFI_ALLOC_CURVE_PTS)
        return pfi_err_set(err, PFI_EINVAL, "job %s: %d curve points (1 to %d can be corrected)",
                           q->id ? q->id : "?", q->n_points, PFI_ALLOC_CURVE_PTS);
    /* the slowdown's reference is the SLA's: t0, or the curve at the max cap */
    double t0 = isfinite(q->t0) && q->t0 > 0 ? q->t0 : pfi_alloc_tput_at(q, mx);
    if (!(t0 > 0))
        return pfi_err_set(err, PFI_EINVAL, "job %s: no baseline throughput to correct against",
                           q->id ? q->id : "?");
    if (!(c0 >= q->cap_w[0]) || !(c0 < mx))
        return pfi_err_set(err, PFI_EINVAL,
                           "job %s: observed cap %g W is outside its curve's range [%g, %g) W",
                           q->id ? q->id : "?", c0, q->cap_w[0], mx);
    if (!(s_obs >= 0 && s_obs <= 1))
        return pfi_err_set(err, PFI_EINVAL, "job %s: observed slowdown %g is not in [0, 1]",
                           q->id ? q->id : "?", s_obs);
    /* q's points first: buf may be where they live */
    int m = q->n_points, k = 0;
    double x[PFI_ALLOC_CURVE_PTS], y[PFI_ALLOC_CURVE_PTS];
    double d = s_obs - (1 - pfi_alloc_tput_at(q, c0) / t0);
    int have = 0;
    for (int i = 0; i < m; i++)
        have |= fabs(q->cap_w[i] - c0) <= 1e-9 * mx;
    for (int i = 0; i < m; i++) {
        if (d > 0 && !have && m < PFI_ALLOC_CURVE_PTS && q->cap_w[i] > c0 &&
            (i == 0 || q->cap_w[i - 1] < c0))
            x[k] = c0, y[k++] = pfi_alloc_tput_at(q, c0);
        x[k] = q->cap_w[i], y[k++] = q->tput[i];
    }
    for (int i = 0; d > 0 && i < k; i++) {
        double w = x[i] <= c0 ? 1 : x[i] >= mx ? 0 : (mx - x[i]) / (mx - c0);
        double s = fmin(1, 1 - y[i] / t0 + d * w);
        y[i] = t0 * (1 - s);
    }
    memcpy(buf->cap_w, x, sizeof *x * (size_t)k);
    memcpy(buf->tput, y, sizeof *y * (size_t)k);
    *out = *q;
    out->cap_w = buf->cap_w;
    out->tput = buf->tput;
    out->n_points = k;
    return PFI_OK;
}
