/* SPDX-License-Identifier: Apache-2.0 */
#include "util/prom.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void pfi_prom_init(pfi_prom *b)
{
    b->cap = 16384;
    b->len = 0;
    b->p = malloc(b->cap);
    b->oom = !b->p;
    if (b->p)
        b->p[0] = '\0';
}

void pfi_prom_put(pfi_prom *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)k < b->cap - b->len) {
            b->len += (size_t)k;
            return;
        }
        size_t nc = b->cap * 2 + (size_t)k;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
}

void pfi_prom_head(pfi_prom *b, const char *name, const char *type, const char *help)
{
    pfi_prom_put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void pfi_prom_escape(const char *in, char *out, size_t size)
{
    size_t o = 0;
    for (; *in && o + 3 < size; in++) {
        if (*in == '\\' || *in == '"') {
            out[o++] = '\\';
            out[o++] = *in;
        } else if (*in == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else {
            out[o++] = *in;
        }
    }
    out[o] = '\0';
}

void pfi_prom_hist_init(pfi_prom_hist *h, const double *le, int nb)
{
    h->le = le;
    h->nb = nb < 0 ? 0 : nb > PFI_PROM_HIST_MAX ? PFI_PROM_HIST_MAX : nb;
    for (int i = 0; i < PFI_PROM_HIST_MAX; i++)
        h->in[i] = 0;
    h->count = 0;
    h->sum = 0;
}

void pfi_prom_hist_observe(pfi_prom_hist *h, double v)
{
    if (isnan(v))
        return;
    int i = 0;
    while (i < h->nb && !(v <= h->le[i]))
        i++;
    if (i < h->nb)
        h->in[i]++;
    h->count++;
    h->sum += v;
}

void pfi_prom_hist_put(pfi_prom *b, const char *name, const char *help, const pfi_prom_hist *h)
{
    pfi_prom_head(b, name, "histogram", help);
    unsigned long long below = 0;
    for (int i = 0; i < h->nb; i++) {
        below += h->in[i];
        /* the shortest of 15 or 17 digits that reads back as the bound: le="0.1", not
         * le="0.10000000000000001", so that a rule can name the bucket */
        char le[32];
        snprintf(le, sizeof le, "%.15g", h->le[i]);
        if (strtod(le, NULL) != h->le[i])
            snprintf(le, sizeof le, "%.17g", h->le[i]);
        pfi_prom_put(b, "%s_bucket{le=\"%s\"} %llu\n", name, le, below);
    }
    pfi_prom_put(b, "%s_bucket{le=\"+Inf\"} %llu\n", name, h->count);
    pfi_prom_put(b, "%s_sum %.17g\n", name, h->sum);
    pfi_prom_put(b, "%s_count %llu\n", name, h->count);
}

char *pfi_prom_take(pfi_prom *b, size_t *len)
{
    if (b->oom) {
        free(b->p);
        b->p = NULL;
        return NULL;
    }
    if (len)
        *len = b->len;
    char *p = b->p;
    b->p = NULL;
    return p;
}
