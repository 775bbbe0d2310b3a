/* SPDX-License-Identifier: Apache-2.0 */
/* test_standin.c: the stand-in node daemons' server (tests/support/standin.c), which the
 * cluster's tests and its 1,000-node benchmark talk to, answers a burst of requests that one
 * of its threads finds ready all at once, whatever their number (a server thread that saw
 * exactly 128 at once used to sleep on them until some other event came). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/standin.h"

#define MAXC 200

static const char REQ[] = "GET /n/n0/v1/gpus HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void pause_ms(int ms)
{
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

/* One server thread, k+1 connections open and accepted; the thread is held inside the request
 * of the first while one request goes on each of the k others, then let go: it finds the k
 * (and what the first's answer brings) ready at once.  Returns how many of the k were
 * answered (an answer's head came) within a bound far above their time (no stall: well under
 * a second; a stall: until the connections close). */
static int burst(int k)
{
    static const char *const names[] = {"n0"};
    pfi_standin *s;
    int port;
    pfi_err e = {0};
    assert_int_equal(pfi_standin_start_threads(1, 1, names, 2, 200, 700, &s, &port, &e), 0);
    int fd[MAXC + 1];
    for (int i = 0; i <= k; i++)
        fd[i] = dial(port);
    double until = mono() + 30;
    while (pfi_standin_connections(s) < k + 1 && mono() < until)
        pause_ms(1);
    assert_int_equal(pfi_standin_connections(s), k + 1);
    pfi_standin_hold(s, 1);
    assert_int_equal(send(fd[0], REQ, sizeof REQ - 1, MSG_NOSIGNAL), (ssize_t)(sizeof REQ - 1));
    while (pfi_standin_waiting(s) < 1 && mono() < until)
        pause_ms(1);
    assert_int_equal(pfi_standin_waiting(s), 1); /* the server's one thread waits in it */
    for (int i = 1; i <= k; i++)
        assert_int_equal(send(fd[i], REQ, sizeof REQ - 1, MSG_NOSIGNAL),
                         (ssize_t)(sizeof REQ - 1));
    pfi_standin_hold(s, 0);

    char head[MAXC + 1][64];
    size_t got[MAXC + 1];
    int answered = 0;
    memset(got, 0, sizeof got);
    until = mono() + 5;
    while (answered < k && mono() < until) {
        struct pollfd p[MAXC];
        int n = 0;
        for (int i = 1; i <= k; i++)
            if (got[i] < 12)
                p[n++] = (struct pollfd){fd[i], POLLIN, 0};
        if (poll(p, (nfds_t)n, 100) <= 0)
            continue;
        for (int q = 0; q < n; q++) {
            if (!p[q].revents)
                continue;
            int i = 1;
            while (fd[i] != p[q].fd)
                i++;
            ssize_t r = recv(fd[i], head[i] + got[i], 12 - got[i], MSG_DONTWAIT);
            if (r > 0 && (got[i] += (size_t)r) == 12) {
                assert_memory_equal(head[i], "HTTP/1.1 200", 12);
                answered++;
            } else if (r == 0) {
                got[i] = 12; /* closed without an answer */
            }
        }
    }
    for (int i = 0; i <= k; i++)
        close(fd[i]);
    pfi_standin_stop(s);
    return answered;
}

static void test_burst_answered(void **state)
{
    (void)state;
    for (int k = 126; k <= 130; k++)
        assert_int_equal(burst(k), k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_answered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
