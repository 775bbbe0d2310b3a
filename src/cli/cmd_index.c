/* SPDX-License-Identifier: Apache-2.0 */
/* pfi index: the Power Flexibility Index of characterized runs (core/pfi.h), with its bootstrap
 * interval and the power each job can shed within slowdown budgets; --compare-families shows
 * how well each candidate curve family fits the runs (the evidence behind the default one). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/pfi.h"
#include "report/report.h"
#include "study/curve_eval.h"
#include "study/runset.h"
#include "util/text.h"
#include "util/json.h"
#include "util/progress.h"


static const char *depth_key(char *buf, size_t n, double d)
{
    snprintf(buf, n, "%.2g", d);
    return buf;
}

static json_t *index_json(const pfi_run *r, const pfi_index *x, const pfi_index *h)
{
    json_t *o = json_object();
    /* jansson refuses a name that is not UTF-8 (a store written before names were checked) and
     * the key would be dropped: NULL, for the caller to report, rather than a nameless run. */
    int bad = json_object_set_new(o, "run", json_string(r->name));
    json_object_set_new(o, "id", json_integer(r->id));
    bad |= json_object_set_new(o, "gpu_type", json_string(r->gpu_type));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    json_object_set_new(o, "n_gpus", json_integer(r->n_gpus));
    json_object_set_new(o, "p0_w", pfi_json_num(x->p0_w));
    json_object_set_new(o, "t0", pfi_json_num(x->t0));
    json_object_set_new(o, "cap0_w", pfi_json_num(x->cap0_w));
    json_object_set_new(o, "pfi30", pfi_json_num(x->pfi_head));
    json_object_set_new(o, "pfi30_lo", pfi_json_num(x->head_lo));
    json_object_set_new(o, "pfi30_hi", pfi_json_num(x->head_hi));
    json_object_set_new(o, "pfi30_source",
                        json_string(isfinite(x->pfi_interp) ? "interpolation" : "fit"));
    json_object_set_new(o, "pfi30_extrapolated", json_boolean(x->extrapolated));
    json_object_set_new(o, "pfi30_fit", json_pack("{s:o, s:o, s:o}", "pfi", pfi_json_num(x->pfi),
                                                  "lo", pfi_json_num(x->pfi_lo), "hi",
                                                  pfi_json_num(x->pfi_hi)));
    json_t *pf = json_object(), *ex = json_object(), *mono = json_object(),
           *head = json_object();
    char k[16];
    for (int i = 0; i < PFI_N_DEPTHS; i++) {
        depth_key(k, sizeof k, pfi_depths[i]);
        json_object_set_new(pf, k, pfi_json_num(x->pfi_at[i]));
        json_object_set_new(ex, k, json_boolean(x->extrap_at[i]));
        json_object_set_new(mono, k, pfi_json_num(x->pfi_mono_at[i]));
        json_object_set_new(head, k, pfi_json_num(x->head_at[i]));
    }
    if (h) {
        depth_key(k, sizeof k, h->depth);
        json_object_set_new(pf, k, pfi_json_num(h->pfi));
        json_object_set_new(ex, k, json_boolean(h->extrapolated));
        json_object_set_new(head, k, pfi_json_num(h->pfi_head));
        json_object_set_new(o, "headline",
                            json_pack("{s:f, s:o, s:o, s:o, s:b, s:s}", "depth", h->depth, "pfi",
                                      pfi_json_num(h->pfi_head), "lo", pfi_json_num(h->head_lo),
                                      "hi", pfi_json_num(h->head_hi), "extrapolated",
                                      h->extrapolated, "source",
                                      isfinite(h->pfi_interp) ? "interpolation" : "fit"));
    }
    json_object_set_new(o, "pfi_headline", head);
    json_object_set_new(o, "pfi", pf);
    json_object_set_new(o, "extrapolated", ex);
    json_object_set_new(o, "pfi_monotone", mono);
    json_t *shed = json_object(), *lim = json_object();
    for (int i = 0; i < PFI_N_BUDGETS; i++) {
        depth_key(k, sizeof k, pfi_budgets[i]);
        json_object_set_new(shed, k, pfi_json_num(x->shed_at[i]));
        json_object_set_new(lim, k, json_boolean(x->shed_limited[i]));
    }
    json_object_set_new(o, "shed_at_slowdown", shed);
    json_object_set_new(o, "shed_limited_by_range", lim);
    json_t *sx = json_object();
    for (int i = 0; i < PFI_N_BUDGETS; i++) {
        depth_key(k, sizeof k, pfi_budgets[i]);
        json_object_set_new(sx, k, json_boolean(x->shed_extrap[i]));
    }
    json_object_set_new(o, "shed_extrapolated", sx);
    json_t *p = json_array();
    for (int i = 0; i < pfi_family_params(x->fit.family); i++)
        json_array_append_new(p, json_real(x->fit.p[i]));
    json_object_set_new(o, "fit", json_pack("{s:s, s:o, s:o}", "family",
                                            pfi_family_name(x->fit.family), "params", p, "rmse",
                                            pfi_json_num(x->fit.rmse)));
    json_object_set_new(o, "r_max", pfi_json_num(x->r_max));
    json_object_set_new(o, "levels", json_integer(x->n_points));
    json_object_set_new(o, "non_monotone", json_boolean(x->non_monotone));
    json_object_set_new(o, "never_bound", json_boolean(x->never_bound));
    json_object_set_new(o, "baseline_at_default",
                        json_boolean(!pfi_run_baseline_capped(r, pfi_run_baseline(r))));
    return o;
}

static void cell(char *buf, size_t n, double v, int ex)
{
    if (isfinite(v))
        snprintf(buf, n, "%.3f%s", v, ex ? "*" : "");
    else
        snprintf(buf, n, "-");
}

/* The run column: as wide as the longest name up to this, beyond which a name keeps both ends
 * (source and model at the front, parallelism at the back) around a visible "...". */
#define NAME_COL_MAX 64

static int name_width(const pfi_runset *rs)
{
    int w = 3; /* "run" */
    for (int i = 0; i < rs->n; i++) {
        int len = pfi_text_cols(rs->runs[i].name);
        if (len > w)
            w = len;
    }
    return w < NAME_COL_MAX ? w : NAME_COL_MAX;
}

static void print_row(const pfi_run *r, const pfi_index *x, int w)
{
    char cut[4 * NAME_COL_MAX + 1];
    const char *name = pfi_text_fit(r->name, w, cut, sizeof cut);
    char c[PFI_N_DEPTHS][16], ci[32];
    for (int i = 0; i < PFI_N_DEPTHS; i++)
        cell(c[i], sizeof c[i], x->head_at[i], x->extrap_at[i]);
    if (isfinite(x->head_lo))
        snprintf(ci, sizeof ci, "%.3f-%.3f", x->head_lo, x->head_hi);
    else
        snprintf(ci, sizeof ci, "-");
    char note[96] = "";
    if (x->never_bound)
        snprintf(note, sizeof note, "cap never bound");
    else if (x->non_monotone)
        snprintf(note, sizeof note, "non-monotone");
    /* No usable level at the default limit: every figure is relative to a capped job's. */
    int b = pfi_run_baseline(r);
    if (pfi_run_baseline_capped(r, b)) {
        size_t at = strlen(note);
        snprintf(note + at, sizeof note - at, "%sbaseline at %.0f W, not the default %.0f W",
                 at ? "; " : "", r->levels[b].cap_w, r->default_limit_w);
    }
    /* A shed is a lower bound (+) where the budget was not used up over the range read, and
     * read on the fit (*) past the deepest measured shed. */
    char sh[PFI_N_BUDGETS][16];
    for (int i = 0; i < PFI_N_BUDGETS; i++)
        snprintf(sh[i], sizeof sh[i], "%.3f%s%s", x->shed_at[i], x->shed_extrap[i] ? "*" : "",
                 x->shed_limited[i] ? "+" : "");
    char t0[32];
    printf("%-*s %-9.9s %6.0f %10s %7s %7s %7s %-13s %7s %7s %7s %7s %s\n",
           pfi_text_pad(name, w), name,
           r->gpu_type, x->p0_w, pfi_fmt_fixed(t0, sizeof t0, x->t0, 4), c[0], c[1], c[2], ci,
           c[3], sh[0], sh[1], sh[2], note);
}

static int compare_families(const pfi_runset *rs, int as_json)
{
    pfi_family_cmp fc;
    pfi_family_compare(rs->runs, rs->n, &fc);
    static const char *const setname[2] = {"transformer", "all"};
    if (as_json) {
        json_t *doc = json_object();
        for (int set = 0; set < 2; set++) {
            json_t *arr = json_array();
            for (int f = 0; f < PFI_FAM_COUNT; f++) {
                const pfi_family_stat *q = &fc.fam[set][f];
                json_array_append_new(
                    arr, json_pack("{s:s, s:i, s:o, s:o, s:o, s:o, s:b}", "family",
                                   pfi_family_name(f), "params", pfi_family_params(f),
                                   "rmse_in_sample", pfi_json_num(q->rmse_fit),
                                   "rmse_lolo_interpolation", pfi_json_num(q->rmse_lolo_interp),
                                   "rmse_lolo_extrapolation", pfi_json_num(q->rmse_lolo_extrap),
                                   "mean_pfi30", pfi_json_num(q->mean_pfi30), "default",
                                   f == pfi_default_family));
            }
            json_object_set_new(doc, setname[set],
                                json_pack("{s:i, s:o}", "runs", fc.runs[set], "families", arr));
        }
        return pfi_cli_print_json(doc);
    }
    for (int set = 0; set < 2; set++) {
        printf("%s runs with >= 4 levels that shed power: %d\n", setname[set], fc.runs[set]);
        printf("  %-8s %6s %10s %18s %18s %10s\n", "family", "params", "rmse fit",
               "rmse LOLO interp", "rmse LOLO extrap", "mean PFI30");
        for (int f = 0; f < PFI_FAM_COUNT; f++) {
            const pfi_family_stat *q = &fc.fam[set][f];
            printf("  %-8s %6d %10.4f %18.4f %18.4f %10.3f%s\n", pfi_family_name(f),
                   pfi_family_params(f), q->rmse_fit, q->rmse_lolo_interp, q->rmse_lolo_extrap,
                   q->mean_pfi30, f == pfi_default_family ? "  (default)" : "");
        }
    }
    printf("LOLO: each shed level left out in turn, refitted, predicted; interp = inner levels, "
           "extrap = the deepest\n");
    return PFI_EXIT_OK;
}

/* Measured points and fitted curve of each run (the first 8), s against r. */
static int plot_curves(const pfi_runset *rs, const pfi_index_opts *o, const char *dir,
                       pfi_err *err)
{
    pfi_plot *p = pfi_plot_new("Slowdown against power shed: measured (points) and fitted",
                               "power shed r = 1 - P/P0", "slowdown s = 1 - T/T0");
    if (!p)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    pfi_plot_xrange(p, 0, 0.7);
    int drawn = 0;
    for (int i = 0; i < rs->n && drawn < 8; i++) {
        pfi_curve c;
        if (pfi_curve_from_run(&rs->runs[i], o->family, &c, NULL) != PFI_OK || c.n_shed < 2)
            continue;
        double r[PFI_CURVE_MAX_PTS], s[PFI_CURVE_MAX_PTS], fr[41], fs[41];
        int m = pfi_curve_points(&c, r, s, PFI_CURVE_MAX_PTS);
        for (int k = 0; k <= 40; k++) {
            fr[k] = c.r_max * k / 40.0;
            fs[k] = pfi_fit_s(&c.fit, fr[k]);
        }
        const char *col = pfi_palette(drawn);
        pfi_plot_series(p, rs->runs[i].name, PFI_PLOT_POINTS, col, r, s, NULL, NULL, m, 0);
        pfi_plot_series(p, NULL, PFI_PLOT_LINES, col, fr, fs, NULL, NULL, 41, 0);
        drawn++;
    }
    int rc = drawn ? pfi_plot_render(p, dir, "pfi_curves", err)
                   : pfi_err_set(err, PFI_EINVAL, "no run with a curve to plot");
    pfi_plot_free(p);
    return rc;
}

/* The index of every run, as a table or one JSON document; the exit status. */
/* The --depth line.  A depth left out (more than 0.01 beyond the deepest measured shed,
 * without --extrapolate) is "-" with the reason, as in the table, and an interval only where
 * there is one (--boot 0 has none): never "nan". */
static void print_headline(double depth, const pfi_index *h, int extrapolate)
{
    if (!isfinite(h->pfi_head)) {
        if (h->extrapolated && !extrapolate)
            printf("  PFI at %.2f: - (beyond the deepest measured shed %.2f; --extrapolate reads "
                   "the fit)\n", depth, h->r_max);
        else
            printf("  PFI at %.2f: -\n", depth);
        return;
    }
    char ci[48] = "";
    if (isfinite(h->head_lo) && isfinite(h->head_hi))
        snprintf(ci, sizeof ci, " [%.3f-%.3f]", h->head_lo, h->head_hi);
    printf("  PFI at %.2f: %.3f%s%s\n", depth, h->pfi_head, ci,
           h->extrapolated ? " (fit, extrapolated)" : "");
}

static int index_runs(const pfi_runset *rs, pfi_index_opts *o, double depth, int named,
                      int as_json)
{
    pfi_err err = {0};
    int rc, status = PFI_EXIT_OK, ok = 0;
    json_t *arr = json_array();
    int w = name_width(rs);
    if (!as_json)
        printf("%-*s %-9s %6s %10s %7s %7s %7s %-13s %7s %7s %7s %7s\n", w, "run", "gpu",
               "P0 W", "T0", "PFI10", "PFI20", "PFI30", "PFI30 95% CI", "PFI40", "shed2",
               "shed5", "shed10");
    pfi_progress pg; /* the rows are printed as they come: the line is cleared before each */
    pfi_progress_init(&pg, "pfi index", pfi_progress_auto(), stderr);
    for (int i = 0; i < rs->n; i++) {
        const pfi_run *r = &rs->runs[i];
        pfi_index x, h;
        pfi_progress_update(&pg, "computing PFI curves", i, rs->n);
        o->depth = 0.30;
        rc = pfi_index_run(r, o, &x, &err);
        int has_h = 0;
        if (rc == PFI_OK && fabs(depth - 0.30) > 1e-9) {
            o->depth = depth;
            rc = pfi_index_run(r, o, &h, &err);
            has_h = 1;
        }
        if (!as_json)
            pfi_progress_end(&pg);
        if (rc != PFI_OK) {
            /* Runs named explicitly must work; in a listing, one bad run must not hide the rest. */
            if (named)
                status = PFI_EXIT_FAIL;
            json_t *e = as_json ? json_pack("{s:s, s:I, s:s}", "run", r->name, "id",
                                            (json_int_t)r->id, "error", err.msg)
                                : NULL;
            if (e)
                json_array_append_new(arr, e);
            else /* also when jansson refused the name: the error is not lost */
                fprintf(stderr, "pfi index: %s\n", err.msg);
            continue;
        }
        json_t *row = as_json ? index_json(r, &x, has_h ? &h : NULL) : NULL;
        if (as_json && !row) {
            fprintf(stderr, "pfi index: run %lld: its name or GPU type is not UTF-8 text, which "
                            "JSON cannot carry\n", r->id);
            status = PFI_EXIT_FAIL;
            continue;
        }
        ok++;
        if (as_json)
            json_array_append_new(arr, row);
        else {
            print_row(r, &x, w);
            if (has_h)
                print_headline(depth, &h, o->extrapolate);
        }
    }
    pfi_progress_end(&pg);
    if (as_json) {
        json_t *doc = json_pack("{s:s, s:f, s:s, s:i, s:o}", "source", rs->where, "depth", depth,
                                "family",
                                pfi_family_name(o->family < 0 ? pfi_default_family : o->family),
                                "n_runs", ok, "runs", arr);
        rc = pfi_cli_print_json(doc);
        if (rc != PFI_EXIT_OK)
            status = rc;
    } else {
        json_decref(arr);
        printf("%d of %d runs indexed from %s; PFI: the monotone interpolation of the measured "
               "points where they reach the depth, else the fitted curve marked * (extrapolated "
               "beyond the deepest measured shed); the CI spans both curves' bootstrap; shed2/5/10: "
               "the power shed within a 2/5/10%% slowdown on the same interpolation, + a lower "
               "bound (the slowdown never reached it), * read on the fit beyond\n",
               ok, rs->n, rs->where);
    }
    return status;
}

int pfi_cmd_index(int argc, char **argv)
{
    const char *db = NULL, *family = NULL, *plot_dir = NULL, *fleet = NULL;
    double depth = 0.30;
    int as_json = 0, public_data = 0, extrapolate = 0, compare = 0, boot = 400, boot_seed = 1;
    /* INT_MIN: not given.  --seed is the fleet's seed as in every command that builds one. */
    int seed = INT_MIN, fleet_seed = INT_MIN;
    const pfi_opt opts[] = {
        {"db", PFI_OPT_STR, &db, "FILE", "the store (default $PFI_DB, else pfi.db)"},
        {"public", PFI_OPT_FLAG, &public_data, NULL,
         "use the public sweeps of $PFI_DATA_DIR, imported in memory"},
        {"fleet", PFI_OPT_STR, &fleet, "paper|small",
         "the simulated fleet, characterized now in virtual time"},
        {"depth", PFI_OPT_DOUBLE, &depth, "R", "headline depth: power shed fraction (default 0.3)"},
        {"extrapolate", PFI_OPT_FLAG, &extrapolate, NULL,
         "read the fit beyond the deepest measured shed (marked * and in JSON)"},
        {"family", PFI_OPT_STR, &family, "NAME",
         "curve family: power (default), quad, knee, exp, dvfs"},
        {"boot", PFI_OPT_INT, &boot, "N", "bootstrap replicates for the CI (default 400; 0: none)"},
        {"seed", PFI_OPT_INT, &seed, "N", "--fleet: its seed (default 1), as in pfi evaluate"},
        PFI_OPT_ALIAS("fleet-seed", PFI_OPT_INT, &fleet_seed, "seed"),
        {"boot-seed", PFI_OPT_INT, &boot_seed, "N", "bootstrap seed (default 1)"},
        {"plot", PFI_OPT_STR, &plot_dir, "DIR",
         "also draw DIR/pfi_curves.png and .svg: points and fits of the first 8 runs"},
        {"compare-families", PFI_OPT_FLAG, &compare, NULL,
         "compare the curve families on the runs instead"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document on stdout"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi index [RUN...] [--db FILE | --public | --fleet paper|small] [--depth 0.3] "
        "[--extrapolate] [--json]",
        "Power Flexibility Index of each run (all runs when none is named): PFI(r) = s/r with "
        "r the power shed (as drawn) and s the slowdown, both relative to the default-limit "
        "baseline; PFI at 10/20/30/40% with a 95% bootstrap interval for PFI30, and the power "
        "shed within slowdown budgets of 2, 5 and 10%.  `pfi help index` has the definition.  "
        "PFI is the monotone interpolation of the measured points where they reach the depth; "
        "beyond the deepest measured shed it is read on the fitted curve and marked * (more "
        "than 0.01 beyond: left out unless --extrapolate).",
        opts,
        "pfi index --public                                 # every public sweep\n"
        "pfi index 3 --db pfi.db --depth 0.2 --json\n"
        "pfi index --public --compare-families"};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    pfi_err err = {0};
    pfi_index_opts o = pfi_index_defaults();
    o.extrapolate = extrapolate;
    o.n_boot = boot;
    o.seed = (unsigned long long)boot_seed;
    if (family && (o.family = pfi_family_parse(family)) < 0) {
        fprintf(stderr, "pfi index: unknown family '%s' (power, quad, knee, exp, dvfs)\n", family);
        return PFI_EXIT_USAGE;
    }
    if (!(depth > 0 && depth < 1)) {
        fprintf(stderr, "pfi index: --depth %g is not a fraction between 0 and 1\n", depth);
        return PFI_EXIT_USAGE;
    }
    if (boot < 0 || boot > 4000) {
        fprintf(stderr, "pfi index: --boot %d: give 0-4000 replicates\n", boot);
        return PFI_EXIT_USAGE;
    }
    pfi_runset rs;
    if (fleet && (db || public_data)) {
        fprintf(stderr, "pfi index: --fleet, --db and --public choose the runs: give one\n");
        return PFI_EXIT_USAGE;
    }
    if (seed != INT_MIN && fleet_seed != INT_MIN && seed != fleet_seed) {
        fprintf(stderr, "pfi index: --seed %d and --fleet-seed %d: one seed, two values\n", seed,
                fleet_seed);
        return PFI_EXIT_USAGE;
    }
    if (fleet_seed != INT_MIN)
        seed = fleet_seed;
    unsigned long long seed_of_fleet;
    if ((rc = pfi_cli_fleet_seed("index", seed, fleet != NULL,
                                 "the bootstrap's seed is --boot-seed", &seed_of_fleet)) >= 0)
        return rc;
    rc = fleet ? pfi_runset_fleet(fleet, (int)seed_of_fleet, pos, npos, &rs, &err)
               : pfi_runset_load(db, public_data, pos, npos, "pass --public", &rs, &err);
    if (rc != PFI_OK)
        return pfi_cli_fail("index", &err);
    if (compare) {
        rc = compare_families(&rs, as_json);
        pfi_runset_free(&rs);
        return rc;
    }
    if (plot_dir && plot_curves(&rs, &o, plot_dir, &err) != PFI_OK) {
        pfi_runset_free(&rs);
        return pfi_cli_fail("index", &err);
    }
    int status = index_runs(&rs, &o, depth, npos > 0, as_json);
    pfi_runset_free(&rs);
    return status;
}
