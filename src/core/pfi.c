/* SPDX-License-Identifier: Apache-2.0 */
/* pfi.c: the index on a fitted curve, its bootstrap interval, and the SLA primitive. */
#include "core/pfi.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

const double pfi_depths[PFI_N_DEPTHS] = {0.10, 0.20, 0.30, 0.40};
const double pfi_budgets[PFI_N_BUDGETS] = {0.02, 0.05, 0.10};

#define PFI_MAX_BOOT 4000
/* A depth this close beyond the deepest measured shed is still read on the fit without
 * --extrapolate (the public sweeps stop at limits whose draw sheds 0.29x), but it is beyond
 * what was measured, so it is marked as an extrapolation all the same. */
#define REACH_TOL 0.01

pfi_index_opts pfi_index_defaults(void)
{
    pfi_index_opts o = {.family = -1, .depth = 0.30, .extrapolate = 0, .n_boot = 400, .seed = 1};
    return o;
}

unsigned long long pfi_rand_next(unsigned long long *st)
{
    unsigned long long z = (*st += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double pfi_rand_uniform(unsigned long long *st)
{
    return (double)(pfi_rand_next(st) >> 11) * (1.0 / 9007199254740992.0);
}

void pfi_rand_permutation(int *order, int n, unsigned long long *st)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(pfi_rand_next(st) % (unsigned long long)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

double pfi_rand_normal(unsigned long long *st)
{
    double u1 = pfi_rand_uniform(st), u2 = pfi_rand_uniform(st);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double pfi_at(const pfi_fit *fit, double r)
{
    if (!(r > 0))
        return NAN;
    return pfi_fit_s(fit, r) / r;
}

double pfi_shed_at_slowdown(const pfi_fit *fit, double s_max, double r_limit)
{
    if (!(r_limit > 0))
        return 0.0;
    if (pfi_fit_s(fit, r_limit) <= s_max)
        return r_limit;
    double lo = 0, hi = r_limit;
    for (int i = 0; i < 60; i++) {
        double mid = (lo + hi) / 2;
        if (pfi_fit_s(fit, mid) <= s_max)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* s on the monotone fit at shed r: linear in r between points (origin included). */
static double mono_s(const pfi_curve *c, double r)
{
    double s_lv[PFI_CURVE_MAX_PTS], rr[PFI_CURVE_MAX_PTS + 1], ss[PFI_CURVE_MAX_PTS + 1];
    for (int k = 0; k < c->n; k++)
        s_lv[k] = 1.0 - c->rel_mono[k];
    int m = pfi_curve_below_points(c, s_lv, 0, NULL, 0, rr, ss);
    if (r > rr[m - 1] + REACH_TOL || m < 2)
        return NAN;
    if (r > rr[m - 1]) {
        /* Just past the deepest level (within REACH_TOL): its last segment, extended. */
        double dr = rr[m - 1] - rr[m - 2];
        return dr > 0 ? ss[m - 1] + (ss[m - 1] - ss[m - 2]) * (r - rr[m - 1]) / dr : ss[m - 1];
    }
    return pfi_lerp_sorted(rr, ss, m, r);
}

/* Largest shed on the monotone interpolation before its slowdown first passes s_max, walking
 * out from the origin (a later point back under s_max does not count: the cap on the way
 * there broke the budget); *used 0 when the measured points never pass it (then r_max). */
static double mono_shed(const pfi_curve *c, double s_max, int *used)
{
    double s_lv[PFI_CURVE_MAX_PTS], rr[PFI_CURVE_MAX_PTS + 1], ss[PFI_CURVE_MAX_PTS + 1];
    for (int k = 0; k < c->n; k++)
        s_lv[k] = 1.0 - c->rel_mono[k];
    int m = pfi_curve_below_points(c, s_lv, 0, NULL, 0, rr, ss);
    *used = 1;
    for (int k = 1; k < m; k++)
        if (ss[k] > s_max) {
            double ds = ss[k] - ss[k - 1];
            double f = ds > 0 ? (s_max - ss[k - 1]) / ds : 0;
            return rr[k - 1] + (f > 0 ? f : 0) * (rr[k] - rr[k - 1]);
        }
    *used = 0;
    return rr[m - 1];
}

/* The SLA primitive at budget k: the monotone interpolation of the measured points (as the
 * headline is read; the fit overstated it where it misses the data, 91 budgets of 68 public
 * runs at a measured level already over budget), the fit only past the deepest measured shed
 * when extrapolating to r_limit (marked).  A cap that never bound is read the same way: its
 * measured slowdown is what a cap cost it, whatever the fit (s = 0) says. */
static void fill_shed(const pfi_curve *c, double r_limit, pfi_index *out)
{
    for (int k = 0; k < PFI_N_BUDGETS; k++) {
        double b = pfi_budgets[k];
        out->shed_extrap[k] = 0;
        if (c->n < 1) {
            out->shed_at[k] = 0;
            out->shed_limited[k] = 1;
            continue;
        }
        int used;
        double r = mono_shed(c, b, &used);
        /* Not used up over the measured sheds: a lower bound, unless the fit carries it on
         * past them (then a lower bound only if the fit does not use it up either). */
        out->shed_limited[k] = !used;
        if (!used && r_limit > r) {
            double rf = pfi_shed_at_slowdown(&c->fit, b, r_limit);
            if (rf > r) {
                r = rf;
                out->shed_extrap[k] = 1;
                out->shed_limited[k] = pfi_fit_s(&c->fit, r_limit) <= b;
            }
        }
        out->shed_at[k] = r;
    }
}

/* PFI at d on the monotone interpolation, only where the measured sheds reach d. */
static double interp_pfi(const pfi_curve *c, double d)
{
    double sm = c->n > 0 && d <= c->r_max ? mono_s(c, d) : NAN;
    return isfinite(sm) ? sm / d + 0.0 : NAN; /* + 0.0: no -0 where nothing was lost */
}

static void fill_depths(const pfi_curve *c, const pfi_fit *fit, int extrapolate, pfi_index *x)
{
    for (int k = 0; k < PFI_N_DEPTHS; k++) {
        double d = pfi_depths[k];
        int beyond = d > c->r_max + REACH_TOL;
        x->extrap_at[k] = d > c->r_max;
        x->pfi_at[k] = beyond && !extrapolate ? NAN : pfi_at(fit, d);
        double sm = c->n > 0 && !beyond ? mono_s(c, d) : NAN;
        x->pfi_mono_at[k] = isfinite(sm) ? sm / d : NAN;
        double pi = interp_pfi(c, d);
        x->head_at[k] = isfinite(pi) ? pi : x->pfi_at[k];
    }
}

/* The points a curve's fit went through, baseline cap and below, from the baseline down. */
typedef struct fit_pts {
    double r[PFI_CURVE_MAX_PTS], s[PFI_CURVE_MAX_PTS];
    double sd[PFI_CURVE_MAX_PTS]; /* each level's own noise where the run gave an interval */
    int m, npos;                  /* points, and those that shed power */
} fit_pts;

/* Also notes in out the deepest slowdown seen and whether throughput rose as the cap fell. */
static void collect_points(const pfi_curve *c, const double *sd, fit_pts *p, pfi_index *out)
{
    p->m = p->npos = 0;
    out->s_max_seen = 0;
    double prev_rel = NAN;
    for (int k = c->n - 1; k >= 0; k--) {
        if (c->cap_w[k] > c->cap0_w + 0.5)
            continue;
        if (isfinite(prev_rel) && c->rel[k] > prev_rel + 0.01)
            out->non_monotone = 1;
        prev_rel = c->rel[k];
        int m = p->m++;
        double rk = 1.0 - c->draw_w[k] / c->p0_w;
        p->r[m] = rk > 0 ? rk : 0;
        p->s[m] = 1.0 - c->rel[k];
        p->sd[m] = sd && isfinite(sd[k]) && sd[k] > 0 ? sd[k] : 0;
        if (p->s[m] > out->s_max_seen)
            out->s_max_seen = p->s[m];
        if (p->r[m] > 0.005)
            p->npos++;
    }
}

/* PFI at d on the monotone interpolation of points (r[i], s[i]) given baseline first and then
 * in falling cap order (the order the monotone fit runs in, the baseline pinned), as
 * fit_monotone and mono_s read a curve; NAN when the points do not reach d. */
static double interp_points(const double *r, const double *s, int m, double d)
{
    double y[PFI_CURVE_MAX_PTS], rr[PFI_CURVE_MAX_PTS], ss[PFI_CURVE_MAX_PTS];
    pfi_isotonic_pinned(s, m, 0, y);
    /* sorted by r (a lower cap can draw more when the job's phase changed): insertion sort */
    int n = 0;
    for (int i = 0; i < m; i++) {
        int j = n++;
        while (j > 0 && rr[j - 1] > r[i]) {
            rr[j] = rr[j - 1];
            ss[j] = ss[j - 1];
            j--;
        }
        rr[j] = r[i];
        ss[j] = y[i];
    }
    if (n < 2 || d > rr[n - 1])
        return NAN;
    return pfi_lerp_sorted(rr, ss, n, d) / d;
}

/* Sorted values' 95% interval widened to hold lo..hi: into *plo, *phi. */
static void widen(double *vals, int nv, double *plo, double *phi)
{
    if (nv == 0)
        return;
    qsort(vals, (size_t)nv, sizeof(double), pfi_cmp_double);
    double lo = pfi_quantile_sorted(vals, nv, 0.025), hi = pfi_quantile_sorted(vals, nv, 0.975);
    *plo = isfinite(*plo) ? fmin(*plo, lo) : lo;
    *phi = isfinite(*phi) ? fmax(*phi, hi) : hi;
}

/* Wild bootstrap: residuals flipped at random (Rademacher), inflated for the parameters the
 * fit spent, plus each level's own measurement noise.  Each replicate is read on the fit and,
 * where the points reach the depth, on their monotone interpolation: the headline's interval
 * spans both. */
static int bootstrap(const pfi_curve *c, const fit_pts *p, const pfi_index_opts *o,
                     pfi_index *out, pfi_err *err)
{
    const double *r = p->r, *s = p->s, *psd = p->sd;
    int m = p->m, npos = p->npos;
    int np = pfi_family_params(c->fit.family);
    int have_sd = 0;
    for (int i = 0; i < m; i++)
        have_sd |= psd[i] > 0;
    /* A fit through as many points as it has parameters leaves no residual to learn the noise
     * from: without the levels' own intervals, no interval rather than a false zero-width one. */
    if (npos <= np && !have_sd)
        return PFI_OK;
    double infl = npos > np ? sqrt((double)npos / (npos - np)) : 1.0;
    double res[PFI_CURVE_MAX_PTS], fitted[PFI_CURVE_MAX_PTS], sb[PFI_CURVE_MAX_PTS];
    for (int i = 0; i < m; i++) {
        fitted[i] = pfi_fit_s(&c->fit, r[i]);
        res[i] = r[i] > 0.005 ? (s[i] - fitted[i]) * infl : 0;
    }
    double *vals = malloc(sizeof(double) * (size_t)o->n_boot * 2), *ivals = vals + o->n_boot;
    if (!vals)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory for %d bootstrap replicates",
                           o->n_boot);
    unsigned long long st = o->seed;
    int nv = 0, ni = 0;
    for (int b = 0; b < o->n_boot; b++) {
        for (int i = 0; i < m; i++) {
            double flip = (pfi_rand_next(&st) >> 63) ? 1.0 : -1.0;
            sb[i] = fitted[i] + flip * res[i] + (psd[i] > 0 ? psd[i] * pfi_rand_normal(&st) : 0);
        }
        if (isfinite(out->pfi_interp)) {
            double vi = interp_points(r, sb, m, o->depth);
            if (isfinite(vi))
                ivals[ni++] = vi;
        }
        pfi_fit f;
        if (pfi_fit_points(c->fit.family, r, sb, NULL, m, &f, NULL) != PFI_OK)
            continue;
        double v = pfi_at(&f, o->depth);
        if (isfinite(v))
            vals[nv++] = v;
    }
    if (isfinite(out->pfi_interp) && nv > 0 && ni > 0) {
        /* The headline: both estimates, both replicate sets (the second sort below reuses
         * vals sorted: the same quantiles). */
        out->head_lo = fmin(out->pfi_interp, out->pfi);
        out->head_hi = fmax(out->pfi_interp, out->pfi);
        widen(ivals, ni, &out->head_lo, &out->head_hi);
        widen(vals, nv, &out->head_lo, &out->head_hi);
    }
    if (nv > 0) {
        qsort(vals, (size_t)nv, sizeof(double), pfi_cmp_double);
        out->pfi_lo = pfi_quantile_sorted(vals, nv, 0.025);
        out->pfi_hi = pfi_quantile_sorted(vals, nv, 0.975);
        /* The interval must hold the estimate itself (a skewed refit can push both ends past). */
        if (out->pfi < out->pfi_lo)
            out->pfi_lo = out->pfi;
        if (out->pfi > out->pfi_hi)
            out->pfi_hi = out->pfi;
    }
    free(vals);
    return PFI_OK;
}

int pfi_index_curve(const pfi_curve *c, const double *sd, const pfi_index_opts *opt,
                    pfi_index *out, pfi_err *err)
{
    pfi_index_opts o = opt ? *opt : pfi_index_defaults();
    if (o.depth == 0)
        o.depth = 0.30;
    if (!(o.depth > 0 && o.depth < 1))
        return pfi_err_set(err, PFI_EINVAL, "depth %g is not a fraction of power between 0 and 1",
                           o.depth);
    if (o.n_boot < 0)
        o.n_boot = 400;
    if (o.n_boot > PFI_MAX_BOOT)
        return pfi_err_set(err, PFI_EINVAL, "%d bootstrap replicates: at most %d", o.n_boot,
                           PFI_MAX_BOOT);
    memset(out, 0, sizeof *out);
    out->t0 = c->t0;
    out->p0_w = c->p0_w;
    out->cap0_w = c->cap0_w;
    out->r_max = c->r_max;
    out->never_bound = pfi_curve_never_bound(c);
    out->fit = c->fit;
    out->depth = o.depth;
    out->n_points = c->n;
    fill_depths(c, &c->fit, o.extrapolate, out);

    int beyond = o.depth > c->r_max + REACH_TOL;
    out->extrapolated = o.depth > c->r_max;
    out->pfi = beyond && !o.extrapolate ? NAN : pfi_at(&c->fit, o.depth);
    out->pfi_lo = out->pfi_hi = NAN;
    out->pfi_interp = interp_pfi(c, o.depth);
    out->head_lo = out->head_hi = NAN;

    double r_limit = c->r_max;
    if (o.extrapolate && c->min_cap_w > 0 && 1.0 - c->min_cap_w / c->p0_w > r_limit)
        r_limit = 1.0 - c->min_cap_w / c->p0_w;
    fill_shed(c, r_limit, out);

    fit_pts pts;
    collect_points(c, sd, &pts, out);
    int rc = PFI_OK;
    if (o.n_boot > 0 && pts.m > 0 && isfinite(out->pfi))
        rc = bootstrap(c, &pts, &o, out, err);
    /* The headline: the interpolation where bracketed, else the fit with its own interval. */
    if (isfinite(out->pfi_interp)) {
        out->pfi_head = out->pfi_interp;
    } else {
        out->pfi_head = out->pfi;
        out->head_lo = out->pfi_lo;
        out->head_hi = out->pfi_hi;
    }
    return rc;
}

int pfi_index_run(const pfi_run *run, const pfi_index_opts *o, pfi_index *out, pfi_err *err)
{
    pfi_curve c;
    int rc = pfi_curve_from_run(run, o ? o->family : -1, &c, err);
    if (rc != PFI_OK)
        return rc;
    /* Each point's slowdown sd from its level's 95% throughput interval, in the curve's cap
     * order (the curve sorted the run's usable levels by cap). */
    double sd[PFI_CURVE_MAX_PTS];
    for (int k = 0; k < c.n; k++) {
        sd[k] = NAN;
        for (int i = 0; i < run->n_levels; i++) {
            const pfi_level *l = &run->levels[i];
            if (l->cap_w == c.cap_w[k] && l->power_w == c.draw_w[k] && isfinite(l->tput_lo) &&
                isfinite(l->tput_hi) && l->tput_hi > l->tput_lo) {
                sd[k] = (l->tput_hi - l->tput_lo) / (2 * 1.96) / c.t0;
                break;
            }
        }
    }
    rc = pfi_index_curve(&c, sd, o, out, err);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "run %s: ", run->name);
    return PFI_OK;
}
