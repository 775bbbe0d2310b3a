/* SPDX-License-Identifier: Apache-2.0 */
/* import_perseus.c: the Perseus (SOSP '24) artifact's ZeusGlobal sweeps: one power limit on
 * every GPU of a pipeline-parallel job, time and energy per iteration (see
 * $PFI_DATA_DIR/perseus-sosp24/SOURCE.md).  One run per (model, parallelism, batch) and GPU
 * type; power per GPU = energy / time / (dp*tp*pp); throughput = batch_size / time, in
 * samples/s because the files carry no sequence length. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "store/csv.h"
#include "store/import_common.h"
#include "store/perseus.h"

typedef struct key {
    char model[PFI_NAME_MAX], partition[256];
    int batch, dp, tp, pp, mbs, nmb;
} key;

/* The run's name: model and parallelism, as every run of the public files is named, and only
 * when an earlier run of the set has that name (several schedules of one model and parallelism)
 * also the batch and microbatch sizes, then the partition, then the microbatch count, which
 * together are the run's key.  Each step is checked against every name, not only the first:
 * a third schedule got the second's name and replaced it.  A name that does not fit in
 * PFI_NAME_MAX is refused (where names the row): cut, it lost its parallelism and two models
 * that differ only at the end got one name. */
static int name_run(pfi_import_set *set, int i, const char *gpu_type, const key *y,
                    const char *where, pfi_err *err)
{
    const pfi_run *r = &set->v[i].run;
    char *name = set->v[i].run.name;
    size_t n = sizeof set->v[i].run.name;
    int l = snprintf(name, n, "perseus/%s/%s dp%dtp%dpp%d", gpu_type, y->model, y->dp, y->tp,
                     y->pp);
    for (int step = 1;; step++) {
        int rc = pfi_import_name_fits(r, l, where, err);
        int taken = rc != PFI_OK || step == 4 ? 0 : pfi_import_name_taken(set, i, name);
        if (taken < 0)
            return pfi_err_set(err, PFI_ENOMEM, "%s: out of memory naming the run", where);
        if (!taken)
            return rc;
        if (step == 1)
            l += snprintf(name + l, n - (size_t)l, " bs%d mbs%d", y->batch, y->mbs);
        else if (step == 2)
            l += snprintf(name + l, n - (size_t)l, " %s", y->partition);
        else
            l += snprintf(name + l, n - (size_t)l, " nmb%d", y->nmb);
    }
}

int pfi_import_perseus_file(const char *path, const char *gpu_type, const char *rel,
                       pfi_import_set *set, pfi_err *err)
{
    pfi_perseus *c;
    int rc = pfi_perseus_open(path, PFI_PERSEUS_GLOBAL, &c, err);
    if (rc != PFI_OK)
        return rc;
    pfi_import_keys keys = {0};
    int first = set->n;
    pfi_perseus_row row;
    while ((rc = pfi_perseus_next(c, &row, err)) == PFI_OK) {
        key y;
        memset(&y, 0, sizeof y);
        snprintf(y.model, sizeof y.model, "%s", row.model);
        snprintf(y.partition, sizeof y.partition, "%s", row.partition);
        y.batch = row.batch;
        y.dp = row.dp;
        y.tp = row.tp;
        y.pp = row.pp;
        y.mbs = row.mbs;
        y.nmb = row.nmb;
        double cap = row.cap_w, time = row.time_s, energy = row.energy_j;
        char where[600];
        snprintf(where, sizeof where, "%s line %d", path, row.line);
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
            if ((rc = pfi_import_set_gpus(r, y.dp, y.tp, y.pp, where, err)) != PFI_OK)
                goto out;
            r->meta.global_batch = y.batch;
            if ((rc = name_run(set, i, gpu_type, &y, where, err)) != PFI_OK)
                goto out;
            snprintf(ir->origin, sizeof ir->origin, "%s", where);
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
        rc = set->n > first ? pfi_import_check_end(path, pfi_perseus_unterminated(c), err)
                            : pfi_err_set(err, PFI_EINVAL, "%s: no data rows", path);
out:
    pfi_import_keys_free(&keys);
    pfi_perseus_close(c);
    return rc;
}

int pfi_import_perseus_read(const char *dir, pfi_import_set *set, pfi_err *err)
{
    static const pfi_import_file files[] = {
        {"zeus_baseline/A100/zeus_global.csv", "A100-PCIE-80GB"},
        {"zeus_baseline/A40/zeus_global.csv", "A40"},
    };
    return pfi_import_files(dir, "perseus-sosp24", files, sizeof files / sizeof files[0],
                            pfi_import_perseus_file, "import perseus", set, err);
}

int pfi_import_perseus(pfi_store *st, const char *dir, int *nruns, int *nlevels, pfi_err *err)
{
    return pfi_import_read_write(st, dir, pfi_import_perseus_read, nruns, nlevels, err);
}
