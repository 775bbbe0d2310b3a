/* SPDX-License-Identifier: Apache-2.0 */
/* pfi monitor: stream every telemetry field of the node's GPUs, like `nvidia-smi dmon`.
 * A table on a terminal, CSV or JSON lines in a pipe; a field the backend cannot read is shown
 * as N/A (table), empty (CSV) or null (JSON), never as a made-up zero. */
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "hw/backend_sim.h"
#include "util/units.h"

static volatile sig_atomic_t stop;
static int simulated; /* the backend's GPUs are simulated: every row says so */
/* The first SIGINT or SIGTERM ends the stream after the GPU being read (a sick GPU's NVML call
 * may block for its timeout); a second one ends pfi at once, as an unhandled signal would. */
static void on_signal(int sig)
{
    if (stop) {
        signal(sig, SIG_DFL);
        raise(sig);
    }
    stop = sig;
}

typedef struct field {
    const char *name;   /* CSV/JSON key */
    const char *head;   /* table header */
    uint32_t bit;
    size_t off;         /* offset of the double in pfi_sample */
    const char *fmt;    /* table format */
    double scale;       /* fractions are shown as percent in the table */
    const char *full;   /* CSV and JSON format when 6 (CSV) or 8 (JSON) digits are too few */
} field;

#define F(n, h, b, m, fmt, sc) {n, h, b, offsetof(pfi_sample, m), fmt, sc, NULL}
/* NVML's energy counter runs from driver load: 1e8-1e9 J, which %.6g printed to 1-10 kJ
 * (2.08344e+08) while a 100 ms sample adds 70 J.  In whole millijoules, NVML's own unit. */
#define ENERGY_FULL "%.3f"
static const field fields[] = {
    F("power_w", "pwr_W", PFI_F_POWER, power_w, "%7.1f", 1),
    F("power_inst_w", "inst_W", PFI_F_POWER_INST, power_inst_w, "%7.1f", 1),
    {"energy_j", "energy_J", PFI_F_ENERGY, offsetof(pfi_sample, energy_j), "%11.0f", 1,
     ENERGY_FULL},
    F("sm_clock_mhz", "sm_MHz", PFI_F_SM_CLOCK, sm_clock_mhz, "%6.0f", 1),
    F("mem_clock_mhz", "mem_MHz", PFI_F_MEM_CLOCK, mem_clock_mhz, "%7.0f", 1),
    F("gpu_util", "util%", PFI_F_GPU_UTIL, gpu_util, "%5.0f", 100),
    F("sm_active", "smact%", PFI_F_SM_ACTIVE, sm_active, "%6.0f", 100),
    F("sm_occupancy", "occ%", PFI_F_SM_OCCUPANCY, sm_occupancy, "%5.0f", 100),
    F("tensor_active", "tensor%", PFI_F_TENSOR, tensor_active, "%7.0f", 100),
    F("dram_active", "dram%", PFI_F_DRAM, dram_active, "%5.0f", 100),
    F("nvlink_tx_mibs", "nvl_tx", PFI_F_NVLINK, nvlink_tx_mibs, "%7.0f", 1),
    F("nvlink_rx_mibs", "nvl_rx", PFI_F_NVLINK, nvlink_rx_mibs, "%7.0f", 1),
    F("pcie_tx_mibs", "pcie_tx", PFI_F_PCIE, pcie_tx_mibs, "%7.0f", 1),
    F("pcie_rx_mibs", "pcie_rx", PFI_F_PCIE, pcie_rx_mibs, "%7.0f", 1),
    F("temp_c", "temp", PFI_F_TEMP, temp_c, "%5.0f", 1),
    F("mem_used_mib", "mem_MiB", PFI_F_MEM_USED, mem_used_mib, "%8.0f", 1),
    F("mem_power_w", "hbm_W", PFI_F_MEM_POWER, mem_power_w, "%6.1f", 1),
    F("limit_w", "limit", PFI_F_LIMIT, limit_w, "%6.0f", 1),
    F("enforced_w", "enforc", PFI_F_LIMIT, enforced_w, "%6.0f", 1),
};
#define NFIELDS (sizeof fields / sizeof fields[0])

static double get(const pfi_sample *s, const field *f)
{
    return *(const double *)((const char *)s + f->off);
}

static int have(const pfi_sample *s, const field *f)
{
    return (s->have & f->bit) && isfinite(get(s, f));
}

static void table_header(void)
{
    /* t_s is NVML's seconds since boot: 12 wide holds a node up for 3 years (9 ran out after
     * 11.6 days, every row then one column right of the header). */
    printf("%12s %3s", "t_s", "gpu");
    for (size_t i = 0; i < NFIELDS; i++) {
        char fmt[16];
        int w = atoi(fields[i].fmt + 1);
        snprintf(fmt, sizeof fmt, " %%%ds", w);
        printf(fmt, fields[i].head);
    }
    printf(" %3s %s\n", "sim", "reasons");
}

static void table_row(int gpu, const pfi_sample *s)
{
    printf("%12.2f %3d", s->t_s, gpu);
    for (size_t i = 0; i < NFIELDS; i++) {
        const field *f = &fields[i];
        putchar(' ');
        if (have(s, f)) {
            printf(f->fmt, get(s, f) * f->scale);
        } else {
            char fmt[16];
            snprintf(fmt, sizeof fmt, "%%%ds", atoi(f->fmt + 1));
            printf(fmt, "N/A");
        }
    }
    printf(" %3s", simulated ? "yes" : "no");
    if (s->have & PFI_F_REASONS)
        printf(" 0x%llx%s\n", (unsigned long long)s->clock_reasons,
               (s->clock_reasons & PFI_REASON_SW_POWERCAP) ? " pwrcap" : "");
    else
        printf(" N/A\n");
}

static void csv_header(void)
{
    printf("t_s,gpu");
    for (size_t i = 0; i < NFIELDS; i++)
        printf(",%s", fields[i].name);
    printf(",clock_reasons,simulated\n");
}

static void csv_row(int gpu, const pfi_sample *s)
{
    printf("%.3f,%d", s->t_s, gpu);
    for (size_t i = 0; i < NFIELDS; i++) {
        putchar(',');
        if (have(s, &fields[i]))
            printf(fields[i].full ? fields[i].full : "%.6g", get(s, &fields[i]));
    }
    if (s->have & PFI_F_REASONS)
        printf(",%llu", (unsigned long long)s->clock_reasons);
    else
        printf(",");
    printf(",%d\n", simulated);
}

/* A real as json_dumps writes it with 8 significant digits, as every value but t_s and the
 * fields with a full format always was. */
static void json_real8(double v)
{
    json_t *r = json_real(v);
    char *text = r ? json_dumps(r, JSON_ENCODE_ANY | JSON_REAL_PRECISION(8)) : NULL;
    fputs(text ? text : "null", stdout);
    free(text);
    json_decref(r);
}

/* One object per line, written member by member: t_s to the millisecond whatever the uptime (8
 * digits of a monotonic clock 1e7 s from boot gave four 100 ms samples one t_s), the energy
 * counter in millijoules; the rest with 8 significant digits. */
static void jsonl_row(int gpu, const pfi_sample *s)
{
    printf("{\"t_s\":%.3f,\"gpu\":%d", s->t_s, gpu);
    for (size_t i = 0; i < NFIELDS; i++) {
        const field *f = &fields[i];
        printf(",\"%s\":", f->name);
        if (!have(s, f))
            fputs("null", stdout);
        else if (f->full)
            printf(f->full, get(s, f));
        else
            json_real8(get(s, f));
    }
    if (s->have & PFI_F_REASONS)
        printf(",\"clock_reasons\":%llu", (unsigned long long)s->clock_reasons);
    else
        fputs(",\"clock_reasons\":null", stdout);
    printf(",\"simulated\":%s}\n", simulated ? "true" : "false");
}

/* 0 table, 1 csv, 2 jsonl; -1 for an unknown --format.  Without one: a table on a terminal. */
static int output_mode(const char *format)
{
    if (!format)
        return isatty(STDOUT_FILENO) ? 0 : 1;
    if (strcmp(format, "table") == 0)
        return 0;
    if (strcmp(format, "csv") == 0)
        return 1;
    if (strcmp(format, "jsonl") == 0 || strcmp(format, "json") == 0)
        return 2;
    return -1;
}

/* Whether the stream's interval and end are ones it can keep (else said). */
static int limits_ok(double interval, int count, int has_duration, double duration)
{
    const char *why = NULL;
    if (!(interval >= 0.001))
        why = "--interval must be at least 1ms";
    else if (count != INT_MIN && count < 1)
        why = "--count must be at least 1";
    else if (count != INT_MIN && has_duration) /* both were taken: the first reached ended it */
        why = "give --count or --duration, not both";
    else if (has_duration && !(duration > 0)) /* 0 s was one round */
        why = "--duration must be more than 0";
    if (why)
        fprintf(stderr, "pfi monitor: %s\n", why);
    return !why;
}

/* One row per GPU of idx[0..ni); 0 when a GPU could not be read.  Such a GPU still gets its row,
 * every field unknown (its rows vanished from CSV and JSON lines, a gap a reader could not
 * tell from a GPU not asked for), and its error is said once, until it reads again (it was
 * said every round: 86,400 lines a day at 1 s), as nvidia-smi and DCGM do; the others are
 * shown.  Stops after the GPU being read once a signal came. */
static int one_round(pfi_backend *b, const int *idx, int ni, int mode, double t0)
{
    static unsigned char failing[PFI_MAX_GPUS];
    /* Whether the backend times its samples (t_s): learned from the first one read.  A blank
     * row takes the time its good rows would have: the backend's clock where it times them,
     * else seconds since the start (it was the backend's clock beside good rows in seconds
     * since the start). */
    static int gives_t = -1;
    int ok = 1;
    double round_t = NAN; /* the round's time, as the GPUs read give it */
    for (int k = 0; k < ni && !stop; k++) {
        pfi_sample s;
        pfi_err e = {0};
        int g = idx[k] >= 0 && idx[k] < PFI_MAX_GPUS ? idx[k] : 0;
        if (pfi_hw_sample(b, idx[k], &s, &e) != PFI_OK) {
            if (!failing[g])
                fprintf(stderr, "pfi monitor: GPU %d: %s (its rows are blank until it reads "
                                "again)\n", idx[k], e.msg);
            failing[g] = 1;
            ok = 0;
            pfi_sample_clear(&s);
            s.t_s = isfinite(round_t) ? round_t : gives_t != 0 ? pfi_hw_now(b) : NAN;
        } else {
            if (gives_t < 0)
                gives_t = isfinite(s.t_s);
            if (failing[g]) {
                fprintf(stderr, "pfi monitor: GPU %d: read again\n", idx[k]);
                failing[g] = 0;
            }
        }
        if (isfinite(s.t_s) && !isfinite(round_t))
            round_t = s.t_s;
        if (!isfinite(s.t_s))
            s.t_s = pfi_hw_now(b) - t0;
        if (mode == 0)
            table_row(idx[k], &s);
        else if (mode == 1)
            csv_row(idx[k], &s);
        else
            jsonl_row(idx[k], &s);
    }
    return ok;
}

/* Sleeps until the tick after `last`; returns it.  --interval is the period, rounds start on
 * its ticks: a sleep after each round made it the interval plus the round's reads (100 ms read
 * 182 ms on a slow driver).  Ticks a round overran are skipped, not caught up in a burst. */
static double wait_tick(pfi_backend *b, double last, double interval)
{
    double now = pfi_hw_now(b), next = last + interval;
    if (next < now)
        next = now + interval + fmod(next - now, interval);
    if (next > now)
        pfi_hw_sleep(b, next - now);
    return next;
}

int pfi_cmd_monitor(int argc, char **argv)
{
    pfi_cli_hw hw = {0};
    const char *interval_s = "1s", *duration_s = NULL, *format = NULL, *gpus_s = NULL;
    int count = INT_MIN; /* unset: --count 0 must be refused, not read as "no limit" */
    const pfi_opt opts[] = {
        PFI_CLI_HW_OPTS(hw),
        {"interval", PFI_OPT_STR, &interval_s, "D",
         "period of the rounds of samples (default 1s); a round that overruns it skips ticks"},
        {"count", PFI_OPT_INT, &count, "N", "stop after N rounds of samples"},
        {"duration", PFI_OPT_STR, &duration_s, "D", "stop after this much (backend) time"},
        {"format", PFI_OPT_STR, &format, "table|csv|jsonl",
         "output (default: table on a terminal, csv otherwise)"},
        {"gpus", PFI_OPT_STR, &gpus_s, "LIST", "GPUs to show, e.g. 0-3,6 (default all)"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi monitor [--interval 1s] [--count N|--duration D] [--format table|csv|jsonl] "
        "[--gpus LIST] [--backend auto|nvml|sim] [--sim FILE|PRESET]",
        "Stream every telemetry field of the GPUs until --count/--duration or Ctrl-C.  CSV and "
        "JSON lines give t_s (the backend's clock: seconds since boot on NVML) to the "
        "millisecond and energy_j (joules since the driver loaded) to the millijoule, in full; "
        "the other values with 6 (CSV) or 8 (JSON) significant digits.  On the simulator in "
        "virtual time (no PFI_SIM_STATE) time passes instantly, so without --count/--duration "
        "it stops after 10 rounds.", opts,
        "pfi monitor --interval 100ms --gpus 0-3\n"
        "pfi monitor --backend sim --count 5 --format jsonl"};
    int rc = pfi_cli_args_none(&spec, argc, argv, "monitor");
    if (rc >= 0)
        return rc;
    pfi_err e = {0};
    double interval, duration = INFINITY;
    if (pfi_parse_duration(interval_s, &interval, &e) != PFI_OK ||
        (duration_s && pfi_parse_duration(duration_s, &duration, &e) != PFI_OK))
        return pfi_cli_fail("monitor", &e);
    if (!limits_ok(interval, count, duration_s != NULL, duration))
        return PFI_EXIT_USAGE;
    if (count == INT_MIN)
        count = 0;
    int mode = output_mode(format);
    if (mode < 0) {
        fprintf(stderr, "pfi monitor: unknown format '%s' (table, csv or jsonl)\n", format);
        return PFI_EXIT_USAGE;
    }
    pfi_backend *b;
    if (pfi_cli_open_hw(&hw, &b, &e) != PFI_OK)
        return pfi_cli_fail("monitor", &e);
    simulated = pfi_hw_simulated(b);
    int n = 0, idx[PFI_MAX_GPUS], ni = 0;
    if (pfi_hw_count(b, &n, &e) != PFI_OK ||
        pfi_parse_index_list(gpus_s ? gpus_s : "all", n, idx, &ni, &e) != PFI_OK) {
        pfi_hw_close(b);
        return pfi_cli_fail("monitor", &e);
    }
    if (count == 0 && isinf(duration) && pfi_backend_sim_virtual(b))
        count = 10;
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (mode == 1)
        csv_header();
    double t0 = pfi_hw_now(b), next = t0;
    int status = PFI_EXIT_OK;
    for (int round = 0; !stop && (count == 0 || round < count); round++) {
        if (pfi_hw_now(b) - t0 > duration + 1e-9)
            break;
        if (mode == 0 && round % 20 == 0)
            table_header();
        if (!one_round(b, idx, ni, mode, t0))
            status = PFI_EXIT_FAIL;
        /* A reader gone (SIGPIPE ignored) or a full disk: polling on would go on unseen. */
        if (!pfi_cli_stdout_ok("monitor")) {
            status = PFI_EXIT_FAIL;
            break;
        }
        if (count > 0 && round + 1 >= count)
            break;
        next = wait_tick(b, next, interval);
    }
    pfi_hw_close(b);
    return status;
}
