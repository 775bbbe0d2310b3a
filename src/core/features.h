/* SPDX-License-Identifier: Apache-2.0 */
/* features.h: what the runtime predictor knows about a job: only the telemetry a real GPU gives
 * while the job runs at its baseline (the default-limit level of a run, or a live sample), plus
 * job metadata when known.  Never a simulator parameter.
 *
 * Raw signals become features a linear model can use: ratios to device limits, activity
 * fractions, log-scaled link traffic, and a few products that carry the physics (the compute
 * share of the step ~ SM activity x clock headroom).  A missing signal is NAN here; the model
 * replaces it with its training mean (so it contributes nothing) and says so.
 * Pure: no I/O, no globals. */
#ifndef PFI_CORE_FEATURES_H
#define PFI_CORE_FEATURES_H

#include "core/err.h"
#include "core/run.h"

enum pfi_feature {
    PFI_FT_POWER_HEADROOM = 0, /* P0 / baseline cap: 1 = the cap binds at baseline */
    PFI_FT_POWER_OF_MAX,       /* P0 / max limit */
    PFI_FT_CLOCK_RATIO,        /* SM clock / max SM clock of the GPU type */
    PFI_FT_POWERCAP_FRAC,      /* fraction of time under the SW power cap */
    PFI_FT_GPU_UTIL,
    PFI_FT_SM_ACTIVE,
    PFI_FT_TENSOR_ACTIVE,
    PFI_FT_DRAM_ACTIVE,
    PFI_FT_NVLINK,             /* log1p(NVLink GiB/s per GPU) */
    PFI_FT_PCIE,               /* log1p(PCIe GiB/s per GPU) */
    PFI_FT_COMPUTE_SHARE,      /* sm_active - dram_active/2, clamped to [0,1]: compute-bound part */
    PFI_FT_TENSOR_PER_SM,      /* tensor_active / sm_active */
    PFI_FT_BUSY_HEADROOM,      /* sm_active x power headroom */
    PFI_FT_MOE,                /* 1 MoE, 0 dense (NAN unknown) */
    PFI_FT_FINETUNE,           /* 1 fine-tuning (LoRA or full), 0 pretraining */
    PFI_FT_LOG_GPUS,           /* log2(GPU count) */
    PFI_FT_LOG_TP,             /* log2 of the parallel degrees (NAN unknown) */
    PFI_FT_LOG_PP,
    PFI_FT_LOG_PARAMS,         /* log10(parameters in billions) */
    PFI_N_FEATURES
};

const char *pfi_feature_name(int f);

/* Features from one baseline level and the run's header (limits, GPU type, count, metadata).
 * x must hold PFI_N_FEATURES values; missing ones are NAN.  PFI_EINVAL when the level has no
 * power drawn (the one signal every GPU gives). */
int pfi_features_from_level(const pfi_run *hdr, const pfi_level *base, double *x, pfi_err *err);
/* The same from a run's baseline level (core/curve.h's pfi_run_baseline). */
int pfi_features_from_run(const pfi_run *run, double *x, pfi_err *err);
/* How many telemetry features (not metadata: those before PFI_FT_MOE) a baseline level lacks,
 * all of them when it has no power drawn.  Each falls back to the training mean, so a job that
 * lacks most of them is predicted near the fleet's mean, and a report must say so. */
int pfi_features_missing(const pfi_run *hdr, const pfi_level *base);
/* Whether a run's baseline level has GPU telemetry beyond power (the SM clock or an activity):
 * what the predictor learns from.  Imported public sweeps record only power and throughput;
 * trained on them the predictor learned nothing (R2 0.04) and was reported as trained.  The
 * one rule of pfi study, pfi model train / eval and pfi evaluate --probes 0. */
int pfi_features_have_telemetry(const pfi_run *run);

#endif
