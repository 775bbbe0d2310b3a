/* SPDX-License-Identifier: Apache-2.0 */
/* grid_day.h: a day of a simulated site under grid events (`pfi study --scenario grid-day`).
 *
 * A site of nodes x gpus_per_node GPUs runs jobs drawn from a population (each job with its
 * TRUE curve, and the curve pfi sees): at t = 0 jobs are placed until `occupancy` of the GPUs
 * is busy, then jobs arrive as a Poisson process keeping that occupancy on average and run for
 * exponentially distributed times (mean mean_duration_s, 10 min to 48 h); a job of up to
 * gpus_per_node GPUs takes GPUs of one node, a larger one whole nodes; a job that does not fit
 * waits (first come, first placed when room frees).  The schedule depends on the seed only, so
 * every policy runs the same jobs.
 *
 * Time moves in steps of dt_s.  At each step the budget is the lowest the events allow over the
 * step (core/event.h: ramps, planned ahead), on the sum of the running jobs' caps; each policy
 * (core/policy.h: equal and oracle on the true curves, pfi on the curves it sees) allocates it
 * when it binds, else every job runs uncapped.  A job draws min(P0, cap) per GPU (its caps
 * bind; the simulated fleet draws a little less, so this is the upper bound) and makes its TRUE
 * throughput at its cap.  Site power is the running jobs' draw (idle GPUs are in neither the
 * draw nor the budget).  A cut's baseline is the mean uncapped site draw over the hour before
 * its ramp.  Per event and policy: the compliance of core/event_report.h on 1-minute
 * intervals, and the throughput lost against the same day without events over the event's
 * ramp, window and restore (in the jobs' unit x seconds: tokens when every job has tokens/s).
 * Pure: no I/O. */
#ifndef PFI_CORE_GRID_DAY_H
#define PFI_CORE_GRID_DAY_H

#include <stdint.h>

#include "core/alloc.h"
#include "core/err.h"
#include "core/event.h"

#define PFI_GRID_DAY_MAX_EVENTS 4
/* Policies of a day: the day without events, then the three compared. */
#define PFI_GRID_DAY_NPOL 4
enum { PFI_GD_NONE = 0, PFI_GD_PFI, PFI_GD_EQUAL, PFI_GD_ORACLE };
const char *pfi_grid_day_policy_name(int p); /* "none", "pfi", "equal", "oracle" */

typedef struct pfi_grid_day_opts {
    int nodes, gpus_per_node;
    double day_s, dt_s;
    double occupancy;          /* busy share of the GPUs, (0, 1] */
    double mean_duration_s;
    uint64_t seed;
    int n_events;
    pfi_event events[PFI_GRID_DAY_MAX_EVENTS]; /* times in seconds from the day's start; a
                                                  cut's baseline is measured (given: ignored) */
} pfi_grid_day_opts;

/* 32 nodes of 8 GPUs, 24 h in 60 s steps, 85% busy, jobs of 6 h on average, seed 1, and the
 * two events of the issue: a 25% cut held 3 h from 13:00 with 10 min ramps, and a 30% cut for
 * 30 min from 19:00 with 5 min ramps. */
void pfi_grid_day_defaults(pfi_grid_day_opts *o);

typedef struct pfi_grid_day_cell {
    double max_excess_w, seconds_over_target, energy_shed_kwh;
    double tput_lost;          /* throughput x seconds lost against the day without events */
    int ramp_ok;
} pfi_grid_day_cell;

typedef struct pfi_grid_day {
    int n_steps;
    double *t;                         /* step starts, seconds */
    double *budget_w;                  /* per step; INFINITY: none */
    double *draw_w[PFI_GRID_DAY_NPOL]; /* site draw per step */
    double *tput[PFI_GRID_DAY_NPOL];   /* site throughput per step (true curves) */
    int *running;                      /* jobs running per step */
    int n_events;
    pfi_event events[PFI_GRID_DAY_MAX_EVENTS]; /* with their measured baselines */
    pfi_grid_day_cell cell[PFI_GRID_DAY_MAX_EVENTS][PFI_GRID_DAY_NPOL];
    int site_gpus, n_started, n_waited, n_infeasible_steps;
    double site_max_w;
} pfi_grid_day;

/* truth[j] and pred[j]: population job j as measured and as pfi sees it (same GPUs, P0, cap
 * range; pred may be truth for a pfi that sees the truth).  Every job's throughput unit must be
 * the same (the caller's choice: tokens/s or GPU-weighted relative). */
int pfi_grid_day_run(const pfi_alloc_job *truth, const pfi_alloc_job *pred, int n,
                     const pfi_grid_day_opts *o, pfi_grid_day *out, pfi_err *err);
void pfi_grid_day_free(pfi_grid_day *d);

#endif
