/* SPDX-License-Identifier: Apache-2.0 */
/* pfi model: train the runtime predictor (core/predict.h), evaluate it (leave-one-job-out,
 * transfer between GPU types, feature importance), and evaluate one- and two-probe estimation
 * (core/probe.h) on the real public curves. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "core/pfi.h"
#include "core/predict.h"
#include "core/probe.h"
#include "study/curve_eval.h"
#include "study/model_io.h"
#include "study/runset.h"
#include "study/trainset.h"
#include "util/json.h"
#include "util/progress.h"
#include "util/units.h"


/* ---- train ---- */

/* The runs a training set left out, by reason (ends the line). */
static void print_skipped(const pfi_trainset *t)
{
    if (!t->skipped) {
        printf("\n");
        return;
    }
    printf(" (%d skipped:", t->skipped);
    if (t->no_telemetry)
        printf(" %d without GPU telemetry at the baseline%s", t->no_telemetry,
               t->skipped > t->no_telemetry ? ";" : "");
    if (t->skipped > t->no_telemetry)
        printf(" %d with no usable curve, or a cap that never bound",
               t->skipped - t->no_telemetry);
    printf(")\n");
}

static int model_train(int argc, char **argv)
{
    const char *db = NULL, *fleet = "paper", *outp = "pfi-model.json", *kind = NULL;
    const char *save_db = NULL;
    int seed = INT_MIN, as_json = 0;
    const pfi_opt opts[] = {
        {"db", PFI_OPT_STR, &db, "FILE", "train on the runs of this store"},
        {"fleet", PFI_OPT_STR, &fleet, "paper|small",
         "else train on the simulated fleet, characterized now (default paper)"},
        {"seed", PFI_OPT_INT, &seed, "N", "fleet seed (default 1)"},
        {"save-db", PFI_OPT_STR, &save_db, "FILE",
         "also write the characterized fleet into this store (for pfi index, pfi evaluate)"},
        {"kind", PFI_OPT_STR, &kind, "ridge|physics", "force a model (default: chosen by CV)"},
        {"out", PFI_OPT_STR, &outp, "FILE", "where to write the model (default pfi-model.json)"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document on stdout"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi model train [--db FILE | --fleet paper|small] [--out model.json] [--json]",
        "Train the runtime predictor of a job's curve from its baseline telemetry: ridge "
        "regression and a DVFS physics model, the one with the lower 5-fold cross-validated "
        "error of PFI30 kept (--kind: that one, no cross-validation).  Without --db the "
        "simulated paper fleet is characterized in virtual time (a few seconds) and used.  Runs "
        "whose baseline has no GPU telemetry (SM clock or activities: imported public sweeps) "
        "or no usable curve are counted and left out; fewer than 5 left is refused.",
        opts,
        "pfi model train --out pfi-model.json               # on the simulated fleet\n"
        "pfi model train --db pfi.db --out model.json"};
    int rc = pfi_cli_args_none(&spec, argc, argv, "model train");
    unsigned long long fleet_seed;
    if (rc >= 0 || (rc = pfi_cli_fleet_seed("model train", seed, !db, NULL, &fleet_seed)) >= 0)
        return rc;
    pfi_train_opts to = pfi_train_defaults();
    if (kind) {
        to.force_kind = strcmp(kind, "ridge") == 0 ? PFI_MODEL_RIDGE
                        : strcmp(kind, "physics") == 0 ? PFI_MODEL_PHYSICS
                                                       : -2;
        if (to.force_kind == -2) {
            fprintf(stderr, "pfi model train: --kind is ridge or physics, not '%s'\n", kind);
            return PFI_EXIT_USAGE;
        }
    }
    pfi_err err = {0};
    pfi_trainset rw;
    if (save_db && db) {
        fprintf(stderr, "pfi model train: --save-db stores the simulated fleet; not with --db\n");
        return PFI_EXIT_USAGE;
    }
    pfi_progress pg;
    pfi_progress_init(&pg, "pfi model train", pfi_progress_auto(), stderr);
    rc = pfi_trainset_load(db, fleet, (int)fleet_seed, save_db, pfi_progress_cb, &pg, &rw, &err);
    pfi_progress_end(&pg);
    if (rc != PFI_OK)
        return pfi_cli_fail("model train", &err);
    pfi_model m;
    rc = pfi_model_train(rw.rows, rw.n, &to, &m, &err);
    if (rc == PFI_OK)
        rc = pfi_model_save(&m, rw.where, outp, &err);
    pfi_trainset_free(&rw);
    if (rc != PFI_OK)
        return pfi_cli_fail("model train", &err);
    if (as_json)
        return pfi_cli_print_json(json_pack(
            "{s:s, s:s, s:i, s:i, s:s, s:o, s:o, s:i}", "model", outp, "trained_on", rw.where, "n_train",
            m.n_train, "skipped", rw.skipped, "kind", pfi_model_kind_name(m.kind),
            "cv_mae_pfi30_ridge", pfi_json_num(m.cv_mae_ridge), "cv_mae_pfi30_physics",
            pfi_json_num(m.cv_mae_physics), "skipped_no_telemetry", rw.no_telemetry));
    printf("trained on %s: %d runs", rw.where, m.n_train);
    print_skipped(&rw);
    /* A forced kind runs no selection: its CV figures do not exist (they printed "nan"). */
    if (to.force_kind >= 0)
        printf("forced: %s (no cross-validation)\n", pfi_model_kind_name(m.kind));
    else
        printf("5-fold CV MAE of PFI30: ridge %.4f, physics %.4f -> %s\n", m.cv_mae_ridge,
               m.cv_mae_physics, pfi_model_kind_name(m.kind));
    printf("model written to %s\n", outp);
    return PFI_EXIT_OK;
}

/* ---- eval ---- */

static json_t *eval_json(const pfi_model_eval *e)
{
    return json_pack("{s:i, s:o, s:o, s:o, s:o, s:i, s:i}", "n", e->n, "mae_pfi30",
                     pfi_json_num(e->mae_pfi30), "r2_pfi30", pfi_json_num(e->r2_pfi30),
                     "mae_rel_tput_70", pfi_json_num(e->mae_rel70), "max_abs_err_pfi30",
                     pfi_json_num(e->max_err_pfi30), "selected_ridge", e->kind_ridge,
                     "selected_physics", e->kind_physics);
}

/* The grouped, held-out importance, largest first, with its method and caveat. */
static void print_importance(const pfi_predictor_eval *ev, int n)
{
    const pfi_importance *im = &ev->importance;
    if (!ev->have_importance) {
        printf("  importance: not computed (a fold of the %d runs could not be trained)\n", n);
        return;
    }
    printf("  grouped permutation importance, held out (increase of the MAE of PFI30, %.4f "
           "unpermuted): features standardized, grouped at |r| >= %.1f, each group permuted "
           "together %d times (seed %llu), each run predicted by the model of its fold (%d "
           "folds by job), which never saw its job\n",
           im->mae0, im->corr, im->repeats, im->seed, PFI_TRAINSET_FOLDS);
    int done[PFI_N_FEATURES] = {0};
    for (int r = 0; r < im->n_groups; r++) {
        int g = -1;
        for (int k = 0; k < im->n_groups; k++)
            if (!done[k] && (g < 0 || im->mean[k] > im->mean[g]))
                g = k;
        done[g] = 1;
        printf("    %+.4f (sd %.4f)  ", im->mean[g], im->sd[g]);
        for (int f = 0, first = 1; f < PFI_N_FEATURES; f++)
            if (im->group_of[f] == g)
                printf("%s%s", first ? "" : ", ", pfi_feature_name(f)), first = 0;
        printf("\n");
    }
    printf("  caveat: this is what this fitted model uses, not what causes elasticity; features "
           "in one group share their credit, and groups correlated below the threshold still "
           "lend each other some of it\n");
}

/* The transfer figures: H200 -> H100 with each H100 run's job in training on the H200 (the same
 * jobs on a new GPU) and without (new jobs on a new GPU), and H100 -> H200. */
static void print_transfer(const pfi_predictor_eval *ev)
{
    if (!ev->have_transfer) {
        printf("  transfer: needs >= 5 H200 and >= 5 H100 runs\n");
        return;
    }
    const pfi_model_eval *t[2] = {&ev->h200_to_h100, &ev->h100_to_h200};
    static const char *const dir[2] = {"H200 -> H100", "H100 -> H200"};
    static const char *const what[2] = {"  (the same jobs on a new GPU: the H100 runs' jobs are in "
                                        "training on the H200)", ""};
    for (int k = 0; k < 2; k++)
        printf("  transfer %s (%d runs): MAE %.4f  R2 %.3f  rel. tput at 70%% %.4f%s\n", dir[k],
               t[k]->n, t[k]->mae_pfi30, t[k]->r2_pfi30, t[k]->mae_rel70, what[k]);
    const pfi_model_eval *h = &ev->h200_to_h100_heldout;
    if (ev->have_transfer_heldout)
        printf("  transfer H200 -> H100, jobs held out (%d runs): MAE %.4f  R2 %.3f  rel. tput at "
               "70%% %.4f  (new jobs on a new GPU: no H200 run of an H100 run's job in "
               "training)\n",
               h->n, h->mae_pfi30, h->r2_pfi30, h->mae_rel70);
}

/* pfi model eval --json: what the text says, for a training set of n runs (rw's rows freed). */
static json_t *eval_doc(const pfi_predictor_eval *ev, const pfi_trainset *rw, int n, int compare)
{
    json_t *im = ev->have_importance ? pfi_importance_json(&ev->importance) : json_null();
    json_t *doc =
        json_pack("{s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:o, s:o}", "data",
                  rw->where, "n_runs", n, "lojo_mae_pfi30", pfi_json_num(ev->lojo.mae_pfi30),
                  "lojo_r2_pfi30", pfi_json_num(ev->lojo.r2_pfi30), "lojo_mae_rel_tput_70",
                  pfi_json_num(ev->lojo.mae_rel70), "transfer_h200_to_h100_mae_pfi30",
                  ev->have_transfer ? pfi_json_num(ev->h200_to_h100.mae_pfi30) : json_null(),
                  "transfer_h100_to_h200_mae_pfi30",
                  ev->have_transfer ? pfi_json_num(ev->h100_to_h200.mae_pfi30) : json_null(),
                  "transfer_h200_to_h100_mae_rel_tput_70",
                  ev->have_transfer ? pfi_json_num(ev->h200_to_h100.mae_rel70) : json_null(),
                  "transfer_h100_to_h200_mae_rel_tput_70",
                  ev->have_transfer ? pfi_json_num(ev->h100_to_h200.mae_rel70) : json_null(),
                  "model_selected", pfi_model_kind_name(ev->full.kind), "importance", im, "lojo",
                  eval_json(&ev->lojo));
    json_object_set_new(doc, "skipped", json_integer(rw->skipped));
    json_object_set_new(doc, "skipped_no_telemetry", json_integer(rw->no_telemetry));
    json_object_set_new(doc, "untagged_runs", json_integer(rw->untagged));
    json_object_set_new(doc, "lojo_mae_pfi30_on_fit", pfi_json_num(ev->lojo_fit.mae_pfi30));
    json_object_set_new(doc, "lojo_on_fit", eval_json(&ev->lojo_fit));
    json_object_set_new(doc, "mean_pfi30", pfi_json_num(ev->mean_pfi30));
    json_object_set_new(doc, "reference_mae_pfi30_predict_mean",
                        pfi_json_num(ev->ref_mae_pfi30));
    json_object_set_new(doc, "cv_mae_pfi30",
                        json_pack("{s:o, s:o}", "ridge", pfi_json_num(ev->full.cv_mae_ridge),
                                  "physics", pfi_json_num(ev->full.cv_mae_physics)));
    if (ev->have_transfer) {
        json_object_set_new(doc, "transfer_h200_to_h100", eval_json(&ev->h200_to_h100));
        json_object_set_new(doc, "transfer_h100_to_h200", eval_json(&ev->h100_to_h200));
    }
    json_object_set_new(doc, "transfer_h200_to_h100_jobs_held_out",
                        ev->have_transfer_heldout ? eval_json(&ev->h200_to_h100_heldout)
                                                  : json_null());
    if (compare) {
        json_object_set_new(doc, "lojo_ridge_only", eval_json(&ev->forced[0]));
        json_object_set_new(doc, "lojo_physics_only", eval_json(&ev->forced[1]));
    }
    return doc;
}

static int model_eval(int argc, char **argv)
{
    const char *db = NULL, *fleet = "paper";
    int seed = INT_MIN, as_json = 0, compare = 0;
    const pfi_opt opts[] = {
        {"db", PFI_OPT_STR, &db, "FILE", "evaluate on the runs of this store"},
        {"fleet", PFI_OPT_STR, &fleet, "paper|small",
         "else on the simulated fleet, characterized now (default paper)"},
        {"seed", PFI_OPT_INT, &seed, "N", "fleet seed (default 1)"},
        {"compare-models", PFI_OPT_FLAG, &compare, NULL,
         "also leave-one-job-out with each model forced"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document on stdout"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi model eval [--db FILE | --fleet paper|small] [--seed N] [--json]",
        "Evaluate the runtime predictor: leave-one-job-out (every run of a job configuration "
        "held out together, the model and its selection retrained without them) MAE and R2 of "
        "PFI30 and the error of the predicted relative throughput at 70% of baseline power; "
        "transfer from H200 runs to H100 runs and back; grouped permutation importance of the "
        "standardized features, held out (each run predicted by a model that never saw its job).  "
        "Scored against PFI30 as measured (pfi index's headline), on the runs whose sweep "
        "reaches a 30% shed; the leave-one-job-out figure against every run's fit is given "
        "beside it.  "
        "Runs whose baseline has no GPU telemetry or no usable curve are counted and left out, "
        "as in model train.",
        opts,
        "pfi model eval --fleet small\n"
        "pfi model eval --db pfi.db --json"};
    int rc = pfi_cli_args_none(&spec, argc, argv, "model eval");
    unsigned long long fleet_seed;
    if (rc >= 0 || (rc = pfi_cli_fleet_seed("model eval", seed, !db, NULL, &fleet_seed)) >= 0)
        return rc;
    pfi_err err = {0};
    pfi_trainset rw;
    pfi_progress pg;
    pfi_progress_init(&pg, "pfi model eval", pfi_progress_auto(), stderr);
    rc = pfi_trainset_load(db, fleet, (int)fleet_seed, NULL, pfi_progress_cb, &pg, &rw, &err);
    pfi_predictor_eval ev;
    if (rc == PFI_OK)
        rc = pfi_predictor_evaluate(&rw, compare, pfi_progress_cb, &pg, &ev, &err);
    pfi_progress_end(&pg);
    int n = rw.n;
    pfi_trainset_free(&rw); /* rows only: where and the counts of runs left out stay */
    if (rc != PFI_OK)
        return pfi_cli_fail("model eval", &err);
    if (as_json)
        return pfi_cli_print_json(eval_doc(&ev, &rw, n, compare));
    printf("runtime prediction of PFI30 from baseline telemetry, on %s", rw.where);
    print_skipped(&rw);
    if (rw.untagged)
        printf("  note: %d run%s no model name (pfi sweep --tag model=NAME): each is a job "
               "of its own here, so a rerun of one is not held out with it and the "
               "leave-one-job-out figures may flatter the predictor\n",
               rw.untagged, rw.untagged == 1 ? " carries" : "s carry");
    printf("  leave-one-job-out (%d runs): MAE %.4f  R2 %.3f  max |err| %.3f  "
           "|err| rel. throughput at 70%% power %.4f  (selected ridge %d, physics %d times)\n",
           ev.lojo.n, ev.lojo.mae_pfi30, ev.lojo.r2_pfi30, ev.lojo.max_err_pfi30,
           ev.lojo.mae_rel70, ev.lojo.kind_ridge, ev.lojo.kind_physics);
    printf("    scored against PFI30 as measured (pfi index's headline) on the %d runs whose "
           "sweep reaches a 30%% shed; against every run's fit (the training target, "
           "extrapolated where the sweep stops short): MAE %.4f on %d\n",
           ev.lojo.n, ev.lojo_fit.mae_pfi30, ev.lojo_fit.n);
    printf("    reference: every job given the mean PFI30 %.3f: MAE %.4f\n", ev.mean_pfi30,
           ev.ref_mae_pfi30);
    if (compare)
        for (int k = 0; k < 2; k++)
            printf("    %s only: MAE %.4f  R2 %.3f\n", pfi_model_kind_name(k),
                   ev.forced[k].mae_pfi30, ev.forced[k].r2_pfi30);
    print_transfer(&ev);
    printf("  model on all runs: %s (5-fold CV MAE ridge %.4f, physics %.4f)\n",
           pfi_model_kind_name(ev.full.kind), ev.full.cv_mae_ridge, ev.full.cv_mae_physics);
    print_importance(&ev, n);
    return PFI_EXIT_OK;
}

/* ---- probe-eval ---- */

static json_t *probe_eval_json(const pfi_probe_eval *ev, const char *where,
                               const double *depths, int probes)
{
    json_t *doc = json_pack("{s:s, s:i, s:o, s:o, s:i}", "data", where, "probes", probes,
                            "depths", json_array(), "b_prior_median", pfi_json_num(ev->b_prior),
                            "n_curves", ev->n_curves);
    for (int i = 0; i < probes; i++)
        json_array_append_new(json_object_get(doc, "depths"), json_real(depths[i]));
    /* The transformer figures sit at the top level (the stated target), all runs under "all". */
    for (int s = 0; s < 2; s++) {
        const pfi_probe_score *sc = &ev->set[s];
        json_t *o = s == 0 ? doc : json_object();
        char key[48];
        for (int k = 0; k < PFI_PROBE_EVAL_N; k++) {
            snprintf(key, sizeof key, "median_abs_err_%d", pfi_probe_eval_pct[k]);
            json_object_set_new(o, key, pfi_json_num(sc->median[k]));
            snprintf(key, sizeof key, "max_abs_err_%d", pfi_probe_eval_pct[k]);
            json_object_set_new(o, key, pfi_json_num(sc->max[k]));
            snprintf(key, sizeof key, "n_%d", pfi_probe_eval_pct[k]);
            json_object_set_new(o, key, json_integer(sc->n[k]));
            snprintf(key, sizeof key, "worst_run_%d", pfi_probe_eval_pct[k]);
            json_object_set_new(o, key, sc->worst[k] ? json_string(sc->worst[k]) : json_null());
        }
        if (s == 1)
            json_object_set_new(doc, "all", o);
    }
    json_object_set_new(doc, "set", json_string("transformer"));
    if (ev->n_scan) {
        json_t *arr = json_array();
        for (int j = 0; j < ev->n_scan; j++)
            json_array_append_new(
                arr, json_pack("{s:f, s:o, s:o, s:o}", "depth", ev->scan_depth[j],
                               "median_abs_err_80", pfi_json_num(ev->scan_median[j][0]),
                               "median_abs_err_70", pfi_json_num(ev->scan_median[j][1]),
                               "median_abs_err_60", pfi_json_num(ev->scan_median[j][2])));
        json_object_set_new(doc, "scan", arr);
    }
    return doc;
}

static int probe_eval_print(const pfi_probe_eval *ev, const char *where, const double *depths,
                            int probes)
{
    if (ev->n_scan)
        printf("one probe, depth scan (transformer runs): median |err| at 80/70/60%%\n");
    for (int j = 0; j < ev->n_scan; j++) {
        const double *md = ev->scan_median[j];
        printf("  depth %.2f: %.4f %.4f %.4f   worst %.4f\n", ev->scan_depth[j], md[0], md[1],
               md[2], fmax(md[0], fmax(md[1], md[2])));
    }
    printf("%d-probe estimation at depth%s", probes, probes == 1 ? "" : "s");
    for (int i = 0; i < probes; i++)
        printf(" %.2f", depths[i]);
    printf(" on %d curves from %s (prior exponent b = %.2f)\n", ev->n_curves, where, ev->b_prior);
    printf("  |error| of relative throughput at      80%%             70%%             60%% "
           "of baseline power\n");
    for (int s = 0; s < 2; s++) {
        printf("  %-12s median/max", s == 0 ? "transformer" : "all");
        for (int k = 0; k < PFI_PROBE_EVAL_N; k++)
            printf("  %.4f/%.4f(%d)", ev->set[s].median[k], ev->set[s].max[k], ev->set[s].n[k]);
        printf("\n");
    }
    for (int k = 0; k < PFI_PROBE_EVAL_N; k++)
        if (ev->set[1].worst[k])
            printf("  largest error at %d%%, all curves: %s\n", pfi_probe_eval_pct[k],
                   ev->set[1].worst[k]);
    return PFI_EXIT_OK;
}

static int model_probe_eval(int argc, char **argv)
{
    const char *db = NULL, *depths_s = NULL;
    int probes = 1, as_json = 0, scan = 0;
    const pfi_opt opts[] = {
        {"probes", PFI_OPT_INT, &probes, "1|2", "probes per job (default 1)"},
        {"depths", PFI_OPT_STR, &depths_s, "R[,R]",
         "probe depths as power shed (default 0.4; two probes 0.2,0.4)"},
        {"db", PFI_OPT_STR, &db, "FILE", "curves of this store (default: the public sweeps)"},
        {"scan", PFI_OPT_FLAG, &scan, NULL, "also score one probe at depths 0.15-0.45"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document on stdout"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi model probe-eval [--probes 1|2] [--depths R[,R]] [--db FILE] [--json]",
        "Estimate each measured curve from its baseline and one or two probes (the measured "
        "levels nearest the probe caps), and score the relative throughput it predicts at 80, "
        "70 and 60% of baseline power against the measured curve with the probe levels left "
        "out (linear between the other levels).  The prior exponent of one probe is the median "
        "of the other transformer curves (the scored one left out).  Figures for transformer "
        "runs (the target) and for all runs.",
        opts,
        "pfi model probe-eval                               # one probe, on the public curves\n"
        "pfi model probe-eval --probes 2 --depths 0.2,0.4 --json"};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    if (npos > 0 || (probes != 1 && probes != 2)) {
        fprintf(stderr, "pfi model probe-eval: --probes is 1 or 2; no positional arguments\n");
        return PFI_EXIT_USAGE;
    }
    double depths[2] = {PFI_PROBE_DEPTH, 0};
    if (probes == 2) {
        depths[0] = 0.2;
        depths[1] = 0.4;
    }
    if (depths_s) {
        double v[4];
        int nv = 0;
        pfi_err perr = {0};
        if (pfi_parse_double_list(depths_s, v, 4, &nv, &perr) != PFI_OK || nv != probes) {
            fprintf(stderr, "pfi model probe-eval: --depths needs %d value%s: %s\n", probes,
                    probes == 1 ? "" : "s", perr.msg[0] ? perr.msg : depths_s);
            return PFI_EXIT_USAGE;
        }
        for (int i = 0; i < nv; i++) {
            if (!(v[i] > 0.02 && v[i] < 0.8)) {
                fprintf(stderr, "pfi model probe-eval: depth %g outside 0.02-0.8\n", v[i]);
                return PFI_EXIT_USAGE;
            }
            depths[i] = v[i];
        }
    }
    pfi_err err = {0};
    pfi_runset rs;
    if (pfi_runset_load(db, db == NULL, NULL, 0, "leave out --db to use the public sweeps", &rs,
                        &err) != PFI_OK)
        return pfi_cli_fail("model probe-eval", &err);
    pfi_probe_eval ev;
    rc = pfi_probe_evaluate(rs.runs, rs.n, depths, probes, scan && probes == 1, &ev, &err);
    if (rc != PFI_OK) {
        pfi_runset_free(&rs);
        return pfi_cli_fail("model probe-eval", &err);
    }
    /* ev names runs of rs: print before freeing it. */
    rc = as_json ? pfi_cli_print_json(probe_eval_json(&ev, rs.where, depths, probes))
                 : probe_eval_print(&ev, rs.where, depths, probes);
    pfi_runset_free(&rs);
    return rc;
}

static const pfi_cli_sub subs[] = {
    {"train", model_train, "train the runtime predictor; writes pfi-model.json"},
    {"eval", model_eval, "leave-one-job-out, transfer H200<->H100, feature importance"},
    {"probe-eval", model_probe_eval,
     "one/two-probe curve estimation scored on the public curves"},
};
const pfi_cli_family_spec pfi_cli_family_model = {
    "model",
    "The runtime PFI predictor: a job's curve from the telemetry of its baseline, trained on "
    "characterized runs, and its evaluation.",
    "pfi model train --out pfi-model.json\n"
    "pfi model eval --fleet small\n"
    "pfi model probe-eval --json",
    subs, (int)(sizeof subs / sizeof subs[0])};

int pfi_cmd_model(int argc, char **argv)
{
    return pfi_cli_family(&pfi_cli_family_model, argc, argv);
}
