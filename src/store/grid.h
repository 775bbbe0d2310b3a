/* grid.h: grid events (core/event.h) and the site power recorded around them, kept in a store
 * file as the store's "grid" layer (store.h: pfi_store_migrate_layer), so that events survive
 * a restart of `pfi serve` or `pfi cluster serve` and an event's compliance report can be
 * written after it ended.
 *
 * Tables: grid_events (one row per event, every field of pfi_event), grid_power (one row per
 * recorded site sample: wall time, site draw, budget in force, the binding event's id).  Every
 * write is one statement or one transaction: a crash leaves the old row or the new, never half.
 * One connection, shared by the daemon's threads under a mutex. */
#ifndef PFI_STORE_GRID_H
#define PFI_STORE_GRID_H

#include "core/err.h"
#include "core/event.h"

typedef struct pfi_grid_store pfi_grid_store;

/* Opens (creating) the store at path and brings its "grid" tables up to date. */
int pfi_grid_open(const char *path, pfi_grid_store **out, pfi_err *err);
void pfi_grid_close(pfi_grid_store *g);

/* Inserts the event, or replaces the one with the same id. */
int pfi_grid_put(pfi_grid_store *g, const pfi_event *ev, pfi_err *err);
/* PFI_ENOENT naming the id when there is no such event. */
int pfi_grid_delete(pfi_grid_store *g, const char *id, pfi_err *err);
/* Every event, by start time; *evs malloc'ed (free()), NULL when *n == 0. */
int pfi_grid_load(pfi_grid_store *g, pfi_event **evs, int *n, pfi_err *err);

/* One site sample: draw (W), the budget in force (INFINITY or NAN: none) and the id of the
 * event that binds ("" or NULL: none). */
typedef struct pfi_grid_sample {
    double wall;
    double site_w;
    double budget_w;
} pfi_grid_sample;

int pfi_grid_power_add(pfi_grid_store *g, double wall, double site_w, double budget_w,
                       const char *event_id, pfi_err *err);
/* Samples with t0 <= wall < t1 in time order; *out malloc'ed (free()), NULL when *n == 0. */
int pfi_grid_power_range(pfi_grid_store *g, double t0, double t1, pfi_grid_sample **out, int *n,
                         pfi_err *err);
/* Deletes samples older than `before` that no stored event needs (an event needs its window
 * from keep_before_s before its ramp to keep_after_s after its end). */
int pfi_grid_power_prune(pfi_grid_store *g, double before, double keep_before_s,
                         double keep_after_s, pfi_err *err);

#endif
