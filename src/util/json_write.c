/* SPDX-License-Identifier: Apache-2.0 */
/* json_write.c: JSON as json_dumps writes it, without a json_t per value (json_write.h). */
#include "util/json_write.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/text.h"

void pfi_jw_init(pfi_jw *w, int indent, int precision)
{
    memset(w, 0, sizeof *w);
    w->indent = indent < 1 ? 1 : indent > 31 ? 31 : indent;
    w->precision = precision == PFI_JW_SHORTEST      ? PFI_JW_SHORTEST
                   : precision < 1 || precision > 31 ? 17
                                                     : precision;
}

void pfi_jw_reset(pfi_jw *w, int depth)
{
    w->len = 0;
    w->failed = 0;
    w->after_key = 0;
    w->base = w->depth = depth < 0 ? 0 : depth;
}

void pfi_jw_free(pfi_jw *w)
{
    free(w->buf);
    memset(w, 0, sizeof *w);
}

/* Room for n more bytes; 0, or -1 (failed). */
static int room(pfi_jw *w, size_t n)
{
    if (w->failed)
        return -1;
    if (w->cap - w->len >= n)
        return 0;
    size_t cap = w->cap ? w->cap : 256;
    while (cap - w->len < n)
        cap *= 2;
    char *b = realloc(w->buf, cap);
    if (!b) {
        w->failed = 1;
        return -1;
    }
    w->buf = b;
    w->cap = cap;
    return 0;
}

static void put(pfi_jw *w, const char *s, size_t n)
{
    if (room(w, n) == 0) {
        memcpy(w->buf + w->len, s, n);
        w->len += n;
    }
}

/* A new line indented to `depth` levels. */
static void newline(pfi_jw *w, int depth)
{
    size_t n = 1 + (size_t)depth * (size_t)w->indent;
    if (room(w, n) == 0) {
        w->buf[w->len] = '\n';
        memset(w->buf + w->len + 1, ' ', n - 1);
        w->len += n;
    }
}

/* Inside an open container (index d = depth - base - 1): ",\n" between elements, "\n" before
 * the first, both then indented to the element's depth. */
static void before_value(pfi_jw *w)
{
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    int d = w->depth - w->base - 1;
    if (d < 0)
        return;
    if (w->items[d])
        put(w, ",", 1);
    w->items[d] = 1;
    newline(w, w->depth);
}

static void open_container(pfi_jw *w, char c)
{
    before_value(w);
    int d = w->depth - w->base;
    if (d >= PFI_JW_MAX_DEPTH) {
        w->failed = 1;
        return;
    }
    put(w, &c, 1);
    w->kind[d] = (unsigned char)c;
    w->items[d] = 0;
    w->depth++;
}

void pfi_jw_object(pfi_jw *w)
{
    open_container(w, '{');
}

void pfi_jw_array(pfi_jw *w)
{
    open_container(w, '[');
}

void pfi_jw_end(pfi_jw *w)
{
    int d = w->depth - w->base - 1;
    if (d < 0 || w->after_key) {
        w->failed = 1;
        return;
    }
    w->depth--;
    if (w->items[d])
        newline(w, w->depth);
    put(w, w->kind[d] == '{' ? "}" : "]", 1);
}

static void quoted(pfi_jw *w, const char *s)
{
    put(w, "\"", 1);
    const unsigned char *p = (const unsigned char *)s;
    while (*p && !w->failed) {
        const unsigned char *q = p;
        while (*q >= 0x20 && *q < 0x80 && *q != '"' && *q != '\\')
            q++;
        put(w, (const char *)p, (size_t)(q - p));
        p = q;
        if (!*p)
            break;
        char esc[8];
        const char *e = esc;
        size_t n = 2;
        switch (*p) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04X", (unsigned)*p);
                n = 6;
            } else { /* a multi-byte character, written as it is */
                n = (size_t)pfi_utf8_len((const char *)p);
                if (n == 0) {
                    w->failed = 1;
                    return;
                }
                e = (const char *)p;
            }
        }
        put(w, e, n);
        p += *p < 0x80 ? 1 : n;
    }
    put(w, "\"", 1);
}

void pfi_jw_key(pfi_jw *w, const char *key)
{
    int d = w->depth - w->base - 1;
    if (d < 0 || w->kind[d] != '{' || w->after_key) {
        w->failed = 1;
        return;
    }
    before_value(w);
    quoted(w, key);
    put(w, ": ", 2);
    w->after_key = 1;
}

void pfi_jw_string(pfi_jw *w, const char *s)
{
    before_value(w);
    quoted(w, s);
}

void pfi_jw_integer(pfi_jw *w, long long v)
{
    before_value(w);
    char b[32];
    int n = snprintf(b, sizeof b, "%lld", v);
    put(w, b, (size_t)n);
}

/* v as jansson's jsonp_dtostr writes it: "%.<precision>g" in the C spelling of the decimal
 * point, ".0" added when that has neither '.' nor 'e', the exponent's '+' and leading zeros
 * dropped. */
static size_t real_text(char *b, size_t size, double v, int precision)
{
    /* an integer of at most `precision` digits: %g writes exactly its digits */
    static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8, 1e9,
                                 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};
    if (v == 0 || (precision <= 18 && fabs(v) < p10[precision] && v == trunc(v))) {
        int n = v == 0 ? snprintf(b, size, "%s0.0", signbit(v) ? "-" : "")
                       : snprintf(b, size, "%lld.0", (long long)v);
        return (size_t)n;
    }
    int n = snprintf(b, size, "%.*g", precision, v);
    if (n < 0 || (size_t)n + 3 >= size)
        return 0;
    size_t len = (size_t)n;
    const char *point = localeconv()->decimal_point;
    char *pos;
    if (*point != '.' && (pos = strchr(b, *point)))
        *pos = '.';
    if (!strchr(b, '.') && !strchr(b, 'e')) {
        memcpy(b + len, ".0", 3);
        len += 2;
    }
    char *start = strchr(b, 'e');
    if (start) {
        start++;
        char *end = start + 1;
        if (*start == '-')
            start++;
        while (*end == '0')
            end++;
        if (end != start) {
            memmove(start, end, len - (size_t)(end - b) + 1);
            len -= (size_t)(end - start);
        }
    }
    return len;
}

void pfi_jw_real(pfi_jw *w, double v)
{
    if (!isfinite(v)) {
        w->failed = 1;
        return;
    }
    before_value(w);
    char b[64];
    size_t n = 0;
    if (w->precision != PFI_JW_SHORTEST)
        n = real_text(b, sizeof b, v, w->precision);
    for (int p = 15; w->precision == PFI_JW_SHORTEST && p <= 17; p++)
        if ((n = real_text(b, sizeof b, v, p)) > 0 && strtod(b, NULL) == v)
            break;
    if (n == 0)
        w->failed = 1;
    else
        put(w, b, n);
}

void pfi_jw_num(pfi_jw *w, double v)
{
    if (isfinite(v))
        pfi_jw_real(w, v);
    else
        pfi_jw_null(w);
}

void pfi_jw_bool(pfi_jw *w, int v)
{
    before_value(w);
    put(w, v ? "true" : "false", v ? 4 : 5);
}

void pfi_jw_null(pfi_jw *w)
{
    before_value(w);
    put(w, "null", 4);
}
