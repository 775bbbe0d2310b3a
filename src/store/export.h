/* SPDX-License-Identifier: Apache-2.0 */
/* export.h: runs as one flat table, one row per level, for pandas and spreadsheets.  Units are
 * in the column names (cap_w, power_w, tokens_per_s...); a value the run does not have is an
 * empty CSV field or a JSON null, never a zero. */
#ifndef PFI_STORE_EXPORT_H
#define PFI_STORE_EXPORT_H

#include <stdio.h>

#include <jansson.h>

#include "store/store.h"

enum pfi_export_format { PFI_EXPORT_CSV = 0, PFI_EXPORT_JSON = 1 };

/* The column names, in order, NULL-terminated. */
extern const char *const pfi_export_columns[];

/* The level's own columns (cap_w ... n_samples), without the run's identity: what
 * `pfi runs show --json` lists under a run.  NULL when a text is not UTF-8 (or out of memory). */
json_t *pfi_export_level_fields(const pfi_run *run, const pfi_run_summary *sum, int level);
/* Sets a level's telemetry columns (sm_clock_mhz ... n_samples) on o: shared with what
 * `pfi sweep --json` prints per level, so the two name them alike. */
void pfi_export_level_telemetry(json_t *o, const pfi_level *l);
/* 1 when a stored run's backend label says its GPUs were simulated ("sim...", "nvml-sim",
 * "... (simulated GPUs, ...)"). */
int pfi_backend_is_simulated(const char *backend);
/* One level of a run as an object with every column (JSON null for missing values); NULL when a
 * text is not UTF-8 (jansson refuses it) or memory runs out, never an object missing a key. */
json_t *pfi_export_level_json(const pfi_run *run, const pfi_run_summary *sum, int level);

/* Writes the levels of the runs ids[0..n) (n == 0: every run) to out: CSV with a header line,
 * or a JSON array of row objects (pandas.read_json reads either). */
int pfi_store_export(pfi_store *st, const long long *ids, int n, int format, FILE *out,
                     pfi_err *err);

#endif
