/* SPDX-License-Identifier: Apache-2.0 */
/* json_fast.c: plain JSON values without jansson's lexer (json_fast.h). */
#include "util/json_fast.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 32 /* deeper: jansson (which counts its own limit) */

typedef pfi_json_cursor fast;

static void ws(fast *f)
{
    while (f->p < f->end && (*f->p == ' ' || *f->p == '\t' || *f->p == '\n' || *f->p == '\r'))
        f->p++;
}

static int digit(const fast *f)
{
    return f->p < f->end && *f->p >= '0' && *f->p <= '9';
}

/* A string of printable ASCII without escapes: its bytes at *s, *n long; -1 otherwise. */
static int string(fast *f, const char **s, size_t *n)
{
    const char *q = ++f->p;
    while (q < f->end && *q != '"') {
        if (*q < 0x20 || *q > 0x7e || *q == '\\')
            return -1;
        q++;
    }
    if (q == f->end)
        return -1;
    *s = f->p;
    *n = (size_t)(q - f->p);
    f->p = q + 1;
    return 0;
}

/* Exact powers of ten as doubles (10^22 is the largest that is). */
static const double P10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                             1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                             1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The number a[0..n), already checked against JSON's grammar, as jansson decodes it: strtoll
 * for an integer, strtod for a real, each out of range: NULL.  A real whose digits make an
 * integer below 2^53 and whose decimal exponent is within 22 is that integer times or divided
 * by an exact power of ten: one rounding, so the very double strtod gives (Clinger's fast
 * path), without its cost. */
static int decode(const char *a, size_t n, int real, json_int_t *iv, double *dv)
{
    const char *p = a, *end = a + n;
    int neg = *p == '-';
    p += neg;
    unsigned long long m = 0;
    int digits = 0, scale = 0, ok = 1;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (digits < 19) {
            m = 10 * m + (unsigned)(*p - '0');
            digits += m > 0;
        } else {
            ok = 0;
        }
    }
    if (!real && ok && m <= 9223372036854775807ULL) {
        *iv = neg ? -(json_int_t)m : (json_int_t)m;
        return 0;
    }
    if (p < end && *p == '.') {
        for (p++; p < end && *p >= '0' && *p <= '9'; p++) {
            if (digits < 19) {
                m = 10 * m + (unsigned)(*p - '0');
                digits += m > 0;
                scale--;
            } else {
                ok = 0;
            }
        }
    }
    int e = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = *p == '-';
        p += *p == '-' || *p == '+';
        for (; p < end && *p >= '0' && *p <= '9'; p++)
            e = e < 10000 ? 10 * e + (*p - '0') : e;
        e = eneg ? -e : e;
    }
    e += scale;
    if (real && ok && m <= (1ULL << 53) && e >= -22 && e <= 22) {
        double v = e < 0 ? (double)m / P10[-e] : (double)m * P10[e];
        *dv = neg ? -v : v;
        return 1;
    }
    char buf[64];
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, a, n);
    buf[n] = '\0';
    errno = 0;
    if (!real) {
        long long v = strtoll(buf, NULL, 10);
        *iv = (json_int_t)v;
        return errno == ERANGE ? -1 : 0;
    }
    *dv = strtod(buf, NULL);
    if (errno == ERANGE && (*dv == HUGE_VAL || *dv == -HUGE_VAL))
        return -1;
    return 1;
}

/* A number exactly as JSON spells it, decoded as jansson does: an integer by strtoll when it has
 * no fraction or exponent, else a real by strtod; -1 for what jansson would refuse (a
 * malformed number, an integer or a real out of range), else as decode(). */
static int scan_number(fast *f, json_int_t *iv, double *dv)
{
    const char *a = f->p;
    int real = 0;
    if (f->p < f->end && *f->p == '-')
        f->p++;
    if (!digit(f))
        return -1;
    if (*f->p == '0') {
        f->p++;
        if (digit(f))
            return -1;
    } else {
        while (digit(f))
            f->p++;
    }
    if (f->p < f->end && *f->p == '.') {
        f->p++, real = 1;
        if (!digit(f))
            return -1;
        while (digit(f))
            f->p++;
    }
    if (f->p < f->end && (*f->p == 'e' || *f->p == 'E')) {
        f->p++, real = 1;
        if (f->p < f->end && (*f->p == '+' || *f->p == '-'))
            f->p++;
        if (!digit(f))
            return -1;
        while (digit(f))
            f->p++;
    }
    return decode(a, (size_t)(f->p - a), real, iv, dv);
}

static json_t *number(fast *f)
{
    json_int_t iv;
    double dv;
    int k = scan_number(f, &iv, &dv);
    return k < 0 ? NULL : k == 0 ? json_integer(iv) : json_real(dv);
}

static json_t *value(fast *f, int depth);

static json_t *object(fast *f, int depth)
{
    json_t *o = json_object();
    f->p++;
    ws(f);
    if (f->p < f->end && *f->p == '}') {
        f->p++;
        return o;
    }
    for (;;) {
        const char *k;
        size_t kn;
        ws(f);
        if (!(f->p < f->end && *f->p == '"') || string(f, &k, &kn))
            break;
        ws(f);
        if (!(f->p < f->end && *f->p == ':'))
            break;
        f->p++;
        json_t *v = value(f, depth);
        size_t had = json_object_size(o);
        if (!v || json_object_setn_new_nocheck(o, k, kn, v) || json_object_size(o) == had)
            break; /* a repeated key: jansson's to judge (a caller may refuse it) */
        ws(f);
        if (f->p < f->end && *f->p == '}') {
            f->p++;
            return o;
        }
        if (!(f->p < f->end && *f->p == ','))
            break;
        f->p++;
    }
    json_decref(o);
    return NULL;
}

static json_t *array(fast *f, int depth)
{
    json_t *a = json_array();
    f->p++;
    ws(f);
    if (f->p < f->end && *f->p == ']') {
        f->p++;
        return a;
    }
    for (;;) {
        json_t *v = value(f, depth);
        if (!v || json_array_append_new(a, v))
            break;
        ws(f);
        if (f->p < f->end && *f->p == ']') {
            f->p++;
            return a;
        }
        if (!(f->p < f->end && *f->p == ','))
            break;
        f->p++;
    }
    json_decref(a);
    return NULL;
}

/* A literal: true, false or null, ending there. */
static int word(fast *f, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(f->end - f->p) < n || memcmp(f->p, w, n) != 0)
        return 0;
    f->p += n;
    return 1;
}

static json_t *value(fast *f, int depth)
{
    ws(f);
    if (f->p == f->end || depth >= MAX_DEPTH)
        return NULL;
    switch (*f->p) {
    case '{':
        return object(f, depth + 1);
    case '[':
        return array(f, depth + 1);
    case '"': {
        const char *s;
        size_t n;
        return string(f, &s, &n) ? NULL : json_stringn_nocheck(s, n);
    }
    case 't':
        return word(f, "true") ? json_true() : NULL;
    case 'f':
        return word(f, "false") ? json_false() : NULL;
    case 'n':
        return word(f, "null") ? json_null() : NULL;
    default:
        return number(f);
    }
}

json_t *pfi_json_fast_loadb(const char *s, size_t n)
{
    /* jansson reads reals in the locale's spelling of the decimal point: only "." here */
    const char *dp = localeconv()->decimal_point;
    if (!dp || strcmp(dp, ".") != 0)
        return NULL;
    fast f = {s, s + n};
    json_t *v = value(&f, 0);
    ws(&f);
    /* what follows a number or a literal must end it, as jansson's lexer requires */
    if (v && f.p != f.end) {
        json_decref(v);
        return NULL;
    }
    return v;
}

int pfi_json_cursor_peek(pfi_json_cursor *c)
{
    ws(c);
    return c->p < c->end ? (unsigned char)*c->p : -1;
}

int pfi_json_cursor_take(pfi_json_cursor *c, int ch)
{
    if (pfi_json_cursor_peek(c) != ch)
        return 0;
    c->p++;
    return 1;
}

int pfi_json_cursor_string(pfi_json_cursor *c, const char **s, size_t *n)
{
    return pfi_json_cursor_peek(c) == '"' ? string(c, s, n) : -1;
}

int pfi_json_cursor_init(pfi_json_cursor *c, const char *s, size_t n)
{
    c->p = s;
    c->end = s + n;
    const char *dp = localeconv()->decimal_point; /* as pfi_json_fast_loadb */
    return dp && strcmp(dp, ".") == 0 ? 0 : -1;
}

int pfi_json_cursor_number_kind(pfi_json_cursor *c, double *v, int *integer)
{
    ws(c);
    json_int_t iv;
    int k = scan_number(c, &iv, v);
    if (k == 0)
        *v = (double)iv;
    *integer = k == 0;
    /* what follows must end the number, as jansson's lexer requires */
    if (k >= 0 && c->p < c->end && *c->p != ',' && *c->p != ']' && *c->p != '}' && *c->p != ' ' &&
        *c->p != '\t' && *c->p != '\n' && *c->p != '\r')
        return -1;
    return k < 0 ? -1 : 0;
}

int pfi_json_cursor_number(pfi_json_cursor *c, double *v)
{
    int integer;
    return pfi_json_cursor_number_kind(c, v, &integer);
}

/* true, false or null, ended as a number must be. */
static int literal(pfi_json_cursor *c, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n))
        return -1;
    c->p += n;
    if (c->p < c->end && *c->p != ',' && *c->p != ']' && *c->p != '}' && *c->p != ' ' &&
        *c->p != '\t' && *c->p != '\n' && *c->p != '\r')
        return -1;
    return 0;
}

int pfi_json_cursor_skip(pfi_json_cursor *c, int depth)
{
    const char *s;
    size_t n;
    double v;
    int ch = pfi_json_cursor_peek(c);
    if (ch == '"')
        return pfi_json_cursor_string(c, &s, &n);
    if (ch == 't' || ch == 'f' || ch == 'n')
        return literal(c, ch == 't' ? "true" : ch == 'f' ? "false" : "null");
    if (ch != '{' && ch != '[')
        return pfi_json_cursor_number(c, &v);
    if (depth <= 0)
        return -1;
    int close = ch == '{' ? '}' : ']';
    c->p++;
    if (pfi_json_cursor_take(c, close))
        return 0;
    do {
        if (ch == '{' && (pfi_json_cursor_string(c, &s, &n) < 0 || !pfi_json_cursor_take(c, ':')))
            return -1;
        if (pfi_json_cursor_skip(c, depth - 1) < 0)
            return -1;
    } while (pfi_json_cursor_take(c, ','));
    return pfi_json_cursor_take(c, close) ? 0 : -1;
}
