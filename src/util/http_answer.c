/* SPDX-License-Identifier: Apache-2.0 */
/* http_answer.c: an HTTP/1.x answer read from the bytes received so far (http_answer.h), each
 * byte looked at a bounded number of times however the answer was split between reads. */
#include "util/http_answer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdio.h>
#include <time.h>

#include <curl/curl.h>

#define HEAD_MAX 65536 /* an answer's status line and headers, at most */
#define CHUNK_LINE_MAX 4096  /* a chunk's size line or a trailer line, at most */
#define INFO_MAX 8     /* 1xx answers before the real one, at most */

/* A header's value in head[0..n) (the line "Name: value"), into v: 0 when absent, 1 when
 * there, -1 when its value does not fit v or the header comes again with another value. */
static int header(const char *head, size_t n, const char *name, char *v, size_t vn)
{
    size_t ln = strlen(name);
    const char *p = head, *end = head + n;
    int found = 0;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        if ((size_t)(eol - p) > ln && !strncasecmp(p, name, ln) && p[ln] == ':') {
            const char *a = p + ln + 1, *b = eol;
            while (a < b && (*a == ' ' || *a == '\t'))
                a++;
            while (b > a && (b[-1] == '\r' || b[-1] == ' ' || b[-1] == '\t'))
                b--;
            size_t l = (size_t)(b - a);
            if (l >= vn)
                return -1;
            if (found && (strlen(v) != l || memcmp(v, a, l)))
                return -1;
            memcpy(v, a, l);
            v[l] = '\0';
            found = 1;
        }
        p = eol + 1;
    }
    return found;
}

static int hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Content-Length's value: digits only; 0, or -1 when malformed, -2 when over max. */
static int content_length(const char *v, size_t max, size_t *cl)
{
    size_t x = 0;
    int big = 0;
    if (!*v)
        return -1;
    for (; *v; v++) {
        if (*v < '0' || *v > '9')
            return -1;
        if (x > max / 10 || x * 10 + (size_t)(*v - '0') > max)
            big = 1;
        else
            x = x * 10 + (size_t)(*v - '0');
    }
    if (big)
        return -2;
    *cl = x;
    return 0;
}

/* "HTTP/M.N CODE ..." at s: 0 and the parts, -1 when it is not a status line. */
static int status_line(const char *s, int *major, int *minor, int *code)
{
    if (strncmp(s, "HTTP/", 5) || s[5] < '0' || s[5] > '9' || s[6] != '.' || s[7] < '0' ||
        s[7] > '9' || s[8] != ' ' || s[9] < '1' || s[9] > '9' || s[10] < '0' || s[10] > '9' ||
        s[11] < '0' || s[11] > '9' || (s[12] != ' ' && s[12] != '\r'))
        return -1;
    *major = s[5] - '0';
    *minor = s[7] - '0';
    *code = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
    return 0;
}

enum { P_HEAD, P_LEN, P_TO_CLOSE, P_SIZE, P_DATA, P_TRAILER, P_DONE };

static const char malformed[] = "malformed answer",
                  too_long[] = "answer longer than the request allows";

void pfi_http_answer_begin(pfi_http_answer_reader *rd, int head, size_t max)
{
    memset(rd, 0, sizeof *rd);
    rd->head = head;
    rd->max = max;
}

void pfi_http_answer_end(pfi_http_answer_reader *rd)
{
    free(rd->a.body);
    rd->a.body = NULL;
    rd->phase = P_DONE;
}

/* The reader ends in an error: a zeroed but for why. */
static int bad(pfi_http_answer_reader *rd, pfi_http_answer *a, int rc, const char *why)
{
    pfi_http_answer_end(rd);
    memset(a, 0, sizeof *a);
    a->why = why;
    return rc;
}

/* The reader ends with the answer: its body is blen bytes, the answer took in[0..used). */
static int complete(pfi_http_answer_reader *rd, pfi_http_answer *a, size_t blen, size_t used)
{
    if (!rd->a.body && !(rd->a.body = malloc(1)))
        return bad(rd, a, -1, "out of memory");
    rd->a.body[blen] = '\0';
    rd->a.body_len = blen;
    rd->a.used = used;
    *a = rd->a;
    rd->a.body = NULL;
    rd->phase = P_DONE;
    return 1;
}

/* The end of the next line of in[from..n), looked for within CHUNK_LINE_MAX bytes and from
 * where the last look stopped: past its '\n' into *at; 1 found, 0 not yet, -1 too long. */
static int next_line(pfi_http_answer_reader *rd, const char *in, size_t n, size_t from,
                     size_t *at)
{
    size_t lim = n - from < CHUNK_LINE_MAX ? n : from + CHUNK_LINE_MAX;
    size_t i = rd->scan > from ? rd->scan : from;
    const char *eol = i < lim ? memchr(in + i, '\n', lim - i) : NULL;
    rd->examined += eol ? (size_t)(eol - in) + 1 - i : lim - i;
    if (!eol) {
        rd->scan = lim;
        return n - from >= CHUNK_LINE_MAX ? -1 : 0;
    }
    *at = (size_t)(eol - in) + 1;
    rd->scan = *at;
    return 1;
}

/* The head (1xx answers skipped), searched from where the last call stopped: 1 read (the
 * reader's phase set for the body), else what pfi_http_answer_more returns. */
static int read_head(pfi_http_answer_reader *rd, const char *in, size_t n, int eof,
                     pfi_http_answer *a)
{
    const char *s, *he;
    int major, minor, code;
    for (;;) {
        /* "\r\n\r\n" ending within HEAD_MAX bytes of the answer's start */
        s = in + rd->start;
        size_t m = n - rd->start, lim = m < HEAD_MAX ? m : HEAD_MAX, i = rd->scan;
        he = NULL;
        for (; i + 3 < lim; i++)
            if (s[i] == '\r' && s[i + 1] == '\n' && s[i + 2] == '\r' && s[i + 3] == '\n') {
                he = s + i;
                break;
            }
        rd->examined += i - rd->scan + 1;
        rd->scan = i;
        if (!he && m >= HEAD_MAX)
            return bad(rd, a, -1, "malformed answer: its head is too long");
        if (!he)
            return eof ? bad(rd, a, -1, malformed) : 0;
        if (status_line(s, &major, &minor, &code) != 0)
            return bad(rd, a, -1, malformed);
        if (code >= 200)
            break;
        /* A 1xx answer before the real one: skipped. */
        if (rd->info == INFO_MAX)
            return bad(rd, a, -1, "malformed answer: too many 1xx answers");
        rd->info++;
        rd->start += (size_t)(he + 4 - s);
        rd->scan = 0;
    }
    size_t hlen = (size_t)(he + 4 - s);
    rd->examined += 4 * hlen; /* the headers looked for below */
    pfi_http_answer *A = &rd->a;
    char v[128];
    A->status = code;
    A->keep = !(major == 1 && minor == 0);
    int h = header(s, hlen, "Connection", v, sizeof v);
    if (h < 0)
        return bad(rd, a, -1, malformed);
    if (h)
        A->keep = strcasecmp(v, "close") != 0 && (A->keep || !strcasecmp(v, "keep-alive"));
    if (header(s, hlen, "Date", v, sizeof v) == 1) {
        time_t t = curl_getdate(v, NULL);
        if (t != (time_t)-1)
            A->date_s = (double)t;
    }
    rd->at = rd->scan = rd->start + hlen;
    int te = header(s, hlen, "Transfer-Encoding", v, sizeof v);
    if (te < 0)
        return bad(rd, a, -1, malformed);
    if (code == 204 || code == 304 || rd->head) {
        rd->phase = P_LEN;
        rd->len = 0; /* no body: the answer ends with its head */
    } else if (te && strcasecmp(v, "identity")) {
        if (strcasecmp(v, "chunked"))
            return bad(rd, a, -1, malformed);
        rd->phase = P_SIZE;
    } else if ((h = header(s, hlen, "Content-Length", v, sizeof v)) != 0) {
        size_t cl = 0;
        int rc = h < 0 ? -1 : content_length(v, rd->max, &cl);
        if (rc < 0)
            return rc == -2 ? bad(rd, a, -2, too_long) : bad(rd, a, -1, malformed);
        rd->phase = P_LEN;
        rd->len = cl;
    } else {
        A->keep = 0; /* the body ends with the connection */
        rd->phase = P_TO_CLOSE;
    }
    return 1;
}

/* A body of rd->len bytes at rd->at, or the bytes up to the close: copied once, when all came. */
static int read_whole(pfi_http_answer_reader *rd, const char *in, size_t n, int eof,
                      pfi_http_answer *a)
{
    size_t have = n - rd->at, blen = rd->len;
    if (rd->phase == P_LEN && have < blen)
        return eof ? bad(rd, a, -1, malformed) : 0;
    if (rd->phase == P_TO_CLOSE) {
        if (have > rd->max)
            return bad(rd, a, -2, too_long);
        if (!eof)
            return 0;
        blen = have;
    }
    if (!(rd->a.body = malloc(blen + 1)))
        return bad(rd, a, -1, "out of memory");
    memcpy(rd->a.body, in + rd->at, blen);
    rd->examined += blen;
    return complete(rd, a, blen, rd->at + blen);
}

/* A chunked body: each size line, chunk and trailer read once, the data appended to a.body
 * as each chunk completes.  Every read stays within in[0..n). */
static int read_chunks(pfi_http_answer_reader *rd, const char *in, size_t n, int eof,
                       pfi_http_answer *a)
{
    int l = 1;
    for (;;) {
        size_t next, w = rd->a.body_len;
        if (rd->phase == P_SIZE) {
            if ((l = next_line(rd, in, n, rd->at, &next)) != 1)
                break;
            /* HEX [ ; extension ] CRLF: nothing before the digits, no sign, no 0x */
            const char *p = in + rd->at, *eol = in + next - 1;
            size_t sz = 0;
            int digits = 0, big = 0;
            for (; p < eol && hex(*p) >= 0; p++, digits++) {
                if (sz > (SIZE_MAX - 15) / 16)
                    big = 1;
                else
                    sz = sz * 16 + (size_t)hex(*p);
            }
            while (p < eol && (*p == ' ' || *p == '\t'))
                p++;
            if (!digits || (p < eol && *p != ';' && !(*p == '\r' && p + 1 == eol)))
                return bad(rd, a, -1, malformed);
            if (big || sz > rd->max - w)
                return bad(rd, a, -2, too_long);
            rd->at = rd->scan = next;
            rd->len = sz;
            rd->phase = sz == 0 ? P_TRAILER : P_DATA;
        } else if (rd->phase == P_DATA) {
            size_t sz = rd->len;
            if (sz > n - rd->at || n - rd->at - sz < 2) {
                l = 0;
                break;
            }
            if (in[rd->at + sz] != '\r' || in[rd->at + sz + 1] != '\n')
                return bad(rd, a, -1, malformed);
            if (w + sz + 1 > rd->body_cap) {
                size_t cap = 2 * rd->body_cap > w + sz + 1 ? 2 * rd->body_cap : w + sz + 1;
                if (rd->max < SIZE_MAX && cap > rd->max + 1)
                    cap = rd->max + 1; /* w + sz <= max: it fits */
                char *b = realloc(rd->a.body, cap);
                if (!b)
                    return bad(rd, a, -1, "out of memory");
                rd->a.body = b;
                rd->body_cap = cap;
            }
            memcpy(rd->a.body + w, in + rd->at, sz);
            rd->examined += sz + 2;
            rd->a.body_len = w + sz;
            rd->at = rd->scan = rd->at + sz + 2;
            rd->phase = P_SIZE;
        } else { /* trailers, then an empty line */
            if ((l = next_line(rd, in, n, rd->at, &next)) != 1)
                break;
            size_t line = next - rd->at - 1;
            rd->at = next;
            if (line == 0 || (line == 1 && in[next - 2] == '\r'))
                return complete(rd, a, w, next);
        }
    }
    if (l == 0 && !eof)
        return 0;
    return bad(rd, a, -1, malformed);
}

int pfi_http_answer_more(pfi_http_answer_reader *rd, const char *in, size_t n, int eof,
                         pfi_http_answer *a)
{
    memset(a, 0, sizeof *a);
    if (rd->phase == P_DONE)
        return bad(rd, a, -1, "answer read already");
    if (rd->phase == P_HEAD) {
        int rc = read_head(rd, in, n, eof, a);
        if (rc != 1)
            return rc;
    }
    if (rd->phase == P_LEN || rd->phase == P_TO_CLOSE)
        return read_whole(rd, in, n, eof, a);
    return read_chunks(rd, in, n, eof, a);
}
