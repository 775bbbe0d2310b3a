/* SPDX-License-Identifier: Apache-2.0 */
/* trainset.c: training rows for the runtime predictor (trainset.h). */
#include "study/trainset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gpu.h"
#include "core/pfi.h"
#include "store/store.h"
#include "study/fleet.h"
#include "study/runset.h"

/* A store's runs carry no group: runs of the same job configuration are found by their
 * metadata, so a rerun of a job is not left in while it is the one held out. */
static int store_runs(const char *db, pfi_run **runs, int **group, int *n, char *where,
                      size_t nwhere, pfi_err *err)
{
    pfi_runset rs;
    int rc = pfi_runset_load(db, 0, NULL, 0,
                             "leave out --db to use the simulated fleet (--fleet paper|small)",
                             &rs, err);
    if (rc != PFI_OK)
        return rc;
    int *g = malloc(sizeof(int) * (size_t)(rs.n ? rs.n : 1));
    if (!g) {
        pfi_runset_free(&rs);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    for (int i = 0; i < rs.n; i++) {
        g[i] = i;
        for (int j = 0; j < i; j++)
            if (pfi_same_job_config(&rs.runs[i].meta, rs.runs[i].n_gpus, &rs.runs[j].meta,
                                    rs.runs[j].n_gpus)) {
                g[i] = g[j];
                break;
            }
    }
    snprintf(where, nwhere, "%s", rs.where);
    *runs = rs.runs;
    *group = g;
    *n = rs.n;
    return PFI_OK;
}

static int fleet_runs(const char *fleet, int seed, const char *save_db,
                      pfi_trainset_progress progress, void *progress_ctx, pfi_run **runs,
                      int **group, int *n, char *where, size_t nwhere, pfi_err *err)
{
    pfi_fleet_opts fo = pfi_fleet_defaults();
    fo.progress = progress;
    fo.progress_ctx = progress_ctx;
    pfi_fleet_run *fr;
    int nf, rc = pfi_fleet_build(fleet, (uint64_t)seed, &fo, &fr, &nf, err);
    if (rc != PFI_OK)
        return rc;
    if (save_db) {
        pfi_store *st;
        rc = pfi_store_open(save_db, PFI_STORE_CREATE, &st, err);
        if (rc == PFI_OK) {
            rc = pfi_fleet_store(st, fr, nf, err);
            pfi_store_close(st);
        }
        if (rc != PFI_OK) {
            free(fr);
            return rc;
        }
    }
    pfi_run *r = malloc(sizeof *r * (size_t)(nf ? nf : 1));
    int *g = malloc(sizeof(int) * (size_t)(nf ? nf : 1));
    if (!r || !g) {
        free(r);
        free(g);
        free(fr);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    for (int i = 0; i < nf; i++) {
        r[i] = fr[i].run;
        g[i] = fr[i].group;
    }
    free(fr);
    snprintf(where, nwhere, "simulated fleet '%s' seed %d (%d runs)", fleet, seed, nf);
    *runs = r;
    *group = g;
    *n = nf;
    return PFI_OK;
}

int pfi_trainset_load(const char *db, const char *fleet, int seed, const char *save_db,
                      pfi_trainset_progress progress, void *progress_ctx, pfi_trainset *out,
                      pfi_err *err)
{
    memset(out, 0, sizeof *out);
    pfi_run *runs = NULL;
    int *group = NULL, n = 0;
    int rc = db ? store_runs(db, &runs, &group, &n, out->where, sizeof out->where, err)
                : fleet_runs(fleet, seed, save_db, progress, progress_ctx, &runs, &group, &n,
                             out->where, sizeof out->where, err);
    if (rc != PFI_OK)
        return rc;
    out->rows = calloc((size_t)(n ? n : 1), sizeof *out->rows);
    out->head30 = calloc((size_t)(n ? n : 1), sizeof *out->head30);
    if (!out->rows || !out->head30)
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
    pfi_index_opts io = pfi_index_defaults();
    io.n_boot = 0;
    /* A run that cannot give a row (no telemetry, no baseline, too few levels) is counted, not
     * fatal: the public stores hold such runs and the model is trained on the rest. */
    for (int i = 0; rc == PFI_OK && i < n; i++) {
        if (!pfi_features_have_telemetry(&runs[i])) {
            out->no_telemetry++;
            out->skipped++;
        } else if (pfi_train_row_from_run(&runs[i], group[i], pfi_gpu_class(runs[i].gpu_type),
                                          &out->rows[out->n], NULL) == PFI_OK) {
            pfi_index ix;
            out->head30[out->n] = pfi_index_run(&runs[i], &io, &ix, NULL) == PFI_OK &&
                                          !ix.extrapolated
                                      ? ix.pfi_head
                                      : NAN;
            out->untagged += db && !runs[i].meta.model[0];
            out->n++;
        } else {
            out->skipped++;
        }
    }
    free(runs);
    free(group);
    if (rc == PFI_OK && out->n < PFI_MODEL_MIN_TRAIN)
        rc = pfi_err_set(err, PFI_EINVAL,
                         "only %d of the %d runs of %s have GPU telemetry at their baseline (SM "
                         "clock or activities) and a usable curve (%d without telemetry); the "
                         "predictor needs at least %d. Imported public sweeps carry no "
                         "telemetry: measure runs with `pfi sweep` to train it",
                         out->n, n, out->where, out->no_telemetry, PFI_MODEL_MIN_TRAIN);
    if (rc != PFI_OK)
        pfi_trainset_free(out);
    return rc;
}

void pfi_trainset_free(pfi_trainset *t)
{
    free(t->rows);
    free(t->head30);
    t->rows = NULL;
    t->head30 = NULL;
    t->n = 0;
}

/* Trained on train[], test[] predicted and scored against head[] (their measured PFI30). */
static int transfer_scored(const pfi_train_row *train, int ntrain, const pfi_train_row *test,
                           const double *head, int ntest, const pfi_train_opts *to,
                           pfi_model_eval *out, pfi_err *err)
{
    double *pred = malloc(sizeof *pred * (size_t)(ntest ? ntest : 1));
    if (!pred)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    int rc = pfi_model_transfer_pred(train, ntrain, test, ntest, to, out, pred, err);
    if (rc == PFI_OK)
        pfi_model_score(pred, head, ntest, out);
    free(pred);
    return rc;
}

/* Transfer between GPU types: trained on one class, scored on the other, both ways. */
static int transfer(const pfi_trainset *t, const pfi_train_opts *to, pfi_predictor_eval *out,
                    pfi_err *err)
{
    pfi_train_row *cls[2] = {NULL, NULL};
    double *head[2] = {NULL, NULL};
    int ncls[2] = {0, 0}, rc = PFI_OK;
    for (int c = 0; c < 2 && rc == PFI_OK; c++) {
        cls[c] = malloc(sizeof(pfi_train_row) * (size_t)(t->n ? t->n : 1));
        head[c] = malloc(sizeof(double) * (size_t)(t->n ? t->n : 1));
        if (!cls[c] || !head[c]) {
            rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
            break;
        }
        for (int i = 0; i < t->n; i++)
            if (t->rows[i].gpu_class == c) {
                head[c][ncls[c]] = t->head30[i];
                cls[c][ncls[c]++] = t->rows[i];
            }
    }
    out->have_transfer = rc == PFI_OK && ncls[0] >= 5 && ncls[1] >= 5;
    if (out->have_transfer)
        rc = transfer_scored(cls[0], ncls[0], cls[1], head[1], ncls[1], to, &out->h200_to_h100,
                             err);
    if (out->have_transfer && rc == PFI_OK)
        rc = transfer_scored(cls[1], ncls[1], cls[0], head[0], ncls[0], to, &out->h100_to_h200,
                             err);
    /* The same with no job of the test GPU in training: the H200 run of an H100 run's own job
     * (its twin) left out.  With them, the figure is "the same jobs on a new GPU"; without,
     * "new jobs on a new GPU".  Both are reported, and said which is which. */
    if (out->have_transfer && rc == PFI_OK) {
        int nh = 0;
        for (int i = 0; i < ncls[0]; i++) {
            int twin = 0;
            for (int k = 0; k < ncls[1] && !twin; k++)
                twin = cls[0][i].group == cls[1][k].group;
            if (!twin)
                cls[0][nh++] = cls[0][i];
        }
        out->have_transfer_heldout = nh >= 5;
        if (out->have_transfer_heldout)
            rc = transfer_scored(cls[0], nh, cls[1], head[1], ncls[1], to,
                                 &out->h200_to_h100_heldout, err);
    }
    for (int c = 0; c < 2; c++)
        free(cls[c]), free(head[c]);
    return rc;
}

static int fold_of(const pfi_train_row *r)
{
    return (r->group % PFI_TRAINSET_FOLDS + PFI_TRAINSET_FOLDS) % PFI_TRAINSET_FOLDS;
}

/* Grouped permutation importance, each row predicted by the model of its fold (trained without
 * the rows of that fold's groups).  A fold that cannot be trained leaves it not computed. */
static int held_out_importance(const pfi_trainset *t, const pfi_train_opts *to,
                               pfi_predictor_eval *out, pfi_err *err)
{
    pfi_model *fold = calloc(PFI_TRAINSET_FOLDS, sizeof *fold);
    pfi_train_row *train = malloc(sizeof *train * (size_t)(t->n ? t->n : 1));
    const pfi_model **m = malloc(sizeof *m * (size_t)(t->n ? t->n : 1));
    int rc = fold && train && m ? PFI_OK : pfi_err_set(err, PFI_ENOMEM, "out of memory");
    int trained = rc == PFI_OK;
    for (int f = 0; trained && f < PFI_TRAINSET_FOLDS; f++) {
        int ntr = 0;
        for (int i = 0; i < t->n; i++)
            if (fold_of(&t->rows[i]) != f)
                train[ntr++] = t->rows[i];
        pfi_err e = {0};
        trained = pfi_model_train(train, ntr, to, &fold[f], &e) == PFI_OK;
    }
    if (trained) {
        /* Scored against the measured PFI30 as the other figures (NAN: the row is grouped
         * and permuted with the others, not scored); train is free for that copy now. */
        for (int i = 0; i < t->n; i++) {
            m[i] = &fold[fold_of(&t->rows[i])];
            train[i] = t->rows[i];
            train[i].pfi30 = t->head30[i];
        }
        rc = pfi_group_importance(m, train, t->n, PFI_IMP_CORR, PFI_IMP_REPEATS, to->seed,
                                  &out->importance, err);
        out->have_importance = rc == PFI_OK;
    }
    free(fold), free(train), free(m);
    return rc;
}

/* Leave-one-job-out scored against the measured PFI30 (fit: NULL, or the same predictions
 * against the rows' fitted PFI30). */
static int lojo_scored(const pfi_trainset *t, const pfi_train_opts *to, pfi_model_eval *out,
                       pfi_model_eval *fit, pfi_err *err)
{
    double *pred = malloc(sizeof *pred * (size_t)(t->n ? t->n : 1));
    if (!pred)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    int rc = pfi_model_lojo_pred(t->rows, t->n, to, out, pred, err);
    if (rc == PFI_OK && fit)
        *fit = *out;
    if (rc == PFI_OK)
        pfi_model_score(pred, t->head30, t->n, out);
    free(pred);
    return rc;
}

int pfi_predictor_evaluate(const pfi_trainset *t, int compare, pfi_trainset_progress progress,
                           void *progress_ctx, pfi_predictor_eval *out, pfi_err *err)
{
    static const char step[] = "evaluating the predictor";
    int stages = compare ? 6 : 4, stage = 0;
#define STAGE_DONE() (progress ? progress(progress_ctx, step, ++stage, stages) : (void)0)
    memset(out, 0, sizeof *out);
    pfi_train_opts to = pfi_train_defaults();
    if (progress)
        progress(progress_ctx, step, 0, stages);
    int rc = lojo_scored(t, &to, &out->lojo, &out->lojo_fit, err);
    STAGE_DONE();
    for (int k = 0; compare && rc == PFI_OK && k < 2; k++) {
        pfi_train_opts fo = to;
        fo.force_kind = k;
        rc = lojo_scored(t, &fo, &out->forced[k], NULL, err);
        STAGE_DONE();
    }
    if (rc == PFI_OK)
        rc = transfer(t, &to, out, err);
    STAGE_DONE();
    if (rc == PFI_OK)
        rc = pfi_model_train(t->rows, t->n, &to, &out->full, err);
    STAGE_DONE();
    if (rc == PFI_OK)
        rc = held_out_importance(t, &to, out, err);
    if (rc == PFI_OK)
        STAGE_DONE();
#undef STAGE_DONE
    int ns = 0;
    for (int i = 0; i < t->n; i++)
        if (isfinite(t->head30[i]))
            out->mean_pfi30 += t->head30[i], ns++;
    out->mean_pfi30 = ns ? out->mean_pfi30 / ns : NAN;
    for (int i = 0; i < t->n; i++)
        if (isfinite(t->head30[i]))
            out->ref_mae_pfi30 += fabs(t->head30[i] - out->mean_pfi30) / ns;
    if (!ns)
        out->ref_mae_pfi30 = NAN;
    return rc;
}
