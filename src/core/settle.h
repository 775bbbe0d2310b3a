/* SPDX-License-Identifier: Apache-2.0 */
/* settle.h: how long a sampled signal takes to settle after a step (a GPU's power or clock
 * after its cap is lowered), by a rule fixed in advance and robust to single-sample noise:
 *
 *   before  = median of the samples before the step;
 *   final   = median of the samples in the last final_s seconds;
 *   band    = band_frac x |final - before| (a share of the step's own size);
 *   m(t)    = median of the samples within window_s/2 of t (a moving median);
 *   settled = the first sample time after the step from which m stays within band of final to
 *             the end; the settling time is that time less the step's.
 * Pure: no I/O, no globals. */
#ifndef PFI_CORE_SETTLE_H
#define PFI_CORE_SETTLE_H

#define PFI_SETTLE_WINDOW_S 0.25
#define PFI_SETTLE_FINAL_S 1.0
#define PFI_SETTLE_BAND 0.05

/* Settling time in seconds of y[] sampled at t[] (ascending) after a step at step_at; NAN when
 * there are no samples before the step or in the final window, or the step is zero. */
double pfi_settle_time(const double *t, const double *y, int n, double step_at, double window_s,
                       double final_s, double band_frac);

/* For a signal that moves in steps (an SM clock, in bins of 15 MHz), when it reaches its final
 * value: the time, less step_at, of the first sample after the step from which every sample
 * equals the last one to the end.  The band above can be wider than one step (5% of a 390 MHz
 * step is 20 MHz), so a clock a bin above its final value counts as settled; this says when
 * it stops moving.  NAN when no sample lies after the step. */
double pfi_final_time(const double *t, const double *y, int n, double step_at);

#endif
