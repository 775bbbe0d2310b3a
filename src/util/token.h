/* SPDX-License-Identifier: Apache-2.0 */
/* token.h: loading and checking the bearer token of the daemons' HTTP APIs (one set of rules
 * for the node daemon, the cluster controller and their clients). */
#ifndef PFI_UTIL_TOKEN_H
#define PFI_UTIL_TOKEN_H

#include <stddef.h>

#include "core/err.h"

#define PFI_TOKEN_MAX 256
/* Loads a bearer token: a regular file (a symlink to one is followed when the link belongs to
 * root or to this user), owned by root or by this user, not accessible by group or others
 * (chmod 600); its first line, 16 to PFI_TOKEN_MAX printable characters. */
int pfi_token_load(const char *path, char *token, size_t size, pfi_err *err);
/* 1 when the Authorization header value is "Bearer <token>" (the scheme in any case);
 * constant time in the token. */
int pfi_token_ok(const char *token, const char *authorization);

#endif
