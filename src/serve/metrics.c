/* metrics.c: GET /metrics in the Prometheus text exposition format (version 0.0.4).
 * Base units as Prometheus names them (watts, hertz, seconds); a value the GPU did not give is
 * left out rather than written as a fake zero. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_int.h"

typedef struct buf {
    char *p;
    size_t len, cap;
    int oom;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)k < b->cap - b->len) {
            b->len += (size_t)k;
            return;
        }
        size_t nc = b->cap * 2 + (size_t)k;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
}

/* Label values escape backslash, double quote and newline. */
static void esc(const char *in, char *out, size_t size)
{
    size_t o = 0;
    for (; *in && o + 3 < size; in++) {
        if (*in == '\\' || *in == '"') {
            out[o++] = '\\';
            out[o++] = *in;
        } else if (*in == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else {
            out[o++] = *in;
        }
    }
    out[o] = '\0';
}

static void head(buf *b, const char *name, const char *type, const char *help)
{
    put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gpu_metric(buf *b, const srv_node *n, const char *name, const char *help,
                       double (*get)(const srv_gpu *))
{
    head(b, name, "gauge", help);
    for (int i = 0; i < n->n_gpus; i++) {
        double v = get(&n->gpu[i]);
        if (!isfinite(v))
            continue;
        char uuid[200];
        esc(n->gpu[i].dev.uuid, uuid, sizeof uuid);
        put(b, "%s{gpu=\"%d\",uuid=\"%s\"} %.17g\n", name, i, uuid, v);
    }
}

static double g_power(const srv_gpu *g)
{
    return (g->s.have & PFI_F_POWER) ? g->s.power_w : NAN;
}
static double g_limit(const srv_gpu *g)
{
    return g->dev.limit_w;
}
static double g_enforced(const srv_gpu *g)
{
    return g->dev.enforced_w;
}
static double g_requested(const srv_gpu *g)
{
    return g->requested_w;
}
static double g_clock(const srv_gpu *g)
{
    return (g->s.have & PFI_F_SM_CLOCK) ? g->s.sm_clock_mhz * 1e6 : NAN;
}
static double g_capped(const srv_gpu *g)
{
    return (g->s.have & PFI_F_REASONS) ? (double)((g->s.clock_reasons & PFI_REASON_SW_POWERCAP) != 0)
                                       : NAN;
}
static double g_reasons(const srv_gpu *g)
{
    return (g->s.have & PFI_F_REASONS) ? (double)g->s.clock_reasons : NAN;
}
static double g_up(const srv_gpu *g)
{
    return g->up;
}
static double g_min(const srv_gpu *g)
{
    return g->dev.min_limit_w;
}
static double g_max(const srv_gpu *g)
{
    return g->dev.max_limit_w;
}

static void job_metric(buf *b, const srv_node *n, const char *name, const char *help, int which)
{
    head(b, name, "gauge", help);
    for (int j = 0; j < n->n_jobs; j++) {
        const srv_job *jb = &n->jobs[j];
        double v = which == 0   ? jb->observed_tps
                   : which == 1 ? jb->pfi30
                   : which == 2 ? jb->cap_w
                   : which == 3 ? jb->predicted_tps
                   : which == 4 ? jb->predicted_rel
                                : (double)jb->n_gpus;
        if (!isfinite(v))
            continue;
        char id[200];
        esc(jb->id, id, sizeof id);
        put(b, "%s{job=\"%s\"} %.17g\n", name, id, v);
    }
}

char *pfi_srv_metrics_text(srv_node *n, size_t *len)
{
    buf b = {malloc(16384), 0, 16384, 0};
    if (!b.p)
        return NULL;
    b.p[0] = '\0';
    pthread_mutex_lock(&n->mu);
    gpu_metric(&b, n, "pfi_gpu_power_watts", "Board power drawn (1 s average).", g_power);
    gpu_metric(&b, n, "pfi_gpu_power_limit_watts", "Power limit set in band.", g_limit);
    gpu_metric(&b, n, "pfi_gpu_enforced_power_limit_watts",
               "Power limit the device enforces (may be lower than the one set).", g_enforced);
    gpu_metric(&b, n, "pfi_gpu_requested_power_limit_watts",
               "Power limit pfi last asked for.", g_requested);
    gpu_metric(&b, n, "pfi_gpu_min_power_limit_watts", "Lowest settable power limit.", g_min);
    gpu_metric(&b, n, "pfi_gpu_max_power_limit_watts", "Highest settable power limit.", g_max);
    gpu_metric(&b, n, "pfi_gpu_sm_clock_hertz", "SM clock.", g_clock);
    gpu_metric(&b, n, "pfi_gpu_power_capped",
               "1 while the SW power cap holds the clock down (throttle reason 0x4).", g_capped);
    gpu_metric(&b, n, "pfi_gpu_clock_event_reasons", "Clock event reason bits as NVML reports.",
               g_reasons);
    gpu_metric(&b, n, "pfi_gpu_up", "1 when the GPU answered the last reading.", g_up);

    job_metric(&b, n, "pfi_job_tokens_per_second", "Throughput the job last reported.", 0);
    job_metric(&b, n, "pfi_job_predicted_tokens_per_second",
               "Throughput predicted at the job's cap.", 3);
    job_metric(&b, n, "pfi_job_predicted_relative_throughput",
               "Predicted throughput at the cap over baseline throughput.", 4);
    job_metric(&b, n, "pfi_job_predicted_pfi30",
               "Power Flexibility Index at 30% power shed on the job's curve.", 1);
    job_metric(&b, n, "pfi_job_cap_watts", "Per-GPU power cap given to the job.", 2);
    job_metric(&b, n, "pfi_job_gpus", "GPUs the job holds.", 5);

    double sum = 0;
    for (int i = 0; i < n->n_gpus; i++)
        sum += n->gpu[i].dev.limit_w;
    head(&b, "pfi_node_budget_watts", "gauge", "Node power budget on the sum of limits.");
    if (isfinite(n->budget_w))
        put(&b, "pfi_node_budget_watts %.17g\n", n->budget_w);
    double over = pfi_srv_over_budget_w(n);
    head(&b, "pfi_over_budget", "gauge",
         "1 when the power limits as last read exceed the budget in force.");
    put(&b, "pfi_over_budget %d\n", over > 0);
    head(&b, "pfi_budget_excess_watts", "gauge",
         "How far the power limits as last read exceed the budget (0 within it).");
    put(&b, "pfi_budget_excess_watts %.17g\n", over);
    head(&b, "pfi_node_power_limits_watts", "gauge", "Sum of the GPUs' power limits.");
    put(&b, "pfi_node_power_limits_watts %.17g\n", sum);
    head(&b, "pfi_node_nominal_watts", "gauge", "Sum of the GPUs' default limits (100%).");
    put(&b, "pfi_node_nominal_watts %.17g\n", n->nominal_w);
    head(&b, "pfi_node_mode", "gauge", "Control mode: 1 for the mode in force.");
    const char *modes[] = {"local", "external", "safe"};
    for (int m = 0; m < 3; m++)
        put(&b, "pfi_node_mode{mode=\"%s\"} %d\n", modes[m], n->mode == m);
    head(&b, "pfi_decisions_total", "counter", "Cap decisions applied.");
    put(&b, "pfi_decisions_total %lld\n", n->n_decisions);
    head(&b, "pfi_cap_changes_total", "counter", "Power limit changes made.");
    put(&b, "pfi_cap_changes_total %lld\n", n->n_cap_changes);
    head(&b, "pfi_cap_failures_total", "counter", "Power limit changes that failed.");
    put(&b, "pfi_cap_failures_total %lld\n", n->n_apply_failures);
    head(&b, "pfi_cap_held_total", "counter",
         "Raises held back because they would have exceeded the budget.");
    put(&b, "pfi_cap_held_total %lld\n", n->n_held);
    head(&b, "pfi_enforced_mismatch_total", "counter",
         "Changes after which the enforced limit differed from the one asked.");
    put(&b, "pfi_enforced_mismatch_total %lld\n", n->n_mismatch);
    head(&b, "pfi_rate_limited_total", "counter", "Cap-moving requests refused with 429.");
    put(&b, "pfi_rate_limited_total %lld\n", n->n_rate_limited);
    head(&b, "pfi_watchdog_trips_total", "counter", "Times the heartbeat watchdog fired.");
    put(&b, "pfi_watchdog_trips_total %lld\n", n->n_watchdog_trips);
    head(&b, "pfi_last_apply_seconds", "gauge", "Duration of the last cap application.");
    if (n->n_decisions)
        put(&b, "pfi_last_apply_seconds %.6f\n", n->last_apply_ms / 1e3);
    pthread_mutex_unlock(&n->mu);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}
