/* SPDX-License-Identifier: Apache-2.0 */
/* features.c: baseline telemetry and metadata -> the predictor's feature vector. */
#include "core/features.h"

#include <math.h>
#include <stddef.h>

#include "core/curve.h"
#include "core/gpu.h"

static const char *const names[PFI_N_FEATURES] = {
    "power_headroom", "power_of_max",  "clock_ratio",   "powercap_frac", "gpu_util",
    "sm_active",      "tensor_active", "dram_active",   "nvlink",        "pcie",
    "compute_share",  "tensor_per_sm", "busy_headroom", "moe",           "finetune",
    "log_gpus",       "log_tp",        "log_pp",        "log_params",
};

const char *pfi_feature_name(int f)
{
    return f >= 0 && f < PFI_N_FEATURES ? names[f] : "?";
}

static double ratio(double a, double b) { return isfinite(a) && b > 0 ? a / b : NAN; }
static double log2_deg(int d) { return d > 0 ? log2((double)d) : NAN; }
static double clamp01(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

int pfi_features_from_level(const pfi_run *h, const pfi_level *b, double *x, pfi_err *err)
{
    if (!(b->power_w > 0))
        return pfi_err_set(err, PFI_EINVAL, "run %s: the baseline has no power reading", h->name);
    for (int i = 0; i < PFI_N_FEATURES; i++)
        x[i] = NAN;
    double cap = isfinite(b->enforced_w) && b->enforced_w > 0 ? b->enforced_w : b->cap_w;
    x[PFI_FT_POWER_HEADROOM] = ratio(b->power_w, cap);
    x[PFI_FT_POWER_OF_MAX] = ratio(b->power_w, h->max_limit_w);
    x[PFI_FT_CLOCK_RATIO] = ratio(b->sm_clock_mhz, pfi_gpu_max_sm_clock(h->gpu_type));
    x[PFI_FT_POWERCAP_FRAC] = b->powercap_frac;
    x[PFI_FT_GPU_UTIL] = b->gpu_util;
    x[PFI_FT_SM_ACTIVE] = b->sm_active;
    x[PFI_FT_TENSOR_ACTIVE] = b->tensor_active;
    x[PFI_FT_DRAM_ACTIVE] = b->dram_active;
    x[PFI_FT_NVLINK] = b->nvlink_mibs >= 0 ? log1p(b->nvlink_mibs / 1024.0) : NAN;
    x[PFI_FT_PCIE] = b->pcie_mibs >= 0 ? log1p(b->pcie_mibs / 1024.0) : NAN;
    if (isfinite(b->sm_active) && isfinite(b->dram_active))
        x[PFI_FT_COMPUTE_SHARE] = clamp01(b->sm_active - b->dram_active / 2);
    x[PFI_FT_TENSOR_PER_SM] = b->sm_active > 0.01 ? ratio(b->tensor_active, b->sm_active) : NAN;
    x[PFI_FT_BUSY_HEADROOM] = isfinite(b->sm_active) && isfinite(x[PFI_FT_POWER_HEADROOM])
                                  ? b->sm_active * x[PFI_FT_POWER_HEADROOM]
                                  : NAN;
    const pfi_job_meta *m = &h->meta;
    x[PFI_FT_MOE] = m->moe >= 0 ? m->moe : NAN;
    x[PFI_FT_FINETUNE] = m->finetune >= 0 ? (m->finetune || m->lora) : NAN;
    x[PFI_FT_LOG_GPUS] = h->n_gpus > 0 ? log2((double)h->n_gpus) : NAN;
    x[PFI_FT_LOG_TP] = log2_deg(m->tp);
    x[PFI_FT_LOG_PP] = log2_deg(m->pp);
    x[PFI_FT_LOG_PARAMS] = m->params_b > 0 ? log10(m->params_b) : NAN;
    return PFI_OK;
}

int pfi_features_from_run(const pfi_run *run, double *x, pfi_err *err)
{
    int b = pfi_run_baseline(run);
    if (b < 0)
        return pfi_err_set(err, PFI_EINVAL, "run %s has no baseline level", run->name);
    return pfi_features_from_level(run, &run->levels[b], x, err);
}

int pfi_features_have_telemetry(const pfi_run *run)
{
    int b = pfi_run_baseline(run);
    if (b < 0)
        return 0;
    const pfi_level *lv = &run->levels[b];
    return isfinite(lv->sm_clock_mhz) || isfinite(lv->sm_active) || isfinite(lv->tensor_active) ||
           isfinite(lv->dram_active);
}

int pfi_features_missing(const pfi_run *hdr, const pfi_level *base)
{
    double x[PFI_N_FEATURES];
    if (pfi_features_from_level(hdr, base, x, NULL) != PFI_OK)
        return PFI_FT_MOE;
    int n = 0;
    for (int f = 0; f < PFI_FT_MOE; f++)
        n += !isfinite(x[f]);
    return n;
}
