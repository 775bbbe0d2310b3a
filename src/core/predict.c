/* SPDX-License-Identifier: Apache-2.0 */
/* predict.c: ridge and physics models of the curve from baseline features, selection by
 * cross-validation, and their held-out evaluation.  See predict.h. */
#include "core/predict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_vector.h>

#include "core/gpu.h"
#include "core/pfi.h"

const double pfi_target_depths[PFI_N_TDEPTHS] = {0.1, 0.2, 0.3, 0.4, 0.5};
#define D30 2 /* index of 0.30 in pfi_target_depths */

static const double lambda_grid[] = {1e-4, 1e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0};
#define N_LAMBDA ((int)(sizeof lambda_grid / sizeof lambda_grid[0]))

static const char *const phys_names[PFI_N_PHYS] = {"compute_scale", "memory_penalty",
                                                   "static_frac_of_max", "voltage_floor"};

const char *pfi_phys_name(int i) { return i >= 0 && i < PFI_N_PHYS ? phys_names[i] : "?"; }

const char *pfi_model_kind_name(int kind)
{
    return kind == PFI_MODEL_RIDGE ? "ridge" : kind == PFI_MODEL_PHYSICS ? "physics" : "?";
}

pfi_train_opts pfi_train_defaults(void)
{
    pfi_train_opts o = {.force_kind = -1, .cv_folds = 5, .seed = 1};
    return o;
}

int pfi_train_row_from_run(const pfi_run *run, int group, int gpu_class, pfi_train_row *out,
                           pfi_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = pfi_features_from_run(run, out->x, err);
    if (rc != PFI_OK)
        return rc;
    pfi_curve c;
    rc = pfi_curve_from_run(run, -1, &c, err);
    if (rc != PFI_OK)
        return rc;
    /* Its targets would be read on an empty fit far beyond anything measured: invented. */
    if (pfi_curve_never_bound(&c))
        return pfi_err_set(err, PFI_EINVAL, "run %s: its cap never bound (power shed at most "
                                            "%.1f%%): no slowdown to learn", run->name,
                           100 * c.r_max);
    for (int k = 0; k < PFI_N_TDEPTHS; k++)
        out->s[k] = pfi_fit_s(&c.fit, pfi_target_depths[k]);
    out->pfi30 = out->s[D30] / pfi_target_depths[D30];
    out->group = group;
    out->gpu_class = gpu_class;
    snprintf(out->gpu_type, sizeof out->gpu_type, "%s", run->gpu_type);
    return PFI_OK;
}

/* ---- physics ---- */

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Dynamic power at clock ratio x (of the max clock): f V^2 with V ~ f above the floor vf. */
static double dyn_power(double x, double vf) { return x >= vf ? x * x * x : x * vf * vf; }
static double dyn_inverse(double g, double vf)
{
    double v3 = vf * vf * vf;
    return g >= v3 ? cbrt(g) : g / (vf * vf);
}

static void physics_s(const double *ph, const double *x, double *s_at)
{
    double x0 = isfinite(x[PFI_FT_CLOCK_RATIO]) ? clampd(x[PFI_FT_CLOCK_RATIO], 0.05, 1.0) : 1.0;
    double pom = isfinite(x[PFI_FT_POWER_OF_MAX]) ? x[PFI_FT_POWER_OF_MAX]
                 : isfinite(x[PFI_FT_POWER_HEADROOM]) ? x[PFI_FT_POWER_HEADROOM]
                                                       : 0.8;
    double sm = isfinite(x[PFI_FT_SM_ACTIVE]) ? x[PFI_FT_SM_ACTIVE]
                : isfinite(x[PFI_FT_GPU_UTIL]) ? 0.8 * x[PFI_FT_GPU_UTIL]
                                               : 0.7;
    double dram = isfinite(x[PFI_FT_DRAM_ACTIVE]) ? x[PFI_FT_DRAM_ACTIVE] : 0.0;
    double m = clampd(ph[0] * (sm - ph[1] * dram), 0.0, 1.0);
    double d = clampd(1.0 - ph[2] / (pom > 0.01 ? pom : 0.01), 0.05, 0.98);
    double vf = ph[3];
    double g0 = dyn_power(x0, vf);
    for (int k = 0; k < PFI_N_TDEPTHS; k++) {
        double r = pfi_target_depths[k];
        double frac = (d - r) / d;
        if (frac <= 1e-6) {
            s_at[k] = 1.0;
            continue;
        }
        double xr = dyn_inverse(g0 * frac, vf);
        if (xr > x0)
            xr = x0;
        double t = m * x0 / (xr > 1e-6 ? xr : 1e-6) + (1.0 - m);
        s_at[k] = 1.0 - 1.0 / t;
    }
}

typedef struct rowset {
    const pfi_train_row *rows;
    const int *idx; /* rows used */
    int n;
} rowset;

static double physics_loss(const double *ph, const rowset *rs)
{
    double e = 0, s[PFI_N_TDEPTHS];
    for (int i = 0; i < rs->n; i++) {
        const pfi_train_row *r = &rs->rows[rs->idx[i]];
        physics_s(ph, r->x, s);
        for (int k = 0; k < PFI_N_TDEPTHS; k++)
            e += fabs(s[k] - r->s[k]);
    }
    return e;
}

static const double ph_lo[PFI_N_PHYS] = {0.3, 0.0, 0.0, 0.5};
static const double ph_hi[PFI_N_PHYS] = {1.6, 2.0, 0.6, 1.0};

/* Coarse grid, then a pattern search with shrinking steps (the loss is piecewise smooth). */
static void physics_calibrate(const rowset *rs, double *ph)
{
    double best = INFINITY, cur[PFI_N_PHYS];
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 4; c++)
                for (int v = 0; v < 3; v++) {
                    cur[0] = 0.6 + 0.25 * a;
                    cur[1] = 0.5 * b;
                    cur[2] = 0.05 + 0.1 * c;
                    cur[3] = 0.6 + 0.15 * v;
                    double e = physics_loss(cur, rs);
                    if (e < best) {
                        best = e;
                        memcpy(ph, cur, sizeof cur);
                    }
                }
    double step[PFI_N_PHYS] = {0.1, 0.2, 0.04, 0.05};
    for (int round = 0; round < 30; round++) {
        int moved = 0;
        for (int j = 0; j < PFI_N_PHYS; j++)
            for (int dir = -1; dir <= 1; dir += 2) {
                memcpy(cur, ph, sizeof cur);
                cur[j] = clampd(ph[j] + dir * step[j], ph_lo[j], ph_hi[j]);
                double e = physics_loss(cur, rs);
                if (e < best - 1e-12) {
                    best = e;
                    memcpy(ph, cur, sizeof cur);
                    moved = 1;
                }
            }
        if (!moved)
            for (int j = 0; j < PFI_N_PHYS; j++)
                step[j] /= 2;
    }
}

/* ---- ridge ---- */

static void standardize(const rowset *rs, double *mean, double *scale)
{
    for (int f = 0; f < PFI_N_FEATURES; f++) {
        double s = 0, s2 = 0;
        int c = 0;
        for (int i = 0; i < rs->n; i++) {
            double v = rs->rows[rs->idx[i]].x[f];
            if (isfinite(v)) {
                s += v;
                s2 += v * v;
                c++;
            }
        }
        mean[f] = c ? s / c : 0;
        double var = c > 1 ? (s2 - s * s / c) / (c - 1) : 0;
        scale[f] = var > 1e-12 ? sqrt(var) : 0; /* 0: a constant feature, left out */
    }
}

static double zval(const double *x, const double *mean, const double *scale, int f)
{
    if (!(scale[f] > 0) || !isfinite(x[f]))
        return 0.0;
    return (x[f] - mean[f]) / scale[f];
}

/* Normal equations of rows rs in standardized features: Z'Z, Z'(y_k - ybar_k) for every depth
 * k, and ybar.  Built once per subset and reused for every penalty tried. */
typedef struct gram {
    double A[PFI_N_FEATURES][PFI_N_FEATURES];
    double b[PFI_N_TDEPTHS][PFI_N_FEATURES];
    double ybar[PFI_N_TDEPTHS];
    int n;
} gram;

static void gram_build(const rowset *rs, const double *mean, const double *scale, gram *g)
{
    memset(g, 0, sizeof *g);
    g->n = rs->n;
    for (int i = 0; i < rs->n; i++)
        for (int k = 0; k < PFI_N_TDEPTHS; k++)
            g->ybar[k] += rs->rows[rs->idx[i]].s[k] / rs->n;
    double z[PFI_N_FEATURES];
    for (int i = 0; i < rs->n; i++) {
        const pfi_train_row *r = &rs->rows[rs->idx[i]];
        for (int f = 0; f < PFI_N_FEATURES; f++)
            z[f] = zval(r->x, mean, scale, f);
        for (int f = 0; f < PFI_N_FEATURES; f++) {
            for (int k = 0; k < PFI_N_TDEPTHS; k++)
                g->b[k][f] += z[f] * (r->s[k] - g->ybar[k]);
            for (int h = 0; h < PFI_N_FEATURES; h++)
                g->A[f][h] += z[f] * z[h];
        }
    }
}

/* Solves (Z'Z + lambda n I) beta = Z'(y - ybar) for depth k with GSL's Cholesky. */
static int ridge_solve(const gram *g, int k, double lambda, double *beta)
{
    int F = PFI_N_FEATURES;
    gsl_matrix *A = gsl_matrix_alloc((size_t)F, (size_t)F);
    gsl_vector *b = gsl_vector_alloc((size_t)F);
    gsl_vector *sol = gsl_vector_alloc((size_t)F);
    int rc = PFI_ENOMEM;
    if (A && b && sol) {
        for (int f = 0; f < F; f++) {
            for (int h = 0; h < F; h++)
                gsl_matrix_set(A, (size_t)f, (size_t)h, g->A[f][h]);
            *gsl_matrix_ptr(A, (size_t)f, (size_t)f) += lambda * (g->n > 0 ? g->n : 1) + 1e-12;
            gsl_vector_set(b, (size_t)f, g->b[k][f]);
        }
        gsl_set_error_handler_off();
        int grc = gsl_linalg_cholesky_decomp1(A);
        if (grc == 0)
            grc = gsl_linalg_cholesky_solve(A, b, sol);
        for (int f = 0; f < F; f++)
            beta[f] = grc == 0 ? gsl_vector_get(sol, (size_t)f) : 0;
        rc = grc == 0 ? PFI_OK : PFI_EINTERNAL;
    }
    gsl_matrix_free(A);
    gsl_vector_free(b);
    gsl_vector_free(sol);
    return rc;
}

static double ridge_eval(const pfi_model *m, const double *x, int k)
{
    double y = m->intercept[k];
    for (int f = 0; f < PFI_N_FEATURES; f++)
        y += m->coef[k][f] * zval(x, m->mean, m->scale, f);
    return y;
}

/* Fold of a group: a seeded hash, so folds do not depend on the order of the rows. */
static int fold_of(int group, int folds, unsigned long long seed)
{
    unsigned long long st = seed ^ ((unsigned long long)(group + 1) * 0x9E3779B97F4A7C15ull);
    return (int)(pfi_rand_next(&st) % (unsigned long long)folds);
}

static int ridge_train(const rowset *rs, pfi_model *m, int folds, unsigned long long seed)
{
    standardize(rs, m->mean, m->scale);
    int *tr = malloc(sizeof(int) * (size_t)(rs->n ? rs->n : 1));
    gram *g = malloc(sizeof *g);
    if (!tr || !g) {
        free(tr);
        free(g);
        return PFI_ENOMEM;
    }
    /* Inner CV: absolute error per (depth, penalty), each fold's normal equations built once. */
    double err[PFI_N_TDEPTHS][N_LAMBDA];
    memset(err, 0, sizeof err);
    for (int fo = 0; fo < folds; fo++) {
        int nt = 0;
        for (int i = 0; i < rs->n; i++)
            if (fold_of(rs->rows[rs->idx[i]].group, folds, seed + 7) != fo)
                tr[nt++] = rs->idx[i];
        if (nt == rs->n || nt < 3)
            continue;
        rowset sub = {rs->rows, tr, nt};
        gram_build(&sub, m->mean, m->scale, g);
        for (int k = 0; k < PFI_N_TDEPTHS; k++)
            for (int li = 0; li < N_LAMBDA; li++) {
                double beta[PFI_N_FEATURES];
                if (ridge_solve(g, k, lambda_grid[li], beta) != PFI_OK) {
                    err[k][li] = INFINITY;
                    continue;
                }
                for (int i = 0; i < rs->n; i++) {
                    const pfi_train_row *r = &rs->rows[rs->idx[i]];
                    if (fold_of(r->group, folds, seed + 7) != fo)
                        continue;
                    double y = g->ybar[k];
                    for (int f = 0; f < PFI_N_FEATURES; f++)
                        y += beta[f] * zval(r->x, m->mean, m->scale, f);
                    err[k][li] += fabs(y - r->s[k]);
                }
            }
    }
    gram_build(rs, m->mean, m->scale, g);
    int rc = PFI_OK;
    for (int k = 0; k < PFI_N_TDEPTHS && rc == PFI_OK; k++) {
        int best = N_LAMBDA / 2;
        for (int li = 0; li < N_LAMBDA; li++)
            if (err[k][li] < err[k][best])
                best = li;
        m->lambda[k] = lambda_grid[best];
        m->intercept[k] = g->ybar[k];
        rc = ridge_solve(g, k, m->lambda[k], m->coef[k]);
    }
    free(tr);
    free(g);
    return rc;
}

/* ---- prediction ---- */

static void raw_predict(const pfi_model *m, int kind, const double *x, double *s_at)
{
    if (kind == PFI_MODEL_PHYSICS)
        physics_s(m->phys, x, s_at);
    else
        for (int k = 0; k < PFI_N_TDEPTHS; k++)
            s_at[k] = ridge_eval(m, x, k);
    /* A slowdown never shrinks as more power is shed, and stays within [0, 1]. */
    double prev = 0;
    for (int k = 0; k < PFI_N_TDEPTHS; k++) {
        double v = clampd(s_at[k], 0.0, 1.0);
        if (v < prev)
            v = prev;
        s_at[k] = prev = v;
    }
}

static double pred_pfi30(const pfi_model *m, int kind, const double *x)
{
    double s[PFI_N_TDEPTHS];
    raw_predict(m, kind, x, s);
    pfi_fit f;
    if (pfi_fit_points(m->family, pfi_target_depths, s, NULL, PFI_N_TDEPTHS, &f, NULL) != PFI_OK)
        return s[D30] / pfi_target_depths[D30];
    return pfi_at(&f, 0.30);
}

int pfi_model_predict_x(const pfi_model *m, const double *x, double *s_at, pfi_fit *fit,
                        pfi_err *err)
{
    double s[PFI_N_TDEPTHS];
    raw_predict(m, m->kind, x, s);
    if (s_at)
        memcpy(s_at, s, sizeof s);
    if (!fit)
        return PFI_OK;
    int npos = 0;
    for (int k = 0; k < PFI_N_TDEPTHS; k++)
        npos += s[k] > 0;
    if (npos < pfi_family_params(m->family)) {
        /* Predicted to lose nothing down to 50%: the flat curve. */
        memset(fit, 0, sizeof *fit);
        fit->family = m->family;
        fit->p[1] = 1.0;
        return PFI_OK;
    }
    return pfi_fit_points(m->family, pfi_target_depths, s, NULL, PFI_N_TDEPTHS, fit, err);
}

int pfi_model_predict_level(const pfi_model *m, const pfi_run *hdr, const pfi_level *base,
                            pfi_curve *out, pfi_err *err)
{
    double x[PFI_N_FEATURES];
    int rc = pfi_features_from_level(hdr, base, x, err);
    if (rc != PFI_OK)
        return rc;
    pfi_fit fit;
    rc = pfi_model_predict_x(m, x, NULL, &fit, err);
    if (rc != PFI_OK)
        return rc;
    fit.n_points = 0;
    double lo = hdr->min_limit_w > 0 ? hdr->min_limit_w : base->cap_w / 2;
    double hi = hdr->max_limit_w >= base->cap_w ? hdr->max_limit_w : base->cap_w;
    return pfi_curve_from_fit(&fit, base->tput > 0 ? base->tput : 1.0, base->power_w, base->cap_w,
                              lo, hi, hdr->n_gpus, pfi_target_depths[PFI_N_TDEPTHS - 1], out, err);
}

int pfi_model_predict_run(const pfi_model *m, const pfi_run *run, pfi_curve *out, pfi_err *err)
{
    int b = pfi_run_baseline(run);
    if (b < 0)
        return pfi_err_set(err, PFI_EINVAL, "run %s has no baseline level", run->name);
    return pfi_model_predict_level(m, run, &run->levels[b], out, err);
}

/* ---- what a model was trained on ---- */

/* A GPU type as the catalogue names it ("NVIDIA H200", "H200" -> "H200-SXM"), else as given:
 * the live name and a store's name of one GPU must match. */
static void gpu_key(const char *type, char *out, size_t n)
{
    const pfi_gpu_model *g = pfi_gpu_model_find(type);
    if (!g)
        g = pfi_gpu_model_family(type);
    snprintf(out, n, "%s", g ? g->name : type);
}

static void record_domain(const rowset *rs, pfi_model *m)
{
    int overflow = 0;
    m->n_gpu_types = 0;
    for (int f = 0; f < PFI_N_FEATURES; f++)
        m->x_min[f] = m->x_max[f] = NAN;
    for (int i = 0; i < rs->n; i++) {
        const pfi_train_row *r = &rs->rows[rs->idx[i]];
        for (int f = 0; f < PFI_N_FEATURES; f++)
            if (isfinite(r->x[f])) {
                if (!(r->x[f] >= m->x_min[f]))
                    m->x_min[f] = r->x[f];
                if (!(r->x[f] <= m->x_max[f]))
                    m->x_max[f] = r->x[f];
            }
        char key[sizeof m->gpu_types[0]];
        gpu_key(r->gpu_type, key, sizeof key);
        int seen = !key[0];
        for (int t = 0; !seen && t < m->n_gpu_types; t++)
            seen = strcmp(m->gpu_types[t], key) == 0;
        if (!seen && m->n_gpu_types < PFI_MODEL_MAX_GPU_TYPES)
            memcpy(m->gpu_types[m->n_gpu_types++], key, sizeof key);
        else if (!seen)
            overflow = 1;
    }
    /* A partial list would mark GPUs it trained on as unseen: none is no claim. */
    if (overflow)
        m->n_gpu_types = 0;
}

/* v and the bounds with as many digits as tell them apart (0.991 vs 0.9905 is not "0.991
 * outside 0.45-0.991"). */
static void range_reason(char *buf, size_t n, const char *name, double v, double lo, double hi)
{
    int d = 3;
    char a[32], b[32], c[32];
    for (;; d++) {
        snprintf(a, sizeof a, "%.*g", d, v);
        snprintf(b, sizeof b, "%.*g", d, lo);
        snprintf(c, sizeof c, "%.*g", d, hi);
        if (d >= 10 || (strcmp(a, b) != 0 && strcmp(a, c) != 0))
            break;
    }
    if (lo == hi)
        snprintf(buf, n, "%s %s, training had only %s", name, a, b);
    else
        snprintf(buf, n, "%s %s outside %s%s%s", name, a, b, lo < 0 ? " to " : "-", c);
}

void pfi_model_extrapolation(const pfi_model *m, const char *gpu_type, const double *x,
                             pfi_extrap *out)
{
    memset(out, 0, sizeof *out);
    out->known = m->n_gpu_types > 0;
    char key[sizeof m->gpu_types[0]];
    gpu_key(gpu_type ? gpu_type : "", key, sizeof key);
    int seen = !key[0] || m->n_gpu_types == 0;
    for (int t = 0; !seen && t < m->n_gpu_types; t++)
        seen = strcmp(m->gpu_types[t], key) == 0;
    if (!seen) {
        int k = snprintf(out->why[0], sizeof out->why[0], "gpu_type %s not in training (", key);
        for (int t = 0; t < m->n_gpu_types && k > 0 && (size_t)k < sizeof out->why[0]; t++)
            k += snprintf(out->why[0] + k, sizeof out->why[0] - (size_t)k, "%s%s",
                          t ? ", " : "", m->gpu_types[t]);
        if (k > 0 && (size_t)k < sizeof out->why[0])
            snprintf(out->why[0] + k, sizeof out->why[0] - (size_t)k, ")");
        out->n = 1;
    }
    for (int f = 0; f < PFI_N_FEATURES; f++) {
        double lo = m->x_min[f], hi = m->x_max[f];
        if (!isfinite(lo) || !isfinite(hi))
            continue;
        out->known = 1;
        /* The file keeps 10 digits: a training run itself read 1e-11 beyond its own bound. */
        double tol = 1e-6 * fmax(1.0, fmax(fabs(lo), fabs(hi)));
        if (isfinite(x[f]) && (x[f] < lo - tol || x[f] > hi + tol))
            range_reason(out->why[out->n++], sizeof out->why[0], pfi_feature_name(f), x[f],
                         m->x_min[f], m->x_max[f]);
    }
}

int pfi_model_extrapolation_level(const pfi_model *m, const pfi_run *hdr, const pfi_level *base,
                                  pfi_extrap *out, pfi_err *err)
{
    double x[PFI_N_FEATURES];
    int rc = pfi_features_from_level(hdr, base, x, err);
    if (rc != PFI_OK)
        return rc;
    pfi_model_extrapolation(m, hdr->gpu_type, x, out);
    return PFI_OK;
}

void pfi_extrap_line(const pfi_extrap *x, char *buf, size_t n)
{
    size_t k = 0;
    if (n)
        buf[0] = '\0';
    for (int i = 0; i < x->n && k < n; i++) {
        int w = snprintf(buf + k, n - k, "%s%s", i ? "; " : "", x->why[i]);
        if (w < 0)
            break;
        k += (size_t)w;
    }
}

/* ---- training with selection ---- */

static int train_kind(const rowset *rs, int kind, pfi_model *m, int folds, unsigned long long seed)
{
    if (kind == PFI_MODEL_PHYSICS) {
        physics_calibrate(rs, m->phys);
        return PFI_OK;
    }
    return ridge_train(rs, m, folds, seed);
}

/* CV MAE of PFI30 of one kind on rs, folds by group. */
static double cv_mae(const rowset *rs, int kind, int folds, unsigned long long seed, int family)
{
    int *tr = malloc(sizeof(int) * (size_t)(rs->n ? rs->n : 1));
    if (!tr)
        return INFINITY;
    double e = 0;
    int ne = 0;
    for (int fo = 0; fo < folds; fo++) {
        int nt = 0;
        for (int i = 0; i < rs->n; i++)
            if (fold_of(rs->rows[rs->idx[i]].group, folds, seed) != fo)
                tr[nt++] = rs->idx[i];
        if (nt == rs->n || nt < 3)
            continue;
        rowset sub = {rs->rows, tr, nt};
        pfi_model fm;
        memset(&fm, 0, sizeof fm);
        fm.family = family;
        if (train_kind(&sub, kind, &fm, folds, seed) != PFI_OK)
            continue;
        for (int i = 0; i < rs->n; i++) {
            const pfi_train_row *r = &rs->rows[rs->idx[i]];
            if (fold_of(r->group, folds, seed) != fo)
                continue;
            e += fabs(pred_pfi30(&fm, kind, r->x) - r->pfi30);
            ne++;
        }
    }
    free(tr);
    return ne ? e / ne : INFINITY;
}

static int train_set(const rowset *rs, const pfi_train_opts *o, pfi_model *m, pfi_err *err)
{
    memset(m, 0, sizeof *m);
    m->family = pfi_default_family;
    m->n_train = rs->n;
    m->cv_mae_ridge = m->cv_mae_physics = NAN;
    if (rs->n < PFI_MODEL_MIN_TRAIN)
        return pfi_err_set(err, PFI_EINVAL, "training needs at least %d characterized runs, got %d",
                           PFI_MODEL_MIN_TRAIN, rs->n);
    int folds = o->cv_folds >= 2 ? o->cv_folds : 5;
    int kind = o->force_kind;
    if (kind < 0) {
        m->cv_mae_ridge = cv_mae(rs, PFI_MODEL_RIDGE, folds, o->seed, m->family);
        m->cv_mae_physics = cv_mae(rs, PFI_MODEL_PHYSICS, folds, o->seed, m->family);
        kind = m->cv_mae_physics < m->cv_mae_ridge ? PFI_MODEL_PHYSICS : PFI_MODEL_RIDGE;
    }
    /* Both are fitted, so a saved model can be asked for either; `kind` is what it uses. */
    int rc = train_kind(rs, PFI_MODEL_RIDGE, m, folds, o->seed);
    if (rc == PFI_OK)
        rc = train_kind(rs, PFI_MODEL_PHYSICS, m, folds, o->seed);
    if (rc != PFI_OK)
        return pfi_err_set(err, rc, "training failed: the feature matrix is singular");
    m->kind = kind;
    record_domain(rs, m);
    return PFI_OK;
}

int pfi_model_train(const pfi_train_row *rows, int n, const pfi_train_opts *opt, pfi_model *m,
                    pfi_err *err)
{
    pfi_train_opts o = opt ? *opt : pfi_train_defaults();
    int *idx = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!idx)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        idx[i] = i;
    rowset rs = {rows, idx, n};
    int rc = train_set(&rs, &o, m, err);
    free(idx);
    return rc;
}

/* ---- evaluation ---- */

typedef struct acc {
    double sae, sse, sum, sum2, sae70, maxe;
    int n;
} acc;

/* Adds r's error to a; returns the predicted PFI30. */
static double acc_add(acc *a, const pfi_model *m, const pfi_train_row *r)
{
    double s[PFI_N_TDEPTHS];
    pfi_fit f;
    double p30;
    if (pfi_model_predict_x(m, r->x, s, &f, NULL) == PFI_OK)
        p30 = pfi_at(&f, 0.30);
    else
        p30 = s[D30] / 0.30;
    double e = p30 - r->pfi30;
    a->sae += fabs(e);
    a->sse += e * e;
    a->sum += r->pfi30;
    a->sum2 += r->pfi30 * r->pfi30;
    a->sae70 += fabs(pfi_fit_s(&f, 0.30) - r->s[D30]);
    if (fabs(e) > a->maxe)
        a->maxe = fabs(e);
    a->n++;
    return p30;
}

static void acc_done(const acc *a, pfi_model_eval *out)
{
    out->n = a->n;
    if (a->n == 0) {
        out->mae_pfi30 = out->r2_pfi30 = out->mae_rel70 = out->max_err_pfi30 = NAN;
        return;
    }
    out->mae_pfi30 = a->sae / a->n;
    out->mae_rel70 = a->sae70 / a->n;
    out->max_err_pfi30 = a->maxe;
    double sst = a->sum2 - a->sum * a->sum / a->n;
    out->r2_pfi30 = sst > 0 ? 1.0 - a->sse / sst : NAN;
}

void pfi_model_score(const double *pred30, const double *true30, int n, pfi_model_eval *out)
{
    acc a = {0};
    for (int i = 0; i < n; i++) {
        if (!isfinite(true30[i]) || !isfinite(pred30[i]))
            continue;
        double e = pred30[i] - true30[i];
        a.sae += fabs(e);
        a.sse += e * e;
        a.sum += true30[i];
        a.sum2 += true30[i] * true30[i];
        a.sae70 += fabs(e) * 0.30;
        a.maxe = fmax(a.maxe, fabs(e));
        a.n++;
    }
    acc_done(&a, out);
}

int pfi_model_lojo(const pfi_train_row *rows, int n, const pfi_train_opts *o,
                   pfi_model_eval *out, pfi_err *err)
{
    return pfi_model_lojo_pred(rows, n, o, out, NULL, err);
}

int pfi_model_lojo_pred(const pfi_train_row *rows, int n, const pfi_train_opts *opt,
                        pfi_model_eval *out, double *pred30, pfi_err *err)
{
    pfi_train_opts o = opt ? *opt : pfi_train_defaults();
    memset(out, 0, sizeof *out);
    int *idx = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    char *done = calloc((size_t)(n > 0 ? n : 1), 1);
    if (!idx || !done) {
        free(idx);
        free(done);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    acc a = {0};
    int rc = PFI_OK;
    for (int i = 0; i < n && rc == PFI_OK; i++) {
        if (done[i])
            continue;
        int g = rows[i].group, nt = 0;
        for (int j = 0; j < n; j++)
            if (rows[j].group != g)
                idx[nt++] = j;
        rowset rs = {rows, idx, nt};
        pfi_model m;
        rc = train_set(&rs, &o, &m, err);
        if (rc != PFI_OK)
            break;
        if (m.kind == PFI_MODEL_RIDGE)
            out->kind_ridge++;
        else
            out->kind_physics++;
        for (int j = 0; j < n; j++)
            if (rows[j].group == g) {
                double p30 = acc_add(&a, &m, &rows[j]);
                if (pred30)
                    pred30[j] = p30;
                done[j] = 1;
            }
    }
    free(idx);
    free(done);
    if (rc != PFI_OK)
        return rc;
    acc_done(&a, out);
    return PFI_OK;
}

int pfi_model_transfer(const pfi_train_row *train, int ntrain, const pfi_train_row *test,
                       int ntest, const pfi_train_opts *o, pfi_model_eval *out, pfi_err *err)
{
    return pfi_model_transfer_pred(train, ntrain, test, ntest, o, out, NULL, err);
}

int pfi_model_transfer_pred(const pfi_train_row *train, int ntrain, const pfi_train_row *test,
                            int ntest, const pfi_train_opts *o, pfi_model_eval *out,
                            double *pred30, pfi_err *err)
{
    memset(out, 0, sizeof *out);
    pfi_model m;
    int rc = pfi_model_train(train, ntrain, o, &m, err);
    if (rc != PFI_OK)
        return rc;
    if (m.kind == PFI_MODEL_RIDGE)
        out->kind_ridge = 1;
    else
        out->kind_physics = 1;
    acc a = {0};
    for (int j = 0; j < ntest; j++) {
        double p30 = acc_add(&a, &m, &test[j]);
        if (pred30)
            pred30[j] = p30;
    }
    acc_done(&a, out);
    return PFI_OK;
}
