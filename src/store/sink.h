/* SPDX-License-Identifier: Apache-2.0 */
/* sink.h: a sweep's levels written to a store as they are measured (`pfi sweep`): the job row
 * first, then the run when the sweep begins, each level with its telemetry in one transaction
 * as it completes (store.h: a crash loses only the level in progress), and the run's status at
 * the end.
 *
 * The four callbacks have the shapes of measure's pfi_sweep_sink (measure/measure.h), ctx being
 * the pfi_store_sink, so the command plugs them in:
 *     (pfi_sweep_sink){sink, pfi_store_sink_begin, pfi_store_sink_level, pfi_store_sink_end,
 *                      pfi_store_sink_run_ref}
 * without store/ and measure/ knowing each other. */
#ifndef PFI_STORE_SINK_H
#define PFI_STORE_SINK_H

#include "core/err.h"
#include "core/run.h"
#include "core/sample.h"

/* The longest absolute store path named to the sweep's journal (measure/journal.h's
 * PFI_JOURNAL_PATH_MAX); a longer one is not named. */
#define PFI_STORE_SINK_PATH_MAX 1024

typedef struct pfi_store_sink pfi_store_sink;

/* Opens (creating) the store at db and writes the job row (pfi_store_create_job's command,
 * config_json and tags).  Before the job is launched: a locked or newer store fails first.
 * backend: the name written on the run ("sim", "nvml"). */
int pfi_store_sink_open(const char *db, const char *command, const char *config_json,
                        const char *const *tags, int ntags, const char *backend,
                        pfi_store_sink **out, pfi_err *err);
/* Closes the store (NULL: nothing). */
void pfi_store_sink_close(pfi_store_sink *s);

int pfi_store_sink_begin(void *ctx, const pfi_run *run, pfi_err *err);
/* Level idx of run, with the telemetry of every tick: rows[tick * ng + i] for GPU gpus[i]. */
int pfi_store_sink_level(void *ctx, const pfi_run *run, int idx, const pfi_sample *rows, int nt,
                         const int *gpus, int ng, pfi_err *err);
/* Records status on the run, waiting for a locked store 12 busy timeouts (the sweep is over by
 * then); an error is kept for pfi_store_sink_error.  A level that could not be stored fails
 * with a message naming it ("the level at 540 W was measured but not stored in pfi.db: ..."). */
void pfi_store_sink_end(void *ctx, const pfi_run *run, const char *status);
/* The run begin() made (0 before, or when the store's absolute path is unknown) and *db that
 * path, for the journal: pfi restore may run from another directory. */
long long pfi_store_sink_run_ref(void *ctx, const char **db);

/* The run written (0: none yet). */
long long pfi_store_sink_run_id(const pfi_store_sink *s);
/* The error of recording the run's status at the end (code PFI_OK when none). */
const pfi_err *pfi_store_sink_error(const pfi_store_sink *s);

#endif
