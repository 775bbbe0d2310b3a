/* SPDX-License-Identifier: Apache-2.0 */
/* ven_map.c: an OpenADR 3.0 event interval read into a grid event body (ven_map.h): its window
 * (ISO 8601 durations, OpenADR's "now" start, an interval without its own period following the
 * event's), its target (IMPORT_CAPACITY_LIMIT in W, KW or MW less the site's other loads;
 * SIMPLE levels 1-3 as cuts), its randomizeStart drawn once per event, and whether it is meant
 * for this VEN at all.  The VEN (ven.c) takes or refuses what this gives. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "core/event.h"
#include "serve/ven_map.h"
#include "util/isotime.h"

/* "PT20M", "PT1H30M", "P1DT2H", "PT45.5S", "P0Y0M0DT1H0M0S" -> seconds; "P9999Y", which
 * OpenADR 3.0 gives as infinity, -> INFINITY.  -1 with *why (may be NULL) when it cannot be
 * taken: malformed, or a number of years or months other than 0 (P9999Y aside): those have no
 * fixed length in seconds (a month is 28 to 31 days), and guessed one, a window would end on
 * another day than the VTN's. */
static double iso_duration(const char *s, const char **why)
{
    const char *dummy;
    why = why ? why : &dummy;
    *why = "not an ISO 8601 duration such as PT1H30M";
    if (s && !strcmp(s, "P9999Y"))
        return INFINITY;
    if (!s || *s != 'P')
        return -1;
    double total = 0;
    int in_time = 0, any = 0, any_time = 0, rank = 0, fraction = 0;
    for (const char *p = s + 1; *p;) {
        if (*p == 'T') {
            if (in_time)
                return -1;
            in_time = 1;
            p++;
            continue;
        }
        if (fraction)
            return -1; /* only the last component may have a fraction (ISO 8601 4.4.3.2) */
        /* Decimal digits with an optional fraction, read by strtod only after they are
         * checked: strtod alone also took "0x10" (16) and "1e1" (10). */
        const char *end = p;
        while (*end >= '0' && *end <= '9')
            end++;
        if (end > p && *end == '.' && end[1] >= '0' && end[1] <= '9') {
            fraction = 1;
            for (end++; *end >= '0' && *end <= '9'; end++)
                ;
        }
        if (end == p)
            return -1;
        double x = strtod(p, NULL); /* stops where the digits do: the unit letter follows */
        if (!isfinite(x))
            return -1;
        /* Years and months: 0 is a length like any other (the spec's pattern writes them
         * first, "P0Y0M0DT1H"); any other number has none. */
        /* The components in ISO 8601's order, each once: "PT1S1H" or "PT1H1H" would be read
         * as some length, and not surely the one the VTN meant. */
        int r = in_time ? (*end == 'H' ? 5 : *end == 'M' ? 6 : *end == 'S' ? 7 : 0)
                        : (*end == 'Y' ? 1 : *end == 'M' ? 2 : *end == 'W' ? 3 : *end == 'D' ? 4 : 0);
        if (r <= rank) {
            if (r)
                *why = "its components out of ISO 8601's order (Y M W D T H M S) or given twice";
            return -1;
        }
        rank = r;
        any_time |= in_time;
        if ((*end == 'Y' || *end == 'M') && !in_time) {
            if (x != 0) {
                *why = "years and months other than 0 have no fixed length (P9999Y aside, "
                       "OpenADR's infinity): give days, hours, minutes or seconds";
                return -1;
            }
            any = 1;
            p = end + 1;
            continue;
        }
        double unit = *end == 'D' && !in_time ? 86400
                      : *end == 'W' && !in_time ? 604800
                      : *end == 'H' && in_time ? 3600
                      : *end == 'M' && in_time ? 60
                      : *end == 'S' && in_time ? 1
                                               : -1;
        if (unit < 0)
            return -1;
        total += x * unit;
        any = 1;
        p = end + 1;
    }
    return any && in_time == any_time ? total : -1; /* "P1DT": a T with nothing after it */
}

/* The intervalPeriod that sets the interval's window: its own, else the event's (*own 0). */
static json_t *period_of(json_t *ev, json_t *iv, int *own)
{
    json_t *ip = json_object_get(iv, "intervalPeriod");
    *own = json_is_object(ip);
    return *own ? ip : json_object_get(ev, "intervalPeriod");
}

/* Whether a start is OpenADR 3.0's "now": "0001-01-01" or "0001-01-01T00:00:00" (any zone). */
static int start_is_now(json_t *st)
{
    const char *s = json_is_string(st) ? json_string_value(st) : "";
    return !strncmp(s, "0001-01-01", 10) && (!s[10] || !strncmp(s + 10, "T00:00:00", 9));
}

/* Whether the interval's window starts "now" (start_is_now). */
int pfi_ven_interval_starts_now(json_t *ev, json_t *iv)
{
    int own;
    return start_is_now(json_object_get(period_of(ev, iv, &own), "start"));
}

/* The interval's duration in *d: its own intervalPeriod's, else the event's (an own period
 * that gives only a start takes the event's duration); absent or null, OpenADR's default PT0S.
 * PT0S is "instantaneous or infinity, depending on payloadType": for a limit or a SIMPLE level
 * (open) infinity, until the VTN changes or withdraws the event as with P9999Y (refused, a
 * limit sent until further notice as PT0S or without a duration was ignored).  0 with why when
 * it cannot be taken. */
static int duration_of(json_t *ev, json_t *ip, int own, int open, double *d, char *why,
                       size_t wn)
{
    json_t *du = json_object_get(ip, "duration");
    if (own && (!du || json_is_null(du)))
        du = json_object_get(json_object_get(ev, "intervalPeriod"), "duration");
    const char *text = !du || json_is_null(du) ? "PT0S" : json_string_value(du), *bad;
    *d = iso_duration(text, &bad);
    if (*d < 0) {
        snprintf(why, wn, "duration %.40s: %s", text ? text : "(not a string)", bad);
        return 0;
    }
    if (*d == 0 && !open) {
        snprintf(why, wn, "duration %.40s: an instant, not a window", text);
        return 0;
    }
    if (*d == 0)
        *d = INFINITY;
    return 1;
}

/* The interval's window: its own intervalPeriod, else the event's shifted k durations; a start
 * of "now" (start_is_now) is now.  An infinite duration (P9999Y, or PT0S for an open payload:
 * duration_of) ends at the last second a date is written for (the event then holds until the
 * VTN withdraws it); an interval inherited after an infinite one never starts and is refused.
 * 0 with why when there is no usable window. */
static int window_of(json_t *ev, json_t *iv, int k, int open, double now, double *t0,
                     double *t1, char *why, size_t wn)
{
    int own;
    json_t *ip = period_of(ev, iv, &own);
    json_t *st = json_object_get(ip, "start");
    double d;
    pfi_err e = {0};
    if (start_is_now(st)) {
        *t0 = now;
    } else if (!json_is_string(st)) {
        snprintf(why, wn, "no start");
        return 0;
    } else if (pfi_time_parse(json_string_value(st), 0, t0, &e) != PFI_OK) {
        snprintf(why, wn, "%s", e.msg);
        return 0;
    }
    if (!duration_of(ev, ip, own, open, &d, why, wn))
        return 0;
    if (isinf(d)) {
        if ((own || k == 0) && *t0 < PFI_TIME_MAX_S) {
            *t1 = PFI_TIME_MAX_S;
            return 1;
        }
        snprintf(why, wn, "it follows an interval that lasts until further notice");
        return 0;
    }
    if (!own)
        *t0 += k * d;
    *t1 = *t0 + d;
    return 1;
}

/* The part of a grid event id "oadr-<key>-<interval>" that names the VTN's event.  OpenADR
 * ids have up to 128 characters, a grid event id fewer (PFI_EVENT_ID_MAX): an id longer than
 * PFI_VEN_KEY_MAX is held as its first characters, '.' and a 64-bit FNV-1a hash of the whole id, so
 * that it is still found among the VTN's ids (cut short, it was not: the event was cancelled
 * and taken again at every poll) and two ids that differ after the cut stay two events. */
void pfi_ven_vtn_key(const char *vtn_id, char *out, size_t n)
{
    size_t len = strlen(vtn_id);
    if (len <= PFI_VEN_KEY_MAX) {
        snprintf(out, n, "%s", vtn_id);
        return;
    }
    unsigned long long h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)vtn_id[i]) * 1099511628211ull;
    snprintf(out, n, "%.*s.%016llx", PFI_VEN_KEY_MAX - 17, vtn_id, h);
}

/* The VTN's event key of a grid event "oadr-<key>-<interval>" ("" when it is not one). */
void pfi_ven_vtn_id_of(const char *id, char *out, size_t n)
{
    const char *last = strrchr(id, '-');
    if (strncmp(id, "oadr-", 5) || !last || last < id + 5)
        snprintf(out, n, "%s", "");
    else
        snprintf(out, n, "%.*s", (int)(last - (id + 5)), id + 5);
}

/* Watts per unit of a payload type, from the event's descriptors: W, KW or MW (any case); KW
 * when no descriptor gives units.  NAN for any other units (KVA, KWH, PERCENT...), named in
 * *units: they are not a real power pfi can hold the site under (read as kW, 1.5 MW was a
 * limit of 1.5 kW and 80 PERCENT one of 80 kW). */
static double watts_per_unit(json_t *ev, const char *type, const char **units)
{
    size_t i;
    json_t *pd;
    *units = "KW";
    json_array_foreach(json_object_get(ev, "payloadDescriptors"), i, pd)
    {
        json_t *t = json_object_get(pd, "payloadType"), *u = json_object_get(pd, "units");
        if (!json_is_string(t) || strcmp(json_string_value(t), type) || !json_is_string(u))
            continue;
        *units = json_string_value(u);
        return !strcasecmp(*units, "W") ? 1 : !strcasecmp(*units, "KW") ? 1e3
               : !strcasecmp(*units, "MW") ? 1e6 : NAN;
    }
    return 1e3;
}

/* The payload of an interval pfi acts on: the first IMPORT_CAPACITY_LIMIT or SIMPLE among its
 * payloads (a list: a PRICE or GHG beside it is left alone), else the first payload (refused
 * as unknown by the caller), else NULL. */
json_t *pfi_ven_acted_payload(json_t *iv)
{
    json_t *pls = json_object_get(iv, "payloads"), *pl;
    size_t i;
    json_array_foreach(pls, i, pl)
    {
        json_t *type = json_object_get(pl, "type");
        if (json_is_string(type) && (!strcmp(json_string_value(type), "IMPORT_CAPACITY_LIMIT") ||
                                     !strcmp(json_string_value(type), "SIMPLE")))
            return pl;
    }
    return json_array_get(pls, 0);
}

/* Whether t is a payload type OpenADR 3.0 defines that pfi does not act on (prices, emissions,
 * setpoints, alerts, capacity subscriptions; "x-" private ones): such an interval is nothing
 * to do, not an error.  A program that publishes prices beside its limits counted an error at
 * every poll (and an alert on the VEN's errors paged for a price).  A type no one defines (a
 * misspelt limit) stays an error. */
static int openadr_other_type(const char *t)
{
    static const char *const types[] = {
        "PRICE", "CHARGE_STATE_SETPOINT", "DISPATCH_SETPOINT", "DISPATCH_SETPOINT_RELATIVE",
        "CONTROL_SETPOINT", "EXPORT_PRICE", "GHG", "CURVE", "OLS",
        "IMPORT_CAPACITY_SUBSCRIPTION", "IMPORT_CAPACITY_RESERVATION",
        "IMPORT_CAPACITY_RESERVATION_FEE", "IMPORT_CAPACITY_AVAILABLE",
        "IMPORT_CAPACITY_AVAILABLE_PRICE", "EXPORT_CAPACITY_SUBSCRIPTION",
        "EXPORT_CAPACITY_RESERVATION", "EXPORT_CAPACITY_RESERVATION_FEE",
        "EXPORT_CAPACITY_AVAILABLE", "EXPORT_CAPACITY_AVAILABLE_PRICE", "EXPORT_CAPACITY_LIMIT",
        "ALERT_GRID_EMERGENCY", "ALERT_BLACK_START", "ALERT_POSSIBLE_OUTAGE", "ALERT_FLEX_ALERT",
        "ALERT_FIRE", "ALERT_FREEZING", "ALERT_WIND", "ALERT_TSUNAMI", "ALERT_AIR_QUALITY",
        "ALERT_OTHER", "CTA2045_REBOOT", "CTA2045_SET_OVERRIDE_STATUS",
    };
    if (!strncmp(t, "x-", 2) || !strncmp(t, "X-", 2))
        return 1;
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (!strcmp(t, types[i]))
            return 1;
    return 0;
}

/* Whether an event is meant for this VEN by its targets (OpenADR 3.0: a list of valuesMap
 * {type, values}): every VEN_NAME entry must list the VEN's name and every RESOURCE_NAME entry
 * its resource.  Other target types (GROUP, SERVICE_AREA...) and targets given as plain strings
 * cannot be judged here and do not exclude it.  A VTN may list a program's events for every
 * VEN: one targeted at another VEN was applied here. */
int pfi_ven_for_this(const pfi_ven_config *cfg, json_t *ev)
{
    size_t i, j;
    json_t *t, *x;
    const char *ven = cfg->ven_name[0] ? cfg->ven_name : cfg->client_id;
    json_array_foreach(json_object_get(ev, "targets"), i, t)
    {
        json_t *type = json_object_get(t, "type");
        const char *want = !json_is_string(type) ? NULL
                           : !strcmp(json_string_value(type), "VEN_NAME") ? ven
                           : !strcmp(json_string_value(type), "RESOURCE_NAME") ? cfg->resource
                                                                                : NULL;
        /* values not a list (a plain string) cannot be judged: as the docs say of such
         * targets, it does not exclude the event (it dropped one naming this very VEN). */
        if (!want || !json_is_array(json_object_get(t, "values")))
            continue;
        int named = 0;
        json_array_foreach(json_object_get(t, "values"), j, x)
            named |= json_is_string(x) && !strcmp(json_string_value(x), want);
        if (!named)
            return 0;
    }
    return 1;
}

/* The interval's randomizeStart (OpenADR 3.0: how much later than its start the VEN may
 * start it) in *r, seconds: its own intervalPeriod's, else the event's; 0 without one (absent
 * or null).  0 when the one given is not a finite ISO 8601 duration (*text: what it was). */
static int randomize_of(json_t *ev, json_t *iv, double *r, char *text, size_t tn)
{
    json_t *x = json_object_get(json_object_get(iv, "intervalPeriod"), "randomizeStart");
    if (!x)
        x = json_object_get(json_object_get(ev, "intervalPeriod"), "randomizeStart");
    *r = 0;
    if (!x || json_is_null(x))
        return 1;
    const char *s = json_is_string(x) ? json_string_value(x) : NULL;
    snprintf(text, tn, "%.40s", s ? s : "(not a string)");
    double d = iso_duration(s, NULL);
    if (!(d >= 0) || isinf(d))
        return 0;
    *r = d;
    return 1;
}

/* The share in [0, 1) of its randomizeStart an event starts late by: a hash (FNV-1a, then
 * splitmix64's finalizer) of the seed, the VEN's name and the VTN's event id.  Drawn once per
 * event, not per poll: the same at every poll and after a restart (a held event never moves),
 * one for all the event's intervals (they keep their spacing), and spread over the VENs of a
 * program by their names, which is what the VTN asks a randomization for; randomize_seed
 * draws another set (and a test its own). */
static double start_fraction(const pfi_ven_config *cfg, const char *event_id)
{
    const char *ven = cfg->ven_name[0] ? cfg->ven_name : cfg->client_id;
    unsigned long long h = 14695981039346656037ull;
    for (const char *p = ven;; p++) { /* its terminating 0 too: "ab"+"c" is not "a"+"bc" */
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
        if (!*p)
            break;
    }
    for (const char *p = event_id; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    unsigned long long z = h + (unsigned long long)cfg->randomize_seed * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}



/* The target the payload (type ty, value x) of an interval of event ev asks for, put in b:
 * "limit_w" or "cut".  0 when there is none: why says what is wrong, or is "" for SIMPLE level
 * 0 (normal operation: nothing to do). */
static int put_target(const pfi_ven_config *cfg, json_t *ev, const char *ty, double x, json_t *b,
                      pfi_ven_map_note *nt, char *why, size_t wn)
{
    const char *eid = json_string_value(json_object_get(ev, "id"));
    if (!strcmp(ty, "IMPORT_CAPACITY_LIMIT")) {
        const char *units;
        double wpu = watts_per_unit(ev, ty, &units);
        if (isnan(wpu)) {
            snprintf(why, wn, "event %s: %s in units %.40s (W, KW or MW)", eid, ty, units);
            return 0;
        }
        /* 1e306 kW overflows: as any limit above the site's maximum it cannot bind (not
         * taken, no error); infinity made no limit_w at all, refused as "give exactly one". */
        double w = isinf(x * wpu) && x > 0 ? DBL_MAX : x * wpu;
        if (w < 0) {
            snprintf(why, wn, "event %s: %s %g %s is negative (an import limit is 0 or more)",
                     eid, ty, x, units);
            return 0;
        }
        /* The GPUs' budget: the site's import less what its other loads draw. */
        double gpus = w - cfg->non_gpu_w;
        if (gpus < PFI_VEN_LEAST_W)
            nt->least_w = w;
        json_object_set_new(b, "limit_w", json_real(fmax(gpus, PFI_VEN_LEAST_W)));
        return 1;
    }
    if (!strcmp(ty, "SIMPLE")) {
        /* Range first: converting 1e300 to int is undefined behaviour. */
        int level = x >= 0 && x <= 3 ? (int)x : -1;
        if (level < 0 || level != x) { /* -1 equals its own marker: simple_cut[-1] was read */
            snprintf(why, wn, "event %s: SIMPLE level %g is not 0-3", eid, x);
            return 0;
        }
        why[0] = 0; /* level 0: normal operation, no event */
        if (level > 0)
            json_object_set_new(b, "cut", json_real(cfg->simple_cut[level]));
        return level > 0;
    }
    snprintf(why, wn, "event %s: unknown payload type %s (pfi acts on IMPORT_CAPACITY_LIMIT and "
             "SIMPLE, and skips the other OpenADR 3.0 types)", eid, ty);
    return 0;
}

/* One event interval -> a grid event body (NULL: nothing to do, *why set when it is an error);
 * *nt what became of it. */
json_t *pfi_ven_map(const pfi_ven_config *cfg, json_t *ev, json_t *iv, int k, double now,
                    double widen, pfi_ven_map_note *nt, char *why, size_t wn)
{
    *nt = (pfi_ven_map_note){0, 0, NAN, 0};
    double *rand_s = &nt->rand_s, *late_s = &nt->late_s;
    if (!pfi_ven_for_this(cfg, ev)) { /* another VEN's: nothing to do here */
        why[0] = 0;
        return NULL;
    }
    json_t *pl = pfi_ven_acted_payload(iv);
    json_t *type = json_object_get(pl, "type"), *val = json_array_get(json_object_get(pl, "values"), 0);
    json_t *eid = json_object_get(ev, "id");
    double t0, t1;
    if (json_is_string(type) && openadr_other_type(json_string_value(type))) {
        why[0] = 0; /* an alert's value is text: looked at before the value */
        return NULL;
    }
    if (!json_is_string(eid) || !json_is_string(type) || !json_is_number(val)) {
        snprintf(why, wn, "event %s interval %d: no id, payload type or numeric value",
                 json_is_string(eid) ? json_string_value(eid) : "?", k);
        return NULL;
    }
    /* Only a limit or a SIMPLE level is acted on: for those PT0S is infinity (duration_of). */
    int open = !strcmp(json_string_value(type), "IMPORT_CAPACITY_LIMIT") ||
               !strcmp(json_string_value(type), "SIMPLE");
    char wwhy[200];
    if (!window_of(ev, iv, k, open, now, &t0, &t1, wwhy, sizeof wwhy)) {
        snprintf(why, wn, "event %s interval %d: no usable intervalPeriod (start, ISO 8601 "
                 "duration): %s", json_string_value(eid), k, wwhy);
        return NULL;
    }
    char rtext[48];
    if (!randomize_of(ev, iv, rand_s, rtext, sizeof rtext)) {
        snprintf(why, wn, "event %s interval %d: randomizeStart %s is not an ISO 8601 duration "
                 "such as PT5M", json_string_value(eid), k, rtext);
        return NULL;
    }
    /* A shed (SIMPLE) is what a VTN staggers: its VENs' drops, and with the window shifted
     * whole (the duration kept, the intervals' spacing too) their rebounds.  A limit is a cap
     * on the site's import from its start: started late, the site would be over it for up to
     * randomizeStart, against the VTN's limit and pfi's own compliance report; the ramp
     * already brings the site down before the start.  So a limit starts on time. */
    double vtn_t0 = t0;
    if (*rand_s > 0 && !strcmp(json_string_value(type), "SIMPLE")) {
        *late_s = fmin(floor(start_fraction(cfg, json_string_value(eid)) * (*rand_s + 1)),
                       *rand_s);
        t0 += *late_s;
        if (t1 < PFI_TIME_MAX_S)
            t1 = fmin(t1 + *late_s, PFI_TIME_MAX_S);
    } else if (*rand_s > 0) {
        *late_s = -1;
    }
    t0 -= widen;
    t1 = fmin(t1 + widen, PFI_TIME_MAX_S);
    char id[PFI_EVENT_ID_MAX], src[PFI_EVENT_SOURCE_MAX], key[PFI_VEN_KEY_MAX + 1];
    pfi_ven_vtn_key(json_string_value(eid), key, sizeof key);
    snprintf(id, sizeof id, "oadr-%s-%d", key, k);
    snprintf(src, sizeof src, "openadr:%.50s", cfg->program);
    json_t *pr = json_object_get(ev, "priority");
    /* Bounded before it is negated: OpenADR sets no maximum, and a value past an int
     * turned positive in the cast (and the event was refused).  The VTN's numbers are read as
     * reals (ven.c: an integer past 64 bits made the page "not JSON"): a whole one is taken. */
    double pv = json_is_number(pr) ? json_number_value(pr) : 0;
    nt->priority_ignored = pr && !json_is_null(pr) && !(json_is_number(pr) && isfinite(pv) &&
                                                         pv == floor(pv));
    if (nt->priority_ignored)
        pv = 0;
    int prio = pv > 1000 ? -1000 : pv < -1000 ? 1000 : -(int)pv;
    json_t *b = json_pack("{s:s, s:f, s:f, s:f, s:s, s:i, s:s}", "id", id, "start", t0, "end",
                          t1, "ramp_s", cfg->ramp_s, "source", src, "priority", prio, "sla",
                          cfg->sla_yield ? "yield" : "keep");
    /* The VTN's own start and the offset drawn, kept with the event: its start alone does not
     * say, to an audit against the VTN, that (and by how much) it was moved. */
    json_object_set_new(b, "openadr",
                        json_pack("{s:s, s:i, s:f, s:f, s:f}", "event_id", key, "interval", k,
                                  "vtn_start", vtn_t0, "randomize_start_s", *rand_s,
                                  "randomized_s", fmax(*late_s, 0)));
    if (!put_target(cfg, ev, json_string_value(type), json_number_value(val), b, nt, why, wn)) {
        json_decref(b);
        return NULL;
    }
    return b;
}
