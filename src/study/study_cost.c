/* SPDX-License-Identifier: Apache-2.0 */
/* study_cost.c: the study's characterization cost as the report shows it: totals and medians
 * per run set of each run's cost (study.c computes them), per run and level in summary.json,
 * and the probe-vs-sweep rows.  A run without its level times (imported data, or a store
 * written before they were recorded) is left out of the cost figures and counted; the
 * probe-vs-sweep rows need no times (they count levels). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/stats.h"
#include "report/report.h"
#include "study/study.h"
#include "util/json.h"

/* Totals and medians over the timed runs of one set (NULL: all). */
typedef struct agg {
    int n, n_tokens;
    double seconds, gpu_s, tokens_lost, gpu_s_median, lost_frac_median;
} agg;

static agg aggregate(const pfi_study *s, const char *set)
{
    agg a = {0};
    double *g = malloc(sizeof *g * (size_t)(s->n ? s->n : 1));
    double *f = malloc(sizeof *f * (size_t)(s->n ? s->n : 1));
    for (int i = 0; g && f && i < s->n; i++) {
        const pfi_study_run *r = &s->runs[i];
        if (!r->cost_ok || (set && strcmp(r->set, set)))
            continue;
        a.seconds += r->cost.seconds;
        a.gpu_s += r->cost.gpu_s_total;
        if (r->run.unit == PFI_TOKENS_PER_S) {
            a.tokens_lost += r->cost.lost_total;
            a.n_tokens++;
        }
        g[a.n] = r->cost.gpu_s_total;
        f[a.n] = r->cost.lost_frac;
        a.n++;
    }
    a.gpu_s_median = g && f ? pfi_median(g, a.n) : NAN;
    a.lost_frac_median = g && f ? pfi_median(f, a.n) : NAN;
    if (a.n == 0)
        a.seconds = a.gpu_s = NAN; /* nothing known, not nothing spent */
    if (a.n_tokens == 0)
        a.tokens_lost = NAN;
    free(g);
    free(f);
    return a;
}

static json_t *level_json(const pfi_study_run *r)
{
    json_t *a = json_array();
    for (int i = 0; i < r->run.n_levels; i++)
        json_array_append_new(
            a, json_pack("{s:o, s:o, s:o, s:o}", "cap_w", pfi_json_num(r->run.levels[i].cap_w),
                         "duration_s", pfi_json_num(r->cost.gpu_s[i] / r->cost.n_gpus), "gpu_s",
                         pfi_json_num(r->cost.gpu_s[i]), "lost", pfi_json_num(r->cost.lost[i])));
    return a;
}

static json_t *eval_json(const pfi_study_cost *c)
{
    if (!c->eval_done)
        return json_pack("{s:b, s:s}", "done", 0, "why", c->eval_why);
    json_t *rows = json_array();
    for (int k = 0; k < PFI_COST_EVAL_ROWS; k++) {
        const pfi_cost_eval_row *w = &c->eval.row[k];
        char label[16];
        snprintf(label, sizeof label, w->probe ? "1 probe" : "%d levels", w->levels);
        json_array_append_new(
            rows, json_pack("{s:s, s:i, s:i, s:i, s:o, s:o, s:o, s:o}", "part", label, "levels",
                            w->levels, "runs", w->n, "failed", w->failed, "err_median",
                            pfi_json_num(w->err_median), "err_p90", pfi_json_num(w->err_p90),
                            "cost_median", pfi_json_num(w->cost_median),
                            "cost_excl_baseline_median", pfi_json_num(w->cost_excl_median)));
    }
    return json_pack("{s:b, s:i, s:i, s:f, s:o}", "done", 1, "runs", c->eval.n_runs,
                     "runs_reaching_30pct", c->eval.n_truth, "elapsed_s", c->eval_s, "rows",
                     rows);
}

json_t *pfi_study_cost_json(const pfi_study *s)
{
    const pfi_study_cost *c = &s->cost;
    agg a = aggregate(s, NULL);
    json_t *runs = json_array();
    for (int i = 0; i < s->n; i++) {
        const pfi_study_run *r = &s->runs[i];
        if (!r->cost_ok)
            continue;
        json_array_append_new(
            runs, json_pack("{s:s, s:s, s:i, s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "name",
                            r->run.name, "set", r->set, "n_gpus", r->cost.n_gpus, "unit",
                            r->run.unit == PFI_SAMPLES_PER_S ? "samples/s" : "tokens/s",
                            "seconds", pfi_json_num(r->cost.seconds), "gpu_s",
                            pfi_json_num(r->cost.gpu_s_total), "lost",
                            pfi_json_num(r->cost.lost_total), "lost_frac",
                            pfi_json_num(r->cost.lost_frac), "baseline_rate",
                            pfi_json_num(r->cost.t0), "levels", level_json(r)));
    }
    return json_pack("{s:i, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "runs_timed", c->n_timed,
                     "runs_without_times", s->n - c->n_timed, "seconds", pfi_json_num(a.seconds),
                     "gpu_s", pfi_json_num(a.gpu_s), "tokens_lost", pfi_json_num(a.tokens_lost),
                     "gpu_s_median_per_run", pfi_json_num(a.gpu_s_median), "lost_frac_median",
                     pfi_json_num(a.lost_frac_median), "runs", runs, "probe_vs_sweep",
                     eval_json(c));
}

void pfi_study_cost_text(const pfi_study *s, char *buf, size_t cap)
{
    if (s->cost.n_timed == 0) {
        snprintf(buf, cap, "Not known for these runs: no run has its levels' start and end times "
                           "(imported data, or a store written before they were recorded).");
        return;
    }
    agg a = aggregate(s, NULL);
    char g1[48], g2[48], g3[48];
    snprintf(buf, cap,
             "%d of %d runs have each level's start and end. A level costs its time x the "
             "run's GPUs (GPU-seconds) and the work lost against the run's baseline rate (the "
             "rate at its highest cap) over that time (docs/sweep.md). The whole "
             "characterization took %s GPU-s (%s GPU-h), a median of %s GPU-s per run, "
             "and gave up a median %.1f%% of the work the jobs would have done meanwhile.",
             a.n, s->n, pfi_fmt_sep(g1, sizeof g1, a.gpu_s, 0, 0),
             pfi_fmt_sep(g2, sizeof g2, a.gpu_s / 3600, 1, 0),
             pfi_fmt_sep(g3, sizeof g3, a.gpu_s_median, 0, 0), 100 * a.lost_frac_median);
}

static void agg_row(pfi_table *t, const char *set, agg a)
{
    pfi_table_cell(t, "%s", set);
    pfi_table_cell(t, "%d", a.n);
    char b[48];
    pfi_table_cell(t, "%s", pfi_fmt_sep(b, sizeof b, a.seconds, 0, 0));
    pfi_table_cell(t, "%s", pfi_fmt_sep(b, sizeof b, a.gpu_s, 0, 0));
    pfi_table_cell(t, "%s", pfi_fmt_sep(b, sizeof b, a.gpu_s_median, 0, 0));
    if (isfinite(a.tokens_lost))
        pfi_table_cell(t, "%s", pfi_fmt_sep(b, sizeof b, a.tokens_lost, 0, 0));
    else
        pfi_table_cell(t, "-");
    pfi_table_cell(t, "%.1f%%", 100 * a.lost_frac_median);
}

pfi_table *pfi_study_cost_table(const pfi_study *s)
{
    const char *h[] = {"runs", "timed", "seconds", "GPU-s", "GPU-s per run (median)",
                       "tokens lost", "work lost (median)"};
    pfi_table *t = pfi_table_new(7, h);
    char seen[8][16];
    int ns = 0;
    for (int i = 0; i < s->n && ns < 8; i++) {
        int k = 0;
        while (k < ns && strcmp(seen[k], s->runs[i].set))
            k++;
        if (k == ns)
            snprintf(seen[ns++], sizeof seen[0], "%s", s->runs[i].set);
    }
    for (int k = 0; ns > 1 && k < ns; k++) {
        agg a = aggregate(s, seen[k]);
        if (a.n)
            agg_row(t, seen[k], a);
    }
    agg_row(t, "all", aggregate(s, NULL));
    return t;
}

pfi_table *pfi_study_cost_eval_table(const pfi_study *s)
{
    const char *h[] = {"part", "runs", "failed", "PFI30 error (median)", "PFI30 error (p90)",
                       "cost (median)", "cost without baseline"};
    pfi_table *t = pfi_table_new(7, h);
    for (int k = 0; k < PFI_COST_EVAL_ROWS; k++) {
        const pfi_cost_eval_row *w = &s->cost.eval.row[k];
        char label[16];
        snprintf(label, sizeof label, w->probe ? "1 probe" : "%d levels", w->levels);
        pfi_table_cell(t, "%s", label);
        pfi_table_cell(t, "%d", w->n);
        pfi_table_cell(t, "%d", w->failed);
        if (w->n == 0) {
            for (int j = 0; j < 4; j++)
                pfi_table_cell(t, "-");
            continue;
        }
        pfi_table_cell(t, "%.4f", w->err_median);
        pfi_table_cell(t, "%.4f", w->err_p90);
        pfi_table_cell(t, "%.1f%%", 100 * w->cost_median);
        pfi_table_cell(t, "%.1f%%", 100 * w->cost_excl_median);
    }
    return t;
}
