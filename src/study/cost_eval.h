/* SPDX-License-Identifier: Apache-2.0 */
/* cost_eval.h: how much characterization a PFI30 needs.  For each measured run whose own sheds
 * reach 30%, PFI30 is estimated from a part of the sweep (one probe, or a sweep of k = 2..6
 * levels) and compared with the PFI30 of the full sweep, against what that part costs as a
 * fraction of the full sweep's GPU-time.  The procedure, fixed before any figure was seen:
 *   truth      pfi_index_run on every level, no extrapolation: its headline (the monotone
 *              interpolation of the measured points); runs where it is not finite are left out
 *   k levels   the baseline level (pfi_run_baseline) and the k-1 levels whose caps are nearest
 *              cap0 x (1 - 0.5 j/(k-1)), j = 1..k-1 (evenly spaced down to half the baseline
 *              cap), each level used once; runs with fewer than k levels are left out of row k.
 *              PFI30 = the headline of pfi_index_run on those levels with extrapolation (the
 *              interpolation where they reach 30%, else the fit, extrapolated)
 *   one probe  pfi_probe_curve at depth PFI_PROBE_DEPTH with the prior exponent
 *              PFI_PROBE_B_PRIOR (the measured level nearest the probe cap, plus the baseline);
 *              PFI30 = PFI(0.30) of the predicted curve
 *   cost       levels used / levels of the full sweep (every level assumed to take the same
 *              time: the public data carries no durations), and the same without the baseline
 *              level ((used - 1) / (all - 1)), for a baseline the job pays for anyway
 *   error      |PFI30 estimated - PFI30 of the full sweep|, in PFI30 units: median and 90th
 *              percentile over the runs scored.
 * The study layer: runs in, figures out, nothing printed. */
#ifndef PFI_STUDY_COST_EVAL_H
#define PFI_STUDY_COST_EVAL_H

#include "core/err.h"
#include "core/run.h"

#define PFI_COST_EVAL_ROWS 6 /* one probe, then sweeps of 2..6 levels */

typedef struct pfi_cost_eval_row {
    int levels;          /* levels measured, baseline included (one probe: 2) */
    int probe;           /* 1: the one-probe row */
    int n;               /* runs scored */
    int failed;          /* runs eligible whose part gave no PFI30 (not in the figures) */
    double err_median, err_p90;        /* |PFI30 error| */
    double cost_median, cost_excl_median; /* fraction of the full sweep's GPU-time */
} pfi_cost_eval_row;

typedef struct pfi_cost_eval {
    int n_runs;          /* runs given */
    int n_truth;         /* runs whose full sweep gives a PFI30 without extrapolating */
    pfi_cost_eval_row row[PFI_COST_EVAL_ROWS];
} pfi_cost_eval;

/* The rows for runs[0..n).  PFI_EINVAL when no run gives a PFI30 (none reaches 30%). */
int pfi_cost_evaluate(const pfi_run *const *runs, int n, pfi_cost_eval *out, pfi_err *err);

#endif
