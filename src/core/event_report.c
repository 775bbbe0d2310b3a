/* SPDX-License-Identifier: Apache-2.0 */
/* event_report.c: an event's compliance from recorded site power (event_report.h). */
#include "core/event_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/isotime.h"

void pfi_event_compliance_free(pfi_event_compliance *c)
{
    free(c->intervals);
    c->intervals = NULL;
    c->n_intervals = 0;
    free(c->spans);
    c->spans = NULL;
    c->n_spans = 0;
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

/* Revision k is in force from rev_from(k) to rev_from(k + 1): the first from the beginning,
 * the last to the end. */
static double rev_from(const pfi_event_revision *r, int nr, int k)
{
    return k <= 0 ? -INFINITY : k >= nr ? INFINITY : r[k].from_s;
}

/* The revision in force at t. */
static int rev_at(const pfi_event_revision *r, int nr, double t)
{
    int k = 0;
    while (k + 1 < nr && r[k + 1].from_s <= t)
        k++;
    return k;
}

void pfi_event_revised_range(const pfi_event_revision *revs, int n_revs,
                             const pfi_event_site *site, double *from_s, double *to_s)
{
    double a = INFINITY, b = -INFINITY;
    for (int k = 0; k < n_revs; k++) {
        const pfi_event *ev = &revs[k].ev;
        double lo = fmax(pfi_event_ramp_start_s(ev), rev_from(revs, n_revs, k));
        double hi = fmin(pfi_event_restored_s(ev, site), rev_from(revs, n_revs, k + 1));
        if (lo < hi) {
            a = fmin(a, lo);
            b = fmax(b, hi);
        }
    }
    if (!(a < b)) { /* changed before anything of it was in force: the last one alone */
        a = pfi_event_ramp_start_s(&revs[n_revs - 1].ev);
        b = pfi_event_restored_s(&revs[n_revs - 1].ev, site);
    }
    *from_s = a;
    *to_s = b;
}

/* The first instant of a window in force, and the revision it belongs to (the last one's start
 * when no window was ever in force). */
static double window_start(const pfi_event_revision *r, int nr, int *k_out)
{
    for (int k = 0; k < nr; k++) {
        double lo = fmax(r[k].ev.start_s, rev_from(r, nr, k));
        if (lo < fmin(r[k].ev.end_s, rev_from(r, nr, k + 1))) {
            *k_out = k;
            return lo;
        }
    }
    *k_out = nr - 1;
    return r[nr - 1].ev.start_s;
}

void pfi_baseline_walk_init(pfi_baseline_walk *b, double end_s, double span_s, double max_gap_s)
{
    *b = (pfi_baseline_walk){.end_s = end_s, .span_s = span_s, .max_gap_s = max_gap_s,
                             .at_s = end_s, .next_t = INFINITY, .budget_s = span_s,
                             .done = !(span_s > 0)};
}

int pfi_baseline_walk_feed(pfi_baseline_walk *b, double t, double w, int bound)
{
    if (b->done)
        return 0;
    double held = b->next_t - t < b->max_gap_s ? b->next_t - t : b->max_gap_s;
    double e = t + held < b->at_s ? t + held : b->at_s; /* where its hold ends, in the walk */
    b->next_t = t;
    if (e <= t) /* at or after the end, or a second sample at the same instant */
        return 1;
    double gap = b->at_s - e < b->budget_s ? b->at_s - e : b->budget_s;
    b->budget_s -= gap; /* unrecorded: in the span, not covered */
    b->at_s -= gap;
    double len = b->at_s - t;
    if (b->budget_s > 0 && bound) {
        b->left_out_s += len;
        b->at_s = t;
    } else if (b->budget_s > 0) {
        double c = len < b->budget_s ? len : b->budget_s;
        if (isfinite(w)) {
            b->sum += w * c;
            b->covered_s += c;
            b->n++;
        }
        b->budget_s -= c;
        b->at_s -= c;
    }
    b->done = !(b->budget_s > 0) || b->end_s - b->at_s >= b->span_s + PFI_BASELINE_BACK_S;
    return !b->done;
}

double pfi_baseline_walk_mean(const pfi_baseline_walk *b)
{
    return b->covered_s > 0 ? b->sum / b->covered_s : NAN;
}

void pfi_baseline_walk_method(const pfi_baseline_walk *b, const char *what, char *buf,
                              size_t n)
{
    char rec[96] = "";
    int part = b->covered_s + b->left_out_s < 0.9 * b->span_s;
    if (part && b->covered_s < 120)
        snprintf(rec, sizeof rec, ", only %.0f s recorded", b->covered_s);
    else if (part)
        snprintf(rec, sizeof rec, ", only %.0f min recorded", b->covered_s / 60);
    if (b->left_out_s > 0)
        snprintf(buf, n, "mean %s draw over the %.0f min before the event was posted, leaving out "
                 "the %.0f min other events bound (%d samples%s)", what, b->span_s / 60,
                 b->left_out_s / 60, b->n, rec);
    else
        snprintf(buf, n, "mean %s draw over the %.0f min before the event was posted (%d "
                 "samples%s)", what, b->span_s / 60, b->n, rec);
}

/* The compliance's baseline from its walk (bw, ending at the first ramp): its mean when it
 * covers half of the hour at least, else the event's stated one (a cut's), else none. */
static void baseline(const pfi_event *ev, const pfi_baseline_walk *bw, pfi_event_compliance *c)
{
    double cov = bw->covered_s, span = bw->span_s;
    /* Under a minute left out is the event's own ramp planned a few seconds ahead (the host caps
     * ahead of its budget line): not another event, and not worth a word. */
    if (cov >= 0.5 * span && !(bw->left_out_s >= 60)) {
        c->baseline_w = pfi_baseline_walk_mean(bw);
        snprintf(c->baseline_method, sizeof c->baseline_method,
                 "mean site draw over the hour before the ramp (%.0f%% of it recorded)",
                 100 * cov / span);
    } else if (cov >= 0.5 * span) {
        char from[40];
        pfi_time_format(bw->at_s, from, sizeof from);
        c->baseline_w = pfi_baseline_walk_mean(bw);
        snprintf(c->baseline_method, sizeof c->baseline_method,
                 "mean site draw over the hour before the ramp outside other events (%.0f min "
                 "left out, from %s; %.0f%% of it recorded)", bw->left_out_s / 60, from,
                 100 * cov / span);
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

/* The baseline's walk over samples in memory, none taken as bound (an event's own samples). */
static void walk_samples(double r0, const double *t, const double *w, int n, double max_gap_s,
                         pfi_baseline_walk *bw)
{
    pfi_baseline_walk_init(bw, r0, PFI_COMPLIANCE_BASELINE_S, max_gap_s);
    int i = n - 1;
    for (; i >= 0 && t[i] >= r0; i--)
        bw->next_t = t[i];
    for (; i >= 0 && pfi_baseline_walk_feed(bw, t[i], w[i], 0); i--)
        ;
}

/* The lowest budget and target of the revisions in force over [t0, t1) (ramps included). */
static void interval_levels(const pfi_event_revision *r, int nr, const pfi_event_site *site,
                            pfi_event_interval *x)
{
    x->budget_w = INFINITY;
    x->target_w = INFINITY;
    for (int k = 0; k < nr; k++) {
        double lo = fmax(x->t0, rev_from(r, nr, k)), hi = fmin(x->t1, rev_from(r, nr, k + 1));
        if (!(lo < hi))
            continue;
        double b = pfi_event_budget_min(&r[k].ev, 1, site, lo, hi);
        double g = pfi_event_target_w(&r[k].ev);
        x->budget_w = b < x->budget_w ? b : x->budget_w;
        x->target_w = g < x->target_w ? g : x->target_w;
    }
}

static int intervals(const pfi_event_revision *r, int nr, const pfi_event_site *site,
                     const double *t, const double *w, int n, double iv, double max_gap_s,
                     pfi_event_compliance *c, pfi_err *err)
{
    double a, b;
    pfi_event_revised_range(r, nr, site, &a, &b);
    int k = (int)ceil((b - a) / iv - 1e-9);
    if (k < 1)
        k = 1;
    if (k > 1000000)
        return pfi_err_set(err, PFI_ERANGE, "event %s: %d intervals of %.0f s are too many",
                           r[nr - 1].ev.id, k, iv);
    c->intervals = calloc((size_t)k, sizeof *c->intervals);
    if (!c->intervals)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    c->n_intervals = k;
    int i0 = 0;
    for (int j = 0; j < k; j++) {
        pfi_event_interval *x = &c->intervals[j];
        x->t0 = a + j * iv;
        x->t1 = x->t0 + iv < b ? x->t0 + iv : b;
        interval_levels(r, nr, site, x);
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

/* Sums of the draw inside a window: the whole event's and each revision's. */
typedef struct win_sums {
    double sum, shed;
} win_sums;

/* The part [a, b) of a sample of draw w inside revision k's window. */
static void in_window(const pfi_event *ev, double a, double b, double w, win_sums *all,
                      win_sums *own, pfi_event_compliance *c, pfi_event_span *sp)
{
    double o = overlap(a, b, ev->start_s, ev->end_s);
    if (!(o > 0))
        return;
    double target = pfi_event_target_w(ev);
    c->covered_s += o;
    sp->covered_s += o;
    all->sum += w * o;
    own->sum += w * o;
    if (isfinite(c->baseline_w))
        all->shed += (c->baseline_w - w) * o;
    if (w > target) {
        c->seconds_over_target += o;
        sp->seconds_over_target += o;
        if (w - target > c->max_excess_w)
            c->max_excess_w = w - target;
        if (w - target > sp->max_excess_w)
            sp->max_excess_w = w - target;
    }
}

/* The ramps' figures of sample i against ev, the revision in force at its time. */
static void ramps(const pfi_event *ev, const pfi_event_site *site, const double *t,
                  const double *w, int i, double max_gap_s, pfi_event_compliance *c)
{
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

/* Window figures and ramps, sample by sample, each against the revision in force. */
static void window_and_ramps(const pfi_event_revision *r, int nr, const pfi_event_site *site,
                             const double *t, const double *w, int n, double max_gap_s,
                             pfi_event_compliance *c, win_sums *own)
{
    win_sums all = {0, 0};
    for (int i = 0; i < n; i++) {
        if (!isfinite(w[i]))
            continue;
        double h = hold_s(t, n, i, max_gap_s), end = t[i] + h;
        int k0 = rev_at(r, nr, t[i]);
        for (int k = k0; k < nr && rev_from(r, nr, k) < end; k++)
            in_window(&r[k].ev, fmax(t[i], rev_from(r, nr, k)),
                      fmin(end, rev_from(r, nr, k + 1)), w[i], &all, &own[k], c, &c->spans[k]);
        ramps(&r[k0].ev, site, t, w, i, max_gap_s, c);
    }
    c->mean_w = c->covered_s > 0 ? all.sum / c->covered_s : NAN;
    c->energy_shed_kwh = isfinite(c->baseline_w) ? all.shed / 3.6e6 : NAN;
}

/* At target by the start: the last sample before the window's first instant s0, and every one
 * after it up to s0, at or below the target in force at its time. */
static void at_target(const pfi_event_revision *r, int nr, double s0, const double *t,
                      const double *w, int n, pfi_event_compliance *c)
{
    c->at_target_s = NAN;
    for (int i = n - 1; i >= 0; i--) {
        if (t[i] >= s0)
            continue;
        if (!(isfinite(w[i]) && w[i] <= pfi_event_target_w(&r[rev_at(r, nr, t[i])].ev)))
            break;
        c->at_target_s = s0 - t[i];
    }
}

/* Each revision's span: its definition, and its window while in force (own: its sums). */
static void spans_close(const pfi_event_revision *r, int nr, const win_sums *own,
                        pfi_event_compliance *c)
{
    for (int k = 0; k < nr; k++) {
        pfi_event_span *sp = &c->spans[k];
        const pfi_event *ev = &r[k].ev;
        sp->from_s = rev_from(r, nr, k);
        sp->until_s = rev_from(r, nr, k + 1);
        sp->target_w = pfi_event_target_w(ev);
        sp->start_s = ev->start_s;
        sp->end_s = ev->end_s;
        sp->ramp_down_s = ev->ramp_down_s;
        sp->ramp_up_s = ev->ramp_up_s;
        sp->window_s = overlap(ev->start_s, ev->end_s, sp->from_s, sp->until_s);
        sp->mean_w = sp->covered_s > 0 ? own[k].sum / sp->covered_s : NAN;
        c->window_s += sp->window_s;
    }
}

static int check_revisions(const pfi_event_revision *r, int nr, const pfi_event_site *site,
                           pfi_err *err)
{
    if (nr < 1)
        return pfi_err_set(err, PFI_EINVAL, "an event needs at least one definition");
    for (int k = 0; k < nr; k++) {
        int rc = pfi_event_validate(&r[k].ev, site, err);
        if (rc != PFI_OK)
            return rc;
        if (k > 0 && !(isfinite(r[k].from_s) && (k == 1 || r[k].from_s >= r[k - 1].from_s)))
            return pfi_err_set(err, PFI_EINVAL, "event %s: revision %d takes effect at %g, "
                               "before the one it follows", r[k].ev.id, k, r[k].from_s);
    }
    return PFI_OK;
}

int pfi_event_compliance_revised(const pfi_event_revision *revs, int n_revs,
                                 const pfi_event_site *site, const double *t, const double *w,
                                 int n, double interval_s, double max_gap_s,
                                 const pfi_baseline_walk *base, pfi_event_compliance *out,
                                 pfi_err *err)
{
    memset(out, 0, sizeof *out);
    out->held_above_w = NAN;
    int rc = check_revisions(revs, n_revs, site, err);
    if (rc != PFI_OK)
        return rc;
    if (!(interval_s > 0) || !(max_gap_s > 0))
        return pfi_err_set(err, PFI_EINVAL, "interval and largest gap must be positive");
    for (int i = 1; i < n; i++)
        if (!(t[i] >= t[i - 1]))
            return pfi_err_set(err, PFI_EINVAL, "samples out of time order at %d", i);
    const pfi_event *last = &revs[n_revs - 1].ev;
    out->spans = calloc((size_t)n_revs, sizeof *out->spans);
    win_sums *own = calloc((size_t)n_revs, sizeof *own);
    if (!out->spans || !own) {
        free(own);
        pfi_event_compliance_free(out);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    out->n_spans = n_revs;
    out->target_w = pfi_event_target_w(last);
    double a, b;
    pfi_event_revised_range(revs, n_revs, site, &a, &b);
    pfi_baseline_walk walked;
    if (!base) {
        walk_samples(a, t, w, n, max_gap_s, &walked);
        base = &walked;
    }
    baseline(last, base, out);
    window_and_ramps(revs, n_revs, site, t, w, n, max_gap_s, out, own);
    spans_close(revs, n_revs, own, out);
    free(own);
    int k0;
    double s0 = window_start(revs, n_revs, &k0);
    at_target(revs, n_revs, s0, t, w, n, out);
    int first_ok = 0;
    for (int i = 0; i < n; i++)
        if (t[i] >= s0) {
            first_ok = isfinite(w[i]) &&
                       w[i] <= pfi_event_target_w(&revs[rev_at(revs, n_revs, t[i])].ev) &&
                       t[i] - s0 <= max_gap_s;
            break;
        }
    out->ramp_ok = out->ramp_down_max_excess_w == 0 && out->restore_max_excess_w == 0 &&
                   first_ok;
    rc = intervals(revs, n_revs, site, t, w, n, interval_s, max_gap_s, out, err);
    if (rc != PFI_OK)
        pfi_event_compliance_free(out);
    return rc;
}

/* The intervals over [a, b) were held at budget bw, above the event's budget line: an interval
 * held all its recorded time shows the budget held (the least the site could), not the target
 * it could not meet (an event of 2000 W held at 4800 W showed 2000 W, a 0 W limit 1 W); one held
 * only in part keeps its line, the lowest budget in force over it.  bw NAN: [a, b) followed a
 * change of the event, its seconds accounted for but not held. */
static void held_in_intervals(pfi_event_compliance *c, double a, double b, double bw)
{
    if (c->n_intervals < 1)
        return;
    /* the intervals are back to back, of one length but the last: the first one [a, b) meets is
     * found, not searched for (a sample per second of a day-long event, 1,440 intervals each) */
    double iv = c->intervals[0].t1 - c->intervals[0].t0;
    long j0 = iv > 0 ? (long)floor((a - c->intervals[0].t0) / iv) - 1 : 0;
    for (int j = j0 > 0 ? (int)fmin(j0, c->n_intervals) : 0;
         j < c->n_intervals && c->intervals[j].t0 < b; j++) {
        pfi_event_interval *x = &c->intervals[j];
        double o = overlap(a, b, x->t0, x->t1);
        if (o > 0 && isnan(bw)) /* following a change: accounted for, not held */
            x->held_s += o;
        if (!(o > 0) || !(bw > x->budget_w))
            continue;
        x->held_s += o;
        if (!(x->held_w > 0) || bw < x->held_w)
            x->held_w = bw;
    }
}

/* Whether budget bw recorded at t, in revision k, is an earlier revision's target still in
 * force at the host: within a sample gap of revision k taking effect, the host had not yet
 * planned the new one. */
static int following(const pfi_event_revision *revs, int k, double t, double bw, double max_gap_s)
{
    if (k == 0 || t - revs[k].from_s > max_gap_s)
        return 0;
    for (int j = 0; j < k; j++)
        if (fabs(bw - pfi_event_target_w(&revs[j].ev)) <= 0.5)
            return 1;
    return 0;
}

void pfi_event_compliance_held(const pfi_event_revision *revs, int n_revs, const double *t,
                               const double *b, int n, double max_gap_s,
                               pfi_event_compliance *out)
{
    out->held_above_s = 0;
    out->held_above_w = NAN;
    /* Before the host took the event the budget it recorded was set without it (another
     * event's, in force): no sign of what the site could hold for this one.  A report said
     * "held at up to 4000 W for 8 s, the least it could" of the seconds before a 3000 W limit
     * whose window had begun was received. */
    double added = n_revs > 0 && revs[0].ev.added_s > 0 ? revs[0].ev.added_s : -INFINITY;
    out->taken_late_s = n_revs > 0 ? fmax(added - revs[0].ev.start_s, 0) : 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(b[i]))
            continue;
        /* A sample's budget is judged against the definition in force at its own time, never
         * carried into the next: a target lowered under way is met a tick later, and the old
         * budget held until then is following, not the least the site could (a feasible event
         * was reported "held at up to 12000 W, the least it could" for 0.7 s). */
        int k = rev_at(revs, n_revs, t[i]);
        const pfi_event *ev = &revs[k].ev;
        double end = fmin(t[i] + hold_s(t, n, i, max_gap_s), rev_from(revs, n_revs, k + 1));
        double from = fmax(t[i], added);
        if (!(from < end))
            continue;
        /* half a watt: the budget an event sets is its target, as recorded */
        if (!(b[i] > pfi_event_target_w(ev) + 0.5))
            continue;
        double o = overlap(from, end, ev->start_s, ev->end_s);
        if (o > 0 && following(revs, k, t[i], b[i], max_gap_s)) {
            held_in_intervals(out, fmax(from, ev->start_s), fmin(end, ev->end_s), NAN);
        } else if (o > 0) {
            out->held_above_s += o;
            out->held_above_w = isnan(out->held_above_w) || b[i] > out->held_above_w
                                    ? b[i]
                                    : out->held_above_w;
            held_in_intervals(out, fmax(from, ev->start_s), fmin(end, ev->end_s), b[i]);
        }
    }
    for (int j = 0; j < out->n_intervals; j++) {
        pfi_event_interval *x = &out->intervals[j];
        /* every recorded second held (or following a change): no slack of a sample gap, which
         * at 12 s samples (a 30 s gap) let a half-held 60 s interval show the held budget */
        if (x->held_w > 0 && x->held_s >= x->covered_s * (1 - 1e-9) - 1e-6)
            x->budget_w = x->held_w;
    }
}

int pfi_event_compliance_compute(const pfi_event *ev, const pfi_event_site *site,
                                 const double *t, const double *w, int n, double interval_s,
                                 double max_gap_s, pfi_event_compliance *out, pfi_err *err)
{
    pfi_event_revision one = {.from_s = -INFINITY, .ev = *ev};
    return pfi_event_compliance_revised(&one, 1, site, t, w, n, interval_s, max_gap_s, NULL, out,
                                        err);
}
