/* SPDX-License-Identifier: Apache-2.0 */
/* experiment.h: the paper's allocation experiment (its "Allocation experiment") on a
 * population of characterized runs, for `pfi evaluate` and `pfi study` alike, so that both
 * give one answer to one question.  core/alloc_eval.h scores allocations on given job arrays;
 * this module builds those arrays from runs:
 *   population  the jobs: a simulated fleet, a store, the public sweeps, or runs the caller
 *               already holds, each with a job group (runs of one job configuration share it);
 *               a run is a job when its measured curve is usable;
 *   truth       each job's MEASURED curve: what every allocation is scored on, and what equal
 *               and oracle see;
 *   prediction  what pfi (and proportional-to-pfi) see instead:
 *     probes 0    the runtime predictor (core/predict.h) from baseline telemetry, cross-fitted:
 *                 the jobs are split into PFI_EXPT_FOLDS folds by job group and each fold is
 *                 predicted by a model trained on the other folds; the draw under a cap (jobs
 *                 seldom draw their whole cap, core/alloc_curve.h) is the mean draw of the
 *                 training-fold jobs nearest in baseline telemetry;
 *     probes 1|2  baseline + probes (core/probe.h) read on the job's own measured levels, at
 *                 fixed depths or, with auto depths, at the job's equal share of each cut (then
 *                 each cut is predicted and allocated on its own); the exponent prior is the
 *                 median of the OTHER jobs' curves, and the draw ratio is the probe's own;
 *   SLAs        optionally every k-th job may lose at most a slowdown; pfi holds its curves to
 *               that SLA less a margin for their error; breaches are counted on the true curves.
 * The no-leak rules: no curve is predicted by a model, prior or draw model that saw it, and no
 * SLA margin is learned from the job it protects.  A prediction is read only inside the cap
 * range that was measured, and both views share the job's measured baseline (the budget is cut
 * from it).
 *
 * The study layer: uses core/, store/, study/fleet.h and study/runset.h. */
#ifndef PFI_STUDY_EXPERIMENT_H
#define PFI_STUDY_EXPERIMENT_H

#include <stdint.h>

#include "core/alloc.h"
#include "core/alloc_curve.h"
#include "core/alloc_eval.h"
#include "core/curve.h"
#include "core/err.h"
#include "core/policy.h"
#include "core/probe.h"
#include "core/run.h"
#include "study/population.h"

#define PFI_EXPT_FOLDS 5
/* The quantile of the other jobs' SLA-floor errors (pfi_expt_sla_error) an SLA job is planned
 * against: 1, the most optimistic curve seen on any other job (docs/allocation.md: 0.95 was
 * tried first and left breaches; margins from a job's nearest other jobs, by pfi's curve, by
 * baseline telemetry or the predictor's own draw neighbours, left breaches on the development
 * seeds). */
#define PFI_EXPT_SLA_QUANTILE 1.0
/* Bisection steps of pfi_expt_sla_plan's share of the margins (2^-20). */
#define PFI_EXPT_SLA_PLAN_STEPS 20
/* pfi_expt_sla_plan's kappa in the study: how many times its uncertainty pfi's predicted gain
 * over the equal cut must exceed for the margin share to be kept (docs/allocation.md). */
#ifndef PFI_EXPT_PLAN_KAPPA
#define PFI_EXPT_PLAN_KAPPA 1.0
#endif
/* Rule F (docs/allocation.md): at most this many times per cut, pfi corrects the curve of each
 * SLA job whose slowdown, seen at the cap it got, breaches its SLA, and plans again. */
#define PFI_EXPT_SLA_ROUNDS 3
/* The relative caps u at which pfi_expt_gain_uncertainty reads the slowdown errors. */
#define PFI_EXPT_GAIN_U0 0.50
#define PFI_EXPT_GAIN_DU 0.05
#define PFI_EXPT_ID_MAX (PFI_NAME_MAX + 16)

/* One setting of the one-probe shape estimate (probes 1 with probe_shape): what the
 * leave-group-out cross-validation (pfi_expt_opts.shape_cv) chooses among. */
typedef struct pfi_expt_shape_set {
    double depth;    /* the probe's depth (power shed) */
    int k;           /* neighbours (core/probe.h) */
    double w_draw;   /* weight of the draw/cap at the probe in the neighbour distance */
    int tier_gpus;   /* 1: references of the same GPU model AND the same single/multi-GPU kind
                        first, then the same GPU model, then the rest; 0: GPU model only */
    int committee;   /* 1: the mean over k in {4, 5, 6, 8} x w_draw in {0, 1, 3, 5}
                        (pfi_probe_shape_mean), k and w_draw unused; 0: that one k, w_draw */
    unsigned members; /* committee: bit a * 4 + b takes neighbours {4, 5, 6, 8}[a] x draw
                        weight {0, 1, 3, 5}[b] (0: all 16) */
    double amp;      /* how far the probe rescales the neighbours' shape
                        (pfi_probe_shape_rescaled's amp; 0: their steps as they are) */
    int votes;       /* PFI_PROBE_VOTES_EQUAL: the neighbours' median step; PFI_PROBE_VOTES_NEAR:
                        weighted by nearness (core/probe.h) */
    int scale;       /* PFI_PROBE_SCALE_SLOWDOWN: the walk adds steps in slowdown;
                        PFI_PROBE_SCALE_TIME: in extra time (core/probe.h) */
    double w_p0;     /* weight of the baseline draw share P0 / max_cap in the neighbour
                        distance (core/probe.h; 0: not used) */
    int hedge;       /* 1: the mean over the six readings amplitude {0, 1/2, 1} x scale
                        {slowdown, extra time} (pfi_probe_shape_hedged_iso; amp and scale
                        unused); 2: those six weighted, job by job, by how each predicts the
                        job's neighbours (pfi_probe_shape_stacked_iso; ditto); 0: the one
                        reading amp, scale */
    int shrink;      /* 1: each member's walk drawn toward its tier's typical shape by how far
                        its neighbours are (pfi_probe_shape_opts.shrink; single walks, hedge
                        0; not in the grid); 0: not */
} pfi_expt_shape_set;

/* The setting chosen on the public sweeps (in sample: the grid's best mean gap recovered at
 * 10/20/30% cuts; docs/allocation.md gives the cross-validated figure next to it), and the
 * grid the cross-validation searches (PFI_EXPT_GRID_SIZE settings: the walk in slowdown with
 * votes {equal, near} x amplitude exponents {0, 1, 0.5} x depths 0.35-0.50 x tiers x
 * {neighbours x draw weights, or the committee}; equal votes first, and in each votes half
 * amplitude 0 first (the 136 settings of the first grid), then 1, then 0.5; the old default,
 * depth 0.40, k 8, no draw, is in it; then the walk in extra time, near votes only, amplitude
 * 0, 1, 0.5 x the same 136; then, in slowdown with near votes, the baseline draw share in the
 * neighbour distance (weight 1), amplitude 0, 1, 0.5 x the same 136; then, with near votes, the
 * hedged walk (the mean of the six readings amplitude x scale) x the same 136; then, with near
 * votes, the stacked walk (the six weighted by how each predicts the job's neighbours) x the
 * same 136).
 * pfi_expt_shape_grid writes at most max settings and returns how many there are. */
#define PFI_EXPT_GRID_SIZE 1904
extern const pfi_expt_shape_set pfi_expt_shape_default;
/* 1 when s is pfi_expt_shape_default in every field. */
int pfi_expt_shape_is_default(const pfi_expt_shape_set *s);
#define PFI_EXPT_CV_TOP 6
/* The nested cross-validation's folds and rules (pfi_expt_nested_run, below). */
#define PFI_EXPT_NEST_OUTER 4
#define PFI_EXPT_NEST_INNER 3
#define PFI_EXPT_NEST_NRULES 3
#define PFI_EXPT_NEST_MAX_SEEDS 16
#define PFI_EXPT_NEST_MAX_CUTS 8
/* The cross-validation's bagged choice (pfi_expt_opts.cv_top) among the grid's settings
 * scored v[s] (NAN: not scored; committees and settings off the grid's neighbour counts and
 * draw weights are skipped): for each depth, tiers, amplitude exponent, votes, scale and draw
 * share weight, the mean score of
 * its `top` best single settings; the best (ties: the earlier) as a committee of those
 * settings into *best.
 * Returns 0 (and leaves *best) when nothing was scored. */
int pfi_expt_bag_choice(const pfi_expt_shape_set *grid, const double *v, int ngrid, int top,
                        pfi_expt_shape_set *best);
int pfi_expt_shape_grid(pfi_expt_shape_set *out, int max);

typedef struct pfi_expt_opts {
    int probes;            /* what pfi sees: 0 the predictor out of fold, 1|2 baseline + probes */
    double depth[2];       /* fixed probe depths as power shed (probes 1: depth[0]) */
    int auto_depth;        /* probes at each job's equal share of each cut instead */
    int probe_shape;       /* probes 1: read through the population's shape (core/probe.h's
                              pfi_probe_shape_curve; the default), 0: the power law */
    pfi_expt_shape_set shape; /* the shape estimate's setting; its depth is the probe's (depth[0]
                              is the power law's) */
    int shape_cv;          /* choose the shape setting for each job group by cross-validation
                              on the OTHER groups (the grid of pfi_expt_shape_grid, each scored
                              by its mean gap recovered over the cuts run, on the population
                              without that group), instead of `shape` */
    int group_out;         /* the shape library leaves the job's whole group out, not only the
                              job (same model on other GPUs, GPU counts or batch sizes) */
    const pfi_expt_shape_set *job_sets; /* per job, a setting instead of `shape` (NULL: none;
                              shape_cv fills it for the run) */
    int nested_cv;         /* choose each job's setting by the nested cross-validation
                              (pfi_expt_nested_run; docs/allocation.md): outer folds of job
                              groups, the selection rule itself chosen inside each outer
                              training set; overrides shape_cv */
    unsigned long long cv_seed; /* nested_cv: the seed that deals the groups into folds */
    int nest_per_cut;      /* nested_cv: 1 chooses the rule and the setting for each cut on its
                              own, on that cut's gap recovered alone (the same folds), and
                              predicts each cut with its own setting: the frozen procedure run
                              with each cut alone (at most PFI_EXPT_NEST_MAX_CUTS cuts); 0: one
                              choice by the mean over the cuts, for every cut */
    const pfi_expt_shape_set *grid; /* shape_cv, nested_cv: the settings searched (NULL:
                              pfi_expt_shape_grid's; a smaller one keeps a test short) */
    int ngrid;             /* how many settings grid holds */
    int cv_top;            /* shape_cv: 0 takes the grid's best setting; m > 0 the depth and
                              tiers whose m best single settings score best on average, and
                              predicts with the committee of those m (a bagged choice: much
                              less swayed by which groups are left out; PFI_EXPT_CV_TOP) */
    unsigned long long train_seed; /* the predictor's training seed (pfi_train_opts.seed) */
    pfi_alloc_opts alloc;  /* the allocator's (cap grid, on_infeasible) */
    int want_caps;         /* fill pfi_expt_result.caps and .seen */
    /* SLA experiment (sla > 0): job j has SLA `sla` when j % sla_every == 0; pfi's curves are
     * held to sla - margin (at a tight cut, a share of it: pfi_expt_sla_plan), margin =
     * sla_margin, or, when sla_margin is NAN, the PFI_EXPT_SLA_QUANTILE quantile over the
     * OTHER jobs of how optimistic pfi's curve was at the cap where it reaches the SLA (true
     * slowdown there less pfi's). */
    double sla;
    int sla_every;
    double sla_margin;
    double breach_tol;     /* a breach: true slowdown > sla + breach_tol */
    int sla_rounds;        /* rule F's rounds of feedback per cut (PFI_EXPT_SLA_ROUNDS; 0: the
                              plan is the allocation, open loop) */
} pfi_expt_opts;

/* How optimistic pfi's curve q of job t is where it matters for an SLA: at the highest cap (1 W
 * steps down from t's maximum) at which q's slowdown reaches `sla`, where q would set the SLA's
 * floor, the true slowdown there less q's (positive: q promised more than the job gives).
 * NAN when q never reaches the SLA in the measured range, or the curves cannot be compared. */
double pfi_expt_sla_error(const pfi_alloc_job *t, const pfi_alloc_job *q, double sla);

/* Each SLA job's margin (job j has an SLA when j % every == 0; marg[j] = NAN for the others):
 * the PFI_EXPT_SLA_QUANTILE quantile of pfi_expt_sla_error(tj[k], pj[k], sla) over the OTHER
 * jobs k, never below 0: no margin is learned from the job it protects.  Returns the number of SLA jobs, -1 when out of memory. */
int pfi_expt_sla_margins(const pfi_alloc_job *tj, const pfi_alloc_job *pj, int n, double sla,
                         int every, double *marg);

/* The uncertainty, per watt moved, of each job's predicted gain: s[j] = g_j * T0_j / max cap
 * of j (T0_j: pfi's curve at the max cap), g_j the root mean square over the OTHER jobs k of
 * the slope of k's out-of-fold slowdown error, (err_k(u + du) - err_k(u)) / du, err_k(u) = true
 * slowdown - pfi's slowdown at cap u * max cap of k, u = PFI_EXPT_GAIN_U0, + PFI_EXPT_GAIN_DU,
 * ... up to 1 (where both caps lie in k's ranges).  s[j] = 0 when no other job has a slope.
 * Returns 0, -1 when out of memory. */
int pfi_expt_gain_uncertainty(const pfi_alloc_job *tj, const pfi_alloc_job *pj, int n, double *s);

/* pfi's SLAs at one budget: q[j].sla for each SLA job j (marg[j] its margin; NAN: not an SLA
 * job, whose SLA is set to none) becomes sla - t * marg[j], t the largest in [0, 1] (to
 * 2^-PFI_EXPT_SLA_PLAN_STEPS) at which pfi's allocation on q, valued on q LESS kappa times the
 * uncertainty of its gain over the equal cut (sum over jobs of unc[j] x |its cap - its cap
 * under the equal cut|, unc from pfi_expt_gain_uncertainty; kappa 0: no bound, unc unread), is
 * worth at least, on q, an equal cut with the plain SLAs: t = 1, the whole margin, when it
 * already is.  So pfi never plans an allocation whose gain over the equal cut, on its own
 * curves, is smaller than kappa times its uncertainty, and when the whole margin does not fit
 * the budget it keeps the share that does instead of relaxing every SLA.  When no share
 * passes, t = 0 (plain SLAs); when even the plain SLAs do not fit an equal cut, they are set
 * plain for the allocator's on-infeasible mode.  Returns t; NAN on error. */
double pfi_expt_sla_plan(pfi_alloc_job *q, int n, double sla, const double *marg,
                         const double *unc, double kappa, double budget_w,
                         const pfi_alloc_opts *ao, pfi_err *err);

/* `probes` at core/probe.h's depth (two probes: 0.20, 0.40), the predictor's default seed, the
 * allocator's defaults, no SLA (when one is set: every third job, margin measured). */
pfi_expt_opts pfi_expt_defaults(int probes);
/* 1 when a figure of eo on p is in sample: the one-probe default setting, chosen on the public
 * sweeps themselves, scored on a population that holds them (--public, or a store they were
 * imported into: it was said for --public only); the held-out figure is the nested one. */
int pfi_expt_setting_in_sample(const pfi_expt_pop *p, const pfi_expt_opts *eo);

/* What the cross-validations choose from: v[s], the mean gap recovered over the cuts (equal,
 * pfi and oracle; NAN: none ran) of grid[s] (o otherwise, without its cross-validation, SLAs
 * or auto depths) on the population of p's jobs with out[j] == 0, every setting scored as
 * pfi_expt_run scores it alone.  What the settings share (the equal and oracle allocations,
 * a committee's members that are also single settings) is computed once. */
int pfi_expt_score_grid(const pfi_expt_pop *p, const pfi_expt_opts *o, const unsigned char *out,
                        const pfi_expt_shape_set *grid, int ngrid, const double *cuts, int ncuts,
                        double *v, pfi_err *err);

/* The jobs of one experiment: each as measured (truth) and as pfi sees it (pred); job j is
 * population job j, its id the run's name (made unique). */
typedef struct pfi_expt_jobs {
    int n;
    int relative;            /* GPU-weighted relative throughput (some run lacks tokens/s) */
    const char *unit;        /* "tokens/s" or "GPU-weighted relative throughput" */
    long gpus;
    pfi_alloc_job *truth, *pred;
    char note[400];          /* what pfi saw, once predicted */
    pfi_alloc_curve *tbuf, *pbuf;
    char (*ids)[PFI_EXPT_ID_MAX];
} pfi_expt_jobs;

/* The truth of every job (pred zeroed until pfi_expt_predict). */
int pfi_expt_jobs_new(const pfi_expt_pop *p, pfi_expt_jobs *out, pfi_err *err);
/* What pfi sees (o->probes, depths), into j->pred and j->note; `cut` only places auto-depth
 * probes.  SLAs are left at none. */
int pfi_expt_predict(const pfi_expt_pop *p, const pfi_expt_opts *o, double cut,
                     pfi_expt_jobs *j, pfi_err *err);
void pfi_expt_jobs_free(pfi_expt_jobs *j);

typedef struct pfi_expt_result {
    int n, ncuts;
    pfi_expt_jobs jobs;      /* truth, and pred as of the last cut predicted; unit, note, gpus */
    pfi_eval_cell *cells;    /* [cut * PFI_POLICY_COUNT + policy] */
    /* with want_caps, [(cut * PFI_POLICY_COUNT + policy) * n + j]: the per-GPU cap, and the
     * throughput the curves the policy saw promised there */
    double *caps, *seen;
    /* with an SLA: per cell, SLA jobs whose true slowdown breached, and the largest true
     * slowdown - sla (-INFINITY: no SLA job got a cap) */
    int n_sla_jobs;
    double sla_margin;       /* the margin pfi kept, mean over the SLA jobs */
    int *breaches;
    double *worst;
    /* with an SLA, per cell: the SLA jobs' share, the sum of n_gpus x cap (W) and their true
     * throughput (the other jobs': the cell's power_w and total_throughput less these) */
    double *sla_power, *sla_tput;
    /* with an SLA, per cut: the equal policy given pfi's information (pfi's curves and the
     * SLAs pfi planned at that cut, relaxed alike), scored on the true curves, its breaches
     * and largest true slowdown - sla; gap_recovered and per_job_gain_vs_equal against the
     * cut's equal (true floors) and oracle */
    pfi_eval_cell *eq_pred;
    int *eq_pred_breaches;
    double *eq_pred_worst;
    /* with an SLA, per cut, rule F's feedback: pfi's breaches and largest true slowdown - sla
     * at its plan, before any (the cells hold the allocation after it); the rounds that planned
     * again; the SLA jobs an observation corrected; 1 where a correction no longer fitted and
     * the allocation before it was kept.  (caps and seen: the allocation after the feedback;
     * seen read on pfi's curves before it.) */
    int *plan_breaches;
    double *plan_worst;
    int *fb_rounds, *fb_jobs;
    unsigned char *fb_unfit;
    /* with an SLA, per cut: 1 where even the plain SLAs did not fit the budget on pfi's curves,
     * so that it relaxed every SLA (its SLA jobs read on their calibrated curves) and no
     * feedback ran: its breaches there are its plan's, whether or not the true floors fit */
    unsigned char *pfi_relaxed;
    pfi_expt_shape_set *sets; /* with shape_cv: per job, the setting chosen for its group;
                              with nest_per_cut, [cut * n + job]: each cut's */
    int nest_rule[PFI_EXPT_NEST_OUTER]; /* with nested_cv: per outer fold, the rule chosen (its
                              top; with nest_per_cut, the first cut's) */
    pfi_expt_shape_set nest_set[PFI_EXPT_NEST_OUTER]; /* ... and the setting it gave the fold */
    /* with nested_cv, per cut (the first PFI_EXPT_NEST_MAX_CUTS) and outer fold: the rule and
     * the setting each cut was predicted with (without nest_per_cut, the one choice each time) */
    int nest_rule_cut[PFI_EXPT_NEST_MAX_CUTS][PFI_EXPT_NEST_OUTER];
    pfi_expt_shape_set nest_set_cut[PFI_EXPT_NEST_MAX_CUTS][PFI_EXPT_NEST_OUTER];
} pfi_expt_result;

/* The experiment at each cut with each policy (equal and oracle always run), every allocation
 * scored on the true curves.  With auto depths each cut is predicted on its own. */
int pfi_expt_run(const pfi_expt_pop *p, const pfi_expt_opts *o, const double *cuts, int ncuts,
                 const int *policies, int npolicies, pfi_expt_result *out, pfi_err *err);
void pfi_expt_result_free(pfi_expt_result *r);

/* The nested cross-validation of the one-probe estimate (docs/allocation.md), frozen before its
 * score was seen: the job groups, shuffled by the seed, dealt into PFI_EXPT_NEST_OUTER outer
 * folds; for each, the selection rule (the grid's one best setting, or the bagged committee of
 * the 3 or 6 best: PFI_EXPT_NEST_RULES) is chosen by an inner cross-validation over
 * PFI_EXPT_NEST_INNER folds of the other groups, then applied to the grid scored on all the
 * other groups to give the fold's setting. */
extern const int pfi_expt_nest_rules[PFI_EXPT_NEST_NRULES]; /* {0, 3, 6} */
/* Seeds 1..nseeds, each run twice: the library of every other job (mode 0) and of every other
 * job group (mode 1, the never-seen model); pfi's gap recovered per seed and cut, its mean and
 * range over the seeds, and the rules the outer folds chose and the settings they gave (with
 * o->nest_per_cut, each cut's: rule_cut, set_cut; rule and set are then the first cut's). */
typedef struct pfi_expt_nested_summary {
    int nseeds, ncuts, n_jobs;
    double gap[2][PFI_EXPT_NEST_MAX_SEEDS][PFI_EXPT_NEST_MAX_CUTS];
    double mean[2][PFI_EXPT_NEST_MAX_CUTS], lo[2][PFI_EXPT_NEST_MAX_CUTS],
        hi[2][PFI_EXPT_NEST_MAX_CUTS];
    int rule[2][PFI_EXPT_NEST_MAX_SEEDS][PFI_EXPT_NEST_OUTER];
    pfi_expt_shape_set set[2][PFI_EXPT_NEST_MAX_SEEDS][PFI_EXPT_NEST_OUTER]; /* each fold's */
    /* per cut: each fold's rule and setting at that cut (pfi_expt_result.nest_rule_cut) */
    int rule_cut[2][PFI_EXPT_NEST_MAX_SEEDS][PFI_EXPT_NEST_MAX_CUTS][PFI_EXPT_NEST_OUTER];
    pfi_expt_shape_set set_cut[2][PFI_EXPT_NEST_MAX_SEEDS][PFI_EXPT_NEST_MAX_CUTS]
                              [PFI_EXPT_NEST_OUTER];
    /* a cut deeper than the jobs' minimum caps allow: no policy runs there, so it has no gap
     * (mean, lo and hi NAN) and no choice; its budget and what the minimum caps need */
    int infeasible[PFI_EXPT_NEST_MAX_CUTS];
    double budget_w[PFI_EXPT_NEST_MAX_CUTS], min_budget_w[PFI_EXPT_NEST_MAX_CUTS];
} pfi_expt_nested_summary;
int pfi_expt_nested_run(const pfi_expt_pop *p, const pfi_expt_opts *o, const double *cuts,
                        int ncuts, int nseeds, pfi_expt_nested_summary *out, pfi_err *err);

#endif
