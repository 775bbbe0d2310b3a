/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of per-GPU caps inside a job (core/alloc_pergpu.h) and of allocating with them. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "core/alloc_pergpu.h"

#define G 4
#define K 11

/* A GPU of efficiency e holds clock (c - 100) * 4 * e MHz under cap c, up to 1980 MHz; the job
 * runs at its slowest GPU. */
static void make_job(const double *eff, double *caps, double *clk, double *tput,
                     pfi_pergpu_job *J)
{
    for (int k = 0; k < K; k++)
        caps[k] = 200 + 50 * k;
    for (int k = 0; k < K; k++) {
        double slow = INFINITY;
        for (int g = 0; g < G; g++) {
            clk[g * K + k] = fmin(1980, (caps[k] - 100) * 4 * eff[g]);
            slow = fmin(slow, clk[g * K + k]);
        }
        tput[k] = 10 * slow;
    }
    *J = (pfi_pergpu_job){G, K, caps, clk, tput};
}

static void test_table(void **state)
{
    double eff[G] = {1.0, 1.05, 0.97, 1.02}, caps[K], clk[G * K], tput[K];
    pfi_pergpu_job J;
    make_job(eff, caps, clk, tput, &J);
    double gc[G * K], x[K];
    pfi_err e = {0};
    assert_int_equal(pfi_pergpu_table(&J, gc, x, &e), PFI_OK);
    for (int k = 0; k < K; k++) {
        assert_true(x[k] <= caps[k] + 1e-9);
        double slow = INFINITY;
        for (int g = 0; g < G; g++)
            slow = fmin(slow, clk[g * K + k]);
        for (int g = 0; g < G; g++) {
            /* each GPU's cap holds the slowest clock: (c - 100) * 4 * e >= slow */
            double held = fmin(1980, (gc[g * K + k] - 100) * 4 * eff[g]);
            assert_true(held >= slow - 1e-6);
            assert_true(gc[g * K + k] <= caps[k] + 1e-9);
        }
        /* the least efficient GPU (0.97) needs the whole cap, until its clock tops out */
        if (clk[2 * K + k] < 1980)
            assert_true(fabs(gc[2 * K + k] - caps[k]) < 1e-9);
        else
            assert_true(gc[2 * K + k] <= caps[k]);
    }
    /* below the clock ceiling the efficient GPUs save watts */
    assert_true(x[3] < caps[3] - 5);
    /* a mean cap splits into caps summing to n x */
    double out[G];
    for (double xx = x[0]; xx <= x[K - 1]; xx += 7.3) {
        pfi_pergpu_split(&J, gc, x, xx, out);
        double s = 0;
        for (int g = 0; g < G; g++)
            s += out[g];
        assert_true(fabs(s - G * xx) < 1e-6);
    }
}

static void test_identical_gpus(void **state)
{
    double eff[G] = {1, 1, 1, 1}, caps[K], clk[G * K], tput[K];
    pfi_pergpu_job J;
    make_job(eff, caps, clk, tput, &J);
    double gc[G * K], x[K];
    assert_int_equal(pfi_pergpu_table(&J, gc, x, NULL), PFI_OK);
    /* below the clock ceiling nothing to save; above it, the cap that reaches it is enough */
    for (int k = 0; k < K; k++)
        if (clk[k] < 1980)
            assert_true(fabs(x[k] - caps[k]) < 1e-9);
        else
            assert_true(fabs(x[k] - 600) < 1e-9); /* table: 1800 MHz at 550 W, 1980 at 600 */
}

static void test_bad_table(void **state)
{
    double eff[G] = {1, 1, 1, 1}, caps[K], clk[G * K], tput[K];
    pfi_pergpu_job J;
    make_job(eff, caps, clk, tput, &J);
    clk[1 * K + 5] = 100; /* GPU 1 slows down as its cap grows */
    double gc[G * K], x[K];
    pfi_err e = {0};
    assert_int_equal(pfi_pergpu_table(&J, gc, x, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "GPU 1"));
}

/* A table whose slowest clock never changes gives a one-point curve; pfi_pergpu_flat_gpu names
 * the GPU that pins it (pfi allocate said only "its curve has one point"). */
static void test_flat_gpu(void **state)
{
    double eff[G] = {1.0, 1.05, 0.97, 1.02}, caps[K], clk[G * K], tput[K];
    pfi_pergpu_job J;
    make_job(eff, caps, clk, tput, &J);
    double gc[G * K], x[K], pc[K], pt[K];
    int nt = -7;
    assert_int_equal(pfi_pergpu_flat_gpu(&J, &nt), -1); /* clocks rise: not flat */
    assert_int_equal(nt, -7);
    for (int k = 0; k < K; k++)
        clk[2 * K + k] = 1980; /* GPU 2 flat, but the fastest at low caps: not the cause */
    assert_int_equal(pfi_pergpu_flat_gpu(&J, &nt), -1);
    for (int k = 0; k < K; k++)
        clk[2 * K + k] = 300; /* GPU 2 flat and the slowest at every cap */
    assert_int_equal(pfi_pergpu_table(&J, gc, x, NULL), PFI_OK);
    assert_int_equal(pfi_pergpu_curve(&J, x, pc, pt, NULL), 1);
    assert_int_equal(pfi_pergpu_flat_gpu(&J, &nt), 2);
    assert_int_equal(nt, 1);
    for (int k = 0; k < K; k++)
        clk[3 * K + k] = 300; /* GPU 3 alike: the first of the two is named, both counted */
    assert_int_equal(pfi_pergpu_flat_gpu(&J, &nt), 2);
    assert_int_equal(nt, 2);
    for (int g = 0; g < G * K; g++)
        clk[g] = 1200; /* every GPU flat */
    assert_int_equal(pfi_pergpu_flat_gpu(&J, &nt), 0);
    assert_int_equal(nt, G);
}

/* Two jobs under one budget: per-GPU caps never lose to uniform caps and stay in budget. */
static void test_allocation_gain(void **state)
{
    double e1[G] = {1.0, 1.06, 0.95, 1.03}, e2[G] = {1.0, 1.0, 1.01, 0.99};
    double c1[K], k1[G * K], t1[K], c2[K], k2[G * K], t2[K];
    pfi_pergpu_job J1, J2;
    make_job(e1, c1, k1, t1, &J1);
    make_job(e2, c2, k2, t2, &J2);
    double g1[G * K], x1[K], g2[G * K], x2[K];
    assert_int_equal(pfi_pergpu_table(&J1, g1, x1, NULL), PFI_OK);
    assert_int_equal(pfi_pergpu_table(&J2, g2, x2, NULL), PFI_OK);
    double pc1[K], pt1[K], pc2[K], pt2[K];
    int n1 = pfi_pergpu_curve(&J1, x1, pc1, pt1, NULL), n2 = pfi_pergpu_curve(&J2, x2, pc2, pt2, NULL);
    pfi_alloc_job uni[2] = {
        {"a", G, 200, 700, c1, t1, K, 600, NAN, NAN, 1},
        {"b", G, 200, 700, c2, t2, K, 600, NAN, NAN, 1},
    };
    pfi_alloc_job per[2] = {
        /* flat above the last point: the device maximum stays the range's end */
        {"a", G, pc1[0], 700, pc1, pt1, n1, 600, NAN, NAN, 1},
        {"b", G, pc2[0], 700, pc2, pt2, n2, 600, NAN, NAN, 1},
    };
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.rel_gap = 0;
    for (double budget = 1700; budget <= 5000; budget += 330) {
        pfi_alloc_result ru, rp;
        assert_int_equal(pfi_alloc_solve(uni, 2, budget, &o, &ru, NULL), PFI_OK);
        assert_int_equal(pfi_alloc_solve(per, 2, budget, &o, &rp, NULL), PFI_OK);
        assert_true(ru.power_w <= budget && rp.power_w <= budget);
        if (rp.value < ru.value - 1e-9)
            fail_msg("budget %g: per-GPU %.9g < uniform %.9g (caps %g %g vs %g %g)", budget,
                     rp.value, ru.value, rp.cap_w[0], rp.cap_w[1], ru.cap_w[0], ru.cap_w[1]);
        double sum = 0, caps[G];
        for (int j = 0; j < 2; j++) {
            pfi_pergpu_split(j ? &J2 : &J1, j ? g2 : g1, j ? x2 : x1, rp.cap_w[j], caps);
            for (int g = 0; g < G; g++) {
                assert_true(caps[g] >= 200 - 1e-9 && caps[g] <= 700 + 1e-9);
                sum += caps[g];
            }
        }
        if (sum > budget + 1e-6)
            fail_msg("budget %g: per-GPU caps sum %g, solver power %g (x %g, %g)", budget, sum,
                     rp.power_w, rp.cap_w[0], rp.cap_w[1]);
        pfi_alloc_result_free(&ru);
        pfi_alloc_result_free(&rp);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_identical_gpus),
        cmocka_unit_test(test_bad_table),
        cmocka_unit_test(test_flat_gpu),
        cmocka_unit_test(test_allocation_gain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
