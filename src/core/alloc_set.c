/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_set.c: the jobs of an allocation, the curves a policy reads, totals (alloc_set.h). */
#include "core/alloc_set.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/policy.h"

/* The curves' points: blocks that never move, so the jobs can point into them. */
struct pfi_alloc_points {
    pfi_alloc_points *next;
    size_t used, size;
    double v[];
};

#define POINTS_FIRST ((size_t)512 << 10) /* bytes: about 1,500 jobs of two 11-point curves */
#define HUGE_PAGE ((size_t)2 << 20)
#define POINTS_MORE (2 * HUGE_PAGE)

/* A block holding at least `need` points: the first of a set plain, the next ones on
 * huge-page boundaries with the advice to back them with huge pages where the kernel can (a
 * large file's points are written once, and on 4 KiB pages their first-touch faults cost more
 * than reading them).  Freed with free(). */
static pfi_alloc_points *points_block(const pfi_alloc_set *s, size_t need)
{
    size_t bytes = sizeof(pfi_alloc_points) + need * sizeof(double), sz;
    pfi_alloc_points *b;
    if (!s->pts) {
        sz = bytes > POINTS_FIRST ? bytes : POINTS_FIRST;
        b = malloc(sz);
    } else {
        sz = bytes > POINTS_MORE ? (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE : POINTS_MORE;
        b = aligned_alloc(HUGE_PAGE, sz);
#ifdef MADV_HUGEPAGE
        if (b)
            madvise(b, sz, MADV_HUGEPAGE);
#endif
    }
    if (b) {
        b->next = s->pts;
        b->used = 0;
        b->size = (sz - sizeof *b) / sizeof b->v[0];
    }
    return b;
}

int pfi_alloc_set_init(pfi_alloc_set *s, int n, int per_gpu)
{
    memset(s, 0, sizeof *s);
    size_t m = n > 0 ? (size_t)n : 1;
    s->n = s->cap = n;
    s->truth = calloc(m, sizeof *s->truth);
    s->pred = calloc(m, sizeof *s->pred);
    s->pfi30 = calloc(m, sizeof *s->pfi30);
    s->ids = calloc(m, sizeof *s->ids);
    if (per_gpu)
        s->pg = calloc(m, sizeof *s->pg);
    return s->truth && s->pred && s->pfi30 && s->ids && (s->pg || !per_gpu) ? PFI_OK
                                                                             : PFI_ENOMEM;
}

/* *p resized from `old` to `n` elements of `size` bytes, the new ones zero; from 4 MiB on,
 * on huge pages as the points are. */
static int resize(void **p, int old, int n, size_t size)
{
    size_t bytes = (size_t)n * size;
    char *q;
    if (bytes < POINTS_MORE) {
        if (!(q = realloc(*p, bytes)))
            return PFI_ENOMEM;
    } else {
        size_t sz = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        if (!(q = aligned_alloc(HUGE_PAGE, sz)))
            return PFI_ENOMEM;
#ifdef MADV_HUGEPAGE
        madvise(q, sz, MADV_HUGEPAGE);
#endif
        memcpy(q, *p, (size_t)old * size);
        free(*p);
    }
    memset(q + (size_t)old * size, 0, (size_t)(n - old) * size);
    *p = q;
    return PFI_OK;
}

int pfi_alloc_set_grow(pfi_alloc_set *s, int n)
{
    if (n <= s->cap)
        return PFI_OK;
    int old = s->cap;
    if (resize((void **)&s->truth, old, n, sizeof *s->truth) ||
        resize((void **)&s->pred, old, n, sizeof *s->pred) ||
        resize((void **)&s->pfi30, old, n, sizeof *s->pfi30) ||
        resize((void **)&s->ids, old, n, sizeof *s->ids) ||
        (s->pg && resize((void **)&s->pg, old, n, sizeof *s->pg)))
        return PFI_ENOMEM; /* the arrays resized so far are larger, cap still tells their use */
    for (int j = 0; s->pg && j < old; j++) /* a table points into its own entry */
        if (s->pg[j].table.cap_w) {
            s->pg[j].table.cap_w = s->pg[j].cap_w;
            s->pg[j].table.tput = s->pg[j].tput;
        }
    s->cap = n;
    return PFI_OK;
}

int pfi_alloc_set_keep_curve(pfi_alloc_set *s, pfi_alloc_job *job)
{
    size_t need = 2 * (size_t)(job->n_points > 0 ? job->n_points : 0);
    if (need == 0) {
        job->cap_w = job->tput = NULL;
        return PFI_OK;
    }
    pfi_alloc_points *b = s->pts;
    if (!b || b->size - b->used < need) {
        if (!(b = points_block(s, need)))
            return PFI_ENOMEM;
        s->pts = b;
    }
    double *p = b->v + b->used;
    b->used += need;
    memcpy(p, job->cap_w, sizeof *p * (size_t)job->n_points);
    memcpy(p + job->n_points, job->tput, sizeof *p * (size_t)job->n_points);
    job->cap_w = p;
    job->tput = p + job->n_points;
    return PFI_OK;
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
    for (pfi_alloc_points *b = s->pts, *nx; b; b = nx) {
        nx = b->next;
        free(b);
    }
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
            int m = pfi_pergpu_curve(&pg->table, pg->x, pg->eq.cap_w, pg->eq.tput, NULL), nt;
            int g = m < 2 ? pfi_pergpu_flat_gpu(&pg->table, &nt) : -1;
            /* Said in the table's terms: "its curve has one point" named no GPU and not why. */
            if (g >= 0) {
                const pfi_pergpu_job *t = &pg->table;
                char who[64];
                if (nt == t->n_gpus)
                    snprintf(who, sizeof who, "every GPU");
                else
                    snprintf(who, sizeof who, "GPU %d%s", g, nt > 1 ? " (and others alike)" : "");
                return pfi_err_set(
                    err, PFI_EINVAL,
                    "job %s: in its per_gpu table %s holds %.0f MHz at every cap from %.0f to "
                    "%.0f W, the slowest clock at each, so no cap changes the job's clock and "
                    "per-GPU caps have nothing to trade (measure the table again, or leave out "
                    "--per-gpu)",
                    s->truth[j].id, who, t->clock_mhz[(size_t)g * t->n_caps], t->cap_w[0],
                    t->cap_w[t->n_caps - 1]);
            }
            view[j].cap_w = pg->eq.cap_w;
            view[j].tput = pg->eq.tput;
            view[j].n_points = m;
            view[j].min_cap_w = fmax(view[j].min_cap_w, pg->eq.cap_w[0]);
            /* Above the table's top mean cap no GPU takes more (each holds the slowest's clock
             * below its own cap): a mean cap there went to watts no GPU got, and the job's
             * per-GPU caps summed to less than the power it was given. */
            if (pg->eq.cap_w[m - 1] >= view[j].min_cap_w)
                view[j].max_cap_w = fmin(view[j].max_cap_w, pg->eq.cap_w[m - 1]);
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
