/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the grid layer of the store (store/grid.h): events saved, replaced, deleted and read
 * back after reopening; an OpenADR event's VTN start and randomizeStart offset kept with it;
 * site power recorded, read by range and pruned around events; a store written before the
 * OpenADR columns existed upgraded in place, and refused by a build older than its tables; one
 * from before the level an event ramps from and its revisions were kept, upgraded with its
 * events kept; an event's revisions kept by the kind of each change, and judged in the report; a
 * report's state (not started, partial, without samples, complete) at every point of an
 * event's life. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "store/grid.h"
#include "store/store.h"

static char dir[512], path[600];

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("PFI_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/pfi-grid-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/grid.db", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char f[700];
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(f, sizeof f, "%s%s", path, suffix[i]);
        unlink(f);
    }
    rmdir(dir);
    return 0;
}

static void test_events_survive_reopen(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_grid_store *g;
    assert_int_equal(pfi_grid_open(path, &g, &e), PFI_OK);
    pfi_event a, b;
    pfi_event_init_limit(&a, "a", 2000, 3000, 5000);
    a.ramp_down_s = 300;
    a.priority = 2;
    a.sla_yield = 1;
    snprintf(a.source, sizeof a.source, "cli");
    pfi_event_init_cut(&b, "b", 1000, 1500, 0.25, 8000, "mean site draw over the hour before");
    assert_int_equal(pfi_grid_put(g, &a, &e), PFI_OK);
    assert_int_equal(pfi_grid_put(g, &b, &e), PFI_OK);
    a.limit_w = 4500; /* replaces, not duplicates */
    assert_int_equal(pfi_grid_put(g, &a, &e), PFI_OK);
    assert_int_equal(pfi_grid_delete(g, "nope", &e), PFI_ENOENT);
    assert_non_null(strstr(e.msg, "nope"));
    pfi_grid_close(g);

    assert_int_equal(pfi_grid_open(path, &g, &e), PFI_OK);
    pfi_event *evs;
    int n;
    assert_int_equal(pfi_grid_load(g, &evs, &n, &e), PFI_OK);
    assert_int_equal(n, 2);
    assert_string_equal(evs[0].id, "b"); /* by start */
    assert_int_equal(evs[0].kind, PFI_EVENT_CUT);
    assert_true(evs[0].cut == 0.25 && evs[0].baseline_w == 8000);
    assert_true(isnan(evs[0].limit_w));
    assert_string_equal(evs[0].baseline_method, "mean site draw over the hour before");
    assert_string_equal(evs[1].id, "a");
    assert_true(evs[1].limit_w == 4500 && evs[1].ramp_down_s == 300 && evs[1].priority == 2);
    assert_int_equal(evs[1].sla_yield, 1);
    assert_int_equal(evs[0].sla_yield, 0);
    assert_string_equal(evs[1].source, "cli");
    assert_int_equal(pfi_event_validate(&evs[1], NULL, &e), PFI_OK);
    free(evs);
    assert_int_equal(pfi_grid_delete(g, "b", &e), PFI_OK);
    assert_int_equal(pfi_grid_load(g, &evs, &n, &e), PFI_OK);
    assert_int_equal(n, 1);
    free(evs);
    pfi_grid_close(g);
}

/* An OpenADR event's provenance (what an audit against the VTN needs: the VTN's start, its
 * randomizeStart and the offset drawn) is read from the client's body, kept across a reopen
 * and shown beside the start held, in the event and its report's judged window. */
static void test_openadr_provenance(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_grid_store *g;
    assert_int_equal(pfi_grid_open(path, &g, &e), PFI_OK);
    json_t *body = json_pack("{s:s, s:f, s:f, s:f, s:{s:s, s:i, s:f, s:f, s:f}}", "id",
                             "oadr-E-1", "start", 1359.0, "end", 4959.0, "cut", 0.2, "openadr",
                             "event_id", "E", "interval", 1, "vtn_start", 1000.0,
                             "randomize_start_s", 1800.0, "randomized_s", 359.0);
    pfi_event ev, plain;
    assert_int_equal(pfi_grid_event_from_json(body, 0, &ev, &e), PFI_OK);
    ev.baseline_w = 8000;
    snprintf(ev.baseline_method, sizeof ev.baseline_method, "stated");
    pfi_event_init_limit(&plain, "p", 1000, 2000, 5000);
    assert_int_equal(pfi_grid_put(g, &ev, &e), PFI_OK);
    assert_int_equal(pfi_grid_put(g, &plain, &e), PFI_OK);
    pfi_grid_close(g);
    assert_int_equal(pfi_grid_open(path, &g, &e), PFI_OK);
    pfi_event *evs;
    int n;
    assert_int_equal(pfi_grid_load(g, &evs, &n, &e), PFI_OK);
    assert_int_equal(n, 2);
    const pfi_event *o = &evs[1], *p = &evs[0];
    assert_string_equal(o->id, "oadr-E-1");
    assert_string_equal(o->oadr_event, "E");
    assert_true(o->oadr_interval == 1 && o->oadr_start_s == 1000 &&
                o->oadr_randomize_s == 1800 && o->oadr_randomized_s == 359);
    assert_true(p->oadr_event[0] == 0 && isnan(p->oadr_start_s));
    json_t *j = pfi_grid_event_to_json(o, NULL, 0), *a = json_object_get(j, "openadr");
    assert_string_equal(json_string_value(json_object_get(a, "vtn_start")),
                        "1970-01-01T00:16:40Z");
    assert_true(json_number_value(json_object_get(a, "randomized_s")) == 359 &&
                json_number_value(json_object_get(a, "randomize_start_s")) == 1800 &&
                json_integer_value(json_object_get(a, "interval")) == 1);
    json_decref(j);
    j = pfi_grid_event_to_json(p, NULL, 0);
    assert_null(json_object_get(j, "openadr")); /* not from a VTN: nothing to audit */
    json_decref(j);
    pfi_event_site site = pfi_event_site_default(10000);
    j = pfi_grid_report_json(g, o, &site, 60, 0, &e);
    if (!j)
        fail_msg("%s", e.msg);
    json_t *w = json_object_get(j, "judged_window");
    assert_true(json_number_value(json_object_get(w, "start_s")) == 1359 &&
                json_number_value(json_object_get(w, "randomized_s")) == 359);
    assert_string_equal(json_string_value(json_object_get(w, "vtn_start")),
                        "1970-01-01T00:16:40Z");
    json_decref(j);
    free(evs);
    pfi_grid_close(g);

    /* Refused by name: an offset past the randomizeStart, a missing start, not an object. */
    json_t *x = json_object_get(body, "openadr");
    json_object_set_new(x, "randomized_s", json_real(1801));
    assert_int_equal(pfi_grid_event_from_json(body, 0, &ev, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "openadr: randomized_s"));
    json_object_set_new(x, "randomized_s", json_real(0));
    json_object_del(x, "vtn_start");
    assert_int_equal(pfi_grid_event_from_json(body, 0, &ev, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "openadr: expected"));
    json_object_set_new(body, "openadr", json_string("E"));
    assert_int_equal(pfi_grid_event_from_json(body, 0, &ev, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "openadr: expected"));
    json_decref(body);
    /* ramp_s beside both of the ramps it is the default of: it would be dropped unsaid. */
    json_t *r = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f}", "id", "r", "start", 2e9,
                          "duration_s", 600.0, "limit_w", 4000.0, "ramp_s", 60.0, "ramp_down_s",
                          30.0, "ramp_up_s", 30.0);
    assert_int_equal(pfi_grid_event_from_json(r, 0, &ev, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "ramp_s with both ramp_down_s and ramp_up_s"));
    json_object_del(r, "ramp_up_s"); /* with one: the default of the other */
    assert_int_equal(pfi_grid_event_from_json(r, 0, &ev, &e), PFI_OK);
    assert_true(ev.ramp_down_s == 30 && ev.ramp_up_s == 60);
    json_decref(r);
}

static void test_power(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_grid_store *g;
    assert_int_equal(pfi_grid_open(path, &g, &e), PFI_OK);
    for (int t = 0; t < 100; t++)
        assert_int_equal(pfi_grid_power_add(g, 1000 + t * 10, 5000 + t, t < 50 ? INFINITY : 4000,
                                            t < 50 ? NULL : "a", &e),
                         PFI_OK);
    pfi_grid_sample *s;
    int n;
    assert_int_equal(pfi_grid_power_range(g, 1100, 1200, &s, &n, &e), PFI_OK);
    assert_int_equal(n, 10);
    assert_true(s[0].wall == 1100 && s[0].site_w == 5010 && isnan(s[0].budget_w));
    free(s);
    /* The mean counts the samples whose draw is known; none leaves the mean as it was. */
    double mean = -1;
    assert_int_equal(pfi_grid_power_mean(g, 1100, 1200, &mean), 10);
    assert_true(mean == 5014.5);
    assert_int_equal(pfi_grid_power_add(g, 5000, NAN, 4000, NULL, &e), PFI_OK);
    assert_int_equal(pfi_grid_power_add(g, 5001, 100, 4000, NULL, &e), PFI_OK);
    assert_int_equal(pfi_grid_power_mean(g, 5000, 5002, &mean), 1);
    assert_true(mean == 100);
    mean = -1;
    assert_int_equal(pfi_grid_power_mean(g, 4000, 5000, &mean), 0);
    assert_true(mean == -1);
    /* Event a needs [2000 - ramp 300 - 100, 3000 + 0 + 100): the rest before 1900 goes. */
    pfi_event a;
    pfi_event_init_limit(&a, "a", 2000, 3000, 5000);
    a.ramp_down_s = 300;
    assert_int_equal(pfi_grid_put(g, &a, &e), PFI_OK);
    assert_int_equal(pfi_grid_power_prune(g, 1900, 100, 100, &e), PFI_OK);
    assert_int_equal(pfi_grid_power_range(g, 0, 1e9, &s, &n, &e), PFI_OK);
    assert_int_equal(n, 42); /* 1600..1990 kept, and the two at 5000 */
    assert_true(s[0].wall == 1600);
    free(s);
    pfi_grid_close(g);
}

/* The grid layer as the first release wrote it (version 1, before an OpenADR event's VTN start
 * and randomizeStart offset were kept), with one event in it: what an operator's store holds
 * when a newer pfi opens it.  Kept here as it was, not read from grid.c, so that a change to
 * that step is caught rather than followed. */
#define GRID_V1                                                                                 \
    "CREATE TABLE grid_events ("                                                                \
    " id TEXT PRIMARY KEY, start_s REAL NOT NULL, end_s REAL NOT NULL, kind TEXT NOT NULL,"     \
    " limit_w REAL, cut REAL, baseline_w REAL, baseline_method TEXT NOT NULL,"                  \
    " ramp_down_s REAL NOT NULL, ramp_up_s REAL NOT NULL, priority INTEGER NOT NULL,"           \
    " source TEXT NOT NULL, sla_yield INTEGER NOT NULL DEFAULT 0);"                             \
    "CREATE TABLE grid_power (t REAL NOT NULL, site_w REAL, budget_w REAL, event TEXT);"        \
    "CREATE INDEX grid_power_t ON grid_power(t);"                                               \
    "INSERT INTO grid_events VALUES ('old', 2000, 3000, 'limit', 5000, NULL, NULL, 'stated',"  \
    " 300, 60, 2, 'openadr', 1);"                                                               \
    "INSERT INTO grid_power VALUES (1990, 5100, NULL, NULL);"
static const pfi_store_step grid_v1[] = {{GRID_V1}};

/* A store from before the OpenADR columns: opened by this build, its tables are brought up to
 * date in place, the event it held reads back as it was (with no VTN provenance, as a plain
 * event), and new events with provenance go in beside it.  The upgraded file is then refused
 * by name by a build that knows only the first version, rather than misread. */
static void test_upgrade_from_v1(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_store *st;
    assert_int_equal(pfi_store_open(path, PFI_STORE_CREATE, &st, &e), PFI_OK);
    assert_int_equal(pfi_store_migrate_layer(st, "grid", grid_v1, 1, &e), PFI_OK);
    pfi_store_close(st);

    pfi_grid_store *g;
    if (pfi_grid_open(path, &g, &e) != PFI_OK)
        fail_msg("%s", e.msg);
    pfi_event *evs;
    int n;
    assert_int_equal(pfi_grid_load(g, &evs, &n, &e), PFI_OK);
    assert_int_equal(n, 1);
    const pfi_event *o = &evs[0];
    assert_string_equal(o->id, "old");
    assert_int_equal(o->kind, PFI_EVENT_LIMIT);
    assert_true(o->start_s == 2000 && o->end_s == 3000 && o->limit_w == 5000);
    assert_true(o->ramp_down_s == 300 && o->ramp_up_s == 60 && o->priority == 2);
    assert_int_equal(o->sla_yield, 1);
    assert_string_equal(o->source, "openadr");
    assert_true(o->oadr_event[0] == 0 && o->oadr_interval == 0 && isnan(o->oadr_start_s) &&
                o->oadr_randomize_s == 0 && o->oadr_randomized_s == 0);
    assert_int_equal(pfi_event_validate(o, NULL, &e), PFI_OK);
    json_t *j = pfi_grid_event_to_json(o, NULL, 0);
    assert_null(json_object_get(j, "openadr"));
    json_decref(j);
    free(evs);
    pfi_grid_sample *s;
    assert_int_equal(pfi_grid_power_range(g, 0, 1e9, &s, &n, &e), PFI_OK);
    assert_int_equal(n, 1);
    assert_true(s[0].wall == 1990 && s[0].site_w == 5100 && isnan(s[0].budget_w));
    free(s);

    pfi_event b;
    pfi_event_init_limit(&b, "new", 4000, 5000, 4500);
    snprintf(b.oadr_event, sizeof b.oadr_event, "E");
    b.oadr_interval = 2;
    b.oadr_start_s = 3900;
    b.oadr_randomize_s = 600;
    b.oadr_randomized_s = 100;
    b.oadr_reported_s = 6100; /* its report sent: kept, so a restart does not send it again */
    assert_int_equal(pfi_grid_put(g, &b, &e), PFI_OK);
    pfi_grid_close(g);
    assert_int_equal(pfi_grid_open(path, &g, &e), PFI_OK);
    assert_int_equal(pfi_grid_load(g, &evs, &n, &e), PFI_OK);
    assert_int_equal(n, 2);
    assert_string_equal(evs[1].id, "new");
    assert_string_equal(evs[1].oadr_event, "E");
    assert_true(evs[1].oadr_interval == 2 && evs[1].oadr_start_s == 3900 &&
                evs[1].oadr_randomize_s == 600 && evs[1].oadr_randomized_s == 100);
    assert_true(evs[1].oadr_reported_s == 6100);
    assert_true(evs[0].oadr_reported_s == 0); /* an event of before the column: not sent */
    free(evs);
    pfi_grid_close(g);

    assert_int_equal(pfi_store_open(path, 0, &st, &e), PFI_OK);
    int v = 0;
    assert_int_equal(pfi_store_layer_version(st, "grid", &v, &e), PFI_OK);
    assert_true(v >= 3);
    assert_int_equal(pfi_store_migrate_layer(st, "grid", grid_v1, 1, &e), PFI_ESTATE);
    assert_non_null(strstr(e.msg, "grid"));
    pfi_store_close(st);
}

/* The grid layer as release 4 left it (events with their OpenADR provenance and the time their
 * report was sent, the controller's state), one event in it: kept here as it was, not read from
 * grid.c, so that a change to a shipped step is caught rather than followed. */
static const pfi_store_step grid_v4[] = {
    {GRID_V1},
    {"ALTER TABLE grid_events ADD COLUMN oadr_event TEXT NOT NULL DEFAULT '';"
     "ALTER TABLE grid_events ADD COLUMN oadr_interval INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE grid_events ADD COLUMN oadr_start_s REAL;"
     "ALTER TABLE grid_events ADD COLUMN oadr_randomize_s REAL NOT NULL DEFAULT 0;"
     "ALTER TABLE grid_events ADD COLUMN oadr_randomized_s REAL NOT NULL DEFAULT 0;"},
    {"ALTER TABLE grid_events ADD COLUMN oadr_reported_s REAL NOT NULL DEFAULT 0;"},
    {"CREATE TABLE grid_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);"},
};

/* A store of release 4, without the level an event ramps from: upgraded in place, its event
 * reads back with no level noted (its report then takes the manual budget as before), and a
 * level noted afterwards, a budget's or none, is kept across a reopen. */
static void test_upgrade_from_v4(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_store *st;
    assert_int_equal(pfi_store_open(path, PFI_STORE_CREATE, &st, &e), PFI_OK);
    assert_int_equal(pfi_store_migrate_layer(st, "grid", grid_v4, 4, &e), PFI_OK);
    pfi_store_close(st);
    pfi_grid_store *g;
    if (pfi_grid_open(path, &g, &e) != PFI_OK)
        fail_msg("%s", e.msg);
    pfi_event *evs;
    int n;
    assert_int_equal(pfi_grid_load(g, &evs, &n, &e), PFI_OK);
    assert_int_equal(n, 1);
    assert_false(pfi_event_level_noted(&evs[0]));
    pfi_event_site site = pfi_event_site_default(9000);
    site.manual_w = 7000;
    assert_true(pfi_event_site_noted(&evs[0], site).manual_w == 7000);
    free(evs);
    pfi_event b;
    pfi_event_init_limit(&b, "b", 4000, 5000, 4500);
    assert_int_equal(pfi_grid_put(g, &b, &e), PFI_OK);
    assert_int_equal(pfi_grid_note_level(g, "old", 6500, &e), PFI_OK);
    assert_int_equal(pfi_grid_note_level(g, "b", INFINITY, &e), PFI_OK);
    assert_int_equal(pfi_grid_note_level(g, "nope", 6500, &e), PFI_ENOENT);
    pfi_grid_close(g);
    assert_int_equal(pfi_grid_open(path, &g, &e), PFI_OK);
    assert_int_equal(pfi_grid_load(g, &evs, &n, &e), PFI_OK);
    assert_int_equal(n, 2);
    assert_string_equal(evs[0].id, "old");
    assert_true(evs[0].ramp_level_w == 6500);
    assert_true(pfi_event_site_noted(&evs[0], site).manual_w == 6500);
    assert_true(isinf(evs[1].ramp_level_w)); /* noted: no manual budget, the site's maximum */
    assert_true(isinf(pfi_event_site_noted(&evs[1], site).manual_w));
    /* Saved whole again (its report marked sent): the level stays. */
    assert_int_equal(pfi_grid_put(g, &evs[0], &e), PFI_OK);
    free(evs);
    assert_int_equal(pfi_grid_load(g, &evs, &n, &e), PFI_OK);
    assert_true(evs[0].ramp_level_w == 6500);
    /* The event of before, changed under way, keeps its first definition as a revision. */
    pfi_event changed = evs[0];
    changed.limit_w = 4000;
    assert_int_equal(pfi_grid_change(g, &evs[0], &changed, PFI_EVENT_CHANGE_REVISE, 2500, &e),
                     PFI_OK);
    pfi_event_revision *rv;
    assert_int_equal(pfi_grid_revisions(g, &changed, &rv, &n, &e), PFI_OK);
    assert_int_equal(n, 2);
    assert_true(rv[0].ev.limit_w == 5000 && isinf(rv[0].from_s) && rv[0].ev.ramp_down_s == 300);
    assert_true(rv[1].ev.limit_w == 4000 && rv[1].from_s == 2500);
    free(rv);
    free(evs);
    pfi_grid_close(g);
}

/* Changes of an event kept by kind: the first change under way keeps the held definition and
 * adds the new from its time; later ones add theirs; a change of priority alone adds none; one
 * ahead of the ramp adds one only to a history; a new event under the id and a delete clear
 * them.  The report judges each definition in its time and says when it changed. */
static void test_revisions(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_grid_store *g;
    assert_int_equal(pfi_grid_open(path, &g, &e), PFI_OK);
    pfi_event a, b, c;
    pfi_event_init_limit(&a, "m1", 10000, 10040, 4500);
    assert_int_equal(pfi_grid_change(g, NULL, &a, PFI_EVENT_CHANGE_NEW, 9000, &e), PFI_OK);
    b = a;
    b.end_s = 10060;
    assert_int_equal(pfi_grid_change(g, &a, &b, PFI_EVENT_CHANGE_AHEAD, 9500, &e), PFI_OK);
    pfi_event_revision *rv;
    int n;
    assert_int_equal(pfi_grid_revisions(g, &b, &rv, &n, &e), PFI_OK);
    assert_int_equal(n, 1); /* changed before it began: no history */
    assert_true(isinf(rv[0].from_s) && rv[0].ev.end_s == 10060);
    free(rv);
    a = b;
    b.limit_w = 3500;
    assert_int_equal(pfi_grid_change(g, &a, &b, PFI_EVENT_CHANGE_REVISE, 10025, &e), PFI_OK);
    c = b;
    c.priority = 7;
    assert_int_equal(pfi_grid_change(g, &b, &c, PFI_EVENT_CHANGE_SAME, 10030, &e), PFI_OK);
    for (int t = 9900; t < 10100; t++)
        assert_int_equal(pfi_grid_power_add(g, t, t < 10025 ? 4400 : t < 10027 ? 4450 : 3400,
                                            NAN, "m1", &e),
                         PFI_OK);
    pfi_event_site site = pfi_event_site_default(5600);
    json_t *j = pfi_grid_report_json(g, &c, &site, 5, 20000, &e);
    if (!j)
        fail_msg("%s", e.msg);
    json_t *cj = json_object_get(j, "compliance"), *revs = json_object_get(cj, "revisions");
    assert_int_equal(json_array_size(revs), 2);
    assert_true(json_number_value(json_object_get(cj, "seconds_over_target")) == 2);
    assert_true(json_is_null(json_object_get(json_array_get(revs, 0), "from")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(revs, 1), "from")),
                        "1970-01-01T02:47:05Z");
    assert_true(json_number_value(json_object_get(json_array_get(revs, 0), "target_w")) == 4500);
    const char *msg = json_string_value(json_object_get(j, "state_message"));
    assert_non_null(strstr(msg, "changed while under way at 1970-01-01T02:47:05Z (target 3500 W)"));
    json_decref(j);
    /* Never changed under way: no revisions in the report. */
    pfi_event other;
    pfi_event_init_limit(&other, "o", 10000, 10040, 4500);
    assert_int_equal(pfi_grid_change(g, NULL, &other, PFI_EVENT_CHANGE_NEW, 9000, &e), PFI_OK);
    j = pfi_grid_report_json(g, &other, &site, 5, 20000, &e);
    assert_null(json_object_get(json_object_get(j, "compliance"), "revisions"));
    assert_null(strstr(json_string_value(json_object_get(j, "state_message")), "changed"));
    json_decref(j);
    /* Another change under way adds the third; kept across a reopen. */
    a = c;
    c.limit_w = 3000;
    assert_int_equal(pfi_grid_change(g, &a, &c, PFI_EVENT_CHANGE_REVISE, 10030, &e), PFI_OK);
    pfi_grid_close(g);
    assert_int_equal(pfi_grid_open(path, &g, &e), PFI_OK);
    assert_int_equal(pfi_grid_revisions(g, &c, &rv, &n, &e), PFI_OK);
    assert_int_equal(n, 3);
    assert_true(rv[0].ev.limit_w == 4500 && rv[1].ev.limit_w == 3500 && rv[1].ev.priority == 0);
    assert_true(rv[2].ev.limit_w == 3000 && rv[2].ev.priority == 7 && rv[2].from_s == 10030);
    free(rv);
    /* A new event under the id clears them; so does a delete. */
    assert_int_equal(pfi_grid_change(g, &c, &other, PFI_EVENT_CHANGE_NEW, 30000, &e), PFI_OK);
    pfi_event renewed = other;
    snprintf(renewed.id, sizeof renewed.id, "m1");
    assert_int_equal(pfi_grid_change(g, &c, &renewed, PFI_EVENT_CHANGE_NEW, 30000, &e), PFI_OK);
    assert_int_equal(pfi_grid_revisions(g, &renewed, &rv, &n, &e), PFI_OK);
    assert_int_equal(n, 1);
    free(rv);
    b = renewed;
    b.limit_w = 3000;
    assert_int_equal(pfi_grid_change(g, &renewed, &b, PFI_EVENT_CHANGE_REVISE, 10020, &e),
                     PFI_OK);
    assert_int_equal(pfi_grid_delete(g, "m1", &e), PFI_OK);
    assert_int_equal(pfi_grid_revisions(g, &renewed, &rv, &n, &e), PFI_OK);
    assert_int_equal(n, 1);
    free(rv);
    assert_int_equal(pfi_grid_delete(g, "m1", &e), PFI_ENOENT);
    pfi_grid_close(g);
}

/* The event's id when first stored: read back (0 for a put without one), kept by a change,
 * taken anew by a NEW event under the id; a report of an event stored after its window began
 * says how late, and counts as held only the budget recorded after (the budget before was
 * another event's: "held ... the least it could" was reported for it). */
static double loaded_added(pfi_grid_store *g, const char *id)
{
    pfi_err e = {0};
    pfi_event *evs;
    int n;
    double at = -1;
    assert_int_equal(pfi_grid_load(g, &evs, &n, &e), PFI_OK);
    for (int i = 0; i < n; i++)
        if (!strcmp(evs[i].id, id))
            at = evs[i].added_s;
    free(evs);
    return at;
}

static void test_added(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_grid_store *g;
    assert_int_equal(pfi_grid_open(path, &g, &e), PFI_OK);
    pfi_event a, b, c, p;
    pfi_event_init_limit(&p, "put", 10000, 10040, 4500);
    assert_int_equal(pfi_grid_put(g, &p, &e), PFI_OK);
    assert_true(loaded_added(g, "put") == 0);
    pfi_event_init_limit(&a, "late", 10000, 10040, 3000);
    assert_int_equal(pfi_grid_change(g, NULL, &a, PFI_EVENT_CHANGE_NEW, 10008, &e), PFI_OK);
    assert_true(loaded_added(g, "late") == 10008);
    b = a;
    b.limit_w = 2800;
    assert_int_equal(pfi_grid_change(g, &a, &b, PFI_EVENT_CHANGE_REVISE, 10020, &e), PFI_OK);
    c = b;
    c.priority = 3;
    assert_int_equal(pfi_grid_change(g, &b, &c, PFI_EVENT_CHANGE_SAME, 10021, &e), PFI_OK);
    assert_true(loaded_added(g, "late") == 10008);
    /* The budget recorded: another event's 4000 W before it came, then the least the site
     * could hold, 4000 W all along. */
    for (int t = 9900; t < 10100; t++)
        assert_int_equal(pfi_grid_power_add(g, t, 3900, 4000, "late", &e), PFI_OK);
    pfi_event_site site = pfi_event_site_default(5600);
    json_t *j = pfi_grid_report_json(g, &c, &site, 5, 20000, &e);
    if (!j)
        fail_msg("%s", e.msg);
    json_t *cj = json_object_get(j, "compliance");
    assert_true(json_number_value(json_object_get(cj, "taken_after_start_s")) == 8);
    json_t *held = json_object_get(cj, "held_above_target");
    if (fabs(json_number_value(json_object_get(held, "seconds")) - 32) > 1e-9)
        fail_msg("held %g s, want 32 (10008-10040)",
                 json_number_value(json_object_get(held, "seconds")));
    json_decref(j);
    /* A new event under the id is taken when it comes. */
    pfi_event renewed = c;
    renewed.limit_w = 2000;
    assert_int_equal(pfi_grid_change(g, &c, &renewed, PFI_EVENT_CHANGE_NEW, 10030, &e), PFI_OK);
    assert_true(loaded_added(g, "late") == 10030);
    pfi_grid_close(g);
}

/* The report's state at `now`, checked with the words its message must hold. */
static void expect_state(pfi_grid_store *g, const pfi_event *ev, double now, const char *state,
                         const char *words)
{
    pfi_err e = {0};
    pfi_event_site site = pfi_event_site_default(10000);
    json_t *j = pfi_grid_report_json(g, ev, &site, 5, now, &e);
    if (!j)
        fail_msg("%s", e.msg);
    const char *st = json_string_value(json_object_get(j, "state")),
               *msg = json_string_value(json_object_get(j, "state_message"));
    if (!st || strcmp(st, state) || !msg || !strstr(msg, words))
        fail_msg("event %s at %.0f: state %s (%s), expected %s (%s)", ev->id, now,
                 st ? st : "none", msg ? msg : "no message", state, words);
    json_decref(j);
}

/* A report says what it can at every point of an event's life: nothing before its ramp, a
 * partial report until its restore is over, then a complete one, or none to judge when no
 * second of the window was recorded (the daemon was down). */
static void test_report_states(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_grid_store *g;
    assert_int_equal(pfi_grid_open(path, &g, &e), PFI_OK);
    pfi_event a, b;
    pfi_event_init_limit(&a, "a", 10000, 10600, 5000); /* ramp from 9940, restored by 10720 */
    a.ramp_down_s = 60;
    a.ramp_up_s = 120;
    pfi_event_init_limit(&b, "b", 20000, 20600, 5000);
    for (int t = 9000; t < 10800; t++)
        assert_int_equal(pfi_grid_power_add(g, t, 4800, 5000, "a", &e), PFI_OK);
    expect_state(g, &a, 9000, "not_started", "starts at 1970-01-01T02:46:40Z: nothing to "
                                              "report yet");
    expect_state(g, &a, 9970, "partial", "ramping down to its start");
    expect_state(g, &a, 10300, "partial", "partial report, 600 s of its 600 s window");
    expect_state(g, &a, 10650, "partial", "restoring until 1970-01-01T02:58:40Z");
    expect_state(g, &a, 30000, "complete", "complete report, 600 s of its 600 s window");
    expect_state(g, &b, 30000, "no_samples", "no site power was recorded in its window");
    pfi_grid_close(g);
}

/* Back-to-back events (the intervals of one OpenADR event): the second's baseline is the draw
 * before the first, not the first's curtailed draw (its shed came out about 0).  Recorded a
 * sample a second: 5000 W, then 4000 W while A or B binds (A from its ramp, B after it). */
static void test_baseline_outside_events(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_grid_store *g;
    assert_int_equal(pfi_grid_open(path, &g, &e), PFI_OK);
    pfi_event a, b;
    pfi_event_init_limit(&a, "oadr-x-0", 10000, 13600, 4000);
    pfi_event_init_limit(&b, "oadr-x-1", 13600, 17200, 4000);
    a.ramp_down_s = a.ramp_up_s = b.ramp_down_s = b.ramp_up_s = 120;
    assert_int_equal(pfi_grid_put(g, &a, &e), PFI_OK);
    assert_int_equal(pfi_grid_put(g, &b, &e), PFI_OK);
    for (int t = 5000; t < 17500; t++) {
        int bound = t >= 9880 && t < 17320;
        assert_int_equal(pfi_grid_power_add(g, t, bound ? 4000 : 5000, bound ? 4000 : NAN,
                                            !bound ? NULL : t < 13600 ? "oadr-x-0" : "oadr-x-1",
                                            &e),
                         PFI_OK);
    }
    pfi_event_site site = pfi_event_site_default(10000);
    pfi_event_compliance c;
    assert_int_equal(pfi_grid_compliance(g, &b, &site, 5, &c, NULL, &e), PFI_OK);
    if (!(fabs(c.baseline_w - 5000) < 1e-6))
        fail_msg("interval 1's baseline %.1f W (%s), not the 5000 W before interval 0",
                 c.baseline_w, c.baseline_method);
    assert_non_null(strstr(c.baseline_method, "outside other events (60 min left out"));
    assert_true(fabs(c.energy_shed_kwh - 1.0) < 1e-6);
    pfi_event_compliance_free(&c);
    /* The first one's hour before its ramp had no event: as it always was. */
    assert_int_equal(pfi_grid_compliance(g, &a, &site, 5, &c, NULL, &e), PFI_OK);
    assert_true(fabs(c.baseline_w - 5000) < 1e-6);
    assert_string_equal(c.baseline_method,
                        "mean site draw over the hour before the ramp (100% of it recorded)");
    pfi_event_compliance_free(&c);
    /* A walk from the end of the record: B's 4000 W and A's left out, back to 5000 W. */
    pfi_baseline_walk w;
    pfi_baseline_walk_init(&w, 17320, 3600, 5);
    assert_int_equal(pfi_grid_power_walk(g, &w, &e), PFI_OK);
    assert_true(fabs(pfi_baseline_walk_mean(&w) - 5000) < 1e-6 && w.left_out_s == 17320 - 9880);
    pfi_grid_close(g);
}

/* A finished event let go is kept as history: not loaded with the events held, its event and
 * its samples still there for its report, until PFI_GRID_HISTORY_S has passed; an event of its
 * id saved again is held again.  Deleted, a VTN's event's report was gone an hour after its
 * restore. */
static void test_history(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_grid_store *g;
    assert_int_equal(pfi_grid_open(path, &g, &e), PFI_OK);
    pfi_event a, b, got;
    pfi_event_init_limit(&a, "oadr-a-0", 10000, 11000, 4000);
    pfi_event_init_limit(&b, "b", 20000, 21000, 4000);
    assert_int_equal(pfi_grid_put(g, &a, &e), PFI_OK);
    assert_int_equal(pfi_grid_put(g, &b, &e), PFI_OK);
    for (int t = 5000; t < 12000; t += 10)
        assert_int_equal(pfi_grid_power_add(g, t, 4500, NAN, NULL, &e), PFI_OK);
    double let_go = 0;
    assert_int_equal(pfi_grid_history(g, "oadr-a-0", &got, &let_go, &e), PFI_ENOENT);
    assert_int_equal(pfi_grid_let_go(g, "oadr-a-0", 16000, &e), PFI_OK);
    assert_int_equal(pfi_grid_let_go(g, "nope", 16000, &e), PFI_ENOENT);
    pfi_event *evs;
    int n;
    assert_int_equal(pfi_grid_load(g, &evs, &n, &e), PFI_OK);
    assert_int_equal(n, 1);
    assert_string_equal(evs[0].id, "b");
    free(evs);
    assert_int_equal(pfi_grid_history(g, "oadr-a-0", &got, &let_go, &e), PFI_OK);
    assert_true(let_go == 16000 && got.limit_w == 4000 && got.end_s == 11000);
    /* Its samples are kept while it is (two days later, nothing else needs them). */
    assert_int_equal(pfi_grid_power_prune(g, 200000, 3600, 3600, &e), PFI_OK);
    pfi_event_site site = pfi_event_site_default(10000);
    json_t *j = pfi_grid_report_json(g, &got, &site, 60, 200000, &e);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "complete");
    json_decref(j);
    /* Past its history: gone, with the samples only it needed. */
    assert_int_equal(pfi_grid_history_prune(g, 16000 + 1, &e), PFI_OK);
    assert_int_equal(pfi_grid_history(g, "oadr-a-0", &got, &let_go, &e), PFI_ENOENT);
    assert_non_null(strstr(e.msg, "oadr-a-0"));
    assert_int_equal(pfi_grid_power_prune(g, 200000, 3600, 3600, &e), PFI_OK);
    pfi_grid_sample *smp;
    assert_int_equal(pfi_grid_power_range(g, 0, 1e9, &smp, &n, &e), PFI_OK);
    assert_int_equal(n, 0);
    free(smp);
    /* Let go, then saved again under its id: held again, no longer history. */
    assert_int_equal(pfi_grid_let_go(g, "b", 22000, &e), PFI_OK);
    assert_int_equal(pfi_grid_put(g, &b, &e), PFI_OK);
    assert_int_equal(pfi_grid_history(g, "b", &got, &let_go, &e), PFI_ENOENT);
    assert_int_equal(pfi_grid_load(g, &evs, &n, &e), PFI_OK);
    assert_int_equal(n, 1);
    free(evs);
    pfi_grid_close(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_events_survive_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_openadr_provenance, setup, teardown),
        cmocka_unit_test_setup_teardown(test_power, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upgrade_from_v1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upgrade_from_v4, setup, teardown),
        cmocka_unit_test_setup_teardown(test_revisions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_states, setup, teardown),
        cmocka_unit_test_setup_teardown(test_baseline_outside_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history, setup, teardown),
        cmocka_unit_test_setup_teardown(test_added, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
