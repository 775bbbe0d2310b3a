/* SPDX-License-Identifier: Apache-2.0 */
/* pfi sim: drive the embedded simulator: run a node in virtual time, list presets and the
 * fleet, print a config or a job's true power curve, create and steer a shared state, and
 * validate the physics against measured sweeps. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "sim/sim.h"
#include "study/sim_validate.h"
#include "util/progress.h"
#include "util/units.h"

/* Parses a subcommand's options with argv[0] shown as "sim SUB" in messages. */
static int sub_args(const pfi_cmd_spec *spec, int argc, char **argv, char ***pos, int *npos)
{
    char name[64];
    snprintf(name, sizeof name, "sim %s", argv[0]);
    char *saved = argv[0];
    argv[0] = name;
    int rc = pfi_cli_args(spec, argc, argv, pos, npos, NULL);
    argv[0] = saved;
    if (rc < 0 && *npos > 0) {
        fprintf(stderr, "pfi sim %s: unexpected argument '%s'\n", saved, (*pos)[0]);
        return PFI_EXIT_USAGE;
    }
    return rc;
}

static int fail(const char *sub, const pfi_err *e)
{
    char cmd[64];
    snprintf(cmd, sizeof cmd, "sim %s", sub);
    return pfi_cli_fail(cmd, e);
}

/* A cap in watts within the model's limits (half a watt of slack for rounded input). */
static int check_cap(double w, const pfi_gpu_model *g, pfi_err *e)
{
    if (w < g->min_limit_w - 0.5 || w > g->max_limit_w + 0.5)
        return pfi_err_set(e, PFI_ERANGE, "cap %.0f W is outside the %s's range %.0f-%.0f W", w,
                           g->name, g->min_limit_w, g->max_limit_w);
    return PFI_OK;
}

/* A cap given as watts or as a percentage of the default limit, checked against the model. */
static int parse_cap(const char *s, const pfi_gpu_model *g, double *w, pfi_err *e)
{
    double v;
    int pct;
    int rc = pfi_parse_power(s, &v, &pct, e);
    if (rc != PFI_OK)
        return rc;
    *w = pct ? v * g->default_limit_w : v;
    return check_cap(*w, g, e);
}

/* One job's progress as run and status print it in JSON. */
static json_t *job_json(const char *name, const pfi_sim_job_status *st)
{
    return json_pack("{s:s, s:f, s:f, s:f}", "job", name, "tokens_per_s", st->tokens_per_s,
                     "tokens", st->tokens, "iterations", st->iterations);
}

/* ---------------------------------------------------------------- presets, config, fleet */

static int sim_presets(int argc, char **argv)
{
    int as_json = 0;
    const pfi_opt opts[] = {{"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document"}, {0}};
    const pfi_cmd_spec spec = {"pfi sim presets [--json]", "List the built-in simulated nodes.",
                               opts,
        "pfi sim presets --json"};
    char **pos;
    int npos, rc = sub_args(&spec, argc, argv, &pos, &npos);
    if (rc >= 0)
        return rc;
    json_t *arr = json_array();
    for (int i = 0; i < pfi_sim_preset_count(); i++) {
        if (as_json)
            json_array_append_new(arr, json_pack("{s:s, s:s, s:b}", "name", pfi_sim_preset_name(i),
                                                 "summary", pfi_sim_preset_summary(i), "default",
                                                 strcmp(pfi_sim_preset_name(i),
                                                        PFI_SIM_DEFAULT_PRESET) == 0));
        else
            printf("%-18s %s\n", pfi_sim_preset_name(i), pfi_sim_preset_summary(i));
    }
    if (as_json)
        return pfi_cli_print_json(json_pack("{s:o}", "presets", arr));
    json_decref(arr);
    return PFI_EXIT_OK;
}

static int sim_config(int argc, char **argv)
{
    const char *sim = NULL;
    const pfi_opt opts[] = {{"sim", PFI_OPT_STR, &sim, "FILE|PRESET", "node (default preset)"},
                            {0}};
    const pfi_cmd_spec spec = {"pfi sim config [--sim FILE|PRESET]",
                               "Print a node's full configuration as JSON (every default filled "
                               "in): a starting point for a config file.", opts,
        "pfi sim config --sim h200x8-moe > node.json     # edit, then --sim node.json"};
    char **pos;
    int npos, rc = sub_args(&spec, argc, argv, &pos, &npos);
    if (rc >= 0)
        return rc;
    pfi_err e = {0};
    pfi_node_config cfg;
    if (pfi_sim_config_load(sim, &cfg, &e) != PFI_OK)
        return fail(argv[0], &e);
    char *text = pfi_sim_config_dump(&cfg);
    if (!text)
        return PFI_EXIT_FAIL;
    printf("%s\n", text);
    free(text);
    return PFI_EXIT_OK;
}

static int sim_fleet(int argc, char **argv)
{
    const char *which = "paper";
    int seed = INT_MIN, as_json = 0;
    const pfi_opt opts[] = {
        {"fleet", PFI_OPT_STR, &which, "paper|small", "which fleet (default paper)"},
        {"seed", PFI_OPT_INT, &seed, "N", "fleet seed (default 1)"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document"},
        {0},
    };
    const pfi_cmd_spec spec = {"pfi sim fleet [--fleet paper|small] [--seed N] [--json]",
                               "List the simulated runs of the study (seeded, reproducible).",
                               opts,
        "pfi sim fleet --fleet small --json"};
    char **pos;
    int npos, rc = sub_args(&spec, argc, argv, &pos, &npos);
    unsigned long long fleet_seed;
    if (rc >= 0 || (rc = pfi_cli_fleet_seed("sim fleet", seed, 1, NULL, &fleet_seed)) >= 0)
        return rc;
    pfi_err e = {0};
    pfi_fleet_entry *f;
    int n;
    if (pfi_sim_fleet(which, (uint64_t)fleet_seed, &f, &n, &e) != PFI_OK)
        return fail(argv[0], &e);
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        const pfi_job_config *j = &f[i].node.jobs[0];
        if (as_json) {
            json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:f, s:b, s:s, s:i, s:i, s:i, s:i, "
                                  "s:i, s:i}",
                                  "run", f[i].run, "set", f[i].set, "gpu", f[i].node.gpu.name,
                                  "model", j->model, "gpus", j->n_gpus, "params_b", j->params_b,
                                  "moe", j->moe, "kind", j->kind == 0 ? "pretrain"
                                  : j->kind == 1 ? "finetune" : "lora",
                                  "dp", j->dp, "tp", j->tp, "pp", j->pp, "ep", j->ep, "seq_len",
                                  j->seq_len, "global_batch", j->global_batch);
            json_object_set_new(o, "match", f[i].match >= 0 ? json_integer(f[i].match)
                                                            : json_null());
            json_array_append_new(arr, o);
        } else {
            printf("%-64s %s\n", f[i].run, f[i].match >= 0 ? f[f[i].match].run : "");
        }
    }
    free(f);
    if (as_json)
        return pfi_cli_print_json(json_pack("{s:s, s:I, s:o}", "fleet", which, "seed",
                                            (json_int_t)fleet_seed,
                                            "runs", arr));
    json_decref(arr);
    return PFI_EXIT_OK;
}

/* ---------------------------------------------------------------- curve */

static int sim_curve(int argc, char **argv)
{
    const char *sim = NULL, *job_name = NULL, *caps_s = NULL;
    int as_json = 0;
    const pfi_opt opts[] = {
        {"sim", PFI_OPT_STR, &sim, "FILE|PRESET", "node (default preset)"},
        {"job", PFI_OPT_STR, &job_name, "NAME", "job of the node (default: the first)"},
        {"caps", PFI_OPT_STR, &caps_s, "FROM:TO:STEP", "caps in watts (default max:min:50)"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document"},
        {0},
    };
    const pfi_cmd_spec spec = {"pfi sim curve [--sim FILE|PRESET] [--job NAME] [--caps "
                               "FROM:TO:STEP] [--json]",
                               "The simulator's ground truth for one job: steady tokens/s, "
                               "power and clock with every GPU of the job at each cap.", opts,
        "pfi sim curve --sim h200x8-dense --caps 700:300:50"};
    char **pos;
    int npos, rc = sub_args(&spec, argc, argv, &pos, &npos);
    if (rc >= 0)
        return rc;
    pfi_err e = {0};
    pfi_node_config cfg;
    pfi_sim_node *node = NULL;
    if (pfi_sim_config_load(sim, &cfg, &e) != PFI_OK || pfi_sim_node_new(&cfg, &node, &e) != 0)
        return fail(argv[0], &e);
    int job = 0;
    if (job_name && (job = pfi_sim_job_find(node, job_name)) < 0) {
        pfi_sim_node_free(node);
        pfi_err_set(&e, PFI_EINVAL, "no job '%s' on this node", job_name);
        return fail(argv[0], &e);
    }
    if (cfg.n_jobs == 0) {
        pfi_sim_node_free(node);
        pfi_err_set(&e, PFI_EINVAL, "this node runs no job");
        return fail(argv[0], &e);
    }
    double caps[PFI_MAX_LEVELS];
    int n = 0;
    const pfi_gpu_model *g = &cfg.gpu;
    if (caps_s) {
        if (pfi_parse_cap_range(caps_s, caps, PFI_MAX_LEVELS, &n, &e) != PFI_OK) {
            pfi_sim_node_free(node);
            return fail(argv[0], &e);
        }
    } else {
        for (double c = g->max_limit_w; c >= g->min_limit_w - 1e-9 && n < PFI_MAX_LEVELS; c -= 50)
            caps[n++] = c;
    }
    for (int i = 0; i < n; i++)
        if (check_cap(caps[i], g, &e) != PFI_OK) {
            pfi_sim_node_free(node);
            return fail(argv[0], &e);
        }
    pfi_sim_steady s0, pts[PFI_MAX_LEVELS];
    rc = pfi_sim_job_steady(node, job, g->default_limit_w, &s0, &e);
    for (int i = 0; rc == PFI_OK && i < n; i++)
        rc = pfi_sim_job_steady(node, job, caps[i], &pts[i], &e);
    pfi_sim_node_free(node);
    if (rc != PFI_OK)
        return fail(argv[0], &e);
    json_t *arr = json_array();
    if (!as_json)
        printf("job %s (%s) on %d x %s\n%7s %12s %8s %8s %8s %8s %6s\n", cfg.jobs[job].name,
               cfg.jobs[job].model, cfg.jobs[job].n_gpus, g->name, "cap_W", "tokens/s", "rel_T",
               "power_W", "rel_P", "SM_MHz", "binds");
    for (int i = 0; i < n; i++) {
        const pfi_sim_steady s = pts[i];
        if (as_json)
            json_array_append_new(arr, json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:b}", "cap_w",
                                                 caps[i], "tokens_per_s", s.tokens_per_s,
                                                 "rel_throughput", s.tokens_per_s / s0.tokens_per_s,
                                                 "power_w", s.power_w, "rel_power",
                                                 s.power_w / s0.power_w, "sm_clock_mhz",
                                                 s.sm_clock_mhz, "cap_binds", s.cap_binds));
        else
            printf("%7.0f %12.0f %8.3f %8.1f %8.3f %8.0f %6s\n", caps[i], s.tokens_per_s,
                   s.tokens_per_s / s0.tokens_per_s, s.power_w, s.power_w / s0.power_w,
                   s.sm_clock_mhz, s.cap_binds ? "yes" : "no");
    }
    if (as_json)
        return pfi_cli_print_json(json_pack("{s:s, s:s, s:s, s:o}", "job", cfg.jobs[job].name,
                                            "model", cfg.jobs[job].model, "gpu", g->name,
                                            "levels", arr));
    json_decref(arr);
    return PFI_EXIT_OK;
}

/* ---------------------------------------------------------------- run (virtual time) */

/* The node at t: limit, power and clock (means over its GPUs) and each job's progress, printed
 * as a row or appended to rows. */
static int run_row(pfi_sim_node *node, const pfi_node_config *cfg, double t, int as_json,
                   json_t *rows, pfi_err *e)
{
    double pw = 0, clk = 0, lim = 0;
    for (int g = 0; g < cfg->n_gpus; g++) {
        pfi_sample s;
        pfi_sample_clear(&s);
        int rc = pfi_sim_sample(node, g, t, &s, e);
        if (rc != PFI_OK)
            return rc;
        pw += s.power_w / cfg->n_gpus;
        clk += s.sm_clock_mhz / cfg->n_gpus;
        lim += s.limit_w / cfg->n_gpus;
    }
    pfi_sim_job_status st[PFI_SIM_MAX_JOBS];
    for (int j = 0; j < cfg->n_jobs; j++) {
        int rc = pfi_sim_job_status_at(node, j, t, &st[j], e);
        if (rc != PFI_OK)
            return rc;
    }
    if (!as_json) {
        printf("%8.1f %7.0f %8.1f %8.0f", t, lim, pw, clk);
        for (int j = 0; j < cfg->n_jobs; j++)
            printf(" %14.0f", st[j].tokens_per_s);
        printf("\n");
        return PFI_OK;
    }
    json_t *jobs = json_array();
    for (int j = 0; j < cfg->n_jobs; j++)
        json_array_append_new(jobs, job_json(cfg->jobs[j].name, &st[j]));
    json_array_append_new(rows, json_pack("{s:f, s:f, s:f, s:f, s:o}", "t_s", t, "limit_w", lim,
                                          "power_w", pw, "sm_clock_mhz", clk, "jobs", jobs));
    return PFI_OK;
}

static int sim_run(int argc, char **argv)
{
    const char *sim = NULL, *cap_s = NULL, *at_s = "10s", *dur_s = "60s", *every_s = "5s",
               *gpus_s = NULL;
    int as_json = 0;
    const pfi_opt opts[] = {
        {"sim", PFI_OPT_STR, &sim, "FILE|PRESET", "node (default preset)"},
        {"cap", PFI_OPT_STR, &cap_s, "W|PCT", "power cap to apply, e.g. 500 or 70%"},
        {"cap-at", PFI_OPT_STR, &at_s, "T", "when to apply it (default 10s)"},
        {"gpus", PFI_OPT_STR, &gpus_s, "LIST", "GPUs to cap (default all)"},
        {"duration", PFI_OPT_STR, &dur_s, "D", "simulated time (default 60s)"},
        {"interval", PFI_OPT_STR, &every_s, "D", "reporting interval (default 5s)"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document"},
        {0},
    };
    const pfi_cmd_spec spec = {"pfi sim run [--sim FILE|PRESET] [--cap W|PCT] [--cap-at T] "
                               "[--gpus LIST] [--duration D] [--interval D] [--json]",
                               "Run a simulated node in virtual time (instantly) and print its "
                               "power, clocks and each job's tokens/s as the cap applies.", opts,
        "pfi sim run --cap 70% --cap-at 10s --duration 30s"};
    char **pos;
    int npos, rc = sub_args(&spec, argc, argv, &pos, &npos);
    if (rc >= 0)
        return rc;
    pfi_err e = {0};
    double at, dur, every, cap = NAN;
    int gpus[PFI_MAX_GPUS], ng = 0;
    pfi_node_config cfg;
    if (pfi_parse_duration(at_s, &at, &e) || pfi_parse_duration(dur_s, &dur, &e) ||
        pfi_parse_duration(every_s, &every, &e) || pfi_sim_config_load(sim, &cfg, &e) ||
        (cap_s && parse_cap(cap_s, &cfg.gpu, &cap, &e)) ||
        pfi_parse_index_list(gpus_s ? gpus_s : "all", cfg.n_gpus, gpus, &ng, &e))
        return fail(argv[0], &e);
    if (!(every > 0) || dur > 86400 || dur / every > 100000) {
        pfi_err_set(&e, PFI_EINVAL, "--interval must be > 0 and give at most 100000 reports");
        return fail(argv[0], &e);
    }
    if (cap_s && at > dur) { /* the run ended before the step it was asked for: said, not run */
        pfi_err_set(&e, PFI_EINVAL, "--cap-at %s is after the run's end (--duration %s): the cap "
                    "would never be applied", at_s, dur_s);
        return fail(argv[0], &e);
    }
    pfi_sim_node *node;
    if (pfi_sim_node_new(&cfg, &node, &e) != PFI_OK)
        return fail(argv[0], &e);
    json_t *rows = json_array();
    if (!as_json) {
        printf("%8s %7s %8s %8s", "t_s", "cap_W", "power_W", "SM_MHz");
        for (int j = 0; j < cfg.n_jobs; j++)
            printf(" %14.14s", cfg.jobs[j].name);
        printf("\n");
    }
    int capped = 0;
    /* a row every --interval, and the last at --duration itself: a cap between the last
     * multiple and the end (--cap-at 29s of 30 s every 7 s) was never applied */
    for (long k = 0, last = 0; !last; k++) {
        double t = (double)k * every;
        if ((last = t >= dur - 1e-9))
            t = dur;
        if (!capped && !isnan(cap) && t >= at) {
            for (int i = 0; i < ng && rc <= 0; i++)
                if (pfi_sim_set_limit(node, gpus[i], at, cap, &e) != PFI_OK)
                    rc = PFI_EXIT_FAIL;
            capped = 1;
        }
        if (rc > 0)
            break;
        if (run_row(node, &cfg, t, as_json, rows, &e) != PFI_OK) {
            rc = PFI_EXIT_FAIL;
            break;
        }
    }
    pfi_sim_node_free(node);
    if (rc > 0) {
        json_decref(rows);
        return fail(argv[0], &e);
    }
    if (as_json)
        return pfi_cli_print_json(json_pack("{s:s, s:s, s:o}", "node", cfg.name, "gpu",
                                            cfg.gpu.name, "samples", rows));
    json_decref(rows);
    return PFI_EXIT_OK;
}

/* ---------------------------------------------------------------- shared state */

static const char *state_path(const char *opt)
{
    if (opt && *opt)
        return opt;
    const char *env = getenv("PFI_SIM_STATE");
    return env && *env ? env : NULL;
}

/* *path becomes the state file named by the option or PFI_SIM_STATE; an error when neither. */
static int need_state(const char **path, pfi_err *e)
{
    *path = state_path(*path);
    if (!*path)
        return pfi_err_set(e, PFI_EINVAL,
                           "no state file: give --state FILE or set PFI_SIM_STATE");
    return PFI_OK;
}

/* Opens an existing shared state and its node at the present; nothing stays open on error. */
static int open_state(const char *path, pfi_sim_state **st, pfi_sim_node **node, double *now,
                      pfi_err *e)
{
    int rc = pfi_sim_state_open(path, NULL, 1, st, e);
    if (rc == PFI_OK && (rc = pfi_sim_state_node(*st, node, now, e)) != PFI_OK)
        pfi_sim_state_close(*st);
    return rc;
}

static int sim_init(int argc, char **argv)
{
    const char *path = NULL, *sim = NULL;
    double speed = 1;
    int force = 0;
    const pfi_opt opts[] = {
        {"state", PFI_OPT_STR, &path, "FILE", "state file to create (default $PFI_SIM_STATE)"},
        {"sim", PFI_OPT_STR, &sim, "FILE|PRESET", "node (default preset)"},
        {"speed", PFI_OPT_DOUBLE, &speed, "X", "simulated seconds per wall second (default 1)"},
        {"force", PFI_OPT_FLAG, &force, NULL, "replace an existing state file"},
        {0},
    };
    const pfi_cmd_spec spec = {"pfi sim init --state FILE [--sim FILE|PRESET] [--speed X] "
                               "[--force]",
                               "Create a shared simulator state: processes that set "
                               "PFI_SIM_STATE=FILE then see the same node in real time "
                               "(optionally sped up).", opts,
        "pfi sim init --state /tmp/node.sim --sim h200x8-dense --speed 10"};
    char **pos;
    int npos, rc = sub_args(&spec, argc, argv, &pos, &npos);
    if (rc >= 0)
        return rc;
    pfi_err e = {0};
    if (need_state(&path, &e) != PFI_OK)
        return fail(argv[0], &e);
    pfi_node_config cfg;
    if (pfi_sim_config_load(sim, &cfg, &e) != PFI_OK ||
        pfi_sim_state_create(path, &cfg, speed, force, &e) != PFI_OK)
        return fail(argv[0], &e);
    printf("created %s: %s, %d x %s, speed %gx\n", path, cfg.name, cfg.n_gpus, cfg.gpu.name,
           speed);
    return PFI_EXIT_OK;
}

static int sim_set(int argc, char **argv)
{
    const char *path = NULL, *cap_s = NULL, *gpus_s = NULL;
    const pfi_opt opts[] = {
        {"state", PFI_OPT_STR, &path, "FILE", "state file (default $PFI_SIM_STATE)"},
        {"cap", PFI_OPT_STR, &cap_s, "W|PCT", "power limit to set"},
        {"gpus", PFI_OPT_STR, &gpus_s, "LIST", "GPUs (default all)"},
        {0},
    };
    const pfi_cmd_spec spec = {"pfi sim set --cap W|PCT [--gpus LIST] [--state FILE]",
                               "Set power limits on a shared simulated node, now.", opts,
        "pfi sim set --cap 500 --gpus 0-3 --state /tmp/node.sim"};
    char **pos;
    int npos, rc = sub_args(&spec, argc, argv, &pos, &npos);
    if (rc >= 0)
        return rc;
    pfi_err e = {0};
    path = state_path(path);
    if (!path || !cap_s) {
        pfi_err_set(&e, PFI_EINVAL, "needs --cap and a state (--state FILE or PFI_SIM_STATE)");
        return fail(argv[0], &e);
    }
    pfi_sim_state *st;
    pfi_sim_node *node;
    if (open_state(path, &st, &node, NULL, &e) != PFI_OK)
        return fail(argv[0], &e);
    const pfi_node_config *cfg = pfi_sim_node_config(node);
    double cap;
    int gpus[PFI_MAX_GPUS], ng = 0;
    rc = parse_cap(cap_s, &cfg->gpu, &cap, &e);
    if (rc == PFI_OK)
        rc = pfi_parse_index_list(gpus_s ? gpus_s : "all", cfg->n_gpus, gpus, &ng, &e);
    /* Everything is checked before the first change: nothing is half-applied by bad input. */
    for (int i = 0; rc == PFI_OK && i < ng; i++)
        rc = pfi_sim_state_set_limit(st, gpus[i], cap, &e);
    pfi_sim_state_close(st);
    if (rc != PFI_OK)
        return fail(argv[0], &e);
    return PFI_EXIT_OK;
}

static int sim_status(int argc, char **argv)
{
    const char *path = NULL;
    int as_json = 0;
    const pfi_opt opts[] = {
        {"state", PFI_OPT_STR, &path, "FILE", "state file (default $PFI_SIM_STATE)"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document"},
        {0},
    };
    const pfi_cmd_spec spec = {"pfi sim status [--state FILE] [--json]",
                               "The shared simulated node now: limits, power, clocks, jobs.",
                               opts,
        "pfi sim status --state /tmp/node.sim --json"};
    char **pos;
    int npos, rc = sub_args(&spec, argc, argv, &pos, &npos);
    if (rc >= 0)
        return rc;
    pfi_err e = {0};
    if (need_state(&path, &e) != PFI_OK)
        return fail(argv[0], &e);
    pfi_sim_state *st;
    pfi_sim_node *node;
    double now;
    if (open_state(path, &st, &node, &now, &e) != PFI_OK)
        return fail(argv[0], &e);
    const pfi_node_config *cfg = pfi_sim_node_config(node);
    pfi_sample smp[PFI_MAX_GPUS];
    pfi_sim_job_status js[PFI_SIM_MAX_JOBS];
    rc = PFI_OK;
    for (int g = 0; rc == PFI_OK && g < cfg->n_gpus; g++) {
        pfi_sample_clear(&smp[g]);
        rc = pfi_sim_sample(node, g, now, &smp[g], &e);
    }
    for (int j = 0; rc == PFI_OK && j < cfg->n_jobs; j++)
        rc = pfi_sim_job_status_at(node, j, now, &js[j], &e);
    if (rc != PFI_OK) {
        pfi_sim_state_close(st);
        return fail(argv[0], &e);
    }
    json_t *gpus = json_array(), *jobs = json_array();
    if (!as_json)
        printf("%s: %s, %d x %s, t=%.1f s simulated (speed %gx)\n", path, cfg->name, cfg->n_gpus,
               cfg->gpu.name, now, pfi_sim_state_speed(st));
    for (int g = 0; g < cfg->n_gpus; g++) {
        const pfi_sample *s = &smp[g];
        int binds = (s->clock_reasons & PFI_REASON_SW_POWERCAP) != 0;
        if (as_json)
            json_array_append_new(gpus, json_pack("{s:i, s:f, s:f, s:f, s:b}", "index", g,
                                                  "limit_w", s->limit_w, "power_w", s->power_w,
                                                  "sm_clock_mhz", s->sm_clock_mhz, "cap_binds",
                                                  binds));
        else
            printf("  GPU %-2d limit %4.0f W  power %6.1f W  SM %5.0f MHz%s\n", g, s->limit_w,
                   s->power_w, s->sm_clock_mhz, binds ? "  [SW power cap]" : "");
    }
    for (int j = 0; j < cfg->n_jobs; j++) {
        if (as_json)
            json_array_append_new(jobs, job_json(cfg->jobs[j].name, &js[j]));
        else
            printf("  job %-14s %10.0f tokens/s  %14.0f tokens  %8.1f iterations\n",
                   cfg->jobs[j].name, js[j].tokens_per_s, js[j].tokens, js[j].iterations);
    }
    double speed = pfi_sim_state_speed(st);
    pfi_sim_state_close(st);
    if (as_json)
        return pfi_cli_print_json(json_pack("{s:s, s:f, s:f, s:o, s:o}", "state", path, "t_s",
                                            now, "speed", speed, "gpus", gpus, "jobs", jobs));
    json_decref(gpus);
    json_decref(jobs);
    return PFI_EXIT_OK;
}

/* ---------------------------------------------------------------- validate */

/* --family LIST as PFI_SIM_VAL_FAM_* flags; -1 after a message when a name is unknown. */
static int family_flags(const char *cmd, const char *family)
{
    int flags = 0;
    if (!family || !family[0] || strcmp(family, "none") == 0)
        return 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", family);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (strcmp(t, "act") == 0)
            flags |= PFI_SIM_VAL_FAM_ACT;
        else if (strcmp(t, "stall") == 0)
            flags |= PFI_SIM_VAL_FAM_STALL;
        else if (strcmp(t, "mem") == 0)
            flags |= PFI_SIM_VAL_FAM_MEM;
        else if (strcmp(t, "gemm") == 0)
            flags |= PFI_SIM_VAL_FAM_GEMM;
        else if (strcmp(t, "all") == 0)
            flags |= PFI_SIM_VAL_FAM_ACT | PFI_SIM_VAL_FAM_STALL | PFI_SIM_VAL_FAM_MEM |
                     PFI_SIM_VAL_FAM_GEMM;
        else {
            fprintf(stderr, "%s: --family: unknown constant '%s' (act, stall, mem, gemm, all, "
                    "none)\n", cmd, t);
            return -1;
        }
    }
    return flags;
}

/* --split N and --starts N into flags; PFI_EXIT_USAGE after a message when out of range. */
static int count_flags(const char *cmd, const char *split_s, const char *starts_s, int *flags)
{
    if (split_s) {
        char *end = NULL;
        long sp = strtol(split_s, &end, 10);
        if (!end || *end || end == split_s || sp < 0 || sp >= PFI_SIM_VAL_SPLITS) {
            fprintf(stderr, "%s: --split: '%s' is not 0..%d\n", cmd, split_s,
                    PFI_SIM_VAL_SPLITS - 1);
            return PFI_EXIT_USAGE;
        }
        *flags |= PFI_SIM_VAL_SPLIT((int)sp);
    }
    if (starts_s) {
        char *end = NULL;
        long n = strtol(starts_s, &end, 10);
        if (!end || *end || end == starts_s || n < 1 || n > 255) {
            fprintf(stderr, "%s: --starts: '%s' is not 1..255\n", cmd, starts_s);
            return PFI_EXIT_USAGE;
        }
        *flags |= PFI_SIM_VAL_STARTS((int)n);
    }
    return PFI_EXIT_OK;
}

static json_t *val_run_json(const pfi_sim_val_run *r)
{
    json_t *lv = json_array();
    for (int k = 0; k < r->n_levels; k++)
        json_array_append_new(lv, json_pack("{s:f, s:f, s:f, s:f, s:f}", "limit_w",
                                            r->limit_w[k], "meas_throughput",
                                            r->meas_tput[k], "sim_throughput",
                                            r->sim_tput[k], "meas_power",
                                            r->meas_power[k], "sim_power",
                                            r->sim_power[k]));
    json_t *o = json_pack("{s:s, s:s, s:b, s:f, s:f, s:f, s:f, s:o}", "run", r->run,
                          "gpu_type", r->gpu_type, "held_out", r->held_out,
                          "max_abs_err_throughput", r->max_abs_err_tput,
                          "max_abs_err_power", r->max_abs_err_power,
                          "meas_power_w_at_max", r->meas_power_w0,
                          "sim_power_w_at_max", r->sim_power_w0, "levels", lv);
    json_object_set_new(o, "meas_step_s_at_max", json_real(r->meas_time0));
    json_object_set_new(o, "sim_step_s_at_max", json_real(r->sim_time0));
    if (r->n_per_stage > 0)
        json_object_set_new(o, "per_stage_limits",
                            json_pack("{s:i, s:f, s:f}", "rows", r->n_per_stage,
                                      "max_abs_err_throughput", r->per_stage_err_tput,
                                      "max_abs_err_power", r->per_stage_err_power));
    return o;
}

/* Each GPU type's fitted constants. */
static json_t *fitted_gpus_json(const pfi_sim_validation *v)
{
    json_t *gpus = json_array();
    for (int t = 0; t < 2; t++) {
        const pfi_gpu_model *g = &v->fitted[t];
        json_array_append_new(gpus, json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, "
                                              "s:f, s:f}",
                                              "type", g->name, "dyn_w", g->dyn_w,
                                              "busy_static_w", g->busy_static_w, "v_floor",
                                              g->v_floor, "f_knee", g->f_knee, "v_gamma",
                                              g->v_gamma, "gemm_eff", g->gemm_eff, "mem_eff",
                                              g->mem_eff, "net_gbs", v->fitted_net_gbs[t],
                                              "host_ms", v->fitted_host_ms[t],
                                              "net_jitter", v->fitted_net_jitter[t]));
        json_object_set_new(json_array_get(gpus, json_array_size(gpus) - 1), "sat_frac",
                            json_real(g->sat_frac));
    }
    return gpus;
}

/* Every split's held-out runs and errors, and the worst over them: into doc. */
static void splits_json(json_t *doc, const pfi_sim_val_splits *all)
{
    json_t *arr = json_array();
    for (int n = 0; n < PFI_SIM_VAL_SPLITS; n++) {
        const pfi_sim_validation *v = &all->split[n];
        json_t *held = json_array();
        for (int i = 0; i < v->n_runs; i++)
            if (v->runs[i].held_out)
                json_array_append_new(held, json_string(v->runs[i].run));
        json_t *o = json_pack("{s:i, s:o, s:f, s:f, s:f, s:f, s:b}", "split", n,
                              "held_out_runs", held, "held_out_max_abs_err_throughput",
                              v->held_out_max_err_tput, "held_out_max_abs_err_power",
                              v->held_out_max_err_power, "max_abs_err_throughput",
                              v->max_abs_err_tput, "max_abs_err_power", v->max_abs_err_power,
                              "target_met", v->target_met);
        /* What a model change is judged on (the fit runs), each run, and the constants the
         * split's fit chose: how well its fit runs determine them shows across splits. */
        json_object_set_new(o, "fit_max_abs_err_throughput", json_real(v->fit_max_err_tput));
        json_object_set_new(o, "fit_max_abs_err_power", json_real(v->fit_max_err_power));
        json_t *runs = json_array();
        for (int i = 0; i < v->n_runs; i++)
            json_array_append_new(runs, val_run_json(&v->runs[i]));
        json_object_set_new(o, "runs", runs);
        json_object_set_new(o, "fitted_gpus", fitted_gpus_json(v));
        json_array_append_new(arr, o);
    }
    json_object_set_new(doc, "splits", arr);
    json_object_set_new(doc, "worst_over_splits", json_real(all->worst_over_splits));
    json_object_set_new(doc, "worst_split", json_integer(all->worst_split));
    json_object_set_new(doc, "target_met", json_boolean(all->target_met));
}

/* v: the split reported run by run; all (NULL with one split asked for): every split, whose
 * worst held-out error is the headline and whose target_met replaces v's; stage_fit: whether
 * --stage-rows fit was asked for, pace_expected whether --pace expected was. */
static int print_validation_json(const pfi_sim_validation *v, const pfi_sim_val_splits *all,
                                 int fit_all, int stage_fit, int pace_expected)
{
    json_t *runs = json_array();
    for (int i = 0; i < v->n_runs; i++)
        json_array_append_new(runs, val_run_json(&v->runs[i]));
    json_t *gpus = fitted_gpus_json(v);
    json_t *fams = json_array();
    for (int f = 0; f < v->n_families; f++) {
        const struct pfi_sim_val_family *fm = &v->families[f];
        json_array_append_new(fams, json_pack("{s:s, s:s, s:f, s:f, s:f, s:f}", "family",
                                              fm->family, "fitted_on", fm->fitted_on,
                                              "act_compute", fm->act_compute, "input_stall",
                                              fm->input_stall, "mem_traffic", fm->mem_traffic,
                                              "gemm_eff", fm->gemm_eff));
    }
    json_t *doc = json_pack("{s:o, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:b, s:b, s:o, s:o, "
                            "s:i}", "runs",
                            runs, "max_abs_err_throughput", v->max_abs_err_tput,
                            "max_abs_err_power", v->max_abs_err_power,
                            "held_out_max_abs_err_throughput", v->held_out_max_err_tput,
                            "held_out_max_abs_err_power", v->held_out_max_err_power,
                            "fit_max_abs_err_throughput", v->fit_max_err_tput,
                            "fit_max_abs_err_power", v->fit_max_err_power, "target",
                            PFI_SIM_VAL_TARGET, "target_met", v->target_met, "fit_all", fit_all,
                            "fitted_gpus", gpus, "fitted_families", fams, "split",
                            v->split);
    if (all)
        splits_json(doc, all);
    /* Only with --stage-rows fit: the default's document (`check`, said or not) has no key. */
    if (stage_fit)
        json_object_set_new(doc, "stage_rows", json_string("fit"));
    /* Likewise only with --pace expected. */
    if (pace_expected)
        json_object_set_new(doc, "pace", json_string("expected"));
    return pfi_cli_print_json(doc);
}

/* stage_fit: --stage-rows fit (what the per-stage rows' header says of them). */
static void print_validation(const pfi_sim_validation *v, int verbose, int fit_all,
                             int stage_fit)
{
    printf("%-40s %-8s %10s %10s\n", "run", "role", "err_tput", "err_power");
    for (int i = 0; i < v->n_runs; i++) {
        const pfi_sim_val_run *r = &v->runs[i];
        printf("%-40s %-8s %10.3f %10.3f\n", r->run, r->held_out ? "held-out" : "fit",
               r->max_abs_err_tput, r->max_abs_err_power);
        for (int k = 0; verbose && k < r->n_levels; k++)
            printf("    %4.0f W  throughput %.3f sim %.3f   power %.3f sim %.3f\n", r->limit_w[k],
                   r->meas_tput[k], r->sim_tput[k], r->meas_power[k], r->sim_power[k]);
    }
    int per_stage = 0;
    for (int i = 0; i < v->n_runs; i++)
        per_stage += v->runs[i].n_per_stage;
    if (per_stage > 0)
        printf("\nper-stage limits (zeus_local.csv; %s), worst error:\n",
               stage_fit ? "the fit runs' rows fitted on" : "no fit uses them");
    for (int i = 0; i < v->n_runs; i++) {
        const pfi_sim_val_run *r = &v->runs[i];
        if (r->n_per_stage > 0)
            printf("%-40s %2d rows %10.3f %10.3f\n", r->run, r->n_per_stage,
                   r->per_stage_err_tput, r->per_stage_err_power);
    }
    if (v->n_families > 0)
        printf("\n");
    for (int f = 0; f < v->n_families; f++) {
        const struct pfi_sim_val_family *fm = &v->families[f];
        printf("family %-6s fitted on %-15s act %.3f stall %.3f mem x%.3f gemm x%.3f\n",
               fm->family, fm->fitted_on[0] ? fm->fitted_on : "(none)",
               fm->act_compute, fm->input_stall, fm->mem_traffic, fm->gemm_eff);
    }
    printf("\nsplit %d%s\nmax abs error (relative to the max limit): throughput %.3f, power %.3f\n"
           "  fit runs:      throughput %.3f, power %.3f\n"
           "  held-out runs: throughput %.3f, power %.3f\n"
           "target <= %.2f on this split: %s%s\n", v->split,
           v->split ? ": one split alone, not the headline (every split: no --split)" : "",
           v->max_abs_err_tput, v->max_abs_err_power, v->fit_max_err_tput, v->fit_max_err_power,
           v->held_out_max_err_tput, v->held_out_max_err_power, PFI_SIM_VAL_TARGET,
           v->target_met ? "met" : "NOT met",
           fit_all ? " (--fit-all: nothing held out, not a validation)" : "");
}

/* The headline: every split's held-out worst, and the worst over them. */
static void print_splits(const pfi_sim_val_splits *all)
{
    printf("\nevery fixed split (the same fit and check; the headline is the worst held-out\n"
           "error over them; a model change is judged on the fit runs, docs/simulator.md):\n"
           "%-6s %-44s %10s %10s %10s\n", "split", "worst held-out run", "err_tput", "err_power",
           "fit runs");
    for (int n = 0; n < PFI_SIM_VAL_SPLITS; n++) {
        const pfi_sim_validation *v = &all->split[n];
        int w = -1;
        for (int i = 0; i < v->n_runs; i++)
            if (v->runs[i].held_out &&
                (w < 0 || fmax(v->runs[i].max_abs_err_tput, v->runs[i].max_abs_err_power) >
                              fmax(v->runs[w].max_abs_err_tput, v->runs[w].max_abs_err_power)))
                w = i;
        printf("%-6d %-44s %10.3f %10.3f %10.3f\n", n, w >= 0 ? v->runs[w].run : "-",
               v->held_out_max_err_tput, v->held_out_max_err_power,
               fmax(v->fit_max_err_tput, v->fit_max_err_power));
    }
    printf("worst held-out error over all splits: %.3f (split %d); target <= %.2f on every run "
           "of every split: %s\n", all->worst_over_splits, all->worst_split, PFI_SIM_VAL_TARGET,
           all->target_met ? "met" : "NOT met");
}

static int sim_validate(int argc, char **argv)
{
    const char *dir = NULL, *family = NULL, *split_s = NULL, *starts_s = NULL, *rows_s = NULL;
    const char *pace_s = NULL;
    int as_json = 0, verbose = 0, fit_all = 0;
    const pfi_opt opts[] = {
        {"data", PFI_OPT_STR, &dir, "DIR", "public datasets (default $PFI_DATA_DIR)"},
        {"verbose", PFI_OPT_FLAG, &verbose, NULL, "every measured limit of every run"},
        {"fit-all", PFI_OPT_FLAG, &fit_all, NULL,
         "fit on every run (not a validation: the model's capacity)"},
        {"family", PFI_OPT_STR, &family, "LIST",
         "also fit constants per model family: act,stall,mem,gemm or all (default none)"},
        {"split", PFI_OPT_STR, &split_s, "N",
         "only fit/held-out split 0, 1 or 2 (default: every split, the headline their worst)"},
        {"starts", PFI_OPT_STR, &starts_s, "N",
         "repeat each fit from N starting points (default 3): a check for local minima"},
        {"stage-rows", PFI_OPT_STR, &rows_s, "MODE",
         "per-stage rows: check (the default: each row simulated with its own partition and "
         "compared, no fit uses them) or fit (the fit runs' also fitted on; a variant tried "
         "and not kept)"},
        {"pace", PFI_OPT_STR, &pace_s, "MODE",
         "a pipeline's pace: max (the default: its slowest stage) or expected (the slowest of "
         "each microbatch, the stages' kernels varying; a variant tried under the rule)"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document"},
        {0},
    };
    const pfi_cmd_spec spec = {"pfi sim validate [--data DIR] [--verbose] [--fit-all] "
                               "[--family LIST] [--split N] [--starts N] [--stage-rows MODE] "
                               "[--pace MODE] [--json]",
                               "Fit the simulator's constants on half of the Perseus power-limit "
                               "sweeps of each GPU type and compare relative throughput and "
                               "power at every measured limit, held-out runs apart, on every "
                               "fixed fit/held-out split; the headline is the worst held-out "
                               "error over the splits.  Exits 1 when an error exceeds 0.05.",
                               opts, "pfi sim validate --verbose"};
    char **pos;
    int npos, rc = sub_args(&spec, argc, argv, &pos, &npos);
    if (rc >= 0)
        return rc;
    pfi_err e = {0};
    int fam = family_flags(argv[0], family);
    if (fam < 0)
        return PFI_EXIT_USAGE;
    int flags = (fit_all ? PFI_SIM_VAL_FIT_ALL : 0) | fam;
    if ((rc = count_flags(argv[0], split_s, starts_s, &flags)) != PFI_EXIT_OK)
        return rc;
    /* `check` names the default (kept so that a command line may say it) and changes nothing. */
    int stage_fit = rows_s && strcmp(rows_s, "fit") == 0;
    if (stage_fit)
        flags |= PFI_SIM_VAL_STAGE_ROWS;
    else if (rows_s && strcmp(rows_s, "check") != 0) {
        fprintf(stderr, "%s: --stage-rows: '%s' is not check or fit\n", argv[0], rows_s);
        return PFI_EXIT_USAGE;
    }
    int pace_expected = pace_s && strcmp(pace_s, "expected") == 0;
    if (pace_expected)
        flags |= PFI_SIM_VAL_PACE_EXPECTED;
    else if (pace_s && strcmp(pace_s, "max") != 0) {
        fprintf(stderr, "%s: --pace: '%s' is not max or expected\n", argv[0], pace_s);
        return PFI_EXIT_USAGE;
    }
    /* Without --split (and --fit-all, which holds nothing out) every split runs. */
    pfi_sim_val_splits *all = split_s || fit_all ? NULL : malloc(sizeof *all);
    pfi_sim_validation *one = all ? NULL : malloc(sizeof *one);
    if (!all && !one)
        return PFI_EXIT_FAIL;
    const char *d = dir ? dir : pfi_data_dir();
    pfi_progress pg;
    pfi_progress_init(&pg, "pfi sim validate", pfi_progress_auto(), stderr);
    rc = all ? pfi_sim_validate_splits(d, flags, pfi_progress_cb, &pg, all, &e)
             : pfi_sim_validate(d, flags, pfi_progress_cb, &pg, one, &e);
    pfi_progress_end(&pg);
    if (rc != PFI_OK) {
        free(all), free(one);
        return fail(argv[0], &e);
    }
    const pfi_sim_validation *v = all ? &all->split[0] : one;
    int ok = all ? all->target_met : v->target_met;
    rc = PFI_EXIT_OK;
    if (as_json)
        rc = print_validation_json(v, all, fit_all, stage_fit, pace_expected);
    else {
        print_validation(v, verbose, fit_all, stage_fit);
        if (all)
            print_splits(all);
    }
    free(all), free(one);
    return rc ? rc : ok ? PFI_EXIT_OK : PFI_EXIT_FAIL;
}

/* ---------------------------------------------------------------- dispatch */

static const pfi_cli_sub subs[] = {
    {"run", sim_run, "run a node in virtual time with a cap step; print power and tokens/s"},
    {"curve", sim_curve, "a job's true tokens/s and power at each cap (steady state)"},
    {"presets", sim_presets, "list built-in nodes"},
    {"config", sim_config, "print a node's configuration as JSON"},
    {"fleet", sim_fleet, "list the simulated runs of the study"},
    {"init", sim_init, "create a shared state file for cross-process real-time use"},
    {"set", sim_set, "set power limits on a shared state"},
    {"status", sim_status, "show a shared state now"},
    {"validate", sim_validate, "compare the physics with measured sweeps (Perseus)"},
    {"job", pfi_cmd_sim_job, "a simulated training job printing progress in a framework's log "
                             "format"},
    {"demo", pfi_cmd_sim_demo, "a simulated 8x H200 node training while its power cap steps "
                               "down, live"},
};

const pfi_cli_family_spec pfi_cli_family_sim = {
    "sim", "The embedded simulator of GPUs running training jobs.",
    "pfi sim presets\n"
    "pfi sim curve --sim h200x8-moe --caps 700:300:100\n"
    "pfi sim run --cap 60% --cap-at 5s --duration 20s",
    subs, (int)(sizeof subs / sizeof subs[0])};

int pfi_cmd_sim(int argc, char **argv)
{
    return pfi_cli_family(&pfi_cli_family_sim, argc, argv);
}
