/* SPDX-License-Identifier: Apache-2.0 */
/* http_req.h: one request of pfi's HTTP client (http.h), shared with the kept-connection path
 * (http_kept.h). */
#ifndef PFI_UTIL_HTTP_REQ_H
#define PFI_UTIL_HTTP_REQ_H

#include <stddef.h>

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
    /* Called once the request is over (answered or not), on the thread that ran it, which
     * may not be the caller's: it may read the outcome, and touch only what is the request's
     * own.  NULL: none. */
    void (*done)(struct pfi_http_req *r);
    void *ud; /* the caller's, for done */
    unsigned affinity; /* through curl, requests with the same value other than 0 (one
                        * server's, say) run on the same thread and its kept connections;
                        * 0: grouped by host */
} pfi_http_req;

#endif
