/* SPDX-License-Identifier: Apache-2.0 */
/* measure.h: characterizing a training job.  Read this first if you touch src/measure/.
 *
 * A sweep steps the power limit of a job's GPUs through a list of caps (the default limit
 * first: the baseline whose telemetry runtime prediction uses later) and, at each cap, waits
 * out the transient, then measures the job's throughput until it is steady (its confidence
 * interval narrow enough) or a maximum dwell passes, while telemetry is sampled at >= 10 Hz.
 * Every exit path puts the original limits back.
 *
 * The protocol (pfi_sweep_run) knows neither whether time is real or virtual nor whether the
 * GPUs are: it gets a backend (pfi_hw_now / pfi_hw_sleep are its clock, hw/hw.h) and a
 * throughput source:
 *   pfi_source_launch   lines of a COMMAND it runs (launch.h), parsed by parse.h
 *   pfi_source_follow   lines appended to the log of a job already running (--attach)
 *   pfi_source_sim      cumulative tokens of a simulated job read from the node (virtual time:
 *                       ~190 sweeps of the study run in seconds)
 * Results are a pfi_run (core/run.h) and, as each level completes, a call to a sink (the CLI
 * plugs the SQLite store in; the study keeps them in memory).
 *
 * Pieces: parse.h (log formats), meter.h (rates, confidence intervals, steady state),
 * sampler.h (telemetry thread), launch.h (process group, log tee, tail -F), journal.h (durable
 * original limits; `pfi restore`).  docs/sweep.md describes the protocol for users. */
#ifndef PFI_MEASURE_MEASURE_H
#define PFI_MEASURE_MEASURE_H

#include <signal.h>

#include "core/err.h"
#include "core/run.h"
#include "hw/hw.h"
#include "measure/journal.h"
#include "measure/meter.h"
#include "measure/parse.h"

/* ---- throughput sources ---- */

/* Called for each observation with the time it arrived on the backend's clock. */
typedef void (*pfi_obs_fn)(void *ctx, const pfi_obs *o, double t);

typedef struct pfi_tput_source pfi_tput_source;
struct pfi_tput_source {
    const char *kind; /* "command", "follow", "sim" */
    /* Lets backend time pass until `until`, reporting observations as they come.  PFI_ECHILD
     * when the job ended (the message says how). */
    int (*wait)(pfi_tput_source *s, pfi_backend *b, double until, pfi_obs_fn fn, void *ctx,
                pfi_err *err);
    /* --restart: end the job and start it again (NULL when the source cannot). */
    int (*restart)(pfi_tput_source *s, pfi_err *err);
    /* Ends the job, if the source started one. */
    void (*stop)(pfi_tput_source *s);
    void (*destroy)(pfi_tput_source *s);
    pfi_parser *parser; /* log sources; NULL for the simulator */
    const char *path;   /* the followed log (kind "follow"); NULL otherwise */
    /* Set by the sweep: a wait returns early once *interrupt is non-zero (NULL: never). */
    const volatile sig_atomic_t *interrupt;
    void *impl;
};

/* stdout_fd: where the job's stdout is passed through (STDOUT_FILENO, or STDERR_FILENO when
 * our stdout carries a JSON document). */
int pfi_source_launch(char *const argv[], const char *log_path, int stdout_fd,
                      const pfi_parse_cfg *pc, pfi_tput_source **out, pfi_err *err);
int pfi_source_follow(const char *path, const pfi_parse_cfg *pc, pfi_tput_source **out,
                      pfi_err *err);
/* Job `job` of the simulated node behind the backend (hw/backend_sim.h). */
int pfi_source_sim(int job, pfi_tput_source **out, pfi_err *err);
void pfi_source_free(pfi_tput_source *s);

/* ---- the sweep ---- */

typedef enum pfi_sweep_order {
    PFI_ORDER_DESCENDING = 0,
    PFI_ORDER_ASCENDING,
    PFI_ORDER_RANDOM,
} pfi_sweep_order;

/* What a sink gets when a level is done: the level and the telemetry behind it, every tick
 * of the level (transient included), samples[tick * n_gpus + i] for GPU gpus[i]. */
typedef struct pfi_sweep_sink {
    void *ctx;
    int (*begin)(void *ctx, const pfi_run *run, pfi_err *err);
    int (*level)(void *ctx, const pfi_run *run, int idx, const pfi_sample *samples, int nticks,
                 const int *gpus, int n_gpus, pfi_err *err);
    void (*end)(void *ctx, const pfi_run *run, const char *status);
    /* Optional: the store run begin() made (its id, 0 for none; *db an absolute path), named
     * in the journal so that pfi restore can mark it interrupted after a SIGKILL. */
    long long (*run_ref)(void *ctx, const char **db);
} pfi_sweep_sink;

typedef struct pfi_sweep_progress {
    int level, n_levels;     /* 0-based level in progress */
    double cap_w;
    double level_elapsed_s;  /* since its limit was set */
    double elapsed_s;        /* since the sweep began */
    double remaining_s;      /* estimate from the levels done so far (max dwell before any) */
    double tput;             /* live estimate over the current window (NAN before data) */
    double rel_ci;           /* its CI half-width / mean (NAN before data) */
    double power_w;          /* latest mean power per GPU */
    int settling;            /* 1 while the transient after the change is being discarded */
    int done;                /* 1 when the level just completed (tput is final) */
    int steady;
    const char *unit;        /* of tput: "tokens/s" or "samples/s"; NULL before any data */
} pfi_sweep_progress;

typedef struct pfi_sweep_cfg {
    int gpus[PFI_MAX_GPUS];
    int n_gpus;
    /* The levels: fractions of each GPU's maximum limit (levels_frac=1) or watts. */
    double levels[PFI_MAX_LEVELS];
    int n_levels;
    int levels_frac;
    pfi_sweep_order order;
    unsigned seed;            /* PFI_ORDER_RANDOM */
    double dwell_s;           /* > 0: fixed measuring time per level after the transient */
    double max_dwell_s;       /* auto dwell: give up waiting for steady (default 120 s) */
    double timeout_s;         /* no observation for this long: fail (default 300 s) */
    pfi_steady_cfg steady;
    double tick_s;            /* the loop and telemetry period (default 0.1 s) */
    int threaded_sampler;     /* 1 in real time */
    int restart;              /* one run of the job per level (--restart) */
    /* 0: the baseline is each GPU's default limit (it may raise a GPU above its limit in
     * force: pfi_sweep_plan_note says which); 1: the limits in force, and no level above them
     * (--baseline current). */
    int baseline_current;
    const char *journal_path; /* NULL: no journal (a virtual study) */
    const char *name;         /* run name */
    pfi_job_meta meta;
    const volatile sig_atomic_t *stop; /* set by a signal handler: stop, restore, report */
    pfi_sweep_sink sink;
    void (*progress)(void *ctx, const pfi_sweep_progress *p);
    void *progress_ctx;
    /* Called with progress_ctx once per level (0-based) for each GPU that enforces another
     * limit than asked (by more than 1 W: an out-of-band cap), with pfi_hw_apply's message
     * ("asked 560 W, the device enforces 450 W").  NULL: not said. */
    void (*mismatch)(void *ctx, int level, int gpu, const char *msg);
} pfi_sweep_cfg;

void pfi_sweep_defaults(pfi_sweep_cfg *c);

typedef struct pfi_sweep_result {
    pfi_run run;                 /* levels in the order measured; levels[0] is the baseline */
    int steady[PFI_MAX_LEVELS];  /* 1 when the CI rule was met, 0 when max dwell cut it */
    double level_s[PFI_MAX_LEVELS]; /* each level's time, from its cap change (or the job's
                                   * restart) to its end: what core/cost.h charges */
    char status[16];             /* "done", "failed", "interrupted" */
    int restored;                /* 1 when every original limit was put back */
    long lines, observations;    /* log sources */
    char format[16];             /* the log format detected ("" for the simulator) */
    long telemetry_errors;       /* telemetry readings that failed (a GPU's sample left out) */
    char telemetry_error[160];   /*   the last one's message ("" when none) */
} pfi_sweep_result;

/* What a plan does to the limits in force, for a caller to say (pfi_sweep_plan). */
typedef struct pfi_sweep_plan_note {
    /* The GPUs the baseline (their default limit) sets above their limit in force. */
    int n_raised;
    int raised_gpu[PFI_MAX_GPUS];
    double raised_from_w[PFI_MAX_GPUS], raised_to_w[PFI_MAX_GPUS];
    int n_above;   /* levels after the baseline above some GPU's limit in force */
    /* --baseline current: the requested levels (as given: fractions or watts) left out for
     * being above some GPU's limit in force. */
    int n_dropped;
    double dropped[PFI_MAX_LEVELS];
} pfi_sweep_plan_note;

/* The caps (watts, per GPU i of cfg->gpus: caps[level][i]) in the order they will be run,
 * the baseline (default limit, or with cfg->baseline_current the limit in force) first.  note
 * (may be NULL) gets what the plan does to the limits in force.  Validates every cap against every GPU's constraints: a cap out of
 * range is PFI_ERANGE naming it, a GPU whose minimum, maximum or default limit cannot be read
 * PFI_ENOTSUP naming it and why, before anything is changed. */
int pfi_sweep_plan(pfi_backend *b, const pfi_sweep_cfg *c, double caps[][PFI_MAX_GPUS],
                   int *n_levels, pfi_sweep_plan_note *note, pfi_err *err);

/* Whether every swept GPU's limit can be set, found by setting each to its own limit (no
 * change; NVML refuses it all the same without root or CAP_SYS_ADMIN), before a job is
 * launched: else PFI_EPERM (or the driver's error) naming the GPU.  A sweep that learnt it at
 * its first lowering had run its job and a whole baseline level for nothing. */
int pfi_sweep_check_settable(pfi_backend *b, const pfi_sweep_cfg *c, pfi_err *err);

/* Runs the sweep.  Whatever happens, limits are restored before it returns (res->restored
 * says whether that worked) and the levels completed so far are in res->run and were given to
 * the sink.  Errors: PFI_ECHILD (the job ended early), PFI_ETIMEOUT (no throughput),
 * PFI_ESTATE (interrupted by *stop), PFI_EINVAL (the log's unit cannot become tokens/s or
 * samples/s), plus the backend's. */
int pfi_sweep_run(pfi_backend *b, pfi_tput_source *src, const pfi_sweep_cfg *c,
                  pfi_sweep_result *res, pfi_err *err);

/* ---- a job's baseline, live ---- */

/* Mean telemetry of gpus[0..n) over duration_s at their current limits (sampled at 10 Hz of
 * backend time), as the one level of *out (no throughput; name left empty).  PFI_ENOTSUP when
 * the backend gave no power reading. */
int pfi_measure_baseline(pfi_backend *b, const int *gpus, int n, double duration_s,
                         pfi_run *out, pfi_err *err);

/* Whether such a baseline is what the predictor reads: a job running at its GPUs' default
 * limit.  Idle GPUs are PFI_ESTATE; GPUs capped below their default (in band or out of band)
 * are PFI_ESTATE too unless allow_capped, and *note (n bytes) then says how ("" when not). */
int pfi_measure_baseline_usable(const pfi_run *r, int allow_capped, char *note, size_t n,
                                pfi_err *err);

#endif
