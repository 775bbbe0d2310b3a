/* SPDX-License-Identifier: Apache-2.0 */
/* http_kept.h: plain HTTP/1.1 on kept connections, the path http.c takes for the many small
 * requests of a fan-out (a site's node daemons): one epoll loop, no per-request set-up beyond
 * the request's own bytes, a connection per server kept from call to call.  Only http:// to a
 * numeric address or localhost, or over a Unix socket; anything else (https, a name to
 * resolve) stays with curl.  Used only by http.c. */
#ifndef PFI_UTIL_HTTP_KEPT_H
#define PFI_UTIL_HTTP_KEPT_H

#include "util/http_req.h"

/* The connections one thread keeps (not thread-safe). */
typedef struct pfi_http_kept pfi_http_kept;
pfi_http_kept *pfi_http_kept_new(void);
void pfi_http_kept_free(pfi_http_kept *k);

/* Whether r can go this way. */
int pfi_http_kept_can(const pfi_http_req *r);

/* Runs reqs[0..n) (each one pfi_http_kept_can takes, reset by the caller), at most
 * max_parallel at a time, each within timeout_s of its start; auth is a whole header line
 * ("Authorization: Bearer ...") or NULL.  Calls each request's done as it ends. */
void pfi_http_kept_run(pfi_http_kept *k, pfi_http_req **reqs, int n, const char *auth,
                       double timeout_s, int max_parallel);

#endif
