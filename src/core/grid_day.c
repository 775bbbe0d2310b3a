/* SPDX-License-Identifier: Apache-2.0 */
/* grid_day.c: a simulated site's day under grid events (grid_day.h). */
#include "core/grid_day.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/event_report.h"
#include "core/policy.h"

const char *pfi_grid_day_policy_name(int p)
{
    static const char *names[] = {"none", "pfi", "equal", "oracle"};
    return p >= 0 && p < PFI_GRID_DAY_NPOL ? names[p] : "unknown";
}

void pfi_grid_day_defaults(pfi_grid_day_opts *o)
{
    memset(o, 0, sizeof *o);
    o->nodes = 32;
    o->gpus_per_node = 8;
    o->day_s = 86400;
    o->dt_s = 60;
    o->occupancy = 0.85;
    o->mean_duration_s = 6 * 3600.0;
    o->seed = 1;
    o->n_events = 2;
    pfi_event_init_cut(&o->events[0], "cut25-3h", 13 * 3600.0, 16 * 3600.0, 0.25, NAN,
                       "measured");
    o->events[0].ramp_down_s = o->events[0].ramp_up_s = 600;
    pfi_event_init_cut(&o->events[1], "cut30-30m", 19 * 3600.0, 19.5 * 3600.0, 0.30, NAN,
                       "measured");
    o->events[1].ramp_down_s = o->events[1].ramp_up_s = 300;
}

/* xorshift64* */
static double urand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static double expo(uint64_t *s, double mean)
{
    return -mean * log(1.0 - urand(s));
}

typedef struct inst {
    int job;
    double arrive, dur, start;
    int node;           /* small job: its node; -1 for whole nodes */
    uint64_t nodes;     /* whole nodes taken (large job) */
    int placed, done;
} inst;

typedef struct sched {
    int n, cap;
    inst *v;
    int *run_off, *run_idx; /* per step: instances running (CSR) */
} sched;

static int add_inst(sched *s, int job, double arrive, double dur)
{
    if (s->n == s->cap) {
        int c = s->cap ? 2 * s->cap : 256;
        inst *m = realloc(s->v, sizeof *m * (size_t)c);
        if (!m)
            return 0;
        s->v = m;
        s->cap = c;
    }
    s->v[s->n++] = (inst){job, arrive, dur, NAN, -1, 0, 0, 0};
    return 1;
}

/* Places x on the nodes' free GPUs; 1 when it fit. */
static int place(inst *x, int g, int *free_g, int nodes, int gpn)
{
    if (g <= gpn) {
        for (int i = 0; i < nodes; i++)
            if (free_g[i] >= g) {
                free_g[i] -= g;
                x->node = i;
                return 1;
            }
        return 0;
    }
    int need = (g + gpn - 1) / gpn, got = 0;
    uint64_t m = 0;
    for (int i = 0; i < nodes && got < need; i++)
        if (free_g[i] == gpn) {
            m |= 1ull << i;
            got++;
        }
    if (got < need)
        return 0;
    for (int i = 0; i < nodes; i++)
        if (m & (1ull << i))
            free_g[i] = 0;
    x->node = -1;
    x->nodes = m;
    return 1;
}

static void unplace(const inst *x, int g, int *free_g, int nodes, int gpn)
{
    if (x->node >= 0) {
        free_g[x->node] += g;
        return;
    }
    for (int i = 0; i < nodes; i++)
        if (x->nodes & (1ull << i))
            free_g[i] = gpn;
}

/* Arrivals over the day (seeded), then placement step by step into s->run_*. */
static int schedule(const pfi_alloc_job *jobs, int n, const pfi_grid_day_opts *o, int steps,
                    sched *s, int *n_waited, pfi_err *err)
{
    int site = o->nodes * o->gpus_per_node, fit = 0;
    double gsum = 0;
    for (int j = 0; j < n; j++)
        if (jobs[j].n_gpus <= site) {
            gsum += jobs[j].n_gpus;
            fit++;
        }
    if (fit == 0)
        return pfi_err_set(err, PFI_EINVAL, "no job fits on %d GPUs", site);
    uint64_t rng = o->seed * 0x9E3779B97F4A7C15ull + 1;
    double rate = o->occupancy * site / (gsum / fit * o->mean_duration_s);
    /* Jobs running at the start: drawn until the occupancy is reached. */
    double busy = 0;
    for (int tries = 0; busy < o->occupancy * site && tries < 100000; tries++) {
        int j = (int)(urand(&rng) * n) % n;
        if (jobs[j].n_gpus > site || busy + jobs[j].n_gpus > o->occupancy * site + 0.5)
            continue;
        if (!add_inst(s, j, 0, expo(&rng, o->mean_duration_s)))
            return pfi_err_set(err, PFI_ENOMEM, "out of memory");
        busy += jobs[j].n_gpus;
    }
    for (double t = expo(&rng, 1 / rate); t < o->day_s; t += expo(&rng, 1 / rate)) {
        int j = (int)(urand(&rng) * n) % n;
        if (jobs[j].n_gpus > site)
            continue;
        double d = expo(&rng, o->mean_duration_s);
        d = d < 600 ? 600 : d > 172800 ? 172800 : d;
        if (!add_inst(s, j, t, d))
            return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    int *free_g = malloc(sizeof *free_g * (size_t)o->nodes);
    s->run_off = calloc((size_t)steps + 1, sizeof *s->run_off);
    int rcap = 1024, rn = 0;
    s->run_idx = malloc(sizeof *s->run_idx * (size_t)rcap);
    if (!free_g || !s->run_off || !s->run_idx) {
        free(free_g);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    for (int i = 0; i < o->nodes; i++)
        free_g[i] = o->gpus_per_node;
    for (int k = 0; k < steps; k++) {
        double t = k * o->dt_s;
        for (int i = 0; i < s->n; i++) {
            inst *x = &s->v[i];
            if (x->placed && !x->done && x->start + x->dur <= t) {
                unplace(x, jobs[x->job].n_gpus, free_g, o->nodes, o->gpus_per_node);
                x->done = 1;
            }
        }
        for (int i = 0; i < s->n; i++) {
            inst *x = &s->v[i];
            if (x->placed || x->arrive > t)
                continue;
            if (place(x, jobs[x->job].n_gpus, free_g, o->nodes, o->gpus_per_node)) {
                x->placed = 1;
                x->start = t;
                *n_waited += t - x->arrive >= o->dt_s;
            }
        }
        s->run_off[k] = rn;
        for (int i = 0; i < s->n; i++)
            if (s->v[i].placed && !s->v[i].done) {
                if (rn == rcap) {
                    rcap *= 2;
                    int *m = realloc(s->run_idx, sizeof *m * (size_t)rcap);
                    if (!m) {
                        free(free_g);
                        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
                    }
                    s->run_idx = m;
                }
                s->run_idx[rn++] = i;
            }
    }
    s->run_off[steps] = rn;
    free(free_g);
    return PFI_OK;
}

/* One policy's caps for the m running jobs at budget b; 0 when infeasible (caps at minimum). */
static int caps_for(int pol, const pfi_alloc_job *tv, const pfi_alloc_job *pv, int m, double b,
                    double *cap)
{
    double full = 0;
    for (int i = 0; i < m; i++)
        full += tv[i].n_gpus * tv[i].max_cap_w;
    if (pol == PFI_GD_NONE || !(b < full)) {
        for (int i = 0; i < m; i++)
            cap[i] = tv[i].max_cap_w;
        return 1;
    }
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.on_infeasible = PFI_INFEASIBLE_FAIL;
    pfi_alloc_result r;
    int policy = pol == PFI_GD_PFI ? PFI_POLICY_PFI
                 : pol == PFI_GD_EQUAL ? PFI_POLICY_EQUAL
                                       : PFI_POLICY_ORACLE;
    int rc = pfi_alloc_policy(policy, pol == PFI_GD_PFI ? pv : tv, m, NULL, b, &o, &r, NULL);
    for (int i = 0; i < m; i++)
        cap[i] = rc == PFI_OK ? r.cap_w[i]
                              : (pol == PFI_GD_PFI ? pv[i].min_cap_w : tv[i].min_cap_w);
    pfi_alloc_result_free(&r);
    return rc == PFI_OK;
}

static int alloc_out(pfi_grid_day *d, int steps)
{
    d->n_steps = steps;
    d->t = calloc((size_t)steps, sizeof *d->t);
    d->budget_w = calloc((size_t)steps, sizeof *d->budget_w);
    d->running = calloc((size_t)steps, sizeof *d->running);
    int ok = d->t && d->budget_w && d->running;
    for (int p = 0; p < PFI_GRID_DAY_NPOL; p++) {
        d->draw_w[p] = calloc((size_t)steps, sizeof *d->draw_w[p]);
        d->tput[p] = calloc((size_t)steps, sizeof *d->tput[p]);
        ok = ok && d->draw_w[p] && d->tput[p];
    }
    return ok;
}

/* Runs policy p over every step (budgets in d->budget_w). */
static int run_policy(const pfi_alloc_job *truth, const pfi_alloc_job *pred, const sched *s,
                      int p, pfi_grid_day *d, pfi_alloc_job *tv, pfi_alloc_job *pv, double *cap,
                      char (*ids)[24])
{
    int infeasible = 0;
    for (int k = 0; k < d->n_steps; k++) {
        int m = 0;
        for (int q = s->run_off[k]; q < s->run_off[k + 1]; q++) {
            int ii = s->run_idx[q], j = s->v[ii].job;
            snprintf(ids[m], sizeof ids[m], "i%d", ii);
            tv[m] = truth[j];
            pv[m] = pred[j];
            tv[m].id = pv[m].id = ids[m];
            tv[m].sla = pv[m].sla = NAN;
            m++;
        }
        d->running[k] = m;
        if (m > 0 && !caps_for(p, tv, pv, m, d->budget_w[k], cap))
            infeasible++;
        double w = 0, tp = 0;
        for (int i = 0; i < m; i++) {
            w += tv[i].n_gpus * fmin(tv[i].p0_w, cap[i]);
            tp += pfi_alloc_tput_at(&tv[i], cap[i]);
        }
        d->draw_w[p][k] = w;
        d->tput[p][k] = tp;
    }
    return infeasible;
}

static void measure_baselines(pfi_grid_day *d, const pfi_grid_day_opts *o)
{
    for (int e = 0; e < d->n_events; e++) {
        pfi_event *ev = &d->events[e];
        if (ev->kind != PFI_EVENT_CUT)
            continue;
        double r0 = pfi_event_ramp_start_s(ev), sum = 0;
        int m = 0;
        for (int k = 0; k < d->n_steps; k++)
            if (d->t[k] >= r0 - PFI_COMPLIANCE_BASELINE_S && d->t[k] < r0) {
                sum += d->draw_w[PFI_GD_NONE][k];
                m++;
            }
        ev->baseline_w = m ? sum / m : NAN;
        snprintf(ev->baseline_method, sizeof ev->baseline_method,
                 "mean site draw over the hour before the ramp (%d steps of %.0f s)", m,
                 o->dt_s);
    }
}

static int score(pfi_grid_day *d, const pfi_event_site *site, const pfi_grid_day_opts *o,
                 pfi_err *err)
{
    for (int e = 0; e < d->n_events; e++) {
        const pfi_event *ev = &d->events[e];
        double a = pfi_event_ramp_start_s(ev), b = pfi_event_restored_s(ev, site);
        for (int p = 0; p < PFI_GRID_DAY_NPOL; p++) {
            pfi_event_compliance c;
            int rc = pfi_event_compliance_compute(ev, site, d->t, d->draw_w[p], d->n_steps, 60,
                                                  o->dt_s + 1, &c, err);
            if (rc != PFI_OK)
                return rc;
            pfi_grid_day_cell *x = &d->cell[e][p];
            x->max_excess_w = c.max_excess_w;
            x->seconds_over_target = c.seconds_over_target;
            x->energy_shed_kwh = c.energy_shed_kwh;
            x->ramp_ok = c.ramp_ok;
            pfi_event_compliance_free(&c);
            x->tput_lost = 0;
            for (int k = 0; k < d->n_steps; k++)
                if (d->t[k] + o->dt_s > a && d->t[k] < b)
                    x->tput_lost += (d->tput[PFI_GD_NONE][k] - d->tput[p][k]) * o->dt_s;
        }
    }
    return PFI_OK;
}

static int check_opts(const pfi_alloc_job *truth, const pfi_alloc_job *pred, int n,
                      const pfi_grid_day_opts *o, pfi_err *err)
{
    if (n < 1 || !truth || !pred)
        return pfi_err_set(err, PFI_EINVAL, "a grid day needs jobs");
    if (o->nodes < 1 || o->nodes > 64 || o->gpus_per_node < 1)
        return pfi_err_set(err, PFI_EINVAL, "1 to 64 nodes of at least one GPU");
    if (!(o->dt_s > 0) || !(o->day_s >= o->dt_s) || o->day_s / o->dt_s > 1e6)
        return pfi_err_set(err, PFI_EINVAL, "bad day length or step");
    if (!(o->occupancy > 0 && o->occupancy <= 1) || !(o->mean_duration_s > 0))
        return pfi_err_set(err, PFI_EINVAL, "occupancy in (0, 1] and a positive duration");
    if (o->n_events < 0 || o->n_events > PFI_GRID_DAY_MAX_EVENTS)
        return pfi_err_set(err, PFI_EINVAL, "0 to %d events", PFI_GRID_DAY_MAX_EVENTS);
    return PFI_OK;
}

int pfi_grid_day_run(const pfi_alloc_job *truth, const pfi_alloc_job *pred, int n,
                     const pfi_grid_day_opts *o, pfi_grid_day *d, pfi_err *err)
{
    memset(d, 0, sizeof *d);
    int rc = check_opts(truth, pred, n, o, err);
    if (rc != PFI_OK)
        return rc;
    int steps = (int)ceil(o->day_s / o->dt_s - 1e-9);
    sched s;
    memset(&s, 0, sizeof s);
    pfi_alloc_job *tv = NULL, *pv = NULL;
    double *cap = NULL;
    char(*ids)[24] = NULL;
    if (!alloc_out(d, steps)) {
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = schedule(truth, n, o, steps, &s, &d->n_waited, err)) != PFI_OK)
        goto out;
    d->n_started = s.n;
    d->site_gpus = o->nodes * o->gpus_per_node;
    double maxcap = 0;
    for (int j = 0; j < n; j++)
        maxcap = fmax(maxcap, truth[j].max_cap_w);
    d->site_max_w = d->site_gpus * maxcap;
    pfi_event_site site = pfi_event_site_default(d->site_max_w);
    size_t most = (size_t)s.n + 1;
    tv = calloc(most, sizeof *tv);
    pv = calloc(most, sizeof *pv);
    cap = calloc(most, sizeof *cap);
    ids = calloc(most, sizeof *ids);
    if (!tv || !pv || !cap || !ids) {
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    for (int k = 0; k < steps; k++) {
        d->t[k] = k * o->dt_s;
        d->budget_w[k] = INFINITY;
    }
    run_policy(truth, pred, &s, PFI_GD_NONE, d, tv, pv, cap, ids);
    d->n_events = o->n_events;
    memcpy(d->events, o->events, sizeof d->events);
    measure_baselines(d, o);
    for (int e = 0; e < d->n_events; e++)
        if ((rc = pfi_event_validate(&d->events[e], &site, err)) != PFI_OK)
            goto out;
    for (int k = 0; k < steps; k++)
        d->budget_w[k] = pfi_event_budget_min(d->events, d->n_events, &site, d->t[k],
                                              d->t[k] + o->dt_s);
    for (int p = PFI_GD_PFI; p < PFI_GRID_DAY_NPOL; p++) {
        int inf = run_policy(truth, pred, &s, p, d, tv, pv, cap, ids);
        if (inf > d->n_infeasible_steps)
            d->n_infeasible_steps = inf;
    }
    rc = score(d, &site, o, err);
out:
    free(s.v);
    free(s.run_off);
    free(s.run_idx);
    free(tv);
    free(pv);
    free(cap);
    free(ids);
    if (rc != PFI_OK)
        pfi_grid_day_free(d);
    return rc;
}

void pfi_grid_day_free(pfi_grid_day *d)
{
    free(d->t);
    free(d->budget_w);
    free(d->running);
    for (int p = 0; p < PFI_GRID_DAY_NPOL; p++) {
        free(d->draw_w[p]);
        free(d->tput[p]);
    }
    memset(d, 0, sizeof *d);
}
