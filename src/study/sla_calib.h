/* SPDX-License-Identifier: Apache-2.0 */
/* sla_calib.h: pfi's curves calibrated on the other jobs' out-of-fold errors.  pfi places an
 * SLA job where its own curve reaches the SLA; a curve that is optimistic at low caps reaches
 * it at a low cap, so the jobs placed low are selected for optimistic error.  Regressing the
 * true slowdown on the predicted one at the same relative cap, over the OTHER jobs, removes
 * that selection in expectation.  Pure: reads the truth of the other jobs only. */
#ifndef PFI_STUDY_SLA_CALIB_H
#define PFI_STUDY_SLA_CALIB_H

#include "core/alloc.h"
#include "core/alloc_curve.h"

/* The grid of relative caps u = cap / max cap the lines are fitted at: U0, U0 + DU, ..., 1. */
#define PFI_CALIB_U0 0.40
#define PFI_CALIB_DU 0.05
/* Fewer pairs than this at a grid point (or no spread in the predicted slowdown): b = 1 and
 * a = the mean of true - predicted slowdown there. */
#define PFI_CALIB_MIN_PAIRS 3

/* For each job j, the line sd_true = a + b sd_pred at relative cap u, least squares over the
 * OTHER jobs k at the grid points where both of k's curves cover u (sd: slowdown against the
 * curve's own value at the max cap).  a[j * g + i], b[j * g + i] at grid point i, g =
 * pfi_calib_grid_n().  No pair at all at a point: a = 0, b = 1.  Returns 0, -1 when out of
 * memory. */
int pfi_calib_grid_n(void);
int pfi_calib_lines(const pfi_alloc_job *tj, const pfi_alloc_job *pj, int n, double *a,
                    double *b);

/* Job j's curve calibrated: out (cap points copied into buf) = pj[j] with throughput
 * T0 (1 - clamp(a(u) + b(u) sd_pred(c), 0, 1)) at each of its cap points c, u = c / max cap,
 * a(u), b(u) read linearly between grid points and held beyond the ends; T0 pfi's curve at
 * the max cap.  a, b: job j's rows from pfi_calib_lines. */
void pfi_calib_curve(const pfi_alloc_job *pj, const double *a, const double *b,
                     pfi_alloc_curve *buf, pfi_alloc_job *out);

#endif
