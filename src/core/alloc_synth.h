/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_synth.h: a seeded synthetic fleet of allocation jobs, for benchmarks of the allocator at
 * campus scale (100k jobs) where no measured fleet that large exists.  Curves are shaped like
 * the measured ones: no loss until the cap reaches the draw P0, then a convex slowdown
 * s = a r^b in the shed r = 1 - cap/P0, read at 11 caps from 200 to 700 W (H100/H200 range).
 * Pure: no I/O, no globals. */
#ifndef PFI_CORE_ALLOC_SYNTH_H
#define PFI_CORE_ALLOC_SYNTH_H

#include <stddef.h>

#include "core/alloc.h"

#define PFI_SYNTH_POINTS 11

typedef struct pfi_alloc_synth {
    int n;
    pfi_alloc_job *jobs;
    double *caps, *tput; /* n * PFI_SYNTH_POINTS */
    char *ids;           /* n * 16 */
} pfi_alloc_synth;

/* n jobs with gpus_lo..gpus_hi GPUs each (uniform).  PFI_ENOMEM on allocation failure. */
int pfi_alloc_synth_make(int n, int gpus_lo, int gpus_hi, unsigned long long seed,
                         pfi_alloc_synth *out, pfi_err *err);
void pfi_alloc_synth_free(pfi_alloc_synth *s);
/* Bytes held per job by the synthetic fleet itself (to separate it from the solver's memory). */
size_t pfi_alloc_synth_bytes_per_job(void);

#endif
