/* SPDX-License-Identifier: Apache-2.0 */
/* ven.c: the OpenADR 3.0 client (a VEN), a thread of `pfi serve` or `pfi cluster serve`
 * (serve/ven.h: the host that holds the grid events gives it three callbacks).
 *
 * Every poll_s it makes sure it holds an access token (OAuth 2.0 client credentials: a form
 * POST to the token URL; refreshed a minute before it expires, or after a 401), finds its
 * program (GET /programs?programName=), reads the program's events (GET /events?programID=;
 * those of other programs a VTN lists anyway are left out) and turns each event interval into
 * a grid event of the host (ven_map.c reads them):
 *   IMPORT_CAPACITY_LIMIT  values[0] in the payload descriptor's units (W, KW, MW; KW when
 *                          none; other units refused) -> a limit
 *   SIMPLE                 level 1..3 -> a cut of simple_cut[level] of the host's baseline
 *                          (level 0: normal operation, no event)
 * with the configured ramp, source "openadr:<program>", priority -(OpenADR priority) (OpenADR:
 * lower binds first; pfi: higher).  A randomizeStart delays a SIMPLE interval by a share of it
 * drawn once per event (start_fraction); a limit starts on time (pfi_ven_map).  An interval
 * without its own intervalPeriod follows the event's, the k-th one k durations later.  Grid
 * event ids are "oadr-<event id>-<interval>".
 * After a grid event from the VTN is over (restored), it posts a report to the program: per
 * 1-minute interval the host's DEMAND (kW, mean draw) and USAGE (kWh), from the event's
 * compliance report.
 * An interval whose window is over is not taken; a held one the VTN ends early is ended now;
 * a finished one is let go an hour after its restore (let_go_finished).
 * Errors (VTN down, 401, malformed or unknown payloads, bad times) are counted, the last one
 * kept for GET /v1/grid/openadr, and never stop the daemon; an event already received stays
 * as last received when the VTN goes silent. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <pthread.h>

#include "serve/ven.h"
#include "serve/ven_map.h"
#include "store/grid.h"
#include "util/clock.h"
#include "util/http.h"
#include "util/isotime.h"
#include "util/num.h"
#include "util/text.h"
#include "util/token.h"
#include "util/units.h"

#define VEN_PAGE 50       /* events per GET: the largest limit the API allows */
/* Pages read per poll at most, a backstop: a VTN that ignores skip is caught by its repeated
 * ids (all_events), and this only stops one whose pages never end.  Past it the listing is
 * incomplete.  It was 40 pages, the whole check: a VTN that honours skip and keeps its history
 * lists 2,000 events within three weeks of quarter-hours, and every event after them (the new
 * ones) was never read. */
#define VEN_PAGES_MAX 1000
#define VEN_SAID_MAX 1024   /* errors remembered as logged */
#define VEN_SAID_S 3600.0   /* an error logged is logged again after this long */

struct pfi_ven {
    pfi_ven_host host;
    pfi_ven_config cfg;
    char secret[256];
    char token[16384]; /* a JWT with many claims (Azure AD and the like) passes 2 KB */
    double token_expiry;
    char program_id[128];
    json_t *program_pd; /* the program's payloadDescriptors (NULL: none) */
    char ven_id[128];  /* the VTN's id of this VEN once registered ("" before) */
    int register_off;  /* the VTN does not offer registration, or refused it */
    pthread_t th;
    volatile int stop;
    volatile int wake;     /* a notification came: poll at once */
    char cb_token[65];     /* the callback URL's secret part ("" without callback_url) */
    char sub_id[128];      /* the VTN's id of the subscription ("" before) */
    int sub_off;           /* the VTN does not offer subscriptions, or refused one */
    long long n_notified;
    pthread_mutex_t mu;
    long long n_polls, n_errors, n_events, n_reports, n_cancelled;
    uint32_t said_hash[VEN_SAID_MAX]; /* errors logged lately (said_lately) */
    double said_at[VEN_SAID_MAX];     /*   and when (monotonic; 0: free) */
    double full_said_at;              /* when "too many messages" was (monotonic; 0: never) */
    /* The local clock against the VTN's (its answers' Date header): local - VTN, NAN before
     * the first answer; skewed while beyond cfg.max_skew_s, with n_skewed answers so far. */
    double skew_s;
    int skewed;
    int too_far;  /* skewed past what windows are widened for (widen_s): a wrong clock */
    long long n_skewed;
    char last_error[300];
    double last_error_at; /* wall clock of last_error (0: none yet) */
    double down_since;    /* wall clock the VTN stopped answering (0: it answers) */
    /* Events whose report the VTN took, among those the host still holds: an event is
     * reported once, and the set never outgrows the host's list (PFI_VEN_EVENTS_MAX). */
    char reported[PFI_VEN_EVENTS_MAX][PFI_EVENT_ID_MAX];
    int n_reported;
    /* Held events (interval ids) the last complete listing did not ask for: one is taken as
     * withdrawn only when the next complete listing, polled at once, does not either.  A
     * listing read in pages can skip an event when another is deleted between two pages. */
    char missing[PFI_VEN_EVENTS_MAX][PFI_EVENT_ID_MAX];
    int n_missing;
    /* Events of other programs in the last listing (a VTN that ignores the programID filter),
     * and whether that was logged: once, not at every poll. */
    long long n_other_program;
    int other_program_told;
};

typedef struct vbuf {
    char *p;
    size_t n;
} vbuf;

/* Whether the same message was logged within the last VEN_SAID_S (mu held); else it is noted
 * as said now.  A refused interval is refused again at every poll while the VTN lists it:
 * logged each time, that was 8,640 lines a day of one event at the default 10 s poll.  A
 * message logged lately is never forgotten for a newer one: with a few more messages than
 * places, forgetting the oldest logged every one of them at every poll.  Past VEN_SAID_MAX
 * messages within the hour the rest are not logged (they are still counted and kept as
 * last_error), and the log says so once an hour. */
static int said_lately(pfi_ven *v, const char *msg)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
        h = (h ^ *p) * 16777619u;
    double now = pfi_clock_mono();
    int free_at = -1;
    for (int k = 0; k < VEN_SAID_MAX; k++) {
        int fresh = v->said_at[k] > 0 && now - v->said_at[k] < VEN_SAID_S;
        if (fresh && v->said_hash[k] == h)
            return 1;
        if (!fresh && free_at < 0)
            free_at = k;
    }
    if (free_at < 0) {
        if (!(v->full_said_at > 0 && now - v->full_said_at < VEN_SAID_S)) {
            v->full_said_at = now;
            fprintf(stderr, "%s: openadr: more than %d different messages within the hour: "
                    "the others are counted in errors and kept as last_error, not logged\n",
                    v->host.name, VEN_SAID_MAX);
        }
        return 1;
    }
    v->said_hash[free_at] = h;
    v->said_at[free_at] = now;
    return 0;
}

/* The most clock skew event windows are widened for (see widen_s). */
#define VEN_WIDEN_MAX_S 3600.0

/* An error: counted, kept as the last one, and logged (the same message once an hour). */
static void ven_error(pfi_ven *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ven_error(pfi_ven *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&v->mu);
    vsnprintf(v->last_error, sizeof v->last_error, fmt, ap);
    v->last_error_at = pfi_clock_wall();
    v->n_errors++;
    if (!said_lately(v, v->last_error))
        fprintf(stderr, "%s: openadr: %s\n", v->host.name, v->last_error);
    pthread_mutex_unlock(&v->mu);
    va_end(ap);
}

/* The VTN gave no answer, or one that says it cannot serve (5xx): from when, for the word
 * when it answers again (an old last_error read as a current outage). */
static void vtn_down(pfi_ven *v)
{
    pthread_mutex_lock(&v->mu);
    if (!(v->down_since > 0))
        v->down_since = pfi_clock_wall();
    pthread_mutex_unlock(&v->mu);
}

/* The VTN answered a request as asked: said when it had not, once an hour at most (a VTN
 * that fails every other request said it at every recovery). */
static void vtn_up(pfi_ven *v)
{
    pthread_mutex_lock(&v->mu);
    double since = v->down_since;
    v->down_since = 0;
    int said = since > 0 && said_lately(v, "the VTN answers again");
    pthread_mutex_unlock(&v->mu);
    if (since > 0 && !said) {
        char at[40];
        pfi_time_format(since, at, sizeof at);
        fprintf(stderr, "%s: openadr: the VTN answers again (not since %s, %.0f s)\n",
                v->host.name, at, fmax(pfi_clock_wall() - since, 0));
    }
}

/* The widening for a skew: whole minutes after the second the Date header cannot resolve (so
 * a jitter of a second does not change it at every poll). */
static double widen_minutes(double skew)
{
    return ceil(fmax(fabs(skew) - 1, 0) / 60) * 60;
}

/* An answer's Date (whole seconds of the VTN's clock: its time was in [date, date + 1)). */
static void note_clock(pfi_ven *v, double date_s)
{
    double skew = pfi_clock_wall() - (date_s + 0.5);
    pthread_mutex_lock(&v->mu);
    int was = v->skewed, was_far = v->too_far;
    v->skew_s = skew;
    v->skewed = fabs(skew) > v->cfg.max_skew_s;
    /* Judged on the widening in whole minutes (jitter-free but at a minute's edge), and a
     * minute apart each way: a clock one hour off (a time zone's mistake) read 3600 s +- 0.5
     * and flipped between widened and not at every poll, the GPUs' caps with it. */
    double w = widen_minutes(skew);
    v->too_far = v->skewed && w > VEN_WIDEN_MAX_S + (was_far ? 0 : 60);
    if (v->skewed)
        v->n_skewed++;
    pthread_mutex_unlock(&v->mu);
    if (v->too_far && !was_far)
        ven_error(v, "clock skew: the local clock is %+.0f s from the VTN's (tolerance %g s), "
                  "past the %.0f s pfi widens event windows for: one of the clocks is wrong "
                  "(set it right, NTP); windows are taken as the VTN states them",
                  skew, v->cfg.max_skew_s, VEN_WIDEN_MAX_S);
    else if (v->skewed && (!was || (was_far && !v->too_far)))
        ven_error(v, "clock skew: the local clock is %+.0f s from the VTN's (tolerance %g s): "
                  "event windows are widened by it on both sides", skew, v->cfg.max_skew_s);
    else if (was && !v->skewed)
        fprintf(stderr, "%s: openadr: clock skew back within %g s (%+.1f s)\n", v->host.name,
                v->cfg.max_skew_s, skew);
}

/* While the clocks disagree beyond the tolerance, an event window is widened by the skew on
 * both sides, rounded up to whole minutes after the second the Date header cannot resolve (so
 * a jitter of a second does not change it at every poll): the target then holds over the
 * VTN's window whichever clock is right. */
static double widen_s(pfi_ven *v)
{
    pthread_mutex_lock(&v->mu);
    /* Past an hour it is no drift but a wrong clock (an RTC reset, a VM from a snapshot): a
     * VTN two days behind made an event of tomorrow active now and for four days, one in 2001
     * for 51 years; windows are then taken as stated, the skew said. */
    double w = v->skewed && !v->too_far ? widen_minutes(v->skew_s) : 0;
    pthread_mutex_unlock(&v->mu);
    return w;
}

/* One request to the VTN; returns the HTTP status (-1: no answer) and the body in *out.  A stop
 * gives it up at once (a stalled VTN held a stopping daemon for the whole timeout), and that is
 * no error of the VTN's: not counted, not logged. */
static long http(pfi_ven *v, const char *method, const char *url, const char *body,
                 const char *ctype, int auth, vbuf *out)
{
    pfi_http_req r = {.url = url, .method = method, .body = body, .content_type = ctype,
                      .max_reply = 8u << 20, .cancel = &v->stop};
    pfi_http_many(NULL, &r, 1, auth ? v->token : NULL, v->cfg.timeout_s, 1);
    if (r.status < 0 && !r.cancelled) {
        vtn_down(v);
        ven_error(v, "%s %s: %s", method, url, r.err);
    } else if (r.status >= 500) {
        vtn_down(v);
    }
    if (isfinite(r.date_s))
        note_clock(v, r.date_s);
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
    if (st == 200 && json_is_string(tok) && !ok) {
        ven_error(v, "token from %s refused: its access_token is %zu bytes, longer than the %zu "
                  "pfi takes", v->cfg.token_url, strlen(json_string_value(tok)),
                  sizeof v->token - 1);
    } else if (st == 200 && !ok) {
        ven_error(v, "token from %s refused: HTTP 200 without an access_token string",
                  v->cfg.token_url);
    } else if (ok) {
        snprintf(v->token, sizeof v->token, "%s", json_string_value(tok));
        double s = json_is_number(exp) ? json_number_value(exp) : 3600;
        v->token_expiry = pfi_clock_mono() + (s > 120 ? s - 60 : s / 2);
    } else if (st >= 0) {
        ven_error(v, "token from %s refused: HTTP %ld", v->cfg.token_url, st);
    }
    json_decref(d);
    return ok;
}

/* A request to the VTN with the token (fetched again once after a 401) and its JSON answer
 * (NULL unless the status is 200 or 201 and the body JSON); *status (may be NULL) gets the
 * status, -1 when there was none (or the client is stopping: nothing is sent then).  Errors
 * are counted unless the status is in quiet (a 0-terminated list, may be NULL): the caller
 * handles those. */
static json_t *call_json(pfi_ven *v, const char *method, const char *path, const char *body,
                         const long *quiet, long *status)
{
    char url[1024];
    pfi_http_url(v->cfg.vtn_url, path, url, sizeof url);
    long st = -1;
    json_t *d = NULL;
    for (int attempt = 0; attempt < 2 && !v->stop; attempt++) {
        if ((!v->token[0] || pfi_clock_mono() > v->token_expiry) && !get_token(v))
            break;
        vbuf b = {0};
        st = http(v, method, url, body, body ? "application/json" : NULL, 1, &b);
        if (st == 401 && attempt == 0) {
            free(b.p);
            v->token[0] = 0;
            continue;
        }
        /* An integer past 64 bits is JSON all the same (a priority of 10^20 made the whole page
         * "not JSON": its new events not taken, its withdrawn ones not cancelled): read as a
         * real, and the field's own check judges it.  The parser's reason is said. */
        json_error_t je = {0};
        d = (st == 200 || st == 201) && b.p
                ? json_loads(b.p, JSON_DECODE_INT_AS_REAL, &je)
                : NULL;
        if (d)
            vtn_up(v);
        int q = 0;
        for (int i = 0; quiet && quiet[i]; i++)
            q |= quiet[i] == st;
        char why[220] = ", not JSON";
        if ((st == 200 || st == 201) && b.p && !d)
            snprintf(why, sizeof why, ", not JSON (line %d: %s)", je.line, je.text);
        if (st >= 0 && !d && !q)
            ven_error(v, "%s %s: HTTP %ld%s", method, path, st,
                      st == 401 ? " with a fresh token"
                      : st == 200 || st == 201 ? why : "");
        free(b.p);
        break;
    }
    if (status)
        *status = st;
    return d;
}

static json_t *get_json(pfi_ven *v, const char *path)
{
    return call_json(v, "GET", path, NULL, NULL, NULL);
}

/* Registration, once: the VEN (venName) with its resource, found by name, else created (POST
 * /vens), and the resource added to a VEN found without it (POST /vens/{id}/resources).  A VTN
 * that does not offer it or refuses it (403, 404, 405, 501) is told once and not asked again;
 * other failures are tried again at the next poll.  Events are polled either way. */
static void register_ven(pfi_ven *v)
{
    static const long off[] = {403, 404, 405, 501, 0};
    if (v->ven_id[0] || v->register_off)
        return;
    char *q = pfi_http_escape(v->cfg.ven_name);
    char path[512], id[128] = "";
    snprintf(path, sizeof path, "/vens?venName=%s", q ? q : "");
    free(q);
    long st;
    json_t *d = call_json(v, "GET", path, NULL, off, &st), *found = NULL;
    size_t i;
    json_t *x;
    json_array_foreach(d, i, x)
    {
        json_t *nm = json_object_get(x, "venName");
        if (json_is_string(nm) && !strcmp(json_string_value(nm), v->cfg.ven_name) &&
            json_is_string(json_object_get(x, "id")))
            found = x;
    }
    int has_resource = 0;
    if (found) {
        snprintf(id, sizeof id, "%s", json_string_value(json_object_get(found, "id")));
        json_array_foreach(json_object_get(found, "resources"), i, x)
        {
            json_t *rn = json_object_get(x, "resourceName");
            has_resource |= json_is_string(rn) && !strcmp(json_string_value(rn), v->cfg.resource);
        }
    }
    json_decref(d);
    if (st != 200) {
        if (st == 403 || st == 404 || st == 405 || st == 501) {
            v->register_off = 1;
            ven_error(v, "VEN registration not offered by the VTN (GET /vens: HTTP %ld): events "
                      "are polled without it", st);
        }
        return;
    }
    char *body = NULL;
    json_t *r = NULL;
    if (!found) {
        json_t *b = json_pack("{s:s, s:s, s:[{s:s, s:s}]}", "objectType", "VEN", "venName",
                              v->cfg.ven_name, "resources", "objectType", "RESOURCE",
                              "resourceName", v->cfg.resource);
        body = json_dumps(b, JSON_COMPACT);
        json_decref(b);
        r = body ? call_json(v, "POST", "/vens", body, off, &st) : NULL;
        json_t *nid = json_object_get(r, "id");
        if (json_is_string(nid))
            snprintf(id, sizeof id, "%s", json_string_value(nid));
    } else if (!has_resource) {
        json_t *b = json_pack("{s:s, s:s, s:s}", "objectType", "RESOURCE", "resourceName",
                              v->cfg.resource, "venID", id);
        body = json_dumps(b, JSON_COMPACT);
        json_decref(b);
        snprintf(path, sizeof path, "/vens/%s/resources", id);
        r = body ? call_json(v, "POST", path, body, off, &st) : NULL;
        if (!json_is_object(r))
            id[0] = 0; /* try again at the next poll */
    }
    free(body);
    json_decref(r);
    if (st == 403 || st == 404 || st == 405 || st == 501) {
        v->register_off = 1;
        ven_error(v, "VEN registration refused by the VTN (HTTP %ld): events are polled "
                  "without it", st);
        return;
    }
    if (id[0]) {
        pthread_mutex_lock(&v->mu);
        snprintf(v->ven_id, sizeof v->ven_id, "%s", id);
        pthread_mutex_unlock(&v->mu);
    }
}

/* The host's events now (a snapshot); *n gets how many. */
static pfi_event *held_events(pfi_ven *v, int *n)
{
    pfi_event *evs = calloc(PFI_VEN_EVENTS_MAX, sizeof *evs);
    *n = evs ? v->host.events(v->host.ctx, evs, PFI_VEN_EVENTS_MAX) : 0;
    return evs;
}

/* Whether the host already holds this event with the same window, target, priority, ramps and
 * OpenADR provenance. */
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
        /* The priority and ramps too: a VTN's change of priority alone was not taken. */
        same = h->start_s == ev.start_s && h->end_s == ev.end_s && h->kind == ev.kind &&
               (ev.kind == PFI_EVENT_CUT ? h->cut == ev.cut : h->limit_w == ev.limit_w) &&
               h->priority == ev.priority && h->ramp_down_s == ev.ramp_down_s &&
               h->ramp_up_s == ev.ramp_up_s &&
               /* the SLAs too: a restart with another sla setting takes its events again */
               h->sla_yield == ev.sla_yield &&
               /* and its provenance: a limit's randomizeStart changed alone, or an event held
                * from before it was kept, is taken again to show what the VTN asks now */
               !strcmp(h->oadr_event, ev.oadr_event) && h->oadr_interval == ev.oadr_interval &&
               h->oadr_start_s == ev.oadr_start_s && h->oadr_randomize_s == ev.oadr_randomize_s &&
               h->oadr_randomized_s == ev.oadr_randomized_s;
    }
    free(evs);
    return same;
}

/* The first event of the VTN's list (NULL: none, or no list) whose id has this key (pfi_ven_vtn_key:
 * a long id is held as its hash form); an event without a string id has no key. */
static json_t *listed_event(json_t *events, const char *key)
{
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev)
    {
        json_t *id = json_object_get(ev, "id");
        char k[PFI_VEN_KEY_MAX + 1] = "";
        if (json_is_string(id))
            pfi_ven_vtn_key(json_string_value(id), k, sizeof k);
        if (k[0] && !strcmp(k, key))
            return ev;
    }
    return NULL;
}

/* Whether the VTN still asks for interval k of the event it lists under this key: the event
 * is listed, for this VEN (its targets), has that interval, and the interval is not SIMPLE
 * level 0 (normal operation).
 * A malformed or unknown interval still counts as asked for: it is refused and changes
 * nothing, so what was taken of it stays. */
static int still_listed(const pfi_ven_config *cfg, json_t *events, const char *vid, int k)
{
    json_t *ev = listed_event(events, vid);
    if (!ev || !pfi_ven_for_this(cfg, ev))
        return 0;
    json_t *iv = json_array_get(json_object_get(ev, "intervals"), (size_t)k);
    if (!iv)
        return 0;
    json_t *pl = pfi_ven_acted_payload(iv);
    json_t *type = json_object_get(pl, "type");
    json_t *val = json_array_get(json_object_get(pl, "values"), 0);
    return !(json_is_string(type) && !strcmp(json_string_value(type), "SIMPLE") &&
             json_is_number(val) && json_number_value(val) == 0);
}

/* A held event's OpenADR provenance, as pfi_ven_map gave it (none: not from a VTN). */
static void put_openadr(json_t *b, const pfi_event *h)
{
    if (h->oadr_event[0])
        json_object_set_new(b, "openadr",
                            json_pack("{s:s, s:i, s:f, s:f, s:f}", "event_id", h->oadr_event,
                                      "interval", h->oadr_interval, "vtn_start", h->oadr_start_s,
                                      "randomize_start_s", h->oadr_randomize_s, "randomized_s",
                                      h->oadr_randomized_s));
}

/* Ends a held event of the VTN now, for the reason given (the VTN withdrew it, or moved its
 * end into the past): one whose ramp-down has not begun is deleted here; one in its ramp-down
 * stops falling where it is (the budget its ramp has reached now, as a limit) and is restored
 * from there in its steps, at the pace of its full restore; one in force ends now, restored in
 * its steps as after any end.  The event keeps its provenance and a cut its baseline.  Counted
 * among the cancelled; an error is counted and logged. */
static void cancel_held(pfi_ven *v, const pfi_event *h, double now, const char *why)
{
    pfi_err e = {0};
    int rc;
    /* A second from now (of real time: on a scaled clock the host took its second as over by
     * the time it got the event, and refused it as ended). */
    double end = fmax(now, h->start_s) + pfi_clock_scale();
    double reached = INFINITY; /* in its ramp-down: where the ramp has brought the budget */
    if (now >= pfi_event_ramp_start_s(h) && now < h->start_s && v->host.site) {
        pfi_event_site site;
        v->host.site(v->host.ctx, &site);
        /* The host planned the ramp plan_ahead_s early: held at the line at now, the limits
         * stepped up at the cancellation (by 240 W in a review) before the restore. */
        reached = pfi_event_cap_at(h, &site, now + site.plan_ahead_s);
        end = now + pfi_clock_scale();
    }
    if (now < pfi_event_ramp_start_s(h) || (now < h->start_s && !isfinite(reached))) {
        rc = v->host.remove(v->host.ctx, h->id, &e);
    } else if (h->end_s <= end) {
        return; /* ending already: ended again at every poll, it never ended */
    } else {
        json_t *b = json_pack("{s:s, s:f, s:f, s:f, s:s, s:i, s:s}", "id", h->id, "start",
                              isfinite(reached) ? now : h->start_s, "end", end, "ramp_down_s",
                              isfinite(reached) ? 0 : h->ramp_down_s, "source", h->source,
                              "priority", h->priority, "sla", h->sla_yield ? "yield" : "keep");
        double up = h->ramp_up_s;
        if (isfinite(reached)) {
            /* the share of the cut the ramp took, restored in the same share of the time */
            up *= h->ramp_down_s > 0 ? (now - pfi_event_ramp_start_s(h)) / h->ramp_down_s : 1;
            json_object_set_new(b, "limit_w", json_real(reached));
        } else if (h->kind == PFI_EVENT_CUT) {
            json_object_set_new(b, "cut", json_real(h->cut)); /* its baseline is kept */
        } else {
            json_object_set_new(b, "limit_w", json_real(h->limit_w));
        }
        json_object_set_new(b, "ramp_up_s", json_real(up));
        put_openadr(b, h);
        rc = v->host.add(v->host.ctx, b, &e);
        json_decref(b);
    }
    if (rc != PFI_OK) {
        ven_error(v, "event %s, %s, not cancelled: %s", h->id, why, e.msg);
        return;
    }
    fprintf(stderr, "%s: openadr: event %s %s: cancelled%s\n", v->host.name, h->id, why,
            isfinite(reached) ? " in its ramp-down, restored from where the ramp had brought the "
                                "budget"
                              : "");
    pthread_mutex_lock(&v->mu);
    v->n_cancelled++;
    pthread_mutex_unlock(&v->mu);
}

/* An event (or one of its intervals) of this program the VTN no longer asks for: deleted there,
 * or changed to fewer intervals or to SIMPLE level 0 (it answered, so this is its word), in
 * two complete listings in a row (the second asked for at once: v->missing): one not begun
 * yet is deleted here; one in force ends now, restored in its steps as after any end; one
 * already ended is left to finish its restore. */
static void cancel_missing(pfi_ven *v, json_t *events)
{
    char src[PFI_EVENT_SOURCE_MAX];
    snprintf(src, sizeof src, "openadr:%.50s", v->cfg.program);
    int n, n_now = 0;
    pfi_event *evs = held_events(v, &n);
    char(*now_missing)[PFI_EVENT_ID_MAX] = malloc(sizeof v->missing);
    double now = pfi_clock_wall();
    for (int i = 0; evs && now_missing && i < n; i++) {
        const pfi_event *h = &evs[i];
        char vid[PFI_EVENT_ID_MAX];
        pfi_ven_vtn_id_of(h->id, vid, sizeof vid);
        if (!vid[0] || strcmp(h->source, src) || now >= h->end_s)
            continue;
        if (still_listed(&v->cfg, events, vid, atoi(strrchr(h->id, '-') + 1)))
            continue;
        int before = 0;
        for (int m = 0; m < v->n_missing && !before; m++)
            before = !strcmp(v->missing[m], h->id);
        if (before) {
            cancel_held(v, h, now, "withdrawn on the VTN");
        } else if (n_now < PFI_VEN_EVENTS_MAX) {
            snprintf(now_missing[n_now++], sizeof now_missing[0], "%s", h->id);
            v->wake = 1; /* asked again at once */
        }
    }
    if (now_missing) { /* without memory, nothing is withdrawn (next time, the same) */
        memcpy(v->missing, now_missing, (size_t)n_now * sizeof now_missing[0]);
        v->n_missing = n_now;
    }
    free(now_missing);
    free(evs);
}

/* The room is full (the host holds as many events as it can) and interval b is sooner than
 * some this client took that have not begun their ramp: the latest of those is let go (deleted
 * at the host; the VTN still lists it, and it is taken again when there is room), and 1 is
 * returned so that b is added in its place.  Taken in the VTN's order within a poll, an
 * interval due in minutes was refused at every poll behind a day-ahead listing taken at
 * earlier polls. */
static int make_room(pfi_ven *v, json_t *b, double now)
{
    int n, latest = -1;
    pfi_event *evs = held_events(v, &n);
    double start = json_number_value(json_object_get(b, "start"));
    const char *src = json_string_value(json_object_get(b, "source"));
    for (int i = 0; evs && i < n; i++) {
        const pfi_event *h = &evs[i];
        if (strcmp(h->source, src) != 0 || !(h->start_s > start) ||
            !(h->start_s - h->ramp_down_s > now))
            continue;
        if (latest < 0 || h->start_s > evs[latest].start_s)
            latest = i;
    }
    int made = 0;
    if (latest >= 0) {
        pfi_err e = {0};
        made = v->host.remove(v->host.ctx, evs[latest].id, &e) == PFI_OK;
        if (made)
            fprintf(stderr, "%s: openadr: event %s let go to make room for the sooner %s (the "
                    "host holds %d events at most; it is taken again when there is room)\n",
                    v->host.name, evs[latest].id, json_string_value(json_object_get(b, "id")),
                    n);
        else
            ven_error(v, "event %s not let go to make room: %s", evs[latest].id, e.msg);
    }
    free(evs);
    return made;
}

/* Intervals with nothing left to take (returns 1; 0: still to come or running):
 * - one whose window (b's end) is over by now: the host refuses an event that has ended, so
 *   it was refused and counted as an error at every poll while the VTN listed it (past events
 *   stay listed until deleted there), and an event in force whose end the VTN moved into the
 *   past (ended early) held on to its old end.  Held here and in force: ended now.
 * - one held here that has ended: left as it ended, as cancel_missing leaves it (a window
 *   widened by a clock skew brought a finished event back into force). */
static int interval_over(pfi_ven *v, json_t *b, double now)
{
    int n, over = json_number_value(json_object_get(b, "end")) <= now;
    pfi_event *evs = held_events(v, &n);
    int at = evs ? pfi_event_list_find(evs, n, json_string_value(json_object_get(b, "id"))) : -1;
    if (at >= 0 && strcmp(evs[at].source, json_string_value(json_object_get(b, "source"))))
        at = -1;
    if (at >= 0 && now >= evs[at].end_s)
        over = 1;
    else if (at >= 0 && over)
        cancel_held(v, &evs[at], now, "ended early on the VTN");
    free(evs);
    return over;
}

/* An interval that starts "now" keeps the start it was first taken with (its window moved
 * with every poll, and was changed at every poll): b's window is shifted to the held start. */
static void keep_held_start(pfi_ven *v, json_t *b)
{
    int n;
    pfi_event *evs = held_events(v, &n);
    int at = evs ? pfi_event_list_find(evs, n, json_string_value(json_object_get(b, "id"))) : -1;
    if (at >= 0) {
        double t0 = json_number_value(json_object_get(b, "start")),
               t1 = json_number_value(json_object_get(b, "end"));
        json_object_set_new(b, "start", json_real(evs[at].start_s));
        json_object_set_new(b, "end", json_real(t1 >= PFI_TIME_MAX_S ? t1
                                                : fmin(evs[at].start_s + (t1 - t0),
                                                       PFI_TIME_MAX_S)));
        json_t *oa = json_object_get(b, "openadr"); /* the VTN's start too: "now" then */
        if (isfinite(evs[at].oadr_start_s))
            json_object_set_new(oa, "vtn_start", json_real(evs[at].oadr_start_s));
    }
    free(evs);
}

/* A limit above the site's maximum (the host's PFI_ERANGE, its one use) cannot bind: the site
 * never draws more.  A VTN's import limit covers the whole site, so one above what its GPUs
 * can draw is ordinary; it was refused and counted as an error at every poll, and a held
 * limit the VTN raised that far was kept at its old value.  Not taken, no error; held: ended
 * as a withdrawn event is. */
static void above_maximum(pfi_ven *v, json_t *b)
{
    int n;
    pfi_event *evs = held_events(v, &n);
    int at = evs ? pfi_event_list_find(evs, n, json_string_value(json_object_get(b, "id"))) : -1;
    if (at >= 0 && !strcmp(evs[at].source, json_string_value(json_object_get(b, "source"))))
        cancel_held(v, &evs[at], pfi_clock_wall(), "raised above the site's maximum");
    free(evs);
}

/* An interval taken (new or changed) with a randomizeStart: what became of it, in the log
 * (once per take, not per poll).  The grid event's start is the effective one. */
static void note_randomized(pfi_ven *v, json_t *b, const pfi_ven_map_note *nt)
{
    double rand_s = nt->rand_s, late_s = nt->late_s;
    if (!(rand_s > 0))
        return;
    char at[40];
    pfi_time_format(json_number_value(json_object_get(b, "start")), at, sizeof at);
    const char *id = json_string_value(json_object_get(b, "id"));
    if (late_s >= 0)
        fprintf(stderr, "%s: openadr: event %s: start randomized %.0f s late (randomizeStart "
                "%.0f s): from %s\n", v->host.name, id, late_s, rand_s, at);
    else
        fprintf(stderr, "%s: openadr: event %s: randomizeStart %.0f s not applied to a limit: "
                "it holds from the VTN's start, %s\n", v->host.name, id, rand_s, at);
}

/* An interval taken (new or changed) whose limit was below any target (pfi_ven_map_note least_w): said
 * in the log, once per take, beside the host's own word on the least it holds. */
static void note_least(pfi_ven *v, json_t *b, const pfi_ven_map_note *nt)
{
    char less[80] = "";
    if (v->cfg.non_gpu_w > 0)
        snprintf(less, sizeof less, " less the non-GPU allowance %g W", v->cfg.non_gpu_w);
    if (!isnan(nt->least_w))
        fprintf(stderr, "%s: openadr: event %s: import limit %g W%s taken as %g W: held, while "
                "it binds, at the least the site can hold\n", v->host.name,
                json_string_value(json_object_get(b, "id")), nt->least_w, less, PFI_VEN_LEAST_W);
}

/* An interval taken whose priority is not a whole number ("high", 1.5): said once per take,
 * since it was taken as no priority without a word. */
static void note_priority(pfi_ven *v, json_t *b, const pfi_ven_map_note *nt)
{
    if (nt->priority_ignored)
        fprintf(stderr, "%s: openadr: event %s: its priority is not a whole number (OpenADR: an "
                "integer, lower binds first): taken as none\n", v->host.name,
                json_string_value(json_object_get(b, "id")));
}

/* An interval mapped to an event body, waiting to be added. */
typedef struct ven_take {
    json_t *b;
    pfi_ven_map_note nt;
    double start;
    size_t order; /* in the VTN's listing: ties keep it */
} ven_take;

static int take_cmp(const void *x, const void *y)
{
    const ven_take *a = x, *b = y;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

/* The intervals of the listing mapped to event bodies, those to add (not over, not the same as
 * held); *n of them, malloc'ed (NULL on no memory: said). */
static ven_take *map_events(pfi_ven *v, json_t *events, size_t *n)
{
    size_t i, cap = 0;
    ven_take *t = NULL;
    json_t *ev;
    *n = 0;
    json_array_foreach(events, i, ev)
    {
        size_t k;
        json_t *iv, *ivs = json_object_get(ev, "intervals");
        if (!json_is_array(ivs)) { /* an object or a number was skipped without a word */
            const char *id = json_string_value(json_object_get(ev, "id"));
            ven_error(v, "event %s: intervals is not an array: ignored, nothing changed",
                      id ? id : "?");
            continue;
        }
        json_array_foreach(ivs, k, iv)
        {
            char why[300] = "";
            pfi_ven_map_note nt;
            json_t *b = pfi_ven_map(&v->cfg, ev, iv, (int)k, pfi_clock_wall(), widen_s(v),
                                     &nt, why, sizeof why);
            if (!b) {
                if (why[0])
                    ven_error(v, "%s: ignored, nothing changed", why);
                continue;
            }
            if (pfi_ven_interval_starts_now(ev, iv))
                keep_held_start(v, b);
            if (interval_over(v, b, pfi_clock_wall()) || same_as_held(v, b)) {
                json_decref(b);
                continue;
            }
            if (*n == cap) {
                size_t nc = cap ? 2 * cap : 64;
                ven_take *g = realloc(t, nc * sizeof *g);
                if (!g) {
                    json_decref(b);
                    ven_error(v, "out of memory taking the VTN's events: the rest wait for the "
                              "next poll");
                    return t;
                }
                t = g;
                cap = nc;
            }
            t[*n] = (ven_take){b, nt, json_number_value(json_object_get(b, "start")), *n};
            (*n)++;
        }
    }
    return t;
}

/* complete: the VTN's whole listing (all_events); a partial one withdraws nothing.  Intervals
 * are added soonest first, whatever the listing's order: the room for events is bounded, and a
 * day-ahead event of 300 intervals listed first left none for an import limit due in two
 * minutes (refused at every poll). */
static void take_events(pfi_ven *v, json_t *events, int complete)
{
    if (complete)
        cancel_missing(v, events);
    size_t n = 0;
    ven_take *t = map_events(v, events, &n);
    if (n > 1)
        qsort(t, n, sizeof *t, take_cmp);
    for (size_t i = 0; i < n; i++) {
        json_t *b = t[i].b;
        pfi_err e = {0};
        int rc = v->host.add(v->host.ctx, b, &e);
        if (rc == PFI_EBUSY && strstr(e.msg, "grid events are held") &&
            make_room(v, b, pfi_clock_wall())) {
            pfi_err_clear(&e);
            rc = v->host.add(v->host.ctx, b, &e);
        }
        if (rc == PFI_ERANGE) {
            above_maximum(v, b);
        } else if (rc != PFI_OK) {
            ven_error(v, "event %s refused: %s", json_string_value(json_object_get(b, "id")),
                      e.msg);
        } else {
            pthread_mutex_lock(&v->mu);
            v->n_events++;
            pthread_mutex_unlock(&v->mu);
            note_randomized(v, b, &t[i].nt);
            note_least(v, b, &t[i].nt);
            note_priority(v, b, &t[i].nt);
        }
        json_decref(b);
    }
    free(t);
}

/* Interval k of the VTN's event that held event h was taken from: its window and ramp-down
 * (*t0, *t1, *ramp) as held here, else as the VTN lists it now (an interval let go is no longer
 * held); 0 when neither has it. */
static int sibling(pfi_ven *v, json_t *events, const pfi_event *evs, int n, const pfi_event *h,
                   int k, double *t0, double *t1, double *ramp)
{
    for (int i = 0; k >= 0 && i < n; i++)
        if (!strcmp(evs[i].source, h->source) && !strcmp(evs[i].oadr_event, h->oadr_event) &&
            evs[i].oadr_interval == k) {
            *t0 = evs[i].start_s;
            *t1 = evs[i].end_s;
            *ramp = evs[i].ramp_down_s;
            return 1;
        }
    json_t *ev = k >= 0 ? listed_event(events, h->oadr_event) : NULL;
    json_t *iv = json_array_get(json_object_get(ev, "intervals"), (size_t)k);
    pfi_ven_map_note nt;
    char why[300];
    json_t *b = iv ? pfi_ven_map(&v->cfg, ev, iv, k, pfi_clock_wall(), widen_s(v), &nt, why,
                                  sizeof why)
                   : NULL;
    if (b) {
        *t0 = json_number_value(json_object_get(b, "start"));
        *t1 = json_number_value(json_object_get(b, "end"));
        *ramp = json_number_value(json_object_get(b, "ramp_s"));
    }
    json_decref(b);
    return b != NULL;
}

/* The span [*lo, *hi) the report of held event h covers.  Its compliance report runs from its
 * ramp-down to its restore's end, and back to back the intervals of one OpenADR event share
 * the ramp minutes: posted whole, a VTN summing USAGE per event counted them twice.  Between
 * interval k and k + 1 the seconds go to one of them: k's up to max(its end, k + 1's ramp
 * start), no later than k + 1's start; an interval k > 0 whose predecessor cannot be found
 * starts at its own start (it may have shared its ramp).  The split is the same seen from
 * either side, so no second is reported twice. */
static void report_span(pfi_ven *v, json_t *events, const pfi_event *evs, int n,
                        const pfi_event *h, double *lo, double *hi)
{
    double t0, t1, ramp;
    *lo = pfi_event_ramp_start_s(h);
    *hi = INFINITY;
    if (!h->oadr_event[0])
        return;
    if (sibling(v, events, evs, n, h, h->oadr_interval - 1, &t0, &t1, &ramp))
        *lo = fmin(h->start_s, fmax(t1, *lo));
    else if (h->oadr_interval > 0)
        *lo = h->start_s;
    if (sibling(v, events, evs, n, h, h->oadr_interval + 1, &t0, &t1, &ramp))
        *hi = fmin(t0, fmax(h->end_s, t0 - ramp));
}

/* The report of a finished event: DEMAND (kW) and USAGE (kWh) per 1-minute interval of its
 * compliance report within [lo, hi) (report_span: a minute cut there keeps its mean, its USAGE
 * for the part kept), the GPUs' draw plus the non-GPU allowance (cfg.non_gpu_w): what the host
 * records is its GPUs' draw, and the VTN's figures are the site's import. */
static json_t *report_body(pfi_ven *v, json_t *rep, const char *id, const char *eid, double lo,
                           double hi)
{
    json_t *ivs = json_array(), *c = json_object_get(rep, "compliance");
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(c, "intervals"), i, x)
    {
        double t0 = fmax(json_number_value(json_object_get(x, "t0")), lo),
               t1 = fmin(json_number_value(json_object_get(x, "t1")), hi);
        json_t *m = json_object_get(x, "mean_w");
        if (!json_is_number(m) || !(t1 > t0))
            continue;
        double kw = (json_number_value(m) + v->cfg.non_gpu_w) / 1000;
        char start[40], dur[32];
        pfi_time_format(t0, start, sizeof start);
        snprintf(dur, sizeof dur, fabs(t1 - t0 - round(t1 - t0)) < 1e-6 ? "PT%.0fS" : "PT%.3fS",
                 t1 - t0);
        json_array_append_new(
            ivs, json_pack("{s:i, s:{s:s, s:s}, s:[{s:s, s:[f]}, {s:s, s:[f]}]}", "id",
                           (int)json_array_size(ivs), "intervalPeriod", "start", start,
                           "duration", dur, "payloads", "type", "DEMAND", "values", kw, "type",
                           "USAGE", "values", kw * (t1 - t0) / 3600));
    }
    char name[300];
    int at = snprintf(name, sizeof name, "pfi %s: max excess %.0f W, %.0f s over target", id,
                      json_number_value(json_object_get(c, "max_excess_w")),
                      json_number_value(json_object_get(c, "seconds_over_target")));
    /* Changed under way (the VTN's own modification, or one made here): judged against each
     * definition in its time, which the figures alone do not say. */
    json_t *revs = json_object_get(c, "revisions");
    size_t nrev = json_array_size(revs);
    json_t *last = json_array_get(revs, nrev - 1);
    const char *from = json_string_value(json_object_get(last, "from"));
    char times[32] = "";
    if (nrev > 2)
        snprintf(times, sizeof times, " %zu times, last", nrev - 1);
    json_t *held = json_object_get(c, "held_above_target");
    if (held && at > 0 && (size_t)at < sizeof name) /* the least it could hold: its shortfall */
        at += snprintf(name + at, sizeof name - (size_t)at, "; held at up to %.0f W for %.1f s, "
                       "the least it could", json_number_value(json_object_get(held, "budget_w")),
                       json_number_value(json_object_get(held, "seconds")));
    json_t *late = json_object_get(c, "taken_after_start_s");
    if (json_is_number(late) && at > 0 && (size_t)at < sizeof name)
        at += snprintf(name + at, sizeof name - (size_t)at, "; received %.1f s into its window",
                       json_number_value(late));
    if (nrev > 1 && at > 0 && (size_t)at < sizeof name)
        at += snprintf(name + at, sizeof name - (size_t)at, "; modified under way%s at %s "
                       "(target %.0f W), each instant judged against the definition in force "
                       "then", times, from ? from : "?",
                       json_number_value(json_object_get(last, "target_w")));
    /* What DEMAND is: the targets and excesses above are the GPUs'. */
    if (at > 0 && (size_t)at < sizeof name && v->cfg.non_gpu_w > 0)
        snprintf(name + at, sizeof name - (size_t)at, "; DEMAND: GPU draw + %.0f W non-GPU "
                 "allowance", v->cfg.non_gpu_w);
    else if (at > 0 && (size_t)at < sizeof name)
        snprintf(name + at, sizeof name - (size_t)at, "; DEMAND: GPU draw alone");
    return json_pack("{s:s, s:s, s:s, s:s, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}], "
                     "s:[{s:s, s:o}]}", "programID", v->program_id, "eventID", eid,
                     "clientName", v->cfg.client_id, "reportName", name, "payloadDescriptors",
                     "objectType", "REPORT_PAYLOAD_DESCRIPTOR", "payloadType", "DEMAND", "units",
                     "KW", "objectType", "REPORT_PAYLOAD_DESCRIPTOR", "payloadType", "USAGE",
                     "units", "KWH", "resources", "resourceName", v->cfg.resource, "intervals",
                     ivs);
}

/* The VTN's id of the event held as "oadr-<key>-<interval>": the listed event of that key
 * (its id in full: a long one is held as its hash form, pfi_ven_vtn_key), else the key itself. */
static void vtn_event_id(json_t *events, const char *grid_id, char *out, size_t n)
{
    char vid[PFI_EVENT_ID_MAX];
    pfi_ven_vtn_id_of(grid_id, vid, sizeof vid);
    json_t *ev = listed_event(events, vid);
    snprintf(out, n, "%s", ev ? json_string_value(json_object_get(ev, "id")) : vid);
}

/* events: the VTN's list this poll (NULL when it was silent), for the events' ids. */
static void post_reports(pfi_ven *v, json_t *events)
{
    double now = pfi_clock_wall();
    int n_held, n = 0;
    pfi_event *evs = held_events(v, &n_held);
    int *todo = calloc(PFI_VEN_EVENTS_MAX, sizeof *todo); /* indices in evs */
    char (*held)[PFI_EVENT_ID_MAX] = calloc(PFI_VEN_EVENTS_MAX, sizeof *held);
    for (int i = 0; evs && held && i < n_held; i++)
        snprintf(held[i], sizeof held[0], "%s", evs[i].id);
    /* Forgotten only once the host lets the event go: one that merely stops looking finished
     * (a clock stepped back, a window widened) is not reported again. */
    if (evs && held)
        v->n_reported = pfi_event_ids_retain(v->reported, v->n_reported,
                                             (const char (*)[PFI_EVENT_ID_MAX])held, n_held);
    free(held);
    for (int i = 0; evs && todo && i < n_held; i++) {
        /* Restored: the end plus its ramp-up (a site of no bound restores over the ramp). */
        pfi_event_site s = pfi_event_site_default(1e12);
        if (!strncmp(evs[i].id, "oadr-", 5) && now > pfi_event_restored_s(&evs[i], &s) + 2 &&
            !(evs[i].oadr_reported_s > 0)) /* sent before a restart: not again */
            todo[n++] = i;
    }
    for (int k = 0; k < n && !v->stop; k++) {
        const char *id = evs[todo[k]].id;
        int done = 0;
        for (int r = 0; r < v->n_reported; r++)
            done |= !strcmp(v->reported[r], id);
        if (done)
            continue;
        pfi_err e = {0};
        json_t *rep = v->host.report(v->host.ctx, id, &e);
        if (!rep) {
            ven_error(v, "report of %s: %s", id, e.msg);
            continue;
        }
        char eid[256];
        double lo, hi;
        vtn_event_id(events, id, eid, sizeof eid);
        report_span(v, events, evs, n_held, &evs[todo[k]], &lo, &hi);
        json_t *body = report_body(v, rep, id, eid, lo, hi);
        json_decref(rep);
        char *text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        long st = -1;
        json_decref(text ? call_json(v, "POST", "/reports", text, NULL, &st) : NULL);
        free(text);
        if (st == 200 || st == 201) {
            if (v->n_reported < PFI_VEN_EVENTS_MAX)
                snprintf(v->reported[v->n_reported++], sizeof v->reported[0], "%s", id);
            pfi_err re = {0};
            if (v->host.reported && v->host.reported(v->host.ctx, id, now, &re) != PFI_OK)
                ven_error(v, "report of %s sent, but not noted as sent: %s", id, re.msg);
            pthread_mutex_lock(&v->mu);
            v->n_reports++;
            pthread_mutex_unlock(&v->mu);
        }
    }
    free(todo);
    free(evs);
}

/* Finished events of the VTN, an hour after their restore (its report sent, or tried for that
 * hour), are let go: the host holds a bounded list (256 events, past ones included until
 * deleted), and nothing else deleted them, so a VTN's daily schedule filled it within days
 * and every event after that was refused.  The host keeps one let go as history, its report
 * with it (deleted, an operator checking a settlement the next day had nothing left).  The
 * VTN still listing one changes nothing: an interval that is over is not taken again
 * (interval_over). */
#define VEN_KEEP_S 3600.0
static void let_go_finished(pfi_ven *v)
{
    char src[PFI_EVENT_SOURCE_MAX];
    snprintf(src, sizeof src, "openadr:%.50s", v->cfg.program);
    double now = pfi_clock_wall();
    int n;
    pfi_event *evs = held_events(v, &n);
    for (int i = 0; evs && i < n; i++) {
        pfi_event_site s = pfi_event_site_default(1e12);
        if (strncmp(evs[i].id, "oadr-", 5) || strcmp(evs[i].source, src) ||
            !(now > pfi_event_restored_s(&evs[i], &s) + VEN_KEEP_S))
            continue;
        pfi_err e = {0};
        int rc = v->host.let_go ? v->host.let_go(v->host.ctx, evs[i].id, &e)
                                : v->host.remove(v->host.ctx, evs[i].id, &e);
        if (rc != PFI_OK && e.code != PFI_ENOENT)
            ven_error(v, "finished event %s not let go: %s", evs[i].id, e.msg);
        else
            fprintf(stderr, "%s: openadr: event %s finished an hour ago: let go%s\n",
                    v->host.name, evs[i].id,
                    v->host.let_go ? " (its report kept as history)" : "");
    }
    free(evs);
}

/* Appends to all the events of a page whose ids were not listed before (seen: the ids so far,
 * each with the event first listed under it; an event without an id, which is refused later,
 * is appended as it comes); returns how many new ids the page had.  A page of ids all seen is
 * a VTN that ignores skip answering its first events again; one partly seen (an event added
 * before them between two pages) adds its new events once.  An id listed again with other
 * contents is said: the first is the one taken, and a lower limit listed second was dropped
 * without a word. */
static size_t add_page(pfi_ven *v, json_t *all, json_t *seen, json_t *page)
{
    size_t i, fresh = 0;
    json_t *ev;
    json_array_foreach(page, i, ev)
    {
        json_t *id = json_object_get(ev, "id"), *first;
        if (json_is_string(id) && (first = json_object_get(seen, json_string_value(id)))) {
            if (!json_equal(first, ev))
                ven_error(v, "event %.80s listed twice in one listing, with other contents: the "
                          "first taken, the other ignored (the VTN's listing is inconsistent)",
                          json_string_value(id));
            continue;
        }
        if (json_is_string(id)) {
            json_object_set(seen, json_string_value(id), ev);
            fresh++;
        }
        json_array_append(all, ev);
    }
    return fresh;
}

/* Every event of the program, a page at a time from skip = the events received so far, until
 * an empty page.  OpenADR's limit is a request: a VTN may cap its pages below VEN_PAGE, so a
 * short page is no end (taken as one, the events after a VTN's first page of 10 were never seen,
 * and those held were cancelled as withdrawn).  *complete: 1 when the empty page came; 0 when a
 * page brought no id not already listed (a VTN that ignores skip: what it lists after its first
 * page is never read), when VEN_PAGES_MAX pages were read without an empty one, or when a page
 * after the first failed: the events not seen may still be listed, so none is taken as
 * withdrawn this poll (take_events).  NULL when the first page fails or is not a list: the VTN
 * is then silent this round (events kept as received). */
static json_t *all_events(pfi_ven *v, int *complete)
{
    json_t *all = json_array(), *seen = json_object();
    char *q = pfi_http_escape(v->program_id);
    char path[400];
    size_t got = 0, from = 0; /* events the VTN answered (the next skip), the last page's skip */
    int repeated = 0;
    *complete = 0;
    if (!q || !seen) {
        json_decref(all);
        json_decref(seen);
        free(q);
        return NULL;
    }
    for (int page = 0; all && page < VEN_PAGES_MAX; page++) {
        snprintf(path, sizeof path, "/events?programID=%s&skip=%zu&limit=%d", q, got, VEN_PAGE);
        json_t *evs = get_json(v, path);
        if (!json_is_array(evs)) {
            if (evs)
                ven_error(v, "GET %s: not an array of events", path);
            json_decref(evs);
            /* A stop cut it short: nothing is taken from part of a listing, nothing said. */
            if (page == 0 || v->stop) {
                json_decref(all);
                all = NULL;
            } else {
                /* The failing page's own error is said with it: written over, an HTTP 500
                 * left only "cut short" to read. */
                char why[sizeof v->last_error];
                pthread_mutex_lock(&v->mu);
                memcpy(why, v->last_error, sizeof why);
                pthread_mutex_unlock(&v->mu);
                ven_error(v, "events listing cut short at %zu events (%.200s): nothing taken as "
                          "withdrawn this poll", got, why);
            }
            json_decref(seen);
            free(q);
            return all;
        }
        size_t n = json_array_size(evs);
        from = got;
        got += n;
        repeated = n > 0 && add_page(v, all, seen, evs) == 0;
        json_decref(evs);
        if (n == 0)
            *complete = 1;
        if (n == 0 || repeated)
            break;
    }
    if (all && repeated)
        ven_error(v, "events listing: the page from skip %zu lists only events already listed "
                  "(the VTN ignores skip): %zu events read, the rest not, nothing taken as "
                  "withdrawn this poll", from, json_array_size(all));
    else if (all && !*complete)
        ven_error(v, "events listing truncated at %d pages (%zu events): the rest not read, "
                  "nothing taken as withdrawn this poll", VEN_PAGES_MAX, json_array_size(all));
    json_decref(seen);
    free(q);
    return all;
}

/* The events of the program resolved (v->program_id) among a listing: a VTN may not honour
 * GET /events?programID= (the filter is optional for it), and another program's events were
 * then taken as this one's: applied, and able to stand in for a held event of the same id.
 * The others (and any without a programID: it cannot be told whose it is) are left out here,
 * after the pages are read (skip counts the VTN's listing as it answered), so nothing is taken
 * or cancelled because of them.  Logged once per client; counted per listing. */
static json_t *own_program(pfi_ven *v, json_t *all)
{
    json_t *mine = json_array(), *ev;
    size_t i;
    long long other = 0;
    char first[300] = "";
    json_array_foreach(all, i, ev)
    {
        json_t *pid = json_object_get(ev, "programID");
        if (json_is_string(pid) && !strcmp(json_string_value(pid), v->program_id)) {
            json_array_append(mine, ev);
            continue;
        }
        if (!other++) {
            json_t *id = json_object_get(ev, "id");
            snprintf(first, sizeof first, "event %.128s of program %.128s",
                     json_is_string(id) ? json_string_value(id) : "(no id)",
                     json_is_string(pid) ? json_string_value(pid) : "(none given)");
        }
    }
    pthread_mutex_lock(&v->mu);
    v->n_other_program = other;
    int tell = other && !v->other_program_told;
    v->other_program_told |= tell;
    pthread_mutex_unlock(&v->mu);
    if (tell)
        fprintf(stderr, "%s: openadr: the VTN listed %lld events of other programs for "
                "programID=%s (%s first): ignored; it does not honour the programID filter, "
                "and this is said once\n", v->host.name, other, v->program_id, first);
    json_decref(all);
    return mine;
}

/* With callback_url set: a subscription to the program's events (created, changed, deleted),
 * notified at callback_url + "/v1/grid/openadr/notify/<secret>" (the secret also as the
 * bearerToken the spec asks the VTN to send).  A notification makes the client poll at once;
 * it polls every poll_s anyway.  A VTN that does not offer subscriptions (403, 404, 405, 501)
 * is told once and not asked again: the client then polls alone. */
static void subscribe(pfi_ven *v)
{
    static const long off[] = {403, 404, 405, 501, 0};
    if (!v->cfg.callback_url[0] || v->sub_id[0] || v->sub_off)
        return;
    char cb[PFI_VEN_URL_MAX + 128];
    snprintf(cb, sizeof cb, "%s/v1/grid/openadr/notify/%s", v->cfg.callback_url, v->cb_token);
    json_t *b = json_pack("{s:s, s:s, s:s, s:[{s:[s], s:[s, s, s], s:s, s:s}]}", "objectType",
                          "SUBSCRIPTION", "clientName", v->cfg.client_id, "programID",
                          v->program_id, "objectOperations", "objects", "EVENT", "operations",
                          "POST", "PUT", "DELETE", "callbackUrl", cb, "bearerToken",
                          v->cb_token);
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    long st = -1;
    json_t *r = body ? call_json(v, "POST", "/subscriptions", body, off, &st) : NULL;
    free(body);
    json_t *id = json_object_get(r, "id");
    if (json_is_string(id)) {
        pthread_mutex_lock(&v->mu);
        snprintf(v->sub_id, sizeof v->sub_id, "%s", json_string_value(id));
        pthread_mutex_unlock(&v->mu);
    } else if (st == 403 || st == 404 || st == 405 || st == 501) {
        v->sub_off = 1;
        ven_error(v, "subscriptions not offered by the VTN (POST /subscriptions: HTTP %ld): "
                  "polling every %g s alone", st, v->cfg.poll_s);
    }
    json_decref(r);
}

int pfi_ven_notify(pfi_ven *v, const char *secret)
{
    char auth[128];
    if (!v || !v->cb_token[0] || !secret || strlen(secret) >= sizeof auth - 8)
        return 0;
    snprintf(auth, sizeof auth, "Bearer %s", secret);
    if (!pfi_token_ok(v->cb_token, auth))
        return 0;
    pthread_mutex_lock(&v->mu);
    v->n_notified++;
    pthread_mutex_unlock(&v->mu);
    v->wake = 1;
    return 1;
}

/* OpenADR 3.0 lets a program describe its events' payloads (their units): each event's own
 * descriptors come first, the program's after them, so an event that gives none takes the
 * program's (a limit the program gives in W was read in kW: 4000 W as 4 MW, above the site's
 * maximum, not taken, and nothing said). */
static void inherit_descriptors(json_t *events, json_t *program_pd)
{
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev)
    {
        if (!json_is_object(ev))
            continue;
        json_t *own = json_object_get(ev, "payloadDescriptors"), *all = json_array();
        if (json_is_array(own))
            json_array_extend(all, own);
        json_array_extend(all, program_pd);
        json_object_set_new(ev, "payloadDescriptors", all);
    }
}

static void poll_once(pfi_ven *v)
{
    pthread_mutex_lock(&v->mu);
    v->n_polls++;
    pthread_mutex_unlock(&v->mu);
    register_ven(v);
    if (v->stop)
        return;
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
                !strcmp(json_string_value(nm), v->cfg.program)) {
                snprintf(v->program_id, sizeof v->program_id, "%s", json_string_value(id));
                json_t *pd = json_object_get(p, "payloadDescriptors");
                json_decref(v->program_pd);
                v->program_pd = json_is_array(pd) ? json_incref(pd) : NULL;
            }
        }
        if (d && !v->program_id[0])
            ven_error(v, "no program named %s on the VTN", v->cfg.program);
        json_decref(d);
        if (!v->program_id[0])
            return;
    }
    subscribe(v);
    if (v->stop)
        return;
    int complete;
    json_t *evs = all_events(v, &complete);
    /* A stop between the listing and what it changes: the host is on its way to restore its
     * limits, and a change now would be applied only to be undone. */
    if (evs && !v->stop)
        evs = own_program(v, evs);
    if (evs && v->program_pd)
        inherit_descriptors(evs, v->program_pd);
    if (evs && !v->stop)
        take_events(v, evs, complete);
    if (!v->stop)
        post_reports(v, evs);
    if (!v->stop)
        let_go_finished(v);
    json_decref(evs);
}

static void *ven_main(void *arg)
{
    pfi_ven *v = arg;
    while (!v->stop) {
        v->wake = 0;
        poll_once(v);
        /* Sleeps of at most 0.1 s of real time, so a stop is prompt. */
        double until = pfi_clock_mono() + v->cfg.poll_s, left;
        while (!v->stop && !v->wake && (left = until - pfi_clock_mono()) > 0)
            pfi_clock_sleep(fmin(left, 0.1 * pfi_clock_scale()));
    }
    return NULL;
}

/* Whether url is plain http to another host than this one: what is sent there (the client
 * secret, a callback's secret path) can be read on the way. */
static int cleartext_away(const char *url)
{
    if (strncasecmp(url, "http://", 7) != 0)
        return 0;
    const char *h = url + 7, *end = h + strcspn(h, "/?#");
    const char *at = memchr(h, '@', (size_t)(end - h));
    if (at)
        h = at + 1;
    size_t n = *h == '[' ? strcspn(h, "]") + 1 : strcspn(h, ":/?#");
    if ((n == 9 && !strncasecmp(h, "localhost", 9)) || (n == 5 && !strncmp(h, "[::1]", 5)))
        return 0;
    return !(n >= 4 && !strncmp(h, "127.", 4));
}

/* Said once at the start: the secret over plain http to another host (the secret file must be
 * private, and the wire was not said to be). */
static void warn_cleartext(const pfi_ven *v)
{
    const char *u[2] = {v->cfg.token_url, v->cfg.callback_url};
    if (cleartext_away(u[0]))
        fprintf(stderr, "%s: openadr: warning: the client secret goes to %s over plain http, "
                "readable on the way: use https\n", v->host.name, u[0]);
    else if (cleartext_away(v->cfg.vtn_url))
        fprintf(stderr, "%s: openadr: warning: the access token goes to %s over plain http, "
                "readable on the way: use https\n", v->host.name, v->cfg.vtn_url);
    if (u[1][0] && cleartext_away(u[1]))
        fprintf(stderr, "%s: openadr: warning: the VTN's notifications come to %s over plain "
                "http, the callback's secret part readable on the way: use https (a TLS proxy "
                "in front of the daemon)\n", v->host.name, u[1]);
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
    if (v->cfg.callback_url[0]) {
        unsigned char raw[24];
        FILE *f = fopen("/dev/urandom", "rb");
        size_t got = f ? fread(raw, 1, sizeof raw, f) : 0;
        if (f)
            fclose(f);
        if (got != sizeof raw) {
            free(v);
            return pfi_err_set(err, PFI_EIO, "openadr: no random bytes for the callback secret");
        }
        for (size_t i = 0; i < sizeof raw; i++)
            snprintf(v->cb_token + 2 * i, 3, "%02x", raw[i]);
    }
    if (!v->cfg.ven_name[0])
        snprintf(v->cfg.ven_name, sizeof v->cfg.ven_name, "%s", cfg->client_id);
    v->skew_s = NAN;
    if (!v->cfg.token_url[0])
        pfi_http_url(cfg->vtn_url, "/auth/token", v->cfg.token_url, sizeof v->cfg.token_url);
    rc = pfi_token_load(cfg->secret_file, v->secret, sizeof v->secret, err);
    if (rc != PFI_OK) {
        free(v);
        return pfi_err_prefix(err, "openadr client secret: ");
    }
    warn_cleartext(v);
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
    json_decref(v->program_pd);
    free(v);
}

/* A wall-clock time as ISO 8601 UTC, null for 0 (none). */
static json_t *iso_or_null(double t)
{
    char at[40];
    if (!(t > 0))
        return json_null();
    pfi_time_format(t, at, sizeof at);
    return json_string(at);
}

void *pfi_ven_json(pfi_ven *v)
{
    if (!v)
        return json_pack("{s:b}", "enabled", 0);
    pthread_mutex_lock(&v->mu);
    json_t *o = json_pack("{s:b, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:s, s:o, s:b, s:I}",
                          "enabled", 1, "vtn", v->cfg.vtn_url, "program", v->cfg.program,
                          "program_id", v->program_id, "polls", (json_int_t)v->n_polls,
                          "errors", (json_int_t)v->n_errors, "events_taken",
                          (json_int_t)v->n_events, "events_cancelled",
                          (json_int_t)v->n_cancelled, "reports_posted",
                          (json_int_t)v->n_reports, "last_error", v->last_error, "clock_skew_s",
                          isfinite(v->skew_s) ? json_real(v->skew_s) : json_null(), "skewed",
                          v->skewed, "skewed_answers", (json_int_t)v->n_skewed);
    json_object_set_new(o, "ven_name", json_string(v->cfg.ven_name));
    json_object_set_new(o, "subscription_id", v->sub_id[0] ? json_string(v->sub_id) : json_null());
    json_object_set_new(o, "notifications", json_integer(v->n_notified));
    json_object_set_new(o, "ven_id", v->ven_id[0] ? json_string(v->ven_id) : json_null());
    json_object_set_new(o, "other_program_events", json_integer(v->n_other_program));
    json_object_set_new(o, "non_gpu_power_w", json_real(v->cfg.non_gpu_w));
    json_object_set_new(o, "last_error_at", iso_or_null(v->last_error_at));
    json_object_set_new(o, "vtn_down_since", iso_or_null(v->down_since));
    pthread_mutex_unlock(&v->mu);
    return o;
}
