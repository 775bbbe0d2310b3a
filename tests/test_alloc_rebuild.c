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

static unsigned long long rng = 7373;

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

/* Values of one kind at the grid indices K (throughputs of a curve). */
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
        fill_lane(y, K, np, irand(0, 11));
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

/* A workspace built for one list, rebuilt by set_jobs for another: the same answer (or error)
 * as a new workspace for that list.  The second list has the first's jobs with longer curves
 * (more hull slots than the buffers hold), fewer jobs, the same jobs, or a bad job. */
static void test_set_jobs_room(void **state)
{
    (void)state;
    static fleet A, B;
    int lv[3] = {PFI_ALLOC_VEC_SCALAR}, nl = 1 + vec_levels(lv + 1);
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
        double ba = budget_of(&A, urand()), bb = budget_of(&B, urand());
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
            same_result(rc, &r, &e, rc0, &r0, &e0, "set_jobs", t);
            /* and once more at another budget in the rebuilt buffers */
            pfi_alloc_result_free(&r);
            pfi_alloc_result_free(&r0);
            double b2 = budget_of(&B, urand());
            memset(&e, 0, sizeof e);
            memset(&e0, 0, sizeof e0);
            rc = pfi_alloc_ws_set_jobs(w, B.jobs, B.n, b2, &e);
            if (!rc)
                rc = pfi_alloc_ws_solve(w, b2, &r, &e);
            rc0 = pfi_alloc_solve(B.jobs, B.n, b2, &o, &r0, &e0);
            same_result(rc, &r, &e, rc0, &r0, &e0, "set_jobs again", t);
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
