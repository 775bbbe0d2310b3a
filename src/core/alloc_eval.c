/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_eval.c: the allocation experiment (alloc_eval.h). */
#include "core/alloc_eval.h"

#include <math.h>
#include <string.h>

double pfi_eval_gap_recovered(double total, double t_equal, double t_oracle)
{
    double gap = t_oracle - t_equal;
    return gap > PFI_GAP_MIN_SHARE * fabs(t_equal) ? (total - t_equal) / gap : NAN;
}

int pfi_alloc_experiment(const pfi_alloc_job *truth, const pfi_alloc_job *pred, int n,
                         const double *cuts, int ncuts, const int *policies, int npolicies,
                         const pfi_alloc_opts *o, pfi_eval_cell *out, double *caps,
                         pfi_err *err)
{
    return pfi_alloc_experiment_ref(truth, pred, n, cuts, ncuts, policies, npolicies, o, NULL,
                                    NULL, out, caps, err);
}

int pfi_alloc_experiment_ref(const pfi_alloc_job *truth, const pfi_alloc_job *pred, int n,
                             const double *cuts, int ncuts, const int *policies, int npolicies,
                             const pfi_alloc_opts *o, const pfi_eval_cell *ref,
                             const double *ref_caps, pfi_eval_cell *out, double *caps,
                             pfi_err *err)
{
    memset(out, 0, sizeof *out * (size_t)ncuts * PFI_POLICY_COUNT);
    if (caps && !ref_caps)
        ref = NULL; /* the caps could not be copied: allocated again */
    int want[PFI_POLICY_COUNT] = {0};
    want[PFI_POLICY_EQUAL] = want[PFI_POLICY_ORACLE] = 1;
    for (int i = 0; i < npolicies; i++) {
        if (policies[i] < 0 || policies[i] >= PFI_POLICY_COUNT)
            return pfi_err_set(err, PFI_EINVAL, "unknown policy %d", policies[i]);
        want[policies[i]] = 1;
    }
    if (!pred && (want[PFI_POLICY_PFI] || want[PFI_POLICY_PROPORTIONAL]))
        return pfi_err_set(err, PFI_EINVAL, "the pfi policies need predicted curves");
    for (int c = 0; c < ncuts; c++) {
        if (!(cuts[c] > 0 && cuts[c] < 1))
            return pfi_err_set(err, PFI_EINVAL, "cut %g must be in (0, 1)", cuts[c]);
        /* The budget comes from the measured baselines, which every policy may see. */
        double budget = pfi_alloc_budget_from_cut(truth, n, cuts[c]);
        pfi_eval_cell *row = out + (size_t)c * PFI_POLICY_COUNT;
        const pfi_eval_cell *rrow = ref ? ref + (size_t)c * PFI_POLICY_COUNT : NULL;
        if (rrow && rrow[PFI_POLICY_EQUAL].infeasible) { /* as the loop below leaves it */
            memcpy(row, rrow, sizeof *row * PFI_POLICY_COUNT);
            continue;
        }
        /* equal and oracle first: the others are scored against them */
        static const int order[PFI_POLICY_COUNT] = {PFI_POLICY_EQUAL, PFI_POLICY_ORACLE,
                                                    PFI_POLICY_PFI, PFI_POLICY_PROPORTIONAL};
        for (int k = 0; k < PFI_POLICY_COUNT; k++) {
            int p = order[k];
            if (!want[p])
                continue;
            const pfi_alloc_job *seen =
                (p == PFI_POLICY_PFI || p == PFI_POLICY_PROPORTIONAL) ? pred : truth;
            if (rrow && (p == PFI_POLICY_EQUAL || p == PFI_POLICY_ORACLE)) {
                /* allocated on the truth before: the same answer */
                row[p] = rrow[p];
                if (caps) {
                    size_t at = ((size_t)c * PFI_POLICY_COUNT + (size_t)p) * (size_t)n;
                    memcpy(caps + at, ref_caps + at, sizeof *caps * (size_t)n);
                }
                continue;
            }
            pfi_alloc_result r;
            int rc = pfi_alloc_policy(p, seen, n, NULL, budget, o, &r, err);
            if (rc == PFI_EINFEASIBLE && p == PFI_POLICY_EQUAL) {
                /* no SLAs here: only the minimum caps, the same for every policy */
                double need = 0;
                for (int j = 0; j < n; j++)
                    need += truth[j].n_gpus * fmax(truth[j].min_cap_w, truth[j].cap_w[0]);
                for (int q = 0; q < PFI_POLICY_COUNT; q++) {
                    row[q].infeasible = 1;
                    row[q].budget_w = budget;
                    row[q].min_budget_w = need;
                    row[q].gap_recovered = NAN;
                }
                pfi_err_clear(err);
                break;
            }
            if (rc)
                return pfi_err_prefix(err, "cut %g, policy %s: ", cuts[c], pfi_policy_name(p));
            double total = 0;
            for (int j = 0; j < n; j++)
                total += pfi_alloc_tput_at(&truth[j], r.cap_w[j]);
            if (caps)
                memcpy(caps + ((size_t)c * PFI_POLICY_COUNT + (size_t)p) * (size_t)n, r.cap_w,
                       sizeof *caps * (size_t)n);
            pfi_eval_cell *cell = &row[p];
            cell->done = 1;
            cell->budget_w = budget;
            cell->power_w = r.power_w;
            cell->total_throughput = total;
            cell->optimal = r.optimal;
            pfi_alloc_result_free(&r);
        }
        if (row[PFI_POLICY_EQUAL].infeasible)
            continue;
        double teq = row[PFI_POLICY_EQUAL].total_throughput;
        for (int p = 0; p < PFI_POLICY_COUNT; p++) {
            if (!row[p].done)
                continue;
            row[p].per_job_gain_vs_equal = (row[p].total_throughput - teq) / n;
            row[p].gap_recovered = pfi_eval_gap_recovered(row[p].total_throughput, teq,
                                                          row[PFI_POLICY_ORACLE].total_throughput);
        }
    }
    return PFI_OK;
}
