/* SPDX-License-Identifier: Apache-2.0 */
/* http_answer.c: an HTTP/1.x answer read from the bytes received so far (http_answer.h). */
#include "util/http_answer.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdio.h>
#include <time.h>

#include <curl/curl.h>

static const char *find_crlf2(const char *s, size_t n)
{
    for (size_t i = 0; i + 3 < n; i++)
        if (s[i] == '\r' && s[i + 1] == '\n' && s[i + 2] == '\r' && s[i + 3] == '\n')
            return s + i;
    return NULL;
}

/* A header's value in head[0..n) (the line "Name: value"), into v; 0 when absent. */
static int header(const char *head, size_t n, const char *name, char *v, size_t vn)
{
    size_t ln = strlen(name);
    const char *p = head, *end = head + n;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        if ((size_t)(eol - p) > ln && !strncasecmp(p, name, ln) && p[ln] == ':') {
            const char *a = p + ln + 1, *b = eol;
            while (a < b && (*a == ' ' || *a == '\t'))
                a++;
            while (b > a && (b[-1] == '\r' || b[-1] == ' '))
                b--;
            snprintf(v, vn, "%.*s", (int)(b - a), a);
            return 1;
        }
        p = eol + 1;
    }
    return 0;
}

/* Chunked body in s[0..n), decoded in place: its length into *out_len; 1 when complete, 0 when
 * more is needed, -1 when malformed. */
static int dechunk(char *s, size_t n, size_t *out_len)
{
    size_t rd = 0, w = 0; /* w <= rd: the decoded bytes never overtake the ones still to read */
    for (;;) {
        const char *eol = memchr(s + rd, '\n', n - rd);
        if (!eol)
            return 0;
        char *end;
        unsigned long long sz = strtoull(s + rd, &end, 16);
        if (end == s + rd)
            return -1;
        size_t data = (size_t)(eol - s) + 1;
        if (sz == 0) { /* trailers, then an empty line */
            size_t p = data;
            for (;;) {
                const char *e2 = memchr(s + p, '\n', n - p);
                if (!e2)
                    return 0;
                size_t line = (size_t)(e2 - (s + p));
                p = (size_t)(e2 - s) + 1;
                if (line == 0 || (line == 1 && s[p - 2] == '\r')) {
                    *out_len = w;
                    return 1;
                }
            }
        }
        if (sz > n - data || n - data - sz < 2)
            return 0;
        if (s[data + sz] != '\r' || s[data + sz + 1] != '\n')
            return -1;
        memmove(s + w, s + data, (size_t)sz);
        w += (size_t)sz;
        rd = data + (size_t)sz + 2;
    }
}

/* "HTTP/M.N CODE ..." at s: 0 and the parts, -1 when it is not a status line. */
static int status_line(const char *s, int *major, int *minor, int *code)
{
    if (strncmp(s, "HTTP/", 5) || s[5] < '0' || s[5] > '9' || s[6] != '.' || s[7] < '0' ||
        s[7] > '9' || s[8] != ' ' || s[9] < '1' || s[9] > '9' || s[10] < '0' || s[10] > '9' ||
        s[11] < '0' || s[11] > '9')
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
    memset(a, 0, sizeof *a);
    const char *he;
    int major, minor, code;
    for (;;) {
        he = find_crlf2(in, n);
        if (!he)
            return eof ? bad(a, -1, "malformed answer") : 0;
        if (status_line(in, &major, &minor, &code) != 0)
            return bad(a, -1, "malformed answer");
        if (code >= 200)
            break;
        /* A 1xx answer before the real one: skipped. */
        size_t drop = (size_t)(he + 4 - in);
        in += drop;
        n -= drop;
    }
    size_t hlen = (size_t)(he + 4 - in);
    char v[128];
    a->keep = !(major == 1 && minor == 0);
    if (header(in, hlen, "Connection", v, sizeof v))
        a->keep = strcasecmp(v, "close") != 0 && (a->keep || !strcasecmp(v, "keep-alive"));
    const char *body = in + hlen;
    size_t have = n - hlen, blen;
    if (code == 204 || code == 304 || head) {
        blen = 0;
    } else if (header(in, hlen, "Transfer-Encoding", v, sizeof v) &&
               strcasecmp(v, "identity")) {
        if (strcasecmp(v, "chunked"))
            return bad(a, -1, "malformed answer");
        char *copy = malloc(have + 1);
        if (!copy)
            return bad(a, -1, "out of memory");
        memcpy(copy, body, have);
        int rc = dechunk(copy, have, &blen);
        if (rc == 1 && blen > max)
            rc = -2;
        if (rc != 1) {
            free(copy);
            if (rc == 0 && !eof)
                return 0;
            return rc == -2 ? bad(a, -2, "answer longer than the request allows")
                            : bad(a, -1, "malformed answer");
        }
        a->body = copy;
        a->body[blen] = '\0';
        goto done;
    } else if (header(in, hlen, "Content-Length", v, sizeof v)) {
        char *end;
        unsigned long long cl = strtoull(v, &end, 10);
        if (end == v || *end)
            return bad(a, -1, "malformed answer");
        if (cl > max)
            return bad(a, -2, "answer longer than the request allows");
        if (have < cl)
            return eof ? bad(a, -1, "malformed answer") : 0;
        blen = (size_t)cl;
    } else {
        a->keep = 0; /* the body ends with the connection */
        if (have > max)
            return bad(a, -2, "answer longer than the request allows");
        if (!eof)
            return 0;
        blen = have;
    }
    a->body = malloc(blen + 1);
    if (!a->body)
        return bad(a, -1, "out of memory");
    memcpy(a->body, body, blen);
    a->body[blen] = '\0';
done:
    a->status = code;
    a->body_len = blen;
    if (header(in, hlen, "Date", v, sizeof v)) {
        time_t t = curl_getdate(v, NULL);
        if (t != (time_t)-1)
            a->date_s = (double)t;
    }
    return 1;
}
