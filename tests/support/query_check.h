/* SPDX-License-Identifier: Apache-2.0 */
/* query_check.h: the query arguments both HTTP servers refuse (util/http_query.h), asked over
 * loopback by their tests (tests/test_serve_http.c, tests/test_cluster_http.c) the way a
 * script or an operator's curl asks: a misspelt or repeated parameter, or a value that is no
 * number in range, is a 400 that names it, never an answer that silently ignored it.  Built
 * with the tests, never into libpfi.a. */
#ifndef PFI_TESTS_SUPPORT_QUERY_CHECK_H
#define PFI_TESTS_SUPPORT_QUERY_CHECK_H

/* One request to http://127.0.0.1:port + path through pfi's HTTP client, bearer token given
 * (NULL: none), json the body (NULL: none).  The status (-1: no answer); the body in *reply
 * (malloc'd, NULL when none) when reply is non-NULL. */
long pfi_test_ask(int port, const char *method, const char *path, const char *token,
                  const char *json, char **reply);

/* method path?ARGS for each set of arguments a route must refuse, the route taking the
 * whole-number parameter takes, whose range holds 5 (NULL: a route that takes none): a name
 * it does not take (misspelt, in capitals, unknown, before or after a good one, none), the
 * parameter twice (same value and not), with an empty value, with no '=', and values that are
 * no number in range (-1, abc, nan, 1e3, 5.0, 20 digits, a space, a %00).  Each is wanted 400
 * with the name of the argument at fault in the body.  Returns how many were answered
 * otherwise, each said on stderr (0: all refused). */
int pfi_test_query_refused(int port, const char *method, const char *path, const char *takes,
                           const char *token, const char *json);

#endif
