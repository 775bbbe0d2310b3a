/* SPDX-License-Identifier: Apache-2.0 */
/* unescape.h: the %-decoding of a request's path and arguments, one rule for both HTTP servers
 * (the node daemon's serve/http.c and the controller's cluster/api.c, each registering it as
 * libmicrohttpd's MHD_OPTION_UNESCAPE_CALLBACK). */
#ifndef PFI_UTIL_UNESCAPE_H
#define PFI_UTIL_UNESCAPE_H

#include <stddef.h>

/* Decodes s in place and returns its new length: each "%" followed by two hex digits becomes
 * that byte, anything else (a "%" without two hex digits after it, a "+") stays as it is, as
 * libmicrohttpd's MHD_http_unescape does.  A string with "%00" is left whole: decoded, the NUL
 * would cut it short ("/v1/budget%00" read as "/v1/budget", "/metrics%00.txt" as "/metrics"),
 * so such a path or argument is kept as sent, and matches no route and no number. */
size_t pfi_url_unescape(char *s);

#endif
