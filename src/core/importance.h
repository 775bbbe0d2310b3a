/* SPDX-License-Identifier: Apache-2.0 */
/* importance.h: which baseline features a trained predictor relies on.
 *
 * Features that move together (power headroom and power of max, SM activity and the compute
 * share derived from it) share what they tell a linear model; shuffling one of them alone
 * breaks the balance between their coefficients and charges the model for an input it never
 * sees, so single-feature importances of collinear features are inflated and meaningless.
 * Here features are standardized (z-scores over the rows; a missing value is the mean, 0),
 * grouped by correlation (single linkage: a feature joins a group when |r| >= corr with any
 * member), and each group's columns are permuted together with one permutation of the rows,
 * `repeats` times with a fixed seed.  A group's importance is the mean increase of the MAE of
 * PFI30 over the unpermuted predictions, each row predicted by the model given for it (a model
 * that never saw its job, for held-out importance).
 * Pure: no I/O, no globals. */
#ifndef PFI_CORE_IMPORTANCE_H
#define PFI_CORE_IMPORTANCE_H

#include "core/err.h"
#include "core/features.h"
#include "core/predict.h"

#define PFI_IMP_CORR 0.8    /* |r| that puts two features in one group */
#define PFI_IMP_REPEATS 20  /* permutations per group */

typedef struct pfi_importance {
    int n_groups;
    int group_of[PFI_N_FEATURES]; /* feature -> group, groups numbered by first feature */
    double mean[PFI_N_FEATURES];  /* per group: mean MAE increase over the repeats */
    double sd[PFI_N_FEATURES];    /* per group: its standard deviation over the repeats */
    double mae0;                  /* MAE of PFI30 without permutation */
    double corr;
    int repeats;
    unsigned long long seed;
} pfi_importance;

/* Groups of correlated features over rows (see above); returns the number of groups. */
int pfi_feature_groups(const pfi_train_row *rows, int n, double corr, int *group_of);

/* Grouped permutation importance; row_model[i] predicts rows[i].  A row whose pfi30 is NAN is
 * grouped and permuted with the others but not scored (PFI_EINVAL when no row is). */
int pfi_group_importance(const pfi_model *const *row_model, const pfi_train_row *rows, int n,
                         double corr, int repeats, unsigned long long seed, pfi_importance *out,
                         pfi_err *err);

#endif
