/* SPDX-License-Identifier: Apache-2.0 */
/* curve_eval.c: curve families and probing scored on measured runs (curve_eval.h). */
#include "study/curve_eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/pfi.h"
#include "core/probe.h"
#include "core/stats.h"
#include "study/runset.h"

/* ---- curve families ---- */

typedef struct famsum {
    double in_sse, lo_in, lo_ex, pfi_sum;
    int in_n, lo_in_n, lo_ex_n, runs;
} famsum;

/* Leave-one-level-out squared errors of a family on one run's points (sorted by r): the
 * deepest level is an extrapolation, the others interpolations, kept apart because they fail
 * differently. */
static void lolo(const double *r, const double *s, int m, int fam, famsum *q)
{
    for (int i = 0; i < m; i++) {
        if (r[i] <= 0.005)
            continue;
        double rr[PFI_CURVE_MAX_PTS], ss[PFI_CURVE_MAX_PTS];
        int k = 0;
        for (int j = 0; j < m; j++)
            if (j != i) {
                rr[k] = r[j];
                ss[k] = s[j];
                k++;
            }
        pfi_fit f;
        if (pfi_fit_points(fam, rr, ss, NULL, k, &f, NULL) != PFI_OK)
            continue;
        double d = pfi_fit_s(&f, r[i]) - s[i];
        if (i == m - 1) {
            q->lo_ex += d * d;
            q->lo_ex_n++;
        } else {
            q->lo_in += d * d;
            q->lo_in_n++;
        }
    }
}

static double rms(double sse, int n) { return n ? sqrt(sse / n) : NAN; }

void pfi_family_compare(const pfi_run *runs, int n, pfi_family_cmp *out)
{
    famsum st[2][PFI_FAM_COUNT];
    memset(st, 0, sizeof st);
    memset(out, 0, sizeof *out);
    for (int i = 0; i < n; i++) {
        pfi_curve c;
        if (pfi_curve_from_run(&runs[i], PFI_FAM_QUAD, &c, NULL) != PFI_OK || c.n_shed < 4)
            continue;
        double r[PFI_CURVE_MAX_PTS], s[PFI_CURVE_MAX_PTS];
        int m = pfi_curve_points(&c, r, s, PFI_CURVE_MAX_PTS);
        int tr = pfi_run_is_transformer(&runs[i]);
        for (int set = tr ? 0 : 1; set < 2; set++) {
            out->runs[set]++;
            for (int f = 0; f < PFI_FAM_COUNT; f++) {
                famsum *q = &st[set][f];
                pfi_fit fit;
                if (pfi_fit_points(f, r, s, NULL, m, &fit, NULL) != PFI_OK)
                    continue;
                q->in_sse += fit.rmse * fit.rmse * m;
                q->in_n += m;
                q->pfi_sum += pfi_at(&fit, 0.30);
                q->runs++;
                lolo(r, s, m, f, q);
            }
        }
    }
    for (int set = 0; set < 2; set++)
        for (int f = 0; f < PFI_FAM_COUNT; f++) {
            const famsum *q = &st[set][f];
            pfi_family_stat *o = &out->fam[set][f];
            o->rmse_fit = rms(q->in_sse, q->in_n);
            o->rmse_lolo_interp = rms(q->lo_in, q->lo_in_n);
            o->rmse_lolo_extrap = rms(q->lo_ex, q->lo_ex_n);
            o->mean_pfi30 = q->runs ? q->pfi_sum / q->runs : NAN;
        }
}

/* ---- probing ---- */

const int pfi_probe_eval_pct[PFI_PROBE_EVAL_N] = {80, 70, 60};
static const double eval_r[PFI_PROBE_EVAL_N] = {0.2, 0.3, 0.4};

/* Relative throughput at shed r by linear interpolation of the measured points, the probe
 * levels left out (a probe must not be scored on itself), the baseline (0, 1) included.  NAN
 * beyond the deepest point left. */
static double truth_at(const pfi_curve *c, const int *skip, int nskip, double r)
{
    double rr[PFI_CURVE_MAX_PTS + 1], tt[PFI_CURVE_MAX_PTS + 1];
    int m = pfi_curve_below_points(c, c->rel, 1.0, skip, nskip, rr, tt);
    return r > rr[m - 1] ? NAN : pfi_lerp_sorted(rr, tt, m, r);
}

static double maxv(const double *v, int n)
{
    double m = n ? 0 : NAN;
    for (int i = 0; i < n; i++)
        if (v[i] > m)
            m = v[i];
    return m;
}

/* Errors of one probing plan, [0] transformer runs, [1] all. */
typedef struct errset {
    double *e[PFI_PROBE_EVAL_N];
    int n[PFI_PROBE_EVAL_N];
    const char *worst[PFI_PROBE_EVAL_N];
    double worst_e[PFI_PROBE_EVAL_N];
} errset;

static int errs_alloc(errset es[2], int n, pfi_err *err)
{
    memset(es, 0, 2 * sizeof *es);
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < PFI_PROBE_EVAL_N; k++)
            if (!(es[s].e[k] = malloc(sizeof(double) * (size_t)(n ? n : 1))))
                return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    return PFI_OK;
}

static void errs_free(errset es[2])
{
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < PFI_PROBE_EVAL_N; k++)
            free(es[s].e[k]);
}

/* Scores the probing plan on one curve. */
static void score(const pfi_curve *cv, int tr, const double *depths, int nprobes, double b,
                  const char *name, errset *errs)
{
    pfi_curve p;
    int used[2] = {-1, -1};
    if (pfi_probe_curve(cv, depths, nprobes, b, &p, used, NULL) != PFI_OK)
        return;
    for (int k = 0; k < PFI_PROBE_EVAL_N; k++) {
        double t = truth_at(cv, used, nprobes, eval_r[k]);
        if (!isfinite(t))
            continue;
        double e = fabs((1.0 - pfi_fit_s(&p.fit, eval_r[k])) - t);
        for (int s = tr ? 0 : 1; s < 2; s++) {
            errs[s].e[k][errs[s].n[k]++] = e;
            if (e > errs[s].worst_e[k]) {
                errs[s].worst_e[k] = e;
                errs[s].worst[k] = name;
            }
        }
    }
}

/* The one-probe depth scan, every run under the prior of all transformer curves. */
static int depth_scan(const pfi_curve *cv, const int *tr, const char **names, int n,
                      pfi_probe_eval *out, pfi_err *err)
{
    double d = 0.15, b = isfinite(out->b_prior) ? out->b_prior : PFI_PROBE_B_PRIOR;
    for (int j = 0; j < PFI_PROBE_SCAN_N; j++, d += 0.05) {
        errset sc[2];
        int rc = errs_alloc(sc, n, err);
        for (int i = 0; rc == PFI_OK && i < n; i++)
            score(&cv[i], tr[i], &d, 1, b, names[i], sc);
        for (int k = 0; rc == PFI_OK && k < PFI_PROBE_EVAL_N; k++)
            out->scan_median[j][k] = pfi_median(sc[0].e[k], sc[0].n[k]);
        errs_free(sc);
        if (rc != PFI_OK)
            return rc;
        out->scan_depth[j] = d;
        out->n_scan++;
    }
    return PFI_OK;
}

/* Leave-one-out prior: for a transformer run the median exponent without it, for the others
 * that of all transformer curves. */
static double prior_for(const pfi_curve *tv, int ntv, const int *tr, int i, double b_all)
{
    if (!tr[i])
        return b_all;
    int self = 0;
    for (int j = 0; j < i; j++)
        self += tr[j] != 0;
    return pfi_probe_median_b(tv, ntv, self);
}

int pfi_probe_evaluate(const pfi_run *runs, int nruns, const double *depths, int nprobes,
                       int scan, pfi_probe_eval *out, pfi_err *err)
{
    memset(out, 0, sizeof *out);
    size_t cap = (size_t)(nruns ? nruns : 1);
    pfi_curve *cv = malloc(sizeof *cv * cap), *tv = malloc(sizeof *tv * cap);
    const char **names = malloc(sizeof *names * cap);
    int *tr = malloc(sizeof(int) * cap), n = 0, ntv = 0;
    errset es[2];
    int rc = errs_alloc(es, nruns, err);
    if (rc == PFI_OK && !(cv && tv && names && tr))
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
    /* Curves that shed enough power to be scored at 80% at least. */
    for (int i = 0; rc == PFI_OK && i < nruns; i++)
        if (pfi_curve_from_run(&runs[i], PFI_FAM_POWER, &cv[n], NULL) == PFI_OK &&
            cv[n].n_shed >= 3 && cv[n].r_max >= 0.2) {
            tr[n] = pfi_run_is_transformer(&runs[i]);
            names[n] = runs[i].name;
            if (tr[n])
                tv[ntv++] = cv[n];
            n++;
        }
    if (rc == PFI_OK) {
        /* The prior comes from transformer curves only. */
        out->n_curves = n;
        out->b_prior = pfi_probe_median_b(tv, ntv, -1);
        for (int i = 0; i < n; i++) {
            double b = prior_for(tv, ntv, tr, i, out->b_prior);
            score(&cv[i], tr[i], depths, nprobes, isfinite(b) ? b : PFI_PROBE_B_PRIOR, names[i],
                  es);
        }
        for (int s = 0; s < 2; s++)
            for (int k = 0; k < PFI_PROBE_EVAL_N; k++) {
                out->set[s].max[k] = maxv(es[s].e[k], es[s].n[k]);
                out->set[s].median[k] = pfi_median(es[s].e[k], es[s].n[k]);
                out->set[s].n[k] = es[s].n[k];
                out->set[s].worst[k] = es[s].worst[k];
            }
    }
    if (rc == PFI_OK && scan)
        rc = depth_scan(cv, tr, names, n, out, err);
    errs_free(es);
    free(cv);
    free(tv);
    free(names);
    free(tr);
    return rc;
}
