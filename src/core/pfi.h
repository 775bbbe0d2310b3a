/* SPDX-License-Identifier: Apache-2.0 */
/* pfi.h: the Power Flexibility Index of a job, pfi's definition (docs/pfi.md), chosen to match
 * the paper's abstract:
 *   baseline: the default power limit, throughput T0, mean per-GPU power drawn P0
 *   r = 1 - P/P0 (power shed, as drawn), s = 1 - T/T0 (slowdown), PFI(r) = s(r) / r
 *   headline PFI30 = PFI(0.30): where the measured sheds bracket the depth, the monotone
 *   interpolation of the measured points; beyond the deepest measured shed, the fitted curve,
 *   always marked as an extrapolation; also PFI at 10, 20, 40% by the same rule
 *   SLA primitive: for a slowdown budget s_max, the largest r with s(r) <= s_max.
 * 0 = power is given back for free, 1 = throughput falls in proportion, > 1 = worse.
 * The confidence interval comes from a wild bootstrap of the fit's residuals (plus each level's
 * own throughput interval when the run has one), seeded: the same run gives the same interval.
 * The headline's interval covers the choice of curve: each replicate is read both on the
 * monotone interpolation and on the fit, and the interval spans both (and both estimates).
 * Pure: no I/O, no globals. */
#ifndef PFI_CORE_PFI_H
#define PFI_CORE_PFI_H

#include "core/curve.h"
#include "core/err.h"
#include "core/run.h"

#define PFI_N_DEPTHS 4   /* 0.10, 0.20, 0.30, 0.40 */
#define PFI_N_BUDGETS 3  /* slowdown budgets 0.02, 0.05, 0.10 */

extern const double pfi_depths[PFI_N_DEPTHS];
extern const double pfi_budgets[PFI_N_BUDGETS];

typedef struct pfi_index_opts {
    int family;              /* curve family; < 0: pfi_default_family */
    double depth;            /* headline depth (0 < depth < 1); 0 means 0.30 */
    int extrapolate;         /* read the fit beyond the deepest measured shed (marked) */
    int n_boot;              /* bootstrap replicates for the CI; 0: no CI; < 0: default 400 */
    unsigned long long seed; /* bootstrap seed */
} pfi_index_opts;

/* Defaults: family -1, depth 0.30, no extrapolation, 400 replicates, seed 1. */
pfi_index_opts pfi_index_defaults(void);

typedef struct pfi_index {
    double t0, p0_w, cap0_w;
    int n_points;            /* levels used, baseline included */
    double r_max;            /* deepest shed measured */
    int never_bound;         /* pfi_curve_never_bound: no fit, no PFI */
    pfi_fit fit;
    double depth;            /* the headline depth */
    double pfi;              /* PFI(depth) on the fit; NAN when depth > r_max without extrapolate
                              * (a depth within 0.01 past r_max is still read, marked) */
    double pfi_lo, pfi_hi;   /* 95% bootstrap interval of the fit's value (NAN when none) */
    int extrapolated;        /* depth > r_max: beyond the deepest measured shed */
    /* The headline at depth: the monotone interpolation of the measured points where they
     * reach the depth, else the fit's pfi (extrapolated, marked); its interval spans the
     * bootstrap of both the interpolation and the fit. */
    double pfi_head, head_lo, head_hi;
    double pfi_interp;       /* the monotone interpolation at depth; NAN when depth > r_max */
    double pfi_at[PFI_N_DEPTHS];     /* at pfi_depths[], same rule */
    int extrap_at[PFI_N_DEPTHS];     /* pfi_depths[k] > r_max */
    double pfi_mono_at[PFI_N_DEPTHS]; /* on the monotone fit (never extrapolated) */
    double head_at[PFI_N_DEPTHS];    /* the headline rule at pfi_depths[]: interpolation where
                                      * bracketed, else pfi_at (marked by extrap_at) */
    double shed_at[PFI_N_BUDGETS];   /* largest r with s(r) <= pfi_budgets[k], s read on the
                                      * monotone interpolation of the measured points, a cap
                                      * never bound too (the fit past r_max only with
                                      * extrapolate) */
    int shed_limited[PFI_N_BUDGETS]; /* 1: the budget was not used up within the reachable range
                                      * (shed_at is then a lower bound) */
    int shed_extrap[PFI_N_BUDGETS];  /* 1: shed_at read on the fit beyond r_max */
    double s_max_seen;       /* largest measured slowdown */
    int non_monotone;        /* measured throughput rose somewhere as the cap fell (> 1%) */
} pfi_index;

/* PFI(r) = s(r)/r on a fit (r > 0). */
double pfi_at(const pfi_fit *fit, double r);
/* Largest r in [0, r_limit] with s(r) <= s_max on a fit (its families are non-decreasing). */
double pfi_shed_at_slowdown(const pfi_fit *fit, double s_max, double r_limit);

/* The index of a measured run (builds its curve).  PFI_EINVAL when the run has too few levels. */
int pfi_index_run(const pfi_run *run, const pfi_index_opts *o, pfi_index *out, pfi_err *err);
/* The index of a curve; sd[i] (may be NULL) is the standard deviation of the slowdown of the
 * curve's i-th measured point (cap order) from its own throughput interval. */
int pfi_index_curve(const pfi_curve *c, const double *sd, const pfi_index_opts *o, pfi_index *out,
                    pfi_err *err);

/* The seeded generator the bootstrap uses (splitmix64); state lives with the caller. */
unsigned long long pfi_rand_next(unsigned long long *state);
double pfi_rand_uniform(unsigned long long *state);  /* [0, 1) */
double pfi_rand_normal(unsigned long long *state);
/* order[0..n) = a uniform random permutation of 0..n-1 (Fisher-Yates, from the last place down). */
void pfi_rand_permutation(int *order, int n, unsigned long long *state);

#endif
