/* SPDX-License-Identifier: Apache-2.0 */
/* api.c: the controller's HTTP API, in the node daemon's style (docs/cluster.md):
 *   GET  /healthz, /v1/nodes, /v1/jobs, /v1/allocation, /metrics
 *   GET  / (the status page), /v1/history?since=T, /v1/decisions?limit=N (what it reads)
 *   PUT  /v1/budget   {"budget": "70%" | "5600W" | "cut=30%" | null, "ramp_s": 0}
 *                     or {"watts": 5600} or {"cut": 0.3}; null removes the budget
 *   POST /v1/refresh  re-read Slurm and the node daemons, re-allocate
 *   GET, POST /v1/grid/events; GET, DELETE /v1/grid/events/{id}; GET .../{id}/report:
 *                     grid events on the site budget (grid.c, docs/api.md's shapes)
 * Mutating requests need the bearer token; without a token file every one is refused (403).
 * With --read-auth token (cfg.read_auth) every GET and HEAD but /healthz needs it too (401).
 * Errors are {"error": "..."} with 400 (malformed), 401, 403, 404, 409 (infeasible: nothing
 * changed), 500 (a budget taken but not met yet, when a node did not answer its apply: the
 * message says whether the controller's loop applies the rest, controller.c's in_force; or
 * any other failure). */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "cluster/cl_int.h"
#include "cluster/mhd.h"
#include "report/status_page.h"
#include "util/fs.h"
#include "util/http_query.h"
#include "util/json.h"

#define BODY_MAX (64u << 10)

/* Descriptors kept for the controller's own files and pipes, beyond connections and node
 * requests. */
#define API_FD_SPARE 64

struct pfi_cl_server {
    struct MHD_Daemon *d;
    pfi_cl_log log;
    pfi_cl *c;
    char token[512];
    int need_token;
    int read_auth; /* cfg.read_auth: reads need the token too (read_refused) */
};

static enum MHD_Result send_json(struct MHD_Connection *con, unsigned code, json_t *doc)
{
    return pfi_cl_send_json(con, code, doc, JSON_INDENT(1));
}

static enum MHD_Result send_err(struct MHD_Connection *con, unsigned code, const char *msg)
{
    return send_json(con, code, pfi_json_error(NULL, NULL, msg));
}

/* 405, with the methods the path takes in the Allow header (RFC 9110 15.5.6). */
static enum MHD_Result not_allowed(struct MHD_Connection *con, const char *allow)
{
    return pfi_cl_send_json_allow(con, 405,
                                  pfi_json_error(NULL, NULL, "method not allowed on this path"),
                                  JSON_INDENT(1), allow);
}

static unsigned http_code(int rc)
{
    switch (rc) {
    case PFI_EINVAL:
    case PFI_ERANGE:
        return 400;
    case PFI_ENOENT:
        return 404;
    case PFI_EINFEASIBLE:
    case PFI_ESTATE:
    case PFI_EBUSY:
        return 409;
    default:
        return 500;
    }
}

/* Why a body is not JSON, as jansson says (a key given twice: "duplicate object key"); it
 * was answered "expected a JSON object", which the body was. */
static enum MHD_Result send_malformed(struct MHD_Connection *con, const json_error_t *je)
{
    char msg[300];
    snprintf(msg, sizeof msg, "body: malformed JSON at line %d column %d: %s", je->line,
             je->column, je->text);
    return send_err(con, 400, msg);
}

/* The allocation a budget change left (pfi_cl_set_budget_answer). */
static void take_allocation(pfi_cl *c, void *ctx)
{
    *(json_t **)ctx = pfi_cl_json_allocation(c);
}

static enum MHD_Result put_budget(pfi_cl_server *s, struct MHD_Connection *con, const char *body)
{
    json_error_t je;
    /* A key given twice is refused, not read as its last value. */
    json_t *d = json_loads(body, JSON_REJECT_DUPLICATES, &je);
    if (!d)
        return send_malformed(con, &je);
    if (!json_is_object(d)) {
        json_decref(d);
        return send_err(con, 400, "body: expected a JSON object such as {\"budget\": \"70%\"}");
    }
    pfi_cl_budget b = {0};
    pfi_err e = {0};
    int rc = PFI_OK;
    /* An unknown field is refused, as the node daemon does: "ramp" for "ramp_s" must not set
     * the budget at once without its ramp. */
    const char *k;
    json_t *kv;
    json_object_foreach(d, k, kv)
    {
        if (strcmp(k, "budget") && strcmp(k, "watts") && strcmp(k, "cut") && strcmp(k, "ramp_s")) {
            char msg[200];
            snprintf(msg, sizeof msg, "unknown field '%.64s' (known: budget, watts, cut, ramp_s)",
                     k);
            json_decref(d);
            return send_err(con, 400, msg);
        }
    }
    json_t *bv = json_object_get(d, "budget"), *wv = json_object_get(d, "watts"),
           *cv = json_object_get(d, "cut"), *rv = json_object_get(d, "ramp_s");
    int given = (bv != NULL) + (wv != NULL) + (cv != NULL);
    if (given != 1) {
        rc = pfi_err_set(&e, PFI_EINVAL, "give exactly one of budget, watts, cut");
    } else if (bv && json_is_null(bv)) {
        b.set = 0;
    } else if (bv && json_is_string(bv)) {
        b.set = 1;
        rc = pfi_cl_parse_budget(s->c, json_string_value(bv), &b.watts, &e);
    } else if (wv && json_is_number(wv)) {
        b.set = 1;
        b.watts = json_number_value(wv);
    } else if (cv && json_is_number(cv) && json_number_value(cv) > 0 &&
               json_number_value(cv) < 1) {
        char t[64];
        /* %.15g: 0.9999999 stays 99.99999 (%g rounded it to a refused "cut=100%"), and 0.3
         * stays 30, not 30.000000000000004. */
        snprintf(t, sizeof t, "cut=%.15g%%", 100 * json_number_value(cv));
        b.set = 1;
        rc = pfi_cl_parse_budget(s->c, t, &b.watts, &e);
    } else {
        rc = pfi_err_set(&e, PFI_EINVAL,
                         "budget: a string (\"5600W\", \"70%%\", \"cut=30%%\") or null; watts: a "
                         "number; cut: a fraction in (0, 1)");
    }
    if (rc == PFI_OK && rv) {
        if (!json_is_number(rv))
            rc = pfi_err_set(&e, PFI_EINVAL, "ramp_s: a number of seconds");
        else
            b.ramp_s = json_number_value(rv);
    }
    json_decref(d);
    json_t *answer = NULL;
    if (rc == PFI_OK)
        rc = pfi_cl_set_budget_answer(s->c, &b, take_allocation, &answer, &e);
    if (rc != PFI_OK) {
        json_decref(answer);
        return send_err(con, http_code(rc), e.msg);
    }
    return send_json(con, 200, answer ? answer : pfi_cl_json_allocation(s->c));
}

#define NO_TOKEN_FILE                                                                              \
    "this controller has no token file (--token-file): it refuses every change"

/* Whether a change is refused: 1 when it is, its answer queued in *r; 0 when it may go on.
 * 403 without a token file (every change is refused, as a node daemon without one does: an
 * API on any address must not take a site budget from whoever asks), 401 without the right
 * bearer token.  Every change route asks here, so the two answers are chosen in one place. */
static int refused(const pfi_cl_server *s, struct MHD_Connection *con, enum MHD_Result *r)
{
    if (!s->need_token) {
        *r = send_err(con, 403, NO_TOKEN_FILE);
        return 1;
    }
    if (!pfi_token_ok(s->token,
                      MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Authorization"))) {
        *r = send_err(con, 401, "missing or wrong bearer token");
        return 1;
    }
    return 0;
}

/* A grid event changed: re-plan at once; a failure is the controller's note (the event
 * stands, and the loop tries again). */
static void replan(pfi_cl *c, const char *what)
{
    pfi_err e = {0};
    if (pfi_cl_reapply(c, &e) != PFI_OK) {
        fprintf(stderr, "pfi cluster: re-plan after %s: %s\n", what, e.msg);
        pthread_mutex_lock(&c->mu);
        pfi_cl_note(c, 1, "re-plan after %s: %s", what, e.msg);
        pthread_mutex_unlock(&c->mu);
    }
}

/* An error answer with extra fields beside it (an infeasible event's achievable_w). */
static enum MHD_Result send_err_with(struct MHD_Connection *con, unsigned code, const char *msg,
                                     json_t *extra)
{
    return send_json(con, code, pfi_json_error(extra, NULL, msg));
}

static enum MHD_Result post_event(pfi_cl_server *s, struct MHD_Connection *con,
                                  const char *body)
{
    json_error_t je;
    json_t *d = json_loads(body, JSON_REJECT_DUPLICATES, &je);
    if (!d)
        return send_malformed(con, &je);
    if (!json_is_object(d)) {
        json_decref(d);
        return send_err(con, 400, "body: expected a JSON object (an event, see docs/api.md)");
    }
    pfi_err e = {0};
    void *res = NULL;
    int created = 0;
    int rc = pfi_cl_grid_add(s->c, d, 0, &res, &created, &e);
    json_decref(d);
    if (rc != PFI_OK)
        return send_err_with(con, http_code(rc), e.msg, res);
    json_t *id = json_object_get(res, "id");
    char one[PFI_EVENT_ID_MAX];
    snprintf(one, sizeof one, "%s", json_is_string(id) ? json_string_value(id) : "");
    replan(s->c, "the event");
    json_t *v = pfi_cl_grid_json(s->c, one); /* as it stands after the re-plan */
    if (!v) /* a DELETE came between: it was added all the same, as it was then */
        return send_json(con, created ? 201 : 200, res);
    json_decref(res);
    return send_json(con, created ? 201 : 200, v);
}

/* HEAD is GET without the body (libmicrohttpd leaves the body out): every GET route takes it,
 * as RFC 9110 9.3.2 asks and the node daemon does. */
static int is_get(const char *method)
{
    return !strcmp(method, "GET") || !strcmp(method, "HEAD");
}

/* --read-auth token: whether a read is refused (401, its answer queued in *r), as a node
 * daemon with read_auth = token refuses it (serve/api.c): every GET and HEAD, a path that is no
 * route included (so the answer tells nothing of which exist), but /healthz, which load
 * balancers and probes ask without a token and which tells only that the controller runs.
 * Asked before any route, so no read escapes it. */
static int read_refused(const pfi_cl_server *s, struct MHD_Connection *con, const char *method,
                        const char *url, enum MHD_Result *r)
{
    if (!s->read_auth || !is_get(method) || !strcmp(url, "/healthz") ||
        pfi_token_ok(s->token,
                     MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Authorization")))
        return 0;
    *r = send_err(con, 401, "missing or wrong bearer token (--read-auth token)");
    return 1;
}

/* The methods a path under /v1/grid/ takes (the Allow header of its 405); NULL: no route. */
static const char *grid_allow(const char *url)
{
    if (!strncmp(url, "/v1/grid/openadr/notify/", 24))
        return "POST";
    if (!strcmp(url, "/v1/grid/openadr"))
        return "GET, HEAD";
    const char *base = "/v1/grid/events";
    size_t bl = strlen(base);
    if (strncmp(url, base, bl) || (url[bl] && url[bl] != '/'))
        return NULL;
    if (!url[bl])
        return "GET, HEAD, POST";
    const char *rest = url + bl + 1, *slash = strchr(rest, '/');
    size_t il = slash ? (size_t)(slash - rest) : strlen(rest);
    if (il == 0 || il >= PFI_EVENT_ID_MAX || (slash && strcmp(slash, "/report")))
        return NULL;
    return slash ? "GET, HEAD" : "GET, HEAD, DELETE";
}

/* /v1/grid/events[/ID[/report]] (docs/cluster.md). */
static enum MHD_Result grid_route(pfi_cl_server *s, struct MHD_Connection *con,
                                  const char *url, const char *method, const char *body)
{
    if (!strncmp(url, "/v1/grid/openadr/notify/", 24)) /* the secret is the credential */
        return strcmp(method, "POST") ? not_allowed(con, "POST")
               : pfi_ven_notify(s->c->ven, url + 24)
                   ? send_json(con, 200, json_object())
                   : send_err(con, 401, "not a notification this controller subscribed to");
    if (!strcmp(url, "/v1/grid/openadr"))
        return is_get(method) ? send_json(con, 200, pfi_ven_json(s->c->ven))
                              : not_allowed(con, "GET, HEAD");
    const char *base = "/v1/grid/events";
    size_t bl = strlen(base);
    if (strncmp(url, base, bl) || (url[bl] && url[bl] != '/'))
        return send_err(con, 404, "no such route");
    char id[PFI_EVENT_ID_MAX] = "";
    const char *rest = url[bl] ? url + bl + 1 : NULL, *slash = rest ? strchr(rest, '/') : NULL;
    size_t il = rest ? (slash ? (size_t)(slash - rest) : strlen(rest)) : 0;
    if (rest && (il == 0 || il >= sizeof id || (slash && strcmp(slash, "/report"))))
        return send_err(con, 404, "no such grid event");
    if (rest)
        snprintf(id, sizeof id, "%.*s", (int)il, rest);
    int get = is_get(method);
    pfi_err e = {0};
    if (get && slash) {
        json_t *r = pfi_cl_grid_report(s->c, id, &e);
        return r ? send_json(con, 200, r) : send_err(con, http_code(e.code), e.msg);
    }
    if (get) {
        json_t *v = pfi_cl_grid_json(s->c, rest ? id : NULL);
        return v ? send_json(con, 200, v) : send_err(con, 404, "no such grid event");
    }
    int post = !strcmp(method, "POST") && !rest, del = !strcmp(method, "DELETE") && rest && !slash;
    if (!post && !del)
        return not_allowed(con, grid_allow(url));
    enum MHD_Result denied;
    if (refused(s, con, &denied))
        return denied;
    if (post)
        return post_event(s, con, body);
    if (pfi_cl_grid_remove(s->c, id, &e) != PFI_OK)
        return send_err(con, http_code(e.code), e.msg);
    replan(s->c, "deleting the event");
    return send_json(con, 200, json_pack("{s:s}", "deleted", id));
}

/* What a read's query said (query_ok): each parameter, -1 when not given (none takes a
 * negative value). */
typedef struct read_args {
    long long since, limit;
} read_args;

/* GET / (the status page), /v1/history and /v1/decisions, which it reads. */
static enum MHD_Result page_route(pfi_cl_server *s, struct MHD_Connection *con, const char *url,
                                  const read_args *q)
{
    if (!strcmp(url, "/")) {
        size_t len;
        const char *page = pfi_status_page(&len);
        char *t = malloc(len + 1);
        if (!t)
            return send_err(con, 500, "out of memory");
        memcpy(t, page, len + 1);
        return pfi_cl_send_text(con, 200, t, "text/html; charset=utf-8");
    }
    if (!strcmp(url, "/v1/history")) {
        long long since = q->since < 0 ? (long long)pfi_clock_wall() - 3600 : q->since;
        return send_json(con, 200, pfi_cl_json_history(s->c, (double)since));
    }
    return send_json(con, 200, pfi_cl_json_decisions(s->c, q->limit < 0 ? 20 : (int)q->limit));
}

/* The methods a path outside /v1/grid/ takes (the Allow header of its 405); NULL: no route. */
static const char *route_allow(const char *url)
{
    static const char *const fixed[][2] = {
        {"/healthz", "GET, HEAD"},     {"/v1/nodes", "GET, HEAD"},
        {"/v1/jobs", "GET, HEAD"},     {"/v1/allocation", "GET, HEAD"},
        {"/", "GET, HEAD"},            {"/v1/history", "GET, HEAD"},
        {"/favicon.ico", "GET, HEAD"},
        {"/v1/decisions", "GET, HEAD"}, {"/metrics", "GET, HEAD"},
        {"/v1/budget", "PUT"},         {"/v1/refresh", "POST"}};
    if (!strncmp(url, "/v1/grid/", 9))
        return grid_allow(url);
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!strcmp(url, fixed[i][0]))
            return fixed[i][1];
    return NULL;
}

/* The query parameters the routes take (docs/cluster.md), checked once a request's path and
 * method are known to have a route (a 404 or 405 is answered as such) and, with --read-auth
 * token, once a read is known to carry the token (read_refused first), before anything is
 * read or changed: on a /v1/ path an argument the route does not take, one given twice, or a
 * value that is empty or out of range is a 400 naming it, as the node daemon does.  A
 * misspelt one used to be ignored (GET /v1/history?sinse=10 answered the whole hour).
 * /healthz, /metrics and / take none and ignore any: probes, scrapers and browsers add their
 * own (a cache-buster), and no parameter there changes what is answered; so does the OpenADR
 * notification path, which a VTN calls as it likes.  1 when the request may go on, its values
 * in *a; 0 with the answer queued in *r. */
static int query_ok(struct MHD_Connection *con, const char *url, const char *method,
                    read_args *a, enum MHD_Result *r)
{
    a->since = a->limit = -1;
    if (!pfi_http_allows(route_allow(url), method) || strncmp(url, "/v1/", 4) ||
        !strncmp(url, "/v1/grid/openadr/notify/", 24))
        return 1;
    pfi_http_param takes[1];
    int nt = 0;
    if (!strcmp(url, "/v1/history"))
        takes[nt++] = (pfi_http_param){"since", 0, (long long)1e15, &a->since};
    else if (!strcmp(url, "/v1/decisions"))
        takes[nt++] = (pfi_http_param){"limit", 1, PFI_CL_DECISIONS, &a->limit};
    pfi_err e = {0};
    if (pfi_cl_query_take(con, takes, nt, &e) == PFI_OK)
        return 1;
    *r = send_err(con, 400, e.msg);
    return 0;
}

static enum MHD_Result route(pfi_cl_server *s, struct MHD_Connection *con, const char *url,
                             const char *method, const char *body)
{
    enum MHD_Result denied;
    if (read_refused(s, con, method, url, &denied))
        return denied;
    read_args q;
    if (!query_ok(con, url, method, &q, &denied))
        return denied;
    if (!strncmp(url, "/v1/grid/", 9))
        return grid_route(s, con, url, method, body);
    int get = is_get(method);
    if (get && !strcmp(url, "/healthz"))
        return send_json(con, 200, json_pack("{s:b, s:s}", "ok", 1, "service", "pfi cluster serve"));
    if (get && !strcmp(url, "/favicon.ico")) /* asked by every browser: no icon, and no 404 */
        return pfi_cl_send_text(con, 204, strdup(""), "image/x-icon");
    if (get && !strcmp(url, "/v1/nodes"))
        return send_json(con, 200, pfi_cl_json_nodes(s->c));
    if (get && !strcmp(url, "/v1/jobs"))
        return send_json(con, 200, pfi_cl_json_jobs(s->c));
    if (get && !strcmp(url, "/v1/allocation"))
        return send_json(con, 200, pfi_cl_json_allocation(s->c));
    if (get && (!strcmp(url, "/") || !strcmp(url, "/v1/history") || !strcmp(url, "/v1/decisions")))
        return page_route(s, con, url, &q);
    if (get && !strcmp(url, "/metrics"))
        return pfi_cl_send_text(con, 200, pfi_cl_metrics(s->c), "text/plain; version=0.0.4; charset=utf-8");
    int mut = (!strcmp(method, "PUT") && !strcmp(url, "/v1/budget")) ||
              (!strcmp(method, "POST") && !strcmp(url, "/v1/refresh"));
    if (!mut) {
        const char *allow = route_allow(url);
        return allow ? not_allowed(con, allow) : send_err(con, 404, "no such route");
    }
    if (refused(s, con, &denied))
        return denied;
    if (!strcmp(url, "/v1/budget"))
        return put_budget(s, con, body);
    pfi_err e = {0};
    int rc = pfi_cl_refresh(s->c, &e);
    if (rc == PFI_OK)
        rc = pfi_cl_reapply(s->c, &e);
    if (rc != PFI_OK)
        return send_err(con, http_code(rc), e.msg);
    return send_json(con, 200, pfi_cl_json_allocation(s->c));
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *con, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *data_size, void **con_cls)
{
    pfi_cl_body *u;
    int first = *con_cls == NULL;
    int more = pfi_cl_body_step(con_cls, data, data_size, BODY_MAX, &u);
    if (more < 0)
        return MHD_NO;
    const char *why;
    int status = first ? pfi_cl_body_framing(con, method, &why) : 0;
    if (status) {
        /* As below, answered before the body is read: none of it is taken as a request. */
        ((pfi_cl_body *)*con_cls)->too_big = 1;
        return send_err(con, (unsigned)status, why);
    }
    if (first && pfi_cl_body_too_big(con, BODY_MAX)) {
        /* Said too large: answered now, its body never read (then the connection closes). */
        ((pfi_cl_body *)*con_cls)->too_big = 1;
        return send_err(con, 413, "request body too large");
    }
    if (more)
        return MHD_YES;
    if (u->too_big)
        return send_err(con, 413, "request body too large");
    return route(cls, con, url, method, u->buf ? u->buf : "");
}

int pfi_cl_server_start(pfi_cl *c, const char *listen, const char *token_file,
                        pfi_cl_server **out, int *port, pfi_err *err)
{
    *out = NULL;
    char host[64];
    int p = -1;
    const char *colon = strrchr(listen, ':');
    if (!colon || (size_t)(colon - listen) >= sizeof host || sscanf(colon + 1, "%d", &p) != 1 ||
        p < 0 || p > 65535)
        return pfi_err_set(err, PFI_EINVAL, "listen '%s': expected ADDRESS:PORT", listen);
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen), listen);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)p);
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return pfi_err_set(err, PFI_EINVAL, "listen '%s': not an IPv4 address", listen);
    /* Reads that need a token no one has would lock every reader out, the operator too. */
    if (c->cfg.read_auth && !(token_file && *token_file))
        return pfi_err_set(err, PFI_EINVAL, "--read-auth token needs --token-file");
    pfi_cl_server *s = calloc(1, sizeof *s);
    if (!s)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    s->c = c;
    s->read_auth = c->cfg.read_auth;
    if (token_file && *token_file) {
        if (pfi_token_load(token_file, s->token, sizeof s->token, err) != PFI_OK) {
            free(s);
            return pfi_err_prefix(err, "cluster token: ");
        }
        s->need_token = 1;
    }
    /* poll(), not epoll: libmicrohttpd's epoll loop, after a batch of exactly 128 ready
     * connections, waits again before serving them, so a server thread that found 128
     * requests at once slept on them until some other event came.  Idle and slow clients are
     * closed after client_timeout_s, one address holds at most max_client_conns connections
     * (one more is closed at once; one past max_conns waits in the listen queue), and a
     * request's headers must fit in 64 KiB (its body is bounded apart, BODY_MAX).  The
     * library's messages (one per client refused, under a flood) are rate-limited. */
    const pfi_cl_config *cfg = &c->cfg;
    unsigned conns = (unsigned)cfg->max_conns;
    /* Each connection holds a descriptor, and so does each request to a node (max_parallel at
     * once) and the rest (the store, Slurm's pipes, logs): the soft open-file limit (1024 under
     * systemd's default) is raised for them all, else at --max-connections the controller ran
     * out of descriptors for its own work.  Where the hard limit is lower, fewer connections. */
    long have, fit = pfi_fd_limit_fit(conns, (long)cfg->max_parallel + API_FD_SPARE, &have);
    if (fit < (long)conns) {
        if (fit < 1) {
            free(s);
            return pfi_err_set(err, PFI_ERANGE,
                               "cannot listen on %s: the open-file limit (%ld) leaves no room "
                               "for API connections (raise it: ulimit -n, LimitNOFILE=)",
                               listen, have);
        }
        fprintf(stderr,
                "pfi cluster: the open-file limit (%ld) holds %ld API connections, not the %u "
                "of --max-connections (raise it: ulimit -n, LimitNOFILE=)\n",
                have, fit, conns);
        conns = (unsigned)fit;
    }
    pfi_cl_log_init(&s->log, "pfi cluster");
    s->d = MHD_start_daemon(
        MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, handle, s,
        MHD_OPTION_EXTERNAL_LOGGER, pfi_cl_mhd_log, &s->log, MHD_OPTION_NOTIFY_COMPLETED,
        pfi_cl_body_done, NULL, MHD_OPTION_THREAD_POOL_SIZE, conns < 2 ? conns : 2u,
        MHD_OPTION_CONNECTION_LIMIT, conns,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_client_conns,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->client_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024), MHD_OPTION_UNESCAPE_CALLBACK,
        pfi_cl_unescape, NULL, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&sa, MHD_OPTION_END);
    if (!s->d) {
        pfi_cl_log_destroy(&s->log);
        free(s);
        return pfi_err_set(err, PFI_EIO, "cannot listen on %s", listen);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    if (port)
        *port = di ? di->port : p;
    /* Said once at start, as the node daemon does ("auth: no token_file configured"): an
     * operator who forgot --token-file learns it from the log, not from the first 403. */
    if (!s->need_token)
        fprintf(stderr, "pfi cluster: auth: no token file (--token-file): the API is read-only, "
                        "every change is refused (403)\n");
    *out = s;
    return PFI_OK;
}

void pfi_cl_server_stop(pfi_cl_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->d);
    pfi_cl_log_destroy(&s->log);
    free(s);
}
