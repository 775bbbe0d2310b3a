/* SPDX-License-Identifier: Apache-2.0 */
/* codec.c: curves and jobs in JSON, both ways (codec.h). */
#include "store/codec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/json_fast.h"
#include "util/text.h"

static double num_or_nan(json_t *o, const char *key)
{
    return pfi_json_num_or_nan(json_object_get(o, key));
}

/* ---- a curve ---- */

void pfi_curve_json_read(json_t *c, pfi_curve_json *out)
{
    memset(out, 0, sizeof *out);
    out->is_object = json_is_object(c);
    out->cap_a = json_object_get(c, "cap_w");
    out->tput_a = json_object_get(c, "tput");
    out->points = json_object_get(c, "points");
    out->n_cap = json_array_size(out->cap_a);
    out->n_tput = json_array_size(out->tput_a);
    out->has_arrays = json_is_array(out->cap_a) && json_is_array(out->tput_a);
    out->n_points = json_array_size(out->points);
    out->t0 = num_or_nan(c, "t0");
    out->p0_w = num_or_nan(c, "p0_w");
    out->cap0_w = num_or_nan(c, "cap0_w");
    out->min_cap_w = num_or_nan(c, "min_cap_w");
    out->max_cap_w = num_or_nan(c, "max_cap_w");
    out->r_max = num_or_nan(c, "r_max");
    json_t *ng = json_object_get(c, "n_gpus");
    out->has_n_gpus = json_is_integer(ng);
    out->n_gpus = out->has_n_gpus ? (int)json_integer_value(ng) : 0;
    json_t *fit = json_object_get(c, "fit");
    out->has_fit = json_is_object(fit);
    out->family = json_string_value(json_object_get(fit, "family"));
    json_t *pa = json_object_get(fit, "p");
    out->n_p = json_is_array(pa) ? (int)json_array_size(pa) : -1;
    out->p_bad = -1;
    for (int k = 0; k < out->n_p && k < 3; k++) {
        json_t *v = json_array_get(pa, (size_t)k);
        out->p[k] = json_number_value(v);
        if (out->p_bad < 0 && (!json_is_number(v) || !isfinite(out->p[k])))
            out->p_bad = k;
    }
}

int pfi_curve_json_pair_at(const pfi_curve_json *c, size_t i, double *cap_w, double *tput)
{
    json_t *a = json_array_get(c->cap_a, i), *b = json_array_get(c->tput_a, i);
    *cap_w = json_number_value(a);
    *tput = json_number_value(b);
    return json_is_number(a) && json_is_number(b);
}

void pfi_curve_json_point_at(const pfi_curve_json *c, size_t i, pfi_curve_json_point *out)
{
    json_t *p = json_array_get(c->points, i);
    out->cap_w = num_or_nan(p, "cap_w");
    out->tokens_per_s = num_or_nan(p, "tokens_per_s");
    out->tput = num_or_nan(p, "tput");
    out->rel = num_or_nan(p, "rel");
    out->draw_w = num_or_nan(p, "draw_w");
}

int pfi_curve_json_arrays(json_t *c, const char *what, int max, double *cap_w, double *tput,
                          int *n, pfi_err *err)
{
    *n = 0;
    if (!c)
        return PFI_OK;
    /* only the two arrays of what pfi_curve_json_read reads (a jobs file has two curves a job) */
    pfi_curve_json cv = {.cap_a = json_object_get(c, "cap_w"),
                         .tput_a = json_object_get(c, "tput")};
    if (!json_is_array(cv.cap_a) || !json_is_array(cv.tput_a))
        return pfi_err_set(err, PFI_EINVAL, "%s needs arrays \"cap_w\" and \"tput\"", what);
    size_t m = json_array_size(cv.cap_a), mt = json_array_size(cv.tput_a);
    if (m != mt)
        return pfi_err_set(err, PFI_EINVAL, "%s has %zu caps but %zu throughputs", what, m, mt);
    if (m > (size_t)max)
        return pfi_err_set(err, PFI_EINVAL, "%s has %zu points (at most %d)", what, m, max);
    for (size_t i = 0; i < m; i++)
        if (!pfi_curve_json_pair_at(&cv, i, &cap_w[i], &tput[i]))
            return pfi_err_set(err, PFI_EINVAL, "%s point %zu is not two numbers", what, i + 1);
    *n = (int)m;
    return PFI_OK;
}

int pfi_curve_json_fit(const pfi_curve_json *c, pfi_fit *out, pfi_err *err)
{
    if (!c->has_fit)
        return pfi_err_set(err, PFI_EINVAL, "curve: needs points (measured levels) or a fit");
    const char *fam = c->family;
    int family = fam ? pfi_family_parse(fam) : -1;
    if (family < 0)
        return pfi_err_set(err, PFI_EINVAL, "curve.fit.family: unknown family '%s'",
                           fam ? fam : "");
    if (c->n_p < pfi_family_params(family) || c->n_p > 3)
        return pfi_err_set(err, PFI_EINVAL, "curve.fit.p: family %s needs %d parameters", fam,
                           pfi_family_params(family));
    if (c->p_bad >= 0)
        return pfi_err_set(err, PFI_EINVAL, "curve.fit.p[%d]: not a number", c->p_bad);
    *out = (pfi_fit){.family = family, .rmse = NAN};
    memcpy(out->p, c->p, sizeof out->p);
    return PFI_OK;
}

json_t *pfi_curve_json_encode(const pfi_curve *c)
{
    json_t *o = json_object();
    json_object_set_new(o, "t0", pfi_json_num(c->t0));
    json_object_set_new(o, "p0_w", pfi_json_num(c->p0_w));
    json_object_set_new(o, "cap0_w", pfi_json_num(c->cap0_w));
    json_object_set_new(o, "min_cap_w", pfi_json_num(c->min_cap_w));
    json_object_set_new(o, "max_cap_w", pfi_json_num(c->max_cap_w));
    json_object_set_new(o, "n_gpus", json_integer(c->n_gpus));
    json_object_set_new(o, "r_max", pfi_json_num(c->r_max));
    json_t *pts = json_array();
    for (int i = 0; i < c->n; i++) {
        json_t *p = json_object();
        json_object_set_new(p, "cap_w", pfi_json_num(c->cap_w[i]));
        json_object_set_new(p, "draw_w", pfi_json_num(c->draw_w[i]));
        json_object_set_new(p, "rel", pfi_json_num(c->rel[i]));
        json_array_append_new(pts, p);
    }
    json_object_set_new(o, "points", pts);
    json_t *fit = json_object();
    json_object_set_new(fit, "family", json_string(pfi_family_name(c->fit.family)));
    json_t *pa = json_array();
    for (int k = 0; k < pfi_family_params(c->fit.family) && k < 3; k++)
        json_array_append_new(pa, pfi_json_num(c->fit.p[k]));
    json_object_set_new(fit, "p", pa);
    json_object_set_new(o, "fit", fit);
    return o;
}

json_t *pfi_curve_json_encode_arrays(const double *cap_w, const double *tput, int n)
{
    json_t *c = json_array(), *t = json_array();
    for (int k = 0; k < n; k++) {
        json_array_append_new(c, json_real(cap_w[k]));
        json_array_append_new(t, json_real(tput[k]));
    }
    return json_pack("{s:o, s:o}", "cap_w", c, "tput", t);
}

/* ---- a job of a jobs file ---- */

/* Bounds on what a jobs file may say: far beyond any real job, small enough that sums and
 * products of them stay finite. */
#define JOB_MAX_GPUS 1e6
#define JOB_MAX_WEIGHT 1e6
#define JOB_MAX_WATTS 1e5 /* a cap, baseline or curve point, per GPU */
#define JOB_MAX_TPUT 1e15 /* a whole job's throughput */

/* The numbers of a job, in the order they are checked, with their bounds. */
enum { F_GPUS, F_MIN, F_MAX, F_P0, F_T0, F_WEIGHT, F_SLA, F_PFI30, N_FIELDS };
static const struct job_field {
    const char *key;
    double lo, hi;
    int open_lo; /* lo itself excluded */
    int required;
    int open_hi; /* hi itself excluded (an SLA of 1 allows any slowdown: the allocator refused
                  * it after the file's check said "at most 1") */
} FIELDS[N_FIELDS] = {
    {"gpus", 1, JOB_MAX_GPUS, 0, 1, 0},         {"min_cap_w", 0, JOB_MAX_WATTS, 1, 0, 0},
    {"max_cap_w", 0, JOB_MAX_WATTS, 1, 0, 0},   {"p0_w", 0, JOB_MAX_WATTS, 1, 0, 0},
    {"t0", 0, JOB_MAX_TPUT, 1, 0, 0},           {"weight", 0, JOB_MAX_WEIGHT, 1, 0, 0},
    {"sla_max_slowdown", 0, 1, 0, 0, 1},        {"pfi30", -1e6, 1e6, 0, 0, 0},
};

/* Each number's value when the job does not give it (gpus is required). */
static void field_defaults(double v[N_FIELDS])
{
    for (int f = 0; f < N_FIELDS; f++)
        v[f] = NAN;
    v[F_GPUS] = 1;
    v[F_WEIGHT] = 1;
}

static int in_range(const struct job_field *f, double d)
{
    return isfinite(d) && !(d < f->lo) && !(f->open_lo && d == f->lo) && !(d > f->hi) &&
           !(f->open_hi && d == f->hi);
}

static int point_in_range(double cap_w, double tput)
{
    return cap_w > 0 && cap_w <= JOB_MAX_WATTS && fabs(tput) <= JOB_MAX_TPUT;
}

/* o[f->key] as a number in f's range; absent: *v unchanged, or an error when required. */
static int num(json_t *o, const struct job_field *f, double *v, const char *id, pfi_err *err)
{
    json_t *x = json_object_get(o, f->key);
    if (!x) {
        if (f->required)
            return pfi_err_set(err, PFI_EINVAL, "job %s: missing \"%s\"", id, f->key);
        return PFI_OK;
    }
    if (!json_is_number(x))
        return pfi_err_set(err, PFI_EINVAL, "job %s: \"%s\" must be a number", id, f->key);
    double d = json_number_value(x);
    if (!in_range(f, d))
        return pfi_err_set(err, PFI_EINVAL,
                           "job %s: \"%s\" is %.15g: expected a number %s %.15g and %s %.15g",
                           id, f->key, d, f->open_lo ? "above" : "from", f->lo,
                           f->open_hi ? "below" : "at most", f->hi);
    *v = d;
    return PFI_OK;
}

static int curve(json_t *o, const char *key, const char *id, pfi_alloc_curve *buf, int *n,
                 pfi_err *err)
{
    char what[PFI_ERR_MSG_MAX];
    snprintf(what, sizeof what, "job %s: \"%s\"", id, key);
    json_t *c = json_object_get(o, key);
    int rc = pfi_curve_json_arrays(c, what, PFI_ALLOC_CURVE_PTS, buf->cap_w, buf->tput, n, err);
    if (rc == PFI_OK && c && *n == 0) /* given empty: not "no curve", which it was told as */
        rc = pfi_err_set(err, PFI_EINVAL, "%s has no points (a curve needs at least 2)", what);
    for (int i = 0; rc == PFI_OK && i < *n; i++)
        if (!point_in_range(buf->cap_w[i], buf->tput[i]))
            rc = pfi_err_set(err, PFI_EINVAL,
                             "%s point %d (%g W, %g) is out of range (caps above 0 and at most "
                             "%g W, throughputs at most %g)",
                             what, i + 1, buf->cap_w[i], buf->tput[i], JOB_MAX_WATTS,
                             JOB_MAX_TPUT);
    /* Both curves are checked whatever the policy reads: a file refused by --policy pfi only
     * (its predicted_curve's caps falling) was taken by oracle and equal. */
    for (int i = 0; rc == PFI_OK && i < *n; i++) {
        if (buf->tput[i] < 0)
            rc = pfi_err_set(err, PFI_EINVAL, "%s point %d: a negative throughput (%g)", what,
                             i + 1, buf->tput[i]);
        else if (i > 0 && buf->cap_w[i] <= buf->cap_w[i - 1])
            rc = pfi_err_set(err, PFI_EINVAL, "%s: caps must increase (%g W after %g W)", what,
                             buf->cap_w[i], buf->cap_w[i - 1]);
    }
    /* A member a curve does not have (a draw_w a user expects read, a typo) is refused by name,
     * as a job's unknown field is; per_gpu, read through here too, has clock_mhz besides (a
     * typo there was taken). */
    const char *k;
    json_t *kv;
    int pg = strcmp(key, "per_gpu") == 0;
    if (rc == PFI_OK && json_is_object(c))
        json_object_foreach(c, k, kv)
        {
            if (strcmp(k, "cap_w") && strcmp(k, "tput") && !(pg && !strcmp(k, "clock_mhz")))
                return pfi_err_set(err, PFI_EINVAL, "%s: unknown member \"%.64s\" (%s)", what, k,
                                   pg ? "a per_gpu table is {\"cap_w\": [...], \"tput\": [...], "
                                        "\"clock_mhz\": [[...], ...]}"
                                      : "a curve is {\"cap_w\": [...], \"tput\": [...]}");
        }
    return rc;
}

/* "per_gpu": {"cap_w": [...], "clock_mhz": [[GPU 0 at each cap], ...], "tput": [...]} */
static int pergpu(json_t *o, const char *id, int gpus, pfi_alloc_pergpu *pg, pfi_err *err)
{
    json_t *p = json_object_get(o, "per_gpu");
    if (!json_is_object(p))
        return pfi_err_set(err, PFI_EINVAL, "job %s: --per-gpu needs a \"per_gpu\" table "
                                            "(docs/jobs-format.md)", id);
    pfi_alloc_curve tmp;
    int n = 0, rc = curve(o, "per_gpu", id, &tmp, &n, err);
    if (rc)
        return rc;
    if (n < 2)
        return pfi_err_set(err, PFI_EINVAL, "job %s: per_gpu needs at least 2 caps", id);
    memcpy(pg->cap_w, tmp.cap_w, sizeof tmp.cap_w);
    memcpy(pg->tput, tmp.tput, sizeof tmp.tput);
    pg->n_caps = n;
    if (gpus > 1024)
        return pfi_err_set(err, PFI_EINVAL, "job %s: --per-gpu handles at most 1024 GPUs a job", id);
    json_t *clk = json_object_get(p, "clock_mhz");
    if (!json_is_array(clk) || (int)json_array_size(clk) != gpus)
        return pfi_err_set(err, PFI_EINVAL, "job %s: per_gpu.clock_mhz needs one row per GPU (%d)",
                           id, gpus);
    pg->clock = malloc(sizeof *pg->clock * (size_t)gpus * (size_t)n);
    pg->gcaps = malloc(sizeof *pg->gcaps * (size_t)gpus * (size_t)n);
    if (!pg->clock || !pg->gcaps)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    for (int g = 0; g < gpus; g++) {
        json_t *row = json_array_get(clk, (size_t)g);
        if (!json_is_array(row) || (int)json_array_size(row) != n)
            return pfi_err_set(err, PFI_EINVAL, "job %s: per_gpu.clock_mhz row %d needs %d values",
                               id, g, n);
        for (int k = 0; k < n; k++) {
            json_t *v = json_array_get(row, (size_t)k);
            double d = json_is_number(v) ? json_number_value(v) : NAN;
            if (!(d >= 0 && d <= 1e6))
                return pfi_err_set(err, PFI_EINVAL, "job %s: per_gpu.clock_mhz[%d][%d] is not a "
                                                    "number from 0 to 1e6 MHz", id, g, k);
            pg->clock[(size_t)g * (size_t)n + (size_t)k] = d;
        }
    }
    pg->table = (pfi_pergpu_job){gpus, n, pg->cap_w, pg->clock, pg->tput};
    if ((rc = pfi_pergpu_table(&pg->table, pg->gcaps, pg->x, err)))
        return pfi_err_prefix(err, "job %s: ", id);
    return PFI_OK;
}

/* The job checked (its numbers and curves read, per-GPU table included) kept as job j of the
 * set: defaults from its curves, its id and curves held by the set.  PFI_EINVAL when it has no
 * curve, PFI_ENOMEM. */
static int job_keep(pfi_alloc_set *s, int j, const char *id, const double v[N_FIELDS],
                    const pfi_alloc_curve *bt, int nt, const pfi_alloc_curve *bp, int np,
                    pfi_err *err)
{
    if (nt == 0 && np == 0)
        return pfi_err_set(err, PFI_EINVAL, "job %s has no curve (\"curve\" or "
                                            "\"predicted_curve\")", id);
    /* Printed in tables as it is: a terminal escape in a scheduler's export would drive the
     * terminal (JSON escapes it; the table did not). */
    char why[96];
    if (!pfi_text_printable(id, why, sizeof why))
        return pfi_err_set(err, PFI_EINVAL, "job %d: its id is not UTF-8 text without control "
                           "characters (%s)", j + 1, why);
    if (!(s->ids[j] = strdup(id)))
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    /* Defaults: the range of the curve, and the baseline drawn at the top of it. */
    const pfi_alloc_curve *any = nt ? bt : bp;
    int na = nt ? nt : np;
    double mn = v[F_MIN], mx = v[F_MAX], p0 = v[F_P0];
    if (isnan(mn))
        mn = any->cap_w[0];
    if (isnan(mx))
        mx = any->cap_w[na - 1];
    if (isnan(p0))
        p0 = mx;
    pfi_alloc_job base = {s->ids[j], (int)v[F_GPUS], mn, mx, NULL, NULL, 0,
                          p0, v[F_T0], v[F_SLA], v[F_WEIGHT]};
    s->truth[j] = base;
    s->truth[j].cap_w = (double *)bt->cap_w;
    s->truth[j].tput = (double *)bt->tput;
    s->truth[j].n_points = nt;
    s->pred[j] = base;
    s->pred[j].cap_w = (double *)bp->cap_w;
    s->pred[j].tput = (double *)bp->tput;
    s->pred[j].n_points = np;
    s->pfi30[j] = v[F_PFI30];
    if (pfi_alloc_set_keep_curve(s, &s->truth[j]) || pfi_alloc_set_keep_curve(s, &s->pred[j]))
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    return PFI_OK;
}

int pfi_job_json_decode(json_t *o, const char *path, int index, pfi_alloc_set *s, int j,
                        pfi_err *err)
{
    if (!json_is_object(o))
        return pfi_err_set(err, PFI_EINVAL, "%s: job %d is not an object", path, index + 1);
    json_t *idj = json_object_get(o, "id");
    if (!json_is_string(idj))
        return pfi_err_set(err, PFI_EINVAL, "%s: job %d has no string \"id\"", path, index + 1);
    const char *id = json_string_value(idj);
    /* An unknown field is refused rather than ignored: a typo of sla_max_slowdown would
     * allocate the job with no SLA, one of weight at weight 1 (docs/jobs-format.md). */
    const char *k;
    json_t *kv;
    json_object_foreach(o, k, kv)
    {
        int known = !strcmp(k, "id") || !strcmp(k, "curve") || !strcmp(k, "predicted_curve") ||
                    !strcmp(k, "per_gpu");
        for (int f = 0; !known && f < N_FIELDS; f++)
            known = !strcmp(k, FIELDS[f].key);
        if (!known)
            return pfi_err_set(err, PFI_EINVAL,
                               "job %s: unknown field \"%.64s\" (docs/jobs-format.md lists them)",
                               id, k);
    }
    double v[N_FIELDS];
    field_defaults(v);
    int rc;
    for (int f = 0; f < N_FIELDS; f++)
        if ((rc = num(o, &FIELDS[f], &v[f], id, err)))
            return rc;
    double gpus = v[F_GPUS];
    if (gpus != floor(gpus))
        return pfi_err_set(err, PFI_EINVAL, "job %s: \"gpus\" must be a positive integer", id);
    int nt, np;
    pfi_alloc_curve bt, bp; /* read here, then kept by the set at their own size */
    if ((rc = curve(o, "curve", id, &bt, &nt, err)) ||
        (rc = curve(o, "predicted_curve", id, &bp, &np, err)))
        return rc;
    if (s->pg) {
        /* the uniform sweep of the table is the job's true curve */
        if ((rc = pergpu(o, id, (int)gpus, &s->pg[j], err)))
            return rc;
        if (nt == 0) {
            nt = s->pg[j].n_caps;
            memcpy(bt.cap_w, s->pg[j].cap_w, sizeof *bt.cap_w * (size_t)nt);
            memcpy(bt.tput, s->pg[j].tput, sizeof *bt.tput * (size_t)nt);
        }
    }
    return job_keep(s, j, id, v, &bt, nt, &bp, np, err);
}

/* ---- the same job read straight from its text ---- */

/* An array of at most PFI_ALLOC_CURVE_PTS numbers into v; its length, -1 otherwise. */
static int text_numbers(pfi_json_cursor *c, double *v)
{
    int n = 0;
    if (!pfi_json_cursor_take(c, '['))
        return -1;
    if (pfi_json_cursor_take(c, ']'))
        return 0;
    do {
        if (n == PFI_ALLOC_CURVE_PTS || pfi_json_cursor_number(c, &v[n]))
            return -1;
        n++;
    } while (pfi_json_cursor_take(c, ','));
    return pfi_json_cursor_take(c, ']') ? n : -1;
}

/* {"cap_w": [...], "tput": [...]}, nothing else, both of the same length: that length into *n,
 * the points in range; -1 otherwise. */
static int text_curve(pfi_json_cursor *c, pfi_alloc_curve *buf, int *n)
{
    int nc = -1, nt = -1;
    if (!pfi_json_cursor_take(c, '{'))
        return -1;
    do {
        const char *k;
        size_t kn;
        if (pfi_json_cursor_string(c, &k, &kn) || !pfi_json_cursor_take(c, ':'))
            return -1;
        int got; /* a key given twice, or another one: -1 */
        if (kn == 5 && memcmp(k, "cap_w", 5) == 0 && nc < 0)
            got = nc = text_numbers(c, buf->cap_w);
        else if (kn == 4 && memcmp(k, "tput", 4) == 0 && nt < 0)
            got = nt = text_numbers(c, buf->tput);
        else
            got = -1;
        if (got < 0)
            return -1;
    } while (pfi_json_cursor_take(c, ','));
    if (!pfi_json_cursor_take(c, '}') || nc < 1 || nt < 0 || nc != nt)
        return -1; /* an empty one too: the tree decoder says it has no points */
    for (int i = 0; i < nc; i++)
        if (!point_in_range(buf->cap_w[i], buf->tput[i]) || buf->tput[i] < 0 ||
            (i > 0 && buf->cap_w[i] <= buf->cap_w[i - 1]))
            return -1; /* the tree decoder says why */
    *n = nc;
    return 0;
}

int pfi_job_text_decode(const char *text, size_t len, pfi_alloc_set *s, int j, pfi_err *err)
{
    pfi_json_cursor c;
    if (s->pg || pfi_json_cursor_init(&c, text, len) || !pfi_json_cursor_take(&c, '{'))
        return PFI_JOB_TEXT_OTHER;
    double v[N_FIELDS];
    field_defaults(v);
    unsigned seen = 0; /* bits: the fields, then id, curve, predicted_curve */
    char id[256];
    int nt = 0, np = 0;
    pfi_alloc_curve bt, bp;
    do {
        const char *k, *sv;
        size_t kn, sn;
        if (pfi_json_cursor_string(&c, &k, &kn) || !pfi_json_cursor_take(&c, ':'))
            return PFI_JOB_TEXT_OTHER;
        int f = 0;
        while (f < N_FIELDS && !(strlen(FIELDS[f].key) == kn && memcmp(FIELDS[f].key, k, kn) == 0))
            f++;
        if (f == N_FIELDS) {
            f = kn == 2 && memcmp(k, "id", 2) == 0                    ? N_FIELDS
                : kn == 5 && memcmp(k, "curve", 5) == 0               ? N_FIELDS + 1
                : kn == 15 && memcmp(k, "predicted_curve", 15) == 0 ? N_FIELDS + 2
                                                                      : -1;
        }
        if (f < 0 || (seen & (1u << f)))
            return PFI_JOB_TEXT_OTHER; /* a key read elsewhere, or given twice */
        seen |= 1u << f;
        int bad;
        if (f < N_FIELDS) {
            bad = pfi_json_cursor_number(&c, &v[f]) || !in_range(&FIELDS[f], v[f]);
        } else if (f == N_FIELDS) {
            bad = pfi_json_cursor_string(&c, &sv, &sn) || sn >= sizeof id;
            if (!bad) {
                memcpy(id, sv, sn);
                id[sn] = '\0';
            }
        } else {
            bad = text_curve(&c, f == N_FIELDS + 1 ? &bt : &bp, f == N_FIELDS + 1 ? &nt : &np);
        }
        if (bad)
            return PFI_JOB_TEXT_OTHER;
    } while (pfi_json_cursor_take(&c, ','));
    if (!pfi_json_cursor_take(&c, '}') || pfi_json_cursor_peek(&c) != -1)
        return PFI_JOB_TEXT_OTHER;
    for (int f = 0; f < N_FIELDS; f++)
        if (FIELDS[f].required && !(seen & (1u << f)))
            return PFI_JOB_TEXT_OTHER;
    if (!(seen & (1u << N_FIELDS)) || v[F_GPUS] != floor(v[F_GPUS]) || (nt == 0 && np == 0))
        return PFI_JOB_TEXT_OTHER;
    return job_keep(s, j, id, v, &bt, nt, &bp, np, err);
}

static void set_finite(json_t *o, const char *key, double v)
{
    if (isfinite(v))
        json_object_set_new(o, key, json_real(v));
}

json_t *pfi_job_json_encode(const pfi_alloc_job *job, const pfi_alloc_job *pred, double pfi30,
                            const pfi_pergpu_job *pg)
{
    json_t *o = json_pack("{s:s, s:i}", "id", job->id, "gpus", job->n_gpus);
    set_finite(o, "min_cap_w", job->min_cap_w);
    set_finite(o, "max_cap_w", job->max_cap_w);
    set_finite(o, "p0_w", job->p0_w);
    set_finite(o, "t0", job->t0);
    set_finite(o, "sla_max_slowdown", job->sla);
    set_finite(o, "weight", job->weight);
    set_finite(o, "pfi30", pfi30);
    if (job->n_points > 0)
        json_object_set_new(o, "curve",
                            pfi_curve_json_encode_arrays(job->cap_w, job->tput, job->n_points));
    if (pred && pred->n_points > 0)
        json_object_set_new(o, "predicted_curve",
                            pfi_curve_json_encode_arrays(pred->cap_w, pred->tput, pred->n_points));
    if (pg) {
        json_t *t = pfi_curve_json_encode_arrays(pg->cap_w, pg->tput, pg->n_caps);
        json_t *clk = json_array();
        for (int g = 0; g < pg->n_gpus; g++) {
            json_t *row = json_array();
            for (int k = 0; k < pg->n_caps; k++)
                json_array_append_new(row, json_real(pg->clock_mhz[g * pg->n_caps + k]));
            json_array_append_new(clk, row);
        }
        json_object_set_new(t, "clock_mhz", clk);
        json_object_set_new(o, "per_gpu", t);
    }
    return o;
}
