/* SPDX-License-Identifier: Apache-2.0 */
/* curve.c: building a job's curve from its levels, the monotone and parametric fits, and the
 * cap -> throughput mapping the allocator reads.  See curve.h. */
#include "core/curve.h"

#include <math.h>
#include <string.h>

/* Chosen on the real public curves: `pfi index --compare-families` (docs/pfi.md).  The power law
 * has the lowest leave-one-level-out interpolation error of all five families there (PFI is read
 * inside the measured range), and two parameters are what one probe plus a prior can pin down. */
const int pfi_default_family = PFI_FAM_POWER;

static const char *const family_names[PFI_FAM_COUNT] = {"power", "quad", "knee", "exp", "dvfs"};
static const int family_nparams[PFI_FAM_COUNT] = {2, 2, 3, 2, 3};

int pfi_family_params(int family)
{
    return family >= 0 && family < PFI_FAM_COUNT ? family_nparams[family] : 0;
}

const char *pfi_family_name(int family)
{
    return family >= 0 && family < PFI_FAM_COUNT ? family_names[family] : "?";
}

int pfi_family_parse(const char *name)
{
    for (int i = 0; i < PFI_FAM_COUNT; i++)
        if (name && strcmp(name, family_names[i]) == 0)
            return i;
    return -1;
}

/* Slowdown of the DVFS family: the clock ratio x that sheds r of the power when a share d of
 * the baseline power scales as x^g, then the time of a step whose compute share m scales as 1/x. */
static double dvfs_s(double m, double d, double g, double r)
{
    if (r >= d)
        return 1.0;
    double x = pow((d - r) / d, 1.0 / g);
    if (x < 1e-6)
        return 1.0;
    return 1.0 - 1.0 / (m / x + 1.0 - m);
}

double pfi_fit_s(const pfi_fit *f, double r)
{
    if (!(r > 0))
        return 0.0;
    const double *p = f->p;
    double s;
    switch (f->family) {
    case PFI_FAM_POWER: s = p[0] * pow(r, p[1]); break;
    case PFI_FAM_QUAD: s = p[0] * r + p[1] * r * r; break;
    case PFI_FAM_KNEE: s = r > p[2] ? p[0] * pow(r - p[2], p[1]) : 0.0; break;
    case PFI_FAM_EXP: s = p[0] * (exp(p[1] * r) - 1.0); break;
    case PFI_FAM_DVFS: s = dvfs_s(p[0], p[1], p[2], r); break;
    default: return NAN;
    }
    return s > 1.0 ? 1.0 : s;
}

/* ---- least squares ---- */

typedef struct pts {
    const double *r, *s, *w;
    int n;
} pts;

static double wt(const pts *q, int i) { return q->w ? q->w[i] : 1.0; }

static double sse_of(const pfi_fit *f, const pts *q)
{
    double e = 0;
    for (int i = 0; i < q->n; i++) {
        double d = pfi_fit_s(f, q->r[i]) - q->s[i];
        e += wt(q, i) * d * d;
    }
    return e;
}

/* For the families with s = p0 * g(r): the best p0 >= 0 given g, closed form. */
static double best_scale(const pfi_fit *f, const pts *q)
{
    pfi_fit unit = *f;
    unit.p[0] = 1.0;
    double num = 0, den = 0;
    for (int i = 0; i < q->n; i++) {
        double g = pfi_fit_s(&unit, q->r[i]);
        /* pfi_fit_s clamps at 1; the shape must not be clamped while the scale is unknown. */
        if (f->family == PFI_FAM_POWER)
            g = q->r[i] > 0 ? pow(q->r[i], f->p[1]) : 0;
        else if (f->family == PFI_FAM_EXP)
            g = q->r[i] > 0 ? exp(f->p[1] * q->r[i]) - 1.0 : 0;
        else if (f->family == PFI_FAM_KNEE)
            g = q->r[i] > f->p[2] ? pow(q->r[i] - f->p[2], f->p[1]) : 0;
        num += wt(q, i) * g * q->s[i];
        den += wt(q, i) * g * g;
    }
    double a = den > 0 ? num / den : 0;
    return a > 0 ? a : 0;
}

/* Bounds of the non-linear parameters (index 1 and 2; index 0 of DVFS too). */
typedef struct pbound {
    double lo, hi, step;
} pbound;

static void bounds(int family, double rmax, pbound b[3])
{
    memset(b, 0, sizeof(pbound) * 3);
    switch (family) {
    case PFI_FAM_POWER: b[1] = (pbound){1.0, 4.0, 0.2}; break;
    case PFI_FAM_EXP: b[1] = (pbound){0.01, 20.0, 0.25}; break;
    case PFI_FAM_KNEE:
        b[1] = (pbound){1.0, 4.0, 0.1};
        b[2] = (pbound){0.0, rmax > 0.02 ? rmax - 0.01 : 0.0, 0.01};
        break;
    case PFI_FAM_DVFS:
        b[0] = (pbound){0.0, 1.0, 0.05};
        b[1] = (pbound){0.2, 1.0, 0.05};
        b[2] = (pbound){1.0, 4.0, 0.25};
        break;
    default: break;
    }
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

static void profile(pfi_fit *f, const pts *q)
{
    if (f->family != PFI_FAM_DVFS)
        f->p[0] = best_scale(f, q);
}

/* Grid search over the non-linear parameters (the scale profiled out), then a pattern search
 * with shrinking steps: robust on 3-10 noisy points where Newton-type methods wander off. */
static void fit_nonlinear(pfi_fit *f, const pts *q, double rmax)
{
    pbound b[3];
    bounds(f->family, rmax, b);
    int free_idx[3], nf = 0;
    for (int k = 0; k < 3; k++)
        if (b[k].step > 0)
            free_idx[nf++] = k;
    double best = INFINITY;
    pfi_fit cur = *f, bestf = *f;
    /* Grid: nested loops over up to three free parameters. */
    int cnt[3] = {1, 1, 1};
    for (int j = 0; j < nf; j++) {
        pbound *pb = &b[free_idx[j]];
        cnt[j] = (int)floor((pb->hi - pb->lo) / pb->step + 1e-9) + 1;
    }
    for (int i0 = 0; i0 < cnt[0]; i0++)
        for (int i1 = 0; i1 < cnt[1]; i1++)
            for (int i2 = 0; i2 < cnt[2]; i2++) {
                int ii[3] = {i0, i1, i2};
                for (int j = 0; j < nf; j++) {
                    pbound *pb = &b[free_idx[j]];
                    cur.p[free_idx[j]] = pb->lo + ii[j] * pb->step;
                }
                profile(&cur, q);
                double e = sse_of(&cur, q);
                if (e < best) {
                    best = e;
                    bestf = cur;
                }
            }
    double step[3];
    for (int j = 0; j < nf; j++)
        step[j] = b[free_idx[j]].step / 2;
    for (int round = 0; round < 60; round++) {
        int moved = 0;
        for (int j = 0; j < nf; j++) {
            int k = free_idx[j];
            for (int dir = -1; dir <= 1; dir += 2) {
                cur = bestf;
                cur.p[k] = clampd(bestf.p[k] + dir * step[j], b[k].lo, b[k].hi);
                profile(&cur, q);
                double e = sse_of(&cur, q);
                if (e < best - 1e-15) {
                    best = e;
                    bestf = cur;
                    moved = 1;
                }
            }
        }
        if (!moved) {
            double biggest = 0;
            for (int j = 0; j < nf; j++) {
                step[j] /= 2;
                if (step[j] > biggest)
                    biggest = step[j];
            }
            if (biggest < 1e-5)
                break; /* finer than any parameter matters */
        }
    }
    *f = bestf;
}

/* s = a r + b r^2 with a, b >= 0: the unconstrained 2x2 solution, or the best one-term fit. */
static void fit_quad(pfi_fit *f, const pts *q)
{
    double s11 = 0, s12 = 0, s22 = 0, y1 = 0, y2 = 0;
    for (int i = 0; i < q->n; i++) {
        double r = q->r[i] > 0 ? q->r[i] : 0, w = wt(q, i);
        s11 += w * r * r;
        s12 += w * r * r * r;
        s22 += w * r * r * r * r;
        y1 += w * r * q->s[i];
        y2 += w * r * r * q->s[i];
    }
    double det = s11 * s22 - s12 * s12;
    pfi_fit c[3];
    int nc = 0;
    if (fabs(det) > 1e-18 * (s11 * s22 + 1e-300)) {
        c[nc] = *f;
        c[nc].p[0] = (y1 * s22 - y2 * s12) / det;
        c[nc].p[1] = (s11 * y2 - s12 * y1) / det;
        if (c[nc].p[0] >= 0 && c[nc].p[1] >= 0)
            nc++;
    }
    c[nc] = *f;
    c[nc].p[0] = s11 > 0 && y1 > 0 ? y1 / s11 : 0;
    c[nc].p[1] = 0;
    nc++;
    c[nc] = *f;
    c[nc].p[0] = 0;
    c[nc].p[1] = s22 > 0 && y2 > 0 ? y2 / s22 : 0;
    nc++;
    double best = INFINITY;
    for (int i = 0; i < nc; i++) {
        double e = sse_of(&c[i], q);
        if (e < best) {
            best = e;
            *f = c[i];
        }
    }
}

int pfi_fit_points(int family, const double *r, const double *s, const double *w, int n,
                   pfi_fit *out, pfi_err *err)
{
    if (family < 0 || family >= PFI_FAM_COUNT)
        return pfi_err_set(err, PFI_EINVAL, "unknown curve family %d", family);
    int npos = 0;
    double rmax = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(r[i]) || !isfinite(s[i]) || (w && !(w[i] >= 0)))
            return pfi_err_set(err, PFI_EINVAL, "point %d of the curve is not a number", i);
        if (r[i] > 0.005)
            npos++;
        if (r[i] > rmax)
            rmax = r[i];
    }
    int need = family_nparams[family];
    if (npos < need)
        return pfi_err_set(err, PFI_EINVAL,
                           "the %s family has %d parameters but only %d point%s shed power",
                           family_names[family], need, npos, npos == 1 ? "" : "s");
    pts q = {r, s, w, n};
    memset(out, 0, sizeof *out);
    out->family = family;
    if (family == PFI_FAM_QUAD)
        fit_quad(out, &q);
    else
        fit_nonlinear(out, &q, rmax);
    double sw = 0;
    for (int i = 0; i < n; i++)
        sw += wt(&q, i);
    out->rmse = sw > 0 ? sqrt(sse_of(out, &q) / sw) : NAN;
    out->n_points = n;
    return PFI_OK;
}

/* ---- isotonic regression ---- */

void pfi_isotonic(const double *y, const double *w, int n, double *y_fit)
{
    /* Blocks on a stack: mean, weight, length.  n is small (<= a few dozen). */
    double mean[PFI_MAX_LEVELS * 2], wsum[PFI_MAX_LEVELS * 2];
    int len[PFI_MAX_LEVELS * 2];
    if (n > PFI_MAX_LEVELS * 2)
        n = PFI_MAX_LEVELS * 2;
    int nb = 0;
    for (int i = 0; i < n; i++) {
        double wi = w ? w[i] : 1.0;
        mean[nb] = y[i];
        wsum[nb] = wi;
        len[nb] = 1;
        nb++;
        while (nb > 1 && mean[nb - 2] > mean[nb - 1]) {
            double ws = wsum[nb - 2] + wsum[nb - 1];
            mean[nb - 2] = ws > 0 ? (mean[nb - 2] * wsum[nb - 2] + mean[nb - 1] * wsum[nb - 1]) / ws
                                  : (mean[nb - 2] + mean[nb - 1]) / 2;
            wsum[nb - 2] = ws;
            len[nb - 2] += len[nb - 1];
            nb--;
        }
    }
    int k = 0;
    for (int b = 0; b < nb; b++)
        for (int j = 0; j < len[b]; j++)
            y_fit[k++] = mean[b];
}

void pfi_isotonic_pinned(const double *y, int n, int pin, double *y_fit)
{
    /* A pinned value splits the problem in two; a bound on an isotonic fit is its clip. */
    if (n <= 0 || pin < 0 || pin >= n)
        return;
    if (pin > 0)
        pfi_isotonic(y, NULL, pin, y_fit);
    if (n - pin - 1 > 0)
        pfi_isotonic(y + pin + 1, NULL, n - pin - 1, y_fit + pin + 1);
    y_fit[pin] = y[pin];
    for (int k = 0; k < pin; k++)
        y_fit[k] = fmin(y_fit[k], y[pin]);
    for (int k = pin + 1; k < n; k++)
        y_fit[k] = fmax(y_fit[k], y[pin]);
}

/* ---- from a run ---- */

int pfi_run_baseline(const pfi_run *run)
{
    int best = -1;
    for (int i = 0; i < run->n_levels; i++) {
        const pfi_level *l = &run->levels[i];
        if (!(l->tput > 0) || !(l->power_w > 0) || !isfinite(l->cap_w))
            continue;
        if (isfinite(run->default_limit_w) && fabs(l->cap_w - run->default_limit_w) <= 0.5)
            return i;
        if (best < 0 || l->cap_w > run->levels[best].cap_w)
            best = i;
    }
    return best;
}

int pfi_run_baseline_capped(const pfi_run *run, int b)
{
    return b >= 0 && b < run->n_levels && isfinite(run->default_limit_w) &&
           fabs(run->levels[b].cap_w - run->default_limit_w) > 0.5;
}

/* Indices of the usable levels (throughput and power measured), by cap ascending; at most
 * PFI_CURVE_MAX_PTS of them, the baseline b always kept.  Returns how many. */
static int usable_levels(const pfi_run *run, int b, int *idx)
{
    int n = 0;
    /* Insertion sort: a few dozen levels at most. */
    for (int i = 0; i < run->n_levels && i < PFI_MAX_LEVELS; i++) {
        const pfi_level *l = &run->levels[i];
        if (!(l->tput > 0) || !(l->power_w > 0) || !isfinite(l->cap_w))
            continue;
        int j = n++;
        while (j > 0 && run->levels[idx[j - 1]].cap_w > l->cap_w) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    if (n <= PFI_CURVE_MAX_PTS)
        return n;
    /* A finer sweep than a curve holds: keep levels spread evenly over the cap order, the
     * lowest and the highest (the baseline's end) always among them. */
    int keep[PFI_CURVE_MAX_PTS];
    for (int k = 0; k < PFI_CURVE_MAX_PTS; k++)
        keep[k] = idx[(int)floor((double)k * (n - 1) / (PFI_CURVE_MAX_PTS - 1) + 0.5)];
    /* The baseline must stay even when it is not the highest cap measured. */
    int has_base = 0, bi = -1;
    for (int k = 0; k < PFI_CURVE_MAX_PTS; k++)
        has_base |= keep[k] == b;
    for (int k = 0; !has_base && k < PFI_CURVE_MAX_PTS; k++)
        if (run->levels[keep[k]].cap_w >= run->levels[b].cap_w && (bi < 0 || k < bi))
            bi = k;
    if (!has_base)
        keep[bi >= 0 ? bi : PFI_CURVE_MAX_PTS - 1] = b;
    memcpy(idx, keep, sizeof keep);
    return PFI_CURVE_MAX_PTS;
}

/* Monotone fit in the order of falling cap: slowdown may only grow as the cap falls.  The
 * baseline is pinned (exactly: a level faster than it gets s = 0, not a tiny gain) so a noisy
 * level cannot move s(0) away from 0. */
static void fit_monotone(pfi_curve *out)
{
    int n = out->n, pin = -1;
    double y[PFI_CURVE_MAX_PTS], yf[PFI_CURVE_MAX_PTS];
    for (int k = 0; k < n; k++) {
        int src = n - 1 - k;
        y[k] = 1.0 - out->rel[src];
        if (pin < 0 && fabs(out->cap_w[src] - out->cap0_w) <= 0.5)
            pin = k;
    }
    if (pin >= 0)
        pfi_isotonic_pinned(y, n, pin, yf);
    else
        pfi_isotonic(y, NULL, n, yf);
    for (int k = 0; k < n; k++)
        out->rel_mono[n - 1 - k] = 1.0 - yf[k];
}

int pfi_curve_from_run(const pfi_run *run, int family, pfi_curve *out, pfi_err *err)
{
    if (family < 0)
        family = pfi_default_family;
    memset(out, 0, sizeof *out);
    int b = pfi_run_baseline(run);
    if (b < 0)
        return pfi_err_set(err, PFI_EINVAL, "run %s has no level with a throughput and a power",
                           run->name);
    const pfi_level *base = &run->levels[b];
    out->t0 = base->tput;
    out->p0_w = base->power_w;
    out->cap0_w = base->cap_w;
    out->n_gpus = run->n_gpus;
    int idx[PFI_MAX_LEVELS];
    int n = usable_levels(run, b, idx);
    int below = 0;
    for (int k = 0; k < n; k++) {
        const pfi_level *l = &run->levels[idx[k]];
        out->cap_w[k] = l->cap_w;
        out->draw_w[k] = l->power_w;
        out->rel[k] = l->tput / out->t0;
        if (l->cap_w < out->cap0_w - 0.5)
            below++;
    }
    out->n = n;
    out->min_cap_w = out->cap_w[0];
    out->max_cap_w = out->cap_w[n - 1];
    if (below < 2)
        return pfi_err_set(err, PFI_EINVAL,
                           "run %s has only %d usable level%s below its baseline cap %.0f W: "
                           "a curve needs at least 2",
                           run->name, below, below == 1 ? "" : "s", out->cap0_w);

    fit_monotone(out);

    double r[PFI_CURVE_MAX_PTS], s[PFI_CURVE_MAX_PTS];
    int m = pfi_curve_points(out, r, s, PFI_CURVE_MAX_PTS);
    out->r_max = 0;
    for (int k = 0; k < m; k++)
        if (r[k] > out->r_max)
            out->r_max = r[k];
    for (int k = 0; k < m; k++)
        if (r[k] > 0.005)
            out->n_shed++;
    if (out->n_shed < family_nparams[family] || pfi_curve_never_bound(out)) {
        /* The job's draw hardly moved with the cap (e.g. NCF far below every cap): nothing to
         * fit, and nothing was lost; the index says the depth was not reached. */
        memset(&out->fit, 0, sizeof out->fit);
        out->fit.family = family;
        if (family == PFI_FAM_POWER || family == PFI_FAM_KNEE)
            out->fit.p[1] = 1.0;
        double e = 0;
        for (int k = 0; k < m; k++)
            e += s[k] * s[k];
        out->fit.rmse = m > 0 ? sqrt(e / m) : NAN;
        out->fit.n_points = m;
        return PFI_OK;
    }
    int rc = pfi_fit_points(family, r, s, NULL, m, &out->fit, err);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "run %s: ", run->name);
    return PFI_OK;
}

int pfi_curve_never_bound(const pfi_curve *c)
{
    if (!(c->r_max < PFI_CURVE_R_BOUND))
        return 0;
    for (int k = 0; k < c->n; k++)
        if (c->cap_w[k] < c->cap0_w - 0.5 && c->draw_w[k] >= PFI_CURVE_BIND_FRAC * c->cap_w[k])
            return 0;
    return 1;
}

int pfi_curve_points(const pfi_curve *c, double *r, double *s, int max)
{
    int m = 0;
    for (int k = 0; k < c->n && m < max; k++) {
        if (c->cap_w[k] > c->cap0_w + 0.5)
            continue; /* above the baseline: not a power reduction */
        double rk = 1.0 - c->draw_w[k] / c->p0_w;
        /* A job drawing at most its baseline sheds nothing: a noisy draw above P0 is r = 0. */
        r[m] = rk > 0 ? rk : 0;
        s[m] = 1.0 - c->rel[k];
        int j = m++;
        while (j > 0 && r[j - 1] > r[j]) {
            double tr = r[j], ts = s[j];
            r[j] = r[j - 1];
            s[j] = s[j - 1];
            r[j - 1] = tr;
            s[j - 1] = ts;
            j--;
        }
    }
    return m;
}

int pfi_curve_below_points(const pfi_curve *c, const double *y_of_level, double y0,
                           const int *skip, int nskip, double *r, double *y)
{
    int m = 0;
    r[m] = 0;
    y[m++] = y0;
    /* Highest cap first, so that levels of equal shed (several drawing at least P0: r = 0)
     * stay in falling-cap order, as the monotone fit and the bootstrap read them: the deeper
     * cap, which already cost throughput at the same draw, is the one a line from it starts at.
     * In rising order the shallowest was, and PFI at depths below the first r > 0 read 2-10%
     * low on two public runs. */
    for (int k = c->n - 1; k >= 0; k--) {
        int sk = c->cap_w[k] >= c->cap0_w - 0.5;
        for (int j = 0; j < nskip; j++)
            sk |= skip[j] == k;
        if (sk)
            continue;
        double rk = 1.0 - c->draw_w[k] / c->p0_w;
        r[m] = rk > 0 ? rk : 0;
        y[m] = y_of_level[k];
        int j = m++;
        while (j > 0 && r[j - 1] > r[j]) {
            double t = r[j];
            r[j] = r[j - 1];
            r[j - 1] = t;
            t = y[j];
            y[j] = y[j - 1];
            y[j - 1] = t;
            j--;
        }
    }
    return m;
}

double pfi_lerp_sorted(const double *x, const double *y, int n, double x0)
{
    for (int k = 1; k < n; k++)
        if (x0 <= x[k]) {
            double dx = x[k] - x[k - 1];
            return dx > 0 ? y[k - 1] + (y[k] - y[k - 1]) * (x0 - x[k - 1]) / dx : y[k];
        }
    return y[n - 1];
}

double pfi_lerp_held(const double *x, const double *y, int n, double x0)
{
    return x0 <= x[0] ? y[0] : pfi_lerp_sorted(x, y, n, x0);
}

int pfi_curve_from_fit(const pfi_fit *fit, double t0, double p0_w, double cap0_w,
                       double min_cap_w, double max_cap_w, int n_gpus, double r_max,
                       pfi_curve *out, pfi_err *err)
{
    if (!(t0 > 0) || !(p0_w > 0) || !(cap0_w > 0))
        return pfi_err_set(err, PFI_EINVAL,
                           "a predicted curve needs a positive baseline throughput, power and cap");
    if (!(min_cap_w > 0) || !(max_cap_w >= min_cap_w))
        return pfi_err_set(err, PFI_EINVAL, "cap range %.0f-%.0f W is empty", min_cap_w,
                           max_cap_w);
    if (fit->family < 0 || fit->family >= PFI_FAM_COUNT)
        return pfi_err_set(err, PFI_EINVAL, "unknown curve family %d", fit->family);
    memset(out, 0, sizeof *out);
    out->t0 = t0;
    out->p0_w = p0_w;
    out->cap0_w = cap0_w;
    out->min_cap_w = min_cap_w;
    out->max_cap_w = max_cap_w;
    out->n_gpus = n_gpus;
    out->r_max = r_max;
    out->fit = *fit;
    return PFI_OK;
}

/* ---- cap -> throughput ---- */

/* Held at both ends, the highest level read as measured (not through its segment); a NaN cap
 * reads NaN. */
static double interp(const double *x, const double *y, int n, double v)
{
    if (isnan(v))
        return NAN;
    return v >= x[n - 1] ? y[n - 1] : pfi_lerp_held(x, y, n, v);
}

double pfi_curve_draw_at_cap(const pfi_curve *c, double cap_w)
{
    cap_w = clampd(cap_w, c->min_cap_w, c->max_cap_w);
    if (c->n >= 2)
        return interp(c->cap_w, c->draw_w, c->n, cap_w);
    return cap_w < c->p0_w ? cap_w : c->p0_w;
}

double pfi_curve_rel_at_cap(const pfi_curve *c, int view, double cap_w)
{
    cap_w = clampd(cap_w, c->min_cap_w, c->max_cap_w);
    if (view == PFI_VIEW_AUTO)
        view = c->n >= 2 ? PFI_VIEW_MEASURED : PFI_VIEW_FIT;
    if (c->n < 2)
        view = PFI_VIEW_FIT;
    switch (view) {
    case PFI_VIEW_MEASURED: return interp(c->cap_w, c->rel, c->n, cap_w);
    case PFI_VIEW_MONOTONE: return interp(c->cap_w, c->rel_mono, c->n, cap_w);
    default: {
        double r = 1.0 - pfi_curve_draw_at_cap(c, cap_w) / c->p0_w;
        return 1.0 - pfi_fit_s(&c->fit, r);
    }
    }
}

double pfi_curve_tput_at_cap(const pfi_curve *c, int view, double cap_w)
{
    return c->t0 * pfi_curve_rel_at_cap(c, view, cap_w);
}

void pfi_curve_tput_grid(const pfi_curve *c, int view, const double *caps, int n, double *tput,
                         double *draw_w)
{
    for (int i = 0; i < n; i++) {
        tput[i] = pfi_curve_tput_at_cap(c, view, caps[i]);
        if (draw_w)
            draw_w[i] = pfi_curve_draw_at_cap(c, caps[i]);
    }
}
