/* SPDX-License-Identifier: Apache-2.0 */
/* event_report.h: whether a grid event was met, from the site power recorded around it.
 *
 * Samples are (time, site draw) pairs in time order; each holds until the next one, but never
 * longer than max_gap_s (a gap in the record is not counted as compliant or not: it lowers the
 * coverage).  The baseline is stated with its method: the mean draw over the hour before the
 * ramp starts, leaving out the time other events bound (pfi_baseline_walk), when samples cover
 * at least half of it, else the event's own stated baseline (a cut's), else none.
 * Pure: no I/O. */
#ifndef PFI_CORE_EVENT_REPORT_H
#define PFI_CORE_EVENT_REPORT_H

#include <stddef.h>

#include "core/err.h"
#include "core/event.h"

#define PFI_COMPLIANCE_BASELINE_S 3600.0
/* How far back of its hour a baseline may reach for the time an event bound within it. */
#define PFI_BASELINE_BACK_S 86400.0

/* A baseline: the mean draw over span_s before end_s, the site's draw without events.  Samples
 * taken while an event bound (one bound by an earlier event, the interval before it of an
 * OpenADR event, a cut posted while another is in force) are the curtailed draw: taken as the
 * baseline, shed came out about 0 and a cut compounded on a cut.  They are left out, and the
 * hour reaches back by as long as they lasted (at most PFI_BASELINE_BACK_S).  A sample holds
 * until the next, at most max_gap_s; time no sample covers counts in the span, unrecorded, as
 * the hour before a ramp always did.  Fed newest first (pfi_baseline_walk_feed), from the
 * samples in memory or a store's cursor. */
typedef struct pfi_baseline_walk {
    double end_s, span_s, max_gap_s;
    double at_s;        /* how far back the walk has come: the earliest instant counted */
    double next_t;      /* the sample fed last (INFINITY before the first) */
    double budget_s;    /* span still to walk outside events */
    double sum, covered_s; /* the draw recorded outside events, time-weighted, and its time */
    double left_out_s;  /* time events bound within the walk */
    int n, done;        /* samples counted; whether no earlier sample is needed */
} pfi_baseline_walk;

void pfi_baseline_walk_init(pfi_baseline_walk *b, double end_s, double span_s, double max_gap_s);
/* The sample at t (no later than the one fed before it), draw w (W; NAN: unknown), bound: an
 * event bound while it was taken.  Returns 1 while earlier samples are needed. */
int pfi_baseline_walk_feed(pfi_baseline_walk *b, double t, double w, int bound);
/* The mean draw it found (NAN when nothing was recorded outside events). */
double pfi_baseline_walk_mean(const pfi_baseline_walk *b);
/* How that mean was taken, in words for an event's baseline_method: whose draw (what: "node",
 * "site"), over what span, the time other events bound left out, the samples, and how little was
 * recorded when it was less than the span (a daemon up 5 s said "over the 60 min" of 6
 * samples). */
void pfi_baseline_walk_method(const pfi_baseline_walk *b, const char *what, char *buf,
                              size_t n);

typedef struct pfi_event_interval {
    double t0, t1;          /* [t0, t1), Unix seconds */
    double mean_w, max_w;   /* of the draw; NAN when no sample covers it */
    double budget_w;        /* the lowest budget in force over it (ramps included; where the
                             * site held the least it could above it, that held budget, once
                             * pfi_event_compliance_held has run) */
    double held_w;          /* the lowest budget held above the event's line (0: none), */
    double held_s;          /* over this many of its seconds (those following a change too) */
    double target_w;        /* the event's target */
    double covered_s;
} pfi_event_interval;

/* One definition of an event and the time it took effect.  An event changed while it is under
 * way (its target, window or ramps: a re-post of its id, a VTN's modification) has several, in
 * the order they took effect; each instant is judged against the one in force then. */
typedef struct pfi_event_revision {
    double from_s;  /* when it took effect (Unix seconds); the first's is not read: it is in
                     * force from the beginning */
    pfi_event ev;
} pfi_event_revision;

/* What one revision was judged on while it was in force. */
typedef struct pfi_event_span {
    double from_s, until_s;      /* in force over [from_s, until_s): -INFINITY for the first,
                                  * INFINITY for the last */
    double target_w, start_s, end_s, ramp_down_s, ramp_up_s; /* its definition */
    double window_s, covered_s;  /* its window while in force, and how much samples cover */
    double mean_w, max_excess_w, seconds_over_target;
} pfi_event_span;

typedef struct pfi_event_compliance {
    double target_w;
    double baseline_w;
    char baseline_method[PFI_EVENT_METHOD_MAX + 64]; /* the event's own, and words around it */
    double window_s, covered_s;   /* the event's window and how much of it samples cover */
    double max_excess_w;          /* largest draw above the target inside the window, >= 0 */
    double seconds_over_target;   /* inside the window */
    double energy_shed_kwh;       /* (baseline - draw) integrated over the window */
    double mean_w;                /* mean draw inside the window */
    /* Ramps: the draw against the event's own cap before the start and after the end. */
    double ramp_down_max_excess_w; /* draw above the ramp-down line, >= 0 */
    double at_target_s;           /* first time the draw was at or below target before the
                                   * start, seconds before the start (NAN: never before it) */
    double restore_max_rise_w_per_s; /* fastest rise of the draw after the end */
    double restore_max_excess_w;  /* draw above the restore steps, >= 0 */
    int ramp_ok;                  /* both excesses 0, and the first sample of the window (within
                                   * max_gap_s of the start) at or below the target */
    int n_intervals;
    pfi_event_interval *intervals; /* malloc'ed (pfi_event_compliance_free) */
    /* The budget recorded with the samples above the target in force inside the window (the
     * site held the least it could, an event the SLAs could not meet): for how long, and the
     * highest (0 and NAN: never, or no budgets given). */
    double held_above_s, held_above_w;
    /* How far into its window the host took the event (0: before it began, or not known):
     * the seconds before are judged, not counted as held (pfi_event_compliance_held). */
    double taken_late_s;
    int n_spans;                  /* one per revision: 1 for an event never changed under way */
    pfi_event_span *spans;        /* malloc'ed (pfi_event_compliance_free) */
} pfi_event_compliance;

/* Computes the compliance of ev from n samples (t[i], w[i]) over intervals of interval_s (60
 * for 1-minute intervals) covering the window, with the ramps as site makes them. */
int pfi_event_compliance_compute(const pfi_event *ev, const pfi_event_site *site,
                                 const double *t, const double *w, int n, double interval_s,
                                 double max_gap_s, pfi_event_compliance *out, pfi_err *err);
/* The same for an event changed while under way, from its n_revs revisions (>= 1, in the order
 * they took effect): each sample is judged against the revision in force at its time (window,
 * target, ramp line, restore steps), the window figures combined over the revisions' windows
 * (mean over all of them, seconds over summed, largest excess the largest), the baseline and
 * intervals over the whole from the first ramp to the last restore, and each revision's own
 * figures in out->spans.  base: the baseline's walk, done by the caller over samples that say
 * whether an event bound, ending at the first ramp (pfi_event_revised_range) with span
 * PFI_COMPLIANCE_BASELINE_S; NULL: walked here over (t, w), none of them taken as bound.  One
 * revision and no base is pfi_event_compliance_compute. */
int pfi_event_compliance_revised(const pfi_event_revision *revs, int n_revs,
                                 const pfi_event_site *site, const double *t, const double *w,
                                 int n, double interval_s, double max_gap_s,
                                 const pfi_baseline_walk *base, pfi_event_compliance *out,
                                 pfi_err *err);
/* The budget in force recorded with each sample (b[i], W; NAN: none) against the target in
 * force inside the window: out->held_above_s and held_above_w (of a computed compliance), and
 * the intervals' budget_w where the site held more than the event asked. */
void pfi_event_compliance_held(const pfi_event_revision *revs, int n_revs, const double *t,
                               const double *b, int n, double max_gap_s,
                               pfi_event_compliance *out);
/* The time the revisions judge: from the first ramp in force to the last restore. */
void pfi_event_revised_range(const pfi_event_revision *revs, int n_revs,
                             const pfi_event_site *site, double *from_s, double *to_s);
void pfi_event_compliance_free(pfi_event_compliance *c);

#endif
