/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the grid layer of the store (store/grid.h): events saved, replaced, deleted and read
 * back after reopening; site power recorded, read by range and pruned around events. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

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
        cmocka_unit_test_setup_teardown(test_power, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
