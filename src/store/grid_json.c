/* SPDX-License-Identifier: Apache-2.0 */
/* grid_json.c: grid events to and from the API's JSON (grid.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "store/grid.h"
#include "util/isotime.h"
#include "util/units.h"
#include "util/json.h"

static const char *const keys[] = {"id",          "start",     "end",       "duration_s",
                                   "limit_w",     "cut",       "baseline_w", "ramp_s",
                                   "ramp_down_s", "ramp_up_s", "priority",  "source",
                                   "sla",         "openadr",   NULL};

static int only_keys(json_t *o, pfi_err *err)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        int known = 0;
        for (int i = 0; keys[i]; i++)
            known |= !strcmp(k, keys[i]);
        if (!known) {
            char list[300] = "";
            size_t at = 0;
            for (int i = 0; keys[i] && at < sizeof list; i++)
                at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "",
                                       keys[i]);
            return pfi_err_set(err, PFI_EINVAL, "unknown field '%s' (known: %s)", k, list);
        }
    }
    return PFI_OK;
}

static int get_time(json_t *o, const char *key, double now, double *t, pfi_err *err)
{
    json_t *v = json_object_get(o, key);
    if (json_is_number(v)) {
        *t = json_number_value(v);
        return PFI_OK;
    }
    if (json_is_string(v))
        return pfi_time_parse(json_string_value(v), now, t, err) == PFI_OK
                   ? PFI_OK
                   : pfi_err_prefix(err, "%s: ", key);
    return pfi_err_set(err, PFI_EINVAL, "%s: expected a time (Unix seconds or "
                                        "\"2026-12-01T18:00:00Z\")", key);
}

/* A number field (absent: keeps *v); any other type is an error naming it. */
static int get_num(json_t *o, const char *key, double *v, pfi_err *err)
{
    json_t *x = json_object_get(o, key);
    if (!x)
        return PFI_OK;
    if (!json_is_number(x))
        return pfi_err_set(err, PFI_EINVAL, "%s: expected a number", key);
    *v = json_number_value(x);
    return PFI_OK;
}

static int get_window(json_t *o, double now, pfi_event *ev, pfi_err *err)
{
    if (!json_object_get(o, "start"))
        return pfi_err_set(err, PFI_EINVAL, "start: required");
    int rc = get_time(o, "start", now, &ev->start_s, err);
    if (rc)
        return rc;
    json_t *end = json_object_get(o, "end"), *dur = json_object_get(o, "duration_s");
    if (!!end + !!dur != 1)
        return pfi_err_set(err, PFI_EINVAL, "give exactly one of end or duration_s");
    if (end)
        return get_time(o, "end", now, &ev->end_s, err);
    double d = NAN;
    if ((rc = get_num(o, "duration_s", &d, err)))
        return rc;
    if (!(d > 0 && isfinite(d)))
        return pfi_err_set(err, PFI_EINVAL, "duration_s: expected seconds > 0");
    ev->end_s = ev->start_s + d;
    return PFI_OK;
}

static int get_target(json_t *o, pfi_event *ev, pfi_err *err)
{
    json_t *lim = json_object_get(o, "limit_w"), *cut = json_object_get(o, "cut");
    if (!!lim + !!cut != 1)
        return pfi_err_set(err, PFI_EINVAL, "give exactly one of limit_w (a site power limit "
                                            "in W) or cut (e.g. 0.25 or \"25%%\")");
    if (lim) {
        ev->kind = PFI_EVENT_LIMIT;
        return get_num(o, "limit_w", &ev->limit_w, err);
    }
    ev->kind = PFI_EVENT_CUT;
    if (json_is_string(cut)) {
        int pct = 0;
        if (pfi_parse_power(json_string_value(cut), &ev->cut, &pct, err) != PFI_OK)
            return pfi_err_prefix(err, "cut: ");
        if (!pct)
            return pfi_err_set(err, PFI_EINVAL, "cut: expected a percentage like \"25%%\"");
    } else if (json_is_number(cut)) {
        ev->cut = json_number_value(cut);
    } else {
        return pfi_err_set(err, PFI_EINVAL, "cut: expected 0.25 or \"25%%\"");
    }
    int rc = get_num(o, "baseline_w", &ev->baseline_w, err);
    if (rc == PFI_OK && json_object_get(o, "baseline_w"))
        snprintf(ev->baseline_method, sizeof ev->baseline_method, "stated in the request");
    return rc;
}

static int get_ramps(json_t *o, pfi_event *ev, pfi_err *err)
{
    double r = 0;
    int rc = get_num(o, "ramp_s", &r, err);
    if (rc)
        return rc;
    /* ramp_s is both ramps' default: with both given as well, it would be dropped unsaid. */
    if (json_object_get(o, "ramp_s") && json_object_get(o, "ramp_down_s") &&
        json_object_get(o, "ramp_up_s"))
        return pfi_err_set(err, PFI_EINVAL, "ramp_s with both ramp_down_s and ramp_up_s: it "
                           "would apply to neither; give one or the other");
    ev->ramp_down_s = ev->ramp_up_s = r;
    if ((rc = get_num(o, "ramp_down_s", &ev->ramp_down_s, err)) ||
        (rc = get_num(o, "ramp_up_s", &ev->ramp_up_s, err)))
        return rc;
    json_t *p = json_object_get(o, "priority");
    if (p) {
        if (!json_is_integer(p))
            return pfi_err_set(err, PFI_EINVAL, "priority: expected an integer");
        json_int_t v = json_integer_value(p);
        ev->priority = v > 100000 ? 100000 : v < -100000 ? -100000 : (int)v;
    }
    return PFI_OK;
}

static int get_strings(json_t *o, double now, pfi_event *ev, pfi_err *err)
{
    json_t *id = json_object_get(o, "id"), *src = json_object_get(o, "source"),
           *sla = json_object_get(o, "sla");
    if (id && (!json_is_string(id) || strlen(json_string_value(id)) >= sizeof ev->id))
        return pfi_err_set(err, PFI_EINVAL, "id: expected a string of at most %d characters",
                           (int)sizeof ev->id - 1);
    if (id)
        snprintf(ev->id, sizeof ev->id, "%s", json_string_value(id));
    else
        snprintf(ev->id, sizeof ev->id, "ev-%.0f", floor(now * 1000));
    if (src && (!json_is_string(src) || strlen(json_string_value(src)) >= sizeof ev->source))
        return pfi_err_set(err, PFI_EINVAL, "source: expected a string of at most %d characters",
                           (int)sizeof ev->source - 1);
    snprintf(ev->source, sizeof ev->source, "%s", src ? json_string_value(src) : "api");
    if (sla) {
        const char *v = json_is_string(sla) ? json_string_value(sla) : "";
        if (strcmp(v, "keep") && strcmp(v, "yield"))
            return pfi_err_set(err, PFI_EINVAL, "sla: expected \"keep\" or \"yield\"");
        ev->sla_yield = !strcmp(v, "yield");
    }
    return PFI_OK;
}

/* "openadr" (absent: not from a VTN): what the OpenADR client took the event from, for the
 * event's audit against the VTN; every field needed, as the client writes it. */
static int get_openadr(json_t *o, double now, pfi_event *ev, pfi_err *err)
{
    json_t *a = json_object_get(o, "openadr");
    if (!a)
        return PFI_OK;
    json_t *id = json_object_get(a, "event_id"), *k = json_object_get(a, "interval");
    if (!json_is_object(a) || !json_is_string(id) || !json_string_value(id)[0] ||
        strlen(json_string_value(id)) >= sizeof ev->oadr_event || !json_is_integer(k) ||
        json_integer_value(k) < 0 || json_integer_value(k) > 1000000 ||
        !json_object_get(a, "vtn_start"))
        return pfi_err_set(err, PFI_EINVAL, "openadr: expected {\"event_id\" (1-%d characters), "
                           "\"interval\" (>= 0), \"vtn_start\", \"randomize_start_s\", "
                           "\"randomized_s\"}", (int)sizeof ev->oadr_event - 1);
    snprintf(ev->oadr_event, sizeof ev->oadr_event, "%s", json_string_value(id));
    ev->oadr_interval = (int)json_integer_value(k);
    double r = NAN, late = NAN;
    int rc = get_time(a, "vtn_start", now, &ev->oadr_start_s, err);
    if (rc == PFI_OK)
        rc = get_num(a, "randomize_start_s", &r, err);
    if (rc == PFI_OK)
        rc = get_num(a, "randomized_s", &late, err);
    if (rc != PFI_OK)
        return pfi_err_prefix(err, "openadr: ");
    if (!(r >= 0 && isfinite(r) && late >= 0 && late <= r))
        return pfi_err_set(err, PFI_EINVAL, "openadr: randomized_s (%g) must be within [0, "
                           "randomize_start_s (%g)]", late, r);
    ev->oadr_randomize_s = r;
    ev->oadr_randomized_s = late;
    return PFI_OK;
}

int pfi_grid_event_from_json(json_t *o, double now, pfi_event *ev, pfi_err *err)
{
    pfi_event_init_limit(ev, "", 0, 0, NAN);
    if (!json_is_object(o))
        return pfi_err_set(err, PFI_EINVAL, "an event must be a JSON object");
    int rc;
    if ((rc = only_keys(o, err)) || (rc = get_strings(o, now, ev, err)) ||
        (rc = get_window(o, now, ev, err)) || (rc = get_target(o, ev, err)) ||
        (rc = get_ramps(o, ev, err)) || (rc = get_openadr(o, now, ev, err)))
        return rc;
    return PFI_OK;
}

const char *pfi_grid_event_phase(const pfi_event *ev, const pfi_event_site *site, double now)
{
    double restored = site ? pfi_event_restored_s(ev, site) : ev->end_s;
    if (now < pfi_event_ramp_start_s(ev))
        return "scheduled";
    if (now < ev->start_s)
        return "ramping";
    if (now < ev->end_s)
        return "active";
    return now < restored ? "restoring" : "done";
}

json_t *pfi_grid_event_to_json(const pfi_event *ev, const pfi_event_site *site, double now)
{
    char t0[40], t1[40];
    pfi_time_format(ev->start_s, t0, sizeof t0);
    pfi_time_format(ev->end_s, t1, sizeof t1);
    json_t *o = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:s, s:o, s:f, s:f, s:i, s:s, s:s, "
                          "s:s}",
                          "id", ev->id, "start", t0, "end", t1, "start_s", ev->start_s, "end_s",
                          ev->end_s, "duration_s", ev->end_s - ev->start_s, "kind",
                          pfi_event_kind_name(ev->kind), "target_w",
                          pfi_json_num(pfi_event_target_w(ev)), "ramp_down_s", ev->ramp_down_s,
                          "ramp_up_s", ev->ramp_up_s, "priority", ev->priority, "source",
                          ev->source, "sla", ev->sla_yield ? "yield" : "keep", "phase",
                          pfi_grid_event_phase(ev, site, now));
    if (!o)
        return NULL;
    if (ev->kind == PFI_EVENT_LIMIT) {
        json_object_set_new(o, "limit_w", pfi_json_num(ev->limit_w));
    } else {
        json_object_set_new(o, "cut", pfi_json_num(ev->cut));
        json_object_set_new(o, "baseline_w", pfi_json_num(ev->baseline_w));
        json_object_set_new(o, "baseline_method", json_string(ev->baseline_method));
    }
    if (site)
        json_object_set_new(o, "restored_s", pfi_json_num(pfi_event_restored_s(ev, site)));
    if (ev->oadr_event[0]) {
        char vs[40];
        pfi_time_format(ev->oadr_start_s, vs, sizeof vs);
        json_object_set_new(o, "openadr",
                            json_pack("{s:s, s:i, s:s, s:o, s:f, s:f}", "event_id",
                                      ev->oadr_event, "interval", ev->oadr_interval,
                                      "vtn_start", vs, "vtn_start_s",
                                      pfi_json_num(ev->oadr_start_s), "randomize_start_s",
                                      ev->oadr_randomize_s, "randomized_s",
                                      ev->oadr_randomized_s));
        /* when its report reached the VTN: sent once, a restart included */
        json_object_set_new(json_object_get(o, "openadr"), "report_sent_s",
                            ev->oadr_reported_s > 0 ? json_real(ev->oadr_reported_s)
                                                    : json_null());
    }
    return o;
}

/* A time as ISO 8601, null when it is not finite (a revision in force from the beginning). */
static json_t *iso_or_null(double t)
{
    char b[40];
    if (!isfinite(t))
        return json_null();
    pfi_time_format(t, b, sizeof b);
    return json_string(b);
}

static json_t *revisions_json(const pfi_event_compliance *c)
{
    json_t *a = json_array();
    for (int k = 0; k < c->n_spans; k++) {
        const pfi_event_span *x = &c->spans[k];
        json_array_append_new(
            a, json_pack("{s:o, s:o, s:o, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:o, s:f, s:f}",
                         "from", iso_or_null(x->from_s), "from_s", pfi_json_num(x->from_s),
                         "until_s", pfi_json_num(x->until_s), "target_w", x->target_w,
                         "start_s", x->start_s, "end_s", x->end_s, "ramp_down_s",
                         x->ramp_down_s, "ramp_up_s", x->ramp_up_s, "window_s", x->window_s,
                         "covered_s", x->covered_s, "mean_w", pfi_json_num(x->mean_w),
                         "max_excess_w", x->max_excess_w, "seconds_over_target",
                         x->seconds_over_target));
    }
    return a;
}

json_t *pfi_grid_compliance_to_json(const pfi_event_compliance *c)
{
    json_t *iv = json_array();
    for (int i = 0; i < c->n_intervals; i++) {
        const pfi_event_interval *x = &c->intervals[i];
        json_array_append_new(
            iv, json_pack("{s:f, s:f, s:o, s:o, s:o, s:f, s:f}", "t0", x->t0, "t1", x->t1,
                          "mean_w", pfi_json_num(x->mean_w), "max_w", pfi_json_num(x->max_w),
                          "budget_w", pfi_json_num(x->budget_w), "target_w", x->target_w,
                          "covered_s", x->covered_s));
    }
    json_t *ramp = json_pack("{s:b, s:f, s:f, s:f, s:o}", "ok", c->ramp_ok,
                             "ramp_down_max_excess_w", c->ramp_down_max_excess_w,
                             "restore_max_excess_w", c->restore_max_excess_w,
                             "restore_max_rise_w_per_s", c->restore_max_rise_w_per_s,
                             "at_target_s_before_start", pfi_json_num(c->at_target_s));
    json_t *o = json_pack("{s:f, s:o, s:s, s:f, s:f, s:f, s:f, s:o, s:o, s:o, s:o}",
                          "target_w", c->target_w, "baseline_w", pfi_json_num(c->baseline_w),
                          "baseline_method", c->baseline_method, "window_s", c->window_s,
                          "covered_s", c->covered_s, "max_excess_w", c->max_excess_w,
                          "seconds_over_target", c->seconds_over_target, "energy_shed_kwh",
                          pfi_json_num(c->energy_shed_kwh), "mean_w", pfi_json_num(c->mean_w),
                          "ramp", ramp, "intervals", iv);
    if (o && c->n_spans > 1) /* changed under way: each definition and what it was judged on */
        json_object_set_new(o, "revisions", revisions_json(c));
    /* Held above the target (an event the SLAs could not meet, held at the least the site
     * could hold): the shortfall was the site's decision, and the report says so. */
    if (o && c->held_above_s > 0)
        json_object_set_new(o, "held_above_target",
                            json_pack("{s:f, s:f}", "seconds", c->held_above_s, "budget_w",
                                      c->held_above_w));
    /* Taken after its window began: the seconds before were judged all the same (the site was
     * over the target), and the report says why. */
    if (o && c->taken_late_s > 0)
        json_object_set_new(o, "taken_after_start_s", json_real(c->taken_late_s));
    return o;
}

/* What the report can say at `now`, as a word and a sentence (docs/api.md, "state"): before
 * the ramp nothing was recorded that the event judges; until the restore is over the report is
 * a partial one; after it, one without a recorded second in the window judges nothing. */
static const char *report_state(const pfi_event *ev, const pfi_event_site *site, double now,
                                const pfi_event_compliance *c, char *msg, size_t size)
{
    char t0[40], t1[40], tr[40];
    pfi_time_format(ev->start_s, t0, sizeof t0);
    pfi_time_format(ev->end_s, t1, sizeof t1);
    pfi_time_format(pfi_event_restored_s(ev, site), tr, sizeof tr);
    const char *phase = pfi_grid_event_phase(ev, site, now);
    if (!strcmp(phase, "scheduled")) {
        snprintf(msg, size, "event %s starts at %s: nothing to report yet", ev->id, t0);
        return "not_started";
    }
    if (!strcmp(phase, "ramping")) {
        snprintf(msg, size, "event %s is ramping down to its start at %s: partial report (the "
                 "window has not begun)", ev->id, t0);
        return "partial";
    }
    if (!strcmp(phase, "active")) {
        snprintf(msg, size, "event %s is in force until %s: partial report, %.0f s of its %.0f "
                 "s window recorded so far", ev->id, t1, c->covered_s, c->window_s);
        return "partial";
    }
    if (!strcmp(phase, "restoring")) {
        snprintf(msg, size, "event %s ended at %s and is restoring until %s: partial report "
                 "(the restore is judged once it is over)", ev->id, t1, tr);
        return "partial";
    }
    if (!(c->covered_s > 0)) {
        snprintf(msg, size, "event %s ended at %s but no site power was recorded in its window "
                 "(was the daemon running?): nothing to judge", ev->id, t1);
        return "no_samples";
    }
    snprintf(msg, size, "event %s ended at %s: complete report, %.0f s of its %.0f s window "
             "recorded", ev->id, t1, c->covered_s, c->window_s);
    return "complete";
}

/* Appends to the state's sentence that the event was changed under way, and when. */
static void say_changed(const pfi_event_compliance *c, char *msg, size_t size)
{
    size_t at = strlen(msg);
    at += (size_t)snprintf(msg + at, at < size ? size - at : 0, "; changed while under way at");
    for (int k = 1; k < c->n_spans && at < size; k++) {
        char t[40];
        pfi_time_format(c->spans[k].from_s, t, sizeof t);
        at += (size_t)snprintf(msg + at, size - at, "%s %s (target %.0f W)", k > 1 ? "," : "", t,
                               c->spans[k].target_w);
    }
    if (at < size)
        snprintf(msg + at, size - at, ": each instant judged against the definition in force "
                 "then");
}

json_t *pfi_grid_report_json(pfi_grid_store *g, const pfi_event *ev, const pfi_event_site *site,
                             double max_gap_s, double now, pfi_err *err)
{
    pfi_event_compliance c;
    int k = 0;
    if (pfi_grid_compliance(g, ev, site, max_gap_s, &c, &k, err) != PFI_OK)
        return NULL;
    /* The window judged is the event's own: for an OpenADR event its randomized one, moved
     * randomized_s after the VTN's start, which an audit against the VTN needs to know. */
    char t0[40], t1[40];
    pfi_time_format(ev->start_s, t0, sizeof t0);
    pfi_time_format(ev->end_s, t1, sizeof t1);
    json_t *win = json_pack("{s:s, s:s, s:f, s:f}", "start", t0, "end", t1, "start_s",
                            ev->start_s, "end_s", ev->end_s);
    if (ev->oadr_event[0]) {
        char vs[40];
        pfi_time_format(ev->oadr_start_s, vs, sizeof vs);
        json_object_set_new(win, "vtn_start", json_string(vs));
        json_object_set_new(win, "randomized_s", json_real(ev->oadr_randomized_s));
    }
    json_t *o = json_pack("{s:o, s:o, s:o, s:f, s:i}", "event",
                          pfi_grid_event_to_json(ev, site, now), "compliance",
                          pfi_grid_compliance_to_json(&c), "judged_window", win, "site_max_w",
                          site->max_w, "samples", k);
    char msg[600];
    const char *state = report_state(ev, site, now, &c, msg, sizeof msg);
    if (c.n_spans > 1 && strcmp(state, "not_started"))
        say_changed(&c, msg, sizeof msg);
    json_object_set_new(o, "state", json_string(state));
    json_object_set_new(o, "state_message", json_string(msg));
    pfi_event_compliance_free(&c);
    return o;
}

void pfi_grid_history_json(json_t *report, double let_go_s)
{
    char at[40], until[40];
    pfi_time_format(let_go_s, at, sizeof at);
    pfi_time_format(let_go_s + PFI_GRID_HISTORY_S, until, sizeof until);
    json_object_set_new(report, "let_go", json_pack("{s:s, s:f, s:s, s:f}", "at", at, "at_s",
                                                    let_go_s, "kept_until", until,
                                                    "kept_until_s",
                                                    let_go_s + PFI_GRID_HISTORY_S));
}

int pfi_grid_infeasible(const pfi_event *ev, double achievable_w, double min_limits_w,
                        const char *holder, json_t **body, pfi_err *err)
{
    double target = pfi_event_target_w(ev);
    if (body)
        *body = json_pack("{s:b, s:f, s:f}", "feasible", 0, "target_w", target, "achievable_w",
                          achievable_w);
    /* "yield" is advice only where the SLAs raise the floor: it was given to an event that
     * yielded already, whose floor was the GPUs' minimum limits. */
    if (ev->sla_yield || !(achievable_w > min_limits_w + 0.5))
        return pfi_err_set(err, PFI_EINFEASIBLE, "event %s: target %.0f W cannot be met: the "
                           "GPUs' minimum power limits sum to %.0f W, the least %s can hold "
                           "(achievable_w)",
                           ev->id, target, achievable_w, holder);
    return pfi_err_set(err, PFI_EINFEASIBLE, "event %s: target %.0f W cannot be met with the "
                       "SLAs in force: %s can hold no less than %.0f W (achievable_w; %.0f W "
                       "with the SLAs yielding); send \"sla\": \"yield\" to let the SLAs give way",
                       ev->id, target, holder, achievable_w, min_limits_w);
}
