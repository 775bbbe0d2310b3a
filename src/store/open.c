/* SPDX-License-Identifier: Apache-2.0 */
/* open.c: opening a database file: the connection, its settings (WAL, foreign keys, busy
 * timeout) and the migration to the schema this build writes (migrate.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "store/store_internal.h"
#include "util/fs.h"

const char *pfi_store_default_path(void)
{
    const char *p = getenv("PFI_DB");
    return (p && *p) ? p : "pfi.db";
}

int pfi_store_open(const char *path, int flags, pfi_store **out, pfi_err *err)
{
    *out = NULL;
    if (!path || !*path)
        path = pfi_store_default_path();
    int ro = (flags & PFI_STORE_READONLY) != 0;
    int memory = strcmp(path, ":memory:") == 0;
    struct stat sb;
    if (!memory && (ro || !(flags & PFI_STORE_CREATE)) && stat(path, &sb) != 0) {
        if (errno == ENOENT)
            return pfi_err_set(err, PFI_ENOENT,
                               "no database at '%s' (create one with 'pfi import' or "
                               "'pfi sweep', or pass --db FILE)",
                               path);
        return pfi_err_set(err, PFI_EIO, "database '%s': %s", path, strerror(errno));
    }
    if (!memory && pfi_input_not_dir(path, err) != PFI_OK) /* SQLite: "unable to open database file" */
        return pfi_err_prefix(err, "database: ");
    if (!ro && !memory && (flags & PFI_STORE_CREATE)) {
        int prc = pfi_parent_dir_check(path, "database", err); /* SQLite: the same */
        if (prc != PFI_OK)
            return prc;
    }
    pfi_store *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(path))) {
        free(st);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory opening '%s'", path);
    }
    st->readonly = ro;
    st->busy_ms = PFI_STORE_BUSY_MS;
    const char *busy = getenv("PFI_DB_BUSY_MS");
    if (busy && *busy) {
        char *end;
        long v = strtol(busy, &end, 10);
        if (*end || v < 0 || v > 3600000) {
            pfi_store_close(st);
            return pfi_err_set(err, PFI_EINVAL,
                               "PFI_DB_BUSY_MS='%s' is not a number of milliseconds", busy);
        }
        st->busy_ms = (int)v;
    }
    /* A new store is created 0600 (SQLite gives its -wal and -shm files the same mode): runs,
     * jobs and users are the owner's to read. */
    if (!ro && !memory && (flags & PFI_STORE_CREATE)) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0)
            close(fd);
    }
    int oflags = ro ? SQLITE_OPEN_READONLY
                    : SQLITE_OPEN_READWRITE | ((flags & PFI_STORE_CREATE) ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(path, &st->db, oflags, NULL);
    if (rc != SQLITE_OK) {
        pfi_err_set(err, rc == SQLITE_CANTOPEN ? PFI_EIO : PFI_EIO, "cannot open database '%s': %s",
                    path, st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
        pfi_store_close(st);
        return err ? err->code : PFI_EIO;
    }
    sqlite3_busy_timeout(st->db, st->busy_ms);
    /* WAL: readers (pfi runs, the daemon) never block the sweep writing its levels.
     * synchronous=FULL: a committed level survives a power cut, not only a crash. */
    const char *setup = ro ? "PRAGMA foreign_keys = ON; PRAGMA query_only = ON"
                           : "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; "
                             "PRAGMA foreign_keys = ON";
    if ((rc = pfi_store_exec(st, setup, err, "opening the database")) != PFI_OK ||
        (rc = pfi_store_migrate(st, err)) != PFI_OK) {
        /* SQLite reads a WAL file only through its -shm index, which a reader must be able to
         * create when it is missing: "attempt to write a readonly database" would say nothing. */
        int x = sqlite3_extended_errcode(st->db);
        if (ro && (x == SQLITE_READONLY_CANTINIT || x == SQLITE_READONLY_DIRECTORY))
            rc = pfi_err_set(err, PFI_EPERM, "cannot read database '%s': its WAL index "
                             "'%s-shm' is missing and you cannot create it in that folder; it "
                             "exists while a pfi that can write there has the store open",
                             path, path);
        pfi_store_close(st);
        return rc;
    }
    *out = st;
    return PFI_OK;
}

int pfi_store_check_not_own(const pfi_store *st, const char *path, pfi_err *err)
{
    static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
    struct stat out, own;
    if (!path || stat(path, &out) != 0 || strcmp(st->path, ":memory:") == 0)
        return PFI_OK;
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        char p[4200];
        if ((size_t)snprintf(p, sizeof p, "%s%s", st->path, sfx[i]) >= sizeof p)
            continue;
        if (stat(p, &own) != 0 || own.st_dev != out.st_dev || own.st_ino != out.st_ino)
            continue;
        if (i == 0)
            return pfi_err_set(err, PFI_EINVAL, "'%s' is the database '%s' itself (the same "
                               "file): writing there would replace the database; write to "
                               "another file", path, st->path);
        return pfi_err_set(err, PFI_EINVAL, "'%s' is '%s', part of the database '%s': writing "
                           "there would damage the database; write to another file", path, p,
                           st->path);
    }
    return PFI_OK;
}
