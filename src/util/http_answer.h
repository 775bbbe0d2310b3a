/* SPDX-License-Identifier: Apache-2.0 */
/* http_answer.h: an HTTP/1.x answer read from the bytes received so far, with no socket: the
 * status line, 1xx answers before the real one, Connection, Content-Length, chunked bodies,
 * a body up to the close, the Date header.  http_kept.c reads every answer with it; a node
 * daemon may be broken or hostile, so every answer ends complete or in an error, never in a
 * wait for bytes that cannot come. */
#ifndef PFI_UTIL_HTTP_ANSWER_H
#define PFI_UTIL_HTTP_ANSWER_H

#include <stddef.h>

typedef struct pfi_http_answer {
    int status;      /* the final status code (>= 200) */
    int keep;        /* the connection may carry the next request */
    char *body;      /* malloc'ed, NUL-terminated; the caller frees it */
    size_t body_len; /* <= max */
    double date_s;   /* the Date header, 0 when absent or unreadable */
    size_t used;     /* bytes of in the answer took (1xx answers included): any after them
                        answer no request, and the caller does not keep the connection */
    const char *why; /* on an error: what was wrong (a static string) */
} pfi_http_answer;

/* The answer in in[0..n) (no NUL needed), eof when the server closed the connection after
 * it, head when the request was a HEAD (no body), max the longest body taken.  Returns 1 when
 * complete (a filled in, its body owned by the caller), 0 when more bytes are needed, -1 when
 * malformed, -2 when the body is longer than max; a->why says which on -1 and -2.  The same
 * bytes give the same result however they were split between calls. */
int pfi_http_answer_parse(const char *in, size_t n, int eof, int head, size_t max,
                          pfi_http_answer *a);

#endif
