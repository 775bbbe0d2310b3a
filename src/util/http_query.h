/* SPDX-License-Identifier: Apache-2.0 */
/* http_query.h: a request's query arguments checked against the parameters its route takes,
 * for both HTTP servers (serve/http.c with serve/api.c, cluster/api.c), which feed it the
 * arguments as libmicrohttpd lists them.  libmicrohttpd keeps every argument and a lookup
 * returns one of them: a misspelt name (GET /v1/history?sinse=10) was never looked up, and the
 * whole hour came back with 200; of since=10&since=20 one silently won.  Here a parameter the
 * route does not take, one given twice, and a value that is empty or not a whole number in the
 * route's range are each refused, the message naming the parameter, before the route reads or
 * changes anything. */
#ifndef PFI_UTIL_HTTP_QUERY_H
#define PFI_UTIL_HTTP_QUERY_H

#include "core/err.h"

/* Arguments kept; a route takes at most two, so a request with more has one it does not take
 * (or one twice) among those kept. */
#define PFI_HTTP_QUERY_MAX 8

/* A request's query arguments, in the order sent; zero it before the first.  The strings are
 * the caller's (libmicrohttpd's, for the request's lifetime): only pointers are kept. */
typedef struct pfi_http_query {
    int n;                                 /* arguments kept */
    int dropped;                           /* arguments past PFI_HTTP_QUERY_MAX */
    const char *name[PFI_HTTP_QUERY_MAX];  /* as unescaped */
    const char *value[PFI_HTTP_QUERY_MAX]; /* NULL: the name came without '=' ("?since") */
} pfi_http_query;

/* Notes one argument (MHD_GET_ARGUMENT_KIND's name and value).  A NULL name is skipped, and
 * so is an empty one with no value: what a stray '&' leaves. */
void pfi_http_query_note(pfi_http_query *q, const char *name, const char *value);

/* One parameter a route takes: a decimal whole number in [lo, hi] (util/num.h's reading). */
typedef struct pfi_http_param {
    const char *name;
    long long lo, hi;
    long long *out; /* the value, written only when the parameter is given and valid */
} pfi_http_param;

/* Checks q (NULL: no query) against the n parameters takes[0..n) a route takes.  PFI_OK with
 * each parameter given in its *out; otherwise PFI_EINVAL and e names the first argument that
 * is wrong: one the route does not take ("unknown query parameter 'sinse' (this path takes:
 * since)"), one given twice, or a value that is missing, empty or not a number in range
 * (pfi_num_ll's message: "since: expected an integer from 0 to ..., got 'x'").  Nothing is
 * written to any *out when it fails. */
int pfi_http_query_take(const pfi_http_query *q, const pfi_http_param *takes, int n,
                        pfi_err *e);

/* 1 when method is one of allow's, a 405's Allow list ("GET, HEAD, POST"); 0 otherwise or when
 * either is NULL. */
int pfi_http_allows(const char *allow, const char *method);

#endif
