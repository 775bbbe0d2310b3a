/* SPDX-License-Identifier: Apache-2.0 */
/* burst.c: loopback clients for the HTTP servers' tests (burst.h). */
#include "burst.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

double pfi_test_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void pause_ms(int ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

int pfi_test_dial(const char *src, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    if (src) {
        if (inet_pton(AF_INET, src, &sa.sin_addr) != 1 ||
            bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            close(fd);
            return -1;
        }
    }
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

int pfi_test_send(int fd, const char *text, size_t len)
{
    while (len) {
        ssize_t k = send(fd, text, len, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        text += k;
        len -= (size_t)k;
    }
    return 0;
}

/* 1 when the thread's comm begins with "MHD-" and it sits in futex (a lock or condition). */
static int task_blocked(const char *tid)
{
    char path[300], buf[128];
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int mhd = fgets(buf, sizeof buf, f) && !strncmp(buf, "MHD-", 4);
    fclose(f);
    if (!mhd)
        return 0;
    snprintf(path, sizeof path, "/proc/self/task/%s/syscall", tid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    long nr = -1;
    int ok = fscanf(f, "%ld", &nr) == 1;
    fclose(f);
    return ok && nr == SYS_futex;
}

int pfi_test_mhd_blocked(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n += task_blocked(e->d_name);
    closedir(d);
    return n;
}

int pfi_test_wait_blocked(int n, double max_s)
{
    double until = pfi_test_now() + max_s;
    int k;
    while ((k = pfi_test_mhd_blocked()) < n && pfi_test_now() < until)
        pause_ms(1);
    return k;
}

int pfi_test_status(int fd, double max_s)
{
    char buf[4096];
    size_t got = 0;
    double until = pfi_test_now() + max_s;
    for (;;) {
        char *eol = got ? memchr(buf, '\n', got) : NULL;
        if (eol) {
            int code = 0;
            if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
                code = 0;
            /* Drop what else came of the answer (its head and body, all sent at once). */
            while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
                ;
            return code;
        }
        int left = (int)((until - pfi_test_now()) * 1000);
        if (left <= 0 || got == sizeof buf - 1)
            return -1;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, left) <= 0)
            continue;
        ssize_t r = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (r <= 0)
            return 0;
        got += (size_t)r;
    }
}

int pfi_test_request(const char *src, int port, const char *text, double max_s)
{
    int fd = pfi_test_dial(src, port);
    if (fd < 0)
        return -3;
    int st = pfi_test_send(fd, text, strlen(text)) == 0 ? pfi_test_status(fd, max_s) : -2;
    close(fd);
    return st;
}

int pfi_test_answers(const int *fds, int n, const char *head, double max_s)
{
    size_t hl = strlen(head);
    char(*buf)[32] = calloc((size_t)n, sizeof *buf);
    size_t *got = calloc((size_t)n, sizeof *got);
    struct pollfd *p = calloc((size_t)n, sizeof *p);
    int *who = calloc((size_t)n, sizeof *who);
    int answered = 0, open = n;
    if (!buf || !got || !p || !who || hl >= sizeof *buf)
        open = 0;
    double until = pfi_test_now() + max_s;
    while (open > 0 && pfi_test_now() < until) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (got[i] < hl)
                who[m] = i, p[m++] = (struct pollfd){fds[i], POLLIN, 0};
        if (poll(p, (nfds_t)m, 100) <= 0)
            continue;
        for (int q = 0; q < m; q++) {
            if (!p[q].revents)
                continue;
            int i = who[q];
            ssize_t r = recv(fds[i], buf[i] + got[i], hl - got[i], MSG_DONTWAIT);
            if (r > 0 && (got[i] += (size_t)r) == hl) {
                answered += !memcmp(buf[i], head, hl);
                open--;
            } else if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                got[i] = hl; /* closed without an answer */
                open--;
            }
        }
    }
    free(buf);
    free(got);
    free(p);
    free(who);
    return answered;
}

int pfi_test_closed(int fd, double max_s)
{
    struct pollfd p = {fd, POLLIN, 0};
    double until = pfi_test_now() + max_s;
    for (int first = 1;; first = 0) {
        int left = (int)((until - pfi_test_now()) * 1000);
        if (left < 0 && !first)
            return 0;
        if (poll(&p, 1, left > 0 ? left : 0) <= 0) {
            if (left <= 0)
                return 0;
            continue;
        }
        char c;
        ssize_t r = recv(fd, &c, 1, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
            return 1;
        if (r > 0)
            return 0;
    }
}

int pfi_test_closed_count(const int *fds, int n, int want, double max_s)
{
    double until = pfi_test_now() + max_s;
    int *done = calloc((size_t)n, sizeof *done), k = 0;
    if (!done)
        return -1;
    do {
        for (int i = 0; i < n; i++)
            if (!done[i] && pfi_test_closed(fds[i], 0.001))
                done[i] = 1, k++;
    } while (k < want && pfi_test_now() < until);
    free(done);
    return k;
}

long pfi_test_nofile(long n)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0)
        return -1;
    if ((long)r.rlim_cur < n) {
        struct rlimit want = {(rlim_t)n, r.rlim_max};
        if (r.rlim_max != RLIM_INFINITY && (long)r.rlim_max < n)
            want.rlim_max = (rlim_t)n; /* allowed to root (CAP_SYS_RESOURCE) */
        if (setrlimit(RLIMIT_NOFILE, &want) != 0) {
            r.rlim_cur = r.rlim_max;
            setrlimit(RLIMIT_NOFILE, &r);
        }
        getrlimit(RLIMIT_NOFILE, &r);
    }
    return (long)r.rlim_cur;
}

int pfi_test_send_body(int port, const char *src, const char *token, const char *method,
                       const char *path, const char *json)
{
    int fd = pfi_test_dial(src, port);
    if (fd < 0)
        return -2;
    char head[512];
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                     method, path, token, strlen(json));
    int st = -2;
    if (pfi_test_send(fd, head, (size_t)n) == 0 && pfi_test_send(fd, json, strlen(json)) == 0)
        st = pfi_test_status(fd, 30);
    close(fd);
    return st;
}

/* Sends head then len bytes of body on a new connection; the answer's status. */
static int send_raw(int port, const char *head, const char *body, size_t len, const char *tail,
                    double max_s)
{
    int fd = pfi_test_dial(NULL, port);
    if (fd < 0)
        return -2;
    int st = -2;
    if (pfi_test_send(fd, head, strlen(head)) == 0 &&
        (!len || pfi_test_send(fd, body, len) == 0) &&
        (!tail || pfi_test_send(fd, tail, strlen(tail)) == 0))
        st = pfi_test_status(fd, max_s);
    close(fd);
    return st;
}

void pfi_test_big_bodies(int port, const char *token, const char *path, const char *json,
                         int status[3])
{
    enum { BIG = 100 << 10 };
    size_t len = strlen(json);
    char head[512];
    status[0] = status[1] = status[2] = -2;
    /* Said to be 1e9 bytes: refused on the header, before any wait for the body. */
    snprintf(head, sizeof head,
             "PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Length: 1000000000\r\n\r\n",
             path, token);
    status[0] = send_raw(port, head, json, len > 1 ? len - 1 : len, NULL, 5);
    char *body = malloc(BIG + 1);
    if (!body || len > BIG) {
        free(body);
        return;
    }
    memset(body, ' ', BIG);
    memcpy(body, json, len);
    body[BIG] = '\0';
    status[1] = pfi_test_send_body(port, NULL, token, "PUT", path, body);
    snprintf(head, sizeof head,
             "PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Transfer-Encoding: chunked\r\n\r\n%x\r\n",
             path, token, (unsigned)BIG);
    status[2] = send_raw(port, head, body, BIG, "\r\n0\r\n\r\n", 30);
    free(body);
}

int pfi_test_two_lengths(int port, const char *token, const char *path, const char *json,
                         int way)
{
    static const char CL[] = "Content-Length: %zu\r\n";
    size_t len = strlen(json);
    char head[512], body[512], lengths[128], right[48], wrong[48];
    snprintf(right, sizeof right, CL, len);
    snprintf(wrong, sizeof wrong, CL, len + 100);
    if (way == 3 || way == 4)
        snprintf(lengths, sizeof lengths, "Transfer-Encoding: %s\r\n",
                 way == 3 ? "gzip, chunked" : "gzip");
    else
        snprintf(lengths, sizeof lengths, "%s%s", way == 1 ? wrong : right,
                 way == 0 ? wrong : way == 2 ? "Transfer-Encoding: chunked\r\n" : right);
    snprintf(head, sizeof head,
             "PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\n%s\r\n",
             path, token, lengths);
    if (way == 2 || way == 3)
        snprintf(body, sizeof body, "%zx\r\n%s\r\n0\r\n\r\n", len, json);
    else
        snprintf(body, sizeof body, "%s", json);
    return send_raw(port, head, body, strlen(body), NULL, 5);
}

int pfi_test_two_lengths_refused(int port, const char *token, const char *path, const char *json)
{
    for (int way = 0; way < 5; way++) {
        int st = pfi_test_two_lengths(port, token, path, json, way);
        if (st != (way < 3 ? 400 : 501)) {
            fprintf(stderr, "way %d: status %d\n", way, st);
            return way;
        }
    }
    return -1;
}

/* A request line and an unfinished header. */
static const char slow[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: a";

int pfi_test_slow_clients(int port, const char *src, int n, int *fd)
{
    int opened = 0;
    for (int i = 0; i < n; i++) {
        fd[i] = pfi_test_dial(src, port);
        if (fd[i] < 0)
            continue;
        opened++;
        pfi_test_send(fd[i], slow, sizeof slow - 1); /* fails on one closed already */
    }
    return opened;
}

int pfi_test_close_held(int *fd, int n, int keep, double max_s)
{
    int held = n - pfi_test_closed_count(fd, n, n - keep, max_s);
    if (held > keep)
        fprintf(stderr, "one address holds %d connections\n", held);
    for (int i = 0; i < n; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    return held;
}

int pfi_test_idle_and_slow(int port, double max_s)
{
    int idle = pfi_test_dial(NULL, port), half = pfi_test_dial(NULL, port), st = -1;
    if (idle >= 0 && half >= 0 && pfi_test_send(half, slow, sizeof slow - 1) == 0)
        st = (pfi_test_closed(idle, max_s) ? 0 : 1) | (pfi_test_closed(half, max_s) ? 0 : 2);
    if (idle >= 0)
        close(idle);
    if (half >= 0)
        close(half);
    return st;
}
