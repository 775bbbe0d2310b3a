/* SPDX-License-Identifier: Apache-2.0 */
/* pfi runs show: one run with its levels, as a table like nvidia-smi's or as JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/cost.h"
#include "report/report.h"
#include "store/export.h"
#include "store/store.h"
#include "util/json.h"


static const char *fmt(char *buf, size_t n, double v, const char *f)
{
    if (isfinite(v))
        snprintf(buf, n, f, v);
    else
        snprintf(buf, n, "-");
    return buf;
}

static const char *tri(int v, const char *yes, const char *no)
{
    return v > 0 ? yes : v == 0 ? no : "unknown";
}

static int print_json(const pfi_run *r, const pfi_run_summary *s, const pfi_cost *cost)
{
    const pfi_job_meta *m = &r->meta;
    json_t *meta = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "model",
                             m->model, "family", m->family, "moe", m->moe, "finetune",
                             m->finetune, "lora", m->lora, "dp", m->dp, "tp", m->tp, "pp", m->pp,
                             "ep", m->ep, "seq_len", m->seq_len, "global_batch", m->global_batch);
    json_object_set_new(meta, "params_b", pfi_json_num(m->params_b));
    /* jansson refuses text that is not UTF-8 (a store written before names were checked) and
     * json_object_set_new then drops the key: the document is refused rather than cut. */
    int bad = !meta;
    json_t *levels = json_array();
    for (int i = 0; i < r->n_levels; i++) {
        json_t *o = pfi_export_level_fields(r, s, i);
        json_object_set_new(o, "duration_s",
                            pfi_json_num(cost ? cost->gpu_s[i] / cost->n_gpus : NAN));
        json_object_set_new(o, "gpu_s", pfi_json_num(cost ? cost->gpu_s[i] : NAN));
        json_object_set_new(o, "lost", pfi_json_num(cost ? cost->lost[i] : NAN));
        bad |= json_array_append_new(levels, o);
    }
    json_t *doc = json_pack("{s:I, s:I, s:s, s:s, s:s, s:i, s:s, s:s, s:s}", "id",
                            (json_int_t)r->id, "job_id", (json_int_t)s->job_id, "name", r->name,
                            "source", r->source, "gpu_type", r->gpu_type, "n_gpus", r->n_gpus,
                            "unit", r->unit == PFI_TOKENS_PER_S ? "tokens/s" : "samples/s",
                            "unit_label", s->unit_label, "status", s->status);
    bad |= !doc || json_object_set_new(doc, "backend", pfi_json_str(s->backend));
    json_object_set_new(doc, "simulated", s->backend[0]
                                              ? json_boolean(pfi_backend_is_simulated(s->backend))
                                              : json_null());
    json_object_set_new(doc, "started", pfi_json_str(s->started));
    json_object_set_new(doc, "ended", pfi_json_str(s->ended));
    json_object_set_new(doc, "min_limit_w", pfi_json_num(r->min_limit_w));
    json_object_set_new(doc, "max_limit_w", pfi_json_num(r->max_limit_w));
    json_object_set_new(doc, "default_limit_w", pfi_json_num(r->default_limit_w));
    json_object_set_new(doc, "baseline_cap_w", pfi_json_num(s->cap0_w));
    json_object_set_new(doc, "t0", pfi_json_num(s->t0));
    json_object_set_new(doc, "p0_w", pfi_json_num(s->p0));
    bad |= json_object_set_new(doc, "meta", meta);
    bad |= json_object_set_new(doc, "levels", levels);
    json_object_set_new(doc, "cost", cost ? pfi_cli_cost_json(cost, pfi_cli_work_unit(r->unit))
                                          : json_null());
    if (bad) {
        fprintf(stderr, "pfi runs show: run %lld has a name or field that is not UTF-8 text, "
                        "which JSON cannot carry; the table shows it\n", r->id);
        json_decref(doc);
        return PFI_EXIT_FAIL;
    }
    return pfi_cli_print_json(doc);
}

static void print_table(const pfi_run *r, const pfi_run_summary *s, const pfi_cost *cost)
{
    const pfi_job_meta *m = &r->meta;
    char a[32], b[32], c[32];
    printf("Run %lld: %s\n", r->id, r->name);
    printf("  Source     %s%s%s   Status %s", r->source, s->backend[0] ? "  Backend " : "",
           s->backend, s->status);
    if (s->started[0])
        printf("   Started %s", s->started);
    if (s->ended[0])
        printf("   Ended %s", s->ended);
    printf("\n  GPUs       %d x %s   Limits min %s W  max %s W  default %s W\n", r->n_gpus,
           r->gpu_type, fmt(a, sizeof a, r->min_limit_w, "%.0f"),
           fmt(b, sizeof b, r->max_limit_w, "%.0f"), fmt(c, sizeof c, r->default_limit_w, "%.0f"));
    printf("  Model      %s", m->model[0] ? m->model : "unknown");
    if (m->family[0])
        printf(" (%s", m->family);
    if (isfinite(m->params_b))
        printf(", %.3g B params", m->params_b);
    if (m->family[0])
        printf(")");
    printf("   %s, %s", tri(m->moe, "MoE", "dense"),
           m->finetune < 0 ? "pretraining or fine-tuning unknown"
                           : tri(m->finetune, m->lora ? "LoRA fine-tuning" : "fine-tuning",
                                 "pretraining"));
    if (m->dp || m->tp || m->pp)
        printf("   dp%d tp%d pp%d", m->dp, m->tp, m->pp);
    if (m->global_batch)
        printf("   global batch %d", m->global_batch);
    if (m->seq_len)
        printf("   seq %d", m->seq_len);
    printf("\n  Throughput %s   Baseline at %s W: T0 %s, P0 %s W per GPU\n\n", s->unit_label,
           fmt(a, sizeof a, s->cap0_w, "%.0f"), pfi_fmt_fixed(b, sizeof b, s->t0, 5),
           fmt(c, sizeof c, s->p0, "%.1f"));
    printf("%3s %7s %8s %8s %12s %19s %6s %6s %7s %6s %5s %5s %6s %5s %8s %10s\n", "#",
           "Cap(W)", "Enf.(W)", "Power(W)", "Throughput", "CI", "Rel.T", "Rel.P", "SM MHz",
           "PwrCap", "Util", "SM", "Tensor", "DRAM", "GPU-s", "Lost");
    for (int i = 0; i < r->n_levels; i++) {
        const pfi_level *l = &r->levels[i];
        char ci[72], lo[32], hi[32], t[32];
        char rt[16], rp[16], clk[16], pc[16], u[16], sm[16], tn[16], dr[16];
        if (isfinite(l->tput_lo) && isfinite(l->tput_hi))
            snprintf(ci, sizeof ci, "[%s, %s]", pfi_fmt_fixed(lo, sizeof lo, l->tput_lo, 5),
                     pfi_fmt_fixed(hi, sizeof hi, l->tput_hi, 5));
        else
            snprintf(ci, sizeof ci, "-");
        char gs[24], lost[24];
        fmt(gs, sizeof gs, cost ? cost->gpu_s[i] : NAN, "%.0f");
        fmt(lost, sizeof lost, cost ? cost->lost[i] : NAN, "%.0f");
        printf("%3d %7s %8s %8s %12s %19s %6s %6s %7s %6s %5s %5s %6s %5s %8s %10s\n", i,
               fmt(a, sizeof a, l->cap_w, "%.0f"), fmt(b, sizeof b, l->enforced_w, "%.0f"),
               fmt(c, sizeof c, l->power_w, "%.1f"), pfi_fmt_fixed(t, sizeof t, l->tput, 5), ci,
               fmt(rt, sizeof rt, l->tput / s->t0, "%.3f"),
               fmt(rp, sizeof rp, l->power_w / s->p0, "%.3f"),
               fmt(clk, sizeof clk, l->sm_clock_mhz, "%.0f"),
               fmt(pc, sizeof pc, 100 * l->powercap_frac, "%.0f%%"),
               fmt(u, sizeof u, 100 * l->gpu_util, "%.0f%%"),
               fmt(sm, sizeof sm, 100 * l->sm_active, "%.0f%%"),
               fmt(tn, sizeof tn, 100 * l->tensor_active, "%.0f%%"),
               fmt(dr, sizeof dr, 100 * l->dram_active, "%.0f%%"), gs, lost);
    }
    printf("\n");
    if (cost)
        pfi_cli_cost_line(stdout, cost, pfi_cli_work_unit(r->unit));
    else
        printf("cost: unknown (no baseline rate)\n");
}

int pfi_cmd_runs_show(int argc, char **argv)
{
    const char *db = NULL;
    int as_json = 0;
    const pfi_opt opts[] = {
        {"db", PFI_OPT_STR, &db, "FILE", "the store (default $PFI_DB, else pfi.db)"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document on stdout"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi runs show RUN [--db FILE] [--json]",
        "Show one run (its id, or its exact name as pfi runs prints it) with every level: cap, "
        "enforced limit, power per GPU, throughput with its confidence interval, throughput and "
        "power relative to the baseline, and the mean telemetry of the level.",
        opts,
        "pfi runs show 3 --db pfi.db\n"
        "pfi runs show 3 --db pfi.db --json"};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    if (npos != 1) {
        fprintf(stderr, "pfi runs show: give exactly one run (id or name)\n");
        return PFI_EXIT_USAGE;
    }
    pfi_err err = {0};
    pfi_store *st;
    if (pfi_store_open(db, PFI_STORE_READONLY, &st, &err) != PFI_OK) /* only reads, as pfi runs */
        return pfi_cli_fail("runs show", &err);
    long long id;
    pfi_run_summary sum;
    pfi_run *run = malloc(sizeof *run);
    if (!run)
        rc = pfi_err_set(&err, PFI_ENOMEM, "out of memory");
    else if ((rc = pfi_store_find_run(st, pos[0], &id, &err)) == PFI_OK &&
             (rc = pfi_store_run_summary(st, id, &sum, &err)) == PFI_OK)
        rc = pfi_store_load_run(st, id, run, &err);
    pfi_cost cost;
    int have_cost = rc == PFI_OK && pfi_cli_stored_cost(st, run, &cost, NULL) == PFI_OK;
    pfi_store_close(st);
    if (rc != PFI_OK) {
        free(run);
        return pfi_cli_fail("runs show", &err);
    }
    int status = PFI_EXIT_OK;
    if (as_json)
        status = print_json(run, &sum, have_cost ? &cost : NULL);
    else
        print_table(run, &sum, have_cost ? &cost : NULL);
    free(run);
    return status;
}
