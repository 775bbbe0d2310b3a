/* pfi model: train the runtime predictor (core/predict.h), evaluate it (leave-one-job-out,
 * transfer between GPU types, feature importance), and evaluate one- and two-probe estimation
 * (core/probe.h) on the real public curves. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/model_io.h"
#include "cli/runset.h"
#include "core/pfi.h"
#include "core/predict.h"
#include "core/probe.h"
#include "store/store.h"
#include "study/fleet.h"
#include "util/units.h"

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* ---- training rows ---- */

typedef struct rows {
    pfi_train_row *r;
    int n;
    int skipped;
    char where[300];
} rows;

static int gpu_class(const char *gpu_type)
{
    if (strcasestr(gpu_type, "H200"))
        return 0;
    if (strcasestr(gpu_type, "H100"))
        return 1;
    return 2;
}

static int same_job(const pfi_run *a, const pfi_run *b)
{
    const pfi_job_meta *x = &a->meta, *y = &b->meta;
    return x->model[0] && strcmp(x->model, y->model) == 0 && a->n_gpus == b->n_gpus &&
           x->dp == y->dp && x->tp == y->tp && x->pp == y->pp && x->ep == y->ep &&
           x->finetune == y->finetune && x->lora == y->lora && x->seq_len == y->seq_len &&
           x->global_batch == y->global_batch;
}

/* Training rows from a store (runs of one job configuration grouped) or from the simulated
 * fleet characterized now in virtual time. */
static int load_rows(const char *db, const char *fleet, int seed, const char *save_db, rows *out,
                     pfi_err *err)
{
    memset(out, 0, sizeof *out);
    pfi_run *runs = NULL;
    int n = 0, *group = NULL, rc;
    pfi_runset rs = {0};
    pfi_fleet_run *fr = NULL;
    if (db) {
        rc = pfi_runset_load(db, 0, NULL, 0, &rs, err);
        if (rc != PFI_OK)
            return rc;
        runs = rs.runs;
        n = rs.n;
        group = malloc(sizeof(int) * (size_t)(n ? n : 1));
        if (!group) {
            pfi_runset_free(&rs);
            return pfi_err_set(err, PFI_ENOMEM, "out of memory");
        }
        for (int i = 0; i < n; i++) {
            group[i] = i;
            for (int j = 0; j < i; j++)
                if (same_job(&runs[i], &runs[j])) {
                    group[i] = group[j];
                    break;
                }
        }
        snprintf(out->where, sizeof out->where, "%s", rs.where);
    } else {
        pfi_fleet_opts fo = pfi_fleet_defaults();
        rc = pfi_fleet_build(fleet, (uint64_t)seed, &fo, &fr, &n, err);
        if (rc != PFI_OK)
            return rc;
        if (save_db) {
            pfi_store *st;
            rc = pfi_store_open(save_db, PFI_STORE_CREATE, &st, err);
            if (rc == PFI_OK) {
                rc = pfi_fleet_store(st, fr, n, err);
                pfi_store_close(st);
            }
            if (rc != PFI_OK) {
                free(fr);
                return rc;
            }
        }
        runs = malloc(sizeof *runs * (size_t)(n ? n : 1));
        group = malloc(sizeof(int) * (size_t)(n ? n : 1));
        if (!runs || !group) {
            free(runs);
            free(group);
            free(fr);
            return pfi_err_set(err, PFI_ENOMEM, "out of memory");
        }
        for (int i = 0; i < n; i++) {
            runs[i] = fr[i].run;
            group[i] = fr[i].group;
        }
        free(fr);
        snprintf(out->where, sizeof out->where, "simulated fleet '%s' seed %d (%d runs)", fleet,
                 seed, n);
    }
    out->r = calloc((size_t)(n ? n : 1), sizeof *out->r);
    if (!out->r)
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
    for (int i = 0; out->r && i < n; i++) {
        if (pfi_train_row_from_run(&runs[i], group[i], gpu_class(runs[i].gpu_type),
                                   &out->r[out->n], NULL) == PFI_OK)
            out->n++;
        else
            out->skipped++;
    }
    if (db)
        pfi_runset_free(&rs);
    else
        free(runs);
    free(group);
    return rc;
}

/* ---- train ---- */

static int model_train(int argc, char **argv)
{
    const char *db = NULL, *fleet = "paper", *outp = "pfi-model.json", *kind = NULL;
    const char *save_db = NULL;
    int seed = 1, as_json = 0;
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
        "error of PFI30 kept.  Without --db the simulated paper fleet is characterized in "
        "virtual time (a few seconds) and used.",
        opts};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    if (npos > 0) {
        fprintf(stderr, "pfi model train: unexpected argument '%s'\n", pos[0]);
        return PFI_EXIT_USAGE;
    }
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
    rows rw;
    if (save_db && db) {
        fprintf(stderr, "pfi model train: --save-db stores the simulated fleet; not with --db\n");
        return PFI_EXIT_USAGE;
    }
    if (load_rows(db, fleet, seed, save_db, &rw, &err) != PFI_OK)
        return pfi_cli_fail("model train", &err);
    pfi_model m;
    rc = pfi_model_train(rw.r, rw.n, &to, &m, &err);
    if (rc == PFI_OK)
        rc = pfi_model_save(&m, rw.where, outp, &err);
    free(rw.r);
    if (rc != PFI_OK)
        return pfi_cli_fail("model train", &err);
    if (as_json)
        return pfi_cli_print_json(json_pack(
            "{s:s, s:s, s:i, s:i, s:s, s:o, s:o}", "model", outp, "trained_on", rw.where, "n_train",
            m.n_train, "skipped", rw.skipped, "kind", pfi_model_kind_name(m.kind),
            "cv_mae_pfi30_ridge", num(m.cv_mae_ridge), "cv_mae_pfi30_physics",
            num(m.cv_mae_physics)));
    printf("trained on %s: %d runs (%d without a usable curve skipped)\n", rw.where, m.n_train,
           rw.skipped);
    printf("5-fold CV MAE of PFI30: ridge %.4f, physics %.4f -> %s\n", m.cv_mae_ridge,
           m.cv_mae_physics, pfi_model_kind_name(m.kind));
    printf("model written to %s\n", outp);
    return PFI_EXIT_OK;
}

/* ---- eval ---- */

static json_t *eval_json(const pfi_model_eval *e)
{
    return json_pack("{s:i, s:o, s:o, s:o, s:o, s:i, s:i}", "n", e->n, "mae_pfi30",
                     num(e->mae_pfi30), "r2_pfi30", num(e->r2_pfi30), "mae_rel_tput_70",
                     num(e->mae_rel70), "max_abs_err_pfi30", num(e->max_err_pfi30),
                     "selected_ridge", e->kind_ridge, "selected_physics", e->kind_physics);
}

static int model_eval(int argc, char **argv)
{
    const char *db = NULL, *fleet = "paper";
    int seed = 1, as_json = 0, compare = 0;
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
        "transfer from H200 runs to H100 runs and back; permutation importance of each feature.",
        opts};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    if (npos > 0) {
        fprintf(stderr, "pfi model eval: unexpected argument '%s'\n", pos[0]);
        return PFI_EXIT_USAGE;
    }
    pfi_err err = {0};
    rows rw;
    if (load_rows(db, fleet, seed, NULL, &rw, &err) != PFI_OK)
        return pfi_cli_fail("model eval", &err);
    pfi_train_opts to = pfi_train_defaults();
    pfi_model_eval lojo, t12 = {0}, t21 = {0}, forced[2];
    rc = pfi_model_lojo(rw.r, rw.n, &to, &lojo, &err);
    for (int k = 0; compare && rc == PFI_OK && k < 2; k++) {
        pfi_train_opts fo = to;
        fo.force_kind = k;
        rc = pfi_model_lojo(rw.r, rw.n, &fo, &forced[k], &err);
    }
    /* Transfer: H200 -> H100 and back. */
    pfi_train_row *cls[2] = {NULL, NULL};
    int ncls[2] = {0, 0};
    for (int c = 0; c < 2 && rc == PFI_OK; c++) {
        cls[c] = malloc(sizeof(pfi_train_row) * (size_t)(rw.n ? rw.n : 1));
        if (!cls[c]) {
            rc = pfi_err_set(&err, PFI_ENOMEM, "out of memory");
            break;
        }
        for (int i = 0; i < rw.n; i++)
            if (rw.r[i].gpu_class == c)
                cls[c][ncls[c]++] = rw.r[i];
    }
    int have_transfer = rc == PFI_OK && ncls[0] >= 5 && ncls[1] >= 5;
    if (have_transfer)
        rc = pfi_model_transfer(cls[0], ncls[0], cls[1], ncls[1], &to, &t12, &err);
    if (have_transfer && rc == PFI_OK)
        rc = pfi_model_transfer(cls[1], ncls[1], cls[0], ncls[0], &to, &t21, &err);
    pfi_model full;
    double imp[PFI_N_FEATURES];
    if (rc == PFI_OK)
        rc = pfi_model_train(rw.r, rw.n, &to, &full, &err);
    if (rc == PFI_OK)
        rc = pfi_model_importance(&full, rw.r, rw.n, 7, imp, &err);
    free(cls[0]);
    free(cls[1]);
    int n = rw.n;
    /* The reference a predictor must beat: every job given the fleet's mean PFI30. */
    double mean = 0, ref = 0;
    for (int i = 0; i < n; i++)
        mean += rw.r[i].pfi30 / n;
    for (int i = 0; i < n; i++)
        ref += fabs(rw.r[i].pfi30 - mean) / n;
    free(rw.r);
    if (rc != PFI_OK)
        return pfi_cli_fail("model eval", &err);
    if (as_json) {
        json_t *im = json_object();
        for (int f = 0; f < PFI_N_FEATURES; f++)
            json_object_set_new(im, pfi_feature_name(f), json_real(imp[f]));
        json_t *doc = json_pack(
            "{s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:o, s:o}", "data", rw.where,
            "n_runs", n, "lojo_mae_pfi30", num(lojo.mae_pfi30), "lojo_r2_pfi30",
            num(lojo.r2_pfi30), "lojo_mae_rel_tput_70", num(lojo.mae_rel70),
            "transfer_h200_to_h100_mae_pfi30", have_transfer ? num(t12.mae_pfi30) : json_null(),
            "transfer_h100_to_h200_mae_pfi30", have_transfer ? num(t21.mae_pfi30) : json_null(),
            "transfer_h200_to_h100_mae_rel_tput_70",
            have_transfer ? num(t12.mae_rel70) : json_null(),
            "transfer_h100_to_h200_mae_rel_tput_70",
            have_transfer ? num(t21.mae_rel70) : json_null(), "model_selected",
            pfi_model_kind_name(full.kind), "importance", im, "lojo", eval_json(&lojo));
        json_object_set_new(doc, "mean_pfi30", num(mean));
        json_object_set_new(doc, "reference_mae_pfi30_predict_mean", num(ref));
        json_object_set_new(doc, "cv_mae_pfi30",
                            json_pack("{s:o, s:o}", "ridge", num(full.cv_mae_ridge), "physics",
                                      num(full.cv_mae_physics)));
        if (have_transfer) {
            json_object_set_new(doc, "transfer_h200_to_h100", eval_json(&t12));
            json_object_set_new(doc, "transfer_h100_to_h200", eval_json(&t21));
        }
        if (compare) {
            json_object_set_new(doc, "lojo_ridge_only", eval_json(&forced[0]));
            json_object_set_new(doc, "lojo_physics_only", eval_json(&forced[1]));
        }
        return pfi_cli_print_json(doc);
    }
    printf("runtime prediction of PFI30 from baseline telemetry, on %s\n", rw.where);
    printf("  leave-one-job-out (%d runs): MAE %.4f  R2 %.3f  max |err| %.3f  "
           "|err| rel. throughput at 70%% power %.4f  (selected ridge %d, physics %d times)\n",
           lojo.n, lojo.mae_pfi30, lojo.r2_pfi30, lojo.max_err_pfi30, lojo.mae_rel70,
           lojo.kind_ridge, lojo.kind_physics);
    printf("    reference: every job given the mean PFI30 %.3f: MAE %.4f\n", mean, ref);
    if (compare)
        for (int k = 0; k < 2; k++)
            printf("    %s only: MAE %.4f  R2 %.3f\n", pfi_model_kind_name(k), forced[k].mae_pfi30,
                   forced[k].r2_pfi30);
    if (have_transfer) {
        printf("  transfer H200 -> H100 (%d runs): MAE %.4f  R2 %.3f  rel. tput at 70%% %.4f\n",
               t12.n, t12.mae_pfi30, t12.r2_pfi30, t12.mae_rel70);
        printf("  transfer H100 -> H200 (%d runs): MAE %.4f  R2 %.3f  rel. tput at 70%% %.4f\n",
               t21.n, t21.mae_pfi30, t21.r2_pfi30, t21.mae_rel70);
    } else
        printf("  transfer: needs >= 5 H200 and >= 5 H100 runs\n");
    printf("  model on all runs: %s (5-fold CV MAE ridge %.4f, physics %.4f)\n",
           pfi_model_kind_name(full.kind), full.cv_mae_ridge, full.cv_mae_physics);
    printf("  permutation importance (increase of MAE of PFI30 when shuffled):\n");
    for (int f = 0; f < PFI_N_FEATURES; f++)
        printf("    %-16s %+.4f\n", pfi_feature_name(f), imp[f]);
    return PFI_EXIT_OK;
}

/* ---- probe-eval ---- */

#define NEVAL 3
static const double eval_r[NEVAL] = {0.2, 0.3, 0.4}; /* 80, 70, 60% of baseline power */
static const int eval_pct[NEVAL] = {80, 70, 60};

/* Relative throughput at shed r by linear interpolation of the measured points, the probe
 * levels left out, the baseline (0, 1) included.  NAN beyond the deepest point left. */
static double truth_at(const pfi_curve *c, const int *skip, int nskip, double r)
{
    double rr[PFI_CURVE_MAX_PTS + 1], tt[PFI_CURVE_MAX_PTS + 1];
    int m = 0;
    rr[m] = 0;
    tt[m++] = 1.0;
    for (int k = 0; k < c->n; k++) {
        int sk = c->cap_w[k] >= c->cap0_w - 0.5;
        for (int j = 0; j < nskip; j++)
            sk |= skip[j] == k;
        if (sk)
            continue;
        double rk = 1.0 - c->draw_w[k] / c->p0_w;
        rr[m] = rk > 0 ? rk : 0;
        tt[m] = c->rel[k];
        int j = m++;
        while (j > 0 && rr[j - 1] > rr[j]) {
            double t = rr[j];
            rr[j] = rr[j - 1];
            rr[j - 1] = t;
            t = tt[j];
            tt[j] = tt[j - 1];
            tt[j - 1] = t;
            j--;
        }
    }
    if (r > rr[m - 1])
        return NAN;
    for (int k = 1; k < m; k++)
        if (r <= rr[k]) {
            double d = rr[k] - rr[k - 1];
            return d > 0 ? tt[k - 1] + (tt[k] - tt[k - 1]) * (r - rr[k - 1]) / d : tt[k];
        }
    return tt[m - 1];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct errset {
    double *e[NEVAL];
    int n[NEVAL];
    const char *worst[NEVAL]; /* run with the largest error at each depth */
    double worst_e[NEVAL];
} errset;

static double median(double *v, int n)
{
    if (n == 0)
        return NAN;
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double maxv(const double *v, int n)
{
    double m = n ? 0 : NAN;
    for (int i = 0; i < n; i++)
        if (v[i] > m)
            m = v[i];
    return m;
}

/* Scores one probing plan on every curve; errs[0] transformer runs, errs[1] all. */
static void score(const pfi_curve *cv, const int *tr, int n, const double *depths, int nprobes,
                  double b_fixed, const char *name, errset *errs)
{
    for (int i = 0; i < n; i++) {
        double b = isfinite(b_fixed) ? b_fixed : pfi_probe_median_b(cv, n, i);
        if (!isfinite(b))
            b = PFI_PROBE_B_PRIOR;
        pfi_curve p;
        int used[2] = {-1, -1};
        if (pfi_probe_curve(&cv[i], depths, nprobes, b, &p, used, NULL) != PFI_OK)
            continue;
        for (int k = 0; k < NEVAL; k++) {
            double t = truth_at(&cv[i], used, nprobes, eval_r[k]);
            if (!isfinite(t))
                continue;
            double e = fabs((1.0 - pfi_fit_s(&p.fit, eval_r[k])) - t);
            for (int s = 0; s < 2; s++)
                if (s == 1 || tr[i]) {
                    errs[s].e[k][errs[s].n[k]++] = e;
                    if (e > errs[s].worst_e[k]) {
                        errs[s].worst_e[k] = e;
                        errs[s].worst[k] = name;
                    }
                }
        }
    }
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
        opts};
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
    if (pfi_runset_load(db, db == NULL, NULL, 0, &rs, &err) != PFI_OK)
        return pfi_cli_fail("model probe-eval", &err);
    rc = PFI_OK;
    int status = PFI_EXIT_OK;
    pfi_curve *cv = malloc(sizeof *cv * (size_t)rs.n);
    const char **names = malloc(sizeof *names * (size_t)rs.n);
    int *tr = malloc(sizeof(int) * (size_t)rs.n), n = 0;
    errset es[2];
    memset(es, 0, sizeof es);
    int ok = cv && tr && names;
    for (int s = 0; ok && s < 2; s++)
        for (int k = 0; k < NEVAL; k++)
            ok = ok && (es[s].e[k] = malloc(sizeof(double) * (size_t)rs.n)) != NULL;
    if (!ok) {
        rc = pfi_err_set(&err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    /* Curves that shed enough power to be scored at 80% at least. */
    for (int i = 0; i < rs.n; i++)
        if (pfi_curve_from_run(&rs.runs[i], PFI_FAM_POWER, &cv[n], NULL) == PFI_OK &&
            cv[n].n_shed >= 3 && cv[n].r_max >= 0.2) {
            tr[n] = pfi_run_is_transformer(&rs.runs[i]);
            names[n] = rs.runs[i].name;
            n++;
        }
    /* The prior comes from transformer curves only: build a view of them for the median. */
    pfi_curve *tv = malloc(sizeof *tv * (size_t)(n ? n : 1));
    int ntv = 0;
    if (!tv) {
        rc = pfi_err_set(&err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++)
        if (tr[i])
            tv[ntv++] = cv[i];
    double b_all = pfi_probe_median_b(tv, ntv, -1);
    /* Leave-one-out prior: for a transformer run, the median without it; for the others, the
     * median of all transformer curves. */
    for (int i = 0; i < n; i++) {
        double b = b_all;
        if (tr[i]) {
            int self = -1;
            for (int j = 0, t = 0; j <= i; j++)
                if (tr[j]) {
                    if (j == i)
                        self = t;
                    t++;
                }
            b = pfi_probe_median_b(tv, ntv, self);
        }
        score(&cv[i], &tr[i], 1, depths, probes, isfinite(b) ? b : PFI_PROBE_B_PRIOR, names[i],
              es);
    }
    json_t *scan_arr = NULL;
    if (scan && probes == 1) {
        scan_arr = json_array();
        if (!as_json)
            printf("one probe, depth scan (transformer runs): median |err| at 80/70/60%%\n");
        for (double d = 0.15; d < 0.451; d += 0.05) {
            errset sc[2];
            memset(sc, 0, sizeof sc);
            int good = 1;
            for (int s = 0; s < 2; s++)
                for (int k = 0; k < NEVAL; k++)
                    good = good && (sc[s].e[k] = malloc(sizeof(double) * (size_t)(n ? n : 1)));
            if (good)
                for (int i = 0; i < n; i++)
                    score(&cv[i], &tr[i], 1, &d, 1, b_all, names[i], sc);
            double md[NEVAL];
            for (int k = 0; k < NEVAL; k++)
                md[k] = good ? median(sc[0].e[k], sc[0].n[k]) : NAN;
            json_array_append_new(scan_arr, json_pack("{s:f, s:o, s:o, s:o}", "depth", d,
                                                      "median_abs_err_80", num(md[0]),
                                                      "median_abs_err_70", num(md[1]),
                                                      "median_abs_err_60", num(md[2])));
            if (!as_json)
                printf("  depth %.2f: %.4f %.4f %.4f   worst %.4f\n", d, md[0], md[1], md[2],
                       fmax(md[0], fmax(md[1], md[2])));
            for (int s = 0; s < 2; s++)
                for (int k = 0; k < NEVAL; k++)
                    free(sc[s].e[k]);
        }
    }
    free(tv);
    double med[2][NEVAL], mx[2][NEVAL];
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < NEVAL; k++) {
            mx[s][k] = maxv(es[s].e[k], es[s].n[k]);
            med[s][k] = median(es[s].e[k], es[s].n[k]);
        }
    if (as_json) {
        json_t *doc = json_pack("{s:s, s:i, s:o, s:o, s:i}", "data", rs.where, "probes", probes,
                                "depths", json_array(), "b_prior_median", num(b_all),
                                "n_curves", n);
        for (int i = 0; i < probes; i++)
            json_array_append_new(json_object_get(doc, "depths"), json_real(depths[i]));
        static const char *const setname[2] = {"transformer", "all"};
        for (int s = 0; s < 2; s++) {
            json_t *o = s == 0 ? doc : json_object();
            char key[48];
            for (int k = 0; k < NEVAL; k++) {
                snprintf(key, sizeof key, "median_abs_err_%d", eval_pct[k]);
                json_object_set_new(o, key, num(med[s][k]));
                snprintf(key, sizeof key, "max_abs_err_%d", eval_pct[k]);
                json_object_set_new(o, key, num(mx[s][k]));
                snprintf(key, sizeof key, "n_%d", eval_pct[k]);
                json_object_set_new(o, key, json_integer(es[s].n[k]));
                snprintf(key, sizeof key, "worst_run_%d", eval_pct[k]);
                json_object_set_new(o, key,
                                    es[s].worst[k] ? json_string(es[s].worst[k]) : json_null());
            }
            if (s == 1)
                json_object_set_new(doc, setname[s], o);
        }
        json_object_set_new(doc, "set", json_string("transformer"));
        if (scan_arr)
            json_object_set_new(doc, "scan", scan_arr);
        status = pfi_cli_print_json(doc);
        scan_arr = NULL;
    } else {
        printf("%d-probe estimation at depth%s", probes, probes == 1 ? "" : "s");
        for (int i = 0; i < probes; i++)
            printf(" %.2f", depths[i]);
        printf(" on %d curves from %s (prior exponent b = %.2f)\n", n, rs.where, b_all);
        printf("  |error| of relative throughput at      80%%             70%%             60%% "
               "of baseline power\n");
        for (int s = 0; s < 2; s++) {
            printf("  %-12s median/max", s == 0 ? "transformer" : "all");
            for (int k = 0; k < NEVAL; k++)
                printf("  %.4f/%.4f(%d)", med[s][k], mx[s][k], es[s].n[k]);
            printf("\n");
        }
        for (int k = 0; k < NEVAL; k++)
            if (es[1].worst[k])
                printf("  largest error at %d%%: %s\n", eval_pct[k], es[1].worst[k]);
    }
    json_decref(scan_arr);
out:
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < NEVAL; k++)
            free(es[s].e[k]);
    free(cv);
    free(tr);
    free(names);
    pfi_runset_free(&rs);
    if (rc != PFI_OK)
        return pfi_cli_fail("model probe-eval", &err);
    return status;
}

int pfi_cmd_model(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "train") == 0)
        return model_train(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "eval") == 0)
        return model_eval(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "probe-eval") == 0)
        return model_probe_eval(argc - 1, argv + 1);
    FILE *f = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
                  ? stdout
                  : stderr;
    fprintf(f, "usage: pfi model train|eval|probe-eval [options]   (pfi model SUB --help)\n"
               "  train       train the runtime predictor; writes pfi-model.json\n"
               "  eval        leave-one-job-out, transfer H200<->H100, feature importance\n"
               "  probe-eval  one/two-probe curve estimation scored on the public curves\n");
    if (argc >= 2 && f == stderr)
        fprintf(stderr, "pfi model: unknown subcommand '%s'\n", argv[1]);
    return f == stdout ? PFI_EXIT_OK : PFI_EXIT_USAGE;
}
