/* SPDX-License-Identifier: Apache-2.0 */
/* event.c: grid events: validation, the budget in force with ramps, overlap resolution. */
#include "core/event.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/isotime.h"

/* Longest ramp accepted: a day.  Longer is a typo (minutes for seconds), not a plan. */
#define RAMP_MAX_S 86400.0

pfi_event_site pfi_event_site_default(double max_w)
{
    pfi_event_site s = {.max_w = max_w, .manual_w = INFINITY, .restore_step_s = 60.0,
                        .restore_w_per_s = INFINITY};
    return s;
}

int pfi_event_level_noted(const pfi_event *ev)
{
    return ev->ramp_level_w > 0;
}

pfi_event_site pfi_event_site_noted(const pfi_event *ev, pfi_event_site site)
{
    if (pfi_event_level_noted(ev))
        site.manual_w = ev->ramp_level_w;
    return site;
}

static void init_common(pfi_event *ev, const char *id, double start_s, double end_s)
{
    memset(ev, 0, sizeof(*ev));
    snprintf(ev->id, sizeof(ev->id), "%s", id ? id : "");
    ev->start_s = start_s;
    ev->end_s = end_s;
    ev->limit_w = NAN;
    ev->cut = NAN;
    ev->baseline_w = NAN;
    ev->oadr_start_s = NAN;
    snprintf(ev->source, sizeof(ev->source), "api");
}

void pfi_event_init_limit(pfi_event *ev, const char *id, double start_s, double end_s,
                          double limit_w)
{
    init_common(ev, id, start_s, end_s);
    ev->kind = PFI_EVENT_LIMIT;
    ev->limit_w = limit_w;
}

void pfi_event_init_cut(pfi_event *ev, const char *id, double start_s, double end_s, double cut,
                        double baseline_w, const char *method)
{
    init_common(ev, id, start_s, end_s);
    ev->kind = PFI_EVENT_CUT;
    ev->cut = cut;
    ev->baseline_w = baseline_w;
    snprintf(ev->baseline_method, sizeof(ev->baseline_method), "%s", method ? method : "");
}

int pfi_event_list_find(const pfi_event *v, int n, const char *id)
{
    for (int i = n - 1; i >= 0; i--)
        if (!strcmp(v[i].id, id))
            return i;
    return -1;
}

int pfi_event_keep_baseline(pfi_event *ev, const pfi_event *v, int n)
{
    if (ev->kind != PFI_EVENT_CUT || !isnan(ev->baseline_w))
        return 0;
    int at = pfi_event_list_find(v, n, ev->id);
    if (at < 0 || v[at].kind != PFI_EVENT_CUT || !isfinite(v[at].baseline_w))
        return 0;
    ev->baseline_w = v[at].baseline_w;
    memcpy(ev->baseline_method, v[at].baseline_method, sizeof ev->baseline_method);
    return 1;
}

int pfi_event_keep_level(pfi_event *ev, const pfi_event *v, int n, const pfi_event_site *site,
                         double now)
{
    int at = pfi_event_list_find(v, n, ev->id);
    if (at < 0 || !pfi_event_level_noted(&v[at]))
        return 0;
    pfi_event_site noted = pfi_event_site_noted(&v[at], *site);
    if (now < pfi_event_ramp_start_s(&v[at]) || now >= pfi_event_restored_s(&v[at], &noted))
        return 0;
    ev->ramp_level_w = v[at].ramp_level_w;
    return 1;
}

int pfi_event_same_terms(const pfi_event *a, const pfi_event *b)
{
    double ta = pfi_event_target_w(a), tb = pfi_event_target_w(b);
    return a->start_s == b->start_s && a->end_s == b->end_s && a->kind == b->kind &&
           (ta == tb || (isnan(ta) && isnan(tb))) && a->ramp_down_s == b->ramp_down_s &&
           a->ramp_up_s == b->ramp_up_s;
}

pfi_event_change pfi_event_change_kind(const pfi_event *held, const pfi_event *ev,
                                       const pfi_event_site *site, double now)
{
    if (!held)
        return PFI_EVENT_CHANGE_NEW;
    pfi_event_site noted = pfi_event_site_noted(held, *site);
    if (now >= pfi_event_restored_s(held, &noted))
        return PFI_EVENT_CHANGE_NEW;
    if (pfi_event_same_terms(held, ev))
        return PFI_EVENT_CHANGE_SAME;
    return now >= pfi_event_ramp_start_s(held) ? PFI_EVENT_CHANGE_REVISE : PFI_EVENT_CHANGE_AHEAD;
}

int pfi_event_ids_retain(char (*ids)[PFI_EVENT_ID_MAX], int n,
                         const char (*keep)[PFI_EVENT_ID_MAX], int n_keep)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        int held = 0;
        for (int k = 0; k < n_keep && !held; k++)
            held = !strcmp(ids[i], keep[k]);
        if (held && m != i)
            memcpy(ids[m], ids[i], sizeof ids[0]);
        m += held;
    }
    return m;
}

int pfi_event_list_remove(pfi_event *v, int *n, const char *id)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(v[i].id, id)) {
            memmove(&v[i], &v[i + 1], sizeof v[0] * (size_t)(*n - i - 1));
            (*n)--;
            return 1;
        }
    return 0;
}

const char *pfi_event_kind_name(int kind)
{
    return kind == PFI_EVENT_LIMIT ? "limit" : kind == PFI_EVENT_CUT ? "cut" : "unknown";
}

double pfi_event_target_w(const pfi_event *ev)
{
    if (ev->kind == PFI_EVENT_CUT)
        return ev->baseline_w * (1.0 - ev->cut);
    return ev->limit_w;
}

static int id_ok(const char *id, size_t cap)
{
    size_t n = strnlen(id, cap);
    if (n == 0 || n == cap)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == ':' || c == '-';
        if (!ok)
            return 0;
    }
    return 1;
}

int pfi_event_site_validate(const pfi_event_site *site, pfi_err *err)
{
    if (!(isfinite(site->max_w) && site->max_w > 0))
        return pfi_err_set(err, PFI_EINVAL, "the site's maximum power must be a positive number "
                           "of watts, not %g", site->max_w);
    if (isnan(site->manual_w) || site->manual_w <= 0)
        return pfi_err_set(err, PFI_EINVAL, "the manual budget must be positive, not %g",
                           site->manual_w);
    if (!(isfinite(site->restore_step_s) && site->restore_step_s > 0))
        return pfi_err_set(err, PFI_EINVAL, "the restore step must be a positive number of "
                           "seconds, not %g", site->restore_step_s);
    if (isnan(site->restore_w_per_s) || site->restore_w_per_s <= 0)
        return pfi_err_set(err, PFI_EINVAL, "the restore rate must be positive W/s, not %g",
                           site->restore_w_per_s);
    return PFI_OK;
}

/* The number check shared by targets and baselines: "what" names it in the message. */
static int check_watts(const pfi_event *ev, const char *what, double w, const pfi_event_site *site,
                       pfi_err *err)
{
    if (isnan(w))
        return pfi_err_set(err, PFI_EINVAL, "event %s: the %s is not a number", ev->id, what);
    if (isinf(w))
        return pfi_err_set(err, PFI_EINVAL, "event %s: the %s is infinite", ev->id, what);
    if (w < 0)
        return pfi_err_set(err, PFI_EINVAL, "event %s: the %s %.15g W is negative", ev->id, what,
                           w);
    if (w == 0)
        return pfi_err_set(err, PFI_EINVAL, "event %s: the %s is 0 W (a site cannot run at "
                           "nothing; use a positive limit)", ev->id, what);
    if (site && w > site->max_w)
        return pfi_err_set(err, PFI_ERANGE, "event %s: the %s %.15g W is above the site's "
                           "maximum %.0f W", ev->id, what, w, site->max_w);
    return PFI_OK;
}

static int check_target(const pfi_event *ev, const pfi_event_site *site, pfi_err *err)
{
    if (ev->kind == PFI_EVENT_LIMIT)
        return check_watts(ev, "target", ev->limit_w, site, err);
    if (ev->kind != PFI_EVENT_CUT)
        return pfi_err_set(err, PFI_EINVAL, "event %s: unknown kind %d (limit or cut)", ev->id,
                           ev->kind);
    if (isnan(ev->cut))
        return pfi_err_set(err, PFI_EINVAL, "event %s: the cut is not a number", ev->id);
    if (!(ev->cut > 0 && ev->cut < 1))
        return pfi_err_set(err, PFI_EINVAL, "event %s: the cut %g%% is outside (0%%, 100%%)",
                           ev->id, ev->cut * 100);
    int rc = check_watts(ev, "baseline", ev->baseline_w, site, err);
    if (rc)
        return rc;
    if (strnlen(ev->baseline_method, sizeof(ev->baseline_method)) == 0)
        return pfi_err_set(err, PFI_EINVAL, "event %s: a cut needs the method its baseline was "
                           "obtained by", ev->id);
    return PFI_OK;
}

int pfi_event_id_check(const char *id, pfi_err *err)
{
    if (!id_ok(id, PFI_EVENT_ID_MAX))
        return pfi_err_set(err, PFI_EINVAL, "event id '%.*s' must be 1-%d characters of "
                           "A-Z a-z 0-9 . _ : -", (int)strnlen(id, PFI_EVENT_ID_MAX), id,
                           PFI_EVENT_ID_MAX - 1);
    return PFI_OK;
}

static int check_strings(const pfi_event *ev, pfi_err *err)
{
    int rc = pfi_event_id_check(ev->id, err);
    if (rc != PFI_OK)
        return rc;
    if (memchr(ev->source, 0, sizeof(ev->source)) == NULL ||
        memchr(ev->baseline_method, 0, sizeof(ev->baseline_method)) == NULL)
        return pfi_err_set(err, PFI_EINVAL, "event %s: source or baseline method too long",
                           ev->id);
    return PFI_OK;
}

int pfi_event_validate(const pfi_event *ev, const pfi_event_site *site, pfi_err *err)
{
    int rc = check_strings(ev, err);
    if (rc)
        return rc;
    if (!isfinite(ev->start_s) || !isfinite(ev->end_s))
        return pfi_err_set(err, PFI_EINVAL, "event %s: start and end must be finite times",
                           ev->id);
    /* A window a date can be written for: a start of -1e300 or an end of 1e300 was taken,
     * and its answer wrote the end through a cast of 1e300 to time_t. */
    int bad_start = ev->start_s < 0 || ev->start_s > PFI_TIME_MAX_S; /* named first: an end
                                                                       * from it is its fault */
    if (bad_start || ev->end_s > PFI_TIME_MAX_S)
        return pfi_err_set(err, PFI_EINVAL,
                           "event %s: %s %.15g is outside 1970-01-01T00:00:00Z to "
                           "9999-12-31T23:59:59Z (Unix seconds 0 to %.0f)",
                           ev->id, bad_start ? "start" : "end",
                           bad_start ? ev->start_s : ev->end_s, PFI_TIME_MAX_S);
    if (ev->end_s <= ev->start_s)
        return pfi_err_set(err, PFI_EINVAL, "event %s ends (%.0f) %s it starts (%.0f)", ev->id,
                           ev->end_s, ev->end_s == ev->start_s ? "when" : "before", ev->start_s);
    rc = check_target(ev, site, err);
    if (rc)
        return rc;
    if (!(isfinite(ev->ramp_down_s) && ev->ramp_down_s >= 0 && ev->ramp_down_s <= RAMP_MAX_S))
        return pfi_err_set(err, PFI_EINVAL, "event %s: ramp-down %g s is outside 0-%.0f s",
                           ev->id, ev->ramp_down_s, RAMP_MAX_S);
    if (!(isfinite(ev->ramp_up_s) && ev->ramp_up_s >= 0 && ev->ramp_up_s <= RAMP_MAX_S))
        return pfi_err_set(err, PFI_EINVAL, "event %s: ramp-up %g s is outside 0-%.0f s", ev->id,
                           ev->ramp_up_s, RAMP_MAX_S);
    if (ev->priority < -PFI_EVENT_PRIORITY_MAX || ev->priority > PFI_EVENT_PRIORITY_MAX)
        return pfi_err_set(err, PFI_EINVAL, "event %s: priority %d is outside -%d..%d", ev->id,
                           ev->priority, PFI_EVENT_PRIORITY_MAX, PFI_EVENT_PRIORITY_MAX);
    return PFI_OK;
}

/* The level the site returns to without this event. */
static double free_level(const pfi_event_site *site)
{
    return isfinite(site->manual_w) ? site->manual_w : site->max_w;
}

/* The level an event's ramp falls from and its restore climbs to: the one noted when its ramp
 * began, once noted, as its report reads them (pfi_event_site_noted).  A manual budget removed
 * or raised mid-event moved the control's line but not the report's: the ramp-down rose mid-way
 * and the restore climbed 320 W a step where the report allowed 200 W ("NOT complied", for
 * what the daemon did itself).  A budget changed meanwhile takes effect once the restore is
 * over; a lower one still caps every step (pfi_event_budget_at). */
static double event_level(const pfi_event *ev, const pfi_event_site *site)
{
    pfi_event_site noted = pfi_event_site_noted(ev, *site); /* noted as no budget: INFINITY */
    return free_level(&noted);
}

double pfi_event_ramp_start_s(const pfi_event *ev)
{
    return ev->start_s - ev->ramp_down_s;
}

/* The restore after the end: its duration (the event's ramp-up, or longer when the site's rate
 * asks) cut into *n equal steps of at most restore_step_s.  0 when restored at once. */
static double restore_span(const pfi_event *ev, const pfi_event_site *site, double target,
                           double level, double *n)
{
    *n = 0;
    if (target >= level)
        return 0;
    double d = ev->ramp_up_s;
    if (isfinite(site->restore_w_per_s) && site->restore_w_per_s > 0)
        d = fmax(d, (level - target) / site->restore_w_per_s);
    if (!(d > 0))
        return 0;
    *n = ceil(d / site->restore_step_s - 1e-9);
    if (*n < 1)
        *n = 1;
    return d;
}

double pfi_event_restored_s(const pfi_event *ev, const pfi_event_site *site)
{
    double n;
    return ev->end_s + restore_span(ev, site, pfi_event_target_w(ev), event_level(ev, site), &n);
}

double pfi_event_cap_at(const pfi_event *ev, const pfi_event_site *site, double t)
{
    double target = pfi_event_target_w(ev), level = event_level(ev, site);
    if (t >= ev->start_s && t < ev->end_s)
        return target;
    if (target >= level)
        return INFINITY; /* outside its window the event cannot bind below the level */
    if (t < ev->start_s) {
        double r0 = pfi_event_ramp_start_s(ev);
        if (t < r0 || ev->ramp_down_s <= 0)
            return INFINITY;
        return level + (target - level) * (t - r0) / ev->ramp_down_s;
    }
    double n, d = restore_span(ev, site, target, level, &n);
    if (n <= 0)
        return INFINITY;
    double k = floor((t - ev->end_s) / (d / n));
    if (k >= n)
        return INFINITY;
    return target + (level - target) * k / n;
}

/* Whether event a binds before event b when both give the same cap. */
static int binds_first(const pfi_event *a, int ia, const pfi_event *b, int ib)
{
    if (a->priority != b->priority)
        return a->priority > b->priority;
    if (a->start_s != b->start_s)
        return a->start_s < b->start_s;
    return ia < ib;
}

double pfi_event_budget_at(const pfi_event *evs, int n, const pfi_event_site *site, double t,
                           int *binding)
{
    double best = INFINITY;
    int bi = -1;
    for (int i = 0; i < n; i++) {
        double c = pfi_event_cap_at(&evs[i], site, t);
        if (c < best || (c == best && bi >= 0 && isfinite(c) &&
                         binds_first(&evs[i], i, &evs[bi], bi))) {
            best = c;
            bi = i;
        }
    }
    if (!(best < site->manual_w)) {
        best = site->manual_w;
        bi = -1;
    }
    if (binding)
        *binding = bi;
    return best;
}

static double clampd(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

double pfi_event_budget_min(const pfi_event *evs, int n, const pfi_event_site *site, double t0,
                            double t1)
{
    if (t1 < t0) {
        double s = t0;
        t0 = t1;
        t1 = s;
    }
    double best = site->manual_w;
    for (int i = 0; i < n; i++) {
        /* Each cap falls (ramp down), holds, then rises (restore): its lowest point on
         * [t0, t1] is at an end of the interval or at the start or end of the window. */
        double ts[4] = {t0, t1, clampd(evs[i].start_s, t0, t1), clampd(evs[i].end_s, t0, t1)};
        for (int k = 0; k < 4; k++) {
            double c = pfi_event_cap_at(&evs[i], site, ts[k]);
            if (c < best)
                best = c;
        }
    }
    return best;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The tightest event whose window covers t, or -1. */
static int tightest_at(const pfi_event *evs, int n, double t)
{
    int bi = -1;
    double best = INFINITY;
    for (int i = 0; i < n; i++) {
        if (!(t >= evs[i].start_s && t < evs[i].end_s))
            continue;
        double c = pfi_event_target_w(&evs[i]);
        if (bi < 0 || c < best || (c == best && binds_first(&evs[i], i, &evs[bi], bi))) {
            best = c;
            bi = i;
        }
    }
    return bi;
}

int pfi_event_resolve(const pfi_event *evs, int n, pfi_event_piece *out, int cap)
{
    if (n <= 0)
        return 0;
    double *b = malloc(sizeof(double) * 2 * (size_t)n);
    if (!b)
        return -1;
    for (int i = 0; i < n; i++) {
        b[2 * i] = evs[i].start_s;
        b[2 * i + 1] = evs[i].end_s;
    }
    qsort(b, 2 * (size_t)n, sizeof(double), cmp_double);
    int np = 0;
    for (int k = 0; k + 1 < 2 * n; k++) {
        if (!(b[k + 1] > b[k]))
            continue;
        int e = tightest_at(evs, n, b[k] + (b[k + 1] - b[k]) / 2);
        if (e < 0)
            continue;
        if (np > 0 && out[np - 1].event == e && out[np - 1].t1 == b[k]) {
            out[np - 1].t1 = b[k + 1];
            continue;
        }
        if (np == cap) {
            free(b);
            return -1;
        }
        out[np++] = (pfi_event_piece){b[k], b[k + 1], pfi_event_target_w(&evs[e]), e};
    }
    free(b);
    return np;
}

int pfi_event_feasible(double target_w, double floor_w, double *achievable_w)
{
    double a = fmax(target_w, floor_w);
    if (achievable_w)
        *achievable_w = a;
    return floor_w <= target_w;
}
