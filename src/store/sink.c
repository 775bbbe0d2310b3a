/* SPDX-License-Identifier: Apache-2.0 */
/* sink.c: a sweep's levels into a store as they are measured (sink.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sink.h"
#include "store/store.h"
#include "store/store_internal.h"

#define LEVEL_LOST "the level at %.0f W was measured but not stored in %s: "
/* How many busy timeouts the run's final status may wait for a lock (60 s by default). */
#define END_WAIT_TIMEOUTS 12

struct pfi_store_sink {
    pfi_store *st;
    long long job_id, run_id;
    const char *backend;
    char db[PFI_STORE_SINK_PATH_MAX]; /* absolute; "" when unknown or too long */
    pfi_err err;                      /* recording the status at the end */
};

int pfi_store_sink_open(const char *db, const char *command, const char *config_json,
                        const char *const *tags, int ntags, const char *backend,
                        pfi_store_sink **out, pfi_err *err)
{
    *out = NULL;
    pfi_store_sink *s = calloc(1, sizeof *s);
    if (!s)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    int rc = pfi_store_open(db, PFI_STORE_CREATE, &s->st, err);
    if (rc == PFI_OK)
        rc = pfi_store_create_job(s->st, command, config_json, tags, ntags, &s->job_id, err);
    if (rc != PFI_OK) {
        pfi_store_sink_close(s);
        return rc;
    }
    s->backend = backend;
    char *abs_db = db ? realpath(db, NULL) : NULL;
    /* Without an absolute path the journal names no run: a wrong store is worse than none. */
    if (abs_db && strlen(abs_db) < sizeof s->db)
        snprintf(s->db, sizeof s->db, "%s", abs_db);
    free(abs_db);
    *out = s;
    return PFI_OK;
}

void pfi_store_sink_close(pfi_store_sink *s)
{
    if (!s)
        return;
    pfi_store_close(s->st);
    free(s);
}

long long pfi_store_sink_run_ref(void *ctx, const char **db)
{
    pfi_store_sink *s = ctx;
    *db = s->db;
    return s->db[0] ? s->run_id : 0;
}

int pfi_store_sink_begin(void *ctx, const pfi_run *run, pfi_err *err)
{
    pfi_store_sink *s = ctx;
    return pfi_store_create_run(s->st, s->job_id, run, s->backend, &s->run_id, err);
}

int pfi_store_sink_level(void *ctx, const pfi_run *run, int idx, const pfi_sample *rows, int nt,
                         const int *gpus, int ng, pfi_err *err)
{
    pfi_store_sink *s = ctx;
    /* The unit is known only once the first level was measured (a log may give samples). */
    if (idx == 0 && pfi_store_set_run_unit(s->st, s->run_id, run->unit, err) != PFI_OK)
        return pfi_err_prefix(err, LEVEL_LOST, run->levels[idx].cap_w, pfi_store_path(s->st));
    pfi_sample *col = malloc((size_t)(nt ? nt : 1) * sizeof *col);
    if (!col)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    long long level_id;
    int rc = pfi_store_level_begin(s->st, err);
    if (rc == PFI_OK)
        rc = pfi_store_add_level(s->st, s->run_id, &run->levels[idx], &level_id, err);
    for (int g = 0; rc == PFI_OK && g < ng; g++) {
        for (int t = 0; t < nt; t++)
            col[t] = rows[(size_t)t * (size_t)ng + (size_t)g];
        rc = pfi_store_add_samples(s->st, level_id, gpus[g], col, nt, 1.0, err);
    }
    if (rc == PFI_OK)
        rc = pfi_store_level_commit(s->st, err);
    else
        pfi_store_level_abort(s->st);
    free(col);
    /* The sweep stops here and says why: which level is missing from the store. */
    if (rc != PFI_OK && rc != PFI_ENOMEM)
        pfi_err_prefix(err, LEVEL_LOST, run->levels[idx].cap_w, pfi_store_path(s->st));
    return rc;
}

void pfi_store_sink_end(void *ctx, const pfi_run *run, const char *status)
{
    pfi_store_sink *s = ctx;
    if (s->run_id <= 0)
        return;
    int rc = pfi_store_finish_run(s->st, s->run_id, status, &s->err);
    /* A writer that held the lock past the busy timeout (often the very one that failed the
     * last level) left the run 'running' for good.  The sweep is over, its limits restored and
     * its job stopped, so waiting longer costs only time, while a run shown as running long
     * after it ended misleads every later reader. */
    if (rc == PFI_EBUSY && s->st->busy_ms > 0) {
        int busy = s->st->busy_ms;
        pfi_err_clear(&s->err);
        pfi_store_set_busy_timeout(s->st, busy * END_WAIT_TIMEOUTS);
        rc = pfi_store_finish_run(s->st, s->run_id, status, &s->err);
        pfi_store_set_busy_timeout(s->st, busy);
    }
    if (rc != PFI_OK)
        pfi_err_prefix(&s->err, "the run's status '%s' was not recorded in %s (run %lld stays "
                       "'running' there): ", status, pfi_store_path(s->st), s->run_id);
}

long long pfi_store_sink_run_id(const pfi_store_sink *s)
{
    return s ? s->run_id : 0;
}

const pfi_err *pfi_store_sink_error(const pfi_store_sink *s)
{
    return &s->err;
}
