/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the predictor's grouped permutation importance and of the settling-time rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "core/importance.h"
#include "core/pfi.h"
#include "core/settle.h"

/* Rows whose slowdown depends on sm_active only; compute_share is sm_active plus a little
 * noise (collinear), dram_active independent, the rest missing or constant. */
static void make_rows(pfi_train_row *rows, int n)
{
    unsigned long long st = 42;
    for (int i = 0; i < n; i++) {
        pfi_train_row *r = &rows[i];
        memset(r, 0, sizeof *r);
        for (int f = 0; f < PFI_N_FEATURES; f++)
            r->x[f] = NAN;
        double u = (double)(pfi_rand_next(&st) % 1000) / 1000.0;
        double v = (double)(pfi_rand_next(&st) % 1000) / 1000.0;
        double w = (double)(pfi_rand_next(&st) % 1000) / 1000.0;
        r->x[PFI_FT_SM_ACTIVE] = 0.4 + 0.5 * u;
        r->x[PFI_FT_COMPUTE_SHARE] = 0.4 + 0.5 * u + 0.01 * (w - 0.5);
        r->x[PFI_FT_DRAM_ACTIVE] = 0.1 + 0.5 * v;
        r->x[PFI_FT_LOG_GPUS] = 3;
        r->x[PFI_FT_POWER_HEADROOM] = 0.9 + 0.1 * w;
        for (int k = 0; k < PFI_N_TDEPTHS; k++)
            r->s[k] = pfi_target_depths[k] * (0.1 + 0.5 * r->x[PFI_FT_SM_ACTIVE]);
        r->pfi30 = r->s[2] / 0.30;
        r->group = i;
    }
}

static void test_groups(void **state)
{
    (void)state;
    enum { N = 40 };
    pfi_train_row rows[N];
    make_rows(rows, N);
    int g[PFI_N_FEATURES];
    int ng = pfi_feature_groups(rows, N, PFI_IMP_CORR, g);
    /* the collinear pair is one group; the independent ones and the constant are apart */
    assert_int_equal(g[PFI_FT_SM_ACTIVE], g[PFI_FT_COMPUTE_SHARE]);
    assert_int_not_equal(g[PFI_FT_SM_ACTIVE], g[PFI_FT_DRAM_ACTIVE]);
    assert_int_not_equal(g[PFI_FT_SM_ACTIVE], g[PFI_FT_LOG_GPUS]);
    assert_int_not_equal(g[PFI_FT_SM_ACTIVE], g[PFI_FT_POWER_HEADROOM]);
    assert_int_equal(ng, PFI_N_FEATURES - 1);
    for (int f = 0; f < PFI_N_FEATURES; f++)
        assert_true(g[f] >= 0 && g[f] < ng);
    /* a threshold above 1 groups nothing */
    assert_int_equal(pfi_feature_groups(rows, N, 1.01, g), PFI_N_FEATURES);
}

static void test_group_importance(void **state)
{
    (void)state;
    enum { N = 40 };
    pfi_train_row rows[N];
    make_rows(rows, N);
    pfi_train_opts o = pfi_train_defaults();
    o.force_kind = PFI_MODEL_RIDGE;
    pfi_model m;
    pfi_err e = {0};
    assert_int_equal(pfi_model_train(rows, N, &o, &m, &e), PFI_OK);
    const pfi_model *per[N];
    for (int i = 0; i < N; i++)
        per[i] = &m;
    pfi_importance a, b;
    assert_int_equal(pfi_group_importance(per, rows, N, PFI_IMP_CORR, 10, 7, &a, &e), PFI_OK);
    int gs = a.group_of[PFI_FT_SM_ACTIVE], gd = a.group_of[PFI_FT_DRAM_ACTIVE],
        gc = a.group_of[PFI_FT_LOG_GPUS];
    /* the group that carries the truth matters; a constant feature cannot */
    assert_true(a.mean[gs] > 0.02);
    assert_true(a.mean[gs] > 10 * fabs(a.mean[gd]));
    assert_true(a.mean[gc] == 0 && a.sd[gc] == 0);
    /* and no group's importance exceeds what predicting the worst could cost: the range of
     * PFI30 over the rows (the fault of single-feature importances of collinear features) */
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < N; i++)
        lo = fmin(lo, rows[i].pfi30), hi = fmax(hi, rows[i].pfi30);
    for (int k = 0; k < a.n_groups; k++)
        assert_true(a.mean[k] <= hi - lo);
    /* fixed seed: the same figures */
    assert_int_equal(pfi_group_importance(per, rows, N, PFI_IMP_CORR, 10, 7, &b, &e), PFI_OK);
    assert_memory_equal(a.mean, b.mean, sizeof a.mean);
    /* a row with no measured PFI30 (NAN: a sweep short of 30%) is permuted but not scored:
     * the figures are those of the scored rows alone under the same permutations */
    rows[5].pfi30 = NAN;
    assert_int_equal(pfi_group_importance(per, rows, N, PFI_IMP_CORR, 10, 7, &b, &e), PFI_OK);
    assert_true(isfinite(b.mae0) && isfinite(b.mean[gs]) && b.mean[gs] > 0.02);
    double sae = 0;
    for (int i = 0; i < N; i++) {
        double sp[PFI_N_TDEPTHS];
        pfi_fit f;
        if (i == 5)
            continue;
        assert_int_equal(pfi_model_predict_x(&m, rows[i].x, sp, &f, &e), PFI_OK);
        sae += fabs(pfi_at(&f, 0.30) - rows[i].pfi30);
    }
    assert_true(fabs(b.mae0 - sae / (N - 1)) < 1e-12);
    for (int i = 0; i < N; i++)
        rows[i].pfi30 = NAN;
    assert_int_equal(pfi_group_importance(per, rows, N, PFI_IMP_CORR, 10, 7, &b, &e), PFI_EINVAL);
    make_rows(rows, N);
    /* bad input */
    per[3] = NULL;
    assert_int_equal(pfi_group_importance(per, rows, N, PFI_IMP_CORR, 10, 7, &b, &e), PFI_EINVAL);
    assert_int_equal(pfi_group_importance(per, rows, 1, PFI_IMP_CORR, 10, 7, &b, &e), PFI_EINVAL);
}

static void test_settle(void **state)
{
    (void)state;
    enum { N = 300 };
    double t[N], y[N];
    /* a first-order step from 700 to 400 at t = 2 with time constant 0.2 s: within 5% of the
     * step (15) once 300 exp(-(t-2)/0.2) <= 15, i.e. t - 2 >= 0.2 ln 20 = 0.599 s; the moving
     * median (0.25 s centred) reaches it an eighth of a second later */
    for (int k = 0; k < N; k++) {
        t[k] = k * 0.05;
        y[k] = t[k] < 2 ? 700 : 400 + 300 * exp(-(t[k] - 2) / 0.2);
    }
    double s0 = pfi_settle_time(t, y, N, 2, 0.25, 1.0, 0.05);
    assert_true(s0 >= 0.6 - 1e-9 && s0 <= 0.6 + 0.125 + 0.05 + 1e-9);
    /* single-sample spikes after it do not unsettle it (a plain threshold on samples would
     * call it settled only after the last spike) */
    y[150] += 60, y[220] -= 60, y[290] += 60;
    assert_true(fabs(pfi_settle_time(t, y, N, 2, 0.25, 1.0, 0.05) - s0) < 1e-9);
    assert_true(pfi_settle_time(t, y, N, 2, 0.0, 1.0, 0.05) > 14 - 2 - 0.1);
    /* a late sustained move is caught */
    for (int k = 200; k < 210; k++)
        y[k] = 480;
    assert_true(fabs(pfi_settle_time(t, y, N, 2, 0.25, 1.0, 0.05) - (210 * 0.05 - 2)) < 0.1);
    /* a stepped signal: when it reaches its last value and stays */
    double c[N];
    for (int k = 0; k < N; k++)
        c[k] = t[k] < 2 ? 1650 : t[k] < 2.5 ? 1400 : t[k] < 3.1 ? 1320 : 1305;
    assert_true(fabs(pfi_final_time(t, c, N, 2) - (3.1 - 2)) < 1e-9);
    c[250] = 1320; /* one step back up late: its final time is after it */
    assert_true(fabs(pfi_final_time(t, c, N, 2) - (251 * 0.05 - 2)) < 1e-9);
    assert_true(isnan(pfi_final_time(t, c, N, 100)));
    /* no step, or nothing before it: NAN */
    for (int k = 0; k < N; k++)
        y[k] = 500;
    assert_true(isnan(pfi_settle_time(t, y, N, 2, 0.25, 1.0, 0.05)));
    assert_true(isnan(pfi_settle_time(t, y, N, -1, 0.25, 1.0, 0.05)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_groups),
                                       cmocka_unit_test(test_group_importance),
                                       cmocka_unit_test(test_settle)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
