/* SPDX-License-Identifier: Apache-2.0 */
/* serve_int.h: what the files of src/serve share; nothing outside src/serve includes it.
 *
 * Locking: node->mu guards the state (GPUs' last readings, jobs, budget, mode, events) and is
 * held only for short copies, so GET requests never wait for hardware.  node->decide_mu
 * serializes every decision (plan + apply + audit): a mutating request takes it first, computes
 * on a copy, and commits to the state only what it applied.  node->hw_mu guards the backend. */
#ifndef PFI_SERVE_SERVE_INT_H
#define PFI_SERVE_SERVE_INT_H

#include <jansson.h>
#include <pthread.h>

#include "core/alloc_seen.h"
#include "core/curve.h"
#include "core/event.h"
#include "measure/meter.h"
#include "measure/parse.h"
#include "serve/serve.h"
#include "store/audit.h"
#include "util/clock.h"
#include "util/http_query.h"
#include "util/prom.h"
#include "util/series.h"

#define SRV_ID_MAX 64
#define SRV_MAX_JOBS PFI_MAX_GPUS
#define SRV_CONTROLLER_HEARD_S 60 /* a controller heard within this is named as commanding */
#define SRV_EVENTS 512
#define SRV_MIN_BASELINE 10 /* baseline samples before a job's curve is predicted */
/* A log's baseline is its tokens over this many seconds of the level: one tick's interval of a
 * progress bar is whole steps, 2 or 3 of a job at 2.3 it/s (-13%/+30%), and the baseline (the
 * SLA check's and the probe's reference) swung with it; over 30 s a step is 1.4% of such a job. */
#define SRV_LOG_RATE_WINDOW_S 30.0
/* A level's samples are cut back to two windows past this many, once the level is measured or
 * has lasted this long unmeasured: a job at one cap for days kept every line of its log. */
#define SRV_LOG_KEEP_SAMPLES 4096
#define SRV_LOG_KEEP_LEVEL_S 3600.0
/* A job's SLA breaches seen in its log and kept for its plan (follow.c, plan.c): the latest
 * PFI_ALLOC_SEEN_MAX; a level must be slower than the SLA allows by SRV_SLA_TOL at the fast end
 * of its 95% interval to count (the study's breach tolerance). */
#define SRV_SLA_TOL 0.002
/* Bounds on what a request may say: far above any real node or job, low enough that every sum
 * and product of them stays finite and exact to the milliwatt. */
#define SRV_MAX_BUDGET_W 1e6  /* a node's budget */
#define SRV_MAX_CAP_W 1e5     /* one GPU's cap, a curve point's cap or baseline */
#define SRV_MAX_TPS 1e12      /* a job's tokens/s */
#define SRV_MAX_FIT_P 1e6     /* |parameter| of a fitted curve */
#define SRV_NAME_MAX 127      /* a controller's name, in bytes */
#define SRV_T0_REPORTS 64     /* uncapped throughput reports a job's baseline averages */

enum srv_curve_src {
    SRV_CURVE_NONE = 0, /* nothing known yet: treated as throughput proportional to power */
    SRV_CURVE_GIVEN,    /* registered with the job: measured points or a fit */
    SRV_CURVE_PFI,      /* registered as a PFI30 */
    SRV_CURVE_PREDICTED, /* predicted online from the job's baseline telemetry */
    SRV_CURVE_PROBED,    /* baseline + one short probe at a lower cap (core/probe.h) */
    SRV_CURVE_OBSERVED   /* steady tokens/s read from the job's log at the caps applied */
};
/* "none", "given", "pfi30", "predicted", "probed", "observed" */
const char *pfi_srv_curve_src_name(int src);

enum srv_probe_state {
    SRV_PROBE_OFF = 0, /* not allowed by whoever registered the job */
    SRV_PROBE_WAITING, /* allowed; waits for a baseline (power and tokens/s) */
    SRV_PROBE_RUNNING,
    SRV_PROBE_DONE,
    SRV_PROBE_FAILED
};

/* A probe: the job held at a lower cap for a bounded time while its power and reported
 * tokens/s are averaged (after the first third, the transient). */
typedef struct srv_probe {
    int state;              /* srv_probe_state */
    double depth;           /* power to shed, fraction of the baseline draw */
    double duration_s;
    double cap_w;           /* cap while running */
    double t0, t1;          /* monotonic start and end */
    double pow_sum, tps_sum;
    int pow_n, tps_n;
    double r, s;            /* measured shed and slowdown */
    double held_s, gpu_s, lost; /* what it cost (core/cost.h): time held, GPU-seconds, tokens
                                 * lost against the baseline rate; NAN until measured */
    char msg[320];         /* what became of it (a failure's whole reason: 160 bytes cut it) */
} srv_probe;

/* The measured curves a probe is read through, each with its GPU model (for the tiers). */
typedef struct srv_library {
    int n;
    pfi_curve *curve;
    char (*gpu)[32];
    char where[256];
} srv_library;

enum srv_mode {
    SRV_MODE_LOCAL = 0, /* this node allocates its budget itself */
    SRV_MODE_EXTERNAL,  /* caps handed down by a cluster controller (PUT /v1/caps) */
    SRV_MODE_SAFE       /* the watchdog fired: the safe budget holds until told otherwise */
};

typedef struct srv_gpu {
    pfi_device dev;      /* limits; limit_w / enforced_w as last read */
    pfi_sample s;        /* last telemetry */
    int up;              /* the last reading worked */
    char err[160];       /* why not */
    double original_w;   /* limit found at start: what shutdown restores */
    double requested_w;  /* last cap pfi asked for (NAN: none) */
    int job;             /* index into node->jobs, -1 when no job holds it */
    double pinned_w;     /* in a decision's snapshot: a GPU that cannot be moved (unreadable,
                          * or a change that failed), counted at this; NAN otherwise */
    /* Energy for /metrics (telemetry.c): NVML's counter where the GPU's first reading had one,
     * else the draw integrated (trapezoids) since the daemon started.  NAN until known. */
    int energy_src;      /* 0 not decided yet, 1 the device's counter, 2 integrated */
    double energy_j, energy_t, energy_p;
} srv_gpu;

/* Baseline telemetry of a job: means over samples taken while all its GPUs sat at their default
 * limit, the input of the runtime predictor. */
typedef struct srv_baseline {
    int n;
    double power_w, sm_clock_mhz, powercap, gpu_util, sm_active, tensor_active, dram_active,
        nvlink_mibs, pcie_mibs;
} srv_baseline;

typedef struct srv_job {
    char id[SRV_ID_MAX];
    char name[129];        /* its registration's "name" (discovery: its command line), "" none */
    int n_gpus;
    int gpus[PFI_MAX_GPUS];
    double sla;            /* max slowdown 0..1; NAN: none */
    double weight;
    int curve_src;         /* srv_curve_src */
    pfi_curve curve;       /* valid unless curve_src == SRV_CURVE_NONE */
    double pfi30;          /* on the curve; NAN unknown */
    int extrap_told;       /* its prediction was logged as outside the model's training */
    int discovered;        /* registered by discovery ("source": "discovered"): a registration
                            * of the plugin or the API takes it over (jobs.c) */
    int gpus_gen;          /* times its GPUs changed (pfi_srv_job_set_gpus): what its log showed
                            * before is another set's (follow.c starts it again) */
    double t0_tps;         /* baseline tokens/s when known (registered or observed); NAN */
    int t0_given;          /* t0_tps registered (tokens_per_s): reports do not replace it */
    int t0_n;              /* reports made uncapped averaged into t0_tps (at most
                            * SRV_T0_REPORTS, then a moving average of about as many) */
    double cap_w;          /* per-GPU cap of the last decision; NAN: none */
    double predicted_rel;  /* T/T0 at cap_w on the curve */
    double predicted_tps;  /* at cap_w; NAN when t0_tps is unknown */
    double observed_tps;   /* last report; NAN none */
    double observed_wall;
    double registered_wall;
    srv_baseline base;
    srv_probe probe;
    char log[PFI_SERVE_PATH_MAX]; /* registered log path; "" none (follow.c) */
    /* How its log's samples/s or steps/s become tokens/s (follow.c's parser): registered
     * ("seq_len", "tokens_per_step") or, for a discovered job, its command line's; 0 unknown
     * (the log's own statement, where it makes one, is used then). */
    double seq_len, tokens_per_step;
    char log_followed[PFI_SERVE_PATH_MAX]; /* the file read now: log, or one discovery found */
    /* steady levels at which its log showed it slower than its SLA allows (follow.c): the
     * per-GPU cap and the slowdown against t0_tps; the plan reads its curve through them
     * (pfi_alloc_seen_apply), so a curve that promised too much is held to what was seen */
    pfi_alloc_seen sla_seen;
} srv_job;

typedef struct srv_event {
    long long id;
    double wall;
    char kind[24];
    char msg[512]; /* room for a line about every GPU of a node */
} srv_event;

struct pfi_grid_store;
struct pfi_alloc_keep;

/* Grid events held at once (past ones included until deleted).  Each interval of an OpenADR
 * event is one: 64 could not hold a day ahead in 96 quarter-hours (the rest refused at every
 * poll).  Each held event is looked at once per control step (O(n), pfi_event_budget_min:
 * ~21 us a step with 256 held, ~6 us with 64); 328 bytes each (63 KB more than 64 held).
 * Not above PFI_VEN_EVENTS_MAX, the OpenADR client's view of the list. */
#define SRV_GRID_MAX 256

/* Bytes of a job's log read per control tick at most: a huge backlog is read over several ticks,
 * never holding the loop (follow.c). */
#define SRV_LOG_READ_MAX (4 << 20)

/* A job's log followed by the control loop (follow.c): each level of caps the daemon applied
 * is measured like a sweep's (settle, MSER, 95% CI within rel_ci), and each steady level is a
 * point of the job's curve. */
typedef struct srv_follow {
    char id[SRV_ID_MAX];
    char path[PFI_SERVE_PATH_MAX];
    int fd;
    long long off;
    int live;              /* the backlog found at the first read was parsed for facts only */
    struct pfi_parser *p;
    pfi_linebuf lb;
    pfi_meter m;
    double level_cap, level_t0, win_start;
    int level_done;
    int n_pts;
    double pts_cap[PFI_MAX_LEVELS], pts_tps[PFI_MAX_LEVELS], pts_draw[PFI_MAX_LEVELS];
    double draw_sum;
    int draw_n;
    int unit_said; /* the event that its log gives no tokens/s was sent */
    int open_errno, open_said; /* why its log could not be opened, and whether that was said */
    int gpus_gen;              /* the job's srv_job.gpus_gen when this reading started */
    double seq_len, tokens_per_step; /* the job's when this reading started (its parser's) */
    int reopened;              /* its path was found naming a new file (rotated), not said yet */
    int path_link;             /* its path was a symbolic link when first opened (-1: unknown) */
    int not_taken;             /* a new file at the path was not taken (another owner, or a
                                * link where the path was none): 1 to say, 2 said */
} srv_follow;

/* Which of a job's stdout (0) and stderr (1) files is followed (logpick.c). */
typedef struct srv_logpick {
    int followed; /* 0 stdout, 1 stderr */
    int settled;  /* 0 until one of them showed throughput (stdout followed meanwhile) */
    double shown_t[2]; /* when each file's new lines last showed throughput (-inf: never) */
} srv_logpick;
typedef enum srv_logpick_change {
    SRV_LOGPICK_SAME = 0,
    SRV_LOGPICK_CHOSEN,  /* the first file to show throughput is followed */
    SRV_LOGPICK_SWITCHED /* the other file shows it and the followed one has not for a while */
} srv_logpick_change;
void pfi_srv_logpick_init(srv_logpick *lp);
/* One look at both files: shows[s] 1 when lines file s gained since the last look read as
 * throughput (at the first look: its last lines).  The followed file changes to the other
 * when that one shows throughput now and the followed one has shown none for switch_after_s
 * (monotonic seconds). */
srv_logpick_change pfi_srv_logpick_step(srv_logpick *lp, const int shows[2], double now,
                                        double switch_after_s);

/* A job found from its GPU processes (discover.c), kept by the control loop alone. */
typedef struct srv_found {
    char id[SRV_ID_MAX];
    int registered_by_us; /* 1: discovery registered it (and retires it when its processes
                           * end); 0: it matched a job registered by the plugin or the API */
    char matched[SRV_ID_MAX]; /* the registered job it matched (registered_by_us 0) */
    long pid;
    int gpus[PFI_MAX_GPUS], n_gpus;
    char log[PFI_SERVE_PATH_MAX];
    /* stdout and stderr two different regular files: log is the one the rule of logpick.c
     * follows, from what each file's new lines show (looked at when its size changed). */
    srv_logpick pick;
    long long pick_size[2], pick_from[2];
    int slurm_asked;      /* times Slurm was asked for its output file (SLURM_ASKS at most) */
    double slurm_next;    /* when it may be asked again (monotonic clock) */
    int pipe_asked;       /* its output pipe's reader was looked for (once a job) */
    int seen;             /* scratch of one discovery round */
    int gpus_differ;      /* matched to a registered job on other GPUs than its own: its log
                           * is not that job's measure (said once in a job_matched event) */
    int fewer_rounds;     /* rounds in a row it ran on fewer GPUs than it is registered on */
    int fd_said;          /* that its stdout and stderr could not be looked at was said */
    int logs_said;        /* that its processes write different stdout files was said */
    int gpus_refused_said; /* that its GPU set could not follow its processes was said */
    int dismissed;        /* registered by discovery, then removed through the API: not
                           * registered again while its processes run */
} srv_found;

/* hold.c: the limits held for a budget or a controller's caps, kept durably in the state
 * database so a restart comes back at no more than them before it touches anything else. */
typedef struct srv_hold {
    int active;            /* a budget or caps were in force when last decided */
    int mode;              /* srv_mode */
    long long epoch;       /* the controller's last epoch applied */
    double budget_w;       /* NAN: none (caps) */
    double ttl_s;          /* the watchdog was armed with this (0: off) */
    /* A budget ramp under way: the budget it goes to and the seconds it had left (NAN, 0:
     * none).  budget_w is the step it had reached. */
    double ramp_to_w, ramp_left_s;
    int n;
    char uuid[PFI_MAX_GPUS][96];
    double cap_w[PFI_MAX_GPUS]; /* NAN: not held */
} srv_hold;

typedef struct srv_node {
    pthread_mutex_t mu, decide_mu, hw_mu;
    const pfi_serve_config *cfg;
    pfi_backend *b;
    pfi_audit *audit;
    const struct pfi_model *model; /* runtime predictor (core/predict.h); NULL: none loaded */
    srv_library lib;               /* curves a probe is read through; n 0: none */
    char token[PFI_TOKEN_MAX + 1]; /* "" when no token file: every mutation is refused */

    int n_gpus;
    srv_gpu gpu[PFI_MAX_GPUS];
    int n_jobs;
    srv_job jobs[SRV_MAX_JOBS];

    double nominal_w;      /* sum of default limits: what "100%" means */
    double budget_w;       /* in force now; NAN: no budget (original limits) */
    double ramp_from_w, ramp_to_w, ramp_t0, ramp_t1; /* monotonic times */
    int ramping;
    /* 1 while the hold being saved is a ramp's (its start, a step that goes on): only then does
     * the hold keep the ramp; any other decision ends it, and saves before clearing ramping. */
    int hold_ramp;
    int mode;              /* srv_mode */
    long long caps_epoch;
    long long deciding_epoch; /* the epoch of caps being decided (decide_mu), for the hold */
    /* The held caps of GPUs the hold named but this start did not find (a GPU off the bus),
     * newest first: every hold saved keeps them after the GPUs present, so that a restart
     * with them back lowers them too (hold.c).  Set at start, before any decision. */
    srv_hold held_absent;
    double ext_caps[PFI_MAX_GPUS];
    char boot_id[40];      /* new at every start: a controller sees a restart by it */

    double hb_last, hb_ttl_s; /* watchdog: armed when hb_ttl_s > 0 */
    char hb_controller[128];
    char refused_ctl[128];  /* the last second controller refused, said in the events */
    double refused_ctl_at;  /*   and when (monotonic) */

    double rl_tokens, rl_last; /* token bucket of cap-moving requests */
    double rl_ctl_tokens, rl_ctl_last; /* PUT /v1/caps's own (a controller's) */
    long long n_rate_limited;
    long long n_decisions, n_cap_changes, n_apply_failures, n_held, n_mismatch;
    long long n_watchdog_trips;
    long long n_heartbeats; /* heartbeats answered */
    double last_apply_ms, last_decision_mono, last_replan_mono;
    /* Limits found raised outside pfi (a GPU reset, nvidia-smi -pl) and lowered back
     * (control.c), and when that was last tried. */
    long long n_outside_raised;
    double outside_fix_mono;
    char replan_said[256];   /* the last re-plan failure said (control.c: said once, not each tick) */
    pfi_prom_hist apply_hist; /* every decision's apply time, seconds */
    long long commit_gen;  /* bumped by every commit of a decision (under mu): a reading taken
                            * before it is older than the limits the decision read back */
    double started_wall;
    pfi_series hist;       /* budget, sum of limits, draw: one sample a second, the last hour */

    srv_event ev[SRV_EVENTS];
    long long ev_next;     /* id of the next event (ids start at 1) */

    /* Grid events (grid.c), guarded by mu.  The budget in force (budget_w) is the tightest of
     * the manual budget (PUT /v1/budget) and the events' budgets, ramps included. */
    struct pfi_grid_store *grid;
    pfi_event grid_ev[SRV_GRID_MAX];
    int n_grid;
    double manual_w;       /* the budget set by hand; NAN: none */
    int grid_binding;      /* the budget in force comes from an event */
    int grid_yields;       /* ... and that event lets the SLAs yield: every decision of the
                            * node's own sets them aside while it binds (node.c) */
    char grid_event[PFI_EVENT_ID_MAX]; /* which one */
    double grid_rec_wall, grid_prune_wall;
    int grid_unread; /* GPUs last recorded at their limit, their draw not read (said on change) */
    long long n_grid_decisions, n_grid_infeasible;
    /* The binding event (grid_short_id) whose budget the SLAs cannot meet is held at the
     * least the node can hold (grid_short_w; NAN: none).  So that it is not planned twice and
     * said again at every tick while that least stays where it is. */
    char grid_short_id[PFI_EVENT_ID_MAX];
    double grid_short_w;
    /* The events' own budget (no manual one) over the span planned ahead, and the event that
     * sets it (grid.c's pfi_srv_grid_hold; NAN, "": none): what a controller's caps are held
     * to in external mode (node.c); and the one they were last held to (NAN: none held them),
     * so that a tick re-plans only when it moves. */
    double grid_hold_w;
    char grid_hold_id[PFI_EVENT_ID_MAX];
    double grid_ext_w;
    struct pfi_ven *ven;   /* the OpenADR client (grid_ven.c), when configured */
    /* Jobs found from their processes (discover.c); the control loop's alone. */
    srv_found found[SRV_MAX_JOBS];
    int n_found;
    int discover_off;      /* the backend cannot list processes: said once, then off */
    unsigned char list_failed[PFI_MAX_GPUS]; /* its processes could not be listed last round
                                              * (said once, when it starts) */
    /* GPU processes not in proc_root (another PID namespace, hidepid), this round and the last:
     * one seen in both is a job of its own (discover.c) */
    long unmapped[2][SRV_MAX_JOBS];
    int n_unmapped[2];
    srv_follow follow[SRV_MAX_JOBS]; /* logs followed (follow.c); the control loop's alone */
    int n_follow;

    /* Scratch of the decision in progress, guarded by decide_mu (too large for a stack). */
    srv_gpu snap[PFI_MAX_GPUS];
    srv_job cand[SRV_MAX_JOBS];
    int n_cand;
    struct pfi_alloc_keep *keep; /* plan.c: the allocator state of the last plan (decide_mu) */
} srv_node;

/* After a decision's commit (decide_mu held): the limits now held, or "none" when no budget or
 * caps are in force.  epoch: the caps' epoch being applied (0: none). */
void pfi_srv_hold_save(srv_node *n, long long epoch);
void pfi_srv_hold_clear(srv_node *n);
/* h->active 0 when nothing is held. */
int pfi_srv_hold_load(pfi_audit *a, srv_hold *h, pfi_err *err);
/* The entries of h for GPUs not among the n present (matched by UUID; one without a UUID,
 * matched by index, is not kept), in h's order, each UUID once, into out (its n, uuid and
 * cap_w; the rest zeroed): at most PFI_MAX_GPUS - n, the last ones dropped first (a save
 * writes the GPUs present, then the absent ones, newest first: the last are the oldest). */
void pfi_srv_hold_absent(const srv_hold *h, const srv_gpu *present, int n, srv_hold *out);
/* Lowers every GPU the hold names to its held cap where it is above it (no raise); a GPU it
 * does not name with to_min[i] set (may be NULL) goes to its minimum limit.  Counts: lowered
 * (to their held caps), at_min (to_min's put or found there), failed. */
int pfi_srv_hold_clamp(pfi_backend *b, const srv_hold *h, const unsigned char *to_min,
                       int *lowered, int *at_min, int *failed);
/* Whether the hold has an entry for this GPU (matched by UUID), its cap known or not. */
int pfi_srv_hold_names(const srv_hold *h, const pfi_device *d, int index);
/* The held cap of this GPU (matched by UUID), NAN when the hold does not name it. */
double pfi_srv_hold_cap(const srv_hold *h, const pfi_device *d, int index);
/* control.c: takes the held state back at start: the epoch, the watchdog, and one decision at
 * the held caps (or budget). */
int pfi_srv_hold_resume(srv_node *n, const srv_hold *h, pfi_err *err);

/* names.c */
const char *pfi_srv_mode_name(int mode); /* "local", "external", "safe" */

/* node.c: decisions.  The path is a straight line: control.c, jobs.c and probe.c decide WHEN
 * (each holding decide_mu from reading the state to the commit), node.c's pfi_srv_decide has
 * plan.c compute the caps, hw/'s pfi_hw_apply apply them and audit.c record them. */
int pfi_srv_find_job(const srv_job *jobs, int nj, const char *id);
int pfi_srv_same_gpus(const int *a, int na, const int *b, int nb);
double pfi_srv_current_budget(srv_node *n);
int pfi_srv_current_mode(srv_node *n, const double **ext);
/* Plans n->cand under budget_w (mode local/safe) or applies ext (external), applies, audits
 * and commits; decide_mu held and n->snap / n->cand filled (pfi_srv_snapshot). */
int pfi_srv_decide(srv_node *n, double budget_w, int mode, const double *ext, const char *reason,
               json_t **result, pfi_err *err);
int pfi_srv_node_init(srv_node *n, const pfi_serve_config *cfg, pfi_backend *b, pfi_err *err);
void pfi_srv_node_destroy(srv_node *n);
/* events.c */
void pfi_srv_event_add(srv_node *n, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* telemetry.c: one sampler pass (readings, baselines, running probes). */
void pfi_srv_sample(srv_node *n);
/* The GPU's energy counter after a reading (mu held): the device's own, or, for a GPU that has
 * none, its draw integrated over the readings' times.  A counter that is missing from one
 * reading keeps its last value; the source never changes, so the series only rises.  A
 * reading without the draw, or none at all (pfi_srv_energy_gap), is a gap: the time it could
 * not be read is not counted (a GPU lost for 4 s had 4 s of draw added at once). */
void pfi_srv_energy_add(srv_gpu *g, const pfi_sample *s);
void pfi_srv_energy_gap(srv_gpu *g);
/* The node's draw (mu held): the sum over the GPUs that answered their last reading; a lost
 * GPU's last draw is left out (its series says it is down).  NAN when no GPU has a draw. */
double pfi_srv_draw_locked(const srv_node *n);
/* The node's draw for a compliance record (mu held): a GPU whose draw cannot be read now (lost,
 * or no power reading) counted at its power limit (else its maximum), the most it may draw;
 * *unread gets how many were.  NAN when no GPU gives anything to count. */
double pfi_srv_draw_bounded_locked(const srv_node *n, int *unread);
/* Mutations.  Each returns PFI_OK with *result (a JSON object, caller decrefs) describing what
 * was applied, or an error with the state unchanged. */
int pfi_srv_job_add(srv_node *n, json_t *spec, json_t **result, pfi_err *err);
/* A job saved in the DB, registered again at start (not saved twice). */
int pfi_srv_job_reload(srv_node *n, json_t *spec, pfi_err *err);
int pfi_srv_job_remove(srv_node *n, const char *id, json_t **result, pfi_err *err);
/* A job now runs on other GPUs (discovery saw its workers start or end): one decision under the
 * budget, as a registration's.  What was measured of it on the other set (its baseline, its
 * observed rate and curve) is forgotten.  PFI_ENOENT no such job, PFI_EBUSY a GPU another job
 * holds. */
int pfi_srv_job_set_gpus(srv_node *n, const char *id, const int *gpus, int ng, pfi_err *err);
/* A job's tokens/s: tps is its observed rate now (a running probe averages it); baseline_tps
 * what becomes its baseline while its GPUs are uncapped (a client's report: tps itself; a log's:
 * its rate over SRV_LOG_RATE_WINDOW_S). */
int pfi_srv_job_throughput(srv_node *n, const char *id, double tps, double baseline_tps,
                           pfi_err *err);
/* force: even where a cluster controller heard lately holds the node's caps and the change
 * would raise its limits (refused otherwise: PFI_EBUSY naming the controller). */
int pfi_srv_budget_set(srv_node *n, double watts, double ramp_s, int force, json_t **result,
                       pfi_err *err);
int pfi_srv_budget_clear(srv_node *n, int force, json_t **result, pfi_err *err);
/* Caps from a cluster controller; controller: its name (NULL or "": not named, taken from any,
 * as before names were sent), refused (409) while another named one holds the node
 * (pfi_srv_other_controller). */
int pfi_srv_caps_set(srv_node *n, long long epoch, const double *caps, const char *controller,
                     json_t **result, pfi_err *err);
/* PFI_EBUSY, said in err, when a controller other than `name` holds this node's caps: in
 * external mode, named by its heartbeats, heard within SRV_CONTROLLER_HEARD_S.  Two
 * controllers over one node took turns over its caps at every heartbeat, the site over the
 * lower one's budget each time, and neither said a word.  An unnamed caller is never refused.
 * mu held. */
int pfi_srv_other_controller(const srv_node *n, const char *name, pfi_err *err);
/* Says in the node's events that controller `name` was refused (pfi_srv_other_controller),
 * once per name and ten minutes.  mu not held. */
void pfi_srv_refused_controller(srv_node *n, const char *name);
int pfi_srv_heartbeat(srv_node *n, const char *controller, double ttl_s, json_t **result,
                  pfi_err *err);
/* Seconds since a controller's last heartbeat, NAN when none was heard; one heard within
 * SRV_CONTROLLER_HEARD_S in external mode holds the node's caps.  mu held. */
double pfi_srv_controller_heard_s(const srv_node *n);
/* The control loop's periodic work: ramps, watchdog, re-planning. */
void pfi_srv_tick(srv_node *n);
/* Restores every GPU to its original limit (shutdown). */
int pfi_srv_restore_originals(srv_node *n, pfi_err *err);
/* What a budget's share is of on a node (util/budget.h). */
#define PFI_SRV_BUDGET_REF "the sum of the GPUs' default limits"
/* A budget (util/budget.h: "4000W", "70%", "cut=30%") or "min" against this node. */
int pfi_srv_budget_parse(srv_node *n, const char *s, double *watts, pfi_err *err);

/* 1 when a cap-moving request may go ahead now (token bucket: SRV_CHANGE_BURST requests, then
 * SRV_CHANGE_RATE per second); 0: answer 429.  controller: a PUT /v1/caps, which has a bucket
 * of its own: sharing one, another token holder's requests (even refused ones) or a storm of
 * site changes got the controller's caps a 429, and the controller took the node for silent
 * and cut the other nodes' jobs deeper. */
int pfi_srv_rate_take(srv_node *n, int controller);
/* Gives back a token pfi_srv_rate_take took, for a change that moved nothing (refused). */
void pfi_srv_rate_refund(srv_node *n, int controller);
#define SRV_CHANGE_BURST 100.0
#define SRV_CHANGE_RATE 20.0
#define SRV_CAPS_BURST 1000.0 /* a controller re-plans 5 times a second at most, two waves each */
#define SRV_CAPS_RATE 100.0

/* Views (JSON) taken under node->mu. */
json_t *pfi_srv_view_gpus(srv_node *n);
json_t *pfi_srv_view_jobs(srv_node *n, const char *id);
json_t *pfi_srv_view_allocation(srv_node *n);
json_t *pfi_srv_view_events(srv_node *n, long long since, int limit);
json_t *pfi_srv_view_health(srv_node *n);
/* GET /v1/history: budget, sum of limits and draw sampled after since (Unix seconds). */
json_t *pfi_srv_view_history(srv_node *n, double since);
/* How far the limits as last read (each counted at the larger of limit and enforced) exceed
 * the budget in force, in watts of whole milliwatts (hw.h); 0 when within it or no budget.
 * Caller holds node->mu.  /healthz is "degraded" and /metrics' pfi_over_budget 1 when > 0. */
double pfi_srv_over_budget_w(const srv_node *n);

/* plan.c: the caps a decision asks for. */
typedef struct srv_plan {
    double target_w[PFI_MAX_GPUS];  /* per GPU; NAN: leave alone */
    double job_cap_w[SRV_MAX_JOBS];
    double job_pred_tps[SRV_MAX_JOBS]; /* NAN when the job's baseline tokens/s is unknown */
    double job_pred_rel[SRV_MAX_JOBS]; /* T/T0 at the cap on the job's curve */
    double min_budget_w;            /* the least budget that meets every job's SLA */
    double sla_extra;               /* > 0: every SLA loosened by this slowdown, the least that
                                       fits, because the SLA breaches seen in the jobs' logs left
                                       no plan within the budget that meets them all */
    double grid_w;                  /* external mode: the budget of the node's own grid event
                                       the caps were planned under (grid_id); NAN: none binds */
    int grid_held;                  /* 1: that budget lowered the caps (the event binds them) */
    char grid_id[PFI_EVENT_ID_MAX];
} srv_plan;
/* keep: the node's allocator state kept between plans (core/alloc_keep.h; NULL at first), so a
 * new budget, an event's step or one job's new curve re-solves warm; the plan is the one a fresh
 * solve gives (keep NULL: solved fresh). */
int pfi_srv_plan_compute(const srv_gpu *g, int ng, const srv_job *jobs, int n_jobs, double budget_w,
                         struct pfi_alloc_keep **keep, srv_plan *p, pfi_err *err);
/* The same under another policy of core/policy.h (pfi_srv_plan_compute: PFI_POLICY_PFI), e.g. the
 * equal cut a grid event's cost is compared with. */
int pfi_srv_plan_policy(const srv_gpu *g, int ng, const srv_job *jobs, int n_jobs, double budget_w,
                        int policy, struct pfi_alloc_keep **keep, srv_plan *p, pfi_err *err);
/* The curve a job is planned on (its own, or a proportional one when nothing is known). */
void pfi_srv_job_curve(const srv_gpu *g, const srv_job *j, pfi_curve *out);
/* Per-GPU cap range all of a job's GPUs accept. */
void pfi_srv_job_cap_range(const srv_gpu *g, const srv_job *j, double *lo, double *hi);
/* Curves from what a client registers: {"points": [...]} / {"pfi30": x}; NULL -> none.
 * *abs_t0 receives the baseline tokens/s when the curve gives absolute throughput, else NAN. */
int pfi_srv_curve_from_json(const srv_gpu *g, const srv_job *j, json_t *curve, json_t *pfi30,
                        pfi_curve *out, int *src, double *abs_t0, pfi_err *err);
/* Re-estimates curves of jobs with no registered curve from their baseline telemetry. */
void pfi_srv_predict_curves(srv_node *n);

/* probe.c */
#define SRV_PROBE_MAX_S 600.0
/* A probe's reading outside these is not a cap's doing: faster under the cap by more than this
 * share, a loss over this share, or a loss over this many times the power shed. */
#define SRV_PROBE_FASTER_MAX 0.05
#define SRV_PROBE_LOSS_MAX 0.95
#define SRV_PROBE_RATIO_MAX 2.5
int pfi_srv_probe_parse(json_t *v, srv_probe *p, pfi_err *err);
/* Starts and finishes probes (control loop; takes decide_mu itself). */
void pfi_srv_probe_tick(srv_node *n);
/* Loads cfg->probe_library ("" leaves lib empty); frees it. */
int pfi_srv_library_load(const char *what, srv_library *lib, pfi_err *err);
void pfi_srv_library_free(srv_library *lib);
/* Accumulates a job's power (sampler) and tokens/s (reports) into a running probe (mu held). */
void pfi_srv_probe_sample(srv_node *n, srv_job *j, double now);
void pfi_srv_probe_tps(srv_job *j, double tps, double now);
json_t *pfi_srv_probe_json(const srv_probe *p);
/* plan.c: the per-GPU cap range a plan may give a job: its GPUs' range, capped by a running
 * probe. */
void pfi_srv_plan_range(const srv_gpu *g, const srv_job *j, double *lo, double *hi);
/* A job's relative throughput at a per-GPU cap as every plan reads it: its curve's, falling in
 * proportion to the cap below a registered curve's lowest point (plan.c). */
double pfi_srv_plan_rel(const srv_job *jb, const pfi_curve *cv, double cap);
/* node.c: one decision in the current mode and budget (decide_mu held, snapshot taken). */
int pfi_srv_decide_now(srv_node *n, const char *reason, pfi_err *err);
void pfi_srv_snapshot(srv_node *n);
/* The candidates' SLAs set aside for one decision (a grid event whose SLAs yield, the
 * watchdog's safe state), saved[0..n_cand) theirs; and given back after it to the candidates
 * and to the jobs the decision committed (a decision commits its candidates: set aside in
 * them, every job's SLA was gone for good, a 0.95 SLA job run at 0.918 under a later budget
 * without a word).  decide_mu held. */
void pfi_srv_slas_aside(srv_node *n, double *saved);
void pfi_srv_slas_back(srv_node *n, const double *saved, int n_saved);

/* grid.c: grid events on this node (docs/api.md, /v1/grid/events). */
int pfi_srv_grid_open(srv_node *n, pfi_err *err);
void pfi_srv_grid_close(srv_node *n);
/* The site the events apply to: the node's GPUs (maximum: the sum of their maximum limits),
 * manual_w (NAN: none). */
pfi_event_site pfi_srv_grid_site(const srv_node *n, double manual_w);
/* The budget to plan for now with this manual budget (NAN: none): the lowest of it and every
 * event's over the next few control periods; NAN when nothing binds.  id (may be NULL): the
 * event that sets it, "" when the manual budget does. */
double pfi_srv_grid_limit(srv_node *n, double manual_w, char *id, size_t size);
/* The events' own budget now (pfi_srv_grid_limit with no manual budget), kept in
 * n->grid_hold_w / grid_hold_id for the next external decision; *id (may be NULL) gets the
 * event. */
double pfi_srv_grid_hold(srv_node *n, char *id, size_t size);
/* 1 when an event's cap applies now (its ramp down, its window or its restore), its id in id
 * (mu held): a commitment to the grid the node keeps while it is stopped (on_stop auto). */
int pfi_srv_grid_committed_locked(const srv_node *n, double now, char *id, size_t size);
/* Control loop: records site power, moves the budget with the events; 1 when it decided (the
 * loop's own re-plan is then skipped this tick). */
int pfi_srv_grid_tick(srv_node *n);
/* Adds or replaces an event (validated, checked against the SLAs in force unless it lets them
 * yield, saved, then re-planned at once); *result: the event as GET shows it.  One the SLAs
 * cannot meet is refused (PFI_EINFEASIBLE, *result the 409's body), unless flags has
 * SRV_GRID_TAKE_SHORT (an OpenADR VTN's: the grid's limit, not a request the node may refuse):
 * then it is taken and held at the least the node can hold while it binds (grid_infeasible).
 * *added (may be NULL): 1 when the id was new, 0 when an event was replaced; decided under the
 * lock that stores it (two POSTs of one new id at once were both told 201). */
#define SRV_GRID_TAKE_SHORT 1
int pfi_srv_grid_add(srv_node *n, json_t *body, int flags, json_t **result, int *added,
                     pfi_err *err);
int pfi_srv_grid_remove(srv_node *n, const char *id, json_t **result, pfi_err *err);
/* Notes in the event and the store that its report reached the VTN at `when`. */
int pfi_srv_grid_reported(srv_node *n, const char *id, double when, pfi_err *err);
/* Lets a finished event go from the events held (a VTN's, an hour after its restore): kept in
 * the store as history for PFI_GRID_HISTORY_S, its report with it (pfi_srv_grid_report). */
int pfi_srv_grid_let_go(srv_node *n, const char *id, pfi_err *err);
/* {"events": [...]} or one event (NULL when there is no such id), with its predicted cost. */
json_t *pfi_srv_grid_view(srv_node *n, const char *id);
/* The compliance report of one event from the power recorded around it (core/event_report.h),
 * with its predicted cost per policy and each job's SLA; NULL with *err when it cannot be.  An
 * event let go is reported from the store's history, with "let_go" and "kept_until". */
json_t *pfi_srv_grid_report(srv_node *n, const char *id, pfi_err *err);
/* grid_ven.c: the OpenADR 3.0 client on this node's events, when openadr_vtn_url is set
 * (after pfi_srv_grid_open); stopped before pfi_srv_grid_close. */
int pfi_srv_ven_start(srv_node *n, pfi_err *err);
void pfi_srv_ven_stop(srv_node *n);
/* grid_api.c: the /v1/grid/ routes; NULL when url is not one of them.  pfi_srv_grid_allow:
 * the methods a /v1/grid/ path takes ("GET, HEAD, POST"), NULL for none (404). */
char *pfi_srv_grid_api(srv_node *n, const char *method, const char *url, const char *body,
                   size_t blen, int authorized, int *status, size_t *len);
const char *pfi_srv_grid_allow(const char *url);
/* discover.c: one round of job discovery (control loop). */
void pfi_srv_discover(srv_node *n);
/* Job job_id's output file as Slurm states it: `scontrol show job`, else `squeue --json`
 * (slurmlog.c), each bounded to 2 s.  Control loop only. */
int pfi_srv_slurm_log(const char *job_id, char *out, size_t cap, pfi_err *err);

/* The log discovery found for a job (its stdout, or its stderr): "" none.  Control loop only. */
const char *pfi_srv_found_log(srv_node *n, const char *id);
/* follow.c: reads the jobs' logs, feeds observed tokens/s and steady curve points (control
 * loop); pfi_srv_follow_free closes every log. */
void pfi_srv_follow_tick(srv_node *n);
void pfi_srv_follow_free(srv_node *n);

/* metrics.c */
char *pfi_srv_metrics_text(srv_node *n, size_t *len);

/* jobs.c (a job's spec; api.c's request bodies too): PFI_EINVAL naming the first field of o
 * not in keys (NULL-terminated) and the known ones. */
int pfi_srv_only_keys(json_t *o, const char *const *keys, pfi_err *e);
/* jobs.c: a job's SLA breaches seen, kept in the database's state (key "sla_seen:ID") so that a
 * restarted daemon plans the job through them from its first decision instead of learning them
 * again from the log.  save: an empty list clears them (a new registration, a removal); a
 * database error is said as an event.  load: *l as saved (entries that are no breach are not
 * read); empty when none. */
void pfi_srv_sla_seen_save(srv_node *n, const char *id, const pfi_alloc_seen *l);
void pfi_srv_sla_seen_load(pfi_audit *a, const char *id, pfi_alloc_seen *l);

/* audit.c: one decision row with its jobs and GPUs in the audit log (store/audit.h; a NULL log
 * writes nothing); returns the decision id (0 on failure). */
long long pfi_srv_audit_decision(pfi_audit *a, double wall, const char *reason, double budget_w,
                                 int mode, const srv_job *jobs, int n_jobs,
                                 const pfi_apply_report *rep, double apply_ms);

/* http.c + api.c */
typedef struct srv_http srv_http;
/* The API's sockets bound and listening (where: the address, a port 0 resolved), before the
 * daemon touches a GPU: a port in use or a missing socket folder stops a start that has changed
 * nothing (under Restart=on-failure, a start that cut every GPU, restored them and exited
 * flapped the limits every 2 s).  Connections wait in the backlog until pfi_srv_http_serve
 * answers them, once the node is set up and its start budget applied. */
int pfi_srv_http_bind(const pfi_serve_config *c, srv_http **out, char *where, size_t where_size,
                      pfi_err *err);
int pfi_srv_http_serve(srv_http *h, srv_node *n, pfi_err *err);
/* Splits "HOST:PORT" (HOST may be [v6]) and checks the port, so a bad address is refused
 * before the daemon touches a GPU.  host may be NULL (check only). */
int pfi_srv_listen_split(const char *listen_s, char *host, size_t host_size, pfi_err *err);
void pfi_srv_http_stop(srv_http *h);
/* api.c: answers one request; *status gets the HTTP status, *ctype the content type. */
/* What pfi serve answers one request (the token checked from the Authorization header, then
 * the routes); no socket needed.  The Content-Length check (1 when the body must be refused
 * with 413: over max or not a number) the transport uses; the transport unescapes the path
 * with util/unescape.h (%00 left as sent). */
char *pfi_srv_http_answer(srv_node *n, const char *method, const char *url,
                          const char *authorization, const pfi_http_query *query,
                          const char *body, size_t blen, int *status, const char **ctype,
                          size_t *len);
int pfi_srv_http_body_too_big(const char *content_length, size_t max);
/* The methods path url takes, as the Allow header of a 405 names them (RFC 9110 15.5.6):
 * "GET, HEAD", "PUT"...; NULL when no route has the path (a 404, whatever the method). */
const char *pfi_srv_api_allow(const char *url);
/* query: the request's arguments (util/http_query.h; NULL: none), checked against what the
 * route takes before it runs. */
char *pfi_srv_api_handle(srv_node *n, const char *method, const char *url,
                         const pfi_http_query *query, const char *body, size_t body_len,
                         int authorized, int *status, const char **ctype, size_t *len);

#endif
