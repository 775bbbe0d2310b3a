/* SPDX-License-Identifier: Apache-2.0 */
/* telemetry.c: the sampler's pass over the GPUs (readings, the limits as read) and what it
 * feeds: each job's baseline telemetry and a running probe's averages.  It never decides:
 * decisions read its results through the state (node.c's snapshot). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "serve/serve_int.h"

static void baseline_add(srv_node *n, srv_job *j)
{
    double v[9] = {0};
    for (int k = 0; k < j->n_gpus; k++) {
        const srv_gpu *g = &n->gpu[j->gpus[k]];
        /* Only samples at the default limit describe the job unconstrained. */
        if (!g->up || !(g->s.have & PFI_F_POWER) ||
            g->dev.limit_w < g->dev.default_limit_w - 1.0)
            return;
        const pfi_sample *s = &g->s;
        v[0] += s->power_w;
        v[1] += (s->have & PFI_F_SM_CLOCK) ? s->sm_clock_mhz : NAN;
        v[2] += (s->have & PFI_F_REASONS) ? ((s->clock_reasons & PFI_REASON_SW_POWERCAP) != 0)
                                          : NAN;
        v[3] += (s->have & PFI_F_GPU_UTIL) ? s->gpu_util : NAN;
        v[4] += (s->have & PFI_F_SM_ACTIVE) ? s->sm_active : NAN;
        v[5] += (s->have & PFI_F_TENSOR) ? s->tensor_active : NAN;
        v[6] += (s->have & PFI_F_DRAM) ? s->dram_active : NAN;
        v[7] += (s->have & PFI_F_NVLINK) ? s->nvlink_tx_mibs + s->nvlink_rx_mibs : NAN;
        v[8] += (s->have & PFI_F_PCIE) ? s->pcie_tx_mibs + s->pcie_rx_mibs : NAN;
    }
    srv_baseline *bl = &j->base;
    double *m[9] = {&bl->power_w,   &bl->sm_clock_mhz,  &bl->powercap,
                    &bl->gpu_util,  &bl->sm_active,     &bl->tensor_active,
                    &bl->dram_active, &bl->nvlink_mibs, &bl->pcie_mibs};
    /* Running mean over at most the last ~600 samples, so an old phase of the job fades. */
    double w = 1.0 / (bl->n < 600 ? bl->n + 1 : 600);
    for (int k = 0; k < 9; k++) {
        double x = v[k] / j->n_gpus;
        *m[k] = bl->n == 0 ? x : *m[k] + w * (x - *m[k]);
    }
    bl->n++;
}

void pfi_srv_energy_add(srv_gpu *g, const pfi_sample *s)
{
    if (g->energy_src == 0 && (s->have & (PFI_F_ENERGY | PFI_F_POWER)))
        g->energy_src = (s->have & PFI_F_ENERGY) ? 1 : 2;
    if (g->energy_src == 1 && (s->have & PFI_F_ENERGY)) {
        g->energy_j = s->energy_j;
    } else if (g->energy_src == 2 && (s->have & PFI_F_POWER) && isfinite(s->t_s)) {
        if (isnan(g->energy_j))
            g->energy_j = 0;
        else if (s->t_s > g->energy_t)
            g->energy_j += 0.5 * (g->energy_p + s->power_w) * (s->t_s - g->energy_t);
        g->energy_t = s->t_s;
        g->energy_p = s->power_w;
    } else if (g->energy_src == 2) {
        g->energy_t = NAN; /* a reading without the draw (NOT_READY): its gap is not counted */
    }
}

void pfi_srv_energy_gap(srv_gpu *g)
{
    g->energy_t = NAN;
}

double pfi_srv_draw_locked(const srv_node *n)
{
    double draw = 0;
    int drawn = 0;
    for (int i = 0; i < n->n_gpus; i++)
        if (n->gpu[i].up && (n->gpu[i].s.have & PFI_F_POWER)) {
            draw += n->gpu[i].s.power_w;
            drawn++;
        }
    return drawn ? draw : NAN;
}

double pfi_srv_draw_bounded_locked(const srv_node *n, int *unread)
{
    double draw = 0;
    int counted = 0;
    *unread = 0;
    for (int i = 0; i < n->n_gpus; i++) {
        const srv_gpu *g = &n->gpu[i];
        double w = g->up && (g->s.have & PFI_F_POWER) ? g->s.power_w : NAN;
        if (isnan(w)) {
            w = isfinite(g->dev.limit_w) ? g->dev.limit_w : g->dev.max_limit_w;
            if (isfinite(w))
                (*unread)++;
        }
        if (isfinite(w)) {
            draw += w;
            counted++;
        }
    }
    return counted ? draw : NAN;
}

/* The status page's plot: budget, sum of the limits and draw after this pass (mu held). */
static void record_history(srv_node *n)
{
    double lim = 0;
    for (int i = 0; i < n->n_gpus; i++)
        lim += n->gpu[i].dev.limit_w;
    double v[PFI_SERIES_COLS] = {n->budget_w, lim, pfi_srv_draw_locked(n)};
    pfi_series_add(&n->hist, pfi_clock_wall(), v);
}

void pfi_srv_sample(srv_node *n)
{
    for (int i = 0; i < n->n_gpus; i++) {
        pfi_sample s;
        pfi_device d;
        pfi_err e = {0};
        /* A decision committed after this point read back limits newer than this reading. */
        pthread_mutex_lock(&n->mu);
        long long gen = n->commit_gen;
        pthread_mutex_unlock(&n->mu);
        pthread_mutex_lock(&n->hw_mu);
        int rc = pfi_hw_sample(n->b, i, &s, &e);
        if (rc == PFI_OK)
            rc = pfi_hw_info(n->b, i, &d, &e);
        pthread_mutex_unlock(&n->hw_mu);
        pthread_mutex_lock(&n->mu);
        srv_gpu *g = &n->gpu[i];
        int was_up = g->up;
        if (rc == PFI_OK) {
            g->s = s;
            pfi_srv_energy_add(g, &s);
            if (n->commit_gen == gen) { /* else the decision's read-back is newer: kept */
                g->dev.limit_w = d.limit_w;
                g->dev.enforced_w = d.enforced_w;
            }
            g->up = 1;
            g->err[0] = '\0';
        } else {
            /* No reading now: the last good one is dropped, not kept as if current (every
             * view and sum of draw, temperature and clocks reads g->s; the limits stay in
             * g->dev, where the budget counts a silent GPU). */
            g->s.have = 0;
            g->up = 0;
            pfi_srv_energy_gap(g);
            snprintf(g->err, sizeof g->err, "%s", e.msg);
        }
        pthread_mutex_unlock(&n->mu);
        if (was_up && rc != PFI_OK)
            pfi_srv_event_add(n, "gpu_error", "GPU %d cannot be read: %s", i, e.msg);
        else if (!was_up && rc == PFI_OK)
            pfi_srv_event_add(n, "gpu_back", "GPU %d answers again", i);
    }
    double now = pfi_clock_mono();
    pthread_mutex_lock(&n->mu);
    record_history(n);
    for (int j = 0; j < n->n_jobs; j++) {
        baseline_add(n, &n->jobs[j]);
        pfi_srv_probe_sample(n, &n->jobs[j], now);
    }
    pthread_mutex_unlock(&n->mu);
}
