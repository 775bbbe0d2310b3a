/* SPDX-License-Identifier: Apache-2.0 */
/* json.h: the small JSON conventions every layer shares, over jansson.  JSON has no NaN or
 * infinity, and pfi uses NaN for "not known": a number that is not finite is written as null,
 * and a member that is absent or not a number reads as NaN, so unknowns survive a round trip. */
#ifndef PFI_UTIL_JSON_H
#define PFI_UTIL_JSON_H

#include <jansson.h>

/* v as a JSON real when finite, else null (a new reference). */
json_t *pfi_json_num(double v);

/* s as a JSON string when not empty, else null: pfi's fixed-size text fields hold "" for none. */
json_t *pfi_json_str(const char *s);

/* s as a JSON string, whatever its bytes: jansson refuses a string that is not UTF-8, so a
 * message echoing a request's bytes ("limit: ... got '1\xff'") would become no answer at all;
 * then every byte above 0x7f is written as '?'.  NULL only when out of memory. */
json_t *pfi_json_text(const char *s);

/* The error document of both HTTP APIs, with an "error" member added to into (NULL: a new
 * object; taken, so other fields can stand beside it, as an infeasible grid event's
 * achievable_w): {"error": MESSAGE} when code is NULL (the cluster controller's), else
 * {"error": {"code": CODE, "message": MESSAGE}} (the node daemon's).  The message may echo a
 * request's bytes: it is written by pfi_json_text.  NULL only when out of memory. */
json_t *pfi_json_error(json_t *into, const char *code, const char *msg);

/* json_loadb that refuses a NUL byte anywhere in s[0..n) (RFC 8259 allows none outside a
 * string's escapes): jansson's lexer skips one after a number or a literal, so "[1\0,2]" read
 * as [1, 2], and the node daemon applied bodies the cluster controller refused.  NULL with je's
 * text and position set as jansson's own errors are. */
json_t *pfi_json_loadb(const char *s, size_t n, size_t flags, json_error_t *je);

/* The value of v when it is a number (integer or real), else NAN (v may be NULL). */
double pfi_json_num_or_nan(const json_t *v);

#endif
