/* SPDX-License-Identifier: Apache-2.0 */
/* store_internal.h: what the files of src/store/ share and nobody else needs: the connection
 * handle, the SQLite-error-to-pfi_err mapping, the schema steps, and small statement helpers.
 * It does not include store.h (the API of store.c): the plumbing (sql.c) and the migrations
 * (migrate.c) sit below the files that use them, so none of them needs the others back. */
#ifndef PFI_STORE_INTERNAL_H
#define PFI_STORE_INTERNAL_H

#include <stddef.h>

#include <sqlite3.h>

#include "core/err.h"
#include "core/run.h"

typedef struct pfi_store pfi_store; /* as in store.h */

struct pfi_store {
    sqlite3 *db;
    char *path;
    int version;    /* user_version after open */
    int readonly;
    int busy_ms;
    int in_tx;      /* a transaction is open: a batch, an import, or a level's own */
    int level;      /* a level is open: 0 no, 1 in its own transaction, 2 as a savepoint */
};

/* Applies the store's own steps (schema.c) when opening (open.c; migrate.c). */
int pfi_store_migrate(pfi_store *st, pfi_err *err);

/* ---- sql.c ---- */

/* Turns the connection's last SQLite error (rc) into a pfi_err, with what we were doing. */
int pfi_store_sqlerr(pfi_store *st, int rc, pfi_err *err, const char *doing);
/* Runs SQL without results (several statements allowed). */
int pfi_store_exec(pfi_store *st, const char *sql, pfi_err *err, const char *doing);
int pfi_store_prepare(pfi_store *st, const char *sql, sqlite3_stmt **stmt, pfi_err *err);

/* Transactions for multi-row writes (imports, levels): BEGIN IMMEDIATE so that a locked
 * database fails up front, not half way. */
int pfi_store_tx_begin(pfi_store *st, pfi_err *err);
int pfi_store_tx_commit(pfi_store *st, pfi_err *err);
void pfi_store_tx_rollback(pfi_store *st);
/* A unit of writes that is all or nothing whether or not the caller has a transaction open:
 * its own transaction, or a savepoint `name` inside the caller's.  *mode remembers which. */
int pfi_store_unit_begin(pfi_store *st, const char *name, int *mode, pfi_err *err);
/* ok: commit (release) or roll back.  Returns the commit's result when ok. */
int pfi_store_unit_end(pfi_store *st, const char *name, int mode, int ok, pfi_err *err);

/* NAN <-> NULL. */
void pfi_store_bind_real(sqlite3_stmt *s, int i, double v);
double pfi_store_col_real(sqlite3_stmt *s, int i);
void pfi_store_col_text(sqlite3_stmt *s, int i, char *dst, size_t n);

/* For the importers (store.c): writes one imported run (status "imported") with its levels,
 * replacing a run of this source and name (an earlier import) with its job, if any.  It runs
 * inside the caller's transaction. */
int pfi_store_write_imported(pfi_store *st, const pfi_run *run, const char *unit_label,
                             const char *config_json, pfi_err *err);

#endif
