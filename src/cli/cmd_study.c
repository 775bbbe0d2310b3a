/* SPDX-License-Identifier: Apache-2.0 */
/* pfi study: the paper end to end on the simulator or on a store (src/study/). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "study/study.h"
#include "util/budget.h"
#include "util/progress.h"
#include "util/units.h"

static void print_summary(const pfi_study *s, const char *out_dir)
{
    json_t *sum = pfi_study_summary(s);
    json_t *a = json_object_get(json_object_get(sum, "allocation"), "gap_recovered");
    json_t *g30 = json_object_get(a, "0.30");
    json_t *p30 = json_object_get(sum, "pfi30");
    printf("pfi study: %d runs from %s\n", s->n, s->source);
    printf("  PFI30 min/median/max: %.2f / %.2f / %.2f\n",
           json_number_value(json_object_get(p30, "min")),
           json_number_value(json_object_get(p30, "median")),
           json_number_value(json_object_get(p30, "max")));
    if (s->pred.done) {
        printf("  predictor (%s): leave-one-job-out MAE of PFI30 %.3f",
               pfi_model_kind_name(s->pred.model_kind), s->pred.lojo.mae_pfi30);
        if (s->pred.have_validation)
            printf(", validation %.3f", s->pred.validation.mae_pfi30);
        if (s->pred.have_h200_to_h100)
            printf(", H200->H100 %.3f", s->pred.h200_to_h100.mae_pfi30);
        putchar('\n');
    }
    else
        printf("  predictor: not trained (%s)\n", s->pred.why);
    if (json_is_number(g30))
        printf("  allocation at a 30%% cut: pfi recovers %.0f%% of the equal->oracle gap "
               "(paper: 63%%)\n", json_number_value(g30) * 100);
    for (int i = 0; i < s->n_notes; i++)
        printf("  note: %s\n", s->notes[i]);
    printf("  report: %s/report.html (and report.md, summary.json)\n", out_dir);
    printf("  elapsed: %.1f s\n", s->elapsed_s);
    json_decref(sum);
}

static const char examples[] =
    "pfi study --out study-out                          # the simulated fleet, end to end\n"
    "pfi study --db pfi.db --out measured-study --no-figures";

int pfi_cmd_study(int argc, char **argv)
{
    pfi_study_opts o;
    pfi_study_defaults(&o);
    const char *fleet = NULL, *cuts = NULL;
    int as_json = 0, no_figures = 0, seed = INT_MIN;
    const char *sla = NULL;
    const pfi_opt opts[] = {
        {"fleet", PFI_OPT_STR, &fleet, "paper|small|FILE",
         "simulated fleet: the paper's shape (default), a small one, or a fleet file"},
        {"db", PFI_OPT_STR, &o.from_db, "FILE",
         "analyse the runs of a store (measured or imported) instead"},
        PFI_OPT_ALIAS("from-db", PFI_OPT_STR, &o.from_db, "db"),
        {"out", PFI_OPT_STR, &o.out_dir, "DIR", "report directory (default study-out)"},
        {"seed", PFI_OPT_INT, &seed, "N", "fleet seed (default 1)"},
        {"cuts", PFI_OPT_STR, &cuts, "LIST", "power cuts of the jobs' baseline draw, 0.3, cut=30% or -30% (pfi help budget; default 0.1,0.2,0.3,0.4,0.5)"},
        {"sla", PFI_OPT_STR, &sla, "SLOWDOWN",
         "max slowdown of the SLA jobs, e.g. 0.1 or 10% (default 0.10)"},
        {"no-figures", PFI_OPT_FLAG, &no_figures, NULL, "skip gnuplot"},
        {"direct", PFI_OPT_FLAG, &o.direct, NULL,
         "read the simulated jobs' steady state directly instead of sweeping them (3x faster)"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "print summary.json on stdout"},
        {"scenario", PFI_OPT_STR, &o.scenario, "grid-day",
         "also a simulated site's day under two grid events"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi study [--fleet paper|small|FILE | --db FILE] [--out DIR] [--seed N] [--json]",
        "Runs the paper end to end: characterizes every run (the simulated fleet in virtual "
        "time through the sweep code, or the runs of a store), computes each run's PFI curve, "
        "trains and validates the runtime predictor, runs the allocation experiment, and "
        "writes DIR/report.md, DIR/report.html, figures and DIR/summary.json; a simulated "
        "fleet's runs go to DIR/study.db (a file there holding other runs is never replaced).",
        opts, examples};
    int rc = pfi_cli_args_none(&spec, argc, argv, "study");
    if (rc >= 0)
        return rc;
    pfi_err err = {0};
    if (fleet && o.from_db) {
        fprintf(stderr, "pfi study: --fleet and --db exclude each other\n");
        return PFI_EXIT_USAGE;
    }
    if (fleet)
        o.fleet = fleet;
    unsigned long long fleet_seed;
    if ((rc = pfi_cli_fleet_seed("study", seed, !o.from_db, NULL, &fleet_seed)) >= 0)
        return rc;
    o.seed = (uint64_t)fleet_seed;
    if (sla && pfi_parse_slowdown(sla, &o.sla, &err) != PFI_OK) {
        fprintf(stderr, "pfi study: --sla: %s\n", err.msg);
        return PFI_EXIT_USAGE;
    }
    o.figures = !no_figures;
    if (cuts && pfi_budget_parse_cuts(cuts, o.cuts, PFI_STUDY_MAX_CUTS, &o.n_cuts, &err) != PFI_OK)
        return pfi_cli_fail("study", &err);
    pfi_progress pc;
    pfi_progress_init(&pc, "pfi study", pfi_progress_auto(), stderr);
    o.progress = pfi_progress_cb;
    o.progress_ctx = &pc;

    pfi_study s;
    if (pfi_study_execute(&o, &s, &err) != PFI_OK) {
        pfi_progress_end(&pc);
        return pfi_cli_fail("study", &err);
    }
    pfi_progress_update(&pc, "writing the report", 0, 1);
    int no_gnuplot = 0;
    rc = pfi_study_write_report(&s, o.out_dir, &no_gnuplot, &err);
    if (rc == PFI_OK)
        pfi_progress_update(&pc, "writing the report", 1, 1);
    pfi_progress_end(&pc);
    if (rc != PFI_OK) {
        pfi_study_free(&s);
        return pfi_cli_fail("study", &err);
    }
    if (no_gnuplot)
        fprintf(stderr, "pfi study: gnuplot not found: report written without figures (install "
                        "gnuplot-nox and rerun, or run gnuplot on the .gp files in %s)\n",
                o.out_dir);
    if (as_json)
        rc = pfi_cli_print_json(pfi_study_summary(&s));
    else
        print_summary(&s, o.out_dir);
    pfi_study_free(&s);
    return rc;
}
