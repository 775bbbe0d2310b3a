/* SPDX-License-Identifier: Apache-2.0 */
/* sql.c: the SQLite plumbing every store file shares: errors turned into pfi_err, statements,
 * transactions and savepoints, NAN <-> NULL.  Apart from opening (store.c) and migrating
 * (migrate.c), so that both build on it without needing each other. */
#include <math.h>
#include <stdio.h>

#include "store/store_internal.h"
#include "util/text.h"

int pfi_store_sqlerr(pfi_store *st, int rc, pfi_err *err, const char *doing)
{
    const char *msg = st && st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc);
    const char *path = st && st->path ? st->path : "?";
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return pfi_err_set(err, PFI_EBUSY,
                           "%s: database '%s' is locked: another process is writing to it "
                           "(waited %d ms); try again when it is done",
                           doing, path, st ? st->busy_ms : 0);
    case SQLITE_NOTADB:
        return pfi_err_set(err, PFI_EINVAL, "%s: '%s' is not a pfi database (%s)", doing, path,
                           msg);
    case SQLITE_READONLY:
        return pfi_err_set(err, PFI_EPERM, "%s: database '%s' is read-only (%s)", doing, path,
                           msg);
    case SQLITE_CONSTRAINT:
        return pfi_err_set(err, PFI_EINVAL, "%s: database '%s' refused the data (%s)", doing,
                           path, msg);
    case SQLITE_NOMEM:
        return pfi_err_set(err, PFI_ENOMEM, "%s: out of memory", doing);
    default:
        return pfi_err_set(err, PFI_EIO, "%s: database '%s': %s", doing, path, msg);
    }
}

int pfi_store_exec(pfi_store *st, const char *sql, pfi_err *err, const char *doing)
{
    int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? PFI_OK : pfi_store_sqlerr(st, rc, err, doing);
}

int pfi_store_prepare(pfi_store *st, const char *sql, sqlite3_stmt **stmt, pfi_err *err)
{
    int rc = sqlite3_prepare_v2(st->db, sql, -1, stmt, NULL);
    if (rc != SQLITE_OK) {
        *stmt = NULL;
        return pfi_store_sqlerr(st, rc, err, "preparing a query");
    }
    return PFI_OK;
}

int pfi_store_tx_begin(pfi_store *st, pfi_err *err)
{
    if (st->in_tx)
        return pfi_err_set(err, PFI_ESTATE, "a store transaction is already open");
    if (st->readonly)
        return pfi_err_set(err, PFI_EPERM, "database '%s' is open read-only", st->path);
    int rc = pfi_store_exec(st, "BEGIN IMMEDIATE", err, "starting a transaction");
    if (rc == PFI_OK)
        st->in_tx = 1;
    return rc;
}

int pfi_store_tx_commit(pfi_store *st, pfi_err *err)
{
    if (!st->in_tx)
        return pfi_err_set(err, PFI_ESTATE, "no store transaction is open");
    int rc = pfi_store_exec(st, "COMMIT", err, "committing");
    if (rc == PFI_OK)
        st->in_tx = 0;
    return rc;
}

void pfi_store_tx_rollback(pfi_store *st)
{
    if (!st || !st->in_tx)
        return;
    /* After some errors SQLite has already rolled back; then this fails harmlessly. */
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    st->in_tx = 0;
    st->level = 0;
}

int pfi_store_unit_begin(pfi_store *st, const char *name, int *mode, pfi_err *err)
{
    if (!st->in_tx) {
        *mode = 1;
        return pfi_store_tx_begin(st, err);
    }
    char sql[96];
    snprintf(sql, sizeof sql, "SAVEPOINT %s", name);
    *mode = 2;
    return pfi_store_exec(st, sql, err, "starting a savepoint");
}

int pfi_store_unit_end(pfi_store *st, const char *name, int mode, int ok, pfi_err *err)
{
    char sql[128];
    if (mode == 1) {
        if (ok)
            return pfi_store_tx_commit(st, err);
        pfi_store_tx_rollback(st);
        return PFI_OK;
    }
    if (ok) {
        snprintf(sql, sizeof sql, "RELEASE %s", name);
        return pfi_store_exec(st, sql, err, "committing");
    }
    snprintf(sql, sizeof sql, "ROLLBACK TO %s; RELEASE %s", name, name);
    sqlite3_exec(st->db, sql, NULL, NULL, NULL);
    return PFI_OK;
}

void pfi_store_bind_real(sqlite3_stmt *s, int i, double v)
{
    if (isfinite(v))
        sqlite3_bind_double(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

double pfi_store_col_real(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

void pfi_store_col_text(sqlite3_stmt *s, int i, char *dst, size_t n)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    snprintf(dst, n, "%s", t ? (const char *)t : "");
    /* A store written before names were checked may hold terminal escapes or bytes that are not
     * UTF-8 (and snprintf may cut a sequence): every reader shows them as '?'. */
    pfi_text_make_printable(dst);
}
