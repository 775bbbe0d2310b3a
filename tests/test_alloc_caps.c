/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of a fresh build's shortcut for a job whose caps are those of the job before in the
 * list (core/alloc_solve.c, ws_build_onepass): its point count, caps and cap range the same
 * bits, it takes that job's cap tests, grid range, on-grid answer and (for the same range) the
 * breakpoints inside its range instead of making them again.  Every answer must be the one of
 * the build that makes them for each job (pfi_alloc_opts.caps_alone), bit for bit, at every
 * vector level the CPU runs: fleets in runs of jobs sharing caps (the same array, a copy, or
 * its first points only), with their own throughputs (concave, flat tails, non-concave, zeros
 * and -0), cap ranges the same or not (by a watt or by an ulp), a cap moved by an ulp, SLA
 * floors that move a job's range inside a run, weights, caps off the grid, curves of 2-30
 * points, bad throughputs or other bad fields in a job of a run (the error and its text),
 * grids of 1, 5, 0.5 and 3 W; one-shot solves, and a workspace rebuilt by set_jobs. */
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

#define MAXJ 60
#define MAXP 30
_Static_assert(MAXJ <= ALLOC_FLEET_MAXJ && MAXP <= ALLOC_FLEET_MAXP, "a fleet holds them");

static unsigned long long rng = 4242;

static double urand(void)
{
    return pfi_rand_uniform(&rng);
}

static int irand(int lo, int hi) /* inclusive */
{
    return lo + (int)(urand() * (hi - lo + 1));
}

static void make_caps(double *x, int np, double step)
{
    double c = step * irand(50, 200);
    int dk = irand(1, 30);
    for (int i = 0; i < np; i++, c += step * (urand() < 0.7 ? dk : irand(1, 40)))
        x[i] = c;
    if (urand() < 0.15) /* one cap half a step off the grid */
        x[irand(0, np - 1)] += step / 2;
}

static void make_tput(double *y, int np)
{
    int shape = irand(0, 3), flat = irand(1, np);
    double top = 500 + 2000 * urand(), a = 0.2 + 0.8 * urand();
    for (int i = 0; i < np; i++) {
        double r = np > 1 ? (double)i / (np - 1) : 0;
        switch (shape) {
        case 0: y[i] = top * (1 - a * (1 - r) * (1 - r)); break; /* concave */
        case 1: y[i] = top * (0.3 + 0.7 * r * r); break;         /* convex */
        case 2: y[i] = top * (0.5 + 0.3 * r + 0.2 * urand()); break;
        default: y[i] = i == 0 ? (urand() < 0.5 ? -0.0 : 0.0) : top * r; break; /* from zero */
        }
        if (i >= flat)
            y[i] = y[i - 1]; /* a flat tail */
    }
}

/* Returns how many jobs have the caps of the job before (bits). */
static int make_fleet(alloc_fleet *F, double step)
{
    F->n = irand(1, MAXJ);
    int shared = 0;
    double share = urand(); /* how often a job takes the caps of the one before */
    for (int j = 0; j < F->n; j++) {
        pfi_alloc_job *J = &F->jobs[j], *P = j ? &F->jobs[j - 1] : NULL;
        double *x = F->x[j], *y = F->y[j];
        snprintf(F->ids[j], sizeof F->ids[j], "j%d", j);
        if (P && urand() < share) {
            *J = *P;
            J->id = F->ids[j];
            if (urand() < 0.5) { /* a copy of the caps, not the same array */
                memcpy(x, P->cap_w, (size_t)P->n_points * sizeof *x);
                J->cap_w = x;
                if (urand() < 0.1) /* one cap an ulp away: not the same caps */
                    x[irand(0, J->n_points - 1)] =
                        nextafter(x[irand(0, J->n_points - 1)], INFINITY);
            }
            if (J->n_points > 2 && urand() < 0.05) /* the first caps alone: a shorter curve */
                J->n_points--;
            double u = urand();
            if (u < 0.1) /* another range: by a watt or an ulp */
                J->min_cap_w += urand() < 0.5 ? 1 : J->min_cap_w * 0x1p-52;
            else if (u < 0.2)
                J->max_cap_w -= urand() < 0.5 ? 1 : J->max_cap_w * 0x1p-53;
            shared += J->n_points == P->n_points && u >= 0.2 &&
                         !memcmp(J->cap_w, P->cap_w, (size_t)J->n_points * sizeof *x);
        } else {
            int np = irand(2, urand() < 0.3 ? MAXP : 12);
            make_caps(x, np, step);
            double lo = urand() < 0.5 ? x[0] : x[0] + (x[np - 1] - x[0]) * 0.3 * urand();
            double hi = urand() < 0.5 ? x[np - 1] : lo + (x[np - 1] - lo) * urand();
            if (urand() < 0.2)
                hi = x[np - 1] + step * irand(1, 20); /* past the curve */
            *J = (pfi_alloc_job){F->ids[j], 1, lo, hi, x, y, np, 300, NAN, NAN, NAN};
        }
        J->tput = y;
        make_tput(y, J->n_points);
        J->n_gpus = irand(1, 8);
        J->sla = urand() < 0.25 ? 0.3 * urand() : NAN; /* moves the range's floor */
        J->weight = urand() < 0.3 ? 0.5 + urand() : NAN;
        if (urand() < 0.008) { /* a bad job: its throughput, or another field */
            switch (irand(0, 4)) {
            case 0: y[irand(0, J->n_points - 1)] = NAN; break;
            case 1: y[irand(0, J->n_points - 1)] = -1; break;
            case 2: y[irand(0, J->n_points - 1)] = INFINITY; break;
            case 3: J->p0_w = 0; break;
            default: J->n_gpus = 0; break;
            }
        }
    }
    return shared;
}

static void test_shared_caps(void **state)
{
    (void)state;
    int lv[3], nl = alloc_all_levels(lv);
    const double steps[] = {1.0, 5.0, 0.5, 3.0};
    static alloc_fleet F;
    long long shared = 0;
    int solved = 0;
    for (int t = 0; t < 1500; t++) {
        double step = steps[t % 4];
        shared += make_fleet(&F, step);
        double budget = alloc_budget_at(F.jobs, F.n, urand()), other = alloc_budget_at(F.jobs, F.n, urand());
        for (int k = 0; k < nl; k++) {
            pfi_alloc_opts o = alloc_opts(step, t % 3, lv[k]);
            o.caps_alone = 1;
            pfi_alloc_result r0 = {0}, r = {0};
            pfi_err e0 = {0}, e = {0};
            int rc0 = pfi_alloc_solve(F.jobs, F.n, budget, &o, &r0, &e0);
            o.caps_alone = 0;
            int rc = pfi_alloc_solve(F.jobs, F.n, budget, &o, &r, &e);
            alloc_same_result(rc, &r, &e, rc0, &r0, &e0, "one shot", lv[k], t);
            solved += rc0 == PFI_OK;
            pfi_alloc_result_free(&r);
            pfi_alloc_result_free(&r0);
            /* a workspace rebuilt for another budget (set_jobs: a fresh build in its buffers) */
            pfi_alloc_ws *w = NULL;
            if (pfi_alloc_ws_new(F.jobs, F.n, budget, &o, &w, &e) == PFI_OK) {
                memset(&e, 0, sizeof e);
                rc = pfi_alloc_ws_set_jobs(w, F.jobs, F.n, other, &e);
                if (!rc)
                    rc = pfi_alloc_ws_solve(w, other, &r, &e);
                o.caps_alone = 1;
                rc0 = pfi_alloc_solve(F.jobs, F.n, other, &o, &r0, &e0);
                alloc_same_result(rc, &r, &e, rc0, &r0, &e0, "set_jobs", lv[k], t);
                pfi_alloc_result_free(&r);
                pfi_alloc_result_free(&r0);
                pfi_alloc_ws_free(w);
            }
        }
    }
    print_message("%lld jobs with the caps of the job before, %d solves\n", shared, solved);
    assert_true(shared > 10000 && solved > 2000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
