/* SPDX-License-Identifier: Apache-2.0 */
/* test_http.c: the HTTP client's fan-out (util/http.h) against loopback stand-in node daemons,
 * plain HTTP on kept connections and through curl: every request answered once, its done
 * call on whichever thread ran it, a server that never answers holding only its own request
 * until the timeout (every other one done before it) or its caller's stop (cancelled at once,
 * or not sent), a refused connection failing alone,
 * kept connections reused from call to call; and answers of every shape read right. */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/standin.h"
#include "util/http.h"
#include "support/answer_once.h"

/* Bytes not received yet: under ASan a read of them is a report, else they hold line ends a
 * parser that read them would take for the answer's. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define HIDE(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define SHOW(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define HIDE(p, n) memset(p, '\n', n)
#define SHOW(p, n) ((void)(p), (void)(n))
#endif

#define NODES 300 /* enough requests for every thread of a call */

/* Order in which requests finished, from any thread. */
static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;
static int order_next;

typedef struct seen {
    int calls, order;
} seen;

static void on_done(pfi_http_req *r)
{
    seen *s = r->ud;
    pthread_mutex_lock(&order_mu);
    s->calls++;
    s->order = order_next++;
    pthread_mutex_unlock(&order_mu);
}

/* A loopback port that takes connections (the kernel's backlog does) and never answers. */
static int black_hole(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 64), 0);
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

/* A loopback port nothing listens on: bound, then closed. */
static int closed_port(void)
{
    int port, fd = black_hole(&port);
    close(fd);
    return port;
}

typedef struct fan {
    pfi_standin *s;
    int port;
    char *names[NODES];
    char (*url)[128];
    char (*body)[160];
    pfi_http_req *rq;
    seen *sn;
} fan;

static void fan_up(fan *f, int extra)
{
    pfi_err e = {0};
    for (int i = 0; i < NODES; i++) {
        f->names[i] = malloc(16);
        snprintf(f->names[i], 16, "n%03d", i);
    }
    assert_int_equal(pfi_standin_start(NODES, (const char *const *)f->names, 2, 200, 700, &f->s,
                                       &f->port, &e),
                     PFI_OK);
    int n = NODES + extra;
    f->url = calloc((size_t)n, sizeof *f->url);
    f->body = calloc((size_t)n, sizeof *f->body);
    f->rq = calloc((size_t)n, sizeof *f->rq);
    f->sn = calloc((size_t)n, sizeof *f->sn);
    assert_true(f->url && f->body && f->rq && f->sn);
}

/* Request i of a wave: node i's caps, both GPUs to cap_w. */
static void fan_caps(fan *f, int i, long long epoch, double cap_w)
{
    snprintf(f->url[i], sizeof f->url[i], "http://127.0.0.1:%d/n/%s/v1/caps", f->port,
             f->names[i]);
    snprintf(f->body[i], sizeof f->body[i],
             "{\"epoch\":%lld,\"caps\":[{\"gpu\":0,\"cap_w\":%g},{\"gpu\":1,\"cap_w\":%g}]}",
             epoch, cap_w, cap_w);
    f->rq[i].url = f->url[i];
    f->rq[i].method = "PUT";
    f->rq[i].body = f->body[i];
    f->rq[i].done = on_done;
    f->rq[i].ud = &f->sn[i];
    f->rq[i].affinity = (unsigned)i + 1;
}

static void fan_down(fan *f, int n)
{
    pfi_http_req_free(f->rq, n);
    pfi_standin_stop(f->s);
    for (int i = 0; i < NODES; i++)
        free(f->names[i]);
    free(f->url);
    free(f->body);
    free(f->rq);
    free(f->sn);
}

/* Each test of the fan-out runs both ways: plain HTTP on one epoll loop, and through curl on
 * several threads. */
static int curl_only;

static pfi_http *client(void)
{
    pfi_http *h = pfi_http_new();
    assert_non_null(h);
    if (curl_only)
        pfi_http_curl_only(h);
    return h;
}

/* An id in a path: dots and slashes encoded (libcurl resolves dot segments, so "../budget"
 * would reach another route), letters, digits and "_:-" as they are, too long refused. */
static void test_id_path(void **state)
{
    (void)state;
    char b[40];
    assert_string_equal(pfi_http_id_path(b, sizeof b, "/v1/jobs/", "../budget", ""),
                        "/v1/jobs/%2E%2E%2Fbudget");
    assert_string_equal(pfi_http_id_path(b, sizeof b, "/v1/jobs/", ".", "/throughput"),
                        "/v1/jobs/%2E/throughput");
    assert_string_equal(pfi_http_id_path(b, sizeof b, "/e/", "a_b:C-9 ?", ""), "/e/a_b:C-9%20%3F");
    assert_null(pfi_http_id_path(b, sizeof b, "/v1/jobs/", "0123456789012345678901234567", ""));
    assert_null(pfi_http_id_path(b, sizeof b, "/v1/jobs/", "0123456789", "/throughput/x/y/z/w/v"));
    assert_null(pfi_http_id_path(b, 8, "/v1/jobs/", "a", ""));
    assert_non_null(pfi_http_id_path(b, sizeof b, "/v1/jobs/", "", ""));
}

static void test_every_request_once(void **state)
{
    fan f;
    fan_up(&f, 0);
    pfi_http *h = client();
    /* Two calls on the same client, the second a change of every node again. */
    for (int call = 0; call < 2; call++) {
        for (int i = 0; i < NODES; i++) {
            fan_caps(&f, i, 10 + call, call ? 450 : 300 + i % 300);
            f.sn[i].calls = 0;
        }
        long long before = pfi_standin_requests(f.s), conns = pfi_standin_connections(f.s);
        pfi_http_many(h, f.rq, NODES, NULL, 5.0, 16);
        assert_int_equal(pfi_standin_requests(f.s) - before, NODES);
        /* At most 16 at a time on as many connections, kept: the second call opens none. */
        assert_true(pfi_standin_connections(f.s) - conns <= (call ? 0 : 16));
        for (int i = 0; i < NODES; i++) {
            assert_int_equal(f.rq[i].status, 200);
            assert_int_equal(f.sn[i].calls, 1);
            assert_non_null(f.rq[i].reply);
            assert_non_null(strstr(f.rq[i].reply, "\"gpus\""));
            double want = call ? 450 : 300 + i % 300;
            assert_true(fabs(pfi_standin_cap(f.s, f.names[i], 1) - want) < 1e-9);
        }
    }
    pfi_http_free(h);
    fan_down(&f, NODES);
}

/* A node that takes the connection and never answers, and one that refuses it, among 300 that
 * answer: each of the 300 is done before the silent one gives up, which gives up at its timeout
 * with a timeout error; the refused one fails with its own error. */
static void test_silent_node_holds_only_itself(void **state)
{
    fan f;
    fan_up(&f, 2);
    int hole_port, hole = black_hole(&hole_port);
    int dead_port = closed_port();
    pfi_http *h = client();
    for (int i = 0; i < NODES; i++)
        fan_caps(&f, i, 5, 333);
    char hole_url[64], dead_url[64];
    snprintf(hole_url, sizeof hole_url, "http://127.0.0.1:%d/v1/caps", hole_port);
    snprintf(dead_url, sizeof dead_url, "http://127.0.0.1:%d/v1/caps", dead_port);
    /* First in the list, so it starts before any other request of its thread. */
    memmove(&f.rq[2], &f.rq[0], NODES * sizeof *f.rq);
    seen hs = {0}, ds = {0};
    f.rq[0] = (pfi_http_req){.url = hole_url, .method = "PUT", .body = "{}", .done = on_done,
                             .ud = &hs, .affinity = 7};
    f.rq[1] = (pfi_http_req){.url = dead_url, .method = "PUT", .body = "{}", .done = on_done,
                             .ud = &ds, .affinity = 8};
    pthread_mutex_lock(&order_mu);
    order_next = 0;
    pthread_mutex_unlock(&order_mu);
    pfi_http_many(h, f.rq, NODES + 2, NULL, 3.0, 256);
    assert_int_equal(hs.calls, 1);
    assert_int_equal(ds.calls, 1);
    assert_int_equal(f.rq[0].status, -1);
    assert_non_null(strstr(f.rq[0].err, "imeout"));
    assert_int_equal(f.rq[0].timed_out, 1);
    assert_int_equal(f.rq[1].status, -1);
    assert_null(strstr(f.rq[1].err, "imeout"));
    assert_int_equal(f.rq[1].timed_out, 0);
    assert_true(f.rq[1].err[0] != '\0');
    for (int i = 0; i < NODES; i++) {
        assert_int_equal(f.rq[i + 2].status, 200);
        assert_int_equal(f.sn[i].calls, 1);
        assert_true(f.sn[i].order < hs.order); /* never waited for the silent node */
    }
    assert_int_equal(hs.order, NODES + 1); /* the last of all */
    close(hole);
    pfi_http_free(h);
    fan_down(&f, NODES + 2);
}

/* A stop while a request waits on a server that never answers: the caller's flag gives it up
 * (cancelled, its own error, no timeout), long before its timeout; requests without the flag
 * are answered as ever; and a request whose flag is set before it starts is not sent. */
typedef struct stopper {
    volatile int stop;
    pthread_t th;
} stopper;

static int done_so_far(void)
{
    pthread_mutex_lock(&order_mu);
    int k = order_next;
    pthread_mutex_unlock(&order_mu);
    return k;
}

/* Sets the flag once every other request is done (60 s at most), so it is set while only the
 * silent one is left. */
static void *stopper_main(void *arg)
{
    stopper *st = arg;
    for (int k = 0; k < 60000 && done_so_far() < NODES; k++)
        usleep(1000);
    st->stop = 1;
    return NULL;
}

static void test_stop_cancels_waiting(void **state)
{
    (void)state;
    fan f;
    fan_up(&f, 1);
    int hole_port, hole = black_hole(&hole_port);
    pfi_http *h = client();
    for (int i = 0; i < NODES; i++)
        fan_caps(&f, i, 6, 321);
    char hole_url[64];
    snprintf(hole_url, sizeof hole_url, "http://127.0.0.1:%d/v1/caps", hole_port);
    stopper st = {0};
    seen hs = {0};
    f.rq[NODES] = (pfi_http_req){.url = hole_url, .method = "PUT", .body = "{}",
                                 .done = on_done, .ud = &hs, .affinity = 7, .cancel = &st.stop};
    pthread_mutex_lock(&order_mu);
    order_next = 0;
    pthread_mutex_unlock(&order_mu);
    assert_int_equal(pthread_create(&st.th, NULL, stopper_main, &st), 0);
    /* A timeout of a minute: only the flag ends the silent request with its own error. */
    pfi_http_many(h, f.rq, NODES + 1, NULL, 60.0, 256);
    pthread_join(st.th, NULL);
    assert_int_equal(hs.calls, 1);
    assert_int_equal(hs.order, NODES);
    assert_int_equal(f.rq[NODES].status, -1);
    assert_int_equal(f.rq[NODES].cancelled, 1);
    assert_string_equal(f.rq[NODES].err, "cancelled: stopping");
    assert_null(f.rq[NODES].reply);
    for (int i = 0; i < NODES; i++) {
        assert_int_equal(f.rq[i].status, 200);
        assert_int_equal(f.rq[i].cancelled, 0);
    }
    /* The flag already set: nothing sent, the request cancelled and done. */
    seen ns = {0};
    fan_caps(&f, 0, 7, 456);
    f.rq[0].cancel = &st.stop;
    f.rq[0].ud = &ns;
    long long before = pfi_standin_requests(f.s);
    pfi_http_many(h, &f.rq[0], 1, NULL, 60.0, 1);
    assert_int_equal(pfi_standin_requests(f.s), before);
    assert_int_equal(ns.calls, 1);
    assert_int_equal(f.rq[0].status, -1);
    assert_int_equal(f.rq[0].cancelled, 1);
    assert_true(fabs(pfi_standin_cap(f.s, f.names[0], 0) - 321) < 1e-9);
    close(hole);
    pfi_http_free(h);
    fan_down(&f, NODES + 1);
}

/* A client for one call (no kept client): one request, one thread, done called. */
static void test_one_shot(void **state)
{
    fan f;
    fan_up(&f, 0);
    fan_caps(&f, 3, 9, 612);
    f.sn[3].calls = 0;
    pfi_http_many(NULL, &f.rq[3], 1, NULL, 5.0, 1);
    assert_int_equal(f.rq[3].status, 200);
    assert_int_equal(f.sn[3].calls, 1);
    assert_true(fabs(pfi_standin_cap(f.s, f.names[3], 0) - 612) < 1e-9);
    fan_down(&f, NODES);
}

/* ---- a scripted server: canned answers, to check how answers are read ---- */

typedef struct script {
    int fd, port;
    const char *const *answers; /* one per request, in order; NULL ends */
    const int *close_after;     /* per answer: close the connection after it */
    int accepted;
    int trickle; /* each answer sent a byte at a time */
    pthread_t th;
} script;

/* Reads one request (head, then Content-Length bytes of body); 0 at EOF. */
static int read_request(int c)
{
    char buf[8192];
    size_t n = 0;
    for (;;) {
        ssize_t r = recv(c, buf + n, sizeof buf - 1 - n, 0);
        if (r <= 0)
            return 0;
        n += (size_t)r;
        buf[n] = '\0';
        char *he = strstr(buf, "\r\n\r\n");
        if (!he)
            continue;
        const char *cl = strstr(buf, "Content-Length: ");
        size_t want = (size_t)(he + 4 - buf) + (cl && cl < he ? (size_t)atoi(cl + 16) : 0);
        if (n >= want)
            return 1;
    }
}

static void *script_main(void *arg)
{
    script *sc = arg;
    int k = 0;
    while (sc->answers[k]) {
        int c = accept(sc->fd, NULL, NULL);
        if (c < 0)
            break;
        sc->accepted++;
        while (sc->answers[k] && read_request(c)) {
            const char *a = sc->answers[k];
            if (sc->trickle) {
                int one = 1;
                setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                for (size_t i = 0; a[i]; i++)
                    assert_true(send(c, a + i, 1, MSG_NOSIGNAL) == 1);
            } else {
                assert_true(send(c, a, strlen(a), MSG_NOSIGNAL) == (ssize_t)strlen(a));
            }
            if (sc->close_after[k++])
                break;
        }
        close(c);
    }
    return NULL;
}

static void script_run(script *sc, const char *const *answers, const int *close_after,
                       int trickle)
{
    memset(sc, 0, sizeof *sc);
    sc->fd = black_hole(&sc->port);
    sc->answers = answers;
    sc->close_after = close_after;
    sc->trickle = trickle;
    assert_int_equal(pthread_create(&sc->th, NULL, script_main, sc), 0);
}

static void script_start(script *sc, const char *const *answers, const int *close_after)
{
    script_run(sc, answers, close_after, 0);
}

static void script_stop(script *sc)
{
    pthread_join(sc->th, NULL);
    close(sc->fd);
}

/* One request on the kept client h; its reply (or NULL) and status. */
static long ask(pfi_http *h, int port, const char *method, size_t max_reply, char **reply,
                char *err)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/x", port);
    pfi_http_req r = {.url = url, .method = method, .body = strcmp(method, "GET") ? "{}" : NULL,
                      .max_reply = max_reply};
    pfi_http_many(h, &r, 1, "tok", 5.0, 1);
    *reply = r.reply;
    snprintf(err, 200, "%s", r.err);
    return r.status;
}

/* One request answered with this status and exactly this body. */
static void expect_body(pfi_http *h, int port, const char *method, long status, const char *body)
{
    char *rep, err[200];
    assert_int_equal(ask(h, port, method, 0, &rep, err), status);
    assert_string_equal(rep, body);
    free(rep);
}

/* One request refused on this client's side, no reply, the error naming why. */
static void expect_error(pfi_http *h, int port, size_t max_reply, const char *why)
{
    char *rep, err[200];
    assert_int_equal(ask(h, port, "GET", max_reply, &rep, err), -1);
    assert_null(rep);
    assert_non_null(strstr(err, why));
}

static void test_answers_read(void **state)
{
    static const char *const answers[] = {
        /* chunked, with a chunk extension and a trailer */
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n6\r\n "
        "world\r\n0\r\nX-T: 1\r\n\r\n",
        /* 100 Continue first, then the answer */
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
        /* an error status with a body */
        "HTTP/1.1 409 Conflict\r\nContent-Length: 9\r\nDate: Sun, 06 Nov 1994 08:49:37 "
        "GMT\r\n\r\nstale epo",
        /* kept, then closed by the server while idle: the next request goes again */
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb",
        /* HTTP/1.0, its body up to the close */
        "HTTP/1.0 200 OK\r\n\r\nuntil the end",
        /* longer than max_reply */
        "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789",
        /* not HTTP */
        "garbage\r\n\r\n",
        NULL};
    static const int close_after[] = {0, 0, 0, 1, 0, 1, 1, 1};
    script sc;
    script_start(&sc, answers, close_after);
    pfi_http *h = pfi_http_new();
    expect_body(h, sc.port, "PUT", 200, "hello world");
    expect_body(h, sc.port, "POST", 201, "ok");
    pfi_http_req r = {0};
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/x", sc.port);
    r.url = url;
    r.method = "GET";
    pfi_http_many(h, &r, 1, NULL, 5.0, 1);
    assert_int_equal(r.status, 409);
    assert_non_null(strstr(r.err, "HTTP 409: stale epo"));
    assert_true(r.date_s == 784111777.0);
    pfi_http_req_free(&r, 1);
    assert_int_equal(sc.accepted, 1); /* three requests, one connection */
    expect_body(h, sc.port, "GET", 200, "a");
    usleep(1000 * 50); /* the server closes the idle connection meanwhile */
    expect_body(h, sc.port, "GET", 200, "b");
    assert_int_equal(sc.accepted, 2);
    expect_body(h, sc.port, "GET", 200, "until the end");
    expect_error(h, sc.port, 10, "longer");
    expect_error(h, sc.port, 0, "malformed");
    pfi_http_free(h);
    script_stop(&sc);
}

/* An answer in one piece, eof or not, max 1000: its code, and its body when complete. */
static int answer(const char *in, size_t n, int eof, char **body)
{
    char *buf = malloc(n ? n : 1); /* exactly the bytes: a read past them is ASan's */
    assert_non_null(buf);
    memcpy(buf, in, n);
    pfi_http_answer a;
    int rc = answer_once(buf, n, eof, 0, 1000, &a);
    free(buf);
    if (rc < 0)
        assert_non_null(a.why);
    if (body)
        *body = a.body;
    else
        free(a.body);
    return rc;
}

#define ANSWER(s, eof) answer(s, sizeof s - 1, eof, NULL)
#define HEAD200 "HTTP/1.1 200 OK\r\n"
#define CHUNKED HEAD200 "Transfer-Encoding: chunked\r\n\r\n"

/* Hostile answers: each ends in an error at once (not in a wait for more, which would hold
 * the request until its timeout), and never reads past the bytes received. */
static void test_hostile_answers(void **state)
{
    char *body;
    /* Content-Length: huge, negative, signed, overflowing, conflicting, padded past any
     * header's room; the same value twice is one */
    assert_int_equal(ANSWER(HEAD200 "Content-Length: 5000\r\n\r\nx", 0), -2);
    assert_int_equal(ANSWER(HEAD200 "Content-Length: 18446744073709551621\r\n\r\nx", 0), -2);
    assert_int_equal(ANSWER(HEAD200 "Content-Length: -1\r\n\r\nx", 0), -1);
    assert_int_equal(ANSWER(HEAD200 "Content-Length: +1\r\n\r\nx", 0), -1);
    assert_int_equal(ANSWER(HEAD200 "Content-Length: 1x\r\n\r\nx", 0), -1);
    assert_int_equal(ANSWER(HEAD200 "Content-Length: \r\n\r\nx", 0), -1);
    assert_int_equal(ANSWER(HEAD200 "Content-Length: 2\r\nContent-Length: 5\r\n\r\nhello", 0), -1);
    static const char twice[] = HEAD200 "Content-Length: 2\r\ncontent-length: 2\r\n\r\nhello";
    assert_int_equal(answer(twice, sizeof twice - 1, 0, &body), 1);
    assert_string_equal(body, "he");
    free(body);
    char pad[600];
    snprintf(pad, sizeof pad, HEAD200 "Content-Length: %0300d\r\n\r\nhello", 5);
    assert_int_equal(answer(pad, strlen(pad), 0, NULL), -1);
    /* chunk sizes: over size_t, over max, signed, 0x, spaces before, nothing */
    assert_int_equal(ANSWER(CHUNKED "fffffffffffffffffffff\r\nab\r\n0\r\n\r\n", 0), -2);
    assert_int_equal(ANSWER(CHUNKED "10000000000000001\r\nab", 0), -2);
    assert_int_equal(ANSWER(CHUNKED "3e9\r\nab", 0), -2);
    assert_int_equal(ANSWER(CHUNKED "200\r\n", 0), 0); /* 512 bytes to come: fine */
    assert_int_equal(ANSWER(CHUNKED "-1\r\nab\r\n0\r\n\r\n", 0), -1);
    assert_int_equal(ANSWER(CHUNKED "0x2\r\nab\r\n0\r\n\r\n", 0), -1);
    assert_int_equal(ANSWER(CHUNKED " 2\r\nab\r\n0\r\n\r\n", 0), -1);
    assert_int_equal(ANSWER(CHUNKED "\r\n2\r\nab\r\n0\r\n\r\n", 0), -1);
    assert_int_equal(ANSWER(CHUNKED "\n", 1), -1);
    /* two chunks together over max */
    char two[1200];
    int n = snprintf(two, sizeof two, CHUNKED "1f4\r\n%0500d\r\n1f5\r\n", 0);
    assert_int_equal(answer(two, (size_t)n, 0, NULL), -2);
    /* the CRLF after a chunk missing; a size line that never ends */
    assert_int_equal(ANSWER(CHUNKED "5\r\nhelloX0\r\n\r\n", 0), -1);
    size_t big = 70000;
    char *line = malloc(big);
    assert_non_null(line);
    n = snprintf(line, big, CHUNKED "5");
    memset(line + n, ';', big - (size_t)n);
    assert_int_equal(answer(line, big, 0, NULL), -1);
    /* a head that never ends (one endless header line) */
    n = snprintf(line, big, HEAD200 "X-Long: ");
    memset(line + n, 'a', big - (size_t)n);
    assert_int_equal(answer(line, big, 0, NULL), -1);
    free(line);
    /* 1xx answers without end */
    char info[600] = "";
    for (int i = 0; i < 12; i++)
        strcat(info, "HTTP/1.1 100 Continue\r\n\r\n");
    assert_int_equal(answer(info, strlen(info), 0, NULL), -1);
    assert_int_equal(ANSWER("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n", 0), 0);
    /* a body up to the close over max; a status code run on */
    char tail[1100];
    n = snprintf(tail, sizeof tail, "HTTP/1.0 200 OK\r\n\r\n%01001d", 0);
    assert_int_equal(answer(tail, (size_t)n, 0, NULL), -2);
    assert_int_equal(ANSWER("HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n", 0), -1);
    /* the bytes in two pieces read as in one (a size line's leading CRLF once read past) */
    static const char split[] = CHUNKED "\r\n\n1c\r\n";
    for (size_t cut = 0; cut < sizeof split - 1; cut++) {
        int r1 = answer(split, cut, 0, NULL);
        assert_true(r1 == 0 || r1 == -1);
    }
    assert_int_equal(ANSWER(split, 1), -1);
}

/* Through the loop: a chunk size over size_t, a negative Content-Length each end their
 * request with their own error, not the timeout's. */
static void test_hostile_answer_ends_request(void **state)
{
    static const char *const answers[] = {
        CHUNKED "fffffffffffffffffffffffff\r\nab", HEAD200 "Content-Length: -5\r\n\r\nx", NULL};
    static const int close_after[] = {0, 0};
    script sc;
    script_start(&sc, answers, close_after);
    pfi_http *h = pfi_http_new();
    expect_error(h, sc.port, 0, "longer");
    expect_error(h, sc.port, 0, "malformed");
    pfi_http_free(h);
    script_stop(&sc);
}

/* An answer with bytes past its end (a Content-Length short of its body): its connection is
 * not kept, so the next request reads its own answer on a new one, not those bytes. */
static void test_bytes_past_answer_not_kept(void **state)
{
    static const char *const answers[] = {HEAD200 "Content-Length: 1\r\n\r\nab",
                                          HEAD200 "Content-Length: 1\r\n\r\nc", NULL};
    static const int close_after[] = {0, 0};
    script sc;
    script_start(&sc, answers, close_after);
    pfi_http *h = pfi_http_new();
    expect_body(h, sc.port, "GET", 200, "a");
    expect_body(h, sc.port, "GET", 200, "c");
    assert_int_equal(sc.accepted, 2);
    pfi_http_free(h);
    script_stop(&sc);
}

/* Kept connections to many servers: each request finds its own server's connection among
 * the others' (8 servers, 3 calls of a GET to each of their 4 nodes, one at a time: with two
 * in flight, a slow answer could make the next request to its server open a second connection,
 * and the count below would depend on timing): every answer from the right server, and after
 * the first call no server sees a new connection. */
static void test_kept_per_server(void **state)
{
    enum { SERVERS = 8, PER = 4 };
    char names[SERVERS][PER][16]; /* each server its own nodes: one asked for another's is 404 */
    pfi_standin *s[SERVERS];
    int port[SERVERS];
    pfi_err e = {0};
    for (int k = 0; k < SERVERS; k++) {
        const char *nk[PER];
        for (int j = 0; j < PER; j++) {
            snprintf(names[k][j], sizeof names[k][j], "s%d-%d", k, j);
            nk[j] = names[k][j];
        }
        assert_int_equal(pfi_standin_start(PER, nk, 2, 200, 700, &s[k], &port[k], &e), 0);
    }
    pfi_http_req rq[SERVERS * PER];
    char url[SERVERS * PER][80];
    pfi_http *h = pfi_http_new();
    long long conns[SERVERS];
    for (int call = 0; call < 3; call++) {
        memset(rq, 0, sizeof rq);
        for (int i = 0; i < SERVERS * PER; i++) {
            snprintf(url[i], sizeof url[i], "http://127.0.0.1:%d/n/%s/v1/gpus", port[i % SERVERS],
                     names[i % SERVERS][i / SERVERS]);
            rq[i].url = url[i];
            rq[i].method = "GET";
        }
        pfi_http_many(h, rq, SERVERS * PER, NULL, 5.0, 1);
        for (int i = 0; i < SERVERS * PER; i++)
            assert_int_equal(rq[i].status, 200);
        pfi_http_req_free(rq, SERVERS * PER);
        for (int k = 0; k < SERVERS; k++) {
            if (call)
                assert_int_equal(pfi_standin_connections(s[k]), conns[k]);
            conns[k] = pfi_standin_connections(s[k]);
        }
    }
    pfi_http_free(h);
    for (int k = 0; k < SERVERS; k++)
        pfi_standin_stop(s[k]);
}

/* An answer of every kind, long, with many pieces to read: a long head after two 1xx answers
 * and a Content-Length body; many chunks of every size with extensions and a trailer; a body
 * up to the close; scale 10 is ten times as long as 1.  Malloc'ed; its length in *n. */
static char *long_answer(int kind, int scale, size_t *n)
{
    size_t cap = 400000, k = 0;
    char *a = malloc(cap);
    assert_non_null(a);
#define PUT(...) (k += (size_t)snprintf(a + k, cap - k, __VA_ARGS__))
    if (kind == 0) {
        PUT("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\n");
        for (int h = 0; h < 60 * scale; h++)
            PUT("X-Header-%d: %040d\r\n", h, h);
        PUT("Date: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: %d\r\n\r\n", 12000 * scale);
        for (int i = 0; i < 12000 * scale; i++)
            a[k++] = (char)('a' + i % 26);
    } else if (kind == 1) {
        PUT("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        for (int c = 1; c <= 70 * scale; c++) {
            PUT(c % 3 ? "%x\r\n" : "%x;ext=%d\r\n", c % 300 + 1, c);
            for (int i = 0; i < c % 300 + 1; i++)
                a[k++] = (char)('A' + (c + i) % 26);
            PUT("\r\n");
        }
        PUT("0\r\nX-Trailer: done\r\n\r\n");
    } else {
        PUT("HTTP/1.0 200 OK\r\nServer: x\r\n\r\n");
        for (int i = 0; i < 6000 * scale; i++)
            a[k++] = (char)('0' + i % 10);
    }
#undef PUT
    a[k] = '\0';
    *n = k;
    return a;
}

/* A reply trickled byte by byte into the reader: more bytes needed after each byte until the
 * last, then the answer a one-piece read gives; no byte past those received read; and each
 * byte looked at a bounded number of times (a re-read of everything on every byte would look at
 * n^2/2 bytes). */
static void test_trickled_answers(void **state)
{
    for (int kind = 0; kind < 3; kind++) {
        size_t n;
        char *want = long_answer(kind, 10, &n);
        pfi_http_answer one, got;
        int eof = kind == 2;
        assert_int_equal(answer_once(want, n, eof, 0, 4u << 20, &one), 1);
        char *buf = malloc(n);
        assert_non_null(buf);
        HIDE(buf, n);
        pfi_http_answer_reader rd;
        pfi_http_answer_begin(&rd, 0, 4u << 20);
        int rc = 0;
        for (size_t k = 1; k <= n; k++) {
            SHOW(buf + k - 1, 1);
            buf[k - 1] = want[k - 1];
            rc = pfi_http_answer_more(&rd, buf, k, 0, &got);
            if (k < n || eof)
                assert_int_equal(rc, 0);
        }
        if (eof)
            rc = pfi_http_answer_more(&rd, buf, n, 1, &got);
        assert_int_equal(rc, 1);
        assert_int_equal(got.status, one.status);
        assert_int_equal(got.keep, one.keep);
        assert_int_equal(got.used, one.used);
        assert_true(got.date_s == one.date_s);
        assert_int_equal(got.body_len, one.body_len);
        assert_memory_equal(got.body, one.body, one.body_len);
        assert_true(one.body_len > 50000);
        assert_true(rd.examined <= 8 * n);
        pfi_http_answer_end(&rd);
        free(got.body);
        free(one.body);
        free(buf);
        free(want);
    }
}

/* Through the loop: answers sent a byte at a time read right, on a kept connection. */
static void test_trickled_through_loop(void **state)
{
    size_t n;
    char *chunked = long_answer(1, 1, &n);
    char *cl = long_answer(0, 1, &n);
    const char *const answers[] = {chunked, cl, NULL};
    static const int close_after[] = {0, 0};
    pfi_http_answer a1, a2;
    assert_int_equal(answer_once(chunked, strlen(chunked), 0, 0, 4u << 20, &a1), 1);
    assert_int_equal(answer_once(cl, strlen(cl), 0, 0, 4u << 20, &a2), 1);
    script sc;
    script_run(&sc, answers, close_after, 1);
    pfi_http *h = pfi_http_new();
    expect_body(h, sc.port, "GET", 200, a1.body);
    expect_body(h, sc.port, "GET", 200, a2.body);
    assert_int_equal(sc.accepted, 1);
    pfi_http_free(h);
    script_stop(&sc);
    free(a1.body);
    free(a2.body);
    free(chunked);
    free(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_path),
        cmocka_unit_test(test_every_request_once),
        cmocka_unit_test(test_silent_node_holds_only_itself),
        cmocka_unit_test(test_stop_cancels_waiting),
        cmocka_unit_test(test_one_shot),
        cmocka_unit_test(test_answers_read),
        cmocka_unit_test(test_hostile_answers),
        cmocka_unit_test(test_hostile_answer_ends_request),
        cmocka_unit_test(test_bytes_past_answer_not_kept),
        cmocka_unit_test(test_trickled_answers),
        cmocka_unit_test(test_trickled_through_loop),
        cmocka_unit_test(test_kept_per_server),
    };
    int failed = cmocka_run_group_tests_name("plain HTTP on kept connections", tests, NULL, NULL);
    curl_only = 1;
    const struct CMUnitTest through_curl[] = {
        cmocka_unit_test(test_every_request_once),
        cmocka_unit_test(test_silent_node_holds_only_itself),
        cmocka_unit_test(test_stop_cancels_waiting),
    };
    return failed + cmocka_run_group_tests_name("through curl", through_curl, NULL, NULL);
}
