/* SPDX-License-Identifier: Apache-2.0 */
/* probe.c: short, bounded probes that refine a job's curve, only where whoever registered the
 * job allowed them ("probe": true or {"depth", "duration_s"}).
 *
 * A probe holds the job at pfi_probe_cap(P0, depth) (core/probe.h) for duration_s, never
 * above the cap the budget gives it, so a probe only ever gives power back and cannot break
 * the budget.  It starts once the job's baseline is known: mean power over at least
 * SRV_MIN_BASELINE samples at the default limit, and tokens/s (registered, or reported while
 * uncapped).  After the first third (the transient), the job's mean power and the tokens/s it
 * reports are averaged; at the end r = 1 - P/P0 and s = 1 - T/T0 give the curve: read through
 * the shape of the nearest measured curves of a probe library when one is configured (the
 * estimate `pfi evaluate --probes 1` scores, docs/allocation.md), else a power law through
 * the probe (pfi_probe_fit, prior exponent).  A probe without a throughput report, or on a
 * job that stopped being planned locally, fails and says why; the job then keeps its curve. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/cost.h"
#include "core/probe.h"
#include "serve/serve_int.h"
#include "sim/sim.h"
#include "study/experiment.h"
#include "study/runset.h"
#include "util/json.h"

/* "NVIDIA H200", "H200-SXM" and "h200" are one GPU model; names pfi does not model compare as
 * written. */
static void gpu_key(const char *name, char *out, size_t cap)
{
    const pfi_gpu_model *m = pfi_gpu_model_find(name);
    snprintf(out, cap, "%s", m ? m->name : name);
}

int pfi_srv_library_load(const char *what, srv_library *lib, pfi_err *err)
{
    memset(lib, 0, sizeof *lib);
    if (!what || !*what)
        return PFI_OK;
    int pub = strcmp(what, "public") == 0;
    pfi_runset rs;
    int rc = pfi_runset_load(pub ? NULL : what, pub, NULL, 0, "set probe_library public",
                             &rs, err);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "probe_library %s: ", what);
    lib->curve = malloc(sizeof *lib->curve * (size_t)(rs.n ? rs.n : 1));
    lib->gpu = malloc(sizeof *lib->gpu * (size_t)(rs.n ? rs.n : 1));
    if (!lib->curve || !lib->gpu) {
        pfi_runset_free(&rs);
        pfi_srv_library_free(lib);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    for (int i = 0; i < rs.n; i++) {
        pfi_err e2 = {0};
        if (pfi_curve_from_run(&rs.runs[i], -1, &lib->curve[lib->n], &e2) != PFI_OK)
            continue; /* too few levels to be a curve */
        gpu_key(rs.runs[i].gpu_type, lib->gpu[lib->n], sizeof lib->gpu[0]);
        lib->n++;
    }
    snprintf(lib->where, sizeof lib->where, "%s", rs.where);
    pfi_runset_free(&rs);
    if (lib->n < 2) {
        int n = lib->n;
        pfi_srv_library_free(lib);
        return pfi_err_set(err, PFI_EINVAL,
                           "probe_library %s: %d run(s) with a usable curve; a probe is read "
                           "through the nearest of several (characterize some with pfi sweep)",
                           what, n);
    }
    return PFI_OK;
}

void pfi_srv_library_free(srv_library *lib)
{
    free(lib->curve);
    free(lib->gpu);
    memset(lib, 0, sizeof *lib);
}

/* Job j's whole curve from its probe read through the library's shape, with the setting
 * `pfi evaluate` uses (study/experiment.h): references of the same GPU model and single- or
 * multi-GPU kind first. */
static int shape_curve(const srv_node *n, const srv_job *j, double P, double lo, double hi,
                       double cap0, pfi_curve *out, pfi_err *err)
{
    const srv_library *lib = &n->lib;
    unsigned char *use = malloc((size_t)lib->n);
    if (!use)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    char mine[32];
    gpu_key(n->gpu[j->gpus[0]].dev.name, mine, sizeof mine);
    const pfi_expt_shape_set *st = &pfi_expt_shape_default;
    for (int k = 0; k < lib->n; k++) {
        int same_gpu = strcasecmp(lib->gpu[k], mine) == 0;
        int same_kind = (lib->curve[k].n_gpus > 1) == (j->n_gpus > 1);
        use[k] = (unsigned char)(1 + same_gpu + (st->tier_gpus && same_gpu && same_kind));
    }
    /* rel from the slowdown as finish() clamped it: faster at less power is noise */
    pfi_probe_obs o = {.t0 = j->t0_tps, .p0_w = j->base.power_w, .cap0_w = cap0,
                       .min_cap_w = lo, .max_cap_w = hi, .n_gpus = j->n_gpus,
                       .cap_w = j->probe.cap_w, .draw_w = P, .rel = 1 - j->probe.s};
    pfi_probe_shape_opts so = {st->k,     PFI_PROBE_SPACE_MAXCAP, st->w_draw,
                               st->votes, st->scale,             st->w_p0, 0};
    int rc = pfi_probe_shape_curve(&o, lib->curve, use, lib->n, &so, out, err);
    free(use);
    return rc;
}

/* PFI30 of a curve without a parametric view: the slowdown at 30% of the baseline draw shed. */
static double curve_pfi30(const pfi_curve *c)
{
    double r[PFI_CURVE_MAX_PTS + 1], s[PFI_CURVE_MAX_PTS + 1];
    int m = pfi_curve_points(c, r, s, PFI_CURVE_MAX_PTS + 1);
    if (m < 2 || r[0] > 0.3 || r[m - 1] < 0.3)
        return NAN;
    return pfi_lerp_sorted(r, s, m, 0.3) / 0.3;
}

int pfi_srv_probe_parse(json_t *v, srv_probe *p, pfi_err *err)
{
    memset(p, 0, sizeof *p);
    p->state = SRV_PROBE_OFF;
    if (!v || json_is_false(v) || json_is_null(v))
        return PFI_OK;
    p->depth = PFI_PROBE_DEPTH;
    p->duration_s = 60;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            double d = pfi_json_num_or_nan(x);
            if (!strcmp(k, "depth")) {
                if (!(d >= 0.05 && d <= 0.5))
                    return pfi_err_set(err, PFI_EINVAL, "probe.depth: expected 0.05 to 0.5");
                p->depth = d;
            } else if (!strcmp(k, "duration_s")) {
                if (!(d >= 0.1 && d <= SRV_PROBE_MAX_S))
                    return pfi_err_set(err, PFI_EINVAL, "probe.duration_s: expected 0.1 to %g",
                                       SRV_PROBE_MAX_S);
                p->duration_s = d;
            } else {
                return pfi_err_set(err, PFI_EINVAL,
                                   "probe: unknown field '%s' (known: depth, duration_s)", k);
            }
        }
    } else if (!json_is_true(v)) {
        return pfi_err_set(err, PFI_EINVAL,
                           "probe: expected true, false or {\"depth\", \"duration_s\"}");
    }
    p->state = SRV_PROBE_WAITING;
    return PFI_OK;
}

void pfi_srv_probe_sample(srv_node *n, srv_job *j, double now)
{
    srv_probe *p = &j->probe;
    if (p->state != SRV_PROBE_RUNNING || now < p->t0 + p->duration_s / 3)
        return;
    double w = 0;
    for (int k = 0; k < j->n_gpus; k++) {
        const srv_gpu *g = &n->gpu[j->gpus[k]];
        if (!g->up || !(g->s.have & PFI_F_POWER))
            return;
        w += g->s.power_w;
    }
    p->pow_sum += w / j->n_gpus;
    p->pow_n++;
}

void pfi_srv_probe_tps(srv_job *j, double tps, double now)
{
    srv_probe *p = &j->probe;
    if (p->state == SRV_PROBE_RUNNING && now >= p->t0 + p->duration_s / 3) {
        p->tps_sum += tps;
        p->tps_n++;
    }
}

json_t *pfi_srv_probe_json(const srv_probe *p)
{
    static const char *st[] = {"off", "waiting", "running", "done", "failed"};
    json_t *o = json_pack("{s:s}", "state", st[p->state % 5]);
    if (p->state == SRV_PROBE_OFF)
        return o;
    json_object_set_new(o, "depth", json_real(p->depth));
    json_object_set_new(o, "duration_s", json_real(p->duration_s));
    if (p->state >= SRV_PROBE_RUNNING)
        json_object_set_new(o, "cap_w", json_real(p->cap_w));
    if (p->state == SRV_PROBE_DONE) {
        json_object_set_new(o, "r", json_real(p->r));
        json_object_set_new(o, "s", json_real(p->s));
    }
    if (p->state >= SRV_PROBE_DONE && isfinite(p->gpu_s)) {
        json_object_set_new(o, "held_s", json_real(p->held_s));
        json_object_set_new(o, "gpu_s", json_real(p->gpu_s));
        json_object_set_new(o, "lost", pfi_json_num(p->lost));
    }
    json_object_set_new(o, "message", pfi_json_str(p->msg));
    return o;
}

/* Under mu: the first waiting job ready to be probed, its probe armed; -1 when none. */
static int arm_one(srv_node *n, double now)
{
    for (int k = 0; k < n->n_jobs; k++) {
        srv_job *j = &n->jobs[k];
        srv_probe *p = &j->probe;
        if (p->state != SRV_PROBE_WAITING)
            continue;
        if (j->curve_src == SRV_CURVE_GIVEN || j->curve_src == SRV_CURVE_PFI) {
            p->state = SRV_PROBE_DONE;
            snprintf(p->msg, sizeof p->msg, "not needed: the job registered its curve");
            p->r = p->s = NAN;
            continue;
        }
        if (!(j->t0_tps > 0) || j->base.n < SRV_MIN_BASELINE || !(j->base.power_w > 0))
            continue; /* no baseline yet */
        double lo, hi;
        pfi_srv_job_cap_range(n->gpu, j, &lo, &hi);
        /* No deeper than the job's SLA: its curve is not known yet (that is what the probe is
         * for), and planned as throughput in proportion to power a cap that sheds more than
         * the SLA allows fits no plan: every budget change and grid event was refused for the
         * probe's whole length.  A curve no steeper than that (PFI <= 1) keeps the SLA there. */
        double depth = p->depth;
        if (j->sla >= 0 && j->sla < depth)
            depth = j->sla;
        double cap = pfi_probe_cap(j->base.power_w, depth, lo, hi);
        if (depth < p->depth) /* a watt above the SLA's floor: the plan's grid is whole watts */
            cap = fmin(ceil(cap) + 1, hi);
        if (isfinite(j->cap_w) && j->cap_w < cap)
            cap = j->cap_w; /* already cut deeper by the budget: measure where it is */
        p->cap_w = cap;
        p->t0 = now;
        p->t1 = now + p->duration_s;
        p->pow_sum = p->tps_sum = 0;
        p->pow_n = p->tps_n = 0;
        p->held_s = p->gpu_s = p->lost = NAN;
        p->state = SRV_PROBE_RUNNING;
        p->msg[0] = '\0';
        if (depth < p->depth)
            snprintf(p->msg, sizeof p->msg, "%.0f%% deep, the job's SLA (%.0f%% asked)",
                     100 * depth, 100 * p->depth);
        return k;
    }
    return -1;
}

/* Under mu, as a probe ends (done, failed or stopped): what it cost, whatever it learned.  The
 * GPU-seconds are always known; the tokens lost only when the job reported its rate during the
 * probe (NAN otherwise). */
static void record_cost(srv_job *j, double now)
{
    srv_probe *p = &j->probe;
    double T = p->tps_n > 0 ? p->tps_sum / p->tps_n : NAN;
    double held = now - p->t0;
    pfi_cost cost;
    if (pfi_cost_levels(&held, &p->cap_w, &T, 1, j->n_gpus, j->t0_tps, &cost, NULL) != PFI_OK)
        return;
    p->held_s = held;
    p->gpu_s = cost.gpu_s_total;
    p->lost = cost.lost_total;
}

/* Under mu: turns a finished probe's averages into the job's curve. */
static void finish(srv_node *n, srv_job *j)
{
    srv_probe *p = &j->probe;
    p->state = SRV_PROBE_FAILED;
    record_cost(j, pfi_clock_mono());
    if (p->tps_n == 0 || p->pow_n == 0) {
        snprintf(p->msg, sizeof p->msg,
                 "no %s during the probe: nothing learned (the job must POST its tokens/s)",
                 p->tps_n == 0 ? "throughput report" : "power reading");
        return;
    }
    double P = p->pow_sum / p->pow_n, T = p->tps_sum / p->tps_n;
    p->r = 1 - P / j->base.power_w;
    p->s = 1 - T / j->t0_tps;
    if (!(p->r > 0.01)) {
        snprintf(p->msg, sizeof p->msg,
                 "the job drew %.0f W at a %.0f W cap, no less than its %.0f W baseline: "
                 "nothing shed to measure",
                 P, p->cap_w, j->base.power_w);
        return;
    }
    /* A reading no cap makes is not the cap's (a rate over a stall, a checkpoint or an eval
     * pass; a baseline taken in a slow phase): taken, a job 30% faster under the cap got a
     * curve flat to the GPUs' minimum and was put there, one that stalled was protected as if
     * any cap stopped it.  The bounds are wide of every public sweep's levels at a shed over
     * 20% (slowdown -0.024 to 1.71 times the shed). */
    if (p->s < -SRV_PROBE_FASTER_MAX || p->s > SRV_PROBE_LOSS_MAX ||
        p->s > SRV_PROBE_RATIO_MAX * p->r) {
        snprintf(p->msg, sizeof p->msg,
                 "%.1f%% power shed with %.1f%% %s throughput is not what a cap does (a stall, "
                 "a checkpoint or an eval pass during the probe, or a baseline from a slow "
                 "phase?): nothing learned, the curve stays as it was",
                 100 * p->r, 100 * fabs(p->s), p->s < 0 ? "more" : "less");
        return;
    }
    if (p->s < 0)
        p->s = 0; /* faster at less power, within noise: read as no loss */
    pfi_fit fit;
    pfi_err e = {0};
    pfi_curve c;
    double lo, hi, cap0 = INFINITY;
    pfi_srv_job_cap_range(n->gpu, j, &lo, &hi);
    for (int k = 0; k < j->n_gpus; k++)
        if (n->gpu[j->gpus[k]].dev.default_limit_w < cap0)
            cap0 = n->gpu[j->gpus[k]].dev.default_limit_w;
    const char *how = "a power law through it";
    if (n->lib.n >= 2) {
        if (shape_curve(n, j, P, lo, hi, cap0, &c, &e) != PFI_OK) {
            snprintf(p->msg, sizeof p->msg, "shape estimate failed: %s", e.msg);
            return;
        }
        how = "the shape of the nearest library curves";
    } else if (pfi_probe_fit(&p->r, &p->s, 1, PFI_PROBE_B_PRIOR, &fit, &e) != PFI_OK ||
               pfi_curve_from_fit(&fit, j->t0_tps, j->base.power_w, cap0, lo, hi, j->n_gpus,
                                  p->r > 0.3 ? p->r : 0.3, &c, &e) != PFI_OK) {
        snprintf(p->msg, sizeof p->msg, "fit failed: %s", e.msg);
        return;
    }
    j->curve = c;
    j->curve_src = SRV_CURVE_PROBED;
    j->pfi30 = n->lib.n >= 2 ? curve_pfi30(&c) : pfi_fit_s(&c.fit, 0.3) / 0.3;
    p->state = SRV_PROBE_DONE;
    snprintf(p->msg, sizeof p->msg,
             "%.1f%% power shed cost %.1f%% throughput (%d power samples, %d reports); "
             "curve: %s",
             100 * p->r, 100 * p->s, p->pow_n, p->tps_n, how);
}

void pfi_srv_probe_tick(srv_node *n)
{
    double now = pfi_clock_mono();
    pthread_mutex_lock(&n->decide_mu);
    pthread_mutex_lock(&n->mu);
    int local = n->mode == SRV_MODE_LOCAL && !n->ramping;
    int ended = -1, started = -1;
    for (int k = 0; k < n->n_jobs && ended < 0; k++) {
        srv_probe *p = &n->jobs[k].probe;
        if (p->state != SRV_PROBE_RUNNING)
            continue;
        if (!local) {
            p->state = SRV_PROBE_FAILED;
            record_cost(&n->jobs[k], now);
            snprintf(p->msg, sizeof p->msg, "stopped: the node left local control");
            ended = k;
        } else if (now >= p->t1) {
            finish(n, &n->jobs[k]);
            ended = k;
        }
    }
    if (ended < 0 && local)
        started = arm_one(n, now);
    char id[SRV_ID_MAX], msg[sizeof n->jobs[0].probe.msg] = "";
    int k = ended >= 0 ? ended : started;
    if (k >= 0) {
        snprintf(id, sizeof id, "%s", n->jobs[k].id);
        snprintf(msg, sizeof msg, "%s", n->jobs[k].probe.msg);
    }
    double cap = k >= 0 ? n->jobs[k].probe.cap_w : NAN;
    int done = k >= 0 && n->jobs[k].probe.state == SRV_PROBE_DONE;
    pthread_mutex_unlock(&n->mu);
    if (k >= 0) {
        pfi_err e = {0};
        char reason[128];
        snprintf(reason, sizeof reason, "probe of job %s %s", id,
                 ended >= 0 ? "ended" : "started");
        pfi_srv_snapshot(n);
        int rc = pfi_srv_decide_now(n, reason, &e);
        if (rc != PFI_OK && ended < 0) {
            /* The plan cannot hold the probe's cap (a budget, an event, SLAs): the probe yields,
             * not the budget.  It was reported as started and charged while never applied. */
            pthread_mutex_lock(&n->mu);
            srv_probe *p = &n->jobs[k].probe;
            p->state = SRV_PROBE_FAILED;
            p->held_s = p->gpu_s = 0;
            p->lost = NAN;
            snprintf(p->msg, sizeof p->msg, "not run: no plan holds its cap of %.0f W", cap);
            pthread_mutex_unlock(&n->mu);
            pfi_srv_event_add(n, "probe", "job %s: probe at %.0f W not run: no plan holds it "
                              "(%s)", id, cap, e.msg);
            pfi_err_clear(&e);
            pfi_srv_snapshot(n);
            if (pfi_srv_decide_now(n, "probe not run", &e) != PFI_OK)
                pfi_srv_event_add(n, "probe", "job %s: probe not run: %s", id, e.msg);
        } else if (rc != PFI_OK) {
            pfi_srv_event_add(n, "probe", "job %s: %s: %s", id, reason, e.msg);
        }
        if (ended >= 0)
            pfi_srv_event_add(n, "probe", "job %s: probe %s: %s", id, done ? "done" : "failed", msg);
        else if (rc == PFI_OK)
            pfi_srv_event_add(n, "probe", "job %s: probe at %.0f W started%s%s", id, cap,
                              msg[0] ? ", " : "", msg);
    }
    pthread_mutex_unlock(&n->decide_mu);
}
