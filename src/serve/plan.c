/* SPDX-License-Identifier: Apache-2.0 */
/* plan.c: from jobs and a budget to the cap each GPU should get.
 *
 * Jobs are planned on core/curve.h curves and allocated by core/alloc.h; GPUs no job holds get
 * their minimum limit while a budget is in force (an idle GPU draws far below any cap, so the
 * watts are worth more to a job).  A job with nothing known about it is planned as if its
 * throughput fell in proportion to the power it draws (PFI = 1): neither favoured nor starved
 * until its telemetry or its owner says more.
 *
 * The daemon keeps the allocator's state between plans (srv_node.keep, core/alloc_keep.h): a
 * budget change or an event's step re-solves warm, a job whose curve changed is rebuilt alone,
 * and jobs arriving or leaving rebuild; every plan is the one a fresh solve gives. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/alloc_curve.h"
#include "core/alloc_keep.h"
#include "core/policy.h"
#include "core/stats.h"
#include "serve/serve_int.h"

#define GRID_PTS 17 /* uniform caps per job, on top of the curve's own measured caps */

void pfi_srv_job_cap_range(const srv_gpu *g, const srv_job *j, double *lo, double *hi)
{
    *lo = 0;
    *hi = INFINITY;
    for (int k = 0; k < j->n_gpus; k++) {
        const pfi_device *d = &g[j->gpus[k]].dev;
        if (d->min_limit_w > *lo)
            *lo = d->min_limit_w;
        if (d->max_limit_w < *hi)
            *hi = d->max_limit_w;
    }
    if (!isfinite(*hi))
        *hi = *lo;
}

/* The default limit all of a job's GPUs share (their smallest): its baseline cap. */
static double job_cap0(const srv_gpu *g, const srv_job *j)
{
    double c = INFINITY;
    for (int k = 0; k < j->n_gpus; k++)
        if (g[j->gpus[k]].dev.default_limit_w < c)
            c = g[j->gpus[k]].dev.default_limit_w;
    return isfinite(c) ? c : 0;
}

void pfi_srv_job_curve(const srv_gpu *g, const srv_job *j, pfi_curve *out)
{
    if (j->curve_src != SRV_CURVE_NONE) {
        *out = j->curve;
        return;
    }
    double lo, hi, cap0 = job_cap0(g, j);
    pfi_srv_job_cap_range(g, j, &lo, &hi);
    /* A few samples right after start-up are no baseline. */
    double p0 = j->base.n >= SRV_MIN_BASELINE && j->base.power_w > 0 ? j->base.power_w : cap0;
    double t0 = isfinite(j->t0_tps) ? j->t0_tps : (double)j->n_gpus;
    pfi_fit fit = {.family = PFI_FAM_POWER, .p = {1.0, 1.0, 0}, .rmse = NAN, .n_points = 0};
    pfi_err e = {0};
    if (pfi_curve_from_fit(&fit, t0, p0, cap0, lo, hi, j->n_gpus, 1.0, out, &e) != PFI_OK) {
        memset(out, 0, sizeof *out);
        out->t0 = t0;
    }
}

static int is_pinned(const srv_gpu *g)
{
    return !isnan(g->pinned_w);
}

/* GPUs of a job the plan may move (the others are pinned: they did not answer). */
static int free_gpus(const srv_gpu *g, const srv_job *j)
{
    int k = 0;
    for (int q = 0; q < j->n_gpus; q++)
        k += !is_pinned(&g[j->gpus[q]]);
    return k;
}

static int add_point(double *caps, int n, double c)
{
    for (int i = 0; i < n; i++)
        if (fabs(caps[i] - c) < 0.5)
            return n;
    caps[n] = c;
    return n + 1;
}

/* A job's relative throughput at a per-GPU cap as the plan reads it: its curve's, and below a
 * registered curve's lowest point (nothing measured there) falling from that point in
 * proportion to the cap (PFI 1), where the curve reads flat (it clamps): the watts under it
 * looked free, and a job with a 5% SLA measured from 700 W down to 500 W was planned at 200 W,
 * predicted at its 500 W level.  Not a floor: a grid event whose SLAs yield may go below. */
double pfi_srv_plan_rel(const srv_job *jb, const pfi_curve *cv, double cap)
{
    double m = cv->min_cap_w;
    if (jb->curve_src == SRV_CURVE_GIVEN && cv->n >= 2 && m > 0 && cap < m)
        return pfi_curve_rel_at_cap(cv, PFI_VIEW_AUTO, m) * cap / m;
    return pfi_curve_rel_at_cap(cv, PFI_VIEW_AUTO, cap);
}

static void report_caps(const srv_gpu *g, const srv_job *jobs, int n_jobs, srv_plan *p,
                        const pfi_curve *cv)
{
    for (int j = 0; j < n_jobs; j++) {
        if (isnan(p->job_cap_w[j])) {
            double c = INFINITY;
            for (int k = 0; k < jobs[j].n_gpus; k++) {
                double t = p->target_w[jobs[j].gpus[k]];
                if (isnan(t))
                    t = g[jobs[j].gpus[k]].dev.limit_w;
                if (t < c)
                    c = t;
            }
            p->job_cap_w[j] = isfinite(c) ? c : NAN;
        }
        p->job_pred_rel[j] = isnan(p->job_cap_w[j])
                                 ? NAN
                                 : pfi_srv_plan_rel(&jobs[j], &cv[j], p->job_cap_w[j]);
        p->job_pred_tps[j] = jobs[j].t0_tps * p->job_pred_rel[j];
    }
}

/* Watts the allocator left unused (curves flat at the top, or every job at its maximum) are
 * handed back, equally per GPU, up to each job's maximum and then, equally again, to idle GPUs
 * up to their original limits: a budget with room to spare should hold nobody back. */
/* The highest cap in [from, hi] at which the job's curve is at its best over that stretch:
 * leftover watts raise a job no further (a measured curve faster at 600 W than at 700 W was
 * raised to 700 W by a larger budget, its predicted throughput falling). */
static double best_cap_above(const srv_job *jb, const pfi_curve *cv, double from, double hi)
{
    double best = pfi_srv_plan_rel(jb, cv, from), at = from;
    for (double c = ceil(from); c <= hi; c += 1.0) {
        double r = pfi_srv_plan_rel(jb, cv, c);
        if (r > best + 1e-12)
            best = r;
        if (r >= best - 1e-12)
            at = c;
    }
    return at;
}

static void spread_leftover(const srv_gpu *g, int ng, const int *owner, const srv_job *jobs,
                            const pfi_curve *cv, int n_jobs, double budget_w, srv_plan *p)
{
    double used = 0, hi[SRV_MAX_JOBS];
    for (int i = 0; i < ng; i++)
        if (is_pinned(&g[i]))
            used += g[i].pinned_w;
        else if (owner[i] < 0)
            used += p->target_w[i];
    for (int j = 0; j < n_jobs; j++) {
        double lo;
        pfi_srv_plan_range(g, &jobs[j], &lo, &hi[j]);
        if (isfinite(p->job_cap_w[j]) && p->job_cap_w[j] < hi[j])
            hi[j] = best_cap_above(&jobs[j], &cv[j], p->job_cap_w[j], hi[j]);
        used += free_gpus(g, &jobs[j]) * p->job_cap_w[j];
    }
    double left = budget_w - used;
    for (int round_ = 0; round_ <= n_jobs && left > 0.01; round_++) {
        int open = 0;
        for (int j = 0; j < n_jobs; j++)
            if (p->job_cap_w[j] < hi[j] - 0.01)
                open += free_gpus(g, &jobs[j]);
        if (open == 0)
            break;
        double step = left / open;
        for (int j = 0; j < n_jobs; j++) {
            double add = hi[j] - p->job_cap_w[j];
            if (add <= 0.01)
                continue;
            if (add > step)
                add = step;
            add = floor(add * 1000) / 1000; /* never round up past the budget */
            if (free_gpus(g, &jobs[j]) == 0)
                continue;
            p->job_cap_w[j] += add;
            left -= add * free_gpus(g, &jobs[j]);
        }
    }
    for (int round_ = 0; round_ <= ng && left > 0.01; round_++) {
        int open = 0;
        for (int i = 0; i < ng; i++)
            open += owner[i] < 0 && !is_pinned(&g[i]) && g[i].original_w > p->target_w[i] + 0.01;
        if (open == 0)
            break;
        double step = left / open;
        for (int i = 0; i < ng; i++)
            if (owner[i] < 0 && !is_pinned(&g[i]) && g[i].original_w > p->target_w[i] + 0.01) {
                double add = g[i].original_w - p->target_w[i];
                if (add > step)
                    add = step;
                add = floor(add * 1000) / 1000;
                p->target_w[i] += add;
                left -= add;
            }
    }
}

/* No budget: pfi holds nothing back; every GPU goes back to the limit it had, except that a
 * running probe holds its job lower. */
static void plan_no_budget(const srv_gpu *g, int ng, const srv_job *jobs, int n_jobs,
                           srv_plan *p)
{
    for (int i = 0; i < ng; i++)
        p->target_w[i] = is_pinned(&g[i]) ? NAN : g[i].original_w;
    for (int j = 0; j < n_jobs; j++) {
        double lo, hi;
        pfi_srv_plan_range(g, &jobs[j], &lo, &hi);
        for (int k = 0; k < jobs[j].n_gpus; k++) {
            int i = jobs[j].gpus[k];
            if (!isnan(p->target_w[i]) && p->target_w[i] > hi)
                p->target_w[i] = hi;
        }
    }
    for (int i = 0; i < ng; i++)
        p->min_budget_w += g[i].dev.min_limit_w;
}

typedef double grid_row[GRID_PTS + PFI_CURVE_MAX_PTS + PFI_ALLOC_SEEN_MAX + 2]; /* + the SLA
                                                                                * floor's two */

/* The job's SLA breaches seen in its log at the grid's whole watts, each a point of the grid
 * already (job_to_alloc): its curve (a, on gc and gt) read through them with no point added. */
static void through_seen(const srv_job *jb, pfi_alloc_job *a, double *gc, double *gt)
{
    pfi_alloc_seen on_grid = jb->sla_seen;
    for (int k = 0; k < on_grid.n; k++)
        on_grid.cap_w[k] = round(on_grid.cap_w[k]);
    pfi_alloc_seen_apply(&on_grid, a, gc, gt, a->n_points);
}


/* The whole watts either side of the least cap at which the job's curve keeps its SLA, added
 * to its grid (gc, m points; returns the new count): between two grid points the allocator
 * reads the curve on their chord, which lies above a curve convex in the cap, so its SLA floor
 * fell on the chord below the curve's (a 30% SLA planned at 683 W where the curve gives 0.525).
 * With the watt below the floor (short of the SLA on the curve) and the one at it on the grid,
 * the floor is the curve's to the watt. */
static int add_sla_floor(const srv_job *jb, const pfi_curve *cv, double lo, double hi,
                         double *gc, int m)
{
    double need = 1 - jb->sla;
    if (!(jb->sla >= 0) || !(pfi_srv_plan_rel(jb, cv, hi) >= need) ||
        pfi_srv_plan_rel(jb, cv, lo) >= need)
        return m; /* no SLA, none met at the top, or met all the way down */
    double a = lo, b = hi; /* rel(a) < need <= rel(b) */
    for (int it = 0; it < 60 && b - a > 1e-3; it++) {
        double c = 0.5 * (a + b);
        if (pfi_srv_plan_rel(jb, cv, c) >= need)
            b = c;
        else
            a = c;
    }
    double at = ceil(b);
    if (at > lo && at < hi)
        m = add_point(gc, m, at);
    if (at - 1 > lo && at - 1 < hi)
        m = add_point(gc, m, at - 1);
    return m;
}

/* The allocator's view of a job on its free GPUs: a uniform grid over its cap range plus the
 * curve's own caps, valued in `scale` units.  0 when the job has no choice (its cap is then
 * set in p and counted in *fixed_w). */
static int job_to_alloc(const srv_gpu *g, const srv_job *jb, int j, const pfi_curve *cv,
                        double scale, int seen, double *gc, double *gt, pfi_alloc_job *a,
                        srv_plan *p, double *fixed_w)
{
    double lo, hi;
    pfi_srv_plan_range(g, jb, &lo, &hi);
    int nfree = free_gpus(g, jb);
    if (nfree == 0)
        return 0;
    if (hi - lo < 1.0) {
        p->job_cap_w[j] = lo;
        *fixed_w += lo * nfree;
        return 0;
    }
    int m = 0;
    for (int k = 0; k < GRID_PTS; k++)
        m = add_point(gc, m, round(lo + (hi - lo) * k / (GRID_PTS - 1)));
    for (int k = 0; k < cv->n; k++)
        if (cv->cap_w[k] > lo && cv->cap_w[k] < hi)
            m = add_point(gc, m, round(cv->cap_w[k]));
    for (int k = 0; seen && k < jb->sla_seen.n; k++)
        if (round(jb->sla_seen.cap_w[k]) >= lo && round(jb->sla_seen.cap_w[k]) < hi)
            m = add_point(gc, m, round(jb->sla_seen.cap_w[k]));
    m = add_sla_floor(jb, cv, lo, hi, gc, m);
    qsort(gc, (size_t)m, sizeof gc[0], pfi_cmp_double);
    for (int k = 0; k < m; k++) {
        gt[k] = scale * pfi_srv_plan_rel(jb, cv, gc[k]);
        if (!isfinite(gt[k]))
            gt[k] = 0;
    }
    a->id = jb->id;
    a->n_gpus = nfree;
    a->min_cap_w = gc[0];
    a->max_cap_w = gc[m - 1];
    a->cap_w = gc;
    a->tput = gt;
    a->n_points = m;
    a->p0_w = cv->p0_w > 0 ? cv->p0_w : hi;
    a->t0 = scale;
    a->sla = jb->sla;
    a->weight = jb->weight;
    if (seen)
        through_seen(jb, a, gc, gt);
    return 1;
}

int pfi_srv_plan_compute(const srv_gpu *g, int ng, const srv_job *jobs, int n_jobs, double budget_w,
                         pfi_alloc_keep **keep, srv_plan *p, pfi_err *err)
{
    return pfi_srv_plan_policy(g, ng, jobs, n_jobs, budget_w, PFI_POLICY_PFI, keep, p, err);
}

/* The kept solve (pfi's policy and the oracle's: the same exact allocation).  1 with *res and
 * *min_jobs when it holds; 0 otherwise, and the caller takes the fresh path, whose checks and
 * messages are the ones to give (the keeper's answers are a fresh solve's, bit for bit; its
 * least budget for the jobs is pfi_alloc_prepare's, the same sum of floors). */
static int solve_kept(pfi_alloc_keep **keep, int policy, const pfi_alloc_job *aj, int na,
                      double budget_w, double fixed_w, const pfi_alloc_opts *o,
                      pfi_alloc_result *res, double *min_jobs)
{
    if (!keep || (policy != PFI_POLICY_PFI && policy != PFI_POLICY_ORACLE))
        return 0;
    if (pfi_alloc_keep_solve(keep, aj, na, budget_w - fixed_w, o, res, NULL) != PFI_OK)
        return 0;
    if (budget_w + 1e-6 < fixed_w + res->min_budget_w) {
        pfi_alloc_result_free(res);
        return 0;
    }
    *min_jobs = res->min_budget_w;
    return 1;
}

/* Whether only the SLA breaches seen (pfi_alloc_seen_blamed) keep `room` watts from meeting
 * every SLA of the jobs aj[0..na) (job map[a]): their curves are made again, as they were before
 * any breach, for the jobs that have one. */
static int fits_unseen(const srv_gpu *g, const srv_job *jobs, const pfi_curve *cv,
                       const pfi_alloc_job *aj, int na, const int *map, int all_abs, double room,
                       const pfi_alloc_opts *o)
{
    int any = 0;
    for (int a = 0; a < na; a++)
        any |= jobs[map[a]].sla_seen.n > 0;
    if (!any || na <= 0)
        return 0;
    size_t nn = (size_t)na;
    grid_row *gc = calloc(nn, sizeof *gc), *gt = calloc(nn, sizeof *gt);
    pfi_alloc_job *u = calloc(nn, sizeof *u);
    int fits = 0;
    if (gc && gt && u) {
        srv_plan scratch;
        double fixed = 0;
        for (int a = 0; a < na; a++) {
            const srv_job *jb = &jobs[map[a]];
            u[a] = aj[a];
            if (jb->sla_seen.n > 0)
                job_to_alloc(g, jb, map[a], &cv[map[a]], all_abs ? jb->t0_tps : (double)jb->n_gpus,
                             0, gc[a], gt[a], &u[a], &scratch, &fixed);
        }
        fits = pfi_alloc_seen_blamed(u, na, room, o);
    }
    free(gc), free(gt), free(u);
    return fits;
}

int pfi_srv_plan_policy(const srv_gpu *g, int ng, const srv_job *jobs, int n_jobs, double budget_w,
                        int policy, pfi_alloc_keep **keep, srv_plan *p, pfi_err *err)
{
    int owner[PFI_MAX_GPUS];
    for (int i = 0; i < ng; i++) {
        owner[i] = -1;
        p->target_w[i] = NAN;
    }
    for (int j = 0; j < n_jobs; j++) {
        p->job_cap_w[j] = NAN;
        p->job_pred_tps[j] = p->job_pred_rel[j] = NAN;
        for (int k = 0; k < jobs[j].n_gpus; k++)
            owner[jobs[j].gpus[k]] = j;
    }
    p->min_budget_w = 0;
    p->sla_extra = 0;
    /* Curves and grids are too large for the stack of an HTTP worker thread. */
    size_t nj = (size_t)(n_jobs > 0 ? n_jobs : 1);
    pfi_curve *cv = calloc(nj, sizeof *cv);
    grid_row *gc = calloc(nj, sizeof *gc), *gt = calloc(nj, sizeof *gt);
    pfi_alloc_job *aj = calloc(nj, sizeof *aj);
    int *map = calloc(nj, sizeof *map);
    pfi_alloc_result res = {0};
    int rc = PFI_OK;
    if (!cv || !gc || !gt || !aj || !map) {
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory planning %d jobs", n_jobs);
        goto out;
    }
    for (int j = 0; j < n_jobs; j++)
        pfi_srv_job_curve(g, &jobs[j], &cv[j]);
    if (isnan(budget_w)) {
        plan_no_budget(g, ng, jobs, n_jobs, p);
        report_caps(g, jobs, n_jobs, p, cv);
        goto out;
    }

    double fixed_w = 0; /* GPUs with no choice: idle ones, and jobs whose range is one cap */
    for (int i = 0; i < ng; i++)
        if (is_pinned(&g[i])) {
            fixed_w += g[i].pinned_w; /* left where it is: counted as it stands */
        } else if (owner[i] < 0) {
            p->target_w[i] = g[i].dev.min_limit_w;
            fixed_w += p->target_w[i];
        }
    /* Tokens/s when every job's is known, else GPU-weighted relative throughput for all:
     * summing tokens/s of some jobs with relative numbers of others would starve the latter. */
    int all_abs = 1;
    for (int j = 0; j < n_jobs; j++)
        if (!(jobs[j].t0_tps > 0))
            all_abs = 0;
    int na = 0;
    for (int j = 0; j < n_jobs; j++) {
        double scale = all_abs ? jobs[j].t0_tps : (double)jobs[j].n_gpus;
        if (job_to_alloc(g, &jobs[j], j, &cv[j], scale, 1, gc[j], gt[j], &aj[na], p, &fixed_w))
            map[na++] = j;
    }
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.on_infeasible = PFI_INFEASIBLE_FAIL;
    double min_jobs = 0;
    int kept = na > 0 && solve_kept(keep, policy, aj, na, budget_w, fixed_w, &o, &res, &min_jobs);
    if (na > 0 && !kept) {
        /* The least budget the jobs need (minimum caps and SLA floors), asked with room to
         * spare so that the question itself cannot be infeasible. */
        int kf[SRV_MAX_JOBS], km[SRV_MAX_JOBS];
        rc = pfi_alloc_prepare(aj, na, 1e12, &o, kf, km, &res, err);
        if (rc != PFI_OK)
            goto out;
        min_jobs = res.min_budget_w;
        pfi_alloc_result_free(&res);
    }
    p->min_budget_w = fixed_w + min_jobs;
    int relax = budget_w + 1e-6 < p->min_budget_w &&
                fits_unseen(g, jobs, cv, aj, na, map, all_abs, budget_w - fixed_w, &o);
    if (relax) {
        /* Only the breaches seen in the logs make the SLAs too much for a budget the node took:
         * every SLA gives the same, the least that fits, rather than the breaching job staying
         * where its log shows it breaking its SLA (docs/serve.md). */
        o.on_infeasible = PFI_INFEASIBLE_RELAX;
        kept = 0;
    }
    if (!relax && budget_w + 1e-6 < p->min_budget_w) {
        /* Whole watts unless they would read alike ("1600 W ... at least 1600 W"). */
        int d = 0;
        for (char x[48], y[48]; d < 6; d++) {
            snprintf(x, sizeof x, "%.*f", d, budget_w);
            snprintf(y, sizeof y, "%.*f", d, p->min_budget_w);
            if (strcmp(x, y))
                break;
        }
        rc = pfi_err_set(err, PFI_EINFEASIBLE,
                         "budget %.*f W is infeasible: this node needs at least %.*f W (every "
                         "GPU at its minimum limit%s)",
                         d, budget_w, d, p->min_budget_w,
                         min_jobs > 0 ? " and every job's SLA met" : "");
        goto out;
    }
    if (na > 0) {
        if (!kept)
            rc = pfi_alloc_policy(policy, aj, na, NULL, budget_w - fixed_w, &o, &res, err);
        if (rc != PFI_OK)
            goto out;
        if (relax)
            p->sla_extra = res.sla_extra;
        for (int a = 0; a < na; a++)
            p->job_cap_w[map[a]] = res.cap_w[a];
    }
    spread_leftover(g, ng, owner, jobs, cv, n_jobs, budget_w, p);
    for (int i = 0; i < ng; i++)
        if (owner[i] >= 0 && !is_pinned(&g[i]) && !isnan(p->job_cap_w[owner[i]])) {
            const pfi_device *d = &g[i].dev;
            double c = p->job_cap_w[owner[i]];
            p->target_w[i] = c < d->min_limit_w ? d->min_limit_w
                             : c > d->max_limit_w ? d->max_limit_w
                                                  : c;
        }
    report_caps(g, jobs, n_jobs, p, cv);
    for (int a = 0; a < na; a++) { /* a curve read through breaches: on what was allocated */
        int j = map[a];
        if (jobs[j].sla_seen.n > 0 && !isnan(p->job_cap_w[j]) && aj[a].t0 > 0) {
            p->job_pred_rel[j] = pfi_alloc_tput_at(&aj[a], p->job_cap_w[j]) / aj[a].t0;
            p->job_pred_tps[j] = jobs[j].t0_tps * p->job_pred_rel[j];
        }
    }
out:
    /* A failed prepare or solve may leave its result allocated; the keeper's next solve refills
     * it (freed when there is none). */
    pfi_alloc_keep_put_back(keep ? *keep : NULL, &res);
    free(cv);
    free(gc);
    free(gt);
    free(aj);
    free(map);
    return rc;
}

/* The per-GPU cap range a plan may give a job: its GPUs' range, capped by a running probe. */
void pfi_srv_plan_range(const srv_gpu *g, const srv_job *j, double *lo, double *hi)
{
    pfi_srv_job_cap_range(g, j, lo, hi);
    if (j->probe.state == SRV_PROBE_RUNNING && j->probe.cap_w < *hi)
        *hi = j->probe.cap_w > *lo ? j->probe.cap_w : *lo;
}
