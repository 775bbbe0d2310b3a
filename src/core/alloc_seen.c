/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_seen.c: a job's SLA breaches seen and its curve through them (alloc_seen.h). */
#include "core/alloc_seen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_curve.h"

int pfi_alloc_seen_add(pfi_alloc_seen *l, double cap_w, double s, int merge, pfi_err *err)
{
    if (!(cap_w > 0 && cap_w <= 1e5) || !(s >= 0 && s <= 1))
        return pfi_err_set(err, PFI_EINVAL,
                           "an SLA breach needs a cap in (0, 100000] W and a slowdown in [0, 1] "
                           "(got %g W, %g)",
                           cap_w, s);
    int k = 0;
    while (k < l->n && fabs(l->cap_w[k] - cap_w) > 1.0)
        k++;
    if (k < l->n && merge == PFI_SEEN_LARGER) {
        l->s[k] = fmax(l->s[k], s);
        return PFI_OK;
    }
    if (k == PFI_ALLOC_SEEN_MAX) { /* full: the oldest goes */
        memmove(l->cap_w, l->cap_w + 1, sizeof l->cap_w[0] * (PFI_ALLOC_SEEN_MAX - 1));
        memmove(l->s, l->s + 1, sizeof l->s[0] * (PFI_ALLOC_SEEN_MAX - 1));
        k = PFI_ALLOC_SEEN_MAX - 1;
    } else if (k == l->n)
        l->n++;
    l->cap_w[k] = cap_w;
    l->s[k] = s;
    return PFI_OK;
}

int pfi_alloc_seen_apply(const pfi_alloc_seen *l, pfi_alloc_job *q, double *pc, double *pt,
                         int room)
{
    int done = 0;
    for (int k = 0; k < l->n; k++) {
        pfi_alloc_curve buf;
        pfi_alloc_job out;
        if (!(l->cap_w[k] >= q->min_cap_w && l->cap_w[k] < q->max_cap_w) ||
            pfi_alloc_curve_through(q, l->cap_w[k], l->s[k], &buf, &out, NULL) != PFI_OK ||
            out.n_points > room)
            continue;
        memcpy(pc, buf.cap_w, sizeof *pc * (size_t)out.n_points);
        memcpy(pt, buf.tput, sizeof *pt * (size_t)out.n_points);
        q->cap_w = pc;
        q->tput = pt;
        q->n_points = out.n_points;
        done++;
    }
    return done;
}

int pfi_alloc_seen_blamed(const pfi_alloc_job *unseen, int n, double room,
                          const pfi_alloc_opts *o)
{
    if (n <= 0)
        return 0;
    int *kf = calloc((size_t)n, sizeof *kf), *km = calloc((size_t)n, sizeof *km);
    pfi_alloc_result r;
    memset(&r, 0, sizeof r);
    pfi_err e = {0};
    /* The least budget is asked with room to spare, so the question itself cannot be
     * infeasible. */
    int fits = kf && km && pfi_alloc_prepare(unseen, n, 1e15, o, kf, km, &r, &e) == PFI_OK &&
               r.min_budget_w <= room + 1e-6;
    pfi_alloc_result_free(&r);
    free(kf);
    free(km);
    return fits;
}
