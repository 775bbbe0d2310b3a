/* SPDX-License-Identifier: Apache-2.0 */
/* jobs.h: the jobs `pfi allocate` shares a budget among (core/alloc_set.h), as they are stored:
 *   a jobs file (docs/jobs-format.md): one JSON document, an object with a "jobs" array or a
 *     bare array, each job spelled as store/codec.h reads it (jobs_file.c);
 *   the runs of a store (jobs_runs.c): each run's measured curve is its truth; with a runtime
 *     predictor (core/predict.h), each run's baseline telemetry also gives a predicted curve,
 *     read through what the store's sweeps draw under a cap (core/alloc_curve.h).
 * *s is filled from empty; on error it may hold part of the jobs: free it either way. */
#ifndef PFI_STORE_JOBS_H
#define PFI_STORE_JOBS_H

#include "core/alloc_set.h"
#include "core/predict.h"

/* Every job of the file at path (per_gpu: with their per-GPU tables), read one job at a time:
 * memory holds the jobs, not the document.  A file that cannot be opened is PFI_ENOENT or
 * PFI_EIO; bad JSON is PFI_EINVAL with its line; a bad job is PFI_EINVAL naming it (bad JSON
 * anywhere in the file is told first). */
int pfi_jobs_file_load(const char *path, int per_gpu, pfi_alloc_set *s, pfi_err *err);

/* Every run of the store at path with a usable curve (model NULL: no predictions).  A run that
 * cannot be read or has no curve is left out and told to tell (may be NULL) with the reason,
 * skipped 1; a run predicted outside what the model was trained on (core/predict.h) is kept
 * and told, skipped 0.  PFI_ENOENT when the store holds no runs, PFI_EINVAL when none is
 * usable. */
int pfi_jobs_store_load(const char *path, const pfi_model *model, pfi_alloc_set *s,
                        void (*tell)(void *ctx, const char *run, int skipped, const char *why),
                        void *ctx,
                        pfi_err *err);

#endif
