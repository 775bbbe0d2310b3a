/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the sweep's store sink (store/sink.h) while another process holds the store's write
 * lock past the busy timeout: the level that could not be stored is named, and the run's final
 * status is recorded once the lock clears (it stayed 'running' for good), or said when it never
 * does. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/sink.h"
#include "store/store.h"
#include "support/db_dir.h"

typedef pfi_test_db_dir fixture;

static int setup(void **state)
{
    return pfi_test_db_dir_setup(state, "pfi-sink");
}

static int teardown(void **state)
{
    return pfi_test_db_dir_teardown(state);
}

/* Another writer: takes the write lock, says so on held[1], and lets go after hold_ms, or
 * (hold_ms < 0) once a byte arrives on release[0]. */
typedef struct locker {
    const char *db;
    int hold_ms;
    int held[2], release[2];
} locker;

static void *hold_lock(void *arg)
{
    locker *l = arg;
    sqlite3 *h;
    char c = 1;
    if (sqlite3_open(l->db, &h) != SQLITE_OK ||
        sqlite3_exec(h, "BEGIN IMMEDIATE; INSERT INTO jobs(command) VALUES ('lock')", NULL, NULL,
                     NULL) != SQLITE_OK)
        c = 0;
    if (write(l->held[1], &c, 1) != 1)
        c = 0;
    if (l->hold_ms >= 0) {
        struct timespec ts = {l->hold_ms / 1000, (long)(l->hold_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    } else if (read(l->release[0], &c, 1) != 1) {
        c = 0;
    }
    sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(h);
    return NULL;
}

static void start_locker(locker *l, pthread_t *t)
{
    assert_int_equal(pipe(l->held), 0);
    assert_int_equal(pipe(l->release), 0);
    assert_int_equal(pthread_create(t, NULL, hold_lock, l), 0);
    char c = 0;
    assert_int_equal(read(l->held[0], &c, 1), 1);
    assert_int_equal(c, 1);
}

static void stop_locker(locker *l, pthread_t t)
{
    char c = 1;
    if (l->hold_ms < 0)
        assert_int_equal(write(l->release[1], &c, 1), 1);
    assert_int_equal(pthread_join(t, NULL), 0);
    close(l->held[0]);
    close(l->held[1]);
    close(l->release[0]);
    close(l->release[1]);
}

/* A sink with a one-level run stored, the run holding a second level not yet stored. */
static pfi_store_sink *sweep_one_level(const char *db, pfi_run *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "locked");
    snprintf(r->source, sizeof r->source, "sweep");
    snprintf(r->gpu_type, sizeof r->gpu_type, "H200-SXM");
    r->n_gpus = 1;
    r->unit = PFI_TOKENS_PER_S;
    r->min_limit_w = 200;
    r->max_limit_w = r->default_limit_w = 700;
    r->n_levels = 2;
    r->levels[0].cap_w = 700;
    r->levels[1].cap_w = 540;
    for (int i = 0; i < 2; i++) {
        r->levels[i].power_w = r->levels[i].cap_w - 20;
        r->levels[i].tput = 1000 - i;
    }
    pfi_store_sink *s;
    pfi_err e = {0};
    if (pfi_store_sink_open(db, "job", NULL, NULL, 0, "sim", &s, &e) != PFI_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(pfi_store_sink_begin(s, r, &e), PFI_OK);
    assert_int_equal(pfi_store_sink_level(s, r, 0, NULL, 0, NULL, 0, &e), PFI_OK);
    return s;
}

static void stored(const char *db, char *status, size_t n, int *levels)
{
    pfi_store *st;
    pfi_err e = {0};
    pfi_run_summary *v;
    int nr;
    assert_int_equal(pfi_store_open(db, 0, &st, &e), PFI_OK);
    assert_int_equal(pfi_store_list_runs(st, &v, &nr, &e), PFI_OK);
    assert_int_equal(nr, 1);
    snprintf(status, n, "%s", v[0].status);
    *levels = v[0].n_levels;
    free(v);
    pfi_store_close(st);
}

/* The lock is held past the level's busy timeout and past the status's first try, then let go:
 * the status is recorded (it stayed 'running'), the lost level named. */
static void test_status_after_lock_clears(void **state)
{
    fixture *f = *state;
    setenv("PFI_DB_BUSY_MS", "200", 1); /* the status then waits up to 12 x 200 ms */
    pfi_run r;
    pfi_store_sink *s = sweep_one_level(f->db, &r);
    locker l = {.db = f->db, .hold_ms = 1000};
    pthread_t t;
    start_locker(&l, &t);
    pfi_err e = {0};
    assert_int_equal(pfi_store_sink_level(s, &r, 1, NULL, 0, NULL, 0, &e), PFI_EBUSY);
    if (!strstr(e.msg, "the level at 540 W was measured but not stored in ") ||
        !strstr(e.msg, f->db) || !strstr(e.msg, "locked"))
        fail_msg("%s", e.msg);
    pfi_store_sink_end(s, &r, "failed");
    stop_locker(&l, t);
    if (pfi_store_sink_error(s)->code != PFI_OK)
        fail_msg("status not recorded: %s", pfi_store_sink_error(s)->msg);
    pfi_store_sink_close(s);
    char status[16];
    int levels;
    stored(f->db, status, sizeof status, &levels);
    assert_string_equal(status, "failed");
    assert_int_equal(levels, 1);
    unsetenv("PFI_DB_BUSY_MS");
}

/* A lock that never clears while the sink waits: the error says the status was not recorded
 * and what the store shows instead. */
static void test_status_never_recorded(void **state)
{
    fixture *f = *state;
    setenv("PFI_DB_BUSY_MS", "20", 1);
    pfi_run r;
    pfi_store_sink *s = sweep_one_level(f->db, &r);
    locker l = {.db = f->db, .hold_ms = -1};
    pthread_t t;
    start_locker(&l, &t);
    pfi_store_sink_end(s, &r, "failed");
    stop_locker(&l, t);
    const pfi_err *e = pfi_store_sink_error(s);
    assert_int_equal(e->code, PFI_EBUSY);
    if (!strstr(e->msg, "the run's status 'failed' was not recorded in ") ||
        !strstr(e->msg, "stays 'running' there") || !strstr(e->msg, "locked"))
        fail_msg("%s", e->msg);
    pfi_store_sink_close(s);
    char status[16];
    int levels;
    stored(f->db, status, sizeof status, &levels);
    assert_string_equal(status, "running");
    unsetenv("PFI_DB_BUSY_MS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_status_after_lock_clears, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_never_recorded, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
