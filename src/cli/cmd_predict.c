/* SPDX-License-Identifier: Apache-2.0 */
/* pfi predict: a job's curve and PFI predicted from its baseline telemetry alone, for runs in
 * the store (their other levels are not read, only shown for comparison) or live from the GPUs
 * of a backend (--live: sampled for --duration at the current limits). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "core/pfi.h"
#include "core/predict.h"
#include "measure/measure.h"
#include "study/model_io.h"
#include "study/runset.h"
#include "study/trainset.h"
#include "util/text.h"
#include "util/json.h"
#include "util/units.h"


/* The longest live sample (--duration): 1 hour. */
#define PREDICT_MAX_DURATION_S 3600.0

typedef struct pred {
    pfi_curve c;
    double s_at[PFI_N_TDEPTHS];
    double measured_pfi30; /* the headline PFI30 of pfi index; NAN when the run has none */
    int measured_extrap;   /* 0.30 lies beyond the deepest measured shed (marked *) */
    int measured_on_fit;   /* measured_pfi30 is the fit's value, not the interpolation */
    int missing;           /* telemetry features the baseline did not have */
    pfi_extrap extrap;     /* where it leaves what the model was trained on */
    char base_note[160];   /* a stored run read at a level other than its default limit's */
} pred;

static json_t *pred_json(const char *name, const pred *p, const pfi_model *m)
{
    json_t *pf = json_object(), *rel = json_object(), *shed = json_object();
    char k[16];
    for (int i = 0; i < PFI_N_TDEPTHS; i++) {
        snprintf(k, sizeof k, "%.2g", pfi_target_depths[i]);
        json_object_set_new(pf, k, pfi_json_num(pfi_at(&p->c.fit, pfi_target_depths[i])));
        snprintf(k, sizeof k, "%d", (int)lround(100 * (1 - pfi_target_depths[i])));
        json_object_set_new(rel, k, pfi_json_num(1 - pfi_fit_s(&p->c.fit, pfi_target_depths[i])));
    }
    for (int i = 0; i < PFI_N_BUDGETS; i++) {
        snprintf(k, sizeof k, "%.2g", pfi_budgets[i]);
        json_object_set_new(
            shed, k, pfi_json_num(pfi_shed_at_slowdown(&p->c.fit, pfi_budgets[i], p->c.r_max)));
    }
    json_t *par = json_array();
    for (int i = 0; i < pfi_family_params(p->c.fit.family); i++)
        json_array_append_new(par, json_real(p->c.fit.p[i]));
    json_t *o = json_pack(
        "{s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "run", name, "model", pfi_model_kind_name(m->kind),
        "pfi30", pfi_json_num(pfi_at(&p->c.fit, 0.30)), "pfi", pf, "rel_tput_at_power_pct", rel,
        "shed_at_slowdown", shed, "measured_pfi30", pfi_json_num(p->measured_pfi30));
    /* The same names and meaning as pfi index's pfi30_extrapolated and pfi30_source. */
    if (isfinite(p->measured_pfi30)) {
        json_object_set_new(o, "measured_pfi30_extrapolated", json_boolean(p->measured_extrap));
        json_object_set_new(o, "measured_pfi30_source",
                            json_string(p->measured_on_fit ? "fit" : "interpolation"));
    }
    json_object_set_new(o, "missing_telemetry_features", json_integer(p->missing));
    if (p->base_note[0]) {
        json_object_set_new(o, "baseline_at_default", json_false());
        json_object_set_new(o, "baseline_note", json_string(p->base_note));
    }
    json_t *ex = json_array();
    for (int i = 0; i < p->extrap.n; i++)
        json_array_append_new(ex, json_string(p->extrap.why[i]));
    json_object_set_new(o, "extrapolated", ex);
    json_object_set_new(o, "training_range_known", json_boolean(p->extrap.known));
    json_object_set_new(o, "p0_w", pfi_json_num(p->c.p0_w));
    json_object_set_new(o, "cap0_w", pfi_json_num(p->c.cap0_w));
    json_object_set_new(o, "fit", json_pack("{s:s, s:o}", "family",
                                            pfi_family_name(p->c.fit.family), "params", par));
    return o;
}

/* The run column: as wide as the longest name, at least 52 and at most 64 characters; a longer
 * name keeps its head and tail around a visible "..." (as pfi index does).  Cut at 52, two
 * public runs (zeus-nsdi/RTX6000/bert_base_uncased sentiment140 bs128 and bs16 adamw) read the
 * same. */
#define NAME_COL_MIN 52
#define NAME_COL_MAX 64

static int name_width(const pfi_runset *rs)
{
    size_t w = NAME_COL_MIN;
    for (int i = 0; rs && i < rs->n; i++) {
        size_t len = (size_t)pfi_text_cols(rs->runs[i].name);
        w = len > w ? len : w;
    }
    return w < NAME_COL_MAX ? (int)w : NAME_COL_MAX;
}

/* Printed once the runs are known, so that an error leaves stdout empty. */
static void print_header(int w)
{
    printf("%-*s", w, "run (predicted PFI at r =)");
    for (int i = 0; i < PFI_N_TDEPTHS; i++)
        printf("   %.2f", pfi_target_depths[i]);
    printf("  T@70%%P  measured PFI30\n");
}

static void pred_print(const char *name, const pred *p, int w)
{
    char cut[1024];
    const char *cell = pfi_text_fit(name, w, cut, sizeof cut);
    printf("%-*s", pfi_text_pad(cell, w), cell);
    for (int i = 0; i < PFI_N_TDEPTHS; i++)
        printf(" %6.3f", pfi_at(&p->c.fit, pfi_target_depths[i]));
    printf("  %6.3f", 1 - pfi_fit_s(&p->c.fit, 0.30));
    if (isfinite(p->measured_pfi30))
        printf("  %6.3f%s", p->measured_pfi30, p->measured_extrap ? "*" : "");
    printf("\n");
    /* Any: one feature (the SM clock unread) moved a PFI30 by 15% with nothing said. */
    if (p->missing > 0)
        printf("  (%d of %d telemetry features missing at the baseline: read as the training "
               "mean)\n",
               p->missing, PFI_FT_MOE);
    if (p->base_note[0])
        printf("  (%s)\n", p->base_note);
    if (p->extrap.n) {
        char line[PFI_EXTRAP_MAX * 200];
        pfi_extrap_line(&p->extrap, line, sizeof line);
        printf("  (extrapolated, outside what the model was trained on: %s)\n", line);
    }
}

/* The chosen GPUs' mean telemetry over `duration` at their current limits, as a run. */
static int sample_live(const pfi_cli_hw *hw, const char *gpus_s, double duration, pfi_run *hdr,
                       pfi_err *err)
{
    pfi_backend *b;
    int rc = pfi_cli_open_hw(hw, &b, err);
    if (rc != PFI_OK)
        return rc;
    int count = 0, idx[PFI_MAX_GPUS], ng = 0;
    rc = pfi_hw_count(b, &count, err);
    if (rc == PFI_OK)
        rc = pfi_parse_index_list(gpus_s ? gpus_s : "all", count, idx, &ng, err);
    if (rc == PFI_OK)
        rc = pfi_measure_baseline(b, idx, ng, duration, hdr, err);
    if (rc == PFI_OK)
        snprintf(hdr->name, sizeof hdr->name, "live %s GPUs %s%s", pfi_hw_label(b),
                 gpus_s ? gpus_s : "all", pfi_hw_simulated(b) ? " (simulated)" : "");
    pfi_hw_close(b);
    return rc;
}

static int get_model(const char *path, pfi_model *m, pfi_err *err)
{
    struct stat sb;
    const char *def = "pfi-model.json";
    if (path)
        return pfi_model_load(path, m, err);
    if (stat(def, &sb) == 0)
        return pfi_model_load(def, m, err);
    fprintf(stderr, "pfi predict: no %s: training on the simulated paper fleet now "
                    "(`pfi model train` saves a model)\n",
            def);
    pfi_trainset ts;
    int rc = pfi_trainset_load(NULL, "paper", 1, NULL, NULL, NULL, &ts, err);
    if (rc != PFI_OK)
        return rc;
    pfi_train_opts to = pfi_train_defaults();
    rc = pfi_model_train(ts.rows, ts.n, &to, m, err);
    pfi_trainset_free(&ts);
    return rc;
}

/* Predicts the live sample and prints it, or appends it to arr (--json). */
static int predict_live(const pfi_cli_hw *hw, const char *gpus, double duration,
                        int allow_capped, const pfi_model *m, json_t *arr, pfi_err *err)
{
    pfi_run *hdr = malloc(sizeof *hdr);
    pred p;
    p.base_note[0] = '\0'; /* a live baseline's own note is below */
    char note[200] = "";
    int rc = hdr ? sample_live(hw, gpus, duration, hdr, err)
                 : pfi_err_set(err, PFI_ENOMEM, "out of memory");
    if (rc == PFI_OK)
        rc = pfi_measure_baseline_usable(hdr, allow_capped, note, sizeof note, err);
    if (rc == PFI_OK)
        rc = pfi_model_predict_level(m, hdr, &hdr->levels[0], &p.c, err);
    if (rc == PFI_OK)
        rc = pfi_model_extrapolation_level(m, hdr, &hdr->levels[0], &p.extrap, err);
    if (rc == PFI_OK) {
        p.measured_pfi30 = NAN;
        p.measured_extrap = p.measured_on_fit = 0;
        p.missing = pfi_features_missing(hdr, &hdr->levels[0]);
        if (arr) {
            json_t *o = pred_json(hdr->name, &p, m);
            json_object_set_new(o, "baseline_power_w", pfi_json_num(hdr->levels[0].power_w));
            json_object_set_new(o, "sm_clock_mhz", pfi_json_num(hdr->levels[0].sm_clock_mhz));
            json_object_set_new(o, "powercap_frac", pfi_json_num(hdr->levels[0].powercap_frac));
            json_object_set_new(o, "baseline_at_default", json_boolean(!note[0]));
            if (note[0])
                json_object_set_new(o, "baseline_note", json_string(note));
            json_array_append_new(arr, o);
        } else {
            print_header(NAME_COL_MIN);
            pred_print(hdr->name, &p, NAME_COL_MIN);
            if (note[0])
                printf("  (%s: predicted from that baseline, not the default limit's)\n", note);
        }
    }
    free(hdr);
    return rc;
}

/* Predicts each stored run beside its measured PFI30 and prints it, or appends it to arr
 * (--json).  A run that cannot be predicted is named and skipped: PFI_EXIT_FAIL at the end. */
static int predict_stored(const pfi_runset *rs, const pfi_model *m, json_t *arr)
{
    int status = PFI_EXIT_OK, w = name_width(rs), extrap = 0;
    if (!arr)
        print_header(w);
    for (int i = 0; i < rs->n; i++) {
        pfi_err err = {0};
        pred p;
        if (pfi_model_predict_run(m, &rs->runs[i], &p.c, &err) != PFI_OK) {
            fprintf(stderr, "pfi predict: %s\n", err.msg);
            status = PFI_EXIT_FAIL;
            continue;
        }
        int b = pfi_run_baseline(&rs->runs[i]);
        const pfi_run *run = &rs->runs[i];
        p.base_note[0] = '\0';
        /* A default-limit level with no rate (a first window the log gave nothing in) made the
         * highest capped one the baseline, the prediction and "measured" moved, and nothing
         * said so (--live refuses a capped baseline unless --allow-capped, and marks it). */
        if (pfi_run_baseline_capped(run, b))
            snprintf(p.base_note, sizeof p.base_note,
                     "no usable level at its %.0f W default limit: predicted from its %.0f W "
                     "level, a capped baseline",
                     run->default_limit_w, run->levels[b].cap_w);
        p.missing =
            b >= 0 ? pfi_features_missing(&rs->runs[i], &rs->runs[i].levels[b]) : PFI_FT_MOE;
        /* b >= 0: the prediction read that level */
        pfi_model_extrapolation_level(m, &rs->runs[i], &rs->runs[i].levels[b], &p.extrap, NULL);
        pfi_index x;
        pfi_index_opts io = pfi_index_defaults();
        io.n_boot = 0;
        /* "Measured" is the headline pfi index shows (the interpolation where the sweep reaches
         * 0.30, else the fit, marked), not the fit's value everywhere. */
        int ok = pfi_index_run(&rs->runs[i], &io, &x, NULL) == PFI_OK;
        p.measured_pfi30 = ok ? x.pfi_head : NAN;
        p.measured_extrap = ok && x.extrapolated;
        p.measured_on_fit = ok && !isfinite(x.pfi_interp);
        extrap += isfinite(p.measured_pfi30) && p.measured_extrap;
        if (arr)
            json_array_append_new(arr, pred_json(rs->runs[i].name, &p, m));
        else
            pred_print(rs->runs[i].name, &p, w);
    }
    if (!arr && extrap)
        printf("  (*: measured PFI30 read on the fit beyond the deepest measured shed, "
               "as pfi index marks it)\n");
    return status;
}

int pfi_cmd_predict(int argc, char **argv)
{
    pfi_cli_hw hw = {0};
    const char *db = NULL, *model = NULL, *gpus = NULL, *dur_s = NULL;
    int as_json = 0, live = 0, public_data = 0, allow_capped = 0;
    const pfi_opt opts[] = {
        {"model", PFI_OPT_STR, &model, "FILE", "trained model (default pfi-model.json, else "
                                               "train on the simulated fleet now)"},
        {"db", PFI_OPT_STR, &db, "FILE", "the store holding RUN (default $PFI_DB, else pfi.db)"},
        {"public", PFI_OPT_FLAG, &public_data, NULL, "RUN is one of the public sweeps"},
        {"live", PFI_OPT_FLAG, &live, NULL, "sample the baseline telemetry from a backend now"},
        PFI_CLI_HW_OPTS(hw),
        {"gpus", PFI_OPT_STR, &gpus, "LIST", "--live: the job's GPUs (default all)"},
        {"duration", PFI_OPT_STR, &dur_s, "D", "--live: how long to sample (default 10s, at most 1h)"},
        {"allow-capped", PFI_OPT_FLAG, &allow_capped, NULL,
         "--live: predict even when the GPUs are not at their default limit (marked)"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document on stdout"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi predict RUN... | --live [--backend auto|nvml|sim] [--gpus LIST] [--duration D] "
        "[--model FILE] [--json]",
        "Predict a job's curve and PFI from the telemetry of its baseline alone (no sweep): "
        "PFI at 10-50% shed, relative throughput at 70% of baseline power, and the power it can "
        "shed within slowdown budgets.  For a stored run only its default-limit level is read; "
        "its measured PFI30 (pfi index's headline, marked * where read on the fit beyond the "
        "deepest measured shed) is shown beside the prediction.  A prediction outside what the "
        "model was trained on (a GPU type it never saw, a feature beyond its training range) is "
        "marked: a line under it, \"extrapolated\" in JSON.",
        opts,
        "pfi predict --live --gpus 0-7 --duration 30s        # the job running now on GPUs 0-7\n"
        "pfi predict 3 --db pfi.db --model pfi-model.json --json"};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    if (live == (npos > 0)) {
        fprintf(stderr, "pfi predict: name RUNs or give --live (one or the other)\n");
        return PFI_EXIT_USAGE;
    }
    /* --duration, --gpus and the backend's options say how to sample a live job: a stored
     * run is not sampled, and they were silently dropped there, so they are refused (nothing
     * is read or predicted). */
    const char *live_only = dur_s         ? "--duration"
                            : gpus        ? "--gpus"
                            : hw.backend  ? "--backend"
                            : hw.sim      ? "--sim"
                            : hw.nvml_lib ? "--nvml-lib"
                            : hw.read_only ? "--read-only"
                            : allow_capped ? "--allow-capped"
                                           : NULL;
    if (!live && live_only) {
        fprintf(stderr, "pfi predict: %s is for sampling a live job (--live); a stored run is "
                        "predicted from its recorded baseline\n",
                live_only);
        return PFI_EXIT_USAGE;
    }
    pfi_err err = {0};
    double duration = 10;
    if (dur_s && (pfi_parse_duration(dur_s, &duration, &err) != PFI_OK || !(duration > 0))) {
        fprintf(stderr, "pfi predict: --duration: %s\n", err.msg[0] ? err.msg : "must be > 0");
        return PFI_EXIT_USAGE;
    }
    /* A baseline's mean telemetry settles within seconds; a longer sample only keeps the
     * command (and a typo such as 30h for 30s) running.  The bound is in --help. */
    if (duration > PREDICT_MAX_DURATION_S) {
        fprintf(stderr, "pfi predict: --duration %s is over the maximum of 1h\n", dur_s);
        return PFI_EXIT_USAGE;
    }
    pfi_model m;
    if (get_model(model, &m, &err) != PFI_OK)
        return pfi_cli_fail("predict", &err);
    json_t *arr = json_array();
    int status = PFI_EXIT_OK;
    pfi_runset rs;
    if (live ? predict_live(&hw, gpus, duration, allow_capped, &m, as_json ? arr : NULL, &err)
             : pfi_runset_load(db, public_data, pos, npos, "pass --public", &rs, &err)) {
        json_decref(arr);
        return pfi_cli_fail("predict", &err);
    }
    if (!live) {
        status = predict_stored(&rs, &m, as_json ? arr : NULL);
        pfi_runset_free(&rs);
    }
    if (as_json) {
        int prc = pfi_cli_print_json(json_pack("{s:s, s:o}", "model",
                                               pfi_model_kind_name(m.kind), "runs", arr));
        return status ? status : prc;
    }
    json_decref(arr);
    return status;
}
