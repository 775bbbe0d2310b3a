/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_keep.h: a re-planner's allocator.  A caller that plans the same jobs again and again
 * (a site controller after every budget change or curve report) hands its current job list on
 * every plan; the keeper compares it with its own copy of the last one and re-solves warm
 * (core/alloc.h's workspace): a new budget costs a search, a job whose curve, range, GPUs, SLA
 * or weight changed rebuilds that job only, and so does a job arriving or leaving (while the
 * ids the two lists share keep their order and the changes are few); any other list of ids
 * rebuilds everything.  The
 * answer and any error are pfi_alloc_solve's on the same arguments, bit for bit. */
#ifndef PFI_CORE_ALLOC_KEEP_H
#define PFI_CORE_ALLOC_KEEP_H

#include "core/alloc.h"

typedef struct pfi_alloc_keep pfi_alloc_keep;

/* pfi_alloc_solve(jobs, n, budget_w, opts, res, err) through *kp (NULL at first: created on the
 * first success).  The jobs are copied: the caller may change or free them afterwards.  After
 * an error the kept state is dropped (the next call rebuilds). */
int pfi_alloc_keep_solve(pfi_alloc_keep **kp, const pfi_alloc_job *jobs, int n, double budget_w,
                         const pfi_alloc_opts *opts, pfi_alloc_result *res, pfi_err *err);
/* Hands back a result of pfi_alloc_keep_solve once the caller is done with it, instead of
 * pfi_alloc_result_free: the keeper's next warm solve refills its arrays in place when they
 * hold its jobs (pfi_alloc_ws_solve_reuse), so a re-plan of a large fleet touches no new memory.
 * res is zeroed; k NULL: res is freed. */
void pfi_alloc_keep_put_back(pfi_alloc_keep *k, pfi_alloc_result *res);
/* Solves since creation that reused the kept state (warm), and that rebuilt it. */
long long pfi_alloc_keep_warm(const pfi_alloc_keep *k);
long long pfi_alloc_keep_rebuilt(const pfi_alloc_keep *k);
void pfi_alloc_keep_free(pfi_alloc_keep *k);

#endif
