/* SPDX-License-Identifier: Apache-2.0 */
/* ven.h: the OpenADR 3.0 client (a VEN) of `pfi serve` (a node's events) and `pfi cluster
 * serve` (the site's): the protocol lives here once (ven.c); each daemon gives it the grid
 * events it holds through three callbacks.  Its settings: ven_config.h. */
#ifndef PFI_SERVE_VEN_H
#define PFI_SERVE_VEN_H

#include "core/err.h"
#include "core/event.h"
#include "serve/ven_config.h"

#define PFI_VEN_EVENTS_MAX 256 /* the host's events the client looks at */

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

/* Reads the secret and starts polling (a thread).  host is copied. */
int pfi_ven_start(const pfi_ven_host *host, const pfi_ven_config *cfg, pfi_ven **out,
                  pfi_err *err);
void pfi_ven_stop(pfi_ven *v); /* NULL: nothing */
/* A notification of the VTN at .../v1/grid/openadr/notify/<secret>: 1 (the client polls at
 * once) when secret is the callback's, else 0 (answer 401).  v NULL: 0. */
int pfi_ven_notify(pfi_ven *v, const char *secret);
/* {"enabled", "vtn", "program", "program_id", "polls", "errors", "events_taken",
 * "events_cancelled", "reports_posted", "last_error", "clock_skew_s", "skewed",
 * "skewed_answers", "ven_name", "ven_id", "subscription_id", "notifications",
 * "other_program_events", "non_gpu_power_w"}; v NULL: {"enabled": false}.  json_t * as void *. */
void *pfi_ven_json(pfi_ven *v);

#endif
