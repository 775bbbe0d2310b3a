/* SPDX-License-Identifier: Apache-2.0 */
/* pfi bench: benchmarks a person can run on their own machine.
 *   pfi bench allocate [--jobs N] [--gpus-per-job LO-HI] [--cut C] [--reps N] [--json]
 *       times one allocation of a synthetic fleet (core/alloc_synth.h) on one core and reports
 *       the memory it took;
 *   pfi bench pergpu [--sim PRESETS] [--cuts LIST] [--variation V] [--json]
 *       measures in the simulator what per-GPU caps inside a job (core/alloc_pergpu.h) gain
 *       over one cap per job under the same budget (study/pergpu.h).
 * Prints figures; judges nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli/cli.h"
#include "core/alloc.h"
#include "core/alloc_keep.h"
#include "core/alloc_synth.h"
#include "core/policy.h"
#include "study/pergpu.h"
#include "util/budget.h"
#include "util/clock.h"
#include "util/units.h"
#include "util/json.h"

static long rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* One pass over every job's curve points: the least any solver must spend reading its input. */
static double read_once(const pfi_alloc_synth *s)
{
    double t = pfi_clock_cpu(), sum = 0;
    for (int j = 0; j < s->n; j++) {
        const pfi_alloc_job *J = &s->jobs[j];
        for (int i = 0; i < J->n_points; i++)
            sum += J->cap_w[i] * J->tput[i];
    }
    t = pfi_clock_cpu() - t;
    return sum > 0 ? t : INFINITY; /* uses the sum, so the pass is not optimized away */
}

/* Warm re-solves after the job in the middle of the list leaves (the ones after it move down)
 * and arrives again at its place (best of reps each, ms; the list is as it was afterwards).
 * Moving the caller's array is not timed: the allocator's part is.  *r: the result refilled. */
static int bench_arrive_leave(pfi_alloc_ws *w, pfi_alloc_synth *s, double budget, int reps,
                              pfi_alloc_result *r, double *arrive_ms, double *leave_ms,
                              pfi_err *err)
{
    int n = s->n, m = n / 2, rc = PFI_OK;
    *arrive_ms = *leave_ms = INFINITY;
    if (n < 2)
        return PFI_OK;
    for (int i = 0; i < reps && !rc; i++) {
        pfi_alloc_job J = s->jobs[m];
        memmove(s->jobs + m, s->jobs + m + 1, (size_t)(n - m - 1) * sizeof *s->jobs);
        double t = pfi_clock_cpu();
        if (!(rc = pfi_alloc_ws_remove_job(w, s->jobs, n - 1, m, err)))
            rc = pfi_alloc_ws_solve_reuse(w, budget, r, err);
        *leave_ms = fmin(*leave_ms, 1e3 * (pfi_clock_cpu() - t));
        memmove(s->jobs + m + 1, s->jobs + m, (size_t)(n - m - 1) * sizeof *s->jobs);
        s->jobs[m] = J;
        if (rc)
            break;
        t = pfi_clock_cpu();
        if (!(rc = pfi_alloc_ws_add_job(w, s->jobs, n, m, err)))
            rc = pfi_alloc_ws_solve_reuse(w, budget, r, err);
        *arrive_ms = fmin(*arrive_ms, 1e3 * (pfi_clock_cpu() - t));
    }
    return rc;
}

/* What bench_warm measures (ms, best of reps but where said). */
typedef struct warm_figs {
    double solve_ms;     /* from scratch in the workspace's buffers */
    double first_new_ms; /* the first budget change (-10%) after a new workspace's plan (one) */
    double first_ms;     /* the same after a rebuild, in the memory the workspace has (one) */
    double sort_max_ms;  /* the slowest budget change while the segments are sorted in parts */
    double resolve_ms;   /* a budget change of -10% then +5% from B, the mean of the two */
    double job_ms, arrive_ms, leave_ms; /* one job's curve; a job arriving, leaving */
    double keep_ms;      /* resolve_ms through the keeper (core/alloc_keep.h), as the daemons */
} warm_figs;

/* The budget changes of resolve_ms through a keeper handed the whole list each time, as
 * pfi serve and pfi cluster serve do (it checks the list against its copy first).  Its plan and
 * the solves that sort its index are not timed. */
static int bench_keep(pfi_alloc_synth *s, double budget, const pfi_alloc_opts *o, int reps,
                      double *keep_ms, pfi_err *err)
{
    pfi_alloc_keep *k = NULL;
    pfi_alloc_result r = {0};
    int rc = PFI_OK;
    *keep_ms = INFINITY;
    for (int i = 0; i < PFI_ALLOC_INDEX_SOLVES + reps && !rc; i++) {
        rc = pfi_alloc_keep_solve(&k, s->jobs, s->n, budget, o, &r, err);
        pfi_alloc_keep_put_back(k, &r);
        if (rc || i < PFI_ALLOC_INDEX_SOLVES)
            continue;
        double t = pfi_clock_cpu();
        for (int h = 0; h < 2 && !rc; h++) {
            rc = pfi_alloc_keep_solve(&k, s->jobs, s->n, (h ? 0.9 * 1.05 : 0.9) * budget, o, &r,
                                      err);
            pfi_alloc_keep_put_back(k, &r);
        }
        *keep_ms = fmin(*keep_ms, 1e3 * (pfi_clock_cpu() - t) / 2);
    }
    pfi_alloc_keep_free(k);
    return rc;
}

/* Budget changes of -10% then +5% from B (re-solved at B untimed before each pair, so every
 * rep times the same change): their mean, best of reps. */
static int bench_resolve(pfi_alloc_ws *w, double budget, int reps, pfi_alloc_result *r,
                         double *resolve_ms, pfi_err *err)
{
    int rc = PFI_OK;
    *resolve_ms = INFINITY;
    for (int i = 0; i < reps && !rc; i++) {
        if ((rc = pfi_alloc_ws_solve_reuse(w, budget, r, err)))
            break;
        double t = pfi_clock_cpu();
        if (!(rc = pfi_alloc_ws_solve_reuse(w, 0.9 * budget, r, err)))
            rc = pfi_alloc_ws_solve_reuse(w, 0.9 * 1.05 * budget, r, err);
        *resolve_ms = fmin(*resolve_ms, 1e3 * (pfi_clock_cpu() - t) / 2);
    }
    return rc;
}

/* Solves on one workspace (warm_figs): from scratch (every check, floor and hull redone:
 * pfi_alloc_ws_set_jobs, after the workspace sorted once: the memory is there, as in a
 * keeper's rebuild), then the first budget change after that plan and the changes that
 * follow while the workspace sorts its segments, one part a solve (the slowest of them), then
 * budget changes, one job's curve changing (its throughput up or down 2%), and a job leaving and
 * arriving (bench_arrive_leave).  Every solve refills one result, as a re-planner's would
 * (pfi_alloc_ws_solve_reuse): its arrays are had once, before the timing. */
static int bench_warm(pfi_alloc_synth *s, double budget, const pfi_alloc_opts *o, int reps,
                      warm_figs *F, pfi_err *err)
{
    pfi_alloc_ws *w;
    pfi_alloc_result r = {0};
    int rc = pfi_alloc_ws_new(s->jobs, s->n, budget, o, &w, err);
    if (rc || (rc = pfi_alloc_ws_solve_reuse(w, budget, &r, err)))
        goto out;
    for (int i = 1; i < PFI_ALLOC_INDEX_SOLVES && !rc; i++) { /* its sort's memory is new */
        double t = pfi_clock_cpu();
        rc = pfi_alloc_ws_solve_reuse(w, i % 2 ? 0.9 * budget : budget, &r, err);
        if (i == 1)
            F->first_new_ms = 1e3 * (pfi_clock_cpu() - t);
    }
    F->solve_ms = INFINITY;
    for (int i = 0; i < reps && !rc; i++) {
        double t0 = pfi_clock_cpu();
        if (!(rc = pfi_alloc_ws_set_jobs(w, s->jobs, s->n, budget, err)))
            rc = pfi_alloc_ws_solve_reuse(w, budget, &r, err);
        F->solve_ms = fmin(F->solve_ms, 1e3 * (pfi_clock_cpu() - t0));
    }
    F->sort_max_ms = 0;
    for (int i = 1; i < PFI_ALLOC_INDEX_SOLVES && !rc; i++) {
        double t = pfi_clock_cpu();
        rc = pfi_alloc_ws_solve_reuse(w, i % 2 ? 0.9 * budget : budget, &r, err);
        t = 1e3 * (pfi_clock_cpu() - t);
        if (i == 1)
            F->first_ms = t;
        F->sort_max_ms = fmax(F->sort_max_ms, t);
    }
    if (!rc)
        rc = bench_resolve(w, budget, reps, &r, &F->resolve_ms, err);
    int j = s->n / 2;
    double *tp = s->tput + (size_t)j * PFI_SYNTH_POINTS;
    F->job_ms = INFINITY;
    for (int i = 0; i < reps && !rc; i++) {
        double f = i % 2 ? 1 / 1.02 : 1.02;
        for (int k = 0; k < PFI_SYNTH_POINTS; k++)
            tp[k] *= f;
        double t = pfi_clock_cpu();
        if (!(rc = pfi_alloc_ws_update_job(w, j, err)))
            rc = pfi_alloc_ws_solve_reuse(w, budget, &r, err);
        F->job_ms = fmin(F->job_ms, 1e3 * (pfi_clock_cpu() - t));
    }
    if (reps % 2) /* put the curve back as it was */
        for (int k = 0; k < PFI_SYNTH_POINTS; k++)
            tp[k] /= 1.02;
    if (!rc)
        rc = bench_arrive_leave(w, s, budget, reps, &r, &F->arrive_ms, &F->leave_ms, err);
out:
    pfi_alloc_result_free(&r);
    pfi_alloc_ws_free(w);
    if (!rc)
        rc = bench_keep(s, budget, o, reps, &F->keep_ms, err);
    return rc;
}

typedef struct alloc_figs {
    const char *policy;
    int n, reps;
    long long gpus;
    double cut, budget, best_s;
    long rss0, rss_fleet, rss1;
    double read_s;
    warm_figs w;
} alloc_figs;

static int alloc_print(const alloc_figs *f, const pfi_alloc_result *r, int as_json)
{
    double solver_kib = (double)(f->rss1 - f->rss_fleet);
    double per_read = f->w.solve_ms / (1e3 * f->read_s);
    if (as_json) {
        json_t *doc = json_pack("{s:s, s:i, s:I, s:f, s:f, s:f, s:f, s:f, s:b, s:I, s:f, s:f}",
                                "policy", f->policy, "jobs", f->n, "gpus", (json_int_t)f->gpus,
                                "cut", f->cut, "best_ms", 1e3 * f->best_s, "power_w",
                                r->power_w, "budget_w", f->budget, "value", r->value,
                                "optimal", r->optimal, "nodes", (json_int_t)r->nodes,
                                "peak_rss_kib", (double)f->rss1, "solver_bytes_per_job",
                                1024.0 * solver_kib / f->n);
        json_object_set_new(doc, "upper_bound", isfinite(r->upper_bound)
                                                    ? json_real(r->upper_bound)
                                                    : json_null());
        json_object_set_new(doc, "solve_ms", json_real(f->w.solve_ms));
        json_object_set_new(doc, "read_ms", json_real(1e3 * f->read_s));
        json_object_set_new(doc, "solve_per_read", json_real(per_read));
        json_object_set_new(doc, "best_per_read", json_real(f->best_s / f->read_s));
        json_object_set_new(doc, "resolve_ms", pfi_json_num(f->w.resolve_ms));
        json_object_set_new(doc, "resolve_first_ms", pfi_json_num(f->w.first_ms));
        json_object_set_new(doc, "resolve_first_new_ms", pfi_json_num(f->w.first_new_ms));
        json_object_set_new(doc, "resolve_sorting_max_ms", pfi_json_num(f->w.sort_max_ms));
        json_object_set_new(doc, "keep_resolve_ms", pfi_json_num(f->w.keep_ms));
        json_object_set_new(doc, "resolve_job_ms", pfi_json_num(f->w.job_ms));
        json_object_set_new(doc, "resolve_arrive_ms", pfi_json_num(f->w.arrive_ms));
        json_object_set_new(doc, "resolve_leave_ms", pfi_json_num(f->w.leave_ms));
        return pfi_cli_print_json(doc);
    }
    printf("%s: %d jobs, %lld GPUs, %.0f%% cut: best of %d %.2f ms of CPU on one core\n", f->policy,
           f->n, f->gpus, 100 * f->cut, f->reps, 1e3 * f->best_s);
    printf("power %.0f W of %.0f W; value %.9g", r->power_w, f->budget, r->value);
    if (isfinite(r->upper_bound))
        printf(" (bound %.9g, %s, %lld node%s)", r->upper_bound,
               r->optimal ? "optimal" : "not proven optimal", r->nodes, r->nodes == 1 ? "" : "s");
    printf("\nmemory: fleet %ld KiB, allocation peak +%.0f KiB (%.0f B/job), peak RSS %ld KiB\n",
           f->rss_fleet - f->rss0, solver_kib, 1024.0 * solver_kib / f->n, f->rss1);
    printf("solve from scratch in reused buffers: %.2f ms; reading the curves once: %.2f ms; "
           "solve / read: %.1f (one shot / read: %.1f)\n",
           f->w.solve_ms, 1e3 * f->read_s, per_read, f->best_s / f->read_s);
    if (isfinite(f->w.resolve_ms)) {
        printf("warm re-solve: budget -10%% then +5%% %.2f ms each (through the keeper, as the "
               "daemons: %.2f ms), one job's curve %.2f ms, a job arriving %.2f ms, leaving "
               "%.2f ms\n",
               f->w.resolve_ms, f->w.keep_ms, f->w.job_ms, f->w.arrive_ms, f->w.leave_ms);
        printf("first budget change after a plan: %.2f ms (a new workspace's: %.2f ms); slowest "
               "while the segments are sorted (one part a change): %.2f ms\n",
               f->w.first_ms, f->w.first_new_ms, f->w.sort_max_ms);
    }
    return PFI_EXIT_OK;
}

/* What is wrong with pfi bench allocate's arguments, into why (0: nothing). */
static int alloc_args_bad(const char *extra, const char *policy_s, int policy, int reps,
                          double cut, const char *gpus_s, int lo, int hi, int n, char *why,
                          size_t size)
{
    if (extra)
        snprintf(why, size, "unexpected argument '%s'", extra);
    else if (policy < 0)
        snprintf(why, size, "--policy %s: not a policy (equal, pfi, oracle, proportional-to-pfi)",
                 policy_s);
    else if (reps < 1 || reps > 1000)
        snprintf(why, size, "--reps %d: give 1-1000 timed allocations", reps);
    else if (!(cut > 0 && cut < 1))
        snprintf(why, size, "--cut %g: a cut is a fraction of the baseline draw in (0, 1)", cut);
    else if (lo < 1 || hi < lo)
        snprintf(why, size, "--gpus-per-job %s: give N or LO-HI with 1 <= LO <= HI", gpus_s);
    else if (n < 1)
        snprintf(why, size, "--jobs %d: give 1 or more", n);
    else
        return 0;
    return 1;
}

static int bench_allocate(int argc, char **argv)
{
    int n = 100000, reps = 5, as_json = 0;
    const char *gpus_s = "1-32", *policy_s = "oracle";
    double cut = 0.3;
    const pfi_opt opts[] = {
        {"jobs", PFI_OPT_INT, &n, "N", "jobs in the synthetic fleet (default 100000)"},
        {"gpus-per-job", PFI_OPT_STR, &gpus_s, "LO-HI", "GPUs per job, uniform (default 1-32)"},
        {"cut", PFI_OPT_DOUBLE, &cut, "C", "power cut of the baseline draw (default 0.3)"},
        {"policy", PFI_OPT_STR, &policy_s, "NAME", "oracle (the solver, default) or equal, ..."},
        {"reps", PFI_OPT_INT, &reps, "N", "allocations timed; the best is reported (default 5)"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document on stdout"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi bench allocate [--jobs N] [--gpus-per-job LO-HI] [--cut C] [--json]",
        "Time one allocation of a seeded synthetic fleet (curves shaped like measured ones) on "
        "one core (CPU time of the solving thread, so other processes' load does not count), "
        "and the memory it takes: best_ms allocates everything anew (pfi_alloc_solve), "
        "solve_ms redoes every check and hull in a workspace's reused buffers and result, "
        "read_ms is one pass over the curves, resolve_ms a warm re-solve after a budget change, "
        "resolve_job_ms after one job's new curve, resolve_arrive_ms and resolve_leave_ms "
        "after a job in the middle of the list arrives or leaves.  Targets: solve_ms <= 5 x read_ms at 1M jobs, "
        "<= 25 ms at 100k; every resolve_* <= 5 ms at 100k.",
        opts,
        "pfi bench allocate --jobs 100000                   # a campus-sized fleet\n"
        "pfi bench allocate --jobs 1000 --cut 0.3 --json"};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    int lo, hi;
    char tail;
    if (sscanf(gpus_s, "%d-%d%c", &lo, &hi, &tail) != 2) {
        if (sscanf(gpus_s, "%d%c", &lo, &tail) != 1) {
            fprintf(stderr, "pfi bench: bad --gpus-per-job '%s' (expected 8 or 1-32)\n", gpus_s);
            return PFI_EXIT_USAGE;
        }
        hi = lo;
    }
    int policy = pfi_policy_parse(policy_s);
    char why[160];
    if (alloc_args_bad(npos ? pos[0] : NULL, policy_s, policy, reps, cut, gpus_s, lo, hi, n, why,
                       sizeof why)) {
        fprintf(stderr, "pfi bench allocate: %s\n", why);
        return PFI_EXIT_USAGE;
    }
    pfi_err err = {0};
    pfi_alloc_synth s;
    long rss0 = rss_kib();
    if (pfi_alloc_synth_make(n, lo, hi, 42, &s, &err))
        return pfi_cli_fail("bench", &err);
    long rss_fleet = rss_kib();
    long long gpus = 0;
    for (int j = 0; j < n; j++)
        gpus += s.jobs[j].n_gpus;
    double budget = pfi_alloc_budget_from_cut(s.jobs, n, cut);
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    pfi_alloc_result r = {0};
    double best = INFINITY;
    for (int i = 0; i < reps; i++) {
        pfi_alloc_result_free(&r);
        double t = pfi_clock_cpu();
        if (pfi_alloc_policy(policy, s.jobs, n, NULL, budget, &o, &r, &err)) {
            pfi_alloc_synth_free(&s);
            return pfi_cli_fail("bench", &err);
        }
        t = pfi_clock_cpu() - t;
        if (t < best)
            best = t;
    }
    long rss1 = rss_kib();
    double read_s = INFINITY;
    warm_figs W = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    for (int i = 0; i < reps; i++)
        read_s = fmin(read_s, read_once(&s));
    if (policy == PFI_POLICY_ORACLE && bench_warm(&s, budget, &o, reps, &W, &err)) {
        pfi_alloc_result_free(&r);
        pfi_alloc_synth_free(&s);
        return pfi_cli_fail("bench", &err);
    }
    if (!isfinite(W.solve_ms)) /* the simple policies: their own time */
        W.solve_ms = 1e3 * best;
    const alloc_figs F = {pfi_policy_name(policy), n, reps, gpus, cut, budget, best, rss0,
                          rss_fleet, rss1, read_s, W};
    rc = alloc_print(&F, &r, as_json);
    pfi_alloc_result_free(&r);
    pfi_alloc_synth_free(&s);
    return rc;
}

/* ---- per-GPU caps in the simulator (study/pergpu.h) ---- */

static int bench_pergpu(int argc, char **argv)
{
    const char *presets = "h200x8-mixed,h200x8-dense,h200x8-moe,h200x32-llama70b";
    const char *cuts_s = "0.1,0.2,0.3";
    double variation = NAN, step = 25; /* NAN: the preset's own spread */
    int as_json = 0;
    const char *jobs_out = NULL;
    const pfi_opt opts[] = {
        {"sim", PFI_OPT_STR, &presets, "PRESETS", "simulated nodes, comma-separated presets or files"},
        {"cuts", PFI_OPT_STR, &cuts_s, "LIST", "power cuts of the jobs' baseline draw, 0.3, cut=30% or -30% (pfi help budget; default 0.1,0.2,0.3)"},
        {"variation", PFI_OPT_DOUBLE, &variation, "V",
         "1-sigma per-GPU power-efficiency spread (default: the preset's, 2%)"},
        {"step", PFI_OPT_DOUBLE, &step, "W", "cap step of the uniform sweep (default 25 W)"},
        {"jobs-out", PFI_OPT_STR, &jobs_out, "FILE",
         "write the measured jobs with their per-GPU tables (pfi allocate --per-gpu --jobs)"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document on stdout"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi bench pergpu [--sim PRESETS] [--cuts LIST] [--variation V] [--json]",
        "Sweep every job of the simulated nodes at uniform caps (per-GPU clocks and tokens/s), "
        "allocate the budget with one cap per job and with per-GPU caps that hold each job's "
        "common clock, apply both to the simulator and measure the tokens/s each gives.",
        opts,
        "pfi bench pergpu --sim h200x8-mixed --cuts 0.2,0.4"};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    pfi_err err = {0};
    double cuts[16];
    int ncuts = 0;
    if (npos > 0) {
        fprintf(stderr, "pfi bench pergpu: unexpected argument '%s'\n", pos[0]);
        return PFI_EXIT_USAGE;
    }
    if (!(step >= 1)) {
        fprintf(stderr, "pfi bench pergpu: --step %g: the cap grid is 1 W or more\n", step);
        return PFI_EXIT_USAGE;
    }
    if (pfi_budget_parse_cuts(cuts_s, cuts, 16, &ncuts, &err)) {
        fprintf(stderr, "pfi bench pergpu: %s\n", err.msg);
        return PFI_EXIT_USAGE;
    }
    for (int c = 0; c < ncuts; c++)
        if (!(cuts[c] > 0 && cuts[c] < 1)) {
            fprintf(stderr, "pfi bench pergpu: cut %g must be in (0, 1)\n", cuts[c]);
            return PFI_EXIT_USAGE;
        }
    if (!isnan(variation) && !(variation >= 0 && variation < 1)) {
        fprintf(stderr, "pfi bench pergpu: --variation %g must be in [0, 1)\n", variation);
        return PFI_EXIT_USAGE;
    }
    pfi_pergpu_bench *B;
    if (pfi_pergpu_bench_new(presets, variation, &B, &err))
        return pfi_cli_fail("bench", &err);
    int njobs, nnodes;
    long gpus;
    pfi_pergpu_bench_size(B, &njobs, &nnodes, &gpus);
    rc = pfi_pergpu_bench_measure(B, step, &err);
    if (!rc && jobs_out)
        rc = pfi_pergpu_bench_write_jobs(B, jobs_out, &err);
    json_t *arr = json_array();
    if (!rc && !as_json)
        printf("%d jobs on %d simulated nodes (%ld GPUs); one cap per job vs per-GPU caps\n"
               "%5s %12s %14s %14s %8s %14s %14s\n",
               njobs, nnodes, gpus, "cut", "budget W", "uniform tok/s", "per-GPU tok/s",
               "gain", "uniform W", "per-GPU W");
    for (int c = 0; !rc && c < ncuts; c++) {
        pfi_pergpu_cut r;
        if ((rc = pfi_pergpu_bench_cut(B, cuts[c], &r, &err)))
            break;
        if (as_json)
            json_array_append_new(
                arr, json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "cut", cuts[c], "budget_w",
                               r.budget_w, "uniform_tokens_per_s", r.uniform_tps,
                               "pergpu_tokens_per_s", r.pergpu_tps, "gain",
                               r.pergpu_tps / r.uniform_tps - 1, "uniform_caps_w", r.uniform_w,
                               "pergpu_caps_w", r.pergpu_w));
        else
            printf("%4.0f%% %12.0f %14.1f %14.1f %7.2f%% %14.1f %14.1f\n", 100 * cuts[c],
                   r.budget_w, r.uniform_tps, r.pergpu_tps,
                   100 * (r.pergpu_tps / r.uniform_tps - 1), r.uniform_w, r.pergpu_w);
    }
    pfi_pergpu_bench_free(B);
    if (rc) {
        json_decref(arr);
        return pfi_cli_fail("bench", &err);
    }
    if (as_json)
        return pfi_cli_print_json(json_pack("{s:i, s:i, s:I, s:o}", "jobs", njobs, "nodes",
                                            nnodes, "gpus", (json_int_t)gpus, "cuts", arr));
    json_decref(arr);
    return PFI_EXIT_OK;
}

static const pfi_cli_sub subs[] = {
    {"allocate", bench_allocate,
     "time and memory of one allocation of a synthetic campus-sized fleet"},
    {"pergpu", bench_pergpu, "per-GPU caps vs one cap per job, measured in the simulator"},
};
const pfi_cli_family_spec pfi_cli_family_bench = {
    "bench", "Benchmarks of the allocator and of per-GPU caps (figures, no pass or fail).",
    "pfi bench allocate --jobs 100000\n"
    "pfi bench pergpu --json",
    subs, (int)(sizeof subs / sizeof subs[0])};

int pfi_cmd_bench(int argc, char **argv)
{
    return pfi_cli_family(&pfi_cli_family_bench, argc, argv);
}
