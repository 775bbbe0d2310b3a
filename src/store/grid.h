/* SPDX-License-Identifier: Apache-2.0 */
/* grid.h: grid events (core/event.h) and the site power recorded around them, kept in a store
 * file as the store's "grid" layer (store.h: pfi_store_migrate_layer), so that events survive
 * a restart of `pfi serve` or `pfi cluster serve` and an event's compliance report can be
 * written after it ended.
 *
 * Tables: grid_events (one row per event, every field of pfi_event), grid_event_revisions (an
 * event changed while under way: each definition's terms and when it took effect), grid_power
 * (one row per recorded site sample: wall time, site draw, budget in force, the binding event's
 * id).  Every
 * write is one statement or one transaction: a crash leaves the old row or the new, never half.
 * Events are synced at every commit; power samples go through a second connection with
 * synchronous=NORMAL (a power cut may lose the last seconds of samples, never an event).  The
 * connections are shared by the daemon's threads under a mutex. */
#ifndef PFI_STORE_GRID_H
#define PFI_STORE_GRID_H

#include <pthread.h>
#include "core/err.h"
#include "core/event.h"
#include "core/event_report.h"

typedef struct pfi_grid_store pfi_grid_store;

/* Opens (creating) the store at path and brings its "grid" tables up to date. */
int pfi_grid_open(const char *path, pfi_grid_store **out, pfi_err *err);
void pfi_grid_close(pfi_grid_store *g);

/* Inserts the event, or replaces the one with the same id (which keeps the time it was first
 * stored; a new one takes ev->added_s, 0: not known). */
int pfi_grid_put(pfi_grid_store *g, const pfi_event *ev, pfi_err *err);
/* Saves a change of an event: kind is pfi_event_change_kind(held, ev, ...) (core/event.h).
 * NEW replaces the event and clears the revisions of its id; SAME replaces it and keeps them;
 * REVISE adds ev as a revision from `now`, and held as the first one when the id had none;
 * AHEAD adds ev as a revision from `now` when the id has any, else replaces the event alone.
 * A NEW event, or an id not stored before, is noted as added at `now` (pfi_event added_s); a
 * change of one stored keeps its first time.  One transaction: on error nothing changed. */
int pfi_grid_change(pfi_grid_store *g, const pfi_event *held, const pfi_event *ev, int kind,
                    double now, pfi_err *err);
/* Every definition of ev in force in turn: its stored revisions with ev itself (the one held
 * now) as the last, or ev alone from the beginning when it was never changed under way; *out
 * malloc'ed (free()), *n >= 1. */
int pfi_grid_revisions(pfi_grid_store *g, const pfi_event *ev, pfi_event_revision **out, int *n,
                       pfi_err *err);
/* Deletes the event and its revisions; PFI_ENOENT naming the id when there is no such event. */
int pfi_grid_delete(pfi_grid_store *g, const char *id, pfi_err *err);
/* Marks event id of the held list reported at `when` (the list's entry under list_mu) and
 * stores it.  The caller holds the lock its adds and deletes take: a delete between the copy
 * and the write would have the deleted event written back.  PFI_ENOENT when not held. */
int pfi_grid_mark_reported(pfi_grid_store *g, pthread_mutex_t *list_mu, pfi_event *list, int n,
                           const char *id, double when, pfi_err *err);
/* Notes in the store that event id ramps from level_w (INFINITY: no manual budget), the level
 * in force when its ramp began (core/event.h ramp_level_w).  PFI_ENOENT when there is none. */
int pfi_grid_note_level(pfi_grid_store *g, const char *id, double level_w, pfi_err *err);
/* A value of the controller's own state under key; get: PFI_ENOENT (err untouched) when none. */
int pfi_grid_state_set(pfi_grid_store *g, const char *key, const char *value, pfi_err *err);
int pfi_grid_state_get(pfi_grid_store *g, const char *key, char *value, size_t size, pfi_err *err);
/* Every event held (not let go), by start time; *evs malloc'ed (free()), NULL when *n == 0. */
int pfi_grid_load(pfi_grid_store *g, pfi_event **evs, int *n, pfi_err *err);

/* How long a finished event let go stays in the store as history, its report with it (its
 * samples are kept as long: pfi_grid_power_prune keeps those of every stored event). */
#define PFI_GRID_HISTORY_S (7 * 86400.0)
/* Lets event id go at `when`: no longer loaded with the events held (pfi_grid_load), kept as
 * history until pfi_grid_history_prune.  Saving an event of its id (pfi_grid_put,
 * pfi_grid_change) makes it held again; pfi_grid_delete deletes it.  PFI_ENOENT when none. */
int pfi_grid_let_go(pfi_grid_store *g, const char *id, double when, pfi_err *err);
/* The event id let go, and when (PFI_ENOENT, naming it, when there is none let go). */
int pfi_grid_history(pfi_grid_store *g, const char *id, pfi_event *ev, double *let_go_s,
                     pfi_err *err);
/* Deletes the events let go before `before`, with their revisions. */
int pfi_grid_history_prune(pfi_grid_store *g, double before, pfi_err *err);

/* One site sample: draw (W), the budget in force (INFINITY or NAN: none) and the id of the
 * event that binds ("" or NULL: none). */
typedef struct pfi_grid_sample {
    double wall;
    double site_w;
    double budget_w;
} pfi_grid_sample;

int pfi_grid_power_add(pfi_grid_store *g, double wall, double site_w, double budget_w,
                       const char *event_id, pfi_err *err);
/* Samples with t0 <= wall < t1 in time order; *out malloc'ed (free()), NULL when *n == 0. */
int pfi_grid_power_range(pfi_grid_store *g, double t0, double t1, pfi_grid_sample **out, int *n,
                         pfi_err *err);
/* The mean site draw (W) of the samples with t0 <= wall < t1 whose draw is known, in *mean_w;
 * returns how many there were (0, *mean_w untouched: none, or the store could not be read). */
int pfi_grid_power_mean(pfi_grid_store *g, double t0, double t1, double *mean_w);
/* Walks the samples before b->end_s back, newest first, into b (core/event_report.h
 * pfi_baseline_walk_feed: a sample recorded with a binding event is bound) until it needs no
 * earlier one: the draw without events over b's span. */
int pfi_grid_power_walk(pfi_grid_store *g, pfi_baseline_walk *b, pfi_err *err);
/* Deletes samples older than `before` that no stored event needs (an event needs its window
 * from keep_before_s before its ramp to keep_after_s after its end). */
int pfi_grid_power_prune(pfi_grid_store *g, double before, double keep_before_s,
                         double keep_after_s, pfi_err *err);

/* An event's compliance from the site power recorded from PFI_COMPLIANCE_BASELINE_S before its
 * first ramp to a minute after its last restore, each instant against the revision in force
 * then (pfi_grid_revisions, core/event_report.h), its baseline the hour before its first ramp
 * outside other events (pfi_grid_power_walk); max_gap_s: a longer gap between two samples is a
 * gap in the record.  *n_samples (may be NULL) gets how many were read. */
int pfi_grid_compliance(pfi_grid_store *g, const pfi_event *ev, const pfi_event_site *site,
                        double max_gap_s, pfi_event_compliance *out, int *n_samples,
                        pfi_err *err);

/* ---- JSON (grid_json.c), the shape of the API's /v1/grid/events (docs/api.md) ---- */

typedef struct json_t json_t;

/* An event from a request body: "id" (default: made from now), "start" and one of "end" or
 * "duration_s" (times: Unix seconds, or strings for util/isotime.h), one of "limit_w" (W) or
 * "cut" (0.25 or "25%") with an optional "baseline_w", "ramp_s" (both ramps) or "ramp_down_s" /
 * "ramp_up_s", "priority", "source", "sla" ("keep" or "yield").  Unknown fields are an error
 * naming the known ones.  A cut without baseline_w gets baseline_w NAN: the caller states its
 * own.  Not validated against a site: call pfi_event_validate. */
int pfi_grid_event_from_json(json_t *o, double now, pfi_event *ev, pfi_err *err);
/* The event as the API shows it: every field, times both as ISO 8601 and Unix seconds, the
 * target in W, and its phase at `now` ("scheduled", "ramping", "active", "restoring", "done";
 * site may be NULL: the restore is then taken to end with the window). */
json_t *pfi_grid_event_to_json(const pfi_event *ev, const pfi_event_site *site, double now);
const char *pfi_grid_event_phase(const pfi_event *ev, const pfi_event_site *site, double now);
/* A compliance as the API's report shows it (docs/api.md). */
json_t *pfi_grid_compliance_to_json(const pfi_event_compliance *x);
/* Adds to a report (pfi_grid_report_json) of an event let go "let_go": {"at", "at_s",
 * "kept_until", "kept_until_s"}: when it was, and until when its history is kept. */
void pfi_grid_history_json(json_t *report, double let_go_s);
/* An event whose target the SLAs in force cannot meet: PFI_EINFEASIBLE in err, saying what
 * `holder` ("the site", "this node") can hold at least (achievable_w) and, where the SLAs raise
 * that above the GPUs' minimum limits (min_limits_w) and the event does not yield, how to let
 * them give way; and in *body (body may be NULL) the API's answer: "feasible" false,
 * "target_w" and "achievable_w".  Returns PFI_EINFEASIBLE. */
int pfi_grid_infeasible(const pfi_event *ev, double achievable_w, double min_limits_w,
                        const char *holder, json_t **body, pfi_err *err);
/* An event's compliance report (pfi_grid_compliance) as the API shows it: "event" (at `now`),
 * "compliance", "site_max_w", "samples", and what it can say at `now`: "state" ("not_started"
 * before the ramp, "partial" until the restore is over, then "no_samples" when no second of the
 * window was recorded, else "complete") with "state_message", a sentence saying so; the caller
 * adds the cost of its own plan.  An event changed while under way also has
 * "compliance.revisions" (each definition, when it took effect and its own figures), and its
 * state_message says when it was changed. */
json_t *pfi_grid_report_json(pfi_grid_store *g, const pfi_event *ev, const pfi_event_site *site,
                             double max_gap_s, double now, pfi_err *err);

#endif
