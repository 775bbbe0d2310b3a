/* SPDX-License-Identifier: Apache-2.0 */
#include "util/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int pfi_units_hex(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '-' || *s == '+')
        s++;
    return s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

int pfi_parse_decimal(const char *s, double *v, const char **rest)
{
    if (pfi_units_hex(s))
        return -1;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || end == s || !isfinite(x) || (!rest && *end))
        return -1;
    *v = x;
    if (rest)
        *rest = end;
    return 0;
}

int pfi_parse_slowdown(const char *s, double *slowdown, pfi_err *err)
{
    double v;
    const char *end;
    if (!s || pfi_parse_decimal(s, &v, &end) != 0 || (*end && strcmp(end, "%") != 0))
        return pfi_err_set(err, PFI_EINVAL, "slowdown '%s': expected e.g. 0.1 or 10%%",
                           s ? s : "");
    if (*end == '%')
        v /= 100;
    if (signbit(v) || v >= 1) /* "-0" too: a slowdown has no sign (the SPANK plugin's rule) */
        return pfi_err_set(err, PFI_EINVAL,
                           "slowdown '%s': expected a max slowdown in [0, 1) (0.1 or 10%% = at "
                           "most 10%% slower)",
                           s);
    *slowdown = v;
    return PFI_OK;
}

int pfi_parse_duration(const char *s, double *seconds, pfi_err *err)
{
    double v;
    const char *u;
    if (!s || pfi_parse_decimal(s, &v, &u) != 0 || v < 0)
        return pfi_err_set(err, PFI_EINVAL, "bad duration '%s' (expected e.g. 100ms, 2s, 5m)",
                           s ? s : "");
    double mult;
    if (*u == '\0' || strcmp(u, "s") == 0)
        mult = 1;
    else if (strcmp(u, "ms") == 0)
        mult = 1e-3;
    else if (strcmp(u, "us") == 0)
        mult = 1e-6;
    else if (strcmp(u, "m") == 0 || strcmp(u, "min") == 0)
        mult = 60;
    else if (strcmp(u, "h") == 0)
        mult = 3600;
    else
        return pfi_err_set(err, PFI_EINVAL, "bad duration unit in '%s' (use ms, s, m or h)", s);
    *seconds = v * mult;
    return PFI_OK;
}

double pfi_power_unit(const char *u)
{
    if (!*u || !strcasecmp(u, "W"))
        return 1;
    if ((u[0] == 'k' || u[0] == 'K') && !strcasecmp(u + 1, "W"))
        return 1e3;
    if (u[0] == 'M' && !strcasecmp(u + 1, "W"))
        return 1e6;
    return NAN;
}

int pfi_parse_power(const char *s, double *value, int *is_pct, pfi_err *err)
{
    double v;
    const char *u;
    if (!s || pfi_parse_decimal(s, &v, &u) != 0)
        return pfi_err_set(err, PFI_EINVAL, "bad power '%s' (expected e.g. 5600W, 5.6kW or 70%%)",
                           s ? s : "");
    if (strcmp(u, "%") == 0) {
        if (v <= 0 || v > 100)
            return pfi_err_set(err, PFI_ERANGE, "percentage %s must be in (0, 100]", s);
        *value = v / 100.0;
        *is_pct = 1;
        return PFI_OK;
    }
    double mult = pfi_power_unit(u);
    if (isnan(mult))
        return pfi_err_set(err, PFI_EINVAL, "bad power unit in '%s' (use W, kW, MW or %%)", s);
    *value = v * mult;
    if (*value <= 0)
        return pfi_err_set(err, PFI_ERANGE, "power %s must be positive", s);
    *is_pct = 0;
    return PFI_OK;
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

int pfi_parse_index_list(const char *s, int max_n, int *out, int *n, pfi_err *err)
{
    *n = 0;
    if (!s || !*s)
        return pfi_err_set(err, PFI_EINVAL, "empty GPU list");
    if (strcmp(s, "all") == 0) {
        for (int i = 0; i < max_n; i++)
            out[i] = i;
        *n = max_n;
        return PFI_OK;
    }
    /* Digits only ("+1", " 1", "0- 3", a trailing ',' were taken by strtol's leniency), and a
     * GPU named twice is refused before it is written: out holds max_n, and "0-63,5" on a
     * 64-GPU node wrote a 65th entry past it. */
    const char *p = s;
    for (;;) {
        char *end;
        if (!isdigit((unsigned char)*p))
            return pfi_err_set(err, PFI_EINVAL, "bad GPU list '%s' (expected e.g. 0-3,6)", s);
        errno = 0;
        long a = strtol(p, &end, 10), b = a;
        p = end;
        if (*p == '-') {
            if (!isdigit((unsigned char)p[1]))
                return pfi_err_set(err, PFI_EINVAL, "bad range in GPU list '%s'", s);
            b = strtol(p + 1, &end, 10);
            if (b < a)
                return pfi_err_set(err, PFI_EINVAL, "bad range in GPU list '%s'", s);
            p = end;
        }
        if (errno == ERANGE)
            return pfi_err_set(err, PFI_ERANGE, "GPU list '%s': a number too large", s);
        for (long i = a; i <= b; i++) {
            if (i >= max_n)
                return pfi_err_set(err, PFI_ERANGE, "GPU %ld does not exist (this node has %d)", i,
                                   max_n);
            for (int k = 0; k < *n; k++)
                if (out[k] == i)
                    return pfi_err_set(err, PFI_EINVAL, "GPU list '%s' names GPU %ld twice", s,
                                       i);
            out[(*n)++] = (int)i;
        }
        if (!*p)
            break;
        if (*p != ',' || !p[1])
            return pfi_err_set(err, PFI_EINVAL, "bad GPU list '%s' (expected e.g. 0-3,6)", s);
        p++;
    }
    qsort(out, (size_t)*n, sizeof *out, cmp_int);
    return PFI_OK;
}

int pfi_parse_double_list(const char *s, double *out, int max_n, int *n, pfi_err *err)
{
    *n = 0;
    if (!s || !*s)
        return pfi_err_set(err, PFI_EINVAL, "empty list");
    /* A trailing '%' on the list (or on each item) means every item is a percentage. */
    int pct_all = s[strlen(s) - 1] == '%';
    const char *p = s;
    while (*p) {
        double v;
        const char *rest;
        if (pfi_parse_decimal(p, &v, &rest) != 0)
            return pfi_err_set(err, PFI_EINVAL, "bad number in list '%s'", s);
        int pct = pct_all;
        if (*rest == '%') {
            pct = 1;
            rest++;
        }
        if (*n >= max_n)
            return pfi_err_set(err, PFI_EINVAL, "list '%s' has more than %d items", s, max_n);
        out[(*n)++] = pct ? v / 100.0 : v;
        if (*rest == ',' && rest[1]) /* "50%," was taken: a list does not end in a comma */
            rest++;
        else if (*rest)
            return pfi_err_set(err, PFI_EINVAL, "bad list '%s' (items separated by commas)", s);
        p = rest;
    }
    return PFI_OK;
}

/* A number of watts in a cap range, "300" or "300W" as every other power input takes it. */
static double range_watts(const char *s, char **end)
{
    double v = strtod(s, end);
    if (*end != s && (**end == 'W' || **end == 'w'))
        (*end)++;
    return v;
}

int pfi_parse_cap_range(const char *s, double *out, int max_n, int *n, pfi_err *err)
{
    double a, b, step;
    char *e1, *e2, *e3;
    *n = 0;
    a = range_watts(s, &e1);
    if (e1 == s || *e1 != ':')
        return pfi_err_set(err, PFI_EINVAL, "bad cap range '%s' (expected FROM:TO:STEP in W)", s);
    b = range_watts(e1 + 1, &e2);
    if (e2 == e1 + 1 || *e2 != ':')
        return pfi_err_set(err, PFI_EINVAL, "bad cap range '%s' (expected FROM:TO:STEP in W)", s);
    step = range_watts(e2 + 1, &e3);
    if (e3 == e2 + 1 || *e3 || !(step > 0) || !(a > 0) || !(b > 0) || !isfinite(a) ||
        !isfinite(b) || !isfinite(step))
        return pfi_err_set(err, PFI_EINVAL, "bad cap range '%s' (expected FROM:TO:STEP, STEP > 0)",
                           s);
    double dir = a >= b ? -1 : 1;
    for (double c = a; dir * (b - c) >= -1e-9; c += dir * step) {
        if (*n >= max_n)
            return pfi_err_set(err, PFI_EINVAL, "cap range '%s' has more than %d levels", s, max_n);
        out[(*n)++] = c;
    }
    return PFI_OK;
}

const char *pfi_data_dir(void)
{
    const char *d = getenv("PFI_DATA_DIR");
    return d && *d ? d : "../shared/data";
}

int pfi_data_dir_from_env(void)
{
    const char *d = getenv("PFI_DATA_DIR");
    return d && *d;
}
