/* SPDX-License-Identifier: Apache-2.0 */
/* http_kept.c: plain HTTP/1.1 over kept connections, for the many small requests of a fan-out
 * (http_kept.h).  One epoll loop runs every request of a slice at once: connect (or take a
 * kept connection to the same server), write the request, read the answer (Content-Length,
 * chunked, or up to the close), keep the connection when the server allows.  A kept connection
 * the server closed meanwhile is found on the first write or read, and the request goes again
 * once on a new one, before any byte of its answer came. */
#include "util/http_kept.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/http_answer.h"

#define KEPT_MAX 4096 /* kept connections of one slice at most */

typedef struct kconn {
    char key[112]; /* "h:HOST:PORT" or "u:PATH" */
    unsigned long long h; /* key_hash(key): most keys of a pool are told apart by it alone */
    int fd;
} kconn;

/* FNV-1a of a key. */
static unsigned long long key_hash(const char *key)
{
    unsigned long long h = 1469598103934665603ull;
    for (; *key; key++)
        h = (h ^ (unsigned char)*key) * 1099511628211ull;
    return h;
}

struct job;

/* Every connection, in use or kept, stays registered in one epoll set from its connect to its
 * close (edge-triggered, for reading and writing): a request costs no epoll_ctl.  by_fd maps a
 * connection to the request using it, NULL while it is kept idle. */
struct pfi_http_kept {
    kconn *c;
    int n, cap;
    int ep;
    struct job **by_fd;
    int n_fd;
};

pfi_http_kept *pfi_http_kept_new(void)
{
    pfi_http_kept *k = calloc(1, sizeof(pfi_http_kept));
    if (k && (k->ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        free(k);
        return NULL;
    }
    return k;
}

void pfi_http_kept_free(pfi_http_kept *k)
{
    if (!k)
        return;
    for (int i = 0; i < k->n; i++)
        close(k->c[i].fd);
    close(k->ep);
    free(k->c);
    free(k->by_fd);
    free(k);
}

/* Registers fd (a new connection) for the request j; -1 when it cannot be. */
static int conn_register(pfi_http_kept *k, int fd, struct job *j)
{
    if (fd >= k->n_fd) {
        int nn = fd + 1 > 2 * k->n_fd ? fd + 1 : 2 * k->n_fd;
        struct job **b = realloc(k->by_fd, (size_t)nn * sizeof *b);
        if (!b)
            return -1;
        memset(b + k->n_fd, 0, (size_t)(nn - k->n_fd) * sizeof *b);
        k->by_fd = b;
        k->n_fd = nn;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.fd = fd};
    if (epoll_ctl(k->ep, EPOLL_CTL_ADD, fd, &ev) != 0)
        return -1;
    k->by_fd[fd] = j;
    return 0;
}

/* Closes a connection (which leaves the epoll set with it). */
static void conn_close(pfi_http_kept *k, int fd)
{
    if (fd < k->n_fd)
        k->by_fd[fd] = NULL;
    close(fd);
}

/* A kept connection to key, taken out of the pool; -1 when none. */
static int kept_take(pfi_http_kept *k, const char *key, unsigned long long h)
{
    for (int i = k->n - 1; i >= 0; i--)
        if (k->c[i].h == h && !strcmp(k->c[i].key, key)) {
            int fd = k->c[i].fd;
            k->c[i] = k->c[--k->n];
            return fd;
        }
    return -1;
}

/* A kept connection that said something while idle (the server closed it, or sent bytes no
 * request asked for): out of the pool and closed.  A stale edge (nothing to read) is ignored. */
static void kept_event(pfi_http_kept *k, int fd)
{
    char c;
    if (recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    for (int i = 0; i < k->n; i++)
        if (k->c[i].fd == fd) {
            k->c[i] = k->c[--k->n];
            break;
        }
    conn_close(k, fd);
}

static void kept_put(pfi_http_kept *k, const char *key, unsigned long long h, int fd)
{
    k->by_fd[fd] = NULL;
    if (k->n == k->cap) {
        int nc = k->cap ? 2 * k->cap : 64;
        kconn *c = nc <= KEPT_MAX ? realloc(k->c, (size_t)nc * sizeof *c) : NULL;
        if (!c) {
            conn_close(k, fd);
            return;
        }
        k->c = c;
        k->cap = nc;
    }
    snprintf(k->c[k->n].key, sizeof k->c[0].key, "%s", key);
    k->c[k->n].h = h;
    k->c[k->n++].fd = fd;
}

/* Where a URL goes: "http://HOST[:PORT]/path" with HOST a numeric address, [IPv6] or
 * localhost, or any such URL over a Unix socket. */
typedef struct target {
    struct sockaddr_storage sa;
    socklen_t sa_len;
    char key[112];
    unsigned long long h; /* key_hash(key) */
    char host[80];
    const char *path;
} target;

static int parse_target(const char *url, const char *unix_sock, target *t)
{
    memset(t, 0, sizeof *t);
    if (strncmp(url, "http://", 7))
        return -1;
    const char *h = url + 7, *e = h;
    char name[64];
    int port = 80;
    if (*h == '[') {
        e = strchr(h, ']');
        if (!e || e - h - 1 >= (int)sizeof name)
            return -1;
        memcpy(name, h + 1, (size_t)(e - h - 1));
        name[e - h - 1] = '\0';
        e++;
    } else {
        while (*e && *e != ':' && *e != '/' && *e != '?')
            e++;
        if (e - h >= (int)sizeof name || e == h)
            return -1;
        memcpy(name, h, (size_t)(e - h));
        name[e - h] = '\0';
    }
    if (*e == ':') {
        char *end;
        long p = strtol(e + 1, &end, 10);
        if (end == e + 1 || p < 1 || p > 65535)
            return -1;
        port = (int)p;
        e = end;
    }
    if (*e && *e != '/')
        return -1;
    t->path = *e ? e : "/";
    snprintf(t->host, sizeof t->host, "%.*s", (int)(e - h), h);
    if (unix_sock) {
        struct sockaddr_un *su = (struct sockaddr_un *)&t->sa;
        if (strlen(unix_sock) >= sizeof su->sun_path || strlen(unix_sock) + 3 > sizeof t->key)
            return -1;
        su->sun_family = AF_UNIX;
        strcpy(su->sun_path, unix_sock);
        t->sa_len = sizeof *su;
        snprintf(t->key, sizeof t->key, "u:%s", unix_sock);
        t->h = key_hash(t->key);
        return 0;
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)&t->sa;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&t->sa;
    if (!strcmp(name, "localhost"))
        snprintf(name, sizeof name, "127.0.0.1");
    if (inet_pton(AF_INET, name, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((unsigned short)port);
        t->sa_len = sizeof *s4;
    } else if (inet_pton(AF_INET6, name, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((unsigned short)port);
        t->sa_len = sizeof *s6;
    } else {
        return -1; /* a name to resolve: curl's */
    }
    snprintf(t->key, sizeof t->key, "h:%s:%d", name, port);
    t->h = key_hash(t->key);
    return 0;
}

int pfi_http_kept_can(const pfi_http_req *r)
{
    target t;
    return parse_target(r->url, r->unix_sock, &t) == 0;
}

/* ---- one request in flight ---- */

enum { CONNECTING, SENDING, READING };

typedef struct job {
    pfi_http_kept *k;
    pfi_http_req *r;
    target t;
    int fd, state, reused, tries;
    char *out; /* the request's bytes */
    size_t out_len, out_at;
    char *in; /* the answer so far */
    size_t in_len, in_cap, max;
    pfi_http_answer_reader rd; /* how far in it was read */
    double deadline;
} job;

static void job_close(job *j)
{
    if (j->fd >= 0)
        conn_close(j->k, j->fd);
    j->fd = -1;
}

static int build_request(job *j, const char *auth)
{
    const pfi_http_req *r = j->r;
    size_t blen = r->body ? strlen(r->body) : 0;
    size_t cap = strlen(r->method) + strlen(j->t.path) + strlen(j->t.host) + blen +
                 (auth ? strlen(auth) : 0) + (r->content_type ? strlen(r->content_type) : 0) +
                 160;
    j->out = malloc(cap);
    if (!j->out)
        return -1;
    int n = snprintf(j->out, cap, "%s %s HTTP/1.1\r\nHost: %s\r\n", r->method, j->t.path,
                     j->t.host);
    if (auth)
        n += snprintf(j->out + n, cap - (size_t)n, "%s\r\n", auth);
    if (r->body)
        n += snprintf(j->out + n, cap - (size_t)n, "Content-Type: %s\r\nContent-Length: %zu\r\n",
                      r->content_type ? r->content_type : "application/json", blen);
    n += snprintf(j->out + n, cap - (size_t)n, "\r\n");
    if (blen)
        memcpy(j->out + n, r->body, blen);
    j->out_len = (size_t)n + blen;
    return 0;
}

/* A finished request's buffers, freed at once: the next request's reuse the same memory
 * while it is still in the cache, instead of a call's worth of fresh pages. */
static void job_release(job *j)
{
    free(j->out);
    free(j->in);
    j->out = j->in = NULL;
    j->in_len = j->in_cap = 0;
    pfi_http_answer_end(&j->rd);
}

static void fail(job *j, const char *why)
{
    j->r->status = -1;
    snprintf(j->r->err, sizeof j->r->err, "%s", why);
    job_close(j);
}

static int retry(job *j, pfi_http_kept *k, const char *why);

/* Opens (or takes) the connection for j; 0, or -1 with the request failed. */
static int job_connect(job *j, pfi_http_kept *k)
{
    j->fd = j->tries == 0 ? kept_take(k, j->t.key, j->t.h) : -1;
    j->reused = j->fd >= 0;
    j->out_at = 0;
    j->in_len = 0;
    pfi_http_answer_end(&j->rd);
    pfi_http_answer_begin(&j->rd, !strcmp(j->r->method, "HEAD"), j->max);
    if (j->fd < 0) {
        j->fd = socket(j->t.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (j->fd < 0) {
            fail(j, strerror(errno));
            return -1;
        }
        if (j->t.sa.ss_family != AF_UNIX) {
            int one = 1;
            setsockopt(j->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        if (conn_register(k, j->fd, j) != 0) {
            fail(j, strerror(errno));
            return -1;
        }
        if (connect(j->fd, (struct sockaddr *)&j->t.sa, j->t.sa_len) != 0 &&
            errno != EINPROGRESS) {
            char m[160];
            snprintf(m, sizeof m, "cannot connect to %s: %s", j->t.host, strerror(errno));
            fail(j, m);
            return -1;
        }
        j->state = CONNECTING; /* its first edge says the connect is over */
    } else {
        /* A kept connection takes the request at once (a small one fits its socket buffer):
         * no wait for it to be writable.  What is left goes on its next writable edge. */
        k->by_fd[j->fd] = j;
        j->state = SENDING;
        ssize_t w = send(j->fd, j->out, j->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0)
            j->out_at = (size_t)w;
        if (j->out_at == j->out_len)
            j->state = READING;
        else if (w < 0 && errno != EAGAIN && errno != EINTR)
            return retry(j, k, strerror(errno));
    }
    return 0;
}

/* A kept connection that failed before any answer: the request goes again on a new one. */
static int retry(job *j, pfi_http_kept *k, const char *why)
{
    if (j->reused && j->in_len == 0 && j->tries == 0) {
        job_close(j);
        j->tries = 1;
        return job_connect(j, k);
    }
    fail(j, why);
    return -1;
}

/* ---- reading the answer ---- */

/* The answer so far (http_answer.c): 1 complete (the request is done), 0 more needed, -1
 * malformed, -2 longer than the request allows. */
static int parse_answer(job *j, int eof, int drained, int *keep, const char **why)
{
    pfi_http_answer a;
    int rc = pfi_http_answer_more(&j->rd, j->in, j->in_len, eof, &a);
    *why = a.why;
    if (rc != 1)
        return rc;
    pfi_http_req *r = j->r;
    /* Bytes past the answer, come or coming, answer no request: such a connection is not
     * kept, or the next request there would read them as its answer. */
    char c;
    *keep = a.keep && a.used == j->in_len &&
            (drained || (recv(j->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN));
    r->reply = a.body;
    r->status = a.status;
    if (a.date_s != 0)
        r->date_s = a.date_s;
    if (a.status >= 300)
        snprintf(r->err, sizeof r->err, "HTTP %d: %.150s", a.status, r->reply ? r->reply : "");
    return 1;
}

/* ---- the loop ---- */

/* Reads what came on j's connection: 1 when the request is over (*keep: its connection may be
 * kept), else 0. */
static int job_read(job *j, pfi_http_kept *k, int *keep)
{
    for (;;) {
        if (j->in_cap - j->in_len < 1024) {
            size_t nc = j->in_cap ? 2 * j->in_cap : 4096;
            char *nb = nc <= j->max + 65536 ? realloc(j->in, nc + 1) : NULL;
            if (!nb) {
                fail(j, "answer too long");
                return 1;
            }
            j->in = nb;
            j->in_cap = nc;
        }
        size_t room = j->in_cap - j->in_len;
        ssize_t rd = recv(j->fd, j->in + j->in_len, room, 0);
        if (rd < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        if (rd <= 0 && j->in_len == 0)
            return retry(j, k, rd == 0 ? "connection closed without an answer" : strerror(errno)) !=
                   0;
        if (rd < 0) {
            fail(j, strerror(errno));
            return 1;
        }
        j->in_len += (size_t)rd;
        j->in[j->in_len] = '\0';
        const char *why = NULL;
        /* A read that left room drained what had come: nothing to peek at past the answer. */
        int pr = parse_answer(j, rd == 0, (size_t)rd < room, keep, &why);
        if (pr != 0) {
            if (pr < 0)
                fail(j, why);
            return 1;
        }
        if (rd == 0)
            return 0;
    }
}

/* What an edge on j's connection moves on: 1 when the request is over. */
static int job_event(job *j, pfi_http_kept *k, unsigned events, int *keep)
{
    if (j->state == CONNECTING) {
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(j->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err) {
            char m[160];
            snprintf(m, sizeof m, "cannot connect to %s: %s", j->t.host, strerror(err));
            fail(j, m);
            return 1;
        }
        j->state = SENDING;
    }
    if (j->state == SENDING) {
        ssize_t w = send(j->fd, j->out + j->out_at, j->out_len - j->out_at, MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN && errno != EINTR)
            return retry(j, k, strerror(errno)) != 0;
        if (w > 0 && (j->out_at += (size_t)w) == j->out_len)
            j->state = READING;
    }
    /* Edge-triggered: an edge that said there is something to read is not said again. */
    if (j->state == READING && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
        return job_read(j, k, keep);
    return 0;
}

/* The request is over: done called, its connection kept or closed. */
static void job_finish(job *j, pfi_http_kept *k, int keep)
{
    job_release(j);
    if (j->fd >= 0) {
        if (keep)
            kept_put(k, j->t.key, j->t.h, j->fd);
        else
            conn_close(k, j->fd);
        j->fd = -1;
    }
    if (j->r->done)
        j->r->done(j->r);
}

void pfi_http_kept_run(pfi_http_kept *k, pfi_http_req **reqs, int n, const char *auth,
                       double timeout_s, int max_parallel)
{
    job *js = calloc((size_t)n + 1, sizeof *js);
    if (!js) {
        for (int i = 0; i < n; i++) {
            snprintf(reqs[i]->err, sizeof reqs[i]->err, "out of memory");
            if (reqs[i]->done)
                reqs[i]->done(reqs[i]);
        }
        return;
    }
    /* Requests start in order, each with the same timeout: their deadlines never decrease,
     * so the nearest is that of the first one still out (lo). */
    int next = 0, active = 0, lo = 0, can_cancel = 0;
    for (int i = 0; i < n; i++)
        can_cancel |= reqs[i]->cancel != NULL;
    struct epoll_event evs[256];
    while (next < n || active > 0) {
        while (next < n && active < max_parallel) {
            job *j = &js[next++];
            j->k = k;
            j->r = reqs[next - 1];
            j->fd = -1;
            j->max = j->r->max_reply ? j->r->max_reply : (4u << 20);
            j->deadline = pfi_clock_mono() + timeout_s;
            if (pfi_http_req_cancel_asked(j->r)) {
                /* not started: nothing to close */
            } else if (parse_target(j->r->url, j->r->unix_sock, &j->t) != 0 ||
                build_request(j, auth) != 0) {
                fail(j, "cannot send this request");
            } else {
                j->r->started = 1;
                if (job_connect(j, k) == 0) {
                    active++;
                    continue;
                }
            }
            if (j->r->done)
                j->r->done(j->r);
        }
        if (active == 0)
            continue;
        /* Wait until something is ready or the nearest deadline. */
        while (lo < next && js[lo].fd < 0)
            lo++;
        double now = pfi_clock_mono(), first = lo < next ? js[lo].deadline : INFINITY;
        int ms = first - now > 0.05 ? 50 : first <= now ? 0 : (int)((first - now) * 1000.0) + 1;
        int got = epoll_wait(k->ep, evs, 256, ms);
        for (int e = 0; e < got; e++) {
            int fd = evs[e].data.fd;
            job *j = fd < k->n_fd ? k->by_fd[fd] : NULL;
            if (!j) {
                kept_event(k, fd);
                continue;
            }
            int keep = 0;
            if (job_event(j, k, evs[e].events, &keep)) {
                active--;
                job_finish(j, k, keep);
            }
        }
        /* Given up by their caller (every turn waits 50 ms at most, so promptly). */
        for (int i = lo; can_cancel && i < next; i++)
            if (js[i].fd >= 0 && pfi_http_req_cancel_asked(js[i].r)) {
                active--;
                job_finish(&js[i], k, 0);
            }
        /* Past their deadline: given up. */
        now = pfi_clock_mono();
        for (int i = lo; i < next && now >= js[i].deadline; i++) {
            job *j = &js[i];
            if (j->fd >= 0) {
                char m[120];
                snprintf(m, sizeof m, "Timeout: no answer within %g s", timeout_s);
                fail(j, m);
                j->r->timed_out = 1;
                active--;
                job_finish(j, k, 0);
            }
        }
    }
    for (int i = 0; i < next; i++) {
        free(js[i].out);
        free(js[i].in);
        pfi_http_answer_end(&js[i].rd);
    }
    free(js);
}
