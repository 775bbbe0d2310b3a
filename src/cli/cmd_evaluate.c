/* pfi evaluate: the paper's allocation experiment (core/alloc_eval.h) on the runs of a store,
 * on the public sweeps, or on the simulated fleet.  Every policy's caps are scored on the TRUE
 * (measured) curves; pfi sees only predictions:
 *   --probes 0   the runtime predictor (core/predict.h) from baseline telemetry, cross-fitted:
 *                the runs are split into folds by job group and each fold is predicted by a
 *                model trained on the other folds, so no curve is predicted by a model that saw it
 *   --probes 1|2 baseline + probes (core/probe.h) read on the run's own measured levels, with
 *                the exponent prior taken from the OTHER runs (leave-one-out). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "study/runset.h"
#include "core/alloc_curve.h"
#include "core/alloc_eval.h"
#include "core/curve.h"
#include "core/predict.h"
#include "core/probe.h"
#include "store/store.h"
#include "study/fleet.h"
#include "util/units.h"

#define CMD "evaluate"
#define MAX_CUTS 16
#define FOLDS 5

typedef struct population {
    int n;            /* runs with a usable curve */
    pfi_run *runs;    /* all loaded */
    int nruns;
    int *group;       /* per loaded run: job group (runs of one job configuration share it) */
    pfi_curve *truth; /* per usable job */
    int *run_of;      /* usable job -> run index */
    int skipped;
    char where[256];
} population;

static void pop_free(population *p)
{
    free(p->runs);
    free(p->group);
    free(p->truth);
    free(p->run_of);
    memset(p, 0, sizeof *p);
}

/* "perseus,zeus-plo" holds run source src? (NULL: every source) */
static int source_wanted(const char *list, const char *src)
{
    if (!list)
        return 1;
    size_t n = strlen(src);
    for (const char *t = list; *t;) {
        const char *e = strchr(t, ',');
        size_t len = e ? (size_t)(e - t) : strlen(t);
        if (len == n && strncmp(t, src, n) == 0)
            return 1;
        t += len + (e ? 1 : 0);
    }
    return 0;
}

static int load(const char *db, int public_data, const char *fleet, long long seed,
                const char *sources, population *p, pfi_err *err)
{
    memset(p, 0, sizeof *p);
    if (fleet) {
        pfi_fleet_run *fr = NULL;
        int n = 0;
        pfi_fleet_opts fo = pfi_fleet_defaults();
        int rc = pfi_fleet_build(fleet, (uint64_t)seed, &fo, &fr, &n, err);
        if (rc)
            return rc;
        p->runs = malloc(sizeof *p->runs * (size_t)(n ? n : 1));
        p->group = malloc(sizeof *p->group * (size_t)(n ? n : 1));
        if (!p->runs || !p->group) {
            free(fr);
            return pfi_err_set(err, PFI_ENOMEM, "out of memory");
        }
        for (int i = 0; i < n; i++) {
            p->runs[i] = fr[i].run;
            p->group[i] = fr[i].group;
        }
        p->nruns = n;
        free(fr);
        snprintf(p->where, sizeof p->where, "simulated fleet '%s' (seed %lld)", fleet, seed);
    } else {
        pfi_runset rs;
        int rc = pfi_runset_load(db, public_data, NULL, 0, &rs, err);
        if (rc)
            return rc;
        p->runs = rs.runs;
        p->nruns = rs.n;
        snprintf(p->where, sizeof p->where, "%s", rs.where);
        p->group = malloc(sizeof *p->group * (size_t)(rs.n ? rs.n : 1));
        if (!p->group)
            return pfi_err_set(err, PFI_ENOMEM, "out of memory");
        /* Without a fleet's configuration groups, runs of the same model share a group. */
        for (int i = 0; i < rs.n; i++) {
            p->group[i] = i;
            for (int k = 0; k < i; k++)
                if (p->runs[k].meta.model[0] &&
                    strcmp(p->runs[k].meta.model, p->runs[i].meta.model) == 0) {
                    p->group[i] = p->group[k];
                    break;
                }
        }
    }
    p->truth = malloc(sizeof *p->truth * (size_t)(p->nruns ? p->nruns : 1));
    p->run_of = malloc(sizeof *p->run_of * (size_t)(p->nruns ? p->nruns : 1));
    if (!p->truth || !p->run_of)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    for (int i = 0; i < p->nruns; i++) {
        pfi_err e2 = {0};
        if (!source_wanted(sources, p->runs[i].source))
            continue;
        if (pfi_curve_from_run(&p->runs[i], -1, &p->truth[p->n], &e2)) {
            p->skipped++;
            continue;
        }
        p->run_of[p->n++] = i;
    }
    if (p->n < 2)
        return pfi_err_set(err, PFI_EINVAL, "%s: %d run(s) with a usable curve; need at least 2",
                           p->where, p->n);
    return PFI_OK;
}

/* Writes the characterized runs to a store, so later evaluations (--db) skip the simulation. */
static int save_runs(const char *path, const population *p, pfi_err *err)
{
    pfi_store *st;
    int rc = pfi_store_open(path, PFI_STORE_CREATE, &st, err);
    if (rc)
        return rc;
    for (int i = 0; !rc && i < p->nruns; i++) {
        long long job, run;
        const char *tag[1] = {"source=pfi evaluate --fleet"};
        if ((rc = pfi_store_create_job(st, NULL, NULL, tag, 1, &job, err)) ||
            (rc = pfi_store_create_run(st, job, &p->runs[i], "sim", &run, err)))
            break;
        for (int l = 0; !rc && l < p->runs[i].n_levels; l++) {
            long long lid;
            if ((rc = pfi_store_level_begin(st, err)) ||
                (rc = pfi_store_add_level(st, run, &p->runs[i].levels[l], &lid, err)) ||
                (rc = pfi_store_level_commit(st, err)))
                pfi_store_level_abort(st);
        }
        if (!rc)
            rc = pfi_store_finish_run(st, run, "done", err);
    }
    pfi_store_close(st);
    return rc;
}

/* What a job draws under a cap, learned from the training runs' sweeps (core/alloc_curve.h):
 * the draw/P0 of their levels against cap/P0, never a level of the fold it predicts. */
static int draw_model_out_of_fold(const population *p, const int *fold_of, int fold,
                                  pfi_draw_model *out)
{
    int cap = 0, m = 0;
    for (int j = 0; j < p->n; j++)
        cap += p->truth[j].n;
    double *u = malloc(sizeof *u * (size_t)(cap ? cap : 1));
    double *d = malloc(sizeof *d * (size_t)(cap ? cap : 1));
    if (!u || !d) {
        free(u);
        free(d);
        return PFI_ENOMEM;
    }
    for (int j = 0; j < p->n; j++) {
        if (fold_of[j] == fold)
            continue;
        const pfi_curve *t = &p->truth[j];
        for (int i = 0; i < t->n; i++)
            if (t->p0_w > 0 && t->draw_w[i] > 0) {
                u[m] = t->cap_w[i] / t->p0_w;
                d[m++] = t->draw_w[i] / t->p0_w;
            }
    }
    pfi_draw_model_fit(u, d, m, out);
    free(u);
    free(d);
    return PFI_OK;
}

/* Out-of-fold predictions from the runtime model. */
static int predict_model(const population *p, pfi_curve *pred, pfi_draw_model *draw,
                         char *note, size_t notelen, pfi_err *err)
{
    pfi_train_row *rows = malloc(sizeof *rows * (size_t)p->n);
    int *ok = calloc((size_t)p->n, sizeof *ok);
    pfi_train_row *train = malloc(sizeof *train * (size_t)p->n);
    int rc = PFI_OK, kinds[2] = {0, 0};
    int *fold_of = NULL;
    if (!rows || !ok || !train) {
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    for (int j = 0; j < p->n; j++) {
        pfi_err e2 = {0};
        int r = p->run_of[j];
        ok[j] = pfi_train_row_from_run(&p->runs[r], p->group[r], 0, &rows[j], &e2) == PFI_OK;
    }
    pfi_train_opts to = pfi_train_defaults();
    fold_of = malloc(sizeof *fold_of * (size_t)p->n);
    if (!fold_of) {
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    for (int j = 0; j < p->n; j++)
        fold_of[j] = p->group[p->run_of[j]] % FOLDS;
    for (int f = 0; f < FOLDS; f++) {
        int nt = 0, any = 0;
        for (int j = 0; j < p->n; j++) {
            int fold = p->group[p->run_of[j]] % FOLDS;
            if (fold == f)
                any = 1;
            else if (ok[j])
                train[nt++] = rows[j];
        }
        if (!any)
            continue;
        pfi_model m;
        if ((rc = pfi_model_train(train, nt, &to, &m, err))) {
            pfi_err_prefix(err, "training the predictor on %d runs (fold %d): ", nt, f + 1);
            goto out;
        }
        kinds[m.kind == PFI_MODEL_PHYSICS]++;
        pfi_draw_model dm;
        if (draw_model_out_of_fold(p, fold_of, f, &dm)) {
            rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
            goto out;
        }
        for (int j = 0; j < p->n; j++) {
            if (p->group[p->run_of[j]] % FOLDS != f)
                continue;
            draw[j] = dm;
            if ((rc = pfi_model_predict_run(&m, &p->runs[p->run_of[j]], &pred[j], err))) {
                pfi_err_prefix(err, "predicting %s: ", p->runs[p->run_of[j]].name);
                goto out;
            }
        }
    }
    snprintf(note, notelen,
             "runtime predictor, %d folds by job group (ridge chosen %d, physics %d times), "
             "draw under a cap learned on the training folds",
             FOLDS, kinds[0], kinds[1]);
out:
    free(fold_of);
    free(rows);
    free(ok);
    free(train);
    return rc;
}

/* depths: the same for every job, or per_job (n x probes, may be NULL) one set per job. */
static int predict_probes(const population *p, int probes, const double *depths,
                          const double *per_job, pfi_curve *pred, pfi_draw_model *draw,
                          char *note, size_t notelen, pfi_err *err)
{
    int flat = 0;
    for (int j = 0; j < p->n; j++) {
        /* The exponent prior must not come from the curve it predicts. */
        double b = pfi_probe_median_b(p->truth, p->n, j);
        if (!isfinite(b))
            b = PFI_PROBE_B_PRIOR;
        pfi_err e2 = {0};
        int used[2] = {-1, -1};
        const pfi_curve *t = &p->truth[j];
        const double *dj = per_job ? per_job + (size_t)j * (size_t)probes : depths;
        if (pfi_probe_curve(t, dj, probes, b, &pred[j], used, &e2) == PFI_OK) {
            /* what the probe measured besides throughput: the draw under its cap */
            int u = used[probes - 1];
            pfi_draw_model_ratio(u >= 0 && t->cap_w[u] > 0 ? t->draw_w[u] / t->cap_w[u] : 1,
                                 &draw[j]);
            continue;
        }
        pfi_draw_model_ratio(1, &draw[j]);
        /* A probe that sheds no power (the job draws less than any cap it may get) says that
         * capping costs this job nothing over its range: predict no slowdown. */
        pfi_fit none = {PFI_FAM_POWER, {0, 1, 0}, NAN, 0};
        int rc = pfi_curve_from_fit(&none, t->t0, t->p0_w, t->cap0_w, t->min_cap_w, t->max_cap_w,
                                    t->n_gpus, t->r_max, &pred[j], err);
        if (rc)
            return pfi_err_prefix(err, "probing %s: ", p->runs[p->run_of[j]].name);
        flat++;
    }
    char d[64];
    if (per_job)
        snprintf(d, sizeof d, "at each job's equal share of the cut");
    else if (probes == 1)
        snprintf(d, sizeof d, "%.2f", depths[0]);
    else
        snprintf(d, sizeof d, "%.2f, %.2f", depths[0], depths[1]);
    snprintf(note, notelen,
             "baseline + %d probe%s (depth %s), exponent prior leave-one-out; %d job(s) whose "
             "probe shed no power predicted flat",
             probes, probes > 1 ? "s" : "", d, flat);
    return PFI_OK;
}

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

int pfi_cmd_evaluate(int argc, char **argv)
{
    const char *db = NULL, *cuts_s = "0.1,0.2,0.3,0.4,0.5", *pol_s = "equal,pfi,oracle";
    const char *fleet = NULL, *depth_s = NULL, *sources = NULL, *save_db = NULL;
    int public_data = 0, probes = 1, as_json = 0, seed = 1, per_job = 0;
    double step = 1;
    const pfi_opt opts[] = {
        {"db", PFI_OPT_STR, &db, "FILE", "the store whose runs are the jobs (default $PFI_DB)"},
        {"public", PFI_OPT_FLAG, &public_data, NULL,
         "the public measured sweeps of $PFI_DATA_DIR, imported in memory"},
        {"fleet", PFI_OPT_STR, &fleet, "paper|small", "the simulated fleet, characterized"},
        {"seed", PFI_OPT_INT, &seed, "N", "fleet seed (default 1)"},
        {"save-db", PFI_OPT_STR, &save_db, "FILE",
         "with --fleet: also store the characterized runs (reuse them with --db FILE)"},
        {"source", PFI_OPT_STR, &sources, "LIST",
         "only runs of these sources, e.g. perseus,zeus-nsdi (default all)"},
        {"cuts", PFI_OPT_STR, &cuts_s, "LIST", "power cuts (default 0.1,0.2,0.3,0.4,0.5)"},
        {"policies", PFI_OPT_STR, &pol_s, "LIST",
         "equal,pfi,oracle,proportional-to-pfi (default equal,pfi,oracle)"},
        {"probes", PFI_OPT_INT, &probes, "0|1|2",
         "what pfi sees: 0 the telemetry predictor, 1 or 2 baseline + probes (default 1)"},
        {"probe-depth", PFI_OPT_STR, &depth_s, "D[,D2]|auto",
         "probe depths as power shed (default: core/probe.h's, 0.40; two probes 0.20,0.40); "
         "auto: each job probed at its equal share of each cut"},
        {"step", PFI_OPT_DOUBLE, &step, "W", "cap grid (default 1 W)"},
        {"per-job", PFI_OPT_FLAG, &per_job, NULL,
         "JSON: each job's cap and true throughput under every policy at every cut"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document on stdout"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi evaluate [--db FILE | --public | --fleet paper|small] [--cuts LIST] "
        "[--policies LIST] [--probes 0|1|2] [--json]",
        "The allocation experiment: at each cut of the jobs' baseline draw, allocate caps with "
        "each policy and score them on the true curves.  gap_recovered = (T_pfi - T_equal) / "
        "(T_oracle - T_equal).  Runs without tokens/s count GPU-weighted relative throughput.",
        opts};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    if (npos > 0) {
        fprintf(stderr, "pfi evaluate: unexpected argument '%s'\n", pos[0]);
        return PFI_EXIT_USAGE;
    }
    pfi_err err = {0};
    if ((db != NULL) + public_data + (fleet != NULL) > 1) {
        fprintf(stderr, "pfi evaluate: --db, --public and --fleet exclude each other\n");
        return PFI_EXIT_USAGE;
    }
    if (probes < 0 || probes > 2) {
        fprintf(stderr, "pfi evaluate: --probes must be 0, 1 or 2\n");
        return PFI_EXIT_USAGE;
    }
    double depths[2] = {PFI_PROBE_DEPTH, 0};
    if (probes == 2)
        depths[0] = 0.2, depths[1] = 0.4;
    int auto_depth = depth_s && strcmp(depth_s, "auto") == 0;
    if (depth_s && !auto_depth) {
        int nd = 0;
        if (pfi_parse_double_list(depth_s, depths, 2, &nd, &err))
            return pfi_cli_fail(CMD, &err);
        if (nd != probes || !(depths[0] > 0 && depths[0] < 1) ||
            (nd == 2 && !(depths[1] > 0 && depths[1] < 1))) {
            fprintf(stderr, "pfi evaluate: --probe-depth needs %d depth(s) in (0, 1)\n", probes);
            return PFI_EXIT_USAGE;
        }
    }
    double cuts[MAX_CUTS];
    int ncuts = 0;
    if (pfi_parse_double_list(cuts_s, cuts, MAX_CUTS, &ncuts, &err))
        return pfi_cli_fail(CMD, &err);
    for (int c = 0; c < ncuts; c++)
        if (!(cuts[c] > 0 && cuts[c] < 1)) {
            fprintf(stderr, "pfi evaluate: cut %g must be in (0, 1)\n", cuts[c]);
            return PFI_EXIT_USAGE;
        }
    int policies[PFI_POLICY_COUNT], npol = 0;
    {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", pol_s);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            int p = pfi_policy_parse(t);
            if (p < 0) {
                fprintf(stderr, "pfi evaluate: unknown policy '%s' (equal, pfi, oracle, "
                                "proportional-to-pfi)\n", t);
                return PFI_EXIT_USAGE;
            }
            if (npol < PFI_POLICY_COUNT)
                policies[npol++] = p;
        }
    }
    population p;
    if ((rc = load(db, public_data, fleet, seed, sources, &p, &err))) {
        pop_free(&p);
        return pfi_cli_fail(CMD, &err);
    }
    if (save_db && (!fleet || (rc = save_runs(save_db, &p, &err)))) {
        if (!fleet)
            pfi_err_set(&err, PFI_EINVAL, "--save-db stores a simulated fleet (--fleet)");
        pop_free(&p);
        return pfi_cli_fail(CMD, &err);
    }
    int relative = 0;
    for (int j = 0; j < p.n; j++)
        relative |= p.runs[p.run_of[j]].unit != PFI_TOKENS_PER_S;
    pfi_curve *pred = calloc((size_t)p.n, sizeof *pred);
    pfi_draw_model *draw = calloc((size_t)p.n, sizeof *draw);
    pfi_alloc_job *tj = calloc((size_t)p.n, sizeof *tj), *pj = calloc((size_t)p.n, sizeof *pj);
    pfi_alloc_curve *tb = calloc((size_t)p.n, sizeof *tb), *pb = calloc((size_t)p.n, sizeof *pb);
    pfi_eval_cell *cells = calloc((size_t)ncuts * PFI_POLICY_COUNT, sizeof *cells);
    double *caps = per_job ? calloc((size_t)ncuts * PFI_POLICY_COUNT * (size_t)p.n, sizeof *caps)
                           : NULL;
    char note[256] = "";
    if (!pred || !draw || !tj || !pj || !tb || !pb || !cells || (per_job && !caps))
        rc = pfi_err_set(&err, PFI_ENOMEM, "out of memory");
    for (int j = 0; !rc && j < p.n; j++)
        rc = pfi_alloc_job_from_curve(&p.truth[j], PFI_VIEW_MEASURED, relative,
                                      p.runs[p.run_of[j]].name, 0, 0, &tb[j], &tj[j], &err);
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.step_w = step;
    /* With auto depths the probes depend on the cut, so each cut is its own experiment. */
    int rounds = auto_depth && probes > 0 ? ncuts : 1;
    double *pj_depth = auto_depth ? calloc((size_t)p.n * 2, sizeof *pj_depth) : NULL;
    if (auto_depth && !pj_depth && !rc)
        rc = pfi_err_set(&err, PFI_ENOMEM, "out of memory");
    for (int round = 0; !rc && round < rounds; round++) {
        if (auto_depth && probes > 0) {
            /* the cap the job would get from an equal cut: probe there */
            pfi_alloc_result eq;
            pfi_err e2 = {0};
            double b = pfi_alloc_budget_from_cut(tj, p.n, cuts[round]);
            int erc = pfi_alloc_equal(tj, p.n, b, &o, &eq, &e2);
            for (int j = 0; j < p.n; j++) {
                double d = erc ? cuts[round] : 1.0 - eq.cap_w[j] / tj[j].p0_w;
                d = d < 0.05 ? 0.05 : d > 0.9 ? 0.9 : d;
                pj_depth[2 * j] = probes == 2 ? 0.5 * d : d;
                pj_depth[2 * j + 1] = d;
            }
            if (!erc)
                pfi_alloc_result_free(&eq);
            /* per_job rows are probes wide */
            if (probes == 1)
                for (int j = 0; j < p.n; j++)
                    pj_depth[j] = pj_depth[2 * j + 1];
        }
        rc = probes == 0 ? predict_model(&p, pred, draw, note, sizeof note, &err)
                         : predict_probes(&p, probes, depths, auto_depth ? pj_depth : NULL, pred,
                                          draw, note, sizeof note, &err);
        for (int j = 0; !rc && j < p.n; j++) {
            /* a prediction is read inside what was measured: no policy leaves that range */
            rc = pfi_alloc_job_from_prediction(&pred[j], &draw[j], relative, tj[j].id,
                                               tj[j].min_cap_w, tj[j].max_cap_w, &pb[j], &pj[j],
                                               &err);
            /* the baseline the budget is cut from is measured, so both views share it */
            pj[j].p0_w = tj[j].p0_w;
        }
        int c0 = rounds > 1 ? round : 0, nc = rounds > 1 ? 1 : ncuts;
        if (!rc)
            rc = pfi_alloc_experiment(tj, pj, p.n, cuts + c0, nc, policies, npol, &o,
                                      cells + (size_t)c0 * PFI_POLICY_COUNT,
                                      caps ? caps + (size_t)c0 * PFI_POLICY_COUNT * (size_t)p.n
                                           : NULL,
                                      &err);
    }
    free(pj_depth);
    if (rc) {
        free(pred), free(draw), free(tj), free(pj), free(tb), free(pb), free(cells), free(caps);
        pop_free(&p);
        return pfi_cli_fail(CMD, &err);
    }
    long gpus = 0;
    for (int j = 0; j < p.n; j++)
        gpus += tj[j].n_gpus;
    const char *unit = relative ? "GPU-weighted relative throughput" : "tokens/s";
    if (as_json) {
        json_t *arr = json_array();
        for (int c = 0; c < ncuts; c++) {
            pfi_eval_cell *row = cells + (size_t)c * PFI_POLICY_COUNT;
            if (row[PFI_POLICY_EQUAL].infeasible) {
                json_array_append_new(arr, json_pack("{s:f, s:f, s:b, s:f}", "cut", cuts[c],
                                                     "budget_w", row[0].budget_w, "infeasible",
                                                     1, "min_budget_w", row[0].min_budget_w));
                continue;
            }
            json_t *pol = json_object();
            for (int k = 0; k < npol; k++) {
                pfi_eval_cell *e = &row[policies[k]];
                json_t *o1 = json_pack("{s:f, s:f, s:f}", "total_throughput",
                                       e->total_throughput, "per_job_gain_vs_equal",
                                       e->per_job_gain_vs_equal, "power_w", e->power_w);
                if (policies[k] != PFI_POLICY_EQUAL && policies[k] != PFI_POLICY_ORACLE)
                    json_object_set_new(o1, "gap_recovered", jnum(e->gap_recovered));
                json_object_set_new(pol, pfi_policy_name(policies[k]), o1);
            }
            json_array_append_new(
                arr, json_pack("{s:f, s:f, s:f, s:o}", "cut", cuts[c], "budget_w",
                               row[PFI_POLICY_EQUAL].budget_w, "oracle_gain_over_equal",
                               row[PFI_POLICY_ORACLE].total_throughput -
                                   row[PFI_POLICY_EQUAL].total_throughput,
                               "policies", pol));
        }
        json_t *jobs = per_job ? json_array() : NULL;
        for (int j = 0; per_job && j < p.n; j++) {
            json_t *per = json_array();
            for (int c = 0; c < ncuts; c++) {
                json_t *pc = json_object();
                for (int k = 0; k < npol; k++) {
                    if (cells[(size_t)c * PFI_POLICY_COUNT + (size_t)policies[k]].infeasible)
                        continue;
                    double cap = caps[((size_t)c * PFI_POLICY_COUNT + (size_t)policies[k]) *
                                          (size_t)p.n + (size_t)j];
                    json_object_set_new(
                        pc, pfi_policy_name(policies[k]),
                        json_pack("{s:f, s:f, s:f}", "cap_w", cap, "tput_true",
                                  pfi_alloc_tput_at(&tj[j], cap), "tput_seen",
                                  pfi_alloc_tput_at(
                                      (policies[k] == PFI_POLICY_PFI ||
                                       policies[k] == PFI_POLICY_PROPORTIONAL)
                                          ? &pj[j]
                                          : &tj[j],
                                      cap)));
                }
                json_array_append_new(per, json_pack("{s:f, s:o}", "cut", cuts[c], "policies", pc));
            }
            json_array_append_new(jobs, json_pack("{s:s, s:i, s:f, s:f, s:f, s:o}", "id", tj[j].id,
                                                  "gpus", tj[j].n_gpus, "p0_w", tj[j].p0_w,
                                                  "min_cap_w", tj[j].min_cap_w, "max_cap_w",
                                                  tj[j].max_cap_w, "cuts", per));
        }
        json_t *doc = json_pack("{s:s, s:i, s:i, s:I, s:s, s:i, s:s, s:o}", "source", p.where,
                                "jobs", p.n, "skipped_runs", p.skipped, "gpus",
                                (json_int_t)gpus, "unit", unit, "probes", probes, "prediction",
                                note, "cuts", arr);
        if (jobs)
            json_object_set_new(doc, "jobs", jobs);
        rc = pfi_cli_print_json(doc);
    } else {
        printf("%s: %d jobs (%ld GPUs), %d run(s) skipped without a usable curve\n", p.where,
               p.n, gpus, p.skipped);
        printf("throughput: %s; pfi sees: %s\n\n", unit, note);
        printf("%5s  %-20s %16s %14s %10s\n", "cut", "policy", "total", "gain/job", "gap rec.");
        for (int c = 0; c < ncuts; c++) {
            pfi_eval_cell *row = cells + (size_t)c * PFI_POLICY_COUNT;
            if (row[PFI_POLICY_EQUAL].infeasible) {
                printf("%4.0f%%  infeasible: budget %.0f W is below the %.0f W the jobs' "
                       "minimum caps need\n",
                       100 * cuts[c], row[0].budget_w, row[0].min_budget_w);
                continue;
            }
            for (int k = 0; k < npol; k++) {
                pfi_eval_cell *e = &row[policies[k]];
                char gap[16] = "";
                if (policies[k] != PFI_POLICY_EQUAL && policies[k] != PFI_POLICY_ORACLE)
                    snprintf(gap, sizeof gap, isfinite(e->gap_recovered) ? "%.1f%%" : "n/a",
                             100 * e->gap_recovered);
                printf("%4.0f%%  %-20s %16.6g %14.4g %10s\n", 100 * cuts[c],
                       pfi_policy_name(policies[k]), e->total_throughput,
                       e->per_job_gain_vs_equal, gap);
            }
        }
        rc = PFI_EXIT_OK;
    }
    free(pred), free(draw), free(tj), free(pj), free(tb), free(pb), free(cells), free(caps);
    pop_free(&p);
    return rc;
}
