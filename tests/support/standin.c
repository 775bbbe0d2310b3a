/* SPDX-License-Identifier: Apache-2.0 */
/* standin.c: many node daemons behind one loopback HTTP server, for the controller's tests and
 * its 1,000-node benchmark.  They speak the node API the controller uses (GET /v1/gpus,
 * GET /v1/jobs, PUT /v1/caps, POST /v1/heartbeat) under /n/NAME/, hold caps in memory, and
 * check the site's cap sum after every change under one lock, so a test can ask for the largest
 * sum that ever existed.  They are stand-ins: no GPU, no curve estimation, no watchdog. */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "cluster/cluster.h"
#include "cluster/mhd.h"
#include "util/clock.h"
#include "util/json_fast.h"
#include "util/num.h"
#include "standin.h"

#define BODY_MAX (1u << 20)

typedef struct sjob {
    char id[PFI_CL_NAME_MAX];
    int n_gpus, gpus[PFI_MAX_GPUS];
    double sla, weight, p0_w, t0;
    int n_points;
    double cap_w[PFI_CL_CURVE_MAX], tput[PFI_CL_CURVE_MAX];
    int n_seen;
    double seen_cap_w[8], seen_s[8];
} sjob;

typedef struct snode {
    char name[PFI_CL_NAME_MAX];
    int n_gpus;
    double cap[PFI_MAX_GPUS];
    int silent;
    int refuse; /* changes and heartbeats answered 401 (a wrong token); reads answered */
    int n_jobs;
    sjob *jobs;
    /* The last cap epoch taken, refused as a node daemon does (at or below it: 409; outside 1
     * to 2^53: 400), and reported in GET /v1/gpus; pfi_standin_set_epoch
     * makes it say another (a broken or hostile node). */
    long long epoch;
} snode;

struct pfi_standin {
    struct MHD_Daemon *d;
    pthread_mutex_t mu;
    pthread_mutex_t hold_mu; /* pfi_standin_hold: requests wait while held */
    pthread_cond_t hold_cv;
    int held, waiting;
    int n;
    snode *nodes;    /* sorted by name */
    double min_w, max_w;
    double sum, peak;
    long long requests, connections;
    int named;            /* pfi_standin_set_named: GET /v1/gpus says caps_named */
    char caps_by[128];    /* the controller named by the last caps taken ("" none) */
};

static int cmp_node(const void *a, const void *b)
{
    return strcmp(((const snode *)a)->name, ((const snode *)b)->name);
}

static snode *find(pfi_standin *s, const char *name, size_t len)
{
    char key[PFI_CL_NAME_MAX];
    if (len >= sizeof key)
        return NULL;
    memcpy(key, name, len);
    key[len] = '\0';
    snode probe;
    snprintf(probe.name, sizeof probe.name, "%s", key);
    return bsearch(&probe, s->nodes, (size_t)s->n, sizeof *s->nodes, cmp_node);
}

static enum MHD_Result reply(struct MHD_Connection *con, unsigned code, json_t *doc)
{
    return pfi_cl_send_json(con, code, doc, JSON_COMPACT);
}

static enum MHD_Result fail(struct MHD_Connection *con, unsigned code, const char *msg)
{
    return reply(con, code, json_pack("{s:s}", "error", msg));
}

/* The same document as text, written directly: the answer to every PUT /v1/caps, kept cheap
 * so that the stand-ins' own CPU (on the controller's machine here, on other machines in a
 * site) stays small beside the controller's. */
static char *gpus_text(pfi_standin *s, const snode *n)
{
    size_t cap = 32 + (size_t)n->n_gpus * 256, len = 0; /* 213 at most a GPU */
    char *t = malloc(cap);
    if (!t)
        return NULL;
    len += (size_t)snprintf(t, cap, "{\"gpus\":[");
    char lo[40], hi[40], now[40];
    pfi_num_json(lo, sizeof lo, s->min_w);
    pfi_num_json(hi, sizeof hi, s->max_w);
    for (int g = 0; g < n->n_gpus; g++) {
        pfi_num_json(now, sizeof now, n->cap[g]);
        len += (size_t)snprintf(t + len, cap - len,
                                "%s{\"index\":%d,\"min_limit_w\":%s,\"max_limit_w\":%s,"
                                "\"default_limit_w\":%s,\"limit_w\":%s,\"enforced_limit_w\":%s}",
                                g ? "," : "", g, lo, hi, hi, now, now);
    }
    snprintf(t + len, cap - len, "]}");
    return t;
}

static json_t *gpus_json(pfi_standin *s, const snode *n)
{
    json_t *arr = json_array();
    for (int g = 0; g < n->n_gpus; g++)
        json_array_append_new(arr, json_pack("{s:i, s:f, s:f, s:f, s:f, s:f}", "index", g,
                                             "min_limit_w", s->min_w, "max_limit_w", s->max_w,
                                             "default_limit_w", s->max_w, "limit_w", n->cap[g],
                                             "enforced_limit_w", n->cap[g]));
    json_t *o = json_pack("{s:o, s:I}", "gpus", arr, "caps_epoch", (json_int_t)n->epoch);
    if (s->named)
        json_object_set_new(o, "caps_named", json_true());
    return o;
}

static json_t *jobs_json(const snode *n)
{
    json_t *arr = json_array();
    for (int k = 0; k < n->n_jobs; k++) {
        const sjob *j = &n->jobs[k];
        json_t *g = json_array();
        for (int q = 0; q < j->n_gpus; q++)
            json_array_append_new(g, json_integer(j->gpus[q]));
        json_t *o = json_pack("{s:s, s:o, s:f}", "id", j->id, "gpus", g, "weight", j->weight);
        json_object_set_new(o, "sla", isnan(j->sla) ? json_null() : json_real(j->sla));
        if (j->n_points >= 2) {
            json_t *cw = json_array(), *tp = json_array();
            for (int q = 0; q < j->n_points; q++) {
                json_array_append_new(cw, json_real(j->cap_w[q]));
                json_array_append_new(tp, json_real(j->tput[q]));
            }
            json_object_set_new(o, "curve", json_pack("{s:o, s:o, s:f, s:f}", "cap_w", cw,
                                                      "tput", tp, "p0_w", j->p0_w, "t0", j->t0));
        } else {
            json_object_set_new(o, "curve", json_null());
        }
        json_t *seen = json_array();
        for (int q = 0; q < j->n_seen; q++)
            json_array_append_new(seen, json_pack("{s:f, s:f}", "cap_w", j->seen_cap_w[q],
                                                  "slowdown", j->seen_s[q]));
        json_object_set_new(o, "sla_breaches_seen", seen);
        json_array_append_new(arr, o);
    }
    return json_pack("{s:o}", "jobs", arr);
}

void pfi_standin_set_named(pfi_standin *s, int named)
{
    pthread_mutex_lock(&s->mu);
    s->named = named;
    pthread_mutex_unlock(&s->mu);
}

void pfi_standin_caps_by(pfi_standin *s, char *out, size_t n)
{
    pthread_mutex_lock(&s->mu);
    snprintf(out, n, "%s", s->caps_by);
    pthread_mutex_unlock(&s->mu);
}

long long pfi_standin_epoch(pfi_standin *s, const char *node)
{
    pthread_mutex_lock(&s->mu);
    snode *n = find(s, node, strlen(node));
    long long e = n ? n->epoch : 0;
    pthread_mutex_unlock(&s->mu);
    return e;
}

void pfi_standin_set_epoch(pfi_standin *s, const char *node, long long epoch)
{
    pthread_mutex_lock(&s->mu);
    snode *n = find(s, node, strlen(node));
    if (n)
        n->epoch = epoch;
    pthread_mutex_unlock(&s->mu);
}

/* PUT /v1/caps: all or nothing, like the node daemon: any bad entry and nothing changes. */
static enum MHD_Result put_caps(pfi_standin *s, snode *n, struct MHD_Connection *con,
                                const char *body)
{
    json_t *d = pfi_json_fast_loadb(body, strlen(body));
    if (!d)
        d = json_loads(body, 0, NULL);
    json_t *caps = json_object_get(d, "caps");
    if (!json_is_array(caps)) {
        json_decref(d);
        return fail(con, 400, "expected {\"caps\": [{\"gpu\", \"cap_w\"}]}");
    }
    /* A node daemon that does not say caps_named takes no other field, as pfi serve before it
     * did (400): a controller must not name itself to it. */
    json_t *by = json_object_get(d, "controller");
    if (json_object_size(d) > (size_t)(1 + (json_object_get(d, "epoch") != NULL) +
                                       (s->named && by != NULL))) {
        json_decref(d);
        return fail(con, 400, "unknown field 'controller' (known: epoch, caps)");
    }
    if (json_is_string(by))
        snprintf(s->caps_by, sizeof s->caps_by, "%s", json_string_value(by));
    json_t *ep = json_object_get(d, "epoch");
    long long epoch = json_is_integer(ep) ? (long long)json_integer_value(ep) : 0;
    if (ep && (!json_is_integer(ep) || epoch < 1 || epoch > 9007199254740992LL)) {
        json_decref(d);
        return fail(con, 400, "epoch: expected 1 to 2^53");
    }
    if (ep && epoch <= n->epoch) {
        json_decref(d);
        return fail(con, 409, "stale epoch");
    }
    double next[PFI_MAX_GPUS];
    memcpy(next, n->cap, sizeof next);
    size_t i;
    json_t *o;
    json_array_foreach(caps, i, o)
    {
        json_t *g = json_object_get(o, "gpu"), *w = json_object_get(o, "cap_w");
        if (!json_is_integer(g) || !json_is_number(w) || json_integer_value(g) < 0 ||
            json_integer_value(g) >= n->n_gpus) {
            json_decref(d);
            return fail(con, 400, "unknown GPU or no cap_w");
        }
        double v = json_number_value(w);
        if (v < s->min_w - 1e-9 || v > s->max_w + 1e-9) {
            json_decref(d);
            return fail(con, 400, "cap outside the GPU's limits");
        }
        next[json_integer_value(g)] = v;
    }
    json_decref(d);
    if (epoch > 0)
        n->epoch = epoch;
    /* Lowerings first, then raises, each visible in the site sum: the order a node keeps. */
    for (int pass = 0; pass < 2; pass++)
        for (int g = 0; g < n->n_gpus; g++) {
            int lower = next[g] < n->cap[g];
            if ((pass == 0) != lower || next[g] == n->cap[g])
                continue;
            s->sum += next[g] - n->cap[g];
            n->cap[g] = next[g];
            if (s->sum > s->peak)
                s->peak = s->sum;
        }
    return pfi_cl_send_text(con, 200, gpus_text(s, n), "application/json");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *con, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *data_size, void **con_cls)
{
    pfi_standin *s = cls;
    pfi_cl_body *u;
    int more = pfi_cl_body_step(con_cls, data, data_size, BODY_MAX, &u);
    if (more)
        return more > 0 ? MHD_YES : MHD_NO;
    if (u->too_big)
        return MHD_NO;
    pthread_mutex_lock(&s->hold_mu);
    if (s->held) {
        s->waiting++;
        while (s->held)
            pthread_cond_wait(&s->hold_cv, &s->hold_mu);
        s->waiting--;
    }
    pthread_mutex_unlock(&s->hold_mu);
    if (strncmp(url, "/n/", 3))
        return fail(con, 404, "expected /n/NODE/v1/...");
    const char *name = url + 3, *slash = strchr(name, '/');
    if (!slash)
        return fail(con, 404, "expected /n/NODE/v1/...");
    pthread_mutex_lock(&s->mu);
    s->requests++;
    snode *n = find(s, name, (size_t)(slash - name));
    enum MHD_Result rc;
    if (!n)
        rc = fail(con, 404, "no such node");
    else if (n->silent)
        rc = MHD_NO; /* drops the connection without an answer */
    else if (n->refuse && strcmp(method, "GET"))
        rc = fail(con, 401, "missing or wrong bearer token");
    else if (!strcmp(slash, "/v1/gpus") && !strcmp(method, "GET"))
        rc = reply(con, 200, gpus_json(s, n));
    else if (!strcmp(slash, "/v1/jobs") && !strcmp(method, "GET"))
        rc = reply(con, 200, jobs_json(n));
    else if (!strcmp(slash, "/v1/caps") && !strcmp(method, "PUT"))
        rc = put_caps(s, n, con, u->buf ? u->buf : "");
    else if (!strcmp(slash, "/v1/heartbeat") && !strcmp(method, "POST"))
        rc = reply(con, 200, json_pack("{s:b}", "ok", 1));
    else
        rc = fail(con, 404, "no such route");
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static void on_connection(void *cls, struct MHD_Connection *con, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    pfi_standin *s = cls;
    if (toe != MHD_CONNECTION_NOTIFY_STARTED)
        return;
    pthread_mutex_lock(&s->mu);
    s->connections++;
    pthread_mutex_unlock(&s->mu);
}

int pfi_standin_start(int n_nodes, const char *const *names, int gpus_per_node, double min_w,
                      double max_w, pfi_standin **out, int *port, pfi_err *err)
{
    return pfi_standin_start_threads(4, n_nodes, names, gpus_per_node, min_w, max_w, out, port,
                                     err);
}

int pfi_standin_start_threads(int threads, int n_nodes, const char *const *names,
                              int gpus_per_node, double min_w, double max_w, pfi_standin **out,
                              int *port, pfi_err *err)
{
    *out = NULL;
    if (threads < 1 || n_nodes < 1 || gpus_per_node < 1 || gpus_per_node > PFI_MAX_GPUS ||
        !(min_w > 0) || max_w < min_w)
        return pfi_err_set(err, PFI_EINVAL, "stand-in: bad node count, GPU count or limits");
    pfi_standin *s = calloc(1, sizeof *s);
    if (!s || !(s->nodes = calloc((size_t)n_nodes, sizeof *s->nodes))) {
        free(s);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->hold_mu, NULL);
    pthread_cond_init(&s->hold_cv, NULL);
    s->n = n_nodes;
    s->min_w = min_w;
    s->max_w = max_w;
    for (int i = 0; i < n_nodes; i++) {
        snode *n = &s->nodes[i];
        snprintf(n->name, sizeof n->name, "%s", names[i]);
        n->n_gpus = gpus_per_node;
        for (int g = 0; g < gpus_per_node; g++)
            n->cap[g] = max_w;
        s->sum += max_w * gpus_per_node;
    }
    s->peak = s->sum;
    qsort(s->nodes, (size_t)n_nodes, sizeof *s->nodes, cmp_node);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* poll(), not epoll: libmicrohttpd's epoll loop (0.9.75, and its code to this day) waits
     * again with the caller's timeout after a batch of exactly MAX_EVENTS (128) events before
     * it serves them, so with no connection timeout a thread that saw 128 requests at once
     * sleeps on them until some other event comes (the 1,000-node benchmark's refresh stalled
     * so until the controller's timeout, one run in 13-40). */
    s->d = MHD_start_daemon(MHD_USE_POLL_INTERNAL_THREAD,
                            0, NULL, NULL, handle, s, MHD_OPTION_NOTIFY_COMPLETED,
                            pfi_cl_body_done, NULL, MHD_OPTION_NOTIFY_CONNECTION,
                            on_connection, s, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads,
                            MHD_OPTION_CONNECTION_LIMIT, 8000, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&sa, MHD_OPTION_END);
    if (!s->d) {
        pfi_standin_stop(s);
        return pfi_err_set(err, PFI_EIO, "stand-in: cannot start the HTTP server");
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    *port = di ? di->port : 0;
    *out = s;
    return PFI_OK;
}

int pfi_standin_set_seen(pfi_standin *s, const char *node, const char *id, int n,
                         const double *cap_w, const double *slowdown, pfi_err *err)
{
    if (n < 0 || n > 8)
        return pfi_err_set(err, PFI_EINVAL, "stand-in: 0 to 8 breaches, not %d", n);
    pthread_mutex_lock(&s->mu);
    snode *nd = find(s, node, strlen(node));
    sjob *j = NULL;
    for (int k = 0; nd && k < nd->n_jobs && !j; k++)
        if (!strcmp(nd->jobs[k].id, id))
            j = &nd->jobs[k];
    if (j) {
        j->n_seen = n;
        for (int k = 0; k < n; k++)
            j->seen_cap_w[k] = cap_w[k], j->seen_s[k] = slowdown[k];
    }
    pthread_mutex_unlock(&s->mu);
    return j ? PFI_OK : pfi_err_set(err, PFI_ENOENT, "stand-in: no job %s on %s", id, node);
}

int pfi_standin_add_job(pfi_standin *s, const pfi_standin_job *j, pfi_err *err)
{
    if (!j->id || !j->node || j->n_gpus < 1 || j->n_gpus > PFI_MAX_GPUS ||
        j->n_points > PFI_CL_CURVE_MAX)
        return pfi_err_set(err, PFI_EINVAL, "stand-in job: bad id, node, GPUs or curve");
    pthread_mutex_lock(&s->mu);
    snode *n = find(s, j->node, strlen(j->node));
    sjob *nj = n ? realloc(n->jobs, (size_t)(n->n_jobs + 1) * sizeof *n->jobs) : NULL;
    if (!nj) {
        pthread_mutex_unlock(&s->mu);
        return pfi_err_set(err, n ? PFI_ENOMEM : PFI_ENOENT, "stand-in: no node %s", j->node);
    }
    n->jobs = nj;
    sjob *x = &n->jobs[n->n_jobs++];
    memset(x, 0, sizeof *x);
    snprintf(x->id, sizeof x->id, "%s", j->id);
    x->n_gpus = j->n_gpus;
    memcpy(x->gpus, j->gpus, sizeof(int) * (size_t)j->n_gpus);
    x->sla = j->sla;
    x->weight = j->weight > 0 ? j->weight : 1.0;
    x->n_points = j->n_points;
    for (int k = 0; k < j->n_points; k++) {
        x->cap_w[k] = j->cap_w[k];
        x->tput[k] = j->tput[k];
    }
    x->p0_w = j->p0_w;
    x->t0 = j->t0;
    pthread_mutex_unlock(&s->mu);
    return PFI_OK;
}

void pfi_standin_set_refuse(pfi_standin *s, const char *node, int refuse)
{
    pthread_mutex_lock(&s->mu);
    snode *n = find(s, node, strlen(node));
    if (n)
        n->refuse = refuse;
    pthread_mutex_unlock(&s->mu);
}

void pfi_standin_set_silent(pfi_standin *s, const char *node, int silent)
{
    pthread_mutex_lock(&s->mu);
    snode *n = find(s, node, strlen(node));
    if (n)
        n->silent = silent;
    pthread_mutex_unlock(&s->mu);
}

double pfi_standin_cap_sum(pfi_standin *s)
{
    pthread_mutex_lock(&s->mu);
    double v = s->sum;
    pthread_mutex_unlock(&s->mu);
    return v;
}

double pfi_standin_peak(pfi_standin *s)
{
    pthread_mutex_lock(&s->mu);
    double v = s->peak;
    pthread_mutex_unlock(&s->mu);
    return v;
}

void pfi_standin_reset_peak(pfi_standin *s)
{
    pthread_mutex_lock(&s->mu);
    s->peak = s->sum;
    pthread_mutex_unlock(&s->mu);
}

double pfi_standin_cap(pfi_standin *s, const char *node, int gpu)
{
    pthread_mutex_lock(&s->mu);
    snode *n = find(s, node, strlen(node));
    double v = n && gpu >= 0 && gpu < n->n_gpus ? n->cap[gpu] : NAN;
    pthread_mutex_unlock(&s->mu);
    return v;
}

long long pfi_standin_requests(pfi_standin *s)
{
    pthread_mutex_lock(&s->mu);
    long long v = s->requests;
    pthread_mutex_unlock(&s->mu);
    return v;
}

long long pfi_standin_connections(pfi_standin *s)
{
    pthread_mutex_lock(&s->mu);
    long long v = s->connections;
    pthread_mutex_unlock(&s->mu);
    return v;
}

void pfi_standin_hold(pfi_standin *s, int hold)
{
    pthread_mutex_lock(&s->hold_mu);
    s->held = hold;
    if (!hold)
        pthread_cond_broadcast(&s->hold_cv);
    pthread_mutex_unlock(&s->hold_mu);
}

int pfi_standin_waiting(pfi_standin *s)
{
    pthread_mutex_lock(&s->hold_mu);
    int v = s->waiting;
    pthread_mutex_unlock(&s->hold_mu);
    return v;
}

void pfi_standin_stop(pfi_standin *s)
{
    if (!s)
        return;
    if (s->d) {
        pfi_standin_hold(s, 0);
        MHD_stop_daemon(s->d);
    }
    for (int i = 0; i < s->n; i++)
        free(s->nodes[i].jobs);
    free(s->nodes);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->hold_mu);
    pthread_cond_destroy(&s->hold_cv);
    free(s);
}
