/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the grid event model (core/event.h): validation, ramps, the budget in force, overlap
 * resolution, and properties checked on random event sets. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/event.h"
#include "core/event_report.h"
#include "core/pfi.h"
#include "util/isotime.h"

static pfi_event limit_ev(const char *id, double t0, double t1, double w)
{
    pfi_event e;
    pfi_event_init_limit(&e, id, t0, t1, w);
    return e;
}

static void expect_invalid(const pfi_event *e, const pfi_event_site *s, const char *words)
{
    pfi_err err = {0};
    assert_int_not_equal(pfi_event_validate(e, s, &err), PFI_OK);
    if (!strstr(err.msg, words))
        fail_msg("message '%s' does not say '%s'", err.msg, words);
}

/* Once an event's ramp has begun, its ramp line and restore steps go from and to the level
 * noted then, whatever the manual budget does after: removed mid-event (5000 W to none, the
 * site's 5600 W), the ramp-down rose mid-way and the restore climbed in 320 W steps where the
 * report allowed 200 W.  A lower budget still caps every step; the changed budget is in force
 * once the restore is over. */
static void test_noted_level_holds(void **state)
{
    (void)state;
    pfi_event e = limit_ev("H", 1000, 1300, 4000);
    e.ramp_down_s = 120;
    e.ramp_up_s = 300;
    pfi_event_site s = pfi_event_site_default(5600);
    s.manual_w = 5000;
    /* before the ramp began: the budget in force */
    assert_true(fabs(pfi_event_cap_at(&e, &s, 940) - 4500) < 1e-9);
    e.ramp_level_w = 5000; /* noted at 880 s */
    s.manual_w = INFINITY;  /* the budget removed */
    assert_true(fabs(pfi_event_cap_at(&e, &s, 940) - 4500) < 1e-9);
    const double want[] = {4000, 4200, 4400, 4600, 4800};
    for (int k = 0; k < 5; k++) {
        double c = pfi_event_cap_at(&e, &s, 1300 + 60 * k + 5);
        if (fabs(c - want[k]) > 1e-9)
            fail_msg("restore step %d: %g W, want %g W", k, c, want[k]);
        int b;
        assert_true(fabs(pfi_event_budget_at(&e, 1, &s, 1300 + 60 * k + 5, &b) - want[k]) < 1e-9);
    }
    assert_true(isinf(pfi_event_cap_at(&e, &s, 1300 + 300 + 1)));
    assert_true(fabs(pfi_event_restored_s(&e, &s) - 1600) < 1e-9);
    /* a budget lowered meanwhile caps the steps */
    s.manual_w = 4300;
    int b;
    assert_true(fabs(pfi_event_budget_at(&e, 1, &s, 1300 + 60 * 2 + 5, &b) - 4300) < 1e-9);
    assert_true(fabs(pfi_event_budget_min(&e, 1, &s, 1300, 1600) - 4000) < 1e-9);
    /* noted with no budget in force (INFINITY): the site's maximum, 5600 W */
    e.ramp_level_w = INFINITY;
    s.manual_w = 5000; /* a budget set mid-event caps the restore, not its line */
    assert_true(fabs(pfi_event_cap_at(&e, &s, 1300 + 60 + 5) - 4320) < 1e-9);
    assert_true(fabs(pfi_event_cap_at(&e, &s, 940) - 4800) < 1e-9);
    assert_true(fabs(pfi_event_budget_at(&e, 1, &s, 1300 + 4 * 60 + 5, &b) - 5000) < 1e-9);
}

/* A baseline from seconds of draw says so, the node's and the controller's alike (the
 * controller said "over the hour" of a few samples). */
static void test_baseline_method_words(void **state)
{
    (void)state;
    pfi_baseline_walk b;
    pfi_baseline_walk_init(&b, 1006, 3600, 5);
    for (int t = 1005; t >= 1000; t--)
        pfi_baseline_walk_feed(&b, t, 4000, 0);
    char m[256];
    pfi_baseline_walk_method(&b, "site", m, sizeof m);
    if (!strstr(m, "mean site draw over the 60 min before the event was posted (6 samples, only "))
        fail_msg("%s", m);
    assert_non_null(strstr(m, " s recorded)"));
}

static void test_validate(void **state)
{
    (void)state;
    pfi_event_site s = pfi_event_site_default(10000);
    pfi_err err = {0};
    pfi_event e = limit_ev("ev1", 1000, 2000, 7500);
    assert_int_equal(pfi_event_validate(&e, &s, &err), PFI_OK);

    e = limit_ev("ev1", 2000, 1000, 7500);
    expect_invalid(&e, &s, "before it starts");
    e = limit_ev("ev1", 1000, 1000, 7500);
    expect_invalid(&e, &s, "when it starts");
    e = limit_ev("ev1", 1000, 2000, -5);
    expect_invalid(&e, &s, "negative");
    e = limit_ev("ev1", 1000, 2000, NAN);
    expect_invalid(&e, &s, "not a number");
    e = limit_ev("ev1", 1000, 2000, INFINITY);
    expect_invalid(&e, &s, "infinite");
    e = limit_ev("ev1", 1000, 2000, 0);
    expect_invalid(&e, &s, "0 W");
    e = limit_ev("ev1", 1000, 2000, 12000);
    expect_invalid(&e, &s, "above the site's maximum 10000 W");
    /* Without a site the maximum is not checked. */
    assert_int_equal(pfi_event_validate(&e, NULL, &err), PFI_OK);
    /* Figures as people write them: 1e300 W was printed with its 301 digits (the message cut
     * short before the site's maximum), -0.4 W as "-0 W is negative". */
    e = limit_ev("ev1", 1000, 2000, 1e300);
    expect_invalid(&e, &s, "the target 1e+300 W is above the site's maximum 10000 W");
    e = limit_ev("ev1", 1000, 2000, -0.4);
    expect_invalid(&e, &s, "the target -0.4 W is negative");
    e = limit_ev("ev1", NAN, 2000, 5000);
    expect_invalid(&e, &s, "finite");
    /* Times must be ones a date can be written for (1970 to the year 9999): an event posted
     * with a start of -1e300 or a duration of 1e300 was taken, and writing its end as ISO 8601
     * converted 1e300 to time_t (undefined behaviour; garbage dates in the answer). */
    e = limit_ev("ev1", -1e300, 2000, 5000);
    expect_invalid(&e, &s, "outside 1970");
    e = limit_ev("ev1", 1000, 1e300, 5000);
    expect_invalid(&e, &s, "outside 1970");
    e = limit_ev("ev1", -1, 2000, 5000);
    expect_invalid(&e, &s, "outside 1970");
    e = limit_ev("ev1", 1000, PFI_TIME_MAX_S + 1, 5000);
    expect_invalid(&e, &s, "end 253402300800 is outside 1970");
    /* A start past the year 9999 is named, not the end a duration made of it. */
    e = limit_ev("ev1", 1e300, 1e300 + 3600, 5000);
    expect_invalid(&e, &s, "start 1e+300 is outside 1970");
    e = limit_ev("ev1", 0, PFI_TIME_MAX_S, 5000);
    assert_int_equal(pfi_event_validate(&e, &s, &err), PFI_OK);
    e = limit_ev("", 1000, 2000, 5000);
    expect_invalid(&e, &s, "event id");
    e = limit_ev("a b", 1000, 2000, 5000);
    expect_invalid(&e, &s, "event id");
    e = limit_ev("ev1", 1000, 2000, 5000);
    e.ramp_down_s = -1;
    expect_invalid(&e, &s, "ramp-down");
    e.ramp_down_s = 0;
    e.ramp_up_s = NAN;
    expect_invalid(&e, &s, "ramp-up");
    e.ramp_up_s = 0;
    e.priority = 5000;
    expect_invalid(&e, &s, "priority");
    e.priority = 0;
    e.kind = 7;
    expect_invalid(&e, &s, "unknown kind");

    pfi_event_init_cut(&e, "c1", 1000, 2000, 0.25, 8000, "stated");
    assert_int_equal(pfi_event_validate(&e, &s, &err), PFI_OK);
    assert_true(fabs(pfi_event_target_w(&e) - 6000) < 1e-9);
    e.cut = 0;
    expect_invalid(&e, &s, "outside (0%, 100%)");
    e.cut = 1;
    expect_invalid(&e, &s, "outside (0%, 100%)");
    e.cut = -0.1;
    expect_invalid(&e, &s, "outside");
    e.cut = NAN;
    expect_invalid(&e, &s, "not a number");
    e.cut = 0.25;
    e.baseline_w = 20000;
    expect_invalid(&e, &s, "baseline");
    e.baseline_w = 8000;
    e.baseline_method[0] = 0;
    expect_invalid(&e, &s, "method");

    pfi_event_site bad = s;
    bad.max_w = NAN;
    assert_int_equal(pfi_event_site_validate(&bad, &err), PFI_EINVAL);
    bad = s;
    bad.restore_step_s = 0;
    assert_int_equal(pfi_event_site_validate(&bad, &err), PFI_EINVAL);
    assert_int_equal(pfi_event_site_validate(&s, &err), PFI_OK);
}

/* Finding and removing an event by id in a list. */
static void test_list_find_remove(void **state)
{
    (void)state;
    pfi_event v[3];
    pfi_event_init_limit(&v[0], "a", 100, 200, 1000);
    pfi_event_init_limit(&v[1], "b", 100, 200, 1000);
    pfi_event_init_limit(&v[2], "c", 100, 200, 1000);
    int n = 3;
    assert_int_equal(pfi_event_list_find(v, n, "a"), 0);
    assert_int_equal(pfi_event_list_find(v, n, "c"), 2);
    assert_int_equal(pfi_event_list_find(v, n, "z"), -1);
    assert_int_equal(pfi_event_list_find(v, 0, "a"), -1);
    assert_int_equal(pfi_event_list_remove(v, &n, "b"), 1);
    assert_int_equal(n, 2);
    assert_int_equal(pfi_event_list_find(v, n, "b"), -1);
    assert_int_equal(pfi_event_list_find(v, n, "c"), 1);
    assert_int_equal(pfi_event_list_remove(v, &n, "b"), 0);
    assert_int_equal(n, 2);
}

/* The set of events already reported, kept to those still held: over a long run in which
 * the host holds the latest 256 events, each event is reported once and the set stays within
 * the host's list (a set that only grows, capped at 256, re-reports every event after the
 * 256th on every poll). */
static void test_ids_retain(void **state)
{
    (void)state;
    enum { HELD = 256, TOTAL = 1000 };
    static char held[HELD][PFI_EVENT_ID_MAX], done[HELD][PFI_EVENT_ID_MAX];
    int n_done = 0, n_reports = 0;
    for (int t = 0; t < TOTAL; t++) {
        int n_held = 0;
        for (int e = t - HELD + 1; e <= t; e++)
            if (e >= 0)
                snprintf(held[n_held++], sizeof held[0], "oadr-%d-0", e);
        n_done = pfi_event_ids_retain(done, n_done, (const char (*)[PFI_EVENT_ID_MAX])held,
                                      n_held);
        assert_true(n_done <= n_held);
        for (int k = 0; k < n_held; k++) {
            int seen = 0;
            for (int r = 0; r < n_done; r++)
                seen |= !strcmp(done[r], held[k]);
            if (!seen) {
                assert_true(n_done < HELD);
                snprintf(done[n_done++], sizeof done[0], "%s", held[k]);
                n_reports++;
            }
        }
    }
    assert_int_equal(n_reports, TOTAL);

    /* Order is kept; ids not held go, whatever their place. */
    char ids[4][PFI_EVENT_ID_MAX] = {"a", "b", "c", "d"};
    const char keep[3][PFI_EVENT_ID_MAX] = {"d", "b", "z"};
    assert_int_equal(pfi_event_ids_retain(ids, 4, keep, 3), 2);
    assert_string_equal(ids[0], "b");
    assert_string_equal(ids[1], "d");
    assert_int_equal(pfi_event_ids_retain(ids, 2, keep, 0), 0);
}

static void test_ramps(void **state)
{
    (void)state;
    pfi_event_site s = pfi_event_site_default(10000);
    s.manual_w = 9000;
    pfi_event e = limit_ev("r", 1000, 2000, 6000);
    e.ramp_down_s = 100;
    e.ramp_up_s = 300;
    assert_true(isinf(pfi_event_cap_at(&e, &s, 899)));
    assert_true(fabs(pfi_event_cap_at(&e, &s, 900) - 9000) < 1e-9);
    assert_true(fabs(pfi_event_cap_at(&e, &s, 950) - 7500) < 1e-9);
    assert_true(fabs(pfi_event_cap_at(&e, &s, 1000) - 6000) < 1e-9);
    assert_true(fabs(pfi_event_cap_at(&e, &s, 1999.9) - 6000) < 1e-9);
    /* Restore: 300 s in 60 s steps = 5 steps of 600 W, the first step held at target. */
    assert_true(fabs(pfi_event_cap_at(&e, &s, 2000) - 6000) < 1e-9);
    assert_true(fabs(pfi_event_cap_at(&e, &s, 2059) - 6000) < 1e-9);
    assert_true(fabs(pfi_event_cap_at(&e, &s, 2060) - 6600) < 1e-9);
    assert_true(fabs(pfi_event_cap_at(&e, &s, 2299) - 8400) < 1e-9);
    assert_true(isinf(pfi_event_cap_at(&e, &s, 2300)));
    assert_true(fabs(pfi_event_restored_s(&e, &s) - 2300) < 1e-9);
    /* A rate limit longer than the ramp wins: 3000 W at 5 W/s = 600 s = 10 steps. */
    s.restore_w_per_s = 5;
    assert_true(fabs(pfi_event_restored_s(&e, &s) - 2600) < 1e-9);
    /* A ramp shorter than a step is one step of its own length. */
    s.restore_w_per_s = INFINITY;
    e.ramp_up_s = 20;
    assert_true(fabs(pfi_event_cap_at(&e, &s, 2019) - 6000) < 1e-9);
    assert_true(isinf(pfi_event_cap_at(&e, &s, 2020)));
    /* 150 s: 3 steps of 50 s. */
    e.ramp_up_s = 150;
    assert_true(fabs(pfi_event_cap_at(&e, &s, 2050) - 7000) < 1e-9);
    assert_true(fabs(pfi_event_cap_at(&e, &s, 2149) - 8000) < 1e-9);
    assert_true(isinf(pfi_event_cap_at(&e, &s, 2150)));
    e.ramp_up_s = 300;
    /* The budget in force: the manual budget outside the event's reach. */
    int b = 7;
    assert_true(fabs(pfi_event_budget_at(&e, 1, &s, 0, &b) - 9000) < 1e-9);
    assert_int_equal(b, -1);
    assert_true(fabs(pfi_event_budget_at(&e, 1, &s, 1500, &b) - 6000) < 1e-9);
    assert_int_equal(b, 0);
    /* Without a manual budget nothing binds outside and the ramp starts at the site maximum. */
    s = pfi_event_site_default(10000);
    assert_true(isinf(pfi_event_budget_at(&e, 1, &s, 0, &b)));
    assert_true(fabs(pfi_event_cap_at(&e, &s, 950) - 8000) < 1e-9);
    /* An event above the manual budget never binds. */
    s.manual_w = 5000;
    assert_true(fabs(pfi_event_budget_at(&e, 1, &s, 1500, &b) - 5000) < 1e-9);
    assert_int_equal(b, -1);
}

static void test_budget_min_plans_ahead(void **state)
{
    (void)state;
    pfi_event_site s = pfi_event_site_default(10000);
    pfi_event e = limit_ev("m", 1000, 2000, 6000); /* no ramp: drops at the start */
    assert_true(isinf(pfi_event_budget_min(&e, 1, &s, 900, 990)));
    assert_true(fabs(pfi_event_budget_min(&e, 1, &s, 990, 1005) - 6000) < 1e-9);
    assert_true(fabs(pfi_event_budget_min(&e, 1, &s, 1005, 990) - 6000) < 1e-9);
    assert_true(fabs(pfi_event_budget_min(&e, 1, &s, 1995, 3000) - 6000) < 1e-9);
}

static void test_overlap(void **state)
{
    (void)state;
    pfi_event_site s = pfi_event_site_default(10000);
    pfi_event ev[3] = {limit_ev("a", 0, 100, 7000), limit_ev("b", 50, 150, 6000),
                       limit_ev("c", 120, 200, 6000)};
    ev[2].priority = 3;
    pfi_event_piece p[5];
    int n = pfi_event_resolve(ev, 3, p, 5);
    assert_int_equal(n, 3);
    assert_int_equal(p[0].event, 0);
    assert_true(p[0].t0 == 0 && p[0].t1 == 50);
    assert_int_equal(p[1].event, 1);
    assert_true(p[1].t0 == 50 && p[1].t1 == 120);
    /* b and c tie at 6000 W: c has the higher priority. */
    assert_int_equal(p[2].event, 2);
    assert_true(p[2].t0 == 120 && p[2].t1 == 200);
    assert_int_equal(pfi_event_resolve(ev, 3, p, 2), -1);
    int b;
    assert_true(fabs(pfi_event_budget_at(ev, 3, &s, 75, &b) - 6000) < 1e-9);
    assert_int_equal(b, 1);
    assert_true(fabs(pfi_event_budget_at(ev, 3, &s, 130, &b) - 6000) < 1e-9);
    assert_int_equal(b, 2);
    assert_int_equal(pfi_event_resolve(ev, 0, p, 5), 0);
}

static void test_feasible(void **state)
{
    (void)state;
    double a;
    assert_int_equal(pfi_event_feasible(6000, 5000, &a), 1);
    assert_true(a == 6000);
    assert_int_equal(pfi_event_feasible(4000, 5000, &a), 0);
    assert_true(a == 5000);
}

/* A small deterministic generator for the property checks. */
static unsigned long long rng = 88172645463325252ull;
static double urand(void)
{
    return pfi_rand_uniform(&rng);
}

static void random_events(pfi_event *ev, int n)
{
    for (int i = 0; i < n; i++) {
        double t0 = urand() * 10000, d = 60 + urand() * 4000;
        char id[16];
        snprintf(id, sizeof(id), "e%d", i);
        if (urand() < 0.5)
            pfi_event_init_limit(&ev[i], id, t0, t0 + d, 1000 + urand() * 8000);
        else
            pfi_event_init_cut(&ev[i], id, t0, t0 + d, 0.05 + urand() * 0.9,
                               2000 + urand() * 8000, "random");
        ev[i].ramp_down_s = urand() < 0.3 ? 0 : urand() * 900;
        ev[i].ramp_up_s = urand() < 0.3 ? 0 : urand() * 900;
        ev[i].priority = (int)(urand() * 5);
    }
}

/* Properties on random sets: the budget never exceeds the manual budget nor any event's target
 * inside its window; it equals the tightest of them there; the lowest budget over an interval is
 * no higher than the budget at any instant of it; after an event the budget rises no faster
 * than its steps allow; the resolved pieces are disjoint, sorted, and name the tightest. */
static void test_properties(void **state)
{
    (void)state;
    for (int round = 0; round < 200; round++) {
        int n = 1 + (int)(urand() * 6);
        pfi_event ev[8];
        random_events(ev, n);
        pfi_event_site s = pfi_event_site_default(10000);
        s.manual_w = urand() < 0.5 ? INFINITY : 3000 + urand() * 7000;
        s.restore_w_per_s = urand() < 0.5 ? INFINITY : 1 + urand() * 20;
        pfi_err err = {0};
        for (int i = 0; i < n; i++)
            assert_int_equal(pfi_event_validate(&ev[i], &s, &err), PFI_OK);
        double prev = NAN;
        for (double t = -1000; t < 16000; t += 7.3) {
            double bt = pfi_event_budget_at(ev, n, &s, t, NULL);
            assert_true(bt <= s.manual_w);
            double tight = s.manual_w;
            for (int i = 0; i < n; i++)
                if (t >= ev[i].start_s && t < ev[i].end_s) {
                    assert_true(bt <= pfi_event_target_w(&ev[i]) + 1e-9);
                    tight = fmin(tight, pfi_event_target_w(&ev[i]));
                }
            assert_true(bt <= tight + 1e-9);
            double m = pfi_event_budget_min(ev, n, &s, t, t + 45);
            for (double u = t; u <= t + 45; u += 1.5)
                assert_true(m <= pfi_event_budget_at(ev, n, &s, u, NULL) + 1e-9);
            /* Upward jumps: never more than one restore step of the widest event. */
            if (isfinite(prev) && isfinite(bt) && bt > prev + 1e-9) {
                double worst = 0;
                for (int i = 0; i < n; i++) {
                    double lvl = isfinite(s.manual_w) ? s.manual_w : s.max_w;
                    double tgt = pfi_event_target_w(&ev[i]);
                    double d = pfi_event_restored_s(&ev[i], &s) - ev[i].end_s;
                    double steps = ceil(d / s.restore_step_s - 1e-9);
                    double jump = steps > 0 ? (lvl - tgt) / steps : lvl - tgt;
                    /* and never faster than the site's rate over a step */
                    if (isfinite(s.restore_w_per_s) && steps > 0)
                        assert_true(jump <= s.restore_w_per_s * (d / steps) + 1e-6);
                    worst = fmax(worst, jump);
                }
                assert_true(bt - prev <= worst + 1e-6);
            }
            prev = bt;
        }
        pfi_event_piece p[16];
        int np = pfi_event_resolve(ev, n, p, 16);
        assert_true(np >= 0 && np <= 2 * n - 1);
        for (int k = 0; k < np; k++) {
            assert_true(p[k].t1 > p[k].t0);
            if (k > 0)
                assert_true(p[k].t0 >= p[k - 1].t1);
            double mid = (p[k].t0 + p[k].t1) / 2;
            for (int i = 0; i < n; i++)
                if (mid >= ev[i].start_s && mid < ev[i].end_s)
                    assert_true(p[k].target_w <= pfi_event_target_w(&ev[i]) + 1e-9);
        }
    }
}

/* Site power that follows the event's caps 10 W below, with one 10 s sample 100 W over. */
static void test_compliance(void **state)
{
    (void)state;
    pfi_event_site site = pfi_event_site_default(10000);
    site.manual_w = 9000;
    pfi_event e = limit_ev("c", 4000, 4600, 6000);
    e.ramp_down_s = 300;
    e.ramp_up_s = 120;
    double t[700], w[700];
    int n = 0;
    for (double x = 0; x < 6000; x += 10, n++) {
        t[n] = x;
        double cap = pfi_event_cap_at(&e, &site, x);
        w[n] = isfinite(cap) ? cap - 10 : 8000;
        if (x == 4300)
            w[n] = 6100;
    }
    pfi_event_compliance c;
    pfi_err err = {0};
    assert_int_equal(pfi_event_compliance_compute(&e, &site, t, w, n, 60, 30, &c, &err), PFI_OK);
    assert_true(fabs(c.baseline_w - 8000) < 1e-9);
    assert_non_null(strstr(c.baseline_method, "hour before the ramp"));
    assert_true(fabs(c.max_excess_w - 100) < 1e-9);
    assert_true(fabs(c.seconds_over_target - 10) < 1e-9);
    assert_true(fabs(c.covered_s - 600) < 1e-9);
    double shed = (59 * (8000 - 5990.0) + (8000 - 6100.0)) * 10 / 3.6e6;
    assert_true(fabs(c.energy_shed_kwh - shed) < 1e-9);
    assert_int_equal(c.ramp_ok, 1);
    assert_true(isnan(c.at_target_s)); /* the draw follows the ramp line down to the start */
    assert_true(c.ramp_down_max_excess_w == 0 && c.restore_max_excess_w == 0);
    /* Intervals: from the ramp's start to the restore's end, 1 minute each. */
    assert_int_equal(c.n_intervals, (int)ceil((4720 - 3700) / 60.0));
    assert_true(c.intervals[0].t0 == 3700);
    int k = (4300 - 3700) / 60; /* the minute starting with the excess */
    assert_true(fabs(c.intervals[k].max_w - 6100) < 1e-9);
    pfi_event_compliance_free(&c);
    /* Late: still above the target right before the start, and a gap in the record. */
    for (int i = 0; i < n; i++)
        if (t[i] >= 3900 && t[i] < 4000)
            w[i] = 7000;
    assert_int_equal(pfi_event_compliance_compute(&e, &site, t, w, n, 60, 30, &c, &err), PFI_OK);
    assert_int_equal(c.ramp_ok, 0);
    assert_true(isnan(c.at_target_s));
    assert_true(c.ramp_down_max_excess_w > 0);
    pfi_event_compliance_free(&c);
    /* No baseline hour recorded and no stated baseline: none, said so. */
    assert_int_equal(pfi_event_compliance_compute(&e, &site, t + 380, w + 380, n - 380, 60, 30,
                                                  &c, &err), PFI_OK);
    assert_true(isnan(c.baseline_w) && isnan(c.energy_shed_kwh));
    assert_non_null(strstr(c.baseline_method, "none"));
    pfi_event_compliance_free(&c);
    t[5] = 0;
    assert_int_equal(pfi_event_compliance_compute(&e, &site, t, w, n, 60, 30, &c, &err),
                     PFI_EINVAL);
}

/* The review's event: 4500 W from 1000 to 1040 (10 s ramps), lowered to 3500 W at 1025.  The
 * site followed each definition in its time (10 W under the ramp line, then under 4500 W, at
 * 4450 W for the 2 s it took to come down after the change, then under 3500 W): only those 2 s
 * are over, the ramp is judged against the 4500 W it aimed at, and each revision has its own
 * figures.  Judged against the last definition alone (one revision), the first 25 s were over
 * and the ramp too. */
static void test_compliance_revised(void **state)
{
    (void)state;
    pfi_event_site site = pfi_event_site_default(5600);
    pfi_event_revision r[2];
    r[0].from_s = -INFINITY;
    r[0].ev = limit_ev("m1", 1000, 1040, 4500);
    r[0].ev.ramp_down_s = r[0].ev.ramp_up_s = 10;
    r[1].from_s = 1025;
    r[1].ev = r[0].ev;
    r[1].ev.limit_w = 3500;
    double t[200], w[200];
    int n = 0;
    for (double x = 980; x < 1070; x += 1, n++) {
        t[n] = x;
        const pfi_event *ev = &r[x >= 1025].ev;
        double cap = pfi_event_cap_at(ev, &site, x);
        w[n] = x >= 1025 && x < 1027 ? 4450 : isfinite(cap) ? cap - 10 : 5500;
    }
    pfi_event_compliance c;
    pfi_err err = {0};
    assert_int_equal(pfi_event_compliance_revised(r, 2, &site, t, w, n, 60, 5, NULL, &c, &err), PFI_OK);
    assert_int_equal(c.n_spans, 2);
    assert_true(c.target_w == 3500);
    assert_true(fabs(c.window_s - 40) < 1e-9 && fabs(c.covered_s - 40) < 1e-9);
    assert_true(fabs(c.seconds_over_target - 2) < 1e-9);
    assert_true(fabs(c.max_excess_w - 950) < 1e-9);
    assert_true(fabs(c.mean_w - (25 * 4490 + 2 * 4450 + 13 * 3490) / 40.0) < 1e-9);
    assert_int_equal(c.ramp_ok, 1);
    assert_true(c.ramp_down_max_excess_w == 0 && c.restore_max_excess_w == 0);
    const pfi_event_span *a = &c.spans[0], *b = &c.spans[1];
    assert_true(isinf(a->from_s) && a->until_s == 1025 && b->from_s == 1025 && isinf(b->until_s));
    assert_true(a->target_w == 4500 && b->target_w == 3500);
    assert_true(fabs(a->window_s - 25) < 1e-9 && fabs(b->window_s - 15) < 1e-9);
    assert_true(a->seconds_over_target == 0 && a->max_excess_w == 0);
    assert_true(fabs(b->seconds_over_target - 2) < 1e-9 && fabs(a->mean_w - 4490) < 1e-9);
    /* The intervals run from the first ramp to the last restore, at the lowest in force. */
    assert_true(c.intervals[0].t0 == 990 && c.intervals[0].target_w == 3500);
    pfi_event_compliance_free(&c);
    assert_int_equal(pfi_event_compliance_revised(&r[1], 1, &site, t, w, n, 60, 5, NULL, &c, &err),
                     PFI_OK);
    assert_true(c.seconds_over_target > 25 && c.ramp_ok == 0);
    pfi_event_compliance_free(&c);

    /* Raised instead (3500 W, then 4500 W at 1025) over a site that drew 4000 W before the
     * change: the excess of the first 25 s is not hidden by the later target. */
    r[0].ev.limit_w = 3500;
    r[1].ev.limit_w = 4500;
    for (int i = 0; i < n; i++)
        if (t[i] >= 1000 && t[i] < 1040)
            w[i] = t[i] < 1025 ? 4000 : 4400;
    assert_int_equal(pfi_event_compliance_revised(r, 2, &site, t, w, n, 60, 5, NULL, &c, &err), PFI_OK);
    assert_true(fabs(c.seconds_over_target - 25) < 1e-9 && fabs(c.max_excess_w - 500) < 1e-9);
    assert_true(fabs(c.spans[0].seconds_over_target - 25) < 1e-9);
    assert_true(c.spans[1].seconds_over_target == 0);
    pfi_event_compliance_free(&c);
    /* Revisions out of order are refused by name. */
    r[1].from_s = NAN;
    assert_int_equal(pfi_event_compliance_revised(r, 2, &site, t, w, n, 60, 5, NULL, &c, &err),
                     PFI_EINVAL);
    assert_non_null(strstr(err.msg, "revision 1"));
}

/* The budget recorded with the draw above the target in force inside the window (the site held
 * the least it could): how long and the highest, each revision's target in its time; ramps and
 * budgets at the target are not counted. */
static void test_held_above(void **state)
{
    (void)state;
    pfi_event_revision r[2];
    r[0].from_s = -INFINITY;
    r[0].ev = limit_ev("h", 1000, 1040, 3000);
    r[0].ev.ramp_down_s = 20;
    r[1].from_s = 1020;
    r[1].ev = r[0].ev;
    r[1].ev.limit_w = 5400;
    double t[80], b[80];
    int n = 0;
    for (double x = 970; x < 1050; x += 1, n++) {
        t[n] = x;
        b[n] = x < 1000 ? 5600 : x < 1030 ? 5320 : 5400; /* its ramp: not judged here */
    }
    pfi_event_compliance c;
    memset(&c, 0, sizeof c);
    pfi_event_compliance_held(r, 2, t, b, n, 5, &c);
    assert_true(fabs(c.held_above_s - 20) < 1e-9); /* 1000-1020, above 3000 W */
    assert_true(c.held_above_w == 5320);
    for (int i = 0; i < n; i++)
        b[i] = i % 2 ? NAN : 3000;
    pfi_event_compliance_held(r, 2, t, b, n, 5, &c);
    assert_true(c.held_above_s == 0 && isnan(c.held_above_w));
    /* A target lowered under way (12 kW, then 9 kW from 1020.3), feasible: the host holds the
     * old budget until its next tick.  That is following, not the least it could: the old
     * budget's sample before the change is not carried into the new definition, nor is the
     * first sample after it that still records the old target. */
    r[0].ev = limit_ev("m", 1000, 1040, 12000);
    r[1].from_s = 1020.3;
    r[1].ev = r[0].ev;
    r[1].ev.limit_w = 9000;
    for (int i = 0; i < n; i++)
        b[i] = t[i] < 1000 ? 16800 : t[i] <= 1021 ? 12000 : 9000;
    pfi_event_compliance_held(r, 2, t, b, n, 5, &c);
    assert_true(c.held_above_s == 0 && isnan(c.held_above_w));
    /* ...but a revision the site cannot meet (4800 W held for 3000 W) is counted from the
     * sample that records what it holds. */
    r[1].ev.limit_w = 3000;
    for (int i = 0; i < n; i++)
        b[i] = t[i] < 1000 ? 16800 : t[i] <= 1021 ? 12000 : 4800;
    pfi_event_compliance_held(r, 2, t, b, n, 5, &c);
    assert_true(fabs(c.held_above_s - 18) < 1e-9); /* 1022-1040 */
    assert_true(c.held_above_w == 4800);
}

/* An event received after its window began: the budget recorded before it was stored was set
 * without it (another event's) and is not counted as held for it; from then on it is.  The
 * report says how late it came. */
static void test_held_after_taken(void **state)
{
    (void)state;
    pfi_event_revision r[1];
    r[0].from_s = -INFINITY;
    r[0].ev = limit_ev("late", 1000, 1040, 3000);
    double t[80], b[80];
    int n = 0;
    for (double x = 970; x < 1050; x += 1, n++) {
        t[n] = x;
        b[n] = 4000; /* another event's budget, then the least it could */
    }
    pfi_event_compliance c;
    memset(&c, 0, sizeof c);
    r[0].ev.added_s = 1008.5;
    pfi_event_compliance_held(r, 1, t, b, n, 5, &c);
    assert_true(fabs(c.held_above_s - 31.5) < 1e-9); /* 1008.5-1040 */
    assert_true(fabs(c.taken_late_s - 8.5) < 1e-9);
    r[0].ev.added_s = 990; /* before the window: every second counts, not late */
    pfi_event_compliance_held(r, 1, t, b, n, 5, &c);
    assert_true(fabs(c.held_above_s - 40) < 1e-9 && c.taken_late_s == 0);
    r[0].ev.added_s = 0; /* not known (stored before this was kept): as before */
    pfi_event_compliance_held(r, 1, t, b, n, 5, &c);
    assert_true(fabs(c.held_above_s - 40) < 1e-9 && c.taken_late_s == 0);
    r[0].ev.added_s = 1100; /* after the window: nothing held for it */
    pfi_event_compliance_held(r, 1, t, b, n, 5, &c);
    assert_true(c.held_above_s == 0 && isnan(c.held_above_w) && c.taken_late_s == 100);
}

/* An interval's budget: the budget held where the site held more than the event asked for all
 * of the interval's recorded time (the least it could, not the target it could not meet); the
 * event's line where that was met in part of it (the lowest budget in force over it). */
static void test_held_intervals(void **state)
{
    (void)state;
    pfi_event_site site = pfi_event_site_default(10000);
    pfi_event_revision r[1] = {{.from_s = -INFINITY, .ev = limit_ev("i", 1200, 1440, 2000)}};
    static double t[600], w[600], b[600];
    int n = 0;
    for (double x = 1000; x < 1600; x += 1, n++) {
        t[n] = x;
        int in = x >= 1200 && x < 1440;
        w[n] = !in ? 5000 : x < 1320 ? 4700 : x < 1350 ? 4700 : 1900;
        b[n] = !in ? NAN : x < 1350 ? 4800 : 2000; /* held 4800 W, then a job left: met */
    }
    pfi_event_compliance c;
    pfi_err err = {0};
    assert_int_equal(pfi_event_compliance_revised(r, 1, &site, t, w, n, 60, 5, NULL, &c, &err),
                     PFI_OK);
    pfi_event_compliance_held(r, 1, t, b, n, 5, &c);
    int whole = 0, part = 0;
    for (int i = 0; i < c.n_intervals; i++) {
        const pfi_event_interval *x = &c.intervals[i];
        if (x->t0 >= 1200 && x->t1 <= 1320) { /* held all through */
            assert_true(x->budget_w == 4800);
            whole++;
        } else if (x->t0 >= 1320 && x->t1 <= 1380) { /* held 30 s, met 30 s */
            assert_true(x->budget_w == 2000);
            part++;
        }
    }
    assert_true(whole == 2 && part == 1);
    assert_true(fabs(c.held_above_s - 150) < 1e-9 && c.held_above_w == 4800);
    pfi_event_compliance_free(&c);
    /* The same every 12 s (a sample gap of 30 s): a gap's slack let the half-held interval show
     * 4800 W (the second regression review); every recorded second must be held. */
    n = 0;
    for (double x = 1008; x < 1600; x += 12, n++) {
        t[n] = x;
        int in = x >= 1200 && x < 1440;
        w[n] = !in ? 5000 : x < 1350 ? 4700 : 1900;
        b[n] = !in ? NAN : x < 1350 ? 4800 : 2000;
    }
    assert_int_equal(pfi_event_compliance_revised(r, 1, &site, t, w, n, 60, 30, NULL, &c, &err),
                     PFI_OK);
    pfi_event_compliance_held(r, 1, t, b, n, 30, &c);
    whole = part = 0;
    for (int i = 0; i < c.n_intervals; i++) {
        const pfi_event_interval *x = &c.intervals[i];
        whole += x->t0 >= 1200 && x->t1 <= 1320 && x->budget_w == 4800;
        part += x->t0 >= 1320 && x->t1 <= 1380 && x->budget_w == 2000;
    }
    assert_true(whole == 2 && part == 1);
    pfi_event_compliance_free(&c);
}

/* How a change is kept: none held or the held one over, a new event; the same terms, the same;
 * new terms under way, a revision; before its ramp, ahead. */
static void test_change_kind(void **state)
{
    (void)state;
    pfi_event_site site = pfi_event_site_default(10000);
    pfi_event held = limit_ev("e", 1000, 2000, 4000), ev = held;
    held.ramp_down_s = 300;
    held.ramp_up_s = 120;
    ev.ramp_down_s = 300;
    ev.ramp_up_s = 120;
    assert_int_equal(pfi_event_change_kind(NULL, &ev, &site, 1500), PFI_EVENT_CHANGE_NEW);
    ev.priority = 5;
    snprintf(ev.source, sizeof ev.source, "cli");
    assert_int_equal(pfi_event_change_kind(&held, &ev, &site, 1500), PFI_EVENT_CHANGE_SAME);
    ev.limit_w = 3500;
    assert_int_equal(pfi_event_change_kind(&held, &ev, &site, 600), PFI_EVENT_CHANGE_AHEAD);
    assert_int_equal(pfi_event_change_kind(&held, &ev, &site, 700), PFI_EVENT_CHANGE_REVISE);
    assert_int_equal(pfi_event_change_kind(&held, &ev, &site, 2100), PFI_EVENT_CHANGE_REVISE);
    assert_int_equal(pfi_event_change_kind(&held, &ev, &site, 2120), PFI_EVENT_CHANGE_NEW);
    ev = held;
    ev.end_s = 1900; /* ended early */
    assert_int_equal(pfi_event_change_kind(&held, &ev, &site, 1800), PFI_EVENT_CHANGE_REVISE);
}

/* A changed cut that states no baseline keeps the held one's; a new cut, one that states its
 * own, a limit, or a cut replacing a limit do not. */
static void test_keep_baseline(void **state)
{
    (void)state;
    pfi_event held[2], ev;
    pfi_event_init_cut(&held[0], "c", 100, 200, 0.3, 5000, "mean node draw over the hour");
    pfi_event_init_limit(&held[1], "l", 100, 200, 3000);
    pfi_event_init_cut(&ev, "c", 100, 300, 0.3, NAN, "");
    assert_int_equal(pfi_event_keep_baseline(&ev, held, 2), 1);
    assert_float_equal(ev.baseline_w, 5000, 0);
    assert_string_equal(ev.baseline_method, "mean node draw over the hour");
    pfi_event_init_cut(&ev, "c", 100, 300, 0.3, 4000, "stated in the request");
    assert_int_equal(pfi_event_keep_baseline(&ev, held, 2), 0);
    assert_float_equal(ev.baseline_w, 4000, 0);
    pfi_event_init_cut(&ev, "new", 100, 300, 0.3, NAN, "");
    assert_int_equal(pfi_event_keep_baseline(&ev, held, 2), 0);
    assert_true(isnan(ev.baseline_w));
    pfi_event_init_cut(&ev, "l", 100, 300, 0.3, NAN, "");
    assert_int_equal(pfi_event_keep_baseline(&ev, held, 2), 0);
    pfi_event_init_limit(&ev, "c", 100, 300, 2000);
    assert_int_equal(pfi_event_keep_baseline(&ev, held, 2), 0);
    held[0].baseline_w = NAN; /* held without one: nothing to keep */
    pfi_event_init_cut(&ev, "c", 100, 300, 0.3, NAN, "");
    assert_int_equal(pfi_event_keep_baseline(&ev, held, 2), 0);
}

/* A change made while the held event is under way keeps the level its ramp began from; one
 * before its ramp, after its restore (a new event under the same id), or of an event whose
 * level was never noted keeps nothing. */
static void test_keep_level(void **state)
{
    (void)state;
    pfi_event_site site = pfi_event_site_default(10000);
    site.manual_w = 6000; /* the budget now, set after the ramp began */
    pfi_event held = limit_ev("e", 1000, 2000, 4000), ev = limit_ev("e", 1000, 2500, 3500);
    held.ramp_down_s = 300;
    held.ramp_up_s = 120;
    assert_false(pfi_event_level_noted(&held));
    assert_int_equal(pfi_event_keep_level(&ev, &held, 1, &site, 1500), 0);
    held.ramp_level_w = 8000;
    assert_true(pfi_event_site_noted(&held, site).manual_w == 8000);
    assert_int_equal(pfi_event_keep_level(&ev, &held, 1, &site, 600), 0); /* before its ramp */
    assert_int_equal(pfi_event_keep_level(&ev, &held, 1, &site, 800), 1);
    assert_true(ev.ramp_level_w == 8000);
    ev.ramp_level_w = NAN;
    assert_int_equal(pfi_event_keep_level(&ev, &held, 1, &site, 2100), 1); /* restoring */
    ev.ramp_level_w = NAN;
    assert_int_equal(pfi_event_keep_level(&ev, &held, 1, &site, 2120), 0); /* restored */
    assert_false(pfi_event_level_noted(&ev));
    held.ramp_level_w = INFINITY; /* noted: no manual budget */
    assert_true(isinf(pfi_event_site_noted(&held, site).manual_w));
    assert_int_equal(pfi_event_keep_level(&ev, &held, 1, &site, 1500), 1);
    assert_true(isinf(ev.ramp_level_w));
}

/* A baseline's hour leaves out the time an event bound and reaches back by as long (it took the
 * curtailed draw: the shed of the second interval of a back-to-back event came out about 0, and
 * a cut posted while another was in force cut again from it).  Samples a second apart: an hour
 * at 5000 W, then 50 min bound by an event at 4000 W, then 10 min at 5100 W before the end. */
static void test_baseline_walk(void **state)
{
    (void)state;
    pfi_baseline_walk b;
    pfi_baseline_walk_init(&b, 20000, 3600, 5);
    int fed = 0;
    for (int t = 19999; t >= 0 && pfi_baseline_walk_feed(&b, t, t >= 19400 ? 5100 : t >= 16400
                                                                      ? 4000 : 5000,
                                                         t >= 16400 && t < 19400);
         t--)
        fed++;
    assert_true(b.done);
    assert_true(fabs(b.left_out_s - 3000) < 1e-9 && fabs(b.covered_s - 3600) < 1e-9);
    double want = (600 * 5100.0 + 3000 * 5000.0) / 3600;
    if (!(fabs(pfi_baseline_walk_mean(&b) - want) < 1e-6))
        fail_msg("baseline %.3f W, not %.3f W (the bound 4000 W left out)",
                 pfi_baseline_walk_mean(&b), want);
    assert_int_equal(b.n, 3600);
    assert_true(fabs(b.at_s - (20000 - 6600)) < 1e-9 && fed <= 6601);
    /* Nothing bound: the hour before the end alone, gaps unrecorded, as the report always had it
     * (a gap of 1000 s: 2600 s recorded). */
    pfi_baseline_walk_init(&b, 20000, 3600, 5);
    for (int t = 19999; t >= 0 && pfi_baseline_walk_feed(&b, t, 4000, 0); t = t == 19000 ? 18000 : t - 1)
        ;
    assert_true(fabs(b.covered_s - 2600 - 5) < 1e-9 && b.left_out_s == 0);
    assert_true(fabs(b.at_s - 16400) < 1e-9);
    /* Bound for longer than PFI_BASELINE_BACK_S: given up there, nothing recorded outside. */
    pfi_baseline_walk_init(&b, 200000, 3600, 5);
    for (int t = 199999; t >= 0 && pfi_baseline_walk_feed(&b, t, 4000, 1); t--)
        ;
    assert_true(b.done && b.n == 0 && isnan(pfi_baseline_walk_mean(&b)));
}

/* The report's baseline from a walk that left events out says so; the samples' own walk (no
 * walk given) is the hour before the ramp. */
static void test_compliance_baseline_left_out(void **state)
{
    (void)state;
    pfi_event ev;
    pfi_event_init_limit(&ev, "b", 20000, 21000, 3000);
    pfi_event_site site = pfi_event_site_default(10000);
    double t[2000], w[2000];
    for (int i = 0; i < 2000; i++) {
        t[i] = 19000 + i;
        w[i] = 3000;
    }
    pfi_baseline_walk b;
    pfi_baseline_walk_init(&b, 20000, 3600, 5);
    for (int s = 19999; pfi_baseline_walk_feed(&b, s, s >= 16400 ? 4000 : 5000, s >= 16400); s--)
        ;
    pfi_event_compliance c;
    pfi_err err = {0};
    pfi_event_revision one = {.from_s = -INFINITY, .ev = ev};
    assert_int_equal(pfi_event_compliance_revised(&one, 1, &site, t, w, 2000, 60, 5, &b, &c, &err),
                     PFI_OK);
    assert_true(fabs(c.baseline_w - 5000) < 1e-9);
    assert_non_null(strstr(c.baseline_method, "outside other events (60 min left out, from"));
    assert_true(fabs(c.energy_shed_kwh - 2000 * 1000 / 3.6e6) < 1e-9);
    pfi_event_compliance_free(&c);
    /* Bound for the last 10 s alone: the event's own ramp planned ahead, left out unsaid. */
    pfi_baseline_walk_init(&b, 20000, 3600, 5);
    for (int s = 19999; pfi_baseline_walk_feed(&b, s, 5000, s >= 19990); s--)
        ;
    assert_int_equal(pfi_event_compliance_revised(&one, 1, &site, t, w, 2000, 60, 5, &b, &c, &err),
                     PFI_OK);
    assert_true(fabs(b.left_out_s - 10) < 1e-9 && fabs(c.baseline_w - 5000) < 1e-9);
    assert_string_equal(c.baseline_method,
                        "mean site draw over the hour before the ramp (100% of it recorded)");
    pfi_event_compliance_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_baseline_walk),
        cmocka_unit_test(test_compliance_baseline_left_out),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_ramps),
        cmocka_unit_test(test_list_find_remove),
        cmocka_unit_test(test_ids_retain),
        cmocka_unit_test(test_budget_min_plans_ahead),
        cmocka_unit_test(test_overlap),
        cmocka_unit_test(test_feasible),
        cmocka_unit_test(test_properties),
        cmocka_unit_test(test_compliance),
        cmocka_unit_test(test_keep_baseline),
        cmocka_unit_test(test_keep_level),
        cmocka_unit_test(test_compliance_revised),
        cmocka_unit_test(test_change_kind),
        cmocka_unit_test(test_held_above),
        cmocka_unit_test(test_held_after_taken),
        cmocka_unit_test(test_held_intervals),
        cmocka_unit_test(test_noted_level_holds),
        cmocka_unit_test(test_baseline_method_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
