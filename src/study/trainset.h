/* SPDX-License-Identifier: Apache-2.0 */
/* trainset.h: the rows the runtime predictor (core/predict.h) is trained and evaluated on,
 * from a store's runs or from the simulated fleet characterized now.  Runs of one job
 * configuration share a group so that leave-one-job-out leaves all of them out, and each row
 * carries its GPU class so that transfer between GPU types can be tested. */
#ifndef PFI_STUDY_TRAINSET_H
#define PFI_STUDY_TRAINSET_H

#include "core/err.h"
#include "core/importance.h"
#include "core/predict.h"

typedef struct pfi_trainset {
    pfi_train_row *rows; /* malloc'd */
    /* Each row's PFI30 as measured, the truth an evaluation scores against: `pfi index`'s
     * headline (the monotone interpolation of the levels) where the sweep reaches a 30% shed,
     * NAN where it stops short.  The rows' own pfi30, read on the fit and extrapolated where
     * the sweep stops short, stays the training target.  malloc'd, n values. */
    double *head30;
    int n;
    int skipped;     /* runs left out: no_telemetry of them, the rest without a usable curve */
    int no_telemetry; /* runs whose baseline has no GPU telemetry (core/features.h) */
    int untagged;    /* rows of a store's runs with no model name: each its own job (group), so
                      * a rerun of one is not held out with it */
    char where[300]; /* for messages and the model file's trained_on */
} pfi_trainset;

/* Told each step of long work (step i of total); NULL: nothing.  util/progress.h shows it. */
typedef void (*pfi_trainset_progress)(void *ctx, const char *step, int done, int total);

/* db: the runs of that store; else the simulated fleet `fleet` ("paper", "small") with that
 * seed, also written into the store save_db when it is not NULL.  progress: told each fleet
 * run characterized (NULL: nothing).  Runs without baseline telemetry or a usable curve are
 * counted and left out; PFI_EINVAL when fewer than PFI_MODEL_MIN_TRAIN remain. */
int pfi_trainset_load(const char *db, const char *fleet, int seed, const char *save_db,
                      pfi_trainset_progress progress, void *progress_ctx, pfi_trainset *out,
                      pfi_err *err);
void pfi_trainset_free(pfi_trainset *t);

/* What `pfi model eval` reports on a training set. */
#define PFI_TRAINSET_FOLDS 5 /* folds by group of the held-out importance */

/* Every figure below is scored against the measured PFI30 (pfi_trainset.head30: runs whose
 * sweep stops short of a 30% shed are not scored), as `pfi study` scores its predictor table;
 * lojo_fit is the same leave-one-job-out scored against the fit every run trains on. */
typedef struct pfi_predictor_eval {
    pfi_model_eval lojo;      /* leave-one-job-out, the model selected in each fold */
    pfi_model_eval lojo_fit;  /* the same predictions against the rows' fitted PFI30 */
    pfi_model_eval forced[2]; /* the same with ridge, physics forced (when compare) */
    int have_transfer;        /* >= 5 runs of each of H200 and H100 */
    pfi_model_eval h200_to_h100, h100_to_h200;
    /* H200 -> H100 trained without the H200 runs of any H100 run's job (group): new jobs on a
     * new GPU (h200_to_h100 keeps them: the same jobs on a new GPU) */
    int have_transfer_heldout;
    pfi_model_eval h200_to_h100_heldout;
    pfi_model full; /* trained on every row */
    /* Grouped permutation importance on standardized features (core/importance.h), held out:
     * each row predicted by the model of its fold (PFI_TRAINSET_FOLDS by group), which never
     * saw its job; the permutations' seed is the training default's.  have_importance = 0
     * when a fold could not be trained (too few rows). */
    pfi_importance importance;
    int have_importance;
    /* The reference a predictor must beat: every scored job given their mean PFI30. */
    double mean_pfi30, ref_mae_pfi30;
} pfi_predictor_eval;
/* progress: told each stage done ("evaluating the predictor", i, stages); NULL: nothing. */
int pfi_predictor_evaluate(const pfi_trainset *t, int compare, pfi_trainset_progress progress,
                           void *progress_ctx, pfi_predictor_eval *out, pfi_err *err);

#endif
