/* SPDX-License-Identifier: Apache-2.0 */
/* http.h: pfi's one HTTP client, used by `pfi ctl` and `pfi event`, by the cluster controller
 * to reach node daemons, and by its OpenADR client to reach a VTN.  Requests run together, so
 * reaching 1,000 nodes costs one round trip of the slowest node plus the per-request CPU, not
 * 1,000 round trips, and a client kept across calls keeps its connections, so heartbeats and
 * caps do not reconnect.  On a kept client, plain http:// to a numeric address or localhost,
 * and Unix sockets, go through one epoll loop on the calling thread with nothing set up per
 * request but its bytes (http_kept.c); everything else (https, names to resolve, a client for
 * one call) through libcurl's multi interface, many requests shared among up to 4 threads.
 * The SPANK plugin (src/slurm/) keeps its own few lines of curl: slurmd loads it, and it links
 * libcurl alone, never libpfi. */
#ifndef PFI_UTIL_HTTP_H
#define PFI_UTIL_HTTP_H

#include <stddef.h>

#include "util/http_req.h"

/* A reusable client: its open connections survive between calls.  Not thread-safe: one caller
 * at a time. */
typedef struct pfi_http pfi_http;
pfi_http *pfi_http_new(void);
void pfi_http_free(pfi_http *h);
/* Every request of h through curl from now on, plain HTTP too (the tests check both ways). */
void pfi_http_curl_only(pfi_http *h);

/* Performs every request, at most max_parallel at a time, each within timeout_s of its start,
 * on keep's connections (NULL: a client for this call only), and returns when every one is
 * over: a request that hangs holds its own slot until timeout_s, no other.  token (may be
 * NULL) goes in an Authorization: Bearer header.  Never fails as a whole: outcomes are in the
 * requests. */
void pfi_http_many(pfi_http *keep, pfi_http_req *reqs, int n, const char *token,
                   double timeout_s, int max_parallel);
/* Frees the replies (the requests themselves are the caller's). */
void pfi_http_req_free(pfi_http_req *reqs, int n);

/* s percent-encoded for a URL's query or a form body (malloc'd; NULL when out of memory). */
char *pfi_http_escape(const char *s);
/* prefix + id + tail into buf ("/v1/jobs/" "a b" "/throughput"), the id percent-encoded but for
 * letters, digits and "_:-": a dot too, since libcurl resolves dot segments ("job rm ../budget"
 * went out as DELETE /v1/budget) and the ids "." and ".." could not be reached.  The daemons
 * decode a path before matching it.  NULL when it does not fit in size bytes. */
const char *pfi_http_id_path(char *buf, size_t size, const char *prefix, const char *id,
                             const char *tail);

/* base (without or with trailing '/') + path ("/v1/gpus") into out. */
void pfi_http_url(const char *base, const char *path, char *out, size_t n);

#endif
