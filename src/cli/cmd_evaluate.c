/* SPDX-License-Identifier: Apache-2.0 */
/* pfi evaluate: the paper's allocation experiment (study/experiment.h) on the runs of a store,
 * on the public sweeps, or on the simulated fleet.  Every policy's caps are scored on the TRUE
 * (measured) curves; pfi sees only predictions:
 *   --probes 0   the runtime predictor from baseline telemetry, cross-fitted by job group, with
 *                the draw under a cap of the training-fold jobs nearest in telemetry
 *   --probes 1|2 baseline + probes read on the run's own measured levels (one probe: through
 *                the shape of the OTHER jobs' curves; two: a fitted power law).
 * This file parses the arguments and prints; the experiment lives in study/experiment.c. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/probe.h"
#include "report/report.h"
#include "study/cost_eval.h"
#include "study/experiment.h"
#include "util/budget.h"
#include "util/json.h"
#include "util/units.h"

#define CMD "evaluate"
#define MAX_CUTS 16

typedef struct ev_args {
    const char *db, *cuts_s, *pol_s, *fleet, *depth_s, *sources, *save_db;
    int public_data, probes, as_json, seed, per_job;
    int probe_cv, group_out, probe_k, tier, comm, cv_top, nested_cv, cv_seeds, cost, votes;
    int time_walk, hedge, shrink, nest_per_cut;
    double step, w_draw, amp, w_p0;
    pfi_strlist set;
} ev_args;

/* The research settings of the one-probe shape estimate and its cross-validation: --set
 * KEY=VALUE (they were flags of their own, kept as former spellings). */
typedef struct ev_key {
    const char *name, *meta;
    int is_int;
    double min, max;
    size_t off; /* into ev_args */
    const char *help;
} ev_key;
static const ev_key ev_keys[] = {
    {"probe-k", "N", 1, 1, 1e6, offsetof(ev_args, probe_k),
     "neighbours of the shape estimate (default: study/experiment.c's)"},
    {"draw-weight", "W", 0, 0, 1e6, offsetof(ev_args, w_draw),
     "weight of the probe's draw/cap in the neighbour distance (default: ditto)"},
    {"amplitude", "A", 0, 0, 1, offsetof(ev_args, amp),
     "how far the probe rescales the neighbours' shape: 0 (default) adds their steps as they "
     "are, 1 scales each neighbour's by the probe's slowdown over its own at the probe's cap"},
    {"near-votes", "0|1", 1, 0, 1, offsetof(ev_args, votes),
     "1 weights each neighbour's step by how near its slowdown (and draw) at the probe's cap is "
     "the probe's; 0 (default): their plain median"},
    {"time-walk", "0|1", 1, 0, 1, offsetof(ev_args, time_walk),
     "1 adds the neighbours' steps (and takes the amplitude's ratio) in extra time 1/rel - 1 "
     "instead of slowdown 1 - rel; 0 (default): in slowdown"},
    {"p0-weight", "W", 0, 0, 1e6, offsetof(ev_args, w_p0),
     "weight of the baseline draw share (P0 over the maximum cap) in the neighbour distance "
     "(default 0: not used)"},
    {"hedge", "0|1|2", 1, 0, 2, offsetof(ev_args, hedge),
     "1 averages six readings of the neighbours' steps (amplitude 0, 1/2 and 1, each in "
     "slowdown and in extra time; amplitude and time-walk then unused); 2 weights the six, job "
     "by job, by how well each predicts the job's neighbours from the other neighbours (the "
     "stacked walk); 0 (default): one"},
    {"shrink", "0|1", 1, 0, 1, offsetof(ev_args, shrink),
     "1 draws the walk toward the typical shape of its neighbours' tier (same GPU model, or "
     "model and kind) by how far the neighbours are from the probe against how far that tier "
     "is; 0 (default): not"},
    {"tier-gpus", "0|1", 1, 0, 1, offsetof(ev_args, tier),
     "1 takes references of the same GPU model and single/multi-GPU kind first"},
    {"committee", "0|1", 1, 0, 1, offsetof(ev_args, comm),
     "1 averages the shape over 16 neighbour counts and draw weights (probe-k and draw-weight "
     "then unused)"},
    {"probe-cv-top", "M", 1, 0, 1e6, offsetof(ev_args, cv_top),
     "with --probe-cv: each group gets the committee of the M best single settings of the "
     "depth and tiers whose M best score best (default 6); 0: the grid's one best setting"},
    {"group-out", "0|1", 1, 0, 1, offsetof(ev_args, group_out),
     "1: the shape library leaves each job's whole group (same model) out"},
    {"cv-seeds", "N", 1, 1, PFI_EXPT_NEST_MAX_SEEDS, offsetof(ev_args, cv_seeds),
     "with --nested-cv: seeds 1..N (default 5)"},
    {"nest-per-cut", "0|1", 1, 0, 1, offsetof(ev_args, nest_per_cut),
     "with --nested-cv: 1 (default) chooses the rule and the setting for each cut on its own; "
     "0: one choice by the mean over the cuts"},
};
#define EV_NKEYS ((int)(sizeof ev_keys / sizeof ev_keys[0]))

/* Applies every --set KEY=VALUE to a: -1 when all read, else the exit status (said why). */
static int ev_apply_set(ev_args *a)
{
    for (int i = 0; i < a->set.n; i++) {
        const char *kv = a->set.v[i], *eq = strchr(kv, '=');
        const ev_key *k = NULL;
        for (int j = 0; eq && j < EV_NKEYS; j++)
            if (strlen(ev_keys[j].name) == (size_t)(eq - kv) &&
                !strncmp(ev_keys[j].name, kv, (size_t)(eq - kv)))
                k = &ev_keys[j];
        if (!k) {
            fprintf(stderr, "pfi evaluate: --set %s: expected KEY=VALUE with KEY one of ", kv);
            for (int j = 0; j < EV_NKEYS; j++)
                fprintf(stderr, "%s%s", j ? ", " : "", ev_keys[j].name);
            fprintf(stderr, " (pfi evaluate --help)\n");
            return PFI_EXIT_USAGE;
        }
        char *end;
        errno = 0;
        double v = strtod(eq + 1, &end);
        if (end == eq + 1 || *end || errno || !(v >= k->min && v <= k->max) ||
            (k->is_int && v != floor(v))) {
            fprintf(stderr, "pfi evaluate: --set %s: %s expects %s from %g to %g\n", kv, k->name,
                    k->is_int ? "an integer" : "a number", k->min, k->max);
            return PFI_EXIT_USAGE;
        }
        if (k->is_int)
            *(int *)((char *)a + k->off) = (int)v;
        else
            *(double *)((char *)a + k->off) = v;
    }
    return -1;
}

/* The --help text: the experiment, then the settings --set takes. */
static const char *ev_summary(void)
{
    static char buf[3072];
    size_t n = (size_t)snprintf(
        buf, sizeof buf, "%s",
        "The allocation experiment: at each cut of the jobs' baseline draw, allocate caps with "
        "each policy and score them on the true curves.  gap_recovered = (T_pfi - T_equal) / "
        "(T_oracle - T_equal).  Runs without tokens/s count GPU-weighted relative throughput."
        "\n\nSettings of the one-probe shape estimate (--set KEY=VALUE, repeatable):");
    for (int j = 0; j < EV_NKEYS && n < sizeof buf; j++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "\n  %s=%s: %s", ev_keys[j].name,
                              ev_keys[j].meta, ev_keys[j].help);
    return buf;
}

/* The experiment's options, cuts and policies from the flags: -1 to go on, else an exit status
 * (the message printed). */
static int ev_options(const ev_args *a, pfi_expt_opts *eo, double *cuts, int *ncuts,
                      int *policies, int *npol)
{
    pfi_err err = {0};
    if ((a->db != NULL) + a->public_data + (a->fleet != NULL) > 1) {
        fprintf(stderr, "pfi evaluate: --db, --public and --fleet exclude each other\n");
        return PFI_EXIT_USAGE;
    }
    if (a->probes < 0 || a->probes > 2) {
        fprintf(stderr, "pfi evaluate: --probes must be 0, 1 or 2\n");
        return PFI_EXIT_USAGE;
    }
    *eo = pfi_expt_defaults(a->probes);
    eo->auto_depth = a->depth_s && strcmp(a->depth_s, "auto") == 0;
    if (a->depth_s && !eo->auto_depth) {
        int nd = 0;
        if (pfi_parse_double_list(a->depth_s, eo->depth, 2, &nd, &err))
            return pfi_cli_fail(CMD, &err);
        if (nd != a->probes || !(eo->depth[0] > 0 && eo->depth[0] < 1) ||
            (nd == 2 && !(eo->depth[1] > 0 && eo->depth[1] < 1))) {
            fprintf(stderr, "pfi evaluate: --probe-depth needs %d depth(s) in (0, 1)\n",
                    a->probes);
            return PFI_EXIT_USAGE;
        }
        eo->shape.depth = eo->depth[0];
    }
    if (a->probe_k == 0 || a->probe_k < -1 || (a->w_draw < 0 && a->w_draw != -1) ||
        a->tier < -1 || a->tier > 1 || a->comm < -1 || a->comm > 1 || a->group_out < 0 ||
        a->group_out > 1) {
        fprintf(stderr, "pfi evaluate: probe-k must be >= 1, draw-weight >= 0, tier-gpus, "
                        "committee and group-out 0 or 1\n");
        return PFI_EXIT_USAGE;
    }
    if (a->probe_k > 0)
        eo->shape.k = a->probe_k;
    if (a->w_draw >= 0)
        eo->shape.w_draw = a->w_draw;
    eo->shape.amp = a->amp;
    eo->shape.votes = a->votes;
    eo->shape.scale = a->time_walk ? PFI_PROBE_SCALE_TIME : PFI_PROBE_SCALE_SLOWDOWN;
    eo->shape.w_p0 = a->w_p0;
    eo->shape.hedge = a->hedge;
    eo->shape.shrink = a->shrink;
    if (a->tier >= 0)
        eo->shape.tier_gpus = a->tier;
    if (a->comm >= 0)
        eo->shape.committee = a->comm != 0;
    eo->shape_cv = a->probe_cv;
    if (a->cv_top < -1) {
        fprintf(stderr, "pfi evaluate: probe-cv-top must be >= 0\n");
        return PFI_EXIT_USAGE;
    }
    if (a->cv_top >= 0)
        eo->cv_top = a->cv_top;
    eo->group_out = a->group_out;
    eo->nest_per_cut = a->nest_per_cut;
    eo->alloc.step_w = a->step;
    eo->want_caps = a->per_job;
    if (pfi_budget_parse_cuts(a->cuts_s, cuts, MAX_CUTS, ncuts, &err))
        return pfi_cli_fail(CMD, &err);
    for (int c = 0; c < *ncuts; c++)
        if (!(cuts[c] > 0 && cuts[c] < 1)) {
            fprintf(stderr, "pfi evaluate: cut %g must be in (0, 1)\n", cuts[c]);
            return PFI_EXIT_USAGE;
        }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", a->pol_s);
    *npol = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int p = pfi_policy_parse(t);
        if (p < 0) {
            fprintf(stderr, "pfi evaluate: unknown policy '%s' (equal, pfi, oracle, "
                            "proportional-to-pfi)\n", t);
            return PFI_EXIT_USAGE;
        }
        if (*npol < PFI_POLICY_COUNT)
            policies[(*npol)++] = p;
    }
    return -1;
}

/* Each job's cap and true and seen throughput under every policy at every cut (--per-job). */
static json_t *ev_jobs_json(const pfi_expt_pop *p, const pfi_expt_result *r, const double *cuts,
                            int ncuts, const int *policies, int npol)
{
    const pfi_alloc_job *tj = r->jobs.truth;
    json_t *jobs = json_array();
    for (int j = 0; j < p->n; j++) {
        json_t *per = json_array();
        for (int c = 0; c < ncuts; c++) {
            json_t *pc = json_object();
            for (int k = 0; k < npol; k++) {
                if (r->cells[(size_t)c * PFI_POLICY_COUNT + (size_t)policies[k]].infeasible)
                    continue;
                size_t at = ((size_t)c * PFI_POLICY_COUNT + (size_t)policies[k]) *
                                (size_t)p->n + (size_t)j;
                double cap = r->caps[at];
                json_object_set_new(pc, pfi_policy_name(policies[k]),
                                    json_pack("{s:f, s:f, s:f}", "cap_w", cap, "tput_true",
                                              pfi_alloc_tput_at(&tj[j], cap), "tput_seen",
                                              r->seen[at]));
            }
            json_array_append_new(per, json_pack("{s:f, s:o}", "cut", cuts[c], "policies", pc));
        }
        json_array_append_new(jobs, json_pack("{s:s, s:i, s:f, s:f, s:f, s:o}", "id", tj[j].id,
                                              "gpus", tj[j].n_gpus, "p0_w", tj[j].p0_w,
                                              "min_cap_w", tj[j].min_cap_w, "max_cap_w",
                                              tj[j].max_cap_w, "cuts", per));
    }
    return jobs;
}

static int ev_print_json(const ev_args *a, const pfi_expt_pop *p, const pfi_expt_result *r,
                         const double *cuts, int ncuts, const int *policies, int npol,
                         int in_sample)
{
    json_t *arr = json_array();
    for (int c = 0; c < ncuts; c++) {
        const pfi_eval_cell *row = r->cells + (size_t)c * PFI_POLICY_COUNT;
        if (row[PFI_POLICY_EQUAL].infeasible) {
            json_array_append_new(arr, json_pack("{s:f, s:f, s:b, s:f}", "cut", cuts[c],
                                                 "budget_w", row[0].budget_w, "infeasible",
                                                 1, "min_budget_w", row[0].min_budget_w));
            continue;
        }
        json_t *pol = json_object();
        for (int k = 0; k < npol; k++) {
            const pfi_eval_cell *e = &row[policies[k]];
            json_t *o1 = json_pack("{s:f, s:f, s:f}", "total_throughput",
                                   e->total_throughput, "per_job_gain_vs_equal",
                                   e->per_job_gain_vs_equal, "power_w", e->power_w);
            if (policies[k] != PFI_POLICY_EQUAL && policies[k] != PFI_POLICY_ORACLE)
                json_object_set_new(o1, "gap_recovered", pfi_json_num(e->gap_recovered));
            json_object_set_new(pol, pfi_policy_name(policies[k]), o1);
        }
        json_array_append_new(
            arr, json_pack("{s:f, s:f, s:f, s:o}", "cut", cuts[c], "budget_w",
                           row[PFI_POLICY_EQUAL].budget_w, "oracle_gain_over_equal",
                           row[PFI_POLICY_ORACLE].total_throughput -
                               row[PFI_POLICY_EQUAL].total_throughput,
                           "policies", pol));
    }
    json_t *doc = json_pack("{s:s, s:i, s:i, s:I, s:s, s:i, s:s, s:o}", "source", p->where,
                            "jobs", p->n, "skipped_runs", p->skipped, "gpus",
                            (json_int_t)r->jobs.gpus, "unit", r->jobs.unit, "probes", a->probes,
                            "prediction", r->jobs.note, "cuts", arr);
    json_object_set_new(doc, "setting_in_sample", json_boolean(in_sample));
    if (a->per_job) /* its own key: "jobs" stays the count (it became this list) */
        json_object_set_new(doc, "per_job", ev_jobs_json(p, r, cuts, ncuts, policies, npol));
    return pfi_cli_print_json(doc);
}

static void ev_print_text(const pfi_expt_pop *p, const pfi_expt_result *r, const double *cuts,
                          int ncuts, const int *policies, int npol, int in_sample)
{
    printf("%s: %d jobs (%ld GPUs), %d run(s) skipped without a usable curve\n", p->where, p->n,
           r->jobs.gpus, p->skipped);
    printf("throughput: %s; pfi sees: %s\n", r->jobs.unit, r->jobs.note);
    if (in_sample)
        printf("in sample: that setting was chosen on these very curves (the best of a grid); "
               "the held-out figure is --nested-cv's (docs/allocation.md)\n");
    printf("\n");
    printf("%5s  %-20s %16s %14s %10s\n", "cut", "policy", "total", "gain/job", "gap rec.");
    for (int c = 0; c < ncuts; c++) {
        const pfi_eval_cell *row = r->cells + (size_t)c * PFI_POLICY_COUNT;
        if (row[PFI_POLICY_EQUAL].infeasible) {
            char b1[48], b2[48]; /* separators, as the study's report writes them */
            printf("%4.0f%%  infeasible: budget %s W is below the %s W the jobs' "
                   "minimum caps need\n",
                   100 * cuts[c], pfi_fmt_sep(b1, sizeof b1, row[0].budget_w, 0, 0),
                   pfi_fmt_sep(b2, sizeof b2, row[0].min_budget_w, 0, 0));
            continue;
        }
        for (int k = 0; k < npol; k++) {
            const pfi_eval_cell *e = &row[policies[k]];
            char gap[16] = "";
            if (policies[k] != PFI_POLICY_EQUAL && policies[k] != PFI_POLICY_ORACLE)
                snprintf(gap, sizeof gap, isfinite(e->gap_recovered) ? "%.1f%%" : "n/a",
                         100 * e->gap_recovered);
            char tot[32], gain[32];
            printf("%4.0f%%  %-20s %16s %14s %10s\n", 100 * cuts[c],
                   pfi_policy_name(policies[k]),
                   pfi_fmt_fixed(tot, sizeof tot, e->total_throughput, 6),
                   pfi_fmt_fixed(gain, sizeof gain, e->per_job_gain_vs_equal, 4), gap);
        }
    }
}

/* The per-cut choice fields of --nested-cv's JSON: their names, and field `what` of each cut's
 * rule or setting (as the per-fold fields give the one choice), [cut][seed][fold]. */
static const char *const ev_cut_field[] = {
    "rule_top_per_cut_seed_and_fold",   "amplitude_per_cut_seed_and_fold",
    "depth_per_cut_seed_and_fold",      "near_votes_per_cut_seed_and_fold",
    "time_walk_per_cut_seed_and_fold",  "p0_weight_per_cut_seed_and_fold",
    "hedge_per_cut_seed_and_fold"};
#define EV_NCUTFIELDS ((int)(sizeof ev_cut_field / sizeof ev_cut_field[0]))

static json_t *ev_cut_choice(const pfi_expt_nested_summary *ns, int m, int what)
{
    json_t *cuts = json_array();
    for (int c = 0; c < ns->ncuts; c++) {
        json_t *seeds = json_array();
        for (int s = 0; s < ns->nseeds; s++) {
            json_t *folds = json_array();
            for (int f = 0; f < PFI_EXPT_NEST_OUTER; f++) {
                const pfi_expt_shape_set *x = &ns->set_cut[m][s][c][f];
                json_t *v = what == 0   ? json_integer(ns->rule_cut[m][s][c][f])
                            : what == 1 ? pfi_json_num(x->amp)
                            : what == 2 ? pfi_json_num(x->depth)
                            : what == 3 ? json_integer(x->votes)
                            : what == 4 ? json_integer(x->scale)
                            : what == 5 ? pfi_json_num(x->w_p0)
                                        : json_integer(x->hedge);
                json_array_append_new(folds, v);
            }
            json_array_append_new(seeds, folds);
        }
        json_array_append_new(cuts, seeds);
    }
    return cuts;
}

/* One cut of one library in --nested-cv: its JSON row, and its line unless as_json. */
static json_t *ev_nested_cut(const pfi_expt_nested_summary *ns, int m, int c, double cut,
                             int as_json)
{
    json_t *per = json_array();
    for (int s = 0; s < ns->nseeds; s++)
        json_array_append_new(per, pfi_json_num(ns->gap[m][s][c]));
    json_t *row = json_pack("{s:f, s:o, s:o, s:o, s:o, s:f}", "cut", cut, "gap_recovered_mean",
                            pfi_json_num(ns->mean[m][c]), "min", pfi_json_num(ns->lo[m][c]),
                            "max", pfi_json_num(ns->hi[m][c]), "per_seed", per, "budget_w",
                            ns->budget_w[c]);
    if (ns->infeasible[c]) {
        json_object_set_new(row, "infeasible", json_true());
        json_object_set_new(row, "min_budget_w", json_real(ns->min_budget_w[c]));
    }
    if (as_json)
        return row;
    if (ns->infeasible[c]) { /* as the plain experiment says it */
        char b1[48], b2[48];
        printf("  %4.0f%% cut:  infeasible: budget %s W is below the %s W the jobs' minimum "
               "caps need\n",
               100 * cut, pfi_fmt_sep(b1, sizeof b1, ns->budget_w[c], 0, 0),
               pfi_fmt_sep(b2, sizeof b2, ns->min_budget_w[c], 0, 0));
    } else if (isnan(ns->mean[m][c])) {
        printf("  %4.0f%% cut:  no gap to recover: the oracle gains less than 0.1%% over the equal cut "
               "(in at least one seed)\n",
               100 * cut);
    } else {
        printf("  %4.0f%% cut: %5.1f%% [%.1f-%.1f]   rules, seed by seed:", 100 * cut,
               100 * ns->mean[m][c], 100 * ns->lo[m][c], 100 * ns->hi[m][c]);
        for (int s = 0; s < ns->nseeds; s++)
            for (int f = 0; f < PFI_EXPT_NEST_OUTER; f++)
                printf("%s%d", f ? " " : s ? " | " : " ", ns->rule_cut[m][s][c][f]);
        printf("\n");
    }
    return row;
}

/* --nested-cv: the nested figure and the never-seen-model figure over seeds 1..cv_seeds. */
static int ev_nested(const ev_args *a, const pfi_expt_pop *p, const pfi_expt_opts *eo,
                     const double *cuts, int ncuts)
{
    pfi_expt_nested_summary *ns = malloc(sizeof *ns);
    pfi_err err = {0};
    if (!ns)
        return PFI_EXIT_FAIL;
    if (pfi_expt_nested_run(p, eo, cuts, ncuts, a->cv_seeds, ns, &err) != PFI_OK) {
        free(ns);
        return pfi_cli_fail(CMD, &err);
    }
    static const char *const mode[2] = {"nested", "never_seen_model"};
    static const char *const label[2] = {"nested cross-validation (library: every other job)",
                                         "never-seen model (library: every other job group)"};
    json_t *doc = json_pack("{s:s, s:i, s:i, s:i, s:i}", "source", p->where, "jobs", ns->n_jobs,
                            "seeds", ns->nseeds, "outer_folds", PFI_EXPT_NEST_OUTER,
                            "inner_folds", PFI_EXPT_NEST_INNER);
    json_object_set_new(doc, "per_cut", json_boolean(eo->nest_per_cut));
    if (!a->as_json)
        printf("%s: %d jobs; pfi's gap recovered, mean over seeds 1-%d [range]%s\n", p->where,
               ns->n_jobs, ns->nseeds,
               eo->nest_per_cut ? "; each cut's rule and setting chosen for it" : "");
    for (int m = 0; m < 2; m++) {
        json_t *arr = json_array(), *rules = json_array();
        if (!a->as_json)
            printf("\n%s\n", label[m]);
        for (int c = 0; c < ncuts; c++)
            json_array_append_new(arr, ev_nested_cut(ns, m, c, cuts[c], a->as_json));
        json_t *amps = json_array(), *depths = json_array(), *votes = json_array();
        json_t *times = json_array(), *p0w = json_array(), *hedges = json_array();
        for (int s = 0; s < ns->nseeds; s++) {
            json_t *r = json_array(), *am = json_array(), *dp = json_array(),
                   *vo = json_array(), *tw = json_array(), *pw = json_array(),
                   *hg = json_array();
            for (int f = 0; f < PFI_EXPT_NEST_OUTER; f++) {
                json_array_append_new(r, json_integer(ns->rule[m][s][f]));
                json_array_append_new(am, pfi_json_num(ns->set[m][s][f].amp));
                json_array_append_new(dp, pfi_json_num(ns->set[m][s][f].depth));
                json_array_append_new(vo, json_integer(ns->set[m][s][f].votes));
                json_array_append_new(tw, json_integer(ns->set[m][s][f].scale));
                json_array_append_new(pw, pfi_json_num(ns->set[m][s][f].w_p0));
                json_array_append_new(hg, json_integer(ns->set[m][s][f].hedge));
            }
            json_array_append_new(rules, r);
            json_array_append_new(amps, am);
            json_array_append_new(depths, dp);
            json_array_append_new(votes, vo);
            json_array_append_new(times, tw);
            json_array_append_new(p0w, pw);
            json_array_append_new(hedges, hg);
        }
        json_object_set_new(doc, mode[m],
                            json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "cuts", arr,
                                      "rule_top_per_seed_and_fold", rules,
                                      "amplitude_per_seed_and_fold", amps,
                                      "depth_per_seed_and_fold", depths,
                                      "near_votes_per_seed_and_fold", votes,
                                      "time_walk_per_seed_and_fold", times,
                                      "p0_weight_per_seed_and_fold", p0w,
                                      "hedge_per_seed_and_fold", hedges));
        for (int w = 0; w < EV_NCUTFIELDS; w++)
            json_object_set_new(json_object_get(doc, mode[m]), ev_cut_field[w],
                                ev_cut_choice(ns, m, w));
    }
    free(ns);
    if (a->as_json)
        return pfi_cli_print_json(doc);
    json_decref(doc);
    printf("\nrules: each outer fold's selection rule (folds 1-%d of each seed, seeds separated by "
           "|), chosen inside its training groups: 0 the grid's best setting, 3 or 6 the bagged "
           "committee of that many\n", PFI_EXPT_NEST_OUTER);
    return PFI_EXIT_OK;
}

/* --cost: PFI30 error against the share of a full sweep's GPU-time (study/cost_eval.h). */
static int ev_cost(const ev_args *a, const pfi_expt_pop *p)
{
    pfi_err err = {0};
    pfi_cost_eval ce;
    /* the runs of the --source list, as the jobs are: the population holds every run read */
    const pfi_run **runs = malloc(sizeof *runs * (size_t)(p->nruns ? p->nruns : 1));
    if (!runs) {
        pfi_err_set(&err, PFI_ENOMEM, "out of memory");
        return pfi_cli_fail(CMD, &err);
    }
    int n = 0;
    for (int i = 0; i < p->nruns; i++)
        if (pfi_expt_source_wanted(a->sources, p->run[i]->source))
            runs[n++] = p->run[i];
    int rc = pfi_cost_evaluate(runs, n, &ce, &err);
    free(runs);
    if (rc != PFI_OK)
        return pfi_cli_fail(CMD, &err);
    json_t *rows = json_array();
    if (!a->as_json)
        printf("%s: %d runs, %d whose full sweep reaches a 30%% shed\n%-9s %5s %6s %11s %11s "
               "%10s %15s\n",
               p->where, ce.n_runs, ce.n_truth, "part", "runs", "failed", "err_median",
               "err_p90", "cost", "cost_excl_base");
    for (int r = 0; r < PFI_COST_EVAL_ROWS; r++) {
        const pfi_cost_eval_row *w = &ce.row[r];
        char label[16];
        snprintf(label, sizeof label, w->probe ? "1 probe" : "%d levels", w->levels);
        if (a->as_json) {
            json_t *o = json_pack("{s:s, s:i, s:b, s:i, s:i}", "part", label, "levels",
                                  w->levels, "probe", w->probe, "runs", w->n, "failed",
                                  w->failed);
            json_object_set_new(o, "err_median", pfi_json_num(w->err_median));
            json_object_set_new(o, "err_p90", pfi_json_num(w->err_p90));
            json_object_set_new(o, "cost_median", pfi_json_num(w->cost_median));
            json_object_set_new(o, "cost_excl_baseline_median",
                                pfi_json_num(w->cost_excl_median));
            json_array_append_new(rows, o);
        } else {
            if (w->n == 0)
                printf("%-9s %5d %6d %11s %11s %10s %15s\n", label, 0, w->failed, "-", "-", "-",
                       "-");
            else
                printf("%-9s %5d %6d %11.4f %11.4f %9.1f%% %14.1f%%\n", label, w->n, w->failed,
                       w->err_median, w->err_p90, 100 * w->cost_median,
                       100 * w->cost_excl_median);
        }
    }
    if (!a->as_json) {
        json_decref(rows);
        printf("target: PFI30 within 0.03 for at most 10%% of a full sweep's GPU-time (cost: "
               "levels used / levels swept, medians over runs)\n");
        return PFI_EXIT_OK;
    }
    json_t *doc = json_pack("{s:s, s:i, s:i, s:o}", "population", p->where, "runs", ce.n_runs,
                            "runs_with_pfi30", ce.n_truth, "rows", rows);
    return pfi_cli_print_json(doc);
}

static const char examples[] =
    "pfi evaluate --public                              # on the public measured sweeps\n"
    "pfi evaluate --fleet small --cuts 0.2,0.4 --json";

int pfi_cmd_evaluate(int argc, char **argv)
{
    ev_args a = {.cuts_s = "0.1,0.2,0.3,0.4,0.5", .pol_s = "equal,pfi,oracle", .probes = 1,
                 .seed = INT_MIN, .probe_k = -1, .tier = -1, .comm = -1, .cv_top = -1, .step = 1,
                 .w_draw = -1, .cv_seeds = 5, .nest_per_cut = 1};
    const pfi_opt opts[] = {
        {"db", PFI_OPT_STR, &a.db, "FILE", "the store whose runs are the jobs (default $PFI_DB, else pfi.db)"},
        {"public", PFI_OPT_FLAG, &a.public_data, NULL,
         "the public measured sweeps of $PFI_DATA_DIR, imported in memory"},
        {"fleet", PFI_OPT_STR, &a.fleet, "paper|small", "the simulated fleet, characterized"},
        {"seed", PFI_OPT_INT, &a.seed, "N", "fleet seed (default 1)"},
        {"save-db", PFI_OPT_STR, &a.save_db, "FILE",
         "with --fleet: also store the characterized runs (reuse them with --db FILE)"},
        {"source", PFI_OPT_STR, &a.sources, "LIST",
         "only runs of these sources, e.g. perseus,zeus-nsdi (default all)"},
        {"cuts", PFI_OPT_STR, &a.cuts_s, "LIST", "power cuts of the jobs' baseline draw, 0.3, cut=30% or -30% (pfi help budget; default 0.1,0.2,0.3,0.4,0.5)"},
        {"policies", PFI_OPT_STR, &a.pol_s, "LIST",
         "equal,pfi,oracle,proportional-to-pfi (default equal,pfi,oracle)"},
        {"probes", PFI_OPT_INT, &a.probes, "0|1|2",
         "what pfi sees: 0 the telemetry predictor (trained on the jobs with baseline "
         "telemetry, at least 5), 1 or 2 baseline + probes (default 1)"},
        {"probe-depth", PFI_OPT_STR, &a.depth_s, "D[,D2]|auto",
         "probe depths as power shed (default: one probe 0.50, the shape setting's; two probes "
         "0.20,0.40); "
         "auto: each job probed at its equal share of each cut"},
        {"set", PFI_OPT_MULTI, &a.set, "KEY=VALUE",
         "a setting of the one-probe shape estimate (the list above; repeatable)"},
        PFI_OPT_ALIAS("probe-k", PFI_OPT_INT, &a.probe_k, "set probe-k=N"),
        PFI_OPT_ALIAS("draw-weight", PFI_OPT_DOUBLE, &a.w_draw, "set draw-weight=W"),
        PFI_OPT_ALIAS("tier-gpus", PFI_OPT_INT, &a.tier, "set tier-gpus=0|1"),
        PFI_OPT_ALIAS("committee", PFI_OPT_INT, &a.comm, "set committee=0|1"),
        {"probe-cv", PFI_OPT_FLAG, &a.probe_cv, NULL,
         "one probe: choose the shape setting of each job group by cross-validation on the "
         "other groups (the best of a grid scored on the same groups, not the honest figure: "
         "--nested-cv is; about 100 s of CPU on the public sweeps)"},
        PFI_OPT_ALIAS("probe-cv-top", PFI_OPT_INT, &a.cv_top, "set probe-cv-top=M"),
        {"nested-cv", PFI_OPT_FLAG, &a.nested_cv, NULL,
         "one probe: the nested cross-validation (docs/allocation.md) and the never-seen-model "
         "figure, over cv-seeds seeds (--set cv-seeds=N): the honest headline (minutes)"},
        PFI_OPT_ALIAS("cv-seeds", PFI_OPT_INT, &a.cv_seeds, "set cv-seeds=N"),
        {"cost", PFI_OPT_FLAG, &a.cost, NULL, "PFI30 error of 1 probe, 2-6 levels vs GPU-time"},
        PFI_OPT_ALIAS("group-out", PFI_OPT_FLAG, &a.group_out, "set group-out=1"),
        {"step", PFI_OPT_DOUBLE, &a.step, "W", "cap grid (default 1 W)"},
        {"per-job", PFI_OPT_FLAG, &a.per_job, NULL,
         "JSON: each job's cap and true throughput under every policy at every cut"},
        {"json", PFI_OPT_FLAG, &a.as_json, NULL, "one JSON document on stdout"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi evaluate [--db FILE | --public | --fleet paper|small] [--cuts LIST] "
        "[--policies LIST] [--probes 0|1|2] [--set KEY=VALUE]... [--json]",
        ev_summary(), opts, examples};
    int rc = pfi_cli_args_none(&spec, argc, argv, "evaluate");
    if (rc >= 0 || (rc = ev_apply_set(&a)) >= 0)
        return rc;
    pfi_expt_opts eo;
    double cuts[MAX_CUTS];
    int ncuts = 0, policies[PFI_POLICY_COUNT], npol = 0;
    if ((rc = ev_options(&a, &eo, cuts, &ncuts, policies, &npol)) >= 0)
        return rc;
    unsigned long long seed;
    if ((rc = pfi_cli_fleet_seed(CMD, a.seed, a.fleet != NULL, NULL, &seed)) >= 0)
        return rc;
    pfi_err err = {0};
    pfi_expt_pop p;
    if ((rc = a.fleet ? pfi_expt_pop_fleet(a.fleet, (uint64_t)seed, a.sources, &p, &err)
                      : pfi_expt_pop_load(a.db, a.public_data, a.sources, &p, &err))) {
        pfi_expt_pop_free(&p);
        return pfi_cli_fail(CMD, &err);
    }
    if (a.save_db && (!a.fleet || (rc = pfi_expt_pop_save(&p, a.save_db, &err)))) {
        if (!a.fleet)
            pfi_err_set(&err, PFI_EINVAL, "--save-db stores a simulated fleet (--fleet)");
        pfi_expt_pop_free(&p);
        return pfi_cli_fail(CMD, &err);
    }
    if (a.nested_cv || a.cost) {
        rc = a.cost ? ev_cost(&a, &p) : ev_nested(&a, &p, &eo, cuts, ncuts);
        pfi_expt_pop_free(&p);
        return rc;
    }
    pfi_expt_result r;
    if ((rc = pfi_expt_run(&p, &eo, cuts, ncuts, policies, npol, &r, &err))) {
        pfi_expt_pop_free(&p);
        return pfi_cli_fail(CMD, &err);
    }
    if (a.as_json) {
        rc = ev_print_json(&a, &p, &r, cuts, ncuts, policies, npol, pfi_expt_setting_in_sample(&p, &eo));
    } else {
        ev_print_text(&p, &r, cuts, ncuts, policies, npol, pfi_expt_setting_in_sample(&p, &eo));
        rc = PFI_EXIT_OK;
    }
    pfi_expt_result_free(&r);
    pfi_expt_pop_free(&p);
    return rc;
}
