/* SPDX-License-Identifier: Apache-2.0 */
/* grid_report.c: a grid event's compliance report in Markdown, JSON and a figure. */
#include "report/grid_report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report/report.h"
#include "util/isotime.h"

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : "";
}

static const char *fx(char *b, size_t n, double v, int sig)
{
    return pfi_fmt_fixed(b, n, v, sig);
}

/* Site power per interval against target and budget, minutes from the event's start. */
static int figure(json_t *doc, const char *dir, pfi_err *err)
{
    json_t *ev = json_object_get(doc, "event"), *c = json_object_get(doc, "compliance");
    json_t *iv = json_object_get(c, "intervals");
    size_t n = json_array_size(iv);
    double start = num(ev, "start_s");
    double *x = calloc(n + 1, sizeof *x), *mean = calloc(n + 1, sizeof *mean),
           *mx = calloc(n + 1, sizeof *mx), *tg = calloc(n + 1, sizeof *tg),
           *bd = calloc(n + 1, sizeof *bd);
    int rc = x && mean && mx && tg && bd ? PFI_OK : pfi_err_set(err, PFI_ENOMEM, "out of memory");
    for (size_t i = 0; rc == PFI_OK && i < n; i++) {
        json_t *r = json_array_get(iv, i);
        x[i] = (num(r, "t0") - start) / 60;
        mean[i] = num(r, "mean_w");
        mx[i] = num(r, "max_w");
        tg[i] = num(r, "target_w");
        bd[i] = num(r, "budget_w");
    }
    pfi_plot *p = rc == PFI_OK ? pfi_plot_new("Site power against the event's target",
                                              "minutes from the event's start", "W")
                               : NULL;
    if (p) {
        pfi_plot_series(p, "mean draw per minute", PFI_PLOT_LINESPOINTS, NULL, x, mean, NULL,
                        NULL, (int)n, 0);
        pfi_plot_series(p, "largest draw per minute", PFI_PLOT_LINES, NULL, x, mx, NULL, NULL,
                        (int)n, 0);
        pfi_plot_series(p, "budget in force (ramps)", PFI_PLOT_LINES, NULL, x, bd, NULL, NULL,
                        (int)n, 0);
        pfi_plot_series(p, "target", PFI_PLOT_LINES, "#d62728", x, tg, NULL, NULL, (int)n, 0);
        rc = pfi_plot_render(p, dir, "power", err);
        pfi_plot_free(p);
    }
    free(x);
    free(mean);
    free(mx);
    free(tg);
    free(bd);
    return rc;
}

static void cost_rows(FILE *f, json_t *cost)
{
    const char *pol[] = {"pfi", "oracle", "equal"};
    pfi_table *t = pfi_table_new(4, (const char *const[]){"policy", "job", "tokens/s lost",
                                                          "slowdown"});
    char a[32], b[32];
    for (int k = 0; k < 3; k++) {
        json_t *pc = json_object_get(cost, pol[k]);
        size_t i;
        json_t *j;
        json_array_foreach(json_object_get(pc, "jobs"), i, j)
        {
            pfi_table_row(t, (const char *const[]){pol[k], str(j, "id"),
                                                   fx(a, sizeof a, num(j, "tokens_per_s_lost"), 4),
                                                   fx(b, sizeof b, num(j, "slowdown"), 3)});
        }
        pfi_table_row(t, (const char *const[]){pol[k], "**total**",
                                               fx(a, sizeof a, num(pc, "tokens_per_s_lost"), 4),
                                               fx(b, sizeof b, num(pc, "gpu_weighted_slowdown"),
                                                  3)});
    }
    pfi_table_markdown(t, f);
    pfi_table_free(t);
}

static void sla_rows(FILE *f, json_t *jobs)
{
    pfi_table *t = pfi_table_new(4, (const char *const[]){"job", "SLA (max slowdown)",
                                                          "slowdown under pfi", "kept"});
    char a[32], b[32];
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j)
    {
        json_t *k = json_object_get(j, "sla_kept");
        pfi_table_row(t, (const char *const[]){str(j, "id"), fx(a, sizeof a, num(j, "sla"), 3),
                                               fx(b, sizeof b, num(j, "slowdown"), 3),
                                               json_is_boolean(k) ? (json_is_true(k) ? "kept"
                                                                                     : "BREACHED")
                                                                  : "no SLA"});
    }
    pfi_table_markdown(t, f);
    pfi_table_free(t);
}

static void cost_and_slas(FILE *f, json_t *doc)
{
    json_t *cost = json_object_get(doc, "cost");
    char a[32];
    fprintf(f, "## Throughput cost at %s W\n\n%s\n\n", fx(a, sizeof a, num(cost, "budget_w"), 4),
            str(cost, "method"));
    cost_rows(f, cost);
    fprintf(f, "\n## SLAs\n\n");
    sla_rows(f, json_object_get(doc, "jobs"));
}

/* Whether the document has draw to judge: not before the event's ramp ("not_started"), nor
 * after it without a recorded second in the window ("no_samples").  A document without a state
 * (a daemon older than it) is judged as before. */
static int has_draw(json_t *doc)
{
    const char *st = str(doc, "state");
    return strcmp(st, "not_started") && strcmp(st, "no_samples");
}

/* An event changed while under way: each definition, from when, and what it was judged on. */
static void revision_rows(FILE *f, json_t *revs)
{
    pfi_table *t = pfi_table_new(8, (const char *const[]){"in force from", "target (W)",
                                                          "window", "window in force (s)",
                                                          "recorded (s)", "mean (W)",
                                                          "largest excess (W)", "s over"});
    char a[32], b[32], d[32], e[32], g[32], h[32], w0[40], w1[40], win[90];
    size_t i;
    json_t *r;
    json_array_foreach(revs, i, r)
    {
        pfi_time_format(num(r, "start_s"), w0, sizeof w0);
        pfi_time_format(num(r, "end_s"), w1, sizeof w1);
        snprintf(win, sizeof win, "%s to %s", w0, w1);
        pfi_table_row(t, (const char *const[]){*str(r, "from") ? str(r, "from") : "the first",
                                               fx(a, sizeof a, num(r, "target_w"), 4), win,
                                               fx(b, sizeof b, num(r, "window_s"), 3),
                                               fx(d, sizeof d, num(r, "covered_s"), 3),
                                               fx(e, sizeof e, num(r, "mean_w"), 4),
                                               fx(g, sizeof g, num(r, "max_excess_w"), 3),
                                               fx(h, sizeof h, num(r, "seconds_over_target"),
                                                  3)});
    }
    pfi_table_markdown(t, f);
    pfi_table_free(t);
}

static void markdown(FILE *f, json_t *doc, const char *fig_note)
{
    json_t *ev = json_object_get(doc, "event"), *c = json_object_get(doc, "compliance");
    json_t *ramp = json_object_get(c, "ramp");
    char a[32], b[32], d[32], e[32];
    fprintf(f, "# Grid event %s: compliance report\n\n", str(ev, "id"));
    if (*str(doc, "state_message"))
        fprintf(f, "**%s.**\n\n", str(doc, "state_message"));
    fprintf(f, "- Window: %s to %s (%s min), source %s, phase %s\n", str(ev, "start"),
            str(ev, "end"), fx(a, sizeof a, num(ev, "duration_s") / 60, 3), str(ev, "source"),
            str(ev, "phase"));
    json_t *oa = json_object_get(ev, "openadr");
    if (oa) /* the window judged is the one held, not the VTN's: say how far it was moved */
        fprintf(f, "- OpenADR: VTN event %s interval %.0f; the window judged is the one held, "
                   "moved %.0f s after the VTN's start %s by its randomizeStart (%g s)\n",
                str(oa, "event_id"), num(oa, "interval"), num(oa, "randomized_s"),
                str(oa, "vtn_start"), num(oa, "randomize_start_s"));
    fprintf(f, "- Target: %s W (%s)\n", fx(a, sizeof a, num(c, "target_w"), 4), str(ev, "kind"));
    json_t *revs = json_object_get(c, "revisions");
    if (json_array_size(revs) > 1) {
        fprintf(f, "- Modified while under way: each instant is judged against the definition "
                   "in force then (the figures below combine them):\n\n");
        revision_rows(f, revs);
        fputc('\n', f);
    }
    if (!has_draw(doc)) { /* no excess, ramp or energy to state: zeros would read as met */
        fputc('\n', f);
        cost_and_slas(f, doc);
        return;
    }
    fprintf(f, "- Baseline: %s W, method: %s\n", fx(a, sizeof a, num(c, "baseline_w"), 4),
            str(c, "baseline_method"));
    fprintf(f, "- Largest excess over the target: %s W; time above the target: %s s "
               "(of %s s recorded in the %s s window)\n",
            fx(a, sizeof a, num(c, "max_excess_w"), 3),
            fx(b, sizeof b, num(c, "seconds_over_target"), 3),
            fx(d, sizeof d, num(c, "covered_s"), 3), fx(e, sizeof e, num(c, "window_s"), 3));
    /* a report asked during the event judges what was recorded so far: says so, since a
     * ramp still under way reads as failed or met for good otherwise */
    fprintf(f, "- Ramps: %s%s (largest draw above the ramp-down line %s W, above the restore "
               "steps %s W; fastest rise after the end %s W/s)\n",
            json_is_true(json_object_get(ramp, "ok")) ? "complied" : "NOT complied",
            strcmp(str(doc, "state"), "partial") ? "" : " so far",
            fx(a, sizeof a, num(ramp, "ramp_down_max_excess_w"), 3),
            fx(b, sizeof b, num(ramp, "restore_max_excess_w"), 3),
            fx(d, sizeof d, num(ramp, "restore_max_rise_w_per_s"), 3));
    json_t *held = json_object_get(c, "held_above_target");
    if (held)
        fprintf(f, "- Held above the target: a budget of up to %s W for %s s of the window, the "
                   "least the site could hold (its jobs' SLAs, or its GPUs' minimum limits, did "
                   "not allow the target)\n",
                fx(a, sizeof a, num(held, "budget_w"), 4), fx(b, sizeof b, num(held, "seconds"), 3));
    fprintf(f, "- Energy shed against the baseline: %s kWh\n\n",
            fx(a, sizeof a, num(c, "energy_shed_kwh"), 4));
    fprintf(f, "## Site power per minute\n\n%s\n\n", fig_note);
    cost_and_slas(f, doc);
}

int pfi_grid_report_write(json_t *doc, const char *dir, char *written, size_t size,
                          pfi_err *err)
{
    if (!json_is_object(json_object_get(doc, "compliance")))
        return pfi_err_set(err, PFI_EINVAL, "not a grid event report (no compliance)");
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return pfi_err_set(err, PFI_EIO, "cannot create %s: %s", dir, strerror(errno));
    char path[1024], note[700];
    snprintf(path, sizeof path, "%s/report.json", dir);
    if (json_dump_file(doc, path, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) != 0)
        return pfi_err_set(err, PFI_EIO, "cannot write %s", path);
    pfi_err fe = {0};
    int draw = has_draw(doc), fig = draw ? figure(doc, dir, &fe) : PFI_OK;
    if (!draw) /* a figure left from an earlier report here is not this report's */
        for (int i = 0; i < 4; i++) {
            snprintf(path, sizeof path, "%s/power.%s", dir,
                     (const char *const[]){"png", "svg", "gp", "dat"}[i]);
            if (remove(path) != 0 && errno != ENOENT)
                return pfi_err_set(err, PFI_EIO, "cannot remove %s: %s", path,
                                   strerror(errno));
        }
    if (fig == PFI_OK)
        snprintf(note, sizeof note, "![site power](power.png)");
    else
        snprintf(note, sizeof note, "(figure not drawn: %s; power.gp and power.dat are the "
                 "figure's script and data)", fe.msg);
    snprintf(path, sizeof path, "%s/report.md", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return pfi_err_set(err, PFI_EIO, "cannot write %s: %s", path, strerror(errno));
    markdown(f, doc, note);
    if (fclose(f) != 0)
        return pfi_err_set(err, PFI_EIO, "cannot write %s", path);
    const char *msg = str(doc, "state_message");
    if (!draw)
        snprintf(written, size, "%s\nwrote %s/report.md, %s/report.json (no figure: no draw "
                 "to show)\n", msg, dir, dir);
    else
        snprintf(written, size, "%s%swrote %s/report.md, %s/report.json%s%s%s\n", msg,
                 *msg ? "\n" : "", dir, dir, fig == PFI_OK ? ", " : "\nfigure not drawn: ",
                 fig == PFI_OK ? dir : fe.msg, fig == PFI_OK ? "/power.png" : "");
    return PFI_OK;
}
