/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of a workspace rebuilt in its own buffers (core/alloc_solve.c, ws_build): when they
 * hold as many jobs, the one pass runs first and counts the hulls' slots as it goes; a list
 * whose hulls need more slots than the buffers hold stops it, and the buffers are made anew.
 * A workspace built for one list and rebuilt by set_jobs for another (the same jobs with
 * other curves, longer or shorter, fewer jobs, the same list, or one with a bad job) must give
 * what a new workspace for that list gives, bit for bit, or the same error, at every vector
 * level the CPU runs; and again after a second set_jobs at another budget.  Fleets in runs of
 * jobs sharing caps, of awkward throughputs (concave, equal, collinear, convex, zigzags, zeros,
 * subnormals, flat runs), SLA floors, weights, 1 and 5 W grids, every infeasibility mode. */
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

static unsigned long long rng = 7373;

static double urand(void)
{
    return pfi_rand_uniform(&rng);
}

static int irand(int lo, int hi) /* inclusive */
{
    return lo + (int)(urand() * (hi - lo + 1));
}

#define MAXJ 40
#define MAXP 24
_Static_assert(MAXJ <= ALLOC_FLEET_MAXJ && MAXP <= ALLOC_FLEET_MAXP, "a fleet holds them");

/* Runs of jobs sharing caps (core/alloc_solve.c builds their hulls in lanes), each job its own
 * range now and then. */
static void make_fleet(alloc_fleet *F, double step, int n)
{
    alloc_fleet_runs(F, &(alloc_fleet_opts){.step = step, .n = n, .np = MAXP}, &rng);
}

/* A workspace built for one list, rebuilt by set_jobs for another: the same answer (or error)
 * as a new workspace for that list.  The second list has the first's jobs with longer curves
 * (more hull slots than the buffers hold), fewer jobs, the same jobs, or a bad job. */
static void test_set_jobs_room(void **state)
{
    (void)state;
    static alloc_fleet A, B;
    int lv[3], nl = alloc_all_levels(lv);
    int grown = 0;
    for (int t = 0; t < 600; t++) {
        double step = t % 2 ? 1.0 : 5.0;
        make_fleet(&A, step, 4 + t % (MAXJ - 4));
        make_fleet(&B, step, A.n);
        int how = t % 4;
        if (how == 1)
            B.n = irand(1, A.n);
        if (how == 2)
            B = A;
        for (int j = 0; how == 2 && j < B.n; j++) { /* the copy's curves point into it */
            B.jobs[j].id = B.ids[j];
            B.jobs[j].tput = B.y[j];
            B.jobs[j].cap_w = &B.x[0][0] + (A.jobs[j].cap_w - &A.x[0][0]);
        }
        if (how == 3)
            B.y[irand(0, B.n - 1)][0] = NAN;
        long long slots_a = 0, slots_b = 0;
        for (int j = 0; j < A.n; j++)
            slots_a += 2 * A.jobs[j].n_points + 2;
        for (int j = 0; j < B.n; j++)
            slots_b += 2 * B.jobs[j].n_points + 2;
        grown += slots_b > slots_a && B.n == A.n && how != 3;
        double ba = alloc_budget_at(A.jobs, A.n, urand()), bb = alloc_budget_at(B.jobs, B.n, urand());
        for (int q = 0; q < nl; q++) {
            pfi_alloc_opts o = alloc_opts(step, t % 3, lv[q]);
            pfi_alloc_ws *w = NULL, *w0 = NULL;
            pfi_err e = {0}, e0 = {0};
            if (pfi_alloc_ws_new(A.jobs, A.n, ba, &o, &w, &e) != PFI_OK)
                continue;
            pfi_alloc_result r = {0}, r0 = {0};
            int rc = pfi_alloc_ws_set_jobs(w, B.jobs, B.n, bb, &e);
            if (!rc)
                rc = pfi_alloc_ws_solve(w, bb, &r, &e);
            int rc0 = pfi_alloc_ws_new(B.jobs, B.n, bb, &o, &w0, &e0);
            if (!rc0)
                rc0 = pfi_alloc_ws_solve(w0, bb, &r0, &e0);
            alloc_same_result(rc, &r, &e, rc0, &r0, &e0, "set_jobs", lv[q], t);
            /* and once more at another budget in the rebuilt buffers */
            pfi_alloc_result_free(&r);
            pfi_alloc_result_free(&r0);
            double b2 = alloc_budget_at(B.jobs, B.n, urand());
            memset(&e, 0, sizeof e);
            memset(&e0, 0, sizeof e0);
            rc = pfi_alloc_ws_set_jobs(w, B.jobs, B.n, b2, &e);
            if (!rc)
                rc = pfi_alloc_ws_solve(w, b2, &r, &e);
            rc0 = pfi_alloc_solve(B.jobs, B.n, b2, &o, &r0, &e0);
            alloc_same_result(rc, &r, &e, rc0, &r0, &e0, "set_jobs again", lv[q], t);
            pfi_alloc_result_free(&r);
            pfi_alloc_result_free(&r0);
            pfi_alloc_ws_free(w);
            pfi_alloc_ws_free(w0);
        }
    }
    assert_true(grown > 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_jobs_room),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
