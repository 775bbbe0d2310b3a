/* SPDX-License-Identifier: Apache-2.0 */
/* pfi runs: the characterized runs in the store, one line each. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/cost.h"
#include "store/export.h"
#include "report/report.h"
#include "store/store.h"
#include "util/json.h"
#include "util/text.h"


/* A --source no writer gives and no run of this store has is a typo, refused as squeue refuses
 * an unknown partition; a known one with no runs here is an empty answer, as in sacct. */
static int check_source(const char *source, const pfi_run_summary *v, int n, const char *db)
{
    for (int i = 0; i < n; i++)
        if (strcmp(source, v[i].source) == 0)
            return -1;
    int known = 0;
    for (int i = 0; i < PFI_STORE_NSOURCES; i++)
        known |= strcmp(source, pfi_store_sources[i]) == 0;
    if (known) {
        fprintf(stderr, "pfi runs: no runs from source '%s' in %s\n", source, db);
        return -1;
    }
    fprintf(stderr, "pfi runs: unknown source '%s' (", source);
    for (int i = 0; i < PFI_STORE_NSOURCES; i++)
        fprintf(stderr, "%s%s", i ? ", " : "", pfi_store_sources[i]);
    fprintf(stderr, ")\n");
    return PFI_EXIT_USAGE;
}

static void fmt_num(char *buf, size_t n, double v, const char *fmt)
{
    if (isfinite(v))
        snprintf(buf, n, fmt, v);
    else
        snprintf(buf, n, "-");
}

/* What characterizing run id cost (GPU-seconds and work lost; NAN when unknown). */
static void run_cost(pfi_store *st, long long id, double *gpu_s, double *lost)
{
    *gpu_s = *lost = NAN;
    pfi_run *run = malloc(sizeof *run);
    pfi_cost c;
    if (run && pfi_store_load_run(st, id, run, NULL) == PFI_OK &&
        pfi_cli_stored_cost(st, run, &c, NULL) == PFI_OK) {
        *gpu_s = c.gpu_s_total;
        *lost = c.lost_total;
    }
    free(run);
}

/* One run of the listing as JSON; NULL when jansson refused a field (not UTF-8). */
static json_t *run_json(const pfi_run_summary *r, double gpu_s, double lost)
{
    json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:i, s:i, s:s, s:s, s:s}", "id",
                          (json_int_t)r->id, "name", r->name, "source", r->source, "gpu_type",
                          r->gpu_type, "n_gpus", r->n_gpus, "levels", r->n_levels, "unit",
                          r->unit == PFI_TOKENS_PER_S ? "tokens/s" : "samples/s", "unit_label",
                          r->unit_label, "status", r->status);
    /* json_object_set_new fails, and drops the key, when the value is NULL. */
    int bad = !o;
    bad |= json_object_set_new(o, "backend", pfi_json_str(r->backend));
    bad |= json_object_set_new(o, "simulated", r->backend[0] ? json_boolean(pfi_backend_is_simulated(
                                                                    r->backend))
                                                              : json_null());
    bad |= json_object_set_new(o, "baseline_cap_w", pfi_json_num(r->cap0_w));
    bad |= json_object_set_new(o, "t0", pfi_json_num(r->t0));
    bad |= json_object_set_new(o, "p0_w", pfi_json_num(r->p0));
    bad |= json_object_set_new(o, "started", pfi_json_str(r->started));
    bad |= json_object_set_new(o, "ended", pfi_json_str(r->ended));
    bad |= json_object_set_new(o, "cost_gpu_s", pfi_json_num(gpu_s));
    bad |= json_object_set_new(o, "cost_lost", pfi_json_num(lost));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int runs_list(int argc, char **argv)
{
    const char *db = NULL, *source = NULL;
    int as_json = 0;
    const pfi_opt opts[] = {
        {"db", PFI_OPT_STR, &db, "FILE", "the store (default $PFI_DB, else pfi.db)"},
        {"source", PFI_OPT_STR, &source, "NAME",
         "only runs from this source (sweep, sim, perseus, zeus-nsdi, zeus-plo; another name "
         "is an error unless the store has it)"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document on stdout"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi runs [list] [--db FILE] [--source NAME] [--json]",
        "List the runs in the store: id, name, source, GPU type and count, number of levels, "
        "throughput unit, the baseline (the level at the default power limit): its "
        "throughput T0 and per-GPU power P0, and what measuring it cost in GPU-seconds (from "
        "the stored telemetry; - for imported runs).",
        opts,
        "pfi runs --db pfi.db\n"
        "pfi runs --db pfi.db --source perseus --json"};
    int rc = pfi_cli_args_none(&spec, argc, argv, "runs");
    if (rc >= 0)
        return rc;
    pfi_err err = {0};
    pfi_store *st;
    /* A listing only reads: it never upgrades a store, and works for a user who can only read it. */
    if (pfi_store_open(db, PFI_STORE_READONLY, &st, &err) != PFI_OK)
        return pfi_cli_fail("runs", &err);
    pfi_run_summary *v;
    int n;
    if (pfi_store_list_runs(st, &v, &n, &err) != PFI_OK) {
        pfi_store_close(st);
        return pfi_cli_fail("runs", &err);
    }
    if (source && (rc = check_source(source, v, n, pfi_store_path(st))) >= 0) {
        free(v);
        pfi_store_close(st);
        return rc;
    }
    json_t *arr = as_json ? json_array() : NULL;
    int w = 4; /* the NAME column fits the longest name shown */
    for (int i = 0; i < n; i++)
        if ((!source || strcmp(source, v[i].source) == 0) && pfi_text_cols(v[i].name) > w)
            w = pfi_text_cols(v[i].name);
    if (!as_json)
        printf("%-5s %-*s %-10s %-15s %3s %6s %-21s %10s %7s %8s %-11s %s\n", "ID", w, "NAME",
               "SOURCE", "GPU", "N", "LEVELS", "UNIT", "T0", "P0(W)", "GPU-S", "STATUS",
               "BACKEND");
    for (int i = 0; i < n; i++) {
        const pfi_run_summary *r = &v[i];
        if (source && strcmp(source, r->source) != 0)
            continue;
        double gpu_s, lost;
        run_cost(st, r->id, &gpu_s, &lost);
        if (as_json) {
            json_t *o = run_json(r, gpu_s, lost);
            if (!o || json_array_append_new(arr, o) != 0) {
                /* jansson refuses text that is not UTF-8 (a store written before names were
                 * checked): a listing without the run would look complete. */
                fprintf(stderr, "pfi runs: run %lld has a name or field that is not UTF-8 text, "
                                "which JSON cannot carry; the plain listing shows it\n", r->id);
                json_decref(arr);
                free(v);
                pfi_store_close(st);
                return PFI_EXIT_FAIL;
            }
        } else {
            char t0[24], p0[24], gs[24];
            pfi_fmt_fixed(t0, sizeof t0, r->t0, 4);
            fmt_num(p0, sizeof p0, r->p0, "%.1f");
            fmt_num(gs, sizeof gs, gpu_s, "%.0f");
            /* Padded by columns, not bytes: names may be UTF-8. */
            printf("%-5lld %-*s %-*s %-*s %3d %6d %-*s %10s %7s %8s %-11s %s\n", r->id,
                   pfi_text_pad(r->name, w), r->name, pfi_text_pad(r->source, 10), r->source,
                   pfi_text_pad(r->gpu_type, 15), r->gpu_type, r->n_gpus, r->n_levels,
                   pfi_text_pad(r->unit_label, 21), r->unit_label, t0, p0, gs, r->status,
                   r->backend[0] ? r->backend : "-");
        }
    }
    free(v);
    if (as_json) {
        json_t *doc = json_pack("{s:s, s:o}", "db", pfi_store_path(st), "runs", arr);
        if (!doc)
            fprintf(stderr, "pfi runs: the store's path is not UTF-8 text, which JSON cannot "
                            "carry\n");
        pfi_store_close(st);
        return pfi_cli_print_json(doc);
    }
    pfi_store_close(st);
    return PFI_EXIT_OK;
}

static const pfi_cli_sub subs[] = {
    {"list", runs_list, "the runs, one line each (the default)"},
    {"show", pfi_cmd_runs_show, "one run with its levels"},
    {"export", pfi_cmd_runs_export, "runs and their levels as CSV or JSON for pandas"},
};
const pfi_cli_family_spec pfi_cli_family_runs = {
    "runs", "The characterized runs in the store: list them, show one with its levels, "
    "export them.  Without a subcommand (options only) pfi runs lists them.",
    "pfi runs --db pfi.db\n"
    "pfi runs show 3 --db pfi.db\n"
    "pfi runs export --db pfi.db --format json --out runs.json",
    subs, (int)(sizeof subs / sizeof subs[0])};

int pfi_cmd_runs(int argc, char **argv)
{
    if (argc < 2 || (argv[1][0] == '-' && strcmp(argv[1], "--help") && strcmp(argv[1], "-h"))) {
        int late = pfi_cli_family_late_sub(&pfi_cli_family_runs, argc, argv);
        return late >= 0 ? late : runs_list(argc, argv);
    }
    return pfi_cli_family(&pfi_cli_family_runs, argc, argv);
}
