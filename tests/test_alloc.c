/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the allocator (core/alloc.h, core/policy.h): optimality against brute force on small
 * random instances, concave and not, with SLAs and weights; the budget in every test; bad input;
 * infeasible budgets and their degradation modes; the simple policies. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "core/alloc_curve.h"
#include "core/pfi.h"
#include "core/policy.h"

#define MAXJ 5
#define MAXP 8

typedef struct inst {
    int n;
    double step;
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

static void make_inst(inst *I, int concave, int with_sla)
{
    memset(I, 0, sizeof *I);
    I->n = irand(1, 4);
    I->step = urand() < 0.5 ? 1.0 : 5.0;
    for (int j = 0; j < I->n; j++) {
        pfi_alloc_job *J = &I->jobs[j];
        snprintf(I->ids[j], sizeof I->ids[j], "j%d", j);
        J->id = I->ids[j];
        J->n_gpus = irand(1, 4);
        double lo = 100 + urand() * 100;
        double hi = lo + I->step * irand(2, 13) + urand() * I->step;
        int np = irand(2, 6);
        /* caps span a little beyond the range on both sides, or start inside it */
        double x0 = lo - 20 + urand() * (20 + (hi - lo) / 2), x1 = hi + urand() * 20 - 5;
        if (x1 <= x0 + np)
            x1 = x0 + np + 1;
        for (int i = 0; i < np; i++)
            I->caps[j][i] = i == 0 ? x0 : x0 + (x1 - x0) * (i + 0.2 + 0.6 * urand()) / np;
        double t = 50 + urand() * 50, slope = 0.5 + urand();
        for (int i = 0; i < np; i++) {
            if (concave) {
                if (i > 0) {
                    slope *= urand(); /* decreasing slopes; sometimes negative at the end */
                    if (urand() < 0.15)
                        slope = -0.05 * urand();
                    t += slope * (I->caps[j][i] - I->caps[j][i - 1]);
                }
                I->tput[j][i] = t < 0 ? 0 : t;
            } else if (concave == 2) {
                /* on two lines: collinear points at non-grid caps (rounding-prone hulls) */
                double x = I->caps[j][i], knee = I->caps[j][np / 2];
                I->tput[j][i] = 100 + 3.3 * fmin(x, knee) + 0.7 * fmax(0, x - knee);
            } else
                I->tput[j][i] = 20 + urand() * 80;
        }
        if (concave) /* clamping at zero can break concavity: keep values positive instead */
            for (int i = 0; i < np; i++)
                I->tput[j][i] += 100;
        J->cap_w = I->caps[j];
        J->tput = I->tput[j];
        J->n_points = np;
        J->min_cap_w = lo;
        J->max_cap_w = hi;
        J->p0_w = hi * (0.8 + 0.2 * urand());
        J->t0 = NAN;
        J->sla = with_sla && urand() < 0.4 ? urand() * 0.3 : NAN;
        J->weight = urand() < 0.5 ? 1.0 : 0.5 + 1.5 * urand();
    }
}

static double wt(const pfi_alloc_job *J)
{
    return (isnan(J->weight) || J->weight == 0) ? 1 : J->weight;
}

/* Enumerates every grid allocation.  Returns 0 when none is feasible. */
static int brute(const inst *I, double budget, double *best)
{
    int kmin[MAXJ], kmax[MAXJ], k[MAXJ];
    for (int j = 0; j < I->n; j++) {
        const pfi_alloc_job *J = &I->jobs[j];
        int a = (int)ceil(fmax(J->min_cap_w, J->cap_w[0]) / I->step - 1e-9);
        kmax[j] = (int)floor(J->max_cap_w / I->step + 1e-9);
        kmin[j] = -1;
        double target = isnan(J->sla) ? -INFINITY
                                      : (1 - J->sla) * pfi_alloc_tput_at(J, J->max_cap_w);
        for (int kk = a; kk <= kmax[j]; kk++)
            if (pfi_alloc_tput_at(J, kk * I->step) >= target - 1e-9) {
                kmin[j] = kk;
                break;
            }
        if (kmin[j] < 0)
            return 0;
        k[j] = kmin[j];
    }
    long long bu = (long long)floor(budget / I->step * (1 + 1e-12));
    int found = 0;
    for (;;) {
        long long cost = 0;
        double v = 0;
        for (int j = 0; j < I->n; j++) {
            cost += (long long)I->jobs[j].n_gpus * k[j];
            v += wt(&I->jobs[j]) * pfi_alloc_tput_at(&I->jobs[j], k[j] * I->step);
        }
        if (cost <= bu && (!found || v > *best)) {
            *best = v;
            found = 1;
        }
        int j = 0;
        while (j < I->n && k[j] == kmax[j])
            k[j] = kmin[j], j++;
        if (j == I->n)
            break;
        k[j]++;
    }
    return found;
}

static double min_total(const inst *I)
{
    double s = 0;
    for (int j = 0; j < I->n; j++)
        s += I->jobs[j].n_gpus * fmax(I->jobs[j].min_cap_w, I->jobs[j].cap_w[0]);
    return s;
}

static double max_total(const inst *I)
{
    double s = 0;
    for (int j = 0; j < I->n; j++)
        s += I->jobs[j].n_gpus * I->jobs[j].max_cap_w;
    return s;
}

static void check_budget(const pfi_alloc_job *jobs, const pfi_alloc_result *r, double budget)
{
    double p = 0;
    for (int j = 0; j < r->n; j++)
        p += jobs[j].n_gpus * r->cap_w[j];
    assert_true(p <= budget * (1 + 1e-12)); /* rounding (pfi_alloc_budget_units), not a step */
    assert_true(fabs(p - r->power_w) <= 1e-6 * (1 + p));
}

static void optimality_run(int concave, int with_sla, int count, unsigned long long seed)
{
    rng_state = seed;
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.rel_gap = 0; /* exact */
    int solved = 0, infeasible = 0;
    for (int t = 0; t < count; t++) {
        inst I;
        make_inst(&I, concave, with_sla);
        o.step_w = I.step;
        double lo = min_total(&I), hi = max_total(&I);
        double budget = lo + (hi - lo) * (urand() * 1.1 - 0.05);
        if (budget <= 0)
            budget = 1;
        double bf = 0;
        int feasible = brute(&I, budget, &bf);
        pfi_alloc_result r;
        pfi_err e = {0};
        int rc = pfi_alloc_solve(I.jobs, I.n, budget, &o, &r, &e);
        if (!feasible) {
            if (rc != PFI_EINFEASIBLE)
                fail_msg("instance %d: brute force finds no allocation, solver rc %d: %s", t, rc, e.msg);
            assert_null(r.cap_w);
            infeasible++;
            continue;
        }
        if (rc != PFI_OK)
            fail_msg("instance %d: %s", t, e.msg);
        check_budget(I.jobs, &r, budget);
        assert_true(r.optimal);
        if (fabs(r.value - bf) > 1e-9 * (1 + fabs(bf)))
            fail_msg("instance %d (%s): solver %.12g, brute force %.12g", t,
                     concave ? "concave" : "non-concave", r.value, bf);
        assert_true(r.upper_bound >= bf - 1e-9 * (1 + fabs(bf)));
        /* every policy honours the budget and the floors */
        for (int p = 0; p < PFI_POLICY_COUNT; p++) {
            pfi_alloc_result q;
            assert_int_equal(pfi_alloc_policy(p, I.jobs, I.n, NULL, budget, &o, &q, &e), PFI_OK);
            check_budget(I.jobs, &q, budget);
            assert_true(q.value <= bf + 1e-9 * (1 + fabs(bf)));
            for (int j = 0; j < I.n; j++)
                assert_true(q.cap_w[j] >= q.floor_w[j] - 1e-9);
            pfi_alloc_result_free(&q);
        }
        pfi_alloc_result_free(&r);
        solved++;
    }
    assert_true(solved > count / 2);
    (void)infeasible;
}

static void test_optimal_concave(void **state)
{
    optimality_run(1, 0, 300, 1);
}

static void test_optimal_nonconcave(void **state)
{
    optimality_run(0, 0, 300, 2);
}

/* Jobs of equal GPU counts (a fleet of 8-GPU jobs) spend only multiples of 8 units: a budget
 * that is not one left a remainder no plan can use, which the bound counted, and the search
 * ran to its work limit (10^5-10^6 nodes, "not proven optimal") for a plan found at once.  The
 * solve is now proven optimal in a few nodes, with the plan of the budget rounded down. */
static void test_uniform_gpu_counts(void **state)
{
    (void)state;
    enum { N = 40, NP = 6 };
    static double caps[N][NP], tput[N][NP];
    static pfi_alloc_job jobs[N];
    static char ids[N][8];
    rng_state = 11;
    for (int g = 2; g <= 8; g *= 2) {
        double top = 0;
        for (int j = 0; j < N; j++) {
            double k = 80 + 300 * urand(), c = 50 + 100 * urand();
            for (int i = 0; i < NP; i++) {
                caps[j][i] = 200 + 100 * i;
                tput[j][i] = c * (1 - exp(-(caps[j][i] - 100) / k));
            }
            snprintf(ids[j], sizeof ids[j], "j%d", j);
            jobs[j] = (pfi_alloc_job){.id = ids[j], .n_gpus = g, .n_points = NP,
                                      .cap_w = caps[j], .tput = tput[j], .min_cap_w = 200,
                                      .max_cap_w = 700, .p0_w = 700, .t0 = NAN, .sla = NAN,
                                      .weight = 1};
            top += g * 700.0;
        }
        pfi_alloc_opts o;
        pfi_alloc_opts_default(&o);
        o.rel_gap = 0;
        double budget = floor(0.7 * top / g) * g + g - 1; /* g - 1 W no plan can spend */
        pfi_alloc_result r, d;
        pfi_err e = {0};
        assert_int_equal(pfi_alloc_solve(jobs, N, budget, &o, &r, &e), PFI_OK);
        assert_int_equal(pfi_alloc_solve(jobs, N, budget - (g - 1), &o, &d, &e), PFI_OK);
        if (!r.optimal || r.nodes > 100)
            fail_msg("%d GPUs each: optimal %d after %lld nodes", g, r.optimal, r.nodes);
        assert_true(fabs(r.value - d.value) <= 1e-9 * d.value);
        check_budget(jobs, &r, budget);
        pfi_alloc_result_free(&r);
        pfi_alloc_result_free(&d);
    }
}

static void test_optimal_collinear(void **state)
{
    optimality_run(2, 0, 300, 5);
}

/* Wide ranges where brute force cannot go: curves linear between non-integer breakpoints (as
 * per-GPU curves are), where hull slopes tie up to rounding.  The budget, the bound and the
 * search never losing to its own root are checked. */
static void test_collinear_wide(void **state)
{
    rng_state = 11;
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.rel_gap = 0;
    for (int t = 0; t < 200; t++) {
        enum { NJ = 6, NP = 10 };
        double caps[NJ][NP], tp[NJ][NP];
        char ids[NJ][8];
        pfi_alloc_job jobs[NJ];
        int n = irand(2, NJ);
        for (int j = 0; j < n; j++) {
            double slope = 20 + 20 * urand(), x = 200;
            for (int i = 0; i < NP; i++) {
                caps[j][i] = x;
                /* equal slopes in runs of three breakpoints, then a drop */
                tp[j][i] = i == 0 ? 1000 : tp[j][i - 1] + slope * (caps[j][i] - caps[j][i - 1]);
                if (i % 3 == 2)
                    slope *= 0.8;
                x += 37 + 21.3 * urand();
            }
            snprintf(ids[j], sizeof ids[j], "c%d", j);
            jobs[j] = (pfi_alloc_job){ids[j], irand(1, 8), 200, caps[j][NP - 1], caps[j], tp[j],
                                      NP, caps[j][NP - 1], NAN, NAN, 1};
        }
        double lo = 0, hi = 0;
        for (int j = 0; j < n; j++)
            lo += jobs[j].n_gpus * 200.0, hi += jobs[j].n_gpus * jobs[j].max_cap_w;
        double budget = lo + (hi - lo) * urand();
        pfi_alloc_result r, q;
        pfi_err e = {0};
        o.max_work = 1e6;
        assert_int_equal(pfi_alloc_solve(jobs, n, budget, &o, &r, &e), PFI_OK);
        check_budget(jobs, &r, budget);
        o.max_work = -1;
        assert_int_equal(pfi_alloc_solve(jobs, n, budget, &o, &q, &e), PFI_OK);
        check_budget(jobs, &q, budget);
        assert_true(r.value >= q.value - 1e-9 * q.value);
        assert_true(r.value <= q.upper_bound * (1 + 1e-9));
        pfi_alloc_result_free(&r);
        pfi_alloc_result_free(&q);
    }
}

static void test_optimal_with_sla(void **state)
{
    optimality_run(1, 1, 150, 3);
    optimality_run(0, 1, 150, 4);
}

/* Two identical concave jobs share the cut evenly; a flat job gives its power first. */
static void test_known_answer(void **state)
{
    double caps[] = {100, 200, 300}, lin[] = {50, 100, 150}, flat[] = {99, 100, 100};
    pfi_alloc_job jobs[2] = {
        {"steep", 1, 100, 300, caps, lin, 3, 300, NAN, NAN, 1},
        {"flat", 1, 100, 300, caps, flat, 3, 300, NAN, NAN, 1},
    };
    pfi_alloc_result r;
    pfi_err e = {0};
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    assert_int_equal(pfi_alloc_solve(jobs, 2, 400, &o, &r, &e), PFI_OK);
    /* flat loses 1 over its first 100 W, steep 0.5 per W: flat goes to 200 W... then 100 W
     * costs it only 1 more, so flat sits at its minimum and steep takes 300. */
    assert_true(fabs(r.cap_w[0] - 300) < 1e-9);
    assert_true(fabs(r.cap_w[1] - 100) < 1e-9);
    assert_true(r.optimal && r.budget_binds);
    assert_true(r.flags[1] & PFI_ALLOC_AT_MIN);
    assert_true(r.flags[0] & PFI_ALLOC_AT_MAX);
    check_budget(jobs, &r, 400);
    pfi_alloc_result_free(&r);
    /* equal: both at 400/2 = 200 W = 2/3 of P0 */
    assert_int_equal(pfi_alloc_equal(jobs, 2, 400, &o, &r, &e), PFI_OK);
    assert_true(fabs(r.cap_w[0] - 200) < 1e-9 && fabs(r.cap_w[1] - 200) < 1e-9);
    pfi_alloc_result_free(&r);
}

/* The bound of an optimal answer is value + 1e-11 x the sum of each job's largest |hull vertex|
 * (the tolerance's scale; with no relative gap) when the relaxation gains more than that, and
 * between the value and that otherwise: jobs of 3 and 2 GPUs at budgets 1 to 295 W above
 * 3 x 150 + 2 x 200 W, among which every case meets one where the relaxation gains a fraction
 * of a step no cap can take.  (Two jobs of 3 GPUs and one unit left made that gap before; that
 * unit is no longer counted: every total is a multiple of 3.)  The largest vertex is a flat tail's first point, the top of a rising curve,
 * the range's end inside a segment, or a falling curve's first point; weights scale it; the
 * jobs are summed in order. */
static void test_bound_scale(void **state)
{
    double caps[] = {100, 150, 200, 250, 300, 350};
    double rise[] = {100, 180, 240, 280, 300, 310}, flat[] = {90, 150, 200, 230, 230, 230};
    double fall[] = {300, 290, 260, 210, 140, 50};
    double wt[] = {NAN, 2.5};
    for (int c = 0; c < 10; c++) {
        const double *t = c >= 8 ? fall : c % 2 ? flat : rise;
        double hi = c / 2 % 2 ? 330 : 350, w = isnan(wt[c / 4 % 2]) ? 1 : wt[c / 4 % 2];
        pfi_alloc_job jobs[2] = {
            {"a", 3, 100, hi, caps, t, 6, 300, NAN, NAN, wt[c / 4 % 2]},
            {"b", 2, 100, 350, caps, rise, 6, 300, NAN, NAN, NAN},
        };
        pfi_err e = {0};
        pfi_alloc_opts o;
        pfi_alloc_opts_default(&o);
        o.rel_gap = 0; /* the tolerance is then the scale's alone */
        /* job a's largest vertex: its curve's largest value in its range (at 330 W the rising
         * curve is 300 + 10 x 30 / 50) */
        double top_a = c >= 8 ? 300 : c % 2 ? 230
                            : hi == 350 ? 310 : 300 + (310 - 300) * (330 - 300) / 50.0;
        double scale = 0;
        scale += w * top_a;
        scale += 310;
        int gaps = 0;
        for (int left = 1; left <= 300; left += 7) {
            pfi_alloc_result r;
            assert_int_equal(pfi_alloc_solve(jobs, 2, 3 * 150 + 2 * 200 + left, &o, &r, &e), PFI_OK);
            assert_true(r.optimal);
            /* the bound is the relaxation's, capped at value + the tolerance: exactly that
             * whenever the relaxation gains more */
            gaps += r.upper_bound == r.value + 1e-11 * scale;
            if (!(r.upper_bound >= r.value && r.upper_bound <= r.value + 1e-11 * scale))
                fail_msg("case %d, %d W left: bound %a, value %a + 1e-11 x %a = %a", c, left,
                         r.upper_bound, r.value, scale, r.value + 1e-11 * scale);
            pfi_alloc_result_free(&r);
        }
        if (!gaps)
            fail_msg("case %d: no budget left a gap: the scale is not tested", c);
    }
}

/* Duplicate ids among many: the check's table passes most slots by the top bits of their hash
 * kept with the job (below 2^24 jobs), so every way two ids can share a hash's part is tried:
 * ids of 7, 8, 9 and 16 bytes, ids differing only past the 8th byte or in the last one, equal
 * prefixes of other lengths.  Distinct ids pass; each duplicate is reported as the later job's
 * id, through pfi_alloc_validate (hashes made there) and pfi_alloc_solve (hashes made by the
 * fresh solve's pass), on lists above and below the root histogram's 4,096 jobs. */
static void test_duplicate_ids(void **state)
{
    (void)state;
    enum { N = 30000, L = 24 };
    static char ids[N][L];
    static pfi_alloc_job jobs[N];
    double caps[] = {100, 200}, t[] = {1, 2};
    for (int j = 0; j < N; j++) {
        switch (j % 5) { /* lengths 7, 8, 9, 16, and 17 sharing a 16-byte prefix */
        case 0: snprintf(ids[j], L, "%07d", j); break;
        case 1: snprintf(ids[j], L, "%08d", j); break;
        case 2: snprintf(ids[j], L, "%09d", j); break;
        case 3: snprintf(ids[j], L, "abcdefgh%08d", j); break; /* differ past the 8th byte */
        default: snprintf(ids[j], L, "abcdefghijklmnop%c", 'A' + j % 50); break;
        }
        jobs[j] = (pfi_alloc_job){ids[j], 1, 100, 200, caps, t, 2, 200, NAN, NAN, 1};
    }
    /* the 17-byte ones repeat every 250 jobs: made distinct in their last bytes */
    for (int j = 4; j < N; j += 5)
        snprintf(ids[j] + 16, L - 16, "%c%05d", 'A' + j % 50, j);
    pfi_err e = {0};
    pfi_alloc_result r;
    int ns[] = {N, 4095, 5000, 2};
    for (int c = 0; c < 4; c++) {
        int n = ns[c];
        assert_int_equal(pfi_alloc_validate(jobs, n, &e), PFI_OK);
        assert_int_equal(pfi_alloc_solve(jobs, n, 150.0 * n, NULL, &r, &e), PFI_OK);
        pfi_alloc_result_free(&r);
    }
    /* pairs (earlier, later) made equal: the later's id is named */
    int pairs[][2] = {{0, 1},      {0, N - 1}, {N - 2, N - 1}, {3, 8},   {8, 13},
                      {2, 7},      {4, 9},     {1, 20001},     {17, 12}, {29998, 3}};
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        int a = pairs[p][0], b = pairs[p][1], lo = a < b ? a : b, hi = a < b ? b : a;
        const char *keep = jobs[hi].id;
        jobs[hi].id = jobs[lo].id;
        char want[64];
        snprintf(want, sizeof want, "duplicate job id '%s'", jobs[lo].id);
        assert_int_equal(pfi_alloc_validate(jobs, N, &e), PFI_EINVAL);
        assert_string_equal(e.msg, want);
        assert_int_equal(pfi_alloc_solve(jobs, N, 150.0 * N, NULL, &r, &e), PFI_EINVAL);
        assert_string_equal(e.msg, want);
        assert_null(r.cap_w);
        jobs[hi].id = keep;
    }
    /* two duplicate pairs: the first reported is the one whose later job comes first */
    const char *k1 = jobs[500].id, *k2 = jobs[400].id;
    jobs[500].id = jobs[10].id;
    jobs[400].id = jobs[300].id;
    assert_int_equal(pfi_alloc_validate(jobs, N, &e), PFI_EINVAL);
    char want[64];
    snprintf(want, sizeof want, "duplicate job id '%s'", jobs[300].id);
    assert_string_equal(e.msg, want);
    jobs[500].id = k1;
    jobs[400].id = k2;
    /* equal text in another buffer is a duplicate too (compared, not by address) */
    char copy[L];
    memcpy(copy, ids[12345], L);
    jobs[20000].id = copy;
    assert_int_equal(pfi_alloc_validate(jobs, N, &e), PFI_EINVAL);
    snprintf(want, sizeof want, "duplicate job id '%s'", copy);
    assert_string_equal(e.msg, want);
    jobs[20000].id = ids[20000];
    assert_int_equal(pfi_alloc_validate(jobs, N, &e), PFI_OK);
}

static void test_bad_input(void **state)
{
    double caps[] = {100, 200}, t[] = {1, 2}, one[] = {100}, dec[] = {200, 100};
    pfi_alloc_job ok = {"a", 1, 100, 200, caps, t, 2, 200, NAN, NAN, 1};
    pfi_alloc_job jobs[2] = {ok, ok};
    pfi_alloc_result r;
    pfi_err e = {0};
    jobs[1].id = "a";
    assert_int_equal(pfi_alloc_solve(jobs, 2, 300, NULL, &r, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "duplicate job id 'a'"));
    assert_null(r.cap_w);
    jobs[1].id = "b";
    jobs[1].n_points = 0;
    assert_int_equal(pfi_alloc_solve(jobs, 2, 300, NULL, &r, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "job b has no curve"));
    jobs[1].cap_w = one;
    jobs[1].n_points = 1;
    assert_int_equal(pfi_alloc_solve(jobs, 2, 300, NULL, &r, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "one point"));
    jobs[1].cap_w = dec;
    jobs[1].n_points = 2;
    assert_int_equal(pfi_alloc_solve(jobs, 2, 300, NULL, &r, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "increase"));
    jobs[1] = ok;
    jobs[1].id = "b";
    assert_int_equal(pfi_alloc_solve(jobs, 2, 0, NULL, &r, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "budget"));
    assert_int_equal(pfi_alloc_solve(jobs, 2, -5, NULL, &r, &e), PFI_EINVAL);
    assert_int_equal(pfi_alloc_equal(jobs, 2, NAN, NULL, &r, &e), PFI_EINVAL);
    assert_int_equal(pfi_alloc_policy(99, jobs, 2, NULL, 300, NULL, &r, &e), PFI_EINVAL);
    assert_null(r.cap_w);
    assert_int_equal(pfi_policy_parse("fastest"), -1);
    assert_int_equal(pfi_policy_parse("proportional-to-pfi"), PFI_POLICY_PROPORTIONAL);
    jobs[1].sla = 1.5;
    assert_int_equal(pfi_alloc_solve(jobs, 2, 300, NULL, &r, &e), PFI_EINVAL);
    jobs[1].sla = NAN;
    jobs[1].p0_w = 0;
    assert_int_equal(pfi_alloc_solve(jobs, 2, 300, NULL, &r, &e), PFI_EINVAL);
    assert_int_equal(pfi_alloc_solve(jobs, 0, 300, NULL, &r, &e), PFI_EINVAL);
}

/* Errors come in the order pfi_alloc_validate then pfi_alloc_prepare give them (every job's own
 * checks, then the ids, then the grid), from a fresh solve and from a workspace that solved a
 * good list before; the workspace solves a good list again afterwards. */
static void test_error_order(void **state)
{
    double caps[] = {100, 200, 300}, t[] = {1, 2, 2.5};
    pfi_alloc_job ok = {"a", 2, 100, 300, caps, t, 3, 250, NAN, NAN, 1};
    pfi_alloc_job jobs[6];
    char ids[6][4];
    for (int j = 0; j < 6; j++) {
        jobs[j] = ok;
        snprintf(ids[j], sizeof ids[j], "j%d", j);
        jobs[j].id = ids[j];
    }
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.step_w = 7;
    pfi_alloc_ws *w;
    pfi_alloc_result r, r2;
    pfi_err e = {0}, e2 = {0};
    assert_int_equal(pfi_alloc_ws_new(jobs, 6, 2000, &o, &w, &e), PFI_OK);
    jobs[2].min_cap_w = jobs[2].max_cap_w = 150.5; /* no multiple of 7 W in 150.5..150.5 */
    jobs[4].weight = -1;
    jobs[5].id = ids[0];
    const char *want[] = {"job j4: weight -1", "duplicate job id 'j0'", "no multiple of the 7 W",
                          NULL};
    for (int k = 0; k < 4; k++) {
        int rc = pfi_alloc_solve(jobs, 6, 2000, &o, &r, &e);
        int rw = pfi_alloc_ws_set_jobs(w, jobs, 6, 2000, &e2);
        if (!want[k]) {
            assert_int_equal(rc, PFI_OK);
            assert_int_equal(rw, PFI_OK);
            assert_int_equal(pfi_alloc_ws_solve(w, 2000, &r2, &e2), PFI_OK);
            assert_memory_equal(r.cap_w, r2.cap_w, 6 * sizeof *r.cap_w);
            pfi_alloc_result_free(&r);
            pfi_alloc_result_free(&r2);
            break;
        }
        assert_int_equal(rc, PFI_EINVAL);
        assert_int_equal(rw, PFI_EINVAL);
        assert_non_null(strstr(e.msg, want[k]));
        assert_string_equal(e.msg, e2.msg);
        if (k == 0)
            jobs[4].weight = NAN;
        else if (k == 1)
            jobs[5].id = ids[5];
        else
            jobs[2] = ok, jobs[2].id = ids[2];
    }
    pfi_alloc_ws_free(w);
}

static void test_infeasible_modes(void **state)
{
    double caps[] = {100, 200}, t[] = {50, 100};
    /* SLA 10% needs >= 180 W on each; minimums alone need 200 W */
    pfi_alloc_job jobs[2] = {
        {"heavy", 1, 100, 200, caps, t, 2, 200, NAN, 0.10, 3},
        {"light", 1, 100, 200, caps, t, 2, 200, NAN, 0.10, 1},
    };
    pfi_alloc_result r;
    pfi_err e = {0};
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    assert_int_equal(pfi_alloc_solve(jobs, 2, 199, &o, &r, &e), PFI_EINFEASIBLE);
    assert_non_null(strstr(e.msg, "200 W"));
    /* 0.4 W short: told to the tenth, not "200 W is below 200 W" */
    assert_int_equal(pfi_alloc_solve(jobs, 2, 199.6, &o, &r, &e), PFI_EINFEASIBLE);
    assert_non_null(strstr(e.msg, "budget 199.6 W is below 200 W"));
    assert_int_equal(pfi_alloc_solve(jobs, 2, 300, &o, &r, &e), PFI_EINFEASIBLE);
    assert_non_null(strstr(e.msg, "minimum feasible budget 360 W"));
    assert_null(r.cap_w);

    o.on_infeasible = PFI_INFEASIBLE_BY_WEIGHT;
    assert_int_equal(pfi_alloc_solve(jobs, 2, 300, &o, &r, &e), PFI_OK);
    check_budget(jobs, &r, 300);
    assert_true(r.flags[1] & PFI_ALLOC_SLA_DROPPED);
    assert_false(r.flags[0] & PFI_ALLOC_SLA_DROPPED);
    assert_true(r.cap_w[0] >= 180 - 1e-9);
    assert_int_equal(r.n_sla_dropped, 1);
    assert_true(fabs(r.min_budget_w - 360) < 1e-9 && fabs(r.min_budget_nosla_w - 200) < 1e-9);
    pfi_alloc_result_free(&r);

    o.on_infeasible = PFI_INFEASIBLE_RELAX;
    assert_int_equal(pfi_alloc_solve(jobs, 2, 300, &o, &r, &e), PFI_OK);
    check_budget(jobs, &r, 300);
    /* 150 W each meets 25% slowdown: the least uniform relaxation is +15% */
    assert_true(fabs(r.sla_extra - 0.15) < 1e-6);
    assert_true((r.flags[0] & PFI_ALLOC_SLA_RELAXED) && (r.flags[1] & PFI_ALLOC_SLA_RELAXED));
    assert_true(fabs(r.cap_w[0] - 150) < 1e-9 && fabs(r.cap_w[1] - 150) < 1e-9);
    pfi_alloc_result_free(&r);

    /* an SLA above what the curve ever reaches */
    jobs[0].t0 = 500;
    o.on_infeasible = PFI_INFEASIBLE_FAIL;
    assert_int_equal(pfi_alloc_solve(jobs, 2, 400, &o, &r, &e), PFI_EINFEASIBLE);
    assert_non_null(strstr(e.msg, "heavy cannot meet its SLA"));
    o.on_infeasible = PFI_INFEASIBLE_BY_WEIGHT;
    assert_int_equal(pfi_alloc_solve(jobs, 2, 400, &o, &r, &e), PFI_OK);
    assert_true(r.flags[0] & PFI_ALLOC_SLA_DROPPED);
    check_budget(jobs, &r, 400);
    pfi_alloc_result_free(&r);
}

/* Many concave jobs: the bound certifies the answer; the no-search mode stays in budget. */
/* Results a and b equal to the last bit (field by field; error texts when both fail). */
static void assert_same_result(int rc_a, const pfi_alloc_result *a, const pfi_err *ea, int rc_b,
                               const pfi_alloc_result *b, const pfi_err *eb, int t)
{
    if (rc_a != rc_b)
        fail_msg("instance %d: rc %d / %d (%s / %s)", t, rc_a, rc_b, ea->msg, eb->msg);
    if (rc_a) {
        assert_string_equal(ea->msg, eb->msg);
        return;
    }
    size_t n = (size_t)a->n;
    assert_int_equal(a->n, b->n);
    if (memcmp(a->cap_w, b->cap_w, n * sizeof *a->cap_w) ||
        memcmp(a->tput, b->tput, n * sizeof *a->tput) ||
        memcmp(a->floor_w, b->floor_w, n * sizeof *a->floor_w) ||
        memcmp(a->sla, b->sla, n * sizeof *a->sla) ||
        memcmp(a->flags, b->flags, n * sizeof *a->flags))
        fail_msg("instance %d: per-job results differ", t);
    double da[] = {a->power_w, a->value, a->upper_bound, a->min_budget_w, a->min_budget_nosla_w,
                   a->sla_extra};
    double db[] = {b->power_w, b->value, b->upper_bound, b->min_budget_w, b->min_budget_nosla_w,
                   b->sla_extra};
    if (memcmp(da, db, sizeof da))
        fail_msg("instance %d: value %a / %a, bound %a / %a", t, a->value, b->value,
                 a->upper_bound, b->upper_bound);
    assert_int_equal(a->optimal, b->optimal);
    assert_int_equal(a->budget_binds, b->budget_binds);
    assert_int_equal(a->n_sla_dropped, b->n_sla_dropped);
    assert_int_equal(a->nodes, b->nodes);
}

/* Curves whose breakpoints all lie on the grid are hulled without interpolating at them (a
 * pass of its own).  The same curves with one more point past the range, off the grid and at
 * the last throughput (the same function to the last bit, but hulled by the general pass),
 * must give the same results bit for bit: concave, collinear runs (equal slopes), flat tails,
 * non-concave (branch and bound on sub-ranges), huge and tiny throughputs, ranges starting and
 * ending between breakpoints or past the curve, SLA floors inside the curve, weights, grids of
 * 1, 5, 3, 0.25 and 2 W; one-shot solves and a workspace with a curve changed. */
static void test_on_grid_hulls(void **state)
{
    enum { N = 40, P = 9 };
    static const double steps[] = {1, 5, 0.25, 3, 2};
    static pfi_alloc_job A[N], B[N];
    static double ca[N][P], ta[N][P], cb[N][P + 1], tb[N][P + 1];
    static char ids[N][8];
    rng_state = 19;
    int compared = 0;
    for (int t = 0; t < 150; t++) {
        double step = steps[t % 5];
        int n = irand(1, N), kind = irand(0, 4);
        for (int j = 0; j < n; j++) {
            int np = irand(2, P), k = irand(1, 80);
            int kj = kind == 4 ? irand(0, 3) : kind;
            double scale = kj == 3 ? (urand() < 0.5 ? 1e12 : 1e-200) : 1;
            double v = (urand() < 0.1 ? 0 : 10 + 100 * urand()) * scale;
            double s = (0.5 + 2 * urand()) * scale;
            for (int i = 0; i < np; i++) {
                ca[j][i] = k * step;
                ta[j][i] = v;
                int dk = kj == 1 ? 5 : irand(1, 12);
                k += dk;
                if (kj == 2)
                    v = (10 + 100 * urand()) * scale;
                else
                    v += s * dk;
                if (kj == 1) /* runs of equal slopes, then flat */
                    s = urand() < 0.6 ? s : urand() < 0.5 ? 0 : s * 0.5;
                else
                    s *= urand();
            }
            double first = ca[j][0], last = ca[j][np - 1];
            double lo = urand() < 0.5 ? first : first + step * irand(0, (int)((last - first) / step / 2));
            if (urand() < 0.3)
                lo += 0.37 * step; /* between grid points */
            double hi = urand() < 0.3 ? last + step * irand(0, 20) : lo + (last - lo) * urand();
            if (urand() < 0.3)
                hi += 0.61 * step;
            if (hi < lo + step)
                hi = lo + step;
            snprintf(ids[j], sizeof ids[j], "j%d", j);
            A[j] = (pfi_alloc_job){ids[j], irand(1, 8), lo, hi, ca[j], ta[j], np,
                                   hi * (0.8 + 0.2 * urand()), NAN,
                                   urand() < 0.3 ? 0.3 * urand() : NAN,
                                   urand() < 0.5 ? 1.0 : 0.5 + 1.5 * urand()};
            /* the extra point: past the range's end and the curve's, half a step off the grid */
            memcpy(cb[j], ca[j], (size_t)np * sizeof **ca);
            memcpy(tb[j], ta[j], (size_t)np * sizeof **ta);
            cb[j][np] = (floor(fmax(hi, last) / step) + 8.5) * step;
            tb[j][np] = ta[j][np - 1];
            B[j] = A[j];
            B[j].cap_w = cb[j];
            B[j].tput = tb[j];
            B[j].n_points = np + 1;
        }
        pfi_alloc_opts o;
        pfi_alloc_opts_default(&o);
        o.step_w = step;
        o.on_infeasible = irand(0, 2);
        o.rel_gap = urand() < 0.5 ? 0 : 1e-6;
        double lo = 0, hi = 0;
        for (int j = 0; j < n; j++) {
            lo += A[j].n_gpus * fmax(A[j].min_cap_w, A[j].cap_w[0]);
            hi += A[j].n_gpus * A[j].max_cap_w;
        }
        double budgets[] = {lo, hi, lo + (hi - lo) * urand(), lo + (hi - lo) * urand(),
                            floor(lo + (hi - lo) * 0.5), lo - step, hi + step};
        pfi_alloc_ws *wa = NULL, *wb = NULL;
        pfi_err ea = {0}, eb = {0};
        int rca = pfi_alloc_ws_new(A, n, budgets[2], &o, &wa, &ea);
        int rcb = pfi_alloc_ws_new(B, n, budgets[2], &o, &wb, &eb);
        assert_int_equal(rca, rcb);
        for (int i = 0; i < 7; i++) {
            if (!(budgets[i] > 0))
                continue;
            pfi_alloc_result ra, rb;
            rca = pfi_alloc_solve(A, n, budgets[i], &o, &ra, &ea);
            rcb = pfi_alloc_solve(B, n, budgets[i], &o, &rb, &eb);
            assert_same_result(rca, &ra, &ea, rcb, &rb, &eb, t);
            if (!rca) {
                pfi_alloc_result_free(&ra);
                pfi_alloc_result_free(&rb);
            }
            compared++;
            if (!wa)
                continue;
            if (i == 4) { /* one curve scaled, in both lists */
                int j = irand(0, n - 1);
                for (int q = 0; q < A[j].n_points; q++)
                    ta[j][q] *= 0.75, tb[j][q] *= 0.75;
                tb[j][A[j].n_points] *= 0.75;
                rca = pfi_alloc_ws_update_job(wa, j, &ea);
                rcb = pfi_alloc_ws_update_job(wb, j, &eb);
                assert_int_equal(rca, rcb);
            }
            rca = pfi_alloc_ws_solve(wa, budgets[i], &ra, &ea);
            rcb = pfi_alloc_ws_solve(wb, budgets[i], &rb, &eb);
            assert_same_result(rca, &ra, &ea, rcb, &rb, &eb, t);
            if (!rca) {
                pfi_alloc_result_free(&ra);
                pfi_alloc_result_free(&rb);
            }
            compared++;
        }
        pfi_alloc_ws_free(wa);
        pfi_alloc_ws_free(wb);
    }
    assert_true(compared > 1000);
}

static void test_many_jobs(void **state)
{
    enum { N = 3000, P = 6 };
    rng_state = 7;
    pfi_alloc_job *jobs = calloc(N, sizeof *jobs);
    double *caps = malloc(N * P * sizeof *caps), *tp = malloc(N * P * sizeof *tp);
    char(*ids)[16] = malloc(N * sizeof *ids);
    for (int j = 0; j < N; j++) {
        snprintf(ids[j], sizeof ids[j], "job-%d", j);
        double slope = 1 + urand(), t = 1000;
        for (int i = 0; i < P; i++) {
            caps[j * P + i] = 200 + 100 * i;
            if (i > 0)
                t += slope * 100, slope *= 0.3 + 0.6 * urand();
            tp[j * P + i] = t;
        }
        jobs[j] = (pfi_alloc_job){ids[j], irand(1, 32), 200, 700, caps + j * P, tp + j * P, P,
                                  650, NAN, urand() < 0.2 ? 0.1 : NAN, 1};
    }
    double budget = pfi_alloc_budget_from_cut(jobs, N, 0.3);
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    pfi_alloc_result r;
    pfi_err e = {0};
    assert_int_equal(pfi_alloc_solve(jobs, N, budget, &o, &r, &e), PFI_OK);
    check_budget(jobs, &r, budget);
    assert_true(r.value >= r.upper_bound * (1 - 1e-6));
    double v1 = r.value;
    pfi_alloc_result_free(&r);
    assert_int_equal(pfi_alloc_solve(jobs, N, budget, &o, &r, &e), PFI_OK);
    check_budget(jobs, &r, budget);
    assert_true(r.value <= v1 + 1e-9 * v1 && r.value <= r.upper_bound);
    assert_true(r.value >= r.upper_bound * (1 - 1e-4));
    pfi_alloc_result_free(&r);
    assert_int_equal(pfi_alloc_equal(jobs, N, budget, &o, &r, &e), PFI_OK);
    check_budget(jobs, &r, budget);
    assert_true(r.value < v1);
    pfi_alloc_result_free(&r);
    free(jobs);
    free(caps);
    free(tp);
    free(ids);
}

static void test_equal_floors(void **state)
{
    double caps[] = {150, 300}, t[] = {1, 2};
    /* P0 400 W: at a 30% cut equal gives 280 W; the second job's floor 250 W holds it up */
    pfi_alloc_job jobs[2] = {
        {"a", 2, 150, 400, caps, t, 2, 400, NAN, NAN, 1},
        {"b", 2, 250, 400, caps, t, 2, 300, NAN, NAN, 1},
    };
    pfi_alloc_result r;
    pfi_err e = {0};
    assert_int_equal(pfi_alloc_equal(jobs, 1, pfi_alloc_budget_from_cut(jobs, 1, 0.3), NULL, &r,
                                     &e),
                     PFI_OK);
    assert_true(fabs(r.cap_w[0] - 280) < 1e-9);
    pfi_alloc_result_free(&r);
    double b = pfi_alloc_budget_from_cut(jobs, 2, 0.3); /* 0.7 * (800 + 600) = 980 */
    assert_int_equal(pfi_alloc_equal(jobs, 2, b, NULL, &r, &e), PFI_OK);
    assert_true(fabs(r.cap_w[1] - 250) < 1e-9);
    assert_true(r.flags[1] & PFI_ALLOC_AT_MIN);
    assert_true(fabs(r.cap_w[0] - 240) < 1e-9); /* (980 - 500) / 2 */
    check_budget(jobs, &r, b);
    pfi_alloc_result_free(&r);
}

/* The budget's count of grid steps: a step within 1e-12 of the budget is taken (rounding: what
 * the daemon hands over is a difference, 100 W left reading 99.99999999999977 W), one further
 * out is not; a count past 2^63 (a budget of 1e9 W on a 1e-10 W grid) overflowed to "budget
 * 1e9 W is below 0.1 W".  A budget short of the need says a need it meets (12345.6 W was
 * "below 12345.6 W"). */
static void test_budget_units(void **state)
{
    (void)state;
    double caps[] = {500, 2000}, t[] = {1, 2};
    pfi_alloc_job job = {"a", 1, 500, 2000, caps, t, 2, 2000, NAN, NAN, 1};
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    pfi_alloc_result r;
    pfi_err e = {0};
    /* within 1e-12 of 1000 W: 1000 W; 1e-8 short: 999 W */
    const double budgets[] = {1000 * (1 - 5e-13), 1000 - 1e-8, 1130.8 - 3 * 343.6 + 900,
                              1234 - 1e-6};
    const double want[] = {1000, 999, 1000, 1233};
    for (size_t i = 0; i < sizeof budgets / sizeof *budgets; i++) {
        for (int pol = 0; pol < 2; pol++) {
            int rc = pol ? pfi_alloc_equal(&job, 1, budgets[i], &o, &r, &e)
                         : pfi_alloc_solve(&job, 1, budgets[i], &o, &r, &e);
            assert_int_equal(rc, PFI_OK);
            if (!(r.cap_w[0] == want[i] && r.cap_w[0] <= budgets[i] * (1 + 1e-12)))
                fail_msg("%s: budget %.17g W: cap %.17g W, want %g W", pol ? "equal" : "oracle",
                         budgets[i], r.cap_w[0], want[i]);
            pfi_alloc_result_free(&r);
        }
    }
    /* 1e-12 of a budget of 1e12 steps is a whole step: never taken */
    assert_int_equal(pfi_alloc_budget_units(1e12 - 0.5, 1), 999999999999LL);
    assert_true(pfi_alloc_budget_units(9007199254740991.0, 1) <= 9007199254740992LL);
    /* what is left of 1130.8 W after three GPUs held at 343.6 W covers a 100 W minimum cap */
    double lc[] = {100, 400}, lt[] = {1, 2};
    pfi_alloc_job left = {"l", 1, 100, 400, lc, lt, 2, 400, NAN, NAN, 1};
    assert_int_equal(pfi_alloc_solve(&left, 1, 1130.8 - 3 * 343.6, &o, &r, &e), PFI_OK);
    assert_true(r.cap_w[0] == 100);
    pfi_alloc_result_free(&r);
    /* a budget a double's rounding below whole steps still takes them: 0.3 W of 0.1 W steps */
    double sc[] = {0.1, 1}, st[] = {1, 2};
    pfi_alloc_job small = {"s", 1, 0.1, 1, sc, st, 2, 1, NAN, NAN, 1};
    o.step_w = 0.1;
    assert_int_equal(pfi_alloc_solve(&small, 1, 0.3, &o, &r, &e), PFI_OK);
    assert_true(fabs(r.cap_w[0] - 0.3) < 1e-12);
    pfi_alloc_result_free(&r);
    /* warm: a workspace's new budget is counted the same way */
    o.step_w = 1;
    pfi_alloc_ws *w;
    assert_int_equal(pfi_alloc_ws_new(&job, 1, 1500, &o, &w, &e), PFI_OK);
    assert_int_equal(pfi_alloc_ws_solve(w, 1000 - 1e-8, &r, &e), PFI_OK);
    assert_true(r.cap_w[0] == 999);
    pfi_alloc_result_free(&r);
    assert_int_equal(pfi_alloc_ws_solve(w, 1e9, &r, &e), PFI_OK);
    pfi_alloc_result_free(&r);
    pfi_alloc_ws_free(w);
    /* past 2^53 steps: refused, saying so, cold and warm */
    double fc[] = {0.05, 0.1}, ft[] = {1, 2};
    pfi_alloc_job fine = {"f", 1, 0.05, 0.1, fc, ft, 2, 0.1, NAN, NAN, 1};
    o.step_w = 1e-10;
    assert_int_equal(pfi_alloc_solve(&fine, 1, 1e9, &o, &r, &e), PFI_ERANGE);
    assert_non_null(strstr(e.msg, "past 2^53"));
    assert_int_equal(pfi_alloc_solve(&fine, 1, 1e5, &o, &r, &e), PFI_OK);
    assert_true(fabs(r.cap_w[0] - 0.1) < 1e-12);
    pfi_alloc_result_free(&r);
    assert_int_equal(pfi_alloc_ws_new(&fine, 1, 1e5, &o, &w, &e), PFI_OK);
    assert_int_equal(pfi_alloc_ws_solve(w, 1e9, &r, &e), PFI_ERANGE);
    pfi_alloc_ws_free(w);
    /* the need, rounded up, and the budget as given */
    double nc[] = {1234.564, 2000}, nt[] = {1, 2};
    pfi_alloc_job ten = {"t", 10, 1234.564, 2000, nc, nt, 2, 2000, NAN, NAN, 1};
    o.step_w = 0.001;
    assert_int_equal(pfi_alloc_solve(&ten, 1, 12345.6, &o, &r, &e), PFI_EINFEASIBLE);
    if (!strstr(e.msg, "budget 12345.6 W is below 12346 W,"))
        fail_msg("%s", e.msg);
    assert_int_equal(pfi_alloc_solve(&ten, 1, 12346, &o, &r, &e), PFI_OK);
    pfi_alloc_result_free(&r);
    char b1[32], b2[32];
    pfi_alloc_watts_below(b1, 0.05, b2, 0.1);
    assert_string_equal(b1, "0.05");
    assert_string_equal(b2, "0.1");
    pfi_alloc_watts_below(b1, 1100, b2, 1100.4);
    assert_string_equal(b2, "1100.4");
    pfi_alloc_watts_below(b1, 99.9999999999, b2, 100); /* never "100 W is below 100 W" */
    assert_true(strcmp(b1, b2) != 0 && strtod(b1, NULL) < strtod(b2, NULL));
}

/* Throughputs near DBL_MAX overflow the linear interpolation between two points to -inf; the
 * SLA floor's crossing point was then NaN and cast to int (undefined; UBSan stops here).  The
 * floor must still be a grid point in range that meets the SLA on the curve as read. */
static void test_sla_floor_overflowing_curve(void **state)
{
    (void)state;
    double caps[] = {100, 200}, t[] = {1.7e308, 1e307};
    pfi_alloc_job job = {"big", 1, 100, 200, caps, t, 2, 200, 1e300, 0.5, 1};
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.step_w = 40; /* grid 120, 160, 200: 120 and 160 read -inf between the two points */
    pfi_alloc_result r;
    pfi_err e = {0};
    assert_int_equal(pfi_alloc_solve(&job, 1, 200, &o, &r, &e), PFI_OK);
    assert_true(r.cap_w[0] >= 100 && r.cap_w[0] <= 200);
    assert_true(pfi_alloc_tput_at(&job, r.cap_w[0]) >= 0.5 * 1e300);
    pfi_alloc_result_free(&r);
}

/* pfi_alloc_curve_through, by hand: 200/300/400 W at 50/80/100, max cap 400; slowdown 0.5
 * seen at 250 W where the curve says 0.35, so d = 0.15: in full at and below 250 W, 2/3 of it
 * at 300 W ((400 - 300) / (400 - 250)), none at the max cap. */
static void test_curve_through(void **state)
{
    (void)state;
    double cap[] = {200, 300, 400}, tp[] = {50, 80, 100};
    pfi_alloc_job q = {.id = "a", .n_gpus = 1, .min_cap_w = 200, .max_cap_w = 400, .cap_w = cap,
                       .tput = tp, .n_points = 3, .p0_w = 400, .t0 = NAN, .sla = NAN};
    pfi_alloc_curve buf;
    pfi_alloc_job out;
    pfi_err e = {0};
    assert_int_equal(pfi_alloc_curve_through(&q, 250, 0.5, &buf, &out, &e), PFI_OK);
    assert_int_equal(out.n_points, 4);
    double want_c[] = {200, 250, 300, 400}, want_t[] = {35, 50, 70, 100};
    for (int i = 0; i < 4; i++) {
        assert_float_equal(out.cap_w[i], want_c[i], 1e-12);
        assert_float_equal(out.tput[i], want_t[i], 1e-9);
    }
    assert_float_equal(pfi_alloc_tput_at(&out, 250), 50, 1e-9);
    assert_float_equal(out.max_cap_w, 400, 0);
    assert_ptr_equal(out.id, q.id);
    /* again, in place (buf holds out's points): through 0.6 at 300 W, where out says 0.3 */
    assert_int_equal(pfi_alloc_curve_through(&out, 300, 0.6, &buf, &out, &e), PFI_OK);
    assert_int_equal(out.n_points, 4);
    assert_float_equal(pfi_alloc_tput_at(&out, 300), 40, 1e-9);
    assert_float_equal(out.tput[0], 5, 1e-9);  /* 0.65 + 0.3 = 0.95 */
    assert_float_equal(out.tput[1], 20, 1e-9); /* 0.5 + 0.3 */
    assert_float_equal(out.tput[3], 100, 1e-9);
    /* a shortfall past the whole curve stops at no throughput */
    assert_int_equal(pfi_alloc_curve_through(&q, 250, 0.95, &buf, &out, &e), PFI_OK);
    assert_float_equal(out.tput[0], 0, 1e-12);
    for (int i = 1; i < out.n_points; i++)
        assert_true(out.tput[i] >= out.tput[i - 1]);
    /* seen no worse than promised: the curve as it was, never raised */
    assert_int_equal(pfi_alloc_curve_through(&q, 250, 0.2, &buf, &out, &e), PFI_OK);
    assert_int_equal(out.n_points, 3);
    for (int i = 0; i < 3; i++)
        assert_float_equal(out.tput[i], tp[i], 0);
    /* bad observations change nothing */
    pfi_alloc_job keep = out;
    assert_int_equal(pfi_alloc_curve_through(&q, 400, 0.5, &buf, &out, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "outside its curve's range"));
    pfi_err_clear(&e);
    assert_int_equal(pfi_alloc_curve_through(&q, 150, 0.5, &buf, &out, &e), PFI_EINVAL);
    pfi_err_clear(&e);
    assert_int_equal(pfi_alloc_curve_through(&q, 250, 1.5, &buf, &out, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "not in [0, 1]"));
    pfi_err_clear(&e);
    assert_int_equal(pfi_alloc_curve_through(&q, NAN, 0.5, &buf, &out, &e), PFI_EINVAL);
    pfi_err_clear(&e);
    assert_memory_equal(&keep, &out, sizeof out);
    /* against the SLA's reference t0 when the job has one: 110 here, so the 65 at 250 W reads
     * 0.409 and a slowdown of 0.6 seen there is 0.191 short */
    pfi_alloc_job r = q;
    r.t0 = 110;
    assert_int_equal(pfi_alloc_curve_through(&r, 250, 0.6, &buf, &out, &e), PFI_OK);
    assert_float_equal(pfi_alloc_tput_at(&out, 250), 44, 1e-9);
    assert_float_equal(pfi_alloc_tput_at(&out, 400), 100, 1e-9);
    assert_float_equal(out.tput[0], 50 - 110 * (0.6 - (1 - 65.0 / 110)), 1e-9);
    /* a full curve takes no new point: read between its neighbours, still lowered, monotone */
    double fc[PFI_ALLOC_CURVE_PTS], ft[PFI_ALLOC_CURVE_PTS];
    for (int i = 0; i < PFI_ALLOC_CURVE_PTS; i++)
        fc[i] = 200 + 200.0 * i / (PFI_ALLOC_CURVE_PTS - 1), ft[i] = 50 + 50.0 * i / (PFI_ALLOC_CURVE_PTS - 1);
    pfi_alloc_job f = q;
    f.cap_w = fc, f.tput = ft, f.n_points = PFI_ALLOC_CURVE_PTS;
    double c0 = 0.5 * (fc[20] + fc[21]), before = pfi_alloc_tput_at(&f, c0);
    assert_int_equal(pfi_alloc_curve_through(&f, c0, 0.6, &buf, &out, &e), PFI_OK);
    assert_int_equal(out.n_points, PFI_ALLOC_CURVE_PTS);
    assert_true(pfi_alloc_tput_at(&out, c0) < before);
    assert_float_equal(pfi_alloc_tput_at(&out, c0), 40, 0.5);
    for (int i = 1; i < out.n_points; i++)
        assert_true(out.tput[i] >= out.tput[i - 1]);
}

static void test_draw_model(void **state)
{
    pfi_draw_model m;
    pfi_draw_model_ratio(0.9, &m);
    assert_true(fabs(pfi_draw_model_at(&m, 0.5) - 0.45) < 1e-12);
    assert_true(fabs(pfi_draw_model_at(&m, 2.0) - 1.0) < 1e-12);
    /* learned: draws 95% of a cap up to the baseline, then the baseline; one noisy level */
    double u[200], d[200];
    int n = 0;
    for (int i = 0; i < 180; i++, n++) {
        u[n] = 0.3 + 0.9 * i / 180.0;
        d[n] = fmin(1.0, 0.95 * u[n]);
    }
    u[n] = 0.61, d[n++] = 0.1;
    pfi_draw_model_fit(u, d, n, &m);
    assert_true(m.n > 10);
    for (int i = 1; i < m.n; i++)
        assert_true(m.d[i] >= m.d[i - 1] && m.d[i] <= 1);
    assert_true(fabs(pfi_draw_model_at(&m, 0.6) - 0.57) < 0.01);
    assert_true(fabs(pfi_draw_model_at(&m, 0.2) - 0.19) < 0.01); /* proportional below */
    assert_true(fabs(pfi_draw_model_at(&m, 1.5) - 1.0) < 1e-12);
    pfi_draw_model_fit(u, d, 3, &m); /* too few levels: the cap binds exactly */
    assert_true(fabs(pfi_draw_model_at(&m, 0.5) - 0.5) < 1e-12);
}

/* A job's own draws (levels out of order, one noisy dip) and the mean of two jobs' models. */
static void test_draw_model_own_and_mean(void **state)
{
    (void)state;
    pfi_curve c;
    memset(&c, 0, sizeof c);
    c.p0_w = 400;
    const double cap[] = {400, 200, 300, 250, 350};
    const double draw[] = {400, 190, 270, 280, 330}; /* 280 at 250 W: above what 300 W drew */
    c.n = 5;
    for (int i = 0; i < c.n; i++) {
        c.cap_w[i] = cap[i];
        c.draw_w[i] = draw[i];
    }
    pfi_draw_model a, b, m;
    assert_int_equal(pfi_draw_model_from_curve(&c, &a), 5);
    for (int i = 1; i < a.n; i++)
        assert_true(a.u[i] > a.u[i - 1] && a.d[i] >= a.d[i - 1] && a.d[i] <= 1);
    assert_true(fabs(pfi_draw_model_at(&a, 0.5) - 190.0 / 400) < 1e-12);
    assert_true(fabs(pfi_draw_model_at(&a, 0.75) - 280.0 / 400) < 1e-12); /* made monotone */
    assert_true(fabs(pfi_draw_model_at(&a, 1.2) - 1.0) < 1e-12);
    pfi_draw_model_ratio(1, &b);
    pfi_draw_model two[2] = {a, b};
    pfi_draw_model_mean(two, 2, 0.3, 1.2, &m);
    assert_int_equal(m.n, PFI_DRAW_PTS);
    for (double u = 0.3; u <= 1.2; u += 0.0125) {
        double want = 0.5 * (pfi_draw_model_at(&a, u) + pfi_draw_model_at(&b, u));
        assert_true(fabs(pfi_draw_model_at(&m, u) - want) < 0.01);
    }
    /* no draws measured: nothing to learn, the output untouched */
    for (int i = 0; i < c.n; i++)
        c.draw_w[i] = NAN;
    m.n = -7;
    assert_true(pfi_draw_model_from_curve(&c, &m) < 2);
    assert_int_equal(m.n, -7);
}

/* An SLA is hard in every policy: on a curve with a dip a cap above the SLA floor can break it
 * again.  equal gave job a 200 W (50 tokens/s, its SLA needs 90) and proportional-to-pfi
 * 220 W; now each takes the highest cap at or below its family's that meets the SLA, within
 * the budget. */
static void test_family_sla_on_dip(void **state)
{
    (void)state;
    double c[] = {100, 200, 300}, ta[] = {100, 50, 100}, tb[] = {10, 20, 30};
    pfi_alloc_job jobs[2] = {
        {.id = "a", .n_gpus = 1, .min_cap_w = 100, .max_cap_w = 300, .cap_w = c, .tput = ta,
         .n_points = 3, .p0_w = 300, .t0 = 100, .sla = 0.1, .weight = 1},
        {.id = "b", .n_gpus = 1, .min_cap_w = 100, .max_cap_w = 300, .cap_w = c, .tput = tb,
         .n_points = 3, .p0_w = 300, .t0 = 30, .sla = NAN, .weight = 1},
    };
    const double pfi30[] = {0.3, 0.3};
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    pfi_err e = {0};
    for (double budget = 220; budget <= 600; budget += 20)
        for (int p = 0; p < 2; p++) {
            pfi_alloc_result r;
            memset(&r, 0, sizeof r);
            int rc = p ? pfi_alloc_proportional(jobs, 2, pfi30, budget, &o, &r, &e)
                       : pfi_alloc_equal(jobs, 2, budget, &o, &r, &e);
            assert_int_equal(rc, PFI_OK);
            if (r.tput[0] < 90 - 1e-9)
                fail_msg("%s at %g W: job a at %g W gives %g, its SLA needs 90",
                         p ? "proportional" : "equal", budget, r.cap_w[0], r.tput[0]);
            check_budget(jobs, &r, budget);
            pfi_alloc_result_free(&r);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answer),   cmocka_unit_test(test_optimal_concave),
        cmocka_unit_test(test_bound_scale),
        cmocka_unit_test(test_optimal_nonconcave), cmocka_unit_test(test_optimal_collinear),
        cmocka_unit_test(test_uniform_gpu_counts),
        cmocka_unit_test(test_collinear_wide), cmocka_unit_test(test_optimal_with_sla),
        cmocka_unit_test(test_bad_input), cmocka_unit_test(test_duplicate_ids),      cmocka_unit_test(test_infeasible_modes),
        cmocka_unit_test(test_error_order),     cmocka_unit_test(test_on_grid_hulls),
        cmocka_unit_test(test_many_jobs),      cmocka_unit_test(test_equal_floors),
        cmocka_unit_test(test_sla_floor_overflowing_curve),
        cmocka_unit_test(test_budget_units),
        cmocka_unit_test(test_curve_through),
        cmocka_unit_test(test_family_sla_on_dip),
        cmocka_unit_test(test_draw_model),     cmocka_unit_test(test_draw_model_own_and_mean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
