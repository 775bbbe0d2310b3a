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

/* An answer read as its bytes come: each call takes up where the last one stopped, so an
 * answer that arrives in many small pieces costs its length, not its length squared. */
typedef struct pfi_http_answer_reader {
    int head;          /* the request was a HEAD */
    size_t max;        /* the longest body taken */
    int phase;         /* where the answer is (http_answer.c) */
    int info;          /* 1xx answers skipped */
    size_t start;      /* where the answer's head starts (past the 1xx answers) */
    size_t scan;       /* where the search for the end of a head or line resumes */
    size_t at;         /* the body: where its next element (size line, data, trailer) starts */
    size_t len;        /* Content-Length, or the size of the chunk at `at` */
    pfi_http_answer a; /* what the head said; the chunks decoded so far in a.body */
    size_t body_cap;
    size_t examined;   /* bytes looked at so far, every call together (a bound on the work) */
} pfi_http_answer_reader;

/* head: the request was a HEAD (no body); max: the longest body taken. */
void pfi_http_answer_begin(pfi_http_answer_reader *rd, int head, size_t max);
/* in[0..n) (no NUL needed): every byte received so far, those of earlier calls unchanged (n
 * never shrinks); eof when the server closed the connection after them.  Returns 1 when
 * complete (a filled in, its body owned by the caller), 0 when more bytes are needed, -1 when
 * malformed, -2 when the body is longer than max; a->why says which on -1 and -2.  The same
 * bytes give the same result however they were split between calls.  After a result other
 * than 0 the reader is done (pfi_http_answer_end, or begin again). */
int pfi_http_answer_more(pfi_http_answer_reader *rd, const char *in, size_t n, int eof,
                         pfi_http_answer *a);
/* Frees what an unfinished reader holds. */
void pfi_http_answer_end(pfi_http_answer_reader *rd);

#endif
