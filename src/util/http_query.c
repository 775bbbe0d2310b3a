/* SPDX-License-Identifier: Apache-2.0 */
/* http_query.c: see http_query.h. */
#include "util/http_query.h"

#include <stdio.h>
#include <string.h>

#include "util/num.h"

void pfi_http_query_note(pfi_http_query *q, const char *name, const char *value)
{
    /* A stray '&' ("?&since=5", "?since=5&&limit=2") names nothing that could be misspelt. */
    if (!name || (!*name && !value))
        return;
    if (q->n == PFI_HTTP_QUERY_MAX) {
        q->dropped++;
        return;
    }
    q->name[q->n] = name;
    q->value[q->n] = value;
    q->n++;
}

/* "since, limit", or "none" for a route that takes no parameter. */
static void names(const pfi_http_param *takes, int n, char *out, size_t size)
{
    size_t at = 0;
    snprintf(out, size, "none");
    for (int i = 0; i < n && at < size; i++)
        at += (size_t)snprintf(out + at, size - at, "%s%s", i ? ", " : "", takes[i].name);
}

int pfi_http_query_take(const pfi_http_query *q, const pfi_http_param *takes, int n,
                        pfi_err *e)
{
    if (!q)
        return PFI_OK;
    long long v[PFI_HTTP_QUERY_MAX];
    int given[PFI_HTTP_QUERY_MAX] = {0}; /* per takes[i]: seen yet */
    if (n > PFI_HTTP_QUERY_MAX)
        return pfi_err_set(e, PFI_EINTERNAL, "a route takes more query parameters than kept");
    char list[160];
    for (int a = 0; a < q->n; a++) {
        if (!q->name[a][0]) /* "=5": a value whose name is missing */
            return pfi_err_set(e, PFI_EINVAL, "query argument '=%.40s' has no name",
                               q->value[a]);
        int i = 0;
        while (i < n && strcmp(q->name[a], takes[i].name))
            i++;
        if (i == n) {
            names(takes, n, list, sizeof list);
            /* %.64s: the name is the client's and may be long (or not UTF-8: the servers'
             * error bodies take that) */
            return pfi_err_set(e, PFI_EINVAL,
                               "unknown query parameter '%.64s' (this path takes: %s)",
                               q->name[a], list);
        }
        if (given[i])
            return pfi_err_set(e, PFI_EINVAL,
                               "query parameter '%s' given more than once: give it once",
                               takes[i].name);
        given[i] = 1;
        /* NULL ("?since" with no '=') and "" are refused with the rest: no default is
         * guessed for a parameter that was named. */
        int rc = pfi_num_ll(q->value[a], takes[i].lo, takes[i].hi, takes[i].name, &v[i], e);
        if (rc != PFI_OK)
            return rc;
    }
    /* Unreachable while PFI_HTTP_QUERY_MAX exceeds what a route takes (one of those kept was
     * refused above); said anyway, so that no argument is ever ignored. */
    if (q->dropped)
        return pfi_err_set(e, PFI_EINVAL, "more than %d query parameters", PFI_HTTP_QUERY_MAX);
    for (int i = 0; i < n; i++)
        if (given[i] && takes[i].out)
            *takes[i].out = v[i];
    return PFI_OK;
}

int pfi_http_allows(const char *allow, const char *method)
{
    if (!allow || !method || !*method)
        return 0;
    size_t ml = strlen(method);
    for (const char *p = allow; *p;) {
        p += strspn(p, ", ");
        size_t l = strcspn(p, ", ");
        if (l == ml && !strncmp(p, method, l))
            return 1;
        p += l;
    }
    return 0;
}
