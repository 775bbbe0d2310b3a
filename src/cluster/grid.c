/* SPDX-License-Identifier: Apache-2.0 */
/* grid.c: grid events for the site (`pfi cluster serve`): the same events as a node's
 * (core/event.h, store/grid.h), on the site's budget.  The budget the controller applies is the
 * tightest of the manual budget (with its ramp) and every event's, ramps included, planned a
 * few seconds ahead so that every node is at its caps by an event's start.  While an event is
 * near (its ramp, window and restore, plus a heartbeat period before) the controller re-plans
 * every 0.2 s instead of every heartbeat.  The site's draw (the sum of its GPUs' draw as the
 * node daemons report it at each refresh) is recorded with the budget in force. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cl_int.h"
#include "core/event_report.h"
#include "core/policy.h"
#include "store/grid.h"
#include "util/json.h"

#define GRID_SETTLE_S 3.0   /* node round trips and the GPUs' draw settling (real s) */
#define GRID_LOOP_S 0.2     /* the loop's period while an event is near (real s) */

/* How far ahead the budget is planned, in seconds of pfi's clock: two loop periods and the
 * settling time are real time, so they are longer on a clock that runs faster (util/clock.h). */
static double horizon_s(void)
{
    return (2 * GRID_LOOP_S + GRID_SETTLE_S) * pfi_clock_scale();
}

/* The site: every known GPU's maximum limit summed; manual (NAN: none). */
static pfi_event_site site_of(const pfi_cl *c, double manual_w)
{
    double max = 0;
    for (int i = 0; i < c->n_nodes; i++)
        for (int g = 0; g < c->nodes[i].n_gpus; g++)
            if (isfinite(c->nodes[i].gpu[g].max_limit_w))
                max += c->nodes[i].gpu[g].max_limit_w;
    pfi_event_site s = pfi_event_site_default(max > 0 ? max : 1);
    s.manual_w = isnan(manual_w) ? INFINITY : manual_w;
    s.plan_ahead_s = horizon_s();
    return s;
}

pfi_event_site pfi_cl_grid_site(pfi_cl *c)
{
    pthread_mutex_lock(&c->mu);
    pfi_event_site s = site_of(c, c->budget.set ? c->budget.watts : NAN);
    pthread_mutex_unlock(&c->mu);
    return s;
}

double pfi_cl_grid_limit(pfi_cl *c, double manual_w, double now)
{
    c->grid_binding = 0;
    c->sla_yield = 0;
    if (c->n_grid == 0)
        return manual_w;
    pfi_event_site site = site_of(c, manual_w);
    double h = horizon_s();
    double best = site.manual_w;
    int bi = -1;
    for (int i = 0; i < c->n_grid; i++) {
        double v = pfi_event_budget_min(&c->grid_ev[i], 1, &site, now, now + h);
        if (v < best) {
            best = v;
            bi = i;
        }
    }
    if (bi >= 0) {
        c->grid_binding = 1;
        c->sla_yield = c->grid_ev[bi].sla_yield;
        snprintf(c->grid_event, sizeof c->grid_event, "%s", c->grid_ev[bi].id);
    }
    return isfinite(best) ? best : NAN;
}

int pfi_cl_grid_busy(pfi_cl *c, double now)
{
    pfi_event_site site = site_of(c, NAN);
    for (int i = 0; i < c->n_grid; i++) {
        const pfi_event *e = &c->grid_ev[i];
        double lead = c->cfg.heartbeat_s + horizon_s();
        if (now >= pfi_event_ramp_start_s(e) - lead &&
            now < pfi_event_restored_s(e, &site) + lead)
            return 1;
    }
    return 0;
}

void pfi_cl_grid_record(pfi_cl *c)
{
    pthread_mutex_lock(&c->mu);
    int unread;
    double w = pfi_cl_site_draw_bounded_w(c, &unread), now = pfi_clock_wall();
    double b = c->budget_now_w;
    char id[PFI_EVENT_ID_MAX] = "";
    if (c->grid_binding)
        snprintf(id, sizeof id, "%s", c->grid_event);
    pfi_grid_store *g = c->grid;
    if (unread != c->grid_unread && g) {
        if (unread)
            pfi_cl_note(c, 0, "site power recorded with %d node(s) counted at "
                     "their caps: they are silent, or some of their GPUs report no draw",
                     unread);
        else
            pfi_cl_note(c, 0, "site power recorded from every node's draw "
                     "again");
    }
    c->grid_unread = unread;
    pthread_mutex_unlock(&c->mu);
    pfi_err e = {0};
    if (g && isfinite(w) && pfi_grid_power_add(g, now, w, b, id, &e) != PFI_OK) {
        pthread_mutex_lock(&c->mu);
        pfi_cl_note(c, 0, "site power not recorded: %s", e.msg);
        pthread_mutex_unlock(&c->mu);
    }
    if (g && now - c->grid_rec_wall > 3600) {
        c->grid_rec_wall = now;
        /* History first: the samples only it needed go in the same pass. */
        if (pfi_grid_history_prune(g, now - PFI_GRID_HISTORY_S, &e) != PFI_OK ||
            pfi_grid_power_prune(g, now - 2 * 86400.0, 3600, 3600, &e) != PFI_OK) {
            pthread_mutex_lock(&c->mu);
            pfi_cl_note(c, 0, "old grid events or site power not pruned: %s", e.msg);
            pthread_mutex_unlock(&c->mu);
        }
    }
}

/* Whether ev's ramp level is to be noted now: its ramp has begun and it is not restored. */
static int level_due(const pfi_event *ev, const pfi_event_site *site, double now)
{
    return !pfi_event_level_noted(ev) && now >= pfi_event_ramp_start_s(ev) &&
           now < pfi_event_restored_s(ev, site);
}

void pfi_cl_grid_note_levels(pfi_cl *c)
{
    double now = pfi_clock_wall();
    pthread_mutex_lock(&c->mu);
    pfi_event_site site = site_of(c, c->budget.set ? c->budget.watts : NAN);
    int due = 0;
    for (int i = 0; i < c->n_grid && !due; i++)
        due = level_due(&c->grid_ev[i], &site, now);
    char(*ids)[PFI_EVENT_ID_MAX] = due ? malloc(sizeof *ids * PFI_CL_GRID_MAX) : NULL;
    int k = 0;
    for (int i = 0; ids && i < c->n_grid; i++)
        if (level_due(&c->grid_ev[i], &site, now)) {
            c->grid_ev[i].ramp_level_w = site.manual_w;
            memcpy(ids[k++], c->grid_ev[i].id, sizeof ids[0]);
        }
    pfi_grid_store *g = c->grid;
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; g && i < k; i++) {
        pfi_err e = {0};
        if (pfi_grid_note_level(g, ids[i], site.manual_w, &e) != PFI_OK) {
            pthread_mutex_lock(&c->mu);
            pfi_cl_note(c, 0, "event %s: its ramp level not saved (a restart "
                     "would report it against the budget then): %s", ids[i], e.msg);
            pthread_mutex_unlock(&c->mu);
        }
    }
    free(ids);
}

int pfi_cl_grid_hold_least(pfi_cl *c, double want_w, pfi_err *err)
{
    char id[PFI_EVENT_ID_MAX];
    pthread_mutex_lock(&c->mu);
    int binds = c->grid_binding, yield = c->sla_yield;
    snprintf(id, sizeof id, "%s", c->grid_event);
    double least = binds ? pfi_cl_min_budget(c, yield) : NAN;
    int said = binds && !strcmp(c->grid_short_id, id) && fabs(c->grid_short_w - least) < 0.5;
    pthread_mutex_unlock(&c->mu);
    if (!(least > want_w))
        return PFI_EINFEASIBLE;
    pfi_err e = {0};
    int rc = pfi_cl_apply(c, least, NULL, &e);
    pthread_mutex_lock(&c->mu);
    snprintf(c->grid_short_id, sizeof c->grid_short_id, "%s", rc == PFI_OK ? id : "");
    c->grid_short_w = rc == PFI_OK ? least : NAN;
    char said_now[sizeof c->note] = "";
    if (rc == PFI_OK && !said) {
        pfi_cl_note(c, 0, "grid_infeasible: event %s: %.0f W cannot be met %s; holding the least "
                    "that can, %.0f W", id, want_w,
                    yield ? "even with the SLAs yielding" : "with the SLAs in force", least);
        memcpy(said_now, c->note, sizeof said_now);
    }
    pthread_mutex_unlock(&c->mu);
    if (said_now[0]) /* the log says it too, once per event and least */
        fprintf(stderr, "pfi cluster: %s\n", said_now);
    if (rc != PFI_OK && err)
        *err = e;
    return rc;
}

#define GPUS_SEEN_KEY "node_gpus_seen"
#define GPUS_SEEN_MAX (256 * 1024) /* ~10,000 nodes' names and counts */

/* The counts saved before a restart, applied to the nodes known now (c->mu held): a silent
 * node's count rises to its saved one at once, before any plan (a resumed budget). */
static void gpus_seen_load(pfi_cl *c, pfi_grid_store *g)
{
    char *v = malloc(GPUS_SEEN_MAX);
    pfi_err e = {0};
    if (!v || pfi_grid_state_get(g, GPUS_SEEN_KEY, v, GPUS_SEEN_MAX, &e) != PFI_OK) {
        free(v);
        return;
    }
    json_t *o = json_loads(v, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        pfi_cl_note(c, 0, "the saved GPU counts of nodes are damaged: ignored");
        free(v);
        return;
    }
    json_decref(c->gpus_seen);
    free(c->gpus_seen_text);
    c->gpus_seen = o;
    c->gpus_seen_text = v;
    for (int i = 0; i < c->n_nodes; i++) {
        pfi_cl_node *n = &c->nodes[i];
        int k = pfi_cl_gpus_seen_saved(c, n->name);
        if (k > n->n_gpus_seen && !n->up)
            n->n_gpus_seen = k;
        if (!n->up && n->n_gpus_seen > n->n_gpus)
            n->n_gpus = n->n_gpus_seen;
    }
}

int pfi_cl_gpus_seen_saved(const pfi_cl *c, const char *node)
{
    json_int_t k = json_integer_value(json_object_get(c->gpus_seen, node));
    return k > 0 && k <= PFI_MAX_GPUS ? (int)k : 0;
}

void pfi_cl_gpus_seen_save(pfi_cl *c)
{
    if (!c->grid)
        return;
    json_t *o = json_object();
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n_nodes; i++) {
        const pfi_cl_node *n = &c->nodes[i];
        if (n->n_gpus_seen > n->n_gpus_slurm)
            json_object_set_new(o, n->name, json_integer(n->n_gpus_seen));
    }
    pthread_mutex_unlock(&c->mu);
    char *v = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(o);
    if (!v || (c->gpus_seen_text && !strcmp(v, c->gpus_seen_text)) ||
        (!c->gpus_seen_text && !strcmp(v, "{}"))) {
        free(v);
        return;
    }
    pfi_err e = {0};
    int rc = strlen(v) < GPUS_SEEN_MAX
                 ? pfi_grid_state_set(c->grid, GPUS_SEEN_KEY, v, &e)
                 : pfi_err_set(&e, PFI_ERANGE, "over %d bytes", GPUS_SEEN_MAX);
    if (rc != PFI_OK) {
        pthread_mutex_lock(&c->mu);
        pfi_cl_note(c, 0, "the GPU counts of nodes were not saved (a restart "
                 "would count a silent node's GPUs at Slurm's count): %s", e.msg);
        pthread_mutex_unlock(&c->mu);
        free(v);
        return;
    }
    free(c->gpus_seen_text);
    c->gpus_seen_text = v;
}

int pfi_cl_grid_open(pfi_cl *c, const char *db, pfi_err *err)
{
    pfi_grid_store *g;
    int rc = pfi_grid_open(db, &g, err);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "grid events in %s: ", db);
    pfi_event *evs;
    int k;
    if ((rc = pfi_grid_load(g, &evs, &k, err)) != PFI_OK) {
        pfi_grid_close(g);
        return rc;
    }
    pthread_mutex_lock(&c->mu);
    c->grid = g;
    gpus_seen_load(c, g);
    c->n_grid = 0;
    for (int i = 0; i < k && c->n_grid < PFI_CL_GRID_MAX; i++)
        if (pfi_event_validate(&evs[i], NULL, NULL) == PFI_OK)
            c->grid_ev[c->n_grid++] = evs[i];
    pthread_mutex_unlock(&c->mu);
    free(evs);
    return PFI_OK;
}

#define BUDGET_KEY "site_budget"

void pfi_cl_budget_save(pfi_cl *c)
{
    if (!c->grid)
        return;
    char v[64];
    pthread_mutex_lock(&c->mu);
    if (c->budget.set)
        snprintf(v, sizeof v, "%.17g", c->budget.watts);
    else
        snprintf(v, sizeof v, "none");
    pthread_mutex_unlock(&c->mu);
    pfi_err e = {0};
    if (pfi_grid_state_set(c->grid, BUDGET_KEY, v, &e) != PFI_OK) {
        pthread_mutex_lock(&c->mu);
        pfi_cl_note(c, 0, "the site budget was not saved (a restart would "
                 "forget it): %s", e.msg);
        pthread_mutex_unlock(&c->mu);
    }
}

int pfi_cl_budget_saved(pfi_cl *c, double *watts, pfi_err *err)
{
    *watts = NAN;
    char v[64];
    if (!c->grid)
        return PFI_OK;
    int rc = pfi_grid_state_get(c->grid, BUDGET_KEY, v, sizeof v, err);
    if (rc == PFI_ENOENT || (rc == PFI_OK && !strcmp(v, "none")))
        return PFI_OK;
    if (rc != PFI_OK)
        return rc;
    char *end;
    double w = strtod(v, &end);
    if (*end || !(w > 0))
        return pfi_err_set(err, PFI_EINVAL, "the saved site budget '%s' is damaged", v);
    *watts = w;
    return PFI_OK;
}

/* The draw is recorded at each refresh: every heartbeat, at most once a loop period; a gap over
 * 2.5 of those (at least 5 s) is a gap in the record (c->mu held). */
static double record_gap_s(const pfi_cl *c)
{
    double every = fmax(c->cfg.heartbeat_s, 2 * GRID_LOOP_S * pfi_clock_scale());
    return 2.5 * (every > 2 ? every : 2);
}

/* A new cut without a stated baseline (a change keeps the held one's, pfi_event_keep_baseline):
 * the site's mean draw over the last hour as recorded, leaving out the time another event bound
 * (core/event_report.h pfi_baseline_walk: posted while one is in force, the baseline was the
 * draw it curtailed, and this cut cut again from there), else its draw now (mu not held). */
static void fill_baseline(pfi_cl *c, double now, pfi_event *ev)
{
    pfi_baseline_walk b;
    pthread_mutex_lock(&c->mu);
    pfi_baseline_walk_init(&b, now + 1, 3600, record_gap_s(c));
    pthread_mutex_unlock(&c->mu);
    pfi_err e = {0};
    int rc = pfi_grid_power_walk(c->grid, &b, &e);
    if (rc != PFI_OK) {
        pthread_mutex_lock(&c->mu);
        pfi_cl_note(c, 0, "event %s: its baseline taken from the draw now: the recorded draw "
                    "cannot be read: %s", ev->id, e.msg);
        pthread_mutex_unlock(&c->mu);
    }
    if (rc == PFI_OK && b.n > 0) {
        ev->baseline_w = pfi_baseline_walk_mean(&b);
        pfi_baseline_walk_method(&b, "site", ev->baseline_method, sizeof ev->baseline_method);
        return;
    }
    pthread_mutex_lock(&c->mu);
    double w = pfi_cl_site_draw_w(c);
    pthread_mutex_unlock(&c->mu);
    ev->baseline_w = w > 0 ? w : NAN;
    snprintf(ev->baseline_method, sizeof ev->baseline_method,
             "site draw when the event was posted (no earlier sample outside events)");
}

int pfi_cl_grid_reported(pfi_cl *c, const char *id, double when, pfi_err *err)
{
    pthread_mutex_lock(&c->op_mu);
    int rc = pfi_grid_mark_reported(c->grid, &c->mu, c->grid_ev, c->n_grid, id, when, err);
    pthread_mutex_unlock(&c->op_mu);
    return rc;
}

int pfi_cl_grid_add(pfi_cl *c, void *body, int flags, void **result, int *created,
                    pfi_err *err)
{
    double now = pfi_clock_wall();
    pfi_event ev;
    *created = 0;
    if (!c->grid)
        return pfi_err_set(err, PFI_ESTATE, "grid events need a store (pfi cluster serve --db)");
    int rc = pfi_grid_event_from_json(body, now, &ev, err);
    if (rc != PFI_OK)
        return rc;
    pthread_mutex_lock(&c->mu);
    int kept = pfi_event_keep_baseline(&ev, c->grid_ev, c->n_grid);
    pthread_mutex_unlock(&c->mu);
    if (!kept && ev.kind == PFI_EVENT_CUT && isnan(ev.baseline_w))
        fill_baseline(c, now, &ev);
    pthread_mutex_lock(&c->op_mu);
    pthread_mutex_lock(&c->mu);
    pfi_event_site live = site_of(c, c->budget.set ? c->budget.watts : NAN);
    pfi_event_keep_level(&ev, c->grid_ev, c->n_grid, &live, now);
    pfi_event_site site = site_of(c, NAN);
    rc = pfi_event_validate(&ev, &site, err);
    if (rc == PFI_OK && ev.end_s <= now)
        rc = pfi_err_set(err, PFI_EINVAL, "event %s ended already", ev.id);
    double need = rc == PFI_OK ? pfi_cl_min_budget(c, ev.sla_yield) : NAN, a = NAN;
    int short_of = rc == PFI_OK &&
                   !pfi_event_feasible(pfi_event_target_w(&ev), isnan(need) ? 0 : need, &a);
    if (short_of && !(flags & PFI_CL_GRID_TAKE_SHORT)) {
        json_t *why = NULL;
        rc = pfi_grid_infeasible(&ev, a, pfi_cl_min_budget(c, 1), "the site", &why, err);
        *result = why;
    }
    int at = pfi_event_list_find(c->grid_ev, c->n_grid, ev.id);
    if (rc == PFI_OK && at < 0 && c->n_grid == PFI_CL_GRID_MAX)
        rc = pfi_err_set(err, PFI_EBUSY, "%d grid events are held: delete past ones first",
                         PFI_CL_GRID_MAX);
    pfi_event held;
    if (at >= 0)
        held = c->grid_ev[at];
    pthread_mutex_unlock(&c->mu);
    /* A change under way is kept as a revision from now: its report judges what was asked
     * before it against what was asked then. */
    int kind = pfi_event_change_kind(at >= 0 ? &held : NULL, &ev, &live, now);
    if (rc == PFI_OK)
        rc = pfi_grid_change(c->grid, at >= 0 ? &held : NULL, &ev, kind, now, err);
    if (rc == PFI_OK) {
        pthread_mutex_lock(&c->mu);
        *created = at < 0;
        c->grid_ev[at < 0 ? c->n_grid++ : at] = ev;
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_unlock(&c->op_mu);
    if (rc != PFI_OK)
        return rc;
    if (short_of) /* a VTN cannot be told to send "sla": "yield": said here, and in its GET */
        fprintf(stderr, "pfi cluster: grid_infeasible: event %s: target %.0f W cannot be met %s: "
                "taken, the site holds the least it can, %.0f W, while it binds\n", ev.id,
                pfi_event_target_w(&ev),
                ev.sla_yield ? "even with the SLAs yielding" : "with the SLAs in force", a);
    *result = pfi_cl_grid_json(c, ev.id);
    return PFI_OK;
}

/* Called under op_mu once the store has let the event go, so no wave plans with it half gone. */
static void drop_held(pfi_cl *c, const char *id)
{
    pthread_mutex_lock(&c->mu);
    pfi_event_list_remove(c->grid_ev, &c->n_grid, id);
    pthread_mutex_unlock(&c->mu);
}

int pfi_cl_grid_let_go(pfi_cl *c, const char *id, pfi_err *err)
{
    if (!c->grid)
        return pfi_err_set(err, PFI_ENOENT, "no grid event '%s'", id);
    pthread_mutex_lock(&c->op_mu);
    pthread_mutex_lock(&c->mu);
    int held = pfi_event_list_find(c->grid_ev, c->n_grid, id) >= 0;
    pthread_mutex_unlock(&c->mu);
    int rc = held ? pfi_grid_let_go(c->grid, id, pfi_clock_wall(), err)
                  : pfi_err_set(err, PFI_ENOENT, "no grid event '%s'", id);
    if (rc == PFI_OK)
        drop_held(c, id);
    pthread_mutex_unlock(&c->op_mu);
    return rc;
}

int pfi_cl_grid_remove(pfi_cl *c, const char *id, pfi_err *err)
{
    if (!c->grid)
        return pfi_err_set(err, PFI_ENOENT, "no grid event '%s'", id);
    pthread_mutex_lock(&c->op_mu);
    int rc = pfi_grid_delete(c->grid, id, err);
    if (rc == PFI_OK)
        drop_held(c, id);
    pthread_mutex_unlock(&c->op_mu);
    return rc;
}

/* Tokens/s (of each curve's top) the jobs lose at budget_w under a policy (mu held). */
static json_t *cost_policy(pfi_cl *c, double budget_w, int policy, int yield)
{
    double *cap = calloc((size_t)c->n_jobs + 1, sizeof *cap);
    double *rel = calloc((size_t)c->n_jobs + 1, sizeof *rel);
    pfi_err e = {0};
    json_t *out;
    if (!cap || !rel) {
        out = json_pack("{s:s}", "error", "out of memory");
    } else if (pfi_cl_plan_policy(c, budget_w, policy, yield, cap, rel, &e) != PFI_OK) {
        out = json_pack("{s:s}", "error", e.msg);
    } else {
        json_t *jobs = json_array();
        double total = 0, slow = 0;
        int known = 1, gpus = 0;
        for (int j = 0; j < c->n_jobs; j++) {
            const pfi_cl_job *J = &c->jobs[j];
            double lost = J->t0 > 0 ? J->t0 * (1 - rel[j]) : NAN;
            if (isfinite(rel[j])) {
                slow += J->n_gpus * (1 - rel[j]);
                gpus += J->n_gpus;
                if (isfinite(lost))
                    total += lost;
                else
                    known = 0;
            }
            json_array_append_new(
                jobs, json_pack("{s:s, s:o, s:o, s:o, s:o}", "id", J->id, "cap_w",
                                pfi_json_num(cap[j]), "sla",
                                pfi_json_num(J->sla),
                                "tokens_per_s_lost", pfi_json_num(lost),
                                "slowdown", pfi_json_num(1 - rel[j])));
        }
        out = json_pack("{s:o, s:o, s:o}", "tokens_per_s_lost",
                        known ? json_real(total) : json_null(), "gpu_weighted_slowdown",
                        gpus ? json_real(slow / gpus) : json_null(), "jobs", jobs);
    }
    free(cap);
    free(rel);
    return out;
}

static void add_cost(pfi_cl *c, const pfi_event *ev, json_t *o, int oracle)
{
    double need = pfi_cl_min_budget(c, ev->sla_yield), a;
    int ok = pfi_event_feasible(pfi_event_target_w(ev), isnan(need) ? 0 : need, &a);
    json_object_set_new(o, "feasible", json_boolean(ok));
    json_object_set_new(o, "achievable_w", json_real(a));
    json_t *cost = json_pack("{s:f, s:o, s:o}", "budget_w", a, "pfi",
                             cost_policy(c, a, PFI_POLICY_PFI, ev->sla_yield), "equal",
                             cost_policy(c, a, PFI_POLICY_EQUAL, ev->sla_yield));
    if (oracle)
        json_object_set_new(cost, "oracle",
                            cost_policy(c, a, PFI_POLICY_ORACLE, ev->sla_yield));
    json_object_set_new(o, "cost", cost);
}

void *pfi_cl_grid_json(pfi_cl *c, const char *id)
{
    double now = pfi_clock_wall();
    pthread_mutex_lock(&c->mu);
    pfi_event_site site = site_of(c, c->budget.set ? c->budget.watts : NAN);
    json_t *list = json_array(), *one = NULL;
    for (int i = 0; i < c->n_grid; i++) {
        const pfi_event *ev = &c->grid_ev[i];
        if (id && strcmp(ev->id, id))
            continue;
        json_t *o = pfi_grid_event_to_json(ev, &site, now);
        json_object_set_new(o, "binding",
                            json_boolean(c->grid_binding && !strcmp(c->grid_event, ev->id)));
        if (strcmp(pfi_grid_event_phase(ev, &site, now), "done"))
            add_cost(c, ev, o, 0);
        if (id)
            one = o;
        else
            json_array_append_new(list, o);
    }
    pthread_mutex_unlock(&c->mu);
    if (id) {
        json_decref(list);
        return one;
    }
    return json_pack("{s:o}", "events", list);
}

void *pfi_cl_grid_report(pfi_cl *c, const char *id, pfi_err *err)
{
    if (pfi_event_id_check(id, err) != PFI_OK) /* a malformed id: 400, not "no such event" */
        return NULL;
    pthread_mutex_lock(&c->mu);
    int at = pfi_event_list_find(c->grid_ev, c->n_grid, id);
    pfi_event ev;
    if (at >= 0)
        ev = c->grid_ev[at];
    pfi_event_site site = site_of(c, c->budget.set ? c->budget.watts : NAN);
    /* Its ramps as they were: a budget set since changes the plans, not the event's record. */
    if (at >= 0)
        site = pfi_event_site_noted(&ev, site);
    double gap = record_gap_s(c);
    pthread_mutex_unlock(&c->mu);
    double let_go = NAN;
    if (at < 0 && (!c->grid || pfi_grid_history(c->grid, id, &ev, &let_go, err) != PFI_OK)) {
        if (!c->grid)
            pfi_err_set(err, PFI_ENOENT, "no grid event '%s'", id);
        return NULL;
    }
    if (at < 0) /* its ramps as they were */
        site = pfi_event_site_noted(&ev, site);
    json_t *o = pfi_grid_report_json(c->grid, &ev, &site, gap, pfi_clock_wall(), err);
    if (!o)
        return NULL;
    if (!isnan(let_go))
        pfi_grid_history_json(o, let_go);
    pthread_mutex_lock(&c->mu);
    json_t *tmp = json_object();
    add_cost(c, &ev, tmp, 1);
    pthread_mutex_unlock(&c->mu);
    json_t *cost = json_object_get(tmp, "cost");
    json_object_set_new(cost, "method",
                        json_string("tokens/s (of the top of each job's curve) each job loses "
                                    "at the target on the curves the controller knows now "
                                    "(oracle: the optimum on the same curves)"));
    json_object_set(o, "cost", cost);
    json_t *jobs = json_array(), *pj = json_object_get(json_object_get(cost, "pfi"), "jobs");
    size_t i;
    json_t *j;
    json_array_foreach(pj, i, j)
    {
        json_t *sla = json_object_get(j, "sla"), *sl = json_object_get(j, "slowdown");
        json_array_append_new(
            jobs, json_pack("{s:O, s:O, s:O, s:o}", "id", json_object_get(j, "id"), "sla", sla,
                            "slowdown", sl, "sla_kept",
                            !json_is_number(sla) ? json_null()
                                                 : json_boolean(json_is_number(sl) &&
                                                                json_number_value(sl) <=
                                                                    json_number_value(sla) +
                                                                        1e-9)));
    }
    json_object_set_new(o, "jobs", jobs);
    json_decref(tmp);
    return o;
}

void pfi_cl_set_ven(pfi_cl *c, pfi_ven *v)
{
    pthread_mutex_lock(&c->mu);
    c->ven = v;
    pthread_mutex_unlock(&c->mu);
}
