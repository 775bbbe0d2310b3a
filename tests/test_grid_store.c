/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the grid layer of the store (store/grid.h): events saved, replaced, deleted and read
 * back after reopening; an OpenADR event's VTN start and randomizeStart offset kept with it;
 * site power recorded, read by range and pruned around events. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_events_survive_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_openadr_provenance, setup, teardown),
        cmocka_unit_test_setup_teardown(test_power, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
