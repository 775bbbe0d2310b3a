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
#include "support/alloc_fleet.h"

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

static void test_hulls4(void **state)
{
    (void)state;
    int lv[2], nl = alloc_vec_levels(lv);
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
            alloc_fill_lane(v, K, nc, kinds[l], &rng);
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
    int lv[2], nl = alloc_vec_levels(lv);
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
        alloc_fill_lane(y, K, np, irand(0, 11), &rng);
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

static void test_solve_lanes(void **state)
{
    (void)state;
    int lv[2], nl = alloc_vec_levels(lv);
    const double steps[] = {1.0, 5.0, 0.5, 3.0};
    static fleet F;
    int solved = 0;
    for (int t = 0; t < 1200; t++) {
        double step = steps[t % 4];
        make_fleet(&F, step, 1 + t % MAXJ, t % 10 == 9);
        double budget = alloc_budget_at(F.jobs, F.n, urand()), other = alloc_budget_at(F.jobs, F.n, urand());
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
            alloc_same_result(rc, &r, &e, rc0, &r0, &e0, "one shot", t);
            pfi_alloc_result_free(&r);
            pfi_alloc_ws *w = NULL;
            if (pfi_alloc_ws_new(F.jobs, F.n, budget, &o, &w, &e) == PFI_OK) {
                rc = pfi_alloc_ws_set_jobs(w, F.jobs, F.n, other, &e);
                if (!rc)
                    rc = pfi_alloc_ws_solve(w, other, &r, &e);
                alloc_same_result(rc, &r, &e, qc0, &q0, &f0, "set_jobs", t);
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
