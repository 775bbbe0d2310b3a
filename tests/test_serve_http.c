/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve_http.c: the node daemon's HTTP transport (src/serve/http.c) under load and
 * hostile clients.  A burst of requests that its server thread finds ready all at once is
 * answered at once, whatever its size (libmicrohttpd's epoll loop slept on exactly 128 until
 * some other event or the connection timeout came). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "serve/serve_int.h"
#include "support/burst.h"
#include "support/sim_node.h"

#define MAXC 200

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_answered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
