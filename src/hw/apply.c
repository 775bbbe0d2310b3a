/* SPDX-License-Identifier: Apache-2.0 */
/* apply.c: moving a node's GPUs to new caps without ever exceeding the power budget.
 *
 * The budget is on the sum of the power limits.  Setting limits one GPU at a time in index order
 * would, when one GPU goes down and another goes up, briefly hold the new high limit next to the
 * old high one.  So: every lowering first, each one read back (the device's word, not ours,
 * decides what is counted); then each raise only if the sum with it still fits.  Every GPU is
 * counted at the most it may be holding: a set that failed midway counts at the higher of before
 * and target; a GPU that cannot be read counts at its last known limit or its maximum.
 *
 * All of it is counted in whole milliwatts (hw.h): a target is rounded down to what the device
 * accepts, a limit read back is counted rounded up, and sums are compared exactly.  There is no
 * "close enough": a change of one milliwatt that the budget needs is made. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hw/hw.h"

/* The limit a GPU counts at for the budget: the larger of the in-band and enforced limits, so
 * neither a stale reading nor an out-of-band cap that later lifts can hide power. */
static double counted(const pfi_device *d)
{
    double a = d->limit_w, e = d->enforced_w;
    if (isnan(a))
        return e;
    if (isnan(e))
        return a;
    return a > e ? a : e;
}

/* Watts as whole milliwatts (doubles hold them exactly), rounded up: what may be held. */
static double held_mw(double w)
{
    return isfinite(w) ? (double)pfi_hw_held_mw(w) : w;
}

/* Watts as the whole milliwatts a device is asked for, rounded down. */
static double cap_mw(double w)
{
    return isfinite(w) ? (double)pfi_hw_cap_mw(w) : w;
}

static double fallback(const pfi_device *known, int i)
{
    if (known) {
        double v = counted(&known[i]);
        if (!isnan(v))
            return held_mw(v);
        if (isfinite(known[i].max_limit_w) && known[i].max_limit_w > 0)
            return held_mw(known[i].max_limit_w);
    }
    return INFINITY;
}

static double sum_of(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s;
}

static void note(pfi_apply_report *rep, int i, const pfi_err *e)
{
    pfi_cap_change *c = &rep->gpu[i];
    c->code = e->code ? e->code : PFI_EINTERNAL;
    snprintf(c->msg, sizeof c->msg, "%s", e->msg);
    if (rep->first_gpu < 0) {
        rep->first_gpu = i;
        rep->first = *e;
        rep->first.code = c->code;
    }
}

/* Sets one GPU to target (milliwatts) and reads it back; cur[i] (milliwatts) afterwards is
 * what it may be holding. */
static void set_one(pfi_backend *b, int i, double target, double *cur, pfi_apply_report *rep)
{
    pfi_cap_change *c = &rep->gpu[i];
    pfi_err e = {0};
    double before = cur[i];
    int rc = pfi_hw_set_limit(b, i, target / 1000.0, NULL, &e);
    if (rc != PFI_OK) {
        note(rep, i, &e);
        /* The driver may or may not have taken it: count the worse of the two. */
        cur[i] = target > before ? target : before;
        return;
    }
    pfi_device d;
    if (pfi_hw_info(b, i, &d, &e) != PFI_OK) {
        note(rep, i, &e);
        cur[i] = target > before ? target : before;
        return;
    }
    c->limit_w = d.limit_w;
    c->enforced_w = d.enforced_w;
    cur[i] = held_mw(counted(&d));
    if (isnan(cur[i]))
        cur[i] = target > before ? target : before;
}

int pfi_hw_apply(pfi_backend *b, int n, const double *target_w, double budget_w,
                 const pfi_device *known, pfi_apply_report *rep, pfi_err *err)
{
    memset(rep, 0, sizeof *rep);
    rep->first_gpu = -1;
    if (n < 0 || n > PFI_MAX_GPUS)
        return pfi_err_set(err, PFI_EINVAL, "apply: %d GPUs is out of range", n);
    rep->n = n;
    /* Milliwatts from here on: what each GPU may hold, what it is asked, the budget. */
    double cur[PFI_MAX_GPUS] = {0}, tgt[PFI_MAX_GPUS];
    double budget = isnan(budget_w) ? INFINITY : cap_mw(budget_w);
    for (int i = 0; i < n; i++)
        tgt[i] = isnan(target_w[i]) ? NAN : cap_mw(target_w[i]);
    int readable = 0;
    for (int i = 0; i < n; i++) {
        pfi_cap_change *c = &rep->gpu[i];
        c->gpu = i;
        c->before_w = c->limit_w = c->enforced_w = NAN;
        c->target_w = target_w[i];
        pfi_device d;
        pfi_err e = {0};
        if (pfi_hw_info(b, i, &d, &e) == PFI_OK && !isnan(counted(&d))) {
            c->before_w = d.limit_w;
            c->limit_w = d.limit_w;
            c->enforced_w = d.enforced_w;
            cur[i] = held_mw(counted(&d));
            readable++;
        } else {
            cur[i] = fallback(known, i);
            if (!isnan(target_w[i]))
                note(rep, i, &e);
        }
    }
    rep->sum_before_w = rep->peak_w = sum_of(cur, n) / 1000.0;
    if (n > 0 && readable == 0)
        return pfi_err_set(err, PFI_EIO, "apply: none of the %d GPUs could be read", n);

    /* Pass 1: lowerings.  Each only reduces what is counted, so no order among them matters. */
    for (int i = 0; i < n; i++) {
        pfi_cap_change *c = &rep->gpu[i];
        if (isnan(tgt[i]) || c->code != PFI_OK || !(tgt[i] < cur[i]))
            continue;
        set_one(b, i, tgt[i], cur, rep);
        rep->n_changed += rep->gpu[i].code == PFI_OK; /* a refused set changed nothing */
    }
    /* Pass 2: raises, smallest first, so that when a failed lowering leaves too little room the
     * room goes to as many GPUs as possible. */
    int order[PFI_MAX_GPUS], m = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(tgt[i]) && rep->gpu[i].code == PFI_OK && tgt[i] > cur[i])
            order[m++] = i;
    for (int a = 1; a < m; a++)
        for (int k = a; k > 0 && tgt[order[k]] - cur[order[k]] <
                                     tgt[order[k - 1]] - cur[order[k - 1]];
             k--) {
            int t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    for (int k = 0; k < m; k++) {
        int i = order[k];
        double s = sum_of(cur, n);
        if (s - cur[i] + tgt[i] > budget) {
            rep->gpu[i].held = 1;
            rep->n_held++;
            snprintf(rep->gpu[i].msg, sizeof rep->gpu[i].msg,
                     "raise to %.3f W held back: it would put the node at %.3f W, over the "
                     "%.3f W budget",
                     tgt[i] / 1000.0, (s - cur[i] + tgt[i]) / 1000.0, budget / 1000.0);
            continue;
        }
        set_one(b, i, tgt[i], cur, rep);
        rep->n_changed += rep->gpu[i].code == PFI_OK;
        double now = sum_of(cur, n) / 1000.0;
        if (now > rep->peak_w)
            rep->peak_w = now;
    }
    for (int i = 0; i < n; i++) {
        pfi_cap_change *c = &rep->gpu[i];
        if (c->code != PFI_OK) {
            rep->n_failed++;
            continue;
        }
        if (!isnan(c->target_w) && !c->held && !isnan(c->enforced_w) &&
            fabs(c->enforced_w - c->target_w) > 1.0) {
            rep->n_mismatch++;
            if (!c->msg[0])
                snprintf(c->msg, sizeof c->msg, "asked %.0f W, the device enforces %.0f W",
                         c->target_w, c->enforced_w);
        }
    }
    rep->sum_after_w = sum_of(cur, n) / 1000.0;
    return PFI_OK;
}
