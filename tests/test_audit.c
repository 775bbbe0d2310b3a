/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the node daemon's audit log (store/audit.h): a decision reads back with its jobs and
 * the tokens/s observed later, saved jobs come back in order, state by key, and a NULL log
 * writes nothing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/audit.h"

static char path[64];

static int setup(void **state)
{
    snprintf(path, sizeof path, "/tmp/pfi-test-audit-%ld.db", (long)getpid());
    unlink(path);
    return 0;
}

static int teardown(void **state)
{
    char p[80];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
    return 0;
}

static void test_decision(void **state)
{
    pfi_audit *a;
    pfi_err e = {0};
    assert_int_equal(pfi_audit_open(path, &a, &e), PFI_OK);
    assert_int_equal(pfi_audit_event(a, 1e9, "decision", "hello"), PFI_OK);
    pfi_audit_job jobs[2] = {{"a", 4, 500, 9000, 0.4, 0.1, 1, "given"},
                             {"b", 2, 650, NAN, NAN, NAN, 2, "none"}};
    pfi_audit_gpu gpus[1] = {{0, 700, 500, 500, 500, 0, ""}};
    pfi_audit_decision d = {.wall = 1e9 + 0.25,
                            .reason = "test",
                            .budget_w = 3300,
                            .mode = "local",
                            .sum_before_w = 4200,
                            .sum_after_w = 3300,
                            .peak_w = 4200,
                            .n_changed = 1,
                            .apply_ms = NAN,
                            .jobs = jobs,
                            .n_jobs = 2,
                            .gpus = gpus,
                            .n_gpus = 1};
    long long id = pfi_audit_decision_add(a, &d);
    assert_true(id > 0);
    assert_int_equal(pfi_audit_observed(a, 1e9 + 5, "a", 8800), PFI_OK);
    json_t *doc = pfi_audit_decisions(a, 10, &e);
    assert_non_null(doc);
    json_t *dec = json_array_get(json_object_get(doc, "decisions"), 0);
    assert_int_equal(json_integer_value(json_object_get(dec, "id")), id);
    assert_string_equal(json_string_value(json_object_get(dec, "t")), "2001-09-09T01:46:40.250Z");
    assert_string_equal(json_string_value(json_object_get(dec, "mode")), "local");
    assert_true(json_is_null(json_object_get(dec, "apply_ms")));
    json_t *ja = json_array_get(json_object_get(dec, "jobs"), 0);
    json_t *jb = json_array_get(json_object_get(dec, "jobs"), 1);
    assert_string_equal(json_string_value(json_object_get(ja, "job")), "a");
    assert_true(json_real_value(json_object_get(ja, "observed_tps")) == 8800);
    assert_true(json_is_null(json_object_get(jb, "predicted_tps")));
    assert_string_equal(json_string_value(json_object_get(jb, "curve")), "none");
    json_decref(doc);
    pfi_audit_close(a);
}

static void note(void *ctx, const char *id, const char *spec)
{
    char *seen = ctx;
    strcat(seen, id);
    strcat(seen, spec);
}

static void test_jobs_and_state(void **state)
{
    pfi_audit *a;
    pfi_err e = {0};
    assert_int_equal(pfi_audit_open(path, &a, &e), PFI_OK);
    assert_int_equal(pfi_audit_save_job(a, "x", "{1}"), PFI_OK);
    assert_int_equal(pfi_audit_save_job(a, "y", "{2}"), PFI_OK);
    assert_int_equal(pfi_audit_save_job(a, "z", "{3}"), PFI_OK);
    assert_int_equal(pfi_audit_delete_job(a, "y"), PFI_OK);
    assert_int_equal(pfi_audit_save_job(a, "x", "{4}"), PFI_OK); /* again: now the last */
    char seen[64] = "";
    assert_int_equal(pfi_audit_load_jobs(a, note, seen, &e), PFI_OK);
    assert_string_equal(seen, "z{3}x{4}");
    char v[16];
    assert_int_equal(pfi_audit_get_state(a, "budget_w", v, sizeof v), PFI_ENOENT);
    assert_int_equal(pfi_audit_set_state(a, "budget_w", "3300"), PFI_OK);
    assert_int_equal(pfi_audit_get_state(a, "budget_w", v, sizeof v), PFI_OK);
    assert_string_equal(v, "3300");
    /* States removed: one by key; by prefix and value, only those (an older pfi's empty rows of
     * SLA breaches seen), a '%' or '_' in the prefix matching itself. */
    assert_int_equal(pfi_audit_set_state(a, "sla_seen:a", "[]"), PFI_OK);
    assert_int_equal(pfi_audit_set_state(a, "sla_seen:b", "[{\"cap_w\":300}]"), PFI_OK);
    assert_int_equal(pfi_audit_set_state(a, "sla_seenXc", "[]"), PFI_OK);
    assert_int_equal(pfi_audit_set_state(a, "other", "[]"), PFI_OK);
    assert_int_equal(pfi_audit_delete_states(a, "sla_seen:", "[]"), PFI_OK);
    assert_int_equal(pfi_audit_delete_states(a, "sla_seen_", "[]"), PFI_OK);
    char w[64];
    assert_int_equal(pfi_audit_get_state(a, "sla_seen:a", w, sizeof w), PFI_ENOENT);
    assert_int_equal(pfi_audit_get_state(a, "sla_seen:b", w, sizeof w), PFI_OK);
    assert_int_equal(pfi_audit_get_state(a, "sla_seenXc", w, sizeof w), PFI_OK);
    assert_int_equal(pfi_audit_get_state(a, "other", w, sizeof w), PFI_OK);
    assert_int_equal(pfi_audit_delete_state(a, "other"), PFI_OK);
    assert_int_equal(pfi_audit_get_state(a, "other", w, sizeof w), PFI_ENOENT);
    pfi_audit_close(a);
    /* no log: writers succeed and write nothing, readers see an empty log */
    assert_int_equal(pfi_audit_event(NULL, 0, "k", "m"), PFI_OK);
    assert_int_equal(pfi_audit_decision_add(NULL, NULL), 0);
    assert_int_equal(pfi_audit_get_state(NULL, "budget_w", v, sizeof v), PFI_ENOENT);
    json_t *doc = pfi_audit_decisions(NULL, 10, &e);
    assert_int_equal(json_array_size(json_object_get(doc, "decisions")), 0);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_decision, setup, teardown),
        cmocka_unit_test_setup_teardown(test_jobs_and_state, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
