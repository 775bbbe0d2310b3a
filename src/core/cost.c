/* SPDX-License-Identifier: Apache-2.0 */
/* cost.c: GPU-seconds and work lost per characterization level (cost.h). */
#include "core/cost.h"

#include <math.h>
#include <string.h>

int pfi_cost_levels(const double *dur_s, const double *cap_w, const double *tput, int n,
                    int n_gpus, double t0, pfi_cost *out, pfi_err *err)
{
    if (n < 1 || n > PFI_MAX_LEVELS)
        return pfi_err_set(err, PFI_EINVAL, "cost: %d levels (1..%d)", n, PFI_MAX_LEVELS);
    if (n_gpus < 1)
        return pfi_err_set(err, PFI_EINVAL, "cost: %d GPUs", n_gpus);
    for (int i = 0; i < n; i++)
        if (dur_s[i] < 0)
            return pfi_err_set(err, PFI_EINVAL, "cost: level %d lasted %g s", i, dur_s[i]);
    pfi_cost c;
    memset(&c, 0, sizeof c);
    c.n_levels = n;
    c.n_gpus = n_gpus;
    c.baseline = -1;
    if (!(t0 > 0)) {
        for (int i = 0; i < n; i++)
            if (isfinite(cap_w[i]) && (c.baseline < 0 || cap_w[i] > cap_w[c.baseline]))
                c.baseline = i;
        t0 = c.baseline >= 0 ? tput[c.baseline] : NAN;
        if (!(t0 > 0))
            return pfi_err_set(err, PFI_EINVAL, "cost: no baseline rate (top level %d)",
                               c.baseline);
    }
    c.t0 = t0;
    for (int i = 0; i < n; i++) {
        c.gpu_s[i] = dur_s[i] * n_gpus;
        c.lost[i] = (t0 - tput[i]) * dur_s[i];
        c.seconds += dur_s[i];
        c.gpu_s_total += c.gpu_s[i];
        c.lost_total += c.lost[i];
    }
    c.lost_frac = c.lost_total / (t0 * c.seconds);
    *out = c;
    return PFI_OK;
}

int pfi_cost_run(const pfi_run *run, const double *dur_s, pfi_cost *out, pfi_err *err)
{
    double cap[PFI_MAX_LEVELS], tput[PFI_MAX_LEVELS];
    int n = run->n_levels;
    if (n < 1 || n > PFI_MAX_LEVELS)
        return pfi_err_set(err, PFI_EINVAL, "cost: %d levels (1..%d)", n, PFI_MAX_LEVELS);
    for (int i = 0; i < n; i++) {
        cap[i] = run->levels[i].cap_w;
        tput[i] = run->levels[i].tput;
    }
    return pfi_cost_levels(dur_s, cap, tput, n, run->n_gpus > 0 ? run->n_gpus : 1, NAN, out,
                           err);
}
