/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_keep.c: the kept copy of a re-planner's jobs and its allocator workspace (alloc_keep.h).
 *
 * The copy is what makes the workspace safe to keep: the workspace reads its jobs array on
 * every solve, and a caller's view of its jobs is rebuilt (and freed) for each plan.  A job of
 * the new list is "the same" as the kept one when every field the allocator reads has the same
 * bits; then nothing of it is redone. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc_keep.h"

struct pfi_alloc_keep {
    pfi_alloc_ws *ws;
    pfi_alloc_opts o;
    int n;
    pfi_alloc_job *jobs;   /* the copy the workspace reads */
    char **ids;            /* owned copies of the ids */
    double **pts;          /* job j: its caps, then its throughputs (slots[j] of each) */
    int *slots;
    long long n_warm, n_rebuilt;
};

static void keep_jobs_free(pfi_alloc_keep *k)
{
    for (int j = 0; j < k->n; j++) {
        free(k->ids ? k->ids[j] : NULL);
        free(k->pts ? k->pts[j] : NULL);
    }
    free(k->jobs);
    free(k->ids);
    free(k->pts);
    free(k->slots);
    k->jobs = NULL;
    k->ids = NULL;
    k->pts = NULL;
    k->slots = NULL;
    k->n = 0;
}

void pfi_alloc_keep_free(pfi_alloc_keep *k)
{
    if (!k)
        return;
    pfi_alloc_ws_free(k->ws);
    keep_jobs_free(k);
    free(k);
}

long long pfi_alloc_keep_warm(const pfi_alloc_keep *k)
{
    return k ? k->n_warm : 0;
}

long long pfi_alloc_keep_rebuilt(const pfi_alloc_keep *k)
{
    return k ? k->n_rebuilt : 0;
}

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Everything the allocator reads of a job but its id. */
static int same_job(const pfi_alloc_job *a, const pfi_alloc_job *b)
{
    if (a->n_gpus != b->n_gpus || a->n_points != b->n_points || !same_bits(a->min_cap_w, b->min_cap_w) ||
        !same_bits(a->max_cap_w, b->max_cap_w) || !same_bits(a->p0_w, b->p0_w) ||
        !same_bits(a->t0, b->t0) || !same_bits(a->sla, b->sla) || !same_bits(a->weight, b->weight))
        return 0;
    size_t np = a->n_points > 0 ? (size_t)a->n_points : 0;
    return memcmp(a->cap_w, b->cap_w, np * sizeof *a->cap_w) == 0 &&
           memcmp(a->tput, b->tput, np * sizeof *a->tput) == 0;
}

/* Copies job s into slot j (its points storage must hold s's points). */
static void copy_job(pfi_alloc_keep *k, int j, const pfi_alloc_job *s)
{
    pfi_alloc_job *d = &k->jobs[j];
    const char *id = d->id;
    *d = *s;
    d->id = id;
    size_t np = s->n_points > 0 ? (size_t)s->n_points : 0;
    memcpy(k->pts[j], s->cap_w, np * sizeof *s->cap_w);
    memcpy(k->pts[j] + k->slots[j], s->tput, np * sizeof *s->tput);
    d->cap_w = k->pts[j];
    d->tput = k->pts[j] + k->slots[j];
}

static int copy_all(pfi_alloc_keep *k, const pfi_alloc_job *jobs, int n)
{
    keep_jobs_free(k);
    size_t nn = n > 0 ? (size_t)n : 1;
    k->jobs = calloc(nn, sizeof *k->jobs);
    k->ids = calloc(nn, sizeof *k->ids);
    k->pts = calloc(nn, sizeof *k->pts);
    k->slots = calloc(nn, sizeof *k->slots);
    if (!k->jobs || !k->ids || !k->pts || !k->slots)
        return 0;
    k->n = n;
    for (int j = 0; j < n; j++) {
        int np = jobs[j].n_points > 0 ? jobs[j].n_points : 0;
        k->slots[j] = np;
        k->ids[j] = strdup(jobs[j].id ? jobs[j].id : "");
        k->pts[j] = malloc(2 * (size_t)np * sizeof(double) + 1);
        if (!k->ids[j] || !k->pts[j])
            return 0;
        k->jobs[j].id = jobs[j].id ? k->ids[j] : NULL;
        copy_job(k, j, &jobs[j]);
    }
    return 1;
}

/* The same list of ids in the same order, under the same options: warm. */
static int same_list(const pfi_alloc_keep *k, const pfi_alloc_job *jobs, int n,
                     const pfi_alloc_opts *o)
{
    if (!k->ws || n != k->n || !same_bits(o->step_w, k->o.step_w) ||
        o->on_infeasible != k->o.on_infeasible || !same_bits(o->rel_gap, k->o.rel_gap) ||
        !same_bits(o->max_work, k->o.max_work))
        return 0;
    for (int j = 0; j < n; j++) {
        const char *a = jobs[j].id, *b = k->jobs[j].id;
        if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
            return 0;
    }
    return 1;
}

/* Brings the kept copy and the workspace to jobs, warm; 0 when it cannot (then rebuild). */
static int update_warm(pfi_alloc_keep *k, const pfi_alloc_job *jobs, int n)
{
    for (int j = 0; j < n; j++) {
        if (same_job(&k->jobs[j], &jobs[j]))
            continue;
        if (jobs[j].n_points > k->slots[j] || jobs[j].n_points < 0)
            return 0;
        copy_job(k, j, &jobs[j]);
        if (pfi_alloc_ws_update_job(k->ws, j, NULL) != PFI_OK)
            return 0;
    }
    return 1;
}

static void drop(pfi_alloc_keep *k)
{
    pfi_alloc_ws_free(k->ws);
    k->ws = NULL;
    keep_jobs_free(k);
}

int pfi_alloc_keep_solve(pfi_alloc_keep **kp, const pfi_alloc_job *jobs, int n, double budget_w,
                         const pfi_alloc_opts *opts, pfi_alloc_result *res, pfi_err *err)
{
    memset(res, 0, sizeof *res);
    pfi_alloc_opts o;
    if (opts)
        o = *opts;
    else
        pfi_alloc_opts_default(&o);
    if (!*kp && !(*kp = calloc(1, sizeof **kp)))
        return pfi_alloc_solve(jobs, n, budget_w, &o, res, err);
    pfi_alloc_keep *k = *kp;
    int warm = same_list(k, jobs, n, &o) && update_warm(k, jobs, n);
    if (!warm) {
        drop(k);
        k->o = o;
        if (!copy_all(k, jobs, n) ||
            pfi_alloc_ws_new(k->jobs, n, budget_w, &o, &k->ws, NULL) != PFI_OK) {
            drop(k); /* the fresh solver gives the error, as it words it */
            return pfi_alloc_solve(jobs, n, budget_w, &o, res, err);
        }
    }
    int rc = pfi_alloc_ws_solve(k->ws, budget_w, res, NULL);
    if (rc != PFI_OK) {
        drop(k);
        return pfi_alloc_solve(jobs, n, budget_w, &o, res, err);
    }
    if (warm)
        k->n_warm++;
    else
        k->n_rebuilt++;
    return PFI_OK;
}
