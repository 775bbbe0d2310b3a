/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of a result refilled in place (core/alloc.h pfi_alloc_ws_solve_reuse, and the keeper's
 * pfi_alloc_keep_put_back in core/alloc_keep.h): two workspaces take the same calls (new
 * budgets, new lists longer and shorter, a job's new curve, jobs arriving and leaving, every
 * infeasibility mode, errors), one answering into fresh results, the other into one result it
 * refills; every field must be the same bit for bit, the refilled arrays must be the very ones
 * handed in while they hold the jobs (cap_n), new ones once they do not, and an error must
 * leave the result freed and zeroed. */
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
#include "core/pfi.h"
#include "support/alloc_fleet.h"

#define MAXJ 80
#define MAXP 8

typedef struct fleet {
    int n;
    pfi_alloc_job jobs[MAXJ];
    double caps[MAXJ][MAXP], tput[MAXJ][MAXP];
    char ids[MAXJ][8];
} fleet;

static unsigned long long rng = 1919;

static double urand(void)
{
    return pfi_rand_uniform(&rng);
}

static int irand(int lo, int hi) /* inclusive */
{
    return lo + (int)(urand() * (hi - lo + 1));
}

/* Job j of F: a curve concave or not, SLAs on some (tight enough that a short budget must
 * relax or drop them), weights on some. */
static void make_job(fleet *F, int j, int serial)
{
    pfi_alloc_job *J = &F->jobs[j];
    int np = irand(2, MAXP);
    double x = 150 + 60 * urand(), t = 100 + 50 * urand(), s = 0.5 + urand();
    int concave = urand() < 0.6;
    for (int i = 0; i < np; i++) {
        if (i > 0)
            x += 30 + 80 * urand();
        F->caps[j][i] = x;
    }
    alloc_curve_tput(F->tput[j], F->caps[j], np, concave, t, s, &rng);
    snprintf(F->ids[j], sizeof F->ids[j], "j%d", serial);
    J->id = F->ids[j];
    J->n_gpus = irand(1, 8);
    J->cap_w = F->caps[j];
    J->tput = F->tput[j];
    J->n_points = np;
    J->min_cap_w = F->caps[j][0] + 10 * urand();
    J->max_cap_w = F->caps[j][np - 1] - 10 * urand();
    J->p0_w = J->max_cap_w;
    J->t0 = NAN;
    J->sla = urand() < 0.4 ? 0.3 * urand() : NAN;
    J->weight = urand() < 0.5 ? 1.0 : 0.5 + 1.5 * urand();
}

static void make_fleet(fleet *F, int n, int *serial)
{
    memset(F, 0, sizeof *F);
    F->n = n;
    for (int j = 0; j < n; j++)
        make_job(F, j, (*serial)++);
}

/* The jobs' pointers back into F's own arrays after its rows moved. */
static void repoint(fleet *F)
{
    for (int j = 0; j < F->n; j++) {
        F->jobs[j].id = F->ids[j];
        F->jobs[j].cap_w = F->caps[j];
        F->jobs[j].tput = F->tput[j];
    }
}

static void insert_job(fleet *F, int at, int *serial)
{
    size_t rows = (size_t)(F->n - at);
    memmove(&F->jobs[at + 1], &F->jobs[at], rows * sizeof F->jobs[0]);
    memmove(F->caps[at + 1], F->caps[at], rows * sizeof F->caps[0]);
    memmove(F->tput[at + 1], F->tput[at], rows * sizeof F->tput[0]);
    memmove(F->ids[at + 1], F->ids[at], rows * sizeof F->ids[0]);
    F->n++;
    make_job(F, at, (*serial)++);
    repoint(F);
}

static void remove_job(fleet *F, int at)
{
    size_t rows = (size_t)(F->n - at - 1);
    memmove(&F->jobs[at], &F->jobs[at + 1], rows * sizeof F->jobs[0]);
    memmove(F->caps[at], F->caps[at + 1], rows * sizeof F->caps[0]);
    memmove(F->tput[at], F->tput[at + 1], rows * sizeof F->tput[0]);
    memmove(F->ids[at], F->ids[at + 1], rows * sizeof F->ids[0]);
    F->n--;
    repoint(F);
}

static double floor_sum(const fleet *F)
{
    double s = 0;
    for (int j = 0; j < F->n; j++)
        s += F->jobs[j].n_gpus * fmax(F->jobs[j].min_cap_w, F->jobs[j].cap_w[0]);
    return s;
}

static double top_sum(const fleet *F)
{
    double s = 0;
    for (int j = 0; j < F->n; j++)
        s += F->jobs[j].n_gpus * F->jobs[j].max_cap_w;
    return s;
}

/* A budget from below every floor (infeasible, or SLAs to relax or drop) to above every top. */
static double draw_budget(const fleet *F)
{
    double lo = floor_sum(F), hi = top_sum(F), u = urand();
    return u < 0.1 ? 0.8 * lo : u < 0.95 ? lo + (hi - lo) * urand() : 1.1 * hi;
}

static int same_double(double x, double y)
{
    return memcmp(&x, &y, sizeof x) == 0;
}

/* r (refilled) and f (fresh) the same, bit for bit: codes, messages, every field. */
static void same(int rc_r, const pfi_err *er, const pfi_alloc_result *r, int rc_f,
                 const pfi_err *ef, const pfi_alloc_result *f)
{
    assert_int_equal(rc_r, rc_f);
    if (rc_r) {
        assert_string_equal(er->msg, ef->msg);
        return;
    }
    assert_int_equal(r->n, f->n);
    for (int j = 0; j < f->n; j++) {
        assert_true(same_double(r->cap_w[j], f->cap_w[j]));
        assert_true(same_double(r->tput[j], f->tput[j]));
        assert_true(same_double(r->floor_w[j], f->floor_w[j]));
        assert_true(same_double(r->sla[j], f->sla[j]));
        assert_int_equal(r->flags[j], f->flags[j]);
    }
    const double dr[] = {r->budget_w, r->power_w, r->value, r->upper_bound, r->min_budget_w,
                         r->min_budget_nosla_w, r->sla_extra};
    const double df[] = {f->budget_w, f->power_w, f->value, f->upper_bound, f->min_budget_w,
                         f->min_budget_nosla_w, f->sla_extra};
    for (size_t i = 0; i < sizeof dr / sizeof dr[0]; i++)
        assert_true(same_double(dr[i], df[i]));
    assert_int_equal(r->optimal, f->optimal);
    assert_int_equal(r->budget_binds, f->budget_binds);
    assert_int_equal(r->n_sla_dropped, f->n_sla_dropped);
    assert_true(r->nodes == f->nodes);
}

/* One call on both workspaces at budget b: fresh into f, refilled into *r.  Checks the answers
 * and where the refilled arrays came from. */
static void solve_both(pfi_alloc_ws *wf, pfi_alloc_ws *wr, double b, pfi_alloc_result *r,
                       int *kept, int *moved)
{
    pfi_alloc_result f, before = *r;
    pfi_err ef = {0}, er = {0};
    int room = before.cap_n > before.n ? before.cap_n : before.n;
    int rc_f = pfi_alloc_ws_solve(wf, b, &f, &ef);
    int rc_r = pfi_alloc_ws_solve_reuse(wr, b, r, &er);
    same(rc_r, &er, r, rc_f, &ef, &f);
    if (rc_r) { /* freed and zeroed */
        assert_null(r->cap_w);
        assert_null(r->tput);
        assert_null(r->floor_w);
        assert_null(r->sla);
        assert_null(r->flags);
        assert_int_equal(r->n, 0);
        assert_int_equal(r->cap_n, 0);
        return;
    }
    if (before.cap_w && room >= r->n) { /* it fits: the very arrays handed in */
        assert_ptr_equal(r->cap_w, before.cap_w);
        assert_ptr_equal(r->tput, before.tput);
        assert_ptr_equal(r->floor_w, before.floor_w);
        assert_ptr_equal(r->sla, before.sla);
        assert_ptr_equal(r->flags, before.flags);
        assert_int_equal(r->cap_n, room);
        (*kept)++;
    } else { /* new ones, the old ones freed (a leak shows under the sanitizer) */
        assert_true(r->cap_w != before.cap_w || !before.cap_w);
        assert_int_equal(r->cap_n, r->n);
        (*moved)++;
    }
    pfi_alloc_result_free(&f);
}

/* Random runs of calls on two workspaces, one result refilled all along. */
static void reuse_run(int mode, unsigned long long seed, int runs)
{
    rng = seed;
    static fleet F;
    int serial = 0, kept = 0, moved = 0, solved = 0;
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.on_infeasible = mode;
    pfi_alloc_result r;
    memset(&r, 0, sizeof r);
    for (int run = 0; run < runs; run++) {
        o.step_w = urand() < 0.7 ? 1 : 5;
        make_fleet(&F, irand(1, MAXJ / 2), &serial);
        pfi_alloc_ws *wf = NULL, *wr = NULL;
        double b = draw_budget(&F);
        pfi_err e1 = {0}, e2 = {0};
        int rc1 = pfi_alloc_ws_new(F.jobs, F.n, b, &o, &wf, &e1);
        int rc2 = pfi_alloc_ws_new(F.jobs, F.n, b, &o, &wr, &e2);
        assert_int_equal(rc1, rc2);
        if (rc1)
            continue;
        for (int step = 0; step < 12; step++) {
            int what = irand(0, 4);
            b = draw_budget(&F);
            if (what == 1) { /* a new list, longer or shorter */
                make_fleet(&F, irand(1, MAXJ - 1), &serial);
                rc1 = pfi_alloc_ws_set_jobs(wf, F.jobs, F.n, b, &e1);
                rc2 = pfi_alloc_ws_set_jobs(wr, F.jobs, F.n, b, &e2);
            } else if (what == 2) { /* one job's curve */
                int j = irand(0, F.n - 1);
                for (int i = 0; i < F.jobs[j].n_points; i++)
                    F.tput[j][i] *= 0.9 + 0.2 * urand();
                rc1 = pfi_alloc_ws_update_job(wf, j, &e1);
                rc2 = pfi_alloc_ws_update_job(wr, j, &e2);
            } else if (what == 3 && F.n < MAXJ) { /* a job arrives */
                int j = irand(0, F.n);
                insert_job(&F, j, &serial);
                rc1 = pfi_alloc_ws_add_job(wf, F.jobs, F.n, j, &e1);
                rc2 = pfi_alloc_ws_add_job(wr, F.jobs, F.n, j, &e2);
            } else if (what == 4 && F.n > 1) { /* a job leaves */
                int j = irand(0, F.n - 1);
                remove_job(&F, j);
                rc1 = pfi_alloc_ws_remove_job(wf, F.jobs, F.n, j, &e1);
                rc2 = pfi_alloc_ws_remove_job(wr, F.jobs, F.n, j, &e2);
            } else {
                rc1 = rc2 = PFI_OK; /* a new budget alone */
            }
            assert_int_equal(rc1, rc2);
            if (rc1)
                break;
            if (urand() < 0.05)
                b = -1; /* a bad budget: an error, the result freed */
            solve_both(wf, wr, b, &r, &kept, &moved);
            solved += r.cap_w != NULL;
        }
        pfi_alloc_ws_free(wf);
        pfi_alloc_ws_free(wr);
    }
    pfi_alloc_result_free(&r);
    /* the runs reached both ways, and answers */
    assert_true(kept > runs);
    assert_true(moved > runs / 2);
    assert_true(solved > runs * 2);
}

static void test_reuse_fail(void **state)
{
    (void)state;
    reuse_run(PFI_INFEASIBLE_FAIL, 11, 150);
}

static void test_reuse_relax(void **state)
{
    (void)state;
    reuse_run(PFI_INFEASIBLE_RELAX, 12, 150);
}

static void test_reuse_by_weight(void **state)
{
    (void)state;
    reuse_run(PFI_INFEASIBLE_BY_WEIGHT, 13, 150);
}

/* A result of the one-shot solver (whose arrays are the workspace's it took), then shorter
 * and longer lists: refilled while it holds the jobs, cap_n remembering what it holds. */
static void test_reuse_capacity(void **state)
{
    (void)state;
    rng = 77;
    static fleet F;
    int serial = 0;
    make_fleet(&F, 40, &serial);
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    double b = 0.5 * (floor_sum(&F) + top_sum(&F));
    pfi_alloc_result r, f;
    pfi_err e = {0};
    int rc = pfi_alloc_solve(F.jobs, F.n, b, &o, &r, &e);
    if (rc)
        fail_msg("%s", e.msg);
    assert_int_equal(r.cap_n, 0); /* 0: its arrays hold n */
    double *cap = r.cap_w;
    pfi_alloc_ws *w;
    assert_int_equal(pfi_alloc_ws_new(F.jobs, 25, b, &o, &w, &e), PFI_OK);
    assert_int_equal(pfi_alloc_ws_solve_reuse(w, b, &r, &e), PFI_OK);
    assert_ptr_equal(r.cap_w, cap);
    assert_int_equal(r.n, 25);
    assert_int_equal(r.cap_n, 40);
    assert_int_equal(pfi_alloc_ws_solve(w, b, &f, &e), PFI_OK);
    pfi_err e2 = {0};
    same(PFI_OK, &e, &r, PFI_OK, &e2, &f);
    pfi_alloc_result_free(&f);
    /* back to 40 jobs: still the same arrays */
    assert_int_equal(pfi_alloc_ws_set_jobs(w, F.jobs, 40, b, &e), PFI_OK);
    assert_int_equal(pfi_alloc_ws_solve_reuse(w, b, &r, &e), PFI_OK);
    assert_ptr_equal(r.cap_w, cap);
    assert_int_equal(r.cap_n, 40);
    assert_int_equal(pfi_alloc_ws_solve(w, b, &f, &e), PFI_OK);
    same(PFI_OK, &e, &r, PFI_OK, &e2, &f);
    pfi_alloc_result_free(&f);
    /* 41: new arrays */
    insert_job(&F, 40, &serial);
    assert_int_equal(pfi_alloc_ws_add_job(w, F.jobs, 41, 40, &e), PFI_OK);
    assert_int_equal(pfi_alloc_ws_solve_reuse(w, b, &r, &e), PFI_OK);
    assert_true(r.cap_w != cap);
    assert_int_equal(r.n, 41);
    assert_int_equal(r.cap_n, 41);
    assert_int_equal(pfi_alloc_ws_solve(w, b, &f, &e), PFI_OK);
    same(PFI_OK, &e, &r, PFI_OK, &e2, &f);
    pfi_alloc_result_free(&f);
    /* an infeasible budget: an error, the result freed and zeroed */
    assert_int_equal(pfi_alloc_ws_solve_reuse(w, 0.5 * floor_sum(&F), &r, &e),
                     PFI_EINFEASIBLE);
    assert_null(r.cap_w);
    assert_int_equal(r.cap_n, 0);
    /* a zeroed result: new arrays */
    assert_int_equal(pfi_alloc_ws_solve_reuse(w, b, &r, &e), PFI_OK);
    assert_int_equal(r.cap_n, 41);
    pfi_alloc_result_free(&r);
    pfi_alloc_ws_free(w);
}

/* The keeper: a result handed back is what its next warm solve refills (the same answer as a
 * fresh solve); a zeroed one handed back leaves the spare it has; NULL keeper frees. */
static void test_keep_put_back(void **state)
{
    (void)state;
    rng = 99;
    static fleet F;
    int serial = 0;
    make_fleet(&F, 30, &serial);
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    pfi_alloc_keep *k = NULL;
    pfi_alloc_result r, f, zero;
    pfi_err e = {0}, e2 = {0};
    double lo = floor_sum(&F), hi = top_sum(&F);
    assert_int_equal(pfi_alloc_keep_solve(&k, F.jobs, F.n, 0.5 * (lo + hi), &o, &r, &e), PFI_OK);
    assert_non_null(k);
    lo = r.min_budget_w; /* SLA floors included */
    int kept = 0;
    for (int i = 0; i < 40; i++) {
        double *cap = r.cap_w;
        pfi_alloc_keep_put_back(k, &r);
        assert_null(r.cap_w);
        memset(&zero, 0, sizeof zero);
        pfi_alloc_keep_put_back(k, &zero); /* nothing: the spare stays */
        if (i % 5 == 4) { /* a job's curve: still warm */
            int j = irand(0, F.n - 1);
            for (int p = 0; p < F.jobs[j].n_points; p++)
                F.tput[j][p] *= 0.9 + 0.2 * urand();
        }
        double b = lo + (hi - lo) * urand();
        assert_int_equal(pfi_alloc_keep_solve(&k, F.jobs, F.n, b, &o, &r, &e), PFI_OK);
        assert_int_equal(pfi_alloc_solve(F.jobs, F.n, b, &o, &f, &e2), PFI_OK);
        same(PFI_OK, &e, &r, PFI_OK, &e2, &f);
        pfi_alloc_result_free(&f);
        kept += r.cap_w == cap;
    }
    assert_int_equal(kept, 40);
    assert_int_equal(pfi_alloc_keep_rebuilt(k), 1);
    pfi_alloc_keep_put_back(NULL, &r); /* freed (a leak shows under the sanitizer) */
    assert_null(r.cap_w);
    pfi_alloc_keep_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse_fail),
        cmocka_unit_test(test_reuse_relax),
        cmocka_unit_test(test_reuse_by_weight),
        cmocka_unit_test(test_reuse_capacity),
        cmocka_unit_test(test_keep_put_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
