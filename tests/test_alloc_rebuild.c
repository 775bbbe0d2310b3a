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
    int np = 0;
    double *cx = NULL;
    for (int j = 0; j < n; j++) {
        double *x = F->x[j], *y = F->y[j];
        if (!cx || urand() < 0.08) { /* a new run */
            np = irand(2, MAXP);
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
        double lo = x[0], hi = x[np - 1];
        if (urand() < 0.05)
            lo = x[0] + step * irand(1, 3);
        if (urand() < 0.05)
            hi = x[np - 1] + step * irand(-2, 2);
        double sla = urand() < 0.04 ? 0.3 * urand() : NAN;
        F->jobs[j] = (pfi_alloc_job){F->ids[j], urand() < 0.1 ? 1000000 : irand(1, 8),
                                     lo, hi > lo ? hi : lo, x, F->y[j], np, 300, NAN, sla,
                                     urand() < 0.3 ? 0.5 + urand() : NAN};
    }
}

/* A workspace built for one list, rebuilt by set_jobs for another: the same answer (or error)
 * as a new workspace for that list.  The second list has the first's jobs with longer curves
 * (more hull slots than the buffers hold), fewer jobs, the same jobs, or a bad job. */
static void test_set_jobs_room(void **state)
{
    (void)state;
    static fleet A, B;
    int lv[3] = {PFI_ALLOC_VEC_SCALAR}, nl = 1 + alloc_vec_levels(lv + 1);
    int grown = 0;
    for (int t = 0; t < 600; t++) {
        double step = t % 2 ? 1.0 : 5.0;
        make_fleet(&A, step, 4 + t % (MAXJ - 4), 0);
        make_fleet(&B, step, A.n, 0);
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
            pfi_alloc_opts o;
            pfi_alloc_opts_default(&o);
            o.step_w = step;
            o.on_infeasible = t % 3;
            o.vec = lv[q];
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
            alloc_same_result(rc, &r, &e, rc0, &r0, &e0, "set_jobs", t);
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
            alloc_same_result(rc, &r, &e, rc0, &r0, &e0, "set_jobs again", t);
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
