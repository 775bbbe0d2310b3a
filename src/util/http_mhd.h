/* SPDX-License-Identifier: Apache-2.0 */
/* http_mhd.h: what both daemons' libmicrohttpd servers read off a request the same way (the
 * node's serve/http.c, the controller's cluster/mhd.c): its headers screened before its body
 * is read, and its query arguments in order. */
#ifndef PFI_UTIL_HTTP_MHD_H
#define PFI_UTIL_HTTP_MHD_H

#include <microhttpd.h>

#include "util/http_query.h"

/* 0 when the request says its body's length at most one way, in a way pfi reads, and is no
 * change sent by a web page of another origin; else the status to answer at once, before the
 * body is read (400/501: util/http_frame.h; 403: util/http_origin.h), with *why. */
int pfi_mhd_screen(struct MHD_Connection *con, const char *method, const char **why);
/* Every query argument of the request, in order, into *q (zeroed by the caller). */
void pfi_mhd_query(struct MHD_Connection *con, pfi_http_query *q);

#endif
