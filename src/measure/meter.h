/* SPDX-License-Identifier: Apache-2.0 */
/* meter.h: from throughput observations to a level's tokens/s with a confidence interval.
 *
 * rate.c turns each observation (parse.h) into a rate sample over a time interval on the
 * sweep's clock: a cumulative count becomes (count - previous count) / (time between them),
 * a printed rate covers the time since the previous line (or the iteration time the line
 * states).  A count that falls is a restart of the job's counter (a new epoch, a relaunch):
 * that interval is skipped, never counted as negative.  Repeated counts (a progress bar
 * redrawn) are merged into the next interval.
 *
 * steady.c decides when a level is done: over a window of samples that all started after the
 * transient, the duration-weighted mean and a batch-means confidence interval (t distribution)
 * are computed; the level is steady when the interval is narrower than rel_ci of the mean.
 * Before that, the start of the window is moved past any transient left after the settle time
 * by MSER truncation (the start that minimises the standard error of what remains). */
#ifndef PFI_MEASURE_METER_H
#define PFI_MEASURE_METER_H

#include "core/err.h"
#include "measure/parse.h"

typedef struct pfi_rate_sample {
    double t0, t1; /* the interval on the sweep's clock */
    double rate;   /* in the meter's unit per second */
} pfi_rate_sample;

typedef struct pfi_meter {
    double scale;          /* multiplies every rate (per-GPU rates x GPUs); 1 by default */
    int unit_set;
    pfi_obs_unit unit;     /* the unit of the first observation; others are dropped */
    /* Last count seen, for differencing. */
    int have_count;
    double count, count_t, count_job_t;
    double last_arrival;   /* NAN before the first observation */
    pfi_rate_sample *s;
    int n, cap;
    long restarts, dropped;
} pfi_meter;

void pfi_meter_init(pfi_meter *m);
void pfi_meter_free(pfi_meter *m);
/* Adds an observation that arrived at time t (sweep clock).  PFI_ENOMEM only. */
int pfi_meter_add(pfi_meter *m, const pfi_obs *o, double t, pfi_err *err);
/* Forgets the samples (a new level) but keeps the counter state, so the first interval of
 * the new level straddles the change and is excluded by its t0. */
void pfi_meter_clear(pfi_meter *m);
/* Forgets the samples that ended before t (a daemon follows a level for days: the samples it no
 * longer needs), the counter state kept. */
void pfi_meter_forget_before(pfi_meter *m, double t);
/* The duration-weighted mean rate of the samples that began at or after from (tokens gained
 * over the span, for counts), read from the newest back: NAN when there is none. */
double pfi_meter_recent_rate(const pfi_meter *m, double from);

typedef struct pfi_window_stats {
    double mean, lo, hi;   /* NAN when there is not enough data */
    double t0, t1;         /* span covered by the samples used */
    int n;                 /* samples used */
    int batches;           /* batches behind the interval */
} pfi_window_stats;

/* Statistics over the samples with t0 >= from and t1 <= to.  Needs >= 3 samples for an
 * interval (lo/hi NAN below that; mean is still set when n >= 1). */
void pfi_meter_window(const pfi_meter *m, double from, double to, pfi_window_stats *out);

typedef struct pfi_steady_cfg {
    double settle_s;     /* transient after a change, always discarded (default 3 s) */
    double min_window_s; /* shortest steady window (default 5 s) */
    int min_samples;     /* fewest rate samples in it (default 5) */
    double rel_ci;       /* CI half-width / mean to call it steady (default 0.01) */
} pfi_steady_cfg;
void pfi_steady_defaults(pfi_steady_cfg *c);

/* Checks the level that began (the limit changed) at t_change, at time now.  *win_start is
 * the window's start (set it to t_change + settle_s when the level begins); it moves forward
 * past what MSER finds to be transient.  Returns 1 when steady; *st always
 * holds the current window's statistics. */
int pfi_steady_check(const pfi_meter *m, const pfi_steady_cfg *c, double now, double *win_start,
                     pfi_window_stats *st);

#endif
