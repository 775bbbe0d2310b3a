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

int pfi_alloc_job_from_prediction(const pfi_curve *pred, double rho, int relative,
                                  const char *id, double min_cap_w, double max_cap_w,
                                  pfi_alloc_curve *buf, pfi_alloc_job *job, pfi_err *err)
{
    if (!(rho > 0) || !isfinite(rho))
        rho = 1;
    int rc = pfi_alloc_job_from_curve(pred, PFI_VIEW_FIT, relative, id, min_cap_w, max_cap_w,
                                      buf, job, err);
    if (rc)
        return rc;
    double scale = relative ? pred->n_gpus : pred->t0;
    for (int i = 0; i < job->n_points; i++) {
        double draw = fmin(pred->p0_w, rho * buf->cap_w[i]);
        double s = pfi_fit_s(&pred->fit, 1.0 - draw / pred->p0_w);
        buf->tput[i] = fmax(0.0, scale * (1.0 - s));
    }
    return PFI_OK;
}
