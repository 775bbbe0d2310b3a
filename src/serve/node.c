/* SPDX-License-Identifier: Apache-2.0 */
/* node.c: the node's state and the one way caps change: a decision (plan.c computes, hw/'s
 * pfi_hw_apply applies, audit.c records; control.c, jobs.c and probe.c decide when).
 *
 * A change (a job registered or removed, a budget, caps from a cluster controller, the
 * watchdog) is one decision: under decide_mu it is planned on a copy of the state, applied with
 * hw/apply.c's ordering, written to the audit log, and only then committed.  A change that cannot
 * be planned (bad input, infeasible budget) returns an error before anything is touched. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc_keep.h"
#include "serve/serve_int.h"
#include "util/json.h"

int pfi_srv_node_init(srv_node *n, const pfi_serve_config *cfg, pfi_backend *b, pfi_err *err)
{
    memset(n, 0, sizeof *n);
    pthread_mutex_init(&n->mu, NULL);
    pthread_mutex_init(&n->decide_mu, NULL);
    pthread_mutex_init(&n->hw_mu, NULL);
    n->cfg = cfg;
    n->b = b;
    n->budget_w = NAN;
    n->manual_w = NAN;
    n->grid_short_w = NAN;
    n->grid_ext_w = n->grid_hold_w = NAN;
    n->ev_next = 1;
    n->started_wall = pfi_clock_wall();
    /* 2 s is a bound: the apply-latency alert counts the applies above it */
    static const double apply_le[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10};
    pfi_prom_hist_init(&n->apply_hist, apply_le, (int)(sizeof apply_le / sizeof apply_le[0]));
    pfi_series_init(&n->hist, 1.0);
    snprintf(n->boot_id, sizeof n->boot_id, "%llx-%lx",
             (unsigned long long)(n->started_wall * 1e6), (unsigned long)getpid());
    n->last_decision_mono = n->last_replan_mono = n->outside_fix_mono = -1e9;
    int count = 0;
    int rc = pfi_hw_count(b, &count, err);
    if (rc != PFI_OK)
        return rc;
    if (count <= 0)
        return pfi_err_set(err, PFI_ENOENT, "the %s backend shows no GPU", pfi_backend_name(b));
    if (count > PFI_MAX_GPUS)
        return pfi_err_set(err, PFI_ENOTSUP, "%d GPUs: pfi serve handles at most %d", count,
                           PFI_MAX_GPUS);
    n->n_gpus = count;
    for (int i = 0; i < count; i++) {
        srv_gpu *g = &n->gpu[i];
        g->job = -1;
        g->requested_w = NAN;
        g->pinned_w = NAN;
        g->energy_j = NAN;
        pfi_sample_clear(&g->s);
        rc = pfi_hw_info(b, i, &g->dev, err);
        if (rc != PFI_OK)
            return pfi_err_prefix(err, "GPU %d: ", i);
        if (isnan(g->dev.limit_w))
            return pfi_err_set(err, PFI_EIO, "GPU %d: its power limit cannot be read", i);
        g->original_w = g->dev.limit_w;
        g->up = 1;
        n->nominal_w += g->dev.default_limit_w;
    }
    return PFI_OK;
}

void pfi_srv_node_destroy(srv_node *n)
{
    pthread_mutex_destroy(&n->mu);
    pthread_mutex_destroy(&n->decide_mu);
    pthread_mutex_destroy(&n->hw_mu);
    pfi_alloc_keep_free(n->keep);
    n->keep = NULL;
}


/* Takes the state's copies a decision works on.  Caller holds decide_mu. */
void pfi_srv_snapshot(srv_node *n)
{
    pthread_mutex_lock(&n->mu);
    memcpy(n->snap, n->gpu, sizeof n->gpu[0] * (size_t)n->n_gpus);
    memcpy(n->cand, n->jobs, sizeof n->jobs[0] * (size_t)n->n_jobs);
    n->n_cand = n->n_jobs;
    pthread_mutex_unlock(&n->mu);
}

void pfi_srv_slas_aside(srv_node *n, double *saved)
{
    for (int j = 0; j < n->n_cand; j++) {
        saved[j] = n->cand[j].sla;
        n->cand[j].sla = NAN;
    }
}

void pfi_srv_slas_back(srv_node *n, const double *saved, int n_saved)
{
    pthread_mutex_lock(&n->mu);
    for (int j = 0; j < n_saved && j < n->n_cand; j++) {
        n->cand[j].sla = saved[j];
        int jj = pfi_srv_find_job(n->jobs, n->n_jobs, n->cand[j].id);
        if (jj >= 0)
            n->jobs[jj].sla = saved[j];
    }
    pthread_mutex_unlock(&n->mu);
}

int pfi_srv_find_job(const srv_job *jobs, int nj, const char *id)
{
    for (int j = 0; j < nj; j++)
        if (strcmp(jobs[j].id, id) == 0)
            return j;
    return -1;
}

/* The same GPUs, in any order (discovery lists a round's in index order, a job keeps them as
 * registered). */
int pfi_srv_same_gpus(const int *a, int na, const int *b, int nb)
{
    if (na != nb)
        return 0;
    for (int k = 0; k < na; k++) {
        int in = 0;
        for (int q = 0; q < nb; q++)
            in |= a[k] == b[q];
        if (!in)
            return 0;
    }
    return 1;
}

static double counted_w(const pfi_device *d)
{
    double v = d->limit_w;
    if (isnan(v) || (!isnan(d->enforced_w) && d->enforced_w > v))
        v = d->enforced_w;
    return isnan(v) ? d->max_limit_w : v;
}

/* A lowering failed and the node is left over its budget: pin the GPUs that failed where they
 * may be, re-plan the others to make room, and apply again (hw_mu held).  If even every other
 * GPU at its minimum cannot make room, that is what is applied, and said. */
static void replan_around_failures(srv_node *n, double budget_w, srv_plan *plan,
                                   pfi_apply_report *rep)
{
    for (int i = 0; i < n->n_gpus; i++) {
        const pfi_cap_change *c = &rep->gpu[i];
        if (c->code != PFI_OK) {
            double b = isnan(c->before_w) ? n->snap[i].dev.max_limit_w : c->before_w;
            n->snap[i].pinned_w = isnan(c->target_w) || c->target_w < b ? b : c->target_w;
        } else if (!isnan(c->limit_w)) {
            n->snap[i].dev.limit_w = c->limit_w;
            n->snap[i].dev.enforced_w = c->enforced_w;
        }
    }
    pfi_err e = {0};
    srv_plan p2;
    int rc = pfi_srv_plan_compute(n->snap, n->n_gpus, n->cand, n->n_cand, budget_w, &n->keep,
                                  &p2, &e);
    if (rc != PFI_OK) {
        for (int i = 0; i < n->n_gpus; i++)
            p2.target_w[i] = isnan(n->snap[i].pinned_w) ? n->snap[i].dev.min_limit_w : NAN;
        for (int j = 0; j < n->n_cand; j++)
            p2.job_cap_w[j] = p2.job_pred_rel[j] = p2.job_pred_tps[j] = NAN;
    }
    pfi_device known[PFI_MAX_GPUS];
    for (int i = 0; i < n->n_gpus; i++)
        known[i] = n->snap[i].dev;
    pfi_apply_report r2;
    if (pfi_hw_apply(n->b, n->n_gpus, p2.target_w, budget_w, known, &r2, &e) != PFI_OK)
        return;
    /* One report of both passes: the first's failures, the second's outcome. */
    for (int i = 0; i < n->n_gpus; i++)
        if (rep->gpu[i].code != PFI_OK && isnan(p2.target_w[i]))
            r2.gpu[i] = rep->gpu[i];
    r2.n_changed += rep->n_changed;
    r2.n_failed = 0;
    for (int i = 0; i < n->n_gpus; i++)
        r2.n_failed += r2.gpu[i].code != PFI_OK;
    r2.sum_before_w = rep->sum_before_w;
    if (rep->peak_w > r2.peak_w)
        r2.peak_w = rep->peak_w;
    *rep = r2;
    if (rc == PFI_OK) {
        for (int j = 0; j < n->n_cand; j++) {
            plan->job_cap_w[j] = p2.job_cap_w[j];
            plan->job_pred_rel[j] = p2.job_pred_rel[j];
            plan->job_pred_tps[j] = p2.job_pred_tps[j];
            n->cand[j].cap_w = p2.job_cap_w[j];
            n->cand[j].predicted_rel = p2.job_pred_rel[j];
            n->cand[j].predicted_tps = p2.job_pred_tps[j];
        }
        pfi_srv_event_add(n, "replanned", "caps re-planned around %d GPU(s) that could not be "
                                      "lowered; limits now sum to %.0f W",
                      rep->n_failed, rep->sum_after_w);
    } else {
        /* The plan's own words would blame every GPU's minimum: name the GPUs that refused. */
        char who[128] = "";
        size_t at = 0;
        for (int i = 0; i < n->n_gpus && at < sizeof who - 8; i++)
            if (rep->gpu[i].code != PFI_OK)
                at += (size_t)snprintf(who + at, sizeof who - at, "%s%d", at ? "," : "", i);
        pfi_srv_event_add(n, "over_budget", "GPU(s) %s could not be set and hold the node at "
                                            "%.0f W, over the %.0f W budget; no plan of the "
                                            "others fits around them (%s)",
                          who, rep->sum_after_w, budget_w, e.msg);
    }
}

/* Lowers the controller's caps (plan->target_w) so that they sum to at most grid_w, each GPU
 * given toward its minimum in proportion to what it holds above it; a GPU the caps leave alone
 * or that does not answer stays where it is.  An event taken on the node before the controller
 * sent caps is still the node's to keep: its caps replaced the event's budget without a word,
 * while the event showed itself binding and its report counted the excess.  Below what the
 * node can hold, each moved GPU goes to its minimum (the least it can: the event's report says
 * so).  Each target is rounded down to the milliwatt so the sum stays under grid_w.  1 when
 * the caps were over grid_w (lowered, or held at the least they can), 0 when under it. */
static int hold_to_grid(srv_node *n, srv_plan *plan, double grid_w)
{
    double sum = 0, room = 0;
    for (int i = 0; i < n->n_gpus; i++) {
        int moved = !isnan(plan->target_w[i]) && n->snap[i].up;
        double at = isnan(plan->target_w[i]) ? n->snap[i].dev.limit_w : plan->target_w[i];
        sum += at;
        if (moved && at > n->snap[i].dev.min_limit_w)
            room += at - n->snap[i].dev.min_limit_w;
    }
    if (!(sum > grid_w) || !(room > 0))
        return sum > grid_w; /* over it with nothing to lower: held at the least it can */
    double keep = room > sum - grid_w ? 1 - (sum - grid_w) / room : 0;
    for (int i = 0; i < n->n_gpus; i++) {
        double mn = n->snap[i].dev.min_limit_w, t = plan->target_w[i];
        if (isnan(t) || !n->snap[i].up || !(t > mn))
            continue;
        t = floor((mn + (t - mn) * keep) * 1000) / 1000;
        plan->target_w[i] = t > mn ? t : mn;
    }
    return 1;
}

/* A cluster controller's caps taken as they are, held to a grid event of the node's own that
 * binds (hold_to_grid; plan->grid_w): each job's cap is its lowest GPU's
 * (a job runs at its slowest GPU), the prediction read on its curve there.  Returns the sum the
 * caps make, the budget the apply must keep. */
static double plan_external(srv_node *n, const double *ext, srv_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    for (int i = 0; i < n->n_gpus; i++)
        plan->target_w[i] = ext[i];
    pthread_mutex_lock(&n->mu);
    plan->grid_w = n->grid_hold_w;
    memcpy(plan->grid_id, n->grid_hold_id, sizeof plan->grid_id);
    pthread_mutex_unlock(&n->mu);
    if (!isnan(plan->grid_w))
        plan->grid_held = hold_to_grid(n, plan, plan->grid_w);
    double sum = 0;
    for (int i = 0; i < n->n_gpus; i++)
        sum += isnan(plan->target_w[i]) ? n->snap[i].dev.limit_w : plan->target_w[i];
    for (int j = 0; j < n->n_cand; j++) {
        plan->job_cap_w[j] = INFINITY;
        for (int k = 0; k < n->cand[j].n_gpus; k++) {
            int gi = n->cand[j].gpus[k];
            double c = isnan(plan->target_w[gi]) ? n->snap[gi].dev.limit_w : plan->target_w[gi];
            if (c < plan->job_cap_w[j])
                plan->job_cap_w[j] = c;
        }
        pfi_curve cv;
        pfi_srv_job_curve(n->snap, &n->cand[j], &cv);
        plan->job_pred_rel[j] = pfi_srv_plan_rel(&n->cand[j], &cv, plan->job_cap_w[j]);
        plan->job_pred_tps[j] = n->cand[j].t0_tps * plan->job_pred_rel[j];
    }
    return sum;
}

/* Observe-only: the plan is shown and audited, nothing is touched. */
static void report_read_only(const srv_node *n, const srv_plan *plan, const pfi_device *known,
                             pfi_apply_report *rep)
{
    memset(rep, 0, sizeof *rep);
    rep->n = n->n_gpus;
    for (int i = 0; i < n->n_gpus; i++) {
        pfi_cap_change *c = &rep->gpu[i];
        c->gpu = i;
        c->before_w = c->limit_w = known[i].limit_w;
        c->enforced_w = known[i].enforced_w;
        c->target_w = plan->target_w[i];
        c->held = !isnan(c->target_w) && fabs(c->target_w - c->before_w) > 0.5;
        rep->sum_before_w += counted_w(&known[i]);
    }
    rep->sum_after_w = rep->peak_w = rep->sum_before_w;
}

/* The caller's candidate becomes the state, but what other threads update meanwhile (observed
 * throughput, baseline telemetry) is kept, for a job still on the same GPUs: measured on
 * others, it is not this job's any more (pfi_srv_job_set_gpus). */
static void commit(srv_node *n, const pfi_apply_report *rep, double budget_w, int mode,
                   const srv_plan *plan, double ms)
{
    pthread_mutex_lock(&n->mu);
    if (mode == SRV_MODE_EXTERNAL) { /* what a local decision sets in grid.c's grid_apply */
        n->grid_ext_w = plan->grid_w;
        n->grid_binding = plan->grid_held; /* under the caps already: not the event's doing */
        n->grid_yields = 0;
        snprintf(n->grid_event, sizeof n->grid_event, "%s", n->grid_binding ? plan->grid_id : "");
    } else {
        n->grid_ext_w = NAN;
    }
    for (int j = 0; j < n->n_cand; j++) {
        int old = pfi_srv_find_job(n->jobs, n->n_jobs, n->cand[j].id);
        const srv_job *c = &n->cand[j], *o = old >= 0 ? &n->jobs[old] : NULL;
        if (o && pfi_srv_same_gpus(c->gpus, c->n_gpus, o->gpus, o->n_gpus)) {
            n->cand[j].base = n->jobs[old].base;
            n->cand[j].observed_tps = n->jobs[old].observed_tps;
            n->cand[j].observed_wall = n->jobs[old].observed_wall;
            n->cand[j].probe = n->jobs[old].probe;
            if (!isfinite(n->cand[j].t0_tps)) {
                n->cand[j].t0_tps = n->jobs[old].t0_tps;
                n->cand[j].t0_n = n->jobs[old].t0_n;
            }
        }
        /* The sequence length discovery read off its processes' command line meanwhile
         * (discover.c): a decision in flight would put it back to none, and the log's reader
         * would start again every round. */
        if (o && !(c->seq_len > 0) && o->seq_len > 0)
            n->cand[j].seq_len = o->seq_len;
    }
    memcpy(n->jobs, n->cand, sizeof n->jobs[0] * (size_t)n->n_cand);
    n->n_jobs = n->n_cand;
    for (int i = 0; i < n->n_gpus; i++)
        n->gpu[i].job = -1;
    for (int j = 0; j < n->n_jobs; j++)
        for (int k = 0; k < n->jobs[j].n_gpus; k++)
            n->gpu[n->jobs[j].gpus[k]].job = j;
    for (int i = 0; i < n->n_gpus; i++) {
        const pfi_cap_change *c = &rep->gpu[i];
        if (!isnan(c->target_w) && c->code == PFI_OK && !c->held)
            n->gpu[i].requested_w = c->target_w;
        if (!isnan(c->limit_w))
            n->gpu[i].dev.limit_w = c->limit_w;
        if (!isnan(c->enforced_w))
            n->gpu[i].dev.enforced_w = c->enforced_w;
    }
    n->budget_w = budget_w;
    n->mode = mode;
    n->commit_gen++;
    n->n_decisions++;
    n->n_cap_changes += rep->n_changed;
    n->n_apply_failures += rep->n_failed;
    n->n_held += rep->n_held;
    n->n_mismatch += rep->n_mismatch;
    n->last_apply_ms = ms;
    pfi_prom_hist_observe(&n->apply_hist, ms / 1e3);
    n->last_decision_mono = pfi_clock_mono();
    pthread_mutex_unlock(&n->mu);
}

static json_t *decision_json(const srv_node *n, long long id, const char *reason,
                             double budget_w, int mode, const pfi_apply_report *rep, double ms)
{
    json_t *g = json_array();
    for (int i = 0; i < rep->n; i++) {
        const pfi_cap_change *c = &rep->gpu[i];
        json_t *o = json_pack("{s:i, s:o, s:o, s:o, s:b}", "index", i, "target_w",
                              pfi_json_num(c->target_w), "limit_w", pfi_json_num(c->limit_w),
                              "enforced_w", pfi_json_num(c->enforced_w), "held", c->held);
        json_object_set_new(o, "error", c->code != PFI_OK || c->msg[0] ? json_string(c->msg)
                                                                       : json_null());
        json_array_append_new(g, o);
    }
    json_t *jj = json_array();
    for (int j = 0; j < n->n_cand; j++)
        json_array_append_new(
            jj, json_pack("{s:s, s:o, s:o, s:o}", "id", n->cand[j].id, "cap_w",
                          pfi_json_num(n->cand[j].cap_w), "predicted_rel",
                          pfi_json_num(n->cand[j].predicted_rel), "predicted_tokens_per_s",
                          pfi_json_num(n->cand[j].predicted_tps)));
    json_t *doc = json_pack(
        "{s:I, s:s, s:o, s:s, s:{s:i, s:i, s:i, s:i, s:f, s:f, s:f, s:f}, s:o, s:o}", "decision",
        (json_int_t)id, "reason", reason, "budget_w", pfi_json_num(budget_w), "mode",
        pfi_srv_mode_name(mode), "applied", "changed", rep->n_changed, "failed", rep->n_failed,
        "held", rep->n_held, "mismatch", rep->n_mismatch, "sum_before_w", rep->sum_before_w,
        "sum_after_w", rep->sum_after_w, "peak_w", rep->peak_w, "apply_ms", ms, "gpus", g, "jobs",
        jj);
    json_object_set_new(doc, "read_only", json_boolean(n->cfg->read_only));
    /* Whether the limits as read back meet the budget, in whole milliwatts (hw.h). */
    double over = 0;
    if (isfinite(budget_w) && !n->cfg->read_only) {
        long long d = pfi_hw_held_mw(rep->sum_after_w) - pfi_hw_cap_mw(budget_w);
        over = d > 0 ? (double)d / 1000.0 : 0;
    }
    json_t *failed = json_array();
    for (int i = 0; i < rep->n; i++)
        if (rep->gpu[i].code != PFI_OK)
            json_array_append_new(failed, json_integer(i));
    json_object_set_new(doc, "budget_met", json_boolean(over == 0));
    json_object_set_new(doc, "over_budget_w", json_real(over));
    json_object_set_new(doc, "failed_gpus", failed);
    return doc;
}

/* Plans n->cand under budget_w (mode local/safe) or applies ext (mode external), applies,
 * audits and commits.  Caller holds decide_mu and has filled n->snap / n->cand. */
static int decide_sla(srv_node *n, double budget_w, int mode, const double *ext,
                      const char *reason, json_t **result, pfi_err *err);

/* Under a grid event whose SLAs yield, every decision of the node's own (a job registered, a
 * curve learned, a re-plan) sets the SLAs aside, as the event's own decision does: with them
 * given back after that one, the next registration or re-plan planned with every SLA under the
 * event's budget, and was refused. */
int pfi_srv_decide(srv_node *n, double budget_w, int mode, const double *ext, const char *reason,
                  json_t **result, pfi_err *err)
{
    double saved[SRV_MAX_JOBS];
    pthread_mutex_lock(&n->mu);
    int yields = n->grid_yields;
    pthread_mutex_unlock(&n->mu);
    /* ... and so does every decision in the watchdog's safe state, reached whatever the SLAs
     * say (once given back, a job registered in it was refused). */
    int n_saved = (mode == SRV_MODE_LOCAL && yields) || mode == SRV_MODE_SAFE ? n->n_cand : 0;
    if (n_saved)
        pfi_srv_slas_aside(n, saved);
    int rc = decide_sla(n, budget_w, mode, ext, reason, result, err);
    if (n_saved)
        pfi_srv_slas_back(n, saved, n_saved);
    return rc;
}

static int decide_sla(srv_node *n, double budget_w, int mode, const double *ext,
                      const char *reason, json_t **result, pfi_err *err)
{
    srv_plan plan;
    double apply_budget = budget_w;
    if (mode == SRV_MODE_EXTERNAL) {
        apply_budget = budget_w = plan_external(n, ext, &plan);
    } else {
        /* A GPU that does not answer cannot be moved: plan around it at its last reading. */
        for (int i = 0; i < n->n_gpus; i++)
            n->snap[i].pinned_w = n->snap[i].up ? NAN : counted_w(&n->snap[i].dev);
        int rc = pfi_srv_plan_compute(n->snap, n->n_gpus, n->cand, n->n_cand, budget_w,
                                      &n->keep, &plan, err);
        if (rc != PFI_OK)
            return rc;
        if (plan.sla_extra > 0)
            pfi_srv_event_add(n, "sla_relaxed",
                              "%s: the SLA breaches seen in the jobs' logs leave no plan within "
                              "%.0f W that meets every SLA: every SLA loosened by %.1f points, "
                              "the least that fits (raise the budget, or let an SLA go)",
                              reason, budget_w, 100 * plan.sla_extra);
        if (isnan(budget_w))
            apply_budget = INFINITY;
    }
    for (int j = 0; j < n->n_cand; j++) {
        n->cand[j].cap_w = plan.job_cap_w[j];
        n->cand[j].predicted_rel = plan.job_pred_rel[j];
        n->cand[j].predicted_tps = plan.job_pred_tps[j];
    }

    pfi_apply_report rep;
    pfi_device known[PFI_MAX_GPUS];
    for (int i = 0; i < n->n_gpus; i++)
        known[i] = n->snap[i].dev;
    double t0 = pfi_clock_mono();
    int rc = PFI_OK;
    if (n->cfg->read_only) {
        report_read_only(n, &plan, known, &rep);
    } else {
        pthread_mutex_lock(&n->hw_mu);
        rc = pfi_hw_apply(n->b, n->n_gpus, plan.target_w, apply_budget, known, &rep, err);
        if (rc == PFI_OK && mode != SRV_MODE_EXTERNAL && rep.n_failed > 0 &&
            pfi_hw_held_mw(rep.sum_after_w) > pfi_hw_cap_mw(apply_budget))
            replan_around_failures(n, budget_w, &plan, &rep);
        pthread_mutex_unlock(&n->hw_mu);
    }
    double ms = (pfi_clock_mono() - t0) * 1e3;
    if (rc != PFI_OK)
        return rc;
    commit(n, &rep, budget_w, mode, &plan, ms);
    pfi_srv_hold_save(n, mode == SRV_MODE_EXTERNAL ? n->deciding_epoch : 0);

    long long id = pfi_srv_audit_decision(n->audit, pfi_clock_wall(), reason, budget_w, mode, n->cand,
                                      n->n_cand, &rep, ms);
    if (n->audit && id == 0)
        pfi_srv_event_add(n, "db_error", "%s: the decision could not be written to the audit log",
                      reason);
    for (int i = 0; i < rep.n; i++) {
        const pfi_cap_change *c = &rep.gpu[i];
        if (c->code != PFI_OK)
            pfi_srv_event_add(n, "apply_failed", "GPU %d: %s", i, c->msg);
        else if (c->held && !n->cfg->read_only)
            pfi_srv_event_add(n, "apply_held", "GPU %d: %s", i, c->msg);
        else if (c->msg[0])
            pfi_srv_event_add(n, "enforced_differs", "GPU %d: %s", i, c->msg);
    }
    pfi_srv_event_add(n, "decision",
                  "%s%s: budget %s, %s mode, %d cap changes, limits sum %.0f W -> %.0f W in %.1f ms",
                  n->cfg->read_only ? "(read-only, planned only) " : "", reason,
                  isfinite(budget_w) ? "set" : "none", pfi_srv_mode_name(mode), rep.n_changed,
                  rep.sum_before_w, rep.sum_after_w, ms);
    if (result)
        *result = decision_json(n, id, reason, budget_w, mode, &rep, ms);
    return PFI_OK;
}

/* The budget a decision made now plans for: the one in force (or where a ramp has got to). */
double pfi_srv_current_budget(srv_node *n)
{
    pthread_mutex_lock(&n->mu);
    double b = n->budget_w;
    pthread_mutex_unlock(&n->mu);
    return b;
}

int pfi_srv_current_mode(srv_node *n, const double **ext)
{
    pthread_mutex_lock(&n->mu);
    int m = n->mode;
    pthread_mutex_unlock(&n->mu);
    *ext = n->ext_caps;
    return m;
}

int pfi_srv_decide_now(srv_node *n, const char *reason, pfi_err *err)
{
    pthread_mutex_lock(&n->mu);
    int mode = n->mode;
    double budget = n->budget_w;
    pthread_mutex_unlock(&n->mu);
    if (mode == SRV_MODE_EXTERNAL)
        return pfi_srv_decide(n, NAN, mode, n->ext_caps, reason, NULL, err);
    return pfi_srv_decide(n, budget, mode, NULL, reason, NULL, err);
}

int pfi_srv_restore_originals(srv_node *n, pfi_err *err)
{
    pthread_mutex_lock(&n->decide_mu);
    double t[PFI_MAX_GPUS];
    pfi_device known[PFI_MAX_GPUS];
    pthread_mutex_lock(&n->mu);
    for (int i = 0; i < n->n_gpus; i++) {
        t[i] = n->gpu[i].original_w;
        known[i] = n->gpu[i].dev;
    }
    pthread_mutex_unlock(&n->mu);
    pfi_apply_report rep;
    pthread_mutex_lock(&n->hw_mu);
    int rc = pfi_hw_apply(n->b, n->n_gpus, t, INFINITY, known, &rep, err);
    pthread_mutex_unlock(&n->hw_mu);
    pthread_mutex_unlock(&n->decide_mu);
    if (rc != PFI_OK)
        return rc;
    for (int i = 0; i < rep.n; i++)
        if (rep.gpu[i].code != PFI_OK)
            return pfi_err_set(err, rep.gpu[i].code,
                               "%d GPU(s) could not be restored; GPU %d: %s", rep.n_failed, i,
                               rep.gpu[i].msg);
    return PFI_OK;
}
