/* SPDX-License-Identifier: Apache-2.0 */
/* importance.c: grouped permutation importance of the predictor's features.  See importance.h. */
#include "core/importance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/pfi.h"

/* Column f standardized over the rows into z (missing -> 0, a constant column -> all 0). */
static void zcol(const pfi_train_row *rows, int n, int f, double *z)
{
    double sum = 0, sum2 = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(rows[i].x[f])) {
            sum += rows[i].x[f];
            sum2 += rows[i].x[f] * rows[i].x[f];
            k++;
        }
    double mean = k ? sum / k : 0, var = k ? sum2 / k - mean * mean : 0;
    double sd = var > 1e-24 ? sqrt(var) : 0;
    for (int i = 0; i < n; i++)
        z[i] = sd > 0 && isfinite(rows[i].x[f]) ? (rows[i].x[f] - mean) / sd : 0;
}

static int root(int *parent, int a)
{
    while (parent[a] != a)
        a = parent[a] = parent[parent[a]];
    return a;
}

int pfi_feature_groups(const pfi_train_row *rows, int n, double corr, int *group_of)
{
    double *z = malloc(sizeof *z * (size_t)(n > 0 ? n : 1) * PFI_N_FEATURES);
    int parent[PFI_N_FEATURES];
    for (int f = 0; f < PFI_N_FEATURES; f++)
        parent[f] = f;
    if (z) {
        for (int f = 0; f < PFI_N_FEATURES; f++)
            zcol(rows, n, f, z + (size_t)f * (size_t)n);
        for (int a = 0; a < PFI_N_FEATURES; a++)
            for (int b = a + 1; b < PFI_N_FEATURES; b++) {
                const double *za = z + (size_t)a * (size_t)n, *zb = z + (size_t)b * (size_t)n;
                double s = 0, saa = 0, sbb = 0;
                for (int i = 0; i < n; i++)
                    s += za[i] * zb[i], saa += za[i] * za[i], sbb += zb[i] * zb[i];
                double r = saa > 0 && sbb > 0 ? s / sqrt(saa * sbb) : 0;
                if (fabs(r) >= corr)
                    parent[root(parent, b)] = root(parent, a);
            }
    }
    free(z);
    /* number the groups by their first feature */
    int id[PFI_N_FEATURES], ng = 0;
    for (int f = 0; f < PFI_N_FEATURES; f++)
        id[f] = -1;
    for (int f = 0; f < PFI_N_FEATURES; f++) {
        int r = root(parent, f);
        if (id[r] < 0)
            id[r] = ng++;
        group_of[f] = id[r];
    }
    return ng;
}

static double predict30(const pfi_model *m, const double *x)
{
    double s[PFI_N_TDEPTHS];
    pfi_fit fit;
    if (pfi_model_predict_x(m, x, s, &fit, NULL) == PFI_OK)
        return pfi_at(&fit, 0.30);
    return s[2] / 0.30;
}

int pfi_group_importance(const pfi_model *const *row_model, const pfi_train_row *rows, int n,
                         double corr, int repeats, unsigned long long seed, pfi_importance *out,
                         pfi_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 2 || repeats < 1)
        return pfi_err_set(err, PFI_EINVAL, "importance needs at least 2 rows and 1 repeat");
    for (int i = 0; i < n; i++)
        if (!row_model[i])
            return pfi_err_set(err, PFI_EINVAL, "row %d has no model", i);
    out->corr = corr;
    out->repeats = repeats;
    out->seed = seed;
    out->n_groups = pfi_feature_groups(rows, n, corr, out->group_of);
    int *order = malloc(sizeof *order * (size_t)n);
    double *inc = malloc(sizeof *inc * (size_t)repeats);
    if (!order || !inc) {
        free(order), free(inc);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    /* A row whose pfi30 is NAN (no measured truth) is grouped and permuted but not scored. */
    double sae = 0;
    int ns = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(rows[i].pfi30)) {
            sae += fabs(predict30(row_model[i], rows[i].x) - rows[i].pfi30);
            ns++;
        }
    if (ns == 0) {
        free(order), free(inc);
        return pfi_err_set(err, PFI_EINVAL, "importance: no row has a PFI30 to score");
    }
    out->mae0 = sae / ns;
    unsigned long long st = seed;
    for (int g = 0; g < out->n_groups; g++) {
        for (int r = 0; r < repeats; r++) {
            pfi_rand_permutation(order, n, &st);
            double s = 0;
            for (int i = 0; i < n; i++) {
                if (!isfinite(rows[i].pfi30))
                    continue;
                double x[PFI_N_FEATURES];
                memcpy(x, rows[i].x, sizeof x);
                for (int f = 0; f < PFI_N_FEATURES; f++)
                    if (out->group_of[f] == g)
                        x[f] = rows[order[i]].x[f]; /* the group's columns move together */
                s += fabs(predict30(row_model[i], x) - rows[i].pfi30);
            }
            inc[r] = s / ns - out->mae0;
        }
        double m = 0, v = 0;
        for (int r = 0; r < repeats; r++)
            m += inc[r];
        m /= repeats;
        for (int r = 0; r < repeats; r++)
            v += (inc[r] - m) * (inc[r] - m);
        out->mean[g] = m;
        out->sd[g] = repeats > 1 ? sqrt(v / (repeats - 1)) : 0;
    }
    free(order), free(inc);
    return PFI_OK;
}
