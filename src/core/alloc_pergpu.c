/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_pergpu.c: per-GPU caps inside a job (alloc_pergpu.h). */
#include "core/alloc_pergpu.h"

#include <math.h>
#include <stddef.h>

#include "core/curve.h"

int pfi_pergpu_table(const pfi_pergpu_job *J, double *gpu_caps, double *x_w, pfi_err *err)
{
    if (J->n_gpus < 1 || J->n_caps < 2)
        return pfi_err_set(err, PFI_EINVAL, "per-GPU table needs >= 1 GPU and >= 2 caps");
    for (int k = 1; k < J->n_caps; k++)
        if (!(J->cap_w[k] > J->cap_w[k - 1]))
            return pfi_err_set(err, PFI_EINVAL, "per-GPU table: caps must increase");
    for (int g = 0; g < J->n_gpus; g++) {
        const double *f = J->clock_mhz + (size_t)g * J->n_caps;
        for (int k = 1; k < J->n_caps; k++)
            if (f[k] < f[k - 1] - 1e-9 || !isfinite(f[k]))
                return pfi_err_set(err, PFI_EINVAL,
                                   "GPU %d: its clock falls from %.0f to %.0f MHz as the cap "
                                   "rises from %.0f to %.0f W",
                                   g, f[k - 1], f[k], J->cap_w[k - 1], J->cap_w[k]);
    }
    for (int k = 0; k < J->n_caps; k++) {
        double slowest = INFINITY;
        for (int g = 0; g < J->n_gpus; g++)
            slowest = fmin(slowest, J->clock_mhz[(size_t)g * J->n_caps + k]);
        double sum = 0;
        for (int g = 0; g < J->n_gpus; g++) {
            /* the least cap at which GPU g holds that clock (its clocks by cap, read back) */
            double c = pfi_lerp_held(J->clock_mhz + (size_t)g * J->n_caps, J->cap_w, J->n_caps,
                                     slowest);
            /* the slowest GPU needs the whole uniform cap, the others no more than it */
            c = fmin(c, J->cap_w[k]);
            gpu_caps[(size_t)g * J->n_caps + k] = c;
            sum += c;
        }
        x_w[k] = sum / J->n_gpus;
    }
    return PFI_OK;
}

int pfi_pergpu_curve(const pfi_pergpu_job *J, const double *x_w, double *cap_out,
                     double *tput_out, int *idx)
{
    int m = 0;
    for (int k = 0; k < J->n_caps; k++) {
        if (m > 0 && !(x_w[k] > cap_out[m - 1] + 1e-9))
            continue;
        cap_out[m] = x_w[k];
        tput_out[m] = J->tput[k];
        if (idx)
            idx[m] = k;
        m++;
    }
    return m;
}

int pfi_pergpu_flat_gpu(const pfi_pergpu_job *J, int *n_tied)
{
    int n = J->n_caps, slow = -1, tied = 0;
    for (int g = 0; g < J->n_gpus; g++) {
        const double *f = J->clock_mhz + (size_t)g * n;
        if (slow < 0 || f[n - 1] < J->clock_mhz[(size_t)slow * n + n - 1])
            slow = g;
    }
    const double *fs = J->clock_mhz + (size_t)slow * n;
    if (!(fs[n - 1] <= fs[0]))
        return -1;
    for (int g = 0; g < J->n_gpus; g++) {
        const double *f = J->clock_mhz + (size_t)g * n;
        tied += f[0] == fs[0] && f[n - 1] == fs[n - 1];
    }
    *n_tied = tied;
    return slow;
}

void pfi_pergpu_split(const pfi_pergpu_job *J, const double *gpu_caps, const double *x_w,
                      double x, double *caps_out)
{
    int n = J->n_caps, k = 0;
    while (k + 1 < n - 1 && x_w[k + 1] < x)
        k++;
    double span = x_w[k + 1] - x_w[k];
    double th = span > 1e-12 ? (x - x_w[k]) / span : 0;
    if (th < 0)
        th = 0;
    if (th > 1)
        th = 1;
    for (int g = 0; g < J->n_gpus; g++) {
        const double *row = gpu_caps + (size_t)g * n;
        caps_out[g] = (1 - th) * row[k] + th * row[k + 1];
    }
}
