/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the JSON codec of curves and jobs (store/codec.h) and of the jobs file
 * (store/jobs.h): what is written reads back the same, and bad input is named. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/codec.h"
#include "store/jobs.h"

static json_t *parse(const char *text)
{
    json_t *d = json_loads(text, 0, NULL);
    assert_non_null(d);
    return d;
}

/* The arrays spelling, strictly: each problem named with the curve. */
static void test_arrays(void **state)
{
    double cap[4], tput[4];
    int n = -1;
    pfi_err e = {0};
    assert_int_equal(pfi_curve_json_arrays(NULL, "c", 4, cap, tput, &n, &e), PFI_OK);
    assert_int_equal(n, 0);
    json_t *ok = parse("{\"cap_w\": [300, 500], \"tput\": [1, 2.5]}");
    assert_int_equal(pfi_curve_json_arrays(ok, "c", 4, cap, tput, &n, &e), PFI_OK);
    assert_int_equal(n, 2);
    assert_true(cap[1] == 500 && tput[1] == 2.5);
    json_decref(ok);
    const struct {
        const char *json, *msg;
    } bad[] = {
        {"{\"cap_w\": [300]}", "c needs arrays \"cap_w\" and \"tput\""},
        {"[5]", "c needs arrays \"cap_w\" and \"tput\""},
        {"{\"cap_w\": [300, 400], \"tput\": [1]}", "c has 2 caps but 1 throughputs"},
        {"{\"cap_w\": [1, 2, 3, 4, 5], \"tput\": [1, 2, 3, 4, 5]}", "c has 5 points (at most 4)"},
        {"{\"cap_w\": [300, \"x\"], \"tput\": [1, 2]}", "c point 2 is not two numbers"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        json_t *d = parse(bad[k].json);
        assert_int_equal(pfi_curve_json_arrays(d, "c", 4, cap, tput, &n, &e), PFI_EINVAL);
        assert_string_equal(e.msg, bad[k].msg);
        json_decref(d);
    }
}

/* A curve the daemon reports (points spelling) reads back field for field, and its fit is
 * taken strictly. */
static void test_points_round_trip(void **state)
{
    pfi_curve c;
    memset(&c, 0, sizeof c);
    c.t0 = 9000;
    c.p0_w = 640;
    c.cap0_w = 700;
    c.min_cap_w = 200;
    c.max_cap_w = 700;
    c.n_gpus = 4;
    c.r_max = NAN; /* written as null */
    c.n = 2;
    c.cap_w[0] = 400, c.draw_w[0] = 390, c.rel[0] = 0.8;
    c.cap_w[1] = 700, c.draw_w[1] = 640, c.rel[1] = 1.0;
    c.fit = (pfi_fit){.family = PFI_FAM_POWER, .p = {0.9, 1.6, 0}};
    json_t *o = pfi_curve_json_encode(&c);
    assert_true(json_is_null(json_object_get(o, "r_max")));
    pfi_curve_json cv;
    pfi_curve_json_read(o, &cv);
    assert_true(cv.is_object && !cv.has_arrays && cv.n_points == 2);
    assert_true(cv.t0 == 9000 && cv.p0_w == 640 && cv.cap0_w == 700 && isnan(cv.r_max));
    assert_true(cv.has_n_gpus && cv.n_gpus == 4);
    pfi_curve_json_point p;
    pfi_curve_json_point_at(&cv, 0, &p);
    assert_true(p.cap_w == 400 && p.draw_w == 390 && p.rel == 0.8);
    assert_true(isnan(p.tput) && isnan(p.tokens_per_s));
    pfi_fit f;
    pfi_err e = {0};
    assert_int_equal(pfi_curve_json_fit(&cv, &f, &e), PFI_OK);
    assert_true(f.family == PFI_FAM_POWER && f.p[0] == 0.9 && f.p[1] == 1.6 && isnan(f.rmse));
    json_decref(o);
    const struct {
        const char *json, *msg;
    } bad[] = {
        {"{}", "curve: needs points (measured levels) or a fit"},
        {"{\"fit\": {\"family\": \"nope\"}}", "curve.fit.family: unknown family 'nope'"},
        {"{\"fit\": {\"p\": [1, 2]}}", "curve.fit.family: unknown family ''"},
        {"{\"fit\": {\"family\": \"power\", \"p\": [1]}}",
         "curve.fit.p: family power needs 2 parameters"},
        {"{\"fit\": {\"family\": \"power\", \"p\": [1, null]}}", "curve.fit.p[1]: not a number"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        json_t *d = parse(bad[k].json);
        pfi_curve_json_read(d, &cv);
        assert_int_equal(pfi_curve_json_fit(&cv, &f, &e), PFI_EINVAL);
        assert_string_equal(e.msg, bad[k].msg);
        json_decref(d);
    }
}

/* A job written as a jobs file spells it reads back as the same job. */
static void test_job_round_trip(void **state)
{
    double cap[3] = {300, 500, 700}, tput[3] = {5, 8, 9}, ptput[3] = {4, 8, 9};
    double clk[2 * 3] = {1000, 1500, 1900, 950, 1450, 1850};
    pfi_alloc_job job = {"a", 2, 300, 700, cap, tput, 3, 650, NAN, 0.1, 2};
    pfi_alloc_job pred = job;
    pred.tput = ptput;
    pfi_pergpu_job pg = {2, 3, cap, clk, tput};
    json_t *o = pfi_job_json_encode(&job, &pred, 0.4, &pg);
    assert_null(json_object_get(o, "t0"));
    pfi_alloc_set s;
    assert_int_equal(pfi_alloc_set_init(&s, 1, 1), PFI_OK);
    pfi_err e = {0};
    if (pfi_job_json_decode(o, "f.json", 0, &s, 0, &e) != PFI_OK)
        fail_msg("%s", e.msg);
    const pfi_alloc_job *t = &s.truth[0], *p = &s.pred[0];
    assert_string_equal(t->id, "a");
    assert_true(t->n_gpus == 2 && t->min_cap_w == 300 && t->max_cap_w == 700);
    assert_true(t->p0_w == 650 && isnan(t->t0) && t->sla == 0.1 && t->weight == 2);
    assert_int_equal(t->n_points, 3);
    assert_int_equal(p->n_points, 3);
    for (int k = 0; k < 3; k++)
        assert_true(t->cap_w[k] == cap[k] && t->tput[k] == tput[k] && p->tput[k] == ptput[k]);
    assert_true(s.pfi30[0] == 0.4);
    assert_int_equal(s.pg[0].n_caps, 3);
    assert_true(s.pg[0].clock[4] == 1450);
    pfi_alloc_set_free(&s);
    json_decref(o);
}

/* The jobs file: its jobs, and a bad one named with the file and the job. */
static void test_jobs_file(void **state)
{
    char path[] = "/tmp/pfi-test-codec-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"jobs\": [{\"id\": \"a\", \"gpus\": 8, \"curve\": {\"cap_w\": [300, 700], "
          "\"tput\": [5, 9]}}, {\"id\": \"b\", \"gpus\": 2, \"predicted_curve\": {\"cap_w\": "
          "[200, 400], \"tput\": [1, 2]}, \"p0_w\": 380}]}",
          f);
    fclose(f);
    pfi_alloc_set s;
    pfi_err e = {0};
    assert_int_equal(pfi_jobs_file_load(path, 0, &s, &e), PFI_OK);
    assert_int_equal(s.n, 2);
    assert_true(s.truth[0].min_cap_w == 300 && s.truth[0].max_cap_w == 700);
    assert_true(s.truth[0].p0_w == 700 && s.pred[0].n_points == 0);
    assert_true(s.truth[1].n_points == 0 && s.pred[1].n_points == 2 && s.pred[1].p0_w == 380);
    assert_true(isnan(s.pfi30[1]));
    pfi_alloc_set_free(&s);
    f = fopen(path, "w");
    fputs("[{\"id\": \"a\", \"gpus\": 8, \"curve\": {\"cap_w\": [300, 700], \"tput\": [5, 9]}}, "
          "{\"id\": \"b\", \"gpus\": 2.5}]",
          f);
    fclose(f);
    assert_int_equal(pfi_jobs_file_load(path, 0, &s, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "job b: \"gpus\" must be a positive integer");
    pfi_alloc_set_free(&s);
    unlink(path);
    assert_int_equal(pfi_jobs_file_load(path, 0, &s, &e), PFI_ENOENT);
    pfi_alloc_set_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arrays),
        cmocka_unit_test(test_points_round_trip),
        cmocka_unit_test(test_job_round_trip),
        cmocka_unit_test(test_jobs_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
