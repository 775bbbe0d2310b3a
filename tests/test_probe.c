/* Tests of one- and two-probe curve estimation (core/probe.h), on exact power laws and on real
 * measured curves read in place from $PFI_DATA_DIR. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "core/curve.h"
#include "core/probe.h"
#include "pubdata_csv.h"

static void test_probe_cap(void **state)
{
    assert_true(fabs(pfi_probe_cap(600, 0.3, 200, 700) - 420) < 1e-9);
    assert_true(pfi_probe_cap(250, 0.3, 200, 700) == 200); /* floored at the minimum */
    assert_true(pfi_probe_cap(900, 0.1, 200, 700) == 700); /* never above the maximum */
}

static void test_fit_exact(void **state)
{
    pfi_fit f;
    pfi_err e = {0};
    /* One probe on s = 1.5 r^2 with the prior b = 2: the curve itself. */
    double r1[1] = {0.3}, s1[1] = {1.5 * 0.09};
    assert_int_equal(pfi_probe_fit(r1, s1, 1, 2.0, &f, &e), PFI_OK);
    assert_true(fabs(f.p[0] - 1.5) < 1e-9 && fabs(f.p[1] - 2.0) < 1e-12);
    assert_true(fabs(pfi_fit_s(&f, 0.45) - 1.5 * 0.45 * 0.45) < 1e-9);
    /* Two probes fix the exponent whatever the prior. */
    double r2[2] = {0.2, 0.4}, s2[2] = {0.8 * pow(0.2, 1.6), 0.8 * pow(0.4, 1.6)};
    assert_int_equal(pfi_probe_fit(r2, s2, 2, 3.0, &f, &e), PFI_OK);
    assert_true(fabs(f.p[1] - 1.6) < 1e-9 && fabs(f.p[0] - 0.8) < 1e-9);
    /* A probe that shed no power says so. */
    double r0[1] = {0.0}, s0[1] = {0.0};
    assert_int_equal(pfi_probe_fit(r0, s0, 1, 2.0, &f, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "cap did not bind"));
    assert_int_equal(pfi_probe_fit(r2, s2, 3, 2.0, &f, &e), PFI_EINVAL);
}

static void test_real_one_probe(void **state)
{
    if (!pub_have_data()) {
        print_message("public data not found under %s: skipped\n", pfi_data_dir());
        skip();
    }
    const char *models[] = {"gpt3-2.7b", "bert-huge-uncased", "bloom-3b", "gpt3-6.7b"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        pfi_run run;
        assert_true(pub_perseus("A40", models[i], &run));
        pfi_curve c, p;
        pfi_err e = {0};
        assert_int_equal(pfi_curve_from_run(&run, PFI_FAM_POWER, &c, &e), PFI_OK);
        double depth = PFI_PROBE_DEPTH;
        int used[2];
        assert_int_equal(pfi_probe_curve(&c, &depth, 1, PFI_PROBE_B_PRIOR, &p, used, &e), PFI_OK);
        /* The probe is a measured level below the baseline, near the depth asked for. */
        assert_true(c.cap_w[used[0]] < c.cap0_w);
        double rp = 1 - c.draw_w[used[0]] / c.p0_w;
        assert_true(fabs(rp - depth) < 0.1);
        assert_true(p.n == 0 && fabs(p.r_max - rp) < 1e-12);
        /* The other measured levels, within 42% shed, are predicted within 0.06. */
        for (int k = 0; k < c.n; k++) {
            double r = 1 - c.draw_w[k] / c.p0_w;
            if (k == used[0] || r <= 0.02 || r > 0.42)
                continue;
            assert_true(fabs((1 - pfi_fit_s(&p.fit, r)) - c.rel[k]) < 0.06);
        }
    }
}

static void test_real_flat_probe_refused(void **state)
{
    if (!pub_have_data()) {
        print_message("public data not found under %s: skipped\n", pfi_data_dir());
        skip();
    }
    /* NCF never draws more than ~90 W: a probe at 70% of its draw sheds nothing measurable
     * at the measured caps, and the estimate must say so rather than invent a curve. */
    pfi_run run;
    assert_true(pub_zeus("a40", "movielens-1m", "ncf", 1024, "adam", &run));
    pfi_curve c, p;
    pfi_err e = {0};
    assert_int_equal(pfi_curve_from_run(&run, PFI_FAM_POWER, &c, &e), PFI_OK);
    double depth = 0.3;
    assert_int_equal(pfi_probe_curve(&c, &depth, 1, 2.0, &p, NULL, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "probe 1"));
}

static void test_median_b(void **state)
{
    pfi_curve c[3];
    memset(c, 0, sizeof c);
    double b[3] = {1.5, 2.5, 2.0};
    for (int i = 0; i < 3; i++) {
        c[i].fit.family = PFI_FAM_POWER;
        c[i].fit.p[0] = 1;
        c[i].fit.p[1] = b[i];
        c[i].n_shed = 5;
    }
    assert_true(fabs(pfi_probe_median_b(c, 3, -1) - 2.0) < 1e-12);
    assert_true(fabs(pfi_probe_median_b(c, 3, 2) - 2.0) < 1e-12); /* (1.5 + 2.5) / 2 */
    assert_true(fabs(pfi_probe_median_b(c, 3, 0) - 2.25) < 1e-12);
    c[1].n_shed = 1; /* not a curve to learn from */
    assert_true(fabs(pfi_probe_median_b(c, 3, -1) - 1.75) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_cap),
        cmocka_unit_test(test_fit_exact),
        cmocka_unit_test(test_real_one_probe),
        cmocka_unit_test(test_real_flat_probe_refused),
        cmocka_unit_test(test_median_b),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
