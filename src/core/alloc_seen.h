/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_seen.h: SLA breaches seen in a job's own log, each a per-GPU cap and the slowdown seen
 * there, kept as a short list, and the job's curve read through every one of them
 * (pfi_alloc_curve_through), so a plan never again promises more at those caps than was seen.
 * One home for what the node daemon (serve/) and the cluster controller (cluster/) both keep.
 * Pure. */
#ifndef PFI_CORE_ALLOC_SEEN_H
#define PFI_CORE_ALLOC_SEEN_H

#include "core/alloc.h"

#define PFI_ALLOC_SEEN_MAX 4

typedef struct pfi_alloc_seen {
    int n;
    double cap_w[PFI_ALLOC_SEEN_MAX]; /* per-GPU cap, W */
    double s[PFI_ALLOC_SEEN_MAX];     /* slowdown seen there, 1 - T/T0, in [0, 1] */
} pfi_alloc_seen;

/* How a breach at a cap already listed (within 1 W) is folded in. */
enum {
    PFI_SEEN_LATEST, /* it replaces the entry: one log, the newer level is the one to trust */
    PFI_SEEN_LARGER, /* the larger slowdown stays: several nodes' reports of one job */
};

/* Adds a breach (cap_w, s).  A cap not yet listed goes last, the oldest dropped when the list is
 * full.  Entries that are not a cap in (0, 1e5] W and a slowdown in [0, 1] are refused
 * (PFI_EINVAL; the list is unchanged). */
int pfi_alloc_seen_add(pfi_alloc_seen *l, double cap_w, double s, int merge, pfi_err *err);

/* Job q's curve read through each listed breach in list order, each on the curve the ones before
 * it made (pfi_alloc_curve_through).  A breach outside [q's min cap, max cap), or one that would
 * take q past `room` points, is skipped.  The points go to pc and pt (room doubles each; they may
 * be q's own arrays), and q then points at them.  Returns how many breaches were read in. */
int pfi_alloc_seen_apply(const pfi_alloc_seen *l, pfi_alloc_job *q, double *pc, double *pt,
                         int room);

/* Whether only the breaches seen keep a budget from meeting every SLA: on the jobs' curves as
 * they were before any breach (unseen[0..n)), their minimum caps and SLA floors fit `room` watts.
 * The node daemon and the cluster controller, finding their plan through the breaches
 * infeasible, then loosen every SLA alike (PFI_INFEASIBLE_RELAX) rather than refuse a budget
 * that fitted until a log showed one job slower than promised.  0 when it does not fit, for no
 * job, or without memory (the plan then fails as it would have). */
int pfi_alloc_seen_blamed(const pfi_alloc_job *unseen, int n, double room,
                          const pfi_alloc_opts *o);

#endif
