/* SPDX-License-Identifier: Apache-2.0 */
/* cost.h: what characterizing a job costs: per level measured (a sweep's level or a probe),
 * the GPU-seconds it took and the work lost against the job's baseline rate.
 *
 *   gpu_s[i]       = dur_s[i] x n_gpus             (the GPUs were the job's, at a lower cap)
 *   lost[i]        = (T0 - tput[i]) x dur_s[i]     (tokens, or samples for a samples/s run)
 *   T0             = the baseline rate given, else the rate of the level at the highest cap
 *
 * lost[i] is net: a level measured faster than the baseline (noise) counts negative, so the
 * total is not biased upward by noise.  The baseline level itself loses nothing by this rule
 * when T0 is its own rate.  A level whose duration or rate is unknown (NAN) has NAN figures and
 * makes the totals NAN: a total is never silently partial.
 * Pure: no I/O, no globals. */
#ifndef PFI_CORE_COST_H
#define PFI_CORE_COST_H

#include "core/err.h"
#include "core/run.h"

typedef struct pfi_cost {
    int n_levels, n_gpus;
    int baseline;            /* index of the level at the highest cap; -1 when T0 was given */
    double t0;               /* the baseline rate used */
    double gpu_s[PFI_MAX_LEVELS];
    double lost[PFI_MAX_LEVELS];
    double seconds, gpu_s_total, lost_total; /* sums over the levels (NAN if any is unknown) */
    double lost_frac;        /* lost_total / (T0 x seconds): the share of the work given up */
} pfi_cost;

/* Levels i = 0..n-1: dur_s[i] wall seconds at cap_w[i] with rate tput[i].  t0 > 0 is the
 * baseline rate; t0 NAN or <= 0: the rate at the highest cap.  PFI_EINVAL for n outside
 * 1..PFI_MAX_LEVELS, n_gpus < 1, a negative duration, or no usable baseline rate. */
int pfi_cost_levels(const double *dur_s, const double *cap_w, const double *tput, int n,
                    int n_gpus, double t0, pfi_cost *out, pfi_err *err);

/* The cost of a measured run's levels (dur_s[i] for run->levels[i]), the baseline the rate at
 * its highest cap. */
int pfi_cost_run(const pfi_run *run, const double *dur_s, pfi_cost *out, pfi_err *err);

#endif
