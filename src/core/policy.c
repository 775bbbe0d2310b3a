/* SPDX-License-Identifier: Apache-2.0 */
/* policy.c: the simple policies (equal, proportional-to-pfi) and the dispatch (policy.h). */
#include "core/policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[PFI_POLICY_COUNT] = {"equal", "pfi", "oracle",
                                                    "proportional-to-pfi"};

int pfi_policy_parse(const char *name)
{
    for (int i = 0; name && i < PFI_POLICY_COUNT; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

const char *pfi_policy_name(int policy)
{
    return policy >= 0 && policy < PFI_POLICY_COUNT ? names[policy] : "unknown";
}

double pfi_alloc_job_pfi30(const pfi_alloc_job *J)
{
    double t0 = isnan(J->t0) ? pfi_alloc_tput_at(J, J->max_cap_w) : J->t0;
    if (!(t0 > 0))
        return NAN;
    return (1.0 - pfi_alloc_tput_at(J, 0.7 * J->p0_w) / t0) / 0.3;
}

/* Caps of a one-parameter family: k_j(x) = clamp(floor(cap_j(x) / step), floor_j, max_j), and
 * on a curve with a dip, where a cap above the SLA floor can break the SLA again, the highest
 * cap at or below that which meets it (the floor does): lower, so still within the budget, and
 * still rising with x.  dip[j] (NULL: none) marks such jobs, sla their SLAs. */
typedef double (*cap_fn)(const pfi_alloc_job *J, double x, double extra);

static long long family_cost(const pfi_alloc_job *jobs, int n, const int *kf, const int *kmax,
                             const unsigned char *dip, const double *sla, double step, cap_fn f,
                             const double *extra, double x, int *k)
{
    long long sum = 0;
    for (int j = 0; j < n; j++) {
        double c = floor(f(&jobs[j], x, extra ? extra[j] : 0) / step + 1e-9);
        int kk = c < kf[j] ? kf[j] : c > kmax[j] ? kmax[j] : (int)c;
        while (dip && dip[j] && kk > kf[j] && !pfi_alloc_sla_met(&jobs[j], kk * step, sla[j]))
            kk--;
        if (k)
            k[j] = kk;
        sum += (long long)jobs[j].n_gpus * kk;
    }
    return sum;
}

/* Jobs with an SLA whose curve falls somewhere (a cap above its floor may not meet it). */
static unsigned char *sla_dips(const pfi_alloc_job *jobs, int n, const double *sla)
{
    unsigned char *dip = calloc((size_t)(n > 0 ? n : 1), 1);
    for (int j = 0; dip && j < n; j++)
        for (int i = 1; !isnan(sla[j]) && i < jobs[j].n_points && !dip[j]; i++)
            dip[j] = jobs[j].tput[i] < jobs[j].tput[i - 1];
    return dip;
}

/* The fitting member of a family whose cost falls as x grows (dir = -1) or rises (dir = +1):
 * bisection keeps the side that fits, so the caps returned never exceed the budget. */
static int run_family(const pfi_alloc_job *jobs, int n, double budget_w, const pfi_alloc_opts *o,
                      cap_fn f, const double *extra, double x_lo, double x_hi, int rising,
                      pfi_alloc_result *res, pfi_err *err)
{
    int *kf = malloc((size_t)(n > 0 ? n : 1) * sizeof *kf);
    int *kmax = malloc((size_t)(n > 0 ? n : 1) * sizeof *kmax);
    int *k = malloc((size_t)(n > 0 ? n : 1) * sizeof *k);
    int rc = (!kf || !kmax || !k) ? pfi_err_set(err, PFI_ENOMEM, "out of memory for %d jobs", n)
                                  : pfi_alloc_prepare(jobs, n, budget_w, o, kf, kmax, res, err);
    if (rc) {
        free(kf);
        free(kmax);
        free(k);
        memset(res, 0, sizeof *res);
        return rc;
    }
    long long bu = pfi_alloc_budget_units(budget_w, o->step_w); /* checked by pfi_alloc_prepare */
    unsigned char *dip = sla_dips(jobs, n, res->sla);
    if (!dip) {
        free(kf);
        free(kmax);
        free(k);
        pfi_alloc_result_free(res);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory for %d jobs", n);
    }
    const double *sla = res->sla;
    /* fit: the x side whose caps fit the budget */
    double fit = rising ? x_lo : x_hi, other = rising ? x_hi : x_lo;
    if (family_cost(jobs, n, kf, kmax, dip, sla, o->step_w, f, extra, other, NULL) <= bu)
        fit = other;
    else
        for (int it = 0; it < 100; it++) {
            double mid = 0.5 * (fit + other);
            if (family_cost(jobs, n, kf, kmax, dip, sla, o->step_w, f, extra, mid, NULL) <= bu)
                fit = mid;
            else
                other = mid;
        }
    family_cost(jobs, n, kf, kmax, dip, sla, o->step_w, f, extra, fit, k);
    free(dip);
    for (int j = 0; j < n; j++)
        res->cap_w[j] = k[j] * o->step_w;
    pfi_alloc_finish(jobs, n, o, res);
    res->upper_bound = NAN;
    res->optimal = 0;
    free(kf);
    free(kmax);
    free(k);
    return PFI_OK;
}

static double equal_cap(const pfi_alloc_job *J, double x, double extra)
{
    return x * J->p0_w;
}

int pfi_alloc_equal(const pfi_alloc_job *jobs, int n, double budget_w, const pfi_alloc_opts *o,
                    pfi_alloc_result *res, pfi_err *err)
{
    pfi_alloc_opts d;
    if (!o) {
        pfi_alloc_opts_default(&d);
        o = &d;
    }
    double xmax = 0;
    for (int j = 0; j < n; j++)
        if (jobs[j].p0_w > 0)
            xmax = fmax(xmax, (jobs[j].max_cap_w + o->step_w) / jobs[j].p0_w);
    return run_family(jobs, n, budget_w, o, equal_cap, NULL, 0, xmax, 1, res, err);
}

/* Shed y / PFI of P0: a job that loses little per watt gives more. */
static double prop_cap(const pfi_alloc_job *J, double y, double pfi)
{
    return J->p0_w * (1.0 - y / pfi);
}

int pfi_alloc_proportional(const pfi_alloc_job *jobs, int n, const double *pfi30,
                           double budget_w, const pfi_alloc_opts *o, pfi_alloc_result *res,
                           pfi_err *err)
{
    pfi_alloc_opts d;
    if (!o) {
        pfi_alloc_opts_default(&d);
        o = &d;
    }
    double *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (!p)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory for %d jobs", n);
    double ymax = 0;
    for (int j = 0; j < n; j++) {
        double v = pfi30 && !isnan(pfi30[j]) ? pfi30[j] : pfi_alloc_job_pfi30(&jobs[j]);
        /* A job whose curve says power is free still sheds at a finite rate. */
        p[j] = isfinite(v) && v > 0.05 ? v : 0.05;
        ymax = fmax(ymax, p[j]);
    }
    int rc = run_family(jobs, n, budget_w, o, prop_cap, p, 0, ymax, 0, res, err);
    free(p);
    return rc;
}

int pfi_alloc_policy(int policy, const pfi_alloc_job *jobs, int n, const double *pfi30,
                     double budget_w, const pfi_alloc_opts *o, pfi_alloc_result *res,
                     pfi_err *err)
{
    switch (policy) {
    case PFI_POLICY_EQUAL:
        return pfi_alloc_equal(jobs, n, budget_w, o, res, err);
    case PFI_POLICY_PFI:
    case PFI_POLICY_ORACLE:
        return pfi_alloc_solve(jobs, n, budget_w, o, res, err);
    case PFI_POLICY_PROPORTIONAL:
        return pfi_alloc_proportional(jobs, n, pfi30, budget_w, o, res, err);
    default:
        memset(res, 0, sizeof *res);
        return pfi_err_set(err, PFI_EINVAL,
                           "unknown policy %d (equal, pfi, oracle, proportional-to-pfi)", policy);
    }
}
