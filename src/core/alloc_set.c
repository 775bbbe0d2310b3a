/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_set.c: the jobs of an allocation, the curves a policy reads, totals (alloc_set.h). */
#include "core/alloc_set.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/policy.h"

int pfi_alloc_set_init(pfi_alloc_set *s, int n, int per_gpu)
{
    memset(s, 0, sizeof *s);
    s->n = s->cap = n;
    s->truth = calloc((size_t)n, sizeof *s->truth);
    s->pred = calloc((size_t)n, sizeof *s->pred);
    s->pfi30 = calloc((size_t)n, sizeof *s->pfi30);
    s->bt = calloc((size_t)n, sizeof *s->bt);
    s->bp = calloc((size_t)n, sizeof *s->bp);
    s->ids = calloc((size_t)n, sizeof *s->ids);
    if (per_gpu)
        s->pg = calloc((size_t)n, sizeof *s->pg);
    return s->truth && s->pred && s->pfi30 && s->bt && s->bp && s->ids && (s->pg || !per_gpu)
               ? PFI_OK
               : PFI_ENOMEM;
}

void pfi_alloc_set_free(pfi_alloc_set *s)
{
    if (s->ids)
        for (int j = 0; j < s->cap; j++)
            free(s->ids[j]);
    free(s->ids);
    free(s->truth);
    free(s->pred);
    free(s->pfi30);
    free(s->bt);
    free(s->bp);
    if (s->pg)
        for (int j = 0; j < s->cap; j++) {
            free(s->pg[j].clock);
            free(s->pg[j].gcaps);
        }
    free(s->pg);
    memset(s, 0, sizeof *s);
}

int pfi_alloc_set_view(pfi_alloc_set *s, int policy, pfi_alloc_job *view, pfi_err *err)
{
    int wants_pred = policy == PFI_POLICY_PFI || policy == PFI_POLICY_PROPORTIONAL;
    for (int j = 0; j < s->n; j++) {
        int has_t = s->truth[j].n_points > 0, has_p = s->pred[j].n_points > 0;
        if (policy == PFI_POLICY_PFI && !has_p)
            return pfi_err_set(err, PFI_EINVAL,
                               "job %s has no predicted_curve: the pfi policy never reads true "
                               "curves (use --policy oracle, add predicted_curve to the jobs, or "
                               "--model with --db)",
                               s->truth[j].id);
        if (policy == PFI_POLICY_ORACLE && !has_t)
            return pfi_err_set(err, PFI_EINVAL, "job %s has no curve: oracle needs true curves",
                               s->truth[j].id);
        view[j] = (wants_pred && has_p) || !has_t ? s->pred[j] : s->truth[j];
        if (s->pg) {
            /* the allocator shares out the MEAN cap per GPU; flat above the table's end */
            pfi_alloc_pergpu *pg = &s->pg[j];
            int m = pfi_pergpu_curve(&pg->table, pg->x, pg->eq.cap_w, pg->eq.tput, NULL);
            view[j].cap_w = pg->eq.cap_w;
            view[j].tput = pg->eq.tput;
            view[j].n_points = m;
            view[j].min_cap_w = fmax(view[j].min_cap_w, pg->eq.cap_w[0]);
            s->truth[j].cap_w = pg->eq.cap_w; /* measured too: the table is a measurement */
            s->truth[j].tput = pg->eq.tput;
            s->truth[j].n_points = m;
        }
    }
    return PFI_OK;
}

void pfi_alloc_set_totals(const pfi_alloc_set *s, const pfi_alloc_job *view,
                          const pfi_alloc_result *r, pfi_alloc_totals *t)
{
    memset(t, 0, sizeof *t);
    t->all_true = 1;
    for (int j = 0; j < s->n; j++) {
        double w = isnan(view[j].weight) || view[j].weight == 0 ? 1 : view[j].weight;
        t->tput += r->tput[j];
        if (s->truth[j].n_points >= 2) {
            double tt = pfi_alloc_tput_at(&s->truth[j], r->cap_w[j]);
            t->tput_true += tt;
            t->objective_true += w * tt;
        } else
            t->all_true = 0;
    }
}
