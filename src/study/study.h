/* SPDX-License-Identifier: Apache-2.0 */
/* study.h: the paper end to end, pfi's main job (`pfi study`, `make demo`).
 *
 *   1. runs: the simulated paper fleet characterized in virtual time (study/fleet.h), or the
 *      runs of a store measured on real GPUs or imported from public data (--from-db);
 *   2. every run's PFI curve, PFI10..40 and PFI30 with its confidence interval (core/pfi.h);
 *   3. the runtime predictor trained on the main runs, validated on the validation runs and on
 *      the other GPU type (transfer), with feature importance (core/predict.h);
 *   4. the allocation experiment at cuts of 10-50% with equal, pfi, oracle and
 *      proportional-to-pfi, pfi seeing only curves predicted for jobs its model was not trained
 *      on (or baseline + one probe where there is no telemetry), and again with SLAs: the same
 *      experiment as `pfi evaluate` (study/experiment.h);
 *   5. a report (report.md, report.html, figures in PNG and SVG, summary.json) in a directory.
 * A step the data cannot support (imported runs carry no telemetry, say) is reported as not
 * done, with the reason: never invented.
 *
 * This layer does I/O (the store, the report files); the math lives in core/. */
#ifndef PFI_STUDY_STUDY_H
#define PFI_STUDY_STUDY_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/alloc_eval.h"
#include "core/cost.h"
#include "core/features.h"
#include "core/grid_day.h"
#include "core/importance.h"
#include "core/pfi.h"
#include "core/policy.h"
#include "core/predict.h"
#include "core/run.h"
#include "study/cost_eval.h"

#define PFI_STUDY_MAX_CUTS 8
#define PFI_STUDY_MAX_NOTES 16
#define PFI_STUDY_TRACE_GPUS 32
#define PFI_STUDY_TRACE_PTS 256
#define PFI_STUDY_FOLDS 5

typedef struct pfi_study_opts {
    const char *fleet;    /* "paper" (default), "small", or a fleet file; ignored with from_db */
    const char *from_db;  /* analyse the runs of this store instead of a simulated fleet */
    const char *out_dir;  /* where the store, report and figures go (created) */
    uint64_t seed;
    int n_cuts;
    double cuts[PFI_STUDY_MAX_CUTS];
    double sla;           /* max slowdown given to every third job in the SLA experiment */
    int figures;          /* 0: skip gnuplot (tables and JSON only) */
    const char *scenario; /* NULL, or "grid-day": also a simulated site's day under two grid
                             events (core/grid_day.h) on the allocation's jobs */
    int direct;           /* characterize the fleet from the simulator directly, not through
                             the sweep protocol (faster; for quick looks) */
    /* Progress: called at each step and every few runs; may be NULL. */
    void (*progress)(void *ctx, const char *step, int done, int total);
    void *progress_ctx;
} pfi_study_opts;

void pfi_study_defaults(pfi_study_opts *o);

typedef struct pfi_study_run {
    pfi_run run;
    char set[16];          /* "main", "validation", "h100" for the fleet; "db" for a store */
    int group;             /* runs of one job configuration */
    int match;             /* h100 runs: index of the matched H200 run; else -1 */
    int index_ok;
    pfi_index index;       /* valid when index_ok */
    /* The run's PFI30 in every table, figure and summary of the study: pfi index's headline
     * (index.pfi_head, core/pfi.h: the monotone interpolation of the measured points) where the
     * sweep reaches a 30% shed; NAN where it would be an extrapolation on the fit (those runs
     * are listed as left out, not read on the fit). */
    double pfi30;
    char index_why[160];   /* why not, when !index_ok */
    /* The prediction the predictor table scored for this run (NAN: none): leave one job out
     * for a training run, trained on the training runs for a validation run, trained on the
     * H200 runs for an H100 run (transfer); meas_pfi30 the truth it was scored against (pfi30;
     * NAN where the run was predicted but not scored: its PFI30 would be an extrapolation). */
    double pred_pfi30, meas_pfi30;
    int in_alloc;          /* part of the allocation population */
    int cost_ok;           /* every level has its recorded time (core/run.h began_s, ended_s) */
    pfi_cost cost;         /* what characterizing the run cost, when cost_ok */
} pfi_study_run;

/* What characterizing the runs cost (core/cost.h: each level's GPU-seconds and the work lost
 * against the run's baseline rate, from the level's recorded start and end), and how much of
 * a sweep a PFI30 needs (study/cost_eval.h: one probe and sweeps of 2-6 levels against the full
 * sweep, on these runs). */
typedef struct pfi_study_cost {
    int n_timed;           /* runs whose every level has its time (cost_ok) */
    int eval_done;
    char eval_why[256];    /* when !eval_done */
    pfi_cost_eval eval;
    double eval_s;         /* what the evaluation added to the study */
} pfi_study_cost;

typedef struct pfi_study_alloc {
    int done;
    char why[256];             /* when !done */
    char population[160];      /* which jobs, e.g. "155 H200 runs" */
    char pfi_curves[448];      /* what the pfi policy saw (the experiment's note) */
    int setting_in_sample;     /* its one-probe setting was chosen on these very curves (the
                                * public sweeps): pfi_expt_setting_in_sample */
    char unit[48];             /* "tokens/s" or "GPU-weighted relative throughput" */
    int relative;              /* the latter: its numbers read with significant digits */
    int n_jobs;
    int n_cuts;
    double cuts[PFI_STUDY_MAX_CUTS];
    pfi_eval_cell cell[PFI_STUDY_MAX_CUTS][PFI_POLICY_COUNT];
    /* The same with SLAs; sla_violations counts jobs whose TRUE slowdown broke their SLA. */
    double sla;
    double sla_margin;         /* pfi's SLA tightened by this (mean over the SLA jobs), for
                                * its curves' error */
    double breach_tol;         /* a breach: true slowdown > sla + breach_tol */
    int n_sla_jobs;
    pfi_eval_cell sla_cell[PFI_STUDY_MAX_CUTS][PFI_POLICY_COUNT];
    int sla_violations[PFI_STUDY_MAX_CUTS][PFI_POLICY_COUNT];
    double sla_worst[PFI_STUDY_MAX_CUTS][PFI_POLICY_COUNT]; /* largest true slowdown - sla */
    /* the SLA jobs' caps (sum of n_gpus x cap, W) and true throughput (pfi_expt_result) */
    double sla_jobs_power[PFI_STUDY_MAX_CUTS][PFI_POLICY_COUNT];
    double sla_jobs_tput[PFI_STUDY_MAX_CUTS][PFI_POLICY_COUNT];
    /* The equal policy given pfi's information: its SLA floors on pfi's curves, the SLAs pfi
     * planned (pfi_expt_result.eq_pred), scored on the true curves. */
    pfi_eval_cell sla_eq_pred[PFI_STUDY_MAX_CUTS];
    int sla_eq_pred_violations[PFI_STUDY_MAX_CUTS];
    double sla_eq_pred_worst[PFI_STUDY_MAX_CUTS];
    /* pfi's SLA feedback (rule F, docs/allocation.md; pfi_expt_result): its breaches and
     * largest true slowdown - sla at the plan, before the feedback (sla_violations: after);
     * the rounds that planned again, the SLA jobs corrected, and 1 where a correction no longer
     * fitted and the allocation before it was kept */
    int sla_plan_violations[PFI_STUDY_MAX_CUTS];
    double sla_plan_worst[PFI_STUDY_MAX_CUTS];
    int sla_fb_rounds[PFI_STUDY_MAX_CUTS], sla_fb_jobs[PFI_STUDY_MAX_CUTS];
    int sla_fb_unfit[PFI_STUDY_MAX_CUTS];
    /* 1 where the SLAs did not fit on pfi's own curves: it relaxed every SLA and no feedback
     * ran (pfi_expt_result.pfi_relaxed), even where the true floors fit */
    int sla_pfi_relaxed[PFI_STUDY_MAX_CUTS];
    int sla_rounds;            /* the feedback's most rounds per cut (0: none) */
} pfi_study_alloc;

typedef struct pfi_study_pred {
    int done;
    char why[256];
    int n_train;
    int model_kind;            /* selected on the main runs */
    pfi_model_eval lojo;       /* leave-one-job-out on the main runs */
    /* Its predictions scored as `pfi model eval` scores them: against each run's PFI30 on its
     * fitted curve, every run (the tables score against the measured PFI30, pfi30). */
    pfi_model_eval lojo_fit;
    int have_validation, have_h200_to_h100, have_h100_to_h200;
    pfi_model_eval validation; /* trained on main, tested on validation */
    pfi_model_eval h200_to_h100, h100_to_h200;
    /* Grouped permutation importance on the training runs, each predicted by its fold's model
     * (core/importance.h). */
    int have_importance;
    pfi_importance importance;
    /* The models behind the out-of-sample predictions: `full` trained on every training run
     * (predicts the others), fold[f] trained without the job groups g with g % FOLDS == f. */
    pfi_model full;
    pfi_model fold[PFI_STUDY_FOLDS];
    int have_fold[PFI_STUDY_FOLDS];
} pfi_study_pred;

/* Clock and power of each GPU of one multi-GPU job across a cap step (simulated fleet only). */
typedef struct pfi_study_trace {
    int done;
    char run[PFI_NAME_MAX];
    int n_gpus, n;
    double cap_w, step_at_s;
    /* Settling time of each GPU's power and SM clock after the step (core/settle.h; NAN: not
     * settled within the trace). */
    double power_settle_s[PFI_STUDY_TRACE_GPUS], clock_settle_s[PFI_STUDY_TRACE_GPUS];
    /* When each GPU's clock reaches its final value and stays (core/settle.h pfi_final_time). */
    double clock_final_s[PFI_STUDY_TRACE_GPUS];
    double t[PFI_STUDY_TRACE_PTS];
    double clock[PFI_STUDY_TRACE_GPUS][PFI_STUDY_TRACE_PTS];
    double power[PFI_STUDY_TRACE_GPUS][PFI_STUDY_TRACE_PTS];
} pfi_study_trace;

/* The grid day (--scenario grid-day): the allocation's jobs (truth, and the curves pfi sees)
 * on a simulated site through a day with two events. */
typedef struct pfi_study_grid {
    int done;
    char why[256];
    char unit[48];             /* of tput_lost: "tokens" or "GPU-weighted relative x s" */
    double elapsed_s;          /* what the grid day added to the study */
    pfi_grid_day day;
    pfi_grid_day_opts opts;
} pfi_study_grid;

typedef struct pfi_study {
    pfi_study_opts opts;
    char source[256];          /* "simulated fleet 'paper', seed 1" or "store FILE" */
    char db_path[1024];        /* the store the runs are in */
    pfi_study_run *runs;
    int n;
    pfi_study_pred pred;
    pfi_study_alloc alloc;
    pfi_study_trace trace;
    pfi_study_grid grid;
    pfi_study_cost cost;
    int n_notes;
    char notes[PFI_STUDY_MAX_NOTES][256]; /* steps not done and why; caveats */
    double elapsed_s;
    double step_s[5];          /* time of each step */
} pfi_study;

/* Runs the study; on success *out holds everything the report shows (free with
 * pfi_study_free).  Writes DIR/study.db for a simulated fleet. */
int pfi_study_execute(const pfi_study_opts *o, pfi_study *out, pfi_err *err);
void pfi_study_free(pfi_study *s);

/* DIR/report.md, DIR/report.html, DIR/summary.json and the figures.  Without gnuplot the
 * report is still written in full, with a note where each figure would be (its .dat and .gp
 * beside it), and *no_gnuplot is set to 1 (0 otherwise). */
int pfi_study_write_report(const pfi_study *s, const char *dir, int *no_gnuplot, pfi_err *err);

/* The machine-readable summary (also printed by `pfi study --json`); caller json_decref()s. */
struct json_t;
struct json_t *pfi_study_summary(const pfi_study *s);

/* study_cost.c, for the report: summary.json's characterization_cost (totals, per run and
 * level, and the probe-vs-sweep rows). */
struct json_t *pfi_study_cost_json(const pfi_study *s);
/* The report's sentence on the totals. */
void pfi_study_cost_text(const pfi_study *s, char *buf, size_t cap);
/* The report's tables: per run set (totals and medians), and the probe-vs-sweep rows. */
struct pfi_table;
struct pfi_table *pfi_study_cost_table(const pfi_study *s);
struct pfi_table *pfi_study_cost_eval_table(const pfi_study *s);

#endif
