/* SPDX-License-Identifier: Apache-2.0 */
/* policy.h: the allocation policies compared by `pfi evaluate` and offered by `pfi allocate`.
 *   equal                every job capped at the same fraction x of its baseline draw P0
 *                        (floored at its minimum cap or SLA floor), x the largest that fits
 *   pfi                  the optimal solver (alloc.h) on PREDICTED curves: the caller passes
 *                        curves from the predictor or from baseline + probes, never the truth
 *   oracle               the optimal solver on the TRUE curves
 *   proportional-to-pfi  a rule an operator could apply by hand: each job sheds a fraction of
 *                        P0 inversely proportional to its PFI30, scaled to meet the budget
 * pfi and oracle run the same code: only the curves differ, which is the point of the paper's
 * experiment.  Every policy honours the budget and the SLA floors of alloc.h.  Pure. */
#ifndef PFI_CORE_POLICY_H
#define PFI_CORE_POLICY_H

#include "core/alloc.h"

typedef enum pfi_policy {
    PFI_POLICY_EQUAL = 0,
    PFI_POLICY_PFI,
    PFI_POLICY_ORACLE,
    PFI_POLICY_PROPORTIONAL,
    PFI_POLICY_COUNT
} pfi_policy;

/* "equal", "pfi", "oracle", "proportional-to-pfi"; -1 when unknown. */
int pfi_policy_parse(const char *name);
const char *pfi_policy_name(int policy);

/* PFI at 30% shed read on a job's curve: (1 - T(0.7 P0)/T0) / 0.3 (the cap binds at 0.7 P0,
 * so the job draws about its cap there). */
double pfi_alloc_job_pfi30(const pfi_alloc_job *job);

int pfi_alloc_equal(const pfi_alloc_job *jobs, int n, double budget_w, const pfi_alloc_opts *o,
                    pfi_alloc_result *res, pfi_err *err);
/* pfi30[j] (NULL, or NAN entries: read on the job's curve) drives the shed of job j. */
int pfi_alloc_proportional(const pfi_alloc_job *jobs, int n, const double *pfi30,
                           double budget_w, const pfi_alloc_opts *o, pfi_alloc_result *res,
                           pfi_err *err);
/* Dispatch by policy; pfi and oracle call pfi_alloc_solve on the curves given. */
int pfi_alloc_policy(int policy, const pfi_alloc_job *jobs, int n, const double *pfi30,
                     double budget_w, const pfi_alloc_opts *o, pfi_alloc_result *res,
                     pfi_err *err);

#endif
