/* SPDX-License-Identifier: Apache-2.0 */
/* live.c: a job's baseline telemetry read from its GPUs as they run (measure.h): what
 * `pfi predict --live` predicts a curve from, with no sweep. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "measure/measure.h"

enum { F_POWER, F_CLOCK, F_UTIL, F_SM, F_TENSOR, F_DRAM, F_NVLINK, F_PCIE, F_LIMIT, F_ENF, F_N };

int pfi_measure_baseline(pfi_backend *b, const int *gpus, int n, double duration_s,
                         pfi_run *out, pfi_err *err)
{
    if (n <= 0)
        return pfi_err_set(err, PFI_ENOENT, "no GPUs to sample");
    pfi_device d;
    int rc = pfi_hw_info(b, gpus[0], &d, err);
    if (rc != PFI_OK)
        return rc;
    memset(out, 0, sizeof *out);
    snprintf(out->source, sizeof out->source, "live");
    snprintf(out->gpu_type, sizeof out->gpu_type, "%s", d.name);
    out->n_gpus = n;
    out->min_limit_w = d.min_limit_w;
    out->max_limit_w = d.max_limit_w;
    out->default_limit_w = d.default_limit_w;
    out->meta.moe = out->meta.finetune = -1;
    out->n_levels = 1;
    double sum[F_N] = {0};
    int cnt[F_N] = {0}, capped = 0, nreason = 0, ticks = 0;
    double t0 = pfi_hw_now(b), tick = 0.1;
    while (rc == PFI_OK && pfi_hw_now(b) - t0 < duration_s) {
        for (int i = 0; i < n && rc == PFI_OK; i++) {
            pfi_sample s;
            rc = pfi_hw_sample(b, gpus[i], &s, err);
            if (rc != PFI_OK)
                break;
            /* A field counts only where the GPU gave it: missing ones stay NAN, and the
             * predictor falls back to its training mean for them. */
            const struct {
                uint32_t bit;
                double v;
            } f[F_N] = {[F_POWER] = {PFI_F_POWER, s.power_w},
                        [F_CLOCK] = {PFI_F_SM_CLOCK, s.sm_clock_mhz},
                        [F_UTIL] = {PFI_F_GPU_UTIL, s.gpu_util},
                        [F_SM] = {PFI_F_SM_ACTIVE, s.sm_active},
                        [F_TENSOR] = {PFI_F_TENSOR, s.tensor_active},
                        [F_DRAM] = {PFI_F_DRAM, s.dram_active},
                        [F_NVLINK] = {PFI_F_NVLINK, s.nvlink_tx_mibs + s.nvlink_rx_mibs},
                        [F_PCIE] = {PFI_F_PCIE, s.pcie_tx_mibs + s.pcie_rx_mibs},
                        [F_LIMIT] = {PFI_F_LIMIT, s.limit_w},
                        [F_ENF] = {PFI_F_LIMIT, s.enforced_w}};
            for (int k = 0; k < F_N; k++)
                if ((s.have & f[k].bit) && isfinite(f[k].v)) {
                    sum[k] += f[k].v;
                    cnt[k]++;
                }
            if (s.have & PFI_F_REASONS) {
                capped += (s.clock_reasons & PFI_REASON_SW_POWERCAP) != 0;
                nreason++;
            }
        }
        ticks++;
        pfi_hw_sleep(b, tick);
    }
    if (rc != PFI_OK)
        return rc;
    double m[F_N];
    for (int k = 0; k < F_N; k++)
        m[k] = cnt[k] ? sum[k] / cnt[k] : NAN;
    pfi_level *lv = &out->levels[0];
    lv->power_w = m[F_POWER];
    lv->sm_clock_mhz = m[F_CLOCK];
    lv->gpu_util = m[F_UTIL];
    lv->sm_active = m[F_SM];
    lv->tensor_active = m[F_TENSOR];
    lv->dram_active = m[F_DRAM];
    lv->nvlink_mibs = m[F_NVLINK];
    lv->pcie_mibs = m[F_PCIE];
    lv->enforced_w = isfinite(m[F_ENF]) ? m[F_ENF] : d.enforced_w;
    /* A limit the GPU does not answer: the one it enforces stands for it, else its default
     * (an unreadable limit read as "needs a positive baseline ... cap", a bad input). */
    lv->cap_w = isfinite(m[F_LIMIT])         ? m[F_LIMIT]
                : isfinite(d.limit_w)        ? d.limit_w
                : isfinite(lv->enforced_w)   ? lv->enforced_w
                                             : d.default_limit_w;
    lv->powercap_frac = nreason ? (double)capped / nreason : NAN;
    lv->tput = lv->tput_lo = lv->tput_hi = NAN;
    lv->n_samples = ticks * n;
    if (!(lv->power_w > 0))
        return pfi_err_set(err, PFI_ENOTSUP, "the backend gave no power reading in %.1f s",
                           duration_s);
    if (!(lv->cap_w > 0))
        return pfi_err_set(err, PFI_ENOTSUP, "the GPUs answer no power limit (neither set, "
                           "enforced nor default): pfi gpus shows what they answer");
    return PFI_OK;
}

#define LIVE_IDLE_UTIL 0.05 /* below this the GPUs run no job worth predicting */

/* Idle GPUs were given PFI30 1.13; a job capped at 420 W of 700 W 0.93 at every depth (0.48
 * at its default limit). */
int pfi_measure_baseline_usable(const pfi_run *r, int allow_capped, char *note, size_t n,
                                 pfi_err *err)
{
    const pfi_level *lv = &r->levels[0];
    double util = isfinite(lv->gpu_util) ? lv->gpu_util : lv->sm_active;
    note[0] = '\0';
    if (isfinite(util) && util < LIVE_IDLE_UTIL)
        return pfi_err_set(err, PFI_ESTATE, "no job seems to run on the GPUs (utilization %.0f%%, "
                           "%.0f W each): the predictor reads a job's baseline", 100 * util,
                           lv->power_w);
    if (isfinite(r->default_limit_w) && fabs(lv->cap_w - r->default_limit_w) > 1)
        snprintf(note, n, "the GPUs are at %.0f W, not their default %.0f W", lv->cap_w,
                 r->default_limit_w);
    else if (isfinite(lv->enforced_w) && lv->enforced_w < lv->cap_w - 1)
        snprintf(note, n, "the GPUs enforce %.0f W, below their %.0f W limit (an out-of-band "
                 "cap)", lv->enforced_w, lv->cap_w);
    if (note[0] && !allow_capped)
        return pfi_err_set(err, PFI_ESTATE, "%s: the predictor reads a baseline at the default "
                           "limit (pfi restore, pfi ctl budget clear, or --allow-capped to "
                           "predict from this one)", note);
    return PFI_OK;
}
