/* SPDX-License-Identifier: Apache-2.0 */
/* cost_eval.c: PFI30 error against the cost of a partial characterization (cost_eval.h). */
#include "study/cost_eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/curve.h"
#include "core/pfi.h"
#include "core/probe.h"
#include "core/stats.h"

#define DEPTH 0.30

/* PFI30's headline for a run (an estimate: extrapolated on the fit where its levels stop
 * short), or, as the truth, only the interpolation of measured points that reach 30%: the
 * index reads its fit a little past the deepest shed (within 0.01, marked), and a run whose
 * sweep stops at 29% has no PFI30 to score against.  NAN when none. */
static double headline(const pfi_run *run, int truth)
{
    pfi_index_opts o = pfi_index_defaults();
    o.depth = DEPTH;
    o.extrapolate = !truth;
    o.n_boot = 0;
    pfi_index ix;
    if (pfi_index_run(run, &o, &ix, NULL) != PFI_OK)
        return NAN;
    return truth ? ix.pfi_interp : ix.pfi_head;
}

/* The k-level part of run into *sub (see cost_eval.h); 0 when the run has too few levels. */
static int pick_levels(const pfi_run *run, int k, pfi_run *sub)
{
    int b = pfi_run_baseline(run);
    if (b < 0 || run->n_levels < k)
        return 0;
    int used[PFI_MAX_LEVELS] = {0};
    used[b] = 1;
    *sub = *run;
    sub->n_levels = 0;
    sub->levels[sub->n_levels++] = run->levels[b];
    double cap0 = run->levels[b].cap_w;
    for (int j = 1; j < k; j++) {
        double want = cap0 * (1 - 0.5 * j / (k - 1));
        int best = -1;
        for (int i = 0; i < run->n_levels; i++)
            if (!used[i] && (best < 0 || fabs(run->levels[i].cap_w - want) <
                                             fabs(run->levels[best].cap_w - want)))
                best = i;
        used[best] = 1;
        sub->levels[sub->n_levels++] = run->levels[best];
    }
    return 1;
}

/* One probe on run's measured curve: PFI(0.30) of the predicted curve (NAN when none). */
static double probe_pfi30(const pfi_run *run)
{
    pfi_curve truth, pred;
    double depth = PFI_PROBE_DEPTH;
    if (pfi_curve_from_run(run, -1, &truth, NULL) != PFI_OK ||
        pfi_probe_curve(&truth, &depth, 1, PFI_PROBE_B_PRIOR, &pred, NULL, NULL) != PFI_OK)
        return NAN;
    return pfi_at(&pred.fit, DEPTH);
}

static void summarize(double *err, double *cost, double *cost_x, int n, pfi_cost_eval_row *row)
{
    row->n = n;
    qsort(err, (size_t)n, sizeof *err, pfi_cmp_double);
    row->err_p90 = pfi_quantile_sorted(err, n, 0.9);
    row->err_median = pfi_median(err, n);
    row->cost_median = pfi_median(cost, n);
    row->cost_excl_median = pfi_median(cost_x, n);
}

int pfi_cost_evaluate(const pfi_run *const *runs, int n, pfi_cost_eval *out, pfi_err *err)
{
    memset(out, 0, sizeof *out);
    out->n_runs = n;
    double *truth = malloc((size_t)(n > 0 ? n : 1) * sizeof *truth);
    double *e = malloc((size_t)(n > 0 ? n : 1) * 3 * sizeof *e);
    pfi_run *sub = malloc(sizeof *sub);
    if (!truth || !e || !sub) {
        free(truth), free(e), free(sub);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        truth[i] = headline(runs[i], 1);
        out->n_truth += isfinite(truth[i]);
    }
    for (int r = 0; r < PFI_COST_EVAL_ROWS; r++) {
        pfi_cost_eval_row *row = &out->row[r];
        row->probe = r == 0;
        row->levels = r == 0 ? 2 : r + 1;
        int m = 0;
        double *ev = e, *cv = e + n, *cx = e + 2 * n;
        for (int i = 0; i < n; i++) {
            const pfi_run *run = runs[i];
            if (!isfinite(truth[i]) || run->n_levels < row->levels)
                continue;
            double est = row->probe ? probe_pfi30(run)
                         : pick_levels(run, row->levels, sub) ? headline(sub, 0)
                                                              : NAN;
            if (!isfinite(est)) {
                row->failed++;
                continue;
            }
            ev[m] = fabs(est - truth[i]);
            cv[m] = (double)row->levels / run->n_levels;
            cx[m] = (double)(row->levels - 1) / (run->n_levels - 1);
            m++;
        }
        summarize(ev, cv, cx, m, row);
    }
    free(truth), free(e), free(sub);
    if (out->n_truth == 0)
        return pfi_err_set(err, PFI_EINVAL, "no run's sweep reaches a 30%% power shed");
    return PFI_OK;
}
