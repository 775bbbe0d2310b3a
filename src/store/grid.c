/* SPDX-License-Identifier: Apache-2.0 */
/* grid.c: the "grid" layer's tables and every statement on them (grid.h). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/grid.h"
#include "store/store.h"
#include "store/store_internal.h"

struct pfi_grid_store {
    pthread_mutex_t mu;
    pfi_store *st;  /* events: every commit synced (the store's default) */
    pfi_store *pw;  /* power samples: synchronous=NORMAL, a row a second is not worth a sync */
};

static const pfi_store_step steps[] = {
    {"CREATE TABLE grid_events ("
     " id TEXT PRIMARY KEY, start_s REAL NOT NULL, end_s REAL NOT NULL, kind TEXT NOT NULL,"
     " limit_w REAL, cut REAL, baseline_w REAL, baseline_method TEXT NOT NULL,"
     " ramp_down_s REAL NOT NULL, ramp_up_s REAL NOT NULL, priority INTEGER NOT NULL,"
     " source TEXT NOT NULL, sla_yield INTEGER NOT NULL DEFAULT 0);"
     "CREATE TABLE grid_power (t REAL NOT NULL, site_w REAL, budget_w REAL, event TEXT);"
     "CREATE INDEX grid_power_t ON grid_power(t);"},
    /* An OpenADR event's VTN start and randomizeStart offset, for its audit (core/event.h). */
    {"ALTER TABLE grid_events ADD COLUMN oadr_event TEXT NOT NULL DEFAULT '';"
     "ALTER TABLE grid_events ADD COLUMN oadr_interval INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE grid_events ADD COLUMN oadr_start_s REAL;"
     "ALTER TABLE grid_events ADD COLUMN oadr_randomize_s REAL NOT NULL DEFAULT 0;"
     "ALTER TABLE grid_events ADD COLUMN oadr_randomized_s REAL NOT NULL DEFAULT 0;"},
    /* When its report reached the VTN: a restart sent every report of the last hour again. */
    {"ALTER TABLE grid_events ADD COLUMN oadr_reported_s REAL NOT NULL DEFAULT 0;"},
    /* The site controller's own state (its budget): a restart forgot the budget set through
     * the API, and nothing was re-planned after it. */
    {"CREATE TABLE grid_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);"},
    /* The level an event ramps from and restores to, noted when its ramp began: a finished
     * event's report took the manual budget in force when it was asked for, one set later. */
    {"ALTER TABLE grid_events ADD COLUMN level_noted INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE grid_events ADD COLUMN level_w REAL;"},
    /* Each definition of an event changed while under way, from when it took effect (from_s;
     * NULL: the first): a report judged the whole window against the last one. */
    {"CREATE TABLE grid_event_revisions ("
     " id TEXT NOT NULL, seq INTEGER NOT NULL, from_s REAL, start_s REAL NOT NULL,"
     " end_s REAL NOT NULL, kind TEXT NOT NULL, limit_w REAL, cut REAL, baseline_w REAL,"
     " ramp_down_s REAL NOT NULL, ramp_up_s REAL NOT NULL, priority INTEGER NOT NULL,"
     " sla_yield INTEGER NOT NULL, PRIMARY KEY (id, seq));"},
    /* When a finished event was let go (NULL: held): kept as history, its report with it (a
     * VTN's event was deleted an hour after its restore, its report gone with it). */
    {"ALTER TABLE grid_events ADD COLUMN let_go_s REAL;"},
    /* When the host first stored the event (NULL: before this was kept): a report counted the
     * budget recorded before the event was received as held for it. */
    {"ALTER TABLE grid_events ADD COLUMN added_s REAL;"},
};

int pfi_grid_open(const char *path, pfi_grid_store **out, pfi_err *err)
{
    *out = NULL;
    pfi_grid_store *g = calloc(1, sizeof *g);
    if (!g)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    int rc = pfi_store_open(path, PFI_STORE_CREATE, &g->st, err);
    if (rc == PFI_OK)
        rc = pfi_store_migrate_layer(g->st, "grid", steps, (int)(sizeof steps / sizeof steps[0]),
                                     err);
    if (rc == PFI_OK)
        rc = pfi_store_open(path, 0, &g->pw, err);
    if (rc == PFI_OK)
        rc = pfi_store_exec(g->pw, "PRAGMA synchronous=NORMAL", err, "setting up site power");
    if (rc != PFI_OK) {
        pfi_store_close(g->pw);
        pfi_store_close(g->st);
        free(g);
        return rc;
    }
    pthread_mutex_init(&g->mu, NULL);
    *out = g;
    return PFI_OK;
}

void pfi_grid_close(pfi_grid_store *g)
{
    if (!g)
        return;
    pfi_store_close(g->pw);
    pfi_store_close(g->st);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

/* Steps a prepared statement to its end; PFI_OK or the store's error. */
static int step_done_on(pfi_store *st, sqlite3_stmt *s, const char *doing, pfi_err *err)
{
    int rc = sqlite3_step(s);
    int out = rc == SQLITE_DONE ? PFI_OK : pfi_store_sqlerr(st, rc, err, doing);
    sqlite3_finalize(s);
    return out;
}

static int step_done(pfi_grid_store *g, sqlite3_stmt *s, const char *doing, pfi_err *err)
{
    return step_done_on(g->st, s, doing, err);
}

/* pfi_grid_put with g->mu held; an event not stored before (or, keep_added 0, a new one under
 * a held id) is noted as added at `added` (NAN: not known), else it keeps its first time. */
static int put_locked(pfi_grid_store *g, const pfi_event *ev, double added, int keep_added,
                      pfi_err *err)
{
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(g->st,
                               "INSERT OR REPLACE INTO grid_events(id, start_s, end_s, kind, "
                               "limit_w, cut, baseline_w, baseline_method, ramp_down_s, "
                               "ramp_up_s, priority, source, sla_yield, oadr_event, "
                               "oadr_interval, oadr_start_s, oadr_randomize_s, oadr_randomized_s, "
                               "oadr_reported_s, level_noted, level_w, added_s) "
                               "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
                               /* a change keeps the first time it was stored, a new
                                * event (?23 = 0) takes its own */
                               "COALESCE(CASE WHEN ?23 THEN (SELECT added_s FROM grid_events "
                               "WHERE id = ?1 AND let_go_s IS NULL) END, ?22))",
                               &s, err);
    if (rc == PFI_OK) {
        sqlite3_bind_text(s, 1, ev->id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(s, 2, ev->start_s);
        sqlite3_bind_double(s, 3, ev->end_s);
        sqlite3_bind_text(s, 4, pfi_event_kind_name(ev->kind), -1, SQLITE_STATIC);
        pfi_store_bind_real(s, 5, ev->limit_w);
        pfi_store_bind_real(s, 6, ev->cut);
        pfi_store_bind_real(s, 7, ev->baseline_w);
        sqlite3_bind_text(s, 8, ev->baseline_method, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(s, 9, ev->ramp_down_s);
        sqlite3_bind_double(s, 10, ev->ramp_up_s);
        sqlite3_bind_int(s, 11, ev->priority);
        sqlite3_bind_text(s, 12, ev->source, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(s, 13, ev->sla_yield != 0);
        sqlite3_bind_text(s, 14, ev->oadr_event, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(s, 15, ev->oadr_interval);
        pfi_store_bind_real(s, 16, ev->oadr_start_s);
        sqlite3_bind_double(s, 17, ev->oadr_randomize_s);
        sqlite3_bind_double(s, 18, ev->oadr_randomized_s);
        sqlite3_bind_double(s, 19, isfinite(ev->oadr_reported_s) ? ev->oadr_reported_s : 0);
        sqlite3_bind_int(s, 20, pfi_event_level_noted(ev));
        pfi_store_bind_real(s, 21, ev->ramp_level_w); /* INFINITY (none) as NULL */
        pfi_store_bind_real(s, 22, ev->added_s > 0 ? ev->added_s : added);
        sqlite3_bind_int(s, 23, keep_added);
        rc = step_done(g, s, "saving a grid event", err);
    }
    return rc;
}

int pfi_grid_put(pfi_grid_store *g, const pfi_event *ev, pfi_err *err)
{
    pthread_mutex_lock(&g->mu);
    int rc = put_locked(g, ev, NAN, 1, err);
    pthread_mutex_unlock(&g->mu);
    return rc;
}

/* One statement on an event id's revisions (g->mu held). */
static int on_revisions(pfi_grid_store *g, const char *sql, const char *id, const char *doing,
                        pfi_err *err)
{
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(g->st, sql, &s, err);
    if (rc == PFI_OK) {
        sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
        rc = step_done(g, s, doing, err);
    }
    return rc;
}

/* Adds ev's terms as the next revision of its id, in force from from_s (NAN: the first); the
 * first revision of an id that has none is numbered 0 (g->mu held). */
static int add_revision(pfi_grid_store *g, const pfi_event *ev, double from_s, pfi_err *err)
{
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(g->st,
                               "INSERT INTO grid_event_revisions(id, seq, from_s, start_s, end_s, "
                               "kind, limit_w, cut, baseline_w, ramp_down_s, ramp_up_s, priority, "
                               "sla_yield) VALUES(?1, (SELECT coalesce(max(seq) + 1, 0) FROM "
                               "grid_event_revisions WHERE id = ?1), ?,?,?,?,?,?,?,?,?,?,?)",
                               &s, err);
    if (rc != PFI_OK)
        return rc;
    sqlite3_bind_text(s, 1, ev->id, -1, SQLITE_TRANSIENT);
    pfi_store_bind_real(s, 2, from_s);
    sqlite3_bind_double(s, 3, ev->start_s);
    sqlite3_bind_double(s, 4, ev->end_s);
    sqlite3_bind_text(s, 5, pfi_event_kind_name(ev->kind), -1, SQLITE_STATIC);
    pfi_store_bind_real(s, 6, ev->limit_w);
    pfi_store_bind_real(s, 7, ev->cut);
    pfi_store_bind_real(s, 8, ev->baseline_w);
    sqlite3_bind_double(s, 9, ev->ramp_down_s);
    sqlite3_bind_double(s, 10, ev->ramp_up_s);
    sqlite3_bind_int(s, 11, ev->priority);
    sqlite3_bind_int(s, 12, ev->sla_yield != 0);
    return step_done(g, s, "saving a grid event's revision", err);
}

/* How many revisions id has (g->mu held); -1 when they cannot be read (err set). */
static int revision_count(pfi_grid_store *g, const char *id, pfi_err *err)
{
    sqlite3_stmt *s;
    if (pfi_store_prepare(g->st, "SELECT count(*) FROM grid_event_revisions WHERE id = ?", &s,
                          err) != PFI_OK)
        return -1;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    int r = sqlite3_step(s), n = r == SQLITE_ROW ? sqlite3_column_int(s, 0) : -1;
    if (n < 0)
        pfi_store_sqlerr(g->st, r, err, "reading a grid event's revisions");
    sqlite3_finalize(s);
    return n;
}

/* The revisions a change of kind `kind` writes (g->mu held, in a transaction). */
static int revise_locked(pfi_grid_store *g, const pfi_event *held, const pfi_event *ev, int kind,
                         double now, pfi_err *err)
{
    if (kind == PFI_EVENT_CHANGE_NEW)
        return on_revisions(g, "DELETE FROM grid_event_revisions WHERE id = ?", ev->id,
                            "clearing a grid event's revisions", err);
    int n = revision_count(g, ev->id, err), rc = PFI_OK;
    if (n < 0)
        return err ? err->code : PFI_EIO;
    if (kind == PFI_EVENT_CHANGE_REVISE && n == 0 && held) {
        rc = add_revision(g, held, NAN, err);
        n = 1;
    }
    if (rc == PFI_OK && n > 0)
        rc = add_revision(g, ev, now, err);
    return rc;
}

/* A transaction begun under g->mu ends: committed when rc says all went well, else rolled back;
 * the lock let go either way. */
static int tx_end(pfi_grid_store *g, int rc, pfi_err *err)
{
    if (rc == PFI_OK)
        rc = pfi_store_tx_commit(g->st, err);
    else
        pfi_store_tx_rollback(g->st);
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int pfi_grid_change(pfi_grid_store *g, const pfi_event *held, const pfi_event *ev, int kind,
                    double now, pfi_err *err)
{
    pthread_mutex_lock(&g->mu);
    if (kind == PFI_EVENT_CHANGE_SAME) {
        int rc = put_locked(g, ev, now, 1, err);
        pthread_mutex_unlock(&g->mu);
        return rc;
    }
    int rc = pfi_store_tx_begin(g->st, err);
    if (rc == PFI_OK)
        rc = revise_locked(g, held, ev, kind, now, err);
    if (rc == PFI_OK)
        rc = put_locked(g, ev, now, kind != PFI_EVENT_CHANGE_NEW, err);
    return tx_end(g, rc, err);
}

int pfi_grid_delete(pfi_grid_store *g, const char *id, pfi_err *err)
{
    pthread_mutex_lock(&g->mu);
    int rc = pfi_store_tx_begin(g->st, err);
    if (rc == PFI_OK)
        rc = on_revisions(g, "DELETE FROM grid_event_revisions WHERE id = ?", id,
                          "deleting a grid event's revisions", err);
    if (rc == PFI_OK)
        rc = on_revisions(g, "DELETE FROM grid_events WHERE id = ?", id, "deleting a grid event",
                          err);
    if (rc == PFI_OK && sqlite3_changes(g->st->db) == 0)
        rc = pfi_err_set(err, PFI_ENOENT, "no grid event '%s'", id);
    return tx_end(g, rc, err);
}

/* The terms of a revision row (seq, from_s, start_s, ... sla_yield) over a copy of the event. */
static void row_revision(sqlite3_stmt *s, const pfi_event *ev, pfi_event_revision *r)
{
    r->ev = *ev;
    double from = pfi_store_col_real(s, 1);
    r->from_s = isnan(from) ? -INFINITY : from; /* NULL: the first, in force from the beginning */
    r->ev.start_s = sqlite3_column_double(s, 2);
    r->ev.end_s = sqlite3_column_double(s, 3);
    const unsigned char *k = sqlite3_column_text(s, 4);
    r->ev.kind = k && !strcmp((const char *)k, "cut") ? PFI_EVENT_CUT
                 : k && !strcmp((const char *)k, "limit") ? PFI_EVENT_LIMIT
                                                         : -1;
    r->ev.limit_w = pfi_store_col_real(s, 5);
    r->ev.cut = pfi_store_col_real(s, 6);
    r->ev.baseline_w = pfi_store_col_real(s, 7);
    r->ev.ramp_down_s = sqlite3_column_double(s, 8);
    r->ev.ramp_up_s = sqlite3_column_double(s, 9);
    r->ev.priority = sqlite3_column_int(s, 10);
    r->ev.sla_yield = sqlite3_column_int(s, 11);
}

int pfi_grid_revisions(pfi_grid_store *g, const pfi_event *ev, pfi_event_revision **out, int *n,
                       pfi_err *err)
{
    *n = 0;
    *out = NULL;
    pthread_mutex_lock(&g->mu);
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(g->st,
                               "SELECT seq, from_s, start_s, end_s, kind, limit_w, cut, "
                               "baseline_w, ramp_down_s, ramp_up_s, priority, sla_yield FROM "
                               "grid_event_revisions WHERE id = ? ORDER BY seq",
                               &s, err);
    int cap = 0, src = SQLITE_DONE;
    if (rc == PFI_OK) {
        sqlite3_bind_text(s, 1, ev->id, -1, SQLITE_TRANSIENT);
        while ((src = sqlite3_step(s)) == SQLITE_ROW) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 8;
                pfi_event_revision *m = realloc(*out, sizeof **out * (size_t)cap);
                if (!m) {
                    rc = pfi_err_set(err, PFI_ENOMEM, "out of memory reading revisions");
                    break;
                }
                *out = m;
            }
            row_revision(s, ev, &(*out)[(*n)++]);
        }
        if (rc == PFI_OK && src != SQLITE_DONE)
            rc = pfi_store_sqlerr(g->st, src, err, "reading a grid event's revisions");
        sqlite3_finalize(s);
    }
    pthread_mutex_unlock(&g->mu);
    if (rc == PFI_OK && *n == 0) {
        *out = malloc(sizeof **out);
        rc = *out ? PFI_OK : pfi_err_set(err, PFI_ENOMEM, "out of memory");
        if (*out)
            (*out)[(*n)++] = (pfi_event_revision){.from_s = -INFINITY, .ev = *ev};
    } else if (rc == PFI_OK) {
        (*out)[*n - 1].ev = *ev; /* the one in force now, as held */
    }
    if (rc != PFI_OK) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

int pfi_grid_mark_reported(pfi_grid_store *g, pthread_mutex_t *list_mu, pfi_event *list, int n,
                           const char *id, double when, pfi_err *err)
{
    pfi_event ev;
    pthread_mutex_lock(list_mu);
    int at = pfi_event_list_find(list, n, id);
    if (at >= 0) {
        list[at].oadr_reported_s = when;
        ev = list[at];
    }
    pthread_mutex_unlock(list_mu);
    return at < 0 ? pfi_err_set(err, PFI_ENOENT, "no grid event '%s'", id)
                  : pfi_grid_put(g, &ev, err);
}

/* One stored event's single number set by id; an id not stored is said, not ignored. */
static int update_event_real(pfi_grid_store *g, const char *sql, double v, const char *id,
                             const char *what, pfi_err *err)
{
    pthread_mutex_lock(&g->mu);
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(g->st, sql, &s, err);
    if (rc == PFI_OK) {
        pfi_store_bind_real(s, 1, v);
        sqlite3_bind_text(s, 2, id, -1, SQLITE_TRANSIENT);
        rc = step_done(g, s, what, err);
        if (rc == PFI_OK && sqlite3_changes(g->st->db) == 0)
            rc = pfi_err_set(err, PFI_ENOENT, "no grid event '%s'", id);
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int pfi_grid_note_level(pfi_grid_store *g, const char *id, double level_w, pfi_err *err)
{
    return update_event_real(g, "UPDATE grid_events SET level_noted = 1, level_w = ? WHERE id = ?",
                             level_w, id, "noting a grid event's ramp level", err);
}

int pfi_grid_state_set(pfi_grid_store *g, const char *key, const char *value, pfi_err *err)
{
    pthread_mutex_lock(&g->mu);
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(g->st, "INSERT OR REPLACE INTO grid_state(key, value) VALUES(?,?)",
                               &s, err);
    if (rc == PFI_OK) {
        sqlite3_bind_text(s, 1, key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 2, value, -1, SQLITE_TRANSIENT);
        rc = step_done(g, s, "saving the controller's state", err);
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int pfi_grid_state_get(pfi_grid_store *g, const char *key, char *value, size_t size, pfi_err *err)
{
    pthread_mutex_lock(&g->mu);
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(g->st, "SELECT value FROM grid_state WHERE key = ?", &s, err);
    if (rc == PFI_OK) {
        sqlite3_bind_text(s, 1, key, -1, SQLITE_TRANSIENT);
        int r = sqlite3_step(s);
        if (r == SQLITE_ROW)
            pfi_store_col_text(s, 0, value, size);
        else if (r == SQLITE_DONE)
            rc = PFI_ENOENT;
        else
            rc = pfi_store_sqlerr(g->st, r, err, "reading the controller's state");
        sqlite3_finalize(s);
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

static void row_event(sqlite3_stmt *s, pfi_event *ev)
{
    memset(ev, 0, sizeof *ev);
    pfi_store_col_text(s, 0, ev->id, sizeof ev->id);
    ev->start_s = sqlite3_column_double(s, 1);
    ev->end_s = sqlite3_column_double(s, 2);
    const unsigned char *k = sqlite3_column_text(s, 3);
    ev->kind = k && !strcmp((const char *)k, "cut") ? PFI_EVENT_CUT
               : k && !strcmp((const char *)k, "limit") ? PFI_EVENT_LIMIT
                                                       : -1;
    ev->limit_w = pfi_store_col_real(s, 4);
    ev->cut = pfi_store_col_real(s, 5);
    ev->baseline_w = pfi_store_col_real(s, 6);
    pfi_store_col_text(s, 7, ev->baseline_method, sizeof ev->baseline_method);
    ev->ramp_down_s = sqlite3_column_double(s, 8);
    ev->ramp_up_s = sqlite3_column_double(s, 9);
    ev->priority = sqlite3_column_int(s, 10);
    pfi_store_col_text(s, 11, ev->source, sizeof ev->source);
    ev->sla_yield = sqlite3_column_int(s, 12);
    pfi_store_col_text(s, 13, ev->oadr_event, sizeof ev->oadr_event);
    ev->oadr_interval = sqlite3_column_int(s, 14);
    ev->oadr_start_s = pfi_store_col_real(s, 15);
    ev->oadr_randomize_s = sqlite3_column_double(s, 16);
    ev->oadr_randomized_s = sqlite3_column_double(s, 17);
    ev->oadr_reported_s = sqlite3_column_double(s, 18);
    double level = pfi_store_col_real(s, 20);
    ev->ramp_level_w = !sqlite3_column_int(s, 19) ? NAN : isnan(level) ? INFINITY : level;
    double added = pfi_store_col_real(s, 21);
    ev->added_s = isnan(added) ? 0 : added;
}

/* The columns row_event reads, in its order. */
#define EVENT_COLS                                                                             \
    "id, start_s, end_s, kind, limit_w, cut, baseline_w, baseline_method, ramp_down_s, "      \
    "ramp_up_s, priority, source, sla_yield, oadr_event, oadr_interval, oadr_start_s, "        \
    "oadr_randomize_s, oadr_randomized_s, oadr_reported_s, level_noted, level_w, added_s"

int pfi_grid_load(pfi_grid_store *g, pfi_event **evs, int *n, pfi_err *err)
{
    *evs = NULL;
    *n = 0;
    pthread_mutex_lock(&g->mu);
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(g->st,
                               "SELECT " EVENT_COLS " FROM grid_events WHERE let_go_s IS NULL "
                               "ORDER BY start_s, id",
                               &s, err);
    int cap = 0, src = SQLITE_DONE;
    if (rc == PFI_OK) {
        while ((src = sqlite3_step(s)) == SQLITE_ROW) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 16;
                pfi_event *m = realloc(*evs, sizeof **evs * (size_t)cap);
                if (!m) {
                    rc = pfi_err_set(err, PFI_ENOMEM, "out of memory loading grid events");
                    break;
                }
                *evs = m;
            }
            row_event(s, &(*evs)[(*n)++]);
        }
        if (rc == PFI_OK && src != SQLITE_DONE)
            rc = pfi_store_sqlerr(g->st, src, err, "loading grid events");
        sqlite3_finalize(s);
    }
    pthread_mutex_unlock(&g->mu);
    if (rc != PFI_OK) {
        free(*evs);
        *evs = NULL;
        *n = 0;
    }
    return rc;
}

int pfi_grid_let_go(pfi_grid_store *g, const char *id, double when, pfi_err *err)
{
    return update_event_real(g, "UPDATE grid_events SET let_go_s = ? WHERE id = ?", when, id,
                             "letting a grid event go", err);
}

int pfi_grid_history(pfi_grid_store *g, const char *id, pfi_event *ev, double *let_go_s,
                     pfi_err *err)
{
    pthread_mutex_lock(&g->mu);
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(g->st,
                               "SELECT " EVENT_COLS ", let_go_s FROM grid_events "
                               "WHERE id = ? AND let_go_s IS NOT NULL",
                               &s, err);
    if (rc == PFI_OK) {
        sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
        int r = sqlite3_step(s);
        if (r == SQLITE_ROW) {
            row_event(s, ev);
            *let_go_s = sqlite3_column_double(s, 22);
        } else if (r == SQLITE_DONE) {
            rc = pfi_err_set(err, PFI_ENOENT, "no grid event '%s'", id);
        } else {
            rc = pfi_store_sqlerr(g->st, r, err, "reading a grid event let go");
        }
        sqlite3_finalize(s);
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int pfi_grid_history_prune(pfi_grid_store *g, double before, pfi_err *err)
{
    pthread_mutex_lock(&g->mu);
    int rc = pfi_store_tx_begin(g->st, err);
    sqlite3_stmt *s;
    const char *sql[] = {"DELETE FROM grid_event_revisions WHERE id IN (SELECT id FROM "
                         "grid_events WHERE let_go_s < ?)",
                         "DELETE FROM grid_events WHERE let_go_s < ?"};
    for (int k = 0; k < 2 && rc == PFI_OK; k++) {
        rc = pfi_store_prepare(g->st, sql[k], &s, err);
        if (rc == PFI_OK) {
            sqlite3_bind_double(s, 1, before);
            rc = step_done(g, s, "deleting grid events let go long ago", err);
        }
    }
    return tx_end(g, rc, err);
}

int pfi_grid_power_add(pfi_grid_store *g, double wall, double site_w, double budget_w,
                       const char *event_id, pfi_err *err)
{
    pthread_mutex_lock(&g->mu);
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(g->pw,
                               "INSERT INTO grid_power(t, site_w, budget_w, event) "
                               "VALUES(?,?,?,?)",
                               &s, err);
    if (rc == PFI_OK) {
        sqlite3_bind_double(s, 1, wall);
        pfi_store_bind_real(s, 2, isfinite(site_w) ? site_w : NAN);
        pfi_store_bind_real(s, 3, isfinite(budget_w) ? budget_w : NAN);
        if (event_id && *event_id)
            sqlite3_bind_text(s, 4, event_id, -1, SQLITE_TRANSIENT);
        else
            sqlite3_bind_null(s, 4);
        rc = step_done_on(g->pw, s, "recording site power", err);
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int pfi_grid_power_range(pfi_grid_store *g, double t0, double t1, pfi_grid_sample **out, int *n,
                         pfi_err *err)
{
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&g->mu);
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(g->pw,
                               "SELECT t, site_w, budget_w FROM grid_power "
                               "WHERE t >= ? AND t < ? ORDER BY t",
                               &s, err);
    int cap = 0, src = SQLITE_DONE;
    if (rc == PFI_OK) {
        sqlite3_bind_double(s, 1, t0);
        sqlite3_bind_double(s, 2, t1);
        while ((src = sqlite3_step(s)) == SQLITE_ROW) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 256;
                pfi_grid_sample *m = realloc(*out, sizeof **out * (size_t)cap);
                if (!m) {
                    rc = pfi_err_set(err, PFI_ENOMEM, "out of memory reading site power");
                    break;
                }
                *out = m;
            }
            pfi_grid_sample *x = &(*out)[(*n)++];
            x->wall = sqlite3_column_double(s, 0);
            x->site_w = pfi_store_col_real(s, 1);
            x->budget_w = pfi_store_col_real(s, 2);
        }
        if (rc == PFI_OK && src != SQLITE_DONE)
            rc = pfi_store_sqlerr(g->pw, src, err, "reading site power");
        sqlite3_finalize(s);
    }
    pthread_mutex_unlock(&g->mu);
    if (rc != PFI_OK) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

int pfi_grid_power_mean(pfi_grid_store *g, double t0, double t1, double *mean_w)
{
    pfi_grid_sample *s = NULL;
    int k = 0, m = 0;
    double sum = 0;
    if (pfi_grid_power_range(g, t0, t1, &s, &k, NULL) == PFI_OK)
        for (int i = 0; i < k; i++)
            if (isfinite(s[i].site_w)) {
                sum += s[i].site_w;
                m++;
            }
    free(s);
    if (m > 0)
        *mean_w = sum / m;
    return m;
}

int pfi_grid_power_walk(pfi_grid_store *g, pfi_baseline_walk *b, pfi_err *err)
{
    pthread_mutex_lock(&g->mu);
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(g->pw,
                               "SELECT t, site_w, event IS NOT NULL FROM grid_power "
                               "WHERE t < ?1 AND t >= ?2 ORDER BY t DESC",
                               &s, err);
    if (rc == PFI_OK) {
        sqlite3_bind_double(s, 1, b->end_s);
        sqlite3_bind_double(s, 2, b->end_s - b->span_s - PFI_BASELINE_BACK_S - b->max_gap_s);
        int src = SQLITE_ROW;
        while (!b->done && (src = sqlite3_step(s)) == SQLITE_ROW)
            pfi_baseline_walk_feed(b, sqlite3_column_double(s, 0), pfi_store_col_real(s, 1),
                                   sqlite3_column_int(s, 2));
        if (src != SQLITE_ROW && src != SQLITE_DONE)
            rc = pfi_store_sqlerr(g->pw, src, err, "reading site power");
        sqlite3_finalize(s);
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int pfi_grid_power_prune(pfi_grid_store *g, double before, double keep_before_s,
                         double keep_after_s, pfi_err *err)
{
    pthread_mutex_lock(&g->mu);
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(g->pw,
                               "DELETE FROM grid_power WHERE t < ?1 AND NOT EXISTS ("
                               " SELECT 1 FROM grid_events e"
                               " WHERE grid_power.t >= e.start_s - e.ramp_down_s - ?2"
                               " AND grid_power.t < e.end_s + e.ramp_up_s + ?3)"
                               " AND NOT EXISTS (SELECT 1 FROM grid_event_revisions r"
                               " WHERE grid_power.t >= r.start_s - r.ramp_down_s - ?2"
                               " AND grid_power.t < r.end_s + r.ramp_up_s + ?3)",
                               &s, err);
    if (rc == PFI_OK) {
        sqlite3_bind_double(s, 1, before);
        sqlite3_bind_double(s, 2, keep_before_s);
        sqlite3_bind_double(s, 3, keep_after_s);
        rc = step_done_on(g->pw, s, "pruning site power", err);
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

/* When event id was first stored (0: not known); the caller's copy of an event may not have
 * it (one held in memory since it was added). */
static double stored_added_s(pfi_grid_store *g, const char *id)
{
    sqlite3_stmt *s;
    double at = 0;
    pthread_mutex_lock(&g->mu);
    if (pfi_store_prepare(g->st, "SELECT added_s FROM grid_events WHERE id = ?", &s, NULL) ==
        PFI_OK) {
        sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(s) == SQLITE_ROW) {
            double x = pfi_store_col_real(s, 0);
            at = isnan(x) ? 0 : x;
        }
        sqlite3_finalize(s);
    }
    pthread_mutex_unlock(&g->mu);
    return at;
}

int pfi_grid_compliance(pfi_grid_store *g, const pfi_event *ev, const pfi_event_site *site,
                        double max_gap_s, pfi_event_compliance *out, int *n_samples,
                        pfi_err *err)
{
    pfi_grid_sample *s = NULL;
    pfi_event_revision *rv;
    int k = 0, nr;
    int rc = pfi_grid_revisions(g, ev, &rv, &nr, err);
    if (rc != PFI_OK)
        return rc;
    double added = ev->added_s > 0 ? ev->added_s : stored_added_s(g, ev->id);
    for (int i = 0; i < nr; i++)
        rv[i].ev.added_s = added;
    double a, b;
    pfi_event_revised_range(rv, nr, site, &a, &b);
    rc = pfi_grid_power_range(g, a - PFI_COMPLIANCE_BASELINE_S, b + 60, &s, &k, err);
    if (rc != PFI_OK) {
        free(rv);
        return rc;
    }
    double *t = malloc(sizeof *t * (size_t)(k + 1)), *w = malloc(sizeof *w * (size_t)(k + 1)),
           *bw = malloc(sizeof *bw * (size_t)(k + 1));
    rc = t && w && bw ? PFI_OK : pfi_err_set(err, PFI_ENOMEM, "out of memory");
    for (int i = 0; rc == PFI_OK && i < k; i++) {
        t[i] = s[i].wall;
        w[i] = s[i].site_w;
        bw[i] = s[i].budget_w;
    }
    pfi_baseline_walk base;
    pfi_baseline_walk_init(&base, a, PFI_COMPLIANCE_BASELINE_S, max_gap_s);
    if (rc == PFI_OK)
        rc = pfi_grid_power_walk(g, &base, err);
    if (rc == PFI_OK)
        rc = pfi_event_compliance_revised(rv, nr, site, t, w, k, 60, max_gap_s, &base, out, err);
    if (rc == PFI_OK)
        pfi_event_compliance_held(rv, nr, t, bw, k, max_gap_s, out);
    free(rv);
    free(s);
    free(t);
    free(w);
    free(bw);
    if (rc == PFI_OK && n_samples)
        *n_samples = k;
    return rc;
}
