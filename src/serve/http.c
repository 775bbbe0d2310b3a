/* SPDX-License-Identifier: Apache-2.0 */
/* http.c: the API's transport, libmicrohttpd on a socket this file binds itself: TCP (loopback
 * unless the config allows more; port 0 picks a free one) or a Unix socket (mode 0660, so only
 * root and the socket's group reach it).  Bodies over max_body are refused with 413 before
 * being read; headers are bounded by the connection memory limit. */
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "serve/serve_int.h"
#include "util/fs.h"
#include "util/http_mhd.h"
#include "util/http_query.h"
#include "util/json.h"
#include "util/num.h"
#include "util/unescape.h"

/* Descriptors kept for the daemon's own files (store, journal, NVML), beyond connections. */
#define SRV_FD_SPARE 64

/* One listening socket and the libmicrohttpd daemon on it. */
typedef struct listener {
    struct MHD_Daemon *d;
    int fd;
    char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
} listener;

/* `listen` (every client) and, when configured, `control_listen` (the controller alone: its
 * own connections, which clients of the first cannot use up). */
struct srv_http {
    srv_node *n; /* set when it serves */
    const pfi_serve_config *cfg;
    listener api, ctl;
    unsigned conns;                             /* listen's connections, within the fd limit */
    char fd_note[192];                          /* why fewer, said once the node has its log */
    char api_where[PFI_SERVE_PATH_MAX + 32], ctl_where[PFI_SERVE_PATH_MAX + 32];
};

typedef struct req {
    char *body;
    size_t len, cap;
    int too_big;
} req;

/* allow: the methods the path takes, named on a 405 (RFC 9110 15.5.6); NULL otherwise. */
static enum MHD_Result respond(struct MHD_Connection *c, int status, const char *ctype,
                               char *body, size_t len, const char *allow)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", ctype);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (allow)
        MHD_add_response_header(r, "Allow", allow);
    if (status == 401)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"pfi\"");
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result reject(struct MHD_Connection *c, int status, const char *code,
                              const char *msg)
{
    json_t *doc = pfi_json_error(NULL, code, msg);
    char *b = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!b)
        return MHD_NO;
    return respond(c, status, "application/json", b, strlen(b), NULL);
}

int pfi_srv_http_body_too_big(const char *content_length, size_t max)
{
    long long v;
    if (!content_length)
        return 0;
    /* Anything but a plain decimal count that fits (or one over the limit) is refused too. */
    return pfi_num_ll(content_length, 0, LLONG_MAX, "Content-Length", &v, NULL) != PFI_OK ||
           (unsigned long long)v > max;
}

char *pfi_srv_http_answer(srv_node *n, const char *method, const char *url,
                          const char *authorization, const pfi_http_query *query,
                          const char *body, size_t blen, int *status, const char **ctype,
                          size_t *len)
{
    int authorized = n->token[0] ? pfi_token_ok(n->token, authorization) : -1;
    return pfi_srv_api_handle(n, method, url, query, body, blen, authorized, status, ctype,
                              len);
}

/* A %00 would cut the path short ("/metrics%00.txt" read as "/metrics"): util/unescape.h
 * leaves such a path or argument as sent, so it matches no route and no number. */
static size_t unescape_cb(void *cls, struct MHD_Connection *c, char *s)
{
    return pfi_url_unescape(s);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls)
{
    srv_http *h = cls;
    size_t max = h->n->cfg->max_body;
    req *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r)
            return MHD_NO;
        *con_cls = r;
        /* Answered before the body is read: libmicrohttpd then closes the connection, so
         * nothing of the body is taken for a request of its own. */
        const char *why;
        int status = pfi_mhd_screen(c, method, &why);
        if (status) {
            r->too_big = 1;
            return reject(c, status,
                          status == 501 ? "ENOTSUP" : status == 403 ? "EPERM" : "EINVAL", why);
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (pfi_srv_http_body_too_big(cl, max)) {
            r->too_big = 1;
            return reject(c, 413, "EINVAL", "request body too large");
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (!r->too_big && r->len + *upload_size <= max) {
            if (r->len + *upload_size + 1 > r->cap) {
                size_t nc = (r->len + *upload_size + 1) * 2;
                if (nc > max + 1)
                    nc = max + 1;
                char *nb = realloc(r->body, nc);
                if (!nb)
                    return MHD_NO;
                r->body = nb;
                r->cap = nc;
            }
            memcpy(r->body + r->len, upload, *upload_size);
            r->len += *upload_size;
            r->body[r->len] = '\0';
        } else {
            r->too_big = 1;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->too_big)
        return reject(c, 413, "EINVAL", "request body too large");
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    pfi_http_query q = {0};
    pfi_mhd_query(c, &q);
    int status = 500;
    const char *ctype = "application/json";
    size_t len = 0;
    char *body = pfi_srv_http_answer(h->n, method, url, auth, &q, r->body, r->len, &status,
                                     &ctype, &len);
    if (!body)
        return reject(c, 500, "ENOMEM", "out of memory");
    return respond(c, status, ctype, body, len, status == 405 ? pfi_srv_api_allow(url) : NULL);
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode why)
{
    req *r = *con_cls;
    if (r) {
        free(r->body);
        free(r);
        *con_cls = NULL;
    }
}

static int bind_unix(listener *h, const char *path, char *where, size_t wsize, pfi_err *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return pfi_err_set(err, PFI_EINVAL, "unix socket path %s is too long", path);
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    /* bind() says only "No such file or directory": /run/pfi exists only under systemd. */
    int rc = pfi_parent_dir_check(path, "socket", err);
    if (rc != PFI_OK)
        return rc;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return pfi_err_set(err, PFI_EIO, "socket: %s", strerror(errno));
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            close(fd);
            return pfi_err_set(err, PFI_EBUSY, "%s exists and is not a socket", path);
        }
        /* A socket someone still answers on belongs to a live daemon: never steal it. */
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
            close(fd);
            return pfi_err_set(err, PFI_EBUSY, "another daemon listens on %s", path);
        }
        close(fd);
        unlink(path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return pfi_err_set(err, PFI_EIO, "socket: %s", strerror(errno));
    }
    mode_t old = umask(0117);
    rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc != 0 || listen(fd, 128) != 0) {
        int e = errno;
        close(fd);
        return pfi_err_set(err, PFI_EIO, "cannot listen on %s: %s", path, strerror(e));
    }
    chmod(path, 0660);
    h->fd = fd;
    snprintf(h->unix_path, sizeof h->unix_path, "%s", path);
    snprintf(where, wsize, "unix:%s", path);
    return PFI_OK;
}

int pfi_srv_listen_split(const char *listen_s, char *host_out, size_t host_size, pfi_err *err)
{
    char host[256];
    const char *colon = strrchr(listen_s, ':');
    if (!colon || colon == listen_s || (size_t)(colon - listen_s) >= sizeof host)
        return pfi_err_set(err, PFI_EINVAL, "listen: expected HOST:PORT or unix:PATH, got '%s'",
                           listen_s);
    memcpy(host, listen_s, (size_t)(colon - listen_s));
    host[colon - listen_s] = '\0';
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = '\0';
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || port < 0 || port > 65535)
        return pfi_err_set(err, PFI_EINVAL, "listen: bad port in '%s'", listen_s);
    if (host_out)
        snprintf(host_out, host_size, "%s", host);
    return PFI_OK;
}

static int bind_tcp(listener *h, const char *listen_s, char *where, size_t wsize, pfi_err *err)
{
    char host[256];
    int rc = pfi_srv_listen_split(listen_s, host, sizeof host, err);
    if (rc != PFI_OK)
        return rc;
    const char *colon = strrchr(listen_s, ':');
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                    *ai = NULL;
    int g = getaddrinfo(host, colon + 1, &hints, &ai);
    if (g != 0)
        return pfi_err_set(err, PFI_EINVAL, "listen: cannot resolve '%s': %s", host,
                           gai_strerror(g));
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 512) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return pfi_err_set(err, e == EADDRINUSE ? PFI_EBUSY : PFI_EIO,
                           "cannot listen on %s: %s", listen_s, strerror(e));
    }
    int v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    int bound = v6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                   : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    snprintf(where, wsize, v6 ? "[%s]:%d" : "%s:%d", host, bound);
    h->fd = fd;
    return PFI_OK;
}

static void listener_close(listener *l)
{
    if (l->d)
        MHD_stop_daemon(l->d);
    if (l->fd >= 0)
        close(l->fd);
    if (l->unix_path[0])
        unlink(l->unix_path);
    l->d = NULL;
    l->fd = -1;
    l->unix_path[0] = '\0';
}

/* Starts l's daemon on the socket bound before.  per_ip: connections one client address may
 * hold (0: no limit); timeout_s: a connection idle this long is closed. */
static int listener_serve(srv_http *h, listener *l, unsigned conns, unsigned per_ip,
                          unsigned timeout_s, const char *where, pfi_err *err)
{
    unsigned threads = (unsigned)(h->cfg->threads > 0 ? h->cfg->threads : 1);
    /* poll(), not the epoll that MHD_USE_AUTO_INTERNAL_THREAD picks on Linux: libmicrohttpd's
     * epoll loop, after a batch of exactly 128 ready connections, waits again before serving
     * them, so a thread that found 128 requests at once slept on them until some other event
     * or timeout_s came. */
    l->d = MHD_start_daemon(
        MHD_USE_POLL_INTERNAL_THREAD, 0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET,
        l->fd, MHD_OPTION_NOTIFY_COMPLETED, on_done, h, MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_LIMIT, conns, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)(64 * 1024), MHD_OPTION_UNESCAPE_CALLBACK, unescape_cb, NULL, MHD_OPTION_END);
    if (!l->d)
        return pfi_err_set(err, PFI_EIO, "libmicrohttpd could not start on %s", where);
    return PFI_OK;
}

static int listener_bind(listener *l, const char *addr, char *where, size_t wsize, pfi_err *err)
{
    return !strncmp(addr, "unix:", 5) ? bind_unix(l, addr + 5, where, wsize, err)
                                      : bind_tcp(l, addr, where, wsize, err);
}

int pfi_srv_http_bind(const pfi_serve_config *c, srv_http **out, char *where, size_t wsize,
                      pfi_err *err)
{
    *out = NULL;
    srv_http *h = calloc(1, sizeof *h);
    if (!h)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    h->cfg = c;
    h->api.fd = h->ctl.fd = -1;
    /* Each connection holds a descriptor: the soft open-file limit (1024 under systemd's
     * default) is raised for listen's max_connections, the controller's 64 and the daemon's
     * own files, else a flood on listen took the descriptors the controller's listener and the
     * store need.  Where the hard limit is lower, listen holds fewer connections. */
    h->conns = (unsigned)c->max_conns;
    unsigned ctl = c->control_listen[0] ? 64u : 0u;
    long have, fit = pfi_fd_limit_fit(h->conns, (long)ctl + SRV_FD_SPARE, &have);
    if (fit < (long)h->conns) {
        if (fit < 1) {
            free(h);
            return pfi_err_set(err, PFI_ERANGE,
                               "listen: the open-file limit (%ld) leaves no room for "
                               "connections (raise it: ulimit -n, LimitNOFILE=)",
                               have);
        }
        snprintf(h->fd_note, sizeof h->fd_note,
                 "the open-file limit (%ld) holds %ld connections, not the %u of "
                 "max_connections (raise it: ulimit -n, LimitNOFILE=)",
                 have, fit, h->conns);
        h->conns = (unsigned)fit;
    }
    int rc = listener_bind(&h->api, c->listen, h->api_where, sizeof h->api_where, err);
    if (rc == PFI_OK && c->control_listen[0])
        rc = listener_bind(&h->ctl, c->control_listen, h->ctl_where, sizeof h->ctl_where, err);
    if (rc != PFI_OK) {
        pfi_srv_http_stop(h);
        return rc;
    }
    snprintf(where, wsize, "%s", h->api_where);
    *out = h;
    return PFI_OK;
}

int pfi_srv_http_serve(srv_http *h, srv_node *n, pfi_err *err)
{
    h->n = n;
    if (h->fd_note[0])
        pfi_srv_event_add(n, "listen", "%s", h->fd_note);
    const pfi_serve_config *c = h->cfg;
    unsigned timeout = (unsigned)(c->client_timeout_s > 1 ? c->client_timeout_s : 1);
    int rc = listener_serve(h, &h->api, h->conns, (unsigned)c->max_client_conns, timeout,
                            h->api_where, err);
    if (rc == PFI_OK && h->ctl.fd >= 0) {
        rc = listener_serve(h, &h->ctl, 64, 0, 30, h->ctl_where, err);
        if (rc == PFI_OK)
            pfi_srv_event_add(n, "listen", "controller API on %s", h->ctl_where);
    }
    return rc;
}

void pfi_srv_http_stop(srv_http *h)
{
    if (!h)
        return;
    listener_close(&h->ctl);
    listener_close(&h->api);
    free(h);
}
