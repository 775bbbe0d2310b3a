/* SPDX-License-Identifier: Apache-2.0 */
/* test_cluster_http.c: the controller's HTTP API (src/cluster/api.c) under load and hostile
 * clients.  A burst of requests that one server thread finds ready all at once is answered
 * whatever its size (libmicrohttpd's epoll loop slept on exactly 128 until some other event
 * came, which with no connection timeout could be never). */
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

#include "cluster/cl_int.h"
#include "support/burst.h"
#include "support/standin.h"

#define NN 4
#define NG 4
#define MAXC 200

static const char *const NAMES[NN] = {"n1", "n2", "n3", "n4"};

typedef struct site {
    char dir[256], topo[300];
    pfi_standin *s;
    pfi_cl *c;
    pfi_cl_server *srv;
    int port;
} site;

static void site_up(site *x)
{
    pfi_err e = {0};
    int port;
    const char *base = getenv("PFI_TEST_TMP");
    snprintf(x->dir, sizeof x->dir, "%s/clhttp.XXXXXX", base ? base : "/tmp");
    assert_non_null(mkdtemp(x->dir));
    assert_int_equal(pfi_standin_start(NN, NAMES, NG, 200, 700, &x->s, &port, &e), PFI_OK);
    snprintf(x->topo, sizeof x->topo, "%s/topo.json", x->dir);
    FILE *f = fopen(x->topo, "w");
    assert_non_null(f);
    fputs("{\"nodes\": [{\"name\": \"n1\", \"gpus\": 4}, {\"name\": \"n2\", \"gpus\": 4}, "
          "{\"name\": \"n3\", \"gpus\": 4}, {\"name\": \"n4\", \"gpus\": 4}], \"jobs\": []}",
          f);
    assert_int_equal(fclose(f), 0);
    pfi_cl_config cfg;
    pfi_cl_config_defaults(&cfg);
    snprintf(cfg.node_url, sizeof cfg.node_url, "http://127.0.0.1:%d/n/%%n", port);
    snprintf(cfg.topo_file, sizeof cfg.topo_file, "%s", x->topo);
    cfg.timeout_s = 5.0;
    cfg.heartbeat_s = 0;
    assert_int_equal(pfi_cl_open(&cfg, &x->c, &e), PFI_OK);
    assert_int_equal(pfi_cl_refresh(x->c, &e), PFI_OK);
    assert_int_equal(pfi_cl_server_start(x->c, "127.0.0.1:0", NULL, &x->srv, &x->port, &e),
                     PFI_OK);
}

static void site_down(site *x)
{
    pfi_cl_server_stop(x->srv);
    pfi_cl_close(x->c);
    pfi_standin_stop(x->s);
    unlink(x->topo);
    rmdir(x->dir);
}

static const char HEALTH[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
static const char NODES[] = "GET /v1/nodes HTTP/1.1\r\nHost: x\r\n\r\n";

/* The API runs two server threads, and which takes a new connection is theirs to decide.  So:
 * the controller's lock taken, one thread (A) is held in a request that needs it; the other
 * (B) alone can then take connections: k of them, each asked for /healthz (which needs no
 * lock) and answered, so that B holds all k.  B is then held too, in a request on one more
 * connection, while one request goes on each of the k; the lock let go, B finds the k (and
 * what its held request's answer brings) ready at once.  Returns how many of the k were
 * answered within a bound far above their time (well under a second without a stall). */
static int burst(site *x, int k)
{
    int fd[MAXC], a, b;
    pthread_mutex_lock(&x->c->mu);
    a = pfi_test_dial(NULL, x->port);
    assert_true(a >= 0);
    assert_int_equal(pfi_test_send(a, NODES, sizeof NODES - 1), 0);
    assert_int_equal(pfi_test_wait_blocked(1, 30), 1);
    for (int i = 0; i < k; i++) {
        char src[32]; /* 30 to an address: one address may hold 32 */
        snprintf(src, sizeof src, "127.0.0.%d", 2 + i / 30);
        fd[i] = pfi_test_dial(src, x->port);
        assert_true(fd[i] >= 0);
        assert_int_equal(pfi_test_send(fd[i], HEALTH, sizeof HEALTH - 1), 0);
        assert_int_equal(pfi_test_status(fd[i], 30), 200);
    }
    b = pfi_test_dial(NULL, x->port);
    assert_true(b >= 0);
    assert_int_equal(pfi_test_send(b, NODES, sizeof NODES - 1), 0);
    assert_int_equal(pfi_test_wait_blocked(2, 30), 2);
    for (int i = 0; i < k; i++)
        assert_int_equal(pfi_test_send(fd[i], HEALTH, sizeof HEALTH - 1), 0);
    pthread_mutex_unlock(&x->c->mu);
    int answered = pfi_test_answers(fd, k, "HTTP/1.1 200", 5);
    assert_int_equal(pfi_test_status(a, 30), 200);
    assert_int_equal(pfi_test_status(b, 30), 200);
    for (int i = 0; i < k; i++)
        close(fd[i]);
    close(a);
    close(b);
    return answered;
}

static void test_burst_answered(void **state)
{
    (void)state;
    pfi_test_nofile(4096);
    for (int k = 125; k <= 131; k++) {
        site x;
        site_up(&x);
        int got = burst(&x, k);
        if (got != k)
            fprintf(stderr, "burst of %d: %d answered\n", k, got);
        assert_int_equal(got, k);
        site_down(&x);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_answered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
