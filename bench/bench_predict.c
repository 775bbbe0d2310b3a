/* SPDX-License-Identifier: Apache-2.0 */
/* bench_predict: how long the index and the predictor take, at the scale a site needs:
 * indexing a run (curve fits + 400 bootstrap refits), training on a fleet-sized set, and
 * predicting curves for 20,000 jobs (what an allocator over a campus would ask for).
 * Prints figures; asserts nothing about time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pfi.h"
#include "core/predict.h"
#include "util/clock.h"

/* A run shaped like an H200 sweep: 7 levels, convex curve, telemetry at baseline. */
static void synth_run(pfi_run *r, unsigned long long *st)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "bench");
    snprintf(r->gpu_type, sizeof r->gpu_type, "H200-SXM");
    r->n_gpus = 8;
    r->min_limit_w = 200;
    r->max_limit_w = r->default_limit_w = 700;
    r->meta.moe = r->meta.finetune = -1;
    double a = 1.5 + pfi_rand_uniform(st), b = 1.5 + pfi_rand_uniform(st);
    double p0 = 550 + 140 * pfi_rand_uniform(st);
    for (int k = 0; k < 7; k++) {
        pfi_level *l = &r->levels[r->n_levels++];
        l->cap_w = 700 * (1 - 0.1 * k);
        double draw = l->cap_w < p0 ? l->cap_w : p0;
        double rr = 1 - draw / p0;
        l->power_w = draw;
        l->tput = 1000 * (1 - a * pow(rr, b)) * (1 + 0.005 * pfi_rand_normal(st));
        l->tput_lo = l->tput_hi = l->enforced_w = NAN;
        l->sm_clock_mhz = 1980 * (1 - 0.5 * rr);
        l->sm_active = 0.6 + 0.3 * pfi_rand_uniform(st);
        l->tensor_active = 0.3 + 0.4 * pfi_rand_uniform(st);
        l->dram_active = 0.2 + 0.3 * pfi_rand_uniform(st);
        l->gpu_util = 0.95;
        l->powercap_frac = draw >= l->cap_w - 1 ? 1 : 0;
        l->nvlink_mibs = l->pcie_mibs = 1000;
    }
}

int main(void)
{
    unsigned long long st = 42;
    enum { NRUNS = 200, NPRED = 20000 };
    pfi_run *runs = malloc(sizeof *runs * NRUNS);
    pfi_train_row *rows = malloc(sizeof *rows * NRUNS);
    if (!runs || !rows)
        return 1;
    for (int i = 0; i < NRUNS; i++)
        synth_run(&runs[i], &st);

    pfi_err err = {0};
    pfi_index_opts o = pfi_index_defaults();
    double t0 = pfi_clock_mono();
    int ok = 0;
    for (int i = 0; i < NRUNS; i++) {
        pfi_index x;
        ok += pfi_index_run(&runs[i], &o, &x, &err) == PFI_OK;
    }
    double t1 = pfi_clock_mono();
    printf("index with a 400-replicate bootstrap CI: %.2f ms per run (%d runs)\n",
           1e3 * (t1 - t0) / NRUNS, ok);

    int nr = 0;
    for (int i = 0; i < NRUNS; i++)
        if (pfi_train_row_from_run(&runs[i], i, 0, &rows[nr], NULL) == PFI_OK)
            nr++;
    pfi_train_opts to = pfi_train_defaults();
    pfi_model m;
    t0 = pfi_clock_mono();
    if (pfi_model_train(rows, nr, &to, &m, &err) != PFI_OK) {
        fprintf(stderr, "bench_predict: %s\n", err.msg);
        return 1;
    }
    t1 = pfi_clock_mono();
    printf("train (ridge + physics, 5-fold CV selection) on %d runs: %.2f s, selected %s\n", nr,
           t1 - t0, pfi_model_kind_name(m.kind));

    t0 = pfi_clock_mono();
    double sum = 0;
    for (int i = 0; i < NPRED; i++) {
        pfi_curve c;
        if (pfi_model_predict_run(&m, &runs[i % NRUNS], &c, &err) == PFI_OK)
            sum += pfi_curve_tput_at_cap(&c, PFI_VIEW_AUTO, 450);
    }
    t1 = pfi_clock_mono();
    printf("predicted curves: %.1f us per job, %.2f s for %d jobs (checksum %.0f)\n",
           1e6 * (t1 - t0) / NPRED, t1 - t0, NPRED, sum);
    free(runs);
    free(rows);
    return 0;
}
