/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the predictor's model file (study/model_io.h): a file written by pfi_model_to_json
 * reads back, and a damaged one is refused at load, naming the field, instead of failing later
 * for every run it predicts (or silently, in a daemon). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/predict.h"
#include "study/model_io.h"

static void model(pfi_model *m)
{
    memset(m, 0, sizeof *m);
    m->kind = PFI_MODEL_RIDGE;
    m->family = pfi_default_family;
    m->n_train = 12;
    for (int f = 0; f < PFI_N_FEATURES; f++) {
        m->mean[f] = 0.5;
        m->scale[f] = f == 3 ? 0 : 0.1;
    }
    for (int k = 0; k < PFI_N_TDEPTHS; k++) {
        m->intercept[k] = 0.1 * (k + 1);
        m->lambda[k] = 0.01;
        for (int f = 0; f < PFI_N_FEATURES; f++)
            m->coef[k][f] = 0.001 * (f + 1);
    }
    double ph[PFI_N_PHYS] = {0.9, 0.5, 0.2, 0.75};
    memcpy(m->phys, ph, sizeof ph);
    m->cv_mae_ridge = m->cv_mae_physics = NAN;
    m->n_gpu_types = 2;
    snprintf(m->gpu_types[0], sizeof m->gpu_types[0], "H200-SXM");
    snprintf(m->gpu_types[1], sizeof m->gpu_types[1], "H100-SXM");
    for (int f = 0; f < PFI_N_FEATURES; f++) {
        m->x_min[f] = f == 13 ? NAN : 0.1 * f;
        m->x_max[f] = f == 13 ? NAN : 0.1 * f + 0.5;
    }
}

/* doc with the value at path (an object key, then an array index or two; -1 none) replaced. */
static int load_with(const char *obj, const char *key, int i, int j, json_t *v, pfi_err *e)
{
    pfi_model m;
    model(&m);
    json_t *doc = pfi_model_to_json(&m, "test");
    json_t *o = obj ? json_object_get(doc, obj) : doc;
    if (i < 0) {
        json_object_set_new(o, key, v);
    } else {
        json_t *a = json_object_get(o, key);
        if (j >= 0)
            a = json_array_get(a, (size_t)i), i = j;
        json_array_set_new(a, (size_t)i, v);
    }
    memset(e, 0, sizeof *e);
    int rc = pfi_model_from_json(doc, &m, e);
    json_decref(doc);
    return rc;
}

static void test_round_trip(void **state)
{
    pfi_model m, back;
    model(&m);
    json_t *doc = pfi_model_to_json(&m, "test");
    pfi_err e = {0};
    assert_int_equal(pfi_model_from_json(doc, &back, &e), PFI_OK);
    json_decref(doc);
    assert_true(back.coef[2][0] == m.coef[2][0] && back.intercept[4] == m.intercept[4]);
    /* what it was trained on reads back; a file without it (written before) is unknown */
    assert_int_equal(back.n_gpu_types, 2);
    assert_string_equal(back.gpu_types[1], "H100-SXM");
    assert_true(back.x_min[3] == m.x_min[3] && back.x_max[18] == m.x_max[18]);
    assert_true(isnan(back.x_min[13]) && isnan(back.x_max[13]));
    doc = pfi_model_to_json(&m, "test");
    json_object_del(doc, "gpu_types");
    json_object_del(doc, "feature_range");
    assert_int_equal(pfi_model_from_json(doc, &back, &e), PFI_OK);
    json_decref(doc);
    assert_int_equal(back.n_gpu_types, 0);
    for (int f = 0; f < PFI_N_FEATURES; f++)
        assert_true(isnan(back.x_min[f]) && isnan(back.x_max[f]));
    assert_int_equal(load_with("feature_range", "min", 2, -1, json_real(9), &e), PFI_EINVAL);
    assert_string_equal(e.msg, "feature_range: min of clock_ratio above its max");
    assert_int_equal(load_with(NULL, "gpu_types", -1, -1, json_string("H200"), &e), PFI_EINVAL);
    /* a feature never seen keeps its null standardization */
    assert_int_equal(load_with("ridge", "mean", 3, -1, json_null(), &e), PFI_OK);
    assert_int_equal(load_with("ridge", "scale", 3, -1, json_null(), &e), PFI_OK);
}

static void test_damaged_numbers(void **state)
{
    pfi_err e;
    assert_int_equal(load_with("ridge", "coef", 2, 0, json_null(), &e), PFI_EINVAL);
    assert_string_equal(e.msg, "ridge.coef[2][0] is not a number (null)");
    assert_int_equal(load_with("ridge", "coef", 4, 18, json_string("1"), &e), PFI_EINVAL);
    assert_string_equal(e.msg, "ridge.coef[4][18] is not a number (a string)");
    assert_int_equal(load_with("ridge", "intercept", 1, -1, json_null(), &e), PFI_EINVAL);
    assert_string_equal(e.msg, "ridge.intercept[1] is not a number (null)");
    assert_int_equal(load_with("ridge", "lambda", 0, -1, json_null(), &e), PFI_EINVAL);
    assert_string_equal(e.msg, "ridge.lambda[0] is not a number (null)");
}

static void test_depths_and_format(void **state)
{
    pfi_err e;
    assert_int_equal(load_with(NULL, "depths", 0, -1, json_real(0.05), &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "depths[0] is 0.05; this pfi predicts at depths 0.1, 0.2"));
    assert_int_equal(load_with(NULL, "depths", -1, -1, json_null(), &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "depths must be an array of 5 numbers"));
    /* "1" was read as format 0 */
    assert_int_equal(load_with(NULL, "format", -1, -1, json_string("1"), &e), PFI_EINVAL);
    assert_string_equal(e.msg, "format is a string, not an integer; this pfi reads format 1");
    assert_int_equal(load_with(NULL, "format", -1, -1, json_real(1.5), &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "format is a number with a fraction, not an integer"));
    assert_int_equal(load_with(NULL, "format", -1, -1, json_integer(2), &e), PFI_EINVAL);
    assert_string_equal(e.msg, "model file format 2; this pfi reads format 1");
}

/* A file with a key twice (a hand edit, a merge) is refused at load, naming the key: the last
 * one was kept, and "kind": "ridge", "kind": "physics" predicted with the physics model. */
static void test_duplicate_key(void **state)
{
    (void)state;
    pfi_model m;
    model(&m);
    json_t *doc = pfi_model_to_json(&m, "test");
    char *text = json_dumps(doc, JSON_SORT_KEYS);
    json_decref(doc);
    assert_non_null(text);
    char *at = strstr(text, "\"kind\": \"ridge\"");
    assert_non_null(at);
    char path[] = "/tmp/pfi-model-dup-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "%.*s\"kind\": \"ridge\", \"kind\": \"physics\"%s", (int)(at - text), text,
            at + strlen("\"kind\": \"ridge\""));
    fclose(f);
    free(text);
    pfi_err e = {0};
    assert_int_equal(pfi_model_load(path, &m, &e), PFI_EINVAL);
    if (!strstr(e.msg, "duplicate"))
        fail_msg("not said: %s", e.msg);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_damaged_numbers),
        cmocka_unit_test(test_depths_and_format),
        cmocka_unit_test(test_duplicate_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
