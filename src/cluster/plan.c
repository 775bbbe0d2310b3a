/* SPDX-License-Identifier: Apache-2.0 */
/* plan.c: from a site budget to a cap for every GPU of every node.
 *
 * What the budget must cover first, in this order:
 *   1. GPUs of nodes that do not answer: at the cap they last acknowledged (their maximum when
 *      none), since nothing can move them;
 *   2. GPUs of jobs that touch such a node ("pinned"): at their current caps, because a job runs
 *      at its slowest GPU and its silent part cannot follow a change;
 *   3. GPUs that hold no job: at their minimum.
 * The rest goes to the running jobs through the allocator (core/alloc.h), all jobs at once, one
 * cap per job on all its GPUs on every node.  The objective is GPU-weighted relative throughput,
 * sum w_j n_j T_j(cap)/T_j(max): jobs whose curves are in different units (tokens/s, samples/s)
 * or not known yet (then taken proportional to the cap, as the node daemon does) compare on one
 * scale.  What the jobs leave is shared equally by the idle GPUs, up to their default limit.
 * The allocator keeps its state between plans (c->keep, core/alloc_keep.h): a budget change or
 * one job's new curve re-solves warm, with the answer a fresh solve would give. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cl_int.h"
#include "core/alloc.h"
#include "core/alloc_curve.h"
#include "core/alloc_keep.h"
#include "core/policy.h"

static int gpu_held(const pfi_cl *c, const pfi_cl_node *n, int g)
{
    int j = n->job_of[g];
    return !n->up || (j >= 0 && c->jobs[j].pinned);
}

/* What the budget covers before the jobs: held GPUs (silent nodes, pinned jobs) at their
 * counted cap, idle GPUs at their minimum. */
typedef struct fixed_w {
    double reserved, idle_min;
    int n_held, n_idle;
    int n_silent, n_never, n_refused, n_other; /* silent nodes; of them, those that never
                                       * answered, those that refused the controller's token,
                                       * and those another controller holds */
    char silent[80];       /* the first by name, for a refusal's message (it has 512 bytes) */
} fixed_w;

/* Counts silent node n; the first is named in f->silent. */
static void note_silent(fixed_w *f, const pfi_cl_node *n)
{
    if (f->n_silent++ == 0)
        snprintf(f->silent, sizeof f->silent, "%.48s%s", n->name,
                 n->refused == PFI_CL_REFUSED_HELD ? " (held by another controller)"
                 : n->refused                      ? " (refused the token)"
                 : n->ever_up                      ? ""
                                                   : " (never answered)");
    f->n_never += !n->ever_up;
    f->n_refused += n->refused == PFI_CL_REFUSED_TOKEN;
    f->n_other += n->refused == PFI_CL_REFUSED_HELD;
}

static int count_fixed(pfi_cl *c, fixed_w *f, pfi_err *err)
{
    double site_max = pfi_cl_site_max_w(c);
    /* A job is pinned while any of its nodes is silent (nodes fall silent mid-apply too). */
    for (int j = 0; j < c->n_jobs; j++) {
        c->jobs[j].pinned = 0;
        for (int k = 0; k < c->jobs[j].n_nodes; k++)
            if (!c->nodes[c->jobs[j].nodes[k]].up)
                c->jobs[j].pinned = 1;
    }
    memset(f, 0, sizeof *f);
    for (int i = 0; i < c->n_nodes; i++) {
        const pfi_cl_node *n = &c->nodes[i];
        if (!n->up && n->n_gpus > 0)
            note_silent(f, n);
        for (int g = 0; g < n->n_gpus; g++) {
            const pfi_device *d = &n->gpu[g];
            if (gpu_held(c, n, g)) {
                double w = pfi_cl_gpu_count_w(d, site_max);
                if (isnan(w))
                    return pfi_err_set(err, PFI_ESTATE,
                                       "node %s has never answered and no GPU's limits are "
                                       "known: cannot count its power",
                                       n->name);
                f->reserved += w;
                f->n_held++;
            } else if (n->job_of[g] < 0) {
                f->idle_min += d->min_limit_w;
                f->n_idle++;
            }
        }
    }
    return PFI_OK;
}

/* The allocator's view of every job that can move; which[k] is the job of aj[k], slot[j] the
 * k of job j (-1: not in the view). */
typedef struct job_view {
    int na;
    pfi_alloc_job *aj;
    int *which, *slot;
    double (*pc)[PFI_CL_CURVE_MAX + PFI_ALLOC_SEEN_MAX];
    double (*pt)[PFI_CL_CURVE_MAX + PFI_ALLOC_SEEN_MAX];
} job_view;

static void job_view_free(job_view *v)
{
    free(v->aj);
    free(v->which);
    free(v->slot);
    free(v->pc);
    free(v->pt);
}

/* Curves are normalized to n_gpus at their top so jobs in different units, or without a curve
 * (proportional to the cap, as the node daemon takes them), compare on one scale. */
static void job_to_alloc(const pfi_cl_job *J, int seen, pfi_alloc_job *a, double *pc, double *pt)
{
    a->id = J->id;
    a->n_gpus = J->n_gpus;
    a->min_cap_w = J->min_cap_w;
    a->max_cap_w = J->max_cap_w;
    if (J->has_curve) {
        double top = J->tput[J->n_points - 1];
        for (int k = 0; k < J->n_points; k++)
            if (J->tput[k] > top)
                top = J->tput[k];
        for (int k = 0; k < J->n_points; k++)
            pt[k] = top > 0 ? J->n_gpus * J->tput[k] / top : 0;
        a->cap_w = J->cap_w;
        a->n_points = J->n_points;
    } else {
        pc[0] = J->min_cap_w;
        pc[1] = J->max_cap_w;
        pt[0] = J->max_cap_w > 0 ? J->n_gpus * J->min_cap_w / J->max_cap_w : 0;
        pt[1] = J->n_gpus;
        a->cap_w = pc;
        a->n_points = 2;
    }
    a->tput = pt;
    a->p0_w = J->p0_w > 0 ? J->p0_w : J->max_cap_w;
    a->t0 = NAN;
    a->sla = J->sla;
    a->weight = J->weight > 0 ? J->weight : 1.0;
    if (seen) /* what its nodes saw in its log, as the node daemon's plan reads it */
        pfi_alloc_seen_apply(&J->seen, a, pc, pt, PFI_CL_CURVE_MAX + PFI_ALLOC_SEEN_MAX);
}

/* seen 0: the jobs' curves as their nodes report them, before any SLA breach seen. */
static int job_view_build(const pfi_cl *c, int seen, job_view *v, pfi_err *err)
{
    memset(v, 0, sizeof *v);
    v->aj = calloc((size_t)c->n_jobs + 1, sizeof *v->aj);
    v->which = calloc((size_t)c->n_jobs + 1, sizeof *v->which);
    v->slot = calloc((size_t)c->n_jobs + 1, sizeof *v->slot);
    v->pc = calloc((size_t)c->n_jobs + 1, sizeof *v->pc);
    v->pt = calloc((size_t)c->n_jobs + 1, sizeof *v->pt);
    if (!v->aj || !v->which || !v->slot || !v->pc || !v->pt) {
        job_view_free(v);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    for (int j = 0; j < c->n_jobs; j++) {
        const pfi_cl_job *J = &c->jobs[j];
        v->slot[j] = -1;
        if (J->pinned || J->n_gpus == 0)
            continue;
        v->slot[j] = v->na;
        job_to_alloc(J, seen, &v->aj[v->na], v->pc[v->na], v->pt[v->na]);
        if (c->sla_yield) /* a grid event in force lets the SLAs give way */
            v->aj[v->na].sla = NAN;
        v->which[v->na++] = j;
    }
    return PFI_OK;
}

/* Prefixes err with where the watts went and the least feasible site budget: the jobs' own
 * minimum, found by solving with room to spare (nothing is applied from it). */
static void explain_infeasible(const job_view *v, pfi_alloc_opts o, double budget_w,
                               double for_jobs, const fixed_w *f, pfi_err *err)
{
    double need = f->reserved + f->idle_min;
    if (v->na > 0) {
        pfi_alloc_result big;
        memset(&big, 0, sizeof big);
        o.max_work = -1;
        need = pfi_alloc_solve(v->aj, v->na, 1e15, &o, &big, NULL) == PFI_OK
                   ? need + big.min_budget_w
                   : NAN;
        pfi_alloc_result_free(&big);
    }
    char least[64] = "", why[320] = "", more[32] = "";
    if (isfinite(need))
        snprintf(least, sizeof least, "; least feasible site budget %.0f W", need);
    /* Why the watts are held, in the operator's terms (the rule is docs/cluster.md's): it said
     * only "held by 8 GPUs of silent nodes", and a share such as 70% had quietly left a node
     * that never answered out of its 100% while holding that node's maximum. */
    if (f->n_silent > 1)
        snprintf(more, sizeof more, " and %d more", f->n_silent - 1);
    if (f->n_silent)
        snprintf(why, sizeof why, " [silent: %s%s, held at the caps last acknowledged, else the "
                                  "GPUs' maximum: a node that %s cannot be capped%s]",
                 f->silent, more,
                 f->n_refused && f->n_other ? "refuses the controller's token, is held by "
                                             "another controller or does not answer"
                 : f->n_refused ? "refuses the controller's token or does not answer"
                 : f->n_other   ? "another controller holds, or that does not answer,"
                                : "does not answer",
                 f->n_never ? "; one never answered is not in a share's 100%" : "");
    /* The allocator's own reason and advice come last and must survive the 511 bytes of a
     * message (they were cut mid-word, "relax-sl"): where the rule's words do not fit, the
     * silent node is only named. */
    char head[2 * PFI_ERR_MSG_MAX], bw[32];
    /* A budget under a watt is taken ("> 0"): printed whole it read "site budget 0 W". */
    snprintf(bw, sizeof bw, budget_w >= 1 ? "%.0f" : "%.3g", budget_w);
    for (int pass = 0; pass < 2; pass++) {
        snprintf(head, sizeof head,
                 "site budget %s W leaves %.0f W for %d jobs (after %.0f W held by %d GPUs of "
                 "silent nodes and pinned jobs%s and %.0f W for %d idle GPUs at their minimum%s): ",
                 bw, for_jobs, v->na, f->reserved, f->n_held, why, f->idle_min, f->n_idle,
                 least);
        if (!f->n_silent || strlen(head) + strlen(err->msg) < PFI_ERR_MSG_MAX)
            break;
        snprintf(why, sizeof why, " [silent: %s%s]", f->silent, more);
    }
    pfi_err_prefix(err, "%s", head);
}

/* Idle GPUs get their minimum plus an equal share of what is left, up to their default: what
 * one cannot take spills over to the others. */
static double idle_share(const pfi_cl *c, double left, int n_idle)
{
    double share = n_idle > 0 ? left / n_idle : 0;
    for (int pass = 0; pass < 8 && n_idle > 0; pass++) {
        double spill = 0;
        int open = 0;
        for (int i = 0; i < c->n_nodes; i++)
            for (int g = 0; g < c->nodes[i].n_gpus; g++) {
                const pfi_device *d = &c->nodes[i].gpu[g];
                if (!c->nodes[i].up || c->nodes[i].job_of[g] >= 0)
                    continue;
                double room = d->default_limit_w - d->min_limit_w;
                if (share >= room)
                    spill += share - room;
                else
                    open++;
            }
        if (spill <= 1e-9 || open == 0)
            break;
        share += spill / open;
    }
    return share;
}

static void write_targets(pfi_cl *c, const job_view *v, const pfi_alloc_result *res,
                          double share, double **target)
{
    for (int i = 0; i < c->n_nodes; i++) {
        const pfi_cl_node *n = &c->nodes[i];
        for (int g = 0; g < n->n_gpus; g++) {
            const pfi_device *d = &n->gpu[g];
            if (gpu_held(c, n, g)) {
                target[i][g] = NAN; /* left alone */
            } else if (n->job_of[g] < 0) {
                /* Floor to the watt so rounding can never add up over the budget. */
                double w = floor(d->min_limit_w + share);
                target[i][g] = w < d->min_limit_w ? d->min_limit_w
                               : w > d->default_limit_w ? d->default_limit_w
                                                        : w;
            } else if (n->up && v->slot[n->job_of[g]] >= 0) {
                target[i][g] = res->cap_w[v->slot[n->job_of[g]]];
            }
        }
    }
    for (int k = 0; k < v->na; k++) {
        pfi_cl_job *J = &c->jobs[v->which[k]];
        J->cap_target_w = res->cap_w[k];
        J->tput_target = res->tput[k];
    }
}

/* Whether only the SLA breaches the nodes saw (pfi_alloc_seen_blamed) keep `for_jobs` watts
 * from meeting every SLA: 0 when no job has one (nothing to relax for). */
static int fits_unseen(const pfi_cl *c, const job_view *v, double for_jobs, const pfi_alloc_opts *o)
{
    int any = 0;
    for (int k = 0; k < v->na; k++)
        any |= c->jobs[v->which[k]].seen.n > 0;
    job_view u;
    pfi_err e = {0};
    if (!any || job_view_build(c, 0, &u, &e) != PFI_OK)
        return 0;
    int fits = pfi_alloc_seen_blamed(u.aj, u.na, for_jobs, o);
    job_view_free(&u);
    return fits;
}

int pfi_cl_plan(pfi_cl *c, double budget_w, double **target, pfi_err *err)
{
    if (isnan(budget_w)) {
        /* No budget: every GPU at its default limit. */
        for (int i = 0; target && i < c->n_nodes; i++)
            for (int g = 0; g < c->nodes[i].n_gpus; g++)
                target[i][g] = c->nodes[i].gpu[g].default_limit_w;
        return PFI_OK;
    }
    fixed_w f;
    job_view v;
    int rc = count_fixed(c, &f, err);
    if (rc == PFI_OK)
        rc = job_view_build(c, 1, &v, err);
    if (rc != PFI_OK)
        return rc;
    double for_jobs = budget_w - f.reserved - f.idle_min;
    pfi_alloc_result res;
    memset(&res, 0, sizeof res);
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.step_w = c->cfg.step_w;
    o.on_infeasible = PFI_INFEASIBLE_FAIL;
    if (for_jobs < 0 || (v.na > 0 && for_jobs <= 0)) {
        rc = pfi_err_set(err, PFI_EINFEASIBLE, "no watt left for the jobs");
    } else if (v.na > 0) {
        rc = pfi_alloc_keep_solve(&c->keep, v.aj, v.na, for_jobs, &o, &res, err);
        if (rc != PFI_OK && rc != PFI_EINFEASIBLE)
            pfi_err_prefix(err, "site allocation: ");
    }
    pfi_alloc_result rel;
    memset(&rel, 0, sizeof rel);
    const pfi_alloc_result *got = &res;
    if (rc == PFI_EINFEASIBLE && for_jobs > 0 && fits_unseen(c, &v, for_jobs, &o)) {
        /* Only the SLA breaches the nodes saw make the SLAs too much: every SLA gives the same,
         * the least that fits, as the node daemon does (docs/cluster.md). */
        pfi_alloc_opts ro = o;
        ro.on_infeasible = PFI_INFEASIBLE_RELAX;
        pfi_err_clear(err);
        rc = pfi_alloc_policy(PFI_POLICY_PFI, v.aj, v.na, NULL, for_jobs, &ro, &rel, err);
        if (rc == PFI_OK) {
            got = &rel;
            if (target)
                pfi_cl_note(c, 1,
                         "the SLA breaches the nodes saw leave no plan within %.0f W that meets "
                         "every SLA: every SLA loosened by %.1f points, the least that fits",
                         budget_w, 100 * rel.sla_extra);
        }
    }
    if (rc == PFI_EINFEASIBLE)
        explain_infeasible(&v, o, budget_w, for_jobs, &f, err);
    if (rc == PFI_OK && target) {
        double left = for_jobs - (v.na > 0 ? got->power_w : 0);
        write_targets(c, &v, got, idle_share(c, left, f.n_idle), target);
        c->reserved_w = f.reserved;
        c->idle_w = f.idle_min;
    }
    if (got == &rel)
        pfi_alloc_result_free(&rel);
    pfi_alloc_keep_put_back(c->keep, &res); /* the next plan refills it (freed when none) */
    job_view_free(&v);
    return rc;
}

double pfi_cl_min_budget(pfi_cl *c, int yield)
{
    fixed_w f;
    job_view v;
    int keep = c->sla_yield;
    c->sla_yield = yield;
    int rc = count_fixed(c, &f, NULL);
    if (rc == PFI_OK)
        rc = job_view_build(c, 1, &v, NULL);
    c->sla_yield = keep;
    if (rc != PFI_OK)
        return NAN;
    double need = f.reserved + f.idle_min;
    if (v.na > 0) {
        pfi_alloc_opts o;
        pfi_alloc_opts_default(&o);
        o.step_w = c->cfg.step_w;
        o.on_infeasible = PFI_INFEASIBLE_FAIL;
        o.max_work = -1;
        pfi_alloc_result big;
        memset(&big, 0, sizeof big);
        need = pfi_alloc_solve(v.aj, v.na, 1e15, &o, &big, NULL) == PFI_OK
                   ? need + big.min_budget_w
                   : NAN;
        pfi_alloc_result_free(&big);
    }
    job_view_free(&v);
    return need;
}

int pfi_cl_plan_policy(pfi_cl *c, double budget_w, int policy, int yield, double *cap,
                       double *rel, pfi_err *err)
{
    for (int j = 0; j < c->n_jobs; j++)
        cap[j] = rel[j] = NAN;
    fixed_w f;
    job_view v;
    int keep = c->sla_yield;
    c->sla_yield = yield;
    int rc = count_fixed(c, &f, err);
    if (rc == PFI_OK)
        rc = job_view_build(c, 1, &v, err);
    c->sla_yield = keep;
    if (rc != PFI_OK)
        return rc;
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.step_w = c->cfg.step_w;
    o.on_infeasible = PFI_INFEASIBLE_FAIL;
    pfi_alloc_result res;
    memset(&res, 0, sizeof res);
    double for_jobs = budget_w - f.reserved - f.idle_min;
    if (v.na > 0)
        rc = for_jobs > 0 ? pfi_alloc_policy(policy, v.aj, v.na, NULL, for_jobs, &o, &res, err)
                          : pfi_err_set(err, PFI_EINFEASIBLE, "no watt left for the jobs");
    for (int k = 0; rc == PFI_OK && k < v.na; k++) {
        cap[v.which[k]] = res.cap_w[k];
        rel[v.which[k]] = v.aj[k].n_gpus > 0 ? res.tput[k] / v.aj[k].n_gpus : NAN;
    }
    pfi_alloc_result_free(&res);
    job_view_free(&v);
    return rc;
}
