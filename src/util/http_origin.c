/* SPDX-License-Identifier: Apache-2.0 */
/* http_origin.c: see http_origin.h. */
#include "util/http_origin.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

void pfi_http_origin_note(pfi_http_origin *o, const char *name, const char *value)
{
    if (!name || !value)
        return;
    if (!strcasecmp(name, "Origin")) {
        o->origin = value;
        o->n_origin++;
    } else if (!strcasecmp(name, "Host")) {
        o->host = value;
        o->n_host++;
    } else if (!strcasecmp(name, "Sec-Fetch-Site")) {
        o->fetch_site = value;
        o->n_fetch_site++;
    }
}

/* The length of host[:port] without the scheme's default port (":80" for http, ":443" for
 * https), which a browser leaves out of Origin and a client may write in Host. */
static size_t authority_len(const char *a, size_t n, int https)
{
    const char *dflt = https ? ":443" : ":80";
    size_t dl = strlen(dflt);
    if (n > dl && !strncmp(a + n - dl, dflt, dl) && a[n - dl - 1] != ':')
        return n - dl;
    return n;
}

/* Whether Origin ("scheme://host[:port]") names the host and port of Host ("host[:port]"). */
static int same_origin(const char *origin, const char *host)
{
    int https;
    if (!strncasecmp(origin, "http://", 7))
        https = 0;
    else if (!strncasecmp(origin, "https://", 8))
        https = 1;
    else
        return 0; /* "null", a file: page, another scheme */
    const char *a = origin + (https ? 8 : 7);
    size_t an = strlen(a), hn = strlen(host);
    if (an == 0 || strchr(a, '/'))
        return 0;
    an = authority_len(a, an, https);
    hn = authority_len(host, hn, https);
    return an == hn && !strncasecmp(a, host, an);
}

int pfi_http_origin_cross(const pfi_http_origin *o, const char *method, const char **why)
{
    *why = NULL;
    if (method && (!strcmp(method, "GET") || !strcmp(method, "HEAD") || !strcmp(method, "OPTIONS")))
        return 0;
    int cross = 0;
    if (o->n_fetch_site)
        cross = o->n_fetch_site > 1 || (strcasecmp(o->fetch_site, "same-origin") &&
                                        strcasecmp(o->fetch_site, "none"));
    else if (o->n_origin)
        cross = o->n_origin > 1 || o->n_host != 1 || !same_origin(o->origin, o->host);
    if (cross)
        *why = "a change sent by a web page of another origin (its Sec-Fetch-Site or Origin "
               "header says so) is refused: send changes with pfi ctl, curl or the controller, "
               "not from a page in a browser";
    return cross;
}
