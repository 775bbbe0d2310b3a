/* SPDX-License-Identifier: Apache-2.0 */
/* views.c: what the controller shows: JSON for the API and the CLI, Prometheus text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cl_int.h"
#include "util/isotime.h"
#include "util/json.h"
#include "util/prom.h"

/* A pinned job no answering node knows: its SLA, weight and PFI30 are the last told. */
static int cl_job_last_known(const pfi_cl_job *J)
{
    return J->pinned && !J->registered;
}

void *pfi_cl_json_nodes(pfi_cl *c)
{
    pthread_mutex_lock(&c->mu);
    json_t *arr = json_array();
    for (int i = 0; i < c->n_nodes; i++) {
        const pfi_cl_node *n = &c->nodes[i];
        json_t *gpus = json_array();
        double sum = 0, site_max = pfi_cl_site_max_w(c);
        int acked = 0;
        for (int g = 0; g < n->n_gpus; g++) {
            const pfi_device *d = &n->gpu[g];
            json_t *o = json_pack("{s:i}", "index", g);
            json_object_set_new(o, "cap_w", pfi_json_num(d->limit_w));
            json_object_set_new(o, "enforced_w", pfi_json_num(d->enforced_w));
            json_object_set_new(o, "min_limit_w", pfi_json_num(d->min_limit_w));
            json_object_set_new(o, "max_limit_w", pfi_json_num(d->max_limit_w));
            json_object_set_new(o, "default_limit_w", pfi_json_num(d->default_limit_w));
            json_object_set_new(o, "power_w", pfi_json_num(pfi_cl_gpu_draw_w(n, g)));
            json_object_set_new(o, "job", n->job_of[g] >= 0 ? json_string(c->jobs[n->job_of[g]].id)
                                                            : json_null());
            json_array_append_new(gpus, o);
            sum += pfi_cl_gpu_count_w(d, site_max); /* as the budget counts it */
            acked += !isnan(d->limit_w);
        }
        json_t *o = json_pack("{s:s, s:s, s:b, s:i, s:o}", "name", n->name, "url", n->url, "up",
                              n->up, "n_gpus", n->n_gpus, "gpus", gpus);
        json_object_set_new(o, "cap_sum_w", pfi_json_num(sum));
        /* Never answered: counted at the GPUs' maximum, not at caps it acknowledged. */
        json_object_set_new(o, "caps_known", json_boolean(acked == n->n_gpus));
        json_object_set_new(o, "power_w", pfi_json_num(pfi_cl_node_draw_w(n)));
        /* A silent node's GPUs count at the caps it last acknowledged: say so. */
        json_object_set_new(o, "why", n->up ? json_null() : json_string(n->why));
        json_object_set_new(o, "counted_at_last_caps", json_boolean(!n->up));
        /* No longer in Slurm's list, still counted (cluster.h, pfi_cl_node.departed). */
        json_object_set_new(o, "departed", json_boolean(n->departed));
        json_object_set_new(o, "boot_id", n->boot_id[0] ? json_string(n->boot_id) : json_null());
        json_object_set_new(o, "restarts", json_integer(n->restarts));
        json_object_set_new(o, "last_ok_wall", n->last_ok_wall > 0 ? json_real(n->last_ok_wall)
                                                                   : json_null());
        json_array_append_new(arr, o);
    }
    pthread_mutex_unlock(&c->mu);
    return json_pack("{s:o}", "nodes", arr);
}

void *pfi_cl_json_jobs(pfi_cl *c)
{
    pthread_mutex_lock(&c->mu);
    json_t *arr = json_array();
    for (int j = 0; j < c->n_jobs; j++) {
        const pfi_cl_job *J = &c->jobs[j];
        json_t *nodes = json_array();
        for (int k = 0; k < J->n_nodes; k++)
            json_array_append_new(nodes, json_string(c->nodes[J->nodes[k]].name));
        json_t *o = json_pack("{s:s, s:i, s:o, s:b, s:b, s:b}", "id", J->id, "n_gpus", J->n_gpus,
                              "nodes", nodes, "registered", J->registered, "has_curve",
                              J->has_curve, "pinned", J->pinned);
        int last = cl_job_last_known(J);
        json_object_set_new(o, "sla", pfi_json_num(last ? J->last_sla : J->sla));
        json_object_set_new(o, "weight", pfi_json_num(last ? J->last_weight : J->weight));
        json_object_set_new(o, "pfi30", pfi_json_num(last ? J->last_pfi30 : J->pfi30));
        json_object_set_new(o, "last_known", json_boolean(last));
        json_object_set_new(o, "min_cap_w", pfi_json_num(J->min_cap_w));
        json_object_set_new(o, "max_cap_w", pfi_json_num(J->max_cap_w));
        json_object_set_new(o, "cap_w", pfi_json_num(J->cap_now_w));
        json_object_set_new(o, "cap_target_w", pfi_json_num(J->cap_target_w));
        json_object_set_new(o, "rel_tput_target",
                            J->n_gpus > 0 ? pfi_json_num(J->tput_target / J->n_gpus) : json_null());
        json_array_append_new(arr, o);
    }
    pthread_mutex_unlock(&c->mu);
    return json_pack("{s:o}", "jobs", arr);
}

void *pfi_cl_json_allocation(pfi_cl *c)
{
    pthread_mutex_lock(&c->mu);
    double sum = pfi_cl_cap_sum_w(c), site = pfi_cl_site_default_w(c);
    int up = 0, gpus = 0;
    for (int i = 0; i < c->n_nodes; i++) {
        up += c->nodes[i].up;
        gpus += c->nodes[i].n_gpus;
    }
    json_t *o = json_pack("{s:b, s:f, s:i, s:i, s:i, s:i}", "budget_set", c->budget.set,
                          "site_default_w", site, "nodes", c->n_nodes, "nodes_up", up, "gpus",
                          gpus, "jobs", c->n_jobs);
    json_object_set_new(o, "controller", json_string(c->cfg.name)); /* as the nodes name it */
    json_object_set_new(o, "budget_w", c->budget.set ? json_real(c->budget.watts) : json_null());
    json_object_set_new(o, "budget_now_w", pfi_json_num(c->budget_now_w));
    json_object_set_new(o, "cap_sum_w", pfi_json_num(sum));
    json_object_set_new(o, "reserved_w", json_real(c->reserved_w));
    json_object_set_new(o, "idle_min_w", json_real(c->idle_w));
    json_object_set_new(o, "epoch", json_integer(c->epoch));
    json_object_set_new(o, "node_restarts", json_integer(c->stats.n_node_restarts));
    json_object_set_new(o, "last_apply_s", json_real(c->stats.last_apply_s));
    json_object_set_new(o, "last_alloc_s", json_real(c->stats.last_alloc_s));
    json_object_set_new(o, "peak_w", json_real(c->stats.peak_w));
    json_object_set_new(o, "note", pfi_json_str(c->note));
    char at[32] = "";
    if (isfinite(c->note_at))
        pfi_time_format(c->note_at, at, sizeof at);
    json_object_set_new(o, "note_at", at[0] ? json_string(at) : json_null());
    json_t *jobs = json_array();
    for (int j = 0; j < c->n_jobs; j++) {
        json_t *x = json_pack("{s:s, s:i}", "id", c->jobs[j].id, "n_gpus", c->jobs[j].n_gpus);
        json_object_set_new(x, "cap_w", pfi_json_num(c->jobs[j].cap_now_w));
        json_object_set_new(x, "cap_target_w", pfi_json_num(c->jobs[j].cap_target_w));
        json_array_append_new(jobs, x);
    }
    json_object_set_new(o, "per_job", jobs);
    pthread_mutex_unlock(&c->mu);
    return o;
}

static void cl_scalar(pfi_prom *b, const char *name, const char *type, const char *help,
                      double v)
{
    pfi_prom_head(b, name, type, help);
    if (isfinite(v))
        pfi_prom_put(b, "%s %.17g\n", name, v);
}

/* One series per node (which: 0 up, 1 sum of caps, 2 draw, 3 GPUs); *sum gets their total.  A
 * node whose draw is unknown (silent, or no GPU reported one) has no draw series. */
static void cl_node_metric(pfi_prom *b, pfi_cl *c, const char *name, const char *help, int which,
                           double *sum)
{
    pfi_prom_head(b, name, "gauge", help);
    *sum = 0;
    double site_max = pfi_cl_site_max_w(c);
    for (int i = 0; i < c->n_nodes; i++) {
        const pfi_cl_node *n = &c->nodes[i];
        double v = 0;
        for (int g = 0; g < n->n_gpus && which == 1; g++)
            v += pfi_cl_gpu_count_w(&n->gpu[g], site_max); /* as the budget counts it */
        v = which == 0 ? n->up : which == 2 ? pfi_cl_node_draw_w(n) : which == 3 ? n->n_gpus : v;
        if (!isfinite(v))
            continue;
        char name_e[2 * PFI_CL_NAME_MAX + 8];
        pfi_prom_escape(n->name, name_e, sizeof name_e);
        pfi_prom_put(b, "%s{node=\"%s\"} %.17g\n", name, name_e, v);
        *sum += v;
    }
}

/* One series per job (which: 0 cap now, 1 cap target, 2 relative throughput target, 3 SLA,
 * 4 GPUs, 5 PFI30). */
static void cl_job_metric(pfi_prom *b, pfi_cl *c, const char *name, const char *help, int which)
{
    pfi_prom_head(b, name, "gauge", help);
    for (int j = 0; j < c->n_jobs; j++) {
        const pfi_cl_job *J = &c->jobs[j];
        int last = cl_job_last_known(J);
        double v = which == 0   ? J->cap_now_w
                   : which == 1 ? J->cap_target_w
                   : which == 2 ? (J->n_gpus > 0 ? J->tput_target / J->n_gpus : NAN)
                   : which == 3 ? (last ? J->last_sla : J->sla)
                   : which == 4 ? J->n_gpus
                                : (last ? J->last_pfi30 : J->pfi30);
        if (!isfinite(v))
            continue;
        char id[2 * PFI_CL_NAME_MAX + 8];
        pfi_prom_escape(J->id, id, sizeof id);
        pfi_prom_put(b, "%s{job_id=\"%s\"} %.17g\n", name, id, v);
    }
}

char *pfi_cl_metrics(pfi_cl *c)
{
    pfi_prom b;
    pfi_prom_init(&b);
    pthread_mutex_lock(&c->mu);
    double up, caps, draw, gpus;
    cl_node_metric(&b, c, "pfi_cluster_node_up",
                   "1 when the node daemon answered the last request.", 0, &up);
    cl_node_metric(&b, c, "pfi_cluster_node_cap_watts",
                   "Sum of the GPU power caps of a node, as the site budget counts them (a GPU "
                   "whose cap was never acknowledged: at its maximum, else the site's largest).",
                   1, &caps);
    cl_node_metric(&b, c, "pfi_cluster_node_power_watts",
                   "Power the node's GPUs drew at the last refresh (absent while the node is "
                   "silent: its last reading is not current).", 2, &draw);
    cl_node_metric(&b, c, "pfi_cluster_node_gpus", "GPUs of a node.", 3, &gpus);
    cl_job_metric(&b, c, "pfi_cluster_job_cap_watts", "Per-GPU power cap a job holds.", 0);
    cl_job_metric(&b, c, "pfi_cluster_job_cap_target_watts",
                  "Per-GPU cap the last allocation gave a job.", 1);
    cl_job_metric(&b, c, "pfi_cluster_job_relative_throughput_target",
                  "Throughput the last allocation expects of a job over its baseline.", 2);
    cl_job_metric(&b, c, "pfi_cluster_job_sla_max_slowdown",
                  "Largest slowdown a job accepts (fraction of its baseline throughput).", 3);
    cl_job_metric(&b, c, "pfi_cluster_job_gpus", "GPUs a job holds over all its nodes.", 4);
    cl_job_metric(&b, c, "pfi_cluster_job_pfi30",
                  "Power Flexibility Index at 30% power shed, as a node daemon reports it.", 5);
    cl_scalar(&b, "pfi_cluster_budget_watts", "gauge",
              "Site budget in force (absent: none, every GPU at its default).", c->budget_now_w);
    cl_scalar(&b, "pfi_cluster_cap_sum_watts", "gauge",
              "Sum of every managed GPU's cap, as the site budget counts them.", caps);
    cl_scalar(&b, "pfi_cluster_reserved_watts", "gauge",
              "Part of the budget the last plan could not move: the GPUs of silent nodes and "
              "of pinned jobs.", c->reserved_w);
    cl_scalar(&b, "pfi_cluster_power_watts", "gauge",
              "Power the GPUs of the answering nodes drew at the last refresh.",
              pfi_cl_site_draw_w(c));
    cl_scalar(&b, "pfi_cluster_nominal_watts", "gauge",
              "Sum of the GPUs' default limits (100%).", pfi_cl_site_default_w(c));
    cl_scalar(&b, "pfi_cluster_nodes_up", "gauge", "Node daemons answering.", up);
    cl_scalar(&b, "pfi_cluster_nodes", "gauge", "Node daemons managed.", c->n_nodes);
    cl_scalar(&b, "pfi_cluster_apply_seconds", "gauge",
              "Last budget change to every node acknowledged.", c->stats.last_apply_s);
    pfi_prom_hist_put(&b, "pfi_cluster_apply_duration_seconds",
                      "Time from each applied budget change to every node's acknowledgement.",
                      &c->apply_hist);
    cl_scalar(&b, "pfi_cluster_alloc_seconds", "gauge", "Allocation part of the last apply.",
              c->stats.last_alloc_s);
    cl_scalar(&b, "pfi_cluster_applies_total", "counter",
              "Allocations applied that changed a cap or the budget.", (double)c->stats.n_apply);
    cl_scalar(&b, "pfi_cluster_caps_lowered_total", "counter",
              "Node requests that lowered caps (one per node per apply, whatever its GPUs).",
              (double)c->stats.n_lowered);
    cl_scalar(&b, "pfi_cluster_caps_raised_total", "counter",
              "Node requests that raised caps (one per node per apply, whatever its GPUs).",
              (double)c->stats.n_raised);
    cl_scalar(&b, "pfi_cluster_node_failures_total", "counter",
              "Times a node stopped answering (a heartbeat or a caps request failed while it was "
              "up), and caps requests that failed.",
              (double)c->stats.n_node_fail);
    cl_scalar(&b, "pfi_cluster_node_restarts_total", "counter",
              "Node daemons seen with a new boot id.", (double)c->stats.n_node_restarts);
    cl_scalar(&b, "pfi_cluster_grid_events", "gauge", "Grid events held.", c->n_grid);
    cl_scalar(&b, "pfi_cluster_grid_event_binding", "gauge",
              "1 while a grid event set the budget of the last apply.", c->grid_binding);
    pthread_mutex_unlock(&c->mu);
    return pfi_prom_take(&b, NULL);
}
