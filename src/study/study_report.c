/* SPDX-License-Identifier: Apache-2.0 */
/* study_report.c: the study's report: report.md and report.html from the same tables,
 * figures through report/plot, and summary.json.  Every number shown is read from the
 * pfi_study of this run; the only numbers typed in here are the paper's own (for comparison),
 * and they are labelled as the paper's. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <jansson.h>

#include "core/probe.h"
#include "core/settle.h"
#include "report/report.h"
#include "study/model_io.h"
#include "study/study.h"
#include "util/json.h"

/* The paper's headline allocation result (arXiv 2609.11542, abstract): at a 30% power cut,
 * PFI-aware allocation recovers 63% of the equal-vs-oracle gap, about 1.5k tokens/s per job. */
#define PAPER_GAP_30 0.63
#define PAPER_GAIN_30 1500.0

/* ------------------------------------------------------------------ small helpers */

static int cut_index(const pfi_study_alloc *a, double cut)
{
    for (int c = 0; c < a->n_cuts; c++)
        if (fabs(a->cuts[c] - cut) < 1e-9)
            return c;
    return -1;
}

typedef struct dist {
    int n;
    double min, p10, median, p90, max;
} dist;

static dist dist_of(double *v, int n)
{
    dist d = {.n = n, .min = NAN, .p10 = NAN, .median = NAN, .p90 = NAN, .max = NAN};
    if (n == 0)
        return d;
    gsl_sort(v, 1, (size_t)n);
    d.min = v[0];
    d.max = v[n - 1];
    d.median = gsl_stats_quantile_from_sorted_data(v, 1, (size_t)n, 0.5);
    d.p10 = gsl_stats_quantile_from_sorted_data(v, 1, (size_t)n, 0.1);
    d.p90 = gsl_stats_quantile_from_sorted_data(v, 1, (size_t)n, 0.9);
    return d;
}

/* PFI30 of the runs selected by a predicate with an argument. */
typedef int (*run_pred)(const pfi_study_run *r, const void *arg);

static dist pfi30_where(const pfi_study *s, run_pred pred, const void *arg)
{
    double *v = malloc((size_t)(s->n ? s->n : 1) * sizeof *v);
    int n = 0;
    for (int i = 0; v && i < s->n; i++)
        if (isfinite(s->runs[i].pfi30) && pred(&s->runs[i], arg))
            v[n++] = s->runs[i].pfi30;
    dist d = dist_of(v, n);
    free(v);
    return d;
}

static int any_run(const pfi_study_run *r, const void *arg) { return 1; }
static int by_family(const pfi_study_run *r, const void *arg)
{
    return strcmp(r->run.meta.family, (const char *)arg) == 0;
}
static int by_moe(const pfi_study_run *r, const void *arg) { return r->run.meta.moe == *(const int *)arg; }
static int by_finetune(const pfi_study_run *r, const void *arg)
{
    return r->run.meta.finetune == *(const int *)arg;
}
static int by_gpu_type(const pfi_study_run *r, const void *arg)
{
    return strcmp(r->run.gpu_type, (const char *)arg) == 0;
}
static int by_gpu_count(const pfi_study_run *r, const void *arg)
{
    const int *range = arg;
    return r->run.n_gpus >= range[0] && r->run.n_gpus <= range[1];
}

static void dist_row(pfi_table *t, const char *group, const char *value, dist d)
{
    pfi_table_cell(t, "%s", group);
    pfi_table_cell(t, "%s", value);
    pfi_table_cell(t, "%d", d.n);
    if (d.n == 0) {
        for (int i = 0; i < 5; i++)
            pfi_table_cell(t, "-");
        return;
    }
    pfi_table_cell(t, "%.2f", d.min);
    pfi_table_cell(t, "%.2f", d.p10);
    pfi_table_cell(t, "%.2f", d.median);
    pfi_table_cell(t, "%.2f", d.p90);
    pfi_table_cell(t, "%.2f", d.max);
}

/* Distinct values of a string field over the runs, in first-seen order. */
static int distinct(const pfi_study *s, int field, char out[][32], int max)
{
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        const char *v = field == 0 ? s->runs[i].run.meta.family : s->runs[i].run.gpu_type;
        if (!*v)
            continue;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++)
            seen = strcmp(out[k], v) == 0;
        if (!seen && n < max)
            snprintf(out[n++], 32, "%s", v);
    }
    return n;
}

static pfi_table *pfi30_table(const pfi_study *s)
{
    const char *h[] = {"group", "value", "runs", "min", "p10", "median", "p90", "max"};
    pfi_table *t = pfi_table_new(8, h);
    dist_row(t, "all", "", pfi30_where(s, any_run, NULL));
    char vals[32][32];
    int nv = distinct(s, 0, vals, 32);
    for (int i = 0; i < nv; i++)
        dist_row(t, "model family", vals[i], pfi30_where(s, by_family, vals[i]));
    dist fam_unknown = pfi30_where(s, by_family, ""); /* a sweep records none by default */
    if (fam_unknown.n)
        dist_row(t, "model family", "unknown", fam_unknown);
    const int archs[] = {0, 1, -1};
    static const char *const anames[] = {"dense", "MoE", "unknown"};
    for (int i = 0; i < 3; i++) {
        dist d = pfi30_where(s, by_moe, &archs[i]);
        if (d.n)
            dist_row(t, "architecture", anames[i], d);
    }
    /* Every value the runs have, unknown included, so each group sums to all the runs (on the
     * public sweeps the two known tasks covered 44 of 147, beside a row of 0). */
    static const int tasks[] = {0, 1, -1};
    static const char *const tnames[] = {"pretraining", "fine-tuning", "unknown"};
    for (int i = 0; i < 3; i++) {
        dist d = pfi30_where(s, by_finetune, &tasks[i]);
        if (d.n)
            dist_row(t, "task", tnames[i], d);
    }
    static const int ranges[][2] = {{1, 1}, {2, 4}, {5, 8}, {9, 16}, {17, 32}, {33, 1 << 20}};
    static const char *const rnames[] = {"1", "2-4", "5-8", "9-16", "17-32", ">32"};
    for (int i = 0; i < 6; i++) {
        dist d = pfi30_where(s, by_gpu_count, ranges[i]);
        if (d.n)
            dist_row(t, "GPUs per job", rnames[i], d);
    }
    nv = distinct(s, 1, vals, 32);
    for (int i = 0; i < nv; i++)
        dist_row(t, "GPU type", vals[i], pfi30_where(s, by_gpu_type, vals[i]));
    return t;
}

static void eval_row(pfi_table *t, const char *what, const pfi_model_eval *e, int have)
{
    pfi_table_cell(t, "%s", what);
    if (!have) {
        for (int i = 0; i < 4; i++)
            pfi_table_cell(t, "-");
        return;
    }
    pfi_table_cell(t, "%d", e->n);
    pfi_table_cell(t, "%.3f", e->mae_pfi30);
    if (isfinite(e->r2_pfi30))
        pfi_table_cell(t, "%.2f", e->r2_pfi30);
    else
        pfi_table_cell(t, "-");
    pfi_table_cell(t, "%.3f", e->mae_rel70);
}

static pfi_table *predictor_table(const pfi_study *s)
{
    const char *h[] = {"evaluation", "runs", "MAE of PFI30", "R2 of PFI30",
                       "MAE of T/T0 at 70% power"};
    pfi_table *t = pfi_table_new(5, h);
    const pfi_study_pred *p = &s->pred;
    eval_row(t, "leave one job out (training runs)", &p->lojo, 1);
    eval_row(t, "validation runs (never trained on)", &p->validation, p->have_validation);
    /* Its H100 runs' jobs are among the H200 runs trained on: the same jobs on a new GPU
     * (pfi model eval also gives the figure with those jobs held out). */
    eval_row(t, "transfer H200 -> H100 (same jobs, new GPU)", &p->h200_to_h100,
             p->have_h200_to_h100);
    eval_row(t, "transfer H100 -> H200", &p->h100_to_h200, p->have_h100_to_h200);
    return t;
}

/* Features of one importance group, comma-separated. */
static void group_features(const pfi_importance *im, int g, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    for (int f = 0; f < PFI_N_FEATURES && o < n; f++)
        if (im->group_of[f] == g)
            o += (size_t)snprintf(buf + o, n - o, "%s%s", o ? ", " : "", pfi_feature_name(f));
}

static pfi_table *importance_table(const pfi_study *s)
{
    const pfi_importance *im = &s->pred.importance;
    const char *h[] = {"features permuted together", "MAE increase of PFI30 (mean)",
                       "sd over permutations"};
    pfi_table *t = pfi_table_new(3, h);
    int order[PFI_N_FEATURES];
    for (int i = 0; i < im->n_groups; i++)
        order[i] = i;
    for (int i = 1; i < im->n_groups; i++) /* a few groups: insertion sort, descending */
        for (int j = i; j > 0 && im->mean[order[j]] > im->mean[order[j - 1]]; j--) {
            int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    for (int i = 0; i < im->n_groups; i++) {
        char feats[512];
        group_features(im, order[i], feats, sizeof feats);
        pfi_table_cell(t, "%s", feats);
        pfi_table_cell(t, "%.4f", im->mean[order[i]]);
        pfi_table_cell(t, "%.4f", im->sd[order[i]]);
    }
    return t;
}

/* A number with thousands separators, for table cells and text. */
typedef struct numstr {
    char s[48];
} numstr;

static numstr sep(double v, int decimals)
{
    numstr n;
    pfi_fmt_sep(n.s, sizeof n.s, v, decimals, 0);
    return n;
}

static numstr sep_plus(double v, int decimals)
{
    numstr n;
    pfi_fmt_sep(n.s, sizeof n.s, v, decimals, 1);
    return n;
}

/* Significant digits at least, in GPU-weighted relative throughput: a per-job gain there is a
 * few hundredths (printed as 0 with tokens/s's digits), a total a few hundred whose
 * differences the SLA text reads in thousandths of a percent. */
#define GAIN_SIG 3
#define TOTAL_SIG 6

/* Throughput in the study's unit: tokens/s with `decimals`, as ever; relative throughput with
 * at least `sig` significant digits. */
static numstr tput_num(const pfi_study_alloc *a, double v, int decimals, int sig, int plus)
{
    if (a->relative && isfinite(v) && v != 0) {
        int d = sig - 1 - (int)floor(log10(fabs(v)));
        if (d > decimals)
            decimals = d > 9 ? 9 : d;
    }
    numstr n;
    pfi_fmt_sep(n.s, sizeof n.s, v, decimals, plus);
    return n;
}

static pfi_table *alloc_table(const pfi_study *s, int with_sla)
{
    const pfi_study_alloc *a = &s->alloc;
    const char *h[] = {"cut", "equal", "pfi", "oracle", "proportional-to-pfi",
                       "pfi gain/job vs equal", "oracle gain/job vs equal", "gap recovered",
                       with_sla ? "SLA breaches (equal/pfi/oracle)"
                                : "solver optimal on pfi's curves"};
    pfi_table *t = pfi_table_new(9, h);
    for (int c = 0; c < a->n_cuts; c++) {
        const pfi_eval_cell *cell = with_sla ? a->sla_cell[c] : a->cell[c];
        pfi_table_cell(t, "%.0f%%", a->cuts[c] * 100);
        if (cell[PFI_POLICY_EQUAL].infeasible) {
            for (int i = 0; i < 8; i++)
                pfi_table_cell(t, i == 0 ? "infeasible (needs %s W)" : "-",
                               sep(cell[PFI_POLICY_EQUAL].min_budget_w, 0).s);
            continue;
        }
        static const int order[] = {PFI_POLICY_EQUAL, PFI_POLICY_PFI, PFI_POLICY_ORACLE,
                                    PFI_POLICY_PROPORTIONAL};
        for (int k = 0; k < 4; k++)
            pfi_table_cell(t, "%s", tput_num(a, cell[order[k]].total_throughput, 1, TOTAL_SIG,
                                             0).s);
        pfi_table_cell(t, "%s",
                       tput_num(a, cell[PFI_POLICY_PFI].per_job_gain_vs_equal, 1, GAIN_SIG, 1).s);
        pfi_table_cell(t, "%s",
                       tput_num(a, cell[PFI_POLICY_ORACLE].per_job_gain_vs_equal, 1, GAIN_SIG,
                                1).s);
        if (isfinite(cell[PFI_POLICY_PFI].gap_recovered))
            pfi_table_cell(t, "%s%%", sep(cell[PFI_POLICY_PFI].gap_recovered * 100, 0).s);
        else
            pfi_table_cell(t, "n/a (gap ~0)");
        if (with_sla)
            pfi_table_cell(t, "%d/%d/%d%s", a->sla_violations[c][PFI_POLICY_EQUAL],
                           a->sla_violations[c][PFI_POLICY_PFI],
                           a->sla_violations[c][PFI_POLICY_ORACLE],
                           a->sla_violations[c][PFI_POLICY_ORACLE]
                               ? " (SLAs relaxed: budget too low)"
                           : a->sla_pfi_relaxed[c] ? " (pfi relaxed every SLA: they do not fit "
                                                     "on its curves)"
                                                   : "");
        else
            pfi_table_cell(t, "%s", cell[PFI_POLICY_PFI].optimal ? "yes" : "bound");
    }
    return t;
}

/* ------------------------------------------------------------------ figures */

typedef struct figure {
    const char *name, *caption;
    int done; /* 1: drawn; 2: data and script written, gnuplot not found; 3: nothing to draw */
    char why[PFI_ERR_MSG_MAX]; /* done == 3: what the plot said */
} figure;

enum { FIG_CURVES, FIG_HIST, FIG_PRED, FIG_ALLOC, FIG_TRACE, FIG_GRID_POWER, FIG_GRID_TPUT,
       N_FIGS };

/* A run's measured levels as P/P0 -> T/T0, sorted by cap (one line per run); returns n. */
static int run_points(const pfi_study_run *r, double *x, double *y)
{
    int ord[PFI_MAX_LEVELS], n = 0;
    for (int k = 0; k < r->run.n_levels; k++)
        ord[k] = k;
    for (int a = 1; a < r->run.n_levels; a++)
        for (int b = a; b > 0 && r->run.levels[ord[b]].cap_w < r->run.levels[ord[b - 1]].cap_w; b--) {
            int tmp = ord[b];
            ord[b] = ord[b - 1];
            ord[b - 1] = tmp;
        }
    for (int k = 0; k < r->run.n_levels; k++) {
        const pfi_level *lv = &r->run.levels[ord[k]];
        if (!(lv->tput > 0) || !(lv->power_w > 0))
            continue;
        x[n] = lv->power_w / r->index.p0_w;
        y[n] = lv->tput / r->index.t0;
        n++;
    }
    return n;
}

/* One panel per model family (small multiples on shared axes, one colour per family), the
 * axes over every run's points. */
static int fig_curves(const pfi_study *s, const char *dir, pfi_err *err)
{
    int ncurve = 0;
    for (int i = 0; i < s->n; i++)
        ncurve += s->runs[i].index_ok;
    char ttl[128];
    snprintf(ttl, sizeof ttl, "Power -> throughput of %s, one panel per model family",
             ncurve == s->n ? "every run" : "every run with a curve");
    pfi_plot *p = pfi_plot_new(ttl, "power drawn P/P0", "throughput T/T0");
    char fam[32][32];
    int nf = distinct(s, 0, fam, 32);
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (int i = 0; i < s->n; i++) {
        double x[PFI_MAX_LEVELS], y[PFI_MAX_LEVELS];
        int n = s->runs[i].index_ok ? run_points(&s->runs[i], x, y) : 0;
        for (int k = 0; k < n; k++)
            xlo = fmin(xlo, x[k]), xhi = fmax(xhi, x[k]), ylo = fmin(ylo, y[k]), yhi = fmax(yhi, y[k]);
    }
    if (!(xhi > xlo) || !(yhi > ylo))
        xlo = 0.3, xhi = 1, ylo = 0.3, yhi = 1;
    double px = 0.03 * (xhi - xlo), py = 0.03 * (yhi - ylo);
    int labelled = 0;
    /* runs without a family (imported, say) get a panel of their own */
    for (int f = 0; f <= nf; f++) {
        int runs = 0;
        for (int i = 0; i < s->n; i++) {
            const pfi_study_run *r = &s->runs[i];
            int fi = 0;
            while (fi < nf && strcmp(fam[fi], r->run.meta.family) != 0)
                fi++;
            if (fi != f || !r->index_ok)
                continue;
            if (runs++ == 0) {
                int count = 0;
                for (int j = 0; j < s->n; j++)
                    count += s->runs[j].index_ok &&
                             strcmp(s->runs[j].run.meta.family, f < nf ? fam[f] : "") == 0;
                char title[80];
                snprintf(title, sizeof title, "%s (%d run%s)", f < nf ? fam[f] : "no family",
                         count, count == 1 ? "" : "s");
                pfi_plot_panel(p, title, "power drawn P/P0", "throughput T/T0");
            }
            double x[PFI_MAX_LEVELS], y[PFI_MAX_LEVELS];
            int n = run_points(r, x, y);
            pfi_plot_series(p, NULL, PFI_PLOT_LINES, pfi_palette(f), x, y, NULL, NULL, n, 0);
        }
        if (!runs)
            continue;
        double dx[] = {xlo - px, 1.0}, dy[] = {xlo - px, 1.0};
        pfi_plot_series(p, labelled++ ? NULL : "T proportional to P (PFI = 1)", PFI_PLOT_LINES, "#999999", dx, dy,
                        NULL, NULL, 2, 0);
        pfi_plot_xrange(p, xlo - px, xhi + px);
        pfi_plot_yrange(p, ylo - py, yhi + py);
    }
    int rc = pfi_plot_render(p, dir, "fig_curves", err);
    pfi_plot_free(p);
    return rc;
}

static int fig_hist(const pfi_study *s, const char *dir, pfi_err *err)
{
    enum { NB = 24 };
    char types[8][32];
    int nt = distinct(s, 1, types, 8);
    /* Bins cover the runs' PFI30 from the least to the greatest; the axis spans them plus 3%
     * of that span on each side, as every open axis of the report. */
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < s->n; i++)
        if (isfinite(s->runs[i].pfi30))
            lo = fmin(lo, s->runs[i].pfi30), hi = fmax(hi, s->runs[i].pfi30);
    if (!(hi > lo)) /* one value, or none */
        lo = isfinite(lo) ? lo - 0.05 : 0, hi = isfinite(hi) ? hi + 0.05 : 1;
    double w = (hi - lo) / NB, ymax = 1, pad = 0.03 * (hi - lo);
    pfi_plot *p = pfi_plot_new("PFI30 across runs", "PFI30 (fraction of throughput lost per "
                               "fraction of power shed, at 30% shed)", "runs");
    for (int t = 0; t < nt; t++) {
        double x[NB], y[NB] = {0};
        for (int b = 0; b < NB; b++)
            x[b] = lo + (b + 0.5) * w + (nt > 1 ? (t - (nt - 1) / 2.0) * w / nt : 0);
        for (int i = 0; i < s->n; i++) {
            const pfi_study_run *r = &s->runs[i];
            if (!isfinite(r->pfi30) || strcmp(r->run.gpu_type, types[t]) != 0)
                continue;
            int b = (int)((r->pfi30 - lo) / w);
            if (b < 0)
                b = 0;
            if (b >= NB)
                b = NB - 1;
            y[b] += 1;
        }
        for (int b = 0; b < NB; b++)
            ymax = fmax(ymax, y[b]);
        pfi_plot_series(p, types[t], PFI_PLOT_BOXES, pfi_palette(t), x, y, NULL, NULL, NB, 0);
    }
    pfi_plot_boxwidth(p, 0.9 * w / (nt > 0 ? nt : 1));
    pfi_plot_ytics(p, ymax <= 8 ? 1 : ceil(ymax / 8)); /* counts: whole numbers */
    pfi_plot_xrange(p, lo - pad, hi + pad);
    int rc = pfi_plot_render(p, dir, "fig_pfi30_hist", err);
    pfi_plot_free(p);
    return rc;
}

/* The predictions of the predictor table, each against the truth it was scored on: training
 * runs left out one job at a time, validation runs, and the H100 runs predicted by a model
 * trained on H200 runs only (larger squares). */
static int fig_pred(const pfi_study *s, const char *dir, pfi_err *err)
{
    pfi_plot *p = pfi_plot_new("Predicted vs measured PFI30: the predictions scored in the table",
                               "measured PFI30 (from the sweep)",
                               "predicted PFI30 (from baseline telemetry only)");
    static const char *const sets[] = {"main", "db", "validation", "h100"};
    static const char *const labels[] = {"training runs (leave one job out)",
                                         "runs (leave one job out)",
                                         "validation runs (never trained on)",
                                         "H100 runs (transfer from H200)"};
    double lo = INFINITY, hi = -INFINITY;
    for (int k = 0; k < 4; k++) {
        double *x = malloc((size_t)(s->n + 1) * sizeof *x), *y = malloc((size_t)(s->n + 1) * sizeof *y);
        int n = 0;
        for (int i = 0; x && y && i < s->n; i++) {
            const pfi_study_run *r = &s->runs[i];
            if (strcmp(r->set, sets[k]) != 0 || !isfinite(r->meas_pfi30) ||
                !isfinite(r->pred_pfi30))
                continue;
            x[n] = r->meas_pfi30;
            y[n] = r->pred_pfi30;
            lo = fmin(lo, fmin(x[n], y[n]));
            hi = fmax(hi, fmax(x[n], y[n]));
            n++;
        }
        if (n)
            pfi_plot_series(p, labels[k], k == 3 ? PFI_PLOT_MARKS : PFI_PLOT_POINTS,
                            pfi_palette(k == 3 ? 3 : k == 2 ? 1 : 0), x, y, NULL, NULL, n, 0);
        free(x), free(y);
    }
    if (!(hi > lo))
        lo = 0, hi = 1;
    double pad = 0.03 * (hi - lo), d[] = {lo - pad, hi + pad};
    pfi_plot_series(p, "perfect prediction", PFI_PLOT_LINES, "#999999", d, d, NULL, NULL, 2, 0);
    pfi_plot_xrange(p, d[0], d[1]);
    pfi_plot_yrange(p, d[0], d[1]);
    int rc = pfi_plot_render(p, dir, "fig_pred_vs_true", err);
    pfi_plot_free(p);
    return rc;
}

/* Whether the budget of cut k is below what the true SLA floors need: the oracle, which sees
 * the true curves, had to relax them. */
static int sla_relaxed(const pfi_study_alloc *a, int k)
{
    return a->sla_violations[k][PFI_POLICY_ORACLE] > 0;
}

/* A cut deeper than the jobs' minimum caps allow: no policy ran there, with SLAs or without,
 * so its cells hold no throughput and no breach to count or compare. */
static int cut_infeasible(const pfi_study_alloc *a, int k)
{
    return a->cell[k][PFI_POLICY_EQUAL].infeasible || a->sla_cell[k][PFI_POLICY_EQUAL].infeasible;
}

/* How a cut of the SLA table reads: SLA_FIT (the true SLA floors fit the budget), SLA_RELAXED
 * (every policy relaxes them) or SLA_NONE (infeasible: nothing ran). */
enum { SLA_FIT = 0, SLA_RELAXED = 1, SLA_NONE = 2 };
static int sla_kind(const pfi_study_alloc *a, int k)
{
    return cut_infeasible(a, k) ? SLA_NONE : sla_relaxed(a, k) ? SLA_RELAXED : SLA_FIT;
}

/* Whether pfi's SLA feedback ran at cut k: the cut ran, and the SLAs fitted the budget on
 * pfi's own curves (where they did not, pfi relaxed every SLA and its plan stands). */
static int sla_feedback_ran(const pfi_study_alloc *a, int k)
{
    return sla_kind(a, k) != SLA_NONE && !a->sla_pfi_relaxed[k];
}

/* The cuts ("10%, 20%") up to `upto` where pfi relaxed every SLA on its own curves (only those
 * where the true floors fit, with fit_only); how many, and their breaches in *br. */
static int pfi_relaxed_list(const pfi_study_alloc *a, double upto, int fit_only, int *br,
                            char *buf, size_t n)
{
    size_t o = 0;
    int m = 0;
    buf[0] = 0;
    *br = 0;
    for (int k = 0; k < a->n_cuts && o < n; k++) {
        if (sla_kind(a, k) == SLA_NONE || !a->sla_pfi_relaxed[k] || a->cuts[k] > upto + 1e-9 ||
            (fit_only && sla_kind(a, k) != SLA_FIT))
            continue;
        *br += a->sla_violations[k][PFI_POLICY_PFI];
        o += (size_t)snprintf(buf + o, n - o, "%s%.0f%%", m++ ? ", " : "", a->cuts[k] * 100);
    }
    return m;
}

/* The infeasible cuts for the text, "50% (budget 372,158 W, needs 425,320 W)"; how many. */
static int infeasible_list(const pfi_study_alloc *a, char *buf, size_t n);

/* Gap recovered outside these is off the chart (a ratio over a small gap, which would squash
 * the 0-100% the panel is for); the table gives every value. */
#define GAP_FLOOR -1.0
#define GAP_CEIL 2.0

/* pfi's share of the gap with SLAs at cut c was bought with more breaches than the oracle's
 * (or every SLA relaxed on its curves where the oracle kept them): not drawn beside the shares
 * that kept them. */
static int sla_share_bought(const pfi_study_alloc *a, int c)
{
    int o = a->sla_violations[c][PFI_POLICY_ORACLE]; /* > 0: every policy relaxes alike */
    return a->sla_violations[c][PFI_POLICY_PFI] > o || (a->sla_pfi_relaxed[c] && o == 0);
}

static int fig_alloc(const pfi_study *s, const char *dir, pfi_err *err)
{
    const pfi_study_alloc *a = &s->alloc;
    char ylabel[128];
    /* the relative unit's name is too long for the panel's height: gnuplot cut it off */
    snprintf(ylabel, sizeof ylabel, "gain per job over equal (%s)",
             a->relative ? "relative" : a->unit);
    pfi_plot *p = pfi_plot_new("Allocation policies vs power cut", "power cut (% of the jobs' "
                               "baseline draw)", ylabel);
    pfi_plot_layout(p, 2, 1);
    pfi_plot_key_at(p, PFI_KEY_OUTSIDE);
    pfi_plot_panel(p, "Gain per job over the equal cut",
                   "power cut (% of the jobs' baseline draw)", ylabel);
    static const int pol[] = {PFI_POLICY_PFI, PFI_POLICY_ORACLE, PFI_POLICY_PROPORTIONAL,
                              PFI_POLICY_EQUAL};
    for (int k = 0; k < 4; k++) {
        double x[PFI_STUDY_MAX_CUTS], y[PFI_STUDY_MAX_CUTS];
        int n = 0;
        for (int c = 0; c < a->n_cuts; c++) {
            const pfi_eval_cell *cell = &a->cell[c][pol[k]];
            if (!cell->done || cell->infeasible)
                continue;
            x[n] = a->cuts[c] * 100;
            y[n] = cell->per_job_gain_vs_equal;
            n++;
        }
        pfi_plot_series(p, pfi_policy_name(pol[k]), PFI_PLOT_LINESPOINTS, pfi_palette(k), x, y,
                        NULL, NULL, n, 0);
    }
    /* The same as a share of the equal -> oracle gap: equal is 0%, the oracle 100%. */
    pfi_plot_panel(p, "Share of the equal -> oracle gap recovered",
                   "power cut (% of the jobs' baseline draw)", "gap recovered (%)");
    double lo = 0, hi = 100, xs[PFI_STUDY_MAX_CUTS];
    int nx = 0;
    for (int c = 0; c < a->n_cuts; c++) /* the references where a policy ran: an infeasible
                                           * cut has no gap to recover */
        if (!cut_infeasible(a, c))
            xs[nx++] = a->cuts[c] * 100;
    for (int q = 0; q < 3; q++) {
        double x[PFI_STUDY_MAX_CUTS], y[PFI_STUDY_MAX_CUTS];
        int n = 0;
        for (int c = 0; c < a->n_cuts; c++) {
            const pfi_eval_cell *cell = q == 0   ? &a->cell[c][PFI_POLICY_PFI]
                                        : q == 1 ? &a->sla_cell[c][PFI_POLICY_PFI]
                                                 : &a->cell[c][PFI_POLICY_PROPORTIONAL];
            if (!cell->done || cell->infeasible || !isfinite(cell->gap_recovered) ||
                (q == 1 && sla_share_bought(a, c)))
                continue;
            x[n] = a->cuts[c] * 100;
            y[n] = cell->gap_recovered * 100;
            if (cell->gap_recovered >= GAP_FLOOR && cell->gap_recovered <= GAP_CEIL) {
                lo = fmin(lo, y[n]);
                hi = fmax(hi, y[n]);
            }
            n++;
        }
        static const char *const names[] = {"pfi", "pfi with SLAs", "proportional-to-pfi"};
        pfi_plot_series(p, names[q], PFI_PLOT_LINESPOINTS, pfi_palette(q == 0 ? 0 : q == 1 ? 4 : 2),
                        x, y, NULL, NULL, n, 0);
    }
    double o100[PFI_STUDY_MAX_CUTS], o0[PFI_STUDY_MAX_CUTS];
    for (int c = 0; c < nx; c++)
        o100[c] = 100, o0[c] = 0;
    pfi_plot_series(p, "oracle (100%)", PFI_PLOT_LINES, pfi_palette(1), xs, o100, NULL, NULL, nx, 0);
    pfi_plot_series(p, "equal (0%)", PFI_PLOT_LINES, pfi_palette(3), xs, o0, NULL, NULL, nx, 0);
    double pad = 0.03 * (hi - lo);
    pfi_plot_yrange(p, lo - pad, hi + pad);
    int rc = pfi_plot_render(p, dir, "fig_alloc_vs_cut", err);
    pfi_plot_free(p);
    return rc;
}

/* The cuts whose gap recovered is off fig_alloc's chart (off: outside GAP_FLOOR..GAP_CEIL; else
 * n/a: no gap to share), as text ("" when none). */
static void gap_off_chart(const pfi_study *s, int off, char *buf, size_t n)
{
    const pfi_study_alloc *a = &s->alloc;
    size_t o = 0;
    buf[0] = 0;
    for (int c = 0; c < a->n_cuts && o < n; c++)
        for (int q = 0; q < 3 && o < n; q++) {
            const pfi_eval_cell *cell = q == 0   ? &a->cell[c][PFI_POLICY_PFI]
                                        : q == 1 ? &a->sla_cell[c][PFI_POLICY_PFI]
                                                 : &a->cell[c][PFI_POLICY_PROPORTIONAL];
            static const char *const names[] = {"pfi", "pfi with SLAs", "proportional-to-pfi"};
            if (!cell->done || cell->infeasible)
                continue;
            double g = cell->gap_recovered;
            if (off && isfinite(g) && (g < GAP_FLOOR || g > GAP_CEIL))
                o += (size_t)snprintf(buf + o, n - o, "%s%s at %.0f%% (%s%%)", o ? ", " : "",
                                      names[q], a->cuts[c] * 100, sep(g * 100, 0).s);
            else if (!off && !isfinite(g))
                o += (size_t)snprintf(buf + o, n - o, "%s%s at %.0f%%", o ? ", " : "", names[q],
                                      a->cuts[c] * 100);
        }
}

/* Median of the finite values of v[0..n-1] (copied; NAN when none). */
static double finite_median(const double *v, int n)
{
    double c[PFI_STUDY_TRACE_GPUS];
    int m = 0;
    for (int i = 0; i < n && m < PFI_STUDY_TRACE_GPUS; i++)
        if (isfinite(v[i]))
            c[m++] = v[i];
    return dist_of(c, m).median;
}

/* Two panels on one time axis: each GPU's SM clock, and its board power; dashed grey lines at
 * the step and where the signal settles (median over the GPUs, core/settle.h's rule). */
static int fig_trace(const pfi_study *s, const char *dir, pfi_err *err)
{
    const pfi_study_trace *tr = &s->trace;
    char title[256];
    snprintf(title, sizeof title, "%d GPUs of one job, cap lowered to %.0f W at t = %.0f s",
             tr->n_gpus, tr->cap_w, tr->step_at_s);
    pfi_plot *p = pfi_plot_new(title, "time (s)", "SM clock (MHz)");
    pfi_plot_layout(p, 2, 1);
    pfi_plot_key_at(p, PFI_KEY_OUTSIDE);
    for (int panel = 0; panel < 2; panel++) {
        pfi_plot_panel(p, panel ? "Board power (instantaneous samples)" : "SM clock",
                       "time (s)", panel ? "board power (W)" : "SM clock (MHz)");
        double lo = INFINITY, hi = -INFINITY;
        for (int g = 0; g < tr->n_gpus; g++) {
            char label[32];
            snprintf(label, sizeof label, "GPU %d", g);
            const double *y = panel ? tr->power[g] : tr->clock[g];
            for (int k = 0; k < tr->n; k++)
                if (isfinite(y[k]))
                    lo = fmin(lo, y[k]), hi = fmax(hi, y[k]);
            pfi_plot_series(p, panel ? NULL : label, panel ? PFI_PLOT_POINTS : PFI_PLOT_LINES,
                            pfi_palette(g), tr->t, y, NULL, NULL, tr->n, 0);
        }
        double settle = finite_median(panel ? tr->power_settle_s : tr->clock_settle_s, tr->n_gpus);
        double vx[2] = {tr->step_at_s, tr->step_at_s}, vy[2] = {lo, hi};
        pfi_plot_series(p, panel ? NULL : "cap lowered", PFI_PLOT_LINES, "#999999", vx, vy, NULL,
                        NULL, 2, 0);
        if (isfinite(settle)) {
            double sx[2] = {tr->step_at_s + settle, tr->step_at_s + settle};
            pfi_plot_series(p, "settled (median GPU)", PFI_PLOT_LINES, "#555555", sx, vy, NULL,
                            NULL, 2, 0);
        }
    }
    int rc = pfi_plot_render(p, dir, "fig_gpu_trace", err);
    pfi_plot_free(p);
    return rc;
}

/* The grid day over 24 h: one series per policy (and the budget), in hours. */
static int fig_grid(const pfi_study *s, const char *dir, int power, pfi_err *err)
{
    const pfi_grid_day *d = &s->grid.day;
    double *h = malloc(sizeof *h * (size_t)d->n_steps), *b = malloc(sizeof *b * (size_t)d->n_steps);
    if (!h || !b) {
        free(h);
        free(b);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    for (int k = 0; k < d->n_steps; k++) {
        h[k] = d->t[k] / 3600;
        b[k] = isfinite(d->budget_w[k]) ? d->budget_w[k] / 1000 : NAN;
    }
    char yl[96];
    snprintf(yl, sizeof yl, "%s", power ? "site power (kW)"
                                        : (s->grid.day.n_events && !strcmp(s->grid.unit, "tokens")
                                               ? "site throughput (tokens/s)"
                                               : "site throughput (GPU-weighted relative)"));
    pfi_plot *p = pfi_plot_new(power ? "Site power against the events' budget over the day"
                                     : "Site throughput over the day",
                               "hour of the day", yl);
    static const int order[] = {PFI_GD_NONE, PFI_GD_EQUAL, PFI_GD_PFI};
    double *y = malloc(sizeof *y * (size_t)d->n_steps);
    for (int q = 0; y && q < 3; q++) {
        int pol = order[q];
        for (int k = 0; k < d->n_steps; k++)
            y[k] = power ? d->draw_w[pol][k] / 1000 : d->tput[pol][k];
        char label[64];
        snprintf(label, sizeof label, "%s", pol == PFI_GD_NONE ? "no event (counterfactual)"
                                            : pol == PFI_GD_EQUAL ? "equal cut"
                                                                  : "pfi");
        pfi_plot_series(p, label, PFI_PLOT_LINES, pfi_palette(q), h, y, NULL, NULL, d->n_steps,
                        0);
    }
    if (power)
        pfi_plot_series(p, "budget (events, ramps)", PFI_PLOT_LINES, "#d62728", h, b, NULL, NULL,
                        d->n_steps, 0);
    pfi_plot_xrange(p, 0, 24);
    int rc = y ? pfi_plot_render(p, dir, power ? "fig_grid_power" : "fig_grid_tput", err)
               : pfi_err_set(err, PFI_ENOMEM, "out of memory");
    pfi_plot_free(p);
    free(h);
    free(b);
    free(y);
    return rc;
}

static int fig_grid_power(const pfi_study *s, const char *dir, pfi_err *err)
{
    return fig_grid(s, dir, 1, err);
}

static int fig_grid_tput(const pfi_study *s, const char *dir, pfi_err *err)
{
    return fig_grid(s, dir, 0, err);
}

static pfi_table *grid_table(const pfi_study *s)
{
    const pfi_grid_day *d = &s->grid.day;
    char lost[80];
    snprintf(lost, sizeof lost, "lost (%s)", s->grid.unit);
    const char *h[] = {"event", "baseline (kW)", "target (kW)", "policy", "largest excess (W)",
                       "time over target (s)", "energy shed (kWh)", lost, "ramps"};
    pfi_table *t = pfi_table_new(9, h);
    static const int order[] = {PFI_GD_PFI, PFI_GD_EQUAL, PFI_GD_ORACLE, PFI_GD_NONE};
    for (int e = 0; e < d->n_events; e++)
        for (int q = 0; q < 4; q++) {
            const pfi_grid_day_cell *c = &d->cell[e][order[q]];
            pfi_table_cell(t, "%s", d->events[e].id);
            pfi_table_cell(t, "%.1f", d->events[e].baseline_w / 1000);
            pfi_table_cell(t, "%.1f", pfi_event_target_w(&d->events[e]) / 1000);
            pfi_table_cell(t, "%s", order[q] == PFI_GD_NONE ? "none (no control)"
                                                             : pfi_grid_day_policy_name(order[q]));
            pfi_table_cell(t, "%.0f", c->max_excess_w);
            pfi_table_cell(t, "%.0f", c->seconds_over_target);
            pfi_table_cell(t, "%.1f", c->energy_shed_kwh);
            pfi_table_cell(t, "%s", sep(c->tput_lost, fabs(c->tput_lost) >= 100 ? 0 : 2).s);
            pfi_table_cell(t, "%s", c->ramp_ok ? "kept" : "not kept");
        }
    return t;
}

/* ------------------------------------------------------------------ documents */

typedef struct report_doc {
    FILE *md, *html;
} report_doc;

static void para(report_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void para(report_doc *d, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(d->md, "%s\n\n", buf);
    fputs("<p>", d->html);
    for (const char *c = buf; *c; c++) {
        if (*c == '<')
            fputs("&lt;", d->html);
        else if (*c == '>')
            fputs("&gt;", d->html);
        else if (*c == '&')
            fputs("&amp;", d->html);
        else if (*c == '`')
            continue;
        else
            fputc(*c, d->html);
    }
    fputs("</p>\n", d->html);
}

static void heading(report_doc *d, int level, const char *text)
{
    fprintf(d->md, "%.*s %s\n\n", level, "######", text);
    fprintf(d->html, "<h%d>%s</h%d>\n", level, text, level);
}

static void table(report_doc *d, pfi_table *t)
{
    pfi_table_markdown(t, d->md);
    fputc('\n', d->md);
    pfi_table_html(t, d->html);
    pfi_table_free(t);
}

static void figure_ref(report_doc *d, const figure *f)
{
    if (f->done == 2) {
        fprintf(d->md, "*Figure not drawn (gnuplot not found): %s. Its data and script are "
                       "%s.dat and %s.gp; run `gnuplot %s.gp` here to draw it.*\n\n",
                f->caption, f->name, f->name, f->name);
        fprintf(d->html, "<p><em>Figure not drawn (gnuplot not found): %s. Its data and script "
                         "are %s.dat and %s.gp; run <code>gnuplot %s.gp</code> here to draw "
                         "it.</em></p>\n",
                f->caption, f->name, f->name, f->name);
        return;
    }
    if (f->done == 3) { /* said where the figure would be, so a reader sees it is missing */
        fprintf(d->md, "*Figure not drawn (%s): %s.*\n\n", f->why, f->caption);
        fprintf(d->html, "<p><em>Figure not drawn (%s): %s.</em></p>\n", f->why, f->caption);
        return;
    }
    if (!f->done)
        return;
    fprintf(d->md, "![%s](%s.png)\n\n*%s* ([SVG](%s.svg))\n\n", f->caption, f->name, f->caption,
            f->name);
    fprintf(d->html,
            "<figure><img src=\"%s.svg\" alt=\"%s\" width=\"860\"><figcaption>%s "
            "(<a href=\"%s.png\">PNG</a>)</figcaption></figure>\n",
            f->name, f->caption, f->caption, f->name);
}

static const char *html_head =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<title>pfi study</title>\n<style>\n"
    "body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;"
    "color:#222;line-height:1.45}\n"
    "table{border-collapse:collapse;margin:1em 0;font-size:0.92em}\n"
    "th,td{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left}\n"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}\n"
    "th{background:#f4f4f4}\nfigure{margin:1.5em 0}\nfigcaption{color:#555;font-size:0.9em}\n"
    "</style></head><body>\n";

static void comparison(report_doc *d, const pfi_study *s)
{
    const pfi_study_alloc *a = &s->alloc;
    int c = cut_index(a, 0.30);
    heading(d, 2, "Beside the paper");
    if (!a->done || c < 0) {
        para(d, "The allocation experiment did not run at a 30%% cut here, so there is nothing "
                "to set beside the paper's figures (63%% of the gap, ~1.5k tokens/s per job).");
        return;
    }
    const pfi_eval_cell *pc = &a->cell[c][PFI_POLICY_PFI];
    const char *h[] = {"at a 30% cut", "paper (H200 fleet, measured)", "this run"};
    pfi_table *t = pfi_table_new(3, h);
    pfi_table_cell(t, "gap recovered by pfi (equal -> oracle)");
    pfi_table_cell(t, "%.0f%%", PAPER_GAP_30 * 100);
    /* In sample (pfi's setting chosen on these very curves): marked here too, the one place
     * that sets our figure beside the paper's held-out one (the Summary said it; this did not). */
    int in = a->setting_in_sample;
    if (isfinite(pc->gap_recovered))
        pfi_table_cell(t, "%s%%%s", sep(pc->gap_recovered * 100, 0).s, in ? " (in sample)" : "");
    else
        pfi_table_cell(t, "- (oracle = equal)");
    pfi_table_cell(t, "gain per job over equal");
    pfi_table_cell(t, "~%s tokens/s", sep(PAPER_GAIN_30, 0).s);
    pfi_table_cell(t, "%s %s", tput_num(a, pc->per_job_gain_vs_equal, 0, GAIN_SIG, 0).s, a->unit);
    table(d, t);
    double gap = pc->gap_recovered;
    const char *share = !isfinite(gap) ? ""
                        : in ? "pfi's one-probe setting was chosen on these very curves, so this "
                               "figure is in sample and does not compare with the paper's; the "
                               "held-out figure is `pfi evaluate --public --nested-cv`'s "
                               "(docs/allocation.md)."
                        : gap >= PAPER_GAP_30 ? "pfi recovers at least the paper's share of the "
                                                "gap here."
                                              : "pfi recovers less of the gap than the paper "
                                                "reports here.";
    para(d,
         "What matches and what does not. The paper's jobs were measured on real H200s; ours "
         "are %s. %s The per-job gain depends on the jobs' absolute throughput and on how "
         "different their curves are: %s whose jobs differ less (or more) in compute-boundness "
         "than the paper's gives a smaller (or larger) oracle gap, so compare the gap recovered "
         "(a ratio) before the tokens/s. Our pfi policy sees %s.",
         s->source, share, s->opts.from_db ? "a set of runs" : "a simulated fleet",
         a->pfi_curves);
}

/* The runs the PFI30 table leaves out, each with why. */
static void pfi30_left_out(report_doc *d, const pfi_study *s)
{
    int n = 0;
    for (int i = 0; i < s->n; i++)
        n += !isfinite(s->runs[i].pfi30);
    if (n == 0) {
        para(d, "Every run is in the table above.");
        return;
    }
    para(d, "Left out of the table above (%d of %d runs):", n, s->n);
    for (int i = 0; i < s->n; i++) {
        const pfi_study_run *r = &s->runs[i];
        if (!r->index_ok)
            para(d, "- %s: no curve (%s).", r->run.name, r->index_why);
        else if (!isfinite(r->pfi30))
            para(d, "- %s: its sweep sheds at most %.0f%% of its power, short of 30%%; PFI30 "
                    "would be an extrapolation.", r->run.name, r->index.r_max * 100);
    }
}

/* Which runs the predictor table scores, and the runs it predicted but left out, each with why. */
static void pred_left_out(report_doc *d, const pfi_study *s)
{
    int n = 0;
    for (int i = 0; i < s->n; i++)
        n += isfinite(s->runs[i].pred_pfi30) && !isfinite(s->runs[i].meas_pfi30);
    para(d, "Each prediction is scored against the run's measured PFI30, the one of the PFI table "
            "above (the monotone interpolation of its measured points), and only where its sweep "
            "reaches a 30%% shed. The models are trained on every run with telemetry, these "
            "included: their targets are the slowdown at 10-50%% shed read on each training run's "
            "fitted curve (extrapolated where its sweep stopped short), so that they predict a "
            "whole curve for the allocator.");
    if (n == 0)
        return;
    para(d, "Left out of the table's scores and of the figure (%d run%s, also as test runs of "
            "the transfer rows):", n, n == 1 ? "" : "s");
    for (int i = 0; i < s->n; i++) {
        const pfi_study_run *r = &s->runs[i];
        if (isfinite(r->pred_pfi30) && !isfinite(r->meas_pfi30))
            para(d, "- %s: its sweep sheds at most %.0f%% of its power, short of 30%%; its "
                    "measured PFI30 would be an extrapolation (predicted %.3f).",
                 r->run.name, r->index.r_max * 100, r->pred_pfi30);
    }
}

/* The findings a reader came for, each with its protocol, before the detail. */
static void summary(report_doc *d, const pfi_study *s)
{
    heading(d, 2, "Summary");
    dist all = pfi30_where(s, any_run, NULL);
    if (all.n > 0)
        para(d, "- Elasticity: PFI30 (slowdown per unit of power shed at 30%% shed, read on the "
                "monotone interpolation of each run's measured points) has median %.2f over %d runs (10-90%%: %.2f-%.2f).",
             all.median, all.n, all.p10, all.p90);
    if (s->pred.done)
        para(d, "- Runtime prediction from baseline telemetry alone: PFI30 within %.3f on "
                "average for a job left out of training (leave one job out, %d runs)%s.",
             s->pred.lojo.mae_pfi30, s->pred.lojo.n,
             s->pred.have_validation ? "; runs never trained on and other GPUs in the table "
                                       "below"
                                     : "");
    const pfi_study_alloc *a = &s->alloc;
    int c = cut_index(a, 0.30);
    if (a->done && c >= 0) {
        const pfi_eval_cell *pc = &a->cell[c][PFI_POLICY_PFI];
        para(d, "- Allocation at a 30%% cut, scored on the true curves: pfi recovers %s%% of the "
                "gap between an equal cut and an oracle that knows every curve (%s %s per job "
                "over equal); pfi sees %s.",
             sep(pc->gap_recovered * 100, 0).s,
             tput_num(a, pc->per_job_gain_vs_equal, 0, GAIN_SIG, 0).s, a->unit,
             /* the experiment's own note: on runs without telemetry that is the job's own
              * baseline and probe, not "only predictions made without the job's own data" */
             a->pfi_curves[0] ? a->pfi_curves : "predictions made without the job's own data");
        if (a->setting_in_sample)
            para(d, "  This figure is in sample: pfi's one-probe setting was chosen on these "
                    "very curves, the public sweeps (the best of a grid). The held-out figure "
                    "is `pfi evaluate --public --nested-cv`'s (docs/allocation.md).");
        int br = 0, brp = 0, nfb = 0, worse[3] = {0, 0, 0}, ncut[3] = {0, 0, 0}, below = 0,
            nep = 0;
        for (int k = 0; k < a->n_cuts; k++) {
            int r = sla_kind(a, k);
            ncut[r]++;
            if (r == SLA_NONE)
                continue;
            if (a->sla_eq_pred[k].done) {
                nep++;
                below += a->sla_cell[k][PFI_POLICY_PFI].total_throughput <
                         a->sla_eq_pred[k].total_throughput;
            }
            if (a->cuts[k] <= 0.30 + 1e-9 && sla_feedback_ran(a, k))
                br += a->sla_violations[k][PFI_POLICY_PFI],
                    brp += a->sla_plan_violations[k], nfb++;
            worse[r] += a->sla_cell[k][PFI_POLICY_PFI].total_throughput <
                        a->sla_cell[k][PFI_POLICY_EQUAL].total_throughput;
        }
        char rel[160] = "", none[320] = "";
        if (ncut[SLA_RELAXED] > 0)
            snprintf(rel, sizeof rel,
                     " and at %d of the %d where every policy must relax the SLAs (where equal, "
                     "its floors on the true curves, is the oracle; see \"With SLAs\")",
                     worse[SLA_RELAXED], ncut[SLA_RELAXED]);
        if (ncut[SLA_NONE] > 0) {
            char inf[256];
            infeasible_list(a, inf, sizeof inf);
            snprintf(none, sizeof none,
                     " At %s the budget is below what the jobs' minimum caps need: no policy "
                     "runs there.",
                     inf);
        }
        /* the feedback is credited only where it ran: where the SLAs did not fit on pfi's
         * curves, it relaxed every SLA and its plan's breaches are its breaches */
        char rxl[128], fb[512];
        int brr, nrx = pfi_relaxed_list(a, 0.30, 0, &brr, rxl, sizeof rxl);
        static const char norun[] = "the SLAs do not fit the budget on its own curves, so it "
                                    "relaxed every SLA and no feedback ran";
        if (nrx == 0)
            snprintf(fb, sizeof fb, " once it has seen each SLA job's %s at its cap (%d at its "
                     "plan, before that feedback)", a->unit, brp);
        else if (nfb == 0)
            snprintf(fb, sizeof fb, ", all at its plan (at %s %s)", rxl, norun);
        else
            snprintf(fb, sizeof fb, " (%d once it has seen each SLA job's %s at its cap, %d at "
                     "its plan before that feedback; %d at %s, where %s)", br, a->unit, brp,
                     brr, rxl, norun);
        para(d, "- With SLAs (every third job may lose at most %.0f%%): pfi breaches %d SLA(s) "
                "at cuts up to 30%% on the true curves%s, and gives less total throughput than "
                "the equal cut at %d of the %d cut%s where the true SLA floors fit the budget%s. "
                "Given pfi's information (its SLA floors on pfi's curves), an equal cut beats "
                "pfi at %d of %d cut%s.%s",
             a->sla * 100, br + brr, fb, worse[SLA_FIT], ncut[SLA_FIT],
             ncut[SLA_FIT] == 1 ? "" : "s", rel, below, nep, nep == 1 ? "" : "s", none);
    }
}

/* Cuts ("10%, 20%") where sla_kind(k) == kind; returns how many. */
static int sla_cut_list(const pfi_study_alloc *a, int kind, char *buf, size_t n)
{
    size_t o = 0;
    int m = 0;
    buf[0] = 0;
    for (int k = 0; k < a->n_cuts && o < n; k++)
        if (sla_kind(a, k) == kind)
            o += (size_t)snprintf(buf + o, n - o, "%s%.0f%%", m++ ? ", " : "", a->cuts[k] * 100);
    return m;
}

static int infeasible_list(const pfi_study_alloc *a, char *buf, size_t n)
{
    size_t o = 0;
    int m = 0;
    buf[0] = 0;
    for (int k = 0; k < a->n_cuts && o < n; k++) {
        if (!cut_infeasible(a, k))
            continue;
        const pfi_eval_cell *e = a->cell[k][PFI_POLICY_EQUAL].infeasible
                                     ? &a->cell[k][PFI_POLICY_EQUAL]
                                     : &a->sla_cell[k][PFI_POLICY_EQUAL];
        o += (size_t)snprintf(buf + o, n - o, "%s%.0f%% (budget %s W, needs %s W)",
                              m++ ? ", " : "", a->cuts[k] * 100, sep(e->budget_w, 0).s,
                              sep(e->min_budget_w, 0).s);
    }
    return m;
}

/* The equal cut given pfi's information, against pfi and against equal with the true floors. */
static void sla_same_information(report_doc *d, const pfi_study_alloc *a)
{
    char br[256] = "", vs[512] = "";
    size_t nb = 0, nv = 0;
    int above = 0, m = 0;
    for (int k = 0; k < a->n_cuts && nb < sizeof br && nv < sizeof vs; k++) {
        const pfi_eval_cell *ep = &a->sla_eq_pred[k], *p = &a->sla_cell[k][PFI_POLICY_PFI];
        if (!ep->done || !(ep->total_throughput > 0))
            continue;
        nb += (size_t)snprintf(br + nb, sizeof br - nb, "%s%d at %.0f%%", m ? ", " : "",
                               a->sla_eq_pred_violations[k], a->cuts[k] * 100);
        nv += (size_t)snprintf(vs + nv, sizeof vs - nv, "%s%+.2f%% at %.0f%%", m ? ", " : "",
                               (p->total_throughput / ep->total_throughput - 1) * 100,
                               a->cuts[k] * 100);
        above += p->total_throughput >= ep->total_throughput;
        m++;
    }
    if (m > 0)
        para(d,
             "Equal above is given the true curves for its SLA floors, information no operator "
             "has without a full sweep of every SLA job. An equal cut given pfi's information "
             "instead (each SLA floor read on pfi's estimated curve, with the SLAs pfi planned at "
             "that cut, relaxed alike), scored on the true curves (summary.json: "
             "equal-on-pfi-curves), breaches %s; pfi's total throughput against it is %s (pfi "
             "at or above it at %d of %d cuts): what pfi's allocation, rather than its "
             "information, is worth.",
             br, vs, above, m);
}

/* Where pfi's power goes against equal's, SLA jobs and the others apart, cut by cut; and, where
 * every policy relaxes, how close the SLA jobs' power is under both (within SLA_SAME_POWER of
 * it, 0.1%: the same power, split otherwise). */
#define SLA_SAME_POWER 0.001
static void sla_power_split(report_doc *d, const pfi_study_alloc *a)
{
    char sl[512] = "", ot[512] = "";
    size_t ns = 0, no = 0;
    int m = 0, nrel = 0;
    double rel_off = 0; /* at relaxed cuts: max |pfi/equal - 1| of the SLA jobs' power */
    for (int k = 0; k < a->n_cuts && ns < sizeof sl && no < sizeof ot; k++) {
        const pfi_eval_cell *e = &a->sla_cell[k][PFI_POLICY_EQUAL], *p = &a->sla_cell[k][PFI_POLICY_PFI];
        if (!e->done || !p->done || e->infeasible || p->infeasible)
            continue;
        double ps = a->sla_jobs_power[k][PFI_POLICY_PFI], es = a->sla_jobs_power[k][PFI_POLICY_EQUAL];
        double ts = a->sla_jobs_tput[k][PFI_POLICY_PFI], tes = a->sla_jobs_tput[k][PFI_POLICY_EQUAL];
        ns += (size_t)snprintf(sl + ns, sizeof sl - ns, "%s%s W, %s at %.0f%%", m ? "; " : "",
                               sep_plus(ps - es, 0).s, tput_num(a, ts - tes, 0, GAIN_SIG, 1).s,
                               a->cuts[k] * 100);
        no += (size_t)snprintf(ot + no, sizeof ot - no, "%s%s W, %s at %.0f%%", m ? "; " : "",
                               sep_plus((p->power_w - ps) - (e->power_w - es), 0).s,
                               tput_num(a, (p->total_throughput - ts) -
                                               (e->total_throughput - tes),
                                        0, GAIN_SIG, 1).s,
                               a->cuts[k] * 100);
        m++;
        if (sla_relaxed(a, k) && es > 0)
            rel_off = fmax(rel_off, fabs(ps / es - 1)), nrel++;
    }
    if (m == 0)
        return;
    para(d,
         "Where the power goes, pfi less equal (caps summed over GPUs; %s on the true curves): "
         "the SLA jobs %s; the other jobs %s.",
         a->unit, sl, ot);
    if (nrel > 0 && rel_off <= SLA_SAME_POWER)
        para(d,
             "Where every policy relaxes the SLAs, pfi gives the SLA jobs the same power as equal "
             "to within %.3f%% of it: the difference in throughput there comes from how that "
             "power is split among the SLA jobs (each at its relaxed floor, read on pfi's curve "
             "or on the true one), not from what the SLA jobs take from the others.",
             rel_off * 100);
    else if (nrel > 0)
        para(d,
             "Where every policy relaxes the SLAs, the SLA jobs' power under pfi differs from "
             "equal's by up to %.2f%% of it.",
             rel_off * 100);
}

/* Where every policy relaxes: pfi's worst excess slowdown against equal's, cut by cut.  The
 * relaxed floors take nearly the whole budget, and equal's split of it holds every SLA job at
 * the least common relaxation on its true curve; any other split leaves some SLA job below
 * that floor, further past its SLA, so pfi can be above equal there only at that price. */
static void sla_relaxed_worst(report_doc *d, const pfi_study_alloc *a)
{
    char ws[512] = "";
    size_t nw = 0;
    int m = 0, larger = 0;
    for (int k = 0; k < a->n_cuts && nw < sizeof ws; k++) {
        const pfi_eval_cell *e = &a->sla_cell[k][PFI_POLICY_EQUAL], *p = &a->sla_cell[k][PFI_POLICY_PFI];
        if (!sla_relaxed(a, k) || !e->done || !p->done)
            continue;
        double wp = a->sla_worst[k][PFI_POLICY_PFI], we = a->sla_worst[k][PFI_POLICY_EQUAL];
        nw += (size_t)snprintf(ws + nw, sizeof ws - nw, "%s%.4f (equal %.4f) at %.0f%%",
                               m ? ", " : "", wp, we, a->cuts[k] * 100);
        larger += wp > we;
        m++;
    }
    if (m > 0)
        para(d,
             "There pfi's largest true slowdown past the SLA is %s, larger than equal's at %d of "
             "%d cuts: with the relaxed floors taking nearly the whole budget, any split of it "
             "other than equal's leaves some SLA job below its true relaxed floor, further past "
             "its SLA than any job under equal. pfi can be above equal there only at that "
             "price, or by reading the true curves.",
             ws, larger, m);
}

/* pfi's SLA feedback (rule F), cut by cut: the breaches of its plan and what correcting the
 * breaching jobs' curves through what was seen did; and the cuts where it did not run because
 * pfi relaxed every SLA on its own curves though the true floors fit. */
static void sla_feedback_text(report_doc *d, const pfi_study_alloc *a)
{
    char plan[256] = "", fixd[384] = "", unfit[128] = "";
    size_t np = 0, nf = 0, nu = 0;
    int m = 0, any = 0, plan_br = 0;
    for (int k = 0; k < a->n_cuts && np < sizeof plan && nf < sizeof fixd && nu < sizeof unfit;
         k++) {
        if (!sla_feedback_ran(a, k) || sla_relaxed(a, k))
            continue;
        plan_br += a->sla_plan_violations[k];
        np += (size_t)snprintf(plan + np, sizeof plan - np, "%s%d at %.0f%%", m++ ? ", " : "",
                               a->sla_plan_violations[k], a->cuts[k] * 100);
        if (a->sla_fb_jobs[k] > 0)
            nf += (size_t)snprintf(fixd + nf, sizeof fixd - nf, "%s%d job%s in %d round%s at %.0f%%",
                                   any++ ? ", " : "", a->sla_fb_jobs[k],
                                   a->sla_fb_jobs[k] == 1 ? "" : "s", a->sla_fb_rounds[k],
                                   a->sla_fb_rounds[k] == 1 ? "" : "s", a->cuts[k] * 100);
        if (a->sla_fb_unfit[k])
            nu += (size_t)snprintf(unfit + nu, sizeof unfit - nu, "%s%.0f%%", nu ? ", " : "",
                                   a->cuts[k] * 100);
    }
    char rxl[128];
    int brr, nrx = pfi_relaxed_list(a, 1, 1, &brr, rxl, sizeof rxl);
    if ((!m && !nrx) || a->sla_rounds <= 0)
        return;
    char tail[640] = "", rx[512] = "";
    if (m && any)
        snprintf(tail, sizeof tail, " At its plan, before any feedback, pfi breached %s. The "
                 "feedback corrected %s.%s%s%s", plan, fixd, unfit[0] ? " At " : "", unfit,
                 unfit[0] ? " a correction no longer fitted the budget, and the allocation "
                            "before it was kept." : "");
    else if (m)
        snprintf(tail, sizeof tail, " At its plan, before any feedback, pfi breached %s. %s",
                 plan, plan_br ? "The feedback corrected no job."
                               : "No SLA job breached at the plan, so the feedback changed "
                                 "nothing.");
    if (nrx)
        snprintf(rx, sizeof rx, " At %s the true SLA floors fit the budget, but the SLAs do not "
                 "fit it on pfi's own curves: pfi relaxed every SLA there, so no feedback ran, "
                 "and its %d breach%s there %s its plan's.", rxl, brr, brr == 1 ? "" : "es",
                 brr == 1 ? "is" : "are");
    para(d, "%s Its plan is made on curves "
            "read before any cap is set; once a cap is set, the job's %s at that cap is "
            "in its own log (here: its true curve at that cap), and a job whose slowdown breaks "
            "its SLA has its curve corrected through what was seen, and pfi plans the cut "
            "again (at most %d rounds; equal and the oracle need none, their floors are the "
            "true ones). Where every SLA is relaxed no feedback runs.%s%s",
         !m    ? "pfi's SLA feedback ran at no cut here."
         : nrx ? "pfi's breaches above are counted after its SLA feedback where it ran."
               : "pfi's breaches above are counted after its SLA feedback.",
         a->unit, a->sla_rounds, tail, rx);
}

/* What the SLA table shows, read from it. */
static void sla_discussion(report_doc *d, const pfi_study *s)
{
    const pfi_study_alloc *a = &s->alloc;
    char br[256] = "", vs[512] = "", fit[128], rel[128];
    size_t nb = 0, nv = 0;
    int worse_fit = 0;
    double room = 0, off = 0; /* at relaxed cuts: max |oracle/equal - 1|, max |pfi/equal - 1| */
    int m = 0;
    for (int k = 0; k < a->n_cuts && nb < sizeof br && nv < sizeof vs; k++) {
        const pfi_eval_cell *e = &a->sla_cell[k][PFI_POLICY_EQUAL], *p = &a->sla_cell[k][PFI_POLICY_PFI];
        const pfi_eval_cell *o = &a->sla_cell[k][PFI_POLICY_ORACLE];
        if (sla_kind(a, k) == SLA_NONE)
            continue;
        nb += (size_t)snprintf(br + nb, sizeof br - nb, "%s%d at %.0f%%",
                               m ? ", " : "", a->sla_violations[k][PFI_POLICY_PFI],
                               a->cuts[k] * 100);
        double r = e->total_throughput > 0 ? p->total_throughput / e->total_throughput - 1 : NAN;
        nv += (size_t)snprintf(vs + nv, sizeof vs - nv, "%s%+.2f%% at %.0f%%",
                               m ? ", " : "", r * 100, a->cuts[k] * 100);
        m++;
        if (!sla_relaxed(a, k))
            worse_fit += p->total_throughput < e->total_throughput;
        else if (e->total_throughput > 0) {
            room = fmax(room, fabs(o->total_throughput / e->total_throughput - 1));
            off = fmax(off, fabs(r));
        }
    }
    int nfit = sla_cut_list(a, SLA_FIT, fit, sizeof fit);
    int nrel = sla_cut_list(a, SLA_RELAXED, rel, sizeof rel);
    char inf[256];
    int ninf = infeasible_list(a, inf, sizeof inf);
    if (m > 0)
        para(d, "Reading the table: pfi's SLA breaches on the true curves are %s; its total "
                "throughput against the equal cut is %s.", br, vs);
    sla_feedback_text(d, a);
    if (ninf > 0)
        para(d, "At %s the budget is below what the jobs' minimum caps need: no policy can run "
                "there, with SLAs or without, so those cuts have no throughput and no breach to "
                "read.", inf);
    char rxl[128];
    int brr, nrx = pfi_relaxed_list(a, 1, 1, &brr, rxl, sizeof rxl);
    /* where pfi relaxed every SLA on its own curves, its breaches are not a margin given up */
    static const char relaxing[] = "the SLAs do not fit the budget even on pfi's plain reading "
                                   "of its curves, so it relaxed every SLA, reading its SLA jobs "
                                   "on its calibrated curves, and its breaches there";
    char rx[512] = "";
    if (nrx)
        snprintf(rx, sizeof rx, " At %s, though, %s (%d) come from that relaxing.", rxl,
                 relaxing, brr);
    if (nfit > 0 && nrx == nfit)
        para(d,
             "At %s the true SLA floors fit the budget. Equal and the oracle set their floors on "
             "the true curves and meet every SLA by construction (pfi is below equal at %d of "
             "these %d cuts). pfi's own curves say otherwise: %s (%d) come from that relaxing, "
             "not from a margin given up.",
             fit, worse_fit, nfit, relaxing, brr);
    else if (nfit > 0)
        para(d,
             "At %s the true SLA floors fit the budget. Equal and the oracle set their floors on "
             "the true curves and meet every SLA by construction; pfi sets them on its estimates "
             "held back by its margin, which costs throughput (pfi is below equal at %d of these "
             "%d cuts) and, where its conservative floors do not fit but the true ones do, SLAs: "
             "it gives up part of the margin there and the breaches above follow.%s",
             fit, worse_fit, nfit, rx);
    if (nrel > 0)
        para(d,
             "At %s the budget is below what the true SLA floors need, and every policy relaxes "
             "the SLAs by the least common amount that fits the curves it sees. The relaxed "
             "floors then take nearly the whole budget and leave almost nothing to allocate: "
             "equal, whose floors are read on the true curves, is the oracle to within %.3f%% of "
             "total throughput, and pfi differs from equal by up to %.3f%%, by where its relaxed "
             "floors fall on the true curves (read on its calibrated curves: a curve that "
             "flatters a job at low caps would place that job low, and the calibration removes "
             "that on average, not job by job), not by how it allocates what is left. pfi >= equal "
             "is no test of the allocation there; the breaches and the worst excess slowdown are "
             "the comparison that means something.",
             rel, room * 100, off * 100);
    if (nrel > 0)
        sla_relaxed_worst(d, a);
    sla_power_split(d, a);
    sla_same_information(d, a);
}

/* What characterizing the runs cost, and how much of a sweep a PFI30 needs. */
static void cost_section(report_doc *d, const pfi_study *s)
{
    const pfi_study_cost *c = &s->cost;
    heading(d, 2, "What characterization costs");
    char text[1024];
    pfi_study_cost_text(s, text, sizeof text);
    para(d, "%s", text);
    if (c->n_timed > 0)
        table(d, pfi_study_cost_table(s));
    heading(d, 3, "How much of a sweep a PFI30 needs");
    if (!c->eval_done) {
        para(d, "Not done: %s.", c->eval_why);
        return;
    }
    para(d,
         "PFI30 estimated from one probe (the baseline and the level nearest a %.0f%% power "
         "shed, read through a power law) and from sweeps of 2-6 of each run's levels, against "
         "the PFI30 of the run's full sweep (%d of %d runs reach a 30%% shed); cost is the "
         "share of the full sweep's levels used (`pfi evaluate --cost`, docs/sweep.md). The "
         "target is an error within 0.03 for at most 10%% of a full sweep.",
         100 * PFI_PROBE_DEPTH, c->eval.n_truth, c->eval.n_runs);
    table(d, pfi_study_cost_eval_table(s));
    for (int k = 0; k < PFI_COST_EVAL_ROWS; k++) {
        const pfi_cost_eval_row *r = &c->eval.row[k];
        if (!r->probe && r->levels < 3 && r->n == 0 && r->failed > 0)
            para(d, "%d levels give no PFI30 by this procedure (every run is counted failed): "
                    "the index needs at least three levels to fit a curve, so the one-probe "
                    "row is the %d-level estimate, read through a power law (docs/sweep.md).",
                 r->levels, r->levels);
    }
}

/* The importance table with its method and caveat. */
static void importance(report_doc *d, const pfi_study *s)
{
    const pfi_study_pred *p = &s->pred;
    if (!p->have_importance) {
        para(d, "Feature importance not computed (a fold's model is missing).");
        return;
    }
    const pfi_importance *im = &p->importance;
    para(d,
         "Which telemetry the predictor relies on: grouped permutation importance. Features are "
         "standardized (z-scores over the %d training runs) and grouped when their correlation "
         "is at least %.1f in absolute value (single linkage), giving %d groups; each group's "
         "features are permuted together, %d times (seed %llu), and each training run is "
         "predicted by the model of its fold, which never saw its job. Importance = increase of "
         "the held-out MAE of PFI30 (%.4f unpermuted), over the %d training runs the table "
         "above scores. Caveat: this measures what this fitted "
         "model uses, not what causes elasticity; features in one group share their credit and "
         "cannot be told apart, and groups correlated below the threshold still lend each other "
         "some of it, so a group with a small importance may still carry information the model "
         "gets elsewhere.",
         p->n_train, im->corr, im->n_groups, im->repeats, im->seed, im->mae0, p->lojo.n);
    table(d, importance_table(s));
}

/* The trace's caption: settling times computed from the trace by core/settle.h's rule. */
static void trace_text(report_doc *d, const pfi_study *s)
{
    const pfi_study_trace *tr = &s->trace;
    double pw[PFI_STUDY_TRACE_GPUS], ck[PFI_STUDY_TRACE_GPUS];
    int npw = 0, nck = 0, ng = tr->n_gpus;
    for (int g = 0; g < ng; g++) {
        if (isfinite(tr->power_settle_s[g]))
            pw[npw++] = tr->power_settle_s[g];
        if (isfinite(tr->clock_settle_s[g]))
            ck[nck++] = tr->clock_settle_s[g];
    }
    double fin[PFI_STUDY_TRACE_GPUS];
    int nfin = 0;
    for (int g = 0; g < ng; g++)
        if (isfinite(tr->clock_final_s[g]))
            fin[nfin++] = tr->clock_final_s[g];
    dist dp = dist_of(pw, npw), dc = dist_of(ck, nck), df = dist_of(fin, nfin);
    char ptxt[160], ctxt[160], ftxt[160];
    snprintf(ftxt, sizeof ftxt, nfin ? "%.2f s (median over %d GPUs; %.2f-%.2f s)" : "not within "
             "the trace on any GPU", df.median, nfin, df.min, df.max);
    snprintf(ptxt, sizeof ptxt, npw ? "%.2f s (median over %d GPUs; %.2f-%.2f s)" : "not within "
             "the trace on any GPU", dp.median, npw, dp.min, dp.max);
    snprintf(ctxt, sizeof ctxt, nck ? "%.2f s (median over %d GPUs; %.2f-%.2f s)" : "not within "
             "the trace on any GPU", dc.median, nck, dc.min, dc.max);
    para(d,
         "%s: the same cap gives each GPU a slightly different clock (manufacturing "
         "variation), and the synchronous job runs at its slowest GPU. After the cap is lowered "
         "at t = %.0f s, board power settles in %s and the SM clock in %s%s. Settled means: a "
         "moving median over %.2f s stays, from then to the end of the trace, within %.0f%% of "
         "the step's size of the final level (the median of the last %.0f s); the rule was "
         "fixed before it was run, and the moving median keeps single noisy samples from "
         "deciding it. The clock moves in steps, and that band can be wider than one of them, "
         "so a clock a step above its final value already counts as settled: each GPU's clock "
         "reaches its final value (the first sample from which it equals the trace's last "
         "sample to the end) in %s.",
         tr->run, tr->step_at_s, ptxt, ctxt,
         npw < ng || nck < ng ? " (GPUs that never settle by this rule are left out of these "
                                "figures)"
                              : "",
         PFI_SETTLE_WINDOW_S, PFI_SETTLE_BAND * 100, PFI_SETTLE_FINAL_S, ftxt);
}

/* w as one shell word: as it is when it needs no quoting, else in single quotes. */
static size_t shell_word(char *buf, size_t n, const char *w)
{
    if (w[0] && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                          "_./,:=+-%@") == strlen(w))
        return (size_t)snprintf(buf, n, "%s", w);
    size_t o = (size_t)snprintf(buf, n, "'");
    for (const char *c = w; *c && o < n; c++)
        o += (size_t)snprintf(buf + o, n - o, *c == '\'' ? "'\\''" : "%c", *c);
    return o < n ? o + (size_t)snprintf(buf + o, n - o, "'") : o;
}

/* The command that gives this study again: its runs (the store, or the fleet and its seed) and
 * every option that changes a result where it is not the default. */
static void reproduce_cmd(const pfi_study *s, const char *dir, char *buf, size_t n)
{
    const pfi_study_opts *o = &s->opts;
    pfi_study_opts def;
    pfi_study_defaults(&def);
    size_t w = (size_t)snprintf(buf, n, "pfi study %s ", o->from_db ? "--db" : "--fleet");
    /* a study set up by hand (a test's, zeroed) names no fleet: the default one */
    const char *fleet = o->fleet ? o->fleet : def.fleet ? def.fleet : "paper";
    w += shell_word(buf + w, w < n ? n - w : 0, o->from_db ? o->from_db : fleet);
    if (!o->from_db && w < n) /* a store's study takes no seed: its runs are the store's */
        w += (size_t)snprintf(buf + w, n - w, " --seed %llu", (unsigned long long)o->seed);
    int same = o->n_cuts == def.n_cuts;
    for (int c = 0; same && c < o->n_cuts; c++)
        same = o->cuts[c] == def.cuts[c];
    for (int c = 0; !same && c < o->n_cuts && w < n; c++)
        w += (size_t)snprintf(buf + w, n - w, "%s%g", c ? "," : " --cuts ", o->cuts[c]);
    if (o->sla != def.sla && w < n)
        w += (size_t)snprintf(buf + w, n - w, " --sla %g", o->sla);
    if (o->direct && w < n)
        w += (size_t)snprintf(buf + w, n - w, " --direct");
    if (o->scenario && w < n)
        w += (size_t)snprintf(buf + w, n - w, " --scenario %s", o->scenario);
    if (w < n)
        w += (size_t)snprintf(buf + w, n - w, " --out ");
    if (w < n)
        shell_word(buf + w, n - w, dir);
}

static int write_docs(const pfi_study *s, const char *dir, const figure *figs, pfi_err *err)
{
    char mdp[1100], htp[1100];
    snprintf(mdp, sizeof mdp, "%s/report.md", dir);
    snprintf(htp, sizeof htp, "%s/report.html", dir);
    report_doc d = {fopen(mdp, "w"), fopen(htp, "w")};
    if (!d.md || !d.html) {
        if (d.md)
            fclose(d.md);
        if (d.html)
            fclose(d.html);
        return pfi_err_set(err, PFI_EIO, "cannot write the report in %s: %s", dir,
                           strerror(errno));
    }
    fputs(html_head, d.html);
    heading(&d, 1, "pfi study: power flexibility of training jobs");
    int nidx = 0;
    for (int i = 0; i < s->n; i++)
        nidx += s->runs[i].index_ok;
    para(&d,
         "Source: %s; %d runs, %d with a PFI curve. Store: `%s`. Every number below was "
         "computed in this run (%.1f s); the paper's figures are quoted where labelled. PFI is "
         "pfi's definition (docs/pfi.md): r = 1 - P/P0 the power shed (as drawn), s = 1 - T/T0 "
         "the slowdown, PFI(r) = s/r; PFI30 is `pfi index`'s headline, the monotone "
         "interpolation of a run's measured points at 30%% shed (a run whose sweep stops short "
         "of 30%% has none here: on its fitted curve it would be an extrapolation).",
         s->source, s->n, nidx, s->db_path, s->elapsed_s);
    summary(&d, s);
    if (s->n_notes) {
        heading(&d, 3, "Notes: steps not done, and caveats");
        for (int i = 0; i < s->n_notes; i++)
            para(&d, "- %s", s->notes[i]);
    }

    heading(&d, 2, "Power flexibility across runs");
    figure_ref(&d, &figs[FIG_CURVES]);
    table(&d, pfi30_table(s));
    pfi30_left_out(&d, s);
    figure_ref(&d, &figs[FIG_HIST]);

    heading(&d, 2, "Predicting PFI at runtime from telemetry");
    if (s->pred.done) {
        para(&d,
             "Model selected by cross-validation: %s, trained on %d runs' baseline telemetry "
             "(no sweep). Predicted curves, not only PFI30, feed the allocator.",
             pfi_model_kind_name(s->pred.model_kind), s->pred.n_train);
        table(&d, predictor_table(s));
        pred_left_out(&d, s);
        figure_ref(&d, &figs[FIG_PRED]);
        importance(&d, s);
    } else {
        para(&d, "Not done: %s.", s->pred.why);
    }

    heading(&d, 2, "Allocating power under a budget");
    if (s->alloc.done) {
        para(&d,
             "Jobs: %s. Budget B = (1 - cut) x the jobs' baseline draw, on the sum of caps. "
             "Throughput (%s) is always scored on the TRUE curves; equal and oracle see the "
             "truth, pfi sees %s. gap recovered = (pfi - equal) / (oracle - equal).",
             s->alloc.population, s->alloc.unit, s->alloc.pfi_curves);
        table(&d, alloc_table(s, 0));
        figure_ref(&d, &figs[FIG_ALLOC]);
        para(&d, "gap recovered is n/a (gap ~0) where the oracle is not above equal by at least "
                 "%.1f%% of equal's total throughput: a tenth of the 1%% throughput change pfi's "
                 "rules treat as noise in a measured curve (docs/allocation.md), so that there is "
                 "no gap whose share means anything. \"solver optimal on pfi's curves\" says "
                 "whether the allocator proved its plan the best on the curves pfi saw (yes) or "
                 "stopped at its bound (bound): not that pfi matched the oracle, which the gap "
                 "recovered measures.", PFI_GAP_MIN_SHARE * 100);
        char off[512], na[512];
        gap_off_chart(s, 1, off, sizeof off);
        gap_off_chart(s, 0, na, sizeof na);
        if (figs[FIG_ALLOC].done && figs[FIG_ALLOC].done != 3 && na[0])
            para(&d, "Left off the lower panel (n/a: no gap to share): %s.", na);
        if (figs[FIG_ALLOC].done && figs[FIG_ALLOC].done != 3 && off[0])
            para(&d, "Off the lower panel's chart (below %.0f%% or above %.0f%%, where the equal "
                     "-> oracle gap is small and the ratio would squash the rest): %s; see the "
                     "tables.", GAP_FLOOR * 100, GAP_CEIL * 100, off);
        char bought[512] = "";
        size_t bo = 0;
        for (int c = 0; s->alloc.n_sla_jobs > 0 && c < s->alloc.n_cuts && bo < sizeof bought; c++)
            if (!cut_infeasible(&s->alloc, c) && sla_share_bought(&s->alloc, c))
                bo += (size_t)snprintf(bought + bo, sizeof bought - bo, "%s%.0f%% (%d breaches "
                                       "against the oracle's %d%s)", bo ? ", " : "",
                                       s->alloc.cuts[c] * 100,
                                       s->alloc.sla_violations[c][PFI_POLICY_PFI],
                                       s->alloc.sla_violations[c][PFI_POLICY_ORACLE],
                                       s->alloc.sla_pfi_relaxed[c]
                                           ? "; pfi relaxed every SLA on its curves" : "");
        if (figs[FIG_ALLOC].done && figs[FIG_ALLOC].done != 3 && bought[0])
            para(&d, "Left off the lower panel's \"pfi with SLAs\" line: its share of the gap "
                     "where pfi broke more SLAs than the oracle, or relaxed them all where the "
                     "oracle kept them, so that it is not read beside the shares that kept them: "
                     "at %s; see the SLA table.",
                 bought);
        char sla_text[2048];
        snprintf(sla_text, sizeof sla_text,
                 "With SLAs: %d of the %d jobs may lose at most %.0f%% of their throughput. "
                 "Each policy enforces the SLA on the curves it sees; pfi, whose curves are "
                 "estimates, plans each SLA job on a conservative reading: the SLA less the "
                 "largest optimism seen on any other job's curve at that job's own SLA floor "
                 "(%.1f points on average), or, at a cut where that plan's gain over an equal "
                 "cut with the plain SLAs, on its own curves, is smaller than its uncertainty "
                 "(the other jobs' out-of-fold error, per watt each job moves from its equal "
                 "share), the largest share of that margin, the same for every SLA job, at which "
                 "it is not. Where even the "
                 "plain SLAs do not fit on its curves, so that it must relax every SLA and its "
                 "floors are its whole plan, pfi reads its SLA jobs on curves calibrated on the "
                 "other jobs' out-of-fold errors (the true slowdown regressed on its predicted "
                 "one at each fraction of the maximum cap, the job itself left out). "
                 "A breach is a TRUE slowdown more than "
                 "%.1f points over the SLA. When even the oracle breaches, the budget cannot "
                 "meet every SLA and all policies relax them equally.",
                 s->alloc.n_sla_jobs, s->alloc.n_jobs, s->alloc.sla * 100,
                 s->alloc.sla_margin * 100, s->alloc.breach_tol * 100);
        heading(&d, 3, "With SLAs");
        para(&d, "%s", sla_text);
        table(&d, alloc_table(s, 1));
        sla_discussion(&d, s);
    } else {
        para(&d, "Not done: %s.", s->alloc.why);
    }
    comparison(&d, s);
    cost_section(&d, s);

    if (s->trace.done) {
        heading(&d, 2, "Inside one multi-GPU job");
        trace_text(&d, s);
        figure_ref(&d, &figs[FIG_TRACE]);
    }
    if (s->opts.scenario) {
        heading(&d, 2, "A grid day");
        const pfi_study_grid *g = &s->grid;
        if (g->done) {
            const pfi_grid_day_opts *o = &g->opts;
            para(&d,
                 "The allocation's jobs on a simulated site of %d nodes x %d GPUs through 24 h "
                 "in %.0f s steps: %.0f%% of the GPUs busy on average, jobs of %.1f h on "
                 "average drawn from the population (%d started, %d waited for room), seed "
                 "%llu. Two events: a 25%% cut held 3 h from 13:00 with 10 min ramps, and a 30%% "
                 "cut for 30 min from 19:00 with a 5 min ramp down and up; each cut is taken "
                 "from the site's mean draw over the hour before its ramp. The budget, on the "
                 "sum of the running jobs' caps, is each step the lowest the events allow over "
                 "it; a job draws min(baseline, cap) per GPU (an upper bound: simulated jobs "
                 "draw a little less than a binding cap) and makes its TRUE throughput there; "
                 "idle GPUs are in neither the draw nor the budget. equal and oracle see the true "
                 "curves, pfi sees %s. Lost: against the same day without events, over each "
                 "event's ramp, window and restore. %d step(s) could not be met even at every "
                 "job's minimum cap.",
                 o->nodes, o->gpus_per_node, o->dt_s, o->occupancy * 100,
                 o->mean_duration_s / 3600, g->day.n_started, g->day.n_waited,
                 (unsigned long long)o->seed, s->alloc.pfi_curves, g->day.n_infeasible_steps);
            table(&d, grid_table(s));
            figure_ref(&d, &figs[FIG_GRID_POWER]);
            figure_ref(&d, &figs[FIG_GRID_TPUT]);
        } else {
            para(&d, "Not done: %s.", g->why[0] ? g->why : "the allocation experiment did not run");
        }
    }
    heading(&d, 2, "Reproduce");
    char cmd[2048];
    reproduce_cmd(s, dir, cmd, sizeof cmd);
    para(&d, "`%s`. Figures are drawn by gnuplot from the .gp and .dat files beside them.", cmd);
    fputs("</body></html>\n", d.html);
    int bad = ferror(d.md) || ferror(d.html);
    bad |= fclose(d.md) != 0;
    bad |= fclose(d.html) != 0;
    if (bad)
        return pfi_err_set(err, PFI_EIO, "writing the report in %s failed", dir);
    return PFI_OK;
}

/* ------------------------------------------------------------------ summary.json */

/* summary.json's grid_day: per event and policy the compliance and what was lost. */
static json_t *grid_summary(const pfi_study *s)
{
    const pfi_study_grid *g = &s->grid;
    if (!g->done)
        return json_pack("{s:b, s:s}", "done", 0, "why",
                         g->why[0] ? g->why : "the allocation experiment did not run");
    const pfi_grid_day *d = &g->day;
    json_t *evs = json_array();
    for (int e = 0; e < d->n_events; e++) {
        const pfi_event *ev = &d->events[e];
        json_t *pol = json_object();
        for (int p = 0; p < PFI_GRID_DAY_NPOL; p++) {
            const pfi_grid_day_cell *c = &d->cell[e][p];
            json_object_set_new(pol, pfi_grid_day_policy_name(p),
                                json_pack("{s:f, s:f, s:o, s:f, s:b}", "max_excess_w",
                                          c->max_excess_w, "seconds_over_target",
                                          c->seconds_over_target, "energy_shed_kwh",
                                          pfi_json_num(c->energy_shed_kwh), "tokens_lost", c->tput_lost,
                                          "ramp_ok", c->ramp_ok));
        }
        json_array_append_new(
            evs, json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:s, s:o}", "id", ev->id, "cut",
                           ev->cut, "start_h", ev->start_s / 3600, "duration_s",
                           ev->end_s - ev->start_s, "ramp_s", ev->ramp_down_s, "baseline_w",
                           ev->baseline_w, "target_w", pfi_event_target_w(ev),
                           "baseline_method", ev->baseline_method, "policies", pol));
    }
    return json_pack("{s:b, s:s, s:i, s:i, s:i, s:i, s:i, s:f, s:o}", "done", 1,
                     "tokens_lost_unit", g->unit, "nodes", g->opts.nodes, "gpus", d->site_gpus,
                     "jobs_started", d->n_started, "steps", d->n_steps, "infeasible_steps",
                     d->n_infeasible_steps, "elapsed_s", g->elapsed_s, "events", evs);
}

/* An infeasible cut in summary.json: its budget and what the minimum caps need. */
static json_t *infeasible_json(const pfi_eval_cell *e)
{
    return json_pack("{s:b, s:o, s:o}", "infeasible", 1, "budget_w", pfi_json_num(e->budget_w),
                     "min_budget_w", pfi_json_num(e->min_budget_w));
}

json_t *pfi_study_summary(const pfi_study *s)
{
    double *v = malloc((size_t)(s->n ? s->n : 1) * sizeof *v);
    int n = 0;
    for (int i = 0; v && i < s->n; i++)
        if (isfinite(s->runs[i].pfi30))
            v[n++] = s->runs[i].pfi30;
    dist d = dist_of(v, n);
    free(v);
    json_t *doc = json_object();
    json_object_set_new(doc, "source", json_string(s->source));
    json_object_set_new(doc, "runs", json_integer(s->n));
    json_object_set_new(doc, "runs_with_pfi", json_integer(n));
    json_object_set_new(doc, "pfi30",
                        json_pack("{s:o, s:o, s:o}", "min", pfi_json_num(d.min), "median",
                                  pfi_json_num(d.median), "max", pfi_json_num(d.max)));
    const pfi_study_pred *p = &s->pred;
    json_t *pred = json_object();
    json_object_set_new(pred, "done", json_boolean(p->done));
    if (p->done) {
        json_object_set_new(pred, "model", json_string(pfi_model_kind_name(p->model_kind)));
        json_object_set_new(pred, "n_train", json_integer(p->n_train));
        json_object_set_new(pred, "lojo_mae_pfi30", pfi_json_num(p->lojo.mae_pfi30));
        json_object_set_new(pred, "lojo_r2_pfi30", pfi_json_num(p->lojo.r2_pfi30));
        json_object_set_new(pred, "lojo_runs_scored", json_integer(p->lojo.n));
        json_object_set_new(pred, "lojo_mae_pfi30_on_fit", pfi_json_num(p->lojo_fit.mae_pfi30));
        json_object_set_new(pred, "validation_mae_pfi30",
                            p->have_validation ? pfi_json_num(p->validation.mae_pfi30)
                                               : json_null());
        json_object_set_new(pred, "transfer_h200_to_h100_mae_pfi30",
                            p->have_h200_to_h100 ? pfi_json_num(p->h200_to_h100.mae_pfi30)
                                                 : json_null());
        json_object_set_new(pred, "transfer_h100_to_h200_mae_pfi30",
                            p->have_h100_to_h200 ? pfi_json_num(p->h100_to_h200.mae_pfi30)
                                                 : json_null());
        if (p->have_importance)
            json_object_set_new(pred, "importance", pfi_importance_json(&p->importance));
    } else {
        json_object_set_new(pred, "why", json_string(p->why));
    }
    json_object_set_new(doc, "predictor", pred);

    const pfi_study_alloc *a = &s->alloc;
    json_t *al = json_object();
    json_object_set_new(al, "done", json_boolean(a->done));
    if (a->done) {
        json_object_set_new(al, "jobs", json_integer(a->n_jobs));
        json_object_set_new(al, "unit", json_string(a->unit));
        json_object_set_new(al, "pfi_sees", json_string(a->pfi_curves));
        json_object_set_new(al, "setting_in_sample", json_boolean(a->setting_in_sample));
        json_t *cuts = json_object(), *gap = json_object(), *gain = json_object(),
               *sla = json_object();
        for (int c = 0; c < a->n_cuts; c++) {
            char key[16];
            snprintf(key, sizeof key, "%.2f", a->cuts[c]);
            if (cut_infeasible(a, c)) { /* said as such, not as cells of nothing */
                const pfi_eval_cell *e = a->cell[c][PFI_POLICY_EQUAL].infeasible
                                             ? &a->cell[c][PFI_POLICY_EQUAL]
                                             : &a->sla_cell[c][PFI_POLICY_EQUAL];
                json_object_set_new(cuts, key, infeasible_json(e));
                json_object_set_new(gain, key, json_object());
                json_object_set_new(sla, key, infeasible_json(e));
                json_object_set_new(gap, key, json_null());
                continue;
            }
            json_t *pc = json_object(), *pg = json_object(), *ps = json_object();
            for (int k = 0; k < PFI_POLICY_COUNT; k++) {
                const pfi_eval_cell *cell = &a->cell[c][k];
                if (!cell->done)
                    continue;
                json_object_set_new(pc, pfi_policy_name(k),
                                    cell->infeasible ? json_null()
                                                     : pfi_json_num(cell->total_throughput));
                if (k != PFI_POLICY_EQUAL)
                    json_object_set_new(
                        pg, pfi_policy_name(k),
                        cell->infeasible ? json_null() : pfi_json_num(cell->per_job_gain_vs_equal));
                const pfi_eval_cell *sc = &a->sla_cell[c][k];
                json_object_set_new(
                    ps, pfi_policy_name(k),
                    json_pack("{s:o, s:i, s:o, s:o, s:o, s:o}", "total_throughput",
                              sc->infeasible ? json_null() : pfi_json_num(sc->total_throughput),
                              "sla_breaches", a->sla_violations[c][k], "worst_excess_slowdown",
                              pfi_json_num(a->sla_worst[c][k]), "power_w",
                              sc->infeasible ? json_null() : pfi_json_num(sc->power_w),
                              "sla_jobs_power_w",
                              sc->infeasible ? json_null() : pfi_json_num(a->sla_jobs_power[c][k]),
                              "sla_jobs_throughput",
                              sc->infeasible ? json_null() : pfi_json_num(a->sla_jobs_tput[c][k])));
            }
            const pfi_eval_cell *ep = &a->sla_eq_pred[c];
            if (ep->done || ep->infeasible)
                json_object_set_new(
                    ps, "equal-on-pfi-curves",
                    json_pack("{s:o, s:i, s:o}", "total_throughput",
                              ep->infeasible ? json_null() : pfi_json_num(ep->total_throughput),
                              "sla_breaches", a->sla_eq_pred_violations[c],
                              "worst_excess_slowdown", pfi_json_num(a->sla_eq_pred_worst[c])));
            if (a->sla_cell[c][PFI_POLICY_PFI].done)
                json_object_set_new(ps, "pfi_relaxed", json_boolean(a->sla_pfi_relaxed[c]));
            if (a->sla_cell[c][PFI_POLICY_PFI].done)
                json_object_set_new(
                    ps, "pfi_feedback",
                    json_pack("{s:i, s:o, s:i, s:i, s:b}", "plan_sla_breaches",
                              a->sla_plan_violations[c], "plan_worst_excess_slowdown",
                              pfi_json_num(a->sla_plan_worst[c]), "rounds", a->sla_fb_rounds[c],
                              "jobs_corrected", a->sla_fb_jobs[c], "correction_did_not_fit",
                              a->sla_fb_unfit[c]));
            json_object_set_new(ps, "gap_recovered",
                                pfi_json_num(a->sla_cell[c][PFI_POLICY_PFI].gap_recovered));
            json_object_set_new(cuts, key, pc);
            json_object_set_new(gain, key, pg);
            json_object_set_new(sla, key, ps);
            json_object_set_new(gap, key, pfi_json_num(a->cell[c][PFI_POLICY_PFI].gap_recovered));
        }
        json_object_set_new(al, "cuts", cuts);
        json_object_set_new(al, "gap_recovered", gap);
        json_object_set_new(al, "per_job_gain_vs_equal", gain);
        json_object_set_new(al, "with_sla", json_pack("{s:f, s:f, s:i, s:o}", "max_slowdown", a->sla,
                                                      "pfi_margin", a->sla_margin,
                                                      "jobs_with_sla", a->n_sla_jobs, "cuts", sla));
    } else {
        json_object_set_new(al, "why", json_string(a->why));
    }
    json_object_set_new(doc, "allocation", al);
    json_object_set_new(doc, "characterization_cost", pfi_study_cost_json(s));
    if (s->opts.scenario)
        json_object_set_new(doc, "grid_day", grid_summary(s));
    json_t *notes = json_array();
    for (int i = 0; i < s->n_notes; i++)
        json_array_append_new(notes, json_string(s->notes[i]));
    json_object_set_new(doc, "not_done", notes);
    json_object_set_new(doc, "elapsed_s", json_real(s->elapsed_s));
    return doc;
}

/* fig_curves' caption: every run, or which runs it leaves out (those with no curve). */
static void curves_caption(const pfi_study *s, char *buf, size_t n)
{
    int out = 0, first = -1;
    for (int i = 0; i < s->n; i++)
        if (!s->runs[i].index_ok)
            first = first < 0 ? i : first, out++;
    size_t o = (size_t)snprintf(buf, n, "Power -> throughput curves of ");
    if (out == 0)
        o += (size_t)snprintf(buf + o, n - o, "every run");
    else
        o += (size_t)snprintf(buf + o, n - o, "%d of the %d runs", s->n - out, s->n);
    o += (size_t)snprintf(buf + o, n - o < n ? n - o : 0,
                          ", one panel (and colour) per model family, on shared axes");
    if (out == 1 && o < n)
        snprintf(buf + o, n - o, "; left out: %s, which has no curve (listed under the PFI30 table)",
                 s->runs[first].run.name);
    else if (out > 1 && o < n)
        snprintf(buf + o, n - o, "; left out: %d runs with no curve (listed under the PFI30 table)", out);
}

int pfi_study_write_report(const pfi_study *s, const char *dir, int *no_gnuplot, pfi_err *err)
{
    *no_gnuplot = 0;
    figure figs[N_FIGS] = {
        {"fig_curves", "Power -> throughput curves of every run, one panel (and colour) per model "
                       "family, on shared axes", 0, ""},
        {"fig_pfi30_hist", "PFI30 histogram by GPU type", 0, ""},
        {"fig_pred_vs_true", "Predicted vs measured PFI30: exactly the predictions scored in the "
                             "first three rows of the table above (H100 runs, predicted by a "
                             "model trained on H200 runs only, as squares; the H100 -> H200 row "
                             "is not drawn)", 0, ""},
        {"fig_alloc_vs_cut", "Gain per job over the equal cut (top) and share of the equal -> "
                             "oracle gap recovered (bottom), by policy and cut", 0, ""},
        {"fig_gpu_trace", "SM clock and board power of each GPU of one job across a cap step, "
                          "with the settling times of the text", 0, ""},
        {"fig_grid_power", "The grid day: site power against the events' budget", 0, ""},
        {"fig_grid_tput", "The grid day: site throughput", 0, ""},
    };
    if (s->opts.figures) {
        int (*draw[N_FIGS])(const pfi_study *, const char *, pfi_err *) = {
            fig_curves, fig_hist, fig_pred, fig_alloc, fig_trace, fig_grid_power, fig_grid_tput};
        int can[N_FIGS] = {1, 1, s->pred.done, s->alloc.done, s->trace.done, s->grid.done,
                           s->grid.done};
        for (int f = 0; f < N_FIGS; f++) {
            if (!can[f])
                continue;
            int rc = draw[f](s, dir, err);
            if (rc == PFI_ENOENT) { /* gnuplot missing: the rest of the report still stands */
                *no_gnuplot = 1;
                *err = (pfi_err){0};
                figs[f].done = 2;
                continue;
            }
            if (rc == PFI_EINVAL) { /* no point to draw (pfi_plot_render): the rest stands */
                snprintf(figs[f].why, sizeof figs[f].why, "%s", err->msg);
                *err = (pfi_err){0};
                figs[f].done = 3;
                continue;
            }
            if (rc != PFI_OK)
                return rc;
            figs[f].done = 1;
        }
    }
    char curves_cap[512];
    curves_caption(s, curves_cap, sizeof curves_cap);
    figs[FIG_CURVES].caption = curves_cap;
    int rc = write_docs(s, dir, figs, err);
    if (rc != PFI_OK)
        return rc;
    char path[1100];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    json_t *sum = pfi_study_summary(s);
    rc = json_dump_file(sum, path, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
    json_decref(sum);
    if (rc != 0)
        return pfi_err_set(err, PFI_EIO, "cannot write %s", path);
    return PFI_OK;
}
