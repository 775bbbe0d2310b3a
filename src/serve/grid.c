/* SPDX-License-Identifier: Apache-2.0 */
/* grid.c: grid events on one node (`pfi serve` without a cluster controller).
 *
 * The events (core/event.h) live in node->grid_ev and in the store's grid layer (store/grid.h),
 * so they survive a restart.  The budget in force is the tightest of the manual budget and the
 * events' budgets, ramps included, taken over the next few control periods so that the node is
 * at target by an event's start even between two ticks.  The node's power (the sum of its GPUs'
 * draw) is recorded every second with the budget in force, for the compliance report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/event_report.h"
#include "core/policy.h"
#include "serve/serve_int.h"
#include "store/grid.h"
#include "util/json.h"

#define GRID_REC_S 1.0              /* site power recorded once a second (one per slot) */
#define GRID_PRUNE_S 3600.0         /* old samples pruned once an hour */
#define GRID_KEEP_S (2 * 86400.0)   /* samples older than this go, unless an event needs them */
#define GRID_CONTEXT_S 3600.0       /* an event needs the hour before its ramp and after */
#define GRID_BASELINE_S 3600.0      /* a cut's baseline: mean draw over the last hour */

/* How far ahead the budget is planned: two control periods, plus the time a GPU's draw takes to
 * settle under a new limit (the draw lags the limit by up to a second or so; real seconds, so
 * longer on a clock that runs faster, util/clock.h). */
#define GRID_SETTLE_S 3.0
static double horizon_s(const srv_node *n)
{
    return 2 * n->cfg->sample_interval_s + GRID_SETTLE_S * pfi_clock_scale();
}

pfi_event_site pfi_srv_grid_site(const srv_node *n, double manual_w)
{
    double max = 0;
    for (int i = 0; i < n->n_gpus; i++)
        max += n->gpu[i].dev.max_limit_w;
    pfi_event_site s = pfi_event_site_default(max > 0 ? max : 1);
    s.manual_w = isnan(manual_w) ? INFINITY : manual_w;
    s.plan_ahead_s = horizon_s(n);
    return s;
}

/* The budget the events and manual allow over [now, now + horizon] (mu held); *bi (may be
 * NULL) gets the event that sets it, -1 when none does. */
static double limit_locked(srv_node *n, double manual_w, double now, int *bi)
{
    pfi_event_site site = pfi_srv_grid_site(n, manual_w);
    double h = horizon_s(n);
    double b = pfi_event_budget_min(n->grid_ev, n->n_grid, &site, now, now + h);
    if (bi) {
        *bi = -1;
        double best = site.manual_w;
        for (int i = 0; i < n->n_grid; i++) {
            double c = pfi_event_budget_min(&n->grid_ev[i], 1, &site, now, now + h);
            if (c < best || (c == best && *bi >= 0 && n->grid_ev[i].priority >
                                                          n->grid_ev[*bi].priority)) {
                best = c;
                *bi = i;
            }
        }
    }
    return isfinite(b) ? b : NAN;
}

int pfi_srv_grid_committed_locked(const srv_node *n, double now, char *id, size_t size)
{
    /* The events' own caps, whatever the manual budget: from one (finite), every listed event
     * counted, one done an hour ago or due next year, and a standalone stop held the caps.
     * Over the span the node plans ahead: an event about to start is already in its caps. */
    pfi_event_site site = pfi_srv_grid_site(n, NAN);
    for (int i = 0; i < n->n_grid; i++)
        if (isfinite(pfi_event_budget_min(&n->grid_ev[i], 1, &site, now,
                                          now + site.plan_ahead_s))) {
            snprintf(id, size, "%s", n->grid_ev[i].id);
            return 1;
        }
    return 0;
}

double pfi_srv_grid_limit(srv_node *n, double manual_w, char *id, size_t size)
{
    int bi = -1;
    pthread_mutex_lock(&n->mu);
    double b = limit_locked(n, manual_w, pfi_clock_wall(), &bi);
    if (id && size)
        snprintf(id, size, "%s", bi >= 0 && !isnan(b) ? n->grid_ev[bi].id : "");
    pthread_mutex_unlock(&n->mu);
    return b;
}

double pfi_srv_grid_hold(srv_node *n, char *id, size_t size)
{
    int bi = -1;
    pthread_mutex_lock(&n->mu);
    double b = limit_locked(n, NAN, pfi_clock_wall(), &bi);
    n->grid_hold_w = b;
    snprintf(n->grid_hold_id, sizeof n->grid_hold_id, "%s",
             bi >= 0 && !isnan(b) ? n->grid_ev[bi].id : "");
    if (id && size)
        snprintf(id, size, "%s", n->grid_hold_id);
    pthread_mutex_unlock(&n->mu);
    return b;
}

int pfi_srv_grid_open(srv_node *n, pfi_err *err)
{
    int rc = pfi_grid_open(n->cfg->db, &n->grid, err);
    if (rc != PFI_OK)
        return rc;
    pfi_event *evs;
    int k;
    if ((rc = pfi_grid_load(n->grid, &evs, &k, err)) != PFI_OK) {
        pfi_grid_close(n->grid);
        n->grid = NULL;
        return rc;
    }
    pfi_event_site site = pfi_srv_grid_site(n, NAN);
    int kept = 0;
    for (int i = 0; i < k; i++) {
        pfi_err e = {0};
        if (pfi_event_validate(&evs[i], &site, &e) != PFI_OK) {
            pfi_srv_event_add(n, "grid", "saved event not loaded: %s", e.msg);
            continue;
        }
        if (kept == SRV_GRID_MAX) {
            pfi_srv_event_add(n, "grid", "more than %d saved events: %s and later not loaded "
                                     "(delete past events)", SRV_GRID_MAX, evs[i].id);
            break;
        }
        n->grid_ev[kept++] = evs[i];
    }
    n->n_grid = kept;
    free(evs);
    if (kept)
        pfi_srv_event_add(n, "grid", "%d grid event(s) loaded from %s", kept, n->cfg->db);
    return PFI_OK;
}

void pfi_srv_grid_close(srv_node *n)
{
    pfi_grid_close(n->grid);
    n->grid = NULL;
}

static void record_power(srv_node *n, double now)
{
    pthread_mutex_lock(&n->mu);
    /* One record per whole-second slot of the wall clock: "a second since the last" skipped
     * every other tick of a 1 s sampler (a tick 0.999 s after the last), so 36% of seconds
     * had no record. */
    int due = floor(now / GRID_REC_S) != floor(n->grid_rec_wall / GRID_REC_S);
    int prune = now - n->grid_prune_wall >= GRID_PRUNE_S;
    /* A GPU whose draw is not read now counts at its limit: adding nothing for it, the
     * record, the compliance report and the VTN's DEMAND said the node drew less than it
     * could have, and an excess could go unseen. */
    int unread = 0;
    double w = pfi_srv_draw_bounded_locked(n, &unread), b = n->budget_w;
    int unread_was = n->grid_unread;
    if (due)
        n->grid_unread = unread;
    char id[PFI_EVENT_ID_MAX] = "";
    if (n->grid_binding)
        snprintf(id, sizeof id, "%s", n->grid_event);
    if (due)
        n->grid_rec_wall = now;
    if (prune)
        n->grid_prune_wall = now;
    pthread_mutex_unlock(&n->mu);
    if (due && unread != unread_was && unread)
        pfi_srv_event_add(n, "grid", "site power recorded with %d GPU(s) at their power limit: "
                                     "their draw cannot be read",
                          unread);
    else if (due && unread != unread_was)
        pfi_srv_event_add(n, "grid", "site power recorded from every GPU's draw again");
    pfi_err e = {0};
    if (due && !isnan(w) && pfi_grid_power_add(n->grid, now, w, b, id, &e) != PFI_OK && prune)
        pfi_srv_event_add(n, "db_error", "site power not recorded: %s", e.msg);
    /* History first: the samples only it needed go in the same pass. */
    if (prune && pfi_grid_history_prune(n->grid, now - PFI_GRID_HISTORY_S, &e) != PFI_OK)
        pfi_srv_event_add(n, "db_error", "events let go long ago not deleted: %s", e.msg);
    if (prune && pfi_grid_power_prune(n->grid, now - GRID_KEEP_S, GRID_CONTEXT_S,
                                      GRID_CONTEXT_S, &e) != PFI_OK)
        pfi_srv_event_add(n, "db_error", "old site power not pruned: %s", e.msg);
}

static int same_budget(double a, double b)
{
    return (isnan(a) && isnan(b)) || fabs(a - b) < 0.5;
}

/* The least budget the node can hold with the jobs' SLAs (or without them: yield); decide_mu
 * held. */
static double floor_locked(srv_node *n, int yield)
{
    pfi_srv_snapshot(n);
    if (yield)
        for (int j = 0; j < n->n_cand; j++)
            n->cand[j].sla = NAN;
    srv_plan p;
    pfi_err e = {0};
    pfi_event_site s = pfi_srv_grid_site(n, NAN);
    pfi_srv_plan_compute(n->snap, n->n_gpus, n->cand, n->n_cand, s.max_w, &n->keep, &p, &e);
    return p.min_budget_w;
}

/* The binding event's budget `want` cannot be met with the SLAs in force (yield: not even with
 * them yielding, below the GPUs' minimum limits): the node holds the least it can instead, as
 * docs/api.md says (decide_mu held).  grid_infeasible is said, and counted, when it starts to,
 * and again when that least moves. */
static int hold_least(srv_node *n, const char *id, double want, int yield, char *reason,
                      size_t rn, pfi_err *e)
{
    double floor = floor_locked(n, yield);
    pthread_mutex_lock(&n->mu);
    int said = !strcmp(n->grid_short_id, id) && same_budget(n->grid_short_w, floor);
    pthread_mutex_unlock(&n->mu);
    if (!said)
        pfi_srv_event_add(n, "grid_infeasible", "event %s: %.0f W cannot be met %s; holding the "
                          "least that can, %.0f W", id, want,
                          yield ? "even with the SLAs yielding" : "with the SLAs in force",
                          floor);
    snprintf(reason, rn, "grid event %s: budget %.0f W (the least the %s allow)", id, floor,
             yield ? "GPUs' minimum limits" : "SLAs");
    int rc = pfi_srv_decide(n, floor, SRV_MODE_LOCAL, NULL, reason, NULL, e);
    pthread_mutex_lock(&n->mu);
    n->n_grid_infeasible += !said;
    snprintf(n->grid_short_id, sizeof n->grid_short_id, "%s", rc == PFI_OK ? id : "");
    n->grid_short_w = rc == PFI_OK ? floor : NAN;
    pthread_mutex_unlock(&n->mu);
    return rc;
}

/* Whether the node already holds the least it can for event id's budget `want` (below it) and
 * that least has not moved (a job gone lets it hold less, or meet the event; one come needs
 * more): re-planned at every tick otherwise, twice, and said again each time, all along a ramp
 * (decide_mu taken here). */
static int still_short(srv_node *n, const char *id, double want, double cur, int yield)
{
    pthread_mutex_lock(&n->mu);
    int held = !strcmp(n->grid_short_id, id) && same_budget(n->grid_short_w, cur) &&
               want < cur;
    pthread_mutex_unlock(&n->mu);
    if (!held)
        return 0;
    pthread_mutex_lock(&n->decide_mu);
    double floor = floor_locked(n, yield);
    pthread_mutex_unlock(&n->decide_mu);
    return same_budget(floor, cur);
}

/* In external mode the controller's caps are held to the node's own events (node.c's
 * plan_external): planned again when the events' budget moves (an event the node took before
 * the caps came starts, ramps or ends).  1 when it decided. */
static int grid_apply_external(srv_node *n, int force)
{
    char id[PFI_EVENT_ID_MAX];
    double lim = pfi_srv_grid_hold(n, id, sizeof id);
    pthread_mutex_lock(&n->mu);
    double held = n->grid_ext_w;
    pthread_mutex_unlock(&n->mu);
    if (!force && same_budget(lim, held))
        return 0;
    pthread_mutex_lock(&n->decide_mu);
    pthread_mutex_lock(&n->mu);
    int still = n->mode == SRV_MODE_EXTERNAL && !n->ramping;
    pthread_mutex_unlock(&n->mu);
    pfi_err e = {0};
    int rc = PFI_OK;
    char reason[160];
    if (still) {
        pfi_srv_snapshot(n);
        if (isnan(lim))
            snprintf(reason, sizeof reason, "grid events over: the controller's caps as sent");
        else
            snprintf(reason, sizeof reason, "grid event %s: the controller's caps held to %.0f W",
                     id, lim);
        rc = pfi_srv_decide(n, NAN, SRV_MODE_EXTERNAL, n->ext_caps, reason, NULL, &e);
        pthread_mutex_lock(&n->mu);
        n->n_grid_decisions += rc == PFI_OK;
        pthread_mutex_unlock(&n->mu);
    }
    pthread_mutex_unlock(&n->decide_mu);
    if (rc != PFI_OK)
        pfi_srv_event_add(n, "grid_failed", "%s: %s", reason, e.msg);
    return still;
}

/* Decides under the events' budget now (decide_mu taken here).  force: even when the budget
 * did not move (an event was added, changed or deleted). */
static int grid_apply(srv_node *n, int force)
{
    double now = pfi_clock_wall();
    pthread_mutex_lock(&n->mu);
    int mode = n->mode, ramping = n->ramping, was = n->grid_binding, bi;
    double manual = n->manual_w, cur = n->budget_w;
    double lim = limit_locked(n, manual, now, &bi);
    int yield = bi >= 0 && n->grid_ev[bi].sla_yield;
    char id[PFI_EVENT_ID_MAX] = "";
    if (bi >= 0)
        snprintf(id, sizeof id, "%s", n->grid_ev[bi].id);
    pthread_mutex_unlock(&n->mu);
    if (mode == SRV_MODE_EXTERNAL && !ramping)
        return grid_apply_external(n, force);
    if (mode != SRV_MODE_LOCAL || ramping)
        return 0;
    int binds = bi >= 0 && !isnan(lim);
    if (!binds && !was)
        return 0;
    double want = binds ? lim : manual;
    if (!force && binds == was && same_budget(want, cur))
        return binds && yield; /* a yielding event: the loop's re-plan would keep the SLAs */
    if (!force && binds && was && still_short(n, id, want, cur, yield))
        return yield;
    pthread_mutex_lock(&n->decide_mu);
    pfi_srv_snapshot(n);
    double saved[SRV_MAX_JOBS];
    int n_saved = binds && yield ? n->n_cand : 0;
    if (n_saved)
        pfi_srv_slas_aside(n, saved);
    char reason[160];
    if (binds)
        snprintf(reason, sizeof reason, "grid event %s: budget %.0f W", id, want);
    else
        snprintf(reason, sizeof reason, "grid events over: budget back to %s",
                 isnan(manual) ? "none" : "the manual budget");
    pfi_err e = {0};
    int rc = pfi_srv_decide(n, want, SRV_MODE_LOCAL, NULL, reason, NULL, &e);
    int short_of = rc == PFI_EINFEASIBLE && binds;
    if (short_of)
        rc = hold_least(n, id, want, yield, reason, sizeof reason, &e);
    if (n_saved)
        pfi_srv_slas_back(n, saved, n_saved);
    if (!short_of) {
        pthread_mutex_lock(&n->mu);
        n->grid_short_id[0] = 0;
        n->grid_short_w = NAN;
        pthread_mutex_unlock(&n->mu);
    }
    pthread_mutex_lock(&n->mu);
    if (rc == PFI_OK) {
        n->grid_binding = binds;
        n->grid_yields = binds && yield;
        snprintf(n->grid_event, sizeof n->grid_event, "%s", id);
        n->n_grid_decisions++;
    }
    pthread_mutex_unlock(&n->mu);
    pthread_mutex_unlock(&n->decide_mu);
    if (rc != PFI_OK)
        pfi_srv_event_add(n, "grid_failed", "%s: %s", reason, e.msg);
    return 1;
}

/* Whether ev's ramp level is to be noted now: its ramp has begun and it is not restored. */
static int level_due(const pfi_event *ev, const pfi_event_site *site, double now)
{
    return !pfi_event_level_noted(ev) && now >= pfi_event_ramp_start_s(ev) &&
           now < pfi_event_restored_s(ev, site);
}

/* Notes the level each event whose ramp has begun ramps from (the manual budget now): asked
 * for after the event, its report took the manual budget set since (decide_mu taken, as a
 * change of the event takes it: a change in between would write the event back unnoted). */
static void note_levels(srv_node *n, double now)
{
    pthread_mutex_lock(&n->mu);
    pfi_event_site site = pfi_srv_grid_site(n, n->manual_w);
    int due = 0;
    for (int i = 0; i < n->n_grid && !due; i++)
        due = level_due(&n->grid_ev[i], &site, now);
    pthread_mutex_unlock(&n->mu);
    if (!due)
        return;
    char(*ids)[PFI_EVENT_ID_MAX] = malloc(sizeof *ids * SRV_GRID_MAX);
    if (!ids)
        return; /* noted at a later tick */
    pthread_mutex_lock(&n->decide_mu);
    pthread_mutex_lock(&n->mu);
    site = pfi_srv_grid_site(n, n->manual_w);
    int k = 0;
    for (int i = 0; i < n->n_grid; i++)
        if (level_due(&n->grid_ev[i], &site, now)) {
            n->grid_ev[i].ramp_level_w = site.manual_w;
            memcpy(ids[k++], n->grid_ev[i].id, sizeof ids[0]);
        }
    pthread_mutex_unlock(&n->mu);
    for (int i = 0; i < k; i++) {
        pfi_err e = {0};
        if (pfi_grid_note_level(n->grid, ids[i], site.manual_w, &e) != PFI_OK)
            pfi_srv_event_add(n, "db_error", "event %s: its ramp level %.0f W not saved (a "
                              "restart would report it against the budget then): %s", ids[i],
                              site.manual_w, e.msg);
    }
    pthread_mutex_unlock(&n->decide_mu);
    free(ids);
}

int pfi_srv_grid_tick(srv_node *n)
{
    if (!n->grid)
        return 0;
    double now = pfi_clock_wall();
    record_power(n, now);
    note_levels(n, now);
    return grid_apply(n, 0);
}

/* Samples are a second apart, or a control period when that is longer; a gap over 2.5 of those
 * (at least 5 s) is a gap in the record. */
static double record_gap_s(const srv_node *n)
{
    return fmax(5, 2.5 * fmax(GRID_REC_S, n->cfg->sample_interval_s));
}

/* A new cut's baseline when the request states none (a change keeps the held one's,
 * pfi_event_keep_baseline): the node's mean draw over the last hour as recorded, leaving out
 * the time another event bound (core/event_report.h pfi_baseline_walk: posted while one is in
 * force, the baseline was the draw it curtailed, and this cut cut again from there), else its
 * draw now. */
static void fill_baseline(srv_node *n, double now, pfi_event *ev)
{
    pfi_baseline_walk b;
    pfi_baseline_walk_init(&b, now + 1, GRID_BASELINE_S, record_gap_s(n));
    pfi_err e = {0};
    int rc = pfi_grid_power_walk(n->grid, &b, &e);
    if (rc != PFI_OK)
        pfi_srv_event_add(n, "db_error", "event %s: its baseline taken from the draw now: the "
                          "recorded draw cannot be read: %s", ev->id, e.msg);
    if (rc == PFI_OK && b.n > 0) {
        ev->baseline_w = pfi_baseline_walk_mean(&b);
        pfi_baseline_walk_method(&b, "node", ev->baseline_method, sizeof ev->baseline_method);
        return;
    }
    pthread_mutex_lock(&n->mu);
    ev->baseline_w = pfi_srv_draw_locked(n);
    pthread_mutex_unlock(&n->mu);
    snprintf(ev->baseline_method, sizeof ev->baseline_method,
             "node draw when the event was posted (no earlier sample outside events)");
}

/* Saves ev, a new event or a change of the one held under its id: a change under way is kept
 * as a revision from now (store/grid.h pfi_grid_change), so its report judges what was asked
 * before it against what was asked then.  *kind gets how it was kept (decide_mu held). */
static int store_event(srv_node *n, const pfi_event *ev, int *created, int *kind, pfi_err *err)
{
    double now = pfi_clock_wall();
    pfi_event held;
    pthread_mutex_lock(&n->mu);
    int at = pfi_event_list_find(n->grid_ev, n->n_grid, ev->id);
    int full = at < 0 && n->n_grid == SRV_GRID_MAX;
    if (at >= 0)
        held = n->grid_ev[at];
    pfi_event_site site = pfi_srv_grid_site(n, n->manual_w);
    pthread_mutex_unlock(&n->mu);
    if (full)
        return pfi_err_set(err, PFI_EBUSY, "%d grid events are held: delete past ones first",
                           SRV_GRID_MAX);
    *kind = pfi_event_change_kind(at >= 0 ? &held : NULL, ev, &site, now);
    int rc = pfi_grid_change(n->grid, at >= 0 ? &held : NULL, ev, *kind, now, err);
    if (rc != PFI_OK)
        return rc;
    *created = at < 0;
    pthread_mutex_lock(&n->mu);
    if (at < 0)
        at = n->n_grid++;
    n->grid_ev[at] = *ev;
    pthread_mutex_unlock(&n->mu);
    return PFI_OK;
}

int pfi_srv_grid_add(srv_node *n, json_t *body, int flags, json_t **result, int *added,
                     pfi_err *err)
{
    if (added)
        *added = 0;
    double now = pfi_clock_wall();
    pfi_event ev;
    int rc = pfi_grid_event_from_json(body, now, &ev, err);
    if (rc != PFI_OK)
        return rc;
    pthread_mutex_lock(&n->mu);
    int kept = pfi_event_keep_baseline(&ev, n->grid_ev, n->n_grid);
    pthread_mutex_unlock(&n->mu);
    if (!kept && ev.kind == PFI_EVENT_CUT && isnan(ev.baseline_w))
        fill_baseline(n, now, &ev);
    pthread_mutex_lock(&n->mu);
    pfi_event_site site = pfi_srv_grid_site(n, n->manual_w);
    pfi_event_keep_level(&ev, n->grid_ev, n->n_grid, &site, now);
    pthread_mutex_unlock(&n->mu);
    if ((rc = pfi_event_validate(&ev, &site, err)) != PFI_OK)
        return rc;
    if (ev.end_s <= now)
        return pfi_err_set(err, PFI_EINVAL, "event %s ended already (end %.0f, now %.0f)",
                           ev.id, ev.end_s, now);
    /* Under a cluster controller the caps are its: an event taken here was answered 201,
     * shown active and feasible, and never applied (the report then counted the excess
     * against the node).  The site's events go to the controller, which plans every node. */
    pthread_mutex_lock(&n->mu);
    int external = n->mode == SRV_MODE_EXTERNAL;
    char by[sizeof n->hb_controller];
    snprintf(by, sizeof by, "%s", n->hb_controller[0] ? n->hb_controller : "a cluster controller");
    pthread_mutex_unlock(&n->mu);
    if (external)
        return pfi_err_set(err, PFI_EBUSY, "this node's caps come from %s (external mode): post "
                           "grid events to it (pfi cluster serve), which plans every node", by);
    pthread_mutex_lock(&n->decide_mu);
    double floor = floor_locked(n, ev.sla_yield);
    double achievable;
    int created = 0, kind = PFI_EVENT_CHANGE_NEW;
    int short_of = !pfi_event_feasible(pfi_event_target_w(&ev), floor, &achievable);
    if (short_of && !(flags & SRV_GRID_TAKE_SHORT))
        rc = pfi_grid_infeasible(&ev, achievable, floor_locked(n, 1), "this node", result, err);
    else
        rc = store_event(n, &ev, &created, &kind, err);
    pthread_mutex_unlock(&n->decide_mu);
    if (rc != PFI_OK)
        return rc;
    if (short_of) /* a VTN cannot be told to send "sla": "yield": said here, and in its GET */
        pfi_srv_event_add(n, "grid_infeasible", "event %s: target %.0f W cannot be met %s: "
                          "taken, the node holds the least it can, %.0f W, while it binds",
                          ev.id, pfi_event_target_w(&ev),
                          ev.sla_yield ? "even with the SLAs yielding" : "with the SLAs in force",
                          achievable);
    pfi_srv_event_add(n, "grid", "event %s %s: %s %.0f W from %.0f to %.0f (ramps %.0f/%.0f s, "
                  "source %s)", ev.id, created ? "added"
                  : kind == PFI_EVENT_CHANGE_REVISE ? "changed while under way (its report "
                                                      "judges what came before as it was)"
                                                    : "changed",
                  pfi_event_kind_name(ev.kind), pfi_event_target_w(&ev), ev.start_s, ev.end_s,
                  ev.ramp_down_s, ev.ramp_up_s, ev.source);
    grid_apply(n, 1);
    if (result)
        *result = pfi_srv_grid_view(n, ev.id);
    if (added)
        *added = created;
    return PFI_OK;
}

int pfi_srv_grid_reported(srv_node *n, const char *id, double when, pfi_err *err)
{
    pthread_mutex_lock(&n->decide_mu);
    int rc = pfi_grid_mark_reported(n->grid, &n->mu, n->grid_ev, n->n_grid, id, when, err);
    pthread_mutex_unlock(&n->decide_mu);
    return rc;
}

/* Called under decide_mu once the store has let the event go, so no decision sees it half gone. */
static void drop_held(srv_node *n, const char *id)
{
    pthread_mutex_lock(&n->mu);
    pfi_event_list_remove(n->grid_ev, &n->n_grid, id);
    pthread_mutex_unlock(&n->mu);
}

int pfi_srv_grid_let_go(srv_node *n, const char *id, pfi_err *err)
{
    pthread_mutex_lock(&n->decide_mu);
    pthread_mutex_lock(&n->mu);
    int held = pfi_event_list_find(n->grid_ev, n->n_grid, id) >= 0;
    pthread_mutex_unlock(&n->mu);
    int rc = held ? pfi_grid_let_go(n->grid, id, pfi_clock_wall(), err)
                  : pfi_err_set(err, PFI_ENOENT, "no grid event '%s'", id);
    if (rc == PFI_OK)
        drop_held(n, id);
    pthread_mutex_unlock(&n->decide_mu);
    if (rc != PFI_OK)
        return rc;
    pfi_srv_event_add(n, "grid", "event %s let go: its report kept %.0f days", id,
                      PFI_GRID_HISTORY_S / 86400);
    grid_apply(n, 1);
    return PFI_OK;
}

int pfi_srv_grid_remove(srv_node *n, const char *id, json_t **result, pfi_err *err)
{
    pthread_mutex_lock(&n->decide_mu);
    int rc = pfi_grid_delete(n->grid, id, err);
    if (rc == PFI_OK)
        drop_held(n, id);
    pthread_mutex_unlock(&n->decide_mu);
    if (rc != PFI_OK)
        return rc;
    pfi_srv_event_add(n, "grid", "event %s deleted", id);
    grid_apply(n, 1);
    if (result)
        *result = json_pack("{s:s}", "deleted", id);
    return PFI_OK;
}

/* Tokens/s each job loses at budget_w under a policy, against its baseline (decide_mu held,
 * snapshot taken). */
static json_t *cost_policy(srv_node *n, double budget_w, int policy)
{
    srv_plan p;
    pfi_err e = {0};
    if (pfi_srv_plan_policy(n->snap, n->n_gpus, n->cand, n->n_cand, budget_w, policy, &n->keep,
                            &p, &e) != PFI_OK)
        return json_pack("{s:s}", "error", e.msg);
    json_t *jobs = json_array();
    double total = 0, rel_gpu = 0;
    int gpus = 0, known = 1;
    for (int j = 0; j < n->n_cand; j++) {
        const srv_job *jb = &n->cand[j];
        double rel = p.job_pred_rel[j], lost = jb->t0_tps * (1 - rel);
        if (isfinite(lost))
            total += lost;
        else
            known = 0;
        if (isfinite(rel)) {
            rel_gpu += jb->n_gpus * (1 - rel);
            gpus += jb->n_gpus;
        }
        json_array_append_new(
            jobs, json_pack("{s:s, s:o, s:o, s:o, s:o}", "id", jb->id, "cap_w",
                            pfi_json_num(p.job_cap_w[j]),
                            "tokens_per_s", pfi_json_num(p.job_pred_tps[j]),
                            "tokens_per_s_lost", pfi_json_num(lost),
                            "slowdown", pfi_json_num(1 - rel)));
    }
    return json_pack("{s:o, s:o, s:o}", "tokens_per_s_lost",
                     known ? json_real(total) : json_null(), "gpu_weighted_slowdown",
                     gpus ? json_real(rel_gpu / gpus) : json_null(), "jobs", jobs);
}

/* Each job's SLA against its slowdown under pfi's plan at budget_w (decide_mu held, snapshot
 * taken). */
static json_t *sla_json(srv_node *n, double budget_w)
{
    srv_plan p;
    pfi_err e = {0};
    json_t *a = json_array();
    int ok = pfi_srv_plan_policy(n->snap, n->n_gpus, n->cand, n->n_cand, budget_w, PFI_POLICY_PFI,
                                 &n->keep, &p, &e) == PFI_OK;
    for (int j = 0; j < n->n_cand; j++) {
        double slow = ok ? 1 - p.job_pred_rel[j] : NAN, sla = n->jobs[j].sla;
        json_array_append_new(
            a, json_pack("{s:s, s:o, s:o, s:o}", "id", n->cand[j].id, "sla",
                         pfi_json_num(sla), "slowdown",
                         pfi_json_num(slow), "sla_kept",
                         !isfinite(sla) ? json_null()
                                        : json_boolean(isfinite(slow) && slow <= sla + 1e-9)));
    }
    return a;
}

/* The predicted cost of holding ev's target with the jobs now registered, under pfi's policy
 * and under an equal cut; feasibility against the SLAs in force. */
static void add_cost(srv_node *n, const pfi_event *ev, json_t *o)
{
    pthread_mutex_lock(&n->decide_mu);
    double floor = floor_locked(n, ev->sla_yield); /* takes the snapshot */
    double target = pfi_event_target_w(ev), achievable;
    int ok = pfi_event_feasible(target, floor, &achievable);
    json_object_set_new(o, "feasible", json_boolean(ok));
    json_object_set_new(o, "achievable_w", json_real(achievable));
    json_object_set_new(o, "cost", json_pack("{s:f, s:o, s:o}", "budget_w", achievable, "pfi",
                                             cost_policy(n, achievable, PFI_POLICY_PFI),
                                             "equal", cost_policy(n, achievable,
                                                                  PFI_POLICY_EQUAL)));
    pthread_mutex_unlock(&n->decide_mu);
}

json_t *pfi_srv_grid_view(srv_node *n, const char *id)
{
    double now = pfi_clock_wall();
    pthread_mutex_lock(&n->mu);
    int k = n->n_grid;
    pfi_event *evs = malloc(sizeof *evs * (size_t)(k > 0 ? k : 1));
    if (evs)
        memcpy(evs, n->grid_ev, sizeof *evs * (size_t)k);
    pfi_event_site site = pfi_srv_grid_site(n, n->manual_w);
    int binding = n->grid_binding;
    char bid[PFI_EVENT_ID_MAX];
    snprintf(bid, sizeof bid, "%s", n->grid_event);
    pthread_mutex_unlock(&n->mu);
    if (!evs)
        return NULL;
    json_t *list = json_array(), *one = NULL;
    for (int i = 0; i < k; i++) {
        if (id && strcmp(evs[i].id, id))
            continue;
        json_t *o = pfi_grid_event_to_json(&evs[i], &site, now);
        json_object_set_new(o, "binding", json_boolean(binding && !strcmp(bid, evs[i].id)));
        if (strcmp(pfi_grid_event_phase(&evs[i], &site, now), "done"))
            add_cost(n, &evs[i], o);
        if (id)
            one = o;
        else
            json_array_append_new(list, o);
    }
    free(evs);
    if (id) {
        json_decref(list);
        return one;
    }
    double b = pfi_event_budget_at(NULL, 0, &site, now, NULL);
    return json_pack("{s:o, s:o}", "events", list, "manual_budget_w",
                     pfi_json_num(b));
}

json_t *pfi_srv_grid_report(srv_node *n, const char *id, pfi_err *err)
{
    if (pfi_event_id_check(id, err) != PFI_OK) /* a malformed id: 400, not "no such event" */
        return NULL;
    pthread_mutex_lock(&n->mu);
    int at = pfi_event_list_find(n->grid_ev, n->n_grid, id);
    pfi_event ev;
    if (at >= 0)
        ev = n->grid_ev[at];
    pfi_event_site site = pfi_srv_grid_site(n, n->manual_w);
    pthread_mutex_unlock(&n->mu);
    double let_go = NAN;
    /* Not held: maybe let go, in the store's history (a node run without a store has none). */
    if (at < 0 && !n->grid) {
        pfi_err_set(err, PFI_ENOENT, "no grid event '%s'", id);
        return NULL;
    }
    if (at < 0 && pfi_grid_history(n->grid, id, &ev, &let_go, err) != PFI_OK)
        return NULL;
    /* Its ramps as they were: a budget set since changes the node's plans, not its record. */
    site = pfi_event_site_noted(&ev, site);
    json_t *o = pfi_grid_report_json(n->grid, &ev, &site, record_gap_s(n), pfi_clock_wall(), err);
    if (!o)
        return NULL;
    pthread_mutex_lock(&n->decide_mu);
    double floor = floor_locked(n, ev.sla_yield), a;
    pfi_event_feasible(pfi_event_target_w(&ev), floor, &a);
    json_object_set_new(
        o, "cost",
        json_pack("{s:s, s:f, s:o, s:o, s:o}", "method",
                  "tokens/s each job loses at the target on the curves of the jobs registered "
                  "now (pfi: pfi's plan on the curves the node plans with; oracle: the optimal "
                  "plan on the same curves, as the node knows no truer ones; equal: every job "
                  "capped at the same fraction)",
                  "budget_w", a, "pfi", cost_policy(n, a, PFI_POLICY_PFI), "oracle",
                  cost_policy(n, a, PFI_POLICY_ORACLE), "equal",
                  cost_policy(n, a, PFI_POLICY_EQUAL)));
    json_object_set_new(o, "jobs", sla_json(n, a));
    pthread_mutex_unlock(&n->decide_mu);
    if (!isnan(let_go))
        pfi_grid_history_json(o, let_go);
    return o;
}
