/* SPDX-License-Identifier: Apache-2.0 */
/* perseus.c: the Perseus sweep files' rows (perseus.h), through store/csv.h. */
#include "store/perseus.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/csv.h"

struct pfi_perseus {
    pfi_csv *c;
    int flags;
    int model, partition, batch, dp, tp, pp, mbs, nmb, time, energy;
    int limit[64];   /* the power_limit_<i> columns, in header order */
    int stage[64];   /* and their <i> */
    int nlimit;
};

static int find_cols(pfi_perseus *k, pfi_err *err)
{
    pfi_csv *c = k->c;
    struct {
        const char *name;
        int *col;
    } req[] = {{"model_name", &k->model},     {"partition_method", &k->partition},
               {"batch_size", &k->batch},     {"dp", &k->dp},
               {"tp", &k->tp},                {"pp", &k->pp},
               {"microbatch_size", &k->mbs}, {"num_microbatches", &k->nmb},
               {"time", &k->time},            {"energy", &k->energy}};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        int rc = pfi_csv_require(c, req[i].name, req[i].col, err);
        if (rc != PFI_OK)
            return rc;
    }
    k->nlimit = 0;
    for (int i = 0; i < pfi_csv_ncols(c) && k->nlimit < 64; i++) {
        const char *h = pfi_csv_header(c, i);
        if (strncmp(h, "power_limit_", 12) == 0 && h[12] && strspn(h + 12, "0123456789") ==
                                                                 strlen(h + 12)) {
            k->stage[k->nlimit] = strlen(h + 12) < 4 ? atoi(h + 12) : PFI_PERSEUS_MAX_STAGES;
            k->limit[k->nlimit++] = i;
        }
    }
    if (k->nlimit == 0)
        return pfi_err_set(err, PFI_EINVAL, "%s: no power_limit_<i> columns in the header",
                           pfi_csv_name(c));
    return PFI_OK;
}

int pfi_perseus_open(const char *path, int flags, pfi_perseus **out, pfi_err *err)
{
    *out = NULL;
    pfi_perseus *p = calloc(1, sizeof *p);
    if (!p)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    p->flags = flags;
    int rc = pfi_csv_open(path, &p->c, err);
    if (rc == PFI_OK)
        pfi_csv_drop_unterminated(p->c); /* machine-written: a row cut short is left out */
    if (rc == PFI_OK)
        rc = find_cols(p, err);
    if (rc != PFI_OK) {
        pfi_perseus_close(p);
        return rc;
    }
    *out = p;
    return PFI_OK;
}

void pfi_perseus_close(pfi_perseus *p)
{
    if (!p)
        return;
    pfi_csv_close(p->c);
    free(p);
}

int pfi_perseus_unterminated(const pfi_perseus *p)
{
    return pfi_csv_unterminated(p->c);
}

/* The stage limits; in a ZeusGlobal file also the one limit of the row: every used stage
 * column equal (unused ones are 0). */
static int row_limits(const pfi_perseus *k, pfi_perseus_row *row, pfi_err *err)
{
    pfi_csv *c = k->c;
    double *cap = &row->cap_w;
    *cap = 0;
    for (int i = 0; i < k->nlimit; i++) {
        double v;
        int rc = pfi_csv_double(c, k->limit[i], &v, err);
        if (rc != PFI_OK)
            return rc;
        if (k->stage[i] < PFI_PERSEUS_MAX_STAGES)
            row->limit_w[k->stage[i]] = v;
        if (!(k->flags & PFI_PERSEUS_GLOBAL) || v == 0)
            continue;
        if (v < 0 || (*cap > 0 && fabs(v - *cap) > 1e-6))
            return pfi_err_set(err, PFI_EINVAL,
                               "%s line %d: power limits differ across stages (%g and %g W); "
                               "a ZeusGlobal file has one limit per row",
                               pfi_csv_name(c), pfi_csv_line(c), *cap, v);
        *cap = v;
    }
    if ((k->flags & PFI_PERSEUS_GLOBAL) && *cap <= 0)
        return pfi_err_set(err, PFI_EINVAL, "%s line %d: no power limit", pfi_csv_name(c),
                           pfi_csv_line(c));
    return PFI_OK;
}

int pfi_perseus_next(pfi_perseus *p, pfi_perseus_row *y, pfi_err *err)
{
    pfi_csv *c = p->c;
    int rc = pfi_csv_next(c, err);
    if (rc != PFI_OK)
        return rc;
    memset(y, 0, sizeof *y);
    y->line = pfi_csv_line(c);
    if ((rc = pfi_csv_text(c, p->model, y->model, sizeof y->model, err)) ||
        (rc = pfi_csv_text(c, p->partition, y->partition, sizeof y->partition, err)) ||
        (rc = pfi_csv_int(c, p->batch, &y->batch, err)) ||
        (rc = pfi_csv_int(c, p->dp, &y->dp, err)) || (rc = pfi_csv_int(c, p->tp, &y->tp, err)) ||
        (rc = pfi_csv_int(c, p->pp, &y->pp, err)) || (rc = pfi_csv_int(c, p->mbs, &y->mbs, err)) ||
        (rc = pfi_csv_int(c, p->nmb, &y->nmb, err)) ||
        (rc = pfi_csv_double(c, p->time, &y->time_s, err)) ||
        (rc = pfi_csv_double(c, p->energy, &y->energy_j, err)) || (rc = row_limits(p, y, err)))
        return rc;
    return PFI_OK;
}
