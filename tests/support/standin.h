/* SPDX-License-Identifier: Apache-2.0 */
/* standin.h: stand-in node daemons for the cluster controller's tests (tests/test_cluster.c)
 * and its 1,000-node benchmark (bench/bench_cluster.c).  Built with the tests and benchmarks,
 * never into libpfi.a: no pfi command runs one. */
#ifndef PFI_TESTS_SUPPORT_STANDIN_H
#define PFI_TESTS_SUPPORT_STANDIN_H

#include "core/err.h"

/* Many simulated node daemons behind one loopback HTTP server: node NAME answers under
 * http://127.0.0.1:PORT/n/NAME/v1/...  Each GPU has limits [min, max], default = max; jobs are
 * given with their GPUs, SLA, weight and a curve.  Every cap change is applied under one lock
 * and the site's cap sum checked after it: peak_w is the largest sum ever seen. */
typedef struct pfi_standin pfi_standin;

typedef struct pfi_standin_job {
    const char *id;
    const char *node;
    int n_gpus;
    const int *gpus;
    double sla, weight;       /* NAN: none */
    int n_points;             /* 0: no curve */
    const double *cap_w, *tput;
    double p0_w, t0;
} pfi_standin_job;

int pfi_standin_start(int n_nodes, const char *const *names, int gpus_per_node, double min_w,
                      double max_w, pfi_standin **out, int *port, pfi_err *err);
/* The same on `threads` server threads (pfi_standin_start: 4). */
int pfi_standin_start_threads(int threads, int n_nodes, const char *const *names,
                              int gpus_per_node, double min_w, double max_w, pfi_standin **out,
                              int *port, pfi_err *err);
int pfi_standin_add_job(pfi_standin *s, const pfi_standin_job *j, pfi_err *err);
/* The SLA breaches node `node` reports for job `id` (GET /v1/jobs sla_breaches_seen: n caps and
 * slowdowns; n 0: none).  PFI_ENOENT when the node has no such job. */
int pfi_standin_set_seen(pfi_standin *s, const char *node, const char *id, int n,
                         const double *cap_w, const double *slowdown, pfi_err *err);
/* The cap epoch node `node` says it last applied (GET /v1/gpus caps_epoch), as a broken or
 * hostile daemon may say any. */
void pfi_standin_set_epoch(pfi_standin *s, const char *node, long long epoch);
/* Whether the stand-ins say caps_named in GET /v1/gpus (they take the controller's name with
 * caps); without it they refuse any field but epoch and caps, as older node daemons do. */
void pfi_standin_set_named(pfi_standin *s, int named);
/* The controller named by the last caps taken ("" none) into out[0..n). */
void pfi_standin_caps_by(pfi_standin *s, char *out, size_t n);
/* The cap epoch node `node` last applied (0: none, or no such node). */
long long pfi_standin_epoch(pfi_standin *s, const char *node);
/* A silent node: accepts connections, never answers (until unset). */
void pfi_standin_set_silent(pfi_standin *s, const char *node, int silent);
/* A node that refuses the controller's token: 401 to every change and heartbeat, reads open. */
void pfi_standin_set_refuse(pfi_standin *s, const char *node, int refuse);
double pfi_standin_cap_sum(pfi_standin *s);
double pfi_standin_peak(pfi_standin *s);
void pfi_standin_reset_peak(pfi_standin *s);
/* Limit of one GPU now (NAN: unknown node). */
double pfi_standin_cap(pfi_standin *s, const char *node, int gpu);
long long pfi_standin_requests(pfi_standin *s);
/* Connections the server has accepted so far (a client that keeps its connections opens few). */
long long pfi_standin_connections(pfi_standin *s);
/* hold 1: every request that arrives waits (its server thread with it) until hold 0. */
void pfi_standin_hold(pfi_standin *s, int hold);
/* Requests waiting on a hold now. */
int pfi_standin_waiting(pfi_standin *s);
void pfi_standin_stop(pfi_standin *s);

#endif
