/* SPDX-License-Identifier: Apache-2.0 */
/* test_cluster_http.c: the controller's HTTP API (src/cluster/api.c) under load and hostile
 * clients.  A burst of requests that one server thread finds ready all at once is answered
 * whatever its size (libmicrohttpd's epoll loop slept on exactly 128 until some other event
 * came, which with no connection timeout could be never); one address's slow clients cannot
 * starve another's, and a budget change among them stays within the budget; idle and slow
 * connections are closed; connections over the limits are closed at once and the rest served;
 * a body said to be too large is refused before it is read, and nothing changes; a budget body
 * with an unknown or repeated field or absurd watts is refused, and so is a path with %00; a
 * query argument a route does not take, given twice or no number in range is refused, named,
 * and nothing changes.
 * With --read-auth token every read but /healthz wants the bearer token (401 without it or with
 * a wrong one), as a node daemon's read_auth = token; without it reads stay open; and the
 * option without a token file is refused at start. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "cluster/cl_int.h"
#include "util/http.h"
#include "support/burst.h"
#include "support/query_check.h"
#include "support/standin.h"

#define NN 4
#define NG 4
#define MAXC 200

static const char *const NAMES[NN] = {"n1", "n2", "n3", "n4"};

typedef struct site {
    char dir[256], topo[300], tokf[300];
    pfi_standin *s;
    pfi_cl *c;
    pfi_cl_server *srv;
    int port;
} site;

static const char TOKEN[] = "0123456789abcdef0123";

/* Four stand-in nodes of four GPUs (200-700 W), no jobs, the API on a free port with a bearer
 * token; cfg's API settings: timeout_s (0: the default), conns and per_ip (0: the defaults). */
static void site_up_with(site *x, double timeout_s, int conns, int per_ip)
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
    snprintf(x->tokf, sizeof x->tokf, "%s/token", x->dir);
    f = fopen(x->tokf, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", TOKEN);
    assert_int_equal(fclose(f), 0);
    chmod(x->tokf, 0600);
    pfi_cl_config cfg;
    pfi_cl_config_defaults(&cfg);
    snprintf(cfg.node_url, sizeof cfg.node_url, "http://127.0.0.1:%d/n/%%n", port);
    snprintf(cfg.topo_file, sizeof cfg.topo_file, "%s", x->topo);
    cfg.timeout_s = 5.0;
    cfg.heartbeat_s = 0;
    if (timeout_s > 0)
        cfg.client_timeout_s = timeout_s;
    if (conns > 0)
        cfg.max_conns = conns;
    if (per_ip > 0)
        cfg.max_client_conns = per_ip;
    assert_int_equal(pfi_cl_open(&cfg, &x->c, &e), PFI_OK);
    assert_int_equal(pfi_cl_refresh(x->c, &e), PFI_OK);
    assert_int_equal(pfi_cl_server_start(x->c, "127.0.0.1:0", x->tokf, &x->srv, &x->port, &e),
                     PFI_OK);
}

static void site_up(site *x)
{
    site_up_with(x, 0, 0, 0);
}

static void site_down(site *x)
{
    pfi_cl_server_stop(x->srv);
    pfi_cl_close(x->c);
    pfi_standin_stop(x->s);
    unlink(x->topo);
    unlink(x->tokf);
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

/* A slow client: a request line and an unfinished header, then nothing. */
/* 1,100 slow connections from one address (more than the whole API allowed before the limits:
 * 1,020), every one sending an unfinished header: that address keeps at most its 32, the rest
 * are closed at once, and another address is still answered: a budget change from it is
 * applied, the site's caps within the new budget throughout. */
static void test_one_address_cannot_starve(void **state)
{
    (void)state;
    enum { N = 1100 };
    assert_true(pfi_test_nofile(4 * N) >= 3 * N);
    site x;
    site_up(&x);
    static int fd[N];
    assert_int_equal(pfi_test_slow_clients(x.port, "127.0.0.1", N, fd), N);
    /* Another address: answered, and its budget change made. */
    assert_int_equal(pfi_test_request("127.0.0.9", x.port, HEALTH, 30), 200);
    double before = pfi_standin_cap_sum(x.s);
    pfi_standin_reset_peak(x.s);
    assert_int_equal(pfi_test_send_body(x.port, "127.0.0.9", TOKEN, "PUT", "/v1/budget",
                                        "{\"cut\": 0.3}"),
                     200);
    double budget = 0.7 * NN * NG * 700;
    assert_true(pfi_standin_cap_sum(x.s) <= budget + 1e-6);
    assert_true(pfi_standin_peak(x.s) <= fmax(before, budget) + 1e-6);
    /* The slow address kept at most its 32 (all it asked for past them was closed). */
    assert_true(pfi_test_close_held(fd, N, 32, 30) <= 32);
    site_down(&x);
}

/* A connection that sends nothing, and one that stops in the middle of its header, are
 * closed once idle for the client timeout (1 s here); a request after that is answered. */
static void test_idle_and_slow_closed(void **state)
{
    (void)state;
    site x;
    site_up_with(&x, 1, 0, 0);
    assert_int_equal(pfi_test_idle_and_slow(x.port, 20), 0);
    assert_int_equal(pfi_test_request(NULL, x.port, HEALTH, 30), 200);
    site_down(&x);
}

/* 4 per address, and a timeout far above the test's bounds (so that only the limit closes):
 * of 10 connections from one address, 6 are closed at once, and the 4 kept finish their
 * requests and are answered. */
static void test_over_address_limit_closed(void **state)
{
    (void)state;
    enum { N = 10 };
    site x;
    site_up_with(&x, 600, 0, 4);
    int fd[N];
    assert_int_equal(pfi_test_slow_clients(x.port, "127.0.1.1", N, fd), N);
    assert_int_equal(pfi_test_closed_count(fd, N, N - 4, 30), N - 4);
    int held[N], nh = 0;
    for (int i = 0; i < N; i++)
        if (!pfi_test_closed(fd[i], 0.001))
            held[nh++] = fd[i];
    assert_int_equal(nh, 4);
    static const char REST[] = "\r\n\r\n";
    for (int i = 0; i < nh; i++)
        assert_int_equal(pfi_test_send(held[i], REST, sizeof REST - 1), 0);
    assert_int_equal(pfi_test_answers(held, nh, "HTTP/1.1 200", 30), nh);
    for (int i = 0; i < N; i++)
        close(fd[i]);
    site_down(&x);
}

/* max_connections 16 (shared out between the API's two threads, 8 each): 40 connections
 * from 10 addresses (4 each, within their limit) all send a whole request and keep their
 * connection; at most 16 are taken and answered, the others wait in the listen queue, not
 * refused and not broken; once the answered ones go, the waiting ones are answered in turn. */
static void test_over_connection_limit_waits(void **state)
{
    (void)state;
    enum { N = 40 };
    site x;
    site_up_with(&x, 600, 16, 4);
    int fd[N], done[N] = {0};
    for (int i = 0; i < N; i++) {
        char src[32];
        snprintf(src, sizeof src, "127.0.1.%d", 1 + i % 10);
        fd[i] = pfi_test_dial(src, x.port);
        assert_true(fd[i] >= 0);
        assert_int_equal(pfi_test_send(fd[i], HEALTH, sizeof HEALTH - 1), 0);
    }
    int total = 0, rounds = 0;
    double until = pfi_test_now() + 60;
    while (total < N && pfi_test_now() < until) {
        /* Those answered in this round (at most what the limit lets in), then closed. */
        int got = 0;
        for (int i = 0; i < N; i++)
            if (!done[i] && pfi_test_status(fd[i], i == 0 || got == 0 ? 2 : 0.2) == 200) {
                done[i] = 1;
                got++;
            }
        assert_true(got <= 16);
        for (int i = 0; i < N; i++)
            if (done[i] == 1) {
                close(fd[i]);
                done[i] = 2;
            }
        total += got;
        rounds += got > 0;
    }
    assert_int_equal(total, N);
    assert_true(rounds >= 3); /* 40 through 16 places */
    site_down(&x);
}

/* A body said to be larger than the API takes (64 KiB) is refused with 413 as soon as the
 * header is read, without waiting for the body; one actually sent over it, or sent in chunks
 * over it, is refused too; none changes the budget or a cap. */
static void test_big_body_refused(void **state)
{
    (void)state;
    site x;
    site_up(&x);
    double caps = pfi_standin_cap_sum(x.s);
    int st[3];
    pfi_test_big_bodies(x.port, TOKEN, "/v1/budget", "{\"cut\": 0.3}", st);
    for (int i = 0; i < 3; i++)
        assert_int_equal(st[i], 413);
    assert_false(x.c->budget.set);
    assert_true(fabs(pfi_standin_cap_sum(x.s) - caps) < 1e-9);
    site_down(&x);
}

/* A body whose length is said twice (two Content-Length fields that differ, or one beside a
 * chunked body) is refused with 400 before it is read, whichever field comes first, a transfer
 * coding other than chunked with 501 (they waited for the idle timeout), and none changes
 * anything; the same count said twice is taken. */
static void test_two_lengths_refused(void **state)
{
    (void)state;
    site x;
    site_up(&x);
    double caps = pfi_standin_cap_sum(x.s);
    assert_int_equal(pfi_test_two_lengths_refused(x.port, TOKEN, "/v1/budget", "{\"cut\": 0.3}"),
                     -1);
    assert_false(x.c->budget.set);
    assert_true(fabs(pfi_standin_cap_sum(x.s) - caps) < 1e-9);
    assert_int_equal(pfi_test_two_lengths(x.port, TOKEN, "/v1/budget", "{\"cut\": 0.3}", 5),
                     200);
    assert_true(x.c->budget.set);
    site_down(&x);
}

/* Headers over 64 KiB and a length that is not a number get a 4xx, a request line that is
 * not HTTP is closed, and none changes anything; the API answers the next client. */
static void test_malformed_refused(void **state)
{
    (void)state;
    site x;
    site_up(&x);
    double caps = pfi_standin_cap_sum(x.s);
    size_t hl = 100 << 10;
    char *h = malloc(hl + 256);
    assert_non_null(h);
    int n = snprintf(h, 256, "PUT /v1/budget HTTP/1.1\r\nHost: x\r\nX-Pad: ");
    memset(h + n, 'a', hl);
    memcpy(h + n + hl, "\r\n\r\n", 5);
    int fd = pfi_test_dial(NULL, x.port);
    pfi_test_send(fd, h, (size_t)n + hl + 4); /* the server may close before the end */
    int st = pfi_test_status(fd, 30);
    assert_true(st >= 400 && st < 500);
    close(fd);
    free(h);
    static const char *const bad[] = {
        "PUT /v1/budget HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc\r\n\r\n{\"cut\": 0.3}",
        "PUT /v1/budget HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n{\"cut\": 0.3}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        st = pfi_test_request(NULL, x.port, bad[i], 30);
        if (!(st >= 400 && st < 500))
            fprintf(stderr, "request %zu: status %d\n", i, st);
        assert_true(st >= 400 && st < 500);
    }
    st = pfi_test_request(NULL, x.port, "HELLO\r\n\r\n", 30);
    assert_true(st == 0 || (st >= 400 && st < 500));
    assert_false(x.c->budget.set);
    assert_true(fabs(pfi_standin_cap_sum(x.s) - caps) < 1e-9);
    assert_int_equal(pfi_test_request(NULL, x.port, HEALTH, 30), 200);
    site_down(&x);
}

/* A budget body the API cannot take exactly as meant is 400 and changes nothing: an unknown
 * field (a typo such as "ramp" for "ramp_s" set the budget at once, without its ramp), a key
 * given twice (the last one won), and watts that are not a budget (1e300 was planned and
 * answered 409 with a 300-digit figure; 2e9 was applied, where every budget text above
 * PFI_BUDGET_MAX_W is refused).  A good body after them is taken. */
static void test_budget_body_checked(void **state)
{
    (void)state;
    site x;
    site_up(&x);
    double caps = pfi_standin_cap_sum(x.s);
    static const char *const bad[] = {
        "{\"budget\": \"70%\", \"ramp\": 60}",
        "{\"watts\": 3000, \"junk\": 1}",
        "{\"watts\": 3000, \"watts\": 9000}",
        "{\"watts\": 1e300}",
        "{\"watts\": 2e9}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int st = pfi_test_send_body(x.port, NULL, TOKEN, "PUT", "/v1/budget", bad[i]);
        if (st != 400)
            fail_msg("%s: status %d, expected 400", bad[i], st);
        assert_false(x.c->budget.set);
        assert_true(fabs(pfi_standin_cap_sum(x.s) - caps) < 1e-9);
    }
    /* A cut in (0, 1) is taken as given: 0.9999999 was written "cut=100%" (%g) and refused as
     * malformed (400, "a cut is ... less than 100%"); it is a budget no site can hold: 409. */
    int st9 =
        pfi_test_send_body(x.port, NULL, TOKEN, "PUT", "/v1/budget", "{\"cut\": 0.9999999}");
    if (st9 != 409)
        fail_msg("{\"cut\": 0.9999999}: status %d, expected 409 (infeasible)", st9);
    assert_false(x.c->budget.set);
    /* A %00 in the path is not decoded into a NUL that cuts it short: "/v1/budget%00" is no
     * route (it set the budget), as the node daemon answers "/metrics%00.txt". */
    static const char *const nul[] = {"/v1/budget%00", "/v1/budget%00.json"};
    for (size_t i = 0; i < sizeof nul / sizeof *nul; i++) {
        int st = pfi_test_send_body(x.port, NULL, TOKEN, "PUT", nul[i], "{\"watts\": 6000}");
        if (st != 404)
            fail_msg("PUT %s: status %d, expected 404", nul[i], st);
        assert_false(x.c->budget.set);
        assert_true(fabs(pfi_standin_cap_sum(x.s) - caps) < 1e-9);
    }
    assert_int_equal(
        pfi_test_send_body(x.port, NULL, TOKEN, "PUT", "/v1/budget", "{\"watts\": 5000}"), 200);
    assert_true(x.c->budget.set);
    assert_true(pfi_standin_cap_sum(x.s) <= 5000 + 1e-9);
    site_down(&x);
}

/* A query argument a route does not take, one given twice, or a value that is empty or no
 * number in range is a 400 that names it, on every /v1/ route and method, and changes
 * nothing: GET /v1/history?sinse=10 answered the whole hour with 200, and of
 * since=10&since=20 one silently won.  Valid arguments are answered as before; /healthz,
 * /metrics and / take none and ignore any (probes, scrapers and browsers add their own); a
 * path no route has is still 404 and a method a path does not take 405. */
static void test_query_checked(void **state)
{
    (void)state;
    site x;
    site_up(&x);
    double caps = pfi_standin_cap_sum(x.s);
    static const struct {
        const char *method, *path, *takes, *json;
    } routes[] = {
        {"GET", "/v1/history", "since", NULL},
        {"GET", "/v1/decisions", "limit", NULL},
        {"GET", "/v1/nodes", NULL, NULL},
        {"GET", "/v1/jobs", NULL, NULL},
        {"GET", "/v1/allocation", NULL, NULL},
        {"GET", "/v1/grid/events", NULL, NULL},
        {"GET", "/v1/grid/events/e1", NULL, NULL},
        {"GET", "/v1/grid/events/e1/report", NULL, NULL},
        {"GET", "/v1/grid/openadr", NULL, NULL},
        {"PUT", "/v1/budget", NULL, "{\"watts\": 5000}"},
        {"POST", "/v1/refresh", NULL, NULL},
        {"POST", "/v1/grid/events", NULL,
         "{\"id\": \"e1\", \"start\": \"2026-12-01T20:00:00Z\", \"end\": "
         "\"2026-12-01T21:00:00Z\", \"cut\": \"30%\"}"},
        {"DELETE", "/v1/grid/events/e1", NULL, NULL},
    };
    int wrong = 0;
    for (size_t i = 0; i < sizeof routes / sizeof *routes; i++)
        wrong += pfi_test_query_refused(x.port, routes[i].method, routes[i].path,
                                        routes[i].takes, TOKEN, routes[i].json);
    assert_int_equal(wrong, 0);
    char *reply = NULL;
    assert_int_equal(pfi_test_ask(x.port, "GET", "/v1/decisions?limit=33", NULL, NULL, &reply),
                     400);
    assert_non_null(strstr(reply, "limit"));
    free(reply);
    assert_false(x.c->budget.set);
    assert_true(fabs(pfi_standin_cap_sum(x.s) - caps) < 1e-9);
    reply = NULL;
    assert_int_equal(pfi_test_ask(x.port, "GET", "/v1/grid/events", NULL, NULL, &reply), 200);
    assert_null(strstr(reply, "\"e1\""));
    free(reply);
    static const struct {
        const char *method, *path;
        long status;
    } kept[] = {
        {"GET", "/v1/history?since=5", 200},
        {"GET", "/v1/decisions?limit=32", 200},
        {"GET", "/v1/nodes?", 200},
        {"GET", "/healthz?x=1&x=2", 200},
        {"GET", "/metrics?_=1733300000", 200},
        {"GET", "/?nocache=1", 200},
        {"GET", "/v1/nope?sinse=1", 404},
        {"DELETE", "/v1/nodes?sinse=1", 405},
        {"PUT", "/v1/history?sinse=1", 405},
        {"PUT", "/v1/grid/events/e1/report?sinse=1", 405},
    };
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
        long st = pfi_test_ask(x.port, kept[i].method, kept[i].path, TOKEN, NULL, NULL);
        if (st != kept[i].status)
            fail_msg("%s %s: status %ld, expected %ld", kept[i].method, kept[i].path, st,
                     kept[i].status);
    }
    /* The same change without a query is taken: the refusals above were the query's. */
    assert_int_equal(
        pfi_test_ask(x.port, "PUT", "/v1/budget", TOKEN, "{\"watts\": 5000}", NULL), 200);
    assert_true(x.c->budget.set);
    site_down(&x);
}

/* The API's settings out of range are refused when the controller opens, naming them. */
static void test_settings_checked(void **state)
{
    (void)state;
    static const struct {
        double timeout_s;
        int conns, per_ip;
        const char *says;
    } bad[] = {{0, 1024, 32, "client-timeout"},     {3601, 1024, 32, "client-timeout"},
               {NAN, 1024, 32, "client-timeout"},   {10, 0, 32, "max-connections"},
               {10, 4097, 32, "max-connections"},   {10, 1024, 0, "max-client-connections"},
               {10, 1024, 4097, "max-client-connections"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pfi_cl_config cfg;
        pfi_cl_config_defaults(&cfg);
        cfg.client_timeout_s = bad[i].timeout_s;
        cfg.max_conns = bad[i].conns;
        cfg.max_client_conns = bad[i].per_ip;
        pfi_cl *c = NULL;
        pfi_err e = {0};
        assert_int_equal(pfi_cl_open(&cfg, &c, &e), PFI_ERANGE);
        assert_null(c);
        assert_non_null(strstr(e.msg, bad[i].says));
    }
}

/* One GET with this bearer token (NULL: none); the status, the body in *reply (malloc'd, NULL
 * when none). */
static long get(int port, const char *path, const char *token, char **reply)
{
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    pfi_http_req r;
    memset(&r, 0, sizeof r);
    r.url = url;
    r.method = "GET";
    pfi_http_many(NULL, &r, 1, token, 10.0, 1);
    *reply = r.reply;
    return r.status;
}

/* Budget changes from several clients at once: each 200 answers with the budget that request
 * set (the state it left, before another change ran); one in eight answered with another
 * client's budget (8,595 W asked, 12,996 W answered). */
typedef struct budget_client {
    int port, k;
    int wrong, answered;
    char seen[160];
} budget_client;

static void *budget_client_main(void *arg)
{
    budget_client *b = arg;
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/budget", b->port);
    for (int i = 0; i < 12; i++) {
        double w = 6000 + 37 * b->k + 151 * i; /* every client and round its own */
        char body[64];
        snprintf(body, sizeof body, "{\"watts\": %.0f}", w);
        pfi_http_req r;
        memset(&r, 0, sizeof r);
        r.url = url;
        r.method = "PUT";
        r.body = body;
        pfi_http_many(NULL, &r, 1, TOKEN, 30.0, 1);
        json_t *d = r.status == 200 && r.reply ? json_loads(r.reply, 0, NULL) : NULL;
        if (d) {
            b->answered++;
            double got = json_number_value(json_object_get(d, "budget_w"));
            if (got != w && !b->wrong++)
                snprintf(b->seen, sizeof b->seen, "asked %.0f W, answered %g W", w, got);
        }
        json_decref(d);
        pfi_http_req_free(&r, 1);
    }
    return NULL;
}

static void test_budget_answers_its_own(void **state)
{
    (void)state;
    site x;
    site_up(&x);
    budget_client cl[4];
    pthread_t th[4];
    for (int k = 0; k < 4; k++) {
        cl[k] = (budget_client){.port = x.port, .k = k};
        assert_int_equal(pthread_create(&th[k], NULL, budget_client_main, &cl[k]), 0);
    }
    int answered = 0;
    for (int k = 0; k < 4; k++) {
        pthread_join(th[k], NULL);
        if (cl[k].wrong)
            fail_msg("client %d: %d of %d answers name another budget (%s)", k, cl[k].wrong,
                     cl[k].answered, cl[k].seen);
        answered += cl[k].answered;
    }
    assert_int_equal(answered, 48);
    site_down(&x);
}

/* --read-auth token (cfg.read_auth): every read of the site (nodes, jobs, caps, history,
 * decisions, grid events, the status page, /metrics) was open to whoever reached the port,
 * where a node daemon with read_auth = token refuses them.  Now: 401 without the token or with
 * a wrong one, in the API's error style; 200 with it; /healthz open; a path that is no route
 * gives nothing away (401, not 404); a change still needs the token; and without read_auth the
 * same reads stay open. */
static void test_read_auth(void **state)
{
    (void)state;
    static const char *const reads[] = {"/",
                                        "/v1/nodes",
                                        "/v1/jobs",
                                        "/v1/allocation",
                                        "/v1/history",
                                        "/v1/decisions?limit=3",
                                        "/v1/grid/events",
                                        "/v1/grid/openadr",
                                        "/metrics"};
    site x;
    site_up(&x);
    char *rep = NULL;
    for (size_t i = 0; i < sizeof reads / sizeof *reads; i++) { /* read_auth none: open */
        long st = get(x.port, reads[i], NULL, &rep);
        if (st != 200)
            fail_msg("read_auth none: GET %s without a token: %ld %s", reads[i], st,
                     rep ? rep : "");
        free(rep);
    }
    pfi_cl_server_stop(x.srv);
    x.c->cfg.read_auth = 1;
    pfi_err e = {0};
    assert_int_equal(pfi_cl_server_start(x.c, "127.0.0.1:0", x.tokf, &x.srv, &x.port, &e),
                     PFI_OK);
    static const char *const wrong[] = {NULL, "wrong-token-xxxxxxxx", "0123456789abcdef012",
                                        "0123456789abcdef01234"};
    for (size_t i = 0; i < sizeof reads / sizeof *reads; i++) {
        for (size_t w = 0; w < sizeof wrong / sizeof *wrong; w++) {
            long st = get(x.port, reads[i], wrong[w], &rep);
            if (st != 401 || !rep || !strstr(rep, "\"error\"") ||
                !strstr(rep, "missing or wrong bearer token"))
                fail_msg("read_auth token: GET %s with token %s: %ld %s", reads[i],
                         wrong[w] ? wrong[w] : "(none)", st, rep ? rep : "");
            free(rep);
        }
        char head[300];
        snprintf(head, sizeof head, "HEAD %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                 reads[i]);
        assert_int_equal(pfi_test_request(NULL, x.port, head, 30), 401);
        long st = get(x.port, reads[i], TOKEN, &rep);
        if (st != 200)
            fail_msg("read_auth token: GET %s with the token: %ld %s", reads[i], st,
                     rep ? rep : "");
        free(rep);
    }
    assert_int_equal(get(x.port, "/v1/no-such-route", NULL, &rep), 401);
    free(rep);
    assert_int_equal(get(x.port, "/v1/no-such-route", TOKEN, &rep), 404);
    free(rep);
    /* the token before the query: a bad query says nothing to a reader without it */
    assert_int_equal(get(x.port, "/v1/history?sinse=1", NULL, &rep), 401);
    free(rep);
    assert_int_equal(get(x.port, "/v1/history?sinse=1", TOKEN, &rep), 400);
    free(rep);
    assert_int_equal(get(x.port, "/healthz?x=1", NULL, &rep), 200);
    free(rep);
    assert_int_equal(get(x.port, "/healthz", NULL, &rep), 200);
    free(rep);
    assert_int_equal(pfi_test_request(NULL, x.port, HEALTH, 30), 200);
    assert_int_equal(pfi_test_send_body(x.port, NULL, "not-the-token", "PUT", "/v1/budget",
                                        "{\"watts\": 5000}"),
                     401);
    assert_false(x.c->budget.set);
    assert_int_equal(
        pfi_test_send_body(x.port, NULL, TOKEN, "PUT", "/v1/budget", "{\"watts\": 5000}"), 200);
    assert_true(x.c->budget.set);
    site_down(&x);
}

/* --read-auth token without a token file would lock every reader out: refused, nothing
 * started. */
static void test_read_auth_needs_token(void **state)
{
    (void)state;
    site x;
    site_up(&x);
    pfi_cl_server_stop(x.srv);
    x.srv = NULL;
    x.c->cfg.read_auth = 1;
    static const char *const none[] = {NULL, ""};
    for (size_t i = 0; i < 2; i++) {
        pfi_cl_server *srv = NULL;
        int port = -1;
        pfi_err e = {0};
        assert_int_equal(pfi_cl_server_start(x.c, "127.0.0.1:0", none[i], &srv, &port, &e),
                         PFI_EINVAL);
        assert_null(srv);
        assert_non_null(strstr(e.msg, "--token-file"));
    }
    site_down(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_answered),
        cmocka_unit_test(test_one_address_cannot_starve),
        cmocka_unit_test(test_idle_and_slow_closed),
        cmocka_unit_test(test_over_address_limit_closed),
        cmocka_unit_test(test_over_connection_limit_waits),
        cmocka_unit_test(test_big_body_refused),
        cmocka_unit_test(test_two_lengths_refused),
        cmocka_unit_test(test_malformed_refused),
        cmocka_unit_test(test_budget_body_checked),
        cmocka_unit_test(test_budget_answers_its_own),
        cmocka_unit_test(test_settings_checked),
        cmocka_unit_test(test_read_auth),
        cmocka_unit_test(test_read_auth_needs_token),
        cmocka_unit_test(test_query_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
