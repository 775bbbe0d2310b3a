/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the hulls a fresh build makes 4 jobs at a time (core/alloc_vec.h,
 * pfi_alloc_vec_hulls4; core/alloc_solve.c, lane_flush): at every vector level this CPU runs,
 * (1) the lanes keep the vertices and give the slopes that pushing the candidates one by one
 * through the scalar drop test keeps and computes, bit for bit, on awkward values in each lane
 * (equal values, exactly collinear and collinear up to rounding, 2 and 3 candidates and the
 * most the lanes take, non-concave, zigzags, zeros, subnormals, values whose products overflow,
 * a point a hair above or below a chord, GPUs up to 2^31 - 1 and grid indices near 2^31);
 * (2) whole solves of fleets in runs of jobs sharing caps and ranges (so their hulls are made in
 * lanes), of every length around a multiple of 4 and with the runs broken by another range,
 * give the result bits (or the error) of the scalar code, one shot and through a workspace. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "core/alloc_vec.h"
#include "core/pfi.h"

#define NCMAX PFI_ALLOC_VEC_HULL_MAX

static unsigned long long rng = 9191;

static double urand(void)
{
    return pfi_rand_uniform(&rng);
}

static int irand(int lo, int hi) /* inclusive */
{
    return lo + (int)(urand() * (hi - lo + 1));
}

/* The vector levels above scalar that this CPU runs. */
static int vec_levels(int *lv)
{
    int n = 0;
    for (int l = PFI_ALLOC_VEC_AVX2; l <= PFI_ALLOC_VEC_AVX512; l++)
        if (pfi_alloc_vec_level(l) == l)
            lv[n++] = l;
    return n;
}

/* core/alloc_solve.c's hull_push, one candidate after another (the stack in arrays): the
 * candidates kept as bits, and each kept segment's slope as its shape pass divides it. */
static unsigned long long ref_hull(const double *K, const double *v, int nc, double n,
                                   double *slope)
{
    int st[NCMAX] = {0}, m = 0;
    for (int c = 0; c < nc; c++) {
        while (m >= 2) {
            double k0 = K[st[m - 2]], v0 = v[st[m - 2]], k1 = K[st[m - 1]], v1 = v[st[m - 1]];
            double l = (v1 - v0) * (K[c] - k0);
            double r = (v[c] - v0) * (k1 - k0);
            if (!(l <= r + 1e-13 * (fabs(l) + fabs(r))))
                break;
            m--;
        }
        st[m++] = c;
    }
    unsigned long long bits = 1ull << st[0];
    for (int i = 1; i < m; i++) {
        long long cost = (long long)n * (long long)(K[st[i]] - K[st[i - 1]]);
        slope[st[i]] = (v[st[i]] - v[st[i - 1]]) / (double)cost;
        bits |= 1ull << st[i];
    }
    return bits;
}

/* Lane values of one kind at the candidates K. */
static void fill_lane(double *v, const double *K, int nc, int kind)
{
    double top = 100 + 1e4 * urand(), a = 0.1 + urand(), s = urand() * 7;
    for (int c = 0; c < nc; c++) {
        double r = (K[c] - K[0]) / (K[nc - 1] - K[0] + 1);
        switch (kind) {
        case 0: v[c] = top * (1 - a * (1 - r) * (1 - r)); break;         /* concave */
        case 1: v[c] = top; break;                                         /* all equal */
        case 2: v[c] = 3 * K[c] + 7; break;                                /* exactly collinear */
        case 3: v[c] = 0.1 * K[c] * s + 0.3; break;                        /* collinear, rounded */
        case 4: v[c] = top * r * r; break;                                 /* convex */
        case 5: v[c] = top * urand(); break;                               /* zigzag */
        case 6: v[c] = c % 3 ? 0.0 : top * urand(); break;                 /* zeros */
        case 7: v[c] = 4.9e-324 * irand(0, 50); break;                     /* subnormals */
        case 8: v[c] = DBL_MAX * (0.5 + 0.5 * urand()); break;             /* products overflow */
        case 9: v[c] = c < nc / 2 ? top * r : top * (0.5 + r / 2); break;  /* flat after a rise */
        default: v[c] = top * (1 - a * (1 - r) * (1 - r)); break;
        }
        if (kind == 10 && c > 0 && c + 1 < nc && urand() < 0.5) /* a hair off the chord */
            v[c] = nextafter(v[c], urand() < 0.5 ? 0 : INFINITY);
        if (kind == 11 && c > 0 && urand() < 0.5) /* a flat run */
            v[c] = v[c - 1];
    }
}

static void test_hulls4(void **state)
{
    (void)state;
    int lv[2], nl = vec_levels(lv);
    double K[NCMAX + 1], V[4 * (NCMAX + 1)], N[4], SL[4 * (NCMAX + 1)], v[NCMAX], ref[NCMAX];
    unsigned long long alive[4];
    long long kept = 0, popped = 0;
    for (int t = 0; t < 40000; t++) {
        int nc = t % 5 == 0 ? irand(2, 3) : t % 7 == 0 ? NCMAX : irand(2, 14);
        double k = t % 11 == 0 ? 2147483647.0 - 2 * NCMAX * 40 : irand(1, 1000);
        for (int c = 0; c < nc; c++, k += t % 4 ? irand(1, 40) : 1)
            K[c] = k;
        int kinds[4];
        for (int l = 0; l < 4; l++) {
            kinds[l] = irand(0, 11);
            N[l] = t % 13 == 0 ? 2147483647.0 : irand(1, 32);
            fill_lane(v, K, nc, kinds[l]);
            for (int c = 0; c < nc; c++)
                V[4 * c + l] = v[c];
        }
        for (int q = 0; q < nl; q++) {
            memset(alive, 0, sizeof alive);
            memset(SL, 0, sizeof SL);
            assert_int_equal(pfi_alloc_vec_hulls4(lv[q], K, V, N, nc, alive, SL), 1);
            for (int l = 0; l < 4; l++) {
                for (int c = 0; c < nc; c++)
                    v[c] = V[4 * c + l];
                unsigned long long bits = ref_hull(K, v, nc, N[l], ref);
                if (alive[l] != bits)
                    fail_msg("level %d, case %d, lane %d (kind %d, %d candidates): vertices "
                             "%llx, the scalar pushes keep %llx",
                             lv[q], t, l, kinds[l], nc, alive[l], bits);
                for (int c = 1; c < nc; c++)
                    if ((bits >> c & 1) && c != __builtin_ctzll(bits) &&
                        memcmp(&SL[4 * c + l], &ref[c], sizeof ref[c]))
                        fail_msg("level %d, case %d, lane %d (kind %d): slope to %d is %a, the "
                                 "scalar one %a",
                                 lv[q], t, l, kinds[l], c, SL[4 * c + l], ref[c]);
                kept += __builtin_popcountll(bits);
                popped += nc - __builtin_popcountll(bits);
            }
        }
    }
    if (nl)
        assert_true(kept > 100000 && popped > 100000);
}

/* What the lanes do not take: the scalar level, fewer than 2 candidates, more than they hold. */
static void test_hulls4_refuses(void **state)
{
    (void)state;
    double K[NCMAX + 1], V[4 * (NCMAX + 1)] = {0}, N[4] = {1, 1, 1, 1}, SL[4 * (NCMAX + 1)];
    unsigned long long alive[4];
    for (int c = 0; c <= NCMAX; c++)
        K[c] = c + 1;
    assert_int_equal(pfi_alloc_vec_hulls4(PFI_ALLOC_VEC_SCALAR, K, V, N, 4, alive, SL), 0);
    int lv[2], nl = vec_levels(lv);
    for (int q = 0; q < nl; q++) {
        assert_int_equal(pfi_alloc_vec_hulls4(lv[q], K, V, N, 1, alive, SL), 0);
        assert_int_equal(pfi_alloc_vec_hulls4(lv[q], K, V, N, NCMAX + 1, alive, SL), 0);
        assert_int_equal(pfi_alloc_vec_hulls4(lv[q], K, V, N, NCMAX, alive, SL), 1);
    }
}

/* ---- whole solves ---- */

#define MAXJ 40
#define MAXP 80 /* a few curves longer than the lanes take */

typedef struct fleet {
    int n;
    pfi_alloc_job jobs[MAXJ];
    double x[MAXJ][MAXP], y[MAXJ][MAXP];
    char ids[MAXJ][8];
} fleet;

/* Runs of jobs sharing one cap array (or a copy), on the grid, each job its own throughputs
 * of an awkward kind; now and then a job with another range (min cap or an SLA floor) or its
 * own caps, which ends a run. */
static void make_fleet(fleet *F, double step, int n, int huge)
{
    F->n = n;
    int np = 0, lo_off = 0, hi_off = 0;
    double *cx = NULL;
    for (int j = 0; j < n; j++) {
        double *x = F->x[j], *y = F->y[j];
        int new_run = !cx || urand() < 0.08;
        if (new_run) {
            np = irand(2, urand() < 0.1 ? MAXP : 24);
            double c = step * irand(50, 200);
            for (int i = 0; i < np; i++, c += step * irand(1, 30))
                x[i] = c;
            cx = x;
        } else if (urand() < 0.5) {
            memcpy(x, cx, (size_t)np * sizeof *x);
        } else {
            x = cx;
        }
        double K[MAXP];
        for (int i = 0; i < np; i++)
            K[i] = x[i] / step;
        fill_lane(y, K, np, irand(0, 11));
        for (int i = 0; i < np && !huge; i++)
            if (y[i] > 1e12)
                y[i] = 1e12 * urand(); /* the bound's sums stay finite */
        snprintf(F->ids[j], sizeof F->ids[j], "j%d", j);
        if (new_run || urand() < 0.05) { /* the run's range, or one job's own */
            lo_off = urand() < 0.3 ? irand(1, 3) : 0;
            hi_off = urand() < 0.4 ? irand(-2, 3) : 0; /* above: the last point inside */
        }
        double lo = x[0] + step * lo_off, hi = x[np - 1] + step * hi_off;
        double sla = urand() < 0.04 ? 0.3 * urand() : NAN;
        F->jobs[j] = (pfi_alloc_job){F->ids[j], urand() < 0.1 ? 1000000 : irand(1, 8),
                                     lo, hi > lo ? hi : lo, x, F->y[j], np, 300, NAN, sla,
                                     urand() < 0.3 ? 0.5 + urand() : NAN};
    }
}

static void same_result(int rc, const pfi_alloc_result *r, const pfi_err *e, int rc0,
                        const pfi_alloc_result *r0, const pfi_err *e0, const char *how, int t)
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

static double budget_of(const fleet *F, double at)
{
    double lo = 0, hi = 0;
    for (int j = 0; j < F->n; j++) {
        lo += F->jobs[j].n_gpus * F->jobs[j].min_cap_w;
        hi += F->jobs[j].n_gpus * F->jobs[j].max_cap_w;
    }
    return lo + (hi - lo) * at;
}

static void test_solve_lanes(void **state)
{
    (void)state;
    int lv[2], nl = vec_levels(lv);
    const double steps[] = {1.0, 5.0, 0.5, 3.0};
    static fleet F;
    int solved = 0;
    for (int t = 0; t < 1200; t++) {
        double step = steps[t % 4];
        make_fleet(&F, step, 1 + t % MAXJ, t % 10 == 9);
        double budget = budget_of(&F, urand()), other = budget_of(&F, urand());
        pfi_alloc_opts o;
        pfi_alloc_opts_default(&o);
        o.step_w = step;
        o.on_infeasible = t % 3;
        o.vec = PFI_ALLOC_VEC_SCALAR;
        pfi_alloc_result r0 = {0}, q0 = {0};
        pfi_err e0 = {0}, f0 = {0};
        int rc0 = pfi_alloc_solve(F.jobs, F.n, budget, &o, &r0, &e0);
        int qc0 = pfi_alloc_solve(F.jobs, F.n, other, &o, &q0, &f0);
        solved += rc0 == PFI_OK;
        for (int q = 0; q < nl; q++) {
            o.vec = lv[q];
            pfi_alloc_result r = {0};
            pfi_err e = {0};
            int rc = pfi_alloc_solve(F.jobs, F.n, budget, &o, &r, &e);
            same_result(rc, &r, &e, rc0, &r0, &e0, "one shot", t);
            pfi_alloc_result_free(&r);
            pfi_alloc_ws *w = NULL;
            if (pfi_alloc_ws_new(F.jobs, F.n, budget, &o, &w, &e) == PFI_OK) {
                rc = pfi_alloc_ws_set_jobs(w, F.jobs, F.n, other, &e);
                if (!rc)
                    rc = pfi_alloc_ws_solve(w, other, &r, &e);
                same_result(rc, &r, &e, qc0, &q0, &f0, "set_jobs", t);
                pfi_alloc_result_free(&r);
                pfi_alloc_ws_free(w);
            }
        }
        pfi_alloc_result_free(&r0);
        pfi_alloc_result_free(&q0);
    }
    assert_true(solved > 500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hulls4),
        cmocka_unit_test(test_hulls4_refuses),
        cmocka_unit_test(test_solve_lanes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
