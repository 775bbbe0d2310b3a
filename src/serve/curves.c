/* SPDX-License-Identifier: Apache-2.0 */
/* curves.c: a job's curve as registered through the API (spelled as store/codec.h reads and
 * writes it), and the curves of jobs that registered none (predicted online from their baseline
 * telemetry by core/predict.h).
 *
 * A client may register, per job, either
 *   "curve": {"points": [{"cap_w": 700, "tokens_per_s": 9000, "draw_w": 640}, ...]}
 *            (measured levels: per-GPU cap, whole-job throughput or "rel" = T/T0, optional mean
 *            per-GPU draw; the level at the GPUs' default limit is the baseline), or
 *   "curve": {"fit": {"family": "power", "p": [a, b]}, "p0_w": 640, "t0": 9000}, or
 *   "pfi30": 0.42  (a PFI measured elsewhere; the curve is s = k r^2 through it).
 * GET /v1/jobs returns the curve in use with the same field names (docs/api.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pfi.h"
#include "core/predict.h"
#include "serve/serve_int.h"
#include "store/codec.h"

static int from_points(const srv_gpu *g, const srv_job *j, const pfi_curve_json *cv,
                       double t0_given, pfi_curve *out, int *absolute, pfi_err *err)
{
    *absolute = 1;
    size_t np = cv->n_points;
    if (np < 3 || np > PFI_MAX_LEVELS)
        return pfi_err_set(err, PFI_EINVAL,
                           "curve.points: need 3 to %d levels (the baseline and at least 2 "
                           "lower caps), got %zu",
                           PFI_MAX_LEVELS, np);
    static const pfi_run zero;
    pfi_run run = zero;
    double lo, hi;
    pfi_srv_job_cap_range(g, j, &lo, &hi);
    snprintf(run.name, sizeof run.name, "job %s", j->id);
    snprintf(run.source, sizeof run.source, "serve");
    run.n_gpus = j->n_gpus;
    run.min_limit_w = lo;
    run.max_limit_w = hi;
    run.default_limit_w = INFINITY;
    for (int k = 0; k < j->n_gpus; k++) {
        double d = g[j->gpus[k]].dev.default_limit_w;
        if (d < run.default_limit_w)
            run.default_limit_w = d;
    }
    for (size_t i = 0; i < np; i++) {
        pfi_curve_json_point p;
        pfi_curve_json_point_at(cv, i, &p);
        pfi_level *lv = &run.levels[run.n_levels++];
        memset(lv, 0, sizeof *lv);
        double cap = p.cap_w, tput = p.tokens_per_s, rel = p.rel, draw = p.draw_w;
        if (!(cap > 0 && cap <= SRV_MAX_CAP_W) || !(isfinite(tput) || isfinite(rel)) ||
            !(isnan(draw) || (draw >= 0 && draw <= SRV_MAX_CAP_W)))
            return pfi_err_set(err, PFI_EINVAL,
                               "curve.points[%zu]: needs cap_w in (0, %g] and tokens_per_s or "
                               "rel (draw_w, if given, in [0, %g])",
                               i, SRV_MAX_CAP_W, SRV_MAX_CAP_W);
        if (isfinite(tput) && (tput < 0 || tput > SRV_MAX_TPS))
            return pfi_err_set(err, PFI_EINVAL, "curve.points[%zu]: tokens_per_s must be in "
                                                "[0, %g]",
                               i, SRV_MAX_TPS);
        if (isfinite(rel) && (rel < 0 || rel > 2))
            return pfi_err_set(err, PFI_EINVAL, "curve.points[%zu]: rel must be in [0, 2]", i);
        /* A cap the job's GPUs cannot hold is no level of theirs (900 W on a 700 W GPU made the
         * curve's baseline), and a cap given twice leaves the curve two values there. */
        if (cap < lo - 0.5 || cap > hi + 0.5)
            return pfi_err_set(err, PFI_EINVAL, "curve.points[%zu]: cap %g W is outside the job's "
                               "GPUs' range %.0f-%.0f W", i, cap, lo, hi);
        for (size_t k = 0; k < i; k++)
            if (fabs(run.levels[k].cap_w - cap) < 0.5)
                return pfi_err_set(err, PFI_EINVAL, "curve.points[%zu]: cap %g W is given twice "
                                   "(points[%zu])", i, cap, k);
        lv->cap_w = cap;
        lv->enforced_w = NAN;
        /* Without a measured draw, a job is taken to draw its whole cap. */
        lv->power_w = draw > 0 ? draw : cap;
        lv->tput = isfinite(tput) ? tput : rel * (t0_given > 0 ? t0_given : j->n_gpus);
        if (!isfinite(tput) && !(t0_given > 0))
            *absolute = 0;
        lv->tput_lo = lv->tput_hi = NAN;
        lv->sm_clock_mhz = lv->powercap_frac = lv->gpu_util = lv->sm_active = NAN;
        lv->tensor_active = lv->dram_active = lv->nvlink_mibs = lv->pcie_mibs = NAN;
        lv->t_start_s = lv->t_end_s = NAN;
        lv->began_s = lv->ended_s = NAN;
    }
    int rc = pfi_curve_from_run(&run, -1, out, err);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "curve: ");
    return PFI_OK;
}

/* Each key of o is one of keys and, where it is one of nums, a number (or null, as a GET writes
 * an unknown one); what the codec cannot read it would drop, so it is refused, naming where.
 * (jobs.c's pfi_srv_only_keys calls into this file: its loop is not shared.) */
static int only_numbers(json_t *o, const char *const *keys, const char *const *nums,
                        const char *where, pfi_err *err)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        int i = 0;
        while (keys[i] && strcmp(k, keys[i]))
            i++;
        if (!keys[i]) {
            char list[160] = "";
            size_t at = 0;
            for (i = 0; keys[i] && at < sizeof list; i++)
                at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "",
                                       keys[i]);
            return pfi_err_set(err, PFI_EINVAL, "%s: unknown field '%s' (known: %s)", where, k,
                               list);
        }
    }
    for (int i = 0; nums[i]; i++) {
        json_t *x = json_object_get(o, nums[i]);
        if (x && !json_is_number(x) && !json_is_null(x))
            return pfi_err_set(err, PFI_EINVAL, "%s.%s: expected a number", where, nums[i]);
    }
    return PFI_OK;
}

/* The curve's fields are checked as the job's are: a misspelt one ("draw" for "draw_w": the job
 * was taken to draw its whole cap; "to" for "t0") was dropped without a word.  The fields a GET
 * shows of the curve in use are known, so that curve can be registered again. */
static int check_curve_fields(json_t *curve, pfi_err *err)
{
    static const char *const keys[] = {"points", "fit", "t0", "p0_w", "r_max", "cap0_w",
                                       "min_cap_w", "max_cap_w", "n_gpus", NULL};
    static const char *const fit_keys[] = {"family", "p", NULL};
    static const char *const point_keys[] = {"cap_w", "tokens_per_s", "rel", "draw_w", NULL};
    if (!json_is_object(curve))
        return PFI_OK; /* said below */
    if (only_numbers(curve, keys, keys + 2, "curve", err) != PFI_OK)
        return err->code;
    json_t *fit = json_object_get(curve, "fit");
    if (json_is_object(fit) && only_numbers(fit, fit_keys, fit_keys + 2, "curve.fit", err) != PFI_OK)
        return err->code;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(curve, "points"), i, p)
    {
        char where[48];
        snprintf(where, sizeof where, "curve.points[%zu]", i);
        if (json_is_object(p) && only_numbers(p, point_keys, point_keys, where, err) != PFI_OK)
            return err->code;
    }
    return PFI_OK;
}

int pfi_srv_curve_from_json(const srv_gpu *g, const srv_job *j, json_t *curve, json_t *pfi30,
                        pfi_curve *out, int *src, double *abs_t0, pfi_err *err)
{
    *abs_t0 = NAN;
    double lo, hi, cap0 = INFINITY;
    pfi_srv_job_cap_range(g, j, &lo, &hi);
    for (int k = 0; k < j->n_gpus; k++)
        if (g[j->gpus[k]].dev.default_limit_w < cap0)
            cap0 = g[j->gpus[k]].dev.default_limit_w;
    double t0 = isfinite(j->t0_tps) ? j->t0_tps : (double)j->n_gpus;
    *src = SRV_CURVE_NONE;
    if (curve && !json_is_null(curve) && pfi30 && !json_is_null(pfi30))
        return pfi_err_set(err, PFI_EINVAL, "give either curve or pfi30, not both");
    if (pfi30 && !json_is_null(pfi30)) {
        double v = json_is_number(pfi30) ? json_number_value(pfi30) : NAN;
        if (!(v >= 0 && v <= 5))
            return pfi_err_set(err, PFI_EINVAL, "pfi30: expected a number in [0, 5]");
        /* One number fixes one point; the quadratic shape through it is the convex middle of
         * the families pfi fits (docs/serve.md). */
        pfi_fit fit = {.family = PFI_FAM_POWER, .p = {v / 0.3, 2.0, 0}, .rmse = NAN};
        int rc = pfi_curve_from_fit(&fit, t0, cap0, cap0, lo, hi, j->n_gpus, 0.5, out, err);
        if (rc != PFI_OK)
            return pfi_err_prefix(err, "pfi30: ");
        *src = SRV_CURVE_PFI;
        return PFI_OK;
    }
    if (!curve || json_is_null(curve))
        return PFI_OK;
    if (check_curve_fields(curve, err) != PFI_OK)
        return err->code;
    pfi_curve_json cv;
    pfi_curve_json_read(curve, &cv);
    if (!cv.is_object)
        return pfi_err_set(err, PFI_EINVAL, "curve: expected an object");
    double tg = cv.t0;
    if (cv.n_points > 0) {
        int absolute;
        int rc = from_points(g, j, &cv, tg, out, &absolute, err);
        if (rc != PFI_OK)
            return rc;
        if (absolute)
            *abs_t0 = out->t0;
        *src = SRV_CURVE_GIVEN;
        return PFI_OK;
    }
    pfi_fit f;
    int rc = pfi_curve_json_fit(&cv, &f, err);
    if (rc != PFI_OK)
        return rc;
    for (int k = 0; k < pfi_family_params(f.family) && k < 3; k++)
        if (!(fabs(f.p[k]) <= SRV_MAX_FIT_P))
            return pfi_err_set(err, PFI_EINVAL, "curve.fit.p[%d]: expected a number from -%g "
                                                "to %g",
                               k, SRV_MAX_FIT_P, SRV_MAX_FIT_P);
    double p0 = cv.p0_w;
    if (isnan(p0))
        p0 = cap0;
    if (!(p0 > 0 && p0 <= SRV_MAX_CAP_W))
        return pfi_err_set(err, PFI_EINVAL, "curve.p0_w: must be in (0, %g]", SRV_MAX_CAP_W);
    double rmax = cv.r_max;
    if (!(isnan(tg) || fabs(tg) <= SRV_MAX_TPS) || !(isnan(rmax) || fabs(rmax) <= 1e3))
        return pfi_err_set(err, PFI_EINVAL, "curve: t0 must be at most %g tokens/s and r_max "
                                            "at most 1000",
                           SRV_MAX_TPS);
    rc = pfi_curve_from_fit(&f, tg > 0 ? tg : t0, p0, cap0, lo, hi, j->n_gpus,
                            rmax > 0 ? rmax : 0.5, out, err);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "curve: ");
    if (tg > 0)
        *abs_t0 = tg;
    *src = SRV_CURVE_GIVEN;
    return PFI_OK;
}

/* The header and baseline level the predictor reads, from what the daemon measured. */
static void live_level(const srv_gpu *g, const srv_job *j, pfi_run *hdr, pfi_level *lv)
{
    memset(hdr, 0, sizeof *hdr);
    memset(lv, 0, sizeof *lv);
    const pfi_device *d = &g[j->gpus[0]].dev;
    /* NVML names read "NVIDIA H200"; the predictor's GPU types drop the vendor. */
    const char *name = strncmp(d->name, "NVIDIA ", 7) == 0 ? d->name + 7 : d->name;
    snprintf(hdr->gpu_type, sizeof hdr->gpu_type, "%s", name);
    snprintf(hdr->name, sizeof hdr->name, "job %s", j->id);
    hdr->n_gpus = j->n_gpus;
    pfi_srv_job_cap_range(g, j, &hdr->min_limit_w, &hdr->max_limit_w);
    hdr->default_limit_w = d->default_limit_w;
    hdr->meta.moe = hdr->meta.finetune = -1;
    hdr->meta.params_b = NAN;
    lv->cap_w = d->default_limit_w;
    lv->enforced_w = NAN;
    lv->power_w = j->base.power_w;
    lv->tput = isfinite(j->t0_tps) ? j->t0_tps : (double)j->n_gpus;
    lv->tput_lo = lv->tput_hi = NAN;
    lv->sm_clock_mhz = j->base.sm_clock_mhz;
    lv->powercap_frac = j->base.powercap;
    lv->gpu_util = j->base.gpu_util;
    lv->sm_active = j->base.sm_active;
    lv->tensor_active = j->base.tensor_active;
    lv->dram_active = j->base.dram_active;
    lv->nvlink_mibs = j->base.nvlink_mibs;
    lv->pcie_mibs = j->base.pcie_mibs;
    lv->t_start_s = lv->t_end_s = NAN;
    lv->began_s = lv->ended_s = NAN;
    lv->n_samples = j->base.n;
}

/* A job's prediction outside what the model was trained on (a GPU type it never saw, a
 * feature beyond its range), into msg once per job ("" otherwise): the daemon predicts every
 * few seconds, and a model trained on H200s predicted an A100 job's PFI30 0.26 (true 0.76). */
static void extrap_note(srv_node *n, srv_job *j, const pfi_run *hdr, const pfi_level *lv,
                        char *msg, size_t size)
{
    pfi_extrap x;
    msg[0] = '\0';
    if (j->extrap_told || pfi_model_extrapolation_level(n->model, hdr, lv, &x, NULL) != PFI_OK ||
        x.n == 0)
        return;
    j->extrap_told = 1;
    int k = snprintf(msg, size, "job %s: PFI30 %.3f predicted outside what the model was "
                                "trained on: ", j->id, j->pfi30);
    if (k > 0 && (size_t)k < size)
        pfi_extrap_line(&x, msg + k, size - (size_t)k);
}

#define EXTRAP_MSG 1024

void pfi_srv_predict_curves(srv_node *n)
{
    if (!n->model)
        return;
    pthread_mutex_lock(&n->decide_mu);
    pthread_mutex_lock(&n->mu);
    /* Logged once n->mu is let go: an event takes it.  Without the memory, a later pass tells. */
    char *msgs = calloc((size_t)(n->n_jobs ? n->n_jobs : 1), EXTRAP_MSG);
    int nmsg = 0;
    for (int k = 0; k < n->n_jobs; k++) {
        srv_job *j = &n->jobs[k];
        if (j->curve_src == SRV_CURVE_GIVEN || j->curve_src == SRV_CURVE_PFI ||
            j->curve_src == SRV_CURVE_OBSERVED || j->base.n < SRV_MIN_BASELINE)
            continue;
        pfi_run hdr;
        pfi_level lv;
        live_level(n->gpu, j, &hdr, &lv);
        pfi_curve c;
        pfi_err e = {0};
        if (pfi_model_predict_level(n->model, &hdr, &lv, &c, &e) != PFI_OK)
            continue;
        j->curve = c;
        j->curve_src = SRV_CURVE_PREDICTED;
        j->pfi30 = pfi_fit_s(&c.fit, 0.3) / 0.3;
        if (msgs) {
            extrap_note(n, j, &hdr, &lv, msgs + (size_t)nmsg * EXTRAP_MSG, EXTRAP_MSG);
            nmsg += msgs[(size_t)nmsg * EXTRAP_MSG] != '\0';
        }
    }
    pthread_mutex_unlock(&n->mu);
    for (int i = 0; i < nmsg; i++)
        pfi_srv_event_add(n, "prediction_extrapolated", "%s", msgs + (size_t)i * EXTRAP_MSG);
    free(msgs);
    pthread_mutex_unlock(&n->decide_mu);
}
