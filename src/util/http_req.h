/* SPDX-License-Identifier: Apache-2.0 */
/* http_req.h: one request of pfi's HTTP client (http.h), shared with the kept-connection path
 * (http_kept.h). */
#ifndef PFI_UTIL_HTTP_REQ_H
#define PFI_UTIL_HTTP_REQ_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* One request. */
typedef struct pfi_http_req {
    const char *url;       /* full URL */
    const char *unix_sock; /* non-NULL: connect to this Unix socket (url's host is ignored) */
    const char *method;    /* "GET", "PUT", "POST", "DELETE" */
    const char *body;      /* sent with content_type; NULL: none */
    const char *content_type; /* the body's type; NULL: application/json */
    size_t max_reply;      /* a longer reply fails the request; 0: 4 MiB (a node's answer) */
    long status;           /* out: HTTP status, or -1 when no answer */
    int started;           /* out: 0 when the client could not even start it (out of memory) */
    char *reply;           /* out: body (malloc'd, NUL-terminated) or NULL */
    double date_s;         /* out: the answer's Date header in Unix seconds; NAN when none */
    char err[200];         /* out: why there was no good answer */
    int timed_out;         /* out: 1 when the connection was made or tried and no whole answer
                            * came within the timeout (a daemon overloaded, or a full listener,
                            * rather than none) */
    /* Called once the request is over (answered or not), on the thread that ran it, which
     * may not be the caller's: it may read the outcome, and touch only what is the request's
     * own.  NULL: none. */
    void (*done)(struct pfi_http_req *r);
    void *ud; /* the caller's, for done */
    unsigned affinity; /* through curl, requests with the same value other than 0 (one
                        * server's, say) run on the same thread and its kept connections;
                        * 0: grouped by host */
    /* The caller's stop flag (NULL: none), read while the request waits: once it is non-zero
     * the request is given up within a poll slice (50 ms), or not started, instead of waiting
     * out timeout_s on a server that does not answer: a daemon asked to stop must not wait on
     * it.  Such a request ends with status -1, cancelled 1, no reply and the err "cancelled:
     * stopping": the caller's own doing, no failure of the server. */
    const volatile int *cancel;
    int cancelled; /* out: 1 when given up because *cancel was set */
} pfi_http_req;

/* For the two paths that run requests (http.c, http_kept.c): whether r's caller is stopping;
 * if so, r is ended as cancelled (above). */
static inline int pfi_http_req_cancel_asked(pfi_http_req *r)
{
    if (!r->cancel || !*r->cancel)
        return 0;
    r->status = -1;
    r->cancelled = 1;
    free(r->reply);
    r->reply = NULL;
    snprintf(r->err, sizeof r->err, "cancelled: stopping");
    return 1;
}

#endif
