/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_fleet.h: what the allocator's whole-solve tests (tests/test_alloc_lanes.c,
 * tests/test_alloc_rebuild.c, tests/test_alloc_caps.c, tests/test_alloc_vec.c) share: a fleet's
 * storage, fleets in runs of jobs sharing caps, awkward curve values, the vector levels to run,
 * the options of a solve, a bit for bit comparison of two answers and a budget between a
 * fleet's least and most; and the plain curve the warm re-solve tests (tests/test_alloc_warm.c,
 * tests/test_alloc_reuse.c) draw their jobs on.  Each test draws from its own seed (the state is passed), so a test's
 * fleets do not depend on another's.  Header only (static inline): it calls cmocka, which the
 * benchmarks that link tests/support do not. */
#ifndef PFI_TESTS_SUPPORT_ALLOC_FLEET_H
#define PFI_TESTS_SUPPORT_ALLOC_FLEET_H

#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "core/alloc_vec.h"
#include "core/pfi.h"

/* The vector levels above scalar that this CPU runs. */
static inline int alloc_vec_levels(int *lv)
{
    int n = 0;
    for (int l = PFI_ALLOC_VEC_AVX2; l <= PFI_ALLOC_VEC_AVX512; l++)
        if (pfi_alloc_vec_level(l) == l)
            lv[n++] = l;
    return n;
}

/* Every level this CPU runs, scalar first (lv holds 3). */
static inline int alloc_all_levels(int *lv)
{
    lv[0] = PFI_ALLOC_VEC_SCALAR;
    return 1 + alloc_vec_levels(lv + 1);
}

/* The options of a solve on a grid of step W at a vector level. */
static inline pfi_alloc_opts alloc_opts(double step, int on_infeasible, int vec)
{
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.step_w = step;
    o.on_infeasible = on_infeasible;
    o.vec = vec;
    return o;
}

static inline double alloc_urand(unsigned long long *rng)
{
    return pfi_rand_uniform(rng);
}

static inline int alloc_irand(unsigned long long *rng, int lo, int hi) /* inclusive */
{
    return lo + (int)(alloc_urand(rng) * (hi - lo + 1));
}

/* Throughputs y at caps x[0..np): concave (from t, each slope a random share of the one
 * before, the first slope given) or, when not concave, each anywhere in 20 to 100.  Draws from
 * *rng: np values when not concave, np - 1 shares when concave. */
static inline void alloc_curve_tput(double *y, const double *x, int np, int concave, double t,
                                    double slope, unsigned long long *rng)
{
    for (int i = 0; i < np; i++) {
        if (concave && i > 0) {
            slope *= alloc_urand(rng);
            t += slope * (x[i] - x[i - 1]);
        }
        y[i] = concave ? t : 20 + 80 * alloc_urand(rng);
    }
}

/* Values of one kind at the grid indices K (a curve's throughputs, or a lane's), drawn from
 * *rng. */
static inline void alloc_fill_lane(double *v, const double *K, int nc, int kind,
                                   unsigned long long *rng)
{
    double top = 100 + 1e4 * pfi_rand_uniform(rng), a = 0.1 + pfi_rand_uniform(rng), s = pfi_rand_uniform(rng) * 7;
    for (int c = 0; c < nc; c++) {
        double r = (K[c] - K[0]) / (K[nc - 1] - K[0] + 1);
        switch (kind) {
        case 0: v[c] = top * (1 - a * (1 - r) * (1 - r)); break;         /* concave */
        case 1: v[c] = top; break;                                         /* all equal */
        case 2: v[c] = 3 * K[c] + 7; break;                                /* exactly collinear */
        case 3: v[c] = 0.1 * K[c] * s + 0.3; break;                        /* collinear, rounded */
        case 4: v[c] = top * r * r; break;                                 /* convex */
        case 5: v[c] = top * pfi_rand_uniform(rng); break;                               /* zigzag */
        case 6: v[c] = c % 3 ? 0.0 : top * pfi_rand_uniform(rng); break;                 /* zeros */
        case 7: v[c] = 4.9e-324 * (int)(pfi_rand_uniform(rng) * 51); break;                     /* subnormals */
        case 8: v[c] = DBL_MAX * (0.5 + 0.5 * pfi_rand_uniform(rng)); break;             /* products overflow */
        case 9: v[c] = c < nc / 2 ? top * r : top * (0.5 + r / 2); break;  /* flat after a rise */
        default: v[c] = top * (1 - a * (1 - r) * (1 - r)); break;
        }
        if (kind == 10 && c > 0 && c + 1 < nc && pfi_rand_uniform(rng) < 0.5) /* a hair off the chord */
            v[c] = nextafter(v[c], pfi_rand_uniform(rng) < 0.5 ? 0 : INFINITY);
        if (kind == 11 && c > 0 && pfi_rand_uniform(rng) < 0.5) /* a flat run */
            v[c] = v[c - 1];
    }
}

/* A fleet's jobs and the curves they point into; a test draws fewer jobs and points than
 * these bounds (its own, which its draws depend on). */
#define ALLOC_FLEET_MAXJ 60
#define ALLOC_FLEET_MAXP 80

typedef struct alloc_fleet {
    int n;
    pfi_alloc_job jobs[ALLOC_FLEET_MAXJ];
    double x[ALLOC_FLEET_MAXJ][ALLOC_FLEET_MAXP], y[ALLOC_FLEET_MAXJ][ALLOC_FLEET_MAXP];
    char ids[ALLOC_FLEET_MAXJ][8];
} alloc_fleet;

/* How alloc_fleet_runs draws a fleet. */
typedef struct alloc_fleet_opts {
    double step;    /* the cap grid, W */
    int n;          /* jobs */
    int huge;       /* 1: throughputs past 1e12 are kept (products overflow the bound's sums) */
    int np;         /* a run's curve has 2 to np points... */
    int np_long;    /* ...or, if not 0, one run in 10 2 to np_long (longer than the lanes take) */
    int run_ranges; /* 1: a run's jobs share a range (min cap, max cap past or short of the last
                     * point), now and then one job its own, which the rest of the run keeps;
                     * 0: each job the curve's ends, one in 20 a min cap or a max cap moved */
} alloc_fleet_opts;

/* Runs of jobs sharing one cap array (or a copy), on the grid, each job its own throughputs
 * of an awkward kind; now and then a job with another range (min cap or an SLA floor) or its
 * own caps, which ends a run.  Draws from *rng. */
static inline void alloc_fleet_runs(alloc_fleet *F, const alloc_fleet_opts *o,
                                    unsigned long long *rng)
{
    double step = o->step;
    F->n = o->n;
    int np = 0, lo_off = 0, hi_off = 0;
    double *cx = NULL;
    for (int j = 0; j < o->n; j++) {
        double *x = F->x[j], *y = F->y[j];
        int new_run = !cx || alloc_urand(rng) < 0.08;
        if (new_run) {
            np = alloc_irand(rng, 2, o->np_long && alloc_urand(rng) < 0.1 ? o->np_long : o->np);
            double c = step * alloc_irand(rng, 50, 200);
            for (int i = 0; i < np; i++, c += step * alloc_irand(rng, 1, 30))
                x[i] = c;
            cx = x;
        } else if (alloc_urand(rng) < 0.5) {
            memcpy(x, cx, (size_t)np * sizeof *x);
        } else {
            x = cx;
        }
        double K[ALLOC_FLEET_MAXP];
        for (int i = 0; i < np; i++)
            K[i] = x[i] / step;
        alloc_fill_lane(y, K, np, alloc_irand(rng, 0, 11), rng);
        for (int i = 0; i < np && !o->huge; i++)
            if (y[i] > 1e12)
                y[i] = 1e12 * alloc_urand(rng); /* the bound's sums stay finite */
        snprintf(F->ids[j], sizeof F->ids[j], "j%d", j);
        double lo, hi;
        if (o->run_ranges) {
            if (new_run || alloc_urand(rng) < 0.05) { /* the run's range, or one job's own */
                lo_off = alloc_urand(rng) < 0.3 ? alloc_irand(rng, 1, 3) : 0;
                hi_off = alloc_urand(rng) < 0.4 ? alloc_irand(rng, -2, 3) : 0; /* above: the last point inside */
            }
            lo = x[0] + step * lo_off;
            hi = x[np - 1] + step * hi_off;
        } else {
            lo = x[0];
            hi = x[np - 1];
            if (alloc_urand(rng) < 0.05)
                lo = x[0] + step * alloc_irand(rng, 1, 3);
            if (alloc_urand(rng) < 0.05)
                hi = x[np - 1] + step * alloc_irand(rng, -2, 2);
        }
        double sla = alloc_urand(rng) < 0.04 ? 0.3 * alloc_urand(rng) : NAN;
        F->jobs[j] = (pfi_alloc_job){F->ids[j], alloc_urand(rng) < 0.1 ? 1000000 : alloc_irand(rng, 1, 8),
                                     lo, hi > lo ? hi : lo, x, F->y[j], np, 300, NAN, sla,
                                     alloc_urand(rng) < 0.3 ? 0.5 + alloc_urand(rng) : NAN};
    }
}

/* Two answers (or errors) the same, every field bit for bit; how, level and t name the case. */
static inline void alloc_same_result(int rc, const pfi_alloc_result *r, const pfi_err *e, int rc0,
                                     const pfi_alloc_result *r0, const pfi_err *e0, const char *how,
                                     int level, int t)
{
    if (rc != rc0 || strcmp(e->msg, e0->msg))
        fail_msg("%s, level %d, fleet %d: rc %d '%s' against %d '%s'", how, level, t, rc, e->msg,
                 rc0, e0->msg);
    if (rc)
        return;
    size_t n = (size_t)r->n;
    assert_int_equal(r->n, r0->n);
    if (memcmp(r->cap_w, r0->cap_w, n * sizeof *r->cap_w) ||
        memcmp(r->tput, r0->tput, n * sizeof *r->tput) ||
        memcmp(r->floor_w, r0->floor_w, n * sizeof *r->floor_w) ||
        memcmp(r->sla, r0->sla, n * sizeof *r->sla) ||
        memcmp(r->flags, r0->flags, n * sizeof *r->flags))
        fail_msg("%s, level %d, fleet %d: per-job fields differ", how, level, t);
    double d[] = {r->budget_w, r->power_w, r->value, r->upper_bound, r->min_budget_w,
                  r->min_budget_nosla_w, r->sla_extra};
    double d0[] = {r0->budget_w, r0->power_w, r0->value, r0->upper_bound, r0->min_budget_w,
                   r0->min_budget_nosla_w, r0->sla_extra};
    long long i[] = {r->optimal, r->budget_binds, r->n_sla_dropped, r->nodes};
    long long i0[] = {r0->optimal, r0->budget_binds, r0->n_sla_dropped, r0->nodes};
    if (memcmp(d, d0, sizeof d) || memcmp(i, i0, sizeof i))
        fail_msg("%s, level %d, fleet %d: totals differ (value %a against %a)", how, level, t,
                 r->value, r0->value);
}

/* The budget a fraction at of the way from the jobs' least (each at its lowest cap) to their
 * most. */
static inline double alloc_budget_at(const pfi_alloc_job *jobs, int n, double at)
{
    double lo = 0, hi = 0;
    for (int j = 0; j < n; j++) {
        lo += jobs[j].n_gpus * jobs[j].min_cap_w;
        hi += jobs[j].n_gpus * jobs[j].max_cap_w;
    }
    return lo + (hi - lo) * at;
}

#endif
