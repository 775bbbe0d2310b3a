/* SPDX-License-Identifier: Apache-2.0 */
/* unescape.c: see unescape.h.  Written here rather than calling MHD_http_unescape so that util/
 * needs no HTTP server library; tests/test_util.c checks it against that function. */
#include "util/unescape.h"

#include <string.h>

static int hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t pfi_url_unescape(char *s)
{
    if (strstr(s, "%00"))
        return strlen(s);
    char *w = s;
    for (const char *r = s; *r;) {
        int hi, lo;
        if (r[0] == '%' && (hi = hex(r[1])) >= 0 && (lo = hex(r[2])) >= 0) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}
