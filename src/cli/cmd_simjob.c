/* SPDX-License-Identifier: Apache-2.0 */
/* pfi sim job: a process that behaves like a training job on the simulated node: it attaches
 * to the shared simulator state ($PFI_SIM_STATE), so it runs at whatever power caps another
 * process (pfi sweep, pfi serve) sets, and prints its progress in the log format of a real
 * framework.  Time is the state's simulated time, which may run faster than real time (the
 * state's speed-up): fast mode for end-to-end tests.  The loss it prints is decoration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "measure/parse.h"
#include "sim/sim.h"
#include "util/clock.h"
#include "util/units.h"

typedef struct jobview {
    pfi_log_format fmt;
    int n_gpus, seq_len, gbs;
    double tokens_per_step;
} jobview;

static void stamp(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
}

static void with_commas(double v, char *buf, size_t n)
{
    char raw[32];
    snprintf(raw, sizeof raw, "%.0f", v);
    size_t len = strlen(raw), o = 0;
    for (size_t i = 0; i < len && o + 2 < n; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = '\0';
}

static double fake_loss(long long k)
{
    return 2.0 + 9.0 / (1.0 + 0.02 * (double)k);
}

static void banner(const jobview *j)
{
    char c[32];
    switch (j->fmt) {
    case PFI_LOG_MEGATRON:
        printf("------------------------ arguments ------------------------\n");
        printf("  global_batch_size ............................... %d\n", j->gbs);
        printf("  seq_length ...................................... %d\n", j->seq_len);
        printf("-------------------- end of arguments ---------------------\n");
        break;
    case PFI_LOG_HF:
        printf("***** Running training *****\n");
        printf("  Num Epochs = 1\n");
        printf("  Total train batch size (w. parallel, distributed & accumulation) = %d\n", j->gbs);
        break;
    case PFI_LOG_NANOGPT:
        with_commas(j->tokens_per_step, c, sizeof c);
        printf("tokens per iteration will be: %s\n", c);
        break;
    case PFI_LOG_LLMC:
        printf("+-----------------------+----------------------------------------------------+\n");
        printf("| sequence length T     | %-50d |\n", j->seq_len);
        printf("| total batch size      | %-50.0f |\n", j->tokens_per_step);
        printf("+-----------------------+----------------------------------------------------+\n");
        break;
    default:
        break;
    }
}

static void clockstr(double s, char *buf, size_t n)
{
    if (!isfinite(s) || s < 0)
        s = 0;
    snprintf(buf, n, "%02d:%02d", (int)(s / 60) % 100, (int)s % 60);
}

/* One progress line for iteration k; dt: seconds per iteration over the log interval. */
static void progress_line(const jobview *j, long long k, double dt, double tokens, double t,
                          double elapsed)
{
    char ts[32], c[32], el[16], rem[16];
    double tps = j->tokens_per_step / dt;
    switch (j->fmt) {
    case PFI_LOG_MEGATRON:
        stamp(ts, sizeof ts);
        printf(" [%s] iteration %8lld/ 1000000 | consumed samples: %12lld | elapsed time per "
               "iteration (ms): %.1f | learning rate: 3.000000E-04 | global batch size: %5d | "
               "lm loss: %.6E | loss scale: 1.0 | grad norm: 1.000 | number of skipped "
               "iterations:   0 | number of nan iterations:   0 |\n",
               ts, k, k * (long long)j->gbs, dt * 1000, j->gbs, fake_loss(k));
        break;
    case PFI_LOG_TORCHTITAN:
        stamp(ts, sizeof ts);
        with_commas(tps / j->n_gpus, c, sizeof c);
        printf("[rank0]:[titan] %s,000 - root - INFO - step: %lld  loss: %8.5f  memory: 60.00GiB"
               "(42.55%%)  tps: %s  tflops: 0.00  mfu: 0.00%%\n",
               ts, k, fake_loss(k), c);
        break;
    case PFI_LOG_HF:
        clockstr(elapsed, el, sizeof el);
        clockstr(dt * (1000000 - (double)k), rem, sizeof rem);
        printf("%3d%%|          | %lld/1000000 [%s<%s, %.2fit/s]\r", 0, k, el, rem, 1 / dt);
        break;
    case PFI_LOG_LIGHTNING: {
        const int per_epoch = 50;
        long long e = (k - 1) / per_epoch, n = (k - 1) % per_epoch + 1;
        clockstr(elapsed, el, sizeof el);
        clockstr(dt * (double)(per_epoch - n), rem, sizeof rem);
        printf("Epoch %lld: %3d%%|          | %lld/%d [%s<%s, %.2fit/s, loss=%.3f, v_num=0]\r",
               e, (int)(100 * n / per_epoch), n, per_epoch, el, rem, 1 / dt, fake_loss(k));
        break;
    }
    case PFI_LOG_DEEPSPEED:
        stamp(ts, sizeof ts);
        printf("[%s,000] [INFO] [timer.py:197:stop] 0/%lld, RunningAvgSamplesPerSec=%.6f, "
               "CurrSamplesPerSec=%.6f, MemAllocated=1.75GB, MaxMemAllocated=2.6GB\n",
               ts, k, (double)k * j->gbs / fmax(t, 1e-9), j->gbs / dt);
        break;
    case PFI_LOG_NANOGPT:
        printf("iter %lld: loss %.4f, time %.2fms, mfu %.2f%%\n", k, fake_loss(k), dt * 1000,
               0.0);
        break;
    case PFI_LOG_LLMC:
        printf("step %4lld/1000000 | loss %f (+nanz)| norm 1.0000 (+nanz)| lr 3.00e-04 | %.2f ms "
               "| 0.0%% bf16 MFU | %.0f tok/s\n",
               k, fake_loss(k), dt * 1000, tps);
        break;
    default:
        break;
    }
    fflush(stdout);
}

static int truth(const char *preset, int job, const char *caps, int as_json)
{
    pfi_err err = {0};
    pfi_node_config *cfg = malloc(sizeof *cfg);
    pfi_sim_node *node = NULL;
    int status = PFI_EXIT_FAIL;
    double w[PFI_MAX_LEVELS];
    int n = 0;
    if (!cfg) {
        pfi_err_set(&err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    if (pfi_sim_config_load(preset, cfg, &err) != PFI_OK ||
        pfi_sim_node_new(cfg, &node, &err) != PFI_OK)
        goto out;
    if (job < 0 || job >= pfi_sim_job_count(node)) {
        pfi_err_set(&err, PFI_ENOENT, "no job %d on this node", job);
        goto out;
    }
    if (pfi_parse_double_list(caps, w, PFI_MAX_LEVELS, &n, &err) != PFI_OK)
        goto out;
    /* As sim curve checks (half a watt of slack for rounded input): the simulator would give
     * figures for any number, 1236 W drawn by a 700 W GPU at a 5000 W cap. */
    const pfi_gpu_model *g = &cfg->gpu;
    for (int i = 0; i < n; i++)
        if (!(w[i] >= g->min_limit_w - 0.5 && w[i] <= g->max_limit_w + 0.5)) {
            pfi_err_set(&err, PFI_ERANGE, "cap %.0f W is outside the %s's range %.0f-%.0f W",
                        w[i], g->name, g->min_limit_w, g->max_limit_w);
            goto out;
        }
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        pfi_sim_steady st;
        if (pfi_sim_job_steady(node, job, w[i], &st, &err) != PFI_OK) {
            json_decref(arr);
            goto out;
        }
        if (as_json)
            json_array_append_new(arr, json_pack("{s:f, s:f, s:f, s:f}", "cap_w", w[i],
                                                 "tokens_per_s", st.tokens_per_s, "power_w",
                                                 st.power_w, "sm_clock_mhz", st.sm_clock_mhz));
        else
            printf("%8.0f W  %12.1f tokens/s  %7.1f W  %6.0f MHz\n", w[i], st.tokens_per_s,
                   st.power_w, st.sm_clock_mhz);
    }
    status = as_json ? pfi_cli_print_json(json_pack("{s:o}", "truth", arr)) : PFI_EXIT_OK;
    if (!as_json)
        json_decref(arr);
out:
    if (status != PFI_EXIT_OK && err.code)
        status = pfi_cli_fail("sim job", &err);
    pfi_sim_node_free(node);
    free(cfg);
    return status;
}

/* Prints the job's progress as its framework would, each line when the job would print it,
 * until dur of simulated time has passed. */
static int run_job(pfi_sim_state *state, pfi_sim_node *node, int job, jobview *jv, double t0,
                   double dur, double interval, int log_every, pfi_err *err)
{
    int rc;
    double sp = pfi_sim_state_speed(state);
    double last_print = -INFINITY;
    pfi_sim_job_status st;
    if ((rc = pfi_sim_job_status_at(node, job, t0, &st, err)) != PFI_OK)
        return rc;
    jv->tokens_per_step = st.tokens_per_step;
    banner(jv);
    fflush(stdout);
    long long logged = (long long)floor(st.iterations);
    double logged_t = t0 - (st.iterations - (double)logged) * st.step_time_s;
    for (;;) {
        double now;
        if ((rc = pfi_sim_state_node(state, &node, &now, err)) != PFI_OK ||
            (rc = pfi_sim_job_status_at(node, job, now, &st, err)) != PFI_OK)
            return rc;
        if (jv->fmt == PFI_LOG_PFI) {
            if (now - last_print >= interval) {
                printf("pfi: tokens=%.0f t=%.4f step=%lld\n", st.tokens, now,
                       (long long)floor(st.iterations));
                fflush(stdout);
                last_print = now;
            }
        } else {
            long long k = (long long)floor(st.iterations);
            if (k >= logged + log_every) {
                /* When iteration k really ended, not when this loop noticed. */
                double tk = now - (st.iterations - (double)k) * st.step_time_s;
                double dt = (tk - logged_t) / (double)(k - logged);
                if (dt > 0)
                    progress_line(jv, k, dt, st.tokens, tk, tk - t0);
                logged = k;
                logged_t = tk;
            }
        }
        if (now - t0 >= dur)
            break;
        /* Sleep until the next line is due, so it is printed when the job would print it
         * (a late line would skew a rate computed from arrival times). */
        double due = jv->fmt == PFI_LOG_PFI
                         ? last_print + interval - now
                         : ((double)(logged + log_every) - st.iterations) * st.step_time_s;
        double real = due / sp;
        pfi_clock_sleep(real < 0.0005 ? 0.0005 : real > 0.05 ? 0.05 : real);
    }
    return PFI_OK;
}

/* run_job with this process recorded as the job's in the shared state, so the simulated
 * node (and the fake NVML over it) lists it on the job's GPUs, as a driver lists a real job's
 * process.  Cleared when the job ends. */
static int run_registered(pfi_sim_state *state, pfi_sim_node *node, int job, jobview *jv,
                          double t0, double dur, double interval, int log_every, pfi_err *err)
{
    int rc = pfi_sim_state_set_job_pid(state, job, (long)getpid(), err);
    if (rc == PFI_OK)
        rc = run_job(state, node, job, jv, t0, dur, interval, log_every, err);
    pfi_err e2 = {0};
    if (pfi_sim_state_job_pid(state, job) == (long)getpid())
        pfi_sim_state_set_job_pid(state, job, 0, &e2);
    return rc;
}

/* --log-every and --interval (a duration; a bare number is seconds, as it always was). */
static int pace_ok(int log_every, const char *interval_s, double *interval)
{
    pfi_err e = {0};
    if (log_every < 1 || (interval_s && pfi_parse_duration(interval_s, interval, &e)) ||
        !(*interval > 0)) {
        fprintf(stderr, "pfi sim job: --log-every and --interval must be positive%s%s\n",
                e.msg[0] ? ": " : "", e.msg);
        return 0;
    }
    return 1;
}

int pfi_cmd_sim_job(int argc, char **argv)
{
    const char *format = "pfi", *jobname = NULL, *sim = NULL, *duration = NULL, *truth_caps = NULL;
    int log_every = 1, as_json = 0;
    double speed = 0, interval = 0.25;
    const char *interval_s = NULL;
    const pfi_opt opts[] = {
        {"log-format", PFI_OPT_STR, &format, "NAME", "pfi (default), megatron, torchtitan, hf, "
                                                 "deepspeed, nanogpt, llmc, lightning"},
        PFI_OPT_ALIAS("format", PFI_OPT_STR, &format, "log-format"),
        {"job", PFI_OPT_STR, &jobname, "NAME|N", "which job of the node (default: the first)"},
        {"sim", PFI_OPT_STR, &sim, "FILE|PRESET", "node to create when the state is absent"},
        {"speed", PFI_OPT_DOUBLE, &speed, "X", "speed-up when creating the state"},
        {"duration", PFI_OPT_STR, &duration, "DUR", "stop after this much simulated time"},
        {"log-every", PFI_OPT_INT, &log_every, "N", "iterations per progress line (default 1)"},
        {"interval", PFI_OPT_STR, &interval_s, "DURATION", "pfi format: between lines (0.25s)"},
        {"truth", PFI_OPT_STR, &truth_caps, "W,W,...", "print the job's noise-free steady "
                                                        "throughput at these caps and exit"},
        {"json", PFI_OPT_FLAG, &as_json, NULL, "with --truth: one JSON document"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi sim job [--log-format NAME] [--job NAME] [--duration DUR] [--log-every N] | --truth W,...",
        "Run a simulated training job against the shared simulator state $PFI_SIM_STATE (pfi "
        "sweep --backend sim sets it for the command it launches) and print its progress as "
        "the named framework does.  --truth prints the simulator's ground truth instead.",
        opts,
        "PFI_SIM_STATE=/tmp/node.sim pfi sim job --log-format megatron --duration 60s\n"
        "pfi sim job --truth 700,500,300"};
    int rc = pfi_cli_args_none(&spec, argc, argv, "sim job");
    if (rc >= 0)
        return rc;
    pfi_err err = {0};
    jobview jv = {0};
    if (pfi_log_format_parse(format, &jv.fmt, &err) != PFI_OK)
        return pfi_cli_fail("sim job", &err);
    if (jv.fmt == PFI_LOG_AUTO || jv.fmt == PFI_LOG_REGEX || jv.fmt == PFI_LOG_COMPOSER ||
        jv.fmt == PFI_LOG_AUTOMODEL) {
        fprintf(stderr, "pfi sim job: --log-format must name a simulated framework (pfi, "
                        "megatron, torchtitan, hf, deepspeed, nanogpt, llmc, lightning)\n");
        return PFI_EXIT_USAGE;
    }
    if (!pace_ok(log_every, interval_s, &interval))
        return PFI_EXIT_USAGE;
    int job = 0;
    if (jobname && sscanf(jobname, "%d", &job) != 1)
        job = -1;
    if (truth_caps)
        return truth(sim ? sim : PFI_SIM_DEFAULT_PRESET, job < 0 ? 0 : job, truth_caps, as_json);
    double dur = INFINITY;
    if (duration && pfi_parse_duration(duration, &dur, &err) != PFI_OK)
        return pfi_cli_fail("sim job", &err);
    const char *path = getenv("PFI_SIM_STATE");
    if (!path || !*path) {
        fprintf(stderr, "pfi sim job: PFI_SIM_STATE is not set: pfi sim job runs against a shared "
                        "simulator state (pfi sweep --backend sim sets it for its COMMAND)\n");
        return PFI_EXIT_USAGE;
    }
    pfi_node_config *cfg = malloc(sizeof *cfg);
    if (!cfg)
        return PFI_EXIT_FAIL;
    if (pfi_sim_config_load(sim, cfg, &err) != PFI_OK) {
        free(cfg);
        return pfi_cli_fail("sim job", &err);
    }
    if (!(speed > 0)) {
        const char *e = getenv("PFI_SIM_SPEED");
        speed = e ? atof(e) : 1;
        if (!(speed > 0))
            speed = 1;
    }
    pfi_sim_state *state;
    rc = pfi_sim_state_open(path, cfg, speed, &state, &err);
    free(cfg);
    if (rc != PFI_OK)
        return pfi_cli_fail("sim job", &err);
    pfi_sim_node *node;
    double t0;
    if ((rc = pfi_sim_state_node(state, &node, &t0, &err)) != PFI_OK)
        goto fail;
    if (jobname && job < 0)
        job = pfi_sim_job_find(node, jobname);
    if (job < 0 || job >= pfi_sim_job_count(node)) {
        rc = pfi_err_set(&err, PFI_ENOENT, "no job '%s' on the simulated node",
                         jobname ? jobname : "0");
        goto fail;
    }
    const pfi_job_config *jc = &pfi_sim_node_config(node)->jobs[job];
    jv.n_gpus = jc->n_gpus;
    jv.seq_len = jc->seq_len;
    jv.gbs = jc->global_batch;
    if ((rc = run_registered(state, node, job, &jv, t0, dur, interval, log_every, &err)) !=
        PFI_OK)
        goto fail;
    pfi_sim_state_close(state);
    return PFI_EXIT_OK;
fail:
    pfi_sim_state_close(state);
    return pfi_cli_fail("sim job", &err);
}
