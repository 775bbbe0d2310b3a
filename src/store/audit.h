/* SPDX-License-Identifier: Apache-2.0 */
/* audit.h: the node daemon's memory (`pfi serve`), kept in a store file as the store's "serve"
 * layer (store.h: pfi_store_migrate_layer): every decision (budget, caps asked and read back,
 * each job's predicted tokens/s and the tokens/s it later reported), events, the registered
 * jobs (so a restart keeps them) and a little state.
 *
 * The tables and every statement on them live here, so no layer above store/ speaks SQL; the
 * daemon hands over plain rows (serve/audit.c turns its own types into them).  One connection,
 * shared by the daemon's threads under a mutex.  A NULL log writes nothing: writers return
 * PFI_OK, readers behave as for an empty log.  Audit rows may lose the last instants in a power
 * cut (synchronous=NORMAL); the limits themselves are guarded by the journal, which fsyncs. */
#ifndef PFI_STORE_AUDIT_H
#define PFI_STORE_AUDIT_H

#include <stddef.h>

#include <jansson.h>

#include "core/err.h"

typedef struct pfi_audit pfi_audit;

/* One job of a decision.  NAN numbers are stored as NULL. */
typedef struct pfi_audit_job {
    const char *id;
    int n_gpus;
    double cap_w, predicted_tps, pfi30, sla, weight;
    const char *curve; /* where its curve came from ("given", "predicted", ...) */
} pfi_audit_job;

/* One GPU of a decision: what it was, what was asked, what it reads back. */
typedef struct pfi_audit_gpu {
    int gpu;
    double before_w, target_w, limit_w, enforced_w;
    int held;
    const char *error; /* NULL or "": none */
} pfi_audit_gpu;

typedef struct pfi_audit_decision {
    double wall; /* seconds since the epoch */
    const char *reason;
    double budget_w;
    const char *mode; /* "local", "external", "safe" */
    double sum_before_w, sum_after_w, peak_w;
    int n_changed, n_failed, n_held, n_mismatch;
    double apply_ms;
    const pfi_audit_job *jobs;
    int n_jobs;
    const pfi_audit_gpu *gpus;
    int n_gpus;
} pfi_audit_decision;

/* Opens (creating) the store at path and brings its "serve" tables up to date. */
int pfi_audit_open(const char *path, pfi_audit **out, pfi_err *err);
void pfi_audit_close(pfi_audit *a);

/* The writers return PFI_EIO when the row could not be written: the daemon carries on, and
 * says so in an event, since a full disk must not stop control. */
int pfi_audit_event(pfi_audit *a, double wall, const char *kind, const char *msg);
/* The decision row with its jobs and GPUs, all or nothing; returns its id (0 on failure). */
long long pfi_audit_decision_add(pfi_audit *a, const pfi_audit_decision *d);
/* tokens/s a job reported at `wall`, on the row of its latest decision (the caps in force). */
int pfi_audit_observed(pfi_audit *a, double wall, const char *job, double tps);
/* The latest `limit` decisions, newest first, each with its jobs' rows (predicted and
 * observed tokens/s): {"decisions": [...]}.  NULL on a database error. */
json_t *pfi_audit_decisions(pfi_audit *a, int limit, pfi_err *err);

/* Registered jobs: their specs (JSON text) by id, in registration order. */
int pfi_audit_save_job(pfi_audit *a, const char *id, const char *spec_json);
int pfi_audit_delete_job(pfi_audit *a, const char *id);
/* Calls fn for every saved job spec, in registration order (fn may write to the log). */
int pfi_audit_load_jobs(pfi_audit *a, void (*fn)(void *ctx, const char *id, const char *spec),
                        void *ctx, pfi_err *err);

/* Small state by key (the budget in force, ...); get: PFI_ENOENT when unset. */
int pfi_audit_set_state(pfi_audit *a, const char *key, const char *value);
int pfi_audit_get_state(pfi_audit *a, const char *key, char *value, size_t size);
/* Removes the state of key (none there: PFI_OK). */
int pfi_audit_delete_state(pfi_audit *a, const char *key);
/* Removes every state whose key starts with prefix and whose value is `value`. */
int pfi_audit_delete_states(pfi_audit *a, const char *prefix, const char *value);

#endif
