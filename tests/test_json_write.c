/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of util/json_write.c: whatever is written, the bytes are those jansson's json_dumps
 * gives for the same values with the same indent and real precision (random documents of every
 * kind of value, reals of every magnitude and spelling, strings with escapes and UTF-8, written
 * at a depth inside an enclosing document), and what jansson would not write fails. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "core/pfi.h"
#include "util/json_write.h"

static unsigned long long rng = 88172645463325252ULL;

static uint64_t next(void)
{
    return pfi_rand_next(&rng);
}

/* A double of every kind: any bit pattern, integers, decimals as people write them, tiny and
 * huge magnitudes, both zeros, values at the %g switch-over points. */
static double any_real(void)
{
    static const double edge[] = {0.0,    -0.0,    1e12,  1e12 - 1, -1e12,  999999999999.5,
                                  1e-4,   9.99e-5, 1e-5,  1e17,     1e18,   123456789012345678.0,
                                  0.1,    1e308,   5e-324, 2.5e-308, 1e21,  -1e22,
                                  700,    0.5,     1.0 / 3, 4503599627370496.5, 9007199254740993.0};
    uint64_t r = next();
    switch (r % 6) {
    case 0: {
        double v;
        uint64_t bits = next();
        memcpy(&v, &bits, sizeof v);
        return isfinite(v) ? v : 1.5;
    }
    case 1:
        return (double)(int64_t)(next() >> (next() % 64)) * ((r >> 8) & 1 ? -1 : 1);
    case 2:
        return (double)(next() % 10000000) / pow(10, (double)(next() % 8));
    case 3:
        return ldexp((double)(next() % 1000000 + 1), (int)(next() % 200) - 100);
    case 4:
        return edge[next() % (sizeof edge / sizeof edge[0])];
    default:
        return (double)(next() % 2000) * 0.5 - 500;
    }
}

/* A UTF-8 string with plain text, every escape, control characters, 0x7f, '/', and 2-4 byte
 * characters. */
static void any_string(char *s, size_t cap)
{
    static const char *piece[] = {"job-", "a", "\"", "\\", "\b", "\f", "\n", "\r", "\t", "\x01",
                                  "\x1f", "\x7f", "/", "\xc3\xa9", "\xe2\x82\xac",
                                  "\xf0\x9f\x98\x80", " ", "{}[]:,", "\xed\x9f\xbf"};
    size_t n = 0;
    int k = (int)(next() % 8);
    s[0] = '\0';
    for (int i = 0; i < k; i++) {
        const char *p = piece[next() % (sizeof piece / sizeof piece[0])];
        size_t m = strlen(p);
        if (n + m + 1 >= cap)
            break;
        memcpy(s + n, p, m + 1);
        n += m;
    }
}

/* A random value written both ways: into w and as a json_t. */
static json_t *gen(pfi_jw *w, int depth)
{
    int kind = (int)(next() % (depth > 4 ? 6 : 9));
    char s[128];
    switch (kind) {
    case 0:
        pfi_jw_null(w);
        return json_null();
    case 1: {
        int b = (int)(next() & 1);
        pfi_jw_bool(w, b);
        return json_boolean(b);
    }
    case 2: {
        long long v = (long long)next() >> (next() % 64);
        pfi_jw_integer(w, v);
        return json_integer(v);
    }
    case 3:
    case 4: {
        double v = any_real();
        pfi_jw_real(w, v);
        return json_real(v);
    }
    case 5:
        any_string(s, sizeof s);
        pfi_jw_string(w, s);
        return json_string(s);
    case 6:
    case 7: {
        json_t *o = json_object();
        pfi_jw_object(w);
        int n = (int)(next() % 5);
        for (int i = 0; i < n; i++) {
            char k[160];
            any_string(s, sizeof s);
            snprintf(k, sizeof k, "%d%s", i, s); /* distinct keys, in the order written */
            pfi_jw_key(w, k);
            json_object_set_new(o, k, gen(w, depth + 1));
        }
        pfi_jw_end(w);
        return o;
    }
    default: {
        json_t *a = json_array();
        pfi_jw_array(w);
        int n = (int)(next() % 5);
        for (int i = 0; i < n; i++)
            json_array_append_new(a, gen(w, depth + 1));
        pfi_jw_end(w);
        return a;
    }
    }
}

/* What json_dumps gives for v as the value of a member `depth` levels down in a document:
 * its own dump with every line after the first indented by depth x indent more. */
static char *dumps_at(json_t *v, size_t flags, int indent, int depth)
{
    char *s = json_dumps(v, flags | JSON_ENCODE_ANY);
    assert_non_null(s);
    size_t cap = strlen(s) * (size_t)(1 + depth * indent) + 1, n = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    for (const char *p = s; *p; p++) {
        out[n++] = *p;
        if (*p == '\n')
            for (int i = 0; i < depth * indent; i++)
                out[n++] = ' ';
    }
    out[n] = '\0';
    free(s);
    return out;
}

static void same(pfi_jw *w, json_t *v, size_t flags, int indent, int depth)
{
    char *want = dumps_at(v, flags, indent, depth);
    assert_false(w->failed);
    if (w->len != strlen(want) || memcmp(w->buf, want, w->len) != 0)
        fail_msg("written:\n%.*s\njansson:\n%s", (int)w->len, w->buf, want);
    free(want);
}

static void test_random_documents(void **state)
{
    (void)state;
    static const int indents[] = {1, 2, 4}, precisions[] = {12, 17, 0, 6, 15};
    pfi_jw w;
    for (int t = 0; t < 20000; t++) {
        int indent = indents[t % 3], prec = precisions[(t / 3) % 5], depth = (int)(t % 4);
        pfi_jw_init(&w, indent, prec);
        pfi_jw_reset(&w, depth);
        json_t *v = gen(&w, 0);
        same(&w, v, JSON_INDENT(indent) | JSON_REAL_PRECISION(prec), indent, depth);
        json_decref(v);
        pfi_jw_free(&w);
    }
}

/* Each real alone, in the precisions pfi prints with, against jansson. */
static void test_reals(void **state)
{
    (void)state;
    pfi_jw w;
    pfi_jw_init(&w, 2, 12);
    for (int t = 0; t < 300000; t++) {
        double v = any_real();
        int prec = t % 3 == 0 ? 17 : 12;
        w.precision = prec;
        pfi_jw_reset(&w, 0);
        pfi_jw_real(&w, v);
        json_t *j = json_real(v);
        same(&w, j, JSON_REAL_PRECISION(prec), 2, 0);
        json_decref(j);
    }
    pfi_jw_free(&w);
}

/* What jansson cannot write fails: reals that are not finite (json_real is NULL) and strings
 * that are not UTF-8 (json_string is NULL); pfi_jw_num writes null for the former. */
static void test_refused(void **state)
{
    (void)state;
    static const char *bad[] = {"\x80",         "a\xc0\x80",    "\xc1\xbf",     "\xe0\x9f\xbf",
                                "\xed\xa0\x80", "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80",
                                "\xf5\x80\x80\x80", "\xc3",    "\xe2\x82",     "x\xff"};
    pfi_jw w;
    pfi_jw_init(&w, 2, 12);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(json_string(bad[i]));
        pfi_jw_reset(&w, 0);
        pfi_jw_string(&w, bad[i]);
        assert_true(w.failed);
        pfi_jw_reset(&w, 0);
        pfi_jw_object(&w);
        pfi_jw_key(&w, bad[i]);
        assert_true(w.failed);
    }
    const double nonfinite[] = {NAN, INFINITY, -INFINITY};
    for (int i = 0; i < 3; i++) {
        assert_null(json_real(nonfinite[i]));
        pfi_jw_reset(&w, 0);
        pfi_jw_real(&w, nonfinite[i]);
        assert_true(w.failed);
        pfi_jw_reset(&w, 0);
        pfi_jw_num(&w, nonfinite[i]);
        assert_false(w.failed);
        assert_int_equal(w.len, 4);
        assert_memory_equal(w.buf, "null", 4);
    }
    /* a key outside an object, or an end with nothing open */
    pfi_jw_reset(&w, 0);
    pfi_jw_array(&w);
    pfi_jw_key(&w, "k");
    assert_true(w.failed);
    pfi_jw_reset(&w, 0);
    pfi_jw_end(&w);
    assert_true(w.failed);
    pfi_jw_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_documents),
        cmocka_unit_test(test_reals),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
