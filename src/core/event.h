/* SPDX-License-Identifier: Apache-2.0 */
/* event.h: grid events, the requests of a utility, an aggregator or the site to draw less.
 *
 * An event is a window [start, end) (Unix seconds), a target and ramp limits:
 *   target     either a site power limit in W (PFI_EVENT_LIMIT), or a cut relative to a stated
 *              baseline (PFI_EVENT_CUT): target = baseline_w * (1 - cut), cut in (0, 1).
 *   ramp down  ramp_down_s before the start, the budget descends linearly from the level in
 *              force without the event (the manual budget, or the site maximum when there is
 *              none) to the target, so the site is at target by the start.  0: the budget drops
 *              at the start (the controller plans ahead, see pfi_event_budget_min).
 *   ramp up    after the end the budget rises back in equal steps of at most
 *              site->restore_step_s, over ramp_up_s (longer when site->restore_w_per_s asks),
 *              each step held before the next, so the site does not rebound at once.
 * Several events and the manual budget resolve to the tightest (lowest) value at every instant;
 * among events with the same target the higher priority binds, then the earlier start.
 * Pure: no I/O, no clock, no globals. */
#ifndef PFI_CORE_EVENT_H
#define PFI_CORE_EVENT_H

#include "core/err.h"

#define PFI_EVENT_ID_MAX 64
#define PFI_EVENT_SOURCE_MAX 64
#define PFI_EVENT_METHOD_MAX 192
#define PFI_EVENT_PRIORITY_MAX 1000

typedef enum pfi_event_kind { PFI_EVENT_LIMIT = 0, PFI_EVENT_CUT = 1 } pfi_event_kind;

typedef struct pfi_event {
    char id[PFI_EVENT_ID_MAX];         /* [A-Za-z0-9._:-], not empty */
    double start_s, end_s;             /* window, Unix seconds, end > start */
    int kind;                          /* pfi_event_kind */
    double limit_w;                    /* PFI_EVENT_LIMIT: site power limit (W) */
    double cut;                        /* PFI_EVENT_CUT: fraction shed, in (0, 1) */
    double baseline_w;                 /* PFI_EVENT_CUT: the baseline the cut is relative to */
    char baseline_method[PFI_EVENT_METHOD_MAX]; /* how baseline_w was obtained, for people */
    double ramp_down_s;                /* >= 0 */
    double ramp_up_s;                  /* >= 0 */
    int priority;                      /* |priority| <= PFI_EVENT_PRIORITY_MAX, higher binds */
    int sla_yield;                     /* 1: the jobs' SLAs yield to this event's target */
    char source[PFI_EVENT_SOURCE_MAX]; /* "api", "cli", "openadr:<program>"... */
    /* An OpenADR VTN's event (serve/ven.c), kept so that its window can be checked against the
     * VTN's: the VTN's event id (as in the id: a long one cut and hashed), the interval, the
     * VTN's start of it, its randomizeStart and how much later than the VTN's start the window
     * was moved for it (0: not moved, a limit or none).  oadr_event[0] == 0: not from a VTN. */
    char oadr_event[PFI_EVENT_ID_MAX];
    int oadr_interval;
    double oadr_start_s, oadr_randomize_s, oadr_randomized_s;
    /* When its report reached the VTN (Unix seconds; 0: not yet): kept with the event, so a
     * restarted daemon does not send it again. */
    double oadr_reported_s;
    /* The level the event ramps from and restores to (the manual budget; INFINITY: none, the
     * site's maximum) as it was when its ramp began, noted then by the daemon that holds it: a
     * finished event's report judges its ramps against it, not against a budget set later.
     * 0 or NAN: not noted (its ramp has not begun, or it was stored before this was kept). */
    double ramp_level_w;
    /* When the host that holds it first stored it (Unix seconds; 0: not known, stored before
     * this was kept): the budget recorded before then was not set for it, and its report does
     * not count it as held at the least the site could. */
    double added_s;
} pfi_event;

/* The site the events apply to. */
typedef struct pfi_event_site {
    double max_w;            /* the site's maximum power (W), > 0; targets above it are refused */
    double manual_w;         /* the manual budget in force, INFINITY when none */
    double restore_step_s;   /* ramp-up step length (s), > 0 (default 60) */
    double restore_w_per_s;  /* fastest allowed restore (W/s); INFINITY: ramp_up_s alone */
    double plan_ahead_s;     /* the host plans the budget this far ahead (0 default): its caps
                              * follow a ramp down that much early */
} pfi_event_site;

/* Whether ev's ramp_level_w was noted; the site with it as the manual budget when it was (site
 * unchanged when not): what ev's report judges its ramps on. */
int pfi_event_level_noted(const pfi_event *ev);
pfi_event_site pfi_event_site_noted(const pfi_event *ev, pfi_event_site site);

/* A site with max_w and the defaults: no manual budget, 60 s steps, no rate limit. */
pfi_event_site pfi_event_site_default(double max_w);

/* A LIMIT event with the defaults (no ramps, priority 0, source "api"). */
void pfi_event_init_limit(pfi_event *ev, const char *id, double start_s, double end_s,
                          double limit_w);
/* A CUT event with the defaults; method states how baseline_w was obtained. */
void pfi_event_init_cut(pfi_event *ev, const char *id, double start_s, double end_s, double cut,
                        double baseline_w, const char *method);

/* The event's target in W (limit_w, or baseline_w * (1 - cut)). */
double pfi_event_target_w(const pfi_event *ev);

/* Checks one event against the site (site may be NULL: no maximum check).  Names the first
 * problem: end before start, a negative, NaN or infinite target, a target above the site's
 * maximum, a cut outside (0, 1), a bad id, ramp or priority. */
int pfi_event_validate(const pfi_event *ev, const pfi_event_site *site, pfi_err *err);
/* PFI_EINVAL, saying what an id is, when id is not one an event can have ([A-Za-z0-9._:-], 1 to
 * PFI_EVENT_ID_MAX - 1 characters): such an id names no event, it is a mistake. */
int pfi_event_id_check(const char *id, pfi_err *err);
int pfi_event_site_validate(const pfi_event_site *site, pfi_err *err);

/* Time the budget starts to descend (start - ramp_down_s) and the time it is fully restored
 * after the end (depends on the level it restores to, hence site). */
double pfi_event_ramp_start_s(const pfi_event *ev);
double pfi_event_restored_s(const pfi_event *ev, const pfi_event_site *site);

/* The one event's own cap at time t (ramps included); INFINITY when it does not bind at t. */
double pfi_event_cap_at(const pfi_event *ev, const pfi_event_site *site, double t);

/* The budget in force at t: the tightest of the manual budget and every event's cap (ramps
 * included).  INFINITY when nothing binds.  *binding (may be NULL) gets the index of the event
 * that binds, or -1 when the manual budget (or nothing) does. */
double pfi_event_budget_at(const pfi_event *evs, int n, const pfi_event_site *site, double t,
                           int *binding);

/* The lowest budget in force over [t0, t1] (the budget is piecewise linear, so this is exact):
 * a controller that holds an allocation from t0 to t1 plans against this. */
double pfi_event_budget_min(const pfi_event *evs, int n, const pfi_event_site *site, double t0,
                            double t1);

/* One piece of the resolved schedule: within [t0, t1) event `event` (index) is the tightest
 * among those whose window covers the piece (ramps excluded). */
typedef struct pfi_event_piece {
    double t0, t1;
    double target_w;
    int event;
} pfi_event_piece;

/* Resolves overlapping windows into disjoint pieces, sorted by time, adjacent pieces of the same
 * event merged.  Writes at most cap pieces (2n - 1 suffice) and returns how many, or -1 when cap
 * is too small. */
int pfi_event_resolve(const pfi_event *evs, int n, pfi_event_piece *out, int cap);

/* Whether a target can be met when the site cannot go below floor_w with the SLAs in force
 * (the SLA floors plus what is not controlled).  *achievable_w gets the lowest level that can
 * be met: max(target, floor).  Returns 1 when feasible. */
int pfi_event_feasible(double target_w, double floor_w, double *achievable_w);

const char *pfi_event_kind_name(int kind);
/* The index of the event named id in v[0..n-1] (the last one if several), -1 when none. */
int pfi_event_list_find(const pfi_event *v, int n, const char *id);
/* A cut that states no baseline (NAN) and changes one held in v[0..n-1] under its id, a cut
 * too, keeps the held one's baseline and its method; returns 1 when it did.  The baseline is
 * the draw before the event was first posted: measured again once the cut is in force, it is
 * the curtailed draw, and every change of the event (its priority, its end) would cut again
 * from there. */
int pfi_event_keep_baseline(pfi_event *ev, const pfi_event *v, int n);
/* A change of an event held in v[0..n-1] under ev's id, made while the held one is under way
 * (its ramp begun, its restore not over), keeps the level the held one noted (ramp_level_w):
 * noted again, it would be the budget in force at the change, not when the ramp began.
 * Returns 1 when it did; a change of a finished event (a new one under the same id) does not. */
int pfi_event_keep_level(pfi_event *ev, const pfi_event *v, int n, const pfi_event_site *site,
                         double now);
/* Whether a and b ask the same of the site: the same window, target and ramps (a change of its
 * priority, source or SLAs alone is no new revision: the report judges the same). */
int pfi_event_same_terms(const pfi_event *a, const pfi_event *b);
/* How a change of an event is kept, from the one held under its id (NULL: none) at `now` (site:
 * the site now; the held one's noted level is used for its restore). */
typedef enum pfi_event_change {
    PFI_EVENT_CHANGE_NEW,    /* none held, or the held one is restored: a new event, no history */
    PFI_EVENT_CHANGE_SAME,   /* the same terms: its history (if any) stays as it is */
    PFI_EVENT_CHANGE_REVISE, /* new terms while the held one is under way (its ramp begun, its
                              * restore not over): a revision from now, the held one kept */
    PFI_EVENT_CHANGE_AHEAD   /* new terms before the held one's ramp: a revision from now only
                              * when it already has a history (an earlier one was in force) */
} pfi_event_change;
pfi_event_change pfi_event_change_kind(const pfi_event *held, const pfi_event *ev,
                                       const pfi_event_site *site, double now);
/* Removes the event named id from v[0..*n-1], keeping the others in order; 1 when it was
 * there. */
int pfi_event_list_remove(pfi_event *v, int *n, const char *id);
/* Keeps in ids[0..n-1] only the ids also in keep[0..n_keep-1], in order; returns how many
 * remain.  A set of ids already handled stays bounded by the events still held this way. */
int pfi_event_ids_retain(char (*ids)[PFI_EVENT_ID_MAX], int n,
                         const char (*keep)[PFI_EVENT_ID_MAX], int n_keep);

#endif
