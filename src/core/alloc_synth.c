/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_synth.c: seeded synthetic allocation jobs (alloc_synth.h). */
#include "core/alloc_synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID_LEN 16

static double next(unsigned long long *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0;
}

size_t pfi_alloc_synth_bytes_per_job(void)
{
    return sizeof(pfi_alloc_job) + 2 * PFI_SYNTH_POINTS * sizeof(double) + ID_LEN;
}

void pfi_alloc_synth_free(pfi_alloc_synth *s)
{
    if (!s)
        return;
    free(s->jobs);
    free(s->caps);
    free(s->tput);
    free(s->ids);
    memset(s, 0, sizeof *s);
}

int pfi_alloc_synth_make(int n, int gpus_lo, int gpus_hi, unsigned long long seed,
                         pfi_alloc_synth *out, pfi_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 1 || gpus_lo < 1 || gpus_hi < gpus_lo)
        return pfi_err_set(err, PFI_EINVAL, "synthetic fleet: %d jobs of %d-%d GPUs is not valid",
                           n, gpus_lo, gpus_hi);
    out->n = n;
    out->jobs = calloc((size_t)n, sizeof *out->jobs);
    out->caps = malloc((size_t)n * PFI_SYNTH_POINTS * sizeof *out->caps);
    out->tput = malloc((size_t)n * PFI_SYNTH_POINTS * sizeof *out->tput);
    out->ids = malloc((size_t)n * ID_LEN);
    if (!out->jobs || !out->caps || !out->tput || !out->ids) {
        pfi_alloc_synth_free(out);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory for %d synthetic jobs", n);
    }
    unsigned long long s = seed * 2654435761ull + 1;
    for (int j = 0; j < n; j++) {
        char *id = out->ids + (size_t)j * ID_LEN;
        snprintf(id, ID_LEN, "job-%d", j);
        int g = gpus_lo + (int)(next(&s) * (gpus_hi - gpus_lo + 1));
        if (g > gpus_hi)
            g = gpus_hi;
        double p0 = 450 + 240 * next(&s);             /* drawn at the 700 W default */
        double a = 0.3 + 0.9 * next(&s), b = 1.2 + 1.3 * next(&s);
        double t0 = g * (800 + 1600 * next(&s));      /* tokens/s of the whole job */
        double *c = out->caps + (size_t)j * PFI_SYNTH_POINTS;
        double *t = out->tput + (size_t)j * PFI_SYNTH_POINTS;
        for (int i = 0; i < PFI_SYNTH_POINTS; i++) {
            c[i] = 200 + 50.0 * i;
            double r = c[i] < p0 ? 1 - c[i] / p0 : 0;
            t[i] = t0 * (1 - fmin(0.95, a * pow(r, b)));
        }
        out->jobs[j] = (pfi_alloc_job){id, g, 200, 700, c, t, PFI_SYNTH_POINTS, p0, t0, NAN, 1};
    }
    return PFI_OK;
}
