/* probe.h: a job's curve from its baseline plus one or two short probes at reduced caps,
 * for operators who accept a probe but not a sweep.
 *
 * A probe at depth d sets the cap to (1 - d) x the baseline draw P0 (so the job sheds about d
 * of its power whether or not its baseline draw reached its cap) and reads the slowdown there.
 * One probe: the power law s = a r^b through the origin and the probe, with b from a prior
 * (the median exponent over reference curves).  Two probes: a and b both from the probes (b
 * clamped to the family's range).  The default depth, 0.40, is where one probe predicted the
 * real public transformer curves best over 80, 70 and 60% of baseline power (the largest of
 * the three median errors is least there: `pfi model probe-eval --scan`, docs/pfi.md).
 * Pure: no I/O, no globals. */
#ifndef PFI_CORE_PROBE_H
#define PFI_CORE_PROBE_H

#include "core/curve.h"
#include "core/err.h"

/* The prior exponent: median of the power-law exponents of the real public transformer curves
 * (`pfi model probe-eval` recomputes it, leaving the scored run out). */
#define PFI_PROBE_B_PRIOR 2.0
#define PFI_PROBE_DEPTH 0.40

/* The cap to set for a probe at depth d, within [min_cap_w, max_cap_w]. */
double pfi_probe_cap(double p0_w, double depth, double min_cap_w, double max_cap_w);

/* Power law through the origin and the probes (r[i], s[i]), n = 1 or 2.  b_prior is used for
 * one probe, and for two when they cannot fix b (same depth, or no slowdown at either). */
int pfi_probe_fit(const double *r, const double *s, int n, double b_prior, pfi_fit *out,
                  pfi_err *err);

/* Simulates probing a measured curve: picks the measured level whose cap is nearest each
 * probe cap (pfi_probe_cap at depths[i]), fits from those levels only, and returns the
 * predicted curve (same baseline and cap range).  *used (may be NULL) gets the indices of the
 * levels used, so an evaluation never scores a probe on itself. */
int pfi_probe_curve(const pfi_curve *truth, const double *depths, int n, double b_prior,
                    pfi_curve *out, int *used, pfi_err *err);

/* The median power-law exponent of fitted curves (ignores those with fewer than 2 shed
 * points or a zero scale).  NAN when none. */
double pfi_probe_median_b(const pfi_curve *curves, int n, int skip);

#endif
