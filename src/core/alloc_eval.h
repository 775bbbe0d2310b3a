/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_eval.h: the paper's allocation experiment (its "Allocation experiment").
 * For each cut, B = (1 - cut) * sum_j n_j P0_j; each policy allocates on the curves it may see
 * (equal and oracle: the truth; pfi and proportional-to-pfi: the predictions) and every
 * allocation is scored on the TRUE curves:
 *   total_throughput       sum_j T_j(cap_j) on the truth
 *   per_job_gain_vs_equal  (total - total of equal) / number of jobs
 *   gap_recovered          (total - equal) / (oracle - equal)   (NAN when the oracle is not
 *                          above equal by PFI_GAP_MIN_SHARE of equal's total: no gap to share)
 * Pure. */
#ifndef PFI_CORE_ALLOC_EVAL_H
#define PFI_CORE_ALLOC_EVAL_H

#include "core/alloc.h"
#include "core/policy.h"

/* The least gain of the oracle over equal, as a share of equal's total throughput, over which
 * gap_recovered is a ratio worth printing: a tenth of the 1% throughput change pfi's own rules
 * treat as noise in a measured curve (core/pfi.h's non_monotone).  Below it the ratio is over
 * almost nothing: with every SLA relaxed at a 50% cut the oracle was 0.001% above equal, and
 * pfi's 0.03% more read as 3,083% of the gap. */
#define PFI_GAP_MIN_SHARE 1e-3

/* (total - t_equal) / (t_oracle - t_equal); NAN unless t_oracle - t_equal > PFI_GAP_MIN_SHARE x
 * |t_equal|. */
double pfi_eval_gap_recovered(double total, double t_equal, double t_oracle);

typedef struct pfi_eval_cell {
    int done;                 /* this policy was run at this cut */
    double budget_w, power_w; /* power_w: sum n_j cap_j <= budget_w */
    double total_throughput;
    double per_job_gain_vs_equal;
    double gap_recovered;
    int optimal;              /* for solver policies: proven optimal on the curves it saw */
    int infeasible;           /* the cut is deeper than the jobs' minimum caps allow */
    double min_budget_w;      /* what the minimum caps need (set when infeasible) */
} pfi_eval_cell;

/* truth[j] and pred[j] describe the same job (same id, GPUs, P0, cap range); pred may be NULL
 * when no policy in `policies` needs it.  out has ncuts * PFI_POLICY_COUNT cells, indexed
 * [cut * PFI_POLICY_COUNT + policy]; equal and oracle always run (the gap needs them).  A cut
 * below what the minimum caps need marks its cells infeasible (and is not an error).
 * caps (may be NULL): ncuts * PFI_POLICY_COUNT * n per-GPU caps, [(cut * COUNT + policy) * n + j]. */
int pfi_alloc_experiment(const pfi_alloc_job *truth, const pfi_alloc_job *pred, int n,
                         const double *cuts, int ncuts, const int *policies, int npolicies,
                         const pfi_alloc_opts *o, pfi_eval_cell *out, double *caps,
                         pfi_err *err);

/* pfi_alloc_experiment with the policies that see the truth (equal and oracle) taken from an
 * earlier run on the same truth, cuts and options instead of allocated again: ref its cells,
 * ref_caps its caps (when caps is given without ref_caps, everything is allocated).  Those
 * allocations do not depend on the predictions, so scoring many predictions of one population
 * allocates them once; the cells and caps are pfi_alloc_experiment's (ref NULL: it). */
int pfi_alloc_experiment_ref(const pfi_alloc_job *truth, const pfi_alloc_job *pred, int n,
                             const double *cuts, int ncuts, const int *policies, int npolicies,
                             const pfi_alloc_opts *o, const pfi_eval_cell *ref,
                             const double *ref_caps, pfi_eval_cell *out, double *caps,
                             pfi_err *err);

#endif
