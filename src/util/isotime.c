/* SPDX-License-Identifier: Apache-2.0 */
/* isotime.c: ISO 8601 UTC and relative times (isotime.h). */
#include "util/isotime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/units.h"

/* 0000-01-01T00:00:00Z in Unix seconds: the first second a four-digit year writes. */
#define PFI_TIME_MIN_S (-62167219200.0)

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian), without the C library's time zone. */
static long long days_from_civil(long long y, int m, int d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : dm[m - 1];
}

/* n digits at *p into *v; advances *p. */
static int digits(const char **p, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if ((*p)[i] < '0' || (*p)[i] > '9')
            return 0;
        *v = *v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    return 1;
}

static int parse_iso(const char *s, double *t)
{
    const char *p = s;
    int y, mo, d, h, mi, sec = 0, zh = 0, zm = 0;
    double frac = 0;
    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
        !digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' '))
        return 0;
    p++;
    if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi))
        return 0;
    if (*p == ':') {
        p++;
        if (!digits(&p, 2, &sec))
            return 0;
        if (*p == '.') {
            /* Digits only (strtod alone took ".5e3" as 500 s, ".0x10" as 16 s); read by
             * strtod, which stops where the digits do, for the same rounding as before. */
            const char *dot = p;
            if (p[1] < '0' || p[1] > '9')
                return 0;
            for (p++; *p >= '0' && *p <= '9'; p++)
                ; /* what follows must be the zone: "e3" or "x10" is refused below */
            frac = strtod(dot, NULL);
        }
    }
    int sign = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p++ == '+' ? 1 : -1;
        if (!digits(&p, 2, &zh) || *p++ != ':' || !digits(&p, 2, &zm))
            return 0;
    } else {
        return 0; /* a time without a zone is ambiguous: refused */
    }
    if (*p || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 ||
        sec > 60 || zh > 23 || zm > 59)
        return 0;
    double v = (double)days_from_civil(y, mo, d) * 86400.0 + h * 3600.0 + mi * 60.0 + sec + frac;
    *t = v - sign * (zh * 3600.0 + zm * 60.0);
    return 1;
}

static int time_parse(const char *s, double now, double *t, pfi_err *err);

int pfi_time_parse(const char *s, double now, double *t, pfi_err *err)
{
    double v;
    int rc = time_parse(s, now, &v, err);
    if (rc)
        return rc;
    /* "1e300" or "now+1e20m" is no date: refused here rather than carried into an event whose
     * times cannot be written (pfi_time_format) or compared with any clock. */
    if (!(v <= PFI_TIME_MAX_S))
        return pfi_err_set(err, PFI_EINVAL, "time '%s' is after 9999-12-31T23:59:59Z", s);
    *t = v;
    return PFI_OK;
}

static int time_parse(const char *s, double now, double *t, pfi_err *err)
{
    if (!s || !*s)
        return pfi_err_set(err, PFI_EINVAL, "empty time (expected e.g. 2026-12-01T18:00:00Z, "
                                            "now+10m or Unix seconds)");
    const char *rel = NULL;
    if (!strcmp(s, "now")) {
        *t = now;
        return PFI_OK;
    }
    if (!strncmp(s, "now+", 4))
        rel = s + 4;
    else if (s[0] == '+')
        rel = s + 1;
    if (rel) {
        double d;
        pfi_err e = {0};
        if (pfi_parse_duration(rel, &d, &e) != PFI_OK || !(d >= 0))
            return pfi_err_set(err, PFI_EINVAL, "time '%s': %s", s,
                               e.msg[0] ? e.msg : "expected now+DURATION");
        *t = now + d;
        return PFI_OK;
    }
    if (parse_iso(s, t))
        return PFI_OK;
    char *end;
    double v = strtod(s, &end);
    if (end != s && !*end && isfinite(v) && v >= 0 && strchr(s, '-') == NULL) {
        *t = v;
        return PFI_OK;
    }
    return pfi_err_set(err, PFI_EINVAL, "time '%s': expected ISO 8601 with a zone "
                                        "(2026-12-01T18:00:00Z), now+DURATION or Unix seconds",
                       s);
}

void pfi_time_format(double t, char *buf, size_t size)
{
    /* Outside the four-digit years the conversion to time_t could overflow (undefined
     * behaviour) and no ISO 8601 date of this shape exists anyway. */
    if (!(t >= PFI_TIME_MIN_S && t <= PFI_TIME_MAX_S)) {
        if (size)
            buf[0] = '\0';
        return;
    }
    time_t s = (time_t)floor(t);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
