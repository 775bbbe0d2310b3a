/* pfi bench: benchmarks a person can run on their own machine.
 *   pfi bench allocate [--jobs N] [--gpus-per-job LO-HI] [--cut C] [--reps N] [--json]
 *       times one allocation of a synthetic fleet (core/alloc_synth.h) on one core and reports
 *       the memory it took;
 *   pfi bench pergpu [--sim PRESETS] [--cuts LIST] [--variation V] [--json]
 *       measures in the simulator what per-GPU caps inside a job (core/alloc_pergpu.h) gain
 *       over one cap per job under the same budget.
 * Prints figures; judges nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli/cli.h"
#include "core/alloc.h"
#include "core/alloc_pergpu.h"
#include "core/alloc_synth.h"
#include "core/policy.h"
#include "sim/sim.h"
#include "util/clock.h"
#include "util/units.h"

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
        double t = pfi_clock_mono();
        if (pfi_alloc_policy(policy, s.jobs, n, NULL, budget, &o, &r, &err)) {
            pfi_alloc_synth_free(&s);
            return pfi_cli_fail("bench", &err);
        }
        t = pfi_clock_mono() - t;
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

/* ---- per-GPU caps in the simulator ---- */

#define PG_MAX_JOBS 64
#define PG_CAPS 64
#define PG_SETTLE_S 10.0 /* virtual seconds after a change: 40 firmware time constants */

typedef struct pg_job {
    pfi_sim_node *node;
    int sim_job, first, n;  /* the job on its node and its GPUs */
    char id[96];
    int ncaps;
    double caps[PG_CAPS], tput[PG_CAPS], clock[PFI_MAX_GPUS * PG_CAPS];
    double gcaps[PFI_MAX_GPUS * PG_CAPS], x[PG_CAPS]; /* per-GPU table */
    double xc[PG_CAPS], xt[PG_CAPS];                  /* per-GPU curve */
    int nx;
    double p0, min_w, max_w;
    pfi_pergpu_job table;
} pg_job;

typedef struct pg_bench {
    int nnodes, njobs;
    pfi_sim_node *nodes[8];
    double t[8];            /* each node's clock: changes must move forward */
    pg_job jobs[PG_MAX_JOBS];
} pg_bench;

/* Sets every GPU of every job (caps[j][g]) and returns the tokens/s of each job once settled. */
static int pg_apply(pg_bench *B, double (*caps)[PFI_MAX_GPUS], double *tput, pfi_err *err)
{
    for (int i = 0; i < B->nnodes; i++)
        B->t[i] += 1.0;
    for (int j = 0; j < B->njobs; j++) {
        pg_job *J = &B->jobs[j];
        int ni = 0;
        while (B->nodes[ni] != J->node)
            ni++;
        for (int g = 0; g < J->n; g++) {
            int rc = pfi_sim_set_limit(J->node, J->first + g, B->t[ni], caps[j][g], err);
            if (rc)
                return pfi_err_prefix(err, "%s GPU %d: ", J->id, g);
        }
    }
    for (int i = 0; i < B->nnodes; i++)
        B->t[i] += PG_SETTLE_S;
    for (int j = 0; j < B->njobs; j++) {
        pg_job *J = &B->jobs[j];
        int ni = 0;
        while (B->nodes[ni] != J->node)
            ni++;
        pfi_sim_job_status st;
        int rc = pfi_sim_job_status_at(J->node, J->sim_job, B->t[ni], &st, err);
        if (rc)
            return rc;
        tput[j] = st.tokens_per_s;
    }
    return PFI_OK;
}

/* Sweeps every job at uniform caps (all jobs at once: they do not share GPUs). */
static int pg_measure(pg_bench *B, double step_w, pfi_err *err)
{
    static double caps[PG_MAX_JOBS][PFI_MAX_GPUS];
    double tput[PG_MAX_JOBS];
    int maxk = 0;
    for (int j = 0; j < B->njobs; j++) {
        pg_job *J = &B->jobs[j];
        J->ncaps = 0;
        for (double c = J->min_w; c <= J->max_w + 1e-9 && J->ncaps < PG_CAPS; c += step_w)
            J->caps[J->ncaps++] = c;
        if (J->caps[J->ncaps - 1] < J->max_w - 1e-9 && J->ncaps < PG_CAPS)
            J->caps[J->ncaps++] = J->max_w;
        if (J->ncaps > maxk)
            maxk = J->ncaps;
    }
    for (int k = 0; k < maxk; k++) {
        for (int j = 0; j < B->njobs; j++)
            for (int g = 0; g < B->jobs[j].n; g++)
                caps[j][g] = B->jobs[j].caps[k < B->jobs[j].ncaps ? k : B->jobs[j].ncaps - 1];
        int rc = pg_apply(B, caps, tput, err);
        if (rc)
            return rc;
        for (int j = 0; j < B->njobs; j++) {
            pg_job *J = &B->jobs[j];
            if (k >= J->ncaps)
                continue;
            J->tput[k] = tput[j];
            int ni = 0;
            while (B->nodes[ni] != J->node)
                ni++;
            for (int g = 0; g < J->n; g++) {
                pfi_sample s;
                if ((rc = pfi_sim_sample(J->node, J->first + g, B->t[ni], &s, err)))
                    return rc;
                J->clock[g * J->ncaps + k] = s.sm_clock_mhz;
                if (k == J->ncaps - 1)
                    J->p0 += s.power_w / J->n; /* the top cap is the default: the baseline */
            }
        }
    }
    /* A GPU's clock read at one instant can dip by a few MHz; the table wants it monotone. */
    for (int j = 0; j < B->njobs; j++) {
        pg_job *J = &B->jobs[j];
        for (int g = 0; g < J->n; g++)
            for (int k = 1; k < J->ncaps; k++) {
                double *f = &J->clock[g * J->ncaps + k];
                if (*f < f[-1])
                    *f = f[-1];
            }
        J->table = (pfi_pergpu_job){J->n, J->ncaps, J->caps, J->clock, J->tput};
        int rc = pfi_pergpu_table(&J->table, J->gcaps, J->x, err);
        if (rc)
            return pfi_err_prefix(err, "%s: ", J->id);
        J->nx = pfi_pergpu_curve(&J->table, J->x, J->xc, J->xt, NULL);
    }
    return PFI_OK;
}

static int bench_pergpu(int argc, char **argv)
{
    const char *presets = "h200x8-mixed,h200x8-dense,h200x8-moe,h200x32-llama70b";
    const char *cuts_s = "0.1,0.2,0.3";
    double variation = NAN, step = 25; /* NAN: the preset's own spread */
    int as_json = 0;
    const char *jobs_out = NULL;
    const pfi_opt opts[] = {
        {"sim", PFI_OPT_STR, &presets, "PRESETS", "simulated nodes, comma-separated presets or files"},
        {"cuts", PFI_OPT_STR, &cuts_s, "LIST", "power cuts of the jobs' baseline draw (default 0.1,0.2,0.3)"},
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
        opts};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    pfi_err err = {0};
    double cuts[16];
    int ncuts = 0;
    if (npos > 0 || !(step >= 1) || pfi_parse_double_list(cuts_s, cuts, 16, &ncuts, &err)) {
        fprintf(stderr, "pfi bench pergpu: %s\n", err.msg[0] ? err.msg : "bad arguments");
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
    pg_bench *B = calloc(1, sizeof *B);
    if (!B)
        return PFI_EXIT_FAIL;
    rc = PFI_OK;
    char list[512];
    snprintf(list, sizeof list, "%s", presets);
    for (char *sv = NULL, *name = strtok_r(list, ",", &sv); name && !rc;
         name = strtok_r(NULL, ",", &sv)) {
        if (B->nnodes == 8) {
            rc = pfi_err_set(&err, PFI_EINVAL, "at most 8 nodes");
            break;
        }
        pfi_node_config cfg;
        if ((rc = pfi_sim_config_load(name, &cfg, &err)))
            break;
        if (!isnan(variation))
            cfg.variation = variation;
        cfg.seed += (uint64_t)B->nnodes; /* distinct GPUs on each node */
        if ((rc = pfi_sim_config_check(&cfg, &err)) ||
            (rc = pfi_sim_node_new(&cfg, &B->nodes[B->nnodes], &err)))
            break;
        pfi_sim_node *nd = B->nodes[B->nnodes++];
        for (int j = 0; j < cfg.n_jobs && B->njobs < PG_MAX_JOBS; j++) {
            pg_job *J = &B->jobs[B->njobs++];
            J->node = nd;
            J->sim_job = j;
            J->first = cfg.jobs[j].first_gpu;
            J->n = cfg.jobs[j].n_gpus;
            J->min_w = cfg.gpu.min_limit_w;
            J->max_w = cfg.gpu.default_limit_w;
            snprintf(J->id, sizeof J->id, "%s/%s", name, cfg.jobs[j].name);
        }
    }
    if (!rc)
        rc = pg_measure(B, step, &err);
    if (!rc && jobs_out) {
        json_t *ja = json_array();
        for (int j = 0; j < B->njobs; j++) {
            pg_job *J = &B->jobs[j];
            json_t *c = json_array(), *t = json_array(), *clk = json_array();
            for (int k = 0; k < J->ncaps; k++) {
                json_array_append_new(c, json_real(J->caps[k]));
                json_array_append_new(t, json_real(J->tput[k]));
            }
            for (int g = 0; g < J->n; g++) {
                json_t *row = json_array();
                for (int k = 0; k < J->ncaps; k++)
                    json_array_append_new(row, json_real(J->clock[g * J->ncaps + k]));
                json_array_append_new(clk, row);
            }
            json_array_append_new(
                ja, json_pack("{s:s, s:i, s:f, s:f, s:f, s:{s:O, s:O}, s:{s:o, s:o, s:o}}", "id",
                              J->id, "gpus", J->n, "min_cap_w", J->min_w, "max_cap_w", J->max_w,
                              "p0_w", J->p0, "curve", "cap_w", c, "tput", t, "per_gpu", "cap_w",
                              c, "tput", t, "clock_mhz", clk));
        }
        json_t *doc = json_pack("{s:s, s:o}", "note",
                                "measured by pfi bench pergpu on the simulator", "jobs", ja);
        if (json_dump_file(doc, jobs_out, JSON_INDENT(1) | JSON_REAL_PRECISION(8)))
            rc = pfi_err_set(&err, PFI_EIO, "cannot write %s", jobs_out);
        json_decref(doc);
    }
    json_t *arr = json_array();
    static double caps[PG_MAX_JOBS][PFI_MAX_GPUS];
    double tput[PG_MAX_JOBS];
    long gpus = 0;
    for (int j = 0; j < B->njobs; j++)
        gpus += B->jobs[j].n;
    if (!rc && !as_json)
        printf("%d jobs on %d simulated nodes (%ld GPUs); one cap per job vs per-GPU caps\n"
               "%5s %12s %14s %14s %8s %14s %14s\n",
               B->njobs, B->nnodes, gpus, "cut", "budget W", "uniform tok/s", "per-GPU tok/s",
               "gain", "uniform W", "per-GPU W");
    for (int c = 0; !rc && c < ncuts; c++) {
        pfi_alloc_job uni[PG_MAX_JOBS], per[PG_MAX_JOBS];
        double budget = 0;
        for (int j = 0; j < B->njobs; j++) {
            pg_job *J = &B->jobs[j];
            budget += J->n * J->p0;
            uni[j] = (pfi_alloc_job){J->id, J->n, J->min_w, J->max_w, J->caps, J->tput, J->ncaps,
                                     J->p0, NAN, NAN, 1};
            /* flat above its last point: the device maximum stays the range's end */
            per[j] = (pfi_alloc_job){J->id, J->n, J->xc[0], J->max_w, J->xc, J->xt, J->nx,
                                     J->p0, NAN, NAN, 1};
        }
        budget *= 1 - cuts[c];
        pfi_alloc_opts o;
        pfi_alloc_opts_default(&o);
        pfi_alloc_result ru, rp;
        if ((rc = pfi_alloc_solve(uni, B->njobs, budget, &o, &ru, &err)))
            break;
        if ((rc = pfi_alloc_solve(per, B->njobs, budget, &o, &rp, &err))) {
            pfi_alloc_result_free(&ru);
            break;
        }
        double tu = 0, tp = 0, wu = 0, wp = 0;
        for (int j = 0; j < B->njobs; j++)
            for (int g = 0; g < B->jobs[j].n; g++)
                caps[j][g] = ru.cap_w[j], wu += ru.cap_w[j];
        if (!(rc = pg_apply(B, caps, tput, &err)))
            for (int j = 0; j < B->njobs; j++)
                tu += tput[j];
        for (int j = 0; !rc && j < B->njobs; j++) {
            pg_job *J = &B->jobs[j];
            pfi_pergpu_split(&J->table, J->gcaps, J->x, rp.cap_w[j], caps[j]);
            for (int g = 0; g < J->n; g++)
                wp += caps[j][g];
        }
        if (!rc && !(rc = pg_apply(B, caps, tput, &err)))
            for (int j = 0; j < B->njobs; j++)
                tp += tput[j];
        pfi_alloc_result_free(&ru);
        pfi_alloc_result_free(&rp);
        if (rc)
            break;
        if (as_json)
            json_array_append_new(
                arr, json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "cut", cuts[c], "budget_w",
                               budget, "uniform_tokens_per_s", tu, "pergpu_tokens_per_s", tp,
                               "gain", tp / tu - 1, "uniform_caps_w", wu, "pergpu_caps_w", wp));
        else
            printf("%4.0f%% %12.0f %14.1f %14.1f %7.2f%% %14.1f %14.1f\n", 100 * cuts[c], budget,
                   tu, tp, 100 * (tp / tu - 1), wu, wp);
    }
    for (int i = 0; i < B->nnodes; i++)
        pfi_sim_node_free(B->nodes[i]);
    int njobs = B->njobs, nnodes = B->nnodes;
    free(B);
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

int pfi_cmd_bench(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fprintf(argc < 2 ? stderr : stdout,
                "usage: pfi bench allocate|pergpu [options]   (pfi bench NAME --help)\n"
                "  allocate  time and memory of one allocation of a synthetic campus-sized fleet\n"
                "  pergpu    per-GPU caps vs one cap per job, measured in the simulator\n");
        return argc < 2 ? PFI_EXIT_USAGE : PFI_EXIT_OK;
    }
    if (strcmp(argv[1], "allocate") == 0)
        return bench_allocate(argc - 1, argv + 1);
    if (strcmp(argv[1], "pergpu") == 0)
        return bench_pergpu(argc - 1, argv + 1);
    fprintf(stderr, "pfi bench: unknown benchmark '%s' (allocate, pergpu)\n", argv[1]);
    return PFI_EXIT_USAGE;
}
