/* SPDX-License-Identifier: Apache-2.0 */
/* audit.c: the node daemon's tables and every statement on them (audit.h). */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/audit.h"
#include "store/store.h"
#include "store/store_internal.h"

struct pfi_audit {
    pthread_mutex_t mu;
    pfi_store *st;
    sqlite3 *db;
};

static const pfi_store_step steps[] = {
    {"CREATE TABLE serve_decisions ("
     " id INTEGER PRIMARY KEY, t TEXT NOT NULL, reason TEXT NOT NULL, budget_w REAL,"
     " mode TEXT NOT NULL, sum_before_w REAL, sum_after_w REAL, peak_w REAL,"
     " n_changed INTEGER, n_failed INTEGER, n_held INTEGER, n_mismatch INTEGER, apply_ms REAL);"
     "CREATE TABLE serve_decision_jobs ("
     " decision_id INTEGER NOT NULL REFERENCES serve_decisions(id) ON DELETE CASCADE,"
     " job TEXT NOT NULL, n_gpus INTEGER, cap_w REAL, predicted_tps REAL, observed_tps REAL,"
     " observed_t TEXT, pfi30 REAL, sla REAL, weight REAL, curve TEXT);"
     "CREATE INDEX serve_decision_jobs_job ON serve_decision_jobs(job, decision_id);"
     "CREATE TABLE serve_decision_gpus ("
     " decision_id INTEGER NOT NULL REFERENCES serve_decisions(id) ON DELETE CASCADE,"
     " gpu INTEGER NOT NULL, before_w REAL, target_w REAL, limit_w REAL, enforced_w REAL,"
     " held INTEGER, error TEXT);"
     "CREATE TABLE serve_events (id INTEGER PRIMARY KEY, t TEXT NOT NULL, kind TEXT NOT NULL,"
     " message TEXT NOT NULL);"
     "CREATE TABLE serve_jobs (id TEXT PRIMARY KEY, spec TEXT NOT NULL, seq INTEGER NOT NULL);"
     "CREATE TABLE serve_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);"},
};

static void iso_utc(double wall, char *buf, size_t size)
{
    time_t s = (time_t)wall;
    struct tm tm;
    gmtime_r(&s, &tm);
    int ms = (int)((wall - (double)s) * 1000);
    char head[32];
    strftime(head, sizeof head, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, size, "%s.%03dZ", head, ms < 0 ? 0 : ms > 999 ? 999 : ms);
}

int pfi_audit_open(const char *path, pfi_audit **out, pfi_err *err)
{
    *out = NULL;
    pfi_audit *a = calloc(1, sizeof *a);
    if (!a)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    int rc = pfi_store_open(path, PFI_STORE_CREATE, &a->st, err);
    if (rc == PFI_OK)
        rc = pfi_store_migrate_layer(a->st, "serve", steps, (int)(sizeof steps / sizeof steps[0]),
                                     err);
    if (rc != PFI_OK) {
        pfi_store_close(a->st);
        free(a);
        return rc;
    }
    a->db = a->st->db;
    sqlite3_exec(a->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
    pthread_mutex_init(&a->mu, NULL);
    *out = a;
    return PFI_OK;
}

void pfi_audit_close(pfi_audit *a)
{
    if (!a)
        return;
    pfi_store_close(a->st);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

/* One statement, its parameters bound in order by types: 's' text (NULL binds NULL), 'd' a
 * real (NAN binds NULL).  PFI_EIO when it could not be run. */
static int exec_sql(pfi_audit *a, const char *sql, const char *types, ...)
{
    if (!a)
        return PFI_OK;
    va_list ap;
    va_start(ap, types);
    pthread_mutex_lock(&a->mu);
    sqlite3_stmt *s;
    int rc = PFI_EIO;
    if (sqlite3_prepare_v2(a->db, sql, -1, &s, NULL) == SQLITE_OK) {
        for (int i = 0; types[i]; i++) {
            if (types[i] == 'd') {
                pfi_store_bind_real(s, i + 1, va_arg(ap, double));
                continue;
            }
            const char *t = va_arg(ap, const char *);
            if (t)
                sqlite3_bind_text(s, i + 1, t, -1, SQLITE_TRANSIENT);
            else
                sqlite3_bind_null(s, i + 1);
        }
        if (sqlite3_step(s) == SQLITE_DONE)
            rc = PFI_OK;
        sqlite3_finalize(s);
    }
    pthread_mutex_unlock(&a->mu);
    va_end(ap);
    return rc;
}

int pfi_audit_event(pfi_audit *a, double wall, const char *kind, const char *msg)
{
    char t[40];
    iso_utc(wall, t, sizeof t);
    return exec_sql(a, "INSERT INTO serve_events(t, kind, message) VALUES(?,?,?)", "sss", t,
                    kind, msg);
}

long long pfi_audit_decision_add(pfi_audit *a, const pfi_audit_decision *d)
{
    if (!a)
        return 0;
    char t[40];
    iso_utc(d->wall, t, sizeof t);
    long long id = 0;
    pthread_mutex_lock(&a->mu);
    sqlite3_exec(a->db, "BEGIN", NULL, NULL, NULL);
    sqlite3_stmt *s = NULL;
    int ok = sqlite3_prepare_v2(a->db,
                                "INSERT INTO serve_decisions(t, reason, budget_w, mode, "
                                "sum_before_w, sum_after_w, peak_w, n_changed, n_failed, n_held, "
                                "n_mismatch, apply_ms) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
                                -1, &s, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_text(s, 1, t, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 2, d->reason, -1, SQLITE_TRANSIENT);
        pfi_store_bind_real(s, 3, d->budget_w);
        sqlite3_bind_text(s, 4, d->mode, -1, SQLITE_TRANSIENT);
        pfi_store_bind_real(s, 5, d->sum_before_w);
        pfi_store_bind_real(s, 6, d->sum_after_w);
        pfi_store_bind_real(s, 7, d->peak_w);
        sqlite3_bind_int(s, 8, d->n_changed);
        sqlite3_bind_int(s, 9, d->n_failed);
        sqlite3_bind_int(s, 10, d->n_held);
        sqlite3_bind_int(s, 11, d->n_mismatch);
        pfi_store_bind_real(s, 12, d->apply_ms);
        ok = sqlite3_step(s) == SQLITE_DONE;
        id = sqlite3_last_insert_rowid(a->db);
    }
    sqlite3_finalize(s);
    s = NULL;
    if (ok && sqlite3_prepare_v2(a->db,
                                 "INSERT INTO serve_decision_jobs(decision_id, job, n_gpus, "
                                 "cap_w, predicted_tps, pfi30, sla, weight, curve) "
                                 "VALUES(?,?,?,?,?,?,?,?,?)",
                                 -1, &s, NULL) == SQLITE_OK) {
        for (int j = 0; j < d->n_jobs && ok; j++) {
            const pfi_audit_job *jb = &d->jobs[j];
            sqlite3_reset(s);
            sqlite3_bind_int64(s, 1, id);
            sqlite3_bind_text(s, 2, jb->id, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int(s, 3, jb->n_gpus);
            pfi_store_bind_real(s, 4, jb->cap_w);
            pfi_store_bind_real(s, 5, jb->predicted_tps);
            pfi_store_bind_real(s, 6, jb->pfi30);
            pfi_store_bind_real(s, 7, jb->sla);
            pfi_store_bind_real(s, 8, jb->weight);
            sqlite3_bind_text(s, 9, jb->curve, -1, SQLITE_TRANSIENT);
            ok = sqlite3_step(s) == SQLITE_DONE;
        }
    }
    sqlite3_finalize(s);
    s = NULL;
    if (ok && sqlite3_prepare_v2(a->db,
                                 "INSERT INTO serve_decision_gpus(decision_id, gpu, before_w, "
                                 "target_w, limit_w, enforced_w, held, error) "
                                 "VALUES(?,?,?,?,?,?,?,?)",
                                 -1, &s, NULL) == SQLITE_OK) {
        for (int i = 0; i < d->n_gpus && ok; i++) {
            const pfi_audit_gpu *c = &d->gpus[i];
            sqlite3_reset(s);
            sqlite3_bind_int64(s, 1, id);
            sqlite3_bind_int(s, 2, c->gpu);
            pfi_store_bind_real(s, 3, c->before_w);
            pfi_store_bind_real(s, 4, c->target_w);
            pfi_store_bind_real(s, 5, c->limit_w);
            pfi_store_bind_real(s, 6, c->enforced_w);
            sqlite3_bind_int(s, 7, c->held);
            if (c->error && c->error[0])
                sqlite3_bind_text(s, 8, c->error, -1, SQLITE_TRANSIENT);
            else
                sqlite3_bind_null(s, 8);
            ok = sqlite3_step(s) == SQLITE_DONE;
        }
    }
    sqlite3_finalize(s);
    sqlite3_exec(a->db, ok ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    pthread_mutex_unlock(&a->mu);
    return ok ? id : 0;
}

int pfi_audit_observed(pfi_audit *a, double wall, const char *job, double tps)
{
    char t[40];
    iso_utc(wall, t, sizeof t);
    return exec_sql(a,
                    "UPDATE serve_decision_jobs SET observed_tps = ?, observed_t = ? "
                    "WHERE job = ? AND decision_id = (SELECT max(decision_id) FROM "
                    "serve_decision_jobs WHERE job = ?)",
                    "dsss", tps, t, job, job);
}

int pfi_audit_save_job(pfi_audit *a, const char *id, const char *spec_json)
{
    return exec_sql(a,
                    "INSERT OR REPLACE INTO serve_jobs(id, spec, seq) VALUES(?, ?, "
                    "(SELECT coalesce(max(seq), 0) + 1 FROM serve_jobs))",
                    "ss", id, spec_json);
}

int pfi_audit_delete_job(pfi_audit *a, const char *id)
{
    return exec_sql(a, "DELETE FROM serve_jobs WHERE id = ?", "s", id);
}

int pfi_audit_load_jobs(pfi_audit *a, void (*fn)(void *ctx, const char *id, const char *spec),
                        void *ctx, pfi_err *err)
{
    if (!a)
        return PFI_OK;
    pthread_mutex_lock(&a->mu);
    sqlite3_stmt *s;
    int rc = PFI_OK;
    if (sqlite3_prepare_v2(a->db, "SELECT id, spec FROM serve_jobs ORDER BY seq", -1, &s,
                           NULL) != SQLITE_OK) {
        rc = pfi_err_set(err, PFI_EIO, "reading saved jobs: %s", sqlite3_errmsg(a->db));
        pthread_mutex_unlock(&a->mu);
        return rc;
    }
    /* Copied out first: fn may write to the database, which needs the lock. */
    int cap = 16, n = 0;
    char **rows = malloc(sizeof *rows * 2 * (size_t)cap);
    if (!rows)
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory reading saved jobs");
    while (rows && sqlite3_step(s) == SQLITE_ROW) {
        if (n == cap) {
            char **r2 = realloc(rows, sizeof *rows * 4 * (size_t)cap);
            if (!r2) {
                rc = pfi_err_set(err, PFI_ENOMEM, "out of memory after %d saved jobs", n);
                break;
            }
            cap *= 2;
            rows = r2;
        }
        rows[2 * n] = strdup((const char *)sqlite3_column_text(s, 0));
        rows[2 * n + 1] = strdup((const char *)sqlite3_column_text(s, 1));
        n++;
    }
    sqlite3_finalize(s);
    pthread_mutex_unlock(&a->mu);
    for (int i = 0; i < n; i++) {
        if (rows[2 * i] && rows[2 * i + 1])
            fn(ctx, rows[2 * i], rows[2 * i + 1]);
        else
            rc = pfi_err_set(err, PFI_ENOMEM, "out of memory reading saved jobs");
        free(rows[2 * i]);
        free(rows[2 * i + 1]);
    }
    free(rows);
    return rc;
}

int pfi_audit_set_state(pfi_audit *a, const char *key, const char *value)
{
    return exec_sql(a, "INSERT OR REPLACE INTO serve_state(key, value) VALUES(?, ?)", "ss", key,
                    value);
}

int pfi_audit_delete_state(pfi_audit *a, const char *key)
{
    return exec_sql(a, "DELETE FROM serve_state WHERE key = ?", "s", key);
}

int pfi_audit_delete_states(pfi_audit *a, const char *prefix, const char *value)
{
    /* substr, not LIKE: a prefix holding '%' or '_' matches itself only */
    return exec_sql(a, "DELETE FROM serve_state WHERE substr(key, 1, length(?1)) = ?1 AND "
                       "value = ?2", "ss", prefix, value);
}

int pfi_audit_get_state(pfi_audit *a, const char *key, char *value, size_t size)
{
    if (!a)
        return PFI_ENOENT;
    int rc = PFI_ENOENT;
    pthread_mutex_lock(&a->mu);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(a->db, "SELECT value FROM serve_state WHERE key = ?", -1, &s, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(s, 1, key, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(s) == SQLITE_ROW) {
            snprintf(value, size, "%s", (const char *)sqlite3_column_text(s, 0));
            rc = PFI_OK;
        }
        sqlite3_finalize(s);
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

static json_t *col_json(sqlite3_stmt *s, int i)
{
    switch (sqlite3_column_type(s, i)) {
    case SQLITE_INTEGER:
        return json_integer(sqlite3_column_int64(s, i));
    case SQLITE_FLOAT:
        return json_real(sqlite3_column_double(s, i));
    case SQLITE_TEXT:
        return json_string((const char *)sqlite3_column_text(s, i));
    default:
        return json_null();
    }
}

/* Rows of a statement as objects named by its columns. */
static json_t *rows_json(sqlite3_stmt *s)
{
    json_t *arr = json_array();
    while (sqlite3_step(s) == SQLITE_ROW) {
        json_t *o = json_object();
        for (int i = 0; i < sqlite3_column_count(s); i++)
            json_object_set_new(o, sqlite3_column_name(s, i), col_json(s, i));
        json_array_append_new(arr, o);
    }
    return arr;
}

json_t *pfi_audit_decisions(pfi_audit *a, int limit, pfi_err *err)
{
    if (!a)
        return json_pack("{s:[]}", "decisions");
    pthread_mutex_lock(&a->mu);
    sqlite3_stmt *d = NULL, *j = NULL;
    json_t *out = NULL;
    if (sqlite3_prepare_v2(a->db,
                           "SELECT id, t, reason, budget_w, mode, sum_before_w, sum_after_w, "
                           "peak_w, n_changed, n_failed, n_held, n_mismatch, apply_ms "
                           "FROM serve_decisions ORDER BY id DESC LIMIT ?",
                           -1, &d, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(a->db,
                           "SELECT job, n_gpus, cap_w, predicted_tps, observed_tps, observed_t, "
                           "pfi30, sla, weight, curve FROM serve_decision_jobs "
                           "WHERE decision_id = ? ORDER BY rowid",
                           -1, &j, NULL) != SQLITE_OK) {
        pfi_err_set(err, PFI_EIO, "audit log: %s", sqlite3_errmsg(a->db));
        goto out;
    }
    sqlite3_bind_int(d, 1, limit);
    json_t *arr = rows_json(d);
    size_t k;
    json_t *o;
    json_array_foreach(arr, k, o)
    {
        sqlite3_reset(j);
        sqlite3_bind_int64(j, 1, json_integer_value(json_object_get(o, "id")));
        json_object_set_new(o, "jobs", rows_json(j));
    }
    out = json_pack("{s:o}", "decisions", arr);
out:
    sqlite3_finalize(d);
    sqlite3_finalize(j);
    pthread_mutex_unlock(&a->mu);
    return out;
}
