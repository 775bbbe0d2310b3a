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

#include "util/http_kept.h"

#define REPLY_MAX (4u << 20) /* a node's answer is small; this bounds a broken one */
#define HTTP_THREADS 4       /* threads of one call at most */
#define HTTP_PER_THREAD 64   /* requests it takes to start one more thread */
#define HTTP_IDLE_MAX 64     /* easy handles kept per slice */

typedef struct xfer {
    pfi_http_req *r;
    CURL *h;
    size_t len, cap, max;
    int too_long; /* the answer passed max: said as such, not as curl's write error */
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
    if (add + 1 > x->max || x->len > x->max - add - 1) {
        x->too_long = 1;
        return 0; /* makes curl fail the transfer: the reply is not believable */
    }
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

/* One slice of a call: its own multi handle, the requests it runs, and its easy handles kept
 * for reuse (a handle that ran a request is reset, not freed: its allocations are reused). */
typedef struct slice {
    CURLM *m;
    long keep_conns; /* connections its cache keeps: grows to the most requests it ran */
    CURL *idle[HTTP_IDLE_MAX];
    int n_idle;
} slice;

struct pfi_http {
    slice s[HTTP_THREADS];
    pfi_http_kept *kept; /* plain HTTP's connections */
    int curl_only;
};

static CURL *handle_get(slice *sl)
{
    if (sl->n_idle > 0) {
        CURL *h = sl->idle[--sl->n_idle];
        curl_easy_reset(h);
        return h;
    }
    return curl_easy_init();
}

static void handle_put(slice *sl, CURL *h)
{
    if (sl->n_idle < HTTP_IDLE_MAX)
        sl->idle[sl->n_idle++] = h;
    else
        curl_easy_cleanup(h);
}

/* The headers every request of a call shares: with a JSON body, and without a body. */
typedef struct heads {
    const char *auth;
    struct curl_slist *json, *bare;
} heads;

static struct curl_slist *head_list(const char *auth, const char *type)
{
    struct curl_slist *l = NULL, *t;
    char ct[128];
    if (auth && !(l = curl_slist_append(l, auth)))
        return NULL;
    if (type) {
        snprintf(ct, sizeof ct, "Content-Type: %s", type);
        if (!(t = curl_slist_append(l, ct)))
            goto fail;
        l = t;
    }
    /* "Expect: 100-continue" would add a round trip to every PUT. */
    if ((t = curl_slist_append(l, "Expect:")))
        return t;
fail:
    curl_slist_free_all(l);
    return NULL;
}

static void start_one(slice *sl, xfer *x, const heads *hd, double timeout_s)
{
    pfi_http_req *r = x->r;
    x->max = r->max_reply ? r->max_reply : REPLY_MAX;
    x->too_long = 0;
    struct curl_slist *hdr = !r->body ? hd->bare : !r->content_type ? hd->json : NULL;
    if (!hdr) /* a body of its own type: its own list */
        hdr = x->hdr = head_list(hd->auth, r->content_type);
    x->h = hdr ? handle_get(sl) : NULL;
    if (!x->h) {
        snprintf(r->err, sizeof r->err, "out of memory");
        return;
    }
    r->started = 1;
    long ms = (long)(timeout_s * 1000.0);
    if (ms < 1)
        ms = 1;
    curl_easy_setopt(x->h, CURLOPT_URL, r->url);
    curl_easy_setopt(x->h, CURLOPT_CUSTOMREQUEST, r->method);
    if (r->body)
        curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, hdr);
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
    curl_multi_add_handle(sl->m, x->h);
}

pfi_http *pfi_http_new(void)
{
    pthread_once(&curl_once, curl_start);
    pfi_http *h = calloc(1, sizeof *h);
    if (h && !(h->s[0].m = curl_multi_init())) {
        free(h);
        return NULL;
    }
    return h; /* the other slices' multi handles when first needed */
}

void pfi_http_curl_only(pfi_http *h)
{
    h->curl_only = 1;
}

void pfi_http_free(pfi_http *h)
{
    if (!h)
        return;
    for (int k = 0; k < HTTP_THREADS; k++) {
        for (int i = 0; i < h->s[k].n_idle; i++)
            curl_easy_cleanup(h->s[k].idle[i]);
        if (h->s[k].m)
            curl_multi_cleanup(h->s[k].m);
    }
    pfi_http_kept_free(h->kept);
    free(h);
}

/* What one thread of a call runs through curl: the requests xs[0..n), at most max_parallel at
 * a time. */
typedef struct run {
    slice *sl;
    xfer *xs;
    int n, max_parallel;
    const heads *hd;
    double timeout_s;
    pthread_t th;
} run;

/* A transfer under way that its caller gave up: taken out of curl (which closes its
 * connection: it is in an unknown state) before its time is up. */
static void drop(slice *sl, xfer *x)
{
    curl_multi_remove_handle(sl->m, x->h);
    handle_put(sl, x->h);
    x->h = NULL;
    curl_slist_free_all(x->hdr);
    x->hdr = NULL;
    if (x->r->done)
        x->r->done(x->r);
}

static void finish(slice *sl, CURLMsg *msg)
{
    xfer *x = NULL;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
    pfi_http_req *r = x->r;
    if (msg->data.result == CURLE_OK) {
        curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &r->status);
        if (r->status >= 300)
            snprintf(r->err, sizeof r->err, "HTTP %ld: %.150s", r->status,
                     r->reply ? r->reply : "");
    } else {
        r->status = -1;
        r->timed_out = msg->data.result == CURLE_OPERATION_TIMEDOUT;
        if (x->too_long) /* curl says "Failed writing received data to disk/application" */
            snprintf(r->err, sizeof r->err, "answer longer than the %zu bytes taken", x->max - 1);
        else
            snprintf(r->err, sizeof r->err, "%s", curl_easy_strerror(msg->data.result));
    }
    curl_multi_remove_handle(sl->m, msg->easy_handle);
    handle_put(sl, msg->easy_handle);
    x->h = NULL;
    curl_slist_free_all(x->hdr);
    x->hdr = NULL;
    if (r->done)
        r->done(r);
}

static void *run_main(void *arg)
{
    run *u = arg;
    slice *sl = u->sl;
    curl_multi_setopt(sl->m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)u->max_parallel);
    curl_multi_setopt(sl->m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)u->max_parallel);
    /* One connection kept per server it talks to (every node, call after call), where curl's
     * own default would close some as soon as fewer transfers are under way. */
    long keep = u->n > u->max_parallel ? u->n : u->max_parallel;
    if (keep > sl->keep_conns) {
        sl->keep_conns = keep;
        curl_multi_setopt(sl->m, CURLMOPT_MAXCONNECTS, keep);
    }
    int next = 0, active = 0, can_cancel = 0;
    for (int i = 0; i < u->n; i++)
        can_cancel |= u->xs[i].r->cancel != NULL;
    while (next < u->n || active > 0) {
        while (next < u->n && active < u->max_parallel) {
            if (!pfi_http_req_cancel_asked(u->xs[next].r))
                start_one(sl, &u->xs[next], u->hd, u->timeout_s);
            if (u->xs[next].h)
                active++;
            else if (u->xs[next].r->done)
                u->xs[next].r->done(u->xs[next].r);
            next++;
        }
        /* Checked at every turn of the loop, which waits 50 ms at most, so a transfer on which
         * nothing moves is given up as soon as one that is busy. */
        for (int i = 0; can_cancel && i < next; i++)
            if (u->xs[i].h && pfi_http_req_cancel_asked(u->xs[i].r)) {
                drop(sl, &u->xs[i]);
                active--;
            }
        int running = 0;
        curl_multi_perform(sl->m, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(sl->m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            finish(sl, msg);
            active--;
        }
        if (active > 0)
            curl_multi_poll(sl->m, NULL, 0, 50, NULL);
    }
    return NULL;
}

/* The slice a request goes to: by its affinity, else its host (or socket), so the requests of
 * one server take the same slice, and so its kept connections, call after call. */
static int slice_of(const pfi_http_req *r, int k)
{
    if (r->affinity)
        return (int)(r->affinity % (unsigned)k);
    const char *p = r->unix_sock;
    const char *e = NULL;
    if (!p) {
        p = strstr(r->url, "://");
        p = p ? p + 3 : r->url;
        e = strchr(p, '/');
    }
    unsigned h = 2166136261u;
    for (; *p && p != e; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return (int)(h % (unsigned)k);
}

void pfi_http_many(pfi_http *keep, pfi_http_req *reqs, int n, const char *token,
                   double timeout_s, int max_parallel)
{
    if (n <= 0)
        return;
    if (max_parallel < 1)
        max_parallel = 1;
    for (int i = 0; i < n; i++) {
        reqs[i].status = -1;
        reqs[i].started = 0;
        reqs[i].cancelled = 0;
        reqs[i].timed_out = 0;
        reqs[i].err[0] = '\0';
        reqs[i].date_s = NAN;
        free(reqs[i].reply);
        reqs[i].reply = NULL;
    }
    /* Sized to the token: an OAuth access token (a JWT with many claims) passes 2 KB, and a
     * fixed buffer cut it short without a word. */
    char *auth = NULL;
    const char *ah = NULL;
    if (token && *token) {
        size_t an = strlen(token) + sizeof "Authorization: Bearer ";
        if ((auth = malloc(an)))
            snprintf(auth, an, "Authorization: Bearer %s", token);
        ah = auth;
        if (!auth) {
            for (int i = 0; i < n; i++) {
                snprintf(reqs[i].err, sizeof reqs[i].err, "out of memory");
                if (reqs[i].done)
                    reqs[i].done(&reqs[i]);
            }
            return;
        }
    }
    /* Plain HTTP on a kept client: every such request on one epoll loop, on this thread, its
     * connections kept (http_kept.c).  One thread, because at site scale such a loop costs
     * little CPU per request and each hand-over between threads is a wait for a core on a
     * busy machine.  The rest goes through curl, whose CPU per request is what a round of
     * many takes: shared among up to 4 threads by node (affinity) or host, each with its own
     * connections. */
    if (keep && !keep->kept && !(keep->kept = pfi_http_kept_new())) {
        for (int i = 0; i < n; i++)
            snprintf(reqs[i].err, sizeof reqs[i].err, "out of memory");
        for (int i = 0; i < n; i++)
            if (reqs[i].done)
                reqs[i].done(&reqs[i]);
        free(auth);
        return;
    }
    pfi_http_req **kr = calloc((size_t)n + 1, sizeof *kr);
    xfer *xs = calloc((size_t)n + 1, sizeof *xs);
    heads hd = {ah, head_list(ah, "application/json"), head_list(ah, NULL)};
    pfi_http *h = keep ? keep : pfi_http_new();
    int nk = 0, nc = 0;
    if (kr && xs)
        for (int i = 0; i < n; i++) {
            if (keep && !keep->curl_only && pfi_http_kept_can(&reqs[i]))
                kr[nk++] = &reqs[i];
            else
                xs[nc++].r = &reqs[i];
        }
    int k = keep && nc >= HTTP_PER_THREAD ? nc / HTTP_PER_THREAD : 1;
    if (k > HTTP_THREADS)
        k = HTTP_THREADS;
    for (int s = 1; s < k && h; s++)
        if (!h->s[s].m && !(h->s[s].m = curl_multi_init()))
            k = s;
    int *cnt = calloc((size_t)k + 1, sizeof *cnt);
    xfer *sorted = calloc((size_t)nc + 1, sizeof *sorted);
    if (!kr || !xs || !cnt || !sorted || !h || !hd.json || !hd.bare) {
        for (int i = 0; i < n; i++) {
            snprintf(reqs[i].err, sizeof reqs[i].err, "out of memory");
            if (reqs[i].done)
                reqs[i].done(&reqs[i]);
        }
        goto out;
    }
    /* curl's requests grouped by slice, each group in the caller's order. */
    for (int i = 0; i < nc; i++)
        cnt[k > 1 ? slice_of(xs[i].r, k) : 0]++;
    run runs[HTTP_THREADS];
    int at = 0;
    for (int s = 0; s < k; s++) {
        int per = (max_parallel + k - 1) / k;
        runs[s] = (run){&h->s[s], sorted + at, 0, per, &hd, timeout_s, 0};
        at += cnt[s];
    }
    for (int i = 0; i < nc; i++) {
        run *u = &runs[k > 1 ? slice_of(xs[i].r, k) : 0];
        u->xs[u->n++].r = xs[i].r;
    }
    /* With plain requests to run here, every curl slice gets a thread of its own. */
    int first = nk > 0 ? 0 : 1, started[HTTP_THREADS] = {0};
    for (int s = first; s < k; s++)
        started[s] = runs[s].n > 0 && pthread_create(&runs[s].th, NULL, run_main, &runs[s]) == 0;
    if (nk > 0)
        pfi_http_kept_run(keep->kept, kr, nk, ah, timeout_s, max_parallel);
    else
        run_main(&runs[0]);
    for (int s = first; s < k; s++) {
        if (started[s])
            pthread_join(runs[s].th, NULL);
        else if (runs[s].n > 0)
            run_main(&runs[s]); /* no thread: in this one, after the others */
    }
    for (int i = 0; i < nc; i++)
        curl_slist_free_all(sorted[i].hdr);
out:
    curl_slist_free_all(hd.json);
    curl_slist_free_all(hd.bare);
    free(auth);
    if (!keep)
        pfi_http_free(h);
    free(kr);
    free(xs);
    free(cnt);
    free(sorted);
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

const char *pfi_http_id_path(char *buf, size_t size, const char *prefix, const char *id,
                             const char *tail)
{
    size_t k = (size_t)snprintf(buf, size, "%s", prefix);
    if (k >= size)
        return NULL;
    const unsigned char *p = (const unsigned char *)id;
    for (; *p && k + 4 < size; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("_:-", *p))
            buf[k++] = (char)*p;
        else
            k += (size_t)snprintf(buf + k, size - k, "%%%02X", *p);
    }
    if (*p || k + strlen(tail) >= size)
        return NULL;
    snprintf(buf + k, size - k, "%s", tail);
    return buf;
}

void pfi_http_url(const char *base, const char *path, char *out, size_t n)
{
    size_t l = strlen(base);
    while (l > 0 && base[l - 1] == '/')
        l--;
    snprintf(out, n, "%.*s%s", (int)l, base, path);
}
