/* SPDX-License-Identifier: Apache-2.0 */
/* probe.c: curve from baseline + one or two probes (see probe.h). */
#include "core/probe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

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

double pfi_probe_median_b(const pfi_curve *c, int n, int skip)
{
    double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!v)
        return NAN;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (i != skip && c[i].fit.family == PFI_FAM_POWER && c[i].n_shed >= 2 && c[i].fit.p[0] > 0)
            v[m++] = c[i].fit.p[1];
    double med = pfi_median(v, m);
    free(v);
    return med;
}

int pfi_probe_observe(const pfi_curve *t, double depth, pfi_probe_obs *out, int *used,
                      pfi_err *err)
{
    if (t->n < 2)
        return pfi_err_set(err, PFI_EINVAL, "probing needs a measured curve");
    double cap = pfi_probe_cap(t->p0_w, depth, t->min_cap_w, t->cap0_w);
    int best = -1;
    for (int k = 0; k < t->n; k++) {
        if (t->cap_w[k] >= t->cap0_w - 0.5)
            continue; /* the baseline is not a probe */
        if (best < 0 || fabs(t->cap_w[k] - cap) < fabs(t->cap_w[best] - cap))
            best = k;
    }
    if (best < 0)
        return pfi_err_set(err, PFI_EINVAL, "no measured level below the baseline to probe");
    if (used)
        *used = best;
    memset(out, 0, sizeof *out);
    out->t0 = t->t0;
    out->p0_w = t->p0_w;
    out->cap0_w = t->cap0_w;
    out->min_cap_w = t->min_cap_w;
    out->max_cap_w = t->max_cap_w;
    out->n_gpus = t->n_gpus;
    out->cap_w = t->cap_w[best];
    out->draw_w = t->draw_w[best];
    out->rel = t->rel[best];
    return PFI_OK;
}

/* ---- the population's shape ---- */

#define SHAPE_MIN_COVER 3 /* neighbours measured at a cap before their median means anything */
#define SHAPE_K_MAX 512

static double shape_norm(double p0_w, double max_cap_w, int space)
{
    return space == PFI_PROBE_SPACE_P0 ? p0_w : max_cap_w;
}

/* A reference's slowdown at the cap x * norm, on its levels made monotone in the cap (iso:
 * its relative throughput after isotonic regression in cap order).  NAN below its measured
 * range: nothing is known there, and the collapse near a GPU's minimum is what matters most. */
static double ref_s_at(const pfi_curve *c, const double *iso, double x, int space)
{
    double cap = x * shape_norm(c->p0_w, c->max_cap_w, space);
    if (cap < c->min_cap_w * 0.98)
        return NAN;
    return clampd(1.0 - pfi_lerp_held(c->cap_w, iso, c->n, cap), 0.0, 1.0);
}

/* Reference a comes before b: higher tier first, then nearer the probe. */
static int ref_before(const unsigned char *use, const double *dist, int a, int b)
{
    int ta = use ? use[a] : 1, tb = use ? use[b] : 1;
    return ta != tb ? ta > tb : dist[a] < dist[b];
}

/* Moves the kk references first in ref_before's order to nb[0..kk-1], in that order, as a
 * stable sort would (ties: the one earlier in nb); the rest stay in their order.  Returns kk. */
static int select_first(const unsigned char *use, const double *dist, int *nb, int m, int kk)
{
    for (int a = 0; a < kk; a++) {
        int best = a;
        for (int b = a + 1; b < m; b++)
            if (ref_before(use, dist, nb[b], nb[best]))
                best = b;
        int t = nb[best];
        memmove(nb + a + 1, nb + a, sizeof *nb * (size_t)(best - a));
        nb[a] = t;
    }
    return kk;
}

double pfi_probe_amp_factor(double s_probe, double s_ref, double amp)
{
    if (!(amp > 0) || !(s_probe >= PFI_PROBE_AMP_FLOOR) || !(s_ref >= PFI_PROBE_AMP_FLOOR))
        return 1.0;
    return pow(clampd(s_probe / s_ref, PFI_PROBE_AMP_MIN, PFI_PROBE_AMP_MAX), amp);
}

double pfi_probe_to_time(double s)
{
    if (isnan(s))
        return NAN;
    s = clampd(s, 0.0, PFI_PROBE_TIME_SMAX);
    return s / (1.0 - s);
}

double pfi_probe_from_time(double u)
{
    if (isnan(u))
        return NAN;
    u = fmax(u, 0.0);
    return u / (1.0 + u);
}

/* A slowdown in the walk's scale (so->scale): itself, or its extra time. */
static double walk_scale(double s, int time) { return time ? pfi_probe_to_time(s) : s; }

double pfi_probe_weighted_median(double *v, double *w, int n)
{
    if (n <= 0)
        return NAN;
    if (!w)
        return pfi_median(v, n);
    for (int a = 1; a < n; a++) /* at most a few hundred neighbours: insertion sort */
        for (int b = a; b > 0 && v[b] < v[b - 1]; b--) {
            double t = v[b];
            v[b] = v[b - 1], v[b - 1] = t;
            t = w[b];
            w[b] = w[b - 1], w[b - 1] = t;
        }
    double total = 0, cum = 0;
    for (int a = 0; a < n; a++)
        total += w[a];
    for (int a = 0; a < n; a++) {
        cum += w[a];
        double half = 0.5 * total;
        if (fabs(cum - half) <= 1e-12 * total && a + 1 < n)
            return 0.5 * (v[a] + v[a + 1]);
        if (cum >= half)
            return v[a];
    }
    return v[n - 1];
}

/* The median over the neighbours (weighted by wt[a]; NULL: equal votes) of how much more each
 * slows down at x1 than at x0 (both as caps over norm; in extra time with `time`), neighbour
 * a's step times fac[a]; NAN when fewer than SHAPE_MIN_COVER were measured at both. */
static double median_step(const pfi_curve *refs, const double *iso, const int *nb,
                          const double *fac, const double *wt, int m, int space, int time,
                          double x0, double x1)
{
    double v[SHAPE_K_MAX], w[SHAPE_K_MAX];
    int q = 0;
    for (int a = 0; a < m; a++) {
        const double *y = iso + (size_t)nb[a] * PFI_CURVE_MAX_PTS;
        double s1 = walk_scale(ref_s_at(&refs[nb[a]], y, x1, space), time);
        double s0 = walk_scale(ref_s_at(&refs[nb[a]], y, x0, space), time);
        if (isfinite(s1) && isfinite(s0)) {
            w[q] = wt ? wt[a] : 1.0;
            v[q++] = (s1 - s0) * fac[a];
        }
    }
    return q >= SHAPE_MIN_COVER ? pfi_probe_weighted_median(v, wt ? w : NULL, q) : NAN;
}

/* The slowdown at each grid cap, walked out from the probe: from the grid cap nearest the
 * probe down to the minimum and up to the maximum, each step adds the neighbours' median step
 * between the same two caps (neighbour a's times fac[a]).  The curve goes through the probe exactly, and its slope, which is
 * what the allocator trades on, is the neighbours' typical slope at each cap (a median of the
 * neighbours' levels scaled through the probe did worse on few references: docs/allocation.md).
 * known[i] = 0 from where fewer than SHAPE_MIN_COVER neighbours were measured on. */
static void neighbour_walk(const pfi_curve *refs, const double *iso, const int *nb,
                           const double *fac, const double *wt, int m, int space, int time,
                           double norm, double xp, double sp, const double *cap, int g,
                           double *s, int *known)
{
    int ip = 0;
    for (int i = 1; i < g; i++)
        if (fabs(cap[i] - xp * norm) < fabs(cap[ip] - xp * norm))
            ip = i;
    for (int i = 0; i < g; i++)
        known[i] = 0;
    double d = median_step(refs, iso, nb, fac, wt, m, space, time, xp, cap[ip] / norm);
    if (!isfinite(d))
        return;
    s[ip] = sp + d;
    known[ip] = 1;
    for (int dir = -1; dir <= 1; dir += 2)
        for (int i = ip + dir; i >= 0 && i < g && known[i - dir]; i += dir) {
            d = median_step(refs, iso, nb, fac, wt, m, space, time, cap[i - dir] / norm,
                            cap[i] / norm);
            if (isfinite(d)) {
                s[i] = s[i - dir] + d;
                known[i] = 1;
            }
        }
}

/* Where no neighbour was measured: below them the last known slope goes on (a curve never
 * flattens toward a GPU's minimum), above them the last value holds; with no neighbour at
 * all, the straight line through the baseline and the probe in drawn power. */
static void fill_unknown(const pfi_probe_obs *o, const double *cap, int g, const int *known,
                         double sp, double *s)
{
    int first = -1;
    for (int i = 0; i < g && first < 0; i++)
        if (known[i])
            first = i;
    if (first < 0) {
        double r0 = fmax(0.01, 1.0 - o->draw_w / o->p0_w);
        for (int i = 0; i < g; i++)
            s[i] = sp * fmax(0.0, 1.0 - fmin(cap[i], o->p0_w) / o->p0_w) / r0;
        return;
    }
    double slope = 0;
    if (first + 1 < g && known[first + 1])
        slope = fmax(0.0, (s[first] - s[first + 1]) / (cap[first + 1] - cap[first]));
    for (int i = first - 1; i >= 0; i--)
        s[i] = s[first] + slope * (cap[first] - cap[i]);
    for (int i = first + 1; i < g; i++)
        if (!known[i])
            s[i] = s[i - 1];
}

/* A reference's draw/cap at a cap, linear between its levels and held beyond its ends; NAN
 * where a draw was not measured. */
static double ref_draw_ratio(const pfi_curve *c, double cap)
{
    int i = 1;
    while (i < c->n - 1 && cap > c->cap_w[i])
        i++;
    double dx = c->cap_w[i] - c->cap_w[i - 1];
    double f = dx > 0 ? clampd((cap - c->cap_w[i - 1]) / dx, 0.0, 1.0) : 1.0;
    double d = c->draw_w[i - 1] + f * (c->draw_w[i] - c->draw_w[i - 1]);
    return c->draw_w[i - 1] > 0 && c->draw_w[i] > 0 && cap > 0 ? d / cap : NAN;
}

int pfi_probe_shape_curve(const pfi_probe_obs *o, const pfi_curve *refs,
                          const unsigned char *use, int nref, const pfi_probe_shape_opts *so,
                          pfi_curve *out, pfi_err *err)
{
    return pfi_probe_shape_rescaled(o, refs, use, nref, so, 0.0, out, err);
}

void pfi_probe_refs_iso(const pfi_curve *refs, int nref, double *iso)
{
    for (int i = 0; i < nref; i++)
        if (refs[i].n >= 2 && refs[i].n <= PFI_CURVE_MAX_PTS)
            pfi_isotonic(refs[i].rel, NULL, refs[i].n, iso + (size_t)i * PFI_CURVE_MAX_PTS);
}

/* Sets out's baseline, cap range and grid as every shape estimate has them: the job's cap range
 * in PFI_CURVE_MAX_PTS steps, draw = min(cap, P0); its fit empty (s = 0). */
static void shape_out_init(const pfi_probe_obs *o, pfi_curve *out)
{
    memset(out, 0, sizeof *out);
    out->t0 = o->t0;
    out->p0_w = o->p0_w;
    out->cap0_w = o->cap0_w;
    out->min_cap_w = o->min_cap_w;
    out->max_cap_w = o->max_cap_w;
    out->n_gpus = o->n_gpus;
    out->fit.family = PFI_FAM_POWER; /* s = 0 r^1: no parametric view */
    out->fit.p[1] = 1.0;
    out->fit.rmse = NAN;
    out->r_max = fmax(0.0, 1.0 - o->draw_w / o->p0_w);
    enum { G = PFI_CURVE_MAX_PTS };
    for (int i = 0; i < G; i++) {
        out->cap_w[i] = o->min_cap_w + (o->max_cap_w - o->min_cap_w) * i / (G - 1);
        out->draw_w[i] = fmin(out->cap_w[i], o->p0_w);
    }
}

/* The walked slowdown s (in the walk's scale wp's) made a curve: the unknown filled, back from
 * extra time with `time`, clamped and non-increasing in the cap; into rel (and rel_mono). */
static void shape_finish(const pfi_probe_obs *o, const double *cap, const int *known, double wp,
                         int time, double *s, double *rel, double *rel_mono)
{
    enum { G = PFI_CURVE_MAX_PTS };
    fill_unknown(o, cap, G, known, wp, s);
    for (int i = 0; time && i < G; i++) /* back from extra time to slowdown */
        s[i] = pfi_probe_from_time(s[i]);
    for (int i = G - 1; i >= 0; i--) { /* more cap never slows a job down */
        s[i] = clampd(s[i], 0.0, 1.0);
        if (i < G - 1 && s[i] < s[i + 1])
            s[i] = s[i + 1];
        rel[i] = rel_mono[i] = 1.0 - s[i];
    }
}

/* The references a probe walks with (shape_walk's search): nb[0..m-1] the k first, higher tier
 * then nearer; dist[i] and sref[i] (reference i's distance and slowdown at the probe's cap xp)
 * for each; own (NULL: iso is given) gets the monotone levels of the references read.  Returns
 * m. */
static int find_neighbours(const pfi_probe_obs *o, const pfi_curve *refs, const double *iso,
                           double *own, const unsigned char *use, int nref,
                           const pfi_probe_shape_opts *so, double *dist, double *sref, int *nb)
{
    int k = so && so->k > 0 ? so->k : PFI_PROBE_SHAPE_K;
    int space = so ? so->space : PFI_PROBE_SPACE_MAXCAP;
    double w_draw = so ? so->w_draw : 0, w_p0 = so ? so->w_p0 : 0;
    double share = o->p0_w / o->max_cap_w; /* the job's baseline draw share */
    if (k > SHAPE_K_MAX)
        k = SHAPE_K_MAX;
    double norm = shape_norm(o->p0_w, o->max_cap_w, space);
    double xp = o->cap_w / norm, sp = clampd(1.0 - o->rel, 0.0, 1.0);
    int m = 0;
    for (int i = 0; i < nref; i++) {
        const pfi_curve *c = &refs[i];
        if ((use && !use[i]) || c->n < 2 || c->n > PFI_CURVE_MAX_PTS || !(c->p0_w > 0))
            continue;
        if (own)
            pfi_isotonic(c->rel, NULL, c->n, own + (size_t)i * PFI_CURVE_MAX_PTS);
        double s = ref_s_at(c, iso + (size_t)i * PFI_CURVE_MAX_PTS, xp, space);
        if (!isfinite(s))
            continue; /* not measured as deep as the probe: not comparable */
        dist[i] = fabs(s - sp);
        sref[i] = s;
        if (w_draw > 0 && o->draw_w > 0) {
            double dr =
                ref_draw_ratio(c, o->cap_w * shape_norm(c->p0_w, c->max_cap_w, space) / norm);
            if (isfinite(dr))
                dist[i] += w_draw * fabs(dr - o->draw_w / o->cap_w);
        }
        if (w_p0 > 0 && c->max_cap_w > 0)
            dist[i] += w_p0 * fabs(c->p0_w / c->max_cap_w - share);
        nb[m++] = i;
    }
    /* The k first in ref_before's order, as a stable sort would put them (ties: the earlier
     * reference): k picks of the first least, the rest kept in order, O(m k) instead of a sort
     * of all m (the nested cross-validation spent most of its time sorting). */
    return select_first(use, dist, nb, m, m < k ? m : k);
}

/* A probe's neighbours among the references and the scratch they were found in: the
 * references' monotone levels (made here when not handed in), each one's distance and slowdown
 * at the probe, the chosen ones' indices nb[0..m). */
typedef struct nbhood {
    double *own, *dist, *sref;
    const double *iso;
    int *nb, m;
} nbhood;

static void nbhood_free(nbhood *b)
{
    free(b->own), free(b->dist), free(b->sref), free(b->nb);
}

/* Checks the probe (every walk needs a baseline, a cap range and a cap), then finds its
 * neighbours (find_neighbours) on iso_in, or on levels made here when it is NULL. */
static int nbhood_find(const pfi_probe_obs *o, const pfi_curve *refs, const double *iso_in,
                       const unsigned char *use, int nref, const pfi_probe_shape_opts *so,
                       nbhood *b, pfi_err *err)
{
    memset(b, 0, sizeof *b);
    if (!(o->p0_w > 0) || !(o->t0 > 0) || !(o->max_cap_w > o->min_cap_w) || !(o->cap_w > 0))
        return pfi_err_set(err, PFI_EINVAL, "a probe needs a baseline, a cap range and a cap");
    size_t nr = (size_t)(nref > 0 ? nref : 1);
    b->own = iso_in ? NULL : malloc(sizeof *b->own * PFI_CURVE_MAX_PTS * nr);
    b->iso = iso_in ? iso_in : b->own;
    b->dist = malloc(sizeof *b->dist * nr), b->sref = malloc(sizeof *b->sref * nr);
    b->nb = malloc(sizeof *b->nb * nr);
    if (!b->iso || !b->dist || !b->sref || !b->nb) {
        nbhood_free(b);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    b->m = find_neighbours(o, refs, b->iso, b->own, use, nref, so, b->dist, b->sref, b->nb);
    return PFI_OK;
}

double pfi_probe_shrink_weight(double dn, double dt)
{
    return dn + dt > 0 ? dn / (dn + dt) : 0.0;
}

/* The shrink of shape_walk (pfi_probe_shape_opts.shrink): at each known grid cap the walk's
 * value is moved toward the probe plus the tier's mean step from the probe's cap to that cap
 * (the references of the nearest neighbour's tier measured at both; at least SHAPE_MIN_COVER of
 * them, else the cap keeps the walk's), by pfi_probe_shrink_weight of the neighbours' mean
 * distance and the tier's.  -1: out of memory (s as the walk left it). */
static int shrink_walk(const pfi_curve *refs, const double *iso, const unsigned char *use,
                        int nref, const nbhood *nh, int space, int time, double norm, double xp,
                        double wp, const double *cap, int g, double *s, const int *known)
{
    int tier = use ? use[nh->nb[0]] : 1, nt = 0;
    int *idx = malloc(sizeof *idx * (size_t)(nref > 0 ? nref : 1));
    double *s0 = malloc(sizeof *s0 * (size_t)(nref > 0 ? nref : 1));
    if (!idx || !s0) { /* out of memory: said, not an unshrunk walk passed off as shrunk */
        free(idx), free(s0);
        return -1;
    }
    double dn = 0, dt = 0;
    for (int a = 0; a < nh->m; a++)
        dn += nh->dist[nh->nb[a]];
    dn /= nh->m;
    /* the tier: every reference find_neighbours measured at the probe's cap, of that tier */
    for (int i = 0; i < nref; i++) {
        const pfi_curve *c = &refs[i];
        if ((use && use[i] != tier) || c->n < 2 || c->n > PFI_CURVE_MAX_PTS || !(c->p0_w > 0))
            continue;
        double v = ref_s_at(c, iso + (size_t)i * PFI_CURVE_MAX_PTS, xp, space);
        if (!isfinite(v))
            continue;
        dt += nh->dist[i];
        s0[nt] = walk_scale(v, time), idx[nt++] = i;
    }
    double lam = nt > 0 ? pfi_probe_shrink_weight(dn, dt / nt) : 0;
    for (int k = 0; lam > 0 && k < g; k++) {
        if (!known[k])
            continue;
        double sum = 0;
        int q = 0;
        for (int t = 0; t < nt; t++) {
            int i = idx[t];
            double s1 = walk_scale(
                ref_s_at(&refs[i], iso + (size_t)i * PFI_CURVE_MAX_PTS, cap[k] / norm, space),
                time);
            if (isfinite(s1))
                sum += s1 - s0[t], q++;
        }
        if (q >= SHAPE_MIN_COVER)
            s[k] = (1 - lam) * s[k] + lam * (wp + sum / q);
    }
    free(idx), free(s0);
    return 0;
}

/* pfi_probe_shape_rescaled on the references' monotone levels iso_in (pfi_probe_refs_iso's;
 * NULL: made here, for the references used). */
static int shape_walk(const pfi_probe_obs *o, const pfi_curve *refs, const double *iso_in,
                      const unsigned char *use, int nref, const pfi_probe_shape_opts *so,
                      double amp, pfi_curve *out, pfi_err *err)
{
    nbhood nh;
    int rc = nbhood_find(o, refs, iso_in, use, nref, so, &nh, err);
    if (rc)
        return rc;
    const double *iso = nh.iso, *dist = nh.dist, *sref = nh.sref;
    const int *nb = nh.nb, m = nh.m;
    int space = so ? so->space : PFI_PROBE_SPACE_MAXCAP;
    double norm = shape_norm(o->p0_w, o->max_cap_w, space);
    double xp = o->cap_w / norm, sp = clampd(1.0 - o->rel, 0.0, 1.0);
    double fac[SHAPE_K_MAX], wt[SHAPE_K_MAX];
    int near = so && so->votes == PFI_PROBE_VOTES_NEAR;
    int time = so && so->scale == PFI_PROBE_SCALE_TIME;
    double wp = walk_scale(sp, time); /* the probe in the walk's scale */
    for (int a = 0; a < m; a++) {
        fac[a] = pfi_probe_amp_factor(wp, walk_scale(sref[nb[a]], time), amp);
        wt[a] = 1.0 / (dist[nb[a]] + PFI_PROBE_VOTE_FLOOR);
    }
    shape_out_init(o, out);
    enum { G = PFI_CURVE_MAX_PTS };
    double s[G];
    int known[G];
    neighbour_walk(refs, iso, nb, fac, near ? wt : NULL, m, space, time, norm, xp, wp,
                   out->cap_w, G, s, known);
    if (so && so->shrink && m > 0 &&
        shrink_walk(refs, iso, use, nref, &nh, space, time, norm, xp, wp, out->cap_w, G, s,
                    known)) {
        nbhood_free(&nh);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    shape_finish(o, out->cap_w, known, wp, time, s, out->rel, out->rel_mono);
    out->n = G;
    nbhood_free(&nh);
    return PFI_OK;
}

int pfi_probe_shape_rescaled(const pfi_probe_obs *o, const pfi_curve *refs,
                             const unsigned char *use, int nref, const pfi_probe_shape_opts *so,
                             double amp, pfi_curve *out, pfi_err *err)
{
    return shape_walk(o, refs, NULL, use, nref, so, amp, out, err);
}

int pfi_probe_shape_mean(const pfi_probe_obs *o, const pfi_curve *refs, const unsigned char *use,
                         int nref, const pfi_probe_shape_opts *members, int nm, double amp,
                         pfi_curve *out, pfi_err *err)
{
    return pfi_probe_shape_mean_iso(o, refs, NULL, use, nref, members, nm, amp, out, err);
}

static int members_estimate(const pfi_probe_obs *o, const pfi_curve *refs, const double *iso,
                            const unsigned char *use, int nref,
                            const pfi_probe_shape_opts *members, int nm, double amp, int hedge,
                            pfi_curve *out, pfi_err *err);

int pfi_probe_shape_mean_iso(const pfi_probe_obs *o, const pfi_curve *refs, const double *iso,
                             const unsigned char *use, int nref,
                             const pfi_probe_shape_opts *members, int nm, double amp,
                             pfi_curve *out, pfi_err *err)
{
    return members_estimate(o, refs, iso, use, nref, members, nm, amp, 0, out, err);
}

const double pfi_probe_hedge_amp[PFI_PROBE_HEDGE_N] = {0, 0.5, 1, 0, 0.5, 1};
const int pfi_probe_hedge_scale[PFI_PROBE_HEDGE_N] = {
    PFI_PROBE_SCALE_SLOWDOWN, PFI_PROBE_SCALE_SLOWDOWN, PFI_PROBE_SCALE_SLOWDOWN,
    PFI_PROBE_SCALE_TIME,     PFI_PROBE_SCALE_TIME,     PFI_PROBE_SCALE_TIME};

/* The walk of neighbour_walk on levels read once: X[a * G + i] neighbour a's slowdown (in the
 * walk's scale) at grid cap i, P[a] at the probe's cap; only the neighbours idx[0..q-1], in that
 * order, each step their median (weighted by wt, NULL: equal) of X differences times fac[a].
 * The same arithmetic as neighbour_walk on the same neighbours, so the same curve. */
static void levels_walk(const double *X, const double *P, const int *idx, int q,
                        const double *fac, const double *wt, int ip, double sp, double *s,
                        int *known)
{
    enum { G = PFI_CURVE_MAX_PTS };
    double v[SHAPE_K_MAX], w[SHAPE_K_MAX];
    for (int i = 0; i < G; i++)
        known[i] = 0;
    for (int step = 0; step < 2 * G; step++) {
        /* step 0: the probe to grid cap ip; then down from ip, then up from it */
        int i, from;
        if (step == 0)
            i = ip, from = -1;
        else if (step <= ip)
            i = ip - step, from = i + 1;
        else if (step - ip < G - ip)
            i = step, from = i - 1;
        else
            break;
        if (from >= 0 && !known[from])
            continue; /* the walk stopped before: nothing beyond it is known */
        int c = 0;
        for (int b = 0; b < q; b++) {
            int a = idx[b];
            double s1 = X[(size_t)a * G + i], s0 = from < 0 ? P[a] : X[(size_t)a * G + from];
            if (isfinite(s1) && isfinite(s0)) {
                w[c] = wt ? wt[a] : 1.0;
                v[c++] = (s1 - s0) * fac[a];
            }
        }
        if (c < SHAPE_MIN_COVER)
            continue;
        double d = pfi_probe_weighted_median(v, wt ? w : NULL, c);
        if (!isfinite(d))
            continue;
        s[i] = (from < 0 ? sp : s[from]) + d;
        known[i] = 1;
    }
}

/* Squared errors above this are not more telling: a reading whose neighbours' errors are all
 * of one point of slowdown or less is not preferred further (1e-4: one point squared). */
#define STACK_FLOOR 1e-4

/* One member's PFI_PROBE_HEDGE_N readings (its scale unused) on one neighbour search, into
 * rel[h * G + i]; with w (NULL: not wanted), each reading's weight 1 / (mean squared error +
 * STACK_FLOOR) over the neighbours a of how it predicts a's own curve when a is probed at the
 * job's probe cap and walked with the OTHER neighbours (votes by nearness to a's slowdown
 * there), on the grid caps where the walk and a's curve are known; 1 when no neighbour is. */
static int member_readings(const pfi_probe_obs *o, const pfi_curve *refs, const double *iso_in,
                           const unsigned char *use, int nref, const pfi_probe_shape_opts *so,
                           double *rel, double *w, pfi_err *err)
{
    enum { G = PFI_CURVE_MAX_PTS, H = PFI_PROBE_HEDGE_N };
    nbhood nh;
    int rc = nbhood_find(o, refs, iso_in, use, nref, so, &nh, err);
    if (rc)
        return rc;
    const double *iso = nh.iso, *dist = nh.dist, *sref = nh.sref;
    const int *nb = nh.nb, m = nh.m;
    int space = so ? so->space : PFI_PROBE_SPACE_MAXCAP;
    /* per scale: X (m x G), then P (m) */
    double *lv = malloc(sizeof *lv * (size_t)(m > 0 ? m : 1) * (G + 1) * 2);
    if (!lv) {
        nbhood_free(&nh);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    double norm = shape_norm(o->p0_w, o->max_cap_w, space);
    double xp = o->cap_w / norm, sp = clampd(1.0 - o->rel, 0.0, 1.0);
    pfi_curve grid;
    shape_out_init(o, &grid);
    const double *cap = grid.cap_w;
    double *X[2], *P[2];
    for (int t = 0; t < 2; t++) {
        X[t] = lv + (size_t)t * m * (G + 1);
        P[t] = X[t] + (size_t)m * G;
        for (int a = 0; a < m; a++) {
            const pfi_curve *c = &refs[nb[a]];
            const double *y = iso + (size_t)nb[a] * PFI_CURVE_MAX_PTS;
            P[t][a] = walk_scale(sref[nb[a]], t);
            for (int i = 0; i < G; i++)
                X[t][(size_t)a * G + i] = walk_scale(ref_s_at(c, y, cap[i] / norm, space), t);
        }
    }
    int ip = 0;
    for (int i = 1; i < G; i++)
        if (fabs(cap[i] - xp * norm) < fabs(cap[ip] - xp * norm))
            ip = i;
    int near = so && so->votes == PFI_PROBE_VOTES_NEAR;
    int idx[SHAPE_K_MAX];
    double fac[SHAPE_K_MAX], wt[SHAPE_K_MAX], s[G];
    int known[G];
    for (int a = 0; a < m; a++)
        idx[a] = a, wt[a] = 1.0 / (dist[nb[a]] + PFI_PROBE_VOTE_FLOOR);
    for (int h = 0; h < H; h++) {
        int t = pfi_probe_hedge_scale[h] == PFI_PROBE_SCALE_TIME;
        double amp = pfi_probe_hedge_amp[h], wp = walk_scale(sp, t);
        for (int a = 0; a < m; a++)
            fac[a] = pfi_probe_amp_factor(wp, P[t][a], amp);
        levels_walk(X[t], P[t], idx, m, fac, near ? wt : NULL, ip, wp, s, known);
        double r[G];
        shape_finish(o, cap, known, wp, t, s, rel + (size_t)h * G, r);
    }
    if (w) {
        double sum[H] = {0};
        int nerr = 0;
        for (int a = 0; a < m; a++) {
            int q = 0;
            for (int b = 0; b < m; b++)
                if (b != a) {
                    idx[q++] = b;
                    wt[b] = 1.0 / (fabs(sref[nb[b]] - sref[nb[a]]) + PFI_PROBE_VOTE_FLOOR);
                }
            double e[H];
            int all = 1; /* every reading known somewhere: else a says nothing of them */
            for (int h = 0; h < H; h++) {
                int t = pfi_probe_hedge_scale[h] == PFI_PROBE_SCALE_TIME;
                double amp = pfi_probe_hedge_amp[h];
                for (int b = 0; b < q; b++)
                    fac[idx[b]] = pfi_probe_amp_factor(P[t][a], P[t][idx[b]], amp);
                levels_walk(X[t], P[t], idx, q, fac, near ? wt : NULL, ip, P[t][a], s, known);
                e[h] = 0;
                int cnt = 0;
                for (int i = 0; i < G; i++) {
                    double y = X[0][(size_t)a * G + i]; /* a's own slowdown there */
                    if (!known[i] || !isfinite(y))
                        continue;
                    double pr = clampd(t ? pfi_probe_from_time(s[i]) : s[i], 0.0, 1.0);
                    e[h] += (pr - y) * (pr - y);
                    cnt++;
                }
                if (cnt > 0)
                    e[h] /= cnt;
                else
                    all = 0;
            }
            if (all) {
                for (int h = 0; h < H; h++)
                    sum[h] += e[h];
                nerr++;
            }
        }
        for (int h = 0; h < H; h++)
            w[h] = nerr > 0 ? 1.0 / (sum[h] / nerr + STACK_FLOOR) : 1.0;
    }
    nbhood_free(&nh);
    free(lv);
    return PFI_OK;
}

int pfi_probe_member_unit(const pfi_probe_obs *o, const pfi_curve *refs, const double *iso,
                          const unsigned char *use, int nref, const pfi_probe_shape_opts *so,
                          double amp, int hedge, double *unit, pfi_err *err)
{
    enum { G = PFI_CURVE_MAX_PTS, H = PFI_PROBE_HEDGE_N };
    if (hedge)
        return member_readings(o, refs, iso, use, nref, so, unit, hedge == 2 ? unit + H * G : NULL,
                               err);
    pfi_curve one;
    int rc = shape_walk(o, refs, iso, use, nref, so, amp, &one, err);
    if (!rc)
        memcpy(unit, one.rel_mono, sizeof *unit * G);
    return rc;
}

/* The members' mean (hedge 0), or the readings' curves of the committee: with hedge 2 (the
 * stack), each member's readings averaged with member_readings' weights, then the members
 * averaged; with hedge 1, each reading's members averaged (as the plain mean does), then the
 * readings (the hedge, as it was first written: the same sums in the same order, so the same
 * curve). */
void pfi_probe_members_combine(const pfi_probe_obs *o, const double *units, int nm, int hedge,
                               pfi_curve *out)
{
    enum { G = PFI_CURVE_MAX_PTS, H = PFI_PROBE_HEDGE_N, U = PFI_PROBE_MEMBER_N };
    shape_out_init(o, out);
    out->n = G;
    double acc[G] = {0};
    if (!hedge) {
        for (int m = 0; m < nm; m++) /* every member's grid is the job's cap range in G steps */
            for (int i = 0; i < G; i++)
                acc[i] += units[(size_t)m * U + i];
        for (int i = 0; i < G; i++) /* a mean of non-decreasing curves is non-decreasing */
            out->rel[i] = out->rel_mono[i] = acc[i] / nm;
        return;
    }
    if (hedge == 2)
        for (int m = 0; m < nm; m++) {
            const double *rel = units + (size_t)m * U, *wm = rel + H * G;
            double ws = 0;
            for (int h = 0; h < H; h++)
                ws += wm[h];
            for (int i = 0; i < G; i++) {
                double v = 0;
                for (int h = 0; h < H; h++)
                    v += wm[h] * rel[(size_t)h * G + i];
                acc[i] += v / ws;
            }
        }
    else
        for (int h = 0; h < H; h++)
            for (int i = 0; i < G; i++) {
                double c = 0;
                for (int m = 0; m < nm; m++)
                    c += units[(size_t)m * U + (size_t)h * G + i];
                acc[i] += 1.0 * (c / nm);
            }
    /* a weighted mean of non-decreasing curves is non-decreasing */
    for (int i = 0; i < G; i++)
        out->rel[i] = out->rel_mono[i] = hedge == 2 ? acc[i] / nm : acc[i] / (double)H;
}

/* The committee's estimate: each member's unit (pfi_probe_member_unit), then combined. */
static int members_estimate(const pfi_probe_obs *o, const pfi_curve *refs, const double *iso,
                            const unsigned char *use, int nref,
                            const pfi_probe_shape_opts *members, int nm, double amp, int hedge,
                            pfi_curve *out, pfi_err *err)
{
    if (nm < 1)
        return pfi_err_set(err, PFI_EINVAL, "a committee needs at least one member");
    double *units = malloc(sizeof *units * (size_t)nm * PFI_PROBE_MEMBER_N);
    if (!units)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    int rc = PFI_OK;
    for (int m = 0; !rc && m < nm; m++)
        rc = pfi_probe_member_unit(o, refs, iso, use, nref, &members[m], amp, hedge,
                                   units + (size_t)m * PFI_PROBE_MEMBER_N, err);
    if (!rc)
        pfi_probe_members_combine(o, units, nm, hedge, out);
    free(units);
    return rc;
}

int pfi_probe_shape_hedged_iso(const pfi_probe_obs *o, const pfi_curve *refs, const double *iso,
                               const unsigned char *use, int nref,
                               const pfi_probe_shape_opts *members, int nm, pfi_curve *out,
                               pfi_err *err)
{
    return members_estimate(o, refs, iso, use, nref, members, nm, 0, 1, out, err);
}

int pfi_probe_shape_stacked_iso(const pfi_probe_obs *o, const pfi_curve *refs, const double *iso,
                                const unsigned char *use, int nref,
                                const pfi_probe_shape_opts *members, int nm, pfi_curve *out,
                                pfi_err *err)
{
    return members_estimate(o, refs, iso, use, nref, members, nm, 0, 2, out, err);
}

int pfi_probe_stack_weights(const pfi_probe_obs *o, const pfi_curve *refs, const double *iso,
                            const unsigned char *use, int nref, const pfi_probe_shape_opts *so,
                            double *w, pfi_err *err)
{
    double rel[PFI_PROBE_HEDGE_N * PFI_CURVE_MAX_PTS];
    return member_readings(o, refs, iso, use, nref, so, rel, w, err);
}
