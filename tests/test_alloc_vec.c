/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the allocator's per-job tests in vector lanes (core/alloc_vec.h): at every level this
 * CPU runs (scalar always, AVX2 and AVX-512 where present), each lane test says "every point
 * passes" exactly when the scalar loop it stands for finds nothing (for curves long enough for
 * its windows; never for shorter ones), on random curves and on curves broken at each place in
 * each way (NaN, infinities, zero and negative caps, -0 throughputs, equal and falling caps, caps
 * off the grid by half a step or by one unit in the last place); and whole solves on random
 * fleets (concave, flat tails, collinear, non-concave, 2-40 points, on and off the grid, with
 * bad jobs among them) give the same result bits or the same error at every level as with the
 * scalar code forced.  Also the throughput-only test and the caps' bitwise comparison a fresh
 * build uses for a job whose caps are those of the job before. */
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

#define MAXP 40

static unsigned long long rng = 12345;

static double urand(void)
{
    return pfi_rand_uniform(&rng);
}

static int irand(int lo, int hi) /* inclusive */
{
    return lo + (int)(urand() * (hi - lo + 1));
}

/* check_job's point loop (core/alloc.c), as a predicate. */
static int ref_points_ok(const double *x, const double *y, int np)
{
    for (int i = 0; i < np; i++) {
        if (!isfinite(x[i]) || x[i] <= 0 || !isfinite(y[i]) || y[i] < 0)
            return 0;
        if (i > 0 && x[i] <= x[i - 1])
            return 0;
    }
    return 1;
}

/* hull_on_grid's test (core/alloc_solve.c) for a power-of-two step. */
static int ref_on_grid(const double *x, int np, double inv)
{
    const double R = 4503599627370496.0;
    double dev = 0;
    for (int i = 0; i < np; i++) {
        double q = x[i] * inv;
        dev += fabs((q + R) - R - q);
    }
    return dev == 0;
}

/* A valid curve of np points on a grid of step `step` (caps whole multiples of it). */
static void make_curve(double *x, double *y, int np, double step)
{
    double c = step * irand(1, 200);
    for (int i = 0; i < np; i++) {
        x[i] = c;
        c += step * irand(1, 30);
        y[i] = urand() < 0.1 ? 0.0 : 1000 * urand();
    }
}

/* One point broken in one of the ways check_job refuses or lets through. */
static void break_point(double *x, double *y, int np, int at, int how)
{
    switch (how) {
    case 0: x[at] = NAN; break;
    case 1: y[at] = NAN; break;
    case 2: x[at] = INFINITY; break;
    case 3: y[at] = -INFINITY; break;
    case 4: x[at] = 0.0; break;
    case 5: x[at] = -1.0; break;
    case 6: y[at] = -1e-300; break;
    case 7: y[at] = -0.0; break;                                 /* passes: -0 >= 0 */
    case 8: x[at] = at > 0 ? x[at - 1] : x[at]; break;           /* equal caps */
    case 9: x[at] = at > 0 ? x[at - 1] / 2 : x[at]; break;       /* a falling cap */
    case 10: x[at] = -0.0; break;
    case 11: y[at] = DBL_MAX; break;                             /* passes */
    default: (void)np; break;
    }
}

static void test_levels(void **state)
{
    (void)state;
    assert_int_equal(pfi_alloc_vec_level(PFI_ALLOC_VEC_SCALAR), PFI_ALLOC_VEC_SCALAR);
    int best = pfi_alloc_vec_level(PFI_ALLOC_VEC_BEST);
    assert_true(best >= PFI_ALLOC_VEC_SCALAR && best <= PFI_ALLOC_VEC_AVX512);
    for (int l = PFI_ALLOC_VEC_SCALAR; l <= PFI_ALLOC_VEC_AVX512; l++)
        assert_true(pfi_alloc_vec_level(l) <= l && pfi_alloc_vec_level(l) <= best);
    print_message("vector levels on this CPU: best %d (1 scalar, 2 AVX2, 3 AVX-512)\n", best);
}

/* The default options ask for the best level: callers fill a stack struct with
 * pfi_alloc_opts_default alone, so a field it leaves out is whatever the stack held (the level
 * was read uninitialised, and 1 there forced the scalar loops). */
static void test_default_is_best(void **state)
{
    (void)state;
    pfi_alloc_opts o;
    memset(&o, 1, sizeof o); /* vec 0x01010101 until the default writes it */
    pfi_alloc_opts_default(&o);
    assert_int_equal(o.vec, PFI_ALLOC_VEC_BEST);
    memset(&o, 0xff, sizeof o); /* -1: the scalar level once resolved */
    pfi_alloc_opts_default(&o);
    assert_int_equal(o.vec, PFI_ALLOC_VEC_BEST);
}

static void test_points_ok(void **state)
{
    (void)state;
    int lv[3], nl = alloc_all_levels(lv);
    double x[MAXP], y[MAXP];
    long long yes = 0;
    for (int t = 0; t < 20000; t++) {
        int np = irand(1, MAXP);
        make_curve(x, y, np, 1.0);
        if (t % 4) /* three in four broken, at every place in turn */
            break_point(x, y, np, irand(0, np - 1), irand(0, 11));
        int ref = ref_points_ok(x, y, np);
        for (int k = 0; k < nl; k++) {
            int got = pfi_alloc_vec_points_ok(lv[k], x, y, np);
            /* the lanes say yes exactly when the loop finds nothing, for curves their windows
             * take; the scalar level and short curves say "not known" */
            int want = lv[k] > PFI_ALLOC_VEC_SCALAR && np >= 5 ? ref : 0;
            if (got != want)
                fail_msg("level %d, %d points (try %d): lanes say %d, the loop %d", lv[k], np, t,
                         got, ref);
            yes += got;
        }
    }
    if (nl > 1)
        assert_true(yes > 1000);
}

static void test_on_grid(void **state)
{
    (void)state;
    int lv[3], nl = alloc_all_levels(lv);
    const double steps[] = {1.0, 0.5, 4.0, 0.125};
    double x[MAXP], y[MAXP];
    for (int t = 0; t < 20000; t++) {
        int np = irand(1, MAXP);
        double step = steps[t % 4];
        make_curve(x, y, np, step);
        if (t % 3) {
            int at = irand(0, np - 1);
            switch (irand(0, 4)) {
            case 0: x[at] += step / 2; break;
            case 1: x[at] = nextafter(x[at], INFINITY); break;
            case 2: x[at] = NAN; break;
            case 3: x[at] = INFINITY; break;
            default: x[at] = 1e300; break; /* whole, far past the int range */
            }
        }
        int ref = ref_on_grid(x, np, 1.0 / step);
        for (int k = 0; k < nl; k++) {
            int got = pfi_alloc_vec_on_grid(lv[k], x, np, 1.0 / step);
            int want = lv[k] > PFI_ALLOC_VEC_SCALAR && np >= 4 ? ref : 0;
            if (got != want)
                fail_msg("level %d, %d points, step %g (try %d): lanes say %d, the loop %d",
                         lv[k], np, step, t, got, ref);
        }
    }
}

/* Throughputs alone (a fresh build's point tests when the caps are a passed job's): the lanes
 * say yes exactly when every throughput is finite and not below zero. */
static void test_tput_ok(void **state)
{
    (void)state;
    unsigned long long keep = rng; /* the later tests draw the fleets they drew before */
    rng = 777;
    int lv[3], nl = alloc_all_levels(lv);
    double x[MAXP], y[MAXP];
    long long yes = 0;
    for (int t = 0; t < 20000; t++) {
        int np = irand(1, MAXP);
        make_curve(x, y, np, 1.0);
        if (t % 4)
            break_point(x, y, np, irand(0, np - 1), irand(0, 11));
        int ref = 1;
        for (int i = 0; i < np; i++)
            ref &= isfinite(y[i]) && y[i] >= 0;
        for (int k = 0; k < nl; k++) {
            int got = pfi_alloc_vec_tput_ok(lv[k], y, np);
            int want = lv[k] > PFI_ALLOC_VEC_SCALAR && np >= 4 ? ref : 0;
            if (got != want)
                fail_msg("level %d, %d points (try %d): lanes say %d, the loop %d", lv[k], np, t,
                         got, ref);
            yes += got;
        }
    }
    if (nl > 1)
        assert_true(yes > 1000);
    rng = keep;
}

/* Two curves' caps the same bits: at every level exactly when memcmp says so (one value moved
 * by an ulp anywhere, -0 against +0, two NaNs of different payloads or the same one). */
static void test_same(void **state)
{
    (void)state;
    int lv[3], nl = alloc_all_levels(lv);
    double x[MAXP], y[MAXP], z[MAXP];
    long long same = 0, differ = 0;
    unsigned long long keep = rng;
    rng = 778;
    for (int t = 0; t < 20000; t++) {
        int np = irand(1, MAXP);
        make_curve(x, y, np, 1.0);
        memcpy(z, x, sizeof x);
        int at = irand(0, np - 1);
        uint64_t u;
        switch (t % 6) {
        case 0: break;
        case 1: z[at] = nextafter(z[at], INFINITY); break;
        case 2: x[at] = 0.0, z[at] = -0.0; break;
        case 3: /* NaNs of two payloads */
            u = 0x7ff8000000000001ull;
            memcpy(&x[at], &u, sizeof u);
            u = 0x7ff8000000000002ull;
            memcpy(&z[at], &u, sizeof u);
            break;
        case 4: x[at] = z[at] = NAN; break; /* the same bits: the same */
        default: z[at] = nextafter(z[at], 0); break;
        }
        int ref = memcmp(x, z, (size_t)np * sizeof *x) == 0;
        for (int k = 0; k < nl; k++) {
            int got = pfi_alloc_vec_same(lv[k], x, z, np);
            if (got != ref)
                fail_msg("level %d, %d points, change %d at %d: says %d, memcmp %d", lv[k], np,
                         t % 6, at, got, ref);
        }
        same += ref;
        differ += !ref;
    }
    assert_true(same > 5000 && differ > 5000);
    rng = keep;
}

/* ---- whole solves at every level ---- */

#define MAXJ 48
_Static_assert(MAXJ <= ALLOC_FLEET_MAXJ && MAXP <= ALLOC_FLEET_MAXP, "a fleet holds them");

static void make_fleet(alloc_fleet *F, double step)
{
    F->n = irand(1, MAXJ);
    for (int j = 0; j < F->n; j++) {
        int np = irand(2, urand() < 0.3 ? MAXP : 12);
        double *x = F->x[j], *y = F->y[j];
        double c = (urand() < 0.7 ? step * irand(100, 200) : 100 + 100 * urand());
        double dc = urand() < 0.7 ? step * irand(1, 40) : 0;
        int shape = irand(0, 3), flat = irand(0, np);
        double top = 500 + 2000 * urand(), a = 0.2 + 0.8 * urand();
        for (int i = 0; i < np; i++) {
            x[i] = c;
            c += dc > 0 ? dc : 1 + 30 * urand();
            double r = (double)i / (np - 1);
            switch (shape) {
            case 0: y[i] = top * (1 - a * (1 - r) * (1 - r)); break;  /* concave */
            case 1: y[i] = top * (0.5 + 0.5 * r); break;              /* collinear */
            case 2: y[i] = top * (0.3 + 0.7 * r * r); break;          /* convex */
            default: y[i] = top * (0.5 + 0.3 * r + 0.2 * urand()); break; /* noisy */
            }
            if (i >= flat && i > 0)
                y[i] = y[i - 1]; /* a flat tail */
        }
        if (dc > 0 && urand() < 0.2) /* one cap half a step off the grid */
            x[irand(0, np - 1)] += step / 2;
        if (urand() < 0.04)
            break_point(x, y, np, irand(0, np - 1), irand(0, 11));
        snprintf(F->ids[j], sizeof F->ids[j], "j%d", j);
        double lo = urand() < 0.5 ? x[0] : x[0] + (x[np - 1] - x[0]) * 0.3 * urand();
        double hi = urand() < 0.5 ? x[np - 1] : lo + (x[np - 1] - lo) * urand();
        F->jobs[j] = (pfi_alloc_job){F->ids[j], irand(1, 8), lo, hi, x, y, np, 300,
                                     NAN, urand() < 0.2 ? 0.2 * urand() : NAN,
                                     urand() < 0.3 ? 0.5 + urand() : NAN};
    }
}

static void test_solve_same(void **state)
{
    (void)state;
    int lv[3], nl = alloc_all_levels(lv);
    const double steps[] = {1.0, 5.0, 0.5, 2.0};
    static alloc_fleet F;
    int solved = 0;
    for (int t = 0; t < 1500; t++) {
        double step = steps[t % 4];
        make_fleet(&F, step);
        double sum = 0;
        for (int j = 0; j < F.n; j++)
            sum += F.jobs[j].n_gpus * F.jobs[j].max_cap_w;
        double budget = sum * (0.4 + 0.6 * urand());
        pfi_alloc_opts o = alloc_opts(step, t % 3, PFI_ALLOC_VEC_SCALAR);
        pfi_alloc_result r0 = {0};
        pfi_err e0 = {0};
        int rc0 = pfi_alloc_solve(F.jobs, F.n, budget, &o, &r0, &e0);
        solved += rc0 == PFI_OK;
        for (int k = 1; k < nl; k++) {
            o.vec = lv[k];
            pfi_alloc_result r = {0};
            pfi_err e = {0};
            int rc = pfi_alloc_solve(F.jobs, F.n, budget, &o, &r, &e);
            alloc_same_result(rc, &r, &e, rc0, &r0, &e0, "one shot", lv[k], t);
            pfi_alloc_result_free(&r);
        }
        pfi_alloc_result_free(&r0);
    }
    assert_true(solved > 300);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_default_is_best),
        cmocka_unit_test(test_points_ok),
        cmocka_unit_test(test_on_grid),
        cmocka_unit_test(test_tput_ok),
        cmocka_unit_test(test_same),
        cmocka_unit_test(test_solve_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
