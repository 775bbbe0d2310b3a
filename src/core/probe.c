/* probe.c: curve from baseline + one or two probes (see probe.h). */
#include "core/probe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define B_MIN 1.0
#define B_MAX 4.0

double pfi_probe_cap(double p0_w, double depth, double min_cap_w, double max_cap_w)
{
    double c = (1.0 - depth) * p0_w;
    if (c < min_cap_w)
        c = min_cap_w;
    if (c > max_cap_w)
        c = max_cap_w;
    return c;
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

int pfi_probe_fit(const double *r, const double *s, int n, double b_prior, pfi_fit *out,
                  pfi_err *err)
{
    if (n < 1 || n > 2)
        return pfi_err_set(err, PFI_EINVAL, "give one or two probes, not %d", n);
    for (int i = 0; i < n; i++)
        if (!(r[i] > 0.01) || !isfinite(s[i]))
            return pfi_err_set(err, PFI_EINVAL,
                               "probe %d shed %.1f%% of the power: a probe must shed at least 1%% "
                               "(the cap did not bind?)",
                               i + 1, 100 * r[i]);
    memset(out, 0, sizeof *out);
    out->family = PFI_FAM_POWER;
    out->n_points = n;
    double b = clampd(b_prior, B_MIN, B_MAX);
    if (n == 2 && fabs(log(r[1]) - log(r[0])) > 0.05 && s[0] > 0.002 && s[1] > 0.002)
        b = clampd((log(s[1]) - log(s[0])) / (log(r[1]) - log(r[0])), B_MIN, B_MAX);
    /* Least squares for a at that b (exact through a single probe). */
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        double g = pow(r[i], b);
        num += g * s[i];
        den += g * g;
    }
    double a = den > 0 ? num / den : 0;
    out->p[0] = a > 0 ? a : 0;
    out->p[1] = b;
    double e = 0;
    for (int i = 0; i < n; i++) {
        double d = pfi_fit_s(out, r[i]) - s[i];
        e += d * d;
    }
    out->rmse = sqrt(e / n);
    return PFI_OK;
}

int pfi_probe_curve(const pfi_curve *t, const double *depths, int n, double b_prior,
                    pfi_curve *out, int *used, pfi_err *err)
{
    if (n < 1 || n > 2)
        return pfi_err_set(err, PFI_EINVAL, "give one or two probes, not %d", n);
    if (t->n < 2)
        return pfi_err_set(err, PFI_EINVAL, "probing needs a measured curve");
    double r[2], s[2];
    for (int i = 0; i < n; i++) {
        double cap = pfi_probe_cap(t->p0_w, depths[i], t->min_cap_w, t->cap0_w);
        int best = -1;
        for (int k = 0; k < t->n; k++) {
            if (t->cap_w[k] >= t->cap0_w - 0.5)
                continue; /* the baseline is not a probe */
            if (i == 1 && used && k == used[0])
                continue;
            if (best < 0 || fabs(t->cap_w[k] - cap) < fabs(t->cap_w[best] - cap))
                best = k;
        }
        if (best < 0)
            return pfi_err_set(err, PFI_EINVAL, "no measured level below the baseline to probe");
        if (used)
            used[i] = best;
        double rk = 1.0 - t->draw_w[best] / t->p0_w;
        r[i] = rk;
        s[i] = 1.0 - t->rel[best];
    }
    pfi_fit fit;
    int rc = pfi_probe_fit(r, s, n, b_prior, &fit, err);
    if (rc != PFI_OK)
        return rc;
    /* The curve is measured only as deep as the deepest probe: PFI beyond it is extrapolated. */
    double rmax = n > 1 && r[1] > r[0] ? r[1] : r[0];
    return pfi_curve_from_fit(&fit, t->t0, t->p0_w, t->cap0_w, t->min_cap_w, t->max_cap_w,
                              t->n_gpus, rmax, out, err);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double pfi_probe_median_b(const pfi_curve *c, int n, int skip)
{
    double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!v)
        return NAN;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (i != skip && c[i].fit.family == PFI_FAM_POWER && c[i].n_shed >= 2 && c[i].fit.p[0] > 0)
            v[m++] = c[i].fit.p[1];
    double med = NAN;
    if (m > 0) {
        qsort(v, (size_t)m, sizeof(double), cmp_double);
        med = m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
    }
    free(v);
    return med;
}
