/* SPDX-License-Identifier: Apache-2.0 */
/* model_io.h: a trained predictor (core/predict.h) as a JSON file, written by `pfi model train`
 * and read by `pfi predict` and the node daemon.  The file names its format version and the
 * feature names in order, so a model trained by another pfi with other features is refused
 * rather than misread. */
#ifndef PFI_STUDY_MODEL_IO_H
#define PFI_STUDY_MODEL_IO_H

#include <jansson.h>

#include "core/err.h"
#include "core/importance.h"
#include "core/predict.h"

#define PFI_MODEL_FORMAT 1

/* trained_on: free text ("sim fleet paper seed 1: 189 runs"). */
json_t *pfi_model_to_json(const pfi_model *m, const char *trained_on);
int pfi_model_from_json(const json_t *doc, pfi_model *m, pfi_err *err);
int pfi_model_save(const pfi_model *m, const char *trained_on, const char *path, pfi_err *err);
int pfi_model_load(const char *path, pfi_model *m, pfi_err *err);

/* What a predictor relies on (core/importance.h) as JSON: method, corr_threshold, repeats,
 * seed, mae_unpermuted and groups [{features, mae_increase, sd}]. */
json_t *pfi_importance_json(const pfi_importance *im);

#endif
