/* SPDX-License-Identifier: Apache-2.0 */
/* prom.h: writing the Prometheus text exposition format (version 0.0.4): a growing buffer, the
 * HELP and TYPE lines of a metric, and label values escaped as the format requires.  serve/ and
 * cluster/ build their /metrics with it, so both escape the same way. */
#ifndef PFI_UTIL_PROM_H
#define PFI_UTIL_PROM_H

#include <stddef.h>

typedef struct pfi_prom {
    char *p;      /* NUL-terminated text so far; the caller frees it (pfi_prom_take) */
    size_t len, cap;
    int oom;      /* memory ran out: every later write is dropped and pfi_prom_take fails */
} pfi_prom;

void pfi_prom_init(pfi_prom *b);
/* Appends printf-style text. */
void pfi_prom_put(pfi_prom *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "# HELP name help" and "# TYPE name type" (type: gauge, counter). */
void pfi_prom_head(pfi_prom *b, const char *name, const char *type, const char *help);
/* A label value with backslash, double quote and newline escaped, cut at size - 1 bytes
 * without splitting an escape. */
void pfi_prom_escape(const char *in, char *out, size_t size);

/* A histogram (Prometheus type "histogram") of one quantity, e.g. how long each cap change
 * took: an alert on it can ask how many of the recent events were slow, which a gauge of the
 * last one cannot answer (one slow event would hold it up until the next).  le: the buckets'
 * upper bounds, ascending and finite (+Inf is implied), kept by the caller. */
#define PFI_PROM_HIST_MAX 16
typedef struct pfi_prom_hist {
    const double *le;
    int nb;
    unsigned long long in[PFI_PROM_HIST_MAX]; /* observations in (le[i - 1], le[i]] */
    unsigned long long count;                 /* every observation, the +Inf bucket's too */
    double sum;
} pfi_prom_hist;

/* Empty; nb is clamped to [0, PFI_PROM_HIST_MAX]. */
void pfi_prom_hist_init(pfi_prom_hist *h, const double *le, int nb);
/* Counts v; a NaN is not an observation and is dropped. */
void pfi_prom_hist_observe(pfi_prom_hist *h, double v);
/* HELP, TYPE, the cumulative name_bucket{le="..."} series, name_sum and name_count. */
void pfi_prom_hist_put(pfi_prom *b, const char *name, const char *help, const pfi_prom_hist *h);

/* The text (caller frees) and its length, or NULL when memory ran out (then nothing to free). */
char *pfi_prom_take(pfi_prom *b, size_t *len);

#endif
