/* SPDX-License-Identifier: Apache-2.0 */
#include "util/num.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int pfi_num_ll(const char *s, long long lo, long long hi, const char *what, long long *out,
               pfi_err *err)
{
    char *end = NULL;
    errno = 0;
    /* Digits, after a '-' only where the range has negatives: strtoll alone also takes a '+'
     * and leading blanks, and "+5" or "-0" is no Content-Length (RFC 9110: 1*DIGIT). */
    const char *d = s && *s == '-' && lo < 0 ? s + 1 : s;
    long long v = d && isdigit((unsigned char)*d) ? strtoll(s, &end, 10) : 0;
    if (!end || end == s || *end || errno || v < lo || v > hi)
        return pfi_err_set(err, PFI_EINVAL, "%s: expected an integer from %lld to %lld, got '%.40s'",
                           what, lo, hi, s ? s : "");
    *out = v;
    return PFI_OK;
}

int pfi_num_int(const char *s, int lo, int hi, const char *what, int *out, pfi_err *err)
{
    long long v;
    int rc = pfi_num_ll(s, lo, hi, what, &v, err);
    if (rc == PFI_OK)
        *out = (int)v;
    return rc;
}

long long pfi_num_to_ll(double x, long long max)
{
    if (!isfinite(x) || x < 0 || !(x < (double)max))
        return -1;
    return (long long)x;
}

int pfi_num_shortest(char *out, size_t n, double v)
{
    int len = 0;
    for (int p = 15; p <= 17; p++) {
        len = snprintf(out, n, "%.*g", p, v);
        if (strtod(out, NULL) == v)
            break;
    }
    return len;
}

int pfi_num_json(char *out, size_t n, double v)
{
    if (v == floor(v) && fabs(v) < 9007199254740992.0 && !(v == 0 && signbit(v))) {
        char d[24];
        int k = 0, neg = v < 0;
        unsigned long long u = (unsigned long long)(neg ? -v : v);
        do {
            d[k++] = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        int len = 0;
        if (neg && (size_t)len + 1 < n)
            out[len++] = '-';
        while (k > 0 && (size_t)len + 1 < n)
            out[len++] = d[--k];
        out[len] = '\0';
        return len;
    }
    return snprintf(out, n, "%.17g", v);
}
