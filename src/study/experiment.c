/* SPDX-License-Identifier: Apache-2.0 */
/* experiment.c: the allocation experiment on a population of runs (experiment.h). */
#include "study/experiment.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pfi.h"
#include "core/predict.h"
#include "core/probe.h"
#include "core/stats.h"
#include "study/sla_calib.h"
#include "store/store.h"
#include "study/fleet.h"
#include "study/runset.h"

#define ID_MAX PFI_EXPT_ID_MAX

/* ------------------------------------------------------------------ what pfi sees */

/* The best mean gap recovered over 10/20/30% cuts on the public sweeps, over the grid below:
 * chosen on the very curves it is scored on (docs/allocation.md gives the cross-validated
 * figure next to it). */
const pfi_expt_shape_set pfi_expt_shape_default = {0.50, 5, 3.0, 1, 0, 0, 0, PFI_PROBE_VOTES_EQUAL,
                                                   PFI_PROBE_SCALE_SLOWDOWN, 0, 0, 0};

int pfi_expt_setting_in_sample(const pfi_expt_pop *p, const pfi_expt_opts *eo)
{
    if (!(eo->probes == 1 && eo->probe_shape && !eo->shape_cv &&
          pfi_expt_shape_is_default(&eo->shape)))
        return 0;
    for (int j = 0; j < p->n; j++)
        for (int k = 0; k < PFI_IMPORT_NSOURCES; k++)
            if (!strcmp(p->run[p->run_of[j]]->source, pfi_import_sources[k]))
                return 1;
    return 0;
}

int pfi_expt_shape_is_default(const pfi_expt_shape_set *s)
{
    const pfi_expt_shape_set *d = &pfi_expt_shape_default;
    return s->depth == d->depth && s->k == d->k && s->w_draw == d->w_draw &&
           s->tier_gpus == d->tier_gpus && s->committee == d->committee &&
           s->members == d->members && s->amp == d->amp && s->votes == d->votes &&
           s->scale == d->scale && s->w_p0 == d->w_p0 && s->hedge == d->hedge &&
           s->shrink == d->shrink;
}

/* The neighbour counts and draw weights of the grid, and of the committee (all their pairs). */
static const int grid_k[] = {4, 5, 6, 8};
static const double grid_wd[] = {0, 1, 3, 5};
/* The amplitude exponents (core/probe.h): 0, the walk as it was, first, so a tie keeps it;
 * then 1 (the full rescale), then 0.5 (half the ratio's logarithm), in the order they joined. */
static const double grid_amp[] = {0, 1, 0.5};
#define NAMP (int)(sizeof grid_amp / sizeof *grid_amp)
/* How the neighbours' steps are combined (core/probe.h): equal votes, the walk as it was, first. */
static const int grid_votes[] = {PFI_PROBE_VOTES_EQUAL, PFI_PROBE_VOTES_NEAR};
#define NVOTES (int)(sizeof grid_votes / sizeof *grid_votes)
#define NK (int)(sizeof grid_k / sizeof *grid_k)
#define NWD (int)(sizeof grid_wd / sizeof *grid_wd)
#define COMMITTEE (NK * NWD)

/* The 136 settings of the first grid (depths x tiers x {committee, neighbours x draw weights})
 * at one amplitude, votes, scale, draw share weight and hedge, from out[m] on (none written at
 * or past max); the new m. */
static int grid_block(pfi_expt_shape_set *out, int max, int m, double amp, int votes, int scale,
                      double w_p0, int hedge, int shrink)
{
    static const double depths[] = {0.35, 0.40, 0.45, 0.50};
    for (int t = 0; t < 2; t++)
        for (size_t a = 0; a < sizeof depths / sizeof *depths; a++) {
            if (m < max)
                out[m] = (pfi_expt_shape_set){depths[a], 0,     0,     t,    1,
                                              0,         amp,   votes, scale, w_p0,
                                              hedge,     shrink};
            m++;
            for (int b = 0; b < NK; b++)
                for (int c = 0; c < NWD; c++) {
                    if (m < max)
                        out[m] = (pfi_expt_shape_set){depths[a], grid_k[b], grid_wd[c], t, 0, 0,
                                                      amp,       votes,     scale,      w_p0,
                                                      hedge,     shrink};
                    m++;
                }
        }
    return m;
}

int pfi_expt_shape_grid(pfi_expt_shape_set *out, int max)
{
    int m = 0;
    for (int w = 0; w < NVOTES; w++)
        for (int u = 0; u < NAMP; u++)
            m = grid_block(out, max, m, grid_amp[u], grid_votes[w], PFI_PROBE_SCALE_SLOWDOWN, 0,
                           0, 0);
    /* the walk in extra time, after every setting in slowdown (a tie keeps those), with near
     * votes only: the nested folds took them almost always, and crossing both votes would
     * double the run's time */
    for (int u = 0; u < NAMP; u++)
        m = grid_block(out, max, m, grid_amp[u], PFI_PROBE_VOTES_NEAR, PFI_PROBE_SCALE_TIME, 0,
                       0, 0);
    /* the baseline draw share in the neighbour distance, weight 1 (a share of the limit weighs
     * as the same share of throughput), in slowdown with near votes, after all the above */
    for (int u = 0; u < NAMP; u++)
        m = grid_block(out, max, m, grid_amp[u], PFI_PROBE_VOTES_NEAR, PFI_PROBE_SCALE_SLOWDOWN,
                       1.0, 0, 0);
    /* the hedged walk, the mean of the six readings (amplitude x scale) that the blocks above
     * offer one at a time, with near votes, after all the above */
    m = grid_block(out, max, m, 0, PFI_PROBE_VOTES_NEAR, PFI_PROBE_SCALE_SLOWDOWN, 0, 1, 0);
    /* the stacked walk, the six readings weighted job by job by how each predicts the job's
     * neighbours from the other neighbours, with near votes, after all the above */
    m = grid_block(out, max, m, 0, PFI_PROBE_VOTES_NEAR, PFI_PROBE_SCALE_SLOWDOWN, 0, 2, 0);
    /* (the shrunk walk, --set shrink=1, is not in the grid: scored as 136 more settings the
     * inner folds never took it, docs/allocation.md) */
    return m;
}

pfi_expt_opts pfi_expt_defaults(int probes)
{
    pfi_expt_opts o;
    memset(&o, 0, sizeof o);
    o.probes = probes;
    o.depth[0] = PFI_PROBE_DEPTH;
    if (probes == 2)
        o.depth[0] = 0.2, o.depth[1] = 0.4;
    o.train_seed = pfi_train_defaults().seed;
    pfi_alloc_opts_default(&o.alloc);
    o.sla_every = 3;
    o.sla_margin = NAN;
    o.sla_rounds = PFI_EXPT_SLA_ROUNDS;
    o.probe_shape = 1;
    o.shape = pfi_expt_shape_default;
    o.cv_top = PFI_EXPT_CV_TOP;
    return o;
}

static int fold_of_job(const pfi_expt_pop *p, int j)
{
    return p->group[p->run_of[j]] % PFI_EXPT_FOLDS;
}

/* What a job draws under a cap, learned from the training folds' sweeps (core/alloc_curve.h):
 * the draw/P0 of their levels against cap/P0, never a level of the fold it predicts. */
static int draw_model_out_of_fold(const pfi_expt_pop *p, int fold, pfi_draw_model *out)
{
    int cap = 0, m = 0;
    for (int j = 0; j < p->n; j++)
        cap += p->truth[j].n;
    double *u = malloc(sizeof *u * (size_t)(cap ? cap : 1));
    double *d = malloc(sizeof *d * (size_t)(cap ? cap : 1));
    if (!u || !d) {
        free(u);
        free(d);
        return PFI_ENOMEM;
    }
    for (int j = 0; j < p->n; j++) {
        if (fold_of_job(p, j) == fold)
            continue;
        const pfi_curve *t = &p->truth[j];
        for (int i = 0; i < t->n; i++)
            if (t->p0_w > 0 && t->draw_w[i] > 0) {
                u[m] = t->cap_w[i] / t->p0_w;
                d[m++] = t->draw_w[i] / t->p0_w;
            }
    }
    pfi_draw_model_fit(u, d, m, out);
    free(u);
    free(d);
    return PFI_OK;
}

/* What job j draws under a cap: the mean of the draw models of the DRAW_K training-fold jobs
 * nearest to it in baseline telemetry.  A
 * pooled median reads every job alike and misplaces caps (the simulated fleet's jobs draw
 * 90-99% of the same cap); jobs that look alike at baseline draw alike under a cap.  Distances
 * use the fold's predictor's own standardization (m: trained on the same rows).  Falls
 * back to the pooled model when j has no features or fewer than two neighbours do. */
#define DRAW_K 8
static void draw_model_neighbours(const pfi_expt_pop *p, const pfi_train_row *rows,
                                  const int *ok, int j, int fold, const pfi_model *m,
                                  const pfi_draw_model *pooled, pfi_draw_model *out)
{
    *out = *pooled;
    if (!ok[j])
        return;
    double best_d[DRAW_K];
    int best[DRAW_K], nb = 0;
    for (int k = 0; k < p->n; k++) {
        if (!ok[k] || fold_of_job(p, k) == fold)
            continue;
        double d2 = 0;
        for (int q = 0; q < PFI_N_FEATURES; q++) {
            double a = rows[j].x[q], b = rows[k].x[q];
            if (isfinite(a) && isfinite(b) && m->scale[q] > 0)
                d2 += (a - b) * (a - b) / (m->scale[q] * m->scale[q]);
        }
        if (nb == DRAW_K && d2 >= best_d[nb - 1])
            continue;
        int i = nb < DRAW_K ? nb++ : nb - 1;
        for (; i > 0 && best_d[i - 1] > d2; i--) {
            best_d[i] = best_d[i - 1];
            best[i] = best[i - 1];
        }
        best_d[i] = d2;
        best[i] = k;
    }
    pfi_draw_model own[DRAW_K];
    int nown = 0;
    for (int i = 0; i < nb; i++)
        if (pfi_draw_model_from_curve(&p->truth[best[i]], &own[nown]) >= 2)
            nown++;
    if (nown >= 2)
        pfi_draw_model_mean(own, nown, 0.3, 1.2, out);
}

/* Out-of-fold predictions from the runtime model. */
static int predict_model(const pfi_expt_pop *p, unsigned long long seed, pfi_curve *pred,
                         pfi_draw_model *draw, char *note, size_t notelen, pfi_err *err)
{
    pfi_train_row *rows = malloc(sizeof *rows * (size_t)p->n);
    int *ok = calloc((size_t)p->n, sizeof *ok);
    pfi_train_row *train = malloc(sizeof *train * (size_t)p->n);
    int rc = PFI_OK, kinds[2] = {0, 0};
    if (!rows || !ok || !train) {
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    /* A job without baseline telemetry is no training example (pfi model train's rule): it is
     * still predicted, from its power alone, near the training mean. */
    int ntel = 0;
    for (int j = 0; j < p->n; j++) {
        pfi_err e2 = {0};
        int r = p->run_of[j];
        ok[j] = pfi_features_have_telemetry(p->run[r]) &&
                pfi_train_row_from_run(p->run[r], p->group[r], 0, &rows[j], &e2) == PFI_OK;
        ntel += ok[j];
    }
    if (ntel < PFI_MODEL_MIN_TRAIN) {
        rc = pfi_err_set(err, PFI_EINVAL,
                         "only %d of the %d jobs have GPU telemetry at their baseline (SM clock "
                         "or activities); the runtime predictor (--probes 0) needs at least %d "
                         "to train on. Imported public sweeps carry no telemetry: evaluate them "
                         "with probes (--probes 1), or measure runs with `pfi sweep`",
                         ntel, p->n, PFI_MODEL_MIN_TRAIN);
        goto out;
    }
    pfi_train_opts to = pfi_train_defaults();
    to.seed = seed;
    for (int f = 0; f < PFI_EXPT_FOLDS; f++) {
        int nt = 0, any = 0;
        for (int j = 0; j < p->n; j++) {
            if (fold_of_job(p, j) == f)
                any = 1;
            else if (ok[j])
                train[nt++] = rows[j];
        }
        if (!any)
            continue;
        pfi_model m;
        if ((rc = pfi_model_train(train, nt, &to, &m, err))) {
            pfi_err_prefix(err, "training the predictor on %d runs (fold %d): ", nt, f + 1);
            goto out;
        }
        kinds[m.kind == PFI_MODEL_PHYSICS]++;
        pfi_draw_model dm;
        if (draw_model_out_of_fold(p, f, &dm)) {
            rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
            goto out;
        }
        for (int j = 0; j < p->n; j++) {
            if (fold_of_job(p, j) != f)
                continue;
            draw_model_neighbours(p, rows, ok, j, f, &m, &dm, &draw[j]);
            if ((rc = pfi_model_predict_run(&m, p->run[p->run_of[j]], &pred[j], err))) {
                pfi_err_prefix(err, "predicting %s: ", p->run[p->run_of[j]]->name);
                goto out;
            }
        }
    }
    int k = snprintf(note, notelen,
                     "runtime predictor, %d folds by job group (ridge chosen %d, physics %d "
                     "times), draw under a cap from the %d training-fold jobs nearest in "
                     "baseline telemetry",
                     PFI_EXPT_FOLDS, kinds[0], kinds[1], DRAW_K);
    if (ntel < p->n && k > 0 && (size_t)k < notelen)
        snprintf(note + k, notelen - (size_t)k,
                 "; %d job(s) without GPU telemetry at the baseline not trained on (predicted "
                 "from power alone)", p->n - ntel);
out:
    free(rows);
    free(ok);
    free(train);
    return rc;
}

/* The committee bit of k neighbours and draw weight w_draw; -1 off the grid. */
static int grid_bit(int k, double w_draw)
{
    for (int a = 0; a < NK; a++)
        for (int b = 0; b < NWD; b++)
            if (grid_k[a] == k && grid_wd[b] == w_draw)
                return a * NWD + b;
    return -1;
}

/* ... of a single setting */
static int member_bit(const pfi_expt_shape_set *st) { return grid_bit(st->k, st->w_draw); }

/* The members of a setting: itself, or the committee's (all COMMITTEE, or those of its mask). */
static int committee(const pfi_expt_shape_set *st, pfi_probe_shape_opts *so)
{
    if (!st->committee) {
        so[0] = (pfi_probe_shape_opts){st->k,     PFI_PROBE_SPACE_MAXCAP, st->w_draw,
                                       st->votes, st->scale,             st->w_p0, st->shrink};
        return 1;
    }
    int m = 0;
    for (int a = 0; a < NK; a++)
        for (int b = 0; b < NWD; b++)
            if (!st->members || (st->members >> (a * NWD + b) & 1u))
                so[m++] = (pfi_probe_shape_opts){grid_k[a], PFI_PROBE_SPACE_MAXCAP, grid_wd[b],
                                                 st->votes, st->scale, st->w_p0, st->shrink};
    return m;
}

/* What scoring many settings on one population (score_grid) would otherwise compute again for
 * each: the equal and oracle allocations, which see only the truth, and each job's committee
 * members (core/probe.h's units), which several settings share: a committee's members are
 * the single settings of its key (every part of a setting but the neighbours and the draw
 * weight), and the grid scores each committee just before those singles.  Valid for one
 * population, options and cuts. */
typedef struct score_memo {
    int have_ref;
    pfi_eval_cell *ref; /* the first run's cells, and its caps */
    double *ref_caps;
    int have_key;
    pfi_expt_shape_set key; /* the units' key (its k, w_draw, committee and members unused) */
    unsigned char *valid;   /* [job * COMMITTEE + member bit] */
    double *unit;           /* [(job * COMMITTEE + member bit) * PFI_PROBE_MEMBER_N] */
} score_memo;

static int memo_init(score_memo *m, int n, int ncuts)
{
    size_t nn = (size_t)(n ? n : 1), cells = (size_t)ncuts * PFI_POLICY_COUNT;
    memset(m, 0, sizeof *m);
    m->ref = calloc(cells, sizeof *m->ref);
    m->ref_caps = calloc(cells * nn, sizeof *m->ref_caps);
    m->valid = calloc(nn * COMMITTEE, 1);
    m->unit = malloc(sizeof *m->unit * nn * COMMITTEE * PFI_PROBE_MEMBER_N);
    return m->ref && m->ref_caps && m->valid && m->unit ? 0 : -1;
}

static void memo_free(score_memo *m)
{
    free(m->ref), free(m->ref_caps), free(m->valid), free(m->unit);
    memset(m, 0, sizeof *m);
}

/* Whether two settings share their members' units: everything but k, w_draw and the choice of
 * members. */
static int same_key(const pfi_expt_shape_set *a, const pfi_expt_shape_set *b)
{
    return a->depth == b->depth && a->tier_gpus == b->tier_gpus && a->amp == b->amp &&
           a->votes == b->votes && a->scale == b->scale && a->w_p0 == b->w_p0 &&
           a->hedge == b->hedge && a->shrink == b->shrink;
}

/* ... of a committee's member */
static int member_slot(const pfi_probe_shape_opts *so) { return grid_bit(so->k, so->w_draw); }

/* Job j's estimate under setting st from its members so[0..nm): each member's unit from the
 * memo, or computed into it, then combined (pfi_probe_members_combine: the curve
 * pfi_probe_shape_mean_iso / hedged_iso / stacked_iso give). */
static int memo_estimate(score_memo *memo, int j, const pfi_expt_shape_set *st,
                         const pfi_probe_obs *ob, const pfi_expt_pop *p, const double *iso,
                         const unsigned char *use, const pfi_probe_shape_opts *so, int nm,
                         double *units, pfi_curve *out, pfi_err *err)
{
    for (int m = 0; m < nm; m++) {
        int b = member_slot(&so[m]);
        size_t at = (size_t)j * COMMITTEE + (size_t)b;
        double *u = memo->unit + at * PFI_PROBE_MEMBER_N;
        if (!memo->valid[at]) {
            int rc = pfi_probe_member_unit(ob, p->truth, iso, use, p->n, &so[m], st->amp,
                                           st->hedge, u, err);
            if (rc)
                return rc;
            memo->valid[at] = 1;
        }
        memcpy(units + (size_t)m * PFI_PROBE_MEMBER_N, u, sizeof *u * PFI_PROBE_MEMBER_N);
    }
    pfi_probe_members_combine(ob, units, nm, st->hedge, out);
    return PFI_OK;
}

/* One probe read through the population's shape (core/probe.h): job j's neighbours are the
 * OTHER jobs' measured curves (with group_out, of the other groups), closest tier first;
 * nothing of job j but its baseline and its probe level is seen (pfi_probe_obs).  Job j's
 * setting is sets[j] (sets NULL: *one for all), its depth per_job[j] when given. */
static int predict_shape(const pfi_expt_pop *p, const pfi_expt_shape_set *one,
                         const pfi_expt_shape_set *sets, int group_out, const double *per_job,
                         score_memo *memo, pfi_curve *pred, char *note, size_t notelen,
                         pfi_err *err)
{
    size_t nn = (size_t)(p->n ? p->n : 1);
    unsigned char *use = malloc(nn);
    /* every job reads the same references: their monotone levels made once */
    double *iso = malloc(sizeof *iso * PFI_CURVE_MAX_PTS * nn);
    /* each job's GPU model as the first job of that model: compared as numbers below */
    int *gpu = malloc(sizeof *gpu * nn);
    double *units = malloc(sizeof *units * COMMITTEE * PFI_PROBE_MEMBER_N);
    if (!use || !iso || !gpu || !units) {
        free(use), free(iso), free(gpu), free(units);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    pfi_probe_refs_iso(p->truth, p->n, iso);
    for (int k = 0; k < p->n; k++) {
        gpu[k] = k;
        for (int q = 0; q < k && gpu[k] == k; q++)
            if (gpu[q] == q &&
                strcmp(p->run[p->run_of[q]]->gpu_type, p->run[p->run_of[k]]->gpu_type) == 0)
                gpu[k] = q;
    }
    /* the memo serves one setting for every job at its own depth */
    if (memo && (sets || per_job))
        memo = NULL;
    if (memo && (!memo->have_key || !same_key(&memo->key, one))) {
        memset(memo->valid, 0, (size_t)p->n * COMMITTEE);
        memo->key = *one, memo->have_key = 1;
    }
    int rc = PFI_OK;
    for (int j = 0; !rc && j < p->n; j++) {
        const pfi_expt_shape_set *st = sets ? &sets[j] : one;
        const pfi_run *rj = p->run[p->run_of[j]];
        int gj = p->group[p->run_of[j]], multi = p->truth[j].n_gpus > 1;
        for (int k = 0; k < p->n; k++) {
            int same_gpu = gpu[k] == gpu[j];
            int same_kind = (p->truth[k].n_gpus > 1) == multi;
            use[k] = (unsigned char)(1 + same_gpu + (st->tier_gpus && same_gpu && same_kind));
            if (k == j || (group_out && p->group[p->run_of[k]] == gj))
                use[k] = 0;
        }
        pfi_probe_shape_opts so[COMMITTEE];
        int nm = committee(st, so), memo_ok = memo != NULL && nm >= 1;
        for (int m = 0; memo_ok && m < nm; m++)
            memo_ok = member_slot(&so[m]) >= 0;
        pfi_probe_obs ob;
        double d = per_job ? per_job[j] : st->depth;
        if ((rc = pfi_probe_observe(&p->truth[j], d, &ob, NULL, err)) ||
            (rc = memo_ok ? memo_estimate(memo, j, st, &ob, p, iso, use, so, nm, units, &pred[j],
                                          err)
                  : st->hedge == 2 ? pfi_probe_shape_stacked_iso(&ob, p->truth, iso, use, p->n,
                                                                 so, nm, &pred[j], err)
                  : st->hedge      ? pfi_probe_shape_hedged_iso(&ob, p->truth, iso, use, p->n,
                                                                so, nm, &pred[j], err)
                                   : pfi_probe_shape_mean_iso(&ob, p->truth, iso, use, p->n, so,
                                                              nm, st->amp, &pred[j], err)))
            pfi_err_prefix(err, "probing %s: ", rj->name);
    }
    free(use), free(iso), free(gpu), free(units);
    if (rc)
        return rc;
    const char *lib = group_out ? "OTHER job groups'" : "OTHER jobs'";
    const char *tiers = one->tier_gpus ? "same GPU and GPU-count kind first" : "same GPU first";
    char depth[64], who[200];
    if (per_job)
        snprintf(depth, sizeof depth, "at each job's equal share of the cut");
    else
        snprintf(depth, sizeof depth, "depth %.2f", one->depth);
    if (one->committee)
        snprintf(who, sizeof who, "the mean over 4-8 nearest x draw weight 0-5");
    else
        snprintf(who, sizeof who, "the %d nearest, draw weight %g", one->k, one->w_draw);
    if (one->hedge == 2) {
        size_t l = strlen(who);
        snprintf(who + l, sizeof who - l,
                 ", stacked: six readings of their steps weighted by how each predicts the "
                 "neighbours");
    } else if (one->hedge) {
        size_t l = strlen(who);
        snprintf(who + l, sizeof who - l, ", hedged: the mean of six readings of their steps");
    } else if (one->amp > 0) {
        size_t l = strlen(who);
        snprintf(who + l, sizeof who - l, ", their shape rescaled by the probe (amplitude %g)",
                 one->amp);
    }
    if (one->votes == PFI_PROBE_VOTES_NEAR) {
        size_t l = strlen(who);
        snprintf(who + l, sizeof who - l, ", the nearest with the most say");
    }
    if (one->scale == PFI_PROBE_SCALE_TIME && !one->hedge) {
        size_t l = strlen(who);
        snprintf(who + l, sizeof who - l, ", their steps in extra time");
    }
    if (one->w_p0 > 0) {
        size_t l = strlen(who);
        snprintf(who + l, sizeof who - l, ", baseline draw share weight %g", one->w_p0);
    }
    if (sets)
        snprintf(note, notelen,
                 "baseline + 1 probe read through the shape of the nearest %s measured curves, "
                 "the setting of each job group chosen by cross-validation on the other groups",
                 lib);
    else
        snprintf(note, notelen,
                 "baseline + 1 probe (%s) read through the shape of the %s measured curves: "
                 "%s, %s",
                 depth, lib, who, tiers);
    return PFI_OK;
}

/* depths: the same for every job, or per_job (n x probes, may be NULL) one set per job.
 * shape: one probe read through the population's shape, else the power law. */
static int predict_probes(const pfi_expt_pop *p, const pfi_expt_opts *o,
                          const double *per_job, score_memo *memo, pfi_curve *pred,
                          pfi_draw_model *draw, char *note, size_t notelen, pfi_err *err)
{
    int probes = o->probes;
    const double *depths = o->depth;
    if (probes == 1 && o->probe_shape)
        return predict_shape(p, &o->shape, o->job_sets, o->group_out, per_job, memo, pred, note,
                             notelen, err);
    int flat = 0;
    for (int j = 0; j < p->n; j++) {
        /* The exponent prior must not come from the curve it predicts. */
        double b = pfi_probe_median_b(p->truth, p->n, j);
        if (!isfinite(b))
            b = PFI_PROBE_B_PRIOR;
        pfi_err e2 = {0};
        int used[2] = {-1, -1};
        const pfi_curve *t = &p->truth[j];
        const double *dj = per_job ? per_job + (size_t)j * (size_t)probes : depths;
        if (pfi_probe_curve(t, dj, probes, b, &pred[j], used, &e2) == PFI_OK) {
            /* what the probe measured besides throughput: the draw under its cap */
            int u = used[probes - 1];
            pfi_draw_model_ratio(u >= 0 && t->cap_w[u] > 0 ? t->draw_w[u] / t->cap_w[u] : 1,
                                 &draw[j]);
            continue;
        }
        pfi_draw_model_ratio(1, &draw[j]);
        /* A probe that sheds no power (the job draws less than any cap it may get) says that
         * capping costs this job nothing over its range: predict no slowdown. */
        pfi_fit none = {PFI_FAM_POWER, {0, 1, 0}, NAN, 0};
        int rc = pfi_curve_from_fit(&none, t->t0, t->p0_w, t->cap0_w, t->min_cap_w, t->max_cap_w,
                                    t->n_gpus, t->r_max, &pred[j], err);
        if (rc)
            return pfi_err_prefix(err, "probing %s: ", p->run[p->run_of[j]]->name);
        flat++;
    }
    char d[64];
    if (per_job)
        snprintf(d, sizeof d, "at each job's equal share of the cut");
    else if (probes == 1)
        snprintf(d, sizeof d, "%.2f", depths[0]);
    else
        snprintf(d, sizeof d, "%.2f, %.2f", depths[0], depths[1]);
    snprintf(note, notelen,
             "baseline + %d probe%s (depth %s), exponent prior leave-one-out; %d job(s) whose "
             "probe shed no power predicted flat",
             probes, probes > 1 ? "s" : "", d, flat);
    return PFI_OK;
}

/* Each job probed where an equal cut would put it (probes 2: there and halfway). */
static void auto_depths(const pfi_alloc_job *tj, int n, int probes, double cut,
                        const pfi_alloc_opts *o, double *depth)
{
    pfi_alloc_result eq;
    pfi_err e2 = {0};
    double b = pfi_alloc_budget_from_cut(tj, n, cut);
    int erc = pfi_alloc_equal(tj, n, b, o, &eq, &e2);
    for (int j = 0; j < n; j++) {
        double d = erc ? cut : 1.0 - eq.cap_w[j] / tj[j].p0_w;
        d = d < 0.05 ? 0.05 : d > 0.9 ? 0.9 : d;
        if (probes == 2)
            depth[2 * j] = 0.5 * d, depth[2 * j + 1] = d;
        else
            depth[j] = d;
    }
    if (!erc)
        pfi_alloc_result_free(&eq);
}

/* ------------------------------------------------------------------ SLAs */

double pfi_expt_sla_error(const pfi_alloc_job *t, const pfi_alloc_job *q, double sla)
{
    double t0 = pfi_alloc_tput_at(t, t->max_cap_w), p0 = pfi_alloc_tput_at(q, q->max_cap_w);
    if (!(t0 > 0) || !(p0 > 0))
        return NAN;
    double lo = fmax(t->min_cap_w, q->min_cap_w);
    for (double cap = t->max_cap_w; cap >= lo; cap -= 1.0) {
        double sq = 1 - pfi_alloc_tput_at(q, cap) / p0;
        if (sq >= sla)
            return (1 - pfi_alloc_tput_at(t, cap) / t0) - sq;
    }
    return NAN;
}

/* Job j's margin: the PFI_EXPT_SLA_QUANTILE quantile of e[k] over the OTHER jobs k, >= 0. */
static double job_margin(const double *e, int n, int j, double *v)
{
    int m = 0;
    for (int k = 0; k < n; k++)
        if (k != j && isfinite(e[k]))
            v[m++] = e[k];
    qsort(v, (size_t)m, sizeof *v, pfi_cmp_double);
    return m > 0 ? fmax(0, pfi_quantile_sorted(v, m, PFI_EXPT_SLA_QUANTILE)) : 0;
}

int pfi_expt_sla_margins(const pfi_alloc_job *tj, const pfi_alloc_job *pj, int n, double sla,
                         int every, double *marg)
{
    size_t nn = (size_t)(n ? n : 1);
    double *e = malloc(sizeof *e * nn), *v = malloc(sizeof *v * nn);
    int nsla = 0;
    if (e && v) {
        for (int j = 0; j < n; j++)
            e[j] = pfi_expt_sla_error(&tj[j], &pj[j], sla);
        for (int j = 0; j < n; j++) {
            marg[j] = NAN;
            if (j % every == 0)
                marg[j] = job_margin(e, n, j, v), nsla++;
        }
    } else
        nsla = -1;
    free(e), free(v);
    return nsla;
}

/* Each SLA job's margin (marg[j]; NAN for the other jobs): pfi_expt_sla_margins, or a fixed
 * o->sla_margin for every SLA job.  Sets the true SLAs; returns the mean margin over the SLA
 * jobs, NAN when out of memory. */
static double sla_margins(const pfi_expt_opts *o, pfi_alloc_job *tj, const pfi_alloc_job *pj,
                          int n, double *marg, int *nsla)
{
    double kept = 0;
    *nsla = 0;
    if (!isfinite(o->sla_margin) && pfi_expt_sla_margins(tj, pj, n, o->sla, o->sla_every, marg) < 0)
        return NAN;
    for (int j = 0; j < n; j++) {
        if (j % o->sla_every != 0) {
            marg[j] = NAN;
            continue;
        }
        if (isfinite(o->sla_margin))
            marg[j] = o->sla_margin;
        tj[j].sla = o->sla;
        kept += marg[j];
        (*nsla)++;
    }
    return *nsla ? kept / *nsla : 0;
}

/* pfi's value on q (its own curves) with each SLA at sla - t * marg[j], less kappa * the
 * uncertainty of its gain over the caps e (sum of unc[j] * |cap - e[j]|; kappa 0: none):
 * -INFINITY when those SLAs do not fit the budget, NAN on another error. */
static double plan_value(pfi_alloc_job *q, int n, double sla, const double *marg, double t,
                         double budget_w, const pfi_alloc_opts *o, const double *unc,
                         const double *e, double kappa, pfi_err *err)
{
    for (int j = 0; j < n; j++)
        q[j].sla = isnan(marg[j]) ? NAN : fmax(0, sla - t * marg[j]);
    pfi_alloc_result r;
    int rc = pfi_alloc_policy(PFI_POLICY_PFI, q, n, NULL, budget_w, o, &r, err);
    if (rc == PFI_EINFEASIBLE) {
        pfi_err_clear(err);
        return -INFINITY;
    }
    if (rc)
        return NAN;
    double v = r.value, u = 0;
    for (int j = 0; kappa > 0 && j < n; j++)
        u += unc[j] * fabs(r.cap_w[j] - e[j]);
    pfi_alloc_result_free(&r);
    return v - kappa * u;
}

double pfi_expt_sla_plan(pfi_alloc_job *q, int n, double sla, const double *marg,
                         const double *unc, double kappa, double budget_w,
                         const pfi_alloc_opts *ao, pfi_err *err)
{
    /* an equal cut with the plain SLAs, on q: what pfi's plan must not fall below */
    for (int j = 0; j < n; j++)
        q[j].sla = isnan(marg[j]) ? NAN : sla;
    pfi_alloc_opts o = *ao;
    o.on_infeasible = PFI_INFEASIBLE_FAIL;
    pfi_alloc_result eq;
    int rc = pfi_alloc_policy(PFI_POLICY_EQUAL, q, n, NULL, budget_w, &o, &eq, err);
    if (rc == PFI_EINFEASIBLE) { /* the plain SLAs do not fit: relaxed as for any policy */
        pfi_err_clear(err);
        return 0;
    }
    if (rc)
        return NAN;
    double veq = eq.value, lo = 0, hi = 1;
    double v = plan_value(q, n, sla, marg, 1, budget_w, &o, unc, eq.cap_w, kappa, err);
    if (isnan(v))
        lo = NAN;
    else if (v >= veq)
        lo = 1;
    else /* the value falls as the margins grow: the largest share that keeps up with equal */
        for (int it = 0; it < PFI_EXPT_SLA_PLAN_STEPS; it++) {
            double mid = 0.5 * (lo + hi);
            if (isnan(v = plan_value(q, n, sla, marg, mid, budget_w, &o, unc, eq.cap_w, kappa,
                                     err))) {
                lo = NAN;
                break;
            }
            if (v >= veq)
                lo = mid;
            else
                hi = mid;
        }
    pfi_alloc_result_free(&eq);
    if (isnan(lo))
        return NAN;
    for (int j = 0; j < n; j++)
        q[j].sla = isnan(marg[j]) ? NAN : fmax(0, sla - lo * marg[j]);
    return lo;
}

/* Breaches of one allocation (caps[j]; 0: not run) on the true curves: SLA jobs whose true
 * slowdown exceeds the SLA by more than breach_tol, and the largest excess. */
static void breaches_of(const pfi_expt_opts *o, const pfi_alloc_job *tj, int n,
                        const double *caps, int *breaches, double *worst)
{
    *breaches = 0;
    *worst = -INFINITY;
    for (int j = 0; j < n; j++) {
        if (j % o->sla_every != 0 || !(caps[j] > 0))
            continue;
        double t0 = pfi_alloc_tput_at(&tj[j], tj[j].max_cap_w);
        double excess = 1 - pfi_alloc_tput_at(&tj[j], caps[j]) / t0 - o->sla;
        *breaches += excess > o->breach_tol;
        *worst = fmax(*worst, excess);
    }
}

/* The SLA jobs' caps (sum of n_gpus x cap) and true throughput in one allocation. */
static void sla_share(const pfi_expt_opts *o, const pfi_alloc_job *tj, int n, const double *caps,
                      double *power, double *tput)
{
    *power = *tput = 0;
    for (int j = 0; j < n; j += o->sla_every)
        if (caps[j] > 0) {
            *power += tj[j].n_gpus * caps[j];
            *tput += pfi_alloc_tput_at(&tj[j], caps[j]);
        }
}

/* Breaches of one cut's cells, on the true curves, and the SLA jobs' share of each. */
static void count_breaches(const pfi_expt_opts *o, const pfi_alloc_job *tj, int n,
                           const double *caps, pfi_expt_result *r, size_t row)
{
    for (int q = 0; q < PFI_POLICY_COUNT; q++) {
        const double *cq = caps + (size_t)q * (size_t)n;
        breaches_of(o, tj, n, cq, &r->breaches[row + (size_t)q], &r->worst[row + (size_t)q]);
        sla_share(o, tj, n, cq, &r->sla_power[row + (size_t)q], &r->sla_tput[row + (size_t)q]);
    }
}

/* The equal policy on pfi's curves with the SLAs pfi planned (as set on q), scored on the true
 * curves into *cell (row: the cut's cells, for the gap), with breaches and worst excess. */
static int equal_on_pred(const pfi_expt_opts *o, const pfi_alloc_job *tj, const pfi_alloc_job *q,
                         int n, double budget, const pfi_eval_cell *row, pfi_eval_cell *cell,
                         int *breaches, double *worst, pfi_err *err)
{
    memset(cell, 0, sizeof *cell);
    *breaches = 0, *worst = -INFINITY;
    cell->budget_w = budget;
    pfi_alloc_result r;
    int rc = pfi_alloc_policy(PFI_POLICY_EQUAL, q, n, NULL, budget, &o->alloc, &r, err);
    if (rc == PFI_EINFEASIBLE) {
        pfi_err_clear(err);
        cell->infeasible = 1;
        cell->gap_recovered = NAN;
        return PFI_OK;
    }
    if (rc)
        return rc;
    for (int j = 0; j < n; j++)
        cell->total_throughput += pfi_alloc_tput_at(&tj[j], r.cap_w[j]);
    breaches_of(o, tj, n, r.cap_w, breaches, worst);
    cell->done = 1;
    cell->power_w = r.power_w;
    pfi_alloc_result_free(&r);
    const pfi_eval_cell *eq = &row[PFI_POLICY_EQUAL], *orc = &row[PFI_POLICY_ORACLE];
    cell->per_job_gain_vs_equal = (cell->total_throughput - eq->total_throughput) / n;
    cell->gap_recovered = eq->done && orc->done
                              ? pfi_eval_gap_recovered(cell->total_throughput,
                                                       eq->total_throughput, orc->total_throughput)
                              : NAN;
    return PFI_OK;
}




/* ------------------------------------------------------------------ gains on a bound */



/* Slowdown of job J at cap c, its own curve's T0 the reference. */
static double slowdown_at(const pfi_alloc_job *J, double c)
{
    return 1 - pfi_alloc_tput_at(J, c) / pfi_alloc_tput_at(J, J->max_cap_w);
}

/* Sum and count of the squared error slopes of job k (truth t, prediction q). */
static void error_slopes(const pfi_alloc_job *t, const pfi_alloc_job *q, double *sum, int *cnt)
{
    *sum = 0, *cnt = 0;
    double lo = fmax(t->min_cap_w, q->min_cap_w), mx = t->max_cap_w;
    if (!(pfi_alloc_tput_at(t, mx) > 0) || !(pfi_alloc_tput_at(q, q->max_cap_w) > 0))
        return;
    int steps = (int)lround((1 - PFI_EXPT_GAIN_U0) / PFI_EXPT_GAIN_DU);
    for (int i = 0; i < steps; i++) {
        double u = PFI_EXPT_GAIN_U0 + i * PFI_EXPT_GAIN_DU, a = u * mx,
               b = (u + PFI_EXPT_GAIN_DU) * mx;
        if (a < lo || b > fmin(mx, q->max_cap_w) + 1e-9)
            continue;
        double ea = slowdown_at(t, a) - slowdown_at(q, a), eb = slowdown_at(t, b) - slowdown_at(q, b);
        double d = (eb - ea) / PFI_EXPT_GAIN_DU;
        *sum += d * d, (*cnt)++;
    }
}

int pfi_expt_gain_uncertainty(const pfi_alloc_job *tj, const pfi_alloc_job *pj, int n, double *s)
{
    size_t nn = (size_t)(n ? n : 1);
    double *sq = malloc(sizeof *sq * nn);
    int *cnt = malloc(sizeof *cnt * nn);
    if (!sq || !cnt) {
        free(sq), free(cnt);
        return -1;
    }
    double all = 0;
    long long call = 0;
    for (int k = 0; k < n; k++)
        error_slopes(&tj[k], &pj[k], &sq[k], &cnt[k]), all += sq[k], call += cnt[k];
    for (int j = 0; j < n; j++) {
        long long c = call - cnt[j];
        double g = c > 0 ? sqrt(fmax(0, all - sq[j]) / (double)c) : 0;
        double t0 = pfi_alloc_tput_at(&pj[j], pj[j].max_cap_w);
        s[j] = pj[j].max_cap_w > 0 && t0 > 0 ? g * t0 / pj[j].max_cap_w : 0;
    }
    free(sq), free(cnt);
    return 0;
}

/* ------------------------------------------------------------------ the jobs */

void pfi_expt_jobs_free(pfi_expt_jobs *j)
{
    free(j->truth), free(j->pred), free(j->tbuf), free(j->pbuf), free(j->ids);
    memset(j, 0, sizeof *j);
}

/* Job ids are run names, made unique (the allocator refuses duplicates). */
static void job_ids(const pfi_expt_pop *p, char (*ids)[ID_MAX])
{
    for (int j = 0; j < p->n; j++) {
        const char *name = p->run[p->run_of[j]]->name;
        int dup = 0;
        for (int k = 0; k < j; k++)
            dup += strcmp(p->run[p->run_of[k]]->name, name) == 0;
        if (dup)
            snprintf(ids[j], ID_MAX, "%s#%d", name, dup + 1);
        else
            snprintf(ids[j], ID_MAX, "%s", name[0] ? name : "run");
    }
}

int pfi_expt_jobs_new(const pfi_expt_pop *p, pfi_expt_jobs *j, pfi_err *err)
{
    memset(j, 0, sizeof *j);
    size_t n = (size_t)(p->n ? p->n : 1);
    j->truth = calloc(n, sizeof *j->truth);
    j->pred = calloc(n, sizeof *j->pred);
    j->tbuf = calloc(n, sizeof *j->tbuf);
    j->pbuf = calloc(n, sizeof *j->pbuf);
    j->ids = calloc(n, sizeof *j->ids);
    if (!j->truth || !j->pred || !j->tbuf || !j->pbuf || !j->ids) {
        pfi_expt_jobs_free(j);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    j->n = p->n;
    for (int k = 0; k < p->n; k++)
        j->relative |= p->run[p->run_of[k]]->unit != PFI_TOKENS_PER_S;
    j->unit = j->relative ? "GPU-weighted relative throughput" : "tokens/s";
    job_ids(p, j->ids);
    for (int k = 0; k < p->n; k++) {
        int rc = pfi_alloc_job_from_curve(&p->truth[k], PFI_VIEW_MEASURED, j->relative, j->ids[k],
                                          0, 0, &j->tbuf[k], &j->truth[k], err);
        if (rc) {
            pfi_expt_jobs_free(j);
            return rc;
        }
        j->gpus += j->truth[k].n_gpus;
    }
    return PFI_OK;
}

/* pfi_expt_predict, with the memo of a scoring run (NULL: none). */
static int expt_predict(const pfi_expt_pop *p, const pfi_expt_opts *o, double cut,
                        pfi_expt_jobs *j, score_memo *memo, pfi_err *err)
{
    if (o->probes < 0 || o->probes > 2)
        return pfi_err_set(err, PFI_EINVAL, "probes must be 0, 1 or 2, got %d", o->probes);
    size_t n = (size_t)(p->n ? p->n : 1);
    pfi_curve *pred = calloc(n, sizeof *pred);
    pfi_draw_model *draw = calloc(n, sizeof *draw);
    double *depth = o->auto_depth ? calloc(n * 2, sizeof *depth) : NULL;
    int rc = PFI_OK;
    if (!pred || !draw || (o->auto_depth && !depth))
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
    if (!rc && o->auto_depth && o->probes > 0)
        auto_depths(j->truth, p->n, o->probes, cut, &o->alloc, depth);
    if (!rc)
        rc = o->probes == 0
                 ? predict_model(p, o->train_seed, pred, draw, j->note, sizeof j->note, err)
                 : predict_probes(p, o, depth, memo, pred, draw, j->note, sizeof j->note, err);
    for (int k = 0; !rc && k < p->n; k++) {
        const pfi_alloc_job *t = &j->truth[k];
        /* a prediction is read inside what was measured: no policy leaves that range; a shape
         * estimate is a curve in cap space already, a fit is read through the draw model */
        rc = pred[k].n >= 2
                 ? pfi_alloc_job_from_curve(&pred[k], PFI_VIEW_MONOTONE, j->relative, t->id,
                                            t->min_cap_w, t->max_cap_w, &j->pbuf[k],
                                            &j->pred[k], err)
                 : pfi_alloc_job_from_prediction(&pred[k], &draw[k], j->relative, t->id,
                                                 t->min_cap_w, t->max_cap_w, &j->pbuf[k],
                                                 &j->pred[k], err);
        /* the baseline the budget is cut from is measured, so both views share it */
        j->pred[k].p0_w = t->p0_w;
    }
    free(pred), free(draw), free(depth);
    return rc;
}

int pfi_expt_predict(const pfi_expt_pop *p, const pfi_expt_opts *o, double cut,
                     pfi_expt_jobs *j, pfi_err *err)
{
    return expt_predict(p, o, cut, j, NULL, err);
}

/* ------------------------------------------------------------------ the experiment */

void pfi_expt_result_free(pfi_expt_result *r)
{
    pfi_expt_jobs_free(&r->jobs);
    free(r->cells), free(r->caps), free(r->seen), free(r->breaches), free(r->worst);
    free(r->sla_power), free(r->sla_tput);
    free(r->eq_pred), free(r->eq_pred_breaches), free(r->eq_pred_worst);
    free(r->plan_breaches), free(r->plan_worst), free(r->fb_rounds), free(r->fb_jobs);
    free(r->fb_unfit), free(r->pfi_relaxed);
    free(r->sets);
    memset(r, 0, sizeof *r);
}

/* Each SLA job's curve calibrated on the other jobs' out-of-fold errors (study/sla_calib.h)
 * into cal[j] (its points in buf[j]); the other jobs' cal[j] are left as they are.  Returns 0,
 * -1 when out of memory. */
static int calibrate_sla_jobs(const pfi_expt_opts *o, const pfi_expt_jobs *jb,
                              pfi_alloc_curve *buf, pfi_alloc_job *cal)
{
    int n = jb->n, g = pfi_calib_grid_n();
    size_t ng = (size_t)(n ? n : 1) * (size_t)g;
    double *a = malloc(sizeof *a * ng), *b = malloc(sizeof *b * ng);
    int rc = a && b ? pfi_calib_lines(jb->truth, jb->pred, n, a, b) : -1;
    for (int j = 0; !rc && j < n; j += o->sla_every)
        pfi_calib_curve(&jb->pred[j], a + (size_t)j * (size_t)g, b + (size_t)j * (size_t)g,
                        &buf[j], &cal[j]);
    free(a), free(b);
    return rc;
}

/* Swaps each SLA job's curve in pred with its calibrated one in cal, keeping pred's SLA;
 * a second call swaps them back. */
static void swap_sla_curves(const pfi_expt_opts *o, pfi_alloc_job *pred, pfi_alloc_job *cal,
                            int n)
{
    for (int j = 0; j < n; j += o->sla_every) {
        pfi_alloc_job t = pred[j];
        pred[j] = cal[j];
        pred[j].sla = t.sla;
        cal[j] = t;
    }
}

/* Whether pfi must relax every SLA at this budget: its SLAs as planned (on q) do not fit an
 * equal cut.  1: they do not, 0: they do, -1 on another error. */
static int must_relax(const pfi_alloc_job *q, int n, double budget, const pfi_alloc_opts *ao,
                      pfi_err *err)
{
    pfi_alloc_opts fo = *ao;
    fo.on_infeasible = PFI_INFEASIBLE_FAIL;
    pfi_alloc_result r;
    int rc = pfi_alloc_policy(PFI_POLICY_EQUAL, q, n, NULL, budget, &fo, &r, err);
    if (rc == PFI_EINFEASIBLE) {
        pfi_err_clear(err);
        return 1;
    }
    if (rc)
        return -1;
    pfi_alloc_result_free(&r);
    return 0;
}

/* ------------------------------------------------------------------ rule F: SLA feedback */

/* What rule F keeps across one cut's rounds: pred as each round found it, each round's
 * corrected curves ([round * n + j]: a later round reads an earlier one's), and which jobs an
 * observation corrected. */
typedef struct sla_fb {
    pfi_alloc_job *save, *orig;
    pfi_alloc_curve *buf;
    unsigned char *hit;
} sla_fb;

static void sla_fb_free(sla_fb *f)
{
    free(f->save), free(f->orig), free(f->buf), free(f->hit);
    memset(f, 0, sizeof *f);
}

static int sla_fb_new(const pfi_expt_opts *o, int n, sla_fb *f)
{
    size_t nn = (size_t)(n ? n : 1), nr = (size_t)(o->sla_rounds > 0 ? o->sla_rounds : 1);
    f->save = malloc(sizeof *f->save * nn);
    f->orig = malloc(sizeof *f->orig * nn);
    f->buf = malloc(sizeof *f->buf * nn * nr);
    f->hit = malloc(nn);
    if (f->save && f->orig && f->buf && f->hit)
        return 0;
    sla_fb_free(f);
    return -1;
}

/* Corrects, through what was seen at the caps cp, the curve in jb->pred of each SLA job whose
 * true slowdown there breaches its SLA (its points into buf[j]).  Returns how many, or -1 with
 * *rc set on an error. */
static int correct_breaches(const pfi_expt_opts *o, pfi_expt_jobs *jb, const double *cp,
                            pfi_alloc_curve *buf, unsigned char *hit, int *rc, pfi_err *err)
{
    int seen = 0;
    for (int j = 0; j < jb->n; j += o->sla_every) {
        if (!(cp[j] > 0))
            continue;
        double s = slowdown_at(&jb->truth[j], cp[j]);
        if (!(s - o->sla > o->breach_tol))
            continue;
        if ((*rc = pfi_alloc_curve_through(&jb->pred[j], cp[j], s, &buf[j], &jb->pred[j], err)))
            return -1;
        hit[j] = 1, seen++;
    }
    return seen;
}

/* Rule F at cut k (docs/allocation.md), once pfi's plan has been allocated (row, caps: the
 * cut's cells and caps): while an SLA job's true slowdown at the cap it got breaches its SLA,
 * at most o->sla_rounds times, the breaching jobs' curves in jb->pred are corrected through
 * what was seen and the cut is planned (marg, unc) and run again.  A round whose corrected
 * SLAs no longer fit is undone, and the allocation before it stands.  Records the plan's
 * breaches and the feedback in r; jb->pred keeps the corrections (the caller restores it). */
static int sla_feedback(const pfi_expt_opts *o, pfi_expt_jobs *jb, const double *cut,
                        double budget, const int *policies, int npolicies, const double *marg,
                        const double *unc, pfi_eval_cell *row, double *caps, sla_fb *fb,
                        pfi_expt_result *r, int k, pfi_err *err)
{
    int n = jb->n, rc = PFI_OK;
    const double *cp = caps + (size_t)PFI_POLICY_PFI * (size_t)n;
    memset(fb->hit, 0, (size_t)(n ? n : 1));
    breaches_of(o, jb->truth, n, cp, &r->plan_breaches[k], &r->plan_worst[k]);
    for (int round = 0; round < o->sla_rounds && row[PFI_POLICY_PFI].done; round++) {
        memcpy(fb->save, jb->pred, sizeof *jb->pred * (size_t)n);
        int seen = correct_breaches(o, jb, cp, fb->buf + (size_t)round * (size_t)n, fb->hit, &rc,
                                    err);
        if (seen <= 0)
            break;
        int relax = 0;
        if (isnan(pfi_expt_sla_plan(jb->pred, n, o->sla, marg, unc, PFI_EXPT_PLAN_KAPPA, budget,
                                    &o->alloc, err)) ||
            (relax = must_relax(jb->pred, n, budget, &o->alloc, err)) < 0)
            return err && err->code ? err->code : PFI_ENOMEM;
        if (relax) { /* the corrected SLAs do not fit: the curves and SLAs the cells came from */
            memcpy(jb->pred, fb->save, sizeof *jb->pred * (size_t)n);
            r->fb_unfit[k] = 1;
            if (isnan(pfi_expt_sla_plan(jb->pred, n, o->sla, marg, unc, PFI_EXPT_PLAN_KAPPA,
                                        budget, &o->alloc, err)))
                return err && err->code ? err->code : PFI_ENOMEM;
            break;
        }
        if ((rc = pfi_alloc_experiment(jb->truth, jb->pred, n, cut, 1, policies, npolicies,
                                       &o->alloc, row, caps, err)))
            return rc;
        r->fb_rounds[k]++;
    }
    for (int j = 0; j < n; j++)
        r->fb_jobs[k] += fb->hit[j];
    return rc;
}

/* The SLA experiment's cuts of one round: pfi's SLAs planned per cut (pfi_expt_sla_plan), so
 * each cut is its own run; where pfi must relax every SLA, its SLA jobs are allocated on
 * their calibrated curves (cal; relx[c] set).  Cells and caps as one_round's. */
static int sla_cuts(const pfi_expt_opts *o, const double *cuts, int nc, const int *policies,
                    int npolicies, double *caps, pfi_expt_result *r, int c0, pfi_alloc_job *cal,
                    pfi_alloc_curve *cbuf, unsigned char *relx, pfi_err *err)
{
    pfi_expt_jobs *jb = &r->jobs;
    int n = jb->n, rc = PFI_OK;
    size_t cell0 = (size_t)c0 * PFI_POLICY_COUNT, w = (size_t)PFI_POLICY_COUNT * (size_t)n;
    double *marg = malloc(sizeof *marg * (size_t)(n ? n : 1));
    double *unc = malloc(sizeof *unc * (size_t)(n ? n : 1));
    sla_fb fb = {0};
    if (!marg || !unc || sla_fb_new(o, n, &fb))
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
    if (!rc && (isnan(r->sla_margin = sla_margins(o, jb->truth, jb->pred, n, marg,
                                                   &r->n_sla_jobs)) ||
                pfi_expt_gain_uncertainty(jb->truth, jb->pred, n, unc) ||
                calibrate_sla_jobs(o, jb, cbuf, cal)))
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
    for (int c = 0; !rc && c < nc; c++) {
        double budget = pfi_alloc_budget_from_cut(jb->truth, n, cuts[c]);
        pfi_eval_cell *row = r->cells + cell0 + (size_t)c * PFI_POLICY_COUNT;
        int relax = 0;
        if (isnan(pfi_expt_sla_plan(jb->pred, n, o->sla, marg, unc, PFI_EXPT_PLAN_KAPPA, budget,
                                    &o->alloc, err)) ||
            (relax = must_relax(jb->pred, n, budget, &o->alloc, err)) < 0) {
            rc = err && err->code ? err->code : PFI_ENOMEM;
            break;
        }
        r->pfi_relaxed[c0 + c] = relx[c] = (unsigned char)relax;
        if (relax)
            swap_sla_curves(o, jb->pred, cal, n);
        memcpy(fb.orig, jb->pred, sizeof *jb->pred * (size_t)n);
        double *cc = caps + (size_t)c * w;
        rc = pfi_alloc_experiment(jb->truth, jb->pred, n, cuts + c, 1, policies, npolicies,
                                  &o->alloc, row, cc, err);
        if (!rc && relax) /* no feedback where every SLA is relaxed: the plan stands */
            breaches_of(o, jb->truth, n, cc + (size_t)PFI_POLICY_PFI * (size_t)n,
                        &r->plan_breaches[c0 + c], &r->plan_worst[c0 + c]);
        else if (!rc)
            rc = sla_feedback(o, jb, cuts + c, budget, policies, npolicies, marg, unc, row, cc,
                              &fb, r, c0 + c, err);
        if (!rc)
            rc = equal_on_pred(o, jb->truth, jb->pred, n, budget, row, &r->eq_pred[c0 + c],
                               &r->eq_pred_breaches[c0 + c], &r->eq_pred_worst[c0 + c], err);
        if (relax)
            swap_sla_curves(o, jb->pred, cal, n);
        else /* the corrections were this cut's */
            memcpy(jb->pred, fb.orig, sizeof *jb->pred * (size_t)n);
    }
    free(marg), free(unc);
    sla_fb_free(&fb);
    return rc;
}

/* One round: predict (auto depths at cuts[0]), then allocate at cuts[0..nc), the cells and
 * caps going to the result's cuts c0.. */
static int one_round(const pfi_expt_pop *p, const pfi_expt_opts *o, const double *cuts, int nc,
                     const int *policies, int npolicies, double *caps, pfi_expt_result *r,
                     int c0, score_memo *memo, pfi_err *err)
{
    pfi_expt_jobs *jb = &r->jobs;
    int n = p->n, rc = expt_predict(p, o, cuts[0], jb, memo, err);
    if (rc)
        return rc;
    size_t cell0 = (size_t)c0 * PFI_POLICY_COUNT, w = (size_t)PFI_POLICY_COUNT * (size_t)n;
    memset(caps, 0, sizeof *caps * w * (size_t)nc); /* a cell not run keeps no caps */
    pfi_alloc_job *cal = NULL;
    pfi_alloc_curve *cbuf = NULL;
    unsigned char *relx = calloc((size_t)nc, 1);
    if (o->sla > 0) {
        cal = malloc(sizeof *cal * (size_t)(n ? n : 1));
        cbuf = malloc(sizeof *cbuf * (size_t)(n ? n : 1));
        rc = cal && cbuf && relx ? sla_cuts(o, cuts, nc, policies, npolicies, caps, r, c0, cal,
                                            cbuf, relx, err)
                                 : pfi_err_set(err, PFI_ENOMEM, "out of memory");
    } else {
        /* a memo's equal and oracle, once it has them, are this run's (score_memo) */
        int ref = memo && memo->have_ref;
        rc = relx ? pfi_alloc_experiment_ref(jb->truth, jb->pred, n, cuts, nc, policies,
                                             npolicies, &o->alloc, ref ? memo->ref : NULL,
                                             ref ? memo->ref_caps : NULL, r->cells + cell0,
                                             caps, err)
                  : pfi_err_set(err, PFI_ENOMEM, "out of memory");
        if (!rc && memo && !ref) {
            memcpy(memo->ref, r->cells + cell0, sizeof *memo->ref * (size_t)nc * PFI_POLICY_COUNT);
            memcpy(memo->ref_caps, caps, sizeof *caps * w * (size_t)nc);
            memo->have_ref = 1;
        }
    }
    for (int c = 0; !rc && c < nc; c++) {
        const double *cc = caps + (size_t)c * w;
        size_t row = cell0 + (size_t)c * PFI_POLICY_COUNT;
        if (o->sla > 0)
            count_breaches(o, jb->truth, n, cc, r, row);
        if (!o->want_caps)
            continue;
        memcpy(r->caps + row * (size_t)n, cc, sizeof *cc * w);
        if (relx[c]) /* what pfi saw at a relaxed cut: its SLA jobs' calibrated curves */
            swap_sla_curves(o, jb->pred, cal, n);
        for (int q = 0; q < PFI_POLICY_COUNT; q++) {
            const pfi_alloc_job *seen =
                q == PFI_POLICY_PFI || q == PFI_POLICY_PROPORTIONAL ? jb->pred : jb->truth;
            for (int k = 0; k < n; k++) {
                size_t at = (row + (size_t)q) * (size_t)n + (size_t)k;
                r->seen[at] = r->cells[row + (size_t)q].done
                                  ? pfi_alloc_tput_at(&seen[k], r->caps[at])
                                  : 0;
            }
        }
        if (relx[c])
            swap_sla_curves(o, jb->pred, cal, n);
    }
    for (int k = 0; k < n; k++)
        jb->truth[k].sla = jb->pred[k].sla = NAN; /* none: the next round sets them anew */
    free(cal), free(cbuf), free(relx);
    return rc;
}

/* ------------------------------------------------------------------ choosing the setting */

/* The mean gap recovered by pfi over the cuts that ran (NAN: none). */
static double mean_gap(const pfi_expt_result *r)
{
    double sum = 0;
    int m = 0;
    for (int c = 0; c < r->ncuts; c++) {
        const pfi_eval_cell *cell = &r->cells[c * PFI_POLICY_COUNT + PFI_POLICY_PFI];
        if (cell->done && isfinite(cell->gap_recovered))
            sum += cell->gap_recovered, m++;
    }
    return m ? sum / m : NAN;
}

/* pfi's gap recovered at cut c alone (NAN: not run): mean_gap of a run of that cut alone. */
static double cut_gap(const pfi_expt_result *r, int c)
{
    const pfi_eval_cell *cell = &r->cells[c * PFI_POLICY_COUNT + PFI_POLICY_PFI];
    return cell->done && isfinite(cell->gap_recovered) ? cell->gap_recovered : NAN;
}

/* The bagged choice among scored single settings v[s] (NAN: not scored): for each depth,
 * tiers, amplitude exponent, votes, scale and draw share weight, the mean of its top best
 * scores; the best such (ties: the earlier) becomes the committee of those top settings.
 * Averaging the m best instead of taking the one best is what steadies the choice: which
 * single setting wins moves with which groups are left out (docs/allocation.md).  0 when
 * nothing scored. */
int pfi_expt_bag_choice(const pfi_expt_shape_set *grid, const double *v, int ngrid, int top,
                        pfi_expt_shape_set *best)
{
    double topmean = -INFINITY;
    int found = 0;
    for (int s = 0; s < ngrid; s++) {
        const pfi_expt_shape_set *a = &grid[s];
        int first = 1; /* each key (all but k, draw weight) once: at its first single */
        for (int q = 0; q < s && first; q++)
            first = !(grid[q].depth == a->depth && grid[q].tier_gpus == a->tier_gpus &&
                      grid[q].amp == a->amp && grid[q].votes == a->votes &&
                      grid[q].scale == a->scale && grid[q].w_p0 == a->w_p0 &&
                      grid[q].hedge == a->hedge && grid[q].shrink == a->shrink && !grid[q].committee && isfinite(v[q]) &&
                      member_bit(&grid[q]) >= 0);
        if (a->committee || !isfinite(v[s]) || member_bit(a) < 0 || !first)
            continue;
        /* the top members of this key: by repeated maximum */
        unsigned mask = 0;
        double sum = 0;
        int m = 0;
        for (; m < top; m++) {
            int pick = -1;
            for (int q = 0; q < ngrid; q++) {
                const pfi_expt_shape_set *b = &grid[q];
                int bit = member_bit(b);
                if (b->committee || b->depth != a->depth || b->tier_gpus != a->tier_gpus ||
                    b->amp != a->amp || b->votes != a->votes || b->scale != a->scale ||
                    b->w_p0 != a->w_p0 || b->hedge != a->hedge || b->shrink != a->shrink ||
                    !isfinite(v[q]) || bit < 0 ||
                    (mask >> bit & 1u))
                    continue;
                if (pick < 0 || v[q] > v[pick])
                    pick = q;
            }
            if (pick < 0)
                break;
            mask |= 1u << member_bit(&grid[pick]);
            sum += v[pick];
        }
        if (m > 0 && sum / m > topmean) {
            topmean = sum / m;
            *best = (pfi_expt_shape_set){a->depth, 0,        0,        a->tier_gpus, 1,
                                         mask,     a->amp,   a->votes, a->scale,     a->w_p0,
                                         a->hedge, a->shrink};
            found = 1;
        }
    }
    return found;
}

/* The jobs with out[j] == 0 as a population of their own (borrowing p's runs); *m: how many. */
static int sub_pop(const pfi_expt_pop *p, const unsigned char *out, pfi_expt_pop *sub, int *m,
                   pfi_err *err)
{
    const pfi_run **runs = malloc(sizeof *runs * (size_t)(p->n ? p->n : 1));
    int *groups = malloc(sizeof *groups * (size_t)(p->n ? p->n : 1));
    if (!runs || !groups) {
        free(runs), free(groups);
        memset(sub, 0, sizeof *sub);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    *m = 0;
    for (int j = 0; j < p->n; j++)
        if (!out[j]) {
            runs[*m] = p->run[p->run_of[j]];
            groups[(*m)++] = p->group[p->run_of[j]];
        }
    int rc = pfi_expt_pop_runs(runs, groups, *m, p->where, sub, err);
    free(runs), free(groups);
    return rc;
}

static int expt_run(const pfi_expt_pop *p, const pfi_expt_opts *o0, const double *cuts,
                    int ncuts, const int *policies, int npolicies, pfi_expt_result *r,
                    score_memo *memo, pfi_err *err);

/* Every grid setting's mean gap recovered on the jobs with out[j] == 0 (v[s] NAN: not scored;
 * with skip_committees the committees are not scored); per_cut: instead its gap recovered at
 * each cut alone, v[c * ngrid + s] (the predictions do not depend on the cut, so one run
 * serves every cut). */
static int score_grid(const pfi_expt_pop *p, const pfi_expt_opts *o, const unsigned char *out,
                      const pfi_expt_shape_set *grid, int ngrid, int skip_committees,
                      const double *cuts, int ncuts, int per_cut, double *v, pfi_err *err)
{
    for (size_t s = 0; s < (size_t)ngrid * (size_t)(per_cut ? ncuts : 1); s++)
        v[s] = NAN;
    pfi_expt_pop sub;
    score_memo memo;
    int m, rc = sub_pop(p, out, &sub, &m, err);
    if (memo_init(&memo, sub.n, ncuts) && !rc)
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
    const int pol[3] = {PFI_POLICY_EQUAL, PFI_POLICY_PFI, PFI_POLICY_ORACLE};
    for (int s = 0; !rc && sub.n >= 2 && s < ngrid; s++) {
        if (skip_committees && grid[s].committee)
            continue; /* the bag builds its own committee */
        pfi_expt_opts io = *o;
        io.shape = grid[s];
        io.shape_cv = 0, io.nested_cv = 0, io.job_sets = NULL, io.want_caps = 0, io.sla = 0;
        io.auto_depth = 0;
        pfi_expt_result r;
        if ((rc = expt_run(&sub, &io, cuts, ncuts, pol, 3, &r, &memo, err)))
            break;
        if (per_cut)
            for (int c = 0; c < ncuts; c++)
                v[(size_t)c * (size_t)ngrid + (size_t)s] = cut_gap(&r, c);
        else
            v[s] = mean_gap(&r);
        pfi_expt_result_free(&r);
    }
    memo_free(&memo);
    pfi_expt_pop_free(&sub);
    return rc;
}

int pfi_expt_score_grid(const pfi_expt_pop *p, const pfi_expt_opts *o, const unsigned char *out,
                        const pfi_expt_shape_set *grid, int ngrid, const double *cuts, int ncuts,
                        double *v, pfi_err *err)
{
    return score_grid(p, o, out, grid, ngrid, 0, cuts, ncuts, 0, v, err);
}

/* The rule's pick among the scored grid: top 0 the best setting (ties: the earlier), top > 0
 * the bagged committee; *best keeps dflt when nothing scored. */
static void pick_setting(const pfi_expt_shape_set *grid, const double *v, int ngrid, int top,
                         const pfi_expt_shape_set *dflt, pfi_expt_shape_set *best)
{
    *best = *dflt;
    if (top > 0) {
        pfi_expt_bag_choice(grid, v, ngrid, top, best);
        return;
    }
    double hi = -INFINITY;
    for (int s = 0; s < ngrid; s++)
        if (isfinite(v[s]) && v[s] > hi)
            hi = v[s], *best = grid[s];
}

/* The setting for group g, chosen on the population without g: the grid's best (top 0; ties:
 * the earlier one) or the bagged choice of its top single settings; the default when fewer
 * than two jobs are left or nothing scores. */
static int choose_for_group(const pfi_expt_pop *p, const pfi_expt_opts *o, int g,
                            const pfi_expt_shape_set *grid, int ngrid, const double *cuts,
                            int ncuts, pfi_expt_shape_set *best, pfi_err *err)
{
    *best = o->shape;
    unsigned char *out = malloc((size_t)(p->n ? p->n : 1));
    double *v = malloc(sizeof *v * (size_t)(ngrid > 0 ? ngrid : 1));
    if (!out || !v) {
        free(out), free(v);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    for (int j = 0; j < p->n; j++)
        out[j] = p->group[p->run_of[j]] == g;
    int rc = score_grid(p, o, out, grid, ngrid, o->cv_top > 0, cuts, ncuts, 0, v, err);
    if (!rc)
        pick_setting(grid, v, ngrid, o->cv_top, &o->shape, best);
    free(out), free(v);
    return rc;
}

/* The settings a cross-validation searches: o->grid when given, else pfi_expt_shape_grid's
 * (written to full, PFI_EXPT_GRID_SIZE of them); how many. */
static int searched_grid(const pfi_expt_opts *o, pfi_expt_shape_set *full,
                         const pfi_expt_shape_set **grid)
{
    if (o->grid && o->ngrid > 0) {
        *grid = o->grid;
        return o->ngrid;
    }
    int ngrid = pfi_expt_shape_grid(full, PFI_EXPT_GRID_SIZE);
    *grid = full;
    return ngrid < PFI_EXPT_GRID_SIZE ? ngrid : PFI_EXPT_GRID_SIZE;
}

/* Each job's setting, chosen on the groups other than its own: no job's curve, nor any curve
 * of its group, has a say in how it is predicted. */
static int cross_validate(const pfi_expt_pop *p, const pfi_expt_opts *o, const double *cuts,
                          int ncuts, pfi_expt_shape_set *sets, pfi_err *err)
{
    pfi_expt_shape_set full[PFI_EXPT_GRID_SIZE];
    const pfi_expt_shape_set *grid;
    int ngrid = searched_grid(o, full, &grid);
    int *done = calloc((size_t)(p->n ? p->n : 1), sizeof *done);
    if (!done)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    int rc = PFI_OK;
    for (int j = 0; !rc && j < p->n; j++) {
        if (done[j])
            continue;
        int g = p->group[p->run_of[j]];
        pfi_expt_shape_set best;
        rc = choose_for_group(p, o, g, grid, ngrid, cuts, ncuts, &best, err);
        for (int k = j; !rc && k < p->n; k++)
            if (p->group[p->run_of[k]] == g)
                sets[k] = best, done[k] = 1;
    }
    free(done);
    return rc;
}

/* ------------------------------------------------------------------ nested cross-validation */

const int pfi_expt_nest_rules[PFI_EXPT_NEST_NRULES] = {0, 3, 6};

/* The job groups (index per job into the distinct groups, in order of first appearance), and
 * each group's place in the seeded shuffle: *ng groups. */
static int deal_groups(const pfi_expt_pop *p, unsigned long long seed, int *gi, int *place,
                       int *ng)
{
    int *gid = malloc(sizeof *gid * (size_t)(p->n ? p->n : 1));
    if (!gid)
        return -1;
    *ng = 0;
    for (int j = 0; j < p->n; j++) {
        int g = p->group[p->run_of[j]], k = 0;
        while (k < *ng && gid[k] != g)
            k++;
        if (k == *ng)
            gid[(*ng)++] = g;
        gi[j] = k;
    }
    free(gid);
    int *order = place; /* order[i]: the group at shuffled place i, then inverted below */
    for (int i = 0; i < *ng; i++)
        order[i] = i;
    unsigned long long st = seed;
    for (int i = *ng - 1; i > 0; i--) {
        int k = (int)(pfi_rand_next(&st) % (unsigned long long)(i + 1)), t = order[i];
        order[i] = order[k], order[k] = t;
    }
    int *inv = malloc(sizeof *inv * (size_t)(p->n ? p->n : 1)); /* ng <= n */
    if (!inv)
        return -1;
    for (int i = 0; i < *ng; i++)
        inv[order[i]] = i;
    memcpy(place, inv, sizeof *inv * (size_t)*ng);
    free(inv);
    return 0;
}

/* The inner score of each rule on outer training set (fold[j] != F): the groups of that set,
 * in shuffled order, dealt into inner folds; each inner fold's setting picked by the rule from
 * the grid scored without it; the set's jobs allocated together, the mean gap recovered,
 * score[r].  per_cut: each cut on its own, score[c * PFI_EXPT_NEST_NRULES + r], the picks
 * from the grid scored at c alone and the jobs allocated at c alone. */
static int rule_scores(const pfi_expt_pop *p, const pfi_expt_opts *o, const int *fold,
                       const int *inner, int F, const pfi_expt_shape_set *grid, int ngrid,
                       const double *cuts, int ncuts, int per_cut, double *score, pfi_err *err)
{
    int n = p->n, rc = PFI_OK, ncol = per_cut ? ncuts : 1;
    size_t per_fold = (size_t)ngrid * (size_t)ncol; /* one inner fold's scores */
    unsigned char *out = malloc((size_t)n);
    double *v = malloc(sizeof *v * per_fold * PFI_EXPT_NEST_INNER);
    pfi_expt_shape_set *sets = malloc(sizeof *sets * (size_t)n);
    if (!out || !v || !sets)
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
    for (int f = 0; !rc && f < PFI_EXPT_NEST_INNER; f++) {
        for (int j = 0; j < n; j++)
            out[j] = fold[j] == F || inner[j] == f;
        rc = score_grid(p, o, out, grid, ngrid, 0, cuts, ncuts, per_cut, v + (size_t)f * per_fold,
                        err);
    }
    for (int j = 0; j < n; j++)
        if (out)
            out[j] = fold[j] == F;
    pfi_expt_pop sub;
    int m = 0;
    if (!rc)
        rc = sub_pop(p, out, &sub, &m, err);
    else
        memset(&sub, 0, sizeof sub);
    if (!rc && sub.n != m)
        rc = pfi_err_set(err, PFI_EINVAL, "nested cross-validation: %d of %d jobs usable", sub.n,
                         m);
    const int pol[3] = {PFI_POLICY_EQUAL, PFI_POLICY_PFI, PFI_POLICY_ORACLE};
    for (int col = 0; !rc && col < ncol; col++)
        for (int r = 0; !rc && r < PFI_EXPT_NEST_NRULES; r++) {
            pfi_expt_shape_set pick[PFI_EXPT_NEST_INNER];
            for (int f = 0; f < PFI_EXPT_NEST_INNER; f++)
                pick_setting(grid, v + (size_t)f * per_fold + (size_t)col * (size_t)ngrid, ngrid,
                             pfi_expt_nest_rules[r], &o->shape, &pick[f]);
            int i = 0;
            for (int j = 0; j < n; j++)
                if (fold[j] != F)
                    sets[i++] = pick[inner[j]];
            pfi_expt_opts io = *o;
            io.shape_cv = 0, io.nested_cv = 0, io.job_sets = sets, io.want_caps = 0, io.sla = 0;
            io.auto_depth = 0;
            pfi_expt_result res;
            if ((rc = pfi_expt_run(&sub, &io, per_cut ? cuts + col : cuts, per_cut ? 1 : ncuts,
                                   pol, 3, &res, err)))
                break;
            score[col * PFI_EXPT_NEST_NRULES + r] = mean_gap(&res);
            pfi_expt_result_free(&res);
        }
    pfi_expt_pop_free(&sub);
    free(out), free(v), free(sets);
    return rc;
}

/* Each job's setting by the nested cross-validation (experiment.h): no curve of an outer fold
 * has a say in its setting or in the rule that picks it; rule[0][F]: the top each fold chose.
 * With o->nest_per_cut, each cut c is chosen for on its own: sets[c * n + j], rule[c][F],
 * fold_set[c][F]. */
static int nested(const pfi_expt_pop *p, const pfi_expt_opts *o, const double *cuts, int ncuts,
                  pfi_expt_shape_set *sets, int (*rule)[PFI_EXPT_NEST_OUTER],
                  pfi_expt_shape_set (*fold_set)[PFI_EXPT_NEST_OUTER], pfi_err *err)
{
    pfi_expt_shape_set full[PFI_EXPT_GRID_SIZE];
    const pfi_expt_shape_set *grid;
    int ngrid = searched_grid(o, full, &grid);
    int per_cut = o->nest_per_cut != 0, ncol = per_cut ? ncuts : 1;
    if (ncol > PFI_EXPT_NEST_MAX_CUTS)
        return pfi_err_set(err, PFI_EINVAL, "nested cross-validation per cut: at most %d cuts",
                           PFI_EXPT_NEST_MAX_CUTS);
    int n = p->n, ng = 0, rc = PFI_OK;
    int *gi = malloc(sizeof *gi * (size_t)n), *place = malloc(sizeof *place * (size_t)n),
        *fold = malloc(sizeof *fold * (size_t)n), *inner = malloc(sizeof *inner * (size_t)n);
    unsigned char *out = malloc((size_t)n);
    double *v = malloc(sizeof *v * (size_t)ngrid * (size_t)ncol);
    if (!gi || !place || !fold || !inner || !out || !v ||
        deal_groups(p, o->cv_seed, gi, place, &ng) != 0)
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
    if (!rc && ng < PFI_EXPT_NEST_OUTER + PFI_EXPT_NEST_INNER)
        rc = pfi_err_set(err, PFI_EINVAL, "nested cross-validation: %d job groups, at least %d "
                         "needed", ng, PFI_EXPT_NEST_OUTER + PFI_EXPT_NEST_INNER);
    for (int j = 0; !rc && j < n; j++)
        fold[j] = place[gi[j]] % PFI_EXPT_NEST_OUTER;
    for (int F = 0; !rc && F < PFI_EXPT_NEST_OUTER; F++) {
        /* the training groups' ranks in shuffled order, dealt into the inner folds */
        for (int j = 0; j < n; j++) {
            int rank = 0;
            for (int k = 0; k < ng; k++)
                rank += place[k] < place[gi[j]] && place[k] % PFI_EXPT_NEST_OUTER != F;
            inner[j] = fold[j] == F ? -1 : rank % PFI_EXPT_NEST_INNER;
        }
        double score[PFI_EXPT_NEST_MAX_CUTS * PFI_EXPT_NEST_NRULES];
        if ((rc = rule_scores(p, o, fold, inner, F, grid, ngrid, cuts, ncuts, per_cut, score,
                              err)))
            break;
        for (int j = 0; j < n; j++)
            out[j] = fold[j] == F;
        if ((rc = score_grid(p, o, out, grid, ngrid, 0, cuts, ncuts, per_cut, v, err)))
            break;
        for (int col = 0; col < ncol; col++) { /* each cut's (per_cut), else the one choice */
            const double *sc = score + col * PFI_EXPT_NEST_NRULES;
            int best = 0;
            for (int r = 1; r < PFI_EXPT_NEST_NRULES; r++)
                if (isfinite(sc[r]) && !(sc[r] <= sc[best]))
                    best = r;
            rule[col][F] = pfi_expt_nest_rules[best];
            pfi_expt_shape_set pick;
            pick_setting(grid, v + (size_t)col * (size_t)ngrid, ngrid, rule[col][F], &o->shape,
                         &pick);
            fold_set[col][F] = pick;
            for (int j = 0; j < n; j++)
                if (fold[j] == F)
                    sets[(size_t)col * (size_t)n + (size_t)j] = pick;
        }
    }
    free(gi), free(place), free(fold), free(inner), free(out), free(v);
    return rc;
}

int pfi_expt_nested_run(const pfi_expt_pop *p, const pfi_expt_opts *o, const double *cuts,
                        int ncuts, int nseeds, pfi_expt_nested_summary *out, pfi_err *err)
{
    memset(out, 0, sizeof *out);
    if (nseeds < 1 || nseeds > PFI_EXPT_NEST_MAX_SEEDS || ncuts < 1 ||
        ncuts > PFI_EXPT_NEST_MAX_CUTS)
        return pfi_err_set(err, PFI_EINVAL, "nested cross-validation: 1-%d seeds and 1-%d cuts",
                           PFI_EXPT_NEST_MAX_SEEDS, PFI_EXPT_NEST_MAX_CUTS);
    if (o->probes != 1 || !o->probe_shape || o->auto_depth)
        return pfi_err_set(err, PFI_EINVAL, "the nested cross-validation is of the one-probe "
                           "shape estimate at a fixed depth (--probes 1)");
    out->nseeds = nseeds, out->ncuts = ncuts, out->n_jobs = p->n;
    const int pol[3] = {PFI_POLICY_EQUAL, PFI_POLICY_PFI, PFI_POLICY_ORACLE};
    for (int mode = 0; mode < 2; mode++) {
        for (int c = 0; c < ncuts; c++)
            out->mean[mode][c] = 0, out->lo[mode][c] = INFINITY, out->hi[mode][c] = -INFINITY;
        for (int s = 0; s < nseeds; s++) {
            pfi_expt_opts io = *o;
            io.nested_cv = 1, io.shape_cv = 0, io.group_out = mode, io.want_caps = 0;
            io.cv_seed = (unsigned long long)(s + 1);
            pfi_expt_result r;
            int rc = pfi_expt_run(p, &io, cuts, ncuts, pol, 3, &r, err);
            if (rc)
                return rc;
            for (int c = 0; c < ncuts; c++) {
                const pfi_eval_cell *eq = &r.cells[c * PFI_POLICY_COUNT + PFI_POLICY_EQUAL];
                double g = r.cells[c * PFI_POLICY_COUNT + PFI_POLICY_PFI].gap_recovered;
                out->budget_w[c] = eq->budget_w;
                if (eq->infeasible) { /* the same jobs at every seed: the same budget */
                    out->infeasible[c] = 1;
                    out->min_budget_w[c] = eq->min_budget_w;
                    g = NAN;
                }
                out->gap[mode][s][c] = g;
                /* NAN spreads through the mean; fmin and fmax would drop it and leave an
                 * empty range (inf, -inf) that reads as a figure */
                out->mean[mode][c] += g / nseeds;
                double *lo = &out->lo[mode][c], *hi = &out->hi[mode][c];
                *lo = isnan(g) || isnan(*lo) ? NAN : fmin(*lo, g);
                *hi = isnan(g) || isnan(*hi) ? NAN : fmax(*hi, g);
            }
            memcpy(out->rule[mode][s], r.nest_rule, sizeof r.nest_rule);
            memcpy(out->set[mode][s], r.nest_set, sizeof r.nest_set);
            memcpy(out->rule_cut[mode][s], r.nest_rule_cut, sizeof r.nest_rule_cut);
            memcpy(out->set_cut[mode][s], r.nest_set_cut, sizeof r.nest_set_cut);
            pfi_expt_result_free(&r);
        }
    }
    return PFI_OK;
}

/* pfi_expt_run, with the memo of a scoring run (NULL: none; score_memo). */
static int expt_run(const pfi_expt_pop *p, const pfi_expt_opts *o0, const double *cuts,
                    int ncuts, const int *policies, int npolicies, pfi_expt_result *r,
                    score_memo *memo, pfi_err *err)
{
    memset(r, 0, sizeof *r);
    int rc = pfi_expt_pop_check(p, err);
    if (rc)
        return rc;
    if (o0->sla > 0 && o0->sla_every < 1)
        return pfi_err_set(err, PFI_EINVAL, "an SLA on every k-th job needs k >= 1");
    pfi_expt_opts ov = *o0;
    const pfi_expt_opts *o = &ov;
    pfi_expt_shape_set *sets = NULL;
    int nest = o0->nested_cv && o0->probes == 1 && o0->probe_shape && !o0->auto_depth;
    int cv = nest || (o0->shape_cv && o0->probes == 1 && o0->probe_shape && !o0->auto_depth);
    /* per cut: each cut predicted with its own settings, so each cut is its own round */
    int per_cut = nest && o0->nest_per_cut;
    int rule[PFI_EXPT_NEST_MAX_CUTS][PFI_EXPT_NEST_OUTER];
    pfi_expt_shape_set fset[PFI_EXPT_NEST_MAX_CUTS][PFI_EXPT_NEST_OUTER];
    memset(rule, 0, sizeof rule);
    memset(fset, 0, sizeof fset);
    if (cv) {
        if (!(sets = calloc((size_t)p->n * (size_t)(per_cut ? ncuts : 1), sizeof *sets)))
            return pfi_err_set(err, PFI_ENOMEM, "out of memory");
        if ((rc = nest ? nested(p, o0, cuts, ncuts, sets, rule, fset, err)
                       : cross_validate(p, o0, cuts, ncuts, sets, err))) {
            free(sets);
            return rc;
        }
        ov.job_sets = sets;
    }
    if ((rc = pfi_expt_jobs_new(p, &r->jobs, err))) {
        free(sets);
        return rc;
    }
    int n = p->n;
    size_t cells = (size_t)ncuts * PFI_POLICY_COUNT, w = (size_t)PFI_POLICY_COUNT * (size_t)n;
    /* With auto depths the probes depend on the cut, so each cut is its own round. */
    int rounds = (o->auto_depth && o->probes > 0) || per_cut ? ncuts : 1;
    int per_round = rounds > 1 ? 1 : ncuts;
    double *caps = calloc((size_t)per_round * w, sizeof *caps);
    r->n = n;
    r->ncuts = ncuts;
    r->cells = calloc(cells, sizeof *r->cells);
    if (o->want_caps) {
        r->caps = calloc(cells * (size_t)n, sizeof *r->caps);
        r->seen = calloc(cells * (size_t)n, sizeof *r->seen);
    }
    if (o->sla > 0) {
        r->breaches = calloc(cells, sizeof *r->breaches);
        r->worst = calloc(cells, sizeof *r->worst);
        r->sla_power = calloc(cells, sizeof *r->sla_power);
        r->sla_tput = calloc(cells, sizeof *r->sla_tput);
        r->eq_pred = calloc((size_t)ncuts, sizeof *r->eq_pred);
        r->eq_pred_breaches = calloc((size_t)ncuts, sizeof *r->eq_pred_breaches);
        r->eq_pred_worst = calloc((size_t)ncuts, sizeof *r->eq_pred_worst);
        r->plan_breaches = calloc((size_t)ncuts, sizeof *r->plan_breaches);
        r->plan_worst = calloc((size_t)ncuts, sizeof *r->plan_worst);
        r->fb_rounds = calloc((size_t)ncuts, sizeof *r->fb_rounds);
        r->fb_jobs = calloc((size_t)ncuts, sizeof *r->fb_jobs);
        r->fb_unfit = calloc((size_t)ncuts, sizeof *r->fb_unfit);
        r->pfi_relaxed = calloc((size_t)ncuts, sizeof *r->pfi_relaxed);
    }
    if (!caps || !r->cells || (o->want_caps && (!r->caps || !r->seen)) ||
        (o->sla > 0 && (!r->breaches || !r->worst || !r->sla_power || !r->sla_tput ||
                        !r->eq_pred || !r->eq_pred_breaches ||
                        !r->eq_pred_worst || !r->plan_breaches || !r->plan_worst ||
                        !r->fb_rounds || !r->fb_jobs || !r->fb_unfit || !r->pfi_relaxed)))
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
    for (int round = 0; !rc && round < rounds; round++) {
        int c0 = rounds > 1 ? round : 0;
        if (per_cut)
            ov.job_sets = sets + (size_t)round * (size_t)n;
        rc = one_round(p, o, cuts + c0, per_round, policies, npolicies, caps, r, c0,
                       rounds > 1 ? NULL : memo, err);
    }
    free(caps);
    r->sets = sets;
    memcpy(r->nest_rule, rule[0], sizeof r->nest_rule);
    memcpy(r->nest_set, fset[0], sizeof r->nest_set);
    for (int c = 0; c < ncuts && c < PFI_EXPT_NEST_MAX_CUTS; c++) /* without per_cut, the one */
        for (int f = 0; f < PFI_EXPT_NEST_OUTER; f++)
            r->nest_rule_cut[c][f] = rule[per_cut ? c : 0][f],
            r->nest_set_cut[c][f] = fset[per_cut ? c : 0][f];
    if (rc)
        pfi_expt_result_free(r);
    return rc;
}

int pfi_expt_run(const pfi_expt_pop *p, const pfi_expt_opts *o0, const double *cuts, int ncuts,
                 const int *policies, int npolicies, pfi_expt_result *r, pfi_err *err)
{
    return expt_run(p, o0, cuts, ncuts, policies, npolicies, r, NULL, err);
}
