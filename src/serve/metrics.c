/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c: GET /metrics in the Prometheus text exposition format (version 0.0.4).
 * Base units as Prometheus names them (watts, hertz, seconds, joules, celsius); a value the GPU
 * did not give is left out rather than written as a fake zero.  Labels follow NVIDIA's
 * DCGM-exporter where the two overlap, so one dashboard can join both: a GPU's series carry
 * gpu (the index), UUID and Hostname (DCGM's modelName is left out: promtool's linter refuses
 * camelCase label names); a job's carry job_id and Hostname (not "job", which Prometheus keeps
 * for its own scrape label). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "serve/serve_int.h"
#include "util/prom.h"

typedef struct ctx {
    pfi_prom b;
    const srv_node *n;
    char host[256]; /* escaped */
} ctx;

typedef double (*gpu_get)(const srv_gpu *);

static void gpu_metric(ctx *c, const char *name, const char *type, const char *help, gpu_get get)
{
    pfi_prom_head(&c->b, name, type, help);
    for (int i = 0; i < c->n->n_gpus; i++) {
        double v = get(&c->n->gpu[i]);
        if (!isfinite(v))
            continue;
        char uuid[200];
        pfi_prom_escape(c->n->gpu[i].dev.uuid, uuid, sizeof uuid);
        pfi_prom_put(&c->b, "%s{gpu=\"%d\",UUID=\"%s\",Hostname=\"%s\"} %.17g\n", name, i, uuid,
                     c->host, v);
    }
}

/* A reading the GPU gave at its last sample; none when it did not answer that sample (the
 * sampler clears g->s.have then, so a lost GPU does not "draw" for good). */
#define HAVE(g, f, v) (((g)->s.have & (f)) ? (v) : NAN)
static double g_power(const srv_gpu *g) { return HAVE(g, PFI_F_POWER, g->s.power_w); }
static double g_energy(const srv_gpu *g) { return g->energy_j; }
static double g_temp(const srv_gpu *g) { return HAVE(g, PFI_F_TEMP, g->s.temp_c); }
static double g_clock(const srv_gpu *g) { return HAVE(g, PFI_F_SM_CLOCK, g->s.sm_clock_mhz * 1e6); }
static double g_limit(const srv_gpu *g) { return g->dev.limit_w; }
static double g_enforced(const srv_gpu *g) { return g->dev.enforced_w; }
static double g_requested(const srv_gpu *g) { return g->requested_w; }
static double g_min(const srv_gpu *g) { return g->dev.min_limit_w; }
static double g_max(const srv_gpu *g) { return g->dev.max_limit_w; }
static double g_default(const srv_gpu *g) { return g->dev.default_limit_w; }
static double g_up(const srv_gpu *g) { return g->up; }
static double g_capped(const srv_gpu *g)
{
    return HAVE(g, PFI_F_REASONS, (double)((g->s.clock_reasons & PFI_REASON_SW_POWERCAP) != 0));
}
static double g_reasons(const srv_gpu *g) { return HAVE(g, PFI_F_REASONS, (double)g->s.clock_reasons); }

static void gpu_metrics(ctx *c)
{
    gpu_metric(c, "pfi_gpu_power_watts", "gauge", "Board power drawn (1 s average).", g_power);
    gpu_metric(c, "pfi_gpu_energy_joules_total", "counter",
               "Energy the board consumed: NVML's counter (since the driver loaded), or for a GPU "
               "without one its draw integrated since pfi serve started.", g_energy);
    gpu_metric(c, "pfi_gpu_temperature_celsius", "gauge", "GPU core temperature.", g_temp);
    gpu_metric(c, "pfi_gpu_power_limit_watts", "gauge", "Power limit set in band.", g_limit);
    gpu_metric(c, "pfi_gpu_enforced_power_limit_watts", "gauge",
               "Power limit the device enforces (may be lower than the one set).", g_enforced);
    gpu_metric(c, "pfi_gpu_requested_power_limit_watts", "gauge",
               "Power limit pfi last asked for that the GPU took (a refused set leaves the one "
               "before: pfi_cap_failures_total counts those).", g_requested);
    gpu_metric(c, "pfi_gpu_min_power_limit_watts", "gauge", "Lowest settable power limit.", g_min);
    gpu_metric(c, "pfi_gpu_max_power_limit_watts", "gauge", "Highest settable power limit.", g_max);
    gpu_metric(c, "pfi_gpu_default_power_limit_watts", "gauge",
               "Default power limit (what 100% means).", g_default);
    gpu_metric(c, "pfi_gpu_sm_clock_hertz", "gauge", "SM clock.", g_clock);
    gpu_metric(c, "pfi_gpu_power_capped", "gauge",
               "1 while the SW power cap holds the clock down (throttle reason 0x4).", g_capped);
    gpu_metric(c, "pfi_gpu_clock_event_reasons", "gauge",
               "Clock event reason bits as NVML reports.", g_reasons);
    gpu_metric(c, "pfi_gpu_up", "gauge", "1 when the GPU answered the last reading.", g_up);
}

/* What a job's series shows (see job_value). */
enum { J_TPS, J_TPS_AT, J_PRED_TPS, J_PRED_REL, J_PFI30, J_CAP, J_GPUS, J_SLA, J_HEADROOM, J_PROBE_GPU_S,
       J_PROBE_LOST };

/* A job is probed at most once: its probe's cost counts from the moment the probe ends (done,
 * failed or stopped), 0 before.  Tokens lost are unknown (left out) when the job reported no
 * rate during its probe, and 0 when it reported more than its baseline (noise, as the probe
 * itself reads it: a counter never goes below 0). */
static double probe_cost(const srv_probe *p, int lost)
{
    if (p->state < SRV_PROBE_DONE || !isfinite(p->gpu_s))
        return 0;
    if (!lost)
        return p->gpu_s;
    return p->lost < 0 ? 0 : p->lost;
}

static double job_value(const srv_job *jb, int which)
{
    switch (which) {
    case J_TPS: return jb->observed_tps;
    case J_TPS_AT: return isfinite(jb->observed_tps) ? jb->observed_wall : NAN;
    case J_PRED_TPS: return jb->predicted_tps;
    case J_PRED_REL: return jb->predicted_rel;
    case J_PFI30: return jb->pfi30;
    case J_CAP: return jb->cap_w;
    case J_GPUS: return jb->n_gpus;
    case J_SLA: return jb->sla;
    case J_PROBE_GPU_S: return probe_cost(&jb->probe, 0);
    case J_PROBE_LOST: return probe_cost(&jb->probe, 1);
    default: /* the predicted throughput above the least the SLA allows, both over baseline */
        return isfinite(jb->sla) && isfinite(jb->cap_w) ? jb->predicted_rel - (1 - jb->sla) : NAN;
    }
}

static void job_series(ctx *c, const char *name, const char *type, const char *help, int which)
{
    pfi_prom_head(&c->b, name, type, help);
    for (int j = 0; j < c->n->n_jobs; j++) {
        const srv_job *jb = &c->n->jobs[j];
        double v = job_value(jb, which);
        if (!isfinite(v))
            continue;
        char id[200];
        pfi_prom_escape(jb->id, id, sizeof id);
        pfi_prom_put(&c->b, "%s{job_id=\"%s\",Hostname=\"%s\"} %.17g\n", name, id, c->host, v);
    }
}

static void job_metric(ctx *c, const char *name, const char *help, int which)
{
    job_series(c, name, "gauge", help, which);
}

static void job_metrics(ctx *c)
{
    job_metric(c, "pfi_job_tokens_per_second", "Throughput the job last reported.", J_TPS);
    /* A hung job's last rate stays exported: its time lets a dashboard or an alert see its age
     * (time() - this), as node_exporter's *_timestamp_seconds do. */
    job_metric(c, "pfi_job_tokens_per_second_timestamp_seconds",
               "Unix time of the throughput the job last reported.", J_TPS_AT);
    job_metric(c, "pfi_job_predicted_tokens_per_second", "Throughput predicted at the job's cap.",
               J_PRED_TPS);
    job_metric(c, "pfi_job_predicted_relative_throughput",
               "Predicted throughput at the cap over baseline throughput.", J_PRED_REL);
    job_metric(c, "pfi_job_predicted_pfi30",
               "Power Flexibility Index at 30% power shed on the job's curve.", J_PFI30);
    job_metric(c, "pfi_job_cap_watts", "Per-GPU power cap given to the job.", J_CAP);
    job_metric(c, "pfi_job_gpus", "GPUs the job holds.", J_GPUS);
    job_metric(c, "pfi_job_sla_max_slowdown",
               "Largest slowdown the job accepts (fraction of its baseline throughput).", J_SLA);
    job_metric(c, "pfi_job_sla_headroom",
               "Predicted relative throughput at the cap minus the least the SLA allows "
               "(negative: the SLA is not held).", J_HEADROOM);
    job_series(c, "pfi_probe_gpu_seconds_total", "counter",
               "GPU-seconds the job spent held at a probe's lower cap (counted when the probe "
               "ends).", J_PROBE_GPU_S);
    job_series(c, "pfi_probe_tokens_lost_total", "counter",
               "Tokens the job's probe cost against its baseline rate (counted when the probe "
               "ends; absent when the job reported no rate during it).", J_PROBE_LOST);
}

static void scalar(ctx *c, const char *name, const char *type, const char *help, double v)
{
    pfi_prom_head(&c->b, name, type, help);
    if (isfinite(v))
        pfi_prom_put(&c->b, "%s %.17g\n", name, v);
}

static void node_metrics(ctx *c)
{
    const srv_node *n = c->n;
    double lim = 0;
    for (int i = 0; i < n->n_gpus; i++)
        lim += n->gpu[i].dev.limit_w;
    /* Only the GPUs that answered: a lost GPU's last draw stayed in the sum for good. */
    double draw = pfi_srv_draw_locked(n);
    scalar(c, "pfi_node_budget_watts", "gauge", "Node power budget on the sum of limits.",
           n->budget_w);
    double over = pfi_srv_over_budget_w(n);
    scalar(c, "pfi_over_budget", "gauge",
           "1 when the power limits as last read exceed the budget in force.", over > 0);
    scalar(c, "pfi_budget_excess_watts", "gauge",
           "How far the power limits as last read exceed the budget (0 within it).", over);
    scalar(c, "pfi_node_power_limits_watts", "gauge", "Sum of the GPUs' power limits.", lim);
    scalar(c, "pfi_node_power_watts", "gauge",
           "Sum of the power draw of the GPUs that answered the last reading (a GPU that stopped "
           "answering is left out: pfi_gpu_up 0).",
           draw);
    scalar(c, "pfi_node_nominal_watts", "gauge", "Sum of the GPUs' default limits (100%).",
           n->nominal_w);
    pfi_prom_head(&c->b, "pfi_node_mode", "gauge", "Control mode: 1 for the mode in force.");
    for (int m = SRV_MODE_LOCAL; m <= SRV_MODE_SAFE; m++)
        pfi_prom_put(&c->b, "pfi_node_mode{mode=\"%s\"} %d\n", pfi_srv_mode_name(m), n->mode == m);
    scalar(c, "pfi_watchdog_armed", "gauge",
           "1 while a controller's heartbeat is expected (the watchdog is armed).",
           n->hb_ttl_s > 0);
    scalar(c, "pfi_decisions_total", "counter", "Cap decisions applied.", (double)n->n_decisions);
    scalar(c, "pfi_cap_changes_total", "counter",
           "Power limit sets that took effect (a refused or failed set is counted in "
           "pfi_cap_failures_total, not here).",
           (double)n->n_cap_changes);
    scalar(c, "pfi_cap_failures_total", "counter", "Power limit changes that failed.",
           (double)n->n_apply_failures);
    scalar(c, "pfi_cap_held_total", "counter",
           "Raises held back because they would have exceeded the budget.", (double)n->n_held);
    scalar(c, "pfi_enforced_mismatch_total", "counter",
           "Changes after which the enforced limit differed from the one asked.",
           (double)n->n_mismatch);
    scalar(c, "pfi_rate_limited_total", "counter", "Cap-moving requests refused with 429.",
           (double)n->n_rate_limited);
    scalar(c, "pfi_limit_raised_outside_total", "counter",
           "Times a GPU's limit was found raised outside pfi above the cap held (each time a "
           "lowering is tried).",
           (double)n->n_outside_raised);
    scalar(c, "pfi_watchdog_trips_total", "counter", "Times the heartbeat watchdog fired.",
           (double)n->n_watchdog_trips);
    scalar(c, "pfi_heartbeats_total", "counter", "Controller heartbeats answered.",
           (double)n->n_heartbeats);
    scalar(c, "pfi_last_apply_seconds", "gauge", "Duration of the last cap application.",
           n->n_decisions ? n->last_apply_ms / 1e3 : NAN);
    pfi_prom_hist_put(&c->b, "pfi_apply_duration_seconds",
                      "Duration of each cap application (a decision applied to the GPUs).",
                      &n->apply_hist);
}

static void grid_metrics(ctx *c)
{
    const srv_node *n = c->n;
    double now = pfi_clock_wall(), target = NAN;
    int active = 0, binding_active = 0;
    for (int i = 0; i < n->n_grid; i++) {
        const pfi_event *ev = &n->grid_ev[i];
        int in_window = ev->start_s <= now && now < ev->end_s;
        active += in_window;
        if (n->grid_binding && !strcmp(ev->id, n->grid_event)) {
            target = pfi_event_target_w(ev);
            binding_active = in_window;
        }
    }
    scalar(c, "pfi_grid_events", "gauge", "Grid events held (past ones until deleted).", n->n_grid);
    scalar(c, "pfi_grid_events_active", "gauge", "Grid events whose window holds now.", active);
    scalar(c, "pfi_grid_event_binding", "gauge",
           "1 while a grid event sets the budget in force.", n->grid_binding);
    /* Apart from pfi_grid_events_active: with one event in its window and another ramping
     * down that binds, "some event active" and "the binding one's target" are two events. */
    scalar(c, "pfi_grid_event_binding_active", "gauge",
           "1 while the grid event that sets the budget is inside its window (not ramping).",
           binding_active);
    scalar(c, "pfi_grid_event_target_watts", "gauge",
           "Target of the grid event that sets the budget.", target);
    scalar(c, "pfi_grid_decisions_total", "counter", "Decisions made for grid events.",
           (double)n->n_grid_decisions);
    scalar(c, "pfi_grid_infeasible_total", "counter",
           "Grid event targets that could not be met with the SLAs in force.",
           (double)n->n_grid_infeasible);
}

char *pfi_srv_metrics_text(srv_node *n, size_t *len)
{
    ctx c = {.n = n};
    char host[128] = "";
    if (gethostname(host, sizeof host) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    pfi_prom_escape(host, c.host, sizeof c.host);
    pfi_prom_init(&c.b);
    pthread_mutex_lock(&n->mu);
    gpu_metrics(&c);
    job_metrics(&c);
    node_metrics(&c);
    grid_metrics(&c);
    pthread_mutex_unlock(&n->mu);
    return pfi_prom_take(&c.b, len);
}
