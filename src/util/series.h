/* SPDX-License-Identifier: Apache-2.0 */
/* series.h: a fixed-size ring of recent samples of a few quantities over time (the status
 * page's plot of the last hour): at most one sample per min_dt seconds, the oldest dropped
 * when full.  Plain data, no locking: its owner guards it. */
#ifndef PFI_UTIL_SERIES_H
#define PFI_UTIL_SERIES_H

#include <jansson.h>

#define PFI_SERIES_MAX 3600 /* one a second for an hour */
#define PFI_SERIES_COLS 3

typedef struct pfi_series {
    int n, head;        /* samples held; index of the oldest */
    double min_dt;      /* a sample closer than this to the last one is dropped */
    double t[PFI_SERIES_MAX];
    double v[PFI_SERIES_MAX][PFI_SERIES_COLS];
} pfi_series;

void pfi_series_init(pfi_series *s, double min_dt);
/* Adds v[0..PFI_SERIES_COLS-1] at time t (seconds, increasing); returns 0 when dropped (too
 * close to the last sample, or t not after it). */
int pfi_series_add(pfi_series *s, double t, const double *v);
/* {"t": [...], names[0]: [...], ...} of the samples with since < t <= until, oldest first; a
 * value that is not finite is null.  names: PFI_SERIES_COLS member names. */
json_t *pfi_series_json(const pfi_series *s, double since, double until,
                        const char *const *names);

#endif
