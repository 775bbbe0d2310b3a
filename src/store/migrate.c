/* SPDX-License-Identifier: Apache-2.0 */
/* migrate.c: bringing a database file up to the schema this build writes, for the store's own
 * tables (PRAGMA user_version) and for other layers' tables (table schema_layers).  Every
 * migration runs in one BEGIN IMMEDIATE transaction and re-reads the version inside it, so two
 * processes opening an old file at once cannot both apply a step. */
#include <stdio.h>
#include <string.h>

#include "store/schema.h"
#include "store/store.h"
#include "store/store_internal.h"

static int read_user_version(pfi_store *st, int *v, pfi_err *err)
{
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(st, "PRAGMA user_version", &s, err);
    if (rc != PFI_OK)
        return rc;
    rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(s);
        return pfi_store_sqlerr(st, rc, err, "reading the schema version");
    }
    *v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return PFI_OK;
}

static int newer_error(pfi_store *st, const char *what, int found, int known, pfi_err *err)
{
    return pfi_err_set(err, PFI_ESTATE,
                       "database '%s' has %s version %d, newer than this pfi understands (%d): "
                       "it was written by a newer pfi; use that version or another --db",
                       st->path, what, found, known);
}

/* A read-only open of an older file: reading it as this build's schema would fail on a missing
 * column, and upgrading it is a write, which the caller (pfi runs, another user) may not have
 * the right to do or may not expect.  An empty file (0 bytes: nothing written yet) has no
 * schema at all, which is no store rather than an old one. */
static int readonly_old_error(pfi_store *st, int v, int want, pfi_err *err)
{
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(st, "SELECT count(*) FROM sqlite_master", &s, err);
    if (rc != PFI_OK)
        return rc;
    int n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : -1;
    sqlite3_finalize(s);
    if (v == 0 && n == 0)
        return pfi_err_set(err, PFI_ENOENT, "database '%s' is empty (create one with 'pfi import' "
                           "or 'pfi sweep', or pass --db FILE)", st->path);
    return pfi_err_set(err, PFI_ESTATE,
                       "database '%s' has schema version %d, older than this pfi's %d, and a "
                       "read-only open never upgrades it: a command that writes to it (pfi "
                       "import, pfi sweep) upgrades it, after which an older pfi refuses it",
                       st->path, v, want);
}

int pfi_store_migrate(pfi_store *st, pfi_err *err)
{
    const int want = pfi_store_schema_nsteps;
    int v, rc = read_user_version(st, &v, err);
    if (rc != PFI_OK)
        return rc;
    if (v > want)
        return newer_error(st, "schema", v, want, err);
    if (v == want) {
        st->version = v;
        return PFI_OK;
    }
    if (st->readonly)
        return readonly_old_error(st, v, want, err);
    if ((rc = pfi_store_tx_begin(st, err)) != PFI_OK)
        return pfi_err_prefix(err, "upgrading the schema: ");
    if ((rc = read_user_version(st, &v, err)) != PFI_OK)
        goto fail;
    if (v > want) {
        rc = newer_error(st, "schema", v, want, err);
        goto fail;
    }
    for (int i = v; i < want; i++) {
        char doing[96];
        snprintf(doing, sizeof doing, "upgrading the schema to version %d", i + 1);
        if ((rc = pfi_store_exec(st, pfi_store_schema_steps[i].sql, err, doing)) != PFI_OK)
            goto fail;
    }
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", want);
    if ((rc = pfi_store_exec(st, sql, err, "recording the schema version")) != PFI_OK)
        goto fail;
    if ((rc = pfi_store_tx_commit(st, err)) != PFI_OK)
        goto fail;
    st->version = want;
    return PFI_OK;
fail:
    pfi_store_tx_rollback(st);
    return rc;
}

static int layer_version(pfi_store *st, const char *layer, int *version, pfi_err *err)
{
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(st, "SELECT version FROM schema_layers WHERE layer = ?", &s, err);
    if (rc != PFI_OK)
        return rc;
    sqlite3_bind_text(s, 1, layer, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *version = sqlite3_column_int(s, 0);
    else if (rc == SQLITE_DONE)
        *version = 0;
    else {
        sqlite3_finalize(s);
        return pfi_store_sqlerr(st, rc, err, "reading a layer's schema version");
    }
    sqlite3_finalize(s);
    return PFI_OK;
}

int pfi_store_layer_version(pfi_store *st, const char *layer, int *version, pfi_err *err)
{
    if (!layer || !*layer)
        return pfi_err_set(err, PFI_EINVAL, "layer name is empty");
    return layer_version(st, layer, version, err);
}

int pfi_store_migrate_layer(pfi_store *st, const char *layer, const pfi_store_step *steps,
                            int nsteps, pfi_err *err)
{
    if (!layer || !*layer || nsteps < 0 || (nsteps > 0 && !steps))
        return pfi_err_set(err, PFI_EINVAL, "migrate_layer: bad arguments");
    if (st->in_tx)
        return pfi_err_set(err, PFI_ESTATE, "migrate_layer: a transaction is already open");
    int v, rc = layer_version(st, layer, &v, err);
    if (rc != PFI_OK)
        return rc;
    if (v > nsteps) {
        char what[96];
        snprintf(what, sizeof what, "'%s' tables at", layer);
        return newer_error(st, what, v, nsteps, err);
    }
    if (v == nsteps)
        return PFI_OK;
    if (st->readonly)
        return pfi_err_set(err, PFI_ESTATE,
                           "database '%s': the '%s' tables need an upgrade (version %d to %d) "
                           "but it is open read-only",
                           st->path, layer, v, nsteps);
    if ((rc = pfi_store_tx_begin(st, err)) != PFI_OK)
        return rc;
    if ((rc = layer_version(st, layer, &v, err)) != PFI_OK)
        goto fail;
    if (v > nsteps) {
        char what[96];
        snprintf(what, sizeof what, "'%s' tables at", layer);
        rc = newer_error(st, what, v, nsteps, err);
        goto fail;
    }
    for (int i = v; i < nsteps; i++) {
        char doing[128];
        snprintf(doing, sizeof doing, "upgrading the '%s' tables to version %d", layer, i + 1);
        if ((rc = pfi_store_exec(st, steps[i].sql, err, doing)) != PFI_OK)
            goto fail;
    }
    sqlite3_stmt *s;
    if ((rc = pfi_store_prepare(st,
                                "INSERT INTO schema_layers(layer, version) VALUES (?, ?) "
                                "ON CONFLICT(layer) DO UPDATE SET version = excluded.version",
                                &s, err)) != PFI_OK)
        goto fail;
    sqlite3_bind_text(s, 1, layer, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 2, nsteps);
    int src = sqlite3_step(s);
    sqlite3_finalize(s);
    if (src != SQLITE_DONE) {
        rc = pfi_store_sqlerr(st, src, err, "recording a layer's schema version");
        goto fail;
    }
    if ((rc = pfi_store_tx_commit(st, err)) != PFI_OK)
        goto fail;
    return PFI_OK;
fail:
    pfi_store_tx_rollback(st);
    return rc;
}
