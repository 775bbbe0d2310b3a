/* SPDX-License-Identifier: Apache-2.0 */
/* predict.h: a job's curve predicted from its baseline telemetry (no sweep).
 *
 * Two models, both predicting the slowdown s at the target depths r = 0.1 ... 0.5 (so the whole
 * curve, not only PFI30; a curve of pfi_default_family is then fitted through the predicted
 * points, made monotone first):
 *   ridge    regularized linear regression (GSL) on the standardized features of
 *            core/features.h, one output per depth, the penalty chosen by inner 5-fold CV;
 *   physics  a DVFS estimator: the compute share m of a step (from SM activity less a
 *            memory-bound part) slows as 1/f; the power that scales with the clock is the
 *            baseline draw less a static part (a fraction of the max limit), and it scales as
 *            f V(f)^2 with V ~ f down to a voltage floor; shedding r of the draw means the clock
 *            whose dynamic power fell by r P0.  Four global constants (compute scale, memory
 *            penalty, static fraction, voltage floor) are calibrated on the training runs.
 * pfi_model_train fits both and keeps the one with the lower cross-validated MAE of PFI30.
 * Training data: characterized runs (their measured curves are the truth).
 * Pure: no I/O, no globals (GSL is math). */
#ifndef PFI_CORE_PREDICT_H
#define PFI_CORE_PREDICT_H

#include <stddef.h>

#include "core/curve.h"
#include "core/err.h"
#include "core/features.h"
#include "core/run.h"

#define PFI_N_TDEPTHS 5
extern const double pfi_target_depths[PFI_N_TDEPTHS]; /* 0.1, 0.2, 0.3, 0.4, 0.5 */

typedef enum pfi_model_kind { PFI_MODEL_RIDGE = 0, PFI_MODEL_PHYSICS = 1 } pfi_model_kind;
#define PFI_N_PHYS 4

/* One training (or test) example: features of the baseline and the measured truth. */
typedef struct pfi_train_row {
    double x[PFI_N_FEATURES];
    double s[PFI_N_TDEPTHS]; /* measured slowdown at the target depths (on the run's fit) */
    double pfi30;            /* measured PFI30 */
    int group;               /* runs of the same job share a group (left out together) */
    int gpu_class;           /* caller's label, e.g. 0 H200, 1 H100 (for transfer tests) */
    char gpu_type[32];       /* the run's GPU type ("": unknown), recorded by the model */
} pfi_train_row;

/* From a characterized run: features of its baseline, truth from its curve (extrapolated on
 * the fit where the sweep stopped short of a depth). */
int pfi_train_row_from_run(const pfi_run *run, int group, int gpu_class, pfi_train_row *out,
                           pfi_err *err);

#define PFI_MODEL_MAX_GPU_TYPES 16

typedef struct pfi_model {
    int kind;                 /* the model selected (pfi_model_kind) */
    int family;               /* family fitted through predicted points */
    int n_train;
    /* ridge: standardization (missing -> mean), coefficients per target depth */
    double mean[PFI_N_FEATURES], scale[PFI_N_FEATURES];
    double coef[PFI_N_TDEPTHS][PFI_N_FEATURES];
    double intercept[PFI_N_TDEPTHS];
    double lambda[PFI_N_TDEPTHS];
    /* physics: compute scale, memory penalty, static fraction of max limit, voltage floor */
    double phys[PFI_N_PHYS];
    double cv_mae_ridge, cv_mae_physics; /* what the selection saw (NAN when not run) */
    /* What it was trained on (pfi_model_extrapolation): the GPU types of its rows, as the
     * catalogue names them (0: unknown: none recorded, a file written before they were, or
     * more types than fit), and each feature's range over its rows (NAN: unknown, or never
     * seen). */
    int n_gpu_types;
    char gpu_types[PFI_MODEL_MAX_GPU_TYPES][32];
    double x_min[PFI_N_FEATURES], x_max[PFI_N_FEATURES];
} pfi_model;

/* The fewest training rows pfi_model_train accepts. */
#define PFI_MODEL_MIN_TRAIN 5

typedef struct pfi_train_opts {
    int force_kind;          /* -1: select by CV; else that kind */
    int cv_folds;            /* for the selection (default 5); groups are kept together */
    unsigned long long seed;
} pfi_train_opts;
pfi_train_opts pfi_train_defaults(void);

const char *pfi_model_kind_name(int kind); /* "ridge", "physics" */
const char *pfi_phys_name(int i);

int pfi_model_train(const pfi_train_row *rows, int n, const pfi_train_opts *o, pfi_model *m,
                    pfi_err *err);
/* Slowdown at the target depths and the fitted curve from a feature vector. */
int pfi_model_predict_x(const pfi_model *m, const double *x, double *s_at, pfi_fit *fit,
                        pfi_err *err);
/* A predicted curve for a run from its baseline level only (the other levels are not read). */
int pfi_model_predict_run(const pfi_model *m, const pfi_run *run, pfi_curve *out, pfi_err *err);
/* The same from a baseline level measured live and a run header holding the device limits. */
int pfi_model_predict_level(const pfi_model *m, const pfi_run *hdr, const pfi_level *base,
                            pfi_curve *out, pfi_err *err);

/* Where a prediction leaves what the model was trained on: a GPU type it never saw, or a
 * feature outside its training range.  A model trained on H200 and H100 runs predicted an
 * A100 job's PFI30 0.26 against a true 0.76, and nothing said so.  Missing features (NAN) are
 * not reasons: pfi_features_missing counts them. */
#define PFI_EXTRAP_MAX (1 + PFI_N_FEATURES)
typedef struct pfi_extrap {
    int known; /* the model recorded its GPU types or feature ranges (else n is 0) */
    int n;
    char why[PFI_EXTRAP_MAX][200]; /* "power_of_max 0.86 outside 0.45-0.99" */
} pfi_extrap;
void pfi_model_extrapolation(const pfi_model *m, const char *gpu_type, const double *x,
                             pfi_extrap *out);
/* The same for a baseline level (features as pfi_model_predict_level reads them). */
int pfi_model_extrapolation_level(const pfi_model *m, const pfi_run *hdr, const pfi_level *base,
                                  pfi_extrap *out, pfi_err *err);
/* One line of its reasons, "; " between them ("" when none). */
void pfi_extrap_line(const pfi_extrap *x, char *buf, size_t n);

/* Evaluation of held-out predictions. */
typedef struct pfi_model_eval {
    int n;
    double mae_pfi30, r2_pfi30;
    double mae_rel70;        /* |predicted - true| relative throughput at 70% of baseline power */
    double max_err_pfi30;
    int kind_ridge, kind_physics; /* how often each model was selected (per fold) */
} pfi_model_eval;

/* Leave-one-group-out: for each group, train on the others (with selection) and predict it. */
int pfi_model_lojo(const pfi_train_row *rows, int n, const pfi_train_opts *o,
                   pfi_model_eval *out, pfi_err *err);
/* Train on train[], test on test[]. */
int pfi_model_transfer(const pfi_train_row *train, int ntrain, const pfi_train_row *test,
                       int ntest, const pfi_train_opts *o, pfi_model_eval *out, pfi_err *err);
/* The same, also giving each test row's predicted PFI30 (pred30: n, or ntest, values; NULL
 * for none): exactly the predictions the evaluation scored. */
int pfi_model_lojo_pred(const pfi_train_row *rows, int n, const pfi_train_opts *o,
                        pfi_model_eval *out, double *pred30, pfi_err *err);
int pfi_model_transfer_pred(const pfi_train_row *train, int ntrain, const pfi_train_row *test,
                            int ntest, const pfi_train_opts *o, pfi_model_eval *out,
                            double *pred30, pfi_err *err);
/* Scores predictions of PFI30 (pred30, as the two above give them) against another truth than
 * the rows' (true30[i]; NAN: row i is not scored), keeping out's model counts: a caller whose
 * truth is PFI30 as measured, not the fit the rows were trained on.  mae_rel70 is then the
 * error of T/T0 at 70% of baseline power, 0.30 x that of PFI30 (s = 0.30 x PFI30 there). */
void pfi_model_score(const double *pred30, const double *true30, int n, pfi_model_eval *out);

#endif
