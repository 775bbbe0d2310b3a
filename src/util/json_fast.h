/* SPDX-License-Identifier: Apache-2.0 */
/* json_fast.h: a JSON value of the plain kind decoded without jansson's lexer, several times
 * faster, into the very values jansson's json_loadb (JSON_DECODE_ANY) would give: objects,
 * arrays, integers (strtoll), reals (strtod), true, false, null, and strings of printable ASCII
 * without escapes.  Anything else (an object that repeats a key, which jansson keeps or refuses
 * as its caller's flags say, an escape, a byte outside printable ASCII in a string, a number
 * jansson would refuse or overflow, deep nesting, bad JSON) is not decoded here: NULL, and
 * the caller asks jansson, which then decodes it or says what is wrong. */
#ifndef PFI_UTIL_JSON_FAST_H
#define PFI_UTIL_JSON_FAST_H

#include <stddef.h>

#include <jansson.h>

/* The value in s[0..n) (white space around it allowed), a new reference; NULL: ask jansson. */
json_t *pfi_json_fast_loadb(const char *s, size_t n);

/* The same reading one token at a time, for a decoder of a known shape that hands whatever is
 * not plain to the above (then jansson): white space is skipped before each token. */
typedef struct pfi_json_cursor {
    const char *p, *end;
} pfi_json_cursor;
/* A cursor at the start of s[0..n); -1 where the locale spells the decimal point otherwise
 * (jansson reads reals in its spelling). */
int pfi_json_cursor_init(pfi_json_cursor *c, const char *s, size_t n);
/* The next byte (not consumed), -1 at the end. */
int pfi_json_cursor_peek(pfi_json_cursor *c);
/* 1 and past it when the next byte is ch, else 0. */
int pfi_json_cursor_take(pfi_json_cursor *c, int ch);
/* A string of printable ASCII without escapes: its bytes at *s, *n long (inside the text);
 * -1 for anything else. */
int pfi_json_cursor_string(pfi_json_cursor *c, const char **s, size_t *n);
/* A number, as json_number_value gives it of jansson's decoding (an integer converted to
 * double); -1 for anything else (not a number, malformed, out of range, not ended by a
 * separator or white space). */
int pfi_json_cursor_number(pfi_json_cursor *c, double *v);
/* The same, and whether jansson would hold it as an integer (no fraction, no exponent). */
int pfi_json_cursor_number_kind(pfi_json_cursor *c, double *v, int *integer);
/* Past the next value, whatever it is (nested at most depth deep); -1 for anything the above
 * would not read (then jansson decides). */
int pfi_json_cursor_skip(pfi_json_cursor *c, int depth);

#endif
