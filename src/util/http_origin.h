/* SPDX-License-Identifier: Apache-2.0 */
/* http_origin.h: whether a request that changes something was sent by a web page of another
 * origin, for both HTTP servers (serve/http.c, cluster/api.c), which feed it the request's header
 * fields as libmicrohttpd lists them.  A browser adds an operator's token to every request once
 * a proxy or an extension does (docs/api.md's way to read a token-guarded status page), and any
 * page open in it can then send a POST that needs no preflight (text/plain, a form): a grid
 * event cutting the node to its minimum, say.  Browsers say where such a request comes from
 * (Sec-Fetch-Site, Origin); pfi's own clients (pfi ctl, the controller, the Slurm plugin, curl)
 * send neither and are not affected. */
#ifndef PFI_UTIL_HTTP_ORIGIN_H
#define PFI_UTIL_HTTP_ORIGIN_H

/* What a request's header fields say of where it comes from; zero it before the first field.
 * The strings are the caller's (libmicrohttpd's, valid while the request is). */
typedef struct pfi_http_origin {
    const char *origin;     /* the Origin field */
    const char *host;       /* the Host field */
    const char *fetch_site; /* the Sec-Fetch-Site field */
    int n_origin, n_host, n_fetch_site;
} pfi_http_origin;

/* Notes one header field (name in any case, value as sent). */
void pfi_http_origin_note(pfi_http_origin *o, const char *name, const char *value);

/* 1 when a request of this method (GET, HEAD and OPTIONS change nothing: never) comes from a
 * page of another origin: Sec-Fetch-Site other than same-origin or none (a user's own typing),
 * else an Origin whose host and port are not the Host's (or "null", or either field given
 * twice, or an Origin without a Host); *why (static text) then says so.  0 otherwise, a request
 * with neither field included (not a browser's). */
int pfi_http_origin_cross(const pfi_http_origin *o, const char *method, const char **why);

#endif
