/* SPDX-License-Identifier: Apache-2.0 */
/* grid_api.c: the node daemon's grid event routes (docs/api.md):
 *   GET    /v1/grid/events        every event held, with its phase and predicted cost
 *   POST   /v1/grid/events        add one (201), or change the one with the same id (200)
 *   GET    /v1/grid/events/{id}   one event
 *   DELETE /v1/grid/events/{id}   delete it (the budget is re-planned at once)
 *   GET    /v1/grid/events/{id}/report   its compliance report (core/event_report.h)
 *   GET    /v1/grid/openadr       the OpenADR 3.0 client's counters (ven.h)
 *   POST   /v1/grid/openadr/notify/{secret}   a VTN's notification (no token: the secret) 
 * Errors are JSON {"error": {"code", "message"}} like every route; an event the SLAs in force
 * cannot meet is 409 with "feasible": false and "achievable_w" beside the error. */
#include <stdio.h>
#include <string.h>

#include "serve/serve_int.h"
#include "util/json.h"

#define PREFIX "/v1/grid/events"

static char *reply(int status, json_t *doc, int *st, size_t *len)
{
    *st = status;
    char *s = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(doc);
    *len = s ? strlen(s) : 0;
    return s;
}

static char *error(int status, const char *code, const char *msg, json_t *extra, int *st,
                   size_t *len)
{
    /* the message may echo a request's bytes (an event id): pfi_json_error answers even when
     * they are not UTF-8 */
    return reply(status, pfi_json_error(extra, code, msg), st, len);
}

static char *error_of(const pfi_err *e, json_t *extra, int *st, size_t *len)
{
    int status = e->code == PFI_ENOENT                                       ? 404
                 : e->code == PFI_EINFEASIBLE || e->code == PFI_EBUSY        ? 409
                 : e->code == PFI_EINVAL || e->code == PFI_ERANGE            ? 400
                                                                             : 500;
    const char *code = e->code == PFI_ENOENT         ? "ENOENT"
                       : e->code == PFI_EINFEASIBLE  ? "EINFEASIBLE"
                       : e->code == PFI_EBUSY        ? "EBUSY"
                       : e->code == PFI_EINVAL       ? "EINVAL"
                       : e->code == PFI_ERANGE       ? "ERANGE"
                                                     : "EIO";
    return error(status, code, e->msg[0] ? e->msg : pfi_code_name(e->code), extra, st, len);
}

static char *post(srv_node *n, const char *body, size_t blen, int *st, size_t *len)
{
    pfi_err e = {0};
    json_error_t je;
    json_t *doc = body && blen ? pfi_json_loadb(body, blen, JSON_REJECT_DUPLICATES, &je) : NULL;
    if (!doc) {
        char msg[256];
        snprintf(msg, sizeof msg, "this request needs a JSON object body%s%s",
                 body && blen ? ": " : "", body && blen ? je.text : "");
        return error(400, "EINVAL", msg, NULL, st, len);
    }
    json_t *res = NULL;
    int created = 0;
    int rc = pfi_srv_grid_add(n, doc, 0, &res, &created, &e);
    json_decref(doc);
    if (rc != PFI_OK)
        return error_of(&e, res, st, len);
    return reply(created ? 201 : 200, res, st, len);
}

const char *pfi_srv_grid_allow(const char *url)
{
    size_t pl = strlen(PREFIX);
    if (!strncmp(url, "/v1/grid/openadr/notify/", 24))
        return "POST";
    if (!strcmp(url, "/v1/grid/openadr"))
        return "GET, HEAD";
    if (!strcmp(url, PREFIX))
        return "GET, HEAD, POST";
    if (strncmp(url, PREFIX "/", pl + 1) || !url[pl + 1])
        return NULL;
    const char *id = url + pl + 1, *slash = strchr(id, '/');
    if (!slash)
        return "GET, HEAD, DELETE";
    return slash > id && (size_t)(slash - id) < PFI_EVENT_ID_MAX && !strcmp(slash, "/report")
               ? "GET, HEAD"
               : NULL;
}

char *pfi_srv_grid_api(srv_node *n, const char *method, const char *url, const char *body,
                   size_t blen, int authorized, int *st, size_t *len)
{
    size_t pl = strlen(PREFIX);
    if (strncmp(url, "/v1/grid/", 9))
        return NULL;
    if (!strncmp(url, "/v1/grid/openadr/notify/", 24)) {
        if (strcmp(method, "POST"))
            return error(405, "EINVAL", "method not allowed on this path", NULL, st, len);
        pthread_mutex_lock(&n->mu);
        pfi_ven *v = n->ven;
        pthread_mutex_unlock(&n->mu);
        if (!pfi_ven_notify(v, url + 24))
            return error(401, "EPERM", "not a notification this node subscribed to", NULL, st,
                         len);
        return reply(200, json_object(), st, len);
    }
    if (!strcmp(url, "/v1/grid/openadr")) {
        if (strcmp(method, "GET") && strcmp(method, "HEAD"))
            return error(405, "EINVAL", "method not allowed on this path", NULL, st, len);
        /* The client lives as long as the daemon's HTTP side (stopped after it). */
        pthread_mutex_lock(&n->mu);
        pfi_ven *v = n->ven;
        pthread_mutex_unlock(&n->mu);
        return reply(200, pfi_ven_json(v), st, len);
    }
    int list = !strcmp(url, PREFIX);
    const char *id = !list && !strncmp(url, PREFIX "/", pl + 1) ? url + pl + 1 : NULL;
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    const char *slash = id ? strchr(id, '/') : NULL;
    if (slash && !strcmp(slash, "/report") && slash > id) {
        char one[PFI_EVENT_ID_MAX];
        if ((size_t)(slash - id) >= sizeof one)
            return error(404, "ENOENT", "no such grid event", NULL, st, len);
        if (!get)
            return error(405, "EINVAL", "method not allowed on this path", NULL, st, len);
        snprintf(one, sizeof one, "%.*s", (int)(slash - id), id);
        pfi_err e = {0};
        json_t *r = pfi_srv_grid_report(n, one, &e);
        return r ? reply(200, r, st, len) : error_of(&e, NULL, st, len);
    }
    if (!list && (!id || !*id || slash))
        return error(404, "ENOENT", "no such path (see docs/api.md)", NULL, st, len);
    if (get) {
        json_t *v = pfi_srv_grid_view(n, list ? NULL : id);
        if (!v)
            return error(404, "ENOENT", "no such grid event", NULL, st, len);
        return reply(200, v, st, len);
    }
    int post_ok = list && !strcmp(method, "POST"), del_ok = id && !strcmp(method, "DELETE");
    if (!post_ok && !del_ok)
        return error(405, "EINVAL", "method not allowed on this path", NULL, st, len);
    if (authorized < 0)
        return error(403, "EPERM", "this daemon has no token file configured: it accepts no "
                                   "change", NULL, st, len);
    if (!authorized)
        return error(401, "EPERM", "missing or wrong bearer token", NULL, st, len);
    if (!pfi_srv_rate_take(n, 0))
        return error(429, "EBUSY", "too many changes: at most a burst of 100, then 20 per "
                                   "second", NULL, st, len);
    if (post_ok)
        return post(n, body, blen, st, len);
    pfi_err e = {0};
    json_t *res = NULL;
    if (pfi_srv_grid_remove(n, id, &res, &e) != PFI_OK)
        return error_of(&e, NULL, st, len);
    return reply(200, res, st, len);
}
