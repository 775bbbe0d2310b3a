/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the jobs file of `pfi allocate` (src/store/jobs_file.c, codec.c) and of the cap grid's
 * bounds (core/alloc.c): every value out of range is refused with a message naming the job and
 * the field, and nothing is allocated on a step far above the caps. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/alloc.h"
#include "core/alloc_set.h"
#include "core/policy.h"
#include "store/jobs.h"

#define CURVE "\"curve\":{\"cap_w\":[300,500,700],\"tput\":[60,90,100]}"

static char path[600];

static void write_jobs(const char *text)
{
    const char *base = getenv("PFI_TEST_TMP");
    snprintf(path, sizeof path, "%s/jobs-%ld.json", base && *base ? base : "/tmp", (long)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int parse(const char *text, pfi_err *e)
{
    write_jobs(text);
    pfi_alloc_set s;
    int rc = pfi_jobs_file_load(path, 0, &s, e);
    pfi_alloc_set_free(&s);
    unlink(path);
    return rc;
}

static void test_good_file(void **state)
{
    const char *t = "{\"jobs\":[{\"id\":\"a\",\"gpus\":8,\"weight\":2," CURVE "},"
                    "{\"id\":\"b\",\"gpus\":4,\"sla_max_slowdown\":0.1," CURVE "}]}";
    pfi_alloc_set s;
    pfi_err e = {0};
    write_jobs(t);
    assert_int_equal(pfi_jobs_file_load(path, 0, &s, &e), PFI_OK);
    unlink(path);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.truth[0].id, "a");
    assert_int_equal(s.truth[0].n_gpus, 8);
    assert_true(s.truth[0].weight == 2);
    assert_int_equal(s.truth[1].n_points, 3);
    assert_true(s.truth[1].max_cap_w == 700);
    pfi_alloc_set_free(&s);
}

static void test_bad_values(void **state)
{
    const char *bad[][2] = {
        {"{\"id\":\"w0\",\"gpus\":1,\"weight\":0," CURVE "}", "weight"},
        {"{\"id\":\"wneg\",\"gpus\":1,\"weight\":-1," CURVE "}", "weight"},
        {"{\"id\":\"wbig\",\"gpus\":1,\"weight\":1e308," CURVE "}", "weight"},
        {"{\"id\":\"g\",\"gpus\":1e308," CURVE "}", "gpus"},
        {"{\"id\":\"g2\",\"gpus\":2.5," CURVE "}", "gpus"},
        {"{\"id\":\"p\",\"gpus\":1,\"p0_w\":1e308," CURVE "}", "p0_w"},
        {"{\"id\":\"mn\",\"gpus\":1,\"min_cap_w\":-5," CURVE "}", "min_cap_w"},
        {"{\"id\":\"t\",\"gpus\":1,\"t0\":1e308," CURVE "}", "t0"},
        {"{\"id\":\"s\",\"gpus\":1,\"sla_max_slowdown\":1e308," CURVE "}", "sla_max_slowdown"},
        {"{\"id\":\"c\",\"gpus\":1,\"curve\":{\"cap_w\":[300,1e308],\"tput\":[1,2]}}", "point 2"},
        {"{\"id\":\"c2\",\"gpus\":1,\"curve\":{\"cap_w\":[300,500],\"tput\":[1,1e308]}}", "point 2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "[%s]", bad[i][0]);
        pfi_err e = {0};
        if (parse(text, &e) != PFI_EINVAL)
            fail_msg("accepted: %s", text);
        if (!strstr(e.msg, bad[i][1]) || !strstr(e.msg, "job "))
            fail_msg("message for %s does not name the job and '%s': %s", text, bad[i][1],
                     e.msg);
    }
    pfi_err e = {0};
    assert_int_equal(parse("not json", &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, ".json:1"));
    assert_int_equal(parse("{\"jobs\":[]}", &e), PFI_EINVAL);
}

/* A grid step far above every cap has no multiple in the caps' range: refused, never caps of
 * 0 W. */
static void test_step_bounds(void **state)
{
    double caps[] = {300, 500, 700}, tput[] = {60, 90, 100};
    pfi_alloc_job j = {"a", 4, 300, 700, caps, tput, 3, 700, NAN, NAN, 1};
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    pfi_alloc_result r;
    pfi_err e = {0};
    const double steps[] = {1e308, 1e6, 701};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        o.step_w = steps[k];
        int rc = pfi_alloc_solve(&j, 1, 2000, &o, &r, &e);
        if (rc == PFI_OK) {
            double cap = r.cap_w[0];
            pfi_alloc_result_free(&r);
            fail_msg("step %g W gave a cap of %g W", steps[k], cap);
        }
        assert_int_equal(rc, PFI_EINVAL);
        assert_non_null(strstr(e.msg, "grid"));
    }
    o.step_w = 100;
    assert_int_equal(pfi_alloc_solve(&j, 1, 2000, &o, &r, &e), PFI_OK);
    assert_true(r.cap_w[0] >= 300 && r.cap_w[0] <= 500);
    pfi_alloc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_file),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_step_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
