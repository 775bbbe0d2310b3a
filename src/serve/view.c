/* SPDX-License-Identifier: Apache-2.0 */
/* view.c: the state as the API shows it (JSON), each view taken under node->mu in one go so
 * that a response is one consistent instant. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "serve/serve_int.h"
#include "store/codec.h"
#include "util/json.h"
#include "util/text.h"


static json_t *gpu_json(const srv_node *n, int i)
{
    const srv_gpu *g = &n->gpu[i];
    const pfi_sample *s = &g->s;
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer(i));
    json_object_set_new(o, "name", json_string(g->dev.name));
    json_object_set_new(o, "uuid", json_string(g->dev.uuid));
    json_object_set_new(o, "up", json_boolean(g->up));
    json_object_set_new(o, "error", g->up ? json_null() : json_string(g->err));
    json_object_set_new(o, "job", g->job >= 0 ? json_string(n->jobs[g->job].id) : json_null());
    json_object_set_new(o, "min_limit_w", pfi_json_num(g->dev.min_limit_w));
    json_object_set_new(o, "max_limit_w", pfi_json_num(g->dev.max_limit_w));
    json_object_set_new(o, "default_limit_w", pfi_json_num(g->dev.default_limit_w));
    json_object_set_new(o, "original_limit_w", pfi_json_num(g->original_w));
    json_object_set_new(o, "requested_w", pfi_json_num(g->requested_w));
    json_object_set_new(o, "limit_w", pfi_json_num(g->dev.limit_w));
    json_object_set_new(o, "enforced_limit_w", pfi_json_num(g->dev.enforced_w));
    json_object_set_new(o, "power_w", pfi_json_num((s->have & PFI_F_POWER) ? s->power_w : NAN));
    json_object_set_new(o, "sm_clock_mhz",
                        pfi_json_num((s->have & PFI_F_SM_CLOCK) ? s->sm_clock_mhz : NAN));
    json_object_set_new(o, "clock_reasons", (s->have & PFI_F_REASONS)
                                                ? json_integer((json_int_t)s->clock_reasons)
                                                : json_null());
    json_object_set_new(o, "power_capped",
                        (s->have & PFI_F_REASONS)
                            ? json_boolean((s->clock_reasons & PFI_REASON_SW_POWERCAP) != 0)
                            : json_null());
    json_object_set_new(o, "temp_c", pfi_json_num((s->have & PFI_F_TEMP) ? s->temp_c : NAN));
    json_object_set_new(o, "gpu_util",
                        pfi_json_num((s->have & PFI_F_GPU_UTIL) ? s->gpu_util : NAN));
    return o;
}

json_t *pfi_srv_view_gpus(srv_node *n)
{
    pthread_mutex_lock(&n->mu);
    json_t *arr = json_array();
    for (int i = 0; i < n->n_gpus; i++)
        json_array_append_new(arr, gpu_json(n, i));
    /* Who commands the caps: a second controller (the one-shot `pfi cluster budget` beside a
     * running `pfi cluster serve`) must see it before it takes the node over. */
    /* Heard lately, armed or not (a controller run with --node-ttl 0 beats without arming);
     * one that stopped is no longer named a minute after its last heartbeat. */
    double heard = pfi_srv_controller_heard_s(n);
    json_t *by = n->mode == SRV_MODE_EXTERNAL && heard <= SRV_CONTROLLER_HEARD_S
                     ? json_string(n->hb_controller)
                     : NULL;
    long long epoch = n->caps_epoch; /* a restarted controller numbers its caps above it */
    pthread_mutex_unlock(&n->mu);
    /* caps_named: PUT /v1/caps takes the controller's name (a node older than it refuses the
     * field, so a controller names itself only where this says so). */
    return json_pack("{s:s, s:b, s:o, s:o, s:o, s:i, s:I, s:b}", "backend", pfi_hw_label(n->b),
                     "simulated", pfi_hw_simulated(n->b), "gpus", arr, "controller",
                     by ? by : json_null(), "controller_heard_s", pfi_json_num(by ? heard : NAN),
                     "controller_named_for_s", SRV_CONTROLLER_HEARD_S, "caps_epoch",
                     (json_int_t)epoch, "caps_named", 1);
}

/* A file's path as JSON text, null when empty: a byte that is no UTF-8 (a path is bytes)
 * shown as '?', where json_string refused it and the field vanished from the answer. */
static json_t *path_json(const char *path)
{
    if (!path[0])
        return json_null();
    json_t *t = json_string(path);
    if (t)
        return t;
    char copy[PFI_SERVE_PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    pfi_text_make_printable(copy);
    return json_string(copy);
}

static json_t *job_json(const srv_node *n, const srv_job *j)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(j->id));
    json_t *g = json_array();
    for (int k = 0; k < j->n_gpus; k++)
        json_array_append_new(g, json_integer(j->gpus[k]));
    json_object_set_new(o, "gpus", g);
    json_object_set_new(o, "sla", pfi_json_num(j->sla));
    json_object_set_new(o, "weight", pfi_json_num(j->weight));
    json_object_set_new(o, "cap_w", pfi_json_num(j->cap_w));
    json_object_set_new(o, "predicted_rel", pfi_json_num(j->predicted_rel));
    json_object_set_new(o, "predicted_tokens_per_s", pfi_json_num(j->predicted_tps));
    json_object_set_new(o, "observed_tokens_per_s", pfi_json_num(j->observed_tps));
    json_object_set_new(o, "baseline_tokens_per_s", pfi_json_num(j->t0_tps));
    json_object_set_new(o, "pfi30", pfi_json_num(j->pfi30));
    json_object_set_new(o, "curve_source", json_string(pfi_srv_curve_src_name(j->curve_src)));
    json_object_set_new(o, "discovered", json_boolean(j->discovered)); /* else registered */
    json_object_set_new(o, "name", j->name[0] ? json_string(j->name) : json_null());
    json_t *cj = j->curve_src == SRV_CURVE_NONE ? json_null() : pfi_curve_json_encode(&j->curve);
    /* A curve registered in rel with no baseline tokens/s has none: its t0 is a placeholder
     * (the GPU count), and registered again from this answer it became 4 tokens/s beside a
     * 9000 tokens/s job, which starved it. */
    if (json_is_object(cj) && !(j->t0_tps > 0))
        json_object_set_new(cj, "t0", json_null());
    json_object_set_new(o, "curve", cj);
    json_object_set_new(o, "probe", pfi_srv_probe_json(&j->probe));
    json_object_set_new(o, "baseline_samples", json_integer(j->base.n));
    json_object_set_new(o, "baseline_power_w", pfi_json_num(j->base.n ? j->base.power_w : NAN));
    json_object_set_new(o, "log", path_json(j->log));
    json_object_set_new(o, "log_followed", path_json(j->log_followed));
    json_object_set_new(o, "seq_len", j->seq_len > 0 ? json_real(j->seq_len) : json_null());
    json_object_set_new(o, "tokens_per_step",
                        j->tokens_per_step > 0 ? json_real(j->tokens_per_step) : json_null());
    /* A hung job's last rate is not current: its age says so. */
    json_object_set_new(o, "observed_age_s",
                        pfi_json_num(isfinite(j->observed_tps) ? pfi_clock_wall() - j->observed_wall
                                                               : NAN));
    json_t *seen = json_array();
    for (int k = 0; k < j->sla_seen.n; k++)
        json_array_append_new(seen, json_pack("{s:o, s:o}", "cap_w",
                                              pfi_json_num(j->sla_seen.cap_w[k]), "slowdown",
                                              pfi_json_num(j->sla_seen.s[k])));
    json_object_set_new(o, "sla_breaches_seen", seen);
    return o;
}

json_t *pfi_srv_view_jobs(srv_node *n, const char *id)
{
    pthread_mutex_lock(&n->mu);
    json_t *out = NULL;
    if (id) {
        for (int j = 0; j < n->n_jobs; j++)
            if (!strcmp(n->jobs[j].id, id))
                out = job_json(n, &n->jobs[j]);
    } else {
        json_t *arr = json_array();
        for (int j = 0; j < n->n_jobs; j++)
            json_array_append_new(arr, job_json(n, &n->jobs[j]));
        out = json_pack("{s:o}", "jobs", arr);
    }
    pthread_mutex_unlock(&n->mu);
    return out;
}

json_t *pfi_srv_view_allocation(srv_node *n)
{
    pthread_mutex_lock(&n->mu);
    double sum_limits = 0, sum_requested = 0;
    json_t *gpus = json_array();
    for (int i = 0; i < n->n_gpus; i++) {
        const srv_gpu *g = &n->gpu[i];
        sum_limits += g->dev.limit_w;
        sum_requested += isnan(g->requested_w) ? g->dev.limit_w : g->requested_w;
        json_t *o = json_pack("{s:i, s:o, s:o, s:o, s:o}", "index", i, "job",
                              g->job >= 0 ? json_string(n->jobs[g->job].id) : json_null(),
                              "requested_w", pfi_json_num(g->requested_w), "limit_w",
                              pfi_json_num(g->dev.limit_w), "enforced_limit_w",
                              pfi_json_num(g->dev.enforced_w));
        json_object_set_new(o, "enforced_differs",
                            json_boolean(!isnan(g->requested_w) && !isnan(g->dev.enforced_w) &&
                                         fabs(g->dev.enforced_w - g->requested_w) > 1.0));
        json_array_append_new(gpus, o);
    }
    json_t *jobs = json_array();
    double total_pred = 0;
    int all_pred = n->n_jobs > 0;
    for (int j = 0; j < n->n_jobs; j++) {
        const srv_job *jb = &n->jobs[j];
        if (isfinite(jb->predicted_tps))
            total_pred += jb->predicted_tps;
        else
            all_pred = 0;
        json_array_append_new(
            jobs, json_pack("{s:s, s:i, s:o, s:o, s:o, s:o}", "id", jb->id, "n_gpus",
                            jb->n_gpus, "cap_w", pfi_json_num(jb->cap_w), "predicted_rel",
                            pfi_json_num(jb->predicted_rel), "predicted_tokens_per_s",
                            pfi_json_num(jb->predicted_tps), "observed_tokens_per_s",
                            pfi_json_num(jb->observed_tps)));
    }
    json_t *o = json_object();
    json_object_set_new(o, "mode", json_string(pfi_srv_mode_name(n->mode)));
    json_object_set_new(o, "budget_w", pfi_json_num(n->budget_w));
    json_object_set_new(o, "manual_budget_w", pfi_json_num(n->manual_w));
    json_object_set_new(o, "grid_event",
                        n->grid_binding ? json_string(n->grid_event) : json_null());
    json_object_set_new(o, "nominal_w", pfi_json_num(n->nominal_w));
    json_object_set_new(o, "sum_limits_w", pfi_json_num(sum_limits));
    json_object_set_new(o, "sum_requested_w", pfi_json_num(sum_requested));
    json_object_set_new(o, "ramping", json_boolean(n->ramping));
    if (n->ramping) {
        json_object_set_new(o, "ramp_from_w", pfi_json_num(n->ramp_from_w));
        json_object_set_new(o, "ramp_to_w", pfi_json_num(n->ramp_to_w));
        json_object_set_new(o, "ramp_left_s", pfi_json_num(n->ramp_t1 - pfi_clock_mono()));
    }
    json_object_set_new(o, "caps_epoch", json_integer(n->caps_epoch));
    json_object_set_new(o, "predicted_tokens_per_s",
                        all_pred ? pfi_json_num(total_pred) : json_null());
    json_object_set_new(o, "decisions", json_integer(n->n_decisions));
    json_object_set_new(o, "last_apply_ms", pfi_json_num(n->n_decisions ? n->last_apply_ms : NAN));
    json_object_set_new(o, "gpus", gpus);
    json_object_set_new(o, "jobs", jobs);
    pthread_mutex_unlock(&n->mu);
    return o;
}

json_t *pfi_srv_view_events(srv_node *n, long long since, int limit)
{
    if (limit <= 0 || limit > SRV_EVENTS)
        limit = SRV_EVENTS;
    pthread_mutex_lock(&n->mu);
    long long first = n->ev_next - SRV_EVENTS;
    if (first < 1)
        first = 1;
    if (since >= first) /* since may be LLONG_MAX: never since + 1 unchecked */
        first = since < n->ev_next ? since + 1 : n->ev_next;
    if (n->ev_next - first > limit)
        first = n->ev_next - limit;
    json_t *arr = json_array();
    for (long long id = first; id < n->ev_next; id++) {
        const srv_event *e = &n->ev[id % SRV_EVENTS];
        json_array_append_new(arr, json_pack("{s:I, s:f, s:s, s:s}", "id", (json_int_t)e->id,
                                             "time", e->wall, "kind", e->kind, "message",
                                             e->msg));
    }
    long long next = n->ev_next;
    pthread_mutex_unlock(&n->mu);
    return json_pack("{s:o, s:I}", "events", arr, "next", (json_int_t)next);
}

double pfi_srv_over_budget_w(const srv_node *n)
{
    if (!isfinite(n->budget_w) || n->cfg->read_only)
        return 0;
    long long sum = 0;
    for (int i = 0; i < n->n_gpus; i++) {
        const pfi_device *d = &n->gpu[i].dev;
        double w = d->limit_w;
        if (isnan(w) || (!isnan(d->enforced_w) && d->enforced_w > w))
            w = d->enforced_w;
        if (isnan(w))
            w = d->max_limit_w;
        sum += pfi_hw_held_mw(w);
    }
    long long over = sum - pfi_hw_cap_mw(n->budget_w);
    return over > 0 ? (double)over / 1000.0 : 0;
}

json_t *pfi_srv_view_health(srv_node *n)
{
    pthread_mutex_lock(&n->mu);
    int up = 0;
    for (int i = 0; i < n->n_gpus; i++)
        up += n->gpu[i].up;
    double over = pfi_srv_over_budget_w(n);
    json_t *o = json_pack(
        "{s:s, s:s, s:i, s:i, s:s, s:o, s:f, s:b, s:b, s:f}", "status",
        up == n->n_gpus && over == 0 ? "ok" : "degraded", "backend", pfi_backend_name(n->b), "gpus", n->n_gpus,
        "gpus_up", up, "mode", pfi_srv_mode_name(n->mode), "budget_w", pfi_json_num(n->budget_w), "uptime_s",
        pfi_clock_wall() - n->started_wall, "read_only", n->cfg->read_only, "watchdog_armed",
        n->hb_ttl_s > 0, "over_budget_w", over);
    json_object_set_new(o, "boot_id", json_string(n->boot_id));
    json_object_set_new(o, "service", json_string("pfi serve"));
    pthread_mutex_unlock(&n->mu);
    return o;
}

json_t *pfi_srv_view_history(srv_node *n, double since)
{
    static const char *const names[PFI_SERIES_COLS] = {"budget_w", "limits_w", "draw_w"};
    double now = pfi_clock_wall();
    pthread_mutex_lock(&n->mu);
    json_t *o = pfi_series_json(&n->hist, since, now, names);
    pthread_mutex_unlock(&n->mu);
    json_object_set_new(o, "now", json_real(now));
    return o;
}
