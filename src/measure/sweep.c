/* SPDX-License-Identifier: Apache-2.0 */
/* sweep.c: the sweep protocol (see measure.h and docs/sweep.md). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/measure.h"
#include "measure/sampler.h"
#include "sim/sim.h"
#include "util/clock.h"

void pfi_sweep_defaults(pfi_sweep_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->max_dwell_s = 120;
    c->timeout_s = 300;
    c->tick_s = 0.1;
    c->threaded_sampler = 1;
    pfi_steady_defaults(&c->steady);
    c->meta.moe = c->meta.finetune = -1;
    c->meta.params_b = NAN;
}

static unsigned next_rand(unsigned *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Each swept GPU's device record, its bounds known. */
static int plan_devices(pfi_backend *b, const pfi_sweep_cfg *c, pfi_device *d, pfi_err *err)
{
    for (int i = 0; i < c->n_gpus; i++) {
        /* The backend names the call that failed ("nvmlDeviceGetHandleByIndex_v2: GPU is
         * lost"), the caller the GPU. */
        int rc = pfi_hw_info(b, c->gpus[i], &d[i], err);
        if (rc != PFI_OK)
            return pfi_err_prefix(err, "GPU %d: ", c->gpus[i]);
        /* Unknown bounds (NAN) pass every range check: a 5000 W cap was accepted and a level
         * of 80% became a NAN cap. */
        if (!isfinite(d[i].min_limit_w) || !isfinite(d[i].max_limit_w) ||
            !isfinite(d[i].default_limit_w))
            return pfi_err_set(err, PFI_ENOTSUP,
                               "GPU %d's power-limit range cannot be read (%s): it cannot be "
                               "swept",
                               c->gpus[i],
                               d[i].unread[0] ? d[i].unread
                                              : "its minimum, maximum or default limit is "
                                                "unknown");
        if (c->baseline_current && !isfinite(d[i].limit_w))
            return pfi_err_set(err, PFI_ENOTSUP,
                               "GPU %d's limit in force cannot be read (%s): --baseline current "
                               "needs it",
                               c->gpus[i], d[i].unread[0] ? d[i].unread : "not given");
    }
    return PFI_OK;
}

/* The requested levels' indices in the order they will be run. */
static void order_levels(const pfi_sweep_cfg *c, const pfi_device *d, int *order)
{
    int n = c->n_levels;
    double key[PFI_MAX_LEVELS];
    for (int l = 0; l < n; l++) {
        order[l] = l;
        key[l] = c->levels[l] * (c->levels_frac ? d[0].max_limit_w : 1);
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            int swap = c->order == PFI_ORDER_ASCENDING ? key[order[j]] < key[order[j - 1]]
                                                       : key[order[j]] > key[order[j - 1]];
            if (!swap)
                break;
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    if (c->order == PFI_ORDER_RANDOM) {
        unsigned s = c->seed ? c->seed : 0x9e3779b9u;
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(next_rand(&s) % (unsigned)(i + 1));
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
}

/* Level v (a fraction of each GPU's maximum, or watts) as watts per GPU into w[], each within
 * its GPU's range. */
static int level_watts(const pfi_sweep_cfg *c, const pfi_device *d, double v, double *w,
                       pfi_err *err)
{
    for (int i = 0; i < c->n_gpus; i++) {
        w[i] = c->levels_frac ? v * d[i].max_limit_w : v;
        if (w[i] >= d[i].min_limit_w - 0.5 && w[i] <= d[i].max_limit_w + 0.5)
            continue;
        if (c->levels_frac)
            return pfi_err_set(err, PFI_ERANGE,
                               "level %g%% is %.0f W on GPU %d, outside its range %.0f-%.0f W",
                               v * 100, w[i], c->gpus[i], d[i].min_limit_w, d[i].max_limit_w);
        return pfi_err_set(err, PFI_ERANGE, "cap %.0f W is outside GPU %d's range %.0f-%.0f W",
                           w[i], c->gpus[i], d[i].min_limit_w, d[i].max_limit_w);
    }
    return PFI_OK;
}

/* 1 when cap w sets GPU d above its limit in force (in the milliwatts NVML takes). */
static int above_limit(double w, const pfi_device *d)
{
    return isfinite(d->limit_w) && pfi_hw_cap_mw(w) > pfi_hw_held_mw(d->limit_w);
}

/* The baseline: each GPU's default limit, or with --baseline current its limit in force;
 * the GPUs the default raises above the limit in force go in *note. */
static void plan_baseline(const pfi_sweep_cfg *c, const pfi_device *d, double *w,
                          pfi_sweep_plan_note *note)
{
    for (int i = 0; i < c->n_gpus; i++) {
        w[i] = c->baseline_current ? d[i].limit_w : d[i].default_limit_w;
        if (note && above_limit(w[i], &d[i])) {
            int k = note->n_raised++;
            note->raised_gpu[k] = c->gpus[i];
            note->raised_from_w[k] = d[i].limit_w;
            note->raised_to_w[k] = w[i];
        }
    }
}

int pfi_sweep_plan(pfi_backend *b, const pfi_sweep_cfg *c, double caps[][PFI_MAX_GPUS],
                   int *n_levels, pfi_sweep_plan_note *note, pfi_err *err)
{
    *n_levels = 0;
    if (note)
        memset(note, 0, sizeof *note);
    if (c->n_gpus < 1)
        return pfi_err_set(err, PFI_EINVAL, "no GPUs to sweep");
    pfi_device d[PFI_MAX_GPUS];
    int rc = plan_devices(b, c, d, err);
    if (rc != PFI_OK)
        return rc;
    int order[PFI_MAX_LEVELS];
    order_levels(c, d, order);
    plan_baseline(c, d, caps[0], note);
    int k = 1;
    for (int l = 0; l < c->n_levels; l++) {
        double v = c->levels[order[l]];
        if ((rc = level_watts(c, d, v, caps[k], err)) != PFI_OK)
            return rc;
        int above = 0, same_as_baseline = 1;
        for (int i = 0; i < c->n_gpus; i++) {
            above |= above_limit(caps[k][i], &d[i]);
            if (fabs(caps[k][i] - caps[0][i]) > 0.5)
                same_as_baseline = 0;
        }
        if (above && c->baseline_current) {
            if (note)
                note->dropped[note->n_dropped++] = v;
            continue; /* --baseline current: never above the limits in force */
        }
        if (same_as_baseline)
            continue; /* the baseline measures it */
        int dup = 0;
        for (int j = 1; j < k && !dup; j++)
            dup = memcmp(caps[j], caps[k], (size_t)c->n_gpus * sizeof(double)) == 0;
        if (dup)
            continue;
        if (k >= PFI_MAX_LEVELS)
            return pfi_err_set(err, PFI_ERANGE, "more than %d levels", PFI_MAX_LEVELS);
        if (note && above)
            note->n_above++;
        k++;
    }
    *n_levels = k;
    return PFI_OK;
}

int pfi_sweep_check_settable(pfi_backend *b, const pfi_sweep_cfg *c, pfi_err *err)
{
    for (int i = 0; i < c->n_gpus; i++) {
        int g = c->gpus[i];
        pfi_device d;
        int rc = pfi_hw_info(b, g, &d, err);
        if (rc != PFI_OK)
            return pfi_err_prefix(err, "GPU %d: ", g);
        if (!isfinite(d.limit_w))
            return pfi_err_set(err, PFI_ENOTSUP, "GPU %d's power limit cannot be read (%s)", g,
                               d.unread[0] ? d.unread : "the backend does not give it");
        /* Its own limit: a set that changes nothing, which NVML still refuses without the
         * right to change limits. */
        pfi_err e = {0};
        rc = pfi_hw_set_limit(b, g, d.limit_w, NULL, &e);
        if (rc == PFI_OK)
            continue;
        if (rc == PFI_EPERM && !strstr(e.msg, "root"))
            pfi_err_prefix(&e, "setting power limits needs root (or CAP_SYS_ADMIN): ");
        return pfi_err_set(err, rc,
                           "GPU %d's power limit cannot be set (a set to its own %.0f W, which "
                           "changes nothing, was refused): %s; nothing was changed",
                           g, d.limit_w, e.msg);
    }
    return PFI_OK;
}

/* ---- the run ---- */

typedef struct sweep_state {
    pfi_backend *b;
    const pfi_sweep_cfg *c;
    pfi_tput_source *src;
    pfi_meter meter;
    double last_obs_t;
    double last_obs_wall; /* monotonic seconds of the last observation */
    long n_obs;
    pfi_err obs_err;
    double done_s; /* backend time the completed levels took, for the estimate of what is left */
    int n_done;
} sweep_state;

static void on_obs(void *ctx, const pfi_obs *o, double t)
{
    sweep_state *s = ctx;
    /* torchtitan's tps is per GPU; decided again when the format was replaced (parse.h). */
    if ((!s->meter.unit_set || o->restart) && s->src->parser)
        s->meter.scale = pfi_parser_per_gpu(s->src->parser) ? s->c->n_gpus : 1;
    s->n_obs++;
    s->last_obs_t = t;
    s->last_obs_wall = pfi_clock_mono();
    if (pfi_meter_add(&s->meter, o, t, &s->obs_err) != PFI_OK)
        s->obs_err.code = PFI_ENOMEM;
}

static double mean_field(const pfi_sample *smp, int nt, int ng, double t0, double t1, uint32_t bit,
                         size_t off, int *have)
{
    double sum = 0;
    long n = 0;
    for (int t = 0; t < nt; t++)
        for (int g = 0; g < ng; g++) {
            const pfi_sample *x = &smp[(size_t)t * (size_t)ng + (size_t)g];
            if (!(x->have & bit) || x->t_s < t0 || x->t_s > t1)
                continue;
            double v = *(const double *)((const char *)x + off);
            if (!isfinite(v))
                continue;
            sum += v;
            n++;
        }
    if (have)
        *have = n > 0;
    return n ? sum / (double)n : NAN;
}

/* Telemetry means over the steady window; the window widens to the whole level when it holds
 * no sample (a window shorter than one telemetry period). */
static void level_telemetry(const pfi_sample *smp, int nt, int ng, double t0, double t1,
                            pfi_level *lv)
{
    int have;
    mean_field(smp, nt, ng, t0, t1, PFI_F_POWER, offsetof(pfi_sample, power_w), &have);
    if (!have) {
        t0 = -INFINITY;
        t1 = INFINITY;
    }
#define MF(bit, field) mean_field(smp, nt, ng, t0, t1, bit, offsetof(pfi_sample, field), NULL)
    lv->power_w = MF(PFI_F_POWER, power_w);
    lv->sm_clock_mhz = MF(PFI_F_SM_CLOCK, sm_clock_mhz);
    lv->gpu_util = MF(PFI_F_GPU_UTIL, gpu_util);
    lv->sm_active = MF(PFI_F_SM_ACTIVE, sm_active);
    lv->tensor_active = MF(PFI_F_TENSOR, tensor_active);
    lv->dram_active = MF(PFI_F_DRAM, dram_active);
    double nt_tx = MF(PFI_F_NVLINK, nvlink_tx_mibs), nt_rx = MF(PFI_F_NVLINK, nvlink_rx_mibs);
    double pc_tx = MF(PFI_F_PCIE, pcie_tx_mibs), pc_rx = MF(PFI_F_PCIE, pcie_rx_mibs);
#undef MF
    lv->nvlink_mibs = nt_tx + nt_rx;
    lv->pcie_mibs = pc_tx + pc_rx;
    long capped = 0, n = 0, count = 0;
    for (int t = 0; t < nt; t++)
        for (int g = 0; g < ng; g++) {
            const pfi_sample *x = &smp[(size_t)t * (size_t)ng + (size_t)g];
            if (x->t_s < t0 || x->t_s > t1)
                continue;
            count++;
            if (!(x->have & PFI_F_REASONS))
                continue;
            n++;
            capped += (x->clock_reasons & PFI_REASON_SW_POWERCAP) != 0;
        }
    lv->powercap_frac = n ? (double)capped / (double)n : NAN;
    lv->n_samples = (int)count;
}

static void level_init(pfi_level *lv)
{
    double *f[] = {&lv->cap_w, &lv->enforced_w, &lv->enforced_min_w, &lv->power_w, &lv->tput, &lv->tput_lo,
                   &lv->tput_hi, &lv->sm_clock_mhz, &lv->powercap_frac, &lv->gpu_util,
                   &lv->sm_active, &lv->tensor_active, &lv->dram_active, &lv->nvlink_mibs,
                   &lv->pcie_mibs, &lv->t_start_s, &lv->t_end_s, &lv->began_s, &lv->ended_s};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        *f[i] = NAN;
    lv->n_samples = 0;
}

/* Moves the swept GPUs to w[i] through pfi_hw_apply, lowerings first, so that between two
 * levels (or a plan that raises some GPUs and lowers others) the node's sum of limits never
 * passes the larger of the two.  A failure is the first GPU's, in full. */
static int apply_caps(pfi_backend *b, const pfi_sweep_cfg *c, const double *w,
                      pfi_apply_report *rep, pfi_err *err)
{
    double t[PFI_MAX_GPUS];
    int n = 0;
    rep->first_gpu = -1;
    for (int g = 0; g < PFI_MAX_GPUS; g++)
        t[g] = NAN;
    for (int i = 0; i < c->n_gpus; i++) {
        int g = c->gpus[i];
        if (g < 0 || g >= PFI_MAX_GPUS)
            return pfi_err_set(err, PFI_ENOENT, "no GPU %d", g);
        t[g] = w[i];
        n = g + 1 > n ? g + 1 : n;
    }
    pfi_err e = {0};
    int rc = pfi_hw_apply(b, n, t, INFINITY, NULL, rep, &e);
    if (rep->first_gpu >= 0) {
        if (err)
            *err = rep->first;
        return rep->first.code;
    }
    if (rc != PFI_OK && err)
        *err = e;
    return rc;
}

/* Sets level li's caps w; its enforced limits (their mean and lowest) into *lv.  A GPU that
 * enforces another limit than asked (an out-of-band cap) is told to c->mismatch with
 * pfi_hw_apply's message, once per level: such a level ran at the lower limit, and the job at
 * its slowest GPU's pace, which the mean alone (668.75 W at 700 W) did not show. */
static int set_caps(pfi_backend *b, const pfi_sweep_cfg *c, int li, const double *w,
                    pfi_level *lv, pfi_err *err)
{
    pfi_apply_report rep;
    int rc = apply_caps(b, c, w, &rep, err);
    if (rc != PFI_OK) {
        int g = rep.first_gpu;
        if (g >= 0)
            pfi_err_prefix(err, "setting GPU %d to %.0f W: ", g, rep.gpu[g].target_w);
        return rc;
    }
    double sum = 0, lo = INFINITY;
    int n = 0;
    for (int i = 0; i < c->n_gpus; i++) {
        const pfi_cap_change *g = &rep.gpu[c->gpus[i]];
        if (isfinite(g->enforced_w)) {
            sum += g->enforced_w;
            lo = fmin(lo, g->enforced_w);
            n++;
        }
        if (c->mismatch && isfinite(g->enforced_w) && fabs(g->enforced_w - g->target_w) > 1.0)
            c->mismatch(c->progress_ctx, li, c->gpus[i], g->msg);
    }
    lv->enforced_w = n ? sum / n : NAN;
    lv->enforced_min_w = n ? lo : NAN;
    return PFI_OK;
}

static void fill_header(pfi_backend *b, const pfi_sweep_cfg *c, pfi_run *run)
{
    memset(run, 0, sizeof *run);
    pfi_device d;
    if (pfi_hw_info(b, c->gpus[0], &d, NULL) == PFI_OK) {
        /* The canonical type ("H200-SXM") when the name is known, as imported runs have. */
        const pfi_gpu_model *m = pfi_gpu_model_find(d.name);
        snprintf(run->gpu_type, sizeof run->gpu_type, "%s", m ? m->name : d.name);
        run->min_limit_w = d.min_limit_w;
        run->max_limit_w = d.max_limit_w;
        run->default_limit_w = d.default_limit_w;
    }
    snprintf(run->name, sizeof run->name, "%s", c->name ? c->name : "sweep");
    snprintf(run->source, sizeof run->source, "sweep");
    run->n_gpus = c->n_gpus;
    run->unit = PFI_TOKENS_PER_S;
    run->meta = c->meta;
}

static void report(const sweep_state *s, pfi_sweep_progress *p)
{
    if (s->meter.unit_set)
        p->unit = s->meter.unit == PFI_OU_SAMPLES ? "samples/s" : "tokens/s";
    if (s->c->progress)
        s->c->progress(s->c->progress_ctx, p);
}

/* Measures one level; fills *lv and *steady.  Telemetry rows stay in the sampler. */
static int measure_level(sweep_state *s, pfi_sampler *smp, int li, int nl, double cap_w,
                         double t_sweep0, pfi_level *lv, int *steady, pfi_err *err)
{
    const pfi_sweep_cfg *c = s->c;
    pfi_backend *b = s->b;
    double t_change = pfi_hw_now(b);
    double win_start = t_change + c->steady.settle_s;
    if (s->last_obs_t < t_change && li == 0)
        s->last_obs_t = t_change;
    pfi_meter_clear(&s->meter);
    pfi_sampler_reset(smp);
    pfi_window_stats st = {.mean = NAN, .lo = NAN, .hi = NAN};
    *steady = 0;
    double last_report = -INFINITY;
    for (;;) {
        double now = pfi_hw_now(b);
        int rc = s->src->wait(s->src, b, now + c->tick_s, on_obs, s, err);
        now = pfi_hw_now(b);
        pfi_sampler_tick(smp);
        if (rc != PFI_OK)
            return rc;
        if (s->obs_err.code != PFI_OK)
            return pfi_err_set(err, s->obs_err.code, "%s", s->obs_err.msg);
        if (c->stop && *c->stop)
            return pfi_err_set(err, PFI_ESTATE, "interrupted by a signal");
        if (s->meter.unit_set && s->meter.unit == PFI_OU_STEPS)
            return pfi_err_set(err, PFI_EINVAL,
                               "the log reports steps only; pass --tokens-per-step N (or "
                               "--seq-len with --batch-size) to turn steps into tokens");
        /* A log is written in real time: its silence is also timed on the wall clock, so a
         * backend clock that stalls cannot keep the sweep waiting. */
        double wall_quiet = pfi_clock_mono() - s->last_obs_wall;
        if (now - s->last_obs_t > c->timeout_s || (s->src->parser && wall_quiet > c->timeout_s)) {
            long lines = 0, matched = 0;
            if (s->src->parser)
                pfi_parser_stats(s->src->parser, &lines, &matched);
            if (s->src->path && lines == 0)
                return pfi_err_set(err, PFI_ETIMEOUT,
                                   "the log %s had no new line for %.0f s: is the job running "
                                   "and writing to it?",
                                   s->src->path, c->timeout_s);
            if (s->src->path)
                return pfi_err_set(err, PFI_ETIMEOUT,
                                   "no throughput in the log %s for %.0f s (%ld new lines, %ld "
                                   "parsed as throughput); name the format with --log-format or "
                                   "give --throughput-regex",
                                   s->src->path, c->timeout_s, lines, matched);
            return pfi_err_set(err, PFI_ETIMEOUT,
                               "no throughput for %.0f s (%ld output lines seen, %ld parsed as "
                               "throughput); name the format with --log-format or give "
                               "--throughput-regex",
                               c->timeout_s, lines, matched);
        }
        int done = 0;
        if (c->dwell_s > 0) {
            if (now >= t_change + c->steady.settle_s + c->dwell_s) {
                pfi_meter_window(&s->meter, t_change + c->steady.settle_s, now, &st);
                done = 1;
            }
        } else {
            *steady = pfi_steady_check(&s->meter, &c->steady, now, &win_start, &st);
            if (*steady || now - t_change >= c->max_dwell_s)
                done = 1;
        }
        if (done) {
            if (!isfinite(st.mean)) {
                /* Max dwell with a window too short for statistics: use all after settle. */
                pfi_meter_window(&s->meter, t_change + c->steady.settle_s, now, &st);
            }
            if (!isfinite(st.mean))
                return pfi_err_set(err, PFI_ETIMEOUT,
                                   "no throughput measured at %.0f W within %.0f s", cap_w,
                                   now - t_change);
            break;
        }
        if (c->progress && now - last_report >= 1.0) {
            last_report = now;
            pfi_sweep_progress p = {.level = li, .n_levels = nl, .cap_w = cap_w,
                                    .level_elapsed_s = now - t_change,
                                    .elapsed_s = now - t_sweep0, .tput = st.mean,
                                    .power_w = pfi_sampler_last_power(smp)};
            p.rel_ci = isfinite(st.lo) ? 0.5 * (st.hi - st.lo) / st.mean : NAN;
            p.settling = now - t_change < c->steady.settle_s;
            double per = c->dwell_s > 0 ? c->steady.settle_s + c->dwell_s
                         : s->n_done   ? s->done_s / s->n_done
                                       : c->max_dwell_s;
            p.remaining_s = fmax(0, per - (now - t_change)) + per * (nl - li - 1);
            report(s, &p);
        }
    }
    s->done_s += pfi_hw_now(b) - t_change;
    s->n_done++;
    lv->tput = st.mean;
    lv->tput_lo = st.lo;
    lv->tput_hi = st.hi;
    lv->t_start_s = st.t0;
    lv->t_end_s = st.t1;
    return PFI_OK;
}

static int restore(pfi_backend *b, const pfi_sweep_cfg *c, pfi_journal *j, int journaled,
                   const double *orig, pfi_err *err)
{
    if (journaled)
        return pfi_journal_restore(j, b, NULL, err);
    pfi_apply_report rep;
    return apply_caps(b, c, orig, &rep, err);
}

/* One level: its caps set, its throughput measured, its telemetry averaged, then handed to
 * the sink and reported. */
/* Whether each GPU's limit stayed at its cap through the level's window [t0, t1]: changed by
 * another process (nvidia-smi -pl, a tool of the site's), the level was not measured at its
 * cap, and stored it would be a point of another curve.  Refused rather than stored. */
static int limits_held(const pfi_sample *smp, int nt, const pfi_sweep_cfg *c, const double *caps,
                       double t0, double t1, pfi_err *err)
{
    int ng = c->n_gpus;
    for (int t = 0; t < nt; t++)
        for (int g = 0; g < ng; g++) {
            const pfi_sample *x = &smp[(size_t)t * (size_t)ng + (size_t)g];
            if (x->t_s < t0 || x->t_s > t1 || !(x->have & PFI_F_LIMIT) ||
                fabs(x->limit_w - caps[g]) <= 1.0)
                continue;
            return pfi_err_set(err, PFI_ESTATE,
                               "GPU %d's power limit read %.0f W during its %.0f W level: "
                               "another process changed it (nvidia-smi -pl, a site tool): the "
                               "level is not stored, and nothing else may change these GPUs' "
                               "limits while they are swept",
                               c->gpus[g], x->limit_w, caps[g]);
        }
    return PFI_OK;
}

/* measure_level's "no throughput for N s" advises --log-format and --throughput-regex, for a
 * log pfi cannot read.  A job whose lines were read as throughput before it fell silent (61 of
 * 61) is stalled instead, and the advice was wrong: said so here.  An ETIMEOUT with no such
 * silence is a level's own ("no throughput measured at W"), left as it is. */
static void explain_silence(const sweep_state *s, double t0, pfi_err *err)
{
    const pfi_sweep_cfg *c = s->c;
    if (!err || s->n_obs == 0)
        return;
    double quiet = pfi_hw_now(s->b) - s->last_obs_t;
    double wall_quiet = pfi_clock_mono() - s->last_obs_wall;
    if (!(quiet > c->timeout_s || (s->src->parser && wall_quiet > c->timeout_s)))
        return;
    long lines = 0, matched = s->n_obs;
    if (s->src->parser)
        pfi_parser_stats(s->src->parser, &lines, &matched);
    if (s->src->path)
        pfi_err_set(err, PFI_ETIMEOUT,
                    "no new throughput in the log %s for %.0f s, after %ld lines read as "
                    "throughput (the last %.0f s into the sweep): is the job hung?",
                    s->src->path, c->timeout_s, matched, s->last_obs_t - t0);
    else
        pfi_err_set(err, PFI_ETIMEOUT,
                    "the job printed no throughput for %.0f s, after %ld lines read as "
                    "throughput (the last %.0f s into the sweep): is it hung?",
                    c->timeout_s, matched, s->last_obs_t - t0);
}

static int sweep_level(sweep_state *s, pfi_sampler *smp, int li, int nl, const double *caps,
                       double t0, pfi_sweep_result *res, pfi_err *err)
{
    const pfi_sweep_cfg *c = s->c;
    pfi_backend *b = s->b;
    double t_level = pfi_hw_now(b);
    if (li > 0 && c->restart && s->src->restart) {
        int rc = s->src->restart(s->src, err);
        if (rc != PFI_OK)
            return rc;
        pfi_meter_free(&s->meter);
        pfi_meter_init(&s->meter);
        s->last_obs_t = pfi_hw_now(b);
        s->last_obs_wall = pfi_clock_mono();
    }
    pfi_level lv;
    level_init(&lv);
    lv.began_s = t_level;
    double capsum = 0;
    for (int i = 0; i < c->n_gpus; i++)
        capsum += caps[i];
    lv.cap_w = capsum / c->n_gpus;
    int rc = set_caps(b, c, li, caps, &lv, err);
    if (rc != PFI_OK)
        return rc;
    int steady = 0;
    rc = measure_level(s, smp, li, nl, lv.cap_w, t0, &lv, &steady, err);
    if (rc == PFI_ETIMEOUT)
        explain_silence(s, t0, err);
    if (rc != PFI_OK)
        return rc;
    if (li == 0)
        res->run.unit = s->meter.unit == PFI_OU_SAMPLES ? PFI_SAMPLES_PER_S : PFI_TOKENS_PER_S;
    pfi_sample *rows = NULL;
    int nt = 0;
    rc = pfi_sampler_snapshot(smp, &rows, &nt, err);
    if (rc != PFI_OK)
        return rc;
    level_telemetry(rows, nt, c->n_gpus, lv.t_start_s, lv.t_end_s, &lv);
    if ((rc = limits_held(rows, nt, c, caps, lv.t_start_s, lv.t_end_s, err)) != PFI_OK) {
        free(rows);
        return rc;
    }
    lv.ended_s = pfi_hw_now(b);
    res->run.levels[res->run.n_levels] = lv;
    res->steady[res->run.n_levels] = steady;
    res->level_s[res->run.n_levels] = lv.ended_s - lv.began_s;
    res->run.n_levels++;
    if (c->sink.level)
        rc = c->sink.level(c->sink.ctx, &res->run, res->run.n_levels - 1, rows, nt, c->gpus,
                           c->n_gpus, err);
    free(rows);
    pfi_sweep_progress p = {.level = li, .n_levels = nl, .cap_w = lv.cap_w,
                            .elapsed_s = pfi_hw_now(b) - t0, .tput = lv.tput,
                            .power_w = lv.power_w, .done = 1, .steady = steady,
                            .level_elapsed_s = res->level_s[res->run.n_levels - 1]};
    p.rel_ci = isfinite(lv.tput_lo) ? 0.5 * (lv.tput_hi - lv.tput_lo) / lv.tput : NAN;
    report(s, &p);
    return rc;
}

/* What the source saw: lines and observations, and the log format it settled on. */
static void source_stats(pfi_tput_source *src, long n_obs, pfi_sweep_result *res)
{
    if (!src->parser) {
        res->observations = n_obs;
        return;
    }
    long lines = 0, matched = 0;
    pfi_parser_stats(src->parser, &lines, &matched);
    res->lines = lines;
    res->observations = matched;
    pfi_log_format f = pfi_parser_format(src->parser);
    snprintf(res->format, sizeof res->format, "%s",
             f == PFI_LOG_AUTO ? "" : pfi_log_format_name(f));
}

int pfi_sweep_run(pfi_backend *b, pfi_tput_source *src, const pfi_sweep_cfg *c,
                  pfi_sweep_result *res, pfi_err *err)
{
    memset(res, 0, sizeof *res);
    snprintf(res->status, sizeof res->status, "failed");
    fill_header(b, c, &res->run);
    res->restored = 1; /* nothing is changed before the journal is written */
    double (*plan)[PFI_MAX_GPUS] = malloc(sizeof(double[PFI_MAX_LEVELS][PFI_MAX_GPUS]));
    if (!plan)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    int nl = 0;
    int rc = pfi_sweep_plan(b, c, plan, &nl, NULL, err);
    if (rc != PFI_OK) {
        free(plan);
        return rc;
    }
    /* The originals: journaled durably before the first change when a path is given. */
    pfi_journal j = {.lock_fd = -1};
    int journaled = 0;
    double orig[PFI_MAX_GPUS];
    for (int i = 0; i < c->n_gpus; i++) {
        pfi_device d;
        rc = pfi_hw_info(b, c->gpus[i], &d, err);
        if (rc != PFI_OK) {
            free(plan);
            return pfi_err_prefix(err, "GPU %d: ", c->gpus[i]);
        }
        orig[i] = d.limit_w;
    }
    if (c->journal_path) {
        rc = pfi_journal_begin(&j, c->journal_path, b, c->gpus, c->n_gpus, err);
        if (rc != PFI_OK) {
            free(plan);
            return rc;
        }
        journaled = 1;
    }
    pfi_sampler *smp = NULL;
    rc = pfi_sampler_new(b, c->gpus, c->n_gpus, c->tick_s, c->threaded_sampler, &smp, err);
    sweep_state s = {.b = b, .c = c, .src = src, .last_obs_t = -INFINITY};
    pfi_meter_init(&s.meter);
    double t0 = pfi_hw_now(b);
    s.last_obs_t = t0;
    s.last_obs_wall = pfi_clock_mono();
    src->interrupt = c->stop;
    if (rc == PFI_OK && c->sink.begin)
        rc = c->sink.begin(c->sink.ctx, &res->run, err);
    if (rc == PFI_OK && journaled && c->sink.run_ref) {
        const char *db = NULL;
        long long id = c->sink.run_ref(c->sink.ctx, &db);
        if (id > 0 && db)
            rc = pfi_journal_set_run(&j, db, id, err);
    }
    for (int li = 0; rc == PFI_OK && li < nl; li++)
        rc = sweep_level(&s, smp, li, nl, plan[li], t0, res, err);
    int status_rc = rc;
    if (rc == PFI_OK)
        snprintf(res->status, sizeof res->status, "done");
    else if (rc == PFI_ESTATE)
        snprintf(res->status, sizeof res->status, "interrupted");
    /* Restore first: stopping the job may take seconds, the limits must not wait for it. */
    pfi_err rerr = {0};
    int rrc = restore(b, c, &j, journaled, orig, &rerr);
    res->restored = rrc == PFI_OK;
    if (journaled)
        pfi_journal_close(&j);
    if (rrc != PFI_OK) {
        if (status_rc == PFI_OK) {
            *err = rerr;
            status_rc = rrc;
            snprintf(res->status, sizeof res->status, "failed");
        } else {
            /* Copied first: the message is formatted into the buffer it quotes. */
            char first[sizeof err->msg];
            snprintf(first, sizeof first, "%s", err->msg);
            pfi_err_set(err, status_rc, "%s; and restoring the limits failed too: %s", first,
                        rerr.msg);
        }
    }
    if (smp) {
        res->telemetry_errors =
            pfi_sampler_errors(smp, res->telemetry_error, sizeof res->telemetry_error);
        pfi_sampler_free(smp);
    }
    if (src->stop)
        src->stop(src);
    source_stats(src, s.n_obs, res);
    if (c->sink.end)
        c->sink.end(c->sink.ctx, &res->run, res->status);
    pfi_meter_free(&s.meter);
    free(plan);
    return status_rc;
}
