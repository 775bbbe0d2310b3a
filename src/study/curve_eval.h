/* SPDX-License-Identifier: Apache-2.0 */
/* curve_eval.h: how well curve methods predict measured runs, the evidence behind two choices
 * of core/: which family to fit (pfi index --compare-families) and how deep to probe (pfi
 * model probe-eval).  Each result is given for transformer runs (the stated target) and for
 * all runs.  The study layer: runs in, figures out, nothing printed. */
#ifndef PFI_STUDY_CURVE_EVAL_H
#define PFI_STUDY_CURVE_EVAL_H

#include "core/curve.h"
#include "core/err.h"
#include "core/run.h"

/* ---- curve families ---- */

typedef struct pfi_family_stat {
    double rmse_fit;          /* in sample */
    double rmse_lolo_interp;  /* each inner shed level left out, refitted, predicted */
    double rmse_lolo_extrap;  /* the deepest level left out: an extrapolation, kept apart */
    double mean_pfi30;        /* NAN when no run could be fitted */
} pfi_family_stat;

typedef struct pfi_family_cmp {
    int runs[2];                               /* [0] transformer, [1] all */
    pfi_family_stat fam[2][PFI_FAM_COUNT];
} pfi_family_cmp;

/* Only runs with >= 4 shed levels count, so every family can be fitted and checked on a
 * left-out level. */
void pfi_family_compare(const pfi_run *runs, int n, pfi_family_cmp *out);

/* ---- probing ---- */

#define PFI_PROBE_EVAL_N 3
extern const int pfi_probe_eval_pct[PFI_PROBE_EVAL_N]; /* 80, 70, 60% of baseline power */
#define PFI_PROBE_SCAN_N 7                              /* depths 0.15, 0.20, ..., 0.45 */

typedef struct pfi_probe_score {
    double median[PFI_PROBE_EVAL_N], max[PFI_PROBE_EVAL_N]; /* |error| of relative tput */
    int n[PFI_PROBE_EVAL_N];
    const char *worst[PFI_PROBE_EVAL_N]; /* name of the run with the largest error (in runs) */
} pfi_probe_score;

typedef struct pfi_probe_eval {
    int n_curves;    /* runs that shed enough (>= 3 levels, 20%) to be scored */
    double b_prior;  /* median exponent of the transformer curves */
    pfi_probe_score set[2]; /* [0] transformer, [1] all */
    int n_scan;      /* scan: one probe at each depth, transformer runs, prior b_prior */
    double scan_depth[PFI_PROBE_SCAN_N];
    double scan_median[PFI_PROBE_SCAN_N][PFI_PROBE_EVAL_N];
} pfi_probe_eval;

/* Estimates each run's curve from its baseline and nprobes (1 or 2) probes at depths (the
 * measured levels nearest the probe caps) and scores the relative throughput it predicts at
 * 80, 70 and 60% of baseline power against the measured points with the probe levels left out.
 * One probe's prior exponent is the median of the other transformer curves (the scored one
 * left out).  scan: also score one probe at each depth of the scan. */
int pfi_probe_evaluate(const pfi_run *runs, int n, const double *depths, int nprobes, int scan,
                       pfi_probe_eval *out, pfi_err *err);

#endif
