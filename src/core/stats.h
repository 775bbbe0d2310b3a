/* SPDX-License-Identifier: Apache-2.0 */
/* stats.h: order statistics of a sample, in one place (PFI's bootstrap interval, the probe
 * prior's exponent, the neighbours' median step, the evaluation's median errors).
 *
 * The median is GSL's.  The quantile is written out: it is GSL's definition too (linear between
 * the order statistics at q * (n - 1), R's type 7), but GSL evaluates it as (1-d)*a + d*b, which
 * rounds differently from a + (b-a)*d in the last bit for about one quantile in six, and the
 * intervals pfi has always reported must not move. */
#ifndef PFI_CORE_STATS_H
#define PFI_CORE_STATS_H

/* qsort comparator: doubles ascending. */
int pfi_cmp_double(const void *a, const void *b);

/* The median of v[0..n-1], which it sorts in place; NAN when n <= 0. */
double pfi_median(double *v, int n);

/* Quantile q (0..1) of v[0..n-1] sorted ascending, linear between order statistics; NAN when
 * n <= 0. */
double pfi_quantile_sorted(const double *v, int n, double q);

#endif
