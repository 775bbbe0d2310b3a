/* SPDX-License-Identifier: Apache-2.0 */
/* ven.c: the OpenADR 3.0 client (a VEN), a thread of `pfi serve` or `pfi cluster serve`
 * (serve/ven.h: the host that holds the grid events gives it three callbacks).
 *
 * Every poll_s it makes sure it holds an access token (OAuth 2.0 client credentials: a form
 * POST to the token URL; refreshed a minute before it expires, or after a 401), finds its
 * program (GET /programs?programName=), reads the program's events (GET /events?programID=)
 * and turns each event interval into a grid event of the host:
 *   IMPORT_CAPACITY_LIMIT  values[0] in kW (the payload descriptor's units KW, or W) -> a limit
 *   SIMPLE                 level 1..3 -> a cut of simple_cut[level] of the host's baseline
 *                          (level 0: normal operation, no event)
 * with the configured ramp, source "openadr:<program>", priority -(OpenADR priority) (OpenADR:
 * lower binds first; pfi: higher).  An interval without its own intervalPeriod follows the
 * event's, the k-th one k durations later.  Grid event ids are "oadr-<event id>-<interval>".
 * After a grid event from the VTN is over (restored), it posts a report to the program: per
 * 1-minute interval the host's DEMAND (kW, mean draw) and USAGE (kWh), from the event's
 * compliance report.
 * Errors (VTN down, 401, malformed or unknown payloads, bad times) are counted, the last one
 * kept for GET /v1/grid/openadr, and never stop the daemon; an event already received stays
 * as last received when the VTN goes silent. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <pthread.h>

#include "serve/ven.h"
#include "store/grid.h"
#include "util/clock.h"
#include "util/http.h"
#include "util/isotime.h"
#include "util/text.h"
#include "util/token.h"
#include "util/units.h"

#define VEN_REPORTED_MAX 256

struct pfi_ven {
    pfi_ven_host host;
    pfi_ven_config cfg;
    char secret[256];
    char token[2048];
    double token_expiry;
    char program_id[128];
    pthread_t th;
    volatile int stop;
    pthread_mutex_t mu;
    long long n_polls, n_errors, n_events, n_reports;
    char last_error[300];
    char reported[VEN_REPORTED_MAX][PFI_EVENT_ID_MAX];
    int n_reported;
};

typedef struct vbuf {
    char *p;
    size_t n;
} vbuf;

static void ven_error(pfi_ven *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ven_error(pfi_ven *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&v->mu);
    vsnprintf(v->last_error, sizeof v->last_error, fmt, ap);
    v->n_errors++;
    fprintf(stderr, "%s: openadr: %s\n", v->host.name, v->last_error);
    pthread_mutex_unlock(&v->mu);
    va_end(ap);
}

/* One request to the VTN; returns the HTTP status (-1: no answer) and the body in *out. */
static long http(pfi_ven *v, const char *method, const char *url, const char *body,
                 const char *ctype, int auth, vbuf *out)
{
    pfi_http_req r = {.url = url, .method = method, .body = body, .content_type = ctype,
                      .max_reply = 8u << 20};
    pfi_http_many(NULL, &r, 1, auth ? v->token : NULL, v->cfg.timeout_s, 1);
    if (r.status < 0)
        ven_error(v, "%s %s: %s", method, url, r.err);
    out->p = r.reply; /* the caller frees it */
    out->n = r.reply ? strlen(r.reply) : 0;
    return r.status;
}

/* OAuth 2.0 client credentials, form-encoded. */
static int get_token(pfi_ven *v)
{
    char *id = pfi_http_escape(v->cfg.client_id), *sec = pfi_http_escape(v->secret);
    if (!id || !sec) {
        free(id);
        free(sec);
        return 0;
    }
    char body[1024];
    snprintf(body, sizeof body, "grant_type=client_credentials&client_id=%s&client_secret=%s",
             id, sec);
    free(id);
    free(sec);
    vbuf b = {0};
    long st = http(v, "POST", v->cfg.token_url, body, "application/x-www-form-urlencoded", 0, &b);
    json_t *d = b.p ? json_loads(b.p, 0, NULL) : NULL;
    free(b.p);
    json_t *tok = json_object_get(d, "access_token"), *exp = json_object_get(d, "expires_in");
    int ok = st == 200 && json_is_string(tok) && strlen(json_string_value(tok)) < sizeof v->token;
    if (ok) {
        snprintf(v->token, sizeof v->token, "%s", json_string_value(tok));
        double s = json_is_number(exp) ? json_number_value(exp) : 3600;
        v->token_expiry = pfi_clock_mono() + (s > 120 ? s - 60 : s / 2);
    } else if (st >= 0) {
        ven_error(v, "token from %s refused: HTTP %ld", v->cfg.token_url, st);
    }
    json_decref(d);
    return ok;
}

/* A GET of the VTN's JSON, with the token (fetched again once after a 401). */
static json_t *get_json(pfi_ven *v, const char *path)
{
    char url[1024];
    pfi_http_url(v->cfg.vtn_url, path, url, sizeof url);
    for (int attempt = 0; attempt < 2; attempt++) {
        if ((!v->token[0] || pfi_clock_mono() > v->token_expiry) && !get_token(v))
            return NULL;
        vbuf b = {0};
        long st = http(v, "GET", url, NULL, NULL, 1, &b);
        if (st == 401) {
            free(b.p);
            v->token[0] = 0;
            continue;
        }
        json_t *d = st == 200 && b.p ? json_loads(b.p, 0, NULL) : NULL;
        if (st >= 0 && !d)
            ven_error(v, "GET %s: HTTP %ld%s", path, st, st == 200 ? ", not JSON" : "");
        free(b.p);
        return d;
    }
    ven_error(v, "GET %s: 401 with a fresh token", path);
    return NULL;
}

/* "PT20M", "PT1H30M", "P1DT2H", "PT45.5S" -> seconds; -1 when malformed. */
static double iso_duration(const char *s)
{
    if (!s || *s != 'P')
        return -1;
    double total = 0;
    int in_time = 0, any = 0;
    for (const char *p = s + 1; *p;) {
        if (*p == 'T') {
            in_time = 1;
            p++;
            continue;
        }
        char *end;
        double x = strtod(p, &end);
        if (end == p || !isfinite(x) || x < 0)
            return -1;
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
    return any ? total : -1;
}

/* The interval's window: its own intervalPeriod, else the event's shifted k durations. */
static int window_of(json_t *ev, json_t *iv, int k, double *t0, double *t1)
{
    json_t *ip = json_object_get(iv, "intervalPeriod");
    int own = json_is_object(ip);
    if (!own)
        ip = json_object_get(ev, "intervalPeriod");
    json_t *st = json_object_get(ip, "start"), *du = json_object_get(ip, "duration");
    double d = iso_duration(json_is_string(du) ? json_string_value(du) : NULL);
    pfi_err e = {0};
    if (!json_is_string(st) || pfi_time_parse(json_string_value(st), 0, t0, &e) != PFI_OK ||
        !(d > 0))
        return 0;
    if (!own)
        *t0 += k * d;
    *t1 = *t0 + d;
    return 1;
}

/* The units of a payload type in the event's descriptors ("KW" when none is given). */
static double watts_per_unit(json_t *ev, const char *type)
{
    size_t i;
    json_t *pd;
    json_array_foreach(json_object_get(ev, "payloadDescriptors"), i, pd)
    {
        json_t *t = json_object_get(pd, "payloadType"), *u = json_object_get(pd, "units");
        if (json_is_string(t) && !strcmp(json_string_value(t), type) && json_is_string(u))
            return !strcasecmp(json_string_value(u), "W") ? 1 : 1000;
    }
    return 1000;
}

/* One event interval -> a grid event body (NULL: nothing to do, *why set when it is an error). */
static json_t *map_interval(pfi_ven *v, json_t *ev, json_t *iv, int k, char *why, size_t wn)
{
    json_t *pl = json_array_get(json_object_get(iv, "payloads"), 0);
    json_t *type = json_object_get(pl, "type"), *val = json_array_get(json_object_get(pl, "values"), 0);
    json_t *eid = json_object_get(ev, "id");
    double t0, t1;
    if (!json_is_string(eid) || !json_is_string(type) || !json_is_number(val)) {
        snprintf(why, wn, "event %s interval %d: no id, payload type or numeric value",
                 json_is_string(eid) ? json_string_value(eid) : "?", k);
        return NULL;
    }
    if (!window_of(ev, iv, k, &t0, &t1)) {
        snprintf(why, wn, "event %s interval %d: no usable intervalPeriod (start, ISO 8601 "
                 "duration)", json_string_value(eid), k);
        return NULL;
    }
    char id[PFI_EVENT_ID_MAX], src[PFI_EVENT_SOURCE_MAX];
    snprintf(id, sizeof id, "oadr-%.40s-%d", json_string_value(eid), k);
    snprintf(src, sizeof src, "openadr:%.50s", v->cfg.program);
    json_t *pr = json_object_get(ev, "priority");
    int prio = json_is_integer(pr) ? -(int)json_integer_value(pr) : 0;
    json_t *b = json_pack("{s:s, s:f, s:f, s:f, s:s, s:i}", "id", id, "start", t0, "end", t1,
                          "ramp_s", v->cfg.ramp_s, "source", src, "priority",
                          prio < -1000 ? -1000 : prio);
    double x = json_number_value(val);
    const char *ty = json_string_value(type);
    if (!strcmp(ty, "IMPORT_CAPACITY_LIMIT")) {
        json_object_set_new(b, "limit_w", json_real(x * watts_per_unit(ev, ty)));
    } else if (!strcmp(ty, "SIMPLE")) {
        int level = (int)x;
        if (level != x || level < 0 || level > 3) {
            json_decref(b);
            snprintf(why, wn, "event %s: SIMPLE level %g is not 0-3", json_string_value(eid), x);
            return NULL;
        }
        if (level == 0) { /* normal operation: no event */
            json_decref(b);
            why[0] = 0;
            return NULL;
        }
        json_object_set_new(b, "cut", json_real(v->cfg.simple_cut[level]));
    } else {
        json_decref(b);
        snprintf(why, wn, "event %s: unknown payload type %s (IMPORT_CAPACITY_LIMIT, SIMPLE)",
                 json_string_value(eid), ty);
        return NULL;
    }
    return b;
}

/* The host's events now (a snapshot); *n gets how many. */
static pfi_event *held_events(pfi_ven *v, int *n)
{
    pfi_event *evs = calloc(PFI_VEN_EVENTS_MAX, sizeof *evs);
    *n = evs ? v->host.events(v->host.ctx, evs, PFI_VEN_EVENTS_MAX) : 0;
    return evs;
}

/* Whether the host already holds this event with the same window and target. */
static int same_as_held(pfi_ven *v, json_t *b)
{
    pfi_event ev;
    pfi_err e = {0};
    if (pfi_grid_event_from_json(b, 0, &ev, &e) != PFI_OK)
        return 0;
    int n, same = 0;
    pfi_event *evs = held_events(v, &n);
    int at = evs ? pfi_event_list_find(evs, n, ev.id) : -1;
    if (at >= 0) {
        const pfi_event *h = &evs[at];
        same = h->start_s == ev.start_s && h->end_s == ev.end_s && h->kind == ev.kind &&
               (ev.kind == PFI_EVENT_CUT ? h->cut == ev.cut : h->limit_w == ev.limit_w);
    }
    free(evs);
    return same;
}

static void take_events(pfi_ven *v, json_t *events)
{
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev)
    {
        size_t k;
        json_t *iv;
        json_array_foreach(json_object_get(ev, "intervals"), k, iv)
        {
            char why[300] = "";
            json_t *b = map_interval(v, ev, iv, (int)k, why, sizeof why);
            if (!b) {
                if (why[0])
                    ven_error(v, "%s: ignored, nothing changed", why);
                continue;
            }
            if (same_as_held(v, b)) {
                json_decref(b);
                continue;
            }
            pfi_err e = {0};
            if (v->host.add(v->host.ctx, b, &e) != PFI_OK) {
                ven_error(v, "event %s refused: %s", json_string_value(json_object_get(b, "id")),
                          e.msg);
            } else {
                pthread_mutex_lock(&v->mu);
                v->n_events++;
                pthread_mutex_unlock(&v->mu);
            }
            json_decref(b);
        }
    }
}

/* The report of a finished event: DEMAND (kW) and USAGE (kWh) per 1-minute interval. */
static json_t *report_body(pfi_ven *v, json_t *rep, const char *id)
{
    json_t *ivs = json_array(), *c = json_object_get(rep, "compliance");
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(c, "intervals"), i, x)
    {
        double t0 = json_number_value(json_object_get(x, "t0")),
               t1 = json_number_value(json_object_get(x, "t1"));
        json_t *m = json_object_get(x, "mean_w");
        if (!json_is_number(m))
            continue;
        double kw = json_number_value(m) / 1000;
        char start[40], dur[32];
        pfi_time_format(t0, start, sizeof start);
        snprintf(dur, sizeof dur, "PT%.0fS", t1 - t0);
        json_array_append_new(
            ivs, json_pack("{s:i, s:{s:s, s:s}, s:[{s:s, s:[f]}, {s:s, s:[f]}]}", "id", (int)i,
                           "intervalPeriod", "start", start, "duration", dur, "payloads",
                           "type", "DEMAND", "values", kw, "type", "USAGE", "values",
                           kw * (t1 - t0) / 3600));
    }
    const char *dash = strchr(id + 5, '-');
    char eid[128];
    snprintf(eid, sizeof eid, "%.*s", dash ? (int)(strrchr(id, '-') - (id + 5)) : 0, id + 5);
    char name[160];
    snprintf(name, sizeof name, "pfi %s: max excess %.0f W, %.0f s over target", id,
             json_number_value(json_object_get(c, "max_excess_w")),
             json_number_value(json_object_get(c, "seconds_over_target")));
    return json_pack("{s:s, s:s, s:s, s:s, s:[{s:s, s:o}]}", "programID", v->program_id,
                     "eventID", eid, "clientName", v->cfg.client_id, "reportName", name,
                     "resources", "resourceName", v->cfg.resource, "intervals", ivs);
}

static void post_reports(pfi_ven *v)
{
    double now = pfi_clock_wall();
    int n_held, n = 0;
    pfi_event *evs = held_events(v, &n_held);
    char (*ids)[PFI_EVENT_ID_MAX] = calloc(PFI_VEN_EVENTS_MAX, sizeof *ids);
    for (int i = 0; evs && ids && i < n_held; i++) {
        /* Restored: the end plus its ramp-up (a site of no bound restores over the ramp). */
        pfi_event_site s = pfi_event_site_default(1e12);
        if (!strncmp(evs[i].id, "oadr-", 5) && now > pfi_event_restored_s(&evs[i], &s) + 2)
            snprintf(ids[n++], sizeof ids[0], "%s", evs[i].id);
    }
    free(evs);
    for (int k = 0; k < n; k++) {
        int done = 0;
        for (int r = 0; r < v->n_reported; r++)
            done |= !strcmp(v->reported[r], ids[k]);
        if (done)
            continue;
        pfi_err e = {0};
        json_t *rep = v->host.report(v->host.ctx, ids[k], &e);
        if (!rep) {
            ven_error(v, "report of %s: %s", ids[k], e.msg);
            continue;
        }
        json_t *body = report_body(v, rep, ids[k]);
        json_decref(rep);
        char *text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        char url[1024];
        pfi_http_url(v->cfg.vtn_url, "/reports", url, sizeof url);
        vbuf b = {0};
        long st = text ? http(v, "POST", url, text, "application/json", 1, &b) : -1;
        free(text);
        free(b.p);
        if (st == 200 || st == 201) {
            if (v->n_reported < VEN_REPORTED_MAX)
                snprintf(v->reported[v->n_reported++], sizeof v->reported[0], "%s", ids[k]);
            pthread_mutex_lock(&v->mu);
            v->n_reports++;
            pthread_mutex_unlock(&v->mu);
        } else if (st >= 0) {
            ven_error(v, "report of %s: HTTP %ld", ids[k], st);
        }
    }
    free(ids);
}

static void poll_once(pfi_ven *v)
{
    pthread_mutex_lock(&v->mu);
    v->n_polls++;
    pthread_mutex_unlock(&v->mu);
    if (!v->program_id[0]) {
        char *q = pfi_http_escape(v->cfg.program);
        char path[512];
        snprintf(path, sizeof path, "/programs?programName=%s", q ? q : "");
        free(q);
        json_t *d = get_json(v, path);
        size_t i;
        json_t *p;
        json_array_foreach(d, i, p)
        {
            json_t *nm = json_object_get(p, "programName"), *id = json_object_get(p, "id");
            if (json_is_string(nm) && json_is_string(id) &&
                !strcmp(json_string_value(nm), v->cfg.program))
                snprintf(v->program_id, sizeof v->program_id, "%s", json_string_value(id));
        }
        if (d && !v->program_id[0])
            ven_error(v, "no program named %s on the VTN", v->cfg.program);
        json_decref(d);
        if (!v->program_id[0])
            return;
    }
    char path[300];
    snprintf(path, sizeof path, "/events?programID=%s", v->program_id);
    json_t *evs = get_json(v, path);
    if (json_is_array(evs))
        take_events(v, evs);
    else if (evs)
        ven_error(v, "GET %s: not an array of events", path);
    json_decref(evs);
    post_reports(v);
}

static void *ven_main(void *arg)
{
    pfi_ven *v = arg;
    while (!v->stop) {
        poll_once(v);
        /* Sleeps of at most 0.1 s of real time, so a stop is prompt. */
        double until = pfi_clock_mono() + v->cfg.poll_s, left;
        while (!v->stop && (left = until - pfi_clock_mono()) > 0)
            pfi_clock_sleep(fmin(left, 0.1 * pfi_clock_scale()));
    }
    return NULL;
}

void pfi_ven_config_defaults(pfi_ven_config *c, const char *resource)
{
    memset(c, 0, sizeof *c);
    c->poll_s = 10;
    c->timeout_s = 5;
    c->ramp_s = 300;
    c->simple_cut[1] = 0.10;
    c->simple_cut[2] = 0.20;
    c->simple_cut[3] = 0.30;
    snprintf(c->resource, sizeof c->resource, "%s", resource);
}

int pfi_ven_config_set(pfi_ven_config *c, const char *k, const char *v, pfi_err *err)
{
    struct {
        const char *key;
        char *dst;
        size_t n;
    } strs[] = {{"vtn_url", c->vtn_url, sizeof c->vtn_url},
                {"token_url", c->token_url, sizeof c->token_url},
                {"client_id", c->client_id, sizeof c->client_id},
                {"secret_file", c->secret_file, sizeof c->secret_file},
                {"program", c->program, sizeof c->program},
                {"resource", c->resource, sizeof c->resource}};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (!strcmp(k, strs[i].key)) {
            if (strlen(v) >= strs[i].n)
                return pfi_err_set(err, PFI_EINVAL, "%s: too long", k);
            snprintf(strs[i].dst, strs[i].n, "%s", v);
            return PFI_OK;
        }
    double *num = !strcmp(k, "poll") ? &c->poll_s : !strcmp(k, "timeout") ? &c->timeout_s
                  : !strcmp(k, "ramp") ? &c->ramp_s : NULL;
    if (num) { /* checked before it is kept: a bad value changes nothing */
        double d;
        int rc = pfi_parse_duration(v, &d, err);
        if (rc != PFI_OK)
            return rc;
        if (num == &c->poll_s && !(d >= 0.1 && d <= 86400))
            return pfi_err_set(err, PFI_ERANGE, "poll: must be 0.1 s to 1 day, not %s", v);
        if (num == &c->timeout_s && !(d >= 0.1 && d <= 600))
            return pfi_err_set(err, PFI_ERANGE, "timeout: must be 0.1 s to 10 min, not %s", v);
        if (num == &c->ramp_s && !(d >= 0 && d <= 86400))
            return pfi_err_set(err, PFI_ERANGE, "ramp: must be 0 to 1 day, not %s", v);
        *num = d;
        return PFI_OK;
    }
    if (!strncmp(k, "simple_cut_", 11) && k[11] >= '1' && k[11] <= '3' && !k[12]) {
        int pct = 0;
        double x;
        if (pfi_parse_power(v, &x, &pct, err) != PFI_OK || !pct || !(x > 0 && x < 1))
            return pfi_err_set(err, PFI_EINVAL, "%s: expected a percentage above 0%% and below "
                               "100%% like 20%%, not '%s'", k, v);
        c->simple_cut[k[11] - '0'] = x;
        return PFI_OK;
    }
    return pfi_err_set(err, PFI_EINVAL, "unknown key '%s' (vtn_url, token_url, client_id, "
                       "secret_file, program, resource, poll, timeout, ramp, simple_cut_1..3)",
                       k);
}

int pfi_ven_config_load(pfi_ven_config *c, const char *path, pfi_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return pfi_err_set(err, PFI_ENOENT, "openadr config %s: cannot open it", path);
    char line[1024];
    int no = 0, rc = PFI_OK;
    while (rc == PFI_OK && fgets(line, sizeof line, f)) {
        no++;
        char *s = pfi_trim(line), *eq = strchr(s, '=');
        if (!*s || *s == '#')
            continue;
        if (!eq) {
            rc = pfi_err_set(err, PFI_EINVAL, "%s:%d: expected key = value", path, no);
            break;
        }
        *eq = 0;
        rc = pfi_ven_config_set(c, pfi_trim(s), pfi_trim(eq + 1), err);
        if (rc != PFI_OK)
            pfi_err_prefix(err, "%s:%d: ", path, no);
    }
    fclose(f);
    return rc;
}

int pfi_ven_config_check(const pfi_ven_config *cfg, pfi_err *err)
{
    if (!cfg->vtn_url[0] || !cfg->client_id[0] || !cfg->program[0] || !cfg->secret_file[0])
        return pfi_err_set(err, PFI_EINVAL, "openadr: the VTN URL, client id, secret file and "
                                            "program are all needed");
    if (!(cfg->poll_s >= 0.1) || !(cfg->ramp_s >= 0 && cfg->ramp_s <= 86400))
        return pfi_err_set(err, PFI_EINVAL, "openadr: poll interval >= 0.1 s, ramp 0-86400 s");
    for (int l = 1; l <= 3; l++)
        if (!(cfg->simple_cut[l] > 0 && cfg->simple_cut[l] < 1))
            return pfi_err_set(err, PFI_EINVAL, "openadr: SIMPLE level %d's cut %g is outside "
                                                "(0, 1)", l, cfg->simple_cut[l]);
    return PFI_OK;
}

int pfi_ven_start(const pfi_ven_host *host, const pfi_ven_config *cfg, pfi_ven **out,
                  pfi_err *err)
{
    *out = NULL;
    int rc = pfi_ven_config_check(cfg, err);
    if (rc != PFI_OK)
        return rc;
    pfi_ven *v = calloc(1, sizeof *v);
    if (!v)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    v->host = *host;
    v->cfg = *cfg;
    if (!v->cfg.token_url[0])
        pfi_http_url(cfg->vtn_url, "/auth/token", v->cfg.token_url, sizeof v->cfg.token_url);
    rc = pfi_token_load(cfg->secret_file, v->secret, sizeof v->secret, err);
    if (rc != PFI_OK) {
        free(v);
        return pfi_err_prefix(err, "openadr client secret: ");
    }
    pthread_mutex_init(&v->mu, NULL);
    if (pthread_create(&v->th, NULL, ven_main, v) != 0) {
        pthread_mutex_destroy(&v->mu);
        free(v);
        return pfi_err_set(err, PFI_EINTERNAL, "cannot start the OpenADR client");
    }
    *out = v;
    return PFI_OK;
}

void pfi_ven_stop(pfi_ven *v)
{
    if (!v)
        return;
    v->stop = 1;
    pthread_join(v->th, NULL);
    pthread_mutex_destroy(&v->mu);
    free(v);
}

void *pfi_ven_json(pfi_ven *v)
{
    if (!v)
        return json_pack("{s:b}", "enabled", 0);
    pthread_mutex_lock(&v->mu);
    json_t *o = json_pack("{s:b, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:s}", "enabled", 1, "vtn",
                          v->cfg.vtn_url, "program", v->cfg.program, "program_id",
                          v->program_id, "polls", (json_int_t)v->n_polls, "errors",
                          (json_int_t)v->n_errors, "events_taken", (json_int_t)v->n_events,
                          "reports_posted", (json_int_t)v->n_reports, "last_error",
                          v->last_error);
    pthread_mutex_unlock(&v->mu);
    return o;
}
