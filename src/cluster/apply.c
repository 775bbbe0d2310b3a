/* SPDX-License-Identifier: Apache-2.0 */
/* apply.c: handing every node its caps without the site ever going over budget.
 *
 * Phase 1 sends every node the lowerings only (each GPU to min(now, target)) and waits until
 * every node acknowledged them after read-back; phase 2 then sends the raises.  Between the
 * phases the sum of caps is at most the sum of the targets, which the plan kept within the
 * budget, and during phase 2 it only climbs toward that sum.
 *
 * A node that fails in phase 1 may have applied none, some or all of its lowerings: it is
 * counted at its caps from before (the highest it can hold), marked silent, and the plan is
 * made again without it before any raise, so the raises elsewhere never spend watts that node
 * may still hold.  A node that fails in phase 2 is counted at its targets (the highest it can
 * hold then), which the plan already fits in the budget.
 *
 * The same rule one level down is each node daemon's: it applies what it is sent with
 * pfi_hw_apply (hw/apply.c), lowerings first, read back.  Here no GPU is touched, only nodes
 * asked over HTTP, so that code is not reused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cl_int.h"
#include "util/json_fast.h"
#include "util/num.h"

#define SAME_W 0.5 /* caps closer than this are the same cap */

/* Sum of the caps each GPU may hold at most, as far as the controller knows (c->mu held). */
static double site_upper_w(const pfi_cl *c)
{
    double s = 0;
    for (int i = 0; i < c->n_nodes; i++)
        for (int g = 0; g < c->nodes[i].n_gpus; g++) {
            const pfi_device *d = &c->nodes[i].gpu[g];
            s += !isnan(d->limit_w) ? d->limit_w : !isnan(d->max_limit_w) ? d->max_limit_w : 0;
        }
    return s;
}

/* What a node said it holds after PUT /v1/caps, per GPU (NAN: not said). */
typedef struct readback {
    int n; /* GPUs 0..n-1 */
    double *limit_w, *enforced_w;
} readback;

/* The last value of each key decode_caps reads in one GPU's object (jansson keeps the last of
 * a repeated key): whether it was an integer / a number, and its value. */
typedef struct gpu_keys {
    int index_int, gpu_int, limit_num, cap_num, enf_num, enfw_num;
    double index, gpu, limit, cap, enf, enfw;
} gpu_keys;

static int key_is(const char *k, size_t n, const char *name)
{
    return strlen(name) == n && !memcmp(k, name, n);
}

/* One element of "gpus" at the cursor, into rb as the jansson path below reads it; -1 when it
 * is not plain (that path decides then). */
static int fast_gpu(pfi_json_cursor *c, readback *rb)
{
    if (!pfi_json_cursor_take(c, '{'))
        return pfi_json_cursor_skip(c, 32); /* not an object: no GPU */
    gpu_keys k;
    memset(&k, 0, sizeof k);
    if (!pfi_json_cursor_take(c, '}')) {
        do {
            const char *key;
            size_t kn;
            if (pfi_json_cursor_string(c, &key, &kn) < 0 || !pfi_json_cursor_take(c, ':'))
                return -1;
            int *flag = NULL, integer = 0, want_int = 0;
            double *v = NULL, x;
            if (key_is(key, kn, "index"))
                flag = &k.index_int, v = &k.index, want_int = 1;
            else if (key_is(key, kn, "gpu"))
                flag = &k.gpu_int, v = &k.gpu, want_int = 1;
            else if (key_is(key, kn, "limit_w"))
                flag = &k.limit_num, v = &k.limit;
            else if (key_is(key, kn, "cap_w"))
                flag = &k.cap_num, v = &k.cap;
            else if (key_is(key, kn, "enforced_limit_w"))
                flag = &k.enf_num, v = &k.enf;
            else if (key_is(key, kn, "enforced_w"))
                flag = &k.enfw_num, v = &k.enfw;
            int ch = pfi_json_cursor_peek(c);
            if (flag && (ch == '-' || (ch >= '0' && ch <= '9'))) {
                if (pfi_json_cursor_number_kind(c, &x, &integer) < 0)
                    return -1;
                *flag = want_int ? integer : 1;
                *v = x;
            } else {
                if (flag)
                    *flag = 0;
                if (pfi_json_cursor_skip(c, 32) < 0)
                    return -1;
            }
        } while (pfi_json_cursor_take(c, ','));
        if (!pfi_json_cursor_take(c, '}'))
            return -1;
    }
    double g = k.index_int ? k.index : k.gpu_int ? k.gpu : -1;
    if (g < 0 || g >= rb->n)
        return 0;
    double l = k.limit_num ? k.limit : k.cap_num ? k.cap : NAN;
    double e = k.enf_num ? k.enf : k.enfw_num ? k.enfw : NAN;
    if (!isnan(l))
        rb->limit_w[(int)g] = l;
    if (!isnan(e))
        rb->enforced_w[(int)g] = e;
    return 0;
}

/* A node's answer {"gpus": [...], ...} read in place, without building its tree: 0 done, -1
 * when it is not plain JSON of that shape (the jansson path reads it then). */
static int fast_caps(const char *s, readback *rb)
{
    pfi_json_cursor c;
    if (pfi_json_cursor_init(&c, s, strlen(s)) < 0 || !pfi_json_cursor_take(&c, '{'))
        return -1;
    if (!pfi_json_cursor_take(&c, '}')) {
        do {
            const char *key;
            size_t kn;
            if (pfi_json_cursor_string(&c, &key, &kn) < 0 || !pfi_json_cursor_take(&c, ':'))
                return -1;
            if (!key_is(key, kn, "gpus")) {
                if (pfi_json_cursor_skip(&c, 32) < 0)
                    return -1;
                continue;
            }
            for (int g = 0; g < rb->n; g++) /* the last "gpus" is the one read */
                rb->limit_w[g] = rb->enforced_w[g] = NAN;
            if (!pfi_json_cursor_take(&c, '[')) {
                if (pfi_json_cursor_skip(&c, 32) < 0)
                    return -1;
                continue;
            }
            if (pfi_json_cursor_take(&c, ']'))
                continue;
            do {
                if (fast_gpu(&c, rb) < 0)
                    return -1;
            } while (pfi_json_cursor_take(&c, ','));
            if (!pfi_json_cursor_take(&c, ']'))
                return -1;
        } while (pfi_json_cursor_take(&c, ','));
        if (!pfi_json_cursor_take(&c, '}'))
            return -1;
    }
    return pfi_json_cursor_peek(&c) == -1 ? 0 : -1;
}

int pfi_cl_decode_caps(const char *reply, int n, double *limit_w, double *enforced_w,
                       int in_place)
{
    readback rb = {n, limit_w, enforced_w};
    for (int g = 0; g < n; g++)
        limit_w[g] = enforced_w[g] = NAN;
    if (in_place && fast_caps(reply, &rb) == 0)
        return 1;
    for (int g = 0; g < n; g++)
        limit_w[g] = enforced_w[g] = NAN;
    json_t *d = pfi_json_fast_loadb(reply, strlen(reply));
    if (!d)
        d = json_loads(reply, 0, NULL);
    json_t *arr = json_object_get(d, "gpus");
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        json_t *iv = json_object_get(o, "index");
        if (!json_is_integer(iv))
            iv = json_object_get(o, "gpu");
        json_int_t g = json_is_integer(iv) ? json_integer_value(iv) : -1;
        if (g < 0 || g >= rb.n)
            continue;
        json_t *l = json_object_get(o, "limit_w");
        if (!json_is_number(l))
            l = json_object_get(o, "cap_w");
        json_t *e = json_object_get(o, "enforced_limit_w");
        if (!json_is_number(e))
            e = json_object_get(o, "enforced_w");
        if (json_is_number(l))
            rb.limit_w[g] = json_number_value(l);
        if (json_is_number(e))
            rb.enforced_w[g] = json_number_value(e);
    }
    json_decref(d);
    return 0;
}

/* Decodes a node's answer as it arrives, on the HTTP client's thread that ran the request:
 * while other requests are still out, not in turn under c->mu after the last one.  Touches
 * only the request's readback. */
static void decode_caps(pfi_http_req *r)
{
    readback *rb = r->ud;
    if (r->status >= 200 && r->status < 300 && r->reply)
        pfi_cl_decode_caps(r->reply, rb->n, rb->limit_w, rb->enforced_w, 1);
    else
        for (int g = 0; g < rb->n; g++)
            rb->limit_w[g] = rb->enforced_w[g] = NAN;
}

/* Takes in what a node said it holds after PUT /v1/caps (c->mu held). */
static void absorb_caps(pfi_cl_node *n, const readback *rb, const double *asked)
{
    for (int g = 0; g < n->n_gpus; g++) {
        if (!isnan(asked[g]))
            n->gpu[g].limit_w = asked[g];
        if (!isnan(rb->limit_w[g]))
            n->gpu[g].limit_w = rb->limit_w[g];
        if (!isnan(rb->enforced_w[g]))
            n->gpu[g].enforced_w = rb->enforced_w[g];
    }
}

/* One phase's requests.  Per-GPU arrays hold stride (the most GPUs of a node) per request, not
 * PFI_MAX_GPUS: a wave at 1,000 nodes is then tens of KB, not megabytes of fresh pages. */
typedef struct wave {
    int n, stride;
    int *node;
    long long *epoch; /* request k's epoch */
    double *asked; /* request k's GPU g at [k * stride + g] */
    double *rb_w;  /* the readbacks' values: 2 * stride per request */
    char **body;
    char (*url)[PFI_CL_URL_MAX + 32];
    pfi_http_req *rq;
    readback *rb;
} wave;

static void wave_free(wave *w)
{
    for (int k = 0; k < w->n; k++)
        free(w->body[k]);
    if (w->rq)
        pfi_http_req_free(w->rq, w->n);
    free(w->node);
    free(w->epoch);
    free(w->asked);
    free(w->body);
    free(w->url);
    free(w->rq);
    free(w->rb);
    free(w->rb_w);
    memset(w, 0, sizeof *w);
}

/* Node n's epoch in this wave: the wave's, or above the last the node says it applied when
 * that is higher (a controller whose clock went back, or a node that took epochs of a clock
 * running ahead).  Per node: one node's word moves its own numbering alone, so a node that
 * says it applied 2^53 (broken, hostile) is refused its caps as stale, not the whole site.
 * (The site's numbering trusted the nodes 12 h ahead at most: a clock 13 h back sent only
 * stale epochs, and a budget cut stayed unmet until the clock was set right.) */
static long long node_epoch(const pfi_cl *c, const pfi_cl_node *n)
{
    return n->caps_epoch >= c->epoch && n->caps_epoch < PFI_CL_EPOCH_MAX ? n->caps_epoch + 1
                                                                          : c->epoch;
}

/* Builds the requests of one phase (c->mu held): lower = 1 sends min(now, target) where that
 * is below now, lower = 0 sends the target where it is above now. */
static int wave_build(pfi_cl *c, double **target, int lower, wave *w)
{
    memset(w, 0, sizeof *w);
    int nn = c->n_nodes, st = 1;
    for (int i = 0; i < nn; i++)
        if (c->nodes[i].n_gpus > st)
            st = c->nodes[i].n_gpus;
    w->stride = st;
    w->node = calloc((size_t)nn + 1, sizeof *w->node);
    w->epoch = calloc((size_t)nn + 1, sizeof *w->epoch);
    w->asked = malloc(((size_t)nn + 1) * (size_t)st * sizeof *w->asked);
    w->body = calloc((size_t)nn + 1, sizeof *w->body);
    w->url = malloc(((size_t)nn + 1) * sizeof *w->url);
    w->rq = calloc((size_t)nn + 1, sizeof *w->rq);
    w->rb = malloc(((size_t)nn + 1) * sizeof *w->rb);
    w->rb_w = malloc(((size_t)nn + 1) * 2 * (size_t)st * sizeof *w->rb_w);
    if (!w->node || !w->epoch || !w->asked || !w->body || !w->url || !w->rq || !w->rb ||
        !w->rb_w)
        return PFI_ENOMEM;
    /* Node daemons refuse an epoch not above the last they applied, so every wave gets a new
     * one: above the last this controller sent, and the wall clock in ms (above what an
     * earlier run of this controller left in flight, when the clock is right). */
    long long ms = (long long)(pfi_clock_wall() * 1000.0);
    c->epoch = c->epoch + 1 > ms ? c->epoch + 1 : ms;
    for (int i = 0; i < nn; i++) {
        pfi_cl_node *n = &c->nodes[i];
        if (!n->up)
            continue;
        int k = w->n, len = 0;
        char body[64 + PFI_MAX_GPUS * 56];
        double *asked = w->asked + (size_t)k * (size_t)st;
        for (int g = 0; g < n->n_gpus; g++) {
            double now = n->gpu[g].limit_w, t = target[i][g], a = NAN;
            asked[g] = NAN;
            if (isnan(t))
                continue;
            if (lower && (isnan(now) || t < now - SAME_W))
                a = t;
            else if (lower && n->resend)
                a = t < now ? t : now; /* restarted: sent again, never raised in this phase */
            else if (!lower && !isnan(now) && t > now + SAME_W)
                a = t;
            if (isnan(a))
                continue;
            asked[g] = a;
            char num[40];
            pfi_num_json(num, sizeof num, a);
            len += snprintf(body + len, sizeof body - (size_t)len, "%s{\"gpu\":%d,\"cap_w\":%s}",
                            len ? "," : "", g, num);
        }
        if (!len)
            continue;
        char head[256];
        w->epoch[k] = node_epoch(c, n);
        int hl = n->caps_named ? snprintf(head, sizeof head,
                                          "{\"epoch\":%lld,\"controller\":\"%s\",\"caps\":[",
                                          w->epoch[k], c->cfg.name)
                               : snprintf(head, sizeof head, "{\"epoch\":%lld,\"caps\":[",
                                          w->epoch[k]);
        w->body[k] = malloc((size_t)hl + (size_t)len + 3);
        if (!w->body[k])
            return PFI_ENOMEM;
        memcpy(w->body[k], head, (size_t)hl);
        memcpy(w->body[k] + hl, body, (size_t)len);
        memcpy(w->body[k] + hl + len, "]}", 3);
        w->node[k] = i;
        pfi_cl_build_url(n->url, "/v1/caps", w->url[k], sizeof w->url[0]);
        w->rq[k].url = w->url[k];
        w->rq[k].unix_sock = pfi_cl_unix_sock(n->url);
        w->rq[k].method = "PUT";
        w->rq[k].body = w->body[k];
        w->rq[k].done = decode_caps;
        w->rb[k].n = n->n_gpus;
        w->rb[k].limit_w = w->rb_w + (size_t)k * 2 * (size_t)st;
        w->rb[k].enforced_w = w->rb[k].limit_w + st;
        w->rq[k].ud = &w->rb[k];
        w->rq[k].affinity = (unsigned)i + 1; /* a node's requests on one connection */
        w->n++;
    }
    return PFI_OK;
}

/* Folds a phase's answers into the state (c->mu held).  Returns how many nodes failed. */
static int wave_absorb(pfi_cl *c, wave *w, int lower)
{
    int failed = 0;
    double wall = pfi_clock_wall();
    for (int k = 0; k < w->n; k++) {
        pfi_cl_node *n = &c->nodes[w->node[k]];
        if (w->rq[k].status >= 200 && w->rq[k].status < 300) {
            absorb_caps(n, &w->rb[k], w->asked + (size_t)k * (size_t)w->stride);
            if (w->epoch[k] > n->caps_epoch) /* the next wave's goes above it */
                n->caps_epoch = w->epoch[k];
            if (lower)
                n->resend = 0;
            n->last_ok_wall = wall;
            if (lower)
                c->stats.n_lowered++;
            else
                c->stats.n_raised++;
            continue;
        }
        failed++;
        c->stats.n_node_fail++;
        n->up = 0;
        pfi_cl_node_refused(n, "PUT /v1/caps", &w->rq[k]);
        /* A raise may or may not have landed: count the node at the higher value. */
        const double *asked = w->asked + (size_t)k * (size_t)w->stride;
        if (!lower)
            for (int g = 0; g < n->n_gpus; g++)
                if (!isnan(asked[g]))
                    n->gpu[g].limit_w = asked[g];
    }
    return failed;
}

static void send_wave(pfi_cl *c, wave *w)
{
    pfi_http_many(c->http, w->rq, w->n, c->token, c->cfg.timeout_s, c->cfg.max_parallel);
}

double **pfi_cl_targets_new(const pfi_cl *c)
{
    int nn = c->n_nodes, stride = 1;
    for (int i = 0; i < nn; i++)
        if (c->nodes[i].n_gpus > stride)
            stride = c->nodes[i].n_gpus;
    size_t head = ((size_t)nn + 1) * sizeof(double *), cells = (size_t)nn * (size_t)stride;
    double **t = malloc(head + cells * sizeof(double));
    if (!t)
        return NULL;
    double *flat = (double *)((char *)t + head);
    for (size_t k = 0; k < cells; k++)
        flat[k] = NAN;
    for (int i = 0; i < nn; i++)
        t[i] = flat + (size_t)i * (size_t)stride;
    return t;
}

int pfi_cl_apply(pfi_cl *c, double budget_w, const pfi_cl_planned *pre, pfi_err *err)
{
    double t0 = pfi_clock_mono();
    pthread_mutex_lock(&c->mu);
    long long lowered0 = c->stats.n_lowered, raised0 = c->stats.n_raised;
    if (isnan(budget_w) && c->epoch == 0) {
        /* No budget ever set: pfi has nothing to hand out and leaves every cap alone. */
        pthread_mutex_unlock(&c->mu);
        return PFI_OK;
    }
    /* The plan made ahead is this apply's first when it planned the same thing: the same
     * budget with the SLAs as they are now (a grid event may have started meanwhile). */
    int use_pre = pre && pre->target && pre->n_nodes == c->n_nodes &&
                  pre->budget_w == budget_w && pre->sla_yield == c->sla_yield;
    double **target = use_pre ? pre->target : pfi_cl_targets_new(c);
    pthread_mutex_unlock(&c->mu);
    if (!target)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");

    int rc = PFI_OK, lowered_failed = 0;
    double peak = 0, t_alloc = use_pre ? pre->alloc_s : 0;
    /* Plans again (at most 3 times) while nodes fail to lower. */
    for (int attempt = 0; attempt < 3; attempt++) {
        double ta = pfi_clock_mono();
        pthread_mutex_lock(&c->mu);
        rc = attempt == 0 && use_pre ? PFI_OK : pfi_cl_plan(c, budget_w, target, err);
        t_alloc += pfi_clock_mono() - ta;
        wave w;
        if (rc == PFI_OK && wave_build(c, target, 1, &w) != PFI_OK) {
            wave_free(&w);
            rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
        }
        pthread_mutex_unlock(&c->mu);
        if (rc != PFI_OK)
            break;
        send_wave(c, &w);
        pthread_mutex_lock(&c->mu);
        lowered_failed = wave_absorb(c, &w, 1);
        double up = site_upper_w(c);
        if (up > peak)
            peak = up;
        pthread_mutex_unlock(&c->mu);
        wave_free(&w);
        if (lowered_failed == 0)
            break;
    }
    if (rc == PFI_OK && lowered_failed == 0) {
        wave w;
        pthread_mutex_lock(&c->mu);
        if (wave_build(c, target, 0, &w) != PFI_OK)
            rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
        pthread_mutex_unlock(&c->mu);
        if (rc == PFI_OK) {
            send_wave(c, &w);
            pthread_mutex_lock(&c->mu);
            wave_absorb(c, &w, 0);
            double up = site_upper_w(c);
            if (up > peak)
                peak = up;
            pthread_mutex_unlock(&c->mu);
        }
        wave_free(&w);
    } else if (rc == PFI_OK) {
        /* Nodes kept failing to lower: no raise anywhere this time; the next refresh retries. */
        pthread_mutex_lock(&c->mu);
        pfi_cl_note(c, 1,
                 "raises held back: nodes failed to acknowledge lowerings 3 times running");
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_lock(&c->mu);
    if (rc == PFI_OK) {
        c->budget_now_w = budget_w;
        double took = pfi_clock_mono() - t0;
        c->stats.last_alloc_s = t_alloc;
        c->stats.peak_w = peak;
        /* Counted and timed only when it moved something: every heartbeat re-plans, and those
         * microsecond no-ops buried the real changes (an alert on slow applies never fired). */
        if (pfi_cl_decision_add(c, budget_w, took, c->stats.n_lowered - lowered0,
                                c->stats.n_raised - raised0)) {
            c->stats.n_apply++;
            c->stats.last_apply_s = took;
            pfi_prom_hist_observe(&c->apply_hist, took);
        }
        /* Each job's cap now: the highest of its GPUs', in one pass over the site. */
        for (int j = 0; j < c->n_jobs; j++)
            c->jobs[j].cap_now_w = NAN;
        for (int i = 0; i < c->n_nodes; i++) {
            const pfi_cl_node *n = &c->nodes[i];
            for (int g = 0; g < n->n_gpus; g++) {
                int j = n->job_of[g];
                if (j < 0 || j >= c->n_jobs || isnan(n->gpu[g].limit_w))
                    continue;
                pfi_cl_job *J = &c->jobs[j];
                if (isnan(J->cap_now_w) || n->gpu[g].limit_w > J->cap_now_w)
                    J->cap_now_w = n->gpu[g].limit_w;
            }
        }
    }
    pthread_mutex_unlock(&c->mu);
    if (!use_pre)
        free(target);
    return rc;
}
