/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of curve building and fitting (core/curve.h) and the index on it (core/pfi.h), on
 * synthetic points and on real measured rows read in place from $PFI_DATA_DIR. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "core/curve.h"
#include "core/pfi.h"
#include "core/predict.h"
#include "pubdata_csv.h"
#include "support/skip.h"

#define SKIP_WITHOUT_DATA()                                                                    \
    do {                                                                                       \
        if (!pub_have_data())                                                                  \
            PFI_TEST_SKIP("public data not found under %s\n", pfi_data_dir());                \
    } while (0)

/* A Perseus sweep read in place and its curve on the default family. */
static void perseus_curve(const char *gpu, const char *model, pfi_run *run, pfi_curve *c)
{
    pfi_err e = {0};
    assert_true(pub_perseus(gpu, model, run));
    assert_int_equal(pfi_curve_from_run(run, -1, c, &e), PFI_OK);
}

/* The run with only the levels at these caps. */
static pfi_run keep_caps(const pfi_run *run, const double *caps, int n)
{
    pfi_run out = *run;
    out.n_levels = 0;
    for (int i = 0; i < run->n_levels; i++)
        for (int k = 0; k < n; k++)
            if (run->levels[i].cap_w == caps[k])
                out.levels[out.n_levels++] = run->levels[i];
    return out;
}

static void test_isotonic(void **state)
{
    double y[] = {0.0, 0.3, 0.1, 0.2, 0.5, 0.4};
    double f[6];
    pfi_isotonic(y, NULL, 6, f);
    double want[] = {0.0, 0.2, 0.2, 0.2, 0.45, 0.45};
    for (int i = 0; i < 6; i++)
        assert_true(fabs(f[i] - want[i]) < 1e-12);
    /* A heavy first point stays where it is and pulls the violators to it. */
    double y2[] = {0.0, -0.05, -0.02, 0.1};
    double w2[] = {1e9, 1, 1, 1};
    pfi_isotonic(y2, w2, 4, f);
    assert_true(fabs(f[0]) < 1e-6 && fabs(f[1]) < 1e-6 && fabs(f[2]) < 1e-6);
    assert_true(fabs(f[3] - 0.1) < 1e-12);
}

/* A value pinned inside the sequence (a baseline with levels above its cap): the points before
 * it fitted alone and kept at or below it, those after alone and kept at or above it, the
 * constrained least-squares fit worked by hand (before: 0.15, 0.15 pooled, then clipped to 0;
 * after: -0.3 clipped to 0, 0.4 and 0.2 pooled).  The curve's own uses pin the first point,
 * which leaves the clip below the pin untried. */
static void test_isotonic_pinned_inside(void **state)
{
    (void)state;
    const double y[] = {0.5, -0.2, 0.0, -0.3, 0.1, 0.4, 0.2};
    const double want[] = {0.0, 0.0, 0.0, 0.0, 0.1, 0.3, 0.3};
    double f[7];
    pfi_isotonic_pinned(y, 7, 2, f);
    for (int i = 0; i < 7; i++)
        if (!(fabs(f[i] - want[i]) < 1e-12))
            fail_msg("point %d: %g, expected %g", i, f[i], want[i]);
    assert_true(f[2] == 0.0); /* exactly the pinned value */
}

/* The points below the baseline, sorted by shed with the origin first, skipped levels left out,
 * and the broken line through them. */
static void test_below_points(void **state)
{
    pfi_curve c;
    memset(&c, 0, sizeof c);
    c.n = 4;
    c.p0_w = 400;
    c.cap0_w = 700;
    /* Caps ascending; draws out of order on purpose (a noisy level), the baseline last. */
    const double cap[] = {300, 400, 500, 700}, draw[] = {300, 320, 360, 400};
    const double rel[] = {0.7, 0.8, 0.9, 1.0};
    for (int k = 0; k < 4; k++) {
        c.cap_w[k] = cap[k];
        c.draw_w[k] = draw[k];
        c.rel[k] = rel[k];
    }
    double r[PFI_CURVE_MAX_PTS + 1], y[PFI_CURVE_MAX_PTS + 1];
    assert_int_equal(pfi_curve_below_points(&c, c.rel, 1.0, NULL, 0, r, y), 4);
    const double want_r[] = {0, 0.1, 0.2, 0.25}, want_y[] = {1.0, 0.9, 0.8, 0.7};
    for (int k = 0; k < 4; k++)
        assert_true(fabs(r[k] - want_r[k]) < 1e-12 && fabs(y[k] - want_y[k]) < 1e-12);
    assert_true(fabs(pfi_lerp_sorted(r, y, 4, 0.15) - 0.85) < 1e-12);
    assert_true(fabs(pfi_lerp_sorted(r, y, 4, 0.25) - 0.7) < 1e-12);
    const int skip[] = {1};
    assert_int_equal(pfi_curve_below_points(&c, c.rel, 1.0, skip, 1, r, y), 3);
    /* Level 1 (r 0.2) left out: 0.15 is on the line from (0.1, 0.9) to (0.25, 0.7). */
    assert_true(fabs(pfi_lerp_sorted(r, y, 3, 0.15) - (0.9 - 0.2 / 3)) < 1e-12);

    /* Two capped levels drawing at least P0 (r = 0 both, A40 ShuffleNet's 275 and 250 W): in
     * falling-cap order, so a line toward the first r > 0 starts at the deeper cap's 0.9886,
     * as the monotone fit and the bootstrap read them (from the shallower's 1.0 PFI5 read
     * 2.4% low). */
    const double cap2[] = {225, 250, 275, 300}, draw2[] = {180, 191, 190, 190};
    const double rel2[] = {0.98, 0.9886, 1.0, 1.0};
    c.n = 4;
    c.p0_w = 190;
    c.cap0_w = 300;
    for (int k = 0; k < 4; k++) {
        c.cap_w[k] = cap2[k];
        c.draw_w[k] = draw2[k];
        c.rel[k] = rel2[k];
    }
    assert_int_equal(pfi_curve_below_points(&c, c.rel, 1.0, NULL, 0, r, y), 4);
    assert_true(r[1] == 0 && r[2] == 0 && y[1] == 1.0 && y[2] == 0.9886);
    assert_true(fabs(pfi_lerp_sorted(r, y, 4, r[3] / 2) - (0.9886 + 0.98) / 2) < 1e-12);
}

static void test_fit_recovers_power_law(void **state)
{
    double r[6], s[6];
    for (int i = 0; i < 6; i++) {
        r[i] = 0.08 * (i + 1);
        s[i] = 2.0 * pow(r[i], 1.8);
    }
    pfi_fit f;
    pfi_err e = {0};
    assert_int_equal(pfi_fit_points(PFI_FAM_POWER, r, s, NULL, 6, &f, &e), PFI_OK);
    assert_true(fabs(f.p[0] - 2.0) < 0.01);
    assert_true(fabs(f.p[1] - 1.8) < 0.01);
    assert_true(f.rmse < 1e-4);
    /* Quadratic: exact for s = 0.1 r + 2 r^2. */
    for (int i = 0; i < 6; i++)
        s[i] = 0.1 * r[i] + 2 * r[i] * r[i];
    assert_int_equal(pfi_fit_points(PFI_FAM_QUAD, r, s, NULL, 6, &f, &e), PFI_OK);
    assert_true(fabs(f.p[0] - 0.1) < 1e-9 && fabs(f.p[1] - 2.0) < 1e-9);
    /* Too few points for three parameters. */
    assert_int_equal(pfi_fit_points(PFI_FAM_KNEE, r, s, NULL, 2, &f, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "3 parameters"));
    assert_int_equal(pfi_family_parse("power"), PFI_FAM_POWER);
    assert_int_equal(pfi_family_parse("nope"), -1);
}

static void test_real_llm_curve(void **state)
{
    SKIP_WITHOUT_DATA();
    pfi_run run;
    pfi_curve c;
    perseus_curve("A40", "gpt3-2.7b", &run, &c);
    assert_int_equal(run.n_levels, 8);
    pfi_err e = {0};
    assert_int_equal(c.n, 8);
    assert_true(fabs(c.cap0_w - 300) < 1e-9);
    assert_true(c.fit.rmse < 0.02);
    assert_true(c.r_max > 0.5);
    pfi_index x, x2;
    pfi_index_opts o = pfi_index_defaults();
    assert_int_equal(pfi_index_run(&run, &o, &x, &e), PFI_OK);
    /* Measured at ~30% shed: s ~ 0.13-0.18, so PFI30 about 0.45-0.65. */
    assert_true(x.pfi > 0.45 && x.pfi < 0.65);
    assert_true(x.pfi_lo < x.pfi && x.pfi < x.pfi_hi);
    assert_false(x.extrapolated);
    /* Convex: the index grows with depth; the SLA primitive grows with the budget. */
    for (int k = 1; k < PFI_N_DEPTHS; k++)
        assert_true(x.pfi_at[k] > x.pfi_at[k - 1]);
    assert_true(x.shed_at[0] < x.shed_at[1] && x.shed_at[1] < x.shed_at[2]);
    assert_true(pfi_fit_s(&x.fit, x.shed_at[1]) <= 0.05 + 1e-9);
    /* The monotone fit agrees with the parametric one on a clean curve. */
    assert_true(fabs(x.pfi_mono_at[2] - x.pfi) < 0.1);
    assert_false(x.non_monotone);
    /* Same seed, same interval. */
    assert_int_equal(pfi_index_run(&run, &o, &x2, &e), PFI_OK);
    assert_true(x2.pfi_lo == x.pfi_lo && x2.pfi_hi == x.pfi_hi);
}

static void test_real_below_cap_nonmonotone(void **state)
{
    SKIP_WITHOUT_DATA();
    /* T5-3B PP8 on A40: draws ~160 W under a 300 W cap and runs faster at 200-275 W. */
    pfi_run run;
    pfi_curve c;
    perseus_curve("A40", "t5-3b", &run, &c);
    pfi_err e = {0};
    assert_true(c.p0_w < 200);
    int faster = 0;
    for (int k = 0; k < c.n; k++) {
        if (c.rel[k] > 1.01)
            faster = 1;
        /* The monotone fit never gains throughput by shedding power... */
        assert_true(c.rel_mono[k] <= 1.0 + 1e-9);
        /* ...and never gains it back as the cap falls further. */
        if (k > 0)
            assert_true(c.rel_mono[k - 1] <= c.rel_mono[k] + 1e-12);
    }
    assert_true(faster);
    pfi_index x;
    pfi_index_opts o = pfi_index_defaults();
    assert_int_equal(pfi_index_run(&run, &o, &x, &e), PFI_OK);
    assert_true(x.non_monotone);
    /* No loss until the cap binds: tiny index at 10%, the deepest shed is under 40%. */
    assert_true(x.pfi_at[0] < 0.1);
    assert_true(x.r_max < 0.35);
    assert_true(isnan(x.pfi_at[3]));
    assert_true(x.extrap_at[3]);
    o.extrapolate = 1;
    assert_int_equal(pfi_index_run(&run, &o, &x, &e), PFI_OK);
    assert_true(isfinite(x.pfi_at[3]) && x.extrap_at[3]);
}

/* A one-GPU run from {cap, draw, throughput} levels, the first the baseline. */
static pfi_run synthetic_run(const char *name, double default_w, const double (*lv)[3], int n)
{
    pfi_run run;
    memset(&run, 0, sizeof run);
    snprintf(run.name, sizeof run.name, "%s", name);
    run.n_gpus = 1;
    run.default_limit_w = default_w;
    for (int i = 0; i < n; i++) {
        pfi_level *l = &run.levels[run.n_levels++];
        l->cap_w = lv[i][0];
        l->power_w = lv[i][1];
        l->tput = lv[i][2];
        l->tput_lo = l->tput_hi = NAN;
        l->enforced_w = NAN;
    }
    return run;
}

/* A job faster at a lower cap sheds that power for nothing: its slowdown there is exactly 0
 * and its index at 10% is 0, not a tiny negative number (the baseline was held by a weight
 * of 1e9, so pooling a faster level with it gave s = -5e-11 and PFI10 = -3.3e-10, printed
 * "-0.000"). */
static void test_faster_level_pinned_exactly(void **state)
{
    /* cap, draw, throughput: 250 W runs faster than the baseline */
    static const double lv[][3] = {{300, 250, 1.0 / 10}, {250, 2000 / 9.5, 1.0 / 9.5},
                                   {200, 1900 / 12.0, 1.0 / 12}, {150, 125, 1.0 / 14}};
    pfi_run run = synthetic_run("synthetic faster", 300, lv, 4);
    pfi_curve c;
    pfi_err e = {0};
    assert_int_equal(pfi_curve_from_run(&run, -1, &c, &e), PFI_OK);
    for (int k = 0; k < c.n; k++)
        assert_true(c.rel_mono[k] <= 1.0); /* exactly: nothing is gained */
    assert_true(c.rel_mono[c.n - 1] == 1.0 && c.rel_mono[c.n - 2] == 1.0);
    pfi_index x;
    pfi_index_opts o = pfi_index_defaults();
    o.n_boot = 0;
    assert_int_equal(pfi_index_run(&run, &o, &x, &e), PFI_OK);
    assert_true(x.head_at[0] == 0 && !signbit(x.head_at[0]));
    assert_true(x.pfi_mono_at[0] == 0);
    /* the rest as an independent reading of the same points: r = 1 - P/P0, s = 1 - T/T0 */
    double r1 = 1 - (2000 / 9.5) / 250, r2 = 1 - (1900 / 12.0) / 250, s2 = 1 - 10 / 12.0;
    double want20 = (0.2 - r1) / (r2 - r1) * s2 / 0.2;
    assert_true(fabs(x.head_at[1] - want20) <= 1e-12);
}

static void test_real_flat_ncf(void **state)
{
    SKIP_WITHOUT_DATA();
    /* NCF draws ~84 W whatever the cap (100-300 W): the cap never binds. */
    pfi_run run;
    assert_true(pub_zeus("a40", "movielens-1m", "ncf", 1024, "adam", &run));
    assert_int_equal(run.n_levels, 9);
    pfi_curve c;
    pfi_err e = {0};
    assert_int_equal(pfi_curve_from_run(&run, -1, &c, &e), PFI_OK);
    assert_true(c.n_shed < 2);
    assert_true(c.r_max < 0.05);
    pfi_index x;
    pfi_index_opts o = pfi_index_defaults();
    assert_int_equal(pfi_index_run(&run, &o, &x, &e), PFI_OK);
    assert_true(isnan(x.pfi));
    assert_true(x.extrapolated);
    assert_true(x.shed_at[2] < 0.05);
    /* The allocator still gets the measured, flat curve. */
    assert_true(fabs(pfi_curve_rel_at_cap(&c, PFI_VIEW_MEASURED, 100) - c.rel[0]) < 1e-12);
}

static void test_real_near_flat(void **state)
{
    SKIP_WITHOUT_DATA();
    /* ShuffleNet on a V100 draws ~42 W at every cap: two levels shed a hair (r = 0.007 and
     * 0.009), enough points for a power law through them (s = 1.8e6 r^4, PFI10 = 10 read on
     * it) but no fit: the cap never bound, as for NCF. */
    pfi_run run;
    assert_true(pub_zeus("v100", "cifar100", "shufflenetv2", 16, "adadelta", &run));
    pfi_curve c;
    pfi_err e = {0};
    assert_int_equal(pfi_curve_from_run(&run, -1, &c, &e), PFI_OK);
    assert_true(c.n_shed >= 2);
    assert_true(c.r_max < PFI_CURVE_R_BOUND);
    assert_true(pfi_curve_never_bound(&c));
    assert_true(c.fit.p[0] == 0);
    assert_true(pfi_fit_s(&c.fit, 0.3) == 0);
    /* and a model is not trained on slowdowns read so far beyond what was measured */
    pfi_train_row row;
    assert_int_equal(pfi_train_row_from_run(&run, 0, 0, &row, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "never bound"));
}

/* A shallow sweep whose draw follows the cap does bind: a node daemon's first small cuts
 * (700, 680, 662 W; 4.8% of the power shed, 3.8% of the throughput lost) got s = 0 (PFI30 0,
 * "cut this job first") once the flat-draw rule above looked at r_max alone. */
static void test_shallow_but_bound(void **state)
{
    (void)state;
    static const double lv[][3] = {{700, 690, 1000}, {680, 672, 980}, {662, 657, 962}};
    pfi_run run = synthetic_run("synthetic shallow", 700, lv, 3);
    pfi_curve c;
    pfi_err e = {0};
    assert_int_equal(pfi_curve_from_run(&run, -1, &c, &e), PFI_OK);
    assert_true(c.r_max < PFI_CURVE_R_BOUND);
    assert_false(pfi_curve_never_bound(&c));
    double s30 = pfi_fit_s(&c.fit, 0.3);
    assert_true(s30 > 0.1 && s30 < 0.5); /* about 0.8 of the shed, as the points say */
}

static void test_real_too_few_levels(void **state)
{
    SKIP_WITHOUT_DATA();
    pfi_run run;
    assert_true(pub_perseus("A40", "gpt3-2.7b", &run));
    /* Keep the baseline (300 W) and one reduced level. */
    static const double caps[] = {300, 200};
    pfi_run small = keep_caps(&run, caps, 2);
    assert_int_equal(small.n_levels, 2);
    pfi_curve c;
    pfi_err e = {0};
    assert_int_equal(pfi_curve_from_run(&small, -1, &c, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "only 1 usable level"));
    assert_non_null(strstr(e.msg, "gpt3-2.7b"));
    pfi_run none = run;
    none.n_levels = 0;
    assert_int_equal(pfi_curve_from_run(&none, -1, &c, &e), PFI_EINVAL);
}

static void test_real_not_reaching_depth(void **state)
{
    SKIP_WITHOUT_DATA();
    pfi_run run;
    assert_true(pub_perseus("A40", "gpt3-2.7b", &run));
    pfi_run part = run;
    part.n_levels = 0;
    for (int i = 0; i < run.n_levels; i++)
        if (run.levels[i].cap_w >= 225)
            part.levels[part.n_levels++] = run.levels[i];
    pfi_index x, full;
    pfi_err e = {0};
    pfi_index_opts o = pfi_index_defaults();
    assert_int_equal(pfi_index_run(&part, &o, &x, &e), PFI_OK);
    assert_true(x.r_max < 0.25);
    assert_true(isnan(x.pfi) && x.extrapolated);
    assert_true(isnan(x.pfi_lo) && isnan(x.pfi_hi));
    assert_true(isfinite(x.pfi_at[0]) && !x.extrap_at[0]);
    o.extrapolate = 1;
    assert_int_equal(pfi_index_run(&part, &o, &x, &e), PFI_OK);
    assert_true(isfinite(x.pfi) && x.extrapolated);
    assert_true(x.pfi_lo <= x.pfi && x.pfi <= x.pfi_hi);
    /* The extrapolated value is in the neighbourhood of the measured one. */
    o.extrapolate = 0;
    assert_int_equal(pfi_index_run(&run, &o, &full, &e), PFI_OK);
    assert_true(fabs(x.pfi - full.pfi) < 0.25);
}

/* The headline PFI30 of the Perseus sweeps against elasticity-summary.csv, a table made outside
 * the project from the same raw files: throughput and power relative to the max-limit run,
 * interpolated linearly in the limit at 90..50% of it.  Each of its points lies on the segment
 * between two measured levels, so it lies on pfi's monotone interpolation wherever the measured
 * points are monotone: s there must match to the table's rounding (4 decimals in both columns:
 * 5e-5 in s plus 5e-5 in r times a slope below 3, so 2e-4 at most; 5e-4 allowed).  PFI30 is
 * then the interpolation, bracketed by the table's points on either side of r = 0.30, and its
 * interval holds both the interpolation and the power-law fit.  Runs whose throughput rises
 * as the cap falls (A40 T5-3B) are monotone-fitted by pfi and are left out here; that run
 * reaches r = 0.293 only, so its PFI30 is the fit's and must be marked extrapolated. */
static void test_real_pfi30_against_summary(void **state)
{
    SKIP_WITHOUT_DATA();
    char hb[2048], *h[32], line[2048], *f[32];
    int nh = 0;
    FILE *fp = pub_csv_open("elasticity-summary.csv", hb, sizeof hb, h, &nh);
    assert_non_null(fp);
    static const int pct[] = {90, 80, 70, 60, 50};
    int csrc = pub_col(h, nh, "source"), cgpu = pub_col(h, nh, "gpu"),
        cwl = pub_col(h, nh, "workload"), cthr[5], cpow[5];
    for (int k = 0; k < 5; k++) {
        char nm[32];
        snprintf(nm, sizeof nm, "thr_rel_%d", pct[k]);
        cthr[k] = pub_col(h, nh, nm);
        snprintf(nm, sizeof nm, "pow_rel_%d", pct[k]);
        cpow[k] = pub_col(h, nh, nm);
    }
    assert_true(csrc >= 0 && cgpu >= 0 && cwl >= 0 && pub_cols_ok(cthr, 5) && pub_cols_ok(cpow, 5));
    int runs = 0, points = 0, t5 = 0;
    double worst = 0;
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\r\n")] = 0;
        int nf = pub_split(line, f, 32);
        if (nf < nh || strcmp(f[csrc], "perseus/zeus_global") != 0)
            continue;
        const char *gpu = strncmp(f[cgpu], "A100", 4) == 0 ? "A100" : "A40";
        char model[128];
        snprintf(model, sizeof model, "%s", f[cwl]);
        model[strcspn(model, " ")] = 0;
        pfi_run run;
        assert_true(pub_perseus(gpu, model, &run));
        pfi_index x;
        pfi_err e = {0};
        pfi_index_opts o = pfi_index_defaults();
        assert_int_equal(pfi_index_run(&run, &o, &x, &e), PFI_OK);
        if (x.non_monotone) {
            t5 += strcmp(model, "t5-3b") == 0 && strcmp(gpu, "A40") == 0;
            assert_true(x.r_max < 0.30 && x.extrapolated && isnan(x.pfi_interp) &&
                        x.pfi_head == x.pfi);
            continue;
        }
        double lo_r = 0, lo_s = 0, hi_r = NAN, hi_s = NAN;
        for (int k = 0; k < 5; k++) {
            if (!*f[cthr[k]] || !*f[cpow[k]])
                continue;
            double r = 1 - atof(f[cpow[k]]), sk = 1 - atof(f[cthr[k]]);
            if (r <= 0.30 && r > lo_r)
                lo_r = r, lo_s = sk;
            if (r >= 0.30 && !(r > hi_r))
                hi_r = r, hi_s = sk;
            if (!(r > 0.01 && r <= x.r_max))
                continue;
            pfi_index y;
            pfi_index_opts oy = o;
            oy.depth = r;
            oy.n_boot = 0;
            assert_int_equal(pfi_index_run(&run, &oy, &y, &e), PFI_OK);
            worst = fmax(worst, fabs(y.pfi_interp * r - sk));
            points++;
        }
        /* PFI30: the interpolation, between the table's readings on either side of 0.30. */
        assert_true(isfinite(hi_r) && !x.extrapolated && x.pfi_head == x.pfi_interp);
        assert_true(x.pfi_head * 0.30 >= lo_s - 5e-4 && x.pfi_head * 0.30 <= hi_s + 5e-4);
        assert_true(x.head_lo <= fmin(x.pfi_interp, x.pfi) && x.head_hi >= fmax(x.pfi_interp, x.pfi));
        runs++;
    }
    fclose(fp);
    print_message("%d runs, %d points of the summary: largest |s| difference %.5f\n", runs, points,
                  worst);
    assert_true(runs >= 10 && points >= 30 && t5 == 1);
    assert_true(worst < 5e-4);
}

static void test_real_two_levels_no_fake_interval(void **state)
{
    SKIP_WITHOUT_DATA();
    /* Baseline + two levels: the power law passes through both, no residual is left, so there
     * is no honest interval without the levels' own confidence intervals... */
    pfi_run run;
    assert_true(pub_perseus("A40", "bert-huge-uncased", &run));
    static const double caps[] = {300, 200, 175};
    pfi_run two = keep_caps(&run, caps, 3);
    pfi_index x;
    pfi_err e = {0};
    pfi_index_opts o = pfi_index_defaults();
    assert_int_equal(pfi_index_run(&two, &o, &x, &e), PFI_OK);
    assert_true(isfinite(x.pfi));
    assert_true(isnan(x.pfi_lo) && isnan(x.pfi_hi));
    /* ...and with them (+-2% throughput), there is one around the estimate. */
    for (int i = 0; i < two.n_levels; i++) {
        two.levels[i].tput_lo = two.levels[i].tput * 0.98;
        two.levels[i].tput_hi = two.levels[i].tput * 1.02;
    }
    assert_int_equal(pfi_index_run(&two, &o, &x, &e), PFI_OK);
    assert_true(x.pfi_lo < x.pfi && x.pfi < x.pfi_hi);
}

static void test_real_a100_binds_at_once(void **state)
{
    SKIP_WITHOUT_DATA();
    /* A100 PCIe jobs draw ~93% of the 300 W limit: the first cap step already costs. */
    pfi_run run;
    assert_true(pub_perseus("A100", "gpt3-xl", &run));
    pfi_index x;
    pfi_err e = {0};
    pfi_index_opts o = pfi_index_defaults();
    assert_int_equal(pfi_index_run(&run, &o, &x, &e), PFI_OK);
    assert_true(x.p0_w > 0.85 * 300);
    assert_true(x.pfi_at[0] > 0.2);
    assert_true(x.pfi > 0.7 && x.pfi < 1.0);
}

static void test_fine_sweep_thinned(void **state)
{
    /* 41 levels, 700 W down to 300 W in 10 W steps, s = 2 r^2: more than a curve holds. */
    pfi_run run;
    memset(&run, 0, sizeof run);
    snprintf(run.name, sizeof run.name, "fine");
    run.default_limit_w = run.max_limit_w = 700;
    run.min_limit_w = 200;
    for (int k = 0; k <= 40; k++) {
        pfi_level *l = &run.levels[run.n_levels++];
        l->cap_w = 300 + 10 * k;
        l->power_w = l->cap_w < 650 ? l->cap_w : 650;
        double r = 1 - l->power_w / 650;
        l->tput = 1000 * (1 - 2 * r * r);
        l->tput_lo = l->tput_hi = NAN;
    }
    pfi_curve c;
    pfi_err e = {0};
    assert_int_equal(pfi_curve_from_run(&run, PFI_FAM_POWER, &c, &e), PFI_OK);
    assert_int_equal(c.n, PFI_CURVE_MAX_PTS);
    assert_true(c.cap_w[0] == 300 && c.cap_w[c.n - 1] == 700 && c.cap0_w == 700);
    assert_true(fabs(c.fit.p[0] - 2) < 0.01 && fabs(c.fit.p[1] - 2) < 0.01);
}

/* A run drawing min(cap, 650 W) whose levels at 600, 500 and 400 W lose s[0..2]. */
static void shed_run(pfi_run *run, const double *s)
{
    memset(run, 0, sizeof *run);
    snprintf(run->name, sizeof run->name, "shed");
    run->default_limit_w = run->max_limit_w = 700;
    run->min_limit_w = 200;
    double caps[4] = {700, 600, 500, 400}, loss[4] = {0, s[0], s[1], s[2]};
    for (int k = 0; k < 4; k++) {
        pfi_level *l = &run->levels[run->n_levels++];
        l->cap_w = caps[k];
        l->power_w = caps[k] < 650 ? caps[k] : 650;
        l->tput = 1000 * (1 - loss[k]);
        l->tput_lo = l->tput_hi = NAN;
    }
}

static void test_shed_on_interpolation(void **state)
{
    /* r = 1/13, 3/13, 5/13 lose 5%, 8%, 20%: the SLA primitive is read on the broken line
     * through the measured points from the origin, as the headline is, whatever the fit says
     * (a power law through these misses the first point by a point and a half). */
    double s[3] = {0.05, 0.08, 0.20};
    pfi_run run;
    shed_run(&run, s);
    pfi_index x;
    pfi_index_opts o = pfi_index_defaults();
    o.n_boot = 0;
    pfi_err e = {0};
    assert_int_equal(pfi_index_run(&run, &o, &x, &e), PFI_OK);
    double r1 = 1.0 / 13, r2 = 3.0 / 13, r3 = 5.0 / 13;
    assert_true(fabs(x.shed_at[0] - 0.02 / 0.05 * r1) < 1e-9);
    assert_true(fabs(x.shed_at[1] - r1) < 1e-9);
    assert_true(fabs(x.shed_at[2] - (r2 + 0.02 / 0.12 * (r3 - r2))) < 1e-9);
    for (int k = 0; k < PFI_N_BUDGETS; k++)
        assert_false(x.shed_limited[k] || x.shed_extrap[k]);
    assert_true(pfi_fit_s(&x.fit, x.shed_at[0]) < 0.02 - 1e-3); /* the fit would give more */

    /* Never over budget within the sweep: the deepest measured shed, a lower bound; read on the
     * fit beyond it only when extrapolating, and marked. */
    double flat[3] = {0.002, 0.005, 0.015};
    shed_run(&run, flat);
    assert_int_equal(pfi_index_run(&run, &o, &x, &e), PFI_OK);
    assert_true(fabs(x.shed_at[0] - r3) < 1e-9 && x.shed_limited[0] && !x.shed_extrap[0]);
    /* A curve whose GPUs go down to 200 W (the sweep stopped at 400): past r3 on the fit. */
    pfi_curve c;
    assert_int_equal(pfi_curve_from_run(&run, -1, &c, &e), PFI_OK);
    c.min_cap_w = 200;
    o.extrapolate = 1;
    assert_int_equal(pfi_index_curve(&c, NULL, &o, &x, &e), PFI_OK);
    assert_true(x.shed_extrap[2] && x.shed_at[2] > r3 + 0.01);
    assert_true(fabs(pfi_fit_s(&x.fit, x.shed_at[2]) - 0.10) < 1e-6 ||
                (x.shed_limited[2] && fabs(x.shed_at[2] - (1 - 200.0 / 650)) < 1e-9));
    /* Never used up over the measured sheds: a lower bound unless the fit carries it on. */
    for (int k = 0; k < PFI_N_BUDGETS; k++)
        assert_true(x.shed_extrap[k] || x.shed_limited[k]);
    o.extrapolate = 0;
    assert_int_equal(pfi_index_curve(&c, NULL, &o, &x, &e), PFI_OK);
    assert_true(fabs(x.shed_at[2] - r3) < 1e-9 && x.shed_limited[2] && !x.shed_extrap[2]);

    /* A cap that never bound (300 W drawn under every cap) yet 3% slower under each: read on
     * the measurement too, no power within 2% (it was the fit's s = 0: all of it, "+"). */
    double slow[3] = {0.03, 0.03, 0.03};
    shed_run(&run, slow);
    for (int k = 0; k < run.n_levels; k++)
        run.levels[k].power_w = 300 - 0.1 * k;
    assert_int_equal(pfi_index_run(&run, &o, &x, &e), PFI_OK);
    assert_true(x.never_bound);
    assert_true(x.shed_at[0] < 0.001 && !x.shed_limited[0]);
    assert_true(x.shed_limited[1] && fabs(x.shed_at[1] - x.r_max) < 1e-12);
}

static void test_baseline_capped(void **state)
{
    pfi_run run;
    memset(&run, 0, sizeof run);
    run.default_limit_w = 700;
    double caps[3] = {700, 500, 600}, tput[3] = {1000, 900, 950};
    for (int k = 0; k < 3; k++) {
        pfi_level *l = &run.levels[run.n_levels++];
        l->cap_w = caps[k];
        l->power_w = caps[k] - 20;
        l->tput = tput[k];
    }
    int b = pfi_run_baseline(&run);
    assert_int_equal(b, 0);
    assert_false(pfi_run_baseline_capped(&run, b));
    /* The default limit's window gave no rate: the 600 W level stands in, and says so. */
    run.levels[0].tput = 0;
    b = pfi_run_baseline(&run);
    assert_int_equal(b, 2);
    assert_true(pfi_run_baseline_capped(&run, b));
    /* Within half a watt is the default limit; an unknown default limit says nothing. */
    run.levels[2].cap_w = 699.6;
    run.default_limit_w = 700;
    assert_false(pfi_run_baseline_capped(&run, 2));
    run.levels[2].cap_w = 600;
    run.default_limit_w = NAN;
    assert_false(pfi_run_baseline_capped(&run, 2));
    assert_false(pfi_run_baseline_capped(&run, -1));
}

static void test_cap_mapping(void **state)
{
    SKIP_WITHOUT_DATA();
    pfi_run run;
    pfi_curve c;
    perseus_curve("A40", "bert-huge-uncased", &run, &c);
    pfi_err e = {0};
    assert_true(fabs(c.min_cap_w - 125) < 1e-9 && fabs(c.max_cap_w - 300) < 1e-9);
    for (int k = 0; k < c.n; k++)
        assert_true(fabs(pfi_curve_rel_at_cap(&c, PFI_VIEW_MEASURED, c.cap_w[k]) - c.rel[k]) <
                    1e-12);
    double mid = pfi_curve_rel_at_cap(&c, PFI_VIEW_AUTO, 187.5);
    assert_true(fabs(mid - (c.rel[2] + c.rel[3]) / 2) < 1e-12);
    /* Clamped to the measured range. */
    assert_true(pfi_curve_rel_at_cap(&c, PFI_VIEW_MEASURED, 50) == c.rel[0]);
    assert_true(fabs(pfi_curve_tput_at_cap(&c, PFI_VIEW_MEASURED, 400) - c.t0) < 1e-9);
    /* The fit view at the baseline is the baseline; it tracks the measurement elsewhere. */
    assert_true(fabs(pfi_curve_rel_at_cap(&c, PFI_VIEW_FIT, 300) - 1.0) < 1e-12);
    for (int k = 0; k < c.n; k++)
        assert_true(fabs(pfi_curve_rel_at_cap(&c, PFI_VIEW_FIT, c.cap_w[k]) - c.rel[k]) < 0.04);
    double caps[3] = {150, 200, 250}, tp[3], dr[3];
    pfi_curve_tput_grid(&c, PFI_VIEW_MEASURED, caps, 3, tp, dr);
    assert_true(tp[0] < tp[1] && tp[1] < tp[2]);
    assert_true(dr[0] < dr[1] && dr[1] < dr[2]);

    /* A predicted curve: draw = min(cap, P0), no loss until the cap binds. */
    pfi_curve p;
    assert_int_equal(pfi_curve_from_fit(&c.fit, 1000, 500, 700, 200, 700, 8, 0.5, &p, &e), PFI_OK);
    assert_true(pfi_curve_draw_at_cap(&p, 650) == 500);
    assert_true(pfi_curve_tput_at_cap(&p, PFI_VIEW_AUTO, 650) == 1000);
    double t350 = pfi_curve_tput_at_cap(&p, PFI_VIEW_AUTO, 350);
    assert_true(fabs(t350 - 1000 * (1 - pfi_fit_s(&c.fit, 0.3))) < 1e-9);
    assert_true(pfi_curve_tput_at_cap(&p, PFI_VIEW_AUTO, 100) ==
                pfi_curve_tput_at_cap(&p, PFI_VIEW_AUTO, 200));
    assert_int_equal(pfi_curve_from_fit(&c.fit, 0, 500, 700, 200, 700, 8, 0.5, &p, &e),
                     PFI_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_isotonic),
        cmocka_unit_test(test_isotonic_pinned_inside),
        cmocka_unit_test(test_below_points),
        cmocka_unit_test(test_fit_recovers_power_law),
        cmocka_unit_test(test_real_llm_curve),
        cmocka_unit_test(test_real_below_cap_nonmonotone),
        cmocka_unit_test(test_faster_level_pinned_exactly),
        cmocka_unit_test(test_real_flat_ncf),
        cmocka_unit_test(test_real_near_flat),
        cmocka_unit_test(test_shallow_but_bound),
        cmocka_unit_test(test_real_too_few_levels),
        cmocka_unit_test(test_real_not_reaching_depth),
        cmocka_unit_test(test_real_two_levels_no_fake_interval),
        cmocka_unit_test(test_real_pfi30_against_summary),
        cmocka_unit_test(test_real_a100_binds_at_once),
        cmocka_unit_test(test_fine_sweep_thinned),
        cmocka_unit_test(test_shed_on_interpolation),
        cmocka_unit_test(test_baseline_capped),
        cmocka_unit_test(test_cap_mapping),
    };
    return pfi_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
