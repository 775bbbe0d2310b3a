/* SPDX-License-Identifier: Apache-2.0 */
/* pubdata_csv.h: a tiny test-only reader of the public sweeps under $PFI_DATA_DIR into pfi_run's,
 * so the curve tests run on real rows without copying them into the repository.  The store's
 * importers are the project's real readers; this one only serves the core tests (which must not
 * depend on the store).  Header-only, static: included by tests/test_curve*.c and friends. */
#ifndef PFI_TESTS_PUBDATA_CSV_H
#define PFI_TESTS_PUBDATA_CSV_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/run.h"
#include "util/units.h"

#define PUB_MAX_COLS 32

/* Splits one CSV line in place; a field in double quotes may hold commas (Perseus's
 * partition_method does). */
static int pub_split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    line[strcspn(line, "\r\n")] = 0;
    while (n < max) {
        int quoted = *p == '"';
        if (quoted)
            p++;
        f[n++] = p;
        char *c = quoted ? strchr(p, '"') : strchr(p, ',');
        if (quoted && c) {
            *c = 0;
            c = strchr(c + 1, ',');
        }
        if (!c)
            break;
        *c = 0;
        p = c + 1;
    }
    return n;
}

static int pub_col(char **hdr, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(hdr[i], name) == 0)
            return i;
    return -1;
}

/* Opens $PFI_DATA_DIR/rel; NULL when the data is absent. */
static FILE *pub_open(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", pfi_data_dir(), rel);
    return fopen(path, "r");
}

/* Opens a CSV and splits its header into h (pointing into hdrbuf).  NULL when the file is
 * absent or empty. */
static FILE *pub_csv_open(const char *rel, char *hdrbuf, int size, char **h, int *nh)
{
    FILE *fp = pub_open(rel);
    if (fp && !fgets(hdrbuf, size, fp)) {
        fclose(fp);
        return NULL;
    }
    if (fp)
        *nh = pub_split(hdrbuf, h, PUB_MAX_COLS);
    return fp;
}

/* 1 when every column was found: a renamed column must not be read as field -1. */
static int pub_cols_ok(const int *cols, int n)
{
    for (int i = 0; i < n; i++)
        if (cols[i] < 0)
            return 0;
    return 1;
}

/* Appends a level of a public sweep: power limit, power and throughput, no telemetry. */
static pfi_level *pub_add_level(pfi_run *run, double cap_w, double power_w, double tput)
{
    pfi_level *l = &run->levels[run->n_levels++];
    memset(l, 0, sizeof *l);
    l->cap_w = cap_w;
    l->enforced_w = NAN;
    l->power_w = power_w;
    l->tput = tput;
    l->tput_lo = l->tput_hi = NAN;
    l->sm_clock_mhz = l->powercap_frac = l->gpu_util = l->sm_active = NAN;
    l->tensor_active = l->dram_active = l->nvlink_mibs = l->pcie_mibs = NAN;
    return l;
}

static int pub_have_data(void)
{
    FILE *f = pub_open("perseus-sosp24/zeus_baseline/A40/zeus_global.csv");
    if (!f)
        return 0;
    fclose(f);
    return 1;
}

/* The Perseus zeus_global sweep of `model` on gpu "A40" or "A100": one level per power limit,
 * throughput = batch/time (samples/s), power per GPU = energy/time/(dp*tp*pp).
 * Returns 1 when found, 0 otherwise. */
static int pub_perseus(const char *gpu, const char *model, pfi_run *run)
{
    char rel[256], line[2048], *f[PUB_MAX_COLS], hdrbuf[2048], *h[PUB_MAX_COLS];
    int nh = 0;
    snprintf(rel, sizeof rel, "perseus-sosp24/zeus_baseline/%s/zeus_global.csv", gpu);
    FILE *fp = pub_csv_open(rel, hdrbuf, sizeof hdrbuf, h, &nh);
    if (!fp)
        return 0;
    int cm = pub_col(h, nh, "model_name"), cb = pub_col(h, nh, "batch_size");
    int cdp = pub_col(h, nh, "dp"), ctp = pub_col(h, nh, "tp"), cpp = pub_col(h, nh, "pp");
    int cpl = pub_col(h, nh, "power_limit_0"), ct = pub_col(h, nh, "time");
    int ce = pub_col(h, nh, "energy");
    const int cols[] = {cm, cb, cdp, ctp, cpp, cpl, ct, ce};
    if (!pub_cols_ok(cols, 8)) {
        fclose(fp);
        return 0;
    }
    memset(run, 0, sizeof *run);
    while (fgets(line, sizeof line, fp)) {
        int n = pub_split(line, f, PUB_MAX_COLS);
        if (n < nh || strcmp(f[cm], model) != 0)
            continue;
        int gpus = atoi(f[cdp]) * atoi(f[ctp]) * atoi(f[cpp]);
        double t = atof(f[ct]), e = atof(f[ce]);
        if (run->n_levels >= PFI_MAX_LEVELS || gpus <= 0 || !(t > 0))
            continue;
        pub_add_level(run, atof(f[cpl]), e / t / gpus, atof(f[cb]) / t);
        run->n_gpus = gpus;
        run->meta.dp = atoi(f[cdp]);
        run->meta.tp = atoi(f[ctp]);
        run->meta.pp = atoi(f[cpp]);
    }
    fclose(fp);
    snprintf(run->name, sizeof run->name, "perseus/%s/%s", gpu, model);
    snprintf(run->source, sizeof run->source, "perseus");
    snprintf(run->gpu_type, sizeof run->gpu_type, "%s", gpu);
    snprintf(run->meta.model, sizeof run->meta.model, "%s", model);
    run->unit = PFI_SAMPLES_PER_S;
    run->max_limit_w = run->default_limit_w = 300;
    run->min_limit_w = strcmp(gpu, "A40") == 0 ? 100 : 150;
    return run->n_levels > 0;
}

/* One (dataset, network, batch size, optimizer) of the Zeus NSDI'23 trace file
 * summary_power_<gpu>.csv: throughput in epochs/s, power = the measured average.  Returns 1
 * when found. */
static int pub_zeus(const char *gpu, const char *dataset, const char *network, int batch,
                    const char *optimizer, pfi_run *run)
{
    char rel[256], line[1024], *f[PUB_MAX_COLS], hdrbuf[1024], *h[PUB_MAX_COLS];
    int nh = 0;
    snprintf(rel, sizeof rel, "zeus-nsdi23-trace/summary_power_%s.csv", gpu);
    FILE *fp = pub_csv_open(rel, hdrbuf, sizeof hdrbuf, h, &nh);
    if (!fp)
        return 0;
    int cd = pub_col(h, nh, "dataset");
    int cn = pub_col(h, nh, "network"), cb = pub_col(h, nh, "batch_size");
    int co = pub_col(h, nh, "optimizer"), cpl = pub_col(h, nh, "power_limit");
    int ct = pub_col(h, nh, "time_per_epoch"), cp = pub_col(h, nh, "average_power");
    const int cols[] = {cd, cn, cb, co, cpl, ct, cp};
    if (!pub_cols_ok(cols, 7)) {
        fclose(fp);
        return 0;
    }
    memset(run, 0, sizeof *run);
    double maxpl = 0;
    while (fgets(line, sizeof line, fp)) {
        int n = pub_split(line, f, PUB_MAX_COLS);
        if (n < nh || strcmp(f[cd], dataset) != 0 || strcmp(f[cn], network) != 0 ||
            atoi(f[cb]) != batch || strcmp(f[co], optimizer) != 0)
            continue;
        double t = atof(f[ct]);
        if (run->n_levels >= PFI_MAX_LEVELS || !(t > 0))
            continue;
        const pfi_level *l = pub_add_level(run, atof(f[cpl]), atof(f[cp]), 1.0 / t);
        if (l->cap_w > maxpl)
            maxpl = l->cap_w;
    }
    fclose(fp);
    snprintf(run->name, sizeof run->name, "zeus/%s/%s/%s bs%d %s", gpu, network, dataset, batch,
             optimizer);
    snprintf(run->source, sizeof run->source, "zeus-nsdi");
    snprintf(run->gpu_type, sizeof run->gpu_type, "%s", gpu);
    run->n_gpus = 1;
    run->unit = PFI_SAMPLES_PER_S;
    run->max_limit_w = run->default_limit_w = maxpl;
    run->min_limit_w = 100;
    return run->n_levels > 0;
}

#endif
