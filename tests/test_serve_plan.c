/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve_plan.c: the node daemon's planner (src/serve/plan.c) with its allocator state kept
 * between plans gives the plan a fresh solve gives, bit for bit, through a sequence of what a
 * daemon sees: budget changes (grid events' steps among them), one job's curve changing, jobs
 * arriving and leaving, a GPU that stops answering, SLAs yielding, budgets too low, and the
 * other policies a grid event's cost is compared with. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc_keep.h"
#include "core/pfi.h"
#include "core/policy.h"
#include "serve/serve_int.h"

#define NG 24

static unsigned long long rng = 12345u;
static double urand(void)
{
    return pfi_rand_uniform(&rng);
}

typedef struct plan_state {
    srv_gpu g[NG];
    srv_job jobs[SRV_MAX_JOBS];
    int n_jobs;
    int next_id;
} plan_state;

static void set_curve(srv_job *j)
{
    /* Throughput falls as a power of the shed, convex or concave (then the allocator's
     * branch-and-bound decides). */
    pfi_fit fit = {.family = PFI_FAM_POWER,
                   .p = {0.3 + 0.7 * urand(), 0.6 + 1.9 * urand(), 0},
                   .rmse = NAN,
                   .n_points = 0};
    pfi_err e = {0};
    double t0 = isnan(j->t0_tps) ? 1.0 : j->t0_tps;
    assert_int_equal(pfi_curve_from_fit(&fit, t0, 640, 700, 200, 700, j->n_gpus, 0.7, &j->curve,
                                        &e),
                     PFI_OK);
    j->curve_src = SRV_CURVE_GIVEN;
}

/* A job on free GPUs (up to `want`); 0 when none is free. */
static int add_job(plan_state *s, int want, int with_tps)
{
    if (s->n_jobs >= SRV_MAX_JOBS)
        return 0;
    srv_job *j = &s->jobs[s->n_jobs];
    memset(j, 0, sizeof *j);
    snprintf(j->id, sizeof j->id, "job%d", s->next_id++);
    for (int i = 0; i < NG && j->n_gpus < want; i++)
        if (s->g[i].job < 0)
            j->gpus[j->n_gpus++] = i;
    if (j->n_gpus == 0)
        return 0;
    for (int k = 0; k < j->n_gpus; k++)
        s->g[j->gpus[k]].job = s->n_jobs;
    j->sla = urand() < 0.4 ? 0.05 + 0.2 * urand() : NAN;
    j->weight = urand() < 0.3 ? 2.0 : 1.0;
    j->t0_tps = with_tps ? 1000 + 4000 * urand() : NAN;
    j->cap_w = j->predicted_rel = j->predicted_tps = j->observed_tps = NAN;
    if (urand() < 0.85)
        set_curve(j); /* else nothing known: planned as proportional */
    s->n_jobs++;
    return 1;
}

static void remove_job(plan_state *s, int k)
{
    for (int q = 0; q < s->jobs[k].n_gpus; q++)
        s->g[s->jobs[k].gpus[q]].job = -1;
    memmove(&s->jobs[k], &s->jobs[k + 1], (size_t)(s->n_jobs - k - 1) * sizeof s->jobs[0]);
    s->n_jobs--;
    for (int j = 0; j < s->n_jobs; j++)
        for (int q = 0; q < s->jobs[j].n_gpus; q++)
            s->g[s->jobs[j].gpus[q]].job = j;
}

static void state_init(plan_state *s, int with_tps)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < NG; i++) {
        pfi_device *d = &s->g[i].dev;
        d->index = i;
        d->min_limit_w = i % 5 == 4 ? 250 : 200;
        d->max_limit_w = d->default_limit_w = 700;
        d->limit_w = d->enforced_w = 700;
        s->g[i].original_w = 700;
        s->g[i].requested_w = NAN;
        s->g[i].pinned_w = NAN;
        s->g[i].up = 1;
        s->g[i].job = -1;
    }
    while (add_job(s, 1 + (int)(urand() * 4), with_tps) && s->n_jobs < 7)
        ;
}

static int same(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/* One plan with the kept state and one fresh: the same answer, the same message. */
static void plan_both(plan_state *s, pfi_alloc_keep **keep, double budget_w, int policy,
                      int *n_ok)
{
    static srv_plan pk, pf;
    pfi_err ek = {0}, ef = {0};
    int rk = pfi_srv_plan_policy(s->g, NG, s->jobs, s->n_jobs, budget_w, policy, keep, &pk, &ek);
    int rf = pfi_srv_plan_policy(s->g, NG, s->jobs, s->n_jobs, budget_w, policy, NULL, &pf, &ef);
    assert_int_equal(rk, rf);
    assert_string_equal(ek.msg, ef.msg);
    assert_true(same(pk.min_budget_w, pf.min_budget_w));
    if (rk != PFI_OK)
        return;
    (*n_ok)++;
    for (int i = 0; i < NG; i++)
        assert_true(same(pk.target_w[i], pf.target_w[i]));
    for (int j = 0; j < s->n_jobs; j++) {
        assert_true(same(pk.job_cap_w[j], pf.job_cap_w[j]));
        assert_true(same(pk.job_pred_rel[j], pf.job_pred_rel[j]));
        assert_true(same(pk.job_pred_tps[j], pf.job_pred_tps[j]));
    }
}

static void run_sequence(int with_tps, unsigned seed)
{
    rng = seed;
    static plan_state s;
    state_init(&s, with_tps);
    pfi_alloc_keep *keep = NULL;
    double nominal = NG * 700.0;
    int n_ok = 0, n_steps = 250;
    for (int step = 0; step < n_steps; step++) {
        double u = urand();
        if (u < 0.10 && s.n_jobs > 0) { /* one job's curve re-measured */
            set_curve(&s.jobs[(int)(urand() * s.n_jobs)]);
        } else if (u < 0.16) { /* a job arrives (when GPUs are free) */
            add_job(&s, 1 + (int)(urand() * 4), with_tps);
        } else if (u < 0.22 && s.n_jobs > 1) { /* a job leaves */
            remove_job(&s, (int)(urand() * s.n_jobs));
        } else if (u < 0.25) { /* a GPU stops answering, or comes back */
            int i = (int)(urand() * NG);
            s.g[i].pinned_w = isnan(s.g[i].pinned_w) ? 300 + 300 * urand() : NAN;
        } else if (u < 0.28 && s.n_jobs > 0) { /* an event lets one job's SLA yield */
            s.jobs[(int)(urand() * s.n_jobs)].sla = NAN;
        } else if (u < 0.32 && s.n_jobs > 0) { /* its log shows a job slower than promised */
            srv_job *j = &s.jobs[(int)(urand() * s.n_jobs)];
            int k = j->sla_seen.n < PFI_ALLOC_SEEN_MAX ? j->sla_seen.n++
                                                       : (int)(urand() * PFI_ALLOC_SEEN_MAX);
            j->sla_seen.cap_w[k] = 200 + 500 * urand();
            j->sla_seen.s[k] = 0.5 * urand();
        }
        /* A budget between "too low" and "more than the GPUs take", now and then a ramp's or an
         * event's small step from the last one. */
        double b = nominal * (0.25 + 0.8 * urand());
        int policy = urand() < 0.1 ? PFI_POLICY_EQUAL : urand() < 0.1 ? PFI_POLICY_ORACLE
                                                                       : PFI_POLICY_PFI;
        plan_both(&s, &keep, b, policy, &n_ok);
        plan_both(&s, &keep, b * 0.97, PFI_POLICY_PFI, &n_ok);
        plan_both(&s, &keep, NAN, PFI_POLICY_PFI, &n_ok); /* no budget */
    }
    /* Most plans were feasible, and the kept state answered most of them warm. */
    assert_true(n_ok > n_steps);
    assert_true(pfi_alloc_keep_warm(keep) > n_steps / 2);
    assert_true(pfi_alloc_keep_rebuilt(keep) > 0);
    pfi_alloc_keep_free(keep);
}

static void test_plan_kept_tokens(void **state)
{
    (void)state;
    run_sequence(1, 2463534242u);
}

static void test_plan_kept_relative(void **state)
{
    (void)state;
    run_sequence(0, 88172645u);
}

/* A job whose log showed it slower than its SLA allows at the cap it got is planned on its
 * curve read through that (follow.c keeps it, plan.c reads it): under the same budget it gets
 * more power, and the other job less; an observation no worse than the curve's promise
 * changes nothing. */
static void test_plan_sla_seen(void **state)
{
    (void)state;
    static plan_state s;
    memset(&s, 0, sizeof s);
    rng = 777u;
    for (int i = 0; i < NG; i++) {
        pfi_device *d = &s.g[i].dev;
        d->index = i;
        d->min_limit_w = 200;
        d->max_limit_w = d->default_limit_w = d->limit_w = d->enforced_w = 700;
        s.g[i].original_w = 700;
        s.g[i].requested_w = s.g[i].pinned_w = NAN;
        s.g[i].up = 1;
        s.g[i].job = i < 8 ? i / 4 : -1;
    }
    for (int j = 0; j < 2; j++) {
        srv_job *jb = &s.jobs[j];
        snprintf(jb->id, sizeof jb->id, "job%d", j);
        jb->n_gpus = 4;
        for (int k = 0; k < 4; k++)
            jb->gpus[k] = 4 * j + k;
        jb->weight = 1;
        jb->t0_tps = 1000;
        jb->sla = j == 0 ? 0.10 : NAN;
        jb->cap_w = jb->predicted_rel = jb->predicted_tps = jb->observed_tps = NAN;
        set_curve(jb);
    }
    s.n_jobs = 2;
    double budget = 8 * 700 * 0.6 + 16 * 200;
    srv_plan before, after, same_plan;
    pfi_err e = {0};
    assert_int_equal(pfi_srv_plan_compute(s.g, NG, s.jobs, 2, budget, NULL, &before, &e), PFI_OK);
    double c0 = before.job_cap_w[0];
    assert_true(c0 > 200 && c0 < 700);
    /* where the curve promised at most a 10% slowdown, the log showed 20% */
    assert_true(before.job_pred_rel[0] >= 0.9 - 1e-9);
    s.jobs[0].sla_seen.n = 1;
    s.jobs[0].sla_seen.cap_w[0] = c0;
    s.jobs[0].sla_seen.s[0] = 0.2;
    assert_int_equal(pfi_srv_plan_compute(s.g, NG, s.jobs, 2, budget, NULL, &after, &e), PFI_OK);
    print_message("job0: %.0f W -> %.0f W per GPU; job1: %.0f W -> %.0f W\n", c0,
                  after.job_cap_w[0], before.job_cap_w[1], after.job_cap_w[1]);
    assert_true(after.job_cap_w[0] > c0 + 1);
    assert_true(after.job_cap_w[1] < before.job_cap_w[1]);
    double sum = 0;
    for (int i = 0; i < NG; i++)
        sum += isnan(after.target_w[i]) ? 0 : after.target_w[i];
    assert_true(sum <= budget + 1e-6);
    /* its cap now meets the SLA on the curve read through what was seen: the shortfall of 0.1
     * held in full at c0 tapers to nothing at 700 W, so at the new cap it is at least
     * 0.1 (700 - cap) / (700 - c0) below the curve's promise */
    double promise = pfi_curve_rel_at_cap(&s.jobs[0].curve, PFI_VIEW_AUTO, after.job_cap_w[0]);
    double short_at = (0.2 - (1 - pfi_curve_rel_at_cap(&s.jobs[0].curve, PFI_VIEW_AUTO, c0))) *
                      (700 - after.job_cap_w[0]) / (700 - c0);
    assert_true(promise - short_at >= 0.9 - 0.01);
    /* and what the daemon reports for it is read on that curve, not on the promise */
    assert_float_equal(after.job_pred_rel[0], promise - short_at, 0.005);
    assert_true(after.job_pred_rel[0] < promise - 1e-6);
    assert_float_equal(after.job_pred_tps[0], 1000 * after.job_pred_rel[0], 1e-9);
    /* a budget the plain SLA floors fit and the corrected ones do not: every SLA relaxed alike,
     * the least that fits, and the job not sent back below where it was planned before; below
     * the plain floors, refused as before */
    assert_true(after.min_budget_w > before.min_budget_w + 10);
    assert_true(after.sla_extra == 0 && before.sla_extra == 0);
    double mid = 0.5 * (before.min_budget_w + after.min_budget_w);
    srv_plan rel;
    assert_int_equal(pfi_srv_plan_compute(s.g, NG, s.jobs, 2, mid, NULL, &rel, &e), PFI_OK);
    print_message("budget %.0f W (floors %.0f W plain, %.0f W through the breach): SLAs +%.4f, "
                  "job0 at %.0f W\n", mid, before.min_budget_w, after.min_budget_w, rel.sla_extra,
                  rel.job_cap_w[0]);
    assert_true(rel.sla_extra > 0 && rel.sla_extra < 0.2);
    assert_true(rel.min_budget_w == after.min_budget_w);
    sum = 0;
    for (int i = 0; i < NG; i++)
        sum += isnan(rel.target_w[i]) ? 0 : rel.target_w[i];
    assert_true(sum <= mid + 1e-6);
    assert_true(rel.job_cap_w[0] > c0 + 1);
    /* the kept allocator state gives the same */
    pfi_alloc_keep *keep = NULL;
    srv_plan rk;
    assert_int_equal(pfi_srv_plan_compute(s.g, NG, s.jobs, 2, budget, &keep, &rk, &e), PFI_OK);
    assert_int_equal(pfi_srv_plan_compute(s.g, NG, s.jobs, 2, mid, &keep, &rk, &e), PFI_OK);
    for (int i = 0; i < NG; i++)
        assert_true(same(rk.target_w[i], rel.target_w[i]));
    pfi_alloc_keep_free(keep);
    srv_plan no;
    assert_int_equal(pfi_srv_plan_compute(s.g, NG, s.jobs, 2, before.min_budget_w - 50, NULL, &no, &e),
                     PFI_EINFEASIBLE);
    assert_non_null(strstr(e.msg, "is infeasible"));
    pfi_err_clear(&e);
    /* a breach seen at the job's least cap counts too (the grid's first point) */
    srv_plan low;
    s.jobs[0].sla_seen.cap_w[0] = 200;
    s.jobs[0].sla_seen.s[0] = 0.7;
    assert_int_equal(pfi_srv_plan_compute(s.g, NG, s.jobs, 2, budget, NULL, &low, &e), PFI_OK);
    assert_true(low.job_cap_w[0] > c0 + 1);
    s.jobs[0].sla_seen.cap_w[0] = c0;
    /* seen no worse than promised: the plan of before, bit for bit */
    s.jobs[0].sla_seen.s[0] = 0.01;
    assert_int_equal(pfi_srv_plan_compute(s.g, NG, s.jobs, 2, budget, NULL, &same_plan, &e),
                     PFI_OK);
    for (int i = 0; i < NG; i++)
        assert_true(same(same_plan.target_w[i], before.target_w[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_kept_tokens),
        cmocka_unit_test(test_plan_kept_relative),
        cmocka_unit_test(test_plan_sla_seen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
