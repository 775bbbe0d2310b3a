/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the allocator's warm re-solves (pfi_alloc_ws, core/alloc.h): after budget changes,
 * one job's new curve, range or SLA, and a new job list, the workspace's answer is the fresh
 * solver's on the same jobs and budget, bit for bit, on random instances concave and not, with
 * SLAs, weights and every infeasibility mode; errors are the same too. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "core/alloc_keep.h"
#include "core/alloc_synth.h"
#include "core/pfi.h"
#include "support/alloc_fleet.h"

#define MAXJ 200
#define MAXP 8

typedef struct inst {
    int n;
    pfi_alloc_job jobs[MAXJ];
    double caps[MAXJ][MAXP], tput[MAXJ][MAXP];
    char ids[MAXJ][8];
} inst;

static unsigned long long rng_state;
static double urand(void)
{
    return pfi_rand_uniform(&rng_state);
}
static int irand(int lo, int hi) /* inclusive */
{
    return lo + (int)(urand() * (hi - lo + 1));
}

/* A curve of np points (np <= MAXP): concave (decreasing slopes) or arbitrary. */
static void make_curve(inst *I, int j, int np, int concave)
{
    pfi_alloc_job *J = &I->jobs[j];
    double x0 = 150 + urand() * 60, x1 = x0 + 150 + urand() * 400;
    for (int i = 0; i < np; i++)
        I->caps[j][i] = i == 0 ? x0 : x0 + (x1 - x0) * (i + 0.2 + 0.6 * urand()) / np;
    double t = 100 + urand() * 50, slope = 0.5 + urand();
    alloc_curve_tput(I->tput[j], I->caps[j], np, concave, t, slope, &rng_state);
    J->cap_w = I->caps[j];
    J->tput = I->tput[j];
    J->n_points = np;
    J->min_cap_w = x0 + urand() * 30;
    J->max_cap_w = x1 - urand() * 30;
    J->p0_w = J->max_cap_w * (0.8 + 0.2 * urand());
}

static void make_inst(inst *I, int n, int concave)
{
    memset(I, 0, sizeof *I);
    I->n = n;
    for (int j = 0; j < n; j++) {
        pfi_alloc_job *J = &I->jobs[j];
        snprintf(I->ids[j], sizeof I->ids[j], "j%d", j);
        J->id = I->ids[j];
        J->n_gpus = irand(1, 8);
        make_curve(I, j, irand(2, MAXP - 2), concave);
        J->t0 = NAN;
        J->sla = urand() < 0.3 ? urand() * 0.3 : NAN;
        J->weight = urand() < 0.5 ? 1.0 : 0.5 + 1.5 * urand();
    }
}

static double total(const inst *I, int top)
{
    double s = 0;
    for (int j = 0; j < I->n; j++)
        s += I->jobs[j].n_gpus *
             (top ? I->jobs[j].max_cap_w : fmax(I->jobs[j].min_cap_w, I->jobs[j].cap_w[0]));
    return s;
}

static void same_result(int rc1, pfi_alloc_result *r_, pfi_err *e1_, int rc2, pfi_alloc_result *f_,
                        pfi_err *e2_, const inst *I, double b, const pfi_alloc_opts *o, int *solved);

/* The workspace at budget b against a fresh solve: same code, same error, same answer. */
static void same_as_fresh(pfi_alloc_ws *w, const inst *I, double b, const pfi_alloc_opts *o,
                          int *solved)
{
    pfi_alloc_result r, f;
    pfi_err e1 = {0}, e2 = {0};
    int rc1 = pfi_alloc_ws_solve(w, b, &r, &e1);
    int rc2 = pfi_alloc_solve(I->jobs, I->n, b, o, &f, &e2);
    same_result(rc1, &r, &e1, rc2, &f, &e2, I, b, o, solved);
}

static void same_result(int rc1, pfi_alloc_result *r_, pfi_err *e1_, int rc2, pfi_alloc_result *f_,
                        pfi_err *e2_, const inst *I, double b, const pfi_alloc_opts *o, int *solved)
{
    pfi_alloc_result r = *r_, f = *f_;
    pfi_err e1 = *e1_, e2 = *e2_;
    assert_int_equal(rc1, rc2);
    if (rc1) {
        assert_string_equal(e1.msg, e2.msg);
        assert_null(r.cap_w);
        assert_null(f.cap_w);
        return;
    }
    (*solved)++;
    assert_int_equal(r.n, f.n);
    for (int j = 0; j < I->n; j++) {
        assert_true(r.cap_w[j] == f.cap_w[j]);
        assert_true(r.tput[j] == f.tput[j]);
        assert_true(r.floor_w[j] == f.floor_w[j]);
        assert_true(r.sla[j] == f.sla[j] || (isnan(r.sla[j]) && isnan(f.sla[j])));
        assert_int_equal(r.flags[j], f.flags[j]);
    }
    assert_true(r.value == f.value && r.power_w == f.power_w && r.power_w <= b * (1 + 1e-12));
    assert_true(r.upper_bound == f.upper_bound);
    assert_int_equal(r.optimal, f.optimal);
    assert_int_equal(r.budget_binds, f.budget_binds);
    if (r.min_budget_w != f.min_budget_w)
        fail_msg("min budget %.17g vs %.17g (n %d, mode %d)", r.min_budget_w, f.min_budget_w, I->n, o->on_infeasible);
    assert_true(r.min_budget_nosla_w == f.min_budget_nosla_w);
    assert_true(r.sla_extra == f.sla_extra);
    assert_int_equal(r.n_sla_dropped, f.n_sla_dropped);
    assert_true(r.nodes == f.nodes);
    pfi_alloc_result_free(&r);
    pfi_alloc_result_free(&f);
}

static void warm_run(int concave, unsigned long long seed, int count)
{
    rng_state = seed;
    static inst I;
    int solved = 0;
    for (int t = 0; t < count; t++) {
        make_inst(&I, irand(1, MAXJ), concave);
        pfi_alloc_opts o;
        pfi_alloc_opts_default(&o);
        o.step_w = urand() < 0.5 ? 1.0 : 5.0;
        o.on_infeasible = irand(0, 2);
        if (!concave)
            o.max_work = urand() < 0.2 ? 2000 : 1e6; /* sometimes stopped early */
        double lo = total(&I, 0), hi = total(&I, 1);
        double b = lo + (hi - lo) * (0.2 + 0.6 * urand());
        pfi_alloc_ws *w;
        pfi_err e = {0};
        if (pfi_alloc_ws_new(I.jobs, I.n, b, &o, &w, &e) != PFI_OK)
            continue;
        for (int step = 0; step < 12; step++) {
            double u = urand();
            if (u < 0.5) { /* a budget change, sometimes below what the SLAs need */
                b = lo + (hi - lo) * (urand() * 1.1 - 0.05);
                if (b <= 0)
                    b = 1;
            } else if (u < 0.85) { /* one job's curve, range, SLA or GPUs change */
                int j = irand(0, I.n - 1);
                double v = urand();
                if (v < 0.5)
                    make_curve(&I, j, irand(2, MAXP), concave); /* sometimes more points */
                else if (v < 0.7)
                    I.jobs[j].sla = urand() < 0.5 ? NAN : urand() * 0.3;
                else if (v < 0.85)
                    I.jobs[j].n_gpus = irand(1, 8);
                else
                    I.jobs[j].weight = 0.5 + urand();
                lo = total(&I, 0);
                hi = total(&I, 1);
                /* a rebuild (floors that depend on the budget) can find the last budget short */
                pfi_err e3 = {0};
                int rc = pfi_alloc_ws_update_job(w, j, &e3);
                if (!(rc == PFI_OK || rc == PFI_EINFEASIBLE))
                    fail_msg("update: %d %s", rc, e3.msg);
            } else { /* a job leaves (the last one) or the list is the same again */
                if (I.n > 1 && urand() < 0.5)
                    I.n--;
                lo = total(&I, 0);
                hi = total(&I, 1);
                pfi_err e3 = {0};
                int rc = pfi_alloc_ws_set_jobs(w, I.jobs, I.n, b, &e3);
                pfi_alloc_result f;
                pfi_err e4 = {0};
                assert_int_equal(rc, pfi_alloc_solve(I.jobs, I.n, b, &o, &f, &e4));
                pfi_alloc_result_free(&f);
            }
            same_as_fresh(w, &I, b, &o, &solved);
        }
        pfi_alloc_ws_free(w);
    }
    assert_true(solved > count * 4);
}

/* A curve scaled a little keeps its hull's grid points, so its segments only change slope:
 * the sorted index moves them in place.  Every job in turn, right after a solve whose
 * relaxation stopped inside some job's segment (so that job's entries sit at the prefix the
 * solve took): the warm answer is the fresh one, bit for bit. */
static void test_update_in_place(void **state)
{
    rng_state = 23;
    static inst I;
    int solved = 0;
    for (int t = 0; t < 6; t++) {
        make_inst(&I, 40 + 20 * t, 1);
        for (int j = 0; j < I.n; j++)
            I.jobs[j].sla = NAN; /* floors that do not depend on the budget: kept state */
        pfi_alloc_opts o;
        pfi_alloc_opts_default(&o);
        o.step_w = t % 2 ? 5.0 : 1.0;
        double lo = total(&I, 0), hi = total(&I, 1);
        double b[2] = {lo + (hi - lo) * (0.3 + 0.1 * t), lo + (hi - lo) * 0.55};
        pfi_alloc_ws *w;
        pfi_err e = {0};
        assert_int_equal(pfi_alloc_ws_new(I.jobs, I.n, b[0], &o, &w, &e), PFI_OK);
        for (int s = 0; s < PFI_ALLOC_INDEX_SOLVES; s++) /* the index is sorted in parts */
            same_as_fresh(w, &I, b[s % 2 ? 0 : 1], &o, &solved);
        for (int j = 0; j < I.n; j++) {
            double f = j % 2 ? 1.01 : 1 / 1.01;
            for (int i = 0; i < I.jobs[j].n_points; i++)
                I.tput[j][i] *= f;
            assert_int_equal(pfi_alloc_ws_update_job(w, j, &e), PFI_OK);
            same_as_fresh(w, &I, b[j % 3 == 2], &o, &solved);
        }
        pfi_alloc_ws_free(w);
    }
    assert_true(solved > 200);
}

static void test_warm_concave(void **state)
{
    (void)state;
    warm_run(1, 11, 60);
}

static void test_warm_nonconcave(void **state)
{
    (void)state;
    warm_run(0, 12, 40);
}

/* Bad input through the workspace: the same message as the fresh solver, nothing kept. */
static void test_warm_bad_job(void **state)
{
    (void)state;
    rng_state = 5;
    static inst I;
    make_inst(&I, 20, 1);
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    pfi_alloc_ws *w;
    pfi_err e = {0};
    double b = 0.5 * (total(&I, 0) + total(&I, 1));
    assert_int_equal(pfi_alloc_ws_new(I.jobs, I.n, b, &o, &w, &e), PFI_OK);
    I.caps[3][1] = I.caps[3][0]; /* caps no longer increase */
    assert_int_equal(pfi_alloc_ws_update_job(w, 3, &e), PFI_EINVAL);
    pfi_alloc_result r;
    pfi_err e2 = {0};
    assert_int_equal(pfi_alloc_solve(I.jobs, I.n, b, &o, &r, &e2), PFI_EINVAL);
    assert_string_equal(e.msg, e2.msg);
    assert_int_equal(pfi_alloc_ws_update_job(w, 99, &e), PFI_EINVAL);
    I.caps[3][1] = I.caps[3][0] + 10;
    assert_int_equal(pfi_alloc_ws_update_job(w, 3, &e), PFI_OK);
    int solved = 0;
    same_as_fresh(w, &I, b, &o, &solved);
    assert_int_equal(solved, 1);
    pfi_alloc_ws_free(w);
}

/* Points every job of I at its own rows (after rows moved). */
static void inst_repoint(inst *I)
{
    for (int j = 0; j < I->n; j++) {
        I->jobs[j].cap_w = I->caps[j];
        I->jobs[j].tput = I->tput[j];
        I->jobs[j].id = I->ids[j];
    }
}

/* A new job (id "a<serial>") at position at; the ones from at on move up one. */
static void inst_insert(inst *I, int at, int concave, int serial)
{
    size_t len = (size_t)(I->n - at);
    memmove(&I->jobs[at + 1], &I->jobs[at], len * sizeof I->jobs[0]);
    memmove(I->caps[at + 1], I->caps[at], len * sizeof I->caps[0]);
    memmove(I->tput[at + 1], I->tput[at], len * sizeof I->tput[0]);
    memmove(I->ids[at + 1], I->ids[at], len * sizeof I->ids[0]);
    I->n++;
    inst_repoint(I);
    pfi_alloc_job *J = &I->jobs[at];
    snprintf(I->ids[at], sizeof I->ids[at], "a%d", serial % 100000);
    J->n_gpus = irand(1, 8);
    make_curve(I, at, irand(2, MAXP - 2), concave);
    J->t0 = NAN;
    J->sla = urand() < 0.3 ? urand() * 0.3 : NAN;
    J->weight = urand() < 0.5 ? 1.0 : 0.5 + 1.5 * urand();
}

/* The job at position at leaves. */
static void inst_remove(inst *I, int at)
{
    size_t len = (size_t)(I->n - at - 1);
    memmove(&I->jobs[at], &I->jobs[at + 1], len * sizeof I->jobs[0]);
    memmove(I->caps[at], I->caps[at + 1], len * sizeof I->caps[0]);
    memmove(I->tput[at], I->tput[at + 1], len * sizeof I->tput[0]);
    memmove(I->ids[at], I->ids[at + 1], len * sizeof I->ids[0]);
    I->n--;
    inst_repoint(I);
}

/* The keeper (core/alloc_keep.h) handed a new copy of the caller's jobs on every plan, as a
 * controller rebuilds its view: budget changes, changed curves (more points too), a job leaving,
 * an id renamed and a bad job; every answer and error is the fresh solver's, and most plans are
 * warm. */
static void test_keep(void **state)
{
    (void)state;
    rng_state = 21;
    static inst I;
    static pfi_alloc_job view[MAXJ];
    static double vc[MAXJ][MAXP], vt[MAXJ][MAXP];
    static char vid[MAXJ][8];
    int solved = 0, plans = 0;
    pfi_alloc_keep *k = NULL;
    for (int t = 0; t < 30; t++) {
        make_inst(&I, irand(1, MAXJ), t % 3 != 0);
        pfi_alloc_opts o;
        pfi_alloc_opts_default(&o);
        o.on_infeasible = irand(0, 2);
        double lo = total(&I, 0), hi = total(&I, 1), b = 0.5 * (lo + hi);
        for (int step = 0; step < 15; step++) {
            double u = urand();
            if (u < 0.55) {
                b = lo + (hi - lo) * (urand() * 1.1 - 0.05);
                if (b <= 0)
                    b = 1;
            } else if (u < 0.85) {
                int j = irand(0, I.n - 1);
                if (urand() < 0.7)
                    make_curve(&I, j, irand(2, MAXP), t % 3 != 0);
                else
                    I.jobs[j].sla = urand() < 0.5 ? NAN : urand() * 0.3;
            } else if (u < 0.88 && I.n > 1) {
                I.n--;
            } else if (u < 0.94) { /* jobs leave and arrive anywhere in the list */
                for (int c = irand(1, 3); c > 0; c--)
                    if (I.n > 1 && urand() < 0.5)
                        inst_remove(&I, irand(0, I.n - 1));
                    else if (I.n < MAXJ)
                        inst_insert(&I, irand(0, I.n), t % 3 != 0, irand(0, 99999));
            } else if (u < 0.96) {
                snprintf(I.ids[irand(0, I.n - 1)], 8, "r%d", irand(0, 999));
            } else {
                int j = irand(0, I.n - 1);
                I.caps[j][1] = I.caps[j][0]; /* refused; the next plan has it right again */
                I.tput[j][0] = NAN;
            }
            lo = total(&I, 0);
            hi = total(&I, 1);
            /* The caller's view: a copy, overwritten before the next plan. */
            memset(view, 0x5a, sizeof view);
            for (int j = 0; j < I.n; j++) {
                view[j] = I.jobs[j];
                memcpy(vc[j], I.caps[j], sizeof vc[j]);
                memcpy(vt[j], I.tput[j], sizeof vt[j]);
                memcpy(vid[j], I.ids[j], sizeof vid[j]);
                view[j].cap_w = vc[j];
                view[j].tput = vt[j];
                view[j].id = vid[j];
            }
            pfi_alloc_result r, f;
            pfi_err e1 = {0}, e2 = {0};
            int rc1 = pfi_alloc_keep_solve(&k, view, I.n, b, &o, &r, &e1);
            int rc2 = pfi_alloc_solve(I.jobs, I.n, b, &o, &f, &e2);
            same_result(rc1, &r, &e1, rc2, &f, &e2, &I, b, &o, &solved);
            plans++;
            memset(vc, 0x5a, sizeof vc);
            memset(vid, 0, sizeof vid);
            for (int j = 0; j < I.n; j++)
                if (isnan(I.tput[j][0]) || I.caps[j][1] == I.caps[j][0])
                    make_curve(&I, j, irand(2, MAXP), 1);
        }
    }
    assert_true(solved > plans / 2);
    assert_true(pfi_alloc_keep_warm(k) > plans / 3);
    assert_true(pfi_alloc_keep_rebuilt(k) >= 1);
    assert_int_equal(pfi_alloc_keep_warm(k) + pfi_alloc_keep_rebuilt(k), solved);
    pfi_alloc_keep_free(k);
}

/* Two solves of the same jobs at budget b, field by field. */
static void same_answer(const pfi_alloc_result *r, const pfi_alloc_result *f)
{
    assert_int_equal(r->n, f->n);
    for (int j = 0; j < r->n; j++) {
        assert_true(r->cap_w[j] == f->cap_w[j]);
        assert_true(r->tput[j] == f->tput[j]);
        assert_int_equal(r->flags[j], f->flags[j]);
    }
    assert_true(r->value == f->value && r->power_w == f->power_w);
    assert_true(r->upper_bound == f->upper_bound);
    assert_int_equal(r->optimal, f->optimal);
    assert_true(r->nodes == f->nodes);
}

/* Many jobs sharing a few curves (so thousands of hull segments have equal slopes and the
 * budget runs out inside a group of them, filled in job order), and a synthetic fleet of 20,000
 * jobs: the fresh solver's selection (on lists this long, from the histogram made with the
 * hulls), the workspace's sorted index (its second solve on) and its re-solves after budget
 * changes and a job's new curve give the same answer bit for bit. */
static void test_warm_large(void **state)
{
    (void)state;
    enum { N = 5000, T = 5, NP = 6 };
    static pfi_alloc_job jobs[N];
    static double caps[T][NP], tput[N][NP];
    static char ids[N][8];
    rng_state = 31;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < NP; i++)
            caps[t][i] = 200 + 50 * i;
    for (int j = 0; j < N; j++) {
        int t = j % T;
        double slope = 8.0 / (t + 1), v = 100;
        for (int i = 0; i < NP; i++, slope /= 2) { /* exact binary fractions: equal slopes */
            tput[j][i] = v;
            v += slope * 50;
        }
        snprintf(ids[j], sizeof ids[j], "j%d", j);
        jobs[j] = (pfi_alloc_job){ids[j], 1 + j % 4, 200, 450, caps[t], tput[j], NP, 400,
                                  NAN, NAN, 1};
    }
    double lo = 0, hi = 0;
    for (int j = 0; j < N; j++) {
        lo += jobs[j].n_gpus * 200.0;
        hi += jobs[j].n_gpus * 450.0;
    }
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.step_w = 5;
    pfi_alloc_ws *w;
    pfi_err e = {0};
    assert_int_equal(pfi_alloc_ws_new(jobs, N, 0.5 * (lo + hi), &o, &w, &e), PFI_OK);
    for (int s = 0; s < 40; s++) {
        double b = lo + (hi - lo) * (s < 20 ? s / 19.0 : urand());
        if (s == 30) { /* one job's curve changes: its segments leave the index, new ones enter */
            for (int i = 0; i < NP; i++)
                tput[7][i] *= 1.5;
            assert_int_equal(pfi_alloc_ws_update_job(w, 7, &e), PFI_OK);
        }
        pfi_alloc_result r, f;
        assert_int_equal(pfi_alloc_ws_solve(w, b, &r, &e), PFI_OK);
        assert_int_equal(pfi_alloc_solve(jobs, N, b, &o, &f, &e), PFI_OK);
        same_answer(&r, &f);
        assert_true(f.power_w <= b);
        pfi_alloc_result_free(&r);
        pfi_alloc_result_free(&f);
    }
    pfi_alloc_ws_free(w);

    pfi_alloc_synth sy;
    assert_int_equal(pfi_alloc_synth_make(20000, 1, 32, 3, &sy, &e), PFI_OK);
    pfi_alloc_opts_default(&o);
    double b0 = pfi_alloc_budget_from_cut(sy.jobs, sy.n, 0.3);
    assert_int_equal(pfi_alloc_ws_new(sy.jobs, sy.n, b0, &o, &w, &e), PFI_OK);
    double cuts[] = {1.0, 1.0, 0.9, 0.945, 1.2, 0.6};
    for (int s = 0; s < 6; s++) {
        pfi_alloc_result r, f;
        assert_int_equal(pfi_alloc_ws_solve(w, cuts[s] * b0, &r, &e), PFI_OK);
        assert_int_equal(pfi_alloc_solve(sy.jobs, sy.n, cuts[s] * b0, &o, &f, &e), PFI_OK);
        same_answer(&r, &f);
        pfi_alloc_result_free(&r);
        pfi_alloc_result_free(&f);
    }
    pfi_alloc_ws_free(w);
    pfi_alloc_synth_free(&sy);
}

/* A job whose new curve has more points than every slot the workspace holds: it is packed
 * again, and the answer is still the fresh solver's. */
static void test_warm_grow(void **state)
{
    (void)state;
    static double c[12], t[12];
    static pfi_alloc_job job = {"g", 2, 100, 700, c, t, 2, 500, NAN, NAN, 1};
    c[0] = 100, c[1] = 700, t[0] = 10, t[1] = 70;
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    pfi_alloc_ws *w;
    pfi_err e = {0};
    assert_int_equal(pfi_alloc_ws_new(&job, 1, 800, &o, &w, &e), PFI_OK);
    for (int round = 0; round < 3; round++) {
        if (round > 0) { /* 12 points on a concave curve off the grid */
            job.n_points = 12;
            for (int i = 0; i < 12; i++) {
                c[i] = 100.5 + 50 * i + round;
                t[i] = 100 * sqrt(c[i]);
            }
            assert_int_equal(pfi_alloc_ws_update_job(w, 0, &e), PFI_OK);
        }
        pfi_alloc_result r, f;
        assert_int_equal(pfi_alloc_ws_solve(w, 801, &r, &e), PFI_OK);
        assert_int_equal(pfi_alloc_solve(&job, 1, 801, &o, &f, &e), PFI_OK);
        same_answer(&r, &f);
        assert_true(r.cap_w[0] == 400); /* 800 W over 2 GPUs on a 1 W grid */
        pfi_alloc_result_free(&r);
        pfi_alloc_result_free(&f);
    }
    pfi_alloc_ws_free(w);
}

/* Every hull segment leaves the sorted index (one job, its curve made flat after the index was
 * built): the patch has nothing to write, and the answer is the fresh solver's. */
static void test_warm_flat(void **state)
{
    (void)state;
    static double c[3] = {200, 400, 600}, t[3] = {10, 20, 25};
    static pfi_alloc_job job = {"f", 1, 200, 600, c, t, 3, 500, NAN, NAN, 1};
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    pfi_alloc_ws *w;
    pfi_err e = {0};
    assert_int_equal(pfi_alloc_ws_new(&job, 1, 500, &o, &w, &e), PFI_OK);
    int sorted = PFI_ALLOC_INDEX_SOLVES;
    for (int round = 0; round < sorted + 2; round++) {
        if (round == sorted) { /* after the solves that sorted the segments */
            t[1] = t[2] = t[0];
            assert_int_equal(pfi_alloc_ws_update_job(w, 0, &e), PFI_OK);
        }
        pfi_alloc_result r, f;
        assert_int_equal(pfi_alloc_ws_solve(w, 500, &r, &e), PFI_OK);
        assert_int_equal(pfi_alloc_solve(&job, 1, 500, &o, &f, &e), PFI_OK);
        same_answer(&r, &f);
        assert_true(r.cap_w[0] == (round < sorted ? 500 : 200));
        pfi_alloc_result_free(&r);
        pfi_alloc_result_free(&f);
    }
    /* the only job cannot leave: refused, and the workspace still answers */
    assert_int_equal(pfi_alloc_ws_remove_job(w, &job, 0, 0, &e), PFI_EINVAL);
    pfi_alloc_result r, f;
    assert_int_equal(pfi_alloc_ws_solve(w, 500, &r, &e), PFI_OK);
    assert_int_equal(pfi_alloc_solve(&job, 1, 500, &o, &f, &e), PFI_OK);
    same_answer(&r, &f);
    pfi_alloc_result_free(&r);
    pfi_alloc_result_free(&f);
    pfi_alloc_ws_free(w);
}


/* The list, a pool's jobs by position, as a caller holds it: a new array for every change (the
 * last one freed, so a workspace reading it would be caught by the sanitizers). */
static pfi_alloc_job *list_of(const inst *P, const int *ord, int n, pfi_alloc_job *old)
{
    free(old);
    pfi_alloc_job *a = malloc((size_t)(n > 0 ? n : 1) * sizeof *a);
    assert_non_null(a);
    for (int i = 0; i < n; i++)
        a[i] = P->jobs[ord[i]];
    return a;
}

/* Jobs arrive (anywhere in the list) and leave (any of them) among budget changes and changed
 * curves: after each, the workspace's answer is the fresh solver's on the new list, bit for
 * bit; a job whose id is taken, or whose range holds no grid point, is refused and changes
 * nothing. */
static void arrive_leave_run(int concave, unsigned long long seed, int count)
{
    rng_state = seed;
    static inst P, V; /* the pool of jobs; V.n: the list's length (for the comparison) */
    int solved = 0, arrived = 0, left = 0, refused = 0;
    int ord[MAXJ], used[MAXJ];
    for (int t = 0; t < count; t++) {
        make_inst(&P, MAXJ, concave);
        int n = irand(1, MAXJ / 2);
        memset(used, 0, sizeof used);
        for (int i = 0; i < n; i++) {
            ord[i] = i;
            used[i] = 1;
        }
        pfi_alloc_opts o;
        pfi_alloc_opts_default(&o);
        o.step_w = urand() < 0.5 ? 1.0 : 5.0;
        o.on_infeasible = irand(0, 2);
        if (!concave)
            o.max_work = urand() < 0.2 ? 2000 : 1e6;
        pfi_alloc_job *jobs = list_of(&P, ord, n, NULL);
        V.n = n;
        double lo = 0, hi = 0;
        for (int j = 0; j < MAXJ; j++) { /* the pool's totals: budgets of the right size */
            lo += P.jobs[j].n_gpus * fmax(P.jobs[j].min_cap_w, P.jobs[j].cap_w[0]);
            hi += P.jobs[j].n_gpus * P.jobs[j].max_cap_w;
        }
        lo *= (double)n / MAXJ;
        hi *= (double)n / MAXJ;
        double b = lo + (hi - lo) * (0.2 + 0.6 * urand());
        pfi_alloc_ws *w;
        pfi_err e = {0};
        if (pfi_alloc_ws_new(jobs, n, b, &o, &w, &e) != PFI_OK) {
            free(jobs);
            continue;
        }
        for (int step = 0; step < 16; step++) {
            double u = urand();
            if (u < 0.25) {
                b = lo + (hi - lo) * (urand() * 1.1 - 0.05);
                if (b <= 0)
                    b = 1;
            } else if (u < 0.55 && n < MAXJ) { /* a job arrives at position at */
                int p = 0, at = irand(0, n);
                while (used[p])
                    p++;
                double v = urand();
                if (v < 0.1 && n > 0) { /* an id already in the list: refused */
                    P.jobs[p].id = P.jobs[ord[irand(0, n - 1)]].id;
                } else if (v < 0.15) { /* a range with no point of the grid: refused */
                    P.jobs[p].min_cap_w = 300.2;
                    P.jobs[p].max_cap_w = 300.6;
                }
                int o2[MAXJ];
                memcpy(o2, ord, sizeof ord);
                memmove(o2 + at + 1, o2 + at, (size_t)(n - at) * sizeof *o2);
                o2[at] = p;
                pfi_alloc_job *nj = list_of(&P, o2, n + 1, NULL);
                pfi_err e3 = {0}, e4 = {0};
                int rc = pfi_alloc_ws_add_job(w, nj, n + 1, at, &e3);
                if (v < 0.15) {
                    pfi_alloc_result f;
                    assert_int_equal(rc, PFI_EINVAL);
                    assert_int_equal(pfi_alloc_solve(nj, n + 1, b, &o, &f, &e4), PFI_EINVAL);
                    assert_string_equal(e3.msg, e4.msg);
                    refused++;
                    free(nj); /* nothing changed: the workspace reads the old list */
                    P.jobs[p].id = P.ids[p];
                    make_curve(&P, p, irand(2, MAXP - 2), concave);
                } else {
                    if (!(rc == PFI_OK || rc == PFI_EINFEASIBLE))
                        fail_msg("arrive: %d %s", rc, e3.msg);
                    free(jobs);
                    jobs = nj;
                    memcpy(ord, o2, sizeof ord);
                    used[p] = 1;
                    n++;
                    arrived++;
                }
            } else if (u < 0.85 && n > 1) { /* a job leaves */
                int at = irand(0, n - 1);
                used[ord[at]] = 0;
                make_curve(&P, ord[at], irand(2, MAXP - 2), concave); /* a new job next time */
                memmove(ord + at, ord + at + 1, (size_t)(n - at - 1) * sizeof *ord);
                n--;
                jobs = list_of(&P, ord, n, jobs);
                pfi_err e3 = {0};
                int rc = pfi_alloc_ws_remove_job(w, jobs, n, at, &e3);
                if (!(rc == PFI_OK || rc == PFI_EINFEASIBLE))
                    fail_msg("leave: %d %s", rc, e3.msg);
                left++;
            } else { /* one job's curve or SLA changes */
                int i = irand(0, n - 1);
                if (urand() < 0.6)
                    make_curve(&P, ord[i], irand(2, MAXP), concave);
                else
                    P.jobs[ord[i]].sla = urand() < 0.5 ? NAN : urand() * 0.3;
                jobs[i] = P.jobs[ord[i]];
                pfi_err e3 = {0};
                int rc = pfi_alloc_ws_update_job(w, i, &e3);
                if (!(rc == PFI_OK || rc == PFI_EINFEASIBLE))
                    fail_msg("update: %d %s", rc, e3.msg);
            }
            V.n = n;
            pfi_alloc_result r, f;
            pfi_err e1 = {0}, e2 = {0};
            int rc1 = pfi_alloc_ws_solve(w, b, &r, &e1);
            int rc2 = pfi_alloc_solve(jobs, n, b, &o, &f, &e2);
            same_result(rc1, &r, &e1, rc2, &f, &e2, &V, b, &o, &solved);
        }
        pfi_alloc_ws_free(w);
        free(jobs);
    }
    assert_true(solved > count * 8);
    assert_true(arrived > count * 3 && left > count * 3 && refused > 0);
}

static void test_arrive_leave_concave(void **state)
{
    (void)state;
    arrive_leave_run(1, 41, 50);
}

static void test_arrive_leave_nonconcave(void **state)
{
    (void)state;
    arrive_leave_run(0, 42, 40);
}

/* A synthetic fleet of 20,000 jobs re-planned warm (its segments sorted) while jobs arrive at
 * the end and in the middle and leave: the fresh solver's answers, bit for bit. */
static void test_arrive_leave_large(void **state)
{
    (void)state;
    pfi_alloc_synth sy;
    pfi_err e = {0};
    enum { N = 20000 };
    assert_int_equal(pfi_alloc_synth_make(N + 3, 1, 32, 5, &sy, &e), PFI_OK);
    pfi_alloc_job *jobs = malloc((N + 3) * sizeof *jobs);
    assert_non_null(jobs);
    memcpy(jobs, sy.jobs, N * sizeof *jobs);
    int n = N;
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    double b = pfi_alloc_budget_from_cut(jobs, n, 0.3);
    pfi_alloc_ws *w;
    assert_int_equal(pfi_alloc_ws_new(jobs, n, b, &o, &w, &e), PFI_OK);
    for (int s = 0; s < 9; s++) {
        if (s == 2 || s == 5) { /* arrives last, then in the middle */
            int at = s == 2 ? n : n / 3;
            memmove(jobs + at + 1, jobs + at, (size_t)(n - at) * sizeof *jobs);
            jobs[at] = sy.jobs[N + s / 3];
            n++;
            assert_int_equal(pfi_alloc_ws_add_job(w, jobs, n, at, &e), PFI_OK);
        } else if (s == 3 || s == 7) { /* leaves: near the front, the last */
            int at = s == 3 ? 17 : n - 1;
            memmove(jobs + at, jobs + at + 1, (size_t)(n - at - 1) * sizeof *jobs);
            n--;
            assert_int_equal(pfi_alloc_ws_remove_job(w, jobs, n, at, &e), PFI_OK);
        }
        double bs = b * (s % 2 ? 0.9 : 1.0);
        pfi_alloc_result r, f;
        assert_int_equal(pfi_alloc_ws_solve(w, bs, &r, &e), PFI_OK);
        assert_int_equal(pfi_alloc_solve(jobs, n, bs, &o, &f, &e), PFI_OK);
        same_answer(&r, &f);
        assert_true(r.min_budget_w == f.min_budget_w);
        assert_true(r.min_budget_nosla_w == f.min_budget_nosla_w);
        pfi_alloc_result_free(&r);
        pfi_alloc_result_free(&f);
    }
    /* what cannot leave or arrive */
    assert_int_equal(pfi_alloc_ws_remove_job(w, jobs, n, n + 1, &e), PFI_EINVAL);
    assert_int_equal(pfi_alloc_ws_add_job(w, jobs, n, 0, &e), PFI_EINVAL);
    pfi_alloc_ws_free(w);
    free(jobs);
    pfi_alloc_synth_free(&sy);
}

/* Departures from a long list re-planned warm: the first job, the last, jobs of 1 and of 32
 * GPUs and jobs at many other places leave (some arrive again at their place), on a fleet where
 * every job shares one of four curves (thousands of equal slopes, equal gains in the fill) and
 * on a synthetic one; each answer is the fresh solver's on the new list, bit for bit.  The
 * fills hold thousands of jobs (their heap's top is followed alone, core/alloc_heap.h). */
static void leave_many_run(const pfi_alloc_job *list, int n, double b, const pfi_alloc_opts *o,
                           unsigned long long seed)
{
    rng_state = seed;
    pfi_alloc_job *jobs = malloc((size_t)n * sizeof *jobs);
    assert_non_null(jobs);
    memcpy(jobs, list, (size_t)n * sizeof *jobs);
    pfi_alloc_opts whole = *o;
    whole.fill_whole = 1;
    pfi_alloc_ws *w;
    pfi_err e = {0};
    if (pfi_alloc_ws_new(jobs, n, b, o, &w, &e))
        fail_msg("%s", e.msg);
    for (int s = 0; s < PFI_ALLOC_INDEX_SOLVES; s++) { /* the solves that sort the index */
        pfi_alloc_result r;
        assert_int_equal(pfi_alloc_ws_solve(w, b, &r, &e), PFI_OK);
        pfi_alloc_result_free(&r);
    }
    int one = 0, many = 0;
    for (int s = 0; s < 24; s++) {
        int at = s == 0 ? 0 : s == 1 ? n - 1 : irand(0, n - 1);
        if (s == 2 || s == 3) /* the next job of 1 GPU, of 32 */
            while (at < n - 1 && jobs[at].n_gpus != (s == 2 ? 1 : 32))
                at++;
        one += jobs[at].n_gpus == 1;
        many += jobs[at].n_gpus == 32;
        pfi_alloc_job J = jobs[at];
        memmove(jobs + at, jobs + at + 1, (size_t)(n - at - 1) * sizeof *jobs);
        n--;
        assert_int_equal(pfi_alloc_ws_remove_job(w, jobs, n, at, &e), PFI_OK);
        double bs = b * (s % 3 == 2 ? 0.97 : 1.0);
        pfi_alloc_result r, f;
        assert_int_equal(pfi_alloc_ws_solve(w, bs, &r, &e), PFI_OK);
        assert_int_equal(pfi_alloc_solve(jobs, n, bs, o, &f, &e), PFI_OK);
        same_answer(&r, &f);
        pfi_alloc_result_free(&f);
        /* the fill's whole heap built every time: the same answer */
        assert_int_equal(pfi_alloc_solve(jobs, n, bs, &whole, &f, &e), PFI_OK);
        same_answer(&r, &f);
        pfi_alloc_result_free(&r);
        pfi_alloc_result_free(&f);
        if (s % 4 == 1) { /* back at its place */
            memmove(jobs + at + 1, jobs + at, (size_t)(n - at) * sizeof *jobs);
            jobs[at] = J;
            n++;
            assert_int_equal(pfi_alloc_ws_add_job(w, jobs, n, at, &e), PFI_OK);
            assert_int_equal(pfi_alloc_ws_solve(w, b, &r, &e), PFI_OK);
            assert_int_equal(pfi_alloc_solve(jobs, n, b, o, &f, &e), PFI_OK);
            same_answer(&r, &f);
            pfi_alloc_result_free(&r);
            pfi_alloc_result_free(&f);
        }
    }
    assert_true(one > 0 && many > 0);
    pfi_alloc_ws_free(w);
    free(jobs);
}

static void test_leave_many(void **state)
{
    (void)state;
    enum { N = 6000, T = 4, NP = 6 };
    pfi_alloc_synth sy;
    pfi_err e = {0};
    assert_int_equal(pfi_alloc_synth_make(N, 1, 32, 11, &sy, &e), PFI_OK);
    static double caps[T][NP], tput[T][NP];
    for (int t = 0; t < T; t++) {
        double slope = 8.0 / (t + 1), v = 100;
        for (int i = 0; i < NP; i++, slope /= 2) { /* exact binary fractions: equal slopes */
            caps[t][i] = 200 + 50 * i;
            tput[t][i] = v;
            v += slope * 50;
        }
    }
    pfi_alloc_job *jobs = malloc(N * sizeof *jobs);
    assert_non_null(jobs);
    memcpy(jobs, sy.jobs, N * sizeof *jobs);
    for (int j = 0; j < N; j++) {
        jobs[j].cap_w = caps[j % T];
        jobs[j].tput = tput[j % T];
        jobs[j].n_points = NP;
        jobs[j].min_cap_w = 200;
        jobs[j].max_cap_w = 450;
        jobs[j].p0_w = 400;
    }
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    for (int g = 0; g < 2; g++) { /* 1 W and 5 W grids */
        leave_many_run(jobs, N, 0.8 * pfi_alloc_budget_from_cut(jobs, N, 0), &o, 51 + g);
        o.step_w = 5;
    }
    pfi_alloc_opts_default(&o);
    leave_many_run(sy.jobs, N, pfi_alloc_budget_from_cut(sy.jobs, N, 0.3), &o, 53);
    /* Jobs of 8-32 GPUs, and jobs of 1 GPU whose curves rise steeply to their middle point and
     * barely after it: once a step of a large job is taken, the fill pops hundreds of large
     * ones that no longer fit before it reaches a job of 1 GPU (past its heap's top: the steps
     * taken there are put back and the whole heap built). */
    double *tp = malloc((size_t)N * PFI_SYNTH_POINTS * sizeof *tp);
    assert_non_null(tp);
    memcpy(jobs, sy.jobs, N * sizeof *jobs);
    for (int j = 0; j < N; j++) {
        const double *y = jobs[j].tput;
        double *t = tp + j * PFI_SYNTH_POINTS;
        memcpy(t, y, PFI_SYNTH_POINTS * sizeof *t);
        jobs[j].n_gpus = j % 3 ? 8 + j % 25 : 1;
        if (j % 3 == 0) {
            double lo = y[0], hi = y[PFI_SYNTH_POINTS - 1];
            for (int i = 1; i < PFI_SYNTH_POINTS; i++)
                t[i] = i <= PFI_SYNTH_POINTS / 2 ? lo + (hi - lo) * i / (PFI_SYNTH_POINTS / 2)
                                                 : hi + 1e-9 * (hi - lo) * i;
        }
        jobs[j].tput = t;
    }
    for (int c = 0; c < 3; c++)
        leave_many_run(jobs, N, pfi_alloc_budget_from_cut(jobs, N, 0.2 + 0.1 * c), &o, 54 + c);
    free(tp);
    free(jobs);
    pfi_alloc_synth_free(&sy);
}

/* The keeper handed lists where jobs left and arrived (in the middle too, several at once, an
 * id renamed) re-plans them warm; two jobs swapped, or most of the list new, rebuild.  Every
 * answer is the fresh solver's. */
static void test_keep_arrive_leave(void **state)
{
    (void)state;
    enum { N = 3000 };
    pfi_alloc_synth sy;
    pfi_err e = {0};
    assert_int_equal(pfi_alloc_synth_make(N + 10, 1, 8, 9, &sy, &e), PFI_OK);
    static pfi_alloc_job view[N + 10];
    int n = N;
    memcpy(view, sy.jobs, N * sizeof *view);
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    double b = pfi_alloc_budget_from_cut(sy.jobs, N, 0.3);
    pfi_alloc_keep *k = NULL;
    static char renamed[16] = "renamed";
    for (int s = 0; s < 9; s++) {
        long long warm0 = pfi_alloc_keep_warm(k);
        if (s == 1) { /* one leaves in the middle */
            memmove(view + 100, view + 101, (size_t)(n - 101) * sizeof *view);
            n--;
        } else if (s == 2) { /* one arrives at the front, one at the end */
            memmove(view + 1, view, (size_t)n * sizeof *view);
            view[0] = sy.jobs[N];
            view[n + 1] = sy.jobs[N + 1];
            n += 2;
        } else if (s == 3) { /* one leaves, one arrives elsewhere, one is renamed */
            memmove(view + 500, view + 501, (size_t)(n - 501) * sizeof *view);
            memmove(view + 2001, view + 2000, (size_t)(n - 1 - 2000) * sizeof *view);
            view[2000] = sy.jobs[N + 2];
            view[7].id = renamed;
        } else if (s == 4) { /* the budget only */
            b *= 0.95;
        } else if (s == 5) { /* two swap: rebuilt */
            pfi_alloc_job t = view[10];
            view[10] = view[20];
            view[20] = t;
        } else if (s == 6) { /* one arrives with an id already in the list: refused */
            view[n] = view[5];
            n++;
        } else if (s == 7) { /* the list as it was before */
            n--;
        }
        pfi_alloc_result r, f;
        pfi_err e1 = {0}, e2 = {0};
        int rc1 = pfi_alloc_keep_solve(&k, view, n, b, &o, &r, &e1);
        int rc2 = pfi_alloc_solve(view, n, b, &o, &f, &e2);
        assert_int_equal(rc1, rc2);
        if (rc1) {
            assert_string_equal(e1.msg, e2.msg);
            assert_int_equal(s, 6);
            continue;
        }
        same_answer(&r, &f);
        assert_true(r.min_budget_w == f.min_budget_w);
        pfi_alloc_result_free(&r);
        pfi_alloc_result_free(&f);
        if (s >= 1 && s <= 4)
            assert_true(pfi_alloc_keep_warm(k) == warm0 + 1);
        if (s == 5 || s == 7)
            assert_true(pfi_alloc_keep_warm(k) == warm0); /* rebuilt */
    }
    assert_int_equal(pfi_alloc_keep_rebuilt(k), 3); /* the first plan, the swap, after the error */
    pfi_alloc_keep_free(k);
    pfi_alloc_synth_free(&sy);
}

/* The root of a fresh solve of a long list (>= 4,096 jobs) selects from a histogram made with
 * the hulls; a workspace whose hulls changed after its build selects at the root as every other
 * node does, and from its second solve on reads its sorted index.  Adversarial lists (slopes
 * equal in thousands, or a few ulps apart inside one bucket; throughputs near 1e15 and near the
 * subnormals; flat and non-concave curves with SLAs and weights) at budgets on the floors, on
 * segment boundaries, at the top and below the floors: the three give the same answer (or error)
 * bit for bit, and for the concave lists the value is the greedy optimum over unit steps. */
enum { RN = 4100, RP = 6 };
static pfi_alloc_job rjobs[RN];
static double rcaps[RN][RP], rtput[RN][RP];
static char rids[RN][8];

static void root_inst(int kind, int n)
{
    for (int j = 0; j < n; j++) {
        pfi_alloc_job *J = &rjobs[j];
        snprintf(rids[j], sizeof rids[j], "j%d", j);
        int np = 4;
        static const double c4[4] = {100, 200, 300, 400}, t4[4] = {100, 300, 400, 450};
        double sla = NAN, wt = 1;
        if (kind == 0) { /* shared slopes, a few ulps apart in groups of equal ones */
            for (int i = 0; i < np; i++) {
                rcaps[j][i] = c4[i];
                rtput[j][i] = i ? t4[i] * (1 + (j % 7) * 0x1p-52) : t4[0];
            }
        } else {
            np = irand(2, RP);
            double x = 100 + irand(0, 50), t = kind == 1 ? 1e15 : kind == 2 ? 1e-300 : 50;
            double d = t * (0.5 + urand()) / 100; /* concave: slopes decrease */
            for (int i = 0; i < np; i++) {
                rcaps[j][i] = x;
                rtput[j][i] = kind == 3 ? (urand() < 0.2 ? 60 : 100 * urand()) : t;
                int dx = irand(1, 150);
                x += dx;
                t += d * dx;
                d *= urand() < 0.1 ? 0 : urand();
            }
            if (kind == 3 && urand() < 0.3)
                sla = urand() * 0.3;
            if (urand() < 0.3)
                wt = urand() < 0.5 ? 2 : 0.5 + urand();
            if (kind == 2 && j % 5 == 0) /* flat */
                for (int i = 1; i < np; i++)
                    rtput[j][i] = rtput[j][0];
        }
        *J = (pfi_alloc_job){rids[j], 1 + j % 4, rcaps[j][0], rcaps[j][np - 1], rcaps[j],
                             rtput[j], np, rcaps[j][np - 1], NAN, sla, wt};
    }
}

/* The greedy optimum of concave lists with breakpoints on the 1 W grid, at integer budget b:
 * whole segments by slope (the relaxation has no fractional job when every job has 1 GPU). */
static int cmp_desc(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? 1 : a > b ? -1 : 0;
}

static int root_solved, root_failed;

static void root_check(int n, double b, const pfi_alloc_opts *o, double *seg, int concave)
{
    pfi_alloc_result a, r, c;
    pfi_err ea = {0}, er = {0};
    int rca = pfi_alloc_solve(rjobs, n, b, o, &a, &ea);
    /* built with job 0's throughputs halved, then given them back: its hull is made again,
     * and the root selects as every node does (nothing made with the old hulls is read) */
    pfi_alloc_ws *w = NULL;
    for (int i = 0; i < rjobs[0].n_points; i++)
        rtput[0][i] *= 0.5;
    int rcr = pfi_alloc_ws_new(rjobs, n, b, o, &w, &er);
    for (int i = 0; i < rjobs[0].n_points; i++)
        rtput[0][i] *= 2;
    if (rcr == PFI_OK) {
        assert_int_equal(pfi_alloc_ws_update_job(w, 0, &er), PFI_OK);
        rcr = pfi_alloc_ws_solve(w, b, &r, &er);
    } else
        memset(&r, 0, sizeof r);
    if (rca == PFI_OK && concave) { /* 1 W steps of 1-GPU jobs, steepest first */
        int ns = 0;
        double v = 0, left = b;
        for (int j = 0; j < n; j++) {
            const pfi_alloc_job *J = &rjobs[j];
            v += J->tput[0] * J->weight;
            left -= J->cap_w[0];
            for (int i = 0; i + 1 < J->n_points; i++)
                for (double x = J->cap_w[i]; x < J->cap_w[i + 1]; x++)
                    seg[ns++] = (J->tput[i + 1] - J->tput[i]) * J->weight /
                                (J->cap_w[i + 1] - J->cap_w[i]);
        }
        qsort(seg, (size_t)ns, sizeof *seg, cmp_desc);
        for (int t = 0; t < ns && left >= 1 && seg[t] > 0; t++, left--)
            v += seg[t];
        if (!(fabs(a.value - v) <= 1e-9 * fabs(v)))
            fail_msg("greedy %.17g solver %.17g", v, a.value);
    }
    int solved = 0;
    root_failed += rca != PFI_OK;
    same_result(rca, &a, &ea, rcr, &r, &er, &(inst){.n = n}, b, o, &solved);
    root_solved += solved;
    if (w && rcr == PFI_OK) { /* a solve once the index is sorted reads it */
        int rcc = PFI_OK;
        memset(&c, 0, sizeof c);
        for (int s = 1; s < PFI_ALLOC_INDEX_SOLVES && rcc == PFI_OK; s++) {
            pfi_alloc_result_free(&c);
            rcc = pfi_alloc_ws_solve(w, b, &c, &er);
        }
        assert_int_equal(rcc, PFI_OK);
        int rcf = pfi_alloc_solve(rjobs, n, b, o, &a, &ea);
        assert_int_equal(rcf, PFI_OK);
        same_answer(&a, &c);
        pfi_alloc_result_free(&a);
        pfi_alloc_result_free(&c);
    }
    pfi_alloc_ws_free(w);
}

static void test_root_select_exact(void **state)
{
    (void)state;
    static double seg[RN * 800];
    rng_state = 7;
    int ns[] = {4095, 4096, RN};
    for (int kind = 0; kind < 4; kind++)
        for (int t = 0; t < 3; t++) {
            int n = ns[t];
            if (kind > 0 && t < 2)
                continue;
            root_inst(kind, n);
            pfi_alloc_opts o;
            pfi_alloc_opts_default(&o);
            if (kind == 3) /* SLAs that no budget below the floors meets: loosened */
                o.on_infeasible = PFI_INFEASIBLE_RELAX;
            double lo = 0, hi = 0, g = 0, g1 = 0;
            for (int j = 0; j < n; j++) {
                lo += rjobs[j].n_gpus * rjobs[j].cap_w[0];
                hi += rjobs[j].n_gpus * rjobs[j].max_cap_w;
                g += rjobs[j].n_gpus;
                g1 += j < n / 3 ? rjobs[j].n_gpus : 0;
            }
            /* the floors, segment ends (all jobs, or the first third, a step further), inside
             * a tie, the top, past it, and below the floors */
            double bs[] = {lo, lo + 100 * g, lo + 100 * g + 100 * g1, lo + 100 * g + 37 * g1 + 1,
                           lo + 200 * g, lo + 0.37 * (hi - lo), hi, hi + 1, lo - 1};
            for (int i = 0; i < 9; i++)
                if (bs[i] > 0 && (kind == 0 || i != 2))
                    root_check(n, bs[i], &o, seg, 0);
        }
    /* concave, 1 GPU each, breakpoints on the grid: against the greedy optimum */
    root_inst(1, RN);
    for (int j = 0; j < RN; j++)
        rjobs[j].n_gpus = 1;
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    for (int i = 1; i < 4; i++)
        root_check(RN, 100.0 * RN + 40.0 * RN * i, &o, seg, 1);
    printf("root selection: %d solves the same, %d errors the same\n", root_solved, root_failed);
    assert_true(root_solved >= 40 && root_failed >= 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warm_concave), cmocka_unit_test(test_update_in_place),
        cmocka_unit_test(test_warm_nonconcave),
        cmocka_unit_test(test_warm_bad_job),
        cmocka_unit_test(test_keep),
        cmocka_unit_test(test_warm_large),
        cmocka_unit_test(test_warm_grow),
        cmocka_unit_test(test_warm_flat),
        cmocka_unit_test(test_arrive_leave_concave),
        cmocka_unit_test(test_arrive_leave_nonconcave),
        cmocka_unit_test(test_arrive_leave_large),
        cmocka_unit_test(test_keep_arrive_leave),
        cmocka_unit_test(test_leave_many),
        cmocka_unit_test(test_root_select_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
