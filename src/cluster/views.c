/* views.c: what the controller shows: JSON for the API and the CLI, Prometheus text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cl_int.h"
#include "util/json.h"

void *pfi_cl_json_nodes(pfi_cl *c)
{
    pthread_mutex_lock(&c->mu);
    json_t *arr = json_array();
    for (int i = 0; i < c->n_nodes; i++) {
        const pfi_cl_node *n = &c->nodes[i];
        json_t *gpus = json_array();
        double sum = 0;
        for (int g = 0; g < n->n_gpus; g++) {
            const pfi_device *d = &n->gpu[g];
            json_t *o = json_pack("{s:i}", "index", g);
            json_object_set_new(o, "cap_w", pfi_json_num(d->limit_w));
            json_object_set_new(o, "enforced_w", pfi_json_num(d->enforced_w));
            json_object_set_new(o, "min_limit_w", pfi_json_num(d->min_limit_w));
            json_object_set_new(o, "max_limit_w", pfi_json_num(d->max_limit_w));
            json_object_set_new(o, "default_limit_w", pfi_json_num(d->default_limit_w));
            json_object_set_new(o, "job", n->job_of[g] >= 0 ? json_string(c->jobs[n->job_of[g]].id)
                                                            : json_null());
            json_array_append_new(gpus, o);
            sum += isnan(d->limit_w) ? 0 : d->limit_w;
        }
        json_t *o = json_pack("{s:s, s:s, s:b, s:i, s:o}", "name", n->name, "url", n->url, "up",
                              n->up, "n_gpus", n->n_gpus, "gpus", gpus);
        json_object_set_new(o, "cap_sum_w", json_real(sum));
        /* A silent node's GPUs count at the caps it last acknowledged: say so. */
        json_object_set_new(o, "why", n->up ? json_null() : json_string(n->why));
        json_object_set_new(o, "counted_at_last_caps", json_boolean(!n->up));
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
        json_object_set_new(o, "sla", pfi_json_num(J->sla));
        json_object_set_new(o, "weight", pfi_json_num(J->weight));
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
    double sum = 0, site = pfi_cl_site_default_w(c);
    int up = 0, gpus = 0;
    for (int i = 0; i < c->n_nodes; i++) {
        up += c->nodes[i].up;
        for (int g = 0; g < c->nodes[i].n_gpus; g++) {
            const pfi_device *d = &c->nodes[i].gpu[g];
            sum += !isnan(d->limit_w) ? d->limit_w : !isnan(d->max_limit_w) ? d->max_limit_w : 0;
            gpus++;
        }
    }
    json_t *o = json_pack("{s:b, s:f, s:i, s:i, s:i, s:i}", "budget_set", c->budget.set,
                          "site_default_w", site, "nodes", c->n_nodes, "nodes_up", up, "gpus",
                          gpus, "jobs", c->n_jobs);
    json_object_set_new(o, "budget_w", c->budget.set ? json_real(c->budget.watts) : json_null());
    json_object_set_new(o, "budget_now_w", pfi_json_num(c->budget_now_w));
    json_object_set_new(o, "cap_sum_w", json_real(sum));
    json_object_set_new(o, "reserved_w", json_real(c->reserved_w));
    json_object_set_new(o, "idle_min_w", json_real(c->idle_w));
    json_object_set_new(o, "epoch", json_integer(c->epoch));
    json_object_set_new(o, "last_apply_s", json_real(c->stats.last_apply_s));
    json_object_set_new(o, "last_alloc_s", json_real(c->stats.last_alloc_s));
    json_object_set_new(o, "peak_w", json_real(c->stats.peak_w));
    json_object_set_new(o, "note", pfi_json_str(c->note));
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

char *pfi_cl_metrics(pfi_cl *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    pthread_mutex_lock(&c->mu);
    double sum = 0;
    int up = 0;
    fprintf(f, "# HELP pfi_cluster_node_up 1 when the node daemon answered the last request.\n");
    fprintf(f, "# TYPE pfi_cluster_node_up gauge\n");
    for (int i = 0; i < c->n_nodes; i++) {
        fprintf(f, "pfi_cluster_node_up{node=\"%s\"} %d\n", c->nodes[i].name, c->nodes[i].up);
        up += c->nodes[i].up;
    }
    fprintf(f, "# HELP pfi_cluster_node_cap_watts Sum of the GPU power caps of a node.\n");
    fprintf(f, "# TYPE pfi_cluster_node_cap_watts gauge\n");
    for (int i = 0; i < c->n_nodes; i++) {
        double s = 0;
        for (int g = 0; g < c->nodes[i].n_gpus; g++) {
            const pfi_device *d = &c->nodes[i].gpu[g];
            s += !isnan(d->limit_w) ? d->limit_w : !isnan(d->max_limit_w) ? d->max_limit_w : 0;
        }
        sum += s;
        fprintf(f, "pfi_cluster_node_cap_watts{node=\"%s\"} %.1f\n", c->nodes[i].name, s);
    }
    fprintf(f, "# HELP pfi_cluster_job_cap_watts Per-GPU power cap of a job.\n");
    fprintf(f, "# TYPE pfi_cluster_job_cap_watts gauge\n");
    for (int j = 0; j < c->n_jobs; j++)
        if (!isnan(c->jobs[j].cap_now_w))
            fprintf(f, "pfi_cluster_job_cap_watts{job=\"%s\"} %.1f\n", c->jobs[j].id,
                    c->jobs[j].cap_now_w);
    fprintf(f, "# HELP pfi_cluster_budget_watts Site budget in force (NaN: none).\n");
    fprintf(f, "# TYPE pfi_cluster_budget_watts gauge\n");
    if (isnan(c->budget_now_w))
        fprintf(f, "pfi_cluster_budget_watts NaN\n");
    else
        fprintf(f, "pfi_cluster_budget_watts %.1f\n", c->budget_now_w);
    fprintf(f, "# HELP pfi_cluster_cap_sum_watts Sum of every managed GPU's cap.\n");
    fprintf(f, "# TYPE pfi_cluster_cap_sum_watts gauge\npfi_cluster_cap_sum_watts %.1f\n", sum);
    fprintf(f, "# HELP pfi_cluster_nodes_up Node daemons answering.\n");
    fprintf(f, "# TYPE pfi_cluster_nodes_up gauge\npfi_cluster_nodes_up %d\n", up);
    fprintf(f, "# HELP pfi_cluster_apply_seconds Last budget change to every node acknowledged.\n");
    fprintf(f, "# TYPE pfi_cluster_apply_seconds gauge\npfi_cluster_apply_seconds %.6f\n",
            c->stats.last_apply_s);
    fprintf(f, "# HELP pfi_cluster_node_failures_total Node requests that failed.\n");
    fprintf(f, "# TYPE pfi_cluster_node_failures_total counter\n");
    fprintf(f, "pfi_cluster_node_failures_total %lld\n", c->stats.n_node_fail);
    pthread_mutex_unlock(&c->mu);
    fclose(f);
    return buf;
}
