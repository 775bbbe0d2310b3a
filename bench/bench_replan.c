/* SPDX-License-Identifier: Apache-2.0 */
/* bench_replan: the cluster controller's re-plan (pfi_cl_plan: from a site budget to a cap for
 * every GPU) at site scale, in CPU time, with the allocator state kept between plans (as the
 * controller runs) and fresh (the state dropped before every plan), in the same run.
 *
 * NODES nodes x 8 GPUs (200-700 W), jobs of 1 to 32 GPUs (multi-node from 16 up) on ~90% of
 * them, each with its own curve, a third with an SLA; no network: the controller's state is
 * filled in directly.  Three re-plans, each timed REPEATS times (median):
 *   budget:  -10% then +5% (two plans, the figure is one plan);
 *   curve:   one job's curve reported anew, then a plan at the same budget;
 *   arrive:  a job leaves, then comes back (two plans, the figure is one plan).
 * Then the node daemon's plan (pfi serve: 64 GPUs, 32 jobs with curves, a third with an SLA)
 * after a budget change, kept and fresh, 200 times each.
 * Kept and fresh plans must give every GPU the same cap: the bench fails otherwise.
 *   bench_replan [NODES] [REPEATS] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cl_int.h"
#include "core/alloc_keep.h"
#include "core/pfi.h"
#include "core/policy.h"
#include "serve/serve_int.h"
#include "util/clock.h"

#define GPN 8

static unsigned long long rng = 2463534242u;
static double urand(void)
{
    return pfi_rand_uniform(&rng);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void set_curve(pfi_cl_job *J)
{
    static const double caps[] = {200, 300, 400, 500, 600, 700};
    double a = 0.5 + 0.7 * urand(), b = 1.2 + 1.3 * urand();
    J->has_curve = 1;
    J->n_points = 6;
    for (int k = 0; k < 6; k++) {
        double r = 1 - caps[k] / 700.0, v = 1 - a * pow(r, b);
        J->cap_w[k] = caps[k];
        J->tput[k] = v < 0.05 ? 0.05 : v;
    }
}

/* A site of `nodes` nodes filled as bench_cluster fills it. */
static pfi_cl *site(int nodes)
{
    pfi_cl *c = calloc(1, sizeof *c);
    pfi_cl_config_defaults(&c->cfg);
    c->n_nodes = nodes;
    c->nodes = calloc((size_t)nodes, sizeof *c->nodes);
    c->jobs = calloc((size_t)nodes * GPN, sizeof *c->jobs);
    for (int i = 0; i < nodes; i++) {
        pfi_cl_node *n = &c->nodes[i];
        snprintf(n->name, sizeof n->name, "node%05d", i);
        n->n_gpus = GPN;
        n->up = n->ever_up = 1;
        for (int g = 0; g < GPN; g++) {
            n->gpu[g].index = g;
            n->gpu[g].min_limit_w = 200;
            n->gpu[g].max_limit_w = n->gpu[g].default_limit_w = n->gpu[g].limit_w = 700;
            n->job_of[g] = -1;
        }
    }
    static const int sizes[] = {1, 2, 4, 8, 16, 32};
    int node = 0, gpu = 0;
    while (node < nodes) {
        int size = sizes[(int)(urand() * 6) % 6];
        int span = size > GPN ? size / GPN : 1;
        if ((size >= GPN && gpu != 0) || gpu + (size > GPN ? GPN : size) > GPN) {
            node++;
            gpu = 0;
            continue;
        }
        if (node + span > nodes)
            break;
        int idle = urand() < 0.1; /* ~10% of the room stays idle */
        if (!idle) {
            pfi_cl_job *J = &c->jobs[c->n_jobs];
            snprintf(J->id, sizeof J->id, "%d", 1000 + c->n_jobs);
            J->n_gpus = size;
            J->n_nodes = span;
            J->nodes = calloc((size_t)span, sizeof *J->nodes);
            for (int p = 0; p < span; p++) {
                J->nodes[p] = node + p;
                for (int q = 0; q < (size > GPN ? GPN : size); q++)
                    c->nodes[node + p].job_of[(size > GPN ? 0 : gpu) + q] = c->n_jobs;
            }
            J->sla = urand() < 0.33 ? 0.10 + 0.10 * urand() : NAN;
            J->weight = 1.0;
            J->pfi30 = NAN;
            J->p0_w = 650;
            J->t0 = 1000;
            J->min_cap_w = 200;
            J->max_cap_w = 700;
            J->cap_now_w = J->cap_target_w = J->tput_target = NAN;
            J->registered = 1;
            set_curve(J);
            c->n_jobs++;
        }
        if (size >= GPN) {
            node += span;
        } else if ((gpu += size) >= GPN) {
            node++;
            gpu = 0;
        }
    }
    return c;
}

static double **targets(int nodes)
{
    double **t = calloc((size_t)nodes, sizeof *t);
    for (int i = 0; i < nodes; i++)
        t[i] = calloc(GPN, sizeof **t);
    return t;
}

/* One plan, kept or fresh; its CPU seconds. */
static double plan(pfi_cl *c, double w, double **t, int fresh)
{
    if (fresh) {
        pfi_alloc_keep_free(c->keep);
        c->keep = NULL;
    }
    pfi_err e = {0};
    double t0 = pfi_clock_cpu();
    if (pfi_cl_plan(c, w, t, &e) != PFI_OK) {
        fprintf(stderr, "bench_replan: %s\n", e.msg);
        exit(1);
    }
    return pfi_clock_cpu() - t0;
}

static int same_targets(const pfi_cl *c, double **a, double **b)
{
    for (int i = 0; i < c->n_nodes; i++)
        for (int g = 0; g < GPN; g++)
            if (!(a[i][g] == b[i][g] || (isnan(a[i][g]) && isnan(b[i][g]))))
                return 0;
    return 1;
}

/* Job j leaves (its GPUs idle, out of the plan: back 0) or comes back (back 1); saved holds its
 * GPUs' owners while it is away. */
static void leave_or_arrive(pfi_cl *c, int j, int back, int *saved_gpus)
{
    pfi_cl_job *J = &c->jobs[j];
    for (int p = 0; p < J->n_nodes; p++) {
        pfi_cl_node *n = &c->nodes[J->nodes[p]];
        for (int g = 0; g < GPN; g++)
            if (!back && n->job_of[g] == j)
                n->job_of[g] = -2; /* marked: idle once the marks are cleared below */
            else if (back && n->job_of[g] == -3)
                n->job_of[g] = j;
    }
    for (int p = 0; p < J->n_nodes; p++) {
        pfi_cl_node *n = &c->nodes[J->nodes[p]];
        for (int g = 0; g < GPN; g++)
            if (n->job_of[g] == -2)
                n->job_of[g] = -3;
    }
    if (!back) {
        *saved_gpus = J->n_gpus;
        J->n_gpus = 0;
    } else {
        J->n_gpus = *saved_gpus;
    }
}

/* The node daemon's plan: median CPU seconds of one plan after a budget change, kept and fresh;
 * 0 when every kept plan equalled the fresh one. */
static int node_replan(double *kept_s, double *fresh_s)
{
    enum { NGPU = 64, NJOB = 32, REPS = 200 };
    static srv_gpu g[NGPU];
    static srv_job jobs[NJOB];
    for (int i = 0; i < NGPU; i++) {
        memset(&g[i], 0, sizeof g[i]);
        g[i].dev.index = i;
        g[i].dev.min_limit_w = 200;
        g[i].dev.max_limit_w = g[i].dev.default_limit_w = g[i].dev.limit_w = 700;
        g[i].original_w = 700;
        g[i].pinned_w = g[i].requested_w = NAN;
        g[i].up = 1;
        g[i].job = i / 2;
    }
    for (int j = 0; j < NJOB; j++) {
        srv_job *J = &jobs[j];
        memset(J, 0, sizeof *J);
        snprintf(J->id, sizeof J->id, "job%d", j);
        J->n_gpus = 2;
        J->gpus[0] = 2 * j;
        J->gpus[1] = 2 * j + 1;
        J->sla = j % 3 == 0 ? 0.1 + 0.1 * urand() : NAN;
        J->weight = 1;
        J->t0_tps = 1000 + 4000 * urand();
        pfi_fit fit = {.family = PFI_FAM_POWER, .p = {0.5 + 0.5 * urand(), 1.2 + 1.3 * urand(), 0},
                       .rmse = NAN, .n_points = 0};
        pfi_err e = {0};
        if (pfi_curve_from_fit(&fit, J->t0_tps, 640, 700, 200, 700, 2, 0.7, &J->curve, &e))
            return fprintf(stderr, "bench_replan: %s\n", e.msg), 1;
        J->curve_src = SRV_CURVE_GIVEN;
    }
    static srv_plan pk, pf;
    double tk[REPS], tf[REPS];
    pfi_alloc_keep *keep = NULL;
    int bad = 0;
    for (int r = 0; r < REPS; r++) {
        double w = NGPU * 700.0 * (0.55 + 0.4 * urand());
        pfi_err ek = {0}, ef = {0};
        double t0 = pfi_clock_cpu();
        int rk = pfi_srv_plan_compute(g, NGPU, jobs, NJOB, w, &keep, &pk, &ek);
        double t1 = pfi_clock_cpu();
        int rf = pfi_srv_plan_compute(g, NGPU, jobs, NJOB, w, NULL, &pf, &ef);
        tk[r] = t1 - t0;
        tf[r] = pfi_clock_cpu() - t1;
        bad |= rk != rf || memcmp(pk.target_w, pf.target_w, sizeof pk.target_w) != 0;
    }
    pfi_alloc_keep_free(keep);
    qsort(tk, REPS, sizeof tk[0], cmp_d);
    qsort(tf, REPS, sizeof tf[0], cmp_d);
    *kept_s = tk[REPS / 2];
    *fresh_s = tf[REPS / 2];
    return bad;
}

int main(int argc, char **argv)
{
    int nodes = argc > 1 ? atoi(argv[1]) : 4000;
    int reps = argc > 2 ? atoi(argv[2]) : 9;
    if (nodes < 4 || reps < 1) {
        fprintf(stderr, "usage: bench_replan [NODES >= 4] [REPEATS]\n");
        return 2;
    }
    pfi_cl *c = site(nodes);
    double full = 0;
    for (int i = 0; i < nodes; i++)
        full += GPN * 700.0;
    double w = 0.7 * full;
    double **tk = targets(nodes), **tf = targets(nodes);
    printf("cluster re-plan: %d nodes x %d GPUs, %d jobs\n", nodes, GPN, c->n_jobs);
    static const char *what[] = {"budget -10%/+5%", "one job's curve", "a job leaves/arrives"};
    double med[3][2];
    int bad = 0;
    for (int kind = 0; kind < 3; kind++) {
        double *tt[2] = {calloc((size_t)reps, sizeof(double)), calloc((size_t)reps, sizeof(double))};
        for (int r = 0; r < reps; r++) {
            /* The same change for both: the same job, the same new curve. */
            int j = (int)(urand() * c->n_jobs);
            unsigned seed = rng;
            for (int fresh = 0; fresh < 2; fresh++) {
                double **t = fresh ? tf : tk;
                plan(c, w, t, 0); /* the state the change starts from */
                if (kind == 0) {
                    tt[fresh][r] = (plan(c, 0.9 * w, t, fresh) + plan(c, 0.945 * w, t, fresh)) / 2;
                } else if (kind == 1) {
                    rng = seed;
                    set_curve(&c->jobs[j]);
                    tt[fresh][r] = plan(c, w, t, fresh);
                } else {
                    int saved;
                    leave_or_arrive(c, j, 0, &saved);
                    double t1 = plan(c, w, t, fresh);
                    leave_or_arrive(c, j, 1, &saved);
                    tt[fresh][r] = (t1 + plan(c, w, t, fresh)) / 2;
                }
            }
            if (!same_targets(c, tk, tf))
                bad = 1;
        }
        for (int fresh = 0; fresh < 2; fresh++) {
            qsort(tt[fresh], (size_t)reps, sizeof(double), cmp_d);
            med[kind][fresh] = tt[fresh][reps / 2] * 1e3;
            free(tt[fresh]);
        }
        printf("re-plan after %-22s kept %.2f ms, fresh %.2f ms CPU (median of %d): %.2f x\n",
               what[kind], med[kind][0], med[kind][1], reps, med[kind][0] / med[kind][1]);
    }
    double nk, nf;
    bad |= node_replan(&nk, &nf);
    printf("node re-plan (pfi serve), 64 GPUs, 32 jobs, after a budget change: kept %.1f us, "
           "fresh %.1f us CPU (median of 200): %.2f x\n",
           nk * 1e6, nf * 1e6, nk / nf);
    printf("kept plans gave every GPU the fresh plan's cap: %s\n", bad ? "NO" : "yes");
    return bad;
}
