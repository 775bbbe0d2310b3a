/* SPDX-License-Identifier: Apache-2.0 */
/* jobs_runs.c: the runs of a store as the jobs of an allocation (jobs.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_curve.h"
#include "core/curve.h"
#include "store/jobs.h"
#include "store/store.h"

/* What the jobs draw under a cap, learned from every sweep of the store (alloc_curve.h). */
static void fit_draw(pfi_store *st, const pfi_run_summary *sum, int nr, pfi_run *run,
                     pfi_curve *cv, pfi_draw_model *dm)
{
    double *u = malloc(sizeof *u * (size_t)nr * PFI_MAX_LEVELS);
    double *d = malloc(sizeof *d * (size_t)nr * PFI_MAX_LEVELS);
    int k = 0;
    for (int i = 0; u && d && i < nr; i++) {
        pfi_err e2 = {0};
        if (pfi_store_load_run(st, sum[i].id, run, &e2) || pfi_curve_from_run(run, -1, cv, &e2))
            continue;
        for (int l = 0; l < cv->n; l++)
            if (cv->draw_w[l] > 0) {
                u[k] = cv->cap_w[l] / cv->p0_w;
                d[k++] = cv->draw_w[l] / cv->p0_w;
            }
    }
    pfi_draw_model_fit(u ? u : (double[1]){0}, d ? d : (double[1]){0}, u && d ? k : 0, dm);
    free(u);
    free(d);
}

static int keep(pfi_alloc_set *s, pfi_alloc_job *job, pfi_err *err)
{
    return pfi_alloc_set_keep_curve(s, job) ? pfi_err_set(err, PFI_ENOMEM, "out of memory")
                                            : PFI_OK;
}

/* A prediction outside what the model saw is kept, and said: a model trained on H200s read an
 * A100 job's PFI30 0.26 (true 0.76), and the allocation built on it said nothing. */
static void tell_extrapolation(const pfi_model *model, const pfi_run *run,
                               void (*tell)(void *, const char *, int, const char *), void *ctx)
{
    int b = pfi_run_baseline(run);
    pfi_extrap x;
    if (!tell || b < 0 ||
        pfi_model_extrapolation_level(model, run, &run->levels[b], &x, NULL) != PFI_OK ||
        x.n == 0)
        return;
    char why[PFI_EXTRAP_MAX * 200 + 64];
    int k = snprintf(why, sizeof why, "predicted outside what the model was trained on: ");
    pfi_extrap_line(&x, why + k, sizeof why - (size_t)k);
    tell(ctx, run->name, 0, why);
}

int pfi_jobs_store_load(const char *path, const pfi_model *model, pfi_alloc_set *s,
                        void (*tell)(void *ctx, const char *run, int skipped, const char *why),
                        void *ctx,
                        pfi_err *err)
{
    memset(s, 0, sizeof *s);
    pfi_store *st;
    int rc = pfi_store_open(path, PFI_STORE_READONLY, &st, err);
    if (rc)
        return rc;
    pfi_run_summary *sum = NULL;
    int nr = 0;
    if ((rc = pfi_store_list_runs(st, &sum, &nr, err)))
        goto out;
    if (nr == 0) {
        rc = pfi_err_set(err, PFI_ENOENT, "%s holds no runs", path);
        goto out;
    }
    if ((rc = pfi_alloc_set_init(s, nr, 0)) != PFI_OK) {
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory for %d runs", nr);
        goto out;
    }
    int relative = 0;
    for (int i = 0; i < nr; i++)
        relative |= sum[i].unit != PFI_TOKENS_PER_S;
    pfi_run *run = malloc(sizeof *run);
    pfi_curve *cv = malloc(sizeof *cv);
    pfi_alloc_curve *buf = malloc(sizeof *buf); /* each curve, then kept by the set */
    int m = 0;
    pfi_draw_model dm, *draw = NULL;
    if (model && run && cv) {
        fit_draw(st, sum, nr, run, cv, &dm);
        draw = &dm;
    }
    for (int i = 0; run && cv && buf && i < nr; i++) {
        pfi_err e2 = {0};
        if (pfi_store_load_run(st, sum[i].id, run, &e2) ||
            pfi_curve_from_run(run, -1, cv, &e2)) {
            if (tell)
                tell(ctx, sum[i].name, 1, e2.msg);
            continue;
        }
        s->ids[m] = strdup(sum[i].name);
        if (!s->ids[m] ||
            (rc = pfi_alloc_job_from_curve(cv, PFI_VIEW_MEASURED, relative, s->ids[m], 0, 0,
                                           buf, &s->truth[m], err)) ||
            (rc = keep(s, &s->truth[m], err)))
            break;
        if (model) {
            if ((rc = pfi_model_predict_run(model, run, cv, err)) ||
                (rc = pfi_alloc_job_from_prediction(cv, draw, relative, s->ids[m],
                                                    s->truth[m].min_cap_w, s->truth[m].max_cap_w,
                                                    buf, &s->pred[m], err)) ||
                (rc = keep(s, &s->pred[m], err))) {
                pfi_err_prefix(err, "predicting %s: ", sum[i].name);
                break;
            }
            s->pred[m].p0_w = s->truth[m].p0_w; /* the measured baseline draw */
            tell_extrapolation(model, run, tell, ctx);
        }
        s->pfi30[m] = NAN;
        m++;
    }
    if (!run || !cv || !buf)
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
    free(run);
    free(cv);
    free(buf);
    s->n = m;
    if (!rc && m == 0)
        rc = pfi_err_set(err, PFI_EINVAL, "no run of %s has a usable curve", path);
out:
    free(sum);
    pfi_store_close(st);
    return rc;
}
