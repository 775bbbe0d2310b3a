/* SPDX-License-Identifier: Apache-2.0 */
/* fleet.h: the simulated paper fleet, characterized.  Every run of the simulator's seeded fleet
 * (sim/sim.h: pfi_sim_fleet) is swept through a ladder of power limits in VIRTUAL time, and
 * what comes back is what a sweep on real GPUs records: per level the mean per-GPU power drawn,
 * tokens/s from the job's cumulative token count with a confidence interval, and the mean
 * telemetry of the job's GPUs (clock, time under the SW power cap, activities, link traffic).
 * Nothing else of the simulator is read: the runs are the training data and the test bed of the
 * predictor (core/predict.h) and the allocator.
 *
 * The study layer: uses sim/, core/ and store/. */
#ifndef PFI_STUDY_FLEET_H
#define PFI_STUDY_FLEET_H

#include <stdint.h>

#include "core/err.h"
#include "core/run.h"
#include "sim/sim.h"

#define PFI_FLEET_MAX_LEVELS 12

typedef struct pfi_fleet_opts {
    int n_levels;                          /* limits, as fractions of the default limit */
    double levels[PFI_FLEET_MAX_LEVELS];   /* first must be 1.0 (the baseline) */
    double settle_s;     /* virtual seconds discarded after each change */
    double window_s;     /* steady window measured */
    double sample_hz;    /* telemetry sampling rate in the window */
    /* 1: characterize through the measurement library's sweep (measure/measure.h: the code a
     * real sweep runs, on a virtual-time sim backend, fixed dwell = window_s, 10 Hz ticks).
     * 0 (default): read the simulated node directly in virtual time, the same quantities with
     * fewer samples: it agrees with the sweep within 0.001 of PFI30 and is about 10x faster,
     * which the study's ~190 runs need. */
    int use_sweep;
    /* pfi_fleet_build calls it before each run ("characterizing the simulated fleet", i, n)
     * and once at the end (n, n); NULL: none. */
    void (*progress)(void *ctx, const char *step, int done, int total);
    void *progress_ctx;
} pfi_fleet_opts;

/* 100, 90, ..., 40% of the default limit (floored at the device minimum), 5 s settle (the
 * firmware's time constant is 0.25 s), 20 s window at 2 Hz. */
pfi_fleet_opts pfi_fleet_defaults(void);

typedef struct pfi_fleet_run {
    pfi_run run;
    char set[16];   /* "main", "validation", "h100" */
    int match;      /* h100 runs: index of the H200 run they match; else -1 */
    int group;      /* runs of the same job configuration share it (matched pairs included) */
} pfi_fleet_run;

/* Characterizes one fleet entry (its job is node.jobs[0]). */
int pfi_fleet_characterize(const pfi_fleet_entry *e, const pfi_fleet_opts *o, pfi_run *out,
                           pfi_err *err);

/* The whole fleet: which "paper" or "small", seeded.  *out malloc'd (free()). */
int pfi_fleet_build(const char *which, uint64_t seed, const pfi_fleet_opts *o,
                    pfi_fleet_run **out, int *n, pfi_err *err);

/* 1 when two runs are of one job configuration (model, GPUs, parallel degrees, batch,
 * sequence, fine-tuning): such runs are left out together in leave-one-job-out.  An unknown
 * (empty) model matches nothing. */
int pfi_same_job_config(const pfi_job_meta *a, int na, const pfi_job_meta *b, int nb);

/* Writes characterized fleet runs into a store (one job and one run each, backend "sim",
 * tags set=, group=, match=), each run's levels in one transaction. */
typedef struct pfi_store pfi_store;
int pfi_fleet_store(pfi_store *st, const pfi_fleet_run *runs, int n, pfi_err *err);

#endif
