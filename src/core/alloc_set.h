/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_set.h: the jobs `pfi allocate` shares a budget among, wherever they were read from (a
 * jobs file or the runs of a store: store/jobs.h).  Each job may have a true curve (measured)
 * and a predicted one, a PFI30 given with it, and in the per-GPU mode a per-GPU table
 * (alloc_pergpu.h).  A policy reads one curve per job, its view: pfi and
 * proportional-to-pfi the predictions, the others the truth; an allocation is then judged on
 * the true curves.  Pure. */
#ifndef PFI_CORE_ALLOC_SET_H
#define PFI_CORE_ALLOC_SET_H

#include "core/alloc.h"
#include "core/alloc_curve.h"
#include "core/alloc_pergpu.h"

/* A job's per-GPU table and what the allocator reads of it. */
typedef struct pfi_alloc_pergpu {
    int n_caps;
    double cap_w[PFI_ALLOC_CURVE_PTS], tput[PFI_ALLOC_CURVE_PTS];
    double *clock;            /* gpus x n_caps */
    double *gcaps;            /* gpus x n_caps: cap of each GPU holding the common clock */
    double x[PFI_ALLOC_CURVE_PTS];
    pfi_alloc_curve eq;       /* the mean-cap curve */
    pfi_pergpu_job table;
} pfi_alloc_pergpu;

typedef struct pfi_alloc_points pfi_alloc_points;

typedef struct pfi_alloc_set {
    int n;
    pfi_alloc_job *truth;     /* the true curve of each job (n_points 0 when absent) */
    pfi_alloc_job *pred;      /* the predicted curve (n_points 0 when absent) */
    double *pfi30;            /* given PFI30 (NAN when absent) */
    char **ids;               /* owned: the jobs' ids point here */
    pfi_alloc_pergpu *pg;     /* per job in the per-GPU mode, else NULL */
    int cap;                  /* jobs allocated (n may end up lower) */
    pfi_alloc_points *pts;    /* owned: the curves' points (pfi_alloc_set_keep_curve) */
} pfi_alloc_set;

/* Room for n jobs (and their per-GPU tables when per_gpu), all empty; PFI_ENOMEM without a
 * message (the caller names what it was reading). */
int pfi_alloc_set_init(pfi_alloc_set *s, int n, int per_gpu);
/* Room for at least n jobs, those beyond the old room empty; what is held stays (s->n too).
 * PFI_ENOMEM (the set is unchanged). */
int pfi_alloc_set_grow(pfi_alloc_set *s, int n);
/* A copy of job's curve (its n_points caps and throughputs) held by the set, exactly that size,
 * for as long as the set lives: job->cap_w and job->tput then point at it.  PFI_ENOMEM. */
int pfi_alloc_set_keep_curve(pfi_alloc_set *s, pfi_alloc_job *job);
void pfi_alloc_set_free(pfi_alloc_set *s);

/* The curve `policy` reads of each job into view[0..s->n): the prediction for pfi and
 * proportional-to-pfi when there is one, else the truth (the prediction when there is no
 * truth).  PFI_EINVAL naming the job when pfi has no prediction or oracle no truth.  In the
 * per-GPU mode each job's curve is its table's mean-cap curve, which becomes its truth too
 * (the table is a measurement). */
int pfi_alloc_set_view(pfi_alloc_set *s, int policy, pfi_alloc_job *view, pfi_err *err);

/* An allocation's totals: throughput summed on the curves it was made with, and, when every
 * job has a true curve (all_true), the sum and the objective (weighted) on the true curves. */
typedef struct pfi_alloc_totals {
    double tput;
    double tput_true, objective_true;
    int all_true;
} pfi_alloc_totals;

void pfi_alloc_set_totals(const pfi_alloc_set *s, const pfi_alloc_job *view,
                          const pfi_alloc_result *r, pfi_alloc_totals *t);

#endif
