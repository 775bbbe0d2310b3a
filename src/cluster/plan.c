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
 * scale.  What the jobs leave is shared equally by the idle GPUs, up to their default limit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cl_int.h"
#include "core/alloc.h"

static double gpu_count_w(const pfi_device *d, double site_max)
{
    if (!isnan(d->limit_w))
        return d->limit_w;
    if (!isnan(d->max_limit_w))
        return d->max_limit_w;
    return site_max;
}

int pfi_cl_plan(pfi_cl *c, double budget_w, double **target, pfi_err *err)
{
    double site_max = NAN;
    for (int i = 0; i < c->n_nodes; i++)
        for (int g = 0; g < c->nodes[i].n_gpus; g++) {
            double m = c->nodes[i].gpu[g].max_limit_w;
            if (!isnan(m) && (isnan(site_max) || m > site_max))
                site_max = m;
        }

    if (isnan(budget_w)) {
        /* No budget: every GPU at its default limit. */
        for (int i = 0; target && i < c->n_nodes; i++)
            for (int g = 0; g < c->nodes[i].n_gpus; g++)
                target[i][g] = c->nodes[i].gpu[g].default_limit_w;
        return PFI_OK;
    }

    /* A job is pinned while any of its nodes is silent (nodes fall silent mid-apply too). */
    for (int j = 0; j < c->n_jobs; j++) {
        c->jobs[j].pinned = 0;
        for (int k = 0; k < c->jobs[j].n_nodes; k++)
            if (!c->nodes[c->jobs[j].nodes[k]].up)
                c->jobs[j].pinned = 1;
    }

    double reserved = 0, idle_min = 0;
    int n_idle = 0, n_held = 0;
    for (int i = 0; i < c->n_nodes; i++) {
        const pfi_cl_node *n = &c->nodes[i];
        for (int g = 0; g < n->n_gpus; g++) {
            const pfi_device *d = &n->gpu[g];
            int j = n->job_of[g];
            if (!n->up || (j >= 0 && c->jobs[j].pinned)) {
                double w = gpu_count_w(d, site_max);
                if (isnan(w))
                    return pfi_err_set(err, PFI_ESTATE,
                                       "node %s has never answered and no GPU's limits are "
                                       "known: cannot count its power",
                                       n->name);
                reserved += w;
                n_held++;
            } else if (j < 0) {
                idle_min += d->min_limit_w;
                n_idle++;
            }
        }
    }

    /* The allocator's view of every job that can move. */
    int na = 0;
    pfi_alloc_job *aj = calloc((size_t)c->n_jobs + 1, sizeof *aj);
    int *which = calloc((size_t)c->n_jobs + 1, sizeof *which);
    double(*pc)[2] = calloc((size_t)c->n_jobs + 1, sizeof *pc);
    double(*pt)[PFI_CL_CURVE_MAX] = calloc((size_t)c->n_jobs + 1, sizeof *pt);
    if (!aj || !which || !pc || !pt) {
        free(aj);
        free(which);
        free(pc);
        free(pt);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    for (int j = 0; j < c->n_jobs; j++) {
        pfi_cl_job *J = &c->jobs[j];
        if (J->pinned || J->n_gpus == 0)
            continue;
        pfi_alloc_job *a = &aj[na];
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
                pt[na][k] = top > 0 ? J->n_gpus * J->tput[k] / top : 0;
            a->cap_w = J->cap_w;
            a->tput = pt[na];
            a->n_points = J->n_points;
        } else {
            pc[na][0] = J->min_cap_w;
            pc[na][1] = J->max_cap_w;
            pt[na][0] = J->max_cap_w > 0 ? J->n_gpus * J->min_cap_w / J->max_cap_w : 0;
            pt[na][1] = J->n_gpus;
            a->cap_w = pc[na];
            a->tput = pt[na];
            a->n_points = 2;
        }
        a->p0_w = J->p0_w > 0 ? J->p0_w : J->max_cap_w;
        a->t0 = NAN;
        a->sla = J->sla;
        a->weight = J->weight > 0 ? J->weight : 1.0;
        which[na++] = j;
    }

    double for_jobs = budget_w - reserved - idle_min;
    pfi_alloc_result res;
    memset(&res, 0, sizeof res);
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.step_w = c->cfg.step_w;
    o.on_infeasible = PFI_INFEASIBLE_FAIL;
    int rc = PFI_OK;
    if (for_jobs < 0 || (na > 0 && for_jobs <= 0)) {
        rc = pfi_err_set(err, PFI_EINFEASIBLE, "no watt left for the jobs");
    } else if (na > 0) {
        rc = pfi_alloc_solve(aj, na, for_jobs, &o, &res, err);
        if (rc != PFI_OK && rc != PFI_EINFEASIBLE)
            pfi_err_prefix(err, "site allocation: ");
    }
    if (rc == PFI_EINFEASIBLE) {
        /* The least feasible budget, for the message: the jobs' own minimum, found by solving
         * with room to spare (nothing is applied from it). */
        double need = reserved + idle_min;
        if (na > 0) {
            pfi_alloc_result big;
            memset(&big, 0, sizeof big);
            o.max_work = -1;
            need = pfi_alloc_solve(aj, na, 1e15, &o, &big, NULL) == PFI_OK
                       ? need + big.min_budget_w
                       : NAN;
            pfi_alloc_result_free(&big);
        }
        char least[64] = "";
        if (isfinite(need))
            snprintf(least, sizeof least, "; least feasible site budget %.0f W", need);
        pfi_err_prefix(err,
                       "site budget %.0f W leaves %.0f W for %d jobs (after %.0f W held by %d "
                       "GPUs of silent nodes and pinned jobs and %.0f W for %d idle GPUs at "
                       "their minimum%s): ",
                       budget_w, for_jobs, na, reserved, n_held, idle_min, n_idle, least);
    }
    if (rc == PFI_OK && target) {
        double left = for_jobs - (na > 0 ? res.power_w : 0);
        /* Idle GPUs: minimum plus an equal share of what is left, up to their default. */
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
        for (int i = 0; i < c->n_nodes; i++) {
            const pfi_cl_node *n = &c->nodes[i];
            for (int g = 0; g < n->n_gpus; g++) {
                const pfi_device *d = &n->gpu[g];
                int j = n->job_of[g];
                if (!n->up || (j >= 0 && c->jobs[j].pinned)) {
                    target[i][g] = NAN; /* left alone */
                } else if (j < 0) {
                    double w = d->min_limit_w + share;
                    /* Floor to the watt so rounding can never add up over the budget. */
                    w = floor(w);
                    target[i][g] = w < d->min_limit_w ? d->min_limit_w
                                   : w > d->default_limit_w ? d->default_limit_w
                                                            : w;
                }
            }
        }
        for (int k = 0; k < na; k++) {
            pfi_cl_job *J = &c->jobs[which[k]];
            J->cap_target_w = res.cap_w[k];
            J->tput_target = res.tput[k];
            for (int i = 0; i < c->n_nodes; i++)
                for (int g = 0; g < c->nodes[i].n_gpus; g++)
                    if (c->nodes[i].up && c->nodes[i].job_of[g] == which[k])
                        target[i][g] = res.cap_w[k];
        }
        c->reserved_w = reserved;
        c->idle_w = idle_min;
    }
    pfi_alloc_result_free(&res);
    free(aj);
    free(which);
    free(pc);
    free(pt);
    return rc;
}
