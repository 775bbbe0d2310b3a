/* SPDX-License-Identifier: Apache-2.0 */
/* json_fast.h: a JSON value of the plain kind decoded without jansson's lexer, several times
 * faster, into the very values jansson's json_loadb (JSON_DECODE_ANY) would give: objects
 * (a repeated key keeps the last value, as jansson does), arrays, integers (strtoll), reals
 * (strtod), true, false, null, and strings of printable ASCII without escapes.  Anything else
 * (an escape, a byte outside printable ASCII in a string, a number jansson would refuse or
 * overflow, deep nesting, bad JSON) is not decoded here: NULL, and the caller asks jansson,
 * which then decodes it or says what is wrong. */
#ifndef PFI_UTIL_JSON_FAST_H
#define PFI_UTIL_JSON_FAST_H

#include <stddef.h>

#include <jansson.h>

/* The value in s[0..n) (white space around it allowed), a new reference; NULL: ask jansson. */
json_t *pfi_json_fast_loadb(const char *s, size_t n);

#endif
