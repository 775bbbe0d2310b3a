/* SPDX-License-Identifier: Apache-2.0 */
/* http_frame.h: whether a request says its body's length one way only, for both HTTP servers
 * (serve/http.c, cluster/api.c), which feed it the request's header fields as libmicrohttpd
 * lists them.  libmicrohttpd takes the first of two Content-Length fields and reads a chunked
 * body that also has a Content-Length; a proxy in front of the daemon may read the other one,
 * and what the proxy sees as the next request is then a body to pfi, or the reverse (request
 * smuggling).  RFC 9112 6.3 lets a server refuse both; pfi does, before the body is read. */
#ifndef PFI_UTIL_HTTP_FRAME_H
#define PFI_UTIL_HTTP_FRAME_H

/* What a request's header fields say of its length so far; zero it before the first field. */
typedef struct pfi_http_frame {
    int lengths;          /* Content-Length fields seen */
    int lengths_differ;   /* two of them do not give the same count, or one is no count */
    long long length;     /* the first one's count, when it is one */
    int first_bad;        /* the first one is no count (libmicrohttpd refuses that itself) */
    int transfer_coding;  /* a Transfer-Encoding field was seen */
    int other_coding;     /* one of them names anything but chunked alone */
} pfi_http_frame;

/* Notes one header field (name in any case, value as sent). */
void pfi_http_frame_note(pfi_http_frame *f, const char *name, const char *value);

/* 0 when the length is said at most one way, in a way pfi reads; otherwise the status to
 * answer, and *why (static text) says why: 400 when it is said twice (two Content-Length fields
 * with different counts, or one beside a Transfer-Encoding), 501 for a transfer coding other
 * than chunked alone (gzip, "gzip, chunked": RFC 9112 6.1; libmicrohttpd reads none of them and
 * left such a request waiting until the idle timeout).  Two Content-Length fields with the
 * same count are taken (RFC 9110 8.6 allows either). */
int pfi_http_frame_check(const pfi_http_frame *f, const char **why);

#endif
