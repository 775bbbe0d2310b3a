/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_fleet.h: what the allocator's lane and rebuild tests (tests/test_alloc_lanes.c,
 * tests/test_alloc_rebuild.c) share: awkward curve values, the vector levels to run, a bit
 * for bit comparison of two answers and a budget between a fleet's least and most.  Header
 * only (static inline): it calls cmocka, which the benchmarks that link tests/support do not. */
#ifndef PFI_TESTS_SUPPORT_ALLOC_FLEET_H
#define PFI_TESTS_SUPPORT_ALLOC_FLEET_H

#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

/* Two answers (or errors) the same, every field bit for bit; how and t name the case. */
static inline void alloc_same_result(int rc, const pfi_alloc_result *r, const pfi_err *e, int rc0,
                                     const pfi_alloc_result *r0, const pfi_err *e0, const char *how,
                                     int t)
{
    if (rc != rc0 || strcmp(e->msg, e0->msg))
        fail_msg("%s, fleet %d: rc %d '%s' against %d '%s'", how, t, rc, e->msg, rc0, e0->msg);
    if (rc)
        return;
    size_t n = (size_t)r->n;
    assert_int_equal(r->n, r0->n);
    if (memcmp(r->cap_w, r0->cap_w, n * sizeof *r->cap_w) ||
        memcmp(r->tput, r0->tput, n * sizeof *r->tput) ||
        memcmp(r->floor_w, r0->floor_w, n * sizeof *r->floor_w) ||
        memcmp(r->sla, r0->sla, n * sizeof *r->sla) ||
        memcmp(r->flags, r0->flags, n * sizeof *r->flags))
        fail_msg("%s, fleet %d: per-job fields differ", how, t);
    double d[] = {r->budget_w, r->power_w, r->value, r->upper_bound, r->min_budget_w,
                  r->min_budget_nosla_w, r->sla_extra};
    double d0[] = {r0->budget_w, r0->power_w, r0->value, r0->upper_bound, r0->min_budget_w,
                   r0->min_budget_nosla_w, r0->sla_extra};
    long long i[] = {r->optimal, r->budget_binds, r->n_sla_dropped, r->nodes};
    long long i0[] = {r0->optimal, r0->budget_binds, r0->n_sla_dropped, r0->nodes};
    if (memcmp(d, d0, sizeof d) || memcmp(i, i0, sizeof i))
        fail_msg("%s, fleet %d: totals differ (value %a against %a)", how, t, r->value,
                 r0->value);
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
