/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_curve.h: the one conversion from a job's curve (core/curve.h) to the allocator's arrays
 * (core/alloc.h), agreed with the PFI code: the allocator reads pfi_curve_tput_at_cap().
 *   measured curves  the measured caps themselves: the curve is linear in the cap between
 *                    measured levels (the paper's setup), so those points represent it exactly, and the
 *                    cap range is what was measured;
 *   fitted/predicted a grid of at most PFI_ALLOC_CURVE_PTS caps over the cap range (the fit is
 *                    smooth; 10 W between points on a 200-700 W GPU).
 * Throughput is the run's unit (t0 * T/T0), or GPU-weighted relative throughput n * T/T0 for
 * populations without tokens/s (the paper's setup).  Pure. */
#ifndef PFI_CORE_ALLOC_CURVE_H
#define PFI_CORE_ALLOC_CURVE_H

#include "core/alloc.h"
#include "core/curve.h"

#define PFI_ALLOC_CURVE_PTS 64

/* Storage for one job's arrays; pfi_alloc_job points into it, so it must outlive the job. */
typedef struct pfi_alloc_curve {
    double cap_w[PFI_ALLOC_CURVE_PTS];
    double tput[PFI_ALLOC_CURVE_PTS];
} pfi_alloc_curve;

/* Fills *job (id not copied; SLA none; weight 1) from curve c read through `view`
 * (PFI_VIEW_*).  relative: GPU-weighted relative throughput.  The cap range is the curve's,
 * narrowed to [min_cap_w, max_cap_w] when those are > 0 (e.g. a predicted curve kept inside
 * what was measured). */
int pfi_alloc_job_from_curve(const pfi_curve *c, int view, int relative, const char *id,
                             double min_cap_w, double max_cap_w, pfi_alloc_curve *buf,
                             pfi_alloc_job *job, pfi_err *err);

/* What a job draws under a cap, relative to its baseline: draw/P0 = d(cap/P0), piecewise
 * linear through (u[i], d[i]), u increasing, d(0) = 0 and flat at d[n-1] beyond u[n-1].
 * A prediction knows the slowdown per power DRAWN; jobs seldom draw their whole cap (the
 * simulated fleet draws 94% of a cap just below its baseline, 98% of a deep one; A100
 * pipelines ~93%), and reading a prediction at draw = cap overstates throughput at every cap. */
#define PFI_DRAW_PTS 40
typedef struct pfi_draw_model {
    int n;
    double u[PFI_DRAW_PTS], d[PFI_DRAW_PTS];
} pfi_draw_model;

/* draw = min(P0, rho x cap): rho = draw/cap measured at a probe (1: the cap binds exactly). */
void pfi_draw_model_ratio(double rho, pfi_draw_model *out);
/* Learned from measured levels (cap/P0, draw/P0): medians in bins of 0.05 of cap/P0 (bins of
 * fewer than 5 levels dropped), made non-decreasing and <= 1.  Falls back to ratio 1 when no bin
 * is full. */
void pfi_draw_model_fit(const double *u, const double *d, int n, pfi_draw_model *out);
double pfi_draw_model_at(const pfi_draw_model *m, double u);
/* One job's own draw model from its measured levels (cap/P0, draw/P0), sorted by cap, made
 * non-decreasing and <= 1.  Returns the number of points (< 2: no draws measured, *out unset). */
int pfi_draw_model_from_curve(const pfi_curve *c, pfi_draw_model *out);
/* The mean of n draw models on a grid of cap/P0 from u_lo to u_hi (at most PFI_DRAW_PTS
 * points): jobs alike in telemetry draw alike under a cap, a pooled median does not know which
 * job it reads. */
void pfi_draw_model_mean(const pfi_draw_model *m, int n, double u_lo, double u_hi,
                         pfi_draw_model *out);

/* A predicted curve (its parametric fit) read through a draw model (NULL: ratio 1). */
int pfi_alloc_job_from_prediction(const pfi_curve *pred, const pfi_draw_model *draw,
                                  int relative, const char *id, double min_cap_w,
                                  double max_cap_w, pfi_alloc_curve *buf, pfi_alloc_job *job,
                                  pfi_err *err);

/* Job q's curve corrected through one observation: its slowdown s_obs seen at cap c0, against
 * the SLA's reference T0 (q->t0, or the curve at max_cap_w when that is NAN).  With s(c) =
 * 1 - T(c)/T0 and d = s_obs - s(c0),
 * s'(c) = min(1, s(c) + d w(c)), w = 1 at and below c0 and (max - c)/(max - c0) above, so the
 * curve passes through the observation (c0 becomes one of its points while there is room: at
 * PFI_ALLOC_CURVE_PTS it is read between its neighbours), keeps T(max cap), and stays monotone
 * when q is.  A curve that already promises no more than was seen (d <= 0) is copied as it is:
 * an observation only ever lowers a curve.  *out = *q but for the points, which go to buf (buf
 * may hold q's own points).  PFI_EINVAL when c0 is not inside [the first point, max_cap_w),
 * s_obs not in [0, 1], there is no T0 > 0, or q has more than PFI_ALLOC_CURVE_PTS points;
 * *out untouched. */
int pfi_alloc_curve_through(const pfi_alloc_job *q, double c0, double s_obs, pfi_alloc_curve *buf,
                            pfi_alloc_job *out, pfi_err *err);

#endif
