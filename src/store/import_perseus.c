/* import_perseus.c: the Perseus (SOSP '24) artifact's ZeusGlobal sweeps: one power limit on
 * every GPU of a pipeline-parallel job, time and energy per iteration (see
 * $PFI_DATA_DIR/perseus-sosp24/SOURCE.md).  One run per (model, parallelism, batch) and GPU
 * type; power per GPU = energy / time / (dp*tp*pp); throughput = batch_size / time, in
 * samples/s because the files carry no sequence length. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "store/csv.h"
#include "store/import_common.h"

typedef struct cols {
    int model, partition, batch, dp, tp, pp, mbs, nmb, time, energy;
    int limit[64];
    int nlimit;
} cols;

static int find_cols(pfi_csv *c, cols *k, pfi_err *err)
{
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
                                                                 strlen(h + 12))
            k->limit[k->nlimit++] = i;
    }
    if (k->nlimit == 0)
        return pfi_err_set(err, PFI_EINVAL, "%s: no power_limit_<i> columns in the header",
                           pfi_csv_name(c));
    return PFI_OK;
}

/* The one limit of a ZeusGlobal row: every used stage column equal (unused ones are 0). */
static int row_limit(pfi_csv *c, const cols *k, double *cap, pfi_err *err)
{
    *cap = 0;
    for (int i = 0; i < k->nlimit; i++) {
        double v;
        int rc = pfi_csv_double(c, k->limit[i], &v, err);
        if (rc != PFI_OK)
            return rc;
        if (v == 0)
            continue;
        if (v < 0 || (*cap > 0 && fabs(v - *cap) > 1e-6))
            return pfi_err_set(err, PFI_EINVAL,
                               "%s line %d: power limits differ across stages (%g and %g W); "
                               "a ZeusGlobal file has one limit per row",
                               pfi_csv_name(c), pfi_csv_line(c), *cap, v);
        *cap = v;
    }
    if (*cap <= 0)
        return pfi_err_set(err, PFI_EINVAL, "%s line %d: no power limit", pfi_csv_name(c),
                           pfi_csv_line(c));
    return PFI_OK;
}

typedef struct key {
    char model[PFI_NAME_MAX], partition[256];
    int batch, dp, tp, pp, mbs, nmb;
} key;

static int import_file(const char *path, const char *gpu_type, const char *rel,
                       pfi_import_set *set, pfi_err *err)
{
    pfi_csv *c;
    int rc = pfi_csv_open(path, &c, err);
    if (rc != PFI_OK)
        return rc;
    cols k;
    void *keys = NULL;
    int first = set->n;
    if ((rc = find_cols(c, &k, err)) != PFI_OK)
        goto out;
    while ((rc = pfi_csv_next(c, err)) == PFI_OK) {
        key y;
        memset(&y, 0, sizeof y);
        snprintf(y.model, sizeof y.model, "%s", pfi_csv_field(c, k.model));
        snprintf(y.partition, sizeof y.partition, "%s", pfi_csv_field(c, k.partition));
        double cap, time, energy;
        if ((rc = pfi_csv_int(c, k.batch, &y.batch, err)) || (rc = pfi_csv_int(c, k.dp, &y.dp, err)) ||
            (rc = pfi_csv_int(c, k.tp, &y.tp, err)) || (rc = pfi_csv_int(c, k.pp, &y.pp, err)) ||
            (rc = pfi_csv_int(c, k.mbs, &y.mbs, err)) || (rc = pfi_csv_int(c, k.nmb, &y.nmb, err)) ||
            (rc = pfi_csv_double(c, k.time, &time, err)) ||
            (rc = pfi_csv_double(c, k.energy, &energy, err)) || (rc = row_limit(c, &k, &cap, err)))
            goto out;
        char where[600];
        snprintf(where, sizeof where, "%s line %d", pfi_csv_name(c), pfi_csv_line(c));
        if (!y.model[0] || y.batch <= 0 || y.dp <= 0 || y.tp <= 0 || y.pp <= 0 || time <= 0 ||
            energy <= 0) {
            rc = pfi_err_set(err, PFI_EINVAL,
                             "%s: model, batch size, dp, tp, pp, time and energy must be "
                             "given and positive",
                             where);
            goto out;
        }
        int added, i = pfi_import_key_run(set, first, &keys, &y, sizeof y, path, &added, err);
        if (i < 0) {
            rc = PFI_ENOMEM;
            goto out;
        }
        if (added) {
            pfi_import_run *ir = &set->v[i];
            pfi_run *r = &ir->run;
            pfi_import_run_init(r, "perseus", gpu_type, y.model);
            r->n_gpus = y.dp * y.tp * y.pp;
            r->meta.dp = y.dp;
            r->meta.tp = y.tp;
            r->meta.pp = y.pp;
            r->meta.global_batch = y.batch;
            snprintf(r->name, sizeof r->name, "perseus/%s/%s dp%dtp%dpp%d", gpu_type, y.model,
                     y.dp, y.tp, y.pp);
            /* Two schedules of the same model and parallelism: tell them apart by batch. */
            for (int j = first; j < i; j++)
                if (strcmp(set->v[j].run.name, r->name) == 0) {
                    size_t l = strlen(r->name);
                    snprintf(r->name + l, sizeof r->name - l, " bs%d mbs%d", y.batch, y.mbs);
                    break;
                }
            snprintf(ir->unit_label, sizeof ir->unit_label, "samples/s");
            json_t *cfg = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i}", "dataset", "perseus-sosp24",
                                    "file", rel, "partition_method", y.partition,
                                    "microbatch_size", y.mbs, "num_microbatches", y.nmb,
                                    "batch_size", y.batch);
            if ((rc = pfi_import_set_config(ir, cfg, where, err)) != PFI_OK)
                goto out;
        }
        pfi_run *r = &set->v[i].run;
        pfi_level lv;
        pfi_import_level_init(&lv, cap, energy / time / r->n_gpus, y.batch / time);
        if ((rc = pfi_import_add_level(r, &lv, where, err)) != PFI_OK)
            goto out;
    }
    if (rc == PFI_CSV_END)
        rc = set->n > first ? PFI_OK
                            : pfi_err_set(err, PFI_EINVAL, "%s: no data rows", path);
out:
    free(keys);
    pfi_csv_close(c);
    return rc;
}

int pfi_import_perseus(pfi_store *st, const char *dir, int *nruns, int *nlevels, pfi_err *err)
{
    static const pfi_import_file files[] = {
        {"zeus_baseline/A100/zeus_global.csv", "A100-PCIE-80GB"},
        {"zeus_baseline/A40/zeus_global.csv", "A40"},
    };
    return pfi_import_files(st, dir, "perseus-sosp24", files, sizeof files / sizeof files[0],
                            import_file, "import perseus", nruns, nlevels, err);
}
