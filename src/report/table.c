/* SPDX-License-Identifier: Apache-2.0 */
/* table.c: one table definition, three renderings (Markdown, HTML, terminal text). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

struct pfi_table {
    int ncols;
    char **headers;
    char **cells;   /* row-major, nrows * ncols */
    int nrows, cap_rows;
    int pending;    /* cells of the row being built with pfi_table_cell */
};

pfi_table *pfi_table_new(int ncols, const char *const *headers)
{
    pfi_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ncols = ncols;
    t->headers = calloc((size_t)ncols, sizeof *t->headers);
    if (!t->headers) {
        free(t);
        return NULL;
    }
    for (int i = 0; i < ncols; i++)
        t->headers[i] = strdup(headers[i] ? headers[i] : "");
    return t;
}

static int grow(pfi_table *t)
{
    if (t->nrows < t->cap_rows)
        return PFI_OK;
    int cap = t->cap_rows ? t->cap_rows * 2 : 16;
    char **c = realloc(t->cells, (size_t)cap * (size_t)t->ncols * sizeof *c);
    if (!c)
        return PFI_ENOMEM;
    t->cells = c;
    t->cap_rows = cap;
    return PFI_OK;
}

int pfi_table_row(pfi_table *t, const char *const *cells)
{
    if (t->pending)
        return PFI_ESTATE;
    if (grow(t) != PFI_OK)
        return PFI_ENOMEM;
    for (int i = 0; i < t->ncols; i++)
        t->cells[t->nrows * t->ncols + i] = strdup(cells[i] ? cells[i] : "");
    t->nrows++;
    return PFI_OK;
}

int pfi_table_cell(pfi_table *t, const char *fmt, ...)
{
    if (t->pending == 0 && grow(t) != PFI_OK)
        return PFI_ENOMEM;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    t->cells[t->nrows * t->ncols + t->pending] = strdup(buf);
    if (++t->pending == t->ncols) {
        t->pending = 0;
        t->nrows++;
    }
    return PFI_OK;
}

static const char *cell(const pfi_table *t, int r, int c)
{
    return t->cells[r * t->ncols + c];
}

void pfi_table_markdown(const pfi_table *t, FILE *f)
{
    fputc('|', f);
    for (int c = 0; c < t->ncols; c++)
        fprintf(f, " %s |", t->headers[c]);
    fputs("\n|", f);
    for (int c = 0; c < t->ncols; c++)
        fputs(c == 0 ? "---|" : "---:|", f);
    fputc('\n', f);
    for (int r = 0; r < t->nrows; r++) {
        fputc('|', f);
        for (int c = 0; c < t->ncols; c++)
            fprintf(f, " %s |", cell(t, r, c));
        fputc('\n', f);
    }
}

static void html_escape(const char *s, FILE *f)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

void pfi_table_html(const pfi_table *t, FILE *f)
{
    fputs("<table>\n<thead><tr>", f);
    for (int c = 0; c < t->ncols; c++) {
        fputs("<th>", f);
        html_escape(t->headers[c], f);
        fputs("</th>", f);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
    for (int r = 0; r < t->nrows; r++) {
        fputs("<tr>", f);
        for (int c = 0; c < t->ncols; c++) {
            fputs(c == 0 ? "<td>" : "<td class=\"num\">", f);
            html_escape(cell(t, r, c), f);
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody>\n</table>\n", f);
}

void pfi_table_text(const pfi_table *t, FILE *f)
{
    int w[64] = {0};
    int nc = t->ncols < 64 ? t->ncols : 64;
    for (int c = 0; c < nc; c++) {
        w[c] = (int)strlen(t->headers[c]);
        for (int r = 0; r < t->nrows; r++) {
            int l = (int)strlen(cell(t, r, c));
            if (l > w[c])
                w[c] = l;
        }
    }
    for (int c = 0; c < nc; c++)
        fprintf(f, c == 0 ? "%-*s" : "  %*s", w[c], t->headers[c]);
    fputc('\n', f);
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < nc; c++)
            fprintf(f, c == 0 ? "%-*s" : "  %*s", w[c], cell(t, r, c));
        fputc('\n', f);
    }
}

void pfi_table_free(pfi_table *t)
{
    if (!t)
        return;
    for (int c = 0; c < t->ncols; c++)
        free(t->headers[c]);
    int ncells = t->nrows * t->ncols + t->pending;
    for (int i = 0; i < ncells; i++)
        free(t->cells[i]);
    free(t->headers);
    free(t->cells);
    free(t);
}

const char *pfi_fmt_fixed(char *buf, size_t n, double v, int sig)
{
    if (!isfinite(v)) {
        snprintf(buf, n, "-");
        return buf;
    }
    int decimals = 0;
    if (v != 0) {
        int mag = (int)floor(log10(fabs(v)));
        decimals = sig - 1 - mag;
        decimals = decimals < 0 ? 0 : decimals > 9 ? 9 : decimals;
    }
    snprintf(buf, n, "%.*f", decimals, v);
    return buf;
}

const char *pfi_fmt_sep(char *buf, size_t n, double v, int decimals, int plus)
{
    if (!isfinite(v)) {
        snprintf(buf, n, "-");
        return buf;
    }
    char raw[64];
    decimals = decimals < 0 ? 0 : decimals > 9 ? 9 : decimals;
    snprintf(raw, sizeof raw, "%.*f", decimals, fabs(v));
    const char *dot = strchr(raw, '.');
    size_t nint = dot ? (size_t)(dot - raw) : strlen(raw);
    char out[96];
    size_t o = 0;
    /* the sign of the rounded value: -0.04 at one decimal is "0.0", not "-0.0" */
    int zero = strspn(raw, "0.") == strlen(raw);
    if (v < 0 && !zero)
        out[o++] = '-';
    else if (plus)
        out[o++] = '+';
    for (size_t i = 0; i < nint; i++) {
        if (i > 0 && (nint - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = raw[i];
    }
    snprintf(out + o, sizeof out - o, "%s", dot ? dot : "");
    snprintf(buf, n, "%s", out);
    return buf;
}
