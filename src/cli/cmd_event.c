/* SPDX-License-Identifier: Apache-2.0 */
/* pfi event: grid events on a running `pfi serve` or `pfi cluster serve` (docs/api.md,
 * /v1/grid/events), with the connection options of `pfi ctl`.  add, list, rm print the daemon's
 * JSON answer; report writes the event's compliance report (Markdown, JSON and a gnuplot
 * figure) and says first what it can say (the document's state_message: nothing yet, partial,
 * no samples, complete; all exit 0).  An error answer goes to stderr with exit status 1 (2 for
 * a malformed request, and an id no event can have, refused before asking). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "core/event.h"
#include "report/grid_report.h"
#include "serve/serve.h"
#include "util/budget.h"
#include "util/clock.h"
#include "util/http.h"
#include "util/isotime.h"
#include "util/units.h"

typedef struct conn {
    const char *url, *socket, *token_file;
} conn;

/* A request to the daemon; *doc (may be NULL) gets the JSON answer of a success.  Returns the
 * exit status; an error answer is printed. */
static int request(const conn *c, const char *method, const char *path, json_t *body,
                   json_t **doc)
{
    char token[PFI_TOKEN_MAX + 1] = "", url[1024];
    pfi_err err = {0};
    /* On reads too: a daemon with read_auth = token (--read-auth token) answers them 401
     * without it. */
    if (pfi_cli_daemon_token("event", c->token_file, strcmp(method, "GET") != 0, token,
                             sizeof token, &err) != PFI_OK) {
        json_decref(body);
        return pfi_cli_fail("event", &err);
    }
    const char *base = c->socket ? "http://localhost" : c->url;
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/')
        bl--;
    snprintf(url, sizeof url, "%.*s%s", (int)bl, base, path);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    pfi_http_req r = {.url = url, .unix_sock = c->socket, .method = method, .body = text};
    pfi_http_many(NULL, &r, 1, token[0] ? token : NULL, 60, 1);
    free(text);
    if (!r.started || r.status < 0) {
        char hint[200];
        fprintf(stderr, "pfi event: %s %s: %s (%s)\n", method, url,
                r.started ? r.err : "libcurl failed to start",
                pfi_cli_no_answer_hint(r.timed_out, 60, "the daemon", hint, sizeof hint));
        pfi_http_req_free(&r, 1);
        return PFI_EXIT_FAIL;
    }
    long status = r.status;
    json_t *d = r.reply ? json_loads(r.reply, 0, NULL) : NULL;
    pfi_http_req_free(&r, 1);
    if (status >= 400) {
        json_t *er = json_object_get(d, "error");
        json_t *m = json_is_string(er) ? er : json_object_get(er, "message");
        json_t *a = json_object_get(d, "achievable_w");
        fprintf(stderr, "pfi event: %s %s: HTTP %ld: %s\n", method, path, status,
                json_is_string(m) ? json_string_value(m) : "no message");
        pfi_cli_daemon_401("event", method, status, c->token_file, token[0] != '\0');
        if (json_is_number(a))
            fprintf(stderr, "pfi event: what can be met: %.0f W\n", json_number_value(a));
        json_decref(d);
        return status == 400 ? PFI_EXIT_USAGE : PFI_EXIT_FAIL;
    }
    if (!d) {
        fprintf(stderr, "pfi event: %s %s: the answer is not JSON\n", method, path);
        return PFI_EXIT_FAIL;
    }
    /* 200 to an add is a replace (201: new): an id reused by a typo or a template took the
     * earlier event's place without a word. */
    json_t *id = json_object_get(d, "id");
    if (!strcmp(method, "POST") && status == 200 && json_is_string(id))
        fprintf(stderr, "pfi event: event %s replaced: the daemon held an event of that id, and "
                        "this one takes its place\n",
                json_string_value(id));
    if (doc)
        *doc = d;
    else
        return pfi_cli_print_json(d);
    return PFI_EXIT_OK;
}

typedef struct add_args {
    const char *start, *end, *duration, *cut, *limit, *ramp, *ramp_down, *ramp_up, *id;
    const char *baseline;
    int priority, sla_yield;
} add_args;

static int usage_error(const char *msg)
{
    fprintf(stderr, "pfi event: %s (pfi event --help)\n", msg);
    return PFI_EXIT_USAGE;
}

/* Duration option `name` into body[key] (absent: nothing). */
static int put_duration(json_t *b, const char *key, const char *name, const char *v)
{
    if (!v)
        return PFI_OK;
    double s;
    pfi_err e = {0};
    if (pfi_parse_duration(v, &s, &e) != PFI_OK) {
        pfi_err_prefix(&e, "--%s: ", name);
        return pfi_cli_fail("event", &e);
    }
    json_object_set_new(b, key, json_real(s));
    return PFI_OK;
}

/* The target: --cut 25% or --limit 4kW (watts); --baseline W for a cut. */
static int put_target(json_t *b, const add_args *a)
{
    pfi_err e = {0};
    double v;
    int pct;
    if (!!a->cut + !!a->limit != 1)
        return usage_error("give exactly one of --cut 25% or --limit 4kW");
    if (a->cut && (!strncasecmp(a->cut, "cut=", 4) || a->cut[0] == '-')) {
        /* A cut as every budget writes one (pfi help budget): cut=25% or -25%. */
        pfi_budget bt;
        if (pfi_budget_parse(a->cut, &bt, &e) != PFI_OK)
            return pfi_cli_fail("event", &e);
        /* The cut as written (1 - the share would round): the percentage after the prefix. */
        const char *p = a->cut + (a->cut[0] == '-' ? 1 : 4);
        if (!bt.is_share || !(bt.value < 1) || pfi_parse_power(p, &v, &pct, NULL) || !pct ||
            !(v < 1))
            return usage_error("--cut expects a percentage above 0% and below 100%, e.g. 25%");
        json_object_set_new(b, "cut", json_real(v));
    } else if (a->cut) {
        /* A cut is more than 0% and less than 100% (the daemon refuses 100%): the share's
         * own "(0, 100]" would name a range the cut does not have. */
        if (pfi_parse_power(a->cut, &v, &pct, NULL) != PFI_OK || !pct || !(v < 1))
            return usage_error("--cut expects a percentage above 0% and below 100%, e.g. 25%");
        json_object_set_new(b, "cut", json_real(v));
    } else {
        /* A budget (pfi help budget); a share is of the event's baseline: a cut. */
        pfi_budget bt;
        if (pfi_budget_parse(a->limit, &bt, &e) != PFI_OK)
            return pfi_cli_fail("event", &e);
        if (bt.is_share && !(bt.value < 1)) /* else the daemon names a cut of 0% */
            return usage_error("a --limit share is of the event's baseline and must be below "
                               "100% (100% cuts nothing), e.g. 75% for a 25% cut");
        if (bt.is_share)
            json_object_set_new(b, "cut", json_real(1 - bt.value));
        else
            json_object_set_new(b, "limit_w", json_real(bt.value));
    }
    if (a->baseline) {
        if (!json_object_get(b, "cut"))
            return usage_error("--baseline goes with --cut or a --limit share");
        if (pfi_parse_power(a->baseline, &v, &pct, &e) != PFI_OK || pct)
            return e.msg[0] ? pfi_cli_fail("event", &e) : usage_error("--baseline expects W");
        json_object_set_new(b, "baseline_w", json_real(v));
    }
    return PFI_OK;
}

static int cmd_add(const conn *c, const add_args *a)
{
    if (!a->start)
        return usage_error("add needs --start (e.g. now+1h or 2026-12-01T18:00:00Z)");
    if (!!a->end + !!a->duration != 1)
        return usage_error("give exactly one of --duration 3h or --end TIME");
    pfi_err e = {0};
    double now = pfi_clock_wall(), t0, t1 = NAN;
    if (pfi_time_parse(a->start, now, &t0, &e) != PFI_OK ||
        (a->end && pfi_time_parse(a->end, now, &t1, &e) != PFI_OK))
        return pfi_cli_fail("event", &e);
    json_t *b = json_pack("{s:f}", "start", t0);
    if (a->end)
        json_object_set_new(b, "end", json_real(t1));
    int rc;
    if ((rc = put_duration(b, "duration_s", "duration", a->duration)) ||
        (rc = put_duration(b, "ramp_s", "ramp", a->ramp)) ||
        (rc = put_duration(b, "ramp_down_s", "ramp-down", a->ramp_down)) ||
        (rc = put_duration(b, "ramp_up_s", "ramp-up", a->ramp_up)) || (rc = put_target(b, a))) {
        json_decref(b);
        return rc;
    }
    if (a->id)
        json_object_set_new(b, "id", json_string(a->id));
    if (a->priority)
        json_object_set_new(b, "priority", json_integer(a->priority));
    if (a->sla_yield)
        json_object_set_new(b, "sla", json_string("yield"));
    json_object_set_new(b, "source", json_string("cli"));
    return request(c, "POST", "/v1/grid/events", b, NULL);
}


/* report ID: the daemon's report document, written as Markdown + JSON + figure under out. */
static int cmd_report(const conn *c, const char *id, const char *out, int json_only)
{
    char path[256];
    pfi_err e = {0};
    if (pfi_event_id_check(id, &e) != PFI_OK) /* names no event: a mistake, asked nowhere */
        return usage_error(e.msg);
    if (!pfi_http_id_path(path, sizeof path, "/v1/grid/events/", id, "/report"))
        return usage_error("event id too long");
    json_t *doc = NULL;
    int rc = request(c, "GET", path, NULL, &doc);
    if (rc != PFI_EXIT_OK)
        return rc;
    if (json_only)
        return pfi_cli_print_json(doc);
    char written[1536];
    rc = pfi_grid_report_write(doc, out, written, sizeof written, &e);
    json_decref(doc);
    if (rc != PFI_OK)
        return pfi_cli_fail("event", &e);
    printf("%s", written);
    return PFI_EXIT_OK;
}

const char *const pfi_cli_actions_event[] = {"add", "list", "rm", "report", NULL};

int pfi_cmd_event(int argc, char **argv)
{
    conn c = {0};
    add_args a = {0};
    const char *out = NULL; /* report: event-report unless given */
    int json = 0;
    const pfi_opt opts[] = {
        {"url", PFI_OPT_STR, &c.url, "URL", "daemon address (default $PFI_SERVE_URL, else "
                                            "http://127.0.0.1:9455)"},
        {"socket", PFI_OPT_STR, &c.socket, "PATH", "talk over the daemon's Unix socket"},
        {"token-file", PFI_OPT_STR, &c.token_file, "FILE",
         "bearer token, sent on every request: needed for changes, and for reads where read auth "
         "is on (default $PFI_SERVE_TOKEN_FILE)"},
        {"start", PFI_OPT_STR, &a.start, "TIME", "add: ISO 8601 with a zone, now+DURATION"},
        {"end", PFI_OPT_STR, &a.end, "TIME", "add: when it ends"},
        {"duration", PFI_OPT_STR, &a.duration, "DURATION", "add: how long, e.g. 3h"},
        {"cut", PFI_OPT_STR, &a.cut, "PCT",
         "add: shed this share of the baseline: 25%, or as budgets write a cut, cut=25% or -25%"},
        {"baseline", PFI_OPT_STR, &a.baseline, "W", "add: the cut's baseline (default: the "
                                                    "daemon's mean draw over the last hour, "
                                                    "leaving out the time other events bound)"},
        {"limit", PFI_OPT_STR, &a.limit, "BUDGET",
         "add: a site power limit, e.g. 4kW; a share is of the baseline: 75% is --cut 25% "
         "(pfi help budget)"},
        {"ramp", PFI_OPT_STR, &a.ramp, "DURATION", "add: ramp down before and up after"},
        {"ramp-down", PFI_OPT_STR, &a.ramp_down, "DURATION", "add: ramp before the start"},
        {"ramp-up", PFI_OPT_STR, &a.ramp_up, "DURATION", "add: restore after the end"},
        {"priority", PFI_OPT_INT, &a.priority, "N", "add: higher binds on equal targets"},
        {"sla-yield", PFI_OPT_FLAG, &a.sla_yield, NULL, "add: the jobs' SLAs give way"},
        {"id", PFI_OPT_STR, &a.id, "ID", "add: the event's id (default: made up)"},
        {"out", PFI_OPT_STR, &out, "DIR", "report: where to write it (default event-report)"},
        {"json", PFI_OPT_FLAG, &json, NULL, "report: print the JSON document only"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi event [--url URL|--socket PATH] [--token-file FILE] COMMAND [ARGS]",
        "Grid events on a running pfi serve or pfi cluster serve.  Commands: add --start TIME "
        "(--duration 3h|--end TIME) (--cut 25%|--limit 4kW) [--ramp 10m] [--priority N] "
        "[--sla-yield]; list; rm ID; report ID [--out DIR | --json].  "
        /* no ", " or "; " from here: bash completion takes the words after them as commands */
        "report first says what it can: nothing yet (before the event's ramp) / partial (until "
        "its restore is over) / nothing to judge (no draw recorded in its window) / complete.  "
        "An OpenADR event let go an hour after its restore leaves list and report keeps it for "
        "7 days.  All exit 0.  An unknown event exits 1 and an id no event can have 2.",
        opts,
        "pfi event --token-file /etc/pfi/token add --start now+1h --duration 3h --cut 25% --ramp 10m\n"
        "pfi event list\n"
        "pfi event report EVENT_ID --out event-report"};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    c.url = c.url ? c.url : getenv("PFI_SERVE_URL");
    c.url = c.url ? c.url : "http://127.0.0.1:9455";
    c.token_file = c.token_file ? c.token_file : getenv("PFI_SERVE_TOKEN_FILE");
    if (npos < 1)
        return usage_error("missing command (add, list, rm, report)");
    const char *cmd = pos[0];
    if (!pfi_cli_is_action(pfi_cli_actions_event, cmd)) {
        fprintf(stderr, "pfi event: unknown command '%s' (", cmd);
        pfi_cli_actions_list(stderr, pfi_cli_actions_event);
        fprintf(stderr, "; pfi event --help)\n");
        return PFI_EXIT_USAGE;
    }
    char path[256];
    if (!strcmp(cmd, "add") && npos == 1)
        return cmd_add(&c, &a);
    if (!strcmp(cmd, "list") && npos == 1)
        return request(&c, "GET", "/v1/grid/events", NULL, NULL);
    if (!strcmp(cmd, "rm") && npos == 2) {
        pfi_err e = {0};
        if (pfi_event_id_check(pos[1], &e) != PFI_OK) /* as report: names no event */
            return usage_error(e.msg);
        if (!pfi_http_id_path(path, sizeof path, "/v1/grid/events/", pos[1], ""))
            return usage_error("event id too long");
        return request(&c, "DELETE", path, NULL, NULL);
    }
    if (!strcmp(cmd, "report") && npos == 2) {
        /* --json prints the document and writes nothing: an --out with it would be ignored. */
        if (json && out)
            return usage_error("report: --out writes the report's files, --json prints the "
                               "document: give one");
        return cmd_report(&c, pos[1], out ? out : "event-report", json);
    }
    return usage_error("expected add [options], list, rm ID or report ID");
}
