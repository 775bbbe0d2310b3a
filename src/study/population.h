/* SPDX-License-Identifier: Apache-2.0 */
/* population.h: the jobs of an allocation experiment (study/experiment.h): a simulated fleet,
 * a store, the public sweeps, or runs the caller holds, each run with its measured curve.  Its
 * own header so that the loaders do not depend on the experiment that uses them. */
#ifndef PFI_STUDY_POPULATION_H
#define PFI_STUDY_POPULATION_H

#include <stdint.h>

#include "core/curve.h"
#include "core/err.h"
#include "core/run.h"

typedef struct pfi_expt_pop {
    int nruns;
    const pfi_run **run;  /* per run given or loaded */
    int *group;           /* per run: its job group */
    int n;                /* jobs: the runs with a usable measured curve */
    int *run_of;          /* job -> run */
    pfi_curve *truth;     /* per job: the measured curve */
    int skipped;          /* runs left out without a usable curve */
    char where[256];      /* "simulated fleet 'paper' (seed 1)", a store, the public data */
    pfi_run *own;         /* the runs a loader read (NULL for pfi_expt_pop_runs) */
} pfi_expt_pop;

/* The simulated fleet "paper" or "small", characterized now (study/fleet.h), with its
 * configuration groups.  sources (may be NULL: all) keeps runs of these sources, e.g.
 * "perseus,zeus-plo".  Fewer than 2 jobs is an error. */
int pfi_expt_pop_fleet(const char *which, uint64_t seed, const char *sources, pfi_expt_pop *out,
                       pfi_err *err);
/* The runs of a store, or of the public sweeps (study/runset.h).  Without configuration groups,
 * runs of one model share a group.  Fewer than 2 jobs is an error. */
int pfi_expt_pop_load(const char *db, int public_data, const char *sources, pfi_expt_pop *out,
                      pfi_err *err);
/* Runs the caller holds (borrowed: they must outlive the population) with their groups.
 * Any number of jobs; pfi_expt_run refuses fewer than 2. */
int pfi_expt_pop_runs(const pfi_run *const *runs, const int *groups, int n, const char *where,
                      pfi_expt_pop *out, pfi_err *err);
/* Stores every run of the population (one job and run each, backend "sim"), so a later
 * experiment can load them with pfi_expt_pop_load. */
int pfi_expt_pop_save(const pfi_expt_pop *p, const char *path, pfi_err *err);
void pfi_expt_pop_free(pfi_expt_pop *p);
/* Whether a --source list, "perseus,zeus-plo", holds run source src (list NULL: every source):
 * the loaders' filter, for a caller that reads the population's runs, not only its jobs. */
int pfi_expt_source_wanted(const char *list, const char *src);
/* PFI_OK when the population has the two jobs with usable curves an experiment needs. */
int pfi_expt_pop_check(const pfi_expt_pop *p, pfi_err *err);

#endif
