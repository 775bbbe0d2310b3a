/* SPDX-License-Identifier: Apache-2.0 */
/* curve.h: a job's power->throughput curve, the one object that PFI (core/pfi.h), prediction
 * (core/predict.h, core/probe.h) and allocation (core/alloc.h) share.
 *
 * Two coordinates describe a curve, both relative to the job's baseline (the default-limit level,
 * throughput T0, mean per-GPU power drawn P0):
 *   r = 1 - P/P0   power shed (power DRAWN, not the cap: a job below its cap sheds nothing)
 *   s = 1 - T/T0   slowdown
 * A curve holds
 *   - the measured points (cap, draw, relative throughput), sorted by cap, when it comes from a run;
 *   - their monotone fit (isotonic regression, PAVA) anchored at s(0) = 0;
 *   - a smooth parametric fit s(r) (family chosen on the real public curves: docs/pfi.md).
 * A predicted curve (from telemetry or probes) has the parametric fit only.
 *
 * For the allocator, whose budget is on caps: pfi_curve_tput_at_cap() gives the job's throughput
 * at a per-GPU cap.  Measured curves interpolate the measured levels linearly in the cap and are
 * bounded by the measured limits (min_cap_w..max_cap_w); fitted curves map a cap to the power the
 * job draws (measured draws when there are, else min(cap, P0)) and read s on the fit.
 * Pure: no I/O, no globals. */
#ifndef PFI_CORE_CURVE_H
#define PFI_CORE_CURVE_H

#include "core/err.h"
#include "core/run.h"

#define PFI_CURVE_MAX_PTS 24

/* Parametric families of s(r), all through the origin.  p[] holds the parameters. */
typedef enum pfi_family {
    PFI_FAM_POWER = 0, /* s = p0 * r^p1                           (p1 >= 1: convex)        */
    PFI_FAM_QUAD,      /* s = p0 * r + p1 * r^2                   (p0, p1 >= 0)            */
    PFI_FAM_KNEE,      /* s = p0 * max(0, r - p2)^p1              (no loss until r = p2)   */
    PFI_FAM_EXP,       /* s = p0 * (exp(p1 * r) - 1)              (p1 > 0)                 */
    PFI_FAM_DVFS,      /* physics: T ~ 1/(m/x + 1 - m), P ~ 1 - d + d x^g; p = {m, d, g} */
    PFI_FAM_COUNT
} pfi_family;

/* The family pfi uses unless told otherwise (chosen by `pfi index --compare-families`). */
extern const int pfi_default_family;

typedef struct pfi_fit {
    int family;     /* pfi_family */
    double p[3];
    double rmse;    /* of s on the points fitted (NAN when not fitted on points) */
    int n_points;   /* points the fit used (0: predicted) */
} pfi_fit;

/* Where a curve's throughput comes from when evaluated. */
typedef enum pfi_curve_view {
    PFI_VIEW_AUTO = 0, /* measured points when the curve has >= 2, else the fit */
    PFI_VIEW_MEASURED, /* linear in the cap between measured levels (the paper's rule) */
    PFI_VIEW_MONOTONE, /* the isotonic fit, linear in the cap between levels */
    PFI_VIEW_FIT       /* the parametric fit through the draw at that cap */
} pfi_curve_view;

typedef struct pfi_curve {
    double t0;          /* baseline throughput, the run's unit (whole job) */
    double p0_w;        /* baseline mean power drawn per GPU */
    double cap0_w;      /* baseline cap (the default limit) */
    double min_cap_w, max_cap_w; /* caps the job may be given (measured range for measured) */
    int n_gpus;
    int n;              /* measured points, sorted by cap ascending; 0 for predicted curves */
    double cap_w[PFI_CURVE_MAX_PTS];
    double draw_w[PFI_CURVE_MAX_PTS];   /* mean power drawn per GPU */
    double rel[PFI_CURVE_MAX_PTS];      /* T/T0 measured */
    double rel_mono[PFI_CURVE_MAX_PTS]; /* T/T0 of the monotone fit (non-increasing as r grows) */
    double r_max;       /* deepest shed measured (or the depth a prediction is trusted to) */
    int n_shed;         /* measured points that shed power (r > 0.005); below the family's
                           parameter count, or pfi_curve_never_bound, the fit is s = 0 */
    pfi_fit fit;
} pfi_curve;

/* A sweep whose draw fell by less than this fraction, no capped level drawing within
 * PFI_CURVE_BIND_FRAC of its cap, never bound: points a hair apart near r = 0 determine no fit
 * (two at r = 0.007 and 0.009, NCF or ShuffleNet drawing 42-84 W under caps of 100 W and
 * more, gave s = 1.8e6 r^4, PFI10 = 10).  A job whose draw follows its cap binds, however
 * shallow the sweep (a node daemon's first small cuts). */
#define PFI_CURVE_R_BOUND 0.05
#define PFI_CURVE_BIND_FRAC 0.95
/* 1 when c's measured points say the cap never bound (the rule above). */
int pfi_curve_never_bound(const pfi_curve *c);

/* Index of the baseline level of a run: the level at the default limit (within 0.5 W), else the
 * one at the highest cap.  -1 when the run has no level with a positive throughput. */
int pfi_run_baseline(const pfi_run *run);
/* 1 when baseline level b is not at the run's known default limit (no usable level there: a
 * first window the log gave no rate in), so what is read from it is a capped job's. */
int pfi_run_baseline_capped(const pfi_run *run, int b);

/* Builds the curve of a run: baseline, points, monotone fit, parametric fit of `family`
 * (pfi_default_family when < 0).  Needs the baseline and at least 2 other usable levels
 * (PFI_EINVAL "run X has only N usable levels..." otherwise).  A run with more usable levels
 * than PFI_CURVE_MAX_PTS keeps that many, spread evenly over its caps, the baseline included. */
int pfi_curve_from_run(const pfi_run *run, int family, pfi_curve *out, pfi_err *err);

/* A predicted curve: no measured points, throughput from the fit and draw = min(cap, P0). */
int pfi_curve_from_fit(const pfi_fit *fit, double t0, double p0_w, double cap0_w,
                       double min_cap_w, double max_cap_w, int n_gpus, double r_max,
                       pfi_curve *out, pfi_err *err);

/* s at shed r on the parametric fit (r <= 0 -> 0). */
double pfi_fit_s(const pfi_fit *fit, double r);

/* Weighted least squares of a family through the origin on points (r_i, s_i); w may be NULL
 * (equal weights).  Needs at least as many points with r > 0 as the family has free parameters. */
int pfi_fit_points(int family, const double *r, const double *s, const double *w, int n,
                   pfi_fit *out, pfi_err *err);
int pfi_family_params(int family);      /* free parameters of a family */
const char *pfi_family_name(int family); /* "power", "quad", "knee", "exp", "dvfs" */
int pfi_family_parse(const char *name);  /* -1 when unknown */

/* Isotonic regression (pool adjacent violators): y_fit non-decreasing in the given order,
 * minimizing sum w (y - y_fit)^2.  w may be NULL.  y_fit may alias y. */
void pfi_isotonic(const double *y, const double *w, int n, double *y_fit);
/* The same, unweighted, with y[pin] held exactly at its value (the baseline's s = 0): the
 * points before it are fitted alone and kept at or below it, those after alone and kept at or
 * above it, which is the constrained least-squares solution.  y_fit must not alias y. */
void pfi_isotonic_pinned(const double *y, int n, int pin, double *y_fit);

/* Points of a curve in (r, s) coordinates, sorted by r ascending: returns how many (<= max). */
int pfi_curve_points(const pfi_curve *c, double *r, double *s, int max);

/* The levels below the baseline cap as (r, y) sorted by r ascending, the origin (0, y0) first:
 * y[k] comes from y_of_level[level], so a caller reads the measured or the monotone throughput
 * or slowdown; levels listed in skip[0..nskip) are left out.  r and y hold
 * PFI_CURVE_MAX_PTS + 1.  Returns how many (>= 1). */
int pfi_curve_below_points(const pfi_curve *c, const double *y_of_level, double y0,
                           const int *skip, int nskip, double *r, double *y);

/* Interpolation in a table, for every table pfi reads (curves, draw models, clock tables):
 * y at x0 on the broken line through (x[i], y[i]), x ascending, linear between the points and
 * y[n-1] past the last.  Below x[0], pfi_lerp_sorted extends the first segment (callers keep
 * x0 >= x[0]) and pfi_lerp_held holds y[0].  (The allocator's own table, core/alloc.c, keeps a
 * binary search: it reads exact knots as y[k], where these compute them through the segment.) */
double pfi_lerp_sorted(const double *x, const double *y, int n, double x0);
double pfi_lerp_held(const double *x, const double *y, int n, double x0);

/* Per-GPU power drawn at a cap. */
double pfi_curve_draw_at_cap(const pfi_curve *c, double cap_w);
/* Relative throughput T(cap)/T0 at a per-GPU cap, clamped to [min_cap_w, max_cap_w]. */
double pfi_curve_rel_at_cap(const pfi_curve *c, int view, double cap_w);
/* Job throughput (run's unit) at a per-GPU cap: t0 * pfi_curve_rel_at_cap. */
double pfi_curve_tput_at_cap(const pfi_curve *c, int view, double cap_w);
/* Fills tput[i] (and draw_w[i] when non-NULL) at caps[i], i < n. */
void pfi_curve_tput_grid(const pfi_curve *c, int view, const double *caps, int n, double *tput,
                         double *draw_w);

#endif
