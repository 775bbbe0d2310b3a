/* SPDX-License-Identifier: Apache-2.0 */
/* study.c: the paper end to end (see study.h).  Each step fills a part of pfi_study; the
 * report (study_report.c) only renders what is here. */
#include "study/study.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "core/alloc_eval.h"
#include "core/settle.h"
#include "sim/sim.h"
#include "store/store.h"
#include "study/cost_eval.h"
#include "study/experiment.h"
#include "study/fleet.h"
#include "util/clock.h"
#include "util/fs.h"

void pfi_study_defaults(pfi_study_opts *o)
{
    memset(o, 0, sizeof *o);
    o->fleet = "paper";
    o->out_dir = "study-out";
    o->seed = 1;
    o->n_cuts = 5;
    for (int i = 0; i < 5; i++)
        o->cuts[i] = 0.1 * (i + 1);
    o->sla = 0.10;
    o->figures = 1;
}

static void progress(const pfi_study *s, const char *step, int done, int total)
{
    if (s->opts.progress)
        s->opts.progress(s->opts.progress_ctx, step, done, total);
}

static void note(pfi_study *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(pfi_study *s, const char *fmt, ...)
{
    if (s->n_notes >= PFI_STUDY_MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->notes[s->n_notes++], sizeof s->notes[0], fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------ step 1: the runs */

/* A fleet file: {"runs": [{"set": "main", "node": <a simulator node config>}, ...]}. */
static int fleet_from_file(const char *path, pfi_fleet_entry **out, int *n, pfi_err *err)
{
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (!doc && je.line < 1) /* not opened: no line to point at, and perhaps a misspelt name */
        return pfi_err_set(err, PFI_EINVAL, "--fleet %s is neither paper, small nor a fleet file "
                                            "(%s)", path, je.text);
    if (!doc)
        return pfi_err_set(err, PFI_EINVAL, "%s:%d: %s", path, je.line, je.text);
    json_t *runs = json_object_get(doc, "runs");
    if (!json_is_array(runs) || json_array_size(runs) == 0) {
        json_decref(doc);
        return pfi_err_set(err, PFI_EINVAL, "%s: expected {\"runs\": [{\"set\": ..., \"node\": "
                                            "{...}}, ...]} with at least one run", path);
    }
    size_t nr = json_array_size(runs);
    pfi_fleet_entry *e = calloc(nr, sizeof *e);
    if (!e) {
        json_decref(doc);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < nr; i++) {
        json_t *r = json_array_get(runs, i);
        json_t *node = json_object_get(r, "node");
        const char *set = json_string_value(json_object_get(r, "set"));
        char *text = node ? json_dumps(node, 0) : NULL;
        int rc = text ? pfi_sim_config_parse(text, &e[i].node, err)
                      : pfi_err_set(err, PFI_EINVAL, "run has no \"node\" object");
        free(text);
        if (rc == PFI_OK && e[i].node.n_jobs < 1)
            rc = pfi_err_set(err, PFI_EINVAL, "its node runs no job");
        if (rc != PFI_OK) {
            pfi_err_prefix(err, "%s: run %zu: ", path, i);
            free(e);
            json_decref(doc);
            return rc;
        }
        snprintf(e[i].set, sizeof e[i].set, "%s", set ? set : "main");
        e[i].match = -1;
        pfi_sim_job_meta(&e[i].node.jobs[0], &e[i].meta);
        snprintf(e[i].run, sizeof e[i].run, "%s/%zu %s %dgpu", e[i].set, i,
                 e[i].node.jobs[0].model, e[i].node.jobs[0].n_gpus);
    }
    json_decref(doc);
    *out = e;
    *n = (int)nr;
    return PFI_OK;
}

/* Runs of one job configuration share a group (a rerun, the H100 run of an H200 run's job), as
 * pfi model eval groups a store's: each run its own group kept a job's other runs in the
 * training of its "left out" prediction (a twin's curve moved it from 0.389 to 0.415). */
static void group_by_job(pfi_study *s)
{
    for (int i = 0; i < s->n; i++) {
        const pfi_run *a = &s->runs[i].run;
        s->runs[i].group = i;
        for (int j = 0; j < i; j++)
            if (pfi_same_job_config(&a->meta, a->n_gpus, &s->runs[j].run.meta,
                                    s->runs[j].run.n_gpus)) {
                s->runs[i].group = s->runs[j].group;
                break;
            }
    }
}

static int load_fleet(pfi_study *s, pfi_err *err)
{
    const char *which = s->opts.fleet;
    pfi_fleet_opts fo = pfi_fleet_defaults();
    /* The same sweep code a real job goes through (measure/), in virtual time, unless the
     * caller asked for the simulator's steady state directly (3x faster, PFI30 within 0.005). */
    fo.use_sweep = !s->opts.direct;
    fo.progress = s->opts.progress;
    fo.progress_ctx = s->opts.progress_ctx;
    snprintf(s->source, sizeof s->source, "simulated fleet '%s', seed %llu, %s", which,
             (unsigned long long)s->opts.seed,
             fo.use_sweep ? "each run swept by pfi's sweep protocol in virtual time"
                          : "each run's steady state read from the simulator (--direct)");
    if (strcmp(which, "paper") == 0 || strcmp(which, "small") == 0) {
        pfi_fleet_run *fr = NULL;
        int n = 0;
        int rc = pfi_fleet_build(which, s->opts.seed, &fo, &fr, &n, err);
        if (rc != PFI_OK)
            return rc;
        s->runs = calloc((size_t)(n ? n : 1), sizeof *s->runs);
        if (!s->runs) {
            free(fr);
            return pfi_err_set(err, PFI_ENOMEM, "out of memory");
        }
        for (int i = 0; i < n; i++) {
            s->runs[i].run = fr[i].run;
            snprintf(s->runs[i].set, sizeof s->runs[i].set, "%s", fr[i].set);
            s->runs[i].group = fr[i].group;
            s->runs[i].match = fr[i].match;
        }
        s->n = n;
        free(fr);
        return PFI_OK;
    }
    pfi_fleet_entry *e = NULL;
    int n = 0;
    int rc = fleet_from_file(which, &e, &n, err);
    if (rc != PFI_OK)
        return rc;
    s->runs = calloc((size_t)n, sizeof *s->runs);
    if (!s->runs) {
        free(e);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n && rc == PFI_OK; i++) {
        progress(s, "characterizing the fleet file's runs (virtual time)", i, n);
        rc = pfi_fleet_characterize(&e[i], &fo, &s->runs[i].run, err);
        snprintf(s->runs[i].set, sizeof s->runs[i].set, "%s", e[i].set);
        s->runs[i].group = i;
        s->runs[i].match = -1;
    }
    if (rc == PFI_OK)
        progress(s, "characterizing the fleet file's runs (virtual time)", n, n);
    free(e);
    s->n = n;
    if (rc == PFI_OK)
        group_by_job(s);
    return rc;
}

/* PFI_OK when s->db_path may be replaced: absent, or a store of simulated runs alone (a
 * study's).  The file was DIR/pfi.db, every other command's default store, and `pfi study
 * --out .` deleted a folder's measured and imported sweeps; the name is now the study's own,
 * and a store holding anything but simulated runs is still never removed. */
static int store_replaceable(const pfi_study *s, pfi_err *err)
{
    if (access(s->db_path, F_OK) != 0)
        return PFI_OK;
    pfi_store *st;
    pfi_err oe = {0};
    if (pfi_store_open(s->db_path, PFI_STORE_READONLY, &st, &oe) != PFI_OK)
        return pfi_err_set(err, PFI_EINVAL,
                           "%s exists and is not a study's store (%s): not replaced; move it or "
                           "give another --out", s->db_path, oe.msg);
    pfi_run_summary *runs = NULL;
    int n = 0, other = 0;
    int rc = pfi_store_list_runs(st, &runs, &n, err);
    for (int i = 0; rc == PFI_OK && i < n; i++)
        other += strcmp(runs[i].source, "sim") != 0;
    free(runs);
    pfi_store_close(st);
    if (rc == PFI_OK && other)
        rc = pfi_err_set(err, PFI_EINVAL,
                         "%s holds %d run(s) that are not a study's simulated ones (sweeps or "
                         "imports): not replaced; move it or give another --out",
                         s->db_path, other);
    return rc;
}

static int save_to_store(pfi_study *s, pfi_err *err)
{
    snprintf(s->db_path, sizeof s->db_path, "%s/study.db", s->opts.out_dir);
    int rc = store_replaceable(s, err);
    if (rc != PFI_OK)
        return rc;
    /* A study's store holds that study's runs only; a WAL left beside an old file must go
     * with it, or SQLite would replay it into the new one. */
    static const char *const ext[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char path[1100];
        snprintf(path, sizeof path, "%s%s", s->db_path, ext[i]);
        if (remove(path) != 0 && errno != ENOENT)
            return pfi_err_set(err, PFI_EIO, "cannot replace %s: %s", path, strerror(errno));
    }
    pfi_store *st;
    rc = pfi_store_open(s->db_path, PFI_STORE_CREATE, &st, err);
    if (rc != PFI_OK)
        return rc;
    /* One transaction for the whole fleet: it is recomputed, not measured, if lost. */
    rc = pfi_store_batch_begin(st, err);
    for (int i = 0; i < s->n && rc == PFI_OK; i++) {
        char tag[48];
        snprintf(tag, sizeof tag, "set=%s", s->runs[i].set);
        const char *tags[] = {tag};
        rc = pfi_store_save_run(st, &s->runs[i].run, "sim", tags, 1, &s->runs[i].run.id, err);
    }
    if (rc == PFI_OK)
        rc = pfi_store_batch_commit(st, err);
    else
        pfi_store_batch_abort(st);
    pfi_store_close(st);
    return rc;
}

static int load_db(pfi_study *s, pfi_err *err)
{
    snprintf(s->source, sizeof s->source, "store %s", s->opts.from_db);
    snprintf(s->db_path, sizeof s->db_path, "%s", s->opts.from_db);
    pfi_store *st;
    int rc = pfi_store_open(s->opts.from_db, PFI_STORE_READONLY, &st, err);
    if (rc != PFI_OK)
        return rc;
    pfi_run_summary *sum = NULL;
    int n = 0;
    rc = pfi_store_list_runs(st, &sum, &n, err);
    if (rc == PFI_OK && n == 0)
        rc = pfi_err_set(err, PFI_ENOENT,
                         "%s holds no runs (measure some with `pfi sweep`, or `pfi import all`)",
                         s->opts.from_db);
    if (rc == PFI_OK && !(s->runs = calloc((size_t)n, sizeof *s->runs)))
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
    for (int i = 0; i < n && rc == PFI_OK; i++) {
        progress(s, "loading runs", i, n);
        rc = pfi_store_load_run(st, sum[i].id, &s->runs[i].run, err);
        snprintf(s->runs[i].set, sizeof s->runs[i].set, "db");
        s->runs[i].group = i;
        s->runs[i].match = -1;
        s->n = i + 1;
    }
    if (rc == PFI_OK) {
        progress(s, "loading runs", n, n);
        group_by_job(s);
    }
    free(sum);
    pfi_store_close(st);
    return rc;
}

/* ------------------------------------------------------------------ step 2: PFI */

static void index_runs(pfi_study *s)
{
    pfi_index_opts io = pfi_index_defaults();
    io.n_boot = 200;
    int failed = 0;
    for (int i = 0; i < s->n; i++) {
        pfi_err e = {0};
        pfi_study_run *r = &s->runs[i];
        r->pred_pfi30 = r->meas_pfi30 = NAN;
        io.seed = (unsigned long long)i + 1;
        r->index_ok = pfi_index_run(&r->run, &io, &r->index, &e) == PFI_OK;
        /* The headline, as `pfi index` gives it, only where measured (bracketed): the same
         * run must not read one PFI30 here and another in pfi index or the cost table. */
        r->pfi30 = r->index_ok && !r->index.extrapolated ? r->index.pfi_head : NAN;
        if (!r->index_ok) {
            snprintf(r->index_why, sizeof r->index_why, "%s", e.msg);
            failed++;
        }
        progress(s, "computing PFI curves", i + 1, s->n);
    }
    if (failed)
        note(s, "%d of %d runs have no PFI (too few usable levels); the tables leave them out",
             failed, s->n);
}

/* ------------------------------------------------------------------ what characterizing cost */

/* A run's cost from its levels' recorded times; 0 when a level has none. */
static int run_cost(const pfi_run *r, pfi_cost *out)
{
    double dur[PFI_MAX_LEVELS];
    for (int i = 0; i < r->n_levels && i < PFI_MAX_LEVELS; i++) {
        const pfi_level *l = &r->levels[i];
        dur[i] = l->ended_s > l->began_s ? l->ended_s - l->began_s : NAN;
    }
    return pfi_cost_run(r, dur, out, NULL) == PFI_OK && isfinite(out->gpu_s_total) &&
           isfinite(out->lost_total);
}

/* Each run's cost, and how much of a sweep a PFI30 needs on these runs (study/cost_eval.h). */
static void cost_step(pfi_study *s)
{
    pfi_study_cost *c = &s->cost;
    memset(c, 0, sizeof *c);
    for (int i = 0; i < s->n; i++) {
        pfi_study_run *r = &s->runs[i];
        r->cost_ok = run_cost(&r->run, &r->cost);
        c->n_timed += r->cost_ok;
    }

    double t0 = pfi_clock_mono();
    const pfi_run **runs = malloc(sizeof *runs * (size_t)(s->n ? s->n : 1));
    pfi_err e = {0};
    if (!runs) {
        snprintf(c->eval_why, sizeof c->eval_why, "out of memory");
    } else {
        for (int i = 0; i < s->n; i++)
            runs[i] = &s->runs[i].run;
        c->eval_done = pfi_cost_evaluate(runs, s->n, &c->eval, &e) == PFI_OK;
        if (!c->eval_done)
            snprintf(c->eval_why, sizeof c->eval_why, "%s", e.msg);
    }
    free(runs);
    c->eval_s = pfi_clock_mono() - t0;
}

/* ------------------------------------------------------------------ step 3: prediction */

static int is_h100(const pfi_run *r)
{
    return strncmp(r->gpu_type, "H100", 4) == 0;
}

/* Training rows of the runs selected by `want` (a set name, or "h200"/"h100" for GPU type). */
static int rows_of(const pfi_study *s, const char *want, pfi_train_row *rows, int *idx)
{
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        const pfi_study_run *r = &s->runs[i];
        int take = strcmp(want, "h200") == 0   ? !is_h100(&r->run)
                   : strcmp(want, "h100") == 0 ? is_h100(&r->run)
                                               : strcmp(r->set, want) == 0;
        if (!take || !r->index_ok || !pfi_features_have_telemetry(&r->run))
            continue;
        pfi_err e = {0};
        if (pfi_train_row_from_run(&r->run, r->group, is_h100(&r->run), &rows[n], &e) != PFI_OK)
            continue; /* no baseline telemetry: it cannot be a training example */
        if (idx)
            idx[n] = i;
        n++;
    }
    return n;
}

static const char *train_set_of(const pfi_study *s)
{
    return s->opts.from_db ? "db" : "main";
}

/* The model that never saw run r's job. */
static const pfi_model *model_for(const pfi_study *s, const pfi_study_run *r)
{
    const pfi_study_pred *p = &s->pred;
    if (strcmp(r->set, train_set_of(s)) != 0)
        return &p->full;
    int f = r->group % PFI_STUDY_FOLDS;
    return p->have_fold[f] ? &p->fold[f] : NULL;
}

/* The predictions an evaluation made, onto the runs its rows came from, each with the truth it
 * is scored against: the run's PFI30 as the PFI table gives it (NAN: not scored). */
static void set_pred(pfi_study *s, const int *idx, const double *pred, int n)
{
    for (int i = 0; i < n; i++) {
        s->runs[idx[i]].pred_pfi30 = pred[i];
        s->runs[idx[i]].meas_pfi30 = s->runs[idx[i]].pfi30;
    }
}

/* An evaluation scored against the runs' measured PFI30 (the headline, pfi30), only where the
 * sweep reaches a 30% shed: the rows' own pfi30 is the fit, extrapolated where the sweep stopped
 * short, which the PFI table refuses to report as measured. */
static int score_measured(const pfi_study *s, const int *idx, const double *pred, int n,
                          pfi_model_eval *e)
{
    double *truth = malloc(sizeof *truth * (size_t)(n > 0 ? n : 1));
    if (!truth)
        return PFI_ENOMEM;
    for (int i = 0; i < n; i++)
        truth[i] = s->runs[idx[i]].pfi30;
    pfi_model_score(pred, truth, n, e);
    free(truth);
    return PFI_OK;
}

/* Grouped permutation importance on the training runs, each predicted by the fold model that
 * never saw its job (core/importance.h); the study's seed, PFI_IMP_REPEATS permutations. */
static int held_out_importance(pfi_study *s, const pfi_train_row *rows, const int *idx, int n)
{
    /* Scored as the predictor table is, against the measured PFI30 (NAN where there is none:
     * that run is grouped and permuted with the others, not scored). */
    const pfi_model **m = calloc((size_t)n + 1, sizeof *m);
    pfi_train_row *sc = calloc((size_t)n + 1, sizeof *sc);
    if (!m || !sc) {
        free(m), free(sc);
        return PFI_ENOMEM;
    }
    int rc = PFI_OK;
    for (int i = 0; i < n && rc == PFI_OK; i++) {
        const pfi_study_run *r = &s->runs[idx[i]];
        sc[i] = rows[i];
        sc[i].pfi30 = r->pfi30;
        if (!(m[i] = model_for(s, r)))
            rc = PFI_EINVAL;
    }
    pfi_err e = {0};
    if (rc == PFI_OK)
        rc = pfi_group_importance(m, sc, n, PFI_IMP_CORR, PFI_IMP_REPEATS, s->opts.seed,
                                  &s->pred.importance, &e);
    free(m), free(sc);
    return rc;
}

/* The transfer rows of the predictor table: H200 -> H100 and H100 -> H200, each scored where
 * the test run's PFI30 is measured (score_measured); rows, test, idx, tidx and pred are the
 * caller's scratch (s->n + 1 each). */
static void transfer(pfi_study *s, const pfi_train_opts *to, pfi_train_row *rows,
                     pfi_train_row *test, int *idx, int *tidx, double *pred)
{
    pfi_study_pred *p = &s->pred;
    const char *train_set = train_set_of(s);
    pfi_err e = {0};
    int nh200 = rows_of(s, "h200", rows, idx), nh100 = rows_of(s, "h100", test, tidx);
    if (nh200 >= 8 && nh100 > 0 &&
        pfi_model_transfer_pred(rows, nh200, test, nh100, to, &p->h200_to_h100, pred, &e) ==
            PFI_OK &&
        score_measured(s, tidx, pred, nh100, &p->h200_to_h100) == PFI_OK) {
        p->have_h200_to_h100 = 1;
        /* Onto the H100 runs outside the training set only: in a store every run is in it,
         * and its figure point is its leave-one-job-out prediction, as the table's. */
        int k = 0;
        for (int i = 0; i < nh100; i++)
            if (strcmp(s->runs[tidx[i]].set, train_set) != 0) {
                tidx[k] = tidx[i];
                pred[k++] = pred[i];
            }
        set_pred(s, tidx, pred, k);
    }
    nh100 = rows_of(s, "h100", test, tidx);
    if (nh100 >= 8 && nh200 > 0 &&
        pfi_model_transfer_pred(test, nh100, rows, nh200, to, &p->h100_to_h200, pred, &e) ==
            PFI_OK &&
        score_measured(s, idx, pred, nh200, &p->h100_to_h200) == PFI_OK)
        p->have_h100_to_h200 = 1;
}

static int predictor(pfi_study *s, pfi_err *err)
{
    pfi_study_pred *p = &s->pred;
    pfi_train_row *rows = calloc((size_t)s->n + 1, sizeof *rows);
    pfi_train_row *test = calloc((size_t)s->n + 1, sizeof *test);
    int *idx = calloc((size_t)s->n + 1, sizeof *idx);
    if (!rows || !test || !idx) {
        free(rows), free(test), free(idx);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    const char *train_set = train_set_of(s);
    int n = rows_of(s, train_set, rows, idx);
    p->n_train = n;
    pfi_train_opts to = pfi_train_defaults();
    to.seed = s->opts.seed;
    int rc = PFI_OK;
    if (n < 8) {
        snprintf(p->why, sizeof p->why,
                 "only %d run(s) have baseline telemetry (SM clock, activities, power-cap time) "
                 "and a PFI; the predictor needs at least 8. Imported public sweeps carry no "
                 "telemetry: measure runs with `pfi sweep` to train it",
                 n);
        note(s, "predictor not trained: %s", p->why);
        goto out;
    }
    progress(s, "training and validating the predictor", 0, 4);
    pfi_model model;
    pfi_err e = {0};
    double *pred = calloc((size_t)s->n + 1, sizeof *pred);
    int *tidx = calloc((size_t)s->n + 1, sizeof *tidx);
    if (!pred || !tidx) {
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
        goto out_pred;
    }
    /* Each run's point in the predicted-vs-measured figure is the prediction its row of the
     * predictor table scored (set_pred). */
    if ((rc = pfi_model_lojo_pred(rows, n, &to, &p->lojo, pred, err)) != PFI_OK)
        goto out_pred;
    p->lojo_fit = p->lojo;
    if ((rc = score_measured(s, idx, pred, n, &p->lojo)) != PFI_OK)
        goto out_pred;
    set_pred(s, idx, pred, n);
    progress(s, "training and validating the predictor", 1, 4);
    if ((rc = pfi_model_train(rows, n, &to, &model, err)) != PFI_OK)
        goto out_pred;
    p->model_kind = model.kind;

    int nt = rows_of(s, "validation", test, tidx);
    if (nt > 0 &&
        pfi_model_transfer_pred(rows, n, test, nt, &to, &p->validation, pred, &e) == PFI_OK &&
        score_measured(s, tidx, pred, nt, &p->validation) == PFI_OK) {
        p->have_validation = 1;
        set_pred(s, tidx, pred, nt);
    }
    progress(s, "training and validating the predictor", 2, 4);
    transfer(s, &to, rows, test, idx, tidx, pred);
    progress(s, "training and validating the predictor", 3, 4);

    /* Models that never saw a job: each training run by the model of its fold (trained without
     * its job group, what the allocation's pfi sees), every other run by the model trained on
     * all training runs. */
    p->full = model;
    n = rows_of(s, train_set, rows, idx);
    for (int f = 0; f < PFI_STUDY_FOLDS; f++) {
        int ntr = 0;
        for (int i = 0; i < n; i++)
            if (rows[i].group % PFI_STUDY_FOLDS != f)
                test[ntr++] = rows[i];
        p->have_fold[f] = pfi_model_train(test, ntr, &to, &p->fold[f], &e) == PFI_OK;
    }
    p->have_importance = held_out_importance(s, rows, idx, n) == PFI_OK;
    p->done = 1;
    progress(s, "training and validating the predictor", 4, 4);
out_pred:
    free(pred), free(tidx);
out:
    free(rows), free(test), free(idx);
    return rc;
}

/* ------------------------------------------------------------------ step 4: allocation */

/* The runs of the allocation experiment (study/experiment.h), borrowed from the study. */
typedef struct alloc_set {
    pfi_expt_pop pop;
    const pfi_run **runs;
    int *group;
    int *study_run;   /* population run -> index in s->runs */
    int use_model;
} alloc_set;

static void alloc_set_free(alloc_set *a)
{
    pfi_expt_pop_free(&a->pop);
    free(a->runs), free(a->group), free(a->study_run);
}

/* The allocation population.  With a predictor: the H200 runs (main + validation) with their
 * configuration groups, pfi seeing curves predicted out of fold by models (and a draw model)
 * that never saw the job's group.  Without: every run with a PFI, pfi seeing baseline + one
 * probe.  Runs without a usable curve are left out (and counted). */
static int build_alloc_set(pfi_study *s, alloc_set *a, pfi_err *err)
{
    pfi_study_alloc *al = &s->alloc;
    a->use_model = s->pred.done;
    a->runs = calloc((size_t)s->n + 1, sizeof *a->runs);
    a->group = calloc((size_t)s->n + 1, sizeof *a->group);
    a->study_run = calloc((size_t)s->n + 1, sizeof *a->study_run);
    if (!a->runs || !a->group || !a->study_run)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        const pfi_study_run *r = &s->runs[i];
        if (!r->index_ok || (a->use_model && is_h100(&r->run)))
            continue;
        a->runs[n] = &r->run;
        a->group[n] = r->group;
        a->study_run[n++] = i;
    }
    int rc = pfi_expt_pop_runs(a->runs, a->group, n, s->source, &a->pop, err);
    if (rc != PFI_OK)
        return rc;
    for (int j = 0; j < a->pop.n; j++)
        s->runs[a->study_run[a->pop.run_of[j]]].in_alloc = 1;
    if (a->pop.skipped)
        note(s, "%d run(s) left out of the allocation: no usable curve", a->pop.skipped);
    if (a->use_model) /* the probes' estimator is said once it has run (allocation) */
        snprintf(al->pfi_curves, sizeof al->pfi_curves,
                 "curves predicted from baseline telemetry, with the draw under a cap, by models "
                 "that never saw the job (%d folds by job group)", PFI_EXPT_FOLDS);
    snprintf(al->population, sizeof al->population, "%d %s", a->pop.n,
             a->use_model ? "H200 runs (main + validation)" : "runs with a PFI curve");
    return PFI_OK;
}

/* The grid day on the experiment's jobs: truth, and what pfi saw (the predictor's curves do
 * not depend on the cut).  A failure is a note, not the study's failure. */
static void grid_day(pfi_study *s, const pfi_expt_jobs *jobs)
{
    pfi_study_grid *g = &s->grid;
    pfi_grid_day_defaults(&g->opts);
    g->opts.seed = s->opts.seed;
    snprintf(g->unit, sizeof g->unit, "%s", jobs->relative ? "GPU-weighted relative x s"
                                                            : "tokens");
    progress(s, "grid day", 0, 1);
    pfi_err e = {0};
    double t0 = pfi_clock_mono();
    int rc = pfi_grid_day_run(jobs->truth, jobs->pred, jobs->n, &g->opts, &g->day, &e);
    g->elapsed_s = pfi_clock_mono() - t0;
    if (rc != PFI_OK) {
        snprintf(g->why, sizeof g->why, "%s", e.msg);
        note(s, "grid day not run: %s", e.msg);
        return;
    }
    g->done = 1;
    progress(s, "grid day", 1, 1);
}

static int allocation(pfi_study *s, pfi_err *err)
{
    pfi_study_alloc *al = &s->alloc;
    alloc_set a;
    memset(&a, 0, sizeof a);
    pfi_expt_result plain, sla;
    memset(&plain, 0, sizeof plain);
    memset(&sla, 0, sizeof sla);
    int rc = build_alloc_set(s, &a, err);
    if (rc != PFI_OK)
        goto out;
    al->n_jobs = a.pop.n;
    if (a.pop.n < 2) {
        snprintf(al->why, sizeof al->why, "only %d job(s) have a usable curve; the experiment "
                                          "needs at least two", a.pop.n);
        note(s, "allocation not run: %s", al->why);
        goto out;
    }
    al->n_cuts = s->opts.n_cuts;
    memcpy(al->cuts, s->opts.cuts, sizeof al->cuts);
    int pol[PFI_POLICY_COUNT] = {PFI_POLICY_EQUAL, PFI_POLICY_PFI, PFI_POLICY_ORACLE,
                                 PFI_POLICY_PROPORTIONAL};
    pfi_expt_opts eo = pfi_expt_defaults(a.use_model ? 0 : 1);
    eo.train_seed = s->opts.seed;
    progress(s, "allocation experiment", 0, 2);
    rc = pfi_expt_run(&a.pop, &eo, al->cuts, al->n_cuts, pol, PFI_POLICY_COUNT, &plain, err);
    if (rc != PFI_OK)
        goto out;
    snprintf(al->unit, sizeof al->unit, "%s", plain.jobs.unit);
    al->relative = plain.jobs.relative;
    al->setting_in_sample = pfi_expt_setting_in_sample(&a.pop, &eo);
    if (al->setting_in_sample)
        note(s, "allocation: in sample: pfi's one-probe setting was chosen on these very curves "
                "(the public sweeps); the held-out figure is pfi evaluate --public --nested-cv's "
                "(docs/allocation.md)");
    note(s, "allocation: pfi saw %s", plain.jobs.note);
    if (!a.use_model) /* the estimator the experiment used (its depth and shape), not a default */
        snprintf(al->pfi_curves, sizeof al->pfi_curves, "%s (no telemetry to predict from)",
                 plain.jobs.note);
    for (int c = 0; c < al->n_cuts; c++)
        for (int p = 0; p < PFI_POLICY_COUNT; p++)
            al->cell[c][p] = plain.cells[c * PFI_POLICY_COUNT + p];

    /* With SLAs: every third job may lose at most opts.sla of its throughput.  The SLA is
     * enforced on the curves each policy sees, and checked on the true ones. */
    eo.sla = al->sla = s->opts.sla;
    eo.sla_every = 3;
    eo.breach_tol = al->breach_tol = 0.002;
    /* pfi keeps a margin for the error of the curves it sees, measured on those very curves
     * over the other jobs at their SLA floors (experiment.h).  The predictor's own error (on
     * the power drawn) is ten times smaller than the error of reading its curve at a cap, so it
     * would understate the margin. */
    eo.sla_margin = NAN;
    eo.alloc.on_infeasible = PFI_INFEASIBLE_RELAX;
    progress(s, "allocation experiment", 1, 2);
    rc = pfi_expt_run(&a.pop, &eo, al->cuts, al->n_cuts, pol, PFI_POLICY_COUNT, &sla, err);
    if (rc != PFI_OK)
        goto out;
    al->sla_margin = sla.sla_margin;
    al->sla_rounds = eo.sla_rounds;
    al->n_sla_jobs = sla.n_sla_jobs;
    for (int c = 0; c < al->n_cuts; c++)
        for (int p = 0; p < PFI_POLICY_COUNT; p++) {
            al->sla_cell[c][p] = sla.cells[c * PFI_POLICY_COUNT + p];
            al->sla_violations[c][p] = sla.breaches[c * PFI_POLICY_COUNT + p];
            al->sla_worst[c][p] = sla.worst[c * PFI_POLICY_COUNT + p];
            al->sla_jobs_power[c][p] = sla.sla_power[c * PFI_POLICY_COUNT + p];
            al->sla_jobs_tput[c][p] = sla.sla_tput[c * PFI_POLICY_COUNT + p];
        }
    for (int c = 0; c < al->n_cuts; c++) {
        al->sla_eq_pred[c] = sla.eq_pred[c];
        al->sla_eq_pred_violations[c] = sla.eq_pred_breaches[c];
        al->sla_eq_pred_worst[c] = sla.eq_pred_worst[c];
        al->sla_plan_violations[c] = sla.plan_breaches[c];
        al->sla_plan_worst[c] = sla.plan_worst[c];
        al->sla_fb_rounds[c] = sla.fb_rounds[c];
        al->sla_fb_jobs[c] = sla.fb_jobs[c];
        al->sla_fb_unfit[c] = sla.fb_unfit[c];
        al->sla_pfi_relaxed[c] = sla.pfi_relaxed[c];
    }
    al->done = 1;
    progress(s, "allocation experiment", 2, 2);
    if (s->opts.scenario)
        grid_day(s, &plain.jobs);
out:
    pfi_expt_result_free(&plain);
    pfi_expt_result_free(&sla);
    alloc_set_free(&a);
    return rc;
}

/* ------------------------------------------------------------------ the multi-GPU trace */

static void gpu_trace(pfi_study *s)
{
    pfi_study_trace *tr = &s->trace;
    if (s->opts.from_db)
        return;
    pfi_fleet_entry *e = NULL;
    int n = 0;
    pfi_err err = {0};
    const char *which = s->opts.fleet;
    if (strcmp(which, "paper") != 0 && strcmp(which, "small") != 0)
        return;
    if (pfi_sim_fleet(which, s->opts.seed, &e, &n, &err) != PFI_OK)
        return;
    int pick = -1;
    for (int i = 0; i < n && pick < 0; i++)
        if (e[i].node.jobs[0].n_gpus >= 8 && e[i].node.n_gpus <= PFI_STUDY_TRACE_GPUS)
            pick = i;
    if (pick < 0) {
        free(e);
        return;
    }
    pfi_sim_node *node;
    if (pfi_sim_node_new(&e[pick].node, &node, &err) != PFI_OK) {
        free(e);
        return;
    }
    int ng = e[pick].node.jobs[0].n_gpus;
    pfi_device d;
    pfi_sim_device(node, 0, 0, &d, &err);
    tr->n_gpus = ng;
    tr->cap_w = round(0.6 * d.default_limit_w);
    if (tr->cap_w < d.min_limit_w)
        tr->cap_w = d.min_limit_w;
    tr->step_at_s = 2.0;
    snprintf(tr->run, sizeof tr->run, "%s", e[pick].run);
    const double dt = 0.05;
    int stepped = 0, ok = 1;
    for (int k = 0; k < PFI_STUDY_TRACE_PTS && ok; k++) {
        double t = 10.0 + k * dt; /* start well after the job's start-up */
        if (!stepped && t >= 10.0 + tr->step_at_s) {
            for (int g = 0; g < ng; g++)
                ok = ok && pfi_sim_set_limit(node, g, t, tr->cap_w, &err) == PFI_OK;
            stepped = 1;
        }
        tr->t[k] = t - 10.0;
        for (int g = 0; g < ng && ok; g++) {
            pfi_sample smp;
            ok = pfi_sim_sample(node, g, t, &smp, &err) == PFI_OK;
            tr->clock[g][k] = smp.sm_clock_mhz;
            tr->power[g][k] = smp.power_inst_w;
        }
        tr->n = k + 1;
    }
    tr->done = ok;
    for (int g = 0; g < ng && ok; g++) {
        tr->power_settle_s[g] = pfi_settle_time(tr->t, tr->power[g], tr->n, tr->step_at_s,
                                                PFI_SETTLE_WINDOW_S, PFI_SETTLE_FINAL_S,
                                                PFI_SETTLE_BAND);
        tr->clock_settle_s[g] = pfi_settle_time(tr->t, tr->clock[g], tr->n, tr->step_at_s,
                                                PFI_SETTLE_WINDOW_S, PFI_SETTLE_FINAL_S,
                                                PFI_SETTLE_BAND);
        tr->clock_final_s[g] = pfi_final_time(tr->t, tr->clock[g], tr->n, tr->step_at_s);
    }
    pfi_sim_node_free(node);
    free(e);
}

/* ------------------------------------------------------------------ the whole study */

int pfi_study_execute(const pfi_study_opts *o, pfi_study *s, pfi_err *err)
{
    memset(s, 0, sizeof *s);
    s->opts = *o;
    if (o->n_cuts < 1 || o->n_cuts > PFI_STUDY_MAX_CUTS)
        return pfi_err_set(err, PFI_EINVAL, "between 1 and %d cuts, got %d", PFI_STUDY_MAX_CUTS,
                           o->n_cuts);
    for (int i = 0; i < o->n_cuts; i++) {
        if (!(o->cuts[i] > 0 && o->cuts[i] < 1))
            return pfi_err_set(err, PFI_EINVAL, "cut %g is not a fraction in (0, 1)", o->cuts[i]);
        /* The report labels a cut by its whole percent and summary.json keys it by two
         * decimals: two cuts the same there would print as one row twice and keep one of them
         * in the JSON (the last, under the first's key). */
        for (int k = 0; k < i; k++) {
            char a[32], b[32], ka[32], kb[32];
            snprintf(a, sizeof a, "%.0f%%", 100 * o->cuts[k]);
            snprintf(b, sizeof b, "%.0f%%", 100 * o->cuts[i]);
            snprintf(ka, sizeof ka, "%.2f", o->cuts[k]);
            snprintf(kb, sizeof kb, "%.2f", o->cuts[i]);
            if (!strcmp(a, b) || !strcmp(ka, kb))
                return pfi_err_set(err, PFI_EINVAL,
                                   "cuts %.10g and %.10g are both %s in the report (%s in "
                                   "summary.json): give cuts a whole percent apart",
                                   o->cuts[k], o->cuts[i], a, ka);
        }
    }
    if (o->scenario && strcmp(o->scenario, "grid-day"))
        return pfi_err_set(err, PFI_EINVAL, "unknown scenario '%s' (grid-day)", o->scenario);
    if (!(o->sla > 0 && o->sla < 1))
        return pfi_err_set(err, PFI_EINVAL, "SLA %g is not a slowdown in (0, 1)", o->sla);
    if (o->from_db && access(o->from_db, R_OK) != 0)
        return pfi_err_set(err, PFI_ENOENT, "--db %s: %s (a store written by pfi sweep or "
                           "pfi import)", o->from_db, strerror(errno));
    double t0 = pfi_clock_mono(), t = t0;

    /* The report directory is made once there is something to put in it. */
    int rc = o->from_db ? load_db(s, err) : load_fleet(s, err);
    if (rc == PFI_OK)
        rc = pfi_mkdir_p(o->out_dir, err);
    if (rc == PFI_OK && !o->from_db)
        rc = save_to_store(s, err);
    s->step_s[0] = pfi_clock_mono() - t, t = pfi_clock_mono();
    if (rc == PFI_OK) {
        index_runs(s);
        cost_step(s);
        s->step_s[1] = pfi_clock_mono() - t, t = pfi_clock_mono();
        rc = predictor(s, err);
        s->step_s[2] = pfi_clock_mono() - t, t = pfi_clock_mono();
    }
    if (rc == PFI_OK) {
        rc = allocation(s, err);
        s->step_s[3] = pfi_clock_mono() - t, t = pfi_clock_mono();
    }
    if (rc == PFI_OK)
        gpu_trace(s);
    s->elapsed_s = pfi_clock_mono() - t0;
    if (rc != PFI_OK) {
        pfi_study_free(s);
        return rc;
    }
    return PFI_OK;
}

void pfi_study_free(pfi_study *s)
{
    pfi_grid_day_free(&s->grid.day);
    free(s->runs);
    s->runs = NULL;
    s->n = 0;
}
