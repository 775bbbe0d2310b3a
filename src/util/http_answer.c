/* SPDX-License-Identifier: Apache-2.0 */
/* http_answer.c: an HTTP/1.x answer read from the bytes received so far (http_answer.h). */
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

/* The end of the head ("\r\n\r\n") within s[0..n), searched within HEAD_MAX bytes: NULL
 * when not there; *too_long when it cannot come any more. */
static const char *find_crlf2(const char *s, size_t n, int *too_long)
{
    size_t lim = n < HEAD_MAX ? n : HEAD_MAX;
    for (size_t i = 0; i + 3 < lim; i++)
        if (s[i] == '\r' && s[i + 1] == '\n' && s[i + 2] == '\r' && s[i + 3] == '\n')
            return s + i;
    *too_long = n >= HEAD_MAX;
    return NULL;
}

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

/* The next line's end in s[rd..n), within CHUNK_LINE_MAX bytes: its offset past the '\n' into *at;
 * 1 found, 0 not yet, -1 too long. */
static int next_line(const char *s, size_t n, size_t rd, size_t *at)
{
    size_t lim = n - rd < CHUNK_LINE_MAX ? n - rd : CHUNK_LINE_MAX;
    const char *eol = memchr(s + rd, '\n', lim);
    if (!eol)
        return n - rd >= CHUNK_LINE_MAX ? -1 : 0;
    *at = (size_t)(eol - s) + 1;
    return 1;
}

/* Chunked body in s[0..n), decoded in place: its length into *out_len; 1 when complete, 0 when
 * more is needed, -1 when malformed, -2 when longer than max; the bytes it took into *used.
 * Every read stays within s[0..n). */
static int dechunk(char *s, size_t n, size_t max, size_t *out_len, size_t *used)
{
    size_t rd = 0, w = 0; /* w <= rd: the decoded bytes never overtake the ones still to read */
    for (;;) {
        size_t data;
        int l = next_line(s, n, rd, &data);
        if (l != 1)
            return l;
        /* HEX [ ; extension ] CRLF: nothing before the digits, no sign, no 0x */
        const char *p = s + rd, *eol = s + data - 1;
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
            return -1;
        if (big || sz > max - w)
            return -2;
        if (sz == 0) { /* trailers, then an empty line */
            size_t at = data;
            for (;;) {
                size_t next;
                l = next_line(s, n, at, &next);
                if (l != 1)
                    return l;
                size_t line = next - at - 1;
                at = next;
                if (line == 0 || (line == 1 && s[at - 2] == '\r')) {
                    *out_len = w;
                    *used = at;
                    return 1;
                }
            }
        }
        if (sz > n - data || n - data - sz < 2)
            return 0;
        if (s[data + sz] != '\r' || s[data + sz + 1] != '\n')
            return -1;
        memmove(s + w, s + data, sz);
        w += sz;
        rd = data + sz + 2;
    }
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

static int bad(pfi_http_answer *a, int rc, const char *why)
{
    a->why = why;
    return rc;
}

int pfi_http_answer_parse(const char *in, size_t n, int eof, int head, size_t max,
                          pfi_http_answer *a)
{
    static const char malformed[] = "malformed answer",
                      too_long[] = "answer longer than the request allows";
    memset(a, 0, sizeof *a);
    const char *he, *in0 = in;
    int major, minor, code;
    for (int info = 0;; info++) {
        int head_too_long = 0;
        he = find_crlf2(in, n, &head_too_long);
        if (!he && head_too_long)
            return bad(a, -1, "malformed answer: its head is too long");
        if (!he)
            return eof ? bad(a, -1, malformed) : 0;
        if (status_line(in, &major, &minor, &code) != 0)
            return bad(a, -1, malformed);
        if (code >= 200)
            break;
        /* A 1xx answer before the real one: skipped. */
        if (info == INFO_MAX)
            return bad(a, -1, "malformed answer: too many 1xx answers");
        size_t drop = (size_t)(he + 4 - in);
        in += drop;
        n -= drop;
    }
    size_t hlen = (size_t)(he + 4 - in);
    char v[128];
    a->keep = !(major == 1 && minor == 0);
    int h = header(in, hlen, "Connection", v, sizeof v);
    if (h < 0)
        return bad(a, -1, malformed);
    if (h)
        a->keep = strcasecmp(v, "close") != 0 && (a->keep || !strcasecmp(v, "keep-alive"));
    const char *body = in + hlen;
    size_t have = n - hlen, blen;
    int te = header(in, hlen, "Transfer-Encoding", v, sizeof v);
    if (te < 0)
        return bad(a, -1, malformed);
    if (code == 204 || code == 304 || head) {
        blen = 0;
    } else if (te && strcasecmp(v, "identity")) {
        if (strcasecmp(v, "chunked"))
            return bad(a, -1, malformed);
        char *copy = malloc(have + 1);
        if (!copy)
            return bad(a, -1, "out of memory");
        memcpy(copy, body, have);
        size_t used = 0;
        int rc = dechunk(copy, have, max, &blen, &used);
        if (rc != 1) {
            free(copy);
            if (rc == 0 && !eof)
                return 0;
            return rc == -2 ? bad(a, -2, too_long) : bad(a, -1, malformed);
        }
        a->body = copy;
        a->body[blen] = '\0';
        a->used = (size_t)(body - in0) + used;
        goto done;
    } else if ((h = header(in, hlen, "Content-Length", v, sizeof v)) != 0) {
        size_t cl = 0;
        int rc = h < 0 ? -1 : content_length(v, max, &cl);
        if (rc < 0)
            return rc == -2 ? bad(a, -2, too_long) : bad(a, -1, malformed);
        if (have < cl)
            return eof ? bad(a, -1, malformed) : 0;
        blen = cl;
    } else {
        a->keep = 0; /* the body ends with the connection */
        if (have > max)
            return bad(a, -2, too_long);
        if (!eof)
            return 0;
        blen = have;
    }
    a->body = malloc(blen + 1);
    if (!a->body)
        return bad(a, -1, "out of memory");
    memcpy(a->body, body, blen);
    a->body[blen] = '\0';
    a->used = (size_t)(body - in0) + (code == 204 || code == 304 || head ? 0 : blen);
done:
    a->status = code;
    a->body_len = blen;
    if (header(in, hlen, "Date", v, sizeof v) == 1) {
        time_t t = curl_getdate(v, NULL);
        if (t != (time_t)-1)
            a->date_s = (double)t;
    }
    return 1;
}
