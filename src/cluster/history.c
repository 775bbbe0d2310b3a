/* SPDX-License-Identifier: Apache-2.0 */
/* history.c: the controller's recent past for the status page: budget, sum of caps and draw
 * over the last hour, and the last allocations that moved caps. */
#include <math.h>
#include <string.h>

#include "cluster/cl_int.h"
#include "util/json.h"

double pfi_cl_cap_sum_w(const pfi_cl *c)
{
    double sum = 0, site_max = pfi_cl_site_max_w(c);
    for (int i = 0; i < c->n_nodes; i++)
        for (int g = 0; g < c->nodes[i].n_gpus; g++) /* as the budget counts it */
            sum += pfi_cl_gpu_count_w(&c->nodes[i].gpu[g], site_max);
    return sum;
}

double pfi_cl_site_max_w(const pfi_cl *c)
{
    double site_max = NAN;
    for (int i = 0; i < c->n_nodes; i++)
        for (int g = 0; g < c->nodes[i].n_gpus; g++) {
            double m = c->nodes[i].gpu[g].max_limit_w;
            if (!isnan(m) && (isnan(site_max) || m > site_max))
                site_max = m;
        }
    return site_max;
}

double pfi_cl_gpu_count_w(const pfi_device *d, double site_max)
{
    if (!isnan(d->limit_w))
        return d->limit_w;
    if (!isnan(d->max_limit_w))
        return d->max_limit_w;
    return site_max;
}

double pfi_cl_cap_held_w(const pfi_cl *c)
{
    double site_max = pfi_cl_site_max_w(c), sum = 0;
    for (int i = 0; i < c->n_nodes; i++)
        for (int g = 0; g < c->nodes[i].n_gpus; g++) {
            double w = pfi_cl_gpu_count_w(&c->nodes[i].gpu[g], site_max);
            sum += isnan(w) ? 0 : w; /* no GPU's limits known at all: nothing to count */
        }
    return sum;
}

double pfi_cl_gpu_draw_w(const pfi_cl_node *n, int g)
{
    return n->up ? n->power_w[g] : NAN;
}

double pfi_cl_node_draw_w(const pfi_cl_node *n)
{
    double w = 0;
    int any = 0;
    for (int g = 0; g < n->n_gpus; g++) {
        double v = pfi_cl_gpu_draw_w(n, g);
        if (isfinite(v)) {
            w += v;
            any = 1;
        }
    }
    return any ? w : NAN;
}

double pfi_cl_site_draw_w(const pfi_cl *c)
{
    double w = 0;
    int any = 0;
    for (int i = 0; i < c->n_nodes; i++) {
        double v = pfi_cl_node_draw_w(&c->nodes[i]);
        if (isfinite(v)) {
            w += v;
            any = 1;
        }
    }
    return any ? w : NAN;
}

double pfi_cl_site_draw_bounded_w(const pfi_cl *c, int *unread)
{
    double site_max = pfi_cl_site_max_w(c), w = 0;
    int any = 0;
    *unread = 0;
    for (int i = 0; i < c->n_nodes; i++) {
        const pfi_cl_node *n = &c->nodes[i];
        int counted = 0;
        for (int g = 0; g < n->n_gpus; g++) {
            double v = pfi_cl_gpu_draw_w(n, g);
            if (!isfinite(v)) {
                v = pfi_cl_gpu_count_w(&n->gpu[g], site_max);
                counted = 1;
            }
            if (isfinite(v)) {
                w += v;
                any = 1;
            }
        }
        *unread += counted;
    }
    return any ? w : NAN;
}

void pfi_cl_history_record(pfi_cl *c)
{
    pthread_mutex_lock(&c->mu);
    double v[PFI_SERIES_COLS] = {c->budget_now_w, pfi_cl_cap_sum_w(c), pfi_cl_site_draw_w(c)};
    pfi_series_add(&c->hist, pfi_clock_wall(), v);
    pthread_mutex_unlock(&c->mu);
}

int pfi_cl_decision_add(pfi_cl *c, double budget_w, double apply_s, long long lowered,
                        long long raised)
{
    const pfi_cl_decision *last =
        c->n_dec ? &c->dec[(c->dec_next - 1) % PFI_CL_DECISIONS] : NULL;
    int same_budget = last && ((isnan(last->budget_w) && isnan(budget_w)) ||
                               fabs(last->budget_w - budget_w) < 1e-6);
    if (lowered == 0 && raised == 0 && same_budget)
        return 0; /* a re-plan that changed nothing */
    pfi_cl_decision *d = &c->dec[c->dec_next % PFI_CL_DECISIONS];
    d->id = ++c->dec_next;
    d->wall = pfi_clock_wall();
    d->budget_w = budget_w;
    d->cap_sum_w = pfi_cl_cap_sum_w(c);
    d->apply_s = apply_s;
    d->n_lowered = lowered;
    d->n_raised = raised;
    if (c->n_dec < PFI_CL_DECISIONS)
        c->n_dec++;
    return 1;
}

void *pfi_cl_json_history(pfi_cl *c, double since)
{
    static const char *const names[PFI_SERIES_COLS] = {"budget_w", "limits_w", "draw_w"};
    double now = pfi_clock_wall();
    pthread_mutex_lock(&c->mu);
    json_t *o = pfi_series_json(&c->hist, since, now, names);
    pthread_mutex_unlock(&c->mu);
    json_object_set_new(o, "now", json_real(now));
    return o;
}

void *pfi_cl_json_decisions(pfi_cl *c, int limit)
{
    json_t *arr = json_array();
    pthread_mutex_lock(&c->mu);
    for (int k = 0; k < c->n_dec && k < limit; k++) {
        const pfi_cl_decision *d = &c->dec[(c->dec_next - 1 - k) % PFI_CL_DECISIONS];
        json_t *o = json_pack("{s:I, s:f, s:f, s:f, s:I, s:I}", "id", (json_int_t)d->id, "t",
                              d->wall, "cap_sum_w", d->cap_sum_w, "apply_s", d->apply_s,
                              "n_lowered", (json_int_t)d->n_lowered, "n_raised",
                              (json_int_t)d->n_raised);
        json_object_set_new(o, "budget_w", pfi_json_num(d->budget_w));
        json_array_append_new(arr, o);
    }
    pthread_mutex_unlock(&c->mu);
    return json_pack("{s:o}", "decisions", arr);
}
