/* SPDX-License-Identifier: Apache-2.0 */
/* ven.h: the OpenADR 3.0 client (a VEN) of `pfi serve` (a node's events) and `pfi cluster
 * serve` (the site's): the protocol lives here once (ven.c); each daemon gives it the grid
 * events it holds through three callbacks.  Settings (docs/cluster.md, docs/serve.md):
 *   vtn_url, token_url ("" : VTN_URL/auth/token), client_id, secret_file (first line, chmod
 *   600), program (programName), resource (resourceName in reports), ven_name (venName,
 *   default the client id), callback_url (this daemon's base URL as the VTN reaches it: a
 *   subscription's notifications go to it), poll, timeout, ramp,
 *   max_skew (durations), simple_cut_1..3 (percentages: the cut of each SIMPLE level),
 *   randomize_seed (an integer: which start offsets a randomizeStart draws), sla (keep or
 *   yield: whether the jobs' SLAs give way to the VTN's events), non_gpu_power (a fixed power,
 *   "2kW": the site's draw besides its GPUs, off each import limit, onto each DEMAND). */
#ifndef PFI_SERVE_VEN_H
#define PFI_SERVE_VEN_H

#include "core/err.h"
#include "core/event.h"

#define PFI_VEN_URL_MAX 256
#define PFI_VEN_EVENTS_MAX 256 /* the host's events the client looks at */

typedef struct pfi_ven_config {
    char vtn_url[PFI_VEN_URL_MAX];   /* the VTN's API base, e.g. https://vtn.example/openadr3 */
    char token_url[PFI_VEN_URL_MAX]; /* OAuth 2.0 token endpoint ("" : VTN_URL/auth/token) */
    char client_id[128];
    char secret_file[512];           /* the client secret: first line, chmod 600 */
    char program[128];               /* programName */
    char resource[64];               /* resourceName in reports and registration */
    char ven_name[128];              /* venName it registers as ("": the client id) */
    char callback_url[PFI_VEN_URL_MAX]; /* where the VTN reaches this daemon ("": no
                                      * subscription, polling alone) */
    double poll_s, timeout_s, ramp_s;
    double max_skew_s;               /* the clocks may disagree by this much (default 30 s) */
    double simple_cut[4];            /* SIMPLE level 1..3 -> cut of the baseline */
    long long randomize_seed;        /* >= 0 (default 0): with the venName and the event id,
                                      * the offset of a randomizeStart (ven.c start_fraction) */
    int sla_yield;                   /* sla = yield: the jobs' SLAs give way to the VTN's events
                                      * (default keep: held at the least the SLAs allow) */
    /* What the site draws besides its GPUs (W, default 0): pfi caps only the GPUs, and a VTN's
     * import limit covers the meter, so this is taken off each limit for the GPUs' budget and
     * added to the DEMAND and USAGE reported. */
    double non_gpu_w;
} pfi_ven_config;

/* The daemon whose grid events the client adds to. */
typedef struct pfi_ven_host {
    void *ctx;
    const char *name; /* in log lines: "pfi serve", "pfi cluster" */
    /* Copies at most cap of the events held now into out; returns how many. */
    int (*events)(void *ctx, pfi_event *out, int cap);
    /* Adds or replaces an event from a JSON body (store/grid.h's shape, json_t *) and re-plans
     * at once; an error changes nothing.  An event the SLAs in force cannot meet is taken all
     * the same and held at the least the host can hold (a VTN's limit is the grid's, not a
     * request the host may turn down): not an error. */
    int (*add)(void *ctx, void *body, pfi_err *err);
    /* Deletes an event and re-plans at once (PFI_ENOENT when there is none). */
    int (*remove)(void *ctx, const char *id, pfi_err *err);
    /* Lets a finished event go from the events held, keeping it in the host's store as history
     * (store/grid.h PFI_GRID_HISTORY_S): its report stays available.  NULL: remove. */
    int (*let_go)(void *ctx, const char *id, pfi_err *err);
    /* The compliance report of an event (docs/api.md's shape, json_t *); NULL with *err. */
    void *(*report)(void *ctx, const char *id, pfi_err *err);
    /* The site the events apply to now (its maximum, the manual budget): where the ramp-down
     * of an event the VTN withdraws has brought the budget. */
    void (*site)(void *ctx, pfi_event_site *out);
    /* Notes (and saves) that the report of event id reached the VTN at `when`. */
    int (*reported)(void *ctx, const char *id, double when, pfi_err *err);
} pfi_ven_host;

typedef struct pfi_ven pfi_ven;

/* No VTN, poll 10 s, timeout 5 s, ramp 5 min, max skew 30 s, SIMPLE cuts 10/20/30%, seed 0,
 * the resource name given. */
void pfi_ven_config_defaults(pfi_ven_config *c, const char *resource);
/* One setting by its key (above); an unknown key or a bad value is an error naming it. */
int pfi_ven_config_set(pfi_ven_config *c, const char *key, const char *value, pfi_err *err);
/* "key = value" lines ('#' comments); errors name the file and line. */
int pfi_ven_config_load(pfi_ven_config *c, const char *path, pfi_err *err);
/* Whether the settings are complete and in range (PFI_EINVAL naming the first problem). */
int pfi_ven_config_check(const pfi_ven_config *c, pfi_err *err);
/* Reads the secret and starts polling (a thread).  host is copied. */
int pfi_ven_start(const pfi_ven_host *host, const pfi_ven_config *cfg, pfi_ven **out,
                  pfi_err *err);
void pfi_ven_stop(pfi_ven *v); /* NULL: nothing */
/* A notification of the VTN at .../v1/grid/openadr/notify/<secret>: 1 (the client polls at
 * once) when secret is the callback's, else 0 (answer 401).  v NULL: 0. */
int pfi_ven_notify(pfi_ven *v, const char *secret);
/* One interval (the k-th, json_t *interval) of an OpenADR event (json_t *event) -> the body of
 * the grid event it becomes (store/grid.h's shape, json_t *; the caller owns it), its window
 * widened by widen_s on both sides; a start of "now" (0001-01-01) is now (Unix seconds).  A
 * SIMPLE interval with a randomizeStart R starts (and ends) u * R later, u in [0, 1) drawn
 * from cfg's seed, the VEN's name and the event id; a limit starts on time whatever R.
 * NULL when nothing is to be done: why[0] is 0 for an interval that asks for nothing (SIMPLE
 * level 0, another VEN's event), else why says what is wrong with it. */
void *pfi_ven_map_interval(const pfi_ven_config *cfg, void *event, void *interval, int k,
                           double now, double widen_s, char *why, size_t wn);
/* {"enabled", "vtn", "program", "program_id", "polls", "errors", "events_taken",
 * "events_cancelled", "reports_posted", "last_error", "clock_skew_s", "skewed",
 * "skewed_answers", "ven_name", "ven_id", "subscription_id", "notifications",
 * "other_program_events", "non_gpu_power_w"}; v NULL: {"enabled": false}.  json_t * as void *. */
void *pfi_ven_json(pfi_ven *v);

#endif
