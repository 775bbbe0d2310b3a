/* SPDX-License-Identifier: Apache-2.0 */
#include "util/http.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#define REPLY_MAX (4u << 20) /* a node's answer is small; this bounds a broken one */

typedef struct xfer {
    pfi_http_req *r;
    CURL *h;
    size_t len, cap, max;
    struct curl_slist *hdr;
} xfer;

/* libcurl's global state, once per process, before the first handle (it is not thread-safe). */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_start(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t add = size * nmemb;
    if (add + 1 > x->max || x->len > x->max - add - 1)
        return 0; /* makes curl fail the transfer: the reply is not believable */
    if (x->len + add + 1 > x->cap) {
        size_t nc = x->cap ? x->cap : 1024;
        while (nc < x->len + add + 1)
            nc *= 2;
        char *nb = realloc(x->r->reply, nc);
        if (!nb)
            return 0;
        x->r->reply = nb;
        x->cap = nc;
    }
    memcpy(x->r->reply + x->len, p, add);
    x->len += add;
    x->r->reply[x->len] = '\0';
    return add;
}

/* The Date header of an answer, the server's clock (RFC 9110: an IMF-fixdate). */
static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    if (n > 5 && n < 128 && !strncasecmp(p, "date:", 5)) {
        char v[128];
        memcpy(v, p + 5, n - 5);
        v[n - 5] = '\0';
        time_t t = curl_getdate(v, NULL);
        if (t != (time_t)-1)
            x->r->date_s = (double)t;
    }
    return n;
}

static void start_one(CURLM *m, xfer *x, const char *auth, double timeout_s)
{
    pfi_http_req *r = x->r;
    x->max = r->max_reply ? r->max_reply : REPLY_MAX;
    x->h = curl_easy_init();
    if (!x->h) {
        snprintf(r->err, sizeof r->err, "curl_easy_init failed");
        return;
    }
    r->started = 1;
    if (auth)
        x->hdr = curl_slist_append(x->hdr, auth);
    if (r->body) {
        char ct[128];
        snprintf(ct, sizeof ct, "Content-Type: %s",
                 r->content_type ? r->content_type : "application/json");
        x->hdr = curl_slist_append(x->hdr, ct);
    }
    /* "Expect: 100-continue" would add a round trip to every PUT. */
    x->hdr = curl_slist_append(x->hdr, "Expect:");
    long ms = (long)(timeout_s * 1000.0);
    if (ms < 1)
        ms = 1;
    curl_easy_setopt(x->h, CURLOPT_URL, r->url);
    curl_easy_setopt(x->h, CURLOPT_CUSTOMREQUEST, r->method);
    if (r->body)
        curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdr);
    curl_easy_setopt(x->h, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(x->h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(x->h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(x->h, CURLOPT_PRIVATE, x);
    if (r->unix_sock)
        curl_easy_setopt(x->h, CURLOPT_UNIX_SOCKET_PATH, r->unix_sock);
    curl_multi_add_handle(m, x->h);
}

pfi_http *pfi_http_new(void)
{
    pthread_once(&curl_once, curl_start);
    return (pfi_http *)curl_multi_init();
}

void pfi_http_free(pfi_http *h)
{
    if (h)
        curl_multi_cleanup((CURLM *)h);
}

void pfi_http_many(pfi_http *keep, pfi_http_req *reqs, int n, const char *token,
                   double timeout_s, int max_parallel)
{
    if (n <= 0)
        return;
    if (max_parallel < 1)
        max_parallel = 1;
    char auth[2200]; /* an OAuth access token can be long */
    const char *ah = NULL;
    if (token && *token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        ah = auth;
    }
    for (int i = 0; i < n; i++) {
        reqs[i].status = -1;
        reqs[i].started = 0;
        reqs[i].err[0] = '\0';
        reqs[i].date_s = NAN;
        free(reqs[i].reply);
        reqs[i].reply = NULL;
    }
    xfer *xs = calloc((size_t)n, sizeof *xs);
    CURLM *m = keep ? (CURLM *)keep : (CURLM *)pfi_http_new();
    if (!xs || !m) {
        for (int i = 0; i < n; i++)
            snprintf(reqs[i].err, sizeof reqs[i].err, "out of memory");
        free(xs);
        if (m && !keep)
            curl_multi_cleanup(m);
        return;
    }
    curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)max_parallel);
    curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)max_parallel);
    int next = 0, active = 0;
    for (int i = 0; i < n; i++)
        xs[i].r = &reqs[i];
    while (next < n || active > 0) {
        while (next < n && active < max_parallel) {
            start_one(m, &xs[next], ah, timeout_s);
            if (xs[next].h)
                active++;
            next++;
        }
        int running = 0;
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            xfer *x = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            if (msg->data.result == CURLE_OK) {
                curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &x->r->status);
                if (x->r->status >= 300)
                    snprintf(x->r->err, sizeof x->r->err, "HTTP %ld: %.150s", x->r->status,
                             x->r->reply ? x->r->reply : "");
            } else {
                x->r->status = -1;
                snprintf(x->r->err, sizeof x->r->err, "%s", curl_easy_strerror(msg->data.result));
            }
            curl_multi_remove_handle(m, msg->easy_handle);
            curl_easy_cleanup(msg->easy_handle);
            x->h = NULL;
            curl_slist_free_all(x->hdr);
            x->hdr = NULL;
            active--;
        }
        if (active > 0)
            curl_multi_poll(m, NULL, 0, 50, NULL);
    }
    for (int i = 0; i < n; i++)
        curl_slist_free_all(xs[i].hdr);
    if (!keep)
        curl_multi_cleanup(m);
    free(xs);
}

void pfi_http_req_free(pfi_http_req *reqs, int n)
{
    for (int i = 0; i < n; i++) {
        free(reqs[i].reply);
        reqs[i].reply = NULL;
    }
}

char *pfi_http_escape(const char *s)
{
    pthread_once(&curl_once, curl_start);
    char *e = curl_easy_escape(NULL, s, 0);
    char *out = e ? strdup(e) : NULL;
    curl_free(e);
    return out;
}

void pfi_http_url(const char *base, const char *path, char *out, size_t n)
{
    size_t l = strlen(base);
    while (l > 0 && base[l - 1] == '/')
        l--;
    snprintf(out, n, "%.*s%s", (int)l, base, path);
}
