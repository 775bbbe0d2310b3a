/* SPDX-License-Identifier: Apache-2.0 */
/* runset.h: a set of runs to report on, fit or evaluate (pfi index, model, predict, evaluate):
 * runs named by id or name or every run of a store, the public measured sweeps imported on the
 * fly into an in-memory store (so nothing needs a prior import), or the simulated fleet.  It
 * lives below the CLI so a daemon or the study can load runs the same way the commands do. */
#ifndef PFI_STUDY_RUNSET_H
#define PFI_STUDY_RUNSET_H

#include "core/err.h"
#include "core/run.h"

typedef struct pfi_runset {
    pfi_run *runs; /* malloc'd */
    int n;
    char where[256]; /* "pfi.db" or "public data in DIR", for messages */
} pfi_runset;

/* db: a store path (NULL: $PFI_DB, else pfi.db); public_data: import $PFI_DATA_DIR's sweeps
 * into memory instead (db must then be NULL).  names: runs by id or exact name (n 0: all).
 * An empty selection or a missing store is PFI_ENOENT with a hint; other (NULL: none) is the
 * caller's other way to give runs, in its own terms ("pass --public"), so the hint never names
 * an option the command does not take. */
int pfi_runset_load(const char *db, int public_data, char **names, int nnames, const char *other,
                    pfi_runset *out, pfi_err *err);
/* The simulated fleet ("paper" or "small"), characterized now in virtual time (study/fleet.h);
 * names select runs by exact name (nnames 0: all). */
int pfi_runset_fleet(const char *which, int seed, char **names, int nnames, pfi_runset *out,
                     pfi_err *err);
void pfi_runset_free(pfi_runset *rs);

/* 1 when a run is a transformer (by its model family or name): the public curves the probe
 * target is stated on. */
int pfi_run_is_transformer(const pfi_run *r);

#endif
