/* SPDX-License-Identifier: Apache-2.0 */
/* import_zeus_nsdi.c: the Zeus (NSDI '23) trace: single-GPU time per epoch and average power
 * per power limit (see $PFI_DATA_DIR/zeus-nsdi23-trace/SOURCE.md).  One run per (GPU, dataset,
 * network, batch size, optimizer).  The trace has no dataset sizes, so throughput is
 * 1 / time_per_epoch in epochs/s: proportional to samples/s (same dataset at every limit), and
 * the run's unit label says "epochs/s (relative)". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "store/csv.h"
#include "store/import_common.h"

typedef struct key {
    char dataset[64], network[64], optimizer[32];
    int batch;
} key;

int pfi_import_zeus_nsdi_file(const char *path, const char *gpu_type, const char *rel,
                       pfi_import_set *set, pfi_err *err)
{
    pfi_csv *c;
    int rc = pfi_csv_open(path, &c, err);
    if (rc != PFI_OK)
        return rc;
    pfi_csv_drop_unterminated(c); /* a row cut short is left out, and said */
    int cd, cn, cb, co, cl, ct, cp;
    pfi_import_keys keys = {0};
    int first = set->n;
    if ((rc = pfi_csv_require(c, "dataset", &cd, err)) ||
        (rc = pfi_csv_require(c, "network", &cn, err)) ||
        (rc = pfi_csv_require(c, "batch_size", &cb, err)) ||
        (rc = pfi_csv_require(c, "optimizer", &co, err)) ||
        (rc = pfi_csv_require(c, "power_limit", &cl, err)) ||
        (rc = pfi_csv_require(c, "time_per_epoch", &ct, err)) ||
        (rc = pfi_csv_require(c, "average_power", &cp, err)))
        goto out;
    while ((rc = pfi_csv_next(c, err)) == PFI_OK) {
        key y;
        memset(&y, 0, sizeof y);
        double cap, tpe, pw;
        if ((rc = pfi_csv_text(c, cd, y.dataset, sizeof y.dataset, err)) ||
            (rc = pfi_csv_text(c, cn, y.network, sizeof y.network, err)) ||
            (rc = pfi_csv_text(c, co, y.optimizer, sizeof y.optimizer, err)) ||
            (rc = pfi_csv_int(c, cb, &y.batch, err)) || (rc = pfi_csv_double(c, cl, &cap, err)) ||
            (rc = pfi_csv_double(c, ct, &tpe, err)) || (rc = pfi_csv_double(c, cp, &pw, err)))
            goto out;
        char where[600];
        snprintf(where, sizeof where, "%s line %d", pfi_csv_name(c), pfi_csv_line(c));
        if (!y.dataset[0] || !y.network[0] || y.batch <= 0 || cap <= 0 || tpe <= 0 || pw <= 0) {
            rc = pfi_err_set(err, PFI_EINVAL,
                             "%s: dataset, network, batch size, power limit, time per epoch and "
                             "average power must be given and positive",
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
            pfi_import_run_init(r, "zeus-nsdi", gpu_type, y.network);
            r->meta.dp = r->meta.tp = r->meta.pp = 1;
            r->meta.global_batch = y.batch;
            /* SOURCE.md: squad is a QA fine-tune, sentiment140 a classification fine-tune. */
            if (strcmp(y.dataset, "squad") == 0 || strcmp(y.dataset, "sentiment140") == 0)
                r->meta.finetune = 1;
            int len = snprintf(r->name, sizeof r->name, "zeus-nsdi/%s/%s %s bs%d %s", gpu_type,
                               y.network, y.dataset, y.batch, y.optimizer);
            if ((rc = pfi_import_name_fits(r, len, where, err)) != PFI_OK)
                goto out;
            snprintf(ir->unit_label, sizeof ir->unit_label, "epochs/s (relative)");
            snprintf(ir->origin, sizeof ir->origin, "%s", where);
            json_t *cfg = json_pack("{s:s, s:s, s:s, s:s, s:i}", "dataset", "zeus-nsdi23-trace",
                                    "file", rel, "training_data", y.dataset, "optimizer",
                                    y.optimizer, "batch_size", y.batch);
            if ((rc = pfi_import_set_config(ir, cfg, where, err)) != PFI_OK)
                goto out;
        }
        pfi_level lv;
        pfi_import_level_init(&lv, cap, pw, 1.0 / tpe);
        if ((rc = pfi_import_add_level(&set->v[i].run, &lv, where, err)) != PFI_OK)
            goto out;
    }
    if (rc == PFI_CSV_END)
        rc = set->n > first ? pfi_import_check_end(path, pfi_csv_unterminated(c), err)
                            : pfi_err_set(err, PFI_EINVAL, "%s: no data rows", path);
out:
    pfi_import_keys_free(&keys);
    pfi_csv_close(c);
    return rc;
}

int pfi_import_zeus_nsdi_read(const char *dir, pfi_import_set *set, pfi_err *err)
{
    static const pfi_import_file files[] = {{"summary_power_a40.csv", "A40"},
                                            {"summary_power_v100.csv", "V100"},
                                            {"summary_power_p100.csv", "P100"},
                                            {"summary_power_rtx6000.csv", "RTX6000"}};
    return pfi_import_files(dir, "zeus-nsdi23-trace", files, sizeof files / sizeof files[0],
                            pfi_import_zeus_nsdi_file, "import zeus-nsdi", set, err);
}

int pfi_import_zeus_nsdi(pfi_store *st, const char *dir, int *nruns, int *nlevels, pfi_err *err)
{
    return pfi_import_read_write(st, dir, pfi_import_zeus_nsdi_read, nruns, nlevels, err);
}
