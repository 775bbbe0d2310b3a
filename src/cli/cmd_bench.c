/* pfi bench: benchmarks a person can run on their own machine.  One today:
 *   pfi bench allocate [--jobs N] [--gpus-per-job LO-HI] [--cut C] [--reps N] [--json]
 * times one allocation of a synthetic fleet (core/alloc_synth.h) on one core and reports the
 * memory it took.  Prints figures; judges nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cli/cli.h"
#include "core/alloc.h"
#include "core/alloc_synth.h"
#include "core/policy.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
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
        "one core, and the memory it takes.  Target of issue 6: 100,000 jobs in <= 100 ms.",
        opts};
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
    if (npos > 0 || policy < 0 || reps < 1 || !(cut > 0 && cut < 1)) {
        fprintf(stderr, "pfi bench allocate: bad arguments (see --help)\n");
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
        double t = now_s();
        if (pfi_alloc_policy(policy, s.jobs, n, NULL, budget, &o, &r, &err)) {
            pfi_alloc_synth_free(&s);
            return pfi_cli_fail("bench", &err);
        }
        t = now_s() - t;
        if (t < best)
            best = t;
    }
    long rss1 = rss_kib();
    double solver_kib = (double)(rss1 - rss_fleet);
    if (as_json) {
        json_t *doc = json_pack("{s:s, s:i, s:I, s:f, s:f, s:f, s:f, s:f, s:b, s:I, s:f, s:f}",
                                "policy", pfi_policy_name(policy), "jobs", n, "gpus",
                                (json_int_t)gpus, "cut", cut, "best_ms", 1e3 * best,
                                "power_w", r.power_w, "budget_w", budget, "value", r.value,
                                "optimal", r.optimal, "nodes", (json_int_t)r.nodes,
                                "peak_rss_kib", (double)rss1, "solver_bytes_per_job",
                                1024.0 * solver_kib / n);
        json_object_set_new(doc, "upper_bound",
                            isfinite(r.upper_bound) ? json_real(r.upper_bound) : json_null());
        rc = pfi_cli_print_json(doc);
    } else {
        printf("%s: %d jobs, %lld GPUs, %.0f%% cut: best of %d %.2f ms on one core\n",
               pfi_policy_name(policy), n, gpus, 100 * cut, reps, 1e3 * best);
        printf("power %.0f W of %.0f W; value %.9g", r.power_w, budget, r.value);
        if (isfinite(r.upper_bound))
            printf(" (bound %.9g, %s, %lld node%s)", r.upper_bound,
                   r.optimal ? "optimal" : "not proven optimal", r.nodes, r.nodes == 1 ? "" : "s");
        printf("\nmemory: fleet %ld KiB, allocation peak +%.0f KiB (%.0f B/job), peak RSS %ld KiB\n",
               rss_fleet - rss0, solver_kib, 1024.0 * solver_kib / n, rss1);
        rc = PFI_EXIT_OK;
    }
    pfi_alloc_result_free(&r);
    pfi_alloc_synth_free(&s);
    return rc;
}

int pfi_cmd_bench(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fprintf(argc < 2 ? stderr : stdout,
                "usage: pfi bench allocate [options]   (pfi bench allocate --help)\n");
        return argc < 2 ? PFI_EXIT_USAGE : PFI_EXIT_OK;
    }
    if (strcmp(argv[1], "allocate") == 0)
        return bench_allocate(argc - 1, argv + 1);
    fprintf(stderr, "pfi bench: unknown benchmark '%s' (allocate)\n", argv[1]);
    return PFI_EXIT_USAGE;
}
