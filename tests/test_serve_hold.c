/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the held limits a restart comes back to (src/serve/hold.c) when the GPUs a node
 * shows change between starts (review p31 F3): a hold saved while some GPUs are absent keeps
 * their entries, so a restart with them back lowers them too; and a GPU no hold names is put
 * at its minimum where the start asks it (a controller's caps). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hw/backend_impl.h"
#include "serve/serve_int.h"
#include "support/sim_node.h"

static void put(srv_hold *h, const char *uuid, double cap)
{
    snprintf(h->uuid[h->n], sizeof h->uuid[0], "%s", uuid);
    h->cap_w[h->n++] = cap;
}

static srv_gpu *gpus_named(int n, const char *prefix)
{
    srv_gpu *g = calloc((size_t)n, sizeof *g);
    assert_non_null(g);
    for (int i = 0; i < n; i++)
        snprintf(g[i].dev.uuid, sizeof g[i].dev.uuid, "%s%d", prefix, i);
    return g;
}

/* The entries of GPUs not present now stay, in the hold's order, each UUID once; one
 * without a UUID (matched by index) names no GPU that could come back. */
static void test_absent_kept_in_order(void **state)
{
    (void)state;
    srv_hold *h = calloc(1, sizeof *h), *out = calloc(1, sizeof *out);
    assert_non_null(h);
    assert_non_null(out);
    for (int i = 0; i < 8; i++) {
        char u[16];
        snprintf(u, sizeof u, "GPU-%d", i);
        put(h, u, 200 + i);
    }
    put(h, "", 250);
    put(h, "GPU-6", 999); /* twice: the first (newest) stays */
    srv_gpu *present = gpus_named(4, "GPU-");
    pfi_srv_hold_absent(h, present, 4, out);
    assert_int_equal(out->n, 4);
    for (int k = 0; k < 4; k++) {
        char u[16];
        snprintf(u, sizeof u, "GPU-%d", 4 + k);
        assert_string_equal(out->uuid[k], u);
        assert_true(out->cap_w[k] == 204 + k);
    }
    /* Every GPU back: nothing absent. */
    free(present);
    present = gpus_named(8, "GPU-");
    pfi_srv_hold_absent(h, present, 8, out);
    assert_int_equal(out->n, 0);
    free(present);
    free(h);
    free(out);
}

/* Bounded so that a hold never names more than PFI_MAX_GPUS (a load refuses more): the last
 * entries, the oldest absent ones, go first. */
static void test_absent_bounded(void **state)
{
    (void)state;
    srv_hold *h = calloc(1, sizeof *h), *out = calloc(1, sizeof *out);
    assert_non_null(h);
    assert_non_null(out);
    for (int i = 0; i < 8; i++) {
        char u[16];
        snprintf(u, sizeof u, "OLD-%d", i);
        put(h, u, 300 + i);
    }
    srv_gpu *present = gpus_named(PFI_MAX_GPUS - 3, "NEW-");
    pfi_srv_hold_absent(h, present, PFI_MAX_GPUS - 3, out);
    assert_int_equal(out->n, 3);
    assert_string_equal(out->uuid[0], "OLD-0");
    assert_string_equal(out->uuid[2], "OLD-2");
    free(present);
    present = gpus_named(PFI_MAX_GPUS, "NEW-");
    pfi_srv_hold_absent(h, present, PFI_MAX_GPUS, out);
    assert_int_equal(out->n, 0);
    free(present);
    free(h);
    free(out);
}

static int setup(void **state)
{
    pfi_test_node *t = calloc(1, sizeof *t);
    if (!t || pfi_test_node_start(t, "serve-hold", NULL) != 0)
        return -1;
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    pfi_test_node *t = *state;
    pfi_test_node_stop(t);
    free(t);
    return 0;
}

/* A save under caps writes the GPUs present, then the absent ones kept at start; a save with
 * nothing in force forgets them. */
static void test_save_keeps_absent(void **state)
{
    pfi_test_node *t = *state;
    srv_node *n = t->n;
    assert_true(n->n_gpus >= 2 && n->n_gpus + 2 <= PFI_MAX_GPUS);
    srv_hold *old = calloc(1, sizeof *old), *h = calloc(1, sizeof *h);
    assert_non_null(old);
    assert_non_null(h);
    put(old, n->gpu[0].dev.uuid, 250);
    put(old, "GPU-gone-a", 210);
    put(old, "GPU-gone-b", 220);
    pfi_srv_hold_absent(old, n->gpu, n->n_gpus, &n->held_absent);
    assert_int_equal(n->held_absent.n, 2);

    n->mode = SRV_MODE_EXTERNAL;
    for (int i = 0; i < n->n_gpus; i++)
        n->gpu[i].requested_w = 300;
    pfi_srv_hold_save(n, 7);
    pfi_err e = {0};
    assert_int_equal(pfi_srv_hold_load(n->audit, h, &e), PFI_OK);
    assert_true(h->active);
    assert_int_equal(h->mode, SRV_MODE_EXTERNAL);
    assert_int_equal(h->n, n->n_gpus + 2);
    for (int i = 0; i < n->n_gpus; i++) {
        assert_string_equal(h->uuid[i], n->gpu[i].dev.uuid);
        assert_true(h->cap_w[i] == 300);
    }
    assert_string_equal(h->uuid[n->n_gpus], "GPU-gone-a");
    assert_true(h->cap_w[n->n_gpus] == 210);
    assert_string_equal(h->uuid[n->n_gpus + 1], "GPU-gone-b");
    assert_true(h->cap_w[n->n_gpus + 1] == 220);

    /* Nothing in force: "none", and the absent ones are not brought back by a later hold. */
    n->mode = SRV_MODE_LOCAL;
    n->budget_w = NAN;
    pfi_srv_hold_save(n, 0);
    assert_int_equal(pfi_srv_hold_load(n->audit, h, &e), PFI_OK);
    assert_false(h->active);
    assert_int_equal(n->held_absent.n, 0);
    n->mode = SRV_MODE_EXTERNAL;
    pfi_srv_hold_save(n, 8);
    assert_int_equal(pfi_srv_hold_load(n->audit, h, &e), PFI_OK);
    assert_int_equal(h->n, n->n_gpus);
    free(old);
    free(h);
}

/* The clamp lowers the GPUs the hold names to their caps, and those it does not name to their
 * minimum only where asked; it never raises. */
static void test_clamp_unheld_to_min(void **state)
{
    pfi_test_node *t = *state;
    srv_node *n = t->n;
    int count = n->n_gpus;
    assert_true(count >= 4);
    srv_hold *h = calloc(1, sizeof *h);
    assert_non_null(h);
    h->active = 1;
    h->mode = SRV_MODE_EXTERNAL;
    for (int i = 0; i < 2; i++)
        put(h, n->gpu[i].dev.uuid, 300);
    int lowered, at_min, failed;
    assert_int_equal(pfi_srv_hold_clamp(t->b, h, NULL, &lowered, &at_min, &failed), PFI_OK);
    assert_int_equal(lowered, 2);
    assert_int_equal(at_min, 0);
    assert_int_equal(failed, 0);
    pfi_err e = {0};
    pfi_device d[PFI_MAX_GPUS];
    for (int i = 0; i < count; i++)
        assert_int_equal(pfi_hw_info(t->b, i, &d[i], &e), PFI_OK);
    assert_true(fabs(d[0].limit_w - 300) < 0.5 && fabs(d[1].limit_w - 300) < 0.5);
    assert_true(d[2].limit_w > 300); /* not named, not asked: where it was */

    unsigned char to_min[PFI_MAX_GPUS] = {0};
    for (int i = 0; i < count; i++)
        to_min[i] = 1; /* the named ones keep their held caps all the same */
    to_min[count - 1] = 0;
    assert_int_equal(pfi_srv_hold_clamp(t->b, h, to_min, &lowered, &at_min, &failed), PFI_OK);
    assert_int_equal(lowered, 0);
    assert_int_equal(at_min, count - 3);
    assert_int_equal(failed, 0);
    for (int i = 0; i < count; i++) {
        assert_int_equal(pfi_hw_info(t->b, i, &d[i], &e), PFI_OK);
        double want = i < 2 ? 300 : i < count - 1 ? d[i].min_limit_w : d[i].default_limit_w;
        assert_true(fabs(d[i].limit_w - want) < 0.5);
    }
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absent_kept_in_order),
        cmocka_unit_test(test_absent_bounded),
        cmocka_unit_test_setup_teardown(test_save_keeps_absent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clamp_unheld_to_min, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
