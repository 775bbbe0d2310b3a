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
_Static_assert(MAXJ <= ALLOC_FLEET_MAXJ && MAXP <= ALLOC_FLEET_MAXP, "a fleet holds them");

static void test_solve_lanes(void **state)
{
    (void)state;
    int lv[2], nl = alloc_vec_levels(lv);
    const double steps[] = {1.0, 5.0, 0.5, 3.0};
    static alloc_fleet F;
    int solved = 0;
    for (int t = 0; t < 1200; t++) {
        double step = steps[t % 4];
        alloc_fleet_runs(&F, &(alloc_fleet_opts){.step = step, .n = 1 + t % MAXJ,
                                                 .huge = t % 10 == 9, .np = 24, .np_long = MAXP,
                                                 .run_ranges = 1},
                         &rng);
        double budget = alloc_budget_at(F.jobs, F.n, urand()), other = alloc_budget_at(F.jobs, F.n, urand());
        pfi_alloc_opts o = alloc_opts(step, t % 3, PFI_ALLOC_VEC_SCALAR);
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
            alloc_same_result(rc, &r, &e, rc0, &r0, &e0, "one shot", lv[q], t);
            pfi_alloc_result_free(&r);
            pfi_alloc_ws *w = NULL;
            if (pfi_alloc_ws_new(F.jobs, F.n, budget, &o, &w, &e) == PFI_OK) {
                rc = pfi_alloc_ws_set_jobs(w, F.jobs, F.n, other, &e);
                if (!rc)
                    rc = pfi_alloc_ws_solve(w, other, &r, &e);
                alloc_same_result(rc, &r, &e, qc0, &q0, &f0, "set_jobs", lv[q], t);
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
