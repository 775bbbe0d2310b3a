/* SPDX-License-Identifier: Apache-2.0 */
/* event_report.c: an event's compliance from recorded site power (event_report.h). */
#include "core/event_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pfi_event_compliance_free(pfi_event_compliance *c)
{
    free(c->intervals);
    c->intervals = NULL;
    c->n_intervals = 0;
}

/* How long sample i holds: until the next, at most max_gap_s. */
static double hold_s(const double *t, int n, int i, double max_gap_s)
{
    double next = i + 1 < n ? t[i + 1] : t[i] + max_gap_s;
    double d = next - t[i];
    return d < max_gap_s ? d : max_gap_s;
}

/* Overlap of [a0, a1) and [b0, b1). */
static double overlap(double a0, double a1, double b0, double b1)
{
    double lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? hi - lo : 0;
}

static void baseline(const pfi_event *ev, const double *t, const double *w, int n,
                     double max_gap_s, pfi_event_compliance *c)
{
    double r0 = pfi_event_ramp_start_s(ev), b0 = r0 - PFI_COMPLIANCE_BASELINE_S;
    double sum = 0, cov = 0;
    for (int i = 0; i < n; i++) {
        double o = overlap(t[i], t[i] + hold_s(t, n, i, max_gap_s), b0, r0);
        if (o > 0 && isfinite(w[i])) {
            sum += w[i] * o;
            cov += o;
        }
    }
    if (cov >= 0.5 * PFI_COMPLIANCE_BASELINE_S) {
        c->baseline_w = sum / cov;
        snprintf(c->baseline_method, sizeof c->baseline_method,
                 "mean site draw over the hour before the ramp (%.0f%% of it recorded)",
                 100 * cov / PFI_COMPLIANCE_BASELINE_S);
    } else if (ev->kind == PFI_EVENT_CUT && isfinite(ev->baseline_w)) {
        c->baseline_w = ev->baseline_w;
        snprintf(c->baseline_method, sizeof c->baseline_method, "the event's stated baseline "
                 "(%s); under half of the hour before the ramp was recorded",
                 ev->baseline_method);
    } else {
        c->baseline_w = NAN;
        snprintf(c->baseline_method, sizeof c->baseline_method,
                 "none: under half of the hour before the ramp was recorded");
    }
}

static int intervals(const pfi_event *ev, const pfi_event_site *site, const double *t,
                     const double *w, int n, double iv, double max_gap_s,
                     pfi_event_compliance *c, pfi_err *err)
{
    double a = pfi_event_ramp_start_s(ev), b = pfi_event_restored_s(ev, site);
    int k = (int)ceil((b - a) / iv - 1e-9);
    if (k < 1)
        k = 1;
    if (k > 1000000)
        return pfi_err_set(err, PFI_ERANGE, "event %s: %d intervals of %.0f s are too many",
                           ev->id, k, iv);
    c->intervals = calloc((size_t)k, sizeof *c->intervals);
    if (!c->intervals)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    c->n_intervals = k;
    int i0 = 0;
    for (int j = 0; j < k; j++) {
        pfi_event_interval *x = &c->intervals[j];
        x->t0 = a + j * iv;
        x->t1 = x->t0 + iv < b ? x->t0 + iv : b;
        x->target_w = c->target_w;
        x->budget_w = pfi_event_budget_min(ev, 1, site, x->t0, x->t1);
        double sum = 0, cov = 0, mx = -INFINITY;
        while (i0 < n && t[i0] + hold_s(t, n, i0, max_gap_s) <= x->t0)
            i0++;
        for (int i = i0; i < n && t[i] < x->t1; i++) {
            double o = overlap(t[i], t[i] + hold_s(t, n, i, max_gap_s), x->t0, x->t1);
            if (o > 0 && isfinite(w[i])) {
                sum += w[i] * o;
                cov += o;
                mx = w[i] > mx ? w[i] : mx;
            }
        }
        x->covered_s = cov;
        x->mean_w = cov > 0 ? sum / cov : NAN;
        x->max_w = cov > 0 ? mx : NAN;
    }
    return PFI_OK;
}

/* Window figures and ramps, sample by sample. */
static void window_and_ramps(const pfi_event *ev, const pfi_event_site *site, const double *t,
                             const double *w, int n, double max_gap_s, pfi_event_compliance *c)
{
    double sum = 0, shed = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(w[i]))
            continue;
        double h = hold_s(t, n, i, max_gap_s);
        double o = overlap(t[i], t[i] + h, ev->start_s, ev->end_s);
        if (o > 0) {
            c->covered_s += o;
            sum += w[i] * o;
            if (isfinite(c->baseline_w))
                shed += (c->baseline_w - w[i]) * o;
            if (w[i] > c->target_w) {
                c->seconds_over_target += o;
                if (w[i] - c->target_w > c->max_excess_w)
                    c->max_excess_w = w[i] - c->target_w;
            }
        }
        if (t[i] < ev->start_s && t[i] >= pfi_event_ramp_start_s(ev) - max_gap_s) {
            double cap = pfi_event_cap_at(ev, site, t[i]);
            if (isfinite(cap) && w[i] - cap > c->ramp_down_max_excess_w)
                c->ramp_down_max_excess_w = w[i] - cap;
        }
        if (t[i] >= ev->end_s && t[i] < pfi_event_restored_s(ev, site)) {
            double cap = pfi_event_cap_at(ev, site, t[i]);
            if (isfinite(cap) && w[i] - cap > c->restore_max_excess_w)
                c->restore_max_excess_w = w[i] - cap;
        }
        if (t[i] >= ev->end_s && i > 0 && t[i] > t[i - 1] && isfinite(w[i - 1]) &&
            t[i] < pfi_event_restored_s(ev, site) + max_gap_s) {
            double r = (w[i] - w[i - 1]) / (t[i] - t[i - 1]);
            if (r > c->restore_max_rise_w_per_s)
                c->restore_max_rise_w_per_s = r;
        }
    }
    c->mean_w = c->covered_s > 0 ? sum / c->covered_s : NAN;
    c->energy_shed_kwh = isfinite(c->baseline_w) ? shed / 3.6e6 : NAN;
    /* At target by the start: the last sample before the start, and every one after it up to
     * the start, at or below the target. */
    c->at_target_s = NAN;
    for (int i = n - 1; i >= 0; i--) {
        if (t[i] >= ev->start_s)
            continue;
        if (!(isfinite(w[i]) && w[i] <= c->target_w))
            break;
        c->at_target_s = ev->start_s - t[i];
    }
}

int pfi_event_compliance_compute(const pfi_event *ev, const pfi_event_site *site,
                                 const double *t, const double *w, int n, double interval_s,
                                 double max_gap_s, pfi_event_compliance *out, pfi_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = pfi_event_validate(ev, site, err);
    if (rc != PFI_OK)
        return rc;
    if (!(interval_s > 0) || !(max_gap_s > 0))
        return pfi_err_set(err, PFI_EINVAL, "interval and largest gap must be positive");
    for (int i = 1; i < n; i++)
        if (!(t[i] >= t[i - 1]))
            return pfi_err_set(err, PFI_EINVAL, "samples out of time order at %d", i);
    out->target_w = pfi_event_target_w(ev);
    out->window_s = ev->end_s - ev->start_s;
    baseline(ev, t, w, n, max_gap_s, out);
    window_and_ramps(ev, site, t, w, n, max_gap_s, out);
    int first_ok = 0;
    for (int i = 0; i < n; i++)
        if (t[i] >= ev->start_s) {
            first_ok = isfinite(w[i]) && w[i] <= out->target_w && t[i] - ev->start_s <= max_gap_s;
            break;
        }
    out->ramp_ok = out->ramp_down_max_excess_w == 0 && out->restore_max_excess_w == 0 &&
                   first_ok;
    return intervals(ev, site, t, w, n, interval_s, max_gap_s, out, err);
}
