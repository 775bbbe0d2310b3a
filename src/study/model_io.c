/* SPDX-License-Identifier: Apache-2.0 */
/* model_io.c: the predictor's JSON file (see model_io.h). */
#include "study/model_io.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/json.h"

static json_t *arr(const double *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, pfi_json_num(v[i]));
    return a;
}

json_t *pfi_model_to_json(const pfi_model *m, const char *trained_on)
{
    json_t *feat = json_array();
    for (int f = 0; f < PFI_N_FEATURES; f++)
        json_array_append_new(feat, json_string(pfi_feature_name(f)));
    json_t *coef = json_array();
    for (int k = 0; k < PFI_N_TDEPTHS; k++)
        json_array_append_new(coef, arr(m->coef[k], PFI_N_FEATURES));
    json_t *phys = json_object();
    for (int i = 0; i < PFI_N_PHYS; i++)
        json_object_set_new(phys, pfi_phys_name(i), json_real(m->phys[i]));
    json_t *doc = json_pack("{s:s, s:i, s:s, s:s, s:s, s:i, s:o, s:o}", "pfi_model", "curve",
                            "format", PFI_MODEL_FORMAT, "trained_on", trained_on ? trained_on : "",
                            "kind", pfi_model_kind_name(m->kind), "family",
                            pfi_family_name(m->family), "n_train", m->n_train, "features", feat,
                            "depths", arr(pfi_target_depths, PFI_N_TDEPTHS));
    json_object_set_new(doc, "ridge",
                        json_pack("{s:o, s:o, s:o, s:o, s:o}", "mean",
                                  arr(m->mean, PFI_N_FEATURES), "scale",
                                  arr(m->scale, PFI_N_FEATURES), "intercept",
                                  arr(m->intercept, PFI_N_TDEPTHS), "lambda",
                                  arr(m->lambda, PFI_N_TDEPTHS), "coef", coef));
    json_object_set_new(doc, "physics", phys);
    json_object_set_new(doc, "cv_mae_pfi30",
                        json_pack("{s:o, s:o}", "ridge", arr(&m->cv_mae_ridge, 1), "physics",
                                  arr(&m->cv_mae_physics, 1)));
    /* Keys a pfi of format 1 without them ignores: it reads the model as before, unmarked. */
    if (m->n_gpu_types > 0) {
        json_t *gt = json_array();
        for (int t = 0; t < m->n_gpu_types; t++)
            json_array_append_new(gt, json_string(m->gpu_types[t]));
        json_object_set_new(doc, "gpu_types", gt);
    }
    json_object_set_new(doc, "feature_range",
                        json_pack("{s:o, s:o}", "min", arr(m->x_min, PFI_N_FEATURES), "max",
                                  arr(m->x_max, PFI_N_FEATURES)));
    return doc;
}

/* How a JSON value is named in an error: a damaged file is told by what it holds. */
static const char *json_kind(const json_t *x)
{
    switch (x ? json_typeof(x) : JSON_NULL) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number with a fraction";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* Reads the n numbers of array a, named `what` in errors, into v.  A null is NAN where
 * may_null (the standardization of a feature never seen); elsewhere a null coefficient only
 * failed later, once per run ("point 2 of the curve is not a number"), or never in a daemon. */
static int num_arr(const json_t *a, const char *what, double *v, int n, int may_null,
                   pfi_err *err)
{
    if (!json_is_array(a) || (int)json_array_size(a) != n)
        return pfi_err_set(err, PFI_EINVAL, "%s must be an array of %d numbers", what, n);
    for (int i = 0; i < n; i++) {
        const json_t *x = json_array_get(a, (size_t)i);
        if (json_is_number(x))
            v[i] = json_number_value(x);
        else if (may_null && json_is_null(x))
            v[i] = NAN;
        else
            return pfi_err_set(err, PFI_EINVAL, "%s[%d] is not a number (%s)", what, i,
                               json_kind(x));
        if (json_is_number(x) && !isfinite(v[i]))
            return pfi_err_set(err, PFI_EINVAL, "%s[%d] is not finite", what, i);
    }
    return PFI_OK;
}

/* The header: what the file is, its format, and the features and depths it was trained on,
 * each compared with this pfi's, so a file of another version is refused, not misread. */
static int check_header(const json_t *doc, pfi_err *err)
{
    const char *what = json_string_value(json_object_get(doc, "pfi_model"));
    if (!what || strcmp(what, "curve") != 0)
        return pfi_err_set(err, PFI_EINVAL, "not a pfi model file (no \"pfi_model\": \"curve\")");
    const json_t *fj = json_object_get(doc, "format");
    if (!fj)
        return pfi_err_set(err, PFI_EINVAL, "format is missing; this pfi reads format %d",
                           PFI_MODEL_FORMAT);
    if (!json_is_integer(fj))
        return pfi_err_set(err, PFI_EINVAL, "format is %s, not an integer; this pfi reads "
                                            "format %d", json_kind(fj), PFI_MODEL_FORMAT);
    if (json_integer_value(fj) != PFI_MODEL_FORMAT)
        return pfi_err_set(err, PFI_EINVAL, "model file format %lld; this pfi reads format %d",
                           (long long)json_integer_value(fj), PFI_MODEL_FORMAT);
    const json_t *feat = json_object_get(doc, "features");
    if (!json_is_array(feat) || json_array_size(feat) != PFI_N_FEATURES)
        return pfi_err_set(err, PFI_EINVAL, "model file: it has other features than this pfi (%d)",
                           PFI_N_FEATURES);
    for (int f = 0; f < PFI_N_FEATURES; f++) {
        const char *nm = json_string_value(json_array_get(feat, (size_t)f));
        if (!nm || strcmp(nm, pfi_feature_name(f)) != 0)
            return pfi_err_set(err, PFI_EINVAL,
                               "model file: feature %d is '%s', this pfi expects '%s'", f,
                               nm ? nm : "?", pfi_feature_name(f));
    }
    /* The coefficients of row k predict the slowdown at depth k: other depths would be read
     * as these, and every curve bent. */
    double d[PFI_N_TDEPTHS];
    int rc = num_arr(json_object_get(doc, "depths"), "depths", d, PFI_N_TDEPTHS, 0, err);
    for (int k = 0; rc == PFI_OK && k < PFI_N_TDEPTHS; k++)
        if (fabs(d[k] - pfi_target_depths[k]) > 1e-9)
            rc = pfi_err_set(err, PFI_EINVAL, "depths[%d] is %g; this pfi predicts at depths "
                                              "0.1, 0.2, 0.3, 0.4, 0.5", k, d[k]);
    return rc;
}

/* What the model was trained on; absent from files written before it was recorded, which
 * read as unknown (no prediction is marked). */
static int read_domain(const json_t *doc, pfi_model *m, pfi_err *err)
{
    m->n_gpu_types = 0;
    for (int f = 0; f < PFI_N_FEATURES; f++)
        m->x_min[f] = m->x_max[f] = NAN;
    const json_t *gt = json_object_get(doc, "gpu_types");
    if (gt && (!json_is_array(gt) || json_array_size(gt) > PFI_MODEL_MAX_GPU_TYPES))
        return pfi_err_set(err, PFI_EINVAL, "gpu_types must be an array of at most %d names",
                           PFI_MODEL_MAX_GPU_TYPES);
    for (size_t t = 0; gt && t < json_array_size(gt); t++) {
        const char *s = json_string_value(json_array_get(gt, t));
        if (!s || !s[0] || strlen(s) >= sizeof m->gpu_types[0])
            return pfi_err_set(err, PFI_EINVAL, "gpu_types[%zu] is not a GPU type name", t);
        snprintf(m->gpu_types[m->n_gpu_types++], sizeof m->gpu_types[0], "%s", s);
    }
    const json_t *fr = json_object_get(doc, "feature_range");
    if (!fr)
        return PFI_OK;
    if (!json_is_object(fr))
        return pfi_err_set(err, PFI_EINVAL, "feature_range must be an object {min, max}");
    int rc = num_arr(json_object_get(fr, "min"), "feature_range.min", m->x_min, PFI_N_FEATURES,
                     1, err);
    if (rc == PFI_OK)
        rc = num_arr(json_object_get(fr, "max"), "feature_range.max", m->x_max, PFI_N_FEATURES,
                     1, err);
    for (int f = 0; rc == PFI_OK && f < PFI_N_FEATURES; f++)
        if (m->x_min[f] > m->x_max[f])
            rc = pfi_err_set(err, PFI_EINVAL, "feature_range: min of %s above its max",
                             pfi_feature_name(f));
    return rc;
}

int pfi_model_from_json(const json_t *doc, pfi_model *m, pfi_err *err)
{
    memset(m, 0, sizeof *m);
    int rc = check_header(doc, err);
    if (rc != PFI_OK)
        return rc;
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (kind && strcmp(kind, "ridge") == 0)
        m->kind = PFI_MODEL_RIDGE;
    else if (kind && strcmp(kind, "physics") == 0)
        m->kind = PFI_MODEL_PHYSICS;
    else
        return pfi_err_set(err, PFI_EINVAL, "model file: kind must be ridge or physics");
    m->family = pfi_family_parse(json_string_value(json_object_get(doc, "family")));
    if (m->family < 0)
        return pfi_err_set(err, PFI_EINVAL, "model file: unknown curve family");
    m->n_train = (int)json_integer_value(json_object_get(doc, "n_train"));
    const json_t *r = json_object_get(doc, "ridge");
    if ((rc = num_arr(json_object_get(r, "mean"), "ridge.mean", m->mean, PFI_N_FEATURES, 1,
                      err)) ||
        (rc = num_arr(json_object_get(r, "scale"), "ridge.scale", m->scale, PFI_N_FEATURES, 1,
                      err)) ||
        (rc = num_arr(json_object_get(r, "intercept"), "ridge.intercept", m->intercept,
                      PFI_N_TDEPTHS, 0, err)) ||
        (rc = num_arr(json_object_get(r, "lambda"), "ridge.lambda", m->lambda, PFI_N_TDEPTHS, 0,
                      err)))
        return rc;
    const json_t *coef = json_object_get(r, "coef");
    if (!json_is_array(coef) || json_array_size(coef) != PFI_N_TDEPTHS)
        return pfi_err_set(err, PFI_EINVAL, "ridge.coef must have %d rows", PFI_N_TDEPTHS);
    for (int k = 0; k < PFI_N_TDEPTHS; k++) {
        char what[32];
        snprintf(what, sizeof what, "ridge.coef[%d]", k);
        if ((rc = num_arr(json_array_get(coef, (size_t)k), what, m->coef[k], PFI_N_FEATURES, 0,
                          err)))
            return rc;
    }
    for (int f = 0; f < PFI_N_FEATURES; f++) {
        if (!isfinite(m->mean[f]))
            m->mean[f] = 0;
        if (!isfinite(m->scale[f]))
            m->scale[f] = 0;
    }
    const json_t *ph = json_object_get(doc, "physics");
    for (int i = 0; i < PFI_N_PHYS; i++) {
        const json_t *x = json_object_get(ph, pfi_phys_name(i));
        if (!json_is_number(x))
            return pfi_err_set(err, PFI_EINVAL, "model file: physics.%s is missing",
                               pfi_phys_name(i));
        m->phys[i] = json_number_value(x);
    }
    m->cv_mae_ridge = m->cv_mae_physics = NAN;
    return read_domain(doc, m, err);
}

/* Written beside path and renamed over it: a daemon that loads the model (pfi serve --model)
 * never reads half a file, and a failed write leaves the one before. */
int pfi_model_save(const pfi_model *m, const char *trained_on, const char *path, pfi_err *err)
{
    char target[4096], tmp[4200];
    int direct;
    if (pfi_out_target(path, target, sizeof target, &direct, err) != PFI_OK)
        return pfi_err_prefix(err, "cannot write the model to ");
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", target, (long)getpid()) >= sizeof tmp)
        return pfi_err_set(err, PFI_EINVAL, "model path too long: %s", path);
    json_t *doc = pfi_model_to_json(m, trained_on);
    errno = 0;
    /* A device or a FIFO (--out /dev/null) is written into, never renamed over. */
    int rc = json_dump_file(doc, direct ? target : tmp, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(doc);
    if (rc == 0 && !direct && rename(tmp, target) != 0)
        rc = -1;
    if (rc != 0) {
        int e = errno;
        if (!direct)
            unlink(tmp);
        return pfi_err_set(err, PFI_EIO, "cannot write the model to %s: %s", path,
                           e ? strerror(e) : "write failed");
    }
    return PFI_OK;
}

int pfi_model_load(const char *path, pfi_model *m, pfi_err *err)
{
    if (pfi_input_not_dir(path, err) != PFI_OK)
        return pfi_err_prefix(err, "model: ");
    json_error_t je;
    /* A key twice (a hand edit, a merge) is refused: jansson kept the last, and a "kind" of
     * "ridge" then "physics" predicted with the physics model without a word. */
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!doc && je.line < 1) /* not opened or read: jansson has no line to point at */
        return pfi_err_set(err, PFI_ENOENT, "cannot read model %s: %s", path, je.text);
    if (!doc) /* read, but not JSON: bad input, as a file that is not a model */
        return pfi_err_set(err, PFI_EINVAL, "%s:%d: not a pfi model file: %s", path, je.line,
                           je.text);
    int rc = pfi_model_from_json(doc, m, err);
    json_decref(doc);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "%s: ", path);
    return PFI_OK;
}

json_t *pfi_importance_json(const pfi_importance *im)
{
    json_t *groups = json_array();
    for (int g = 0; g < im->n_groups; g++) {
        json_t *feats = json_array();
        for (int f = 0; f < PFI_N_FEATURES; f++)
            if (im->group_of[f] == g)
                json_array_append_new(feats, json_string(pfi_feature_name(f)));
        json_array_append_new(groups, json_pack("{s:o, s:o, s:o}", "features", feats,
                                                "mae_increase", pfi_json_num(im->mean[g]), "sd",
                                                pfi_json_num(im->sd[g])));
    }
    return json_pack("{s:s, s:f, s:i, s:I, s:o, s:o}", "method", "grouped permutation, held out",
                     "corr_threshold", im->corr, "repeats", im->repeats, "seed",
                     (json_int_t)im->seed, "mae_unpermuted", pfi_json_num(im->mae0), "groups",
                     groups);
}
