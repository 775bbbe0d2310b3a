/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve_http.c: the node daemon's HTTP transport (src/serve/http.c) under load and
 * hostile clients.  A burst of requests that its server thread finds ready all at once is
 * answered at once, whatever its size (libmicrohttpd's epoll loop slept on exactly 128 until
 * some other event or the connection timeout came); one address's slow clients cannot starve
 * another's, whose budget change is applied within the budget; idle and half-sent connections
 * are closed; a body said to be too large is refused before it is read, and nothing changes. */
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
    assert_int_equal(pfi_srv_http_start(x->t.n, &x->h, where, sizeof where, &e), PFI_OK);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_answered),
        cmocka_unit_test(test_one_address_cannot_starve),
        cmocka_unit_test(test_idle_and_slow_closed),
        cmocka_unit_test(test_big_body_refused),
        cmocka_unit_test(test_two_lengths_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
