/* pfi allocate: power caps for many jobs under a budget (core/alloc.h, core/policy.h).
 * Jobs come from a JSON file (docs/jobs-format.md) or from the runs in a store. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/alloc.h"
#include "core/alloc_curve.h"
#include "core/alloc_pergpu.h"
#include "core/curve.h"
#include "core/policy.h"
#include "core/predict.h"
#include "report/report.h"
#include "study/model_io.h"
#include "store/store.h"
#include "util/units.h"

#define CMD "allocate"

/* A job's per-GPU table (alloc_pergpu.h) and what the allocator reads of it. */
typedef struct pergpu {
    int n_caps;
    double cap_w[PFI_ALLOC_CURVE_PTS], tput[PFI_ALLOC_CURVE_PTS];
    double *clock;            /* gpus x n_caps */
    double *gcaps;            /* gpus x n_caps: cap of each GPU holding the common clock */
    double x[PFI_ALLOC_CURVE_PTS];
    pfi_alloc_curve eq;       /* the mean-cap curve */
    pfi_pergpu_job table;
} pergpu;

/* Everything the jobs point into. */
typedef struct job_set {
    int n;
    pfi_alloc_job *truth;     /* the "curve" of each job (NULL entries' n_points 0 when absent) */
    pfi_alloc_job *pred;      /* the "predicted_curve" (n_points 0 when absent) */
    double *pfi30;            /* given PFI30 (NAN when absent) */
    pfi_alloc_curve *bt, *bp; /* storage of both */
    char **ids;
    json_t *doc;              /* the parsed file (ids point into it) */
    pergpu *pg;               /* per job, --per-gpu only */
} job_set;

static void set_free(job_set *s)
{
    if (s->ids)
        for (int j = 0; j < s->n; j++)
            free(s->ids[j]);
    free(s->ids);
    free(s->truth);
    free(s->pred);
    free(s->pfi30);
    free(s->bt);
    free(s->bp);
    if (s->pg)
        for (int j = 0; j < s->n; j++) {
            free(s->pg[j].clock);
            free(s->pg[j].gcaps);
        }
    free(s->pg);
    if (s->doc)
        json_decref(s->doc);
    memset(s, 0, sizeof *s);
}

static int set_alloc(job_set *s, int n)
{
    s->n = n;
    s->truth = calloc((size_t)n, sizeof *s->truth);
    s->pred = calloc((size_t)n, sizeof *s->pred);
    s->pfi30 = calloc((size_t)n, sizeof *s->pfi30);
    s->bt = calloc((size_t)n, sizeof *s->bt);
    s->bp = calloc((size_t)n, sizeof *s->bp);
    s->ids = calloc((size_t)n, sizeof *s->ids);
    return s->truth && s->pred && s->pfi30 && s->bt && s->bp && s->ids ? PFI_OK : PFI_ENOMEM;
}

static int num(json_t *o, const char *key, double *v, int required, const char *id, pfi_err *err)
{
    json_t *x = json_object_get(o, key);
    if (!x) {
        if (required)
            return pfi_err_set(err, PFI_EINVAL, "job %s: missing \"%s\"", id, key);
        return PFI_OK;
    }
    if (!json_is_number(x))
        return pfi_err_set(err, PFI_EINVAL, "job %s: \"%s\" must be a number", id, key);
    *v = json_number_value(x);
    return PFI_OK;
}

static int read_curve(json_t *o, const char *key, const char *id, pfi_alloc_curve *buf, int *n,
                      pfi_err *err)
{
    *n = 0;
    json_t *c = json_object_get(o, key);
    if (!c)
        return PFI_OK;
    json_t *caps = json_object_get(c, "cap_w"), *tp = json_object_get(c, "tput");
    if (!json_is_array(caps) || !json_is_array(tp))
        return pfi_err_set(err, PFI_EINVAL, "job %s: \"%s\" needs arrays \"cap_w\" and \"tput\"",
                           id, key);
    size_t m = json_array_size(caps);
    if (m != json_array_size(tp))
        return pfi_err_set(err, PFI_EINVAL, "job %s: \"%s\" has %zu caps but %zu throughputs",
                           id, key, m, json_array_size(tp));
    if (m > PFI_ALLOC_CURVE_PTS)
        return pfi_err_set(err, PFI_EINVAL, "job %s: \"%s\" has %zu points (at most %d)", id, key,
                           m, PFI_ALLOC_CURVE_PTS);
    for (size_t i = 0; i < m; i++) {
        json_t *a = json_array_get(caps, i), *b = json_array_get(tp, i);
        if (!json_is_number(a) || !json_is_number(b))
            return pfi_err_set(err, PFI_EINVAL, "job %s: \"%s\" point %zu is not two numbers", id,
                               key, i + 1);
        buf->cap_w[i] = json_number_value(a);
        buf->tput[i] = json_number_value(b);
    }
    *n = (int)m;
    return PFI_OK;
}

/* "per_gpu": {"cap_w": [...], "clock_mhz": [[GPU 0 at each cap], ...], "tput": [...]} */
static int read_pergpu(json_t *o, const char *id, int gpus, pergpu *pg, pfi_err *err)
{
    json_t *p = json_object_get(o, "per_gpu");
    if (!json_is_object(p))
        return pfi_err_set(err, PFI_EINVAL, "job %s: --per-gpu needs a \"per_gpu\" table "
                                            "(docs/jobs-format.md)", id);
    pfi_alloc_curve tmp;
    int n = 0, rc = read_curve(o, "per_gpu", id, &tmp, &n, err);
    if (rc)
        return rc;
    if (n < 2)
        return pfi_err_set(err, PFI_EINVAL, "job %s: per_gpu needs at least 2 caps", id);
    memcpy(pg->cap_w, tmp.cap_w, sizeof tmp.cap_w);
    memcpy(pg->tput, tmp.tput, sizeof tmp.tput);
    pg->n_caps = n;
    if (gpus > 1024)
        return pfi_err_set(err, PFI_EINVAL, "job %s: --per-gpu handles at most 1024 GPUs a job", id);
    json_t *clk = json_object_get(p, "clock_mhz");
    if (!json_is_array(clk) || (int)json_array_size(clk) != gpus)
        return pfi_err_set(err, PFI_EINVAL, "job %s: per_gpu.clock_mhz needs one row per GPU (%d)",
                           id, gpus);
    pg->clock = malloc(sizeof *pg->clock * (size_t)gpus * (size_t)n);
    pg->gcaps = malloc(sizeof *pg->gcaps * (size_t)gpus * (size_t)n);
    if (!pg->clock || !pg->gcaps)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    for (int g = 0; g < gpus; g++) {
        json_t *row = json_array_get(clk, (size_t)g);
        if (!json_is_array(row) || (int)json_array_size(row) != n)
            return pfi_err_set(err, PFI_EINVAL, "job %s: per_gpu.clock_mhz row %d needs %d values",
                               id, g, n);
        for (int k = 0; k < n; k++) {
            json_t *v = json_array_get(row, (size_t)k);
            if (!json_is_number(v))
                return pfi_err_set(err, PFI_EINVAL, "job %s: per_gpu.clock_mhz[%d][%d] is not a "
                                                    "number", id, g, k);
            pg->clock[(size_t)g * (size_t)n + (size_t)k] = json_number_value(v);
        }
    }
    pg->table = (pfi_pergpu_job){gpus, n, pg->cap_w, pg->clock, pg->tput};
    if ((rc = pfi_pergpu_table(&pg->table, pg->gcaps, pg->x, err)))
        return pfi_err_prefix(err, "job %s: ", id);
    return PFI_OK;
}

static int load_file(const char *path, int per_gpu, job_set *s, pfi_err *err)
{
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (!doc && je.line < 1) /* not opened or read: jansson has no line to point at */
        return pfi_err_set(err, errno == ENOENT ? PFI_ENOENT : PFI_EIO, "%s", je.text);
    if (!doc)
        return pfi_err_set(err, PFI_EINVAL, "%s:%d: %s", path, je.line, je.text);
    s->doc = doc;
    json_t *arr = json_is_array(doc) ? doc : json_object_get(doc, "jobs");
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return pfi_err_set(err, PFI_EINVAL, "%s: no \"jobs\" array (docs/jobs-format.md)", path);
    int n = (int)json_array_size(arr);
    if (set_alloc(s, n) || (per_gpu && !(s->pg = calloc((size_t)n, sizeof *s->pg))))
        return pfi_err_set(err, PFI_ENOMEM, "out of memory for %d jobs", n);
    for (int j = 0; j < n; j++) {
        json_t *o = json_array_get(arr, (size_t)j);
        if (!json_is_object(o))
            return pfi_err_set(err, PFI_EINVAL, "%s: job %d is not an object", path, j + 1);
        json_t *idj = json_object_get(o, "id");
        if (!json_is_string(idj))
            return pfi_err_set(err, PFI_EINVAL, "%s: job %d has no string \"id\"", path, j + 1);
        const char *id = json_string_value(idj);
        double gpus = 1, mn = NAN, mx = NAN, p0 = NAN, t0 = NAN, w = 1, sla = NAN, pfi = NAN;
        int rc;
        if ((rc = num(o, "gpus", &gpus, 1, id, err)) || (rc = num(o, "min_cap_w", &mn, 0, id, err)) ||
            (rc = num(o, "max_cap_w", &mx, 0, id, err)) || (rc = num(o, "p0_w", &p0, 0, id, err)) ||
            (rc = num(o, "t0", &t0, 0, id, err)) || (rc = num(o, "weight", &w, 0, id, err)) ||
            (rc = num(o, "sla_max_slowdown", &sla, 0, id, err)) ||
            (rc = num(o, "pfi30", &pfi, 0, id, err)))
            return rc;
        if (gpus != floor(gpus) || gpus < 1 || gpus > 1e6)
            return pfi_err_set(err, PFI_EINVAL, "job %s: \"gpus\" must be a positive integer", id);
        int nt, np;
        if ((rc = read_curve(o, "curve", id, &s->bt[j], &nt, err)) ||
            (rc = read_curve(o, "predicted_curve", id, &s->bp[j], &np, err)))
            return rc;
        if (per_gpu) {
            /* the uniform sweep of the table is the job's true curve */
            if ((rc = read_pergpu(o, id, (int)gpus, &s->pg[j], err)))
                return rc;
            if (nt == 0) {
                s->bt[j] = (pfi_alloc_curve){{0}, {0}};
                memcpy(s->bt[j].cap_w, s->pg[j].cap_w, sizeof s->bt[j].cap_w);
                memcpy(s->bt[j].tput, s->pg[j].tput, sizeof s->bt[j].tput);
                nt = s->pg[j].n_caps;
            }
        }
        if (nt == 0 && np == 0)
            return pfi_err_set(err, PFI_EINVAL, "job %s has no curve (\"curve\" or "
                                                "\"predicted_curve\")", id);
        /* Defaults: the range of the curve, and the baseline drawn at the top of it. */
        const pfi_alloc_curve *any = nt ? &s->bt[j] : &s->bp[j];
        int na = nt ? nt : np;
        if (isnan(mn))
            mn = any->cap_w[0];
        if (isnan(mx))
            mx = any->cap_w[na - 1];
        if (isnan(p0))
            p0 = mx;
        pfi_alloc_job base = {id, (int)gpus, mn, mx, NULL, NULL, 0, p0, t0, sla, w};
        s->truth[j] = base;
        s->truth[j].cap_w = s->bt[j].cap_w;
        s->truth[j].tput = s->bt[j].tput;
        s->truth[j].n_points = nt;
        s->pred[j] = base;
        s->pred[j].cap_w = s->bp[j].cap_w;
        s->pred[j].tput = s->bp[j].tput;
        s->pred[j].n_points = np;
        s->pfi30[j] = pfi;
    }
    return PFI_OK;
}

/* Runs of a store: measured curves are the truth; with a model (pfi model train), each run's
 * baseline telemetry also gives a predicted curve (its other levels are not read for it). */
static int load_db(const char *path, const pfi_model *model, job_set *s, pfi_err *err)
{
    pfi_store *st;
    int rc = pfi_store_open(path, PFI_STORE_READONLY, &st, err);
    if (rc)
        return rc;
    pfi_run_summary *sum = NULL;
    int nr = 0;
    if ((rc = pfi_store_list_runs(st, &sum, &nr, err)))
        goto out;
    if (nr == 0) {
        rc = pfi_err_set(err, PFI_ENOENT, "%s holds no runs", path);
        goto out;
    }
    if ((rc = set_alloc(s, nr)) != PFI_OK) {
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory for %d runs", nr);
        goto out;
    }
    int relative = 0;
    for (int i = 0; i < nr; i++)
        relative |= sum[i].unit != PFI_TOKENS_PER_S;
    pfi_run *run = malloc(sizeof *run);
    pfi_curve *cv = malloc(sizeof *cv);
    int m = 0;
    /* What the jobs draw under a cap, learned from every sweep of the store (alloc_curve.h). */
    pfi_draw_model dm, *draw = NULL;
    if (model && run && cv) {
        double *u = malloc(sizeof *u * (size_t)nr * PFI_MAX_LEVELS);
        double *d = malloc(sizeof *d * (size_t)nr * PFI_MAX_LEVELS);
        int k = 0;
        for (int i = 0; u && d && i < nr; i++) {
            pfi_err e2 = {0};
            if (pfi_store_load_run(st, sum[i].id, run, &e2) || pfi_curve_from_run(run, -1, cv, &e2))
                continue;
            for (int l = 0; l < cv->n; l++)
                if (cv->draw_w[l] > 0) {
                    u[k] = cv->cap_w[l] / cv->p0_w;
                    d[k++] = cv->draw_w[l] / cv->p0_w;
                }
        }
        pfi_draw_model_fit(u ? u : (double[1]){0}, d ? d : (double[1]){0}, u && d ? k : 0, &dm);
        draw = &dm;
        free(u);
        free(d);
    }
    for (int i = 0; run && cv && i < nr; i++) {
        pfi_err e2 = {0};
        if (pfi_store_load_run(st, sum[i].id, run, &e2) ||
            pfi_curve_from_run(run, -1, cv, &e2)) {
            fprintf(stderr, "pfi allocate: skipping run %s: %s\n", sum[i].name, e2.msg);
            continue;
        }
        s->ids[m] = strdup(sum[i].name);
        if (!s->ids[m] ||
            (rc = pfi_alloc_job_from_curve(cv, PFI_VIEW_MEASURED, relative, s->ids[m], 0, 0,
                                           &s->bt[m], &s->truth[m], err)))
            break;
        if (model) {
            if ((rc = pfi_model_predict_run(model, run, cv, err)) ||
                (rc = pfi_alloc_job_from_prediction(cv, draw, relative, s->ids[m],
                                                    s->truth[m].min_cap_w, s->truth[m].max_cap_w,
                                                    &s->bp[m], &s->pred[m], err))) {
                pfi_err_prefix(err, "predicting %s: ", sum[i].name);
                break;
            }
            s->pred[m].p0_w = s->truth[m].p0_w; /* the measured baseline draw */
        }
        s->pfi30[m] = NAN;
        m++;
    }
    if (!run || !cv)
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
    free(run);
    free(cv);
    s->n = m;
    if (!rc && m == 0)
        rc = pfi_err_set(err, PFI_EINVAL, "no run of %s has a usable curve", path);
out:
    free(sum);
    pfi_store_close(st);
    return rc;
}

/* "--sla 0.05" (every job), "--sla ID=5%" (one job). */
static int apply_slas(const pfi_strlist *l, job_set *s, pfi_err *err)
{
    for (int i = 0; i < l->n; i++) {
        const char *spec = l->v[i], *eq = strrchr(spec, '=');
        const char *val = eq ? eq + 1 : spec;
        char *end;
        double v = strtod(val, &end);
        if (end == val || (*end && strcmp(end, "%") != 0))
            return pfi_err_set(err, PFI_EINVAL, "bad --sla '%s' (expected 0.05, 5%% or ID=5%%)",
                               spec);
        if (*end == '%')
            v /= 100;
        int hit = 0;
        for (int j = 0; j < s->n; j++) {
            if (eq && (strncmp(s->truth[j].id, spec, (size_t)(eq - spec)) != 0 ||
                       s->truth[j].id[eq - spec] != '\0'))
                continue;
            s->truth[j].sla = s->pred[j].sla = v;
            hit = 1;
        }
        if (!hit)
            return pfi_err_set(err, PFI_EINVAL, "--sla '%s': no such job", spec);
    }
    return PFI_OK;
}

static json_t *binding(unsigned f)
{
    json_t *a = json_array();
    if (f & PFI_ALLOC_AT_MIN)
        json_array_append_new(a, json_string("min_cap"));
    if (f & PFI_ALLOC_AT_SLA)
        json_array_append_new(a, json_string("sla"));
    if (f & PFI_ALLOC_AT_MAX)
        json_array_append_new(a, json_string("max_cap"));
    if (f & PFI_ALLOC_SLA_RELAXED)
        json_array_append_new(a, json_string("sla_relaxed"));
    if (f & PFI_ALLOC_SLA_DROPPED)
        json_array_append_new(a, json_string("sla_dropped"));
    return a;
}

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

int pfi_cmd_allocate(int argc, char **argv)
{
    const char *budget_s = NULL, *policy_s = "pfi", *jobs_path = NULL, *db = NULL;
    const char *model_path = NULL;
    const char *infeasible_s = "fail";
    double step = 1;
    int as_json = 0, per_gpu = 0;
    pfi_strlist slas = {0};
    const pfi_opt opts[] = {
        {"budget", PFI_OPT_STR, &budget_s, "70%|5600W",
         "power budget: a share of the jobs' baseline draw, or watts on the sum of caps"},
        {"policy", PFI_OPT_STR, &policy_s, "NAME", "equal, pfi (default), oracle, proportional-to-pfi"},
        {"jobs", PFI_OPT_STR, &jobs_path, "FILE", "jobs as JSON (docs/jobs-format.md)"},
        {"db", PFI_OPT_STR, &db, "FILE", "the runs of a store as jobs (measured curves)"},
        {"model", PFI_OPT_STR, &model_path, "FILE",
         "with --db: predict each run's curve from its baseline (pfi model train)"},
        {"sla", PFI_OPT_MULTI, &slas, "[ID=]SLOWDOWN", "max slowdown, e.g. 5% (repeatable)"},
        {"on-infeasible", PFI_OPT_STR, &infeasible_s, "MODE",
         "budget below minimums+SLAs: fail (default), relax-sla, by-weight"},
        {"per-gpu", PFI_OPT_FLAG, &per_gpu, NULL,
         "one cap per GPU holding each job's common clock (needs per_gpu tables)"},
        {"step", PFI_OPT_DOUBLE, &step, "W", "cap grid (default 1 W)"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document on stdout"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi allocate --budget 70%|5600W [--policy NAME] (--jobs FILE | --db FILE) [--sla ...] "
        "[--on-infeasible MODE] [--per-gpu] [--json]",
        "Choose one power cap per job so that the sum of GPUs x cap stays within the budget and "
        "the total (weighted) throughput is the largest.  pfi and proportional-to-pfi read each "
        "job's predicted curve, oracle and equal its true curve.  See docs/allocation.md.",
        opts};
    int rc = pfi_cli_args_none(&spec, argc, argv, "allocate");
    if (rc >= 0)
        return rc;
    pfi_err err = {0};
    int policy = pfi_policy_parse(policy_s);
    if (policy < 0) {
        pfi_err_set(&err, PFI_EINVAL,
                    "unknown policy '%s' (equal, pfi, oracle, proportional-to-pfi)", policy_s);
        return pfi_cli_fail(CMD, &err);
    }
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.step_w = step;
    if (strcmp(infeasible_s, "fail") == 0)
        o.on_infeasible = PFI_INFEASIBLE_FAIL;
    else if (strcmp(infeasible_s, "relax-sla") == 0)
        o.on_infeasible = PFI_INFEASIBLE_RELAX;
    else if (strcmp(infeasible_s, "by-weight") == 0)
        o.on_infeasible = PFI_INFEASIBLE_BY_WEIGHT;
    else {
        pfi_err_set(&err, PFI_EINVAL, "unknown --on-infeasible '%s' (fail, relax-sla, by-weight)",
                    infeasible_s);
        return pfi_cli_fail(CMD, &err);
    }
    if (!budget_s || (!jobs_path == !db)) {
        fprintf(stderr, "pfi allocate: needs --budget and one of --jobs FILE or --db FILE\n");
        return PFI_EXIT_USAGE;
    }
    double bval;
    int is_pct;
    if (pfi_parse_power(budget_s, &bval, &is_pct, &err))
        return pfi_cli_fail(CMD, &err);
    job_set s = {0};
    if (per_gpu && (db || (policy != PFI_POLICY_ORACLE && policy != PFI_POLICY_EQUAL))) {
        fprintf(stderr, "pfi allocate: --per-gpu works on measured per-GPU tables of a jobs file, "
                        "with --policy oracle or equal\n");
        return PFI_EXIT_USAGE;
    }
    pfi_model model;
    if (model_path && pfi_model_load(model_path, &model, &err))
        return pfi_cli_fail(CMD, &err);
    rc = jobs_path ? load_file(jobs_path, per_gpu, &s, &err)
                   : load_db(db, model_path ? &model : NULL, &s, &err);
    if (!rc)
        rc = apply_slas(&slas, &s, &err);
    if (rc) {
        set_free(&s);
        return pfi_cli_fail(CMD, &err);
    }
    /* The policy's view: predictions for pfi and the heuristic, the truth for the others. */
    int wants_pred = policy == PFI_POLICY_PFI || policy == PFI_POLICY_PROPORTIONAL;
    pfi_alloc_job *view = malloc((size_t)s.n * sizeof *view);
    for (int j = 0; view && j < s.n; j++) {
        int has_t = s.truth[j].n_points > 0, has_p = s.pred[j].n_points > 0;
        if (policy == PFI_POLICY_PFI && !has_p) {
            rc = pfi_err_set(&err, PFI_EINVAL,
                             "job %s has no predicted_curve: the pfi policy never reads true "
                             "curves (use --policy oracle, add predicted_curve to the jobs, or "
                             "--model with --db)",
                             s.truth[j].id);
            break;
        }
        if (policy == PFI_POLICY_ORACLE && !has_t) {
            rc = pfi_err_set(&err, PFI_EINVAL, "job %s has no curve: oracle needs true curves",
                             s.truth[j].id);
            break;
        }
        view[j] = (wants_pred && has_p) || !has_t ? s.pred[j] : s.truth[j];
        if (per_gpu) {
            /* the allocator shares out the MEAN cap per GPU; flat above the table's end */
            pergpu *pg = &s.pg[j];
            int m = pfi_pergpu_curve(&pg->table, pg->x, pg->eq.cap_w, pg->eq.tput, NULL);
            view[j].cap_w = pg->eq.cap_w;
            view[j].tput = pg->eq.tput;
            view[j].n_points = m;
            view[j].min_cap_w = fmax(view[j].min_cap_w, pg->eq.cap_w[0]);
            s.truth[j].cap_w = pg->eq.cap_w; /* measured too: the table is a measurement */
            s.truth[j].tput = pg->eq.tput;
            s.truth[j].n_points = m;
        }
    }
    if (!view)
        rc = pfi_err_set(&err, PFI_ENOMEM, "out of memory");
    pfi_alloc_result r = {0};
    double budget = 0;
    if (!rc) {
        budget = is_pct ? pfi_alloc_budget_from_cut(view, s.n, 1.0 - bval) : bval;
        rc = pfi_alloc_policy(policy, view, s.n, s.pfi30, budget, &o, &r, &err);
    }
    if (rc) {
        free(view);
        set_free(&s);
        return pfi_cli_fail(CMD, &err);
    }
    /* Totals: plain sums of throughput, and the objective (weighted), on the policy's curves
     * and, when every job has one, on the true curves. */
    double total = 0, total_true = 0, obj_true = 0;
    int all_true = 1;
    for (int j = 0; j < s.n; j++) {
        double w = isnan(view[j].weight) || view[j].weight == 0 ? 1 : view[j].weight;
        total += r.tput[j];
        if (s.truth[j].n_points >= 2) {
            double t = pfi_alloc_tput_at(&s.truth[j], r.cap_w[j]);
            total_true += t;
            obj_true += w * t;
        } else
            all_true = 0;
    }
    if (as_json) {
        json_t *arr = json_array();
        for (int j = 0; j < s.n; j++) {
            json_t *o1 = json_pack("{s:s, s:i, s:f, s:f, s:f, s:f, s:o, s:o}", "id",
                                   view[j].id, "gpus", view[j].n_gpus, "cap_w", r.cap_w[j],
                                   "power_w", view[j].n_gpus * r.cap_w[j], "floor_w",
                                   r.floor_w[j], "tput", r.tput[j], "sla", num_or_null(r.sla[j]),
                                   "binding", binding(r.flags[j]));
            if (s.truth[j].n_points >= 2)
                json_object_set_new(o1, "tput_true",
                                    json_real(pfi_alloc_tput_at(&s.truth[j], r.cap_w[j])));
            if (per_gpu) {
                double gc[1024];
                json_t *ga = json_array();
                if (view[j].n_gpus <= 1024) {
                    pfi_pergpu_split(&s.pg[j].table, s.pg[j].gcaps, s.pg[j].x, r.cap_w[j], gc);
                    for (int g = 0; g < view[j].n_gpus; g++)
                        json_array_append_new(ga, json_real(gc[g]));
                }
                json_object_set_new(o1, "gpu_caps_w", ga);
            }
            json_array_append_new(arr, o1);
        }
        json_t *doc = json_pack(
            "{s:s, s:f, s:f, s:f, s:f, s:o, s:o, s:o, s:b, s:f, s:f, s:f, s:i, s:I, s:o}",
            "policy", pfi_policy_name(policy), "budget_w", budget, "power_w", r.power_w,
            "total_tput", total, "objective", r.value, "total_tput_true",
            all_true ? json_real(total_true) : json_null(), "objective_true",
            all_true ? json_real(obj_true) : json_null(),
            "upper_bound", num_or_null(r.upper_bound), "budget_binds", r.budget_binds,
            "min_budget_w", r.min_budget_w, "min_budget_nosla_w", r.min_budget_nosla_w,
            "sla_extra", r.sla_extra, "sla_dropped", r.n_sla_dropped, "nodes",
            (json_int_t)r.nodes, "jobs", arr);
        json_object_set_new(doc, "optimal", json_boolean(r.optimal));
        rc = pfi_cli_print_json(doc);
    } else {
        printf("%-32s %5s %8s %8s %12s %12s  %s\n", "job", "gpus", "cap", "floor", "tput",
               "power", "binding");
        for (int j = 0; j < s.n; j++) {
            char b[64] = "";
            unsigned f = r.flags[j];
            snprintf(b, sizeof b, "%s%s%s%s%s", f & PFI_ALLOC_AT_MIN ? "min " : "",
                     f & PFI_ALLOC_AT_SLA ? "sla " : "", f & PFI_ALLOC_AT_MAX ? "max " : "",
                     f & PFI_ALLOC_SLA_RELAXED ? "sla-relaxed " : "",
                     f & PFI_ALLOC_SLA_DROPPED ? "sla-dropped " : "");
            char tp[32];
            printf("%-32.32s %5d %7.0fW %7.0fW %12s %11.0fW  %s\n", view[j].id,
                   view[j].n_gpus, r.cap_w[j], r.floor_w[j],
                   pfi_fmt_fixed(tp, sizeof tp, r.tput[j], 4), view[j].n_gpus * r.cap_w[j], b);
            if (per_gpu && view[j].n_gpus <= 1024) {
                double gc[1024];
                pfi_pergpu_split(&s.pg[j].table, s.pg[j].gcaps, s.pg[j].x, r.cap_w[j], gc);
                printf("%32s per GPU:", "");
                for (int g = 0; g < view[j].n_gpus; g++)
                    printf(" %.1f", gc[g]);
                printf(" W\n");
            }
        }
        char n1[32], n2[32];
        printf("policy %s: power %.0f W of budget %.0f W (%s)\ntotal throughput %s, "
               "objective (weighted) %s",
               pfi_policy_name(policy), r.power_w, budget,
               r.budget_binds ? "budget binds" : "budget slack",
               pfi_fmt_fixed(n1, sizeof n1, total, 6), pfi_fmt_fixed(n2, sizeof n2, r.value, 6));
        if (isfinite(r.upper_bound))
            printf(", %s (bound %s)", r.optimal ? "optimal" : "not proven optimal",
                   pfi_fmt_fixed(n1, sizeof n1, r.upper_bound, 6));
        printf("\n");
        if (all_true && wants_pred)
            printf("on the true curves: total throughput %s, objective %s\n",
                   pfi_fmt_fixed(n1, sizeof n1, total_true, 6),
                   pfi_fmt_fixed(n2, sizeof n2, obj_true, 6));
        if (r.sla_extra > 0)
            printf("every SLA loosened by %.1f%% of slowdown to fit the budget\n",
                   100 * r.sla_extra);
        if (r.n_sla_dropped > 0)
            printf("%d SLA(s) dropped, lowest weight first, to fit the budget\n",
                   r.n_sla_dropped);
        rc = PFI_EXIT_OK;
    }
    pfi_alloc_result_free(&r);
    free(view);
    set_free(&s);
    return rc;
}
