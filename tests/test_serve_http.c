/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve_http.c: the node daemon's HTTP transport (src/serve/http.c) under load and
 * hostile clients.  A burst of requests that its server thread finds ready all at once is
 * answered at once, whatever its size (libmicrohttpd's epoll loop slept on exactly 128 until
 * some other event or the connection timeout came); one address's slow clients cannot starve
 * another's, whose budget change is applied within the budget; idle and half-sent connections
 * are closed; a body said to be too large is refused before it is read, and nothing changes;
 * a query argument a route does not take, given twice or no number in range is refused,
 * named, and nothing changes. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hw/hw.h"
#include "serve/serve_int.h"
#include "support/burst.h"
#include "support/query_check.h"
#include "support/sim_node.h"

#define MAXC 200

#define TOKEN "test-token-0123456789abcdef"

typedef struct node {
    pfi_test_node t;
    srv_http *h;
    int port;
} node;

/* A node daemon on 127.0.0.1 (a free port) under cfg's defaults changed by what set does. */
static void node_up(node *x, void (*set)(pfi_serve_config *))
{
    pfi_serve_config c;
    pfi_serve_config_defaults(&c);
    snprintf(c.listen, sizeof c.listen, "127.0.0.1:0");
    if (set)
        set(&c);
    assert_int_equal(pfi_test_node_start(&x->t, "srvhttp", &c), 0);
    snprintf(x->t.n->token, sizeof x->t.n->token, "%s", TOKEN);
    char where[300];
    pfi_err e = {0};
    assert_int_equal(pfi_srv_http_bind(&x->t.cfg, &x->h, where, sizeof where, &e), PFI_OK);
    assert_int_equal(pfi_srv_http_serve(x->h, x->t.n, &e), PFI_OK);
    const char *colon = strrchr(where, ':');
    assert_non_null(colon);
    x->port = atoi(colon + 1);
    assert_true(x->port > 0);
}

static void node_down(node *x)
{
    pfi_srv_http_stop(x->h);
    pfi_test_node_stop(&x->t);
}

static const char HEALTH[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

/* One server thread and a connection timeout far above the test's bound: a stall would last
 * until it. */
static void one_thread(pfi_serve_config *c)
{
    c->threads = 1;
    c->client_timeout_s = 600;
}

/* k+1 connections, each answered once (so the server holds all of them); the node's lock
 * taken, the thread is held in a request on the first while one request goes on each of the
 * k others; the lock let go, the thread finds the k (and what the first's answer brings)
 * ready at once.  Returns how many of the k were answered within a bound far above their
 * time (well under a second without a stall). */
static int burst(int k)
{
    node x;
    node_up(&x, one_thread);
    int fd[MAXC + 1];
    for (int i = 0; i <= k; i++) {
        char src[32]; /* 30 to an address: one address may hold 32 */
        snprintf(src, sizeof src, "127.0.0.%d", 2 + i / 30);
        fd[i] = pfi_test_dial(src, x.port);
        assert_true(fd[i] >= 0);
        assert_int_equal(pfi_test_send(fd[i], HEALTH, sizeof HEALTH - 1), 0);
        assert_true(pfi_test_status(fd[i], 30) >= 200);
    }
    pthread_mutex_lock(&x.t.n->mu);
    assert_int_equal(pfi_test_send(fd[0], HEALTH, sizeof HEALTH - 1), 0);
    assert_int_equal(pfi_test_wait_blocked(1, 30), 1);
    for (int i = 1; i <= k; i++)
        assert_int_equal(pfi_test_send(fd[i], HEALTH, sizeof HEALTH - 1), 0);
    pthread_mutex_unlock(&x.t.n->mu);
    int answered = pfi_test_answers(fd + 1, k, "HTTP/1.1 ", 5);
    for (int i = 0; i <= k; i++)
        close(fd[i]);
    node_down(&x);
    return answered;
}

static void test_burst_answered(void **state)
{
    (void)state;
    pfi_test_nofile(4096);
    for (int k = 125; k <= 131; k++) {
        int got = burst(k);
        if (got != k)
            fprintf(stderr, "burst of %d: %d answered\n", k, got);
        assert_int_equal(got, k);
    }
}

static double sum_limits(node *x)
{
    double sum = 0;
    for (int i = 0; i < x->t.n->n_gpus; i++) {
        pfi_device d;
        pfi_err e = {0};
        assert_int_equal(pfi_hw_info(x->t.b, i, &d, &e), PFI_OK);
        sum += d.limit_w;
    }
    return sum;
}

/* 1,100 slow connections from one address (more than max_connections, 1024), every one sending
 * an unfinished header: that address keeps at most its 32 (max_client_connections), the rest
 * are closed at once, and another address is still answered: its budget change is applied,
 * the limits within the budget. */
static void test_one_address_cannot_starve(void **state)
{
    (void)state;
    enum { N = 1100 };
    assert_true(pfi_test_nofile(4 * N) >= 3 * N);
    node x;
    node_up(&x, NULL);
    static int fd[N];
    assert_int_equal(pfi_test_slow_clients(x.port, "127.0.0.1", N, fd), N);
    assert_true(pfi_test_request("127.0.0.9", x.port, HEALTH, 30) >= 200);
    assert_int_equal(pfi_test_send_body(x.port, "127.0.0.9", TOKEN, "PUT", "/v1/budget",
                                        "{\"percent\": 70}"),
                     200);
    assert_true(sum_limits(&x) <= 0.7 * x.t.n->nominal_w + 1e-6);
    assert_true(pfi_test_close_held(fd, N, 32, 30) <= 32);
    node_down(&x);
}

static void short_timeout(pfi_serve_config *c)
{
    c->client_timeout_s = 1;
}

/* A connection that sends nothing, and one that stops in the middle of its header, are
 * closed once idle for client_timeout (1 s here); a request after that is answered. */
static void test_idle_and_slow_closed(void **state)
{
    (void)state;
    node x;
    node_up(&x, short_timeout);
    assert_int_equal(pfi_test_idle_and_slow(x.port, 20), 0);
    assert_true(pfi_test_request(NULL, x.port, HEALTH, 30) >= 200);
    node_down(&x);
}

/* A body said to be larger than max_body (64 KiB) is refused with 413 as soon as the header is
 * read, without waiting for the body; one sent over it, or sent in chunks over it, is refused
 * too; headers over the connection's 64 KiB get a 4xx; none changes the budget or a limit. */
static void test_big_body_refused(void **state)
{
    (void)state;
    node x;
    node_up(&x, NULL);
    double before = sum_limits(&x);
    int st3[3];
    pfi_test_big_bodies(x.port, TOKEN, "/v1/budget", "{\"percent\": 70}", st3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(st3[i], 413);
    size_t big = 100 << 10;
    char *body = malloc(big);
    assert_non_null(body);
    memset(body, ' ', big);
    /* Headers over the connection's memory. */
    memcpy(body, "PUT /v1/budget HTTP/1.1\r\nX-Pad: ", 32);
    memcpy(body + big - 4, "\r\n\r\n", 4);
    int fd = pfi_test_dial(NULL, x.port);
    assert_true(fd >= 0);
    pfi_test_send(fd, body, big); /* the server may close before the end */
    int st = pfi_test_status(fd, 30);
    assert_true(st >= 400 && st < 500);
    close(fd);
    free(body);
    assert_true(isnan(x.t.n->budget_w));
    assert_true(fabs(sum_limits(&x) - before) < 1e-9);
    node_down(&x);
}

/* A body whose length is said twice (two Content-Length fields that differ, or one beside a
 * chunked body) is refused with 400 before it is read, whichever field comes first, a transfer
 * coding other than chunked with 501 (they waited for the idle timeout), and none changes
 * anything; the same count said twice is taken. */
static void test_two_lengths_refused(void **state)
{
    (void)state;
    node x;
    node_up(&x, NULL);
    double before = sum_limits(&x);
    assert_int_equal(
        pfi_test_two_lengths_refused(x.port, TOKEN, "/v1/budget", "{\"percent\": 70}"), -1);
    assert_true(isnan(x.t.n->budget_w));
    assert_true(fabs(sum_limits(&x) - before) < 1e-9);
    assert_int_equal(
        pfi_test_two_lengths(x.port, TOKEN, "/v1/budget", "{\"percent\": 70}", 5), 200);
    assert_false(isnan(x.t.n->budget_w));
    node_down(&x);
}

/* Every route of the node's API on a /v1/ path, with the body a valid request has (the
 * parameter it takes: NULL, none). */
static const struct {
    const char *method, *path, *takes, *json;
} ROUTES[] = {
    {"GET", "/v1/history", "since", NULL},
    {"GET", "/v1/events", "since", NULL},
    {"GET", "/v1/events", "limit", NULL},
    {"GET", "/v1/decisions", "limit", NULL},
    {"GET", "/v1/gpus", NULL, NULL},
    {"GET", "/v1/jobs", NULL, NULL},
    {"GET", "/v1/jobs/j1", NULL, NULL},
    {"GET", "/v1/allocation", NULL, NULL},
    {"GET", "/v1/budget", NULL, NULL},
    {"GET", "/v1/grid/events", NULL, NULL},
    {"GET", "/v1/grid/events/e1", NULL, NULL},
    {"GET", "/v1/grid/events/e1/report", NULL, NULL},
    {"GET", "/v1/grid/openadr", NULL, NULL},
    {"PUT", "/v1/budget", NULL, "{\"percent\": 70}"},
    {"DELETE", "/v1/budget", NULL, NULL},
    {"PUT", "/v1/caps", NULL, "{\"caps\": [{\"gpu\": 0, \"cap_w\": 300}]}"},
    {"POST", "/v1/jobs", NULL, "{\"id\": \"j1\", \"gpus\": [0]}"},
    {"DELETE", "/v1/jobs/j1", NULL, NULL},
    {"POST", "/v1/jobs/j1/throughput", NULL, "{\"tokens_per_s\": 10}"},
    {"POST", "/v1/heartbeat", NULL, "{\"controller\": \"c\", \"ttl_s\": 0}"},
    {"POST", "/v1/grid/events", NULL,
     "{\"id\": \"e1\", \"start\": \"2026-12-01T20:00:00Z\", \"end\": "
     "\"2026-12-01T21:00:00Z\", \"cut\": \"30%\"}"},
    {"DELETE", "/v1/grid/events/e1", NULL, NULL},
};

/* A query argument a route does not take, one given twice, or a value that is empty or no
 * number in range is a 400 that names it, on every /v1/ route and method, and changes
 * nothing: GET /v1/history?sinse=10 answered the whole hour with 200, and of
 * since=10&since=20 one silently won.  Valid arguments are answered as before; /healthz,
 * /metrics and / take none and ignore any (probes, scrapers and browsers add their own); a
 * path no route has is still 404 and a method a path does not take 405. */
static void test_query_checked(void **state)
{
    (void)state;
    node x;
    node_up(&x, NULL);
    pfi_err e = {0};
    assert_int_equal(pfi_srv_grid_open(x.t.n, &e), PFI_OK); /* as the daemon does */
    double before = sum_limits(&x);
    int wrong = 0;
    for (size_t i = 0; i < sizeof ROUTES / sizeof *ROUTES; i++)
        wrong += pfi_test_query_refused(x.port, ROUTES[i].method, ROUTES[i].path,
                                        ROUTES[i].takes, TOKEN, ROUTES[i].json);
    assert_int_equal(wrong, 0);
    /* limit's own range */
    static const char *const out_of_range[] = {"/v1/events?limit=0", "/v1/events?limit=1001",
                                               "/v1/decisions?limit=0",
                                               "/v1/decisions?limit=1001"};
    for (size_t i = 0; i < sizeof out_of_range / sizeof *out_of_range; i++) {
        char *reply = NULL;
        assert_int_equal(pfi_test_ask(x.port, "GET", out_of_range[i], NULL, NULL, &reply), 400);
        assert_non_null(strstr(reply, "limit"));
        free(reply);
    }
    assert_true(isnan(x.t.n->budget_w));
    assert_true(fabs(sum_limits(&x) - before) < 1e-9);
    assert_int_equal(x.t.n->n_jobs, 0);
    assert_int_equal(x.t.n->n_grid, 0);
    static const struct {
        const char *method, *path;
        long status;
    } kept[] = {
        {"GET", "/v1/history?since=5", 200},
        {"GET", "/v1/events?since=0&limit=5", 200},
        {"GET", "/v1/events?limit=5&since=0", 200},
        {"GET", "/v1/events?limit=1000", 200},
        {"GET", "/v1/decisions?limit=5", 200},
        {"GET", "/v1/gpus?", 200},
        {"GET", "/healthz?x=1&x=2", 200},
        {"GET", "/metrics?_=1733300000", 200},
        {"GET", "/?nocache=1", 200},
        {"GET", "/v1/nope?sinse=1", 404},
        {"DELETE", "/v1/gpus?sinse=1", 405},
        {"PUT", "/v1/history?sinse=1", 405},
    };
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
        long st = pfi_test_ask(x.port, kept[i].method, kept[i].path, TOKEN, NULL, NULL);
        if (st != kept[i].status)
            fail_msg("%s %s: status %ld, expected %ld", kept[i].method, kept[i].path, st,
                     kept[i].status);
    }
    /* The same change without a query is taken: the refusals above were the query's. */
    assert_int_equal(pfi_test_ask(x.port, "PUT", "/v1/budget", TOKEN, "{\"percent\": 70}", NULL),
                     200);
    assert_false(isnan(x.t.n->budget_w));
    assert_int_equal(pfi_test_ask(x.port, "PUT", "/v1/budget", TOKEN, "{\"percent\": 80}", NULL),
                     200);
    /* Valid arguments read as before: limit still selects (two decisions: two events). */
    char *all = NULL, *one = NULL;
    assert_int_equal(pfi_test_ask(x.port, "GET", "/v1/events?limit=1", NULL, NULL, &one), 200);
    assert_int_equal(pfi_test_ask(x.port, "GET", "/v1/events", NULL, NULL, &all), 200);
    json_t *o = json_loads(one, 0, NULL), *a = json_loads(all, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(o, "events")), 1);
    assert_true(json_array_size(json_object_get(a, "events")) > 1);
    json_decref(o);
    json_decref(a);
    free(one);
    free(all);
    pfi_srv_grid_close(x.t.n);
    node_down(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_answered),
        cmocka_unit_test(test_one_address_cannot_starve),
        cmocka_unit_test(test_idle_and_slow_closed),
        cmocka_unit_test(test_big_body_refused),
        cmocka_unit_test(test_two_lengths_refused),
        cmocka_unit_test(test_query_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
