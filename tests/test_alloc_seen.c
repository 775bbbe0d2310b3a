/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of a job's SLA breaches seen (core/alloc_seen.h): the list's merge rules, its bounds and
 * its refusals, and a curve read through every breach, against pfi_alloc_curve_through applied
 * by hand in the same order. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc_curve.h"
#include "core/alloc_seen.h"

static void test_add_latest(void **state)
{
    (void)state;
    pfi_alloc_seen l = {0};
    pfi_err e = {0};
    assert_int_equal(pfi_alloc_seen_add(&l, 300, 0.2, PFI_SEEN_LATEST, &e), PFI_OK);
    assert_int_equal(pfi_alloc_seen_add(&l, 400, 0.1, PFI_SEEN_LATEST, &e), PFI_OK);
    /* within 1 W of 300: the newer level replaces it, cap and slowdown, in its place */
    assert_int_equal(pfi_alloc_seen_add(&l, 300.6, 0.15, PFI_SEEN_LATEST, &e), PFI_OK);
    assert_int_equal(l.n, 2);
    assert_float_equal(l.cap_w[0], 300.6, 0);
    assert_float_equal(l.s[0], 0.15, 0);
    assert_float_equal(l.cap_w[1], 400, 0);
    /* 1.5 W away is another cap */
    assert_int_equal(pfi_alloc_seen_add(&l, 401.5, 0.3, PFI_SEEN_LATEST, &e), PFI_OK);
    assert_int_equal(l.n, 3);
    assert_int_equal(pfi_alloc_seen_add(&l, 500, 0.4, PFI_SEEN_LATEST, &e), PFI_OK);
    assert_int_equal(l.n, PFI_ALLOC_SEEN_MAX);
    /* full: the oldest (300.6) goes, the newest is last */
    assert_int_equal(pfi_alloc_seen_add(&l, 250, 0.5, PFI_SEEN_LATEST, &e), PFI_OK);
    assert_int_equal(l.n, PFI_ALLOC_SEEN_MAX);
    double want_c[] = {400, 401.5, 500, 250}, want_s[] = {0.1, 0.3, 0.4, 0.5};
    for (int k = 0; k < PFI_ALLOC_SEEN_MAX; k++) {
        assert_float_equal(l.cap_w[k], want_c[k], 0);
        assert_float_equal(l.s[k], want_s[k], 0);
    }
    /* full, but the cap is listed: replaced in place, nothing dropped */
    assert_int_equal(pfi_alloc_seen_add(&l, 500, 0.05, PFI_SEEN_LATEST, &e), PFI_OK);
    assert_float_equal(l.cap_w[0], 400, 0);
    assert_float_equal(l.s[2], 0.05, 0);
}

static void test_add_larger(void **state)
{
    (void)state;
    pfi_alloc_seen l = {0};
    assert_int_equal(pfi_alloc_seen_add(&l, 300, 0.2, PFI_SEEN_LARGER, NULL), PFI_OK);
    assert_int_equal(pfi_alloc_seen_add(&l, 299.5, 0.1, PFI_SEEN_LARGER, NULL), PFI_OK);
    assert_int_equal(l.n, 1);
    assert_float_equal(l.cap_w[0], 300, 0); /* the cap first listed stays */
    assert_float_equal(l.s[0], 0.2, 0);
    assert_int_equal(pfi_alloc_seen_add(&l, 300.9, 0.35, PFI_SEEN_LARGER, NULL), PFI_OK);
    assert_int_equal(l.n, 1);
    assert_float_equal(l.s[0], 0.35, 0);
}

static void test_add_refuses(void **state)
{
    (void)state;
    pfi_alloc_seen l = {0};
    pfi_err e = {0};
    assert_int_equal(pfi_alloc_seen_add(&l, 300, 0.2, PFI_SEEN_LATEST, &e), PFI_OK);
    pfi_alloc_seen before = l;
    const double bad[][2] = {{0, 0.2},   {-5, 0.2},      {1e5 + 1, 0.2}, {NAN, 0.2},
                             {300, -0.1}, {300, 1.0001}, {300, NAN},     {INFINITY, 0.5}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e.code = 0;
        assert_int_equal(pfi_alloc_seen_add(&l, bad[i][0], bad[i][1], PFI_SEEN_LATEST, &e),
                         PFI_EINVAL);
        assert_int_equal(e.code, PFI_EINVAL);
        assert_non_null(strstr(e.msg, "slowdown"));
        assert_memory_equal(&l, &before, sizeof l);
    }
    /* the ends of the ranges are breaches */
    assert_int_equal(pfi_alloc_seen_add(&l, 1e5, 1, PFI_SEEN_LATEST, &e), PFI_OK);
    assert_int_equal(pfi_alloc_seen_add(&l, 200, 0, PFI_SEEN_LATEST, &e), PFI_OK);
    assert_int_equal(l.n, 3);
}

/* A 200-700 W curve on 11 points, slowdown 0.4 r^1.6 in the shed r = 1 - cap / 700. */
static void make_curve(double *cap, double *tp, pfi_alloc_job *q)
{
    for (int i = 0; i < 11; i++) {
        cap[i] = 200 + 50 * i;
        double r = 1 - cap[i] / 700;
        tp[i] = 1000 * (1 - 0.4 * pow(r, 1.6));
    }
    *q = (pfi_alloc_job){.id = "j", .n_gpus = 4, .min_cap_w = 200, .max_cap_w = 700, .cap_w = cap,
                         .tput = tp, .n_points = 11, .p0_w = 700, .t0 = 1000, .sla = 0.1,
                         .weight = 1};
}

static double slowdown(const pfi_alloc_job *q, double c)
{
    return 1 - pfi_alloc_tput_at(q, c) / q->t0;
}

static void test_apply_matches_by_hand(void **state)
{
    (void)state;
    double cap[11], tp[11], pc[16], pt[16];
    pfi_alloc_job q, h;
    make_curve(cap, tp, &q);
    make_curve(cap, tp, &h);
    /* off the grid (a point added), on it, one no worse than promised, one out of range, one at
     * the max cap (nothing to correct there: the range is [min, max)) */
    pfi_alloc_seen l = {0};
    const double obs[][2] = {{325, 0.30}, {450, 0.12}, {600, 0.0}, {150, 0.9}, {700, 0.5}};
    for (int k = 0; k < 5; k++)
        assert_int_equal(pfi_alloc_seen_add(&l, obs[k][0], obs[k][1], PFI_SEEN_LATEST, NULL),
                         PFI_OK);
    assert_int_equal(l.n, PFI_ALLOC_SEEN_MAX); /* 325 dropped, the oldest */
    l.n = 0;
    for (int k = 0; k < 3; k++)
        pfi_alloc_seen_add(&l, obs[k][0], obs[k][1], PFI_SEEN_LATEST, NULL);
    pfi_alloc_seen_add(&l, 150, 0.9, PFI_SEEN_LATEST, NULL);
    assert_int_equal(pfi_alloc_seen_apply(&l, &q, pc, pt, 16), 3);
    /* by hand, in list order */
    pfi_alloc_curve buf;
    for (int k = 0; k < 3; k++)
        assert_int_equal(pfi_alloc_curve_through(&h, obs[k][0], obs[k][1], &buf, &h, NULL), PFI_OK);
    assert_int_equal(q.n_points, h.n_points);
    assert_int_equal(q.n_points, 12); /* 325 W added */
    assert_ptr_equal(q.cap_w, pc);
    assert_ptr_equal(q.tput, pt);
    for (int i = 0; i < q.n_points; i++) {
        assert_float_equal(q.cap_w[i], h.cap_w[i], 0);
        assert_float_equal(q.tput[i], h.tput[i], 0);
    }
    /* held to what was seen at every breach, never raised anywhere, the max cap kept */
    assert_true(slowdown(&q, 325) >= 0.30 - 1e-12);
    assert_true(slowdown(&q, 450) >= 0.12 - 1e-12);
    for (int i = 0; i < 11; i++)
        assert_true(pfi_alloc_tput_at(&q, cap[i]) <= tp[i] + 1e-9);
    assert_float_equal(pfi_alloc_tput_at(&q, 700), tp[10], 0);
    for (int i = 1; i < q.n_points; i++)
        assert_true(q.tput[i] >= q.tput[i - 1]);
}

/* room: a breach that would add a point past it is skipped, the ones on the points are not;
 * the job's own arrays as pc and pt (the node daemon's grid). */
static void test_apply_room_in_place(void **state)
{
    (void)state;
    double cap[11], tp[11];
    pfi_alloc_job q;
    make_curve(cap, tp, &q);
    double s_before = slowdown(&q, 450);
    pfi_alloc_seen l = {0};
    pfi_alloc_seen_add(&l, 325, 0.30, PFI_SEEN_LATEST, NULL);
    pfi_alloc_seen_add(&l, 450, 0.12, PFI_SEEN_LATEST, NULL);
    assert_true(s_before < 0.12);
    assert_int_equal(pfi_alloc_seen_apply(&l, &q, cap, tp, q.n_points), 1);
    assert_int_equal(q.n_points, 11);
    assert_float_equal(slowdown(&q, 450), 0.12, 1e-12);
    assert_float_equal(pfi_alloc_tput_at(&q, 700), tp[10], 0);
    /* nothing listed: nothing changes */
    pfi_alloc_seen none = {0};
    double keep[11];
    memcpy(keep, tp, sizeof keep);
    assert_int_equal(pfi_alloc_seen_apply(&none, &q, cap, tp, 11), 0);
    assert_memory_equal(keep, tp, sizeof keep);
}

/* Only the breaches to blame: a room the promised curve's SLA floor fits and the curve read
 * through a breach does not; a room neither fits; no job. */
static void test_blamed(void **state)
{
    (void)state;
    double cap[11], tp[11], pc[16], pt[16];
    pfi_alloc_job q, u;
    make_curve(cap, tp, &q);
    make_curve(cap, tp, &u);
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.on_infeasible = PFI_INFEASIBLE_FAIL;
    /* promised: slowdown 0.1 at r = 0.25^(1/1.6) = 0.4206, 405.6 W; 4 GPUs need ~1,623 W */
    pfi_alloc_seen l = {0};
    pfi_alloc_seen_add(&l, 450, 0.12, PFI_SEEN_LATEST, NULL);
    assert_int_equal(pfi_alloc_seen_apply(&l, &q, pc, pt, 16), 1);
    int kf[1], km[1];
    pfi_alloc_result r;
    memset(&r, 0, sizeof r);
    assert_int_equal(pfi_alloc_prepare(&q, 1, 1e15, &o, kf, km, &r, NULL), PFI_OK);
    double seen_min = r.min_budget_w;
    pfi_alloc_result_free(&r);
    memset(&r, 0, sizeof r);
    assert_int_equal(pfi_alloc_prepare(&u, 1, 1e15, &o, kf, km, &r, NULL), PFI_OK);
    double unseen_min = r.min_budget_w;
    pfi_alloc_result_free(&r);
    assert_true(unseen_min > 4 * 405.6 - 1e-9 && unseen_min < 4 * 420);
    assert_true(seen_min > 4 * 450); /* the SLA now needs more than the breach's cap */
    assert_true(pfi_alloc_seen_blamed(&u, 1, unseen_min, &o));
    assert_true(pfi_alloc_seen_blamed(&u, 1, seen_min - 1, &o));
    assert_false(pfi_alloc_seen_blamed(&u, 1, unseen_min - 1, &o));
    assert_false(pfi_alloc_seen_blamed(&u, 0, 1e9, &o));
    /* a job the allocator refuses (no curve) is never blamed on a breach */
    u.n_points = 1;
    assert_false(pfi_alloc_seen_blamed(&u, 1, 1e9, &o));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_latest),
        cmocka_unit_test(test_add_larger),
        cmocka_unit_test(test_add_refuses),
        cmocka_unit_test(test_apply_matches_by_hand),
        cmocka_unit_test(test_apply_room_in_place),
        cmocka_unit_test(test_blamed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
