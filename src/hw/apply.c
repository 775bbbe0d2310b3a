/* apply.c: moving a node's GPUs to new caps without ever exceeding the power budget.
 *
 * The budget is on the sum of the power limits.  Setting limits one GPU at a time in index order
 * would, when one GPU goes down and another goes up, briefly hold the new high limit next to the
 * old high one.  So: every lowering first, each one read back (the device's word, not ours,
 * decides what is counted); then each raise only if the sum with it still fits.  Every GPU is
 * counted at the most it may be holding: a set that failed midway counts at the higher of before
 * and target; a GPU that cannot be read counts at its last known limit or its maximum. */
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

static double fallback(const pfi_device *known, int i)
{
    if (known) {
        double v = counted(&known[i]);
        if (!isnan(v))
            return v;
        if (isfinite(known[i].max_limit_w) && known[i].max_limit_w > 0)
            return known[i].max_limit_w;
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

/* Sets one GPU and reads it back; cur[i] afterwards is what it may be holding. */
static void set_one(pfi_backend *b, int i, double target, double *cur, pfi_apply_report *rep)
{
    pfi_cap_change *c = &rep->gpu[i];
    pfi_err e = {0};
    double before = cur[i];
    int rc = pfi_hw_set_limit(b, i, target, NULL, &e);
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
    cur[i] = counted(&d);
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
    double cur[PFI_MAX_GPUS] = {0};
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
            cur[i] = counted(&d);
            readable++;
        } else {
            cur[i] = fallback(known, i);
            if (!isnan(target_w[i]))
                note(rep, i, &e);
        }
    }
    rep->sum_before_w = rep->peak_w = sum_of(cur, n);
    if (n > 0 && readable == 0)
        return pfi_err_set(err, PFI_EIO, "apply: none of the %d GPUs could be read", n);

    /* Pass 1: lowerings.  Each only reduces what is counted, so no order among them matters. */
    for (int i = 0; i < n; i++) {
        pfi_cap_change *c = &rep->gpu[i];
        if (isnan(target_w[i]) || c->code != PFI_OK || !(target_w[i] < cur[i] - 0.5))
            continue;
        set_one(b, i, target_w[i], cur, rep);
        rep->n_changed++;
    }
    /* Pass 2: raises, smallest first, so that when a failed lowering leaves too little room the
     * room goes to as many GPUs as possible. */
    int order[PFI_MAX_GPUS], m = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(target_w[i]) && rep->gpu[i].code == PFI_OK && target_w[i] > cur[i] + 0.5)
            order[m++] = i;
    for (int a = 1; a < m; a++)
        for (int k = a; k > 0 && target_w[order[k]] - cur[order[k]] <
                                     target_w[order[k - 1]] - cur[order[k - 1]];
             k--) {
            int t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    for (int k = 0; k < m; k++) {
        int i = order[k];
        double s = sum_of(cur, n);
        if (s - cur[i] + target_w[i] > budget_w + 1e-6) {
            rep->gpu[i].held = 1;
            rep->n_held++;
            snprintf(rep->gpu[i].msg, sizeof rep->gpu[i].msg,
                     "raise to %.0f W held back: it would put the node at %.0f W, over the "
                     "%.0f W budget",
                     target_w[i], s - cur[i] + target_w[i], budget_w);
            continue;
        }
        set_one(b, i, target_w[i], cur, rep);
        rep->n_changed++;
        double now = sum_of(cur, n);
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
    rep->sum_after_w = sum_of(cur, n);
    return PFI_OK;
}
