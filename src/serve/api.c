/* SPDX-License-Identifier: Apache-2.0 */
/* api.c: the HTTP API's routes (docs/api.md).  Transport-free: a method, a path, a body in; a
 * status and a body out, so the routes are tested without a socket.  Every mutating route needs
 * the bearer token; every error is JSON {"error": {"code", "message"}} with a 4xx status and
 * the state untouched. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/status_page.h"
#include "serve/serve_int.h"
#include "util/budget.h"
#include "util/http_query.h"
#include "util/json.h"

static int http_status(int code)
{
    switch (code) {
    case PFI_EINVAL:
    case PFI_ERANGE:
        return 400;
    case PFI_ENOENT:
        return 404;
    case PFI_EPERM:
        return 403;
    case PFI_EBUSY:
    case PFI_EINFEASIBLE:
    case PFI_ESTATE:
        return 409;
    default:
        return 500;
    }
}

/* Stable machine-readable names for clients (pfi_code_name is for people). */
static const char *code_id(int code)
{
    static const char *ids[] = {"OK",        "EINVAL",      "ERANGE",   "ENOENT",   "EIO",
                                "ENOTSUP",   "EPERM",       "ELOST",    "ENOMEM",   "EBUSY",
                                "EINFEASIBLE", "ESTATE",    "ETIMEOUT", "ENODRIVER", "ECHILD",
                                "EINTERNAL"};
    return code >= 0 && code < (int)(sizeof ids / sizeof ids[0]) ? ids[code] : "EINTERNAL";
}

static char *dump(json_t *doc, size_t *len)
{
    char *s = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(15));
    json_decref(doc);
    if (!s)
        return NULL;
    size_t l = strlen(s);
    s[l] = '\0';
    *len = l;
    return s;
}

static char *fail(int status, int code, const char *msg, int *st, size_t *len)
{
    *st = status;
    /* the message may echo a request's bytes: pfi_json_error answers even when not UTF-8 */
    return dump(pfi_json_error(NULL, code_id(code), msg), len);
}

static char *fail_err(const pfi_err *e, int *st, size_t *len)
{
    return fail(http_status(e->code), e->code, e->msg[0] ? e->msg : pfi_code_name(e->code), st,
                len);
}

static char *ok(int status, json_t *doc, int *st, size_t *len)
{
    *st = status;
    return dump(doc ? doc : json_object(), len);
}

/* Parses a request body that must be a JSON object. */
static json_t *body_json(const char *body, size_t blen, pfi_err *e)
{
    if (!body || blen == 0) {
        pfi_err_set(e, PFI_EINVAL, "this request needs a JSON body");
        return NULL;
    }
    json_error_t je;
    json_t *doc = pfi_json_loadb(body, blen, JSON_REJECT_DUPLICATES, &je);
    if (!doc) {
        pfi_err_set(e, PFI_EINVAL, "malformed JSON at line %d column %d: %s", je.line,
                    je.column, je.text);
        return NULL;
    }
    if (!json_is_object(doc)) {
        json_decref(doc);
        pfi_err_set(e, PFI_EINVAL, "the body must be a JSON object");
        return NULL;
    }
    return doc;
}

static int put_budget(srv_node *n, json_t *doc, int force, json_t **res, pfi_err *e)
{
    static const char *const keys[] = {"watts", "percent", "budget", "ramp_s", NULL};
    if (pfi_srv_only_keys(doc, keys, e) != PFI_OK)
        return e->code;
    json_t *w = json_object_get(doc, "watts"), *p = json_object_get(doc, "percent"),
           *b = json_object_get(doc, "budget");
    if (!!w + !!p + !!b != 1)
        return pfi_err_set(e, PFI_EINVAL,
                           "give exactly one of watts (e.g. 4000), percent (e.g. 70) or budget "
                           "(e.g. \"70%%\")");
    double watts = NAN;
    int share = p != NULL;
    if (w)
        watts = json_is_number(w) ? json_number_value(w) : NAN;
    else if (p) {
        double pc = json_is_number(p) ? json_number_value(p) : NAN;
        if (!(pc > 0 && pc <= 100))
            return pfi_err_set(e, PFI_EINVAL, "percent: expected a number in (0, 100]");
        watts = pc / 100 * n->nominal_w;
    } else {
        if (!json_is_string(b) || !strcmp(json_string_value(b), "min"))
            return pfi_err_set(e, PFI_EINVAL, "budget: expected a string like \"70%%\", "
                                              "\"4000W\" or \"cut=30%%\"");
        if (pfi_srv_budget_parse(n, json_string_value(b), &watts, e) != PFI_OK)
            return e->code;
        pfi_budget bt;
        share = pfi_budget_parse(json_string_value(b), &bt, e) == PFI_OK && bt.is_share;
    }
    if (!(watts > 0 && isfinite(watts)))
        return pfi_err_set(e, PFI_EINVAL, "watts: expected a number > 0");
    json_t *r = json_object_get(doc, "ramp_s");
    double ramp = 0;
    if (r) {
        ramp = json_is_number(r) ? json_number_value(r) : NAN;
        if (!(ramp >= 0))
            return pfi_err_set(e, PFI_EINVAL, "ramp_s: expected seconds >= 0");
    }
    int rc = pfi_srv_budget_set(n, watts, ramp, force, res, e);
    if (rc == PFI_OK && share && *res && json_is_object(*res))
        json_object_set_new(*res, "budget_reference",
                            json_pack("{s:s, s:f}", "of", PFI_SRV_BUDGET_REF, "watts",
                                      n->nominal_w));
    return rc;
}

static int put_caps(srv_node *n, json_t *doc, json_t **res, pfi_err *e)
{
    static const char *const keys[] = {"epoch", "caps", "controller", NULL};
    if (pfi_srv_only_keys(doc, keys, e) != PFI_OK)
        return e->code;
    json_t *ep = json_object_get(doc, "epoch"), *caps = json_object_get(doc, "caps");
    json_t *by = json_object_get(doc, "controller");
    if (by && (!json_is_string(by) || strlen(json_string_value(by)) > SRV_NAME_MAX))
        return pfi_err_set(e, PFI_EINVAL, "controller: expected a string of at most %d bytes",
                           SRV_NAME_MAX);
    long long epoch = 0;
    if (ep) {
        if (!json_is_integer(ep) || json_integer_value(ep) < 1)
            return pfi_err_set(e, PFI_EINVAL, "epoch: expected an integer >= 1");
        /* pfi_srv_caps_set bounds it from above. */
        epoch = json_integer_value(ep);
    }
    if (!json_is_array(caps) || json_array_size(caps) == 0)
        return pfi_err_set(e, PFI_EINVAL,
                           "caps: expected [{\"gpu\": 0, \"cap_w\": 500}, ...] (at least one)");
    double c[PFI_MAX_GPUS];
    for (int i = 0; i < PFI_MAX_GPUS; i++)
        c[i] = NAN;
    size_t k;
    json_t *v;
    json_array_foreach(caps, k, v)
    {
        json_t *g = json_object_get(v, "gpu"), *w = json_object_get(v, "cap_w");
        if (!json_is_integer(g) || !json_is_number(w) || json_object_size(v) != 2)
            return pfi_err_set(e, PFI_EINVAL, "caps[%zu]: expected {\"gpu\": INDEX, \"cap_w\": "
                                              "WATTS}",
                               k);
        long long gi = json_integer_value(g);
        if (gi < 0 || gi >= n->n_gpus)
            return pfi_err_set(e, PFI_EINVAL, "caps[%zu]: no GPU %lld on this node (it has %d)",
                               k, gi, n->n_gpus);
        if (!isnan(c[gi]))
            return pfi_err_set(e, PFI_EINVAL, "caps[%zu]: GPU %lld given twice", k, gi);
        c[gi] = json_number_value(w);
        if (!(fabs(c[gi]) <= SRV_MAX_CAP_W))
            return pfi_err_set(e, PFI_EINVAL, "caps[%zu]: cap_w is not a number of at most %g W",
                               k, SRV_MAX_CAP_W);
    }
    return pfi_srv_caps_set(n, epoch, c, by ? json_string_value(by) : NULL, res, e);
}

static int post_heartbeat(srv_node *n, json_t *doc, json_t **res, pfi_err *e)
{
    static const char *const keys[] = {"controller", "ttl_s", NULL};
    if (pfi_srv_only_keys(doc, keys, e) != PFI_OK)
        return e->code;
    json_t *c = json_object_get(doc, "controller"), *t = json_object_get(doc, "ttl_s");
    if (c && (!json_is_string(c) || strlen(json_string_value(c)) > SRV_NAME_MAX))
        return pfi_err_set(e, PFI_EINVAL, "controller: expected a string of at most %d bytes",
                           SRV_NAME_MAX);
    double ttl = NAN;
    if (t) {
        ttl = json_is_number(t) ? json_number_value(t) : -1;
        if (!(ttl >= 0))
            return pfi_err_set(e, PFI_EINVAL, "ttl_s: expected seconds >= 0");
    }
    return pfi_srv_heartbeat(n, c ? json_string_value(c) : "", ttl, res, e);
}

static int post_throughput(srv_node *n, const char *id, json_t *doc, pfi_err *e)
{
    static const char *const keys[] = {"tokens_per_s", NULL};
    if (pfi_srv_only_keys(doc, keys, e) != PFI_OK)
        return e->code;
    json_t *t = json_object_get(doc, "tokens_per_s");
    if (!json_is_number(t))
        return pfi_err_set(e, PFI_EINVAL, "tokens_per_s: expected a number");
    return pfi_srv_job_throughput(n, id, json_number_value(t), json_number_value(t), e);
}

/* What a read's query said (query_ok): each parameter, -1 when not given (none takes a
 * negative value). */
typedef struct read_args {
    long long since, limit, force;
} read_args;

/* GET and HEAD routes; *matched 0 when the request is not one of them. */
static char *handle_read(srv_node *n, const char *url, const char *id, const char *sub,
                         const read_args *q, int *matched, int *st, const char **ctype,
                         size_t *len)
{
    *matched = 1;
    if (!strcmp(url, "/healthz"))
        return ok(200, pfi_srv_view_health(n), st, len);
    if (!strcmp(url, "/metrics")) {
        *ctype = "text/plain; version=0.0.4; charset=utf-8";
        *st = 200;
        char *t = pfi_srv_metrics_text(n, len);
        return t ? t : fail(500, PFI_ENOMEM, "out of memory", st, len);
    }
    if (!strcmp(url, "/v1/gpus"))
        return ok(200, pfi_srv_view_gpus(n), st, len);
    if (!strcmp(url, "/v1/jobs"))
        return ok(200, pfi_srv_view_jobs(n, NULL), st, len);
    if (sub && !*sub) {
        json_t *j = pfi_srv_view_jobs(n, id);
        return j ? ok(200, j, st, len) : fail(404, PFI_ENOENT, "no such job", st, len);
    }
    if (!strcmp(url, "/v1/allocation") || !strcmp(url, "/v1/budget"))
        return ok(200, pfi_srv_view_allocation(n), st, len);
    if (!strcmp(url, "/v1/decisions")) {
        pfi_err e = {0};
        json_t *doc = pfi_audit_decisions(n->audit, q->limit < 0 ? 20 : (int)q->limit, &e);
        return doc ? ok(200, doc, st, len) : fail_err(&e, st, len);
    }
    if (!strcmp(url, "/favicon.ico")) { /* asked by every browser: no icon, and no 404 */
        *ctype = "image/x-icon";
        *st = 204;
        *len = 0;
        return strdup("");
    }
    if (!strcmp(url, "/")) {
        *ctype = "text/html; charset=utf-8";
        *st = 200;
        size_t plen;
        const char *page = pfi_status_page(&plen);
        char *t = malloc(plen + 1);
        if (!t)
            return fail(500, PFI_ENOMEM, "out of memory", st, len);
        memcpy(t, page, plen + 1);
        *len = plen;
        return t;
    }
    if (!strcmp(url, "/v1/history")) {
        long long since = q->since < 0 ? (long long)pfi_clock_wall() - 3600 : q->since;
        return ok(200, pfi_srv_view_history(n, (double)since), st, len);
    }
    if (!strcmp(url, "/v1/events"))
        return ok(200,
                  pfi_srv_view_events(n, q->since < 0 ? 0 : q->since,
                                      q->limit < 0 ? 100 : (int)q->limit),
                  st, len);
    *matched = 0;
    return NULL;
}

/* A decision that was made but left the node over its budget (GPUs that could not be set):
 * 500 with the error naming the GPUs, and the decision as applied.  The budget stays in force
 * and /healthz says degraded until the limits meet it. */
static char *over_budget(json_t *res, int *st, size_t *len)
{
    char gpus[256] = "", first[160] = "";
    size_t k, used = 0;
    json_t *v;
    json_array_foreach(json_object_get(res, "failed_gpus"), k, v)
    {
        int w = snprintf(gpus + used, sizeof gpus - used, "%s%lld", k ? ", " : "",
                         (long long)json_integer_value(v));
        if (w < 0 || (size_t)w >= sizeof gpus - used)
            break;
        used += (size_t)w;
        if (!k) {
            /* The driver's message names its call, not the GPU (hw/nvml): said here. */
            json_t *g = json_array_get(json_object_get(res, "gpus"), (size_t)json_integer_value(v));
            const char *why = json_string_value(json_object_get(g, "error"));
            if (why && *why)
                snprintf(first, sizeof first, "GPU %lld: %s", (long long)json_integer_value(v),
                         why);
        }
    }
    json_t *a = json_object_get(res, "applied");
    char msg[600];
    snprintf(msg, sizeof msg,
             "the budget is not met: limits sum to %.3f W, %.3f W over the %.3f W budget; "
             "GPU(s) %s could not be set%s%s",
             json_number_value(json_object_get(a, "sum_after_w")),
             json_number_value(json_object_get(res, "over_budget_w")),
             json_number_value(json_object_get(res, "budget_w")), used ? gpus : "(none)",
             first[0] ? ": " : "", first);
    *st = 500;
    /* a GPU's message cut at 160 bytes may end inside a UTF-8 character */
    json_t *doc = pfi_json_error(NULL, "EOVERBUDGET", msg);
    if (!doc) {
        json_decref(res);
        return NULL;
    }
    json_object_set_new(doc, "decision", res);
    return dump(doc, len);
}

/* A change, once its route, token and rate are checked. */
static char *handle_write(srv_node *n, const char *url, int del, const char *id,
                          const char *sub, const char *body, size_t blen, int force, int *st,
                          size_t *len)
{
    pfi_err e = {0};
    json_t *res = NULL;
    int rc;
    if (del && sub) {
        rc = pfi_srv_job_remove(n, id, &res, &e);
        return rc == PFI_OK ? ok(200, res, st, len) : fail_err(&e, st, len);
    }
    if (del) {
        rc = pfi_srv_budget_clear(n, force, &res, &e);
        return rc == PFI_OK ? ok(200, res, st, len) : fail_err(&e, st, len);
    }
    json_t *doc = body_json(body, blen, &e);
    if (!doc)
        return fail_err(&e, st, len);
    int created = 0;
    if (sub) {
        rc = post_throughput(n, id, doc, &e);
    } else if (!strcmp(url, "/v1/jobs")) {
        rc = pfi_srv_job_add(n, doc, &res, &e);
        created = 1;
    } else if (!strcmp(url, "/v1/budget")) {
        rc = put_budget(n, doc, force, &res, &e);
    } else if (!strcmp(url, "/v1/caps")) {
        rc = put_caps(n, doc, &res, &e);
    } else {
        rc = post_heartbeat(n, doc, &res, &e);
    }
    json_decref(doc);
    if (rc != PFI_OK) {
        json_decref(res);
        return fail_err(&e, st, len);
    }
    if (json_is_false(json_object_get(res, "budget_met")))
        return over_budget(res, st, len);
    return ok(created ? 201 : 200, res, st, len);
}

const char *pfi_srv_api_allow(const char *url)
{
    static const char *const fixed[][2] = {
        {"/healthz", "GET, HEAD"},        {"/metrics", "GET, HEAD"},
        {"/", "GET, HEAD"},               {"/v1/history", "GET, HEAD"},
        {"/favicon.ico", "GET, HEAD"},
        {"/v1/gpus", "GET, HEAD"},        {"/v1/allocation", "GET, HEAD"},
        {"/v1/events", "GET, HEAD"},      {"/v1/decisions", "GET, HEAD"},
        {"/v1/jobs", "GET, HEAD, POST"},  {"/v1/budget", "GET, HEAD, PUT, DELETE"},
        {"/v1/caps", "PUT"},              {"/v1/heartbeat", "POST"}};
    if (!strncmp(url, "/v1/grid/", 9))
        return pfi_srv_grid_allow(url);
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!strcmp(url, fixed[i][0]))
            return fixed[i][1];
    if (strncmp(url, "/v1/jobs/", 9))
        return NULL;
    size_t l = strcspn(url + 9, "/");
    if (l == 0 || l > SRV_ID_MAX)
        return NULL;
    return !url[9 + l] ? "GET, HEAD, DELETE" : !strcmp(url + 9 + l, "/throughput") ? "POST" : NULL;
}

/* The query parameters the routes take (docs/api.md), checked once a request's path and
 * method are known to have a route (a 404 or 405 is answered as such), before anything is
 * read or changed: on a /v1/ path an argument the route does not take, one given twice, or a
 * value that is empty or out of range is a 400 naming it.  A misspelt parameter used to be
 * ignored (GET /v1/history?sinse=10 answered the whole hour with 200).  /healthz, /metrics and
 * / take none and ignore any: probes, scrapers and browsers add their own (a cache-buster),
 * and no parameter there changes what is answered; so does the OpenADR notification path,
 * which a VTN calls as it likes.  1 when the request may go on, its values in *a; 0 with
 * the answer in *out. */
static int query_ok(const char *method, const char *url, const pfi_http_query *q,
                    read_args *a, char **out, int *st, size_t *len)
{
    a->since = a->limit = a->force = -1;
    if (!pfi_http_allows(pfi_srv_api_allow(url), method) || strncmp(url, "/v1/", 4) ||
        !strncmp(url, "/v1/grid/openadr/notify/", 24))
        return 1;
    pfi_http_param takes[3];
    int nt = 0;
    if (!strcmp(url, "/v1/history") || !strcmp(url, "/v1/events"))
        takes[nt++] = (pfi_http_param){"since", 0, LLONG_MAX, &a->since};
    if (!strcmp(url, "/v1/events") || !strcmp(url, "/v1/decisions"))
        takes[nt++] = (pfi_http_param){"limit", 1, 1000, &a->limit};
    if (!strcmp(url, "/v1/budget") && (!strcmp(method, "PUT") || !strcmp(method, "DELETE")))
        takes[nt++] = (pfi_http_param){"force", 0, 1, &a->force};
    pfi_err e = {0};
    if (pfi_http_query_take(q, takes, nt, &e) == PFI_OK)
        return 1;
    *out = fail_err(&e, st, len);
    return 0;
}

char *pfi_srv_api_handle(srv_node *n, const char *method, const char *url,
                         const pfi_http_query *query, const char *body, size_t blen,
                         int authorized, int *st, const char **ctype, size_t *len)
{
    *ctype = "application/json";
    /* read_auth = token: what jobs run, for whom, and what happened is the token holder's too;
     * only /healthz stays open (for load balancers and probes). */
    int reading = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    if (reading && n->cfg->read_auth && authorized != 1 && strcmp(url, "/healthz") != 0)
        return fail(401, PFI_EPERM, "missing or wrong bearer token (read_auth = token)", st, len);
    read_args q;
    char *bad;
    if (!query_ok(method, url, query, &q, &bad, st, len))
        return bad;
    char *grid = pfi_srv_grid_api(n, method, url, body, blen, authorized, st, len);
    if (grid)
        return grid;
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    int post = !strcmp(method, "POST"), put = !strcmp(method, "PUT"),
        del = !strcmp(method, "DELETE");
    char id[SRV_ID_MAX + 1] = "";
    const char *sub = NULL; /* what follows /v1/jobs/{id} */
    if (!strncmp(url, "/v1/jobs/", 9)) {
        const char *p = url + 9;
        size_t l = strcspn(p, "/");
        if (l == 0 || l > SRV_ID_MAX)
            return fail(404, PFI_ENOENT, "no such job", st, len);
        memcpy(id, p, l);
        id[l] = '\0';
        sub = p + l;
    }
    if (get) {
        int matched;
        char *r = handle_read(n, url, id, sub, &q, &matched, st, ctype, len);
        if (matched)
            return r;
    }

    /* Writes: known route first (404/405 before 401 would leak nothing useful either way). */
    int route = (!strcmp(url, "/v1/jobs") && post) || (sub && !*sub && del) ||
                (sub && !strcmp(sub, "/throughput") && post) ||
                (!strcmp(url, "/v1/budget") && (put || del)) || (!strcmp(url, "/v1/caps") && put) ||
                (!strcmp(url, "/v1/heartbeat") && post);
    if (!route) {
        /* a known path: the transport names its methods in the Allow header */
        if (pfi_srv_api_allow(url))
            return fail(405, PFI_EINVAL, "method not allowed on this path", st, len);
        return fail(404, PFI_ENOENT, "no such path (see docs/api.md)", st, len);
    }
    if (authorized < 0)
        return fail(403, PFI_EPERM,
                    "this daemon has no token file configured: it accepts no change", st, len);
    if (!authorized)
        return fail(401, PFI_EPERM, "missing or wrong bearer token", st, len);

    /* Throughput reports and heartbeats move no cap: never throttled.  Nor is the removal of a
     * job that is not there (a 404 moves nothing: a loop of them emptied the bucket). */
    int moves_caps = !(sub && *sub) && strcmp(url, "/v1/heartbeat") != 0;
    if (moves_caps && sub && del) {
        pthread_mutex_lock(&n->mu);
        moves_caps = pfi_srv_find_job(n->jobs, n->n_jobs, id) >= 0;
        pthread_mutex_unlock(&n->mu);
    }
    int caps = !strcmp(url, "/v1/caps");
    if (moves_caps && !pfi_srv_rate_take(n, caps)) {
        char m[96];
        snprintf(m, sizeof m, "too many changes: at most a burst of %.0f, then %.0f per second",
                 caps ? SRV_CAPS_BURST : SRV_CHANGE_BURST, caps ? SRV_CAPS_RATE : SRV_CHANGE_RATE);
        return fail(429, PFI_EBUSY, m, st, len);
    }
    char *out = handle_write(n, url, del, id, sub, body, blen, q.force == 1, st, len);
    /* A change refused as malformed (400) or aimed at nothing (404) moved nothing and cost no
     * plan: its token is given back, or a client retrying a refused registration locked a
     * valid one out with 429.  A 409 ran the planner, and stays counted. */
    if (moves_caps && (*st == 400 || *st == 404))
        pfi_srv_rate_refund(n, caps);
    return out;
}
