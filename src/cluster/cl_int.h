/* SPDX-License-Identifier: Apache-2.0 */
/* cl_int.h: what the files of src/cluster share; nothing outside src/cluster includes it.
 *
 * Locking: c->mu guards the state (nodes, jobs, budget, stats) and is held only for copies and
 * short updates, so GET requests never wait for a node.  c->op_mu serializes every operation
 * that talks to nodes (refresh, apply, heartbeat): one at a time, in the order they came.
 * c->refresh_mu (taken before op_mu, never after) makes each refresh's Slurm query and its use
 * one step, so two refreshes cannot apply the older snapshot last; the query runs without
 * op_mu, so a slow Slurm holds other refreshes, not budget changes. */
#ifndef PFI_CLUSTER_CL_INT_H
#define PFI_CLUSTER_CL_INT_H

#include <jansson.h>

#include "cluster/cluster.h"
#include "core/event.h"

/* Grid events held at once: as SRV_GRID_MAX (serve/serve_int.h), and why. */
#define PFI_CL_GRID_MAX 256
/* The largest cap epoch: what a JSON number holds exactly, and what node daemons take. */
#define PFI_CL_EPOCH_MAX 9007199254740992LL
#define PFI_CL_DECISIONS 32
#include "util/clock.h"
#include "util/prom.h"
#include "util/series.h"
#include "util/token.h"

/* An allocation applied that moved caps or the budget (history.c): the status page's list. */
typedef struct pfi_cl_decision {
    long long id;
    double wall, budget_w, cap_sum_w, apply_s;
    long long n_lowered, n_raised; /* node requests that lowered or raised caps */
} pfi_cl_decision;

struct pfi_cl {
    pfi_cl_config cfg;
    char token[512];
    pthread_mutex_t mu, op_mu, refresh_mu;
    pfi_http *http;

    int n_nodes, n_jobs;
    pfi_cl_node *nodes;
    pfi_cl_job *jobs;

    pfi_cl_budget budget;       /* what was asked */
    double budget_now_w;        /* in force now (moves during a ramp); NAN: none */
    double ramp_from_w, ramp_t0, ramp_t1; /* a ramp in progress when ramp_t1 > now */
    double reserved_w;          /* last plan: GPUs of silent nodes and of pinned jobs */
    double idle_w;              /* last plan: GPUs holding no job */
    char note[300];             /* last thing worth telling an operator (pfi_cl_note) */
    double note_at;             /* when it was said, wall clock; NAN: nothing to tell */
    int note_condition;         /* a condition a clean heartbeat clears, not an event */
    long long note_seq;         /* notes said so far: tells a loop what it said itself */
    pfi_cl_stats stats;
    long long epoch; /* the last wave's (a node's own can be higher: apply.c node_epoch) */
    pfi_series hist;            /* budget, sum of caps, draw: one sample a second (history.c) */
    pfi_prom_hist apply_hist;   /* every applied budget change's time to the last ack, s */
    pfi_cl_decision dec[PFI_CL_DECISIONS]; /* ring of the last decisions */
    int n_dec;
    long long dec_next;

    /* Grid events (grid.c), guarded by mu: the budget in force is the tightest of the manual
     * budget (with its ramp) and the events' (core/event.h). */
    struct pfi_grid_store *grid;
    pfi_event grid_ev[PFI_CL_GRID_MAX];
    int n_grid;
    int grid_binding;           /* the last apply's budget came from an event */
    char grid_event[PFI_EVENT_ID_MAX];
    int sla_yield;              /* plan.c: the SLAs give way (a yielding event binds) */
    /* grid.c: the binding event whose budget the SLAs cannot meet, held at the least the site
     * can hold (grid_short_w; NAN: none): said when that starts or the least moves. */
    char grid_short_id[PFI_EVENT_ID_MAX];
    double grid_short_w;
    struct pfi_alloc_keep *keep; /* plan.c: the last plan's allocator state, re-solved warm */
    double grid_rec_wall;
    pfi_ven *ven;               /* the OpenADR client, when configured (GET /v1/grid/openadr) */
    /* grid.c: GPUs nodes reported beyond Slurm's count, kept in the store across restarts
     * ({"node": count}), and the text last saved. */
    json_t *gpus_seen;
    char *gpus_seen_text;
    int grid_unread; /* grid.c: nodes counted at their caps in the last site record */

    pthread_t loop;
    int loop_running;
    volatile int stop;
};

/* node_url.c: where a node daemon is reached. */
const char *pfi_cl_unix_sock(const char *base); /* "unix:/p" -> "/p", else NULL */
void pfi_cl_build_url(const char *base, const char *path, char *out, size_t n);
/* node_url.c: why a change or heartbeat to node n failed (what: "heartbeat", "PUT /v1/caps"), into its
 * why; a 401/403 marks it refused (said once on stderr, naming --node-token-file), so that an
 * answered read does not bring it back up. */
void pfi_cl_node_refused(pfi_cl_node *n, const char *what, const pfi_http_req *r);
/* The URL of a node's daemon: the map file's line for it, else the template. */
void pfi_cl_node_url(const pfi_cl_config *cfg, const pfi_cl_topo_node *tn, char *out,
                     size_t n);

/* plan.c: the targets of a budget on the state as it is (c->mu held by the caller).
 * target[node][gpu] gets a cap for every GPU of every up node; silent nodes and pinned jobs
 * keep what they hold.  Infeasible: PFI_EINFEASIBLE and nothing written. */
int pfi_cl_plan(pfi_cl *c, double budget_w, double **target, pfi_err *err);
/* A plan made before its apply, under the same hold of c->op_mu (so on the same nodes and
 * jobs): pfi_cl_set_budget's feasibility check, which is then the plan applied. */
typedef struct pfi_cl_planned {
    double budget_w; /* the budget planned */
    int sla_yield;   /* c->sla_yield it was planned with */
    int n_nodes;     /* c->n_nodes then */
    double **target; /* pfi_cl_targets_new's */
    double alloc_s;  /* how long the plan took */
} pfi_cl_planned;

/* apply.c: a cap per GPU of every node, NAN at first (c->mu held); NULL when out of memory. */
double **pfi_cl_targets_new(const pfi_cl *c);
/* apply.c: moves every up node to the targets of budget_w, lowerings everywhere first.
 * pre: a plan already made of that budget with the c->sla_yield in force now, used instead of
 * planning again, or NULL (the apply plans).  c->op_mu held. */
int pfi_cl_apply(pfi_cl *c, double budget_w, const pfi_cl_planned *pre, pfi_err *err);

/* The least feasible site budget with the jobs' SLAs (yield: without them); NAN when unknown.
 * Each job's cap and relative throughput (of its top) at budget_w under a core/policy.h
 * policy, per c->jobs index (NAN: not planned); nothing is applied.  c->mu held. */
double pfi_cl_min_budget(pfi_cl *c, int yield);
int pfi_cl_plan_policy(pfi_cl *c, double budget_w, int policy, int yield, double *cap,
                       double *rel, pfi_err *err);

/* grid.c (c->mu held): the budget to apply now given the manual one (NAN: none) over the next
 * moments; NAN when nothing binds.  Sets grid_binding, grid_event and sla_yield. */
double pfi_cl_grid_limit(pfi_cl *c, double manual_w, double now_wall);
/* The site the events apply to: its GPUs' maximum, the manual budget asked (mu not held). */
pfi_event_site pfi_cl_grid_site(pfi_cl *c);
/* Notes in the event and the store that its report reached the VTN at `when`. */
int pfi_cl_grid_reported(pfi_cl *c, const char *id, double when, pfi_err *err);
/* Lets a finished event go from the events held (a VTN's, an hour after its restore): kept in
 * the store as history for PFI_GRID_HISTORY_S, its report with it; the caller re-plans. */
int pfi_cl_grid_let_go(pfi_cl *c, const char *id, pfi_err *err);
/* Whether an event is near enough that the loop must re-plan often (c->mu held). */
int pfi_cl_grid_busy(pfi_cl *c, double now_wall);
/* Notes the level (the manual budget) each event whose ramp has begun ramps from, in the event
 * and the store, for its report (takes mu; c->op_mu held, as a change of an event holds it). */
/* Says what an operator should know (mu held).  A condition (no plan fits, raises held back)
 * lasts until a heartbeat plans and applies without saying one again: the note of a silent node
 * stayed after it had come back.  An event's note (a node restarted, a save failed) stays, with
 * its time, until the next note. */
void pfi_cl_note(pfi_cl *c, int condition, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void pfi_cl_grid_note_levels(pfi_cl *c);
/* An apply of want_w, the budget an event holds, found it infeasible (c->op_mu held): the site
 * holds the least it can instead (the SLAs as the binding event says), as a node does
 * (docs/api.md), said once per event and least (note, log).  The apply's result; PFI_EINFEASIBLE
 * with err untouched when no event binds or nothing less can be held. */
int pfi_cl_grid_hold_least(pfi_cl *c, double want_w, pfi_err *err);
/* Records the site's draw with the budget in force (after a refresh; takes mu itself). */
void pfi_cl_grid_record(pfi_cl *c);
/* A node's GPUs as it last reported them, saved before a restart (c->mu held); 0 unknown.  A
 * node with more GPUs than Slurm lists, silent when the controller restarts, holds their caps
 * all the same: counted at Slurm's count, their watts went to other nodes. */
int pfi_cl_gpus_seen_saved(const pfi_cl *c, const char *node);
/* Saves the nodes that reported more GPUs than Slurm lists, when that changed (takes mu). */
void pfi_cl_gpus_seen_save(pfi_cl *c);

/* apply.c: what a node said it holds after PUT /v1/caps ({"gpus": [{"index" or "gpu",
 * "limit_w" or "cap_w", "enforced_limit_w" or "enforced_w"}, ...]}), GPUs 0..n-1, NAN where
 * not said.  in_place: plain JSON is read without building its tree (1 returned when it was),
 * else through jansson; both give the same values. */
int pfi_cl_decode_caps(const char *reply, int n, double *limit_w, double *enforced_w,
                       int in_place);

/* Decoding what node daemons say (controller.c). */
int pfi_cl_decode_gpus(json_t *doc, pfi_cl_node *n, pfi_err *err);
/* A job's curve as GET /v1/jobs gives it: 1 when j now has >= 2 usable points. */
int pfi_cl_decode_curve(json_t *curve, pfi_cl_job *j);

/* history.c: what the status page plots and lists.  The sum of the caps as the controller counts
 * it (an unknown cap at the GPU's maximum); c->mu held. */
double pfi_cl_cap_sum_w(const pfi_cl *c);
/* The same, a GPU whose limits were never read counted as the plan counts it (the site's
 * largest maximum), not as 0 W: where a ramp can start (c->mu held). */
double pfi_cl_cap_held_w(const pfi_cl *c);
/* The largest maximum limit of any GPU read (NAN: none), and what one GPU counts for in the
 * budget before it is planned: its limit, else its maximum, else site_max (never read). */
double pfi_cl_site_max_w(const pfi_cl *c);
double pfi_cl_gpu_count_w(const pfi_device *d, double site_max);
/* The draw the controller knows (c->mu held): what a node reported at the last refresh, while
 * it answers; a silent node's last readings are not current, so its draw is unknown (NAN), as
 * is a GPU's that reported none.  A node's draw is NAN when none of its GPUs has one; the
 * site's when no node has one. */
double pfi_cl_gpu_draw_w(const pfi_cl_node *n, int g);
double pfi_cl_node_draw_w(const pfi_cl_node *n);
double pfi_cl_site_draw_w(const pfi_cl *c);
/* The site's draw for a compliance record (c->mu held): a silent node's GPUs, and a GPU that
 * reported no draw, counted at the cap they hold (else their maximum, else the site's), the
 * most they may draw; *unread gets how many nodes had some counted so.  Left out, a silent
 * node's whole draw vanished from the record, the report and the VTN's DEMAND (22% low with
 * one node of two silent) while the seconds still counted as recorded.  NAN when nothing is
 * known. */
double pfi_cl_site_draw_bounded_w(const pfi_cl *c, int *unread);
/* Samples budget, caps and draw into c->hist (takes c->mu). */
void pfi_cl_history_record(pfi_cl *c);
/* Records an apply that moved something (c->mu held): lowered/raised are this apply's counts.
 * 0 (nothing recorded) for a re-plan that changed no cap and kept the budget. */
int pfi_cl_decision_add(pfi_cl *c, double budget_w, double apply_s, long long lowered,
                        long long raised);
/* GET /v1/history (since: Unix seconds) and GET /v1/decisions (newest first, at most limit). */
void *pfi_cl_json_history(pfi_cl *c, double since);
void *pfi_cl_json_decisions(pfi_cl *c, int limit);

#endif
