/* SPDX-License-Identifier: Apache-2.0 */
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
#include "support/skip.h"

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
    if (!pub_have_data())
        PFI_TEST_SKIP("public data not found under %s\n", pfi_data_dir());
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
    if (!pub_have_data())
        PFI_TEST_SKIP("public data not found under %s\n", pfi_data_dir());
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

/* A measured-looking curve on a 100-300 W GPU: no loss above knee_w, then relative throughput
 * falls by `slope` per watt of cap below it (linear in the cap, as the paper reads measured
 * curves). */
static void knee_curve(pfi_curve *c, double p0_w, double knee_w, double slope)
{
    memset(c, 0, sizeof *c);
    c->t0 = 100;
    c->p0_w = p0_w;
    c->cap0_w = c->max_cap_w = 300;
    c->min_cap_w = 100;
    c->n_gpus = 1;
    c->n = 9;
    for (int i = 0; i < c->n; i++) {
        c->cap_w[i] = 100 + 25 * i;
        c->draw_w[i] = fmin(c->cap_w[i], p0_w);
        c->rel[i] = c->rel_mono[i] = 1 - slope * fmax(0, knee_w - c->cap_w[i]);
    }
}

static pfi_probe_obs obs_of(const pfi_curve *c, int level)
{
    pfi_probe_obs o = {c->t0, c->p0_w, c->cap0_w, c->min_cap_w, c->max_cap_w, c->n_gpus,
                       c->cap_w[level], c->draw_w[level], c->rel[level]};
    return o;
}

static double rel_at(const pfi_curve *c, double cap)
{
    return pfi_curve_rel_at_cap(c, PFI_VIEW_MONOTONE, cap);
}

/* Neighbours of the job's own shape give the job's curve back, through the probe; a lower
 * tier is taken only when the higher one runs out; a reference left out changes nothing. */
static void test_shape_neighbours(void **state)
{
    enum { N = 8 };
    pfi_curve ref[N], job, out, out2;
    unsigned char use[N];
    for (int i = 0; i < N; i++) {
        /* tier 2: knee at 200 W, 0.4%/W; tier 1: knee at 280 W, 0.2%/W */
        knee_curve(&ref[i], 250, i < 4 ? 200 : 280, i < 4 ? 0.004 : 0.002);
        use[i] = i < 4 ? 2 : 1;
    }
    knee_curve(&job, 240, 200, 0.004);
    pfi_probe_obs o = obs_of(&job, 2); /* probe at 150 W: 0.8 */
    pfi_probe_shape_opts so = {3, PFI_PROBE_SPACE_MAXCAP, 0, 0, 0, 0, 0};
    pfi_err e = {0};
    assert_int_equal(pfi_probe_shape_curve(&o, ref, use, N, &so, &out, &e), PFI_OK);
    assert_true(out.n >= 2 && out.min_cap_w == 100 && out.max_cap_w == 300);
    for (double cap = 100; cap <= 300; cap += 25)
        assert_true(fabs(rel_at(&out, cap) - rel_at(&job, cap)) < 0.01);
    assert_true(fabs(rel_at(&out, o.cap_w) - o.rel) < 0.01);
    for (int i = 1; i < out.n; i++)
        assert_true(out.rel_mono[i] >= out.rel_mono[i - 1]);

    /* the close tier first, even when the other tier is nearer the probe: at 0.75 the
     * tier-1 references (0.74 at 150 W) are nearer than the tier-2 ones (0.8), yet the slope
     * below the probe is tier 2's 0.4%/W */
    pfi_probe_obs o75 = o;
    o75.rel = 0.75;
    assert_int_equal(pfi_probe_shape_curve(&o75, ref, use, N, &so, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 125) - (0.75 - 0.004 * 25)) < 0.01);
    assert_int_equal(pfi_probe_shape_curve(&o75, ref, NULL, N, &so, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 125) - (0.75 - 0.002 * 25)) < 0.01); /* no tiers */

    /* a reference left out may be anything */
    pfi_curve keep = ref[5];
    use[5] = 0;
    assert_int_equal(pfi_probe_shape_curve(&o, ref, use, N, &so, &out, &e), PFI_OK);
    knee_curve(&ref[5], 120, 300, 0.0045);
    assert_int_equal(pfi_probe_shape_curve(&o, ref, use, N, &so, &out2, &e), PFI_OK);
    assert_memory_equal(out.rel, out2.rel, sizeof out.rel);
    ref[5] = keep;
    use[5] = 1;

    /* without the close tier, the other tier's slope (0.2%/W, not 0.4) from the probe on */
    for (int i = 0; i < 4; i++)
        use[i] = 0;
    assert_int_equal(pfi_probe_shape_curve(&o, ref, use, N, &so, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, o.cap_w) - o.rel) < 0.01);
    assert_true(fabs(rel_at(&out, 125) - (o.rel - 0.002 * 25)) < 0.01);

    /* nobody: nothing to learn from, and still a curve through the probe */
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, 0, &so, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, o.cap_w) - o.rel) < 0.02);
    assert_true(rel_at(&out, 100) < o.rel && rel_at(&out, 300) == 1);

    o.p0_w = 0;
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, &so, &out, &e), PFI_EINVAL);
}

/* The probe's draw picks the neighbours among references that slow down alike at its cap:
 * those drawing what the job draws there, and their slope below it. */
static void test_shape_draw_weight(void **state)
{
    enum { N = 8 };
    pfi_curve ref[N], out;
    for (int i = 0; i < N; i++) {
        /* 0-3: the cap binds (draw = cap), 0.8%/W below 175 W; 4-7: draw 80% of the cap,
         * 0.4%/W below 200 W; all lose 0.2 at 150 W */
        knee_curve(&ref[i], 300, i < 4 ? 175 : 200, i < 4 ? 0.008 : 0.004);
        if (i >= 4)
            for (int l = 0; l < ref[i].n; l++)
                ref[i].draw_w[l] = 0.8 * ref[i].cap_w[l];
    }
    pfi_curve job = ref[5];
    pfi_probe_obs o = obs_of(&job, 2); /* 150 W: 0.8, drawing 120 W */
    pfi_probe_shape_opts so = {4, PFI_PROBE_SPACE_MAXCAP, 0, 0, 0, 0, 0};
    pfi_err e = {0};
    /* a tie in slowdown: without the draw, the first four (the wrong slope) */
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, &so, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 125) - (0.8 - 0.008 * 25)) < 0.01);
    so.w_draw = 1;
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, &so, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 125) - (0.8 - 0.004 * 25)) < 0.01);
    for (double cap = 100; cap <= 300; cap += 25)
        assert_true(fabs(rel_at(&out, cap) - rel_at(&job, cap)) < 0.01);
    /* a probe whose draw was not measured falls back on the slowdown alone */
    o.draw_w = 0;
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, &so, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 125) - (0.8 - 0.008 * 25)) < 0.01);
}

/* The amplitude factor, by hand: the probe's slowdown over the reference's, clamped to
 * [1/2, 2], to the power amp; 1 when amp is 0 or either slowdown is under one point. */
static void test_amp_factor(void **state)
{
    (void)state;
    assert_true(fabs(pfi_probe_amp_factor(0.2, 0.1, 1) - 2.0) < 1e-12);
    assert_true(fabs(pfi_probe_amp_factor(0.1, 0.2, 1) - 0.5) < 1e-12);
    assert_true(fabs(pfi_probe_amp_factor(0.15, 0.2, 1) - 0.75) < 1e-12);
    assert_true(fabs(pfi_probe_amp_factor(0.2, 0.1, 0.5) - sqrt(2.0)) < 1e-12);
    assert_true(fabs(pfi_probe_amp_factor(0.3, 0.1, 1) - 2.0) < 1e-12);  /* 3, clamped */
    assert_true(fabs(pfi_probe_amp_factor(0.05, 0.2, 1) - 0.5) < 1e-12); /* 1/4, clamped */
    assert_true(pfi_probe_amp_factor(0.2, 0.1, 0) == 1.0);
    assert_true(pfi_probe_amp_factor(0.005, 0.2, 1) == 1.0); /* the probe under a point */
    assert_true(pfi_probe_amp_factor(0.2, 0.009, 1) == 1.0); /* the reference under a point */
    assert_true(pfi_probe_amp_factor(0.2, NAN, 1) == 1.0);
}

/* The walk rescaled by the probe, by hand.  References (knee 200 W) lose 0.3, 0.4 and 0.5%/W
 * below it, so 0.15, 0.20 and 0.25 at the 150 W probe; the job loses 0.2%/W (0.10 there).
 * amp 1: factors 0.10/0.15 = 2/3, 0.5, 0.4 -> 0.5 (clamped); scaled slopes 0.2, 0.2, 0.25%/W,
 * median 0.2%/W: the job's own curve (0.15 at 125 W, 0.05 at 175 W, none from 200 W).
 * amp 0: the references' median slope 0.4%/W from the probe (0.20 at 125 W, none from 175 W).
 * amp 0.5: factors sqrt(2/3), sqrt(0.5), sqrt(0.5); slopes 0.245, 0.283, 0.354%/W, median
 * 0.4 sqrt(0.5) = 0.2828%/W (0.1707 at 125 W, 0.0293 at 175 W). */
static void test_shape_rescaled(void **state)
{
    (void)state;
    enum { N = 3 };
    pfi_curve ref[N], job, out, plain;
    for (int i = 0; i < N; i++)
        knee_curve(&ref[i], 280, 200, 0.003 + 0.001 * i);
    knee_curve(&job, 280, 200, 0.002);
    pfi_probe_obs o = obs_of(&job, 2); /* 150 W: 0.90 */
    pfi_probe_shape_opts so = {3, PFI_PROBE_SPACE_MAXCAP, 0, 0, 0, 0, 0};
    pfi_err e = {0};
    assert_int_equal(pfi_probe_shape_rescaled(&o, ref, NULL, N, &so, 1, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 150) - 0.90) < 1e-3);
    assert_true(fabs(rel_at(&out, 125) - 0.85) < 1e-3);
    assert_true(fabs(rel_at(&out, 175) - 0.95) < 1e-3);
    assert_true(fabs(rel_at(&out, 225) - 1.00) < 1e-9);
    /* and the job's curve everywhere, but within one grid step (200 / 23 W) of its knee, where
     * the estimate's grid cuts the corner: 0.2%/W x 8.7 W / 2 at most */
    for (double cap = 100; cap <= 300; cap += 12.5)
        assert_true(fabs(rel_at(&out, cap) - rel_at(&job, cap)) < (cap == 200 ? 0.009 : 1e-3));
    assert_int_equal(pfi_probe_shape_rescaled(&o, ref, NULL, N, &so, 0, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 125) - 0.80) < 1e-3);
    assert_true(fabs(rel_at(&out, 180) - 1.00) < 1e-3); /* past the grid's corner at 175 W */
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, &so, &plain, &e), PFI_OK);
    assert_memory_equal(out.rel_mono, plain.rel_mono, sizeof plain.rel_mono); /* amp 0 */
    assert_int_equal(pfi_probe_shape_rescaled(&o, ref, NULL, N, &so, 0.5, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 125) - (0.90 - 25 * 0.004 * sqrt(0.5))) < 1e-3);
    assert_true(fabs(rel_at(&out, 175) - (0.90 + 25 * 0.004 * sqrt(0.5))) < 1e-3);
    /* a committee passes amp to every member (both take all three references here) */
    pfi_probe_shape_opts mem[2] = {{3, PFI_PROBE_SPACE_MAXCAP, 0, 0, 0, 0, 0}, {4, PFI_PROBE_SPACE_MAXCAP, 1, 0, 0, 0, 0}};
    assert_int_equal(pfi_probe_shape_mean(&o, ref, NULL, N, mem, 2, 1, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 125) - 0.85) < 1e-3);
    assert_int_equal(pfi_probe_shape_mean(&o, ref, NULL, N, mem, 2, 0, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 125) - 0.80) < 1e-3);
}

/* The weighted median, by hand: the smallest value whose cumulative weight reaches half the
 * total, the mean with the next when it reaches exactly half; equal weights: the median. */
static void test_weighted_median(void **state)
{
    (void)state;
    double v1[] = {3, 1, 2};
    assert_true(pfi_probe_weighted_median(v1, NULL, 3) == 2);
    double v2[] = {4, 1, 3, 2}, w2[] = {1, 1, 1, 1};
    assert_true(pfi_probe_weighted_median(v2, w2, 4) == 2.5); /* as the plain median */
    double v3[] = {3, 1, 2}, w3[] = {4, 1, 1}; /* the weights travel with their values */
    assert_true(pfi_probe_weighted_median(v3, w3, 3) == 3);   /* 1, 2 of 6 below half */
    double v4[] = {1, 2, 3}, w4[] = {2, 1, 1};                /* 2 of 4: exactly half */
    assert_true(pfi_probe_weighted_median(v4, w4, 3) == 1.5);
    double v5[] = {1, 2, 3}, w5[] = {3, 1, 1};
    assert_true(pfi_probe_weighted_median(v5, w5, 3) == 1);
    assert_true(isnan(pfi_probe_weighted_median(v5, w5, 0)));
}

/* Near votes, by hand.  References (knee 200 W) lose 0.21, 0.4 and 0.5%/W below it: 0.105,
 * 0.20 and 0.25 at the 150 W probe, where the job (0.2%/W) loses 0.10.  Distances 0.005, 0.10,
 * 0.15: weights 1/0.015, 1/0.11, 1/0.16 (66.7, 9.1, 6.25), so the nearest holds more than half
 * and its slope, 0.21%/W, is walked: 0.90 - 25 x 0.0021 = 0.8475 at 125 W.  Equal votes: the
 * median slope 0.4%/W, 0.80 at 125 W.  When every reference is as near, near votes are the
 * plain median. */
static void test_shape_near_votes(void **state)
{
    (void)state;
    enum { N = 3 };
    pfi_curve ref[N], job, out, plain;
    const double slope[N] = {0.0021, 0.004, 0.005};
    for (int i = 0; i < N; i++)
        knee_curve(&ref[i], 280, 200, slope[i]);
    knee_curve(&job, 280, 200, 0.002);
    pfi_probe_obs o = obs_of(&job, 2); /* 150 W: 0.90 */
    pfi_probe_shape_opts so = {3, PFI_PROBE_SPACE_MAXCAP, 0, PFI_PROBE_VOTES_EQUAL, 0, 0, 0};
    pfi_err e = {0};
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, &so, &plain, &e), PFI_OK);
    assert_true(fabs(rel_at(&plain, 125) - 0.80) < 1e-3);
    so.votes = PFI_PROBE_VOTES_NEAR;
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, &so, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 150) - 0.90) < 1e-3);
    assert_true(fabs(rel_at(&out, 125) - (0.90 - 25 * 0.0021)) < 1e-3);
    assert_true(fabs(rel_at(&out, 175) - (0.90 + 25 * 0.0021)) < 1e-3);
    /* the rescaled walk and the committee take the votes too */
    assert_int_equal(pfi_probe_shape_rescaled(&o, ref, NULL, N, &so, 0, &plain, &e), PFI_OK);
    assert_memory_equal(out.rel_mono, plain.rel_mono, sizeof plain.rel_mono);
    assert_int_equal(pfi_probe_shape_mean(&o, ref, NULL, N, &so, 1, 0, &plain, &e), PFI_OK);
    assert_memory_equal(out.rel_mono, plain.rel_mono, sizeof plain.rel_mono);
    /* all three as near: slopes 0.3, 0.5, 0.5%/W (0.15, 0.25, 0.25 at the probe) around the
     * job's 0.4%/W (0.20): distances 0.05 each, equal weights, the plain median */
    knee_curve(&job, 280, 200, 0.004);
    o = obs_of(&job, 2);
    for (int i = 0; i < N; i++)
        knee_curve(&ref[i], 280, 200, i == 0 ? 0.003 : 0.005);
    so.votes = PFI_PROBE_VOTES_EQUAL;
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, &so, &plain, &e), PFI_OK);
    so.votes = PFI_PROBE_VOTES_NEAR;
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, &so, &out, &e), PFI_OK);
    assert_memory_equal(out.rel_mono, plain.rel_mono, sizeof plain.rel_mono);
    assert_true(fabs(rel_at(&out, 125) - (0.80 - 25 * 0.005)) < 1e-3);
}

/* Extra time and back, by hand: u = s / (1 - s), s held in [0, 0.95]; s = u / (1 + u), u >= 0. */
static void test_time_scale(void **state)
{
    (void)state;
    assert_true(fabs(pfi_probe_to_time(0.2) - 0.25) < 1e-12);
    assert_true(fabs(pfi_probe_to_time(0.5) - 1.0) < 1e-12);
    assert_true(fabs(pfi_probe_to_time(0.99) - 19.0) < 1e-9); /* held at 0.95 */
    assert_true(pfi_probe_to_time(-0.1) == 0);
    assert_true(fabs(pfi_probe_from_time(0.25) - 0.2) < 1e-12);
    assert_true(fabs(pfi_probe_from_time(19.0) - 0.95) < 1e-12);
    assert_true(pfi_probe_from_time(-0.5) == 0);
    assert_true(isnan(pfi_probe_to_time(NAN)) && isnan(pfi_probe_from_time(NAN)));
}

/* The walk in extra time, by hand.  Three alike references lose 0.4%/W below 200 W: s 0.2 at
 * the 150 W probe (u 1/4), 0.3 at 125 W (u 3/7), 0.1 at 175 W (u 1/9); the job reads 0.85 at
 * 150 W (s 0.15, u 3/17).  rel = 1 / (1 + u).  Amplitude 1 in time, factor (3/17) / (1/4) =
 * 12/17: u at 125 W 12/17 x 3/7 = 36/119, rel 119/155 (in slowdown the factor is 3/4: 0.775);
 * at 175 W 12/17 x 1/9 = 4/51, rel 51/55 (slowdown: 0.925).  Amplitude 0: u = 3/17 + (3/7 -
 * 1/4) = 169/476 at 125 W, rel 476/645 (slowdown 0.75).  Amplitude 1/2: factor sqrt(12/17),
 * u = 3/17 + sqrt(12/17) x 5/28.  (The estimate's grid read between its caps: within 1e-3.) */
static void test_shape_time_walk(void **state)
{
    (void)state;
    enum { N = 3 };
    pfi_curve ref[N], job, out, plain;
    for (int i = 0; i < N; i++)
        knee_curve(&ref[i], 280, 200, 0.004);
    knee_curve(&job, 280, 200, 0.003);
    pfi_probe_obs o = obs_of(&job, 2); /* 150 W: 0.85 */
    pfi_probe_shape_opts so = {3, PFI_PROBE_SPACE_MAXCAP, 0, 0, PFI_PROBE_SCALE_TIME, 0, 0};
    pfi_err e = {0};
    assert_int_equal(pfi_probe_shape_rescaled(&o, ref, NULL, N, &so, 1, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 150) - 0.85) < 1e-3);
    assert_true(fabs(rel_at(&out, 125) - 119.0 / 155) < 1e-3);
    assert_true(fabs(rel_at(&out, 175) - 51.0 / 55) < 1e-3);
    assert_int_equal(pfi_probe_shape_rescaled(&o, ref, NULL, N, &so, 0, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 125) - 476.0 / 645) < 1e-3);
    assert_int_equal(pfi_probe_shape_rescaled(&o, ref, NULL, N, &so, 0.5, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 125) - 1 / (1 + 3.0 / 17 + sqrt(12.0 / 17) * 5 / 28)) < 1e-3);
    /* slowdown, as before */
    so.scale = PFI_PROBE_SCALE_SLOWDOWN;
    assert_int_equal(pfi_probe_shape_rescaled(&o, ref, NULL, N, &so, 1, &plain, &e), PFI_OK);
    assert_true(fabs(rel_at(&plain, 125) - 0.775) < 1e-3);
    assert_true(fabs(rel_at(&plain, 175) - 0.925) < 1e-3);
    /* a committee passes the scale to its members */
    pfi_probe_shape_opts mem[2] = {{3, PFI_PROBE_SPACE_MAXCAP, 0, 0, PFI_PROBE_SCALE_TIME, 0, 0},
                                   {3, PFI_PROBE_SPACE_MAXCAP, 1, 0, PFI_PROBE_SCALE_TIME, 0, 0}};
    assert_int_equal(pfi_probe_shape_mean(&o, ref, NULL, N, mem, 2, 1, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 125) - 119.0 / 155) < 1e-3);
}

/* The baseline draw share in the distance, by hand.  The job draws 280 of 300 W uncapped
 * (share 0.933) and reads 0.90 at the 150 W probe.  Three references draw 280 W too and lose
 * 0.3%/W below 200 W (0.85 at 150 W: distance 0.05); three draw 200 W (share 0.667) and lose
 * 0.25%/W (0.875: distance 0.025).  By slowdown alone the 3 nearest are the 200 W ones:
 * 0.90 - 25 x 0.0025 = 0.8375 at 125 W.  With weight 1 those are 0.025 + 0.267 away and the
 * 280 W ones 0.05: 0.90 - 25 x 0.003 = 0.825. */
static void test_shape_p0_share(void **state)
{
    (void)state;
    enum { N = 6 };
    pfi_curve ref[N], job, out;
    for (int i = 0; i < N; i++)
        knee_curve(&ref[i], i < 3 ? 280 : 200, 200, i < 3 ? 0.003 : 0.0025);
    knee_curve(&job, 280, 200, 0.002);
    pfi_probe_obs o = obs_of(&job, 2); /* 150 W: 0.90 */
    pfi_probe_shape_opts so = {3, PFI_PROBE_SPACE_MAXCAP, 0, 0, 0, 0, 0};
    pfi_err e = {0};
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, &so, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 125) - 0.8375) < 1e-3);
    so.w_p0 = 1;
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, &so, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 150) - 0.90) < 1e-3);
    assert_true(fabs(rel_at(&out, 125) - 0.825) < 1e-3);
    /* weight 0.1: 0.025 + 0.0267 = 0.0517 > 0.05, still the 280 W ones */
    so.w_p0 = 0.1;
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, &so, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 125) - 0.825) < 1e-3);
    so.w_p0 = 0.05; /* 0.025 + 0.0133 < 0.05: the 200 W ones again */
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, &so, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 125) - 0.8375) < 1e-3);
}

/* A committee's curve is its members' mean, level by level; one member is that member. */
static void test_shape_mean(void **state)
{
    enum { N = 8 };
    pfi_curve ref[N], a, b, m;
    for (int i = 0; i < N; i++) /* slopes below the knee spread from 0.2 to 0.9 %/W */
        knee_curve(&ref[i], 250, 200 + 5 * i, 0.002 + 0.001 * i);
    pfi_curve job;
    knee_curve(&job, 250, 210, 0.004);
    pfi_probe_obs o = obs_of(&job, 2);
    pfi_probe_shape_opts mem[2] = {{3, PFI_PROBE_SPACE_MAXCAP, 0, 0, 0, 0, 0}, {8, PFI_PROBE_SPACE_MAXCAP, 0, 0, 0, 0, 0}};
    pfi_err e = {0};
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, &mem[0], &a, &e), PFI_OK);
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, &mem[1], &b, &e), PFI_OK);
    assert_int_equal(pfi_probe_shape_mean(&o, ref, NULL, N, mem, 2, 0, &m, &e), PFI_OK);
    assert_int_equal(m.n, a.n);
    int differ = 0;
    for (int i = 0; i < m.n; i++) {
        assert_true(m.cap_w[i] == a.cap_w[i] && a.cap_w[i] == b.cap_w[i]);
        assert_true(fabs(m.rel_mono[i] - 0.5 * (a.rel_mono[i] + b.rel_mono[i])) < 1e-12);
        assert_true(m.rel[i] == m.rel_mono[i]);
        assert_true(i == 0 || m.rel_mono[i] >= m.rel_mono[i - 1]);
        differ |= fabs(a.rel_mono[i] - b.rel_mono[i]) > 1e-3;
    }
    assert_true(differ); /* the members do disagree, so the mean is a mean */
    assert_int_equal(pfi_probe_shape_mean(&o, ref, NULL, N, mem, 1, 0, &m, &e), PFI_OK);
    assert_memory_equal(m.rel_mono, a.rel_mono, sizeof a.rel_mono);
    assert_int_equal(pfi_probe_shape_mean(&o, ref, NULL, N, mem, 0, 0, &m, &e), PFI_EINVAL);
    /* the references' monotone levels made once give the same curve; one reference's levels
     * out of order (its 125 W level above its 150 W one) so that they matter */
    ref[2].rel[1] = ref[2].rel_mono[1] = ref[2].rel[2] + 0.05;
    static double iso[N * PFI_CURVE_MAX_PTS];
    pfi_probe_refs_iso(ref, N, iso);
    assert_true(fabs(iso[2 * PFI_CURVE_MAX_PTS + 1] - iso[2 * PFI_CURVE_MAX_PTS + 2]) < 1e-12);
    for (int amp = 0; amp < 2; amp++) {
        assert_int_equal(pfi_probe_shape_mean(&o, ref, NULL, N, mem, 2, amp, &a, &e), PFI_OK);
        assert_int_equal(pfi_probe_shape_mean_iso(&o, ref, iso, NULL, N, mem, 2, amp, &b, &e),
                         PFI_OK);
        assert_memory_equal(a.rel_mono, b.rel_mono, sizeof a.rel_mono);
        assert_memory_equal(a.cap_w, b.cap_w, sizeof a.cap_w);
    }
}

/* The hedged walk, by hand, on test_shape_time_walk's references and job: at 125 W the six
 * readings give, in slowdown, 0.75 (amplitude 0), 0.85 - sqrt(3/4) x 0.1 (1/2) and 0.775 (1);
 * in extra time 476/645, 1 / (1 + 3/17 + sqrt(12/17) x 5/28) and 119/155; the hedge is their
 * mean, whatever scale and amplitude the members were given.  Through the probe all the same. */
static void test_shape_hedged(void **state)
{
    (void)state;
    enum { N = 3 };
    pfi_curve ref[N], job, out, one;
    for (int i = 0; i < N; i++)
        knee_curve(&ref[i], 280, 200, 0.004);
    knee_curve(&job, 280, 200, 0.003);
    pfi_probe_obs o = obs_of(&job, 2); /* 150 W: 0.85 */
    pfi_probe_shape_opts so = {3, PFI_PROBE_SPACE_MAXCAP, 0, 0, PFI_PROBE_SCALE_TIME, 0, 0};
    static double iso[N * PFI_CURVE_MAX_PTS];
    pfi_probe_refs_iso(ref, N, iso);
    pfi_err e = {0};
    double want = (0.75 + (0.85 - sqrt(0.75) * 0.1) + 0.775 + 476.0 / 645 +
                   1 / (1 + 3.0 / 17 + sqrt(12.0 / 17) * 5 / 28) + 119.0 / 155) /
                  6;
    assert_int_equal(pfi_probe_shape_hedged_iso(&o, ref, iso, NULL, N, &so, 1, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 150) - 0.85) < 1e-3);
    assert_true(fabs(rel_at(&out, 125) - want) < 1e-3);
    so.scale = PFI_PROBE_SCALE_SLOWDOWN;
    assert_int_equal(pfi_probe_shape_hedged_iso(&o, ref, NULL, NULL, N, &so, 1, &one, &e),
                     PFI_OK);
    assert_memory_equal(out.rel_mono, one.rel_mono, sizeof one.rel_mono);
    /* level by level the mean of the six pfi_probe_shape_mean_iso curves */
    double acc[PFI_CURVE_MAX_PTS] = {0};
    for (int h = 0; h < PFI_PROBE_HEDGE_N; h++) {
        so.scale = pfi_probe_hedge_scale[h];
        assert_int_equal(pfi_probe_shape_mean_iso(&o, ref, iso, NULL, N, &so, 1,
                                                  pfi_probe_hedge_amp[h], &one, &e),
                         PFI_OK);
        for (int i = 0; i < one.n; i++)
            acc[i] += one.rel_mono[i] / PFI_PROBE_HEDGE_N;
    }
    for (int i = 0; i < out.n; i++) {
        assert_true(fabs(out.rel_mono[i] - acc[i]) < 1e-12 && out.rel[i] == out.rel_mono[i]);
        assert_true(i == 0 || out.rel_mono[i] >= out.rel_mono[i - 1]);
    }
    assert_int_equal(pfi_probe_shape_hedged_iso(&o, ref, iso, NULL, N, &so, 0, &out, &e),
                     PFI_EINVAL);
    /* a committee: bit for bit the readings' committees (pfi_probe_shape_mean_iso), summed in
     * reading order and divided by six, as the hedge was first computed (one neighbour search
     * per member now serves the six readings) */
    pfi_probe_shape_opts mem[3] = {{3, PFI_PROBE_SPACE_MAXCAP, 0, PFI_PROBE_VOTES_NEAR, 0, 0, 0},
                                   {2, PFI_PROBE_SPACE_MAXCAP, 1, PFI_PROBE_VOTES_NEAR, 0, 0, 0},
                                   {3, PFI_PROBE_SPACE_MAXCAP, 3, 0, 0, 0, 0}};
    for (int i = 0; i < N; i++) /* neighbours that differ, in levels with many bits */
        for (int l = 0; l < 5; l++)
            ref[i].rel[l] -= 0.0123 * (i + 1) / 7.0 * (5 - l) / 3.0;
    pfi_probe_refs_iso(ref, N, iso);
    double sum[PFI_CURVE_MAX_PTS] = {0};
    for (int h = 0; h < PFI_PROBE_HEDGE_N; h++) {
        pfi_probe_shape_opts m2[3] = {mem[0], mem[1], mem[2]};
        m2[0].scale = m2[1].scale = m2[2].scale = pfi_probe_hedge_scale[h];
        assert_int_equal(pfi_probe_shape_mean_iso(&o, ref, iso, NULL, N, m2, 3,
                                                  pfi_probe_hedge_amp[h], &one, &e),
                         PFI_OK);
        for (int i = 0; i < one.n; i++)
            sum[i] += 1.0 * one.rel_mono[i];
    }
    assert_int_equal(pfi_probe_shape_hedged_iso(&o, ref, iso, NULL, N, mem, 3, &out, &e), PFI_OK);
    for (int i = 0; i < out.n; i++)
        sum[i] /= 6.0;
    assert_memory_equal(out.rel_mono, sum, sizeof sum);
    assert_memory_equal(out.cap_w, one.cap_w, sizeof one.cap_w);
    assert_true(out.n == one.n && out.t0 == one.t0 && out.r_max == one.r_max);
}

/* The stacked walk on neighbours that are one knee scaled by a factor (slopes 0.003-0.005 per
 * W below 200 W: within the amplitude's clamp): probed at the job's 150 W and walked with the
 * other neighbours, each neighbour's curve comes back exactly from the factor read in slowdown
 * (amplitude 1), so that reading's weight is 1 / 1e-4 and every other reading's smaller; the
 * stacked curve is the readings' mean with those weights, and nearer the job's own curve (slope
 * 0.0042) than the equal hedge.  A reference that is not a neighbour changes nothing; a
 * neighbour's curve does. */
static void test_shape_stacked(void **state)
{
    (void)state;
    enum { N = 6 };
    pfi_curve ref[N], job, st, hd, one;
    const double slope[N] = {0.003, 0.0035, 0.004, 0.0045, 0.005, 0.004};
    for (int i = 0; i < N; i++)
        knee_curve(&ref[i], 280, 200, slope[i]);
    unsigned char use[N] = {1, 1, 1, 1, 1, 0}; /* the last is no neighbour */
    knee_curve(&job, 280, 200, 0.0042);
    pfi_probe_obs o = obs_of(&job, 2); /* 150 W */
    pfi_probe_shape_opts so = {5, PFI_PROBE_SPACE_MAXCAP, 0, PFI_PROBE_VOTES_NEAR, 0, 0, 0};
    static double iso[N * PFI_CURVE_MAX_PTS];
    pfi_probe_refs_iso(ref, N, iso);
    pfi_err e = {0};
    double w[PFI_PROBE_HEDGE_N];
    assert_int_equal(pfi_probe_stack_weights(&o, ref, iso, use, N, &so, w, &e), PFI_OK);
    assert_true(fabs(w[2] - 1e4) < 1e-3); /* amplitude 1 in slowdown: exact */
    for (int h = 0; h < PFI_PROBE_HEDGE_N; h++)
        assert_true(h == 2 || (w[h] > 0 && w[h] < 0.9e4));
    assert_int_equal(pfi_probe_shape_stacked_iso(&o, ref, iso, use, N, &so, 1, &st, &e), PFI_OK);
    assert_int_equal(pfi_probe_shape_hedged_iso(&o, ref, iso, use, N, &so, 1, &hd, &e), PFI_OK);
    double acc[PFI_CURVE_MAX_PTS] = {0}, ws = 0;
    for (int h = 0; h < PFI_PROBE_HEDGE_N; h++) {
        pfi_probe_shape_opts sh = so;
        sh.scale = pfi_probe_hedge_scale[h];
        assert_int_equal(pfi_probe_shape_mean_iso(&o, ref, iso, use, N, &sh, 1,
                                                  pfi_probe_hedge_amp[h], &one, &e),
                         PFI_OK);
        for (int i = 0; i < one.n; i++)
            acc[i] += w[h] * one.rel_mono[i];
        ws += w[h];
    }
    double est = 0, eh = 0;
    for (int i = 0; i < st.n; i++) {
        assert_true(fabs(st.rel_mono[i] - acc[i] / ws) < 1e-12 && st.rel[i] == st.rel_mono[i]);
        assert_true(i == 0 || st.rel_mono[i] >= st.rel_mono[i - 1]);
        double t = rel_at(&job, st.cap_w[i]);
        est += fabs(st.rel_mono[i] - t), eh += fabs(hd.rel_mono[i] - t);
    }
    assert_true(fabs(rel_at(&st, 150) - rel_at(&job, 150)) < 1e-3); /* through the probe */
    assert_true(est < eh);
    /* what is not a neighbour has no say; a neighbour does */
    pfi_curve keep = ref[5];
    knee_curve(&ref[5], 280, 250, 0.002);
    pfi_probe_refs_iso(ref, N, iso);
    assert_int_equal(pfi_probe_shape_stacked_iso(&o, ref, iso, use, N, &so, 1, &one, &e), PFI_OK);
    assert_memory_equal(one.rel_mono, st.rel_mono, sizeof st.rel_mono);
    ref[5] = keep;
    knee_curve(&ref[0], 280, 250, 0.002);
    pfi_probe_refs_iso(ref, N, iso);
    double w2[PFI_PROBE_HEDGE_N];
    assert_int_equal(pfi_probe_stack_weights(&o, ref, iso, use, N, &so, w2, &e), PFI_OK);
    assert_true(w2[2] < w[2]); /* no reading predicts a knee moved elsewhere exactly */
    /* iso NULL: made for the estimate, the same curve */
    knee_curve(&ref[0], 280, 200, slope[0]);
    assert_int_equal(pfi_probe_shape_stacked_iso(&o, ref, NULL, use, N, &so, 1, &one, &e), PFI_OK);
    assert_memory_equal(one.rel_mono, st.rel_mono, sizeof st.rel_mono);
    assert_int_equal(pfi_probe_shape_stacked_iso(&o, ref, NULL, use, N, &so, 0, &one, &e),
                     PFI_EINVAL);
}

/* The stacked walk's six weights, each against a reference made of the one-reading estimate
 * (pfi_probe_shape_mean_iso): for each neighbour a of the job, a probe with a's own slowdown at
 * the job's probe cap, walked with the job's OTHER neighbours (the same near votes: nearness to
 * a's slowdown there), in reading h; its mean squared slowdown error against a's curve over the
 * job's grid caps (every one known here: the neighbours span the job's range), averaged over the
 * neighbours; weight 1 / (that + 1e-4).  Neighbours with knees at different caps and slopes, so
 * that no reading is exact and every reading's weight is pinned, not only the exact one's. */
static void test_stack_weights_by_reference(void **state)
{
    (void)state;
    enum { N = 6, K = 5 };
    pfi_curve ref[N], job, one;
    const double slope[N] = {0.003, 0.0035, 0.004, 0.0045, 0.005, 0.004};
    const double knee[N] = {190, 215, 200, 230, 205, 200};
    for (int i = 0; i < N; i++)
        knee_curve(&ref[i], 280, knee[i], slope[i]);
    unsigned char use[N] = {1, 1, 1, 1, 1, 0};
    knee_curve(&job, 280, 210, 0.0042);
    pfi_probe_obs o = obs_of(&job, 2); /* 150 W */
    pfi_probe_shape_opts so = {K, PFI_PROBE_SPACE_MAXCAP, 0, PFI_PROBE_VOTES_NEAR, 0, 0, 0};
    static double iso[N * PFI_CURVE_MAX_PTS];
    pfi_probe_refs_iso(ref, N, iso);
    pfi_err e = {0};
    double w[PFI_PROBE_HEDGE_N];
    assert_int_equal(pfi_probe_stack_weights(&o, ref, iso, use, N, &so, w, &e), PFI_OK);
    for (int h = 0; h < PFI_PROBE_HEDGE_N; h++) {
        pfi_probe_shape_opts sh = so;
        sh.k = K - 1;
        sh.scale = pfi_probe_hedge_scale[h];
        double sum = 0;
        for (int a = 0; a < K; a++) {
            unsigned char others[N];
            memcpy(others, use, sizeof others);
            others[a] = 0;
            pfi_probe_obs oa = o;
            oa.rel = rel_at(&ref[a], o.cap_w);
            assert_int_equal(pfi_probe_shape_mean_iso(&oa, ref, iso, others, N, &sh, 1,
                                                      pfi_probe_hedge_amp[h], &one, &e),
                             PFI_OK);
            double se = 0;
            for (int i = 0; i < one.n; i++) {
                double d = one.rel_mono[i] - rel_at(&ref[a], one.cap_w[i]);
                se += d * d;
            }
            sum += se / one.n;
        }
        double want = 1.0 / (sum / K + 1e-4);
        print_message("reading %d: weight %.9g, by reference %.9g\n", h, w[h], want);
        assert_true(fabs(w[h] - want) <= 1e-9 * want);
    }
    /* the readings differ: the check above tells them apart */
    int differ = 0;
    for (int h = 1; h < PFI_PROBE_HEDGE_N; h++)
        differ += fabs(w[h] - w[0]) > 1e-3 * w[0];
    assert_true(differ >= 4);
}

/* Below every neighbour's measured range the curve keeps falling (the collapse near a GPU's
 * minimum), never flattens. */
static void test_shape_below_neighbours(void **state)
{
    enum { N = 4 };
    pfi_curve ref[N], out;
    for (int i = 0; i < N; i++)
        knee_curve(&ref[i], 250, 220, 0.003);
    pfi_curve job;
    knee_curve(&job, 250, 220, 0.003);
    pfi_probe_obs o = obs_of(&job, 3);
    o.min_cap_w = 60; /* this job may go lower than any reference was measured */
    pfi_err e = {0};
    assert_int_equal(pfi_probe_shape_curve(&o, ref, NULL, N, NULL, &out, &e), PFI_OK);
    assert_true(fabs(rel_at(&out, 100) - rel_at(&job, 100)) < 0.01);
    assert_true(rel_at(&out, 60) < rel_at(&out, 100) - 0.1);
}

/* On the real Perseus A40 sweeps, each job from its probe and the OTHER five jobs' curves.
 * The bound has a reason of its own: the probe must earn its cost, so the estimate must be
 * closer at its worst level than the same five curves give without it (their mean at each
 * cap, what a scheduler that never probes would use), and no further off than the error at
 * which a cut would land on the wrong side of a 10% SLA margin (0.1). */
static void test_real_shape(void **state)
{
    if (!pub_have_data())
        PFI_TEST_SKIP("public data not found under %s\n", pfi_data_dir());
    const char *models[] = {"gpt3-2.7b", "bert-huge-uncased", "bloom-3b",
                            "gpt3-6.7b", "t5-3b",             "wide-resnet101_8"};
    enum { N = sizeof models / sizeof models[0] };
    static pfi_curve c[N];
    pfi_err e = {0};
    for (int i = 0; i < N; i++) {
        pfi_run run;
        assert_true(pub_perseus("A40", models[i], &run));
        assert_int_equal(pfi_curve_from_run(&run, PFI_FAM_POWER, &c[i], &e), PFI_OK);
    }
    double worst = 0, worst_mean = 0;
    for (int i = 0; i < N; i++) {
        unsigned char use[N];
        for (int k = 0; k < N; k++)
            use[k] = k != i;
        pfi_probe_obs o;
        int lv;
        assert_int_equal(pfi_probe_observe(&c[i], PFI_PROBE_DEPTH, &o, &lv, &e), PFI_OK);
        assert_true(o.cap_w == c[i].cap_w[lv] && o.rel == c[i].rel[lv] && o.cap_w < o.cap0_w);
        pfi_curve p;
        assert_int_equal(pfi_probe_shape_curve(&o, c, use, N, NULL, &p, &e), PFI_OK);
        for (int k = 0; k < c[i].n; k++) {
            if (k == lv || strcmp(models[i], "t5-3b") == 0)
                continue;
            worst = fmax(worst, fabs(rel_at(&p, c[i].cap_w[k]) - c[i].rel[k]));
            double mean = 0;
            for (int j = 0; j < N; j++)
                mean += j == i ? 0 : rel_at(&c[j], c[i].cap_w[k]) / (N - 1);
            worst_mean = fmax(worst_mean, fabs(mean - c[i].rel[k]));
        }
    }
    print_message("largest error over the five transformer/CNN jobs' levels: %.3f with the "
                  "probe, %.3f from the other curves' mean alone\n", worst, worst_mean);
    assert_true(worst < worst_mean);
    assert_true(worst < 0.1);
}

/* A member's unit is what it gives each estimate (hedge 0: its walk; 1: the six readings; 2:
 * those and the stack's weights), and two members' units combine, level by level, into the
 * plain mean, the hedge's mean of the twelve readings, and the stack's mean over the members
 * of each one's weighted readings: each checked against the estimate computed apart. */
static void test_member_units(void **state)
{
    (void)state;
    enum { N = 8, G = PFI_CURVE_MAX_PTS, H = PFI_PROBE_HEDGE_N, U = PFI_PROBE_MEMBER_N };
    pfi_curve ref[N], job, one, out;
    for (int i = 0; i < N; i++) /* slopes below the knee spread from 0.2 to 0.9 %/W */
        knee_curve(&ref[i], 250, 200 + 5 * i, 0.002 + 0.001 * i);
    knee_curve(&job, 250, 210, 0.004);
    pfi_probe_obs o = obs_of(&job, 2);
    pfi_probe_shape_opts mem[2] = {{3, PFI_PROBE_SPACE_MAXCAP, 0, 0, 0, 0, 0},
                                   {8, PFI_PROBE_SPACE_MAXCAP, 0, 0, 0, 0, 0}};
    static double iso[N * G], units[2 * U];
    pfi_probe_refs_iso(ref, N, iso);
    pfi_err e = {0};
    for (int m = 0; m < 2; m++) { /* hedge 0: the walk at the amplitude */
        assert_int_equal(pfi_probe_member_unit(&o, ref, iso, NULL, N, &mem[m], 0.5, 0,
                                               units + m * U, &e),
                         PFI_OK);
        assert_int_equal(pfi_probe_shape_rescaled(&o, ref, NULL, N, &mem[m], 0.5, &one, &e),
                         PFI_OK);
        assert_memory_equal(units + m * U, one.rel_mono, sizeof one.rel_mono);
    }
    pfi_probe_members_combine(&o, units, 2, 0, &out);
    assert_int_equal(out.n, G);
    int differ = 0;
    for (int i = 0; i < G; i++) {
        assert_true(out.cap_w[i] == one.cap_w[i] && out.rel[i] == out.rel_mono[i]);
        assert_true(fabs(out.rel_mono[i] - 0.5 * (units[i] + units[U + i])) < 1e-12);
        differ |= fabs(units[i] - units[U + i]) > 1e-3;
    }
    assert_true(differ); /* the members disagree: the mean is a mean */
    double wsum[2] = {0, 0}, hedge[G] = {0}, stack[G] = {0};
    for (int m = 0; m < 2; m++) { /* hedge 2: the readings, then the stack's weights */
        assert_int_equal(pfi_probe_member_unit(&o, ref, iso, NULL, N, &mem[m], 0, 2,
                                               units + m * U, &e),
                         PFI_OK);
        double w[H];
        assert_int_equal(pfi_probe_stack_weights(&o, ref, iso, NULL, N, &mem[m], w, &e), PFI_OK);
        assert_memory_equal(units + m * U + H * G, w, sizeof w);
        for (int h = 0; h < H; h++) {
            pfi_probe_shape_opts so = mem[m];
            so.scale = pfi_probe_hedge_scale[h];
            assert_int_equal(pfi_probe_shape_rescaled(&o, ref, NULL, N, &so,
                                                      pfi_probe_hedge_amp[h], &one, &e),
                             PFI_OK);
            wsum[m] += w[h];
            for (int i = 0; i < G; i++) {
                assert_true(fabs(units[m * U + h * G + i] - one.rel_mono[i]) < 1e-12);
                hedge[i] += one.rel_mono[i] / (2 * H);
            }
        }
        for (int h = 0; h < H; h++)
            for (int i = 0; i < G; i++)
                stack[i] += w[h] * units[m * U + h * G + i] / wsum[m] / 2;
    }
    pfi_probe_members_combine(&o, units, 2, 1, &out);
    for (int i = 0; i < G; i++)
        assert_true(fabs(out.rel_mono[i] - hedge[i]) < 1e-12 && out.rel[i] == out.rel_mono[i]);
    pfi_probe_members_combine(&o, units, 2, 2, &out);
    differ = 0;
    for (int i = 0; i < G; i++) {
        assert_true(fabs(out.rel_mono[i] - stack[i]) < 1e-12 && out.rel[i] == out.rel_mono[i]);
        differ |= fabs(stack[i] - hedge[i]) > 1e-4;
    }
    assert_true(differ); /* the weights are not all alike: the stack is not the hedge */
}

/* The shrunk walk, by hand: at every grid cap (1 - l) x the walk + l x (the probe + the mean
 * step of the neighbours' tier from the probe's cap to that cap), l = dn / (dn + dt) of the k
 * neighbours' mean distance to the probe and their tier's (a lower tier not read); neighbours
 * at the probe's own slowdown (dn = 0) leave the walk as it is. */
static void test_shape_shrink(void **state)
{
    (void)state;
    enum { N = 8, K = 3, G = PFI_CURVE_MAX_PTS };
    assert_true(pfi_probe_shrink_weight(0, 0) == 0);
    assert_true(fabs(pfi_probe_shrink_weight(1, 1) - 0.5) < 1e-15);
    assert_true(fabs(pfi_probe_shrink_weight(1, 3) - 0.25) < 1e-15);
    pfi_curve ref[N], job, walk, out;
    for (int i = 0; i < N; i++)
        knee_curve(&ref[i], 250, 200 + 5 * i, 0.001 + 0.0005 * i);
    knee_curve(&job, 250, 210, 0.004);
    pfi_probe_obs o = obs_of(&job, 2); /* 150 W */
    unsigned char use[N];
    for (int i = 0; i < N; i++)
        use[i] = i < 5 ? 2 : 1; /* references 5-7 a lower tier: never read here */
    pfi_probe_shape_opts so = {K, PFI_PROBE_SPACE_MAXCAP, 0, PFI_PROBE_VOTES_NEAR, 0, 0, 0};
    pfi_err e = {0};
    assert_int_equal(pfi_probe_shape_rescaled(&o, ref, use, N, &so, 0, &walk, &e), PFI_OK);
    so.shrink = 1;
    assert_int_equal(pfi_probe_shape_rescaled(&o, ref, use, N, &so, 0, &out, &e), PFI_OK);
    double sp = 1 - o.rel, d[5], dt = 0, dn = 0;
    for (int i = 0; i < 5; i++)
        dt += (d[i] = fabs(1 - rel_at(&ref[i], 150) - sp)) / 5;
    for (int q = 0; q < K; q++) { /* the K nearest of the tier */
        int best = -1;
        for (int i = 0; i < 5; i++)
            if (d[i] >= 0 && (best < 0 || d[i] < d[best]))
                best = i;
        dn += d[best] / K, d[best] = -1;
    }
    double l = dn / (dn + dt);
    assert_true(l > 0.05 && l < 0.95);
    int differ = 0;
    for (int g = 0; g < G; g++) {
        double cap = out.cap_w[g], step = 0;
        for (int i = 0; i < 5; i++)
            step += ((1 - rel_at(&ref[i], cap)) - (1 - rel_at(&ref[i], 150))) / 5;
        double want = (1 - l) * (1 - walk.rel_mono[g]) + l * (sp + step);
        assert_true(fabs((1 - out.rel_mono[g]) - want) < 1e-9);
        differ |= fabs(out.rel_mono[g] - walk.rel_mono[g]) > 1e-3;
    }
    assert_true(differ);
    for (int i = 0; i < K; i++) /* neighbours at the probe's own slowdown: nothing to shrink */
        knee_curve(&ref[i], 250, 210, 0.004);
    so.shrink = 0;
    assert_int_equal(pfi_probe_shape_rescaled(&o, ref, use, N, &so, 0, &walk, &e), PFI_OK);
    so.shrink = 1;
    assert_int_equal(pfi_probe_shape_rescaled(&o, ref, use, N, &so, 0, &out, &e), PFI_OK);
    assert_memory_equal(out.rel_mono, walk.rel_mono, sizeof walk.rel_mono);
    /* a tier of two references: fewer than 3 measured at both caps anywhere, the walk kept */
    for (int i = 0; i < N; i++) {
        knee_curve(&ref[i], 250, 200 + 5 * i, 0.001 + 0.0005 * i);
        use[i] = i < 2 ? 2 : 1;
    }
    so.shrink = 0;
    assert_int_equal(pfi_probe_shape_rescaled(&o, ref, use, N, &so, 0, &walk, &e), PFI_OK);
    so.shrink = 1;
    assert_int_equal(pfi_probe_shape_rescaled(&o, ref, use, N, &so, 0, &out, &e), PFI_OK);
    assert_memory_equal(out.rel_mono, walk.rel_mono, sizeof walk.rel_mono);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_cap),
        cmocka_unit_test(test_fit_exact),
        cmocka_unit_test(test_real_one_probe),
        cmocka_unit_test(test_real_flat_probe_refused),
        cmocka_unit_test(test_median_b),
        cmocka_unit_test(test_shape_neighbours),
        cmocka_unit_test(test_shape_draw_weight),
        cmocka_unit_test(test_amp_factor),
        cmocka_unit_test(test_shape_rescaled),
        cmocka_unit_test(test_weighted_median),
        cmocka_unit_test(test_shape_near_votes),
        cmocka_unit_test(test_time_scale),
        cmocka_unit_test(test_shape_time_walk),
        cmocka_unit_test(test_shape_p0_share),
        cmocka_unit_test(test_shape_mean),
        cmocka_unit_test(test_shape_hedged),
        cmocka_unit_test(test_member_units),
        cmocka_unit_test(test_shape_shrink),
        cmocka_unit_test(test_shape_stacked),
        cmocka_unit_test(test_stack_weights_by_reference),
        cmocka_unit_test(test_shape_below_neighbours),
        cmocka_unit_test(test_real_shape),
    };
    return pfi_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
