/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_keep.c: the kept copy of a re-planner's jobs and its allocator workspace (alloc_keep.h).
 *
 * The copy is what makes the workspace safe to keep: the workspace reads its jobs array on
 * every solve, and a caller's view of its jobs is rebuilt (and freed) for each plan.  A job of
 * the new list is "the same" as the kept one when every field the allocator reads has the same
 * bits; then nothing of it is redone.  A new list whose ids in common with the kept one are in
 * the same order is reached by departures and arrivals (the workspace's own, one job each). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc_ids.h"
#include "core/alloc_keep.h"

struct pfi_alloc_keep {
    pfi_alloc_ws *ws;
    pfi_alloc_opts o;
    int n, cap;            /* jobs kept, and room for them in the arrays below */
    pfi_alloc_job *jobs;   /* the copy the workspace reads */
    char **ids;            /* owned copies of the ids */
    double **pts;          /* job j: its caps, then its throughputs (slots[j] of each) */
    int *slots;
    long long n_warm, n_rebuilt;
    pfi_alloc_result spare; /* a result handed back (pfi_alloc_keep_put_back): the next warm
                             * solve refills its arrays */
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
    k->n = k->cap = 0;
}

void pfi_alloc_keep_free(pfi_alloc_keep *k)
{
    if (!k)
        return;
    pfi_alloc_ws_free(k->ws);
    keep_jobs_free(k);
    pfi_alloc_result_free(&k->spare);
    free(k);
}

void pfi_alloc_keep_put_back(pfi_alloc_keep *k, pfi_alloc_result *res)
{
    if (!k) {
        pfi_alloc_result_free(res);
        return;
    }
    if (!res->cap_w) { /* nothing to keep (a zeroed result): the spare stays */
        pfi_alloc_result_free(res);
        return;
    }
    pfi_alloc_result_free(&k->spare);
    k->spare = *res;
    memset(res, 0, sizeof *res);
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
    k->cap = (int)nn;
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

/* Every option the workspace was made with (it keeps its own copy). */
static int same_opts(const pfi_alloc_keep *k, const pfi_alloc_opts *o)
{
    return same_bits(o->step_w, k->o.step_w) && o->on_infeasible == k->o.on_infeasible &&
           same_bits(o->rel_gap, k->o.rel_gap) && same_bits(o->max_work, k->o.max_work) &&
           o->fill_whole == k->o.fill_whole && o->vec == k->o.vec &&
           o->caps_alone == k->o.caps_alone;
}

/* Kept job j takes the new list's job j (same id, other data): 0 when it cannot (rebuild). */
static int update_one(pfi_alloc_keep *k, const pfi_alloc_job *jobs, int j)
{
    if (jobs[j].n_points > k->slots[j] || jobs[j].n_points < 0)
        return 0;
    copy_job(k, j, &jobs[j]);
    return pfi_alloc_ws_update_job(k->ws, j, NULL) == PFI_OK;
}

/* Loads the ids and curves of both lists' job j + 4 while job j is compared: the lists are
 * read from memory (tens of MB at 100k jobs), and the waits, not the compares, cost. */
static inline void prefetch_pair(const pfi_alloc_job *a, const pfi_alloc_job *b, int n, int j)
{
    if (j + 4 >= n)
        return;
    const pfi_alloc_job *x = &a[j + 4], *y = &b[j + 4];
    __builtin_prefetch(x->id);
    __builtin_prefetch(y->id);
    if (x->n_points <= 0 || y->n_points <= 0)
        return;
    __builtin_prefetch(x->cap_w);
    __builtin_prefetch(y->cap_w);
    __builtin_prefetch(x->tput);
    __builtin_prefetch(y->tput);
    __builtin_prefetch(x->cap_w + x->n_points - 1); /* 11 points: two cache lines */
    __builtin_prefetch(y->cap_w + y->n_points - 1);
    __builtin_prefetch(x->tput + x->n_points - 1);
    __builtin_prefetch(y->tput + y->n_points - 1);
}

/* One pass over a list of the kept length: whether it holds the kept ids in the same order
 * (1, warm; 0: not, and the jobs before the first other id are brought in), the jobs whose
 * data changed brought into the copy and the workspace on the way; -1: one cannot be (then
 * rebuild).  A list seen unchanged costs this one read of both. */
static int warm_pass(pfi_alloc_keep *k, const pfi_alloc_job *jobs, int n)
{
    for (int j = 0; j < n; j++) {
        prefetch_pair(jobs, k->jobs, n, j);
        const char *a = jobs[j].id, *b = k->jobs[j].id;
        if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
            return 0;
        if (!same_job(&k->jobs[j], &jobs[j]) && !update_one(k, jobs, j))
            return -1;
    }
    return 1;
}

/* Brings the kept copy and the workspace to jobs, warm; 0 when it cannot (then rebuild). */
static int update_warm(pfi_alloc_keep *k, const pfi_alloc_job *jobs, int n)
{
    for (int j = 0; j < n; j++)
        if (!same_job(&k->jobs[j], &jobs[j]) && !update_one(k, jobs, j))
            return 0;
    return 1;
}

/* Room for one more kept job. */
static int keep_room(pfi_alloc_keep *k)
{
    if (k->n < k->cap)
        return 1;
    int c = k->cap + k->cap / 4 + 16;
    pfi_alloc_job *jobs = realloc(k->jobs, (size_t)c * sizeof *jobs);
    if (!jobs)
        return 0;
    k->jobs = jobs; /* the workspace reads it again once told (pfi_alloc_ws_add_job) */
    char **ids = realloc(k->ids, (size_t)c * sizeof *ids);
    if (!ids)
        return 0;
    k->ids = ids;
    double **pts = realloc(k->pts, (size_t)c * sizeof *pts);
    if (!pts)
        return 0;
    k->pts = pts;
    int *slots = realloc(k->slots, (size_t)c * sizeof *slots);
    if (!slots)
        return 0;
    k->slots = slots;
    k->cap = c;
    return 1;
}

/* Job s arrives at kept position p (and in the workspace). */
static int arrive(pfi_alloc_keep *k, int p, const pfi_alloc_job *s)
{
    if (!keep_room(k))
        return 0;
    size_t len = (size_t)(k->n - p);
    memmove(k->jobs + p + 1, k->jobs + p, len * sizeof *k->jobs);
    memmove(k->ids + p + 1, k->ids + p, len * sizeof *k->ids);
    memmove(k->pts + p + 1, k->pts + p, len * sizeof *k->pts);
    memmove(k->slots + p + 1, k->slots + p, len * sizeof *k->slots);
    k->n++;
    int np = s->n_points > 0 ? s->n_points : 0;
    k->slots[p] = np;
    k->ids[p] = strdup(s->id);
    k->pts[p] = malloc(2 * (size_t)np * sizeof(double) + 1);
    if (!k->ids[p] || !k->pts[p])
        return 0; /* dropped by the caller: keep_jobs_free frees what is there */
    k->jobs[p].id = k->ids[p];
    copy_job(k, p, s);
    return pfi_alloc_ws_add_job(k->ws, k->jobs, k->n, p, NULL) == PFI_OK;
}

/* The job at kept position p leaves (and the workspace's). */
static int leave(pfi_alloc_keep *k, int p)
{
    free(k->ids[p]);
    free(k->pts[p]);
    size_t len = (size_t)(k->n - p - 1);
    memmove(k->jobs + p, k->jobs + p + 1, len * sizeof *k->jobs);
    memmove(k->ids + p, k->ids + p + 1, len * sizeof *k->ids);
    memmove(k->pts + p, k->pts + p + 1, len * sizeof *k->pts);
    memmove(k->slots + p, k->slots + p + 1, len * sizeof *k->slots);
    k->n--;
    return pfi_alloc_ws_remove_job(k->ws, k->jobs, k->n, p, NULL) == PFI_OK;
}

/* Brings the kept list to jobs by departures and arrivals, when the ids both lists hold are in
 * the same order and the changes are few (a rebuild costs about as much as n / 32 of them);
 * 0 when it cannot (then the caller rebuilds: the kept state may be half changed). */
static int sync_list(pfi_alloc_keep *k, const pfi_alloc_job *jobs, int n)
{
    pfi_alloc_ids *in_new;
    if (n < 1 || pfi_alloc_ids_make(&in_new, jobs, n) != 1)
        return 0; /* a duplicate or missing id: the rebuild says so */
    int p = 0, i = 0, changes = 0, ok = 1;
    while (ok && (p < k->n || i < n)) {
        if (p < k->n && i < n && strcmp(k->jobs[p].id, jobs[i].id) == 0) {
            p++;
            i++;
            continue;
        }
        if (++changes > n / 32 + 4) {
            ok = 0;
            break;
        }
        int q = p < k->n ? pfi_alloc_ids_find(in_new, jobs, k->jobs[p].id) : n;
        if (q < 0) {
            ok = k->n > 1 && leave(k, p);
        } else if (q > i) { /* jobs[i] comes before the kept job p: it arrived */
            ok = arrive(k, p, &jobs[i]);
            p++;
            i++;
        } else {
            ok = 0; /* the common ids are in another order */
        }
    }
    pfi_alloc_ids_free(in_new);
    return ok && k->n == n;
}

static void drop(pfi_alloc_keep *k)
{
    pfi_alloc_ws_free(k->ws);
    k->ws = NULL;
    keep_jobs_free(k);
}

/* A new copy of jobs and a workspace built on it; 0 when it cannot be had.  The workspace is
 * rebuilt in its own buffers when the options are the same: its hulls, and the index its
 * re-solves sort, reuse the memory they had (at 100k jobs new pages cost as much as the
 * sort). */
static int rebuild(pfi_alloc_keep *k, const pfi_alloc_job *jobs, int n, double budget_w,
                   const pfi_alloc_opts *o)
{
    pfi_alloc_ws *ws = k->ws && same_opts(k, o) ? k->ws : NULL;
    if (!ws)
        pfi_alloc_ws_free(k->ws);
    k->ws = NULL;
    keep_jobs_free(k);
    k->o = *o;
    int ok = copy_all(k, jobs, n);
    if (ok && ws)
        ok = pfi_alloc_ws_set_jobs(ws, k->jobs, n, budget_w, NULL) == PFI_OK;
    else if (ok)
        ok = pfi_alloc_ws_new(k->jobs, n, budget_w, o, &ws, NULL) == PFI_OK;
    k->ws = ws;
    return ok;
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
    int warm = 0;
    if (k->ws && same_opts(k, &o)) {
        int same = n == k->n ? warm_pass(k, jobs, n) : 0;
        warm = same > 0 || (same == 0 && sync_list(k, jobs, n) && update_warm(k, jobs, n));
    }
    if (!warm && !rebuild(k, jobs, n, budget_w, &o)) {
        drop(k); /* the fresh solver gives the error, as it words it */
        return pfi_alloc_solve(jobs, n, budget_w, &o, res, err);
    }
    *res = k->spare; /* refilled in place when it fits, else freed (and res zeroed on error) */
    memset(&k->spare, 0, sizeof k->spare);
    int rc = pfi_alloc_ws_solve_reuse(k->ws, budget_w, res, NULL);
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
