/* SPDX-License-Identifier: Apache-2.0 */
/* cluster.h: the cluster power controller (`pfi cluster`).  Read this first if you touch
 * src/cluster/.
 *
 * One process per site.  It splits a site power budget across every GPU of every node: it
 * learns the nodes and which job runs on which GPUs from Slurm itself (topo.c), learns each
 * job's curve, SLA and weight from the node daemons (`pfi serve`, which the SPANK plugin told
 * about the job), runs the allocator (core/alloc.h) over all jobs at once, a multi-node job
 * getting one cap on all its GPUs everywhere, and hands each node daemon its caps (PUT /v1/caps)
 * in an order that keeps the site under budget at every instant: every lowering on every node
 * first, each acknowledged after read-back, then the raises (controller.c).
 *
 * The budget is on the sum of the GPUs' power limits, all GPUs of all managed nodes counted.
 * GPUs that hold no job are parked at their minimum while a budget holds and get what the jobs
 * leave, up to their default limit.  A node daemon that stops answering keeps the caps it last
 * acknowledged: its GPUs count at those caps (at their maximum when never acknowledged), its
 * jobs keep their caps everywhere, and /v1/nodes says so.
 *
 * Pieces (one concern per file):
 *   topo.c        nodes and jobs: Slurm (`sinfo --json`, `squeue --json`) or a JSON file
 *   controller.c  gather, allocate, two-phase apply, heartbeats, the budget; it reaches
 *                 the node daemons many at once through util/http.h
 *   api.c         the controller's own HTTP API (libmicrohttpd)
 * Stand-in node daemons for its tests and benchmark live in tests/support/standin.c. */
#ifndef PFI_CLUSTER_CLUSTER_H
#define PFI_CLUSTER_CLUSTER_H

#include <pthread.h>

#include "core/alloc_seen.h"
#include "core/err.h"
#include "hw/hw.h"
#include "serve/ven.h"
#include "util/http.h"

#define PFI_CL_NODE_PORT 9455 /* `pfi serve`'s default port */
#define PFI_CL_NAME_MAX 64
#define PFI_CL_URL_MAX 256
#define PFI_CL_CURVE_MAX 24

/* ---- topology (topo.c) ---- */

typedef struct pfi_cl_topo_node {
    char name[PFI_CL_NAME_MAX];
    char addr[PFI_CL_NAME_MAX]; /* NodeAddr ("" unknown) */
    int n_gpus;                 /* GRES gpu count */
    char state[32];             /* Slurm's, e.g. "idle", "mixed", "down" */
} pfi_cl_topo_node;

/* One job's GPUs on one node. */
typedef struct pfi_cl_topo_part {
    int node;                   /* index into topo->nodes */
    int n_gpus;
    int gpus[PFI_MAX_GPUS];
} pfi_cl_topo_part;

typedef struct pfi_cl_topo_job {
    char id[PFI_CL_NAME_MAX];
    int n_parts;
    pfi_cl_topo_part *parts;
} pfi_cl_topo_job;

typedef struct pfi_cl_topo {
    int n_nodes, n_jobs;
    pfi_cl_topo_node *nodes;
    pfi_cl_topo_job *jobs;      /* running jobs holding at least one GPU */
} pfi_cl_topo;

void pfi_cl_topo_free(pfi_cl_topo *t);
/* From the JSON that `sinfo --json` and `squeue --json` print (Slurm 21.08+). */
int pfi_cl_topo_parse_slurm(const char *sinfo_json, const char *squeue_json, pfi_cl_topo *out,
                            pfi_err *err);
/* Runs both commands (SLURM_CONF as in the environment), each killed after timeout_s:
 * PFI_ETIMEOUT. */
int pfi_cl_topo_from_slurm(double timeout_s, pfi_cl_topo *out, pfi_err *err);
/* pfi's own format, for simulations: {"nodes": [{"name", "gpus"}],
 * "jobs": [{"id", "parts": [{"node", "gpus": [0, 1]}]}]}. */
int pfi_cl_topo_parse_json(const char *text, pfi_cl_topo *out, pfi_err *err);
char *pfi_cl_topo_to_json(const pfi_cl_topo *t);
/* "gpu:2(IDX:0-1)", "gpu:h100:4(IDX:0,2-4)" -> indices; -1 when malformed. */
int pfi_cl_parse_gres_idx(const char *s, int *out, int max);

/* ---- the controller (controller.c) ---- */

/* Why a node refuses a controller's changes (pfi_cl_node refused; 0: it does not). */
#define PFI_CL_REFUSED_TOKEN 1 /* 401/403: the token of --node-token-file */
#define PFI_CL_REFUSED_HELD 2  /* 409: another controller holds it */

typedef struct pfi_cl_config {
    /* Node daemon URL for a node: "%n" is replaced by the node name, "%a" by its address. */
    char node_url[PFI_CL_URL_MAX];
    char node_map[512];       /* optional file of "NODE URL" lines, overriding node_url */
    char node_token_file[512];/* bearer token the node daemons expect ("" none) */
    char topo_file[512];      /* "" : ask Slurm; else a pfi topology JSON file */
    double timeout_s;         /* per node request */
    int max_parallel;         /* node requests in flight */
    double heartbeat_s;       /* period of heartbeats and refreshes; 0: none */
    double node_ttl_s;        /* watchdog the node daemons arm: revert after this silence */
    double step_w;            /* cap grid of the allocator */
    /* The controller's API (api.c): */
    double client_timeout_s;  /* a connection idle this long is closed (1 s to 1 h) */
    int max_conns;            /* connections held at once (1 to 4096) */
    int max_client_conns;     /* of them, from one client address (1 to 4096) */
    /* The name this controller gives the node daemons with its heartbeats and caps: one they
     * hold caps from refuses another's (a second controller over the same nodes) until it is
     * silent.  The same controller restarted must give the same name ("pfi-cluster" by
     * default; pfi cluster serve makes one of its host, database and address). */
    char name[96];
    int read_auth;            /* 1: every GET but /healthz needs the bearer token too (what
                               * jobs run, for whom and what happened is the token holder's, as
                               * a node daemon's read_auth = token); needs a token file */
} pfi_cl_config;

void pfi_cl_config_defaults(pfi_cl_config *c);
/* How long sinfo and squeue may take, each: half of what the nodes' watchdog leaves after one
 * heartbeat period (a hung Slurm must not starve the nodes of heartbeats), 1 s to 60 s. */
double pfi_cl_slurm_timeout(const pfi_cl_config *cfg);
/* The topology the controller works from: cfg->topo_file when set, else Slurm's (sinfo and
 * squeue, each within pfi_cl_slurm_timeout). */
int pfi_cl_topo_load(const pfi_cl_config *cfg, pfi_cl_topo *t, pfi_err *err);

/* What the controller knows of one node. */
typedef struct pfi_cl_node {
    char name[PFI_CL_NAME_MAX];
    char url[PFI_CL_URL_MAX];
    int n_gpus;
    int up;                   /* answered the last request */
    int ever_up;
    int unusable;             /* the last refresh read it and could not manage it (its GPUs
                               * unlike Slurm's): a heartbeat's answer does not bring it up */
    int refused;              /* PFI_CL_REFUSED_*: it refuses this controller's changes (a
                               * heartbeat or caps answered 401/403: the token; 409: another
                               * controller holds it); a read's answer does not bring it up (it
                               * showed up, no reason given, while every change was refused) */
    int n_gpus_seen; /* GPUs the daemon reported when it last answered (may exceed Slurm's) */
    int n_gpus_slurm; /* GPUs Slurm lists for it */
    char commanded_by[64]; /* the controller whose caps it holds, heard lately, "" none */
    double commanded_heard_s; /* seconds since that controller's last heartbeat */
    double commanded_for_s;   /* how long after it the node stops naming it (the node's rule) */
    char why[200];            /* why not up */
    double last_ok_wall;
    char boot_id[40];         /* the daemon's, from its heartbeat answers ("" unknown) */
    int resend;               /* restarted: its caps go out again in the next apply */
    long long restarts;       /* new boot ids seen */
    /* The last cap epoch the daemon applied (GET /v1/gpus; 0 unknown): the next wave's epoch
     * is above it, whatever the wall clock says (a controller restarted after its clock went
     * back sent only stale epochs, refused with 409, and the site stayed over its budget). */
    long long caps_epoch;
    /* The daemon takes this controller's name with its caps (GET /v1/gpus caps_named): sent
     * only then, since a daemon older than it refuses the field (400) and every wave failed. */
    int caps_named;
    /* Slurm no longer lists it (or lists no GPU for it) but it answered before, so it may hold
     * this controller's caps: kept in the plan, its GPUs counted (at its caps while silent, at
     * their minimum as idle GPUs when it answers) for as long as this controller runs.  It was
     * forgotten at once, its watts given to the others while its caps stayed in force. */
    int departed;
    pfi_device gpu[PFI_MAX_GPUS];  /* limits; limit_w = last acknowledged cap (NAN unknown) */
    double power_w[PFI_MAX_GPUS];  /* draw at the last refresh (NAN unknown) */
    int job_of[PFI_MAX_GPUS];      /* index into jobs, -1 when no job holds the GPU */
} pfi_cl_node;

typedef struct pfi_cl_job {
    char id[PFI_CL_NAME_MAX];
    int n_gpus;               /* over all its nodes */
    int n_nodes;
    int *nodes;               /* node indices */
    double sla, weight;       /* as registered on the node daemons (NAN: none) */
    double pfi30;             /* as a node daemon reports it (NAN: unknown) */
    int has_curve;            /* 0: unknown, throughput taken proportional to the cap */
    int n_points;
    double cap_w[PFI_CL_CURVE_MAX], tput[PFI_CL_CURVE_MAX];
    double p0_w, t0;
    double min_cap_w, max_cap_w; /* intersection over its GPUs */
    int pinned;               /* on a node that does not answer: keeps its caps */
    double cap_now_w;         /* the highest cap its GPUs hold now (NAN unknown) */
    double cap_target_w;      /* what the last allocation gave it (NAN: none yet) */
    double tput_target;
    int registered;           /* some node daemon knows it */
    /* Its SLA, weight and PFI30 when a node last told them: shown (marked) while its nodes are
     * silent, which tell nothing (the site page said "no SLA" of a job with a 20% SLA); the
     * plan does not read them (a silent node's job is pinned). */
    double last_sla, last_weight, last_pfi30;
    /* SLA breaches its node daemons saw in its log (GET /v1/jobs sla_breaches_seen): the plan
     * reads its curve through them (docs/cluster.md) */
    pfi_alloc_seen seen;
} pfi_cl_job;

typedef struct pfi_cl_budget {
    int set;                  /* 0: no budget, every GPU at its default */
    double watts;             /* when set */
    double ramp_s;
    int only_if_none;         /* refused (PFI_EBUSY) when a budget is set: a restart's resume
                               * must not replace one the operator set meanwhile */
} pfi_cl_budget;

typedef struct pfi_cl_stats {
    long long n_apply, n_lowered, n_raised, n_node_fail;
    long long n_node_restarts; /* node daemons seen with a new boot id */
    double last_apply_s;      /* budget change -> every node acknowledged, seconds */
    double last_alloc_s;      /* of which the allocation */
    double peak_w;            /* largest acknowledged cap sum seen during the last apply */
} pfi_cl_stats;

typedef struct pfi_cl pfi_cl;

int pfi_cl_open(const pfi_cl_config *cfg, pfi_cl **out, pfi_err *err);
void pfi_cl_close(pfi_cl *c);
/* Learns the topology and asks every node daemon its GPUs and jobs. */
int pfi_cl_refresh(pfi_cl *c, pfi_err *err);
/* Sets the site budget and applies it (or steps to it over ramp_s).  watts < 0 with set = 0
 * removes the budget.  Infeasible budgets (below the minimum caps and SLAs of what must be
 * held): PFI_EINFEASIBLE with the least feasible budget, and nothing changed. */
int pfi_cl_set_budget(pfi_cl *c, const pfi_cl_budget *b, pfi_err *err);
/* The same, with answer(c, ctx) (may be NULL) called once the change ran (on success, and on a
 * budget taken but not met yet) before any other change runs: what it reads of c is the state
 * this change left.  Read after, one request of several at once was answered with another's
 * budget. */
typedef void (*pfi_cl_answer_fn)(pfi_cl *c, void *ctx);
int pfi_cl_set_budget_answer(pfi_cl *c, const pfi_cl_budget *b, pfi_cl_answer_fn answer,
                             void *ctx, pfi_err *err);
/* What a site budget's share is of (util/budget.h). */
#define PFI_CL_BUDGET_REF "the sum of the site's GPUs' default limits"
/* A budget as util/budget.h reads it ("5600W", "70%", "cut=30%"), its share of
 * PFI_CL_BUDGET_REF. */
int pfi_cl_parse_budget(pfi_cl *c, const char *text, double *watts, pfi_err *err);
/* pfi_cl_set_budget of a budget as a person types it: what pfi_cl_parse_budget reads, or "none"
 * to remove it; reached over ramp_s. */
int pfi_cl_set_budget_text(pfi_cl *c, const char *text, double ramp_s, pfi_err *err);
/* The site budget kept in the grid store across restarts (no store: nothing saved, none
 * read); saved: *watts, NAN when none was saved or it was removed. */
void pfi_cl_budget_save(pfi_cl *c);
/* 1 when a node answering the last refresh holds the caps of a running controller (external
 * mode, a heartbeat within the last minute), with err naming it: a one-shot budget beside `pfi cluster
 * serve` took the nodes over (16.8 kW for a heartbeat while the daemon said 10 kW), and two
 * controllers lowering and raising break each other's order. */
int pfi_cl_commanded(pfi_cl *c, pfi_err *err);
int pfi_cl_budget_saved(pfi_cl *c, double *watts, pfi_err *err);
/* The budget saved before a restart, taken back without a ramp (forgotten, the site was
 * re-planned no more and the API said there was none).  1 while it is saved but not in force
 * yet (a node not answering so soon after a reboot): call again every PFI_CL_RESUME_EVERY_S;
 * never over a budget set meanwhile.  msg (n bytes): what to tell the operator, "" if nothing
 * (the first failure is said, later ones are not). */
#define PFI_CL_RESUME_EVERY_S 5
int pfi_cl_budget_resume(pfi_cl *c, int first, char *msg, size_t n);
/* Re-allocates the budget in force on the current topology (after a refresh). */
int pfi_cl_reapply(pfi_cl *c, pfi_err *err);
/* Sends a heartbeat to every node daemon; marks the silent ones down. */
void pfi_cl_heartbeat(pfi_cl *c);
/* Sum of the default limits of every managed GPU (the base of percentages). */
double pfi_cl_site_default_w(pfi_cl *c);

/* JSON views for the API and the CLI (caller decrefs; `json_t *` as void * to keep jansson out
 * of this header's users). */
void *pfi_cl_json_nodes(pfi_cl *c);
void *pfi_cl_json_jobs(pfi_cl *c);
void *pfi_cl_json_allocation(pfi_cl *c);
/* Prometheus text; caller frees. */
char *pfi_cl_metrics(pfi_cl *c);
void pfi_cl_get_stats(pfi_cl *c, pfi_cl_stats *out);

/* Periodic heartbeats and refresh + re-allocation, in a thread, until pfi_cl_close. */
int pfi_cl_start_loop(pfi_cl *c, pfi_err *err);

/* ---- grid events (grid.c; docs/cluster.md) ---- */

/* Opens the store at db (its grid layer) and loads the events saved there. */
int pfi_cl_grid_open(pfi_cl *c, const char *db, pfi_err *err);
/* Adds or replaces an event from a JSON body (store/grid.h's shape); the caller re-plans at
 * once (pfi_cl_reapply), as after pfi_cl_grid_remove.  *result: the event as shown, or
 * {"feasible": false, "achievable_w"} beside an EINFEASIBLE error.  json_t * as void *.  With
 * PFI_CL_GRID_TAKE_SHORT in flags (an OpenADR VTN's event: the grid's limit, not a request the
 * site may refuse) one the SLAs cannot meet is taken, and held at the least the site can hold
 * while it binds. */
#define PFI_CL_GRID_TAKE_SHORT 1
int pfi_cl_grid_add(pfi_cl *c, void *body, int flags, void **result, int *created,
                    pfi_err *err);
int pfi_cl_grid_remove(pfi_cl *c, const char *id, pfi_err *err);
/* {"events": [...]} or one event (NULL: no such id), with the predicted cost of each. */
void *pfi_cl_grid_json(pfi_cl *c, const char *id);
/* The compliance report of one event (docs/api.md's shape); NULL with *err.  An event let go
 * is reported from the store's history, with "let_go". */
void *pfi_cl_grid_report(pfi_cl *c, const char *id, pfi_err *err);

/* ---- the OpenADR 3.0 client (serve/ven.h; ven.c adds its events to the site) ---- */

/* Starts the client on the site's events (settings: serve/ven.h); needs pfi_cl_grid_open
 * first.  Bad settings: PFI_EINVAL.  pfi_ven_stop stops it. */
int pfi_cl_ven_start(pfi_cl *c, const pfi_ven_config *cfg, pfi_ven **out, pfi_err *err);
/* Whose counters GET /v1/grid/openadr shows (NULL: none; set it to NULL before stopping). */
void pfi_cl_set_ven(pfi_cl *c, pfi_ven *v);

/* ---- the controller's HTTP API (api.c) ---- */

typedef struct pfi_cl_server pfi_cl_server;
/* listen: "127.0.0.1:PORT" (0: ephemeral); token_file: bearer for PUT ("" none).  With
 * c's cfg.read_auth and no token_file: PFI_EINVAL, nothing started. */
int pfi_cl_server_start(pfi_cl *c, const char *listen, const char *token_file,
                        pfi_cl_server **out, int *port, pfi_err *err);
void pfi_cl_server_stop(pfi_cl_server *s);

#endif
