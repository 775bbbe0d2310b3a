/* SPDX-License-Identifier: Apache-2.0 */
/* pfi allocate: power caps for many jobs under a budget (core/alloc.h, core/policy.h).
 * Jobs come from a JSON file (docs/jobs-format.md) or from the runs in a store (store/jobs.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/alloc.h"
#include "core/alloc_set.h"
#include "core/policy.h"
#include "report/report.h"
#include "store/jobs.h"
#include "study/model_io.h"
#include "util/budget.h"
#include "util/json.h"
#include "util/text.h"
#include "util/units.h"

#define CMD "allocate"
/* What a budget's share is of here: a jobs file has no default limits. */
#define ALLOC_BUDGET_REF "the jobs' baseline draw, GPUs x baseline power"

static void on_run_told(void *ctx, const char *run, int skipped, const char *why)
{
    fprintf(stderr, "pfi allocate: %s %s: %s\n", skipped ? "skipping run" : "run", run, why);
}

/* "--sla 0.05" (every job), "--sla ID=5%" (one job).  Every job's first, then each job's own,
 * so that one job's SLA wins in any order: given after it, a --sla for every job replaced it.
 * Two values for every job, or for one job, are refused: one of them would be lost. */
static int apply_slas(const pfi_strlist *l, pfi_alloc_set *s, pfi_err *err)
{
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < l->n; i++) {
            const char *spec = l->v[i], *eq = strrchr(spec, '=');
            if ((eq != NULL) != pass)
                continue;
            for (int k = 0; k < i; k++) {
                const char *q = strrchr(l->v[k], '=');
                if ((q != NULL) == pass && (!eq || (q - l->v[k] == eq - spec &&
                                                    !strncmp(l->v[k], spec, (size_t)(eq - spec)))))
                    return pfi_err_set(err, PFI_EINVAL, "--sla '%s' after --sla '%s': %s given "
                                       "twice", spec, l->v[k], eq ? "one job's SLA" : "the SLA "
                                       "of every job");
            }
            const char *val = eq ? eq + 1 : spec;
            double v;
            pfi_err e = {0};
            if (pfi_parse_slowdown(val, &v, &e) != PFI_OK)
                return pfi_err_set(err, PFI_EINVAL, "bad --sla '%s' (%s; ID=5%% for one job)",
                                   spec, e.msg);
            int hit = 0;
            for (int j = 0; j < s->n; j++) {
                if (eq && (strncmp(s->truth[j].id, spec, (size_t)(eq - spec)) != 0 ||
                           s->truth[j].id[eq - spec] != '\0'))
                    continue;
                hit = 1;
                /* The SLA of every job is the default of those without one: a jobs file's
                 * sla_max_slowdown is a hard SLA, and a 2% one became 50% without a word. */
                if (!eq && !isnan(s->truth[j].sla))
                    continue;
                s->truth[j].sla = s->pred[j].sla = v;
            }
            if (!hit)
                return pfi_err_set(err, PFI_EINVAL, "--sla '%s': no such job", spec);
        }
    }
    return PFI_OK;
}

/* Whether the inputs named go together (else said, and the caller exits 2). */
static int inputs_agree(const char *budget_s, const char *jobs_path, const char *db,
                        const char *model_path, int per_gpu, int policy)
{
    if (!budget_s || (!jobs_path == !db)) {
        fprintf(stderr, "pfi allocate: needs --budget and one of --jobs FILE or --db FILE\n");
        return 0;
    }
    if (model_path && jobs_path) { /* it was read and then not used */
        fprintf(stderr, "pfi allocate: --model predicts the curves of the runs in --db; a --jobs "
                        "file gives each job's curve itself\n");
        return 0;
    }
    if (per_gpu && (db || (policy != PFI_POLICY_ORACLE && policy != PFI_POLICY_EQUAL))) {
        fprintf(stderr, "pfi allocate: --per-gpu works on measured per-GPU tables of a jobs file, "
                        "with --policy oracle or equal\n");
        return 0;
    }
    return 1;
}

/* The jobs, from the file or the store (with the model's predictions), with the --sla given. */
static int load_jobs(const char *jobs_path, const char *db, const char *model_path, int per_gpu,
                     const pfi_strlist *slas, pfi_alloc_set *s, pfi_err *err)
{
    pfi_model model;
    int rc = model_path ? pfi_model_load(model_path, &model, err) : PFI_OK;
    if (!rc)
        rc = jobs_path ? pfi_jobs_file_load(jobs_path, per_gpu, s, err)
                       : pfi_jobs_store_load(db, model_path ? &model : NULL, s, on_run_told, NULL, err);
    return rc ? rc : apply_slas(slas, s, err);
}

/* The constraints that hold a job's cap, as names. */
static void binding(pfi_jw *w, unsigned f)
{
    pfi_jw_array(w);
    if (f & PFI_ALLOC_AT_MIN)
        pfi_jw_string(w, "min_cap");
    if (f & PFI_ALLOC_AT_SLA)
        pfi_jw_string(w, "sla");
    if (f & PFI_ALLOC_AT_MAX)
        pfi_jw_string(w, "max_cap");
    if (f & PFI_ALLOC_SLA_RELAXED)
        pfi_jw_string(w, "sla_relaxed");
    if (f & PFI_ALLOC_SLA_DROPPED)
        pfi_jw_string(w, "sla_dropped");
    pfi_jw_end(w);
}

/* What is printed: the jobs, the curves the policy read, its allocation and their totals. */
typedef struct alloc_out {
    int policy, per_gpu;
    double budget, reference; /* reference: the jobs' baseline draw, when a share was given */
    pfi_budget text;
    const pfi_alloc_set *s;
    const pfi_alloc_job *view;
    const pfi_alloc_result *r;
    pfi_alloc_totals t;
} alloc_out;

/* Job j of the allocation as JSON, written straight out (100k jobs are never held as JSON).
 * A real that is not finite fails the job as building it with jansson did, except tput_true and
 * a per-GPU cap, which were then left out. */
static void job_json(void *ctx, int j, pfi_jw *w)
{
    const alloc_out *a = ctx;
    const pfi_alloc_set *s = a->s;
    const pfi_alloc_job *view = a->view;
    const pfi_alloc_result *r = a->r;
    pfi_jw_object(w);
    pfi_jw_key(w, "id");
    pfi_jw_string(w, view[j].id);
    pfi_jw_key(w, "gpus");
    pfi_jw_integer(w, view[j].n_gpus);
    pfi_jw_key(w, "cap_w");
    pfi_jw_real(w, r->cap_w[j]);
    pfi_jw_key(w, "power_w");
    pfi_jw_real(w, view[j].n_gpus * r->cap_w[j]);
    pfi_jw_key(w, "floor_w");
    pfi_jw_real(w, r->floor_w[j]);
    pfi_jw_key(w, "tput");
    pfi_jw_real(w, r->tput[j]);
    pfi_jw_key(w, "sla");
    pfi_jw_num(w, r->sla[j]);
    pfi_jw_key(w, "binding");
    binding(w, r->flags[j]);
    double tt = s->truth[j].n_points >= 2 ? pfi_alloc_tput_at(&s->truth[j], r->cap_w[j]) : NAN;
    if (isfinite(tt)) {
        pfi_jw_key(w, "tput_true");
        pfi_jw_real(w, tt);
    }
    if (a->per_gpu) {
        double gc[1024];
        pfi_jw_key(w, "gpu_caps_w");
        pfi_jw_array(w);
        if (view[j].n_gpus <= 1024) {
            pfi_pergpu_split(&s->pg[j].table, s->pg[j].gcaps, s->pg[j].x, r->cap_w[j], gc);
            for (int g = 0; g < view[j].n_gpus; g++)
                if (isfinite(gc[g]))
                    pfi_jw_real(w, gc[g]);
        }
        pfi_jw_end(w);
    }
    pfi_jw_end(w);
}

static int print_json(const alloc_out *a)
{
    const pfi_alloc_result *r = a->r;
    json_t *arr = json_array(); /* the jobs are written in its place */
    const pfi_alloc_totals *t = &a->t;
    json_t *doc = json_pack(
        "{s:s, s:f, s:f, s:f, s:f, s:o, s:o, s:o, s:b, s:o, s:o, s:f, s:i, s:I, s:o}", "policy",
        pfi_policy_name(a->policy), "budget_w", a->budget, "power_w", r->power_w, "total_tput",
        t->tput, "objective", r->value, "total_tput_true",
        t->all_true ? json_real(t->tput_true) : json_null(), "objective_true",
        t->all_true ? json_real(t->objective_true) : json_null(), "upper_bound",
        pfi_json_num(r->upper_bound), "budget_binds", r->budget_binds, "min_budget_w",
        /* infinite when an SLA meets no cap: jansson refuses it, and the document was lost */
        pfi_json_num(r->min_budget_w), "min_budget_nosla_w", pfi_json_num(r->min_budget_nosla_w),
        "sla_extra", r->sla_extra, "sla_dropped", r->n_sla_dropped, "nodes",
        (json_int_t)r->nodes, "jobs", arr);
    if (!doc) {
        fprintf(stderr, "pfi allocate: out of memory writing the answer\n");
        return PFI_EXIT_FAIL;
    }
    json_object_set_new(doc, "optimal", json_boolean(r->optimal));
    if (a->text.is_share)
        json_object_set_new(doc, "budget_reference",
                            json_pack("{s:s, s:f, s:f}", "of", ALLOC_BUDGET_REF, "watts",
                                      a->reference, "share", a->text.value));
    return pfi_cli_print_json_items(doc, "jobs", job_json, (void *)a, a->s->n);
}

/* The job column: as wide as the longest id, at least 32 and at most 64 characters; a longer id
 * keeps its head and tail around a visible "..." (as pfi index does).  Cut at 32, the ids of
 * the public store's zeus-nsdi/A40/shufflenetv2 cifar100 bs1024, bs128, ... runs all read the
 * same, and no row said which job its cap was for. */
#define ID_COL_MIN 32
#define ID_COL_MAX 64

static int id_width(const pfi_alloc_job *view, int n)
{
    size_t w = ID_COL_MIN;
    for (int j = 0; j < n && w < ID_COL_MAX; j++) {
        size_t len = (size_t)pfi_text_cols(view[j].id);
        w = len > w ? len : w;
    }
    return w < ID_COL_MAX ? (int)w : ID_COL_MAX;
}

/* Watts as the grid gives them: whole on the default 1 W grid, else with the fewest decimals
 * (up to 6) that hold them (a 0.1 W cap read "0W" beside "power 0.1 W"). */
static void watts_cell(char c[48], double w)
{
    int d = 0;
    while (d < 6 && fabs(round(w * pow(10, d)) / pow(10, d) - w) > 1e-9 * fmax(1, fabs(w)))
        d++;
    snprintf(c, 48, "%.*fW", d, w);
}

/* One row's numeric cells: GPUs, cap, floor, throughput, power. */
enum { C_GPUS, C_CAP, C_FLOOR, C_TPUT, C_POWER, C_N };
static void row_cells(const alloc_out *a, int j, char c[C_N][48])
{
    const pfi_alloc_job *v = &a->view[j];
    snprintf(c[C_GPUS], 48, "%d", v->n_gpus);
    watts_cell(c[C_CAP], a->r->cap_w[j]);
    watts_cell(c[C_FLOOR], a->r->floor_w[j]);
    pfi_fmt_fixed(c[C_TPUT], 48, a->r->tput[j], 4);
    watts_cell(c[C_POWER], v->n_gpus * a->r->cap_w[j]);
}

/* Each numeric column as wide as its widest cell, never narrower than before (5, 8, 8, 12, 12:
 * a table that fitted is unchanged): 100,000 GPUs or a 13-digit throughput pushed the rest of
 * the row right, out from under the headers. */
static void col_widths(const alloc_out *a, int cw[C_N])
{
    static const int min_w[C_N] = {5, 8, 8, 12, 12};
    char c[C_N][48];
    memcpy(cw, min_w, sizeof min_w);
    for (int j = 0; j < a->s->n; j++) {
        row_cells(a, j, c);
        for (int k = 0; k < C_N; k++) {
            int l = (int)strlen(c[k]);
            cw[k] = l > cw[k] ? l : cw[k];
        }
    }
}

static void print_table(const alloc_out *a)
{
    const pfi_alloc_set *s = a->s;
    const pfi_alloc_job *view = a->view;
    const pfi_alloc_result *r = a->r;
    int w = id_width(view, s->n), cw[C_N];
    col_widths(a, cw);
    printf("%-*s %*s %*s %*s %*s %*s  %s\n", w, "job", cw[C_GPUS], "gpus", cw[C_CAP], "cap",
           cw[C_FLOOR], "floor", cw[C_TPUT], "tput", cw[C_POWER], "power", "binding");
    for (int j = 0; j < s->n; j++) {
        char b[64] = "";
        unsigned f = r->flags[j];
        snprintf(b, sizeof b, "%s%s%s%s%s", f & PFI_ALLOC_AT_MIN ? "min " : "",
                 f & PFI_ALLOC_AT_SLA ? "sla " : "", f & PFI_ALLOC_AT_MAX ? "max " : "",
                 f & PFI_ALLOC_SLA_RELAXED ? "sla-relaxed " : "",
                 f & PFI_ALLOC_SLA_DROPPED ? "sla-dropped " : "");
        char c[C_N][48], id[4 * ID_COL_MAX + 1]; /* UTF-8: up to 4 bytes a character */
        row_cells(a, j, c);
        const char *cell = pfi_text_fit(view[j].id, w, id, sizeof id);
        printf("%-*s %*s %*s %*s %*s %*s  %s\n", pfi_text_pad(cell, w), cell,
               cw[C_GPUS], c[C_GPUS], cw[C_CAP], c[C_CAP], cw[C_FLOOR], c[C_FLOOR], cw[C_TPUT],
               c[C_TPUT], cw[C_POWER], c[C_POWER], b);
        if (a->per_gpu && view[j].n_gpus <= 1024) {
            double gc[1024];
            pfi_pergpu_split(&s->pg[j].table, s->pg[j].gcaps, s->pg[j].x, r->cap_w[j], gc);
            printf("%*s per GPU:", w, "");
            for (int g = 0; g < view[j].n_gpus; g++)
                printf(" %.1f", gc[g]);
            printf(" W\n");
        }
    }
    const pfi_alloc_totals *t = &a->t;
    char n1[32], n2[32];
    char pw[32], bw[32];
    pfi_alloc_watts_text(pw, r->power_w);
    pfi_alloc_watts_text(bw, a->budget);
    printf("policy %s: power %s W of budget %s W (%s)\ntotal throughput %s, "
           "objective (weighted) %s",
           pfi_policy_name(a->policy), pw, bw,
           r->budget_binds ? "budget binds" : "budget slack",
           pfi_fmt_fixed(n1, sizeof n1, t->tput, 6), pfi_fmt_fixed(n2, sizeof n2, r->value, 6));
    /* The search stops at a relative gap (1e-6 by default): an optimum within it is said so,
     * not as proven exact. */
    double gap = r->upper_bound > 0 ? (r->upper_bound - r->value) / r->upper_bound : 0;
    if (isfinite(r->upper_bound) && r->optimal && gap > 1e-12)
        printf(", optimal within a relative gap of %.1e (bound %s)", gap,
               pfi_fmt_fixed(n1, sizeof n1, r->upper_bound, 6));
    else if (isfinite(r->upper_bound))
        printf(", %s (bound %s)", r->optimal ? "optimal" : "not proven optimal",
               pfi_fmt_fixed(n1, sizeof n1, r->upper_bound, 6));
    printf("\n");
    if (t->all_true && (a->policy == PFI_POLICY_PFI || a->policy == PFI_POLICY_PROPORTIONAL))
        printf("on the true curves: total throughput %s, objective %s\n",
               pfi_fmt_fixed(n1, sizeof n1, t->tput_true, 6),
               pfi_fmt_fixed(n2, sizeof n2, t->objective_true, 6));
    if (r->sla_extra > 0)
        printf("every SLA loosened by %.1f%% of slowdown to fit the budget\n",
               100 * r->sla_extra);
    if (r->n_sla_dropped > 0)
        printf("%d SLA(s) dropped, lowest weight first, to fit the budget\n", r->n_sla_dropped);
    if (a->text.is_share) {
        char d[160];
        printf("budget %s\n",
               pfi_budget_describe(&a->text, a->reference, ALLOC_BUDGET_REF, d, sizeof d));
    }
}

/* --on-infeasible */
static int parse_infeasible(const char *name, int *mode, pfi_err *err)
{
    if (strcmp(name, "fail") == 0)
        *mode = PFI_INFEASIBLE_FAIL;
    else if (strcmp(name, "relax-sla") == 0)
        *mode = PFI_INFEASIBLE_RELAX;
    else if (strcmp(name, "by-weight") == 0)
        *mode = PFI_INFEASIBLE_BY_WEIGHT;
    else
        return pfi_err_set(err, PFI_EINVAL,
                           "unknown --on-infeasible '%s' (fail, relax-sla, by-weight)", name);
    return PFI_OK;
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
        {"budget", PFI_OPT_STR, &budget_s, "BUDGET",
         "on the sum of GPUs x cap: watts (5600W), a share of the jobs' baseline draw (70%), or "
         "a cut of it (cut=30%); pfi help budget"},
        {"policy", PFI_OPT_STR, &policy_s, "NAME", "equal, pfi (default), oracle, proportional-to-pfi"},
        {"jobs", PFI_OPT_STR, &jobs_path, "FILE", "jobs as JSON, - for stdin (docs/jobs-format.md)"},
        {"db", PFI_OPT_STR, &db, "FILE", "the runs of a store as jobs (measured curves)"},
        {"model", PFI_OPT_STR, &model_path, "FILE",
         "with --db: predict each run's curve from its baseline (pfi model train)"},
        {"sla", PFI_OPT_MULTI, &slas, "[ID=]SLOWDOWN",
         "max slowdown, e.g. 5%, for every job without one of its own (a jobs file's "
         "sla_max_slowdown wins); ID=5% for one, which wins over both (repeatable)"},
        {"on-infeasible", PFI_OPT_STR, &infeasible_s, "MODE",
         "budget below minimums+SLAs: fail (default), relax-sla, by-weight"},
        {"per-gpu", PFI_OPT_FLAG, &per_gpu, NULL,
         "one cap per GPU holding each job's common clock (needs per_gpu tables)"},
        {"step", PFI_OPT_DOUBLE, &step, "W", "cap grid (default 1 W)"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document on stdout"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi allocate --budget BUDGET [--policy NAME] (--jobs FILE | --db FILE) [--sla ...] "
        "[--on-infeasible MODE] [--per-gpu] [--json]",
        "Choose one power cap per job so that the sum of GPUs x cap stays within the budget and "
        "the total (weighted) throughput is the largest.  pfi and proportional-to-pfi read each "
        "job's predicted curve, oracle and equal its true curve.  See docs/allocation.md.",
        opts,
        "pfi allocate --budget 70% --jobs jobs.json         # the jobs of a file (docs/jobs-format.md)\n"
        "pfi allocate --budget 70% --db pfi.db --policy equal --json\n"
        "pfi allocate --budget 60% --jobs jobs.json --sla 5% --on-infeasible relax-sla"};
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
    if (parse_infeasible(infeasible_s, &o.on_infeasible, &err))
        return pfi_cli_fail(CMD, &err);
    if (!inputs_agree(budget_s, jobs_path, db, model_path, per_gpu, policy))
        return PFI_EXIT_USAGE;
    pfi_budget bt;
    if (pfi_budget_parse(budget_s, &bt, &err))
        return pfi_cli_fail(CMD, &err);
    pfi_alloc_set s = {0};
    if ((rc = load_jobs(jobs_path, db, model_path, per_gpu, &slas, &s, &err))) {
        pfi_alloc_set_free(&s);
        return pfi_cli_fail(CMD, &err);
    }
    /* The policy's view: predictions for pfi and the heuristic, the truth for the others. */
    pfi_alloc_job *view = malloc((size_t)s.n * sizeof *view);
    rc = view ? pfi_alloc_set_view(&s, policy, view, &err)
              : pfi_err_set(&err, PFI_ENOMEM, "out of memory");
    pfi_alloc_result r = {0};
    alloc_out out = {.policy = policy, .per_gpu = per_gpu, .s = &s, .view = view, .r = &r,
                     .text = bt};
    if (!rc) {
        out.reference = pfi_alloc_budget_from_cut(view, s.n, 0);
        out.budget = bt.is_share ? pfi_alloc_budget_from_cut(view, s.n, 1.0 - bt.value) : bt.value;
        rc = pfi_alloc_policy(policy, view, s.n, s.pfi30, out.budget, &o, &r, &err);
    }
    if (rc) {
        free(view);
        pfi_alloc_set_free(&s);
        return pfi_cli_fail(CMD, &err);
    }
    pfi_alloc_set_totals(&s, view, &r, &out.t);
    if (as_json) {
        rc = print_json(&out);
    } else {
        print_table(&out);
        rc = PFI_EXIT_OK;
    }
    pfi_alloc_result_free(&r);
    free(view);
    pfi_alloc_set_free(&s);
    return rc;
}
