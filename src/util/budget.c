/* SPDX-License-Identifier: Apache-2.0 */
#include "util/budget.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/units.h"

static const char expected[] = "expected watts (4000W, 4kW), a share (70%) or a cut (cut=30%)";

int pfi_budget_parse(const char *s, pfi_budget *b, pfi_err *err)
{
    if (!s)
        s = "";
    const char *p = s;
    int cut = 0;
    if (!strncasecmp(p, "cut=", 4)) {
        cut = 1;
        p += 4;
    } else if (*p == '-') {
        cut = 2; /* "-30%": a cut, only as a percentage */
        p++;
    }
    /* "0x10W" read by strtod alone was 16 W; "inf" and "nan" get their own messages below */
    if (!*p || isspace((unsigned char)*p) || *p == '+' || *p == '-' || pfi_units_hex(p))
        return pfi_err_set(err, PFI_EINVAL, "budget '%s': %s", s, expected);
    char *end;
    errno = 0;
    double v = strtod(p, &end);
    if (end == p || isnan(v))
        return pfi_err_set(err, PFI_EINVAL, "budget '%s': %s", s, expected);
    if (errno == ERANGE || isinf(v))
        return pfi_err_set(err, PFI_ERANGE, "budget '%s': out of range", s);
    if (!strcmp(end, "%")) {
        if (cut) {
            if (!(v >= 0 && v < 100))
                return pfi_err_set(err, PFI_ERANGE, "budget '%s': a cut is at least 0%% and less "
                                                    "than 100%%", s);
            v = 100 - v;
        } else if (!(v > 0 && v <= 100)) {
            return pfi_err_set(err, PFI_ERANGE, "budget '%s': a share is more than 0%% and at "
                                                "most 100%%", s);
        }
        b->is_share = 1;
        b->value = v / 100;
        return PFI_OK;
    }
    double mult = pfi_power_unit(end);
    if (isnan(mult))
        return pfi_err_set(err, PFI_EINVAL, "budget '%s': %s", s, expected);
    if (cut == 1)
        return pfi_err_set(err, PFI_EINVAL, "budget '%s': a cut is a percentage (cut=30%%)", s);
    v *= mult;
    if (cut || !(v > 0 && v <= PFI_BUDGET_MAX_W)) /* cut == 2: negative watts */
        return pfi_err_set(err, PFI_ERANGE, "budget '%s': watts must be more than 0 and at most "
                                            "%g", s, PFI_BUDGET_MAX_W);
    b->is_share = 0;
    b->value = v;
    return PFI_OK;
}

int pfi_budget_watts(const pfi_budget *b, const char *s, double reference_w, const char *ref_name,
                     double *watts, pfi_err *err)
{
    if (!b->is_share) {
        *watts = b->value;
        return PFI_OK;
    }
    if (!(reference_w > 0 && isfinite(reference_w)))
        return pfi_err_set(err, PFI_ESTATE, "budget '%s': no %s known to take a share of",
                           s ? s : "", ref_name);
    /* To the milliwatt, down: 70% of 5600 W is 3919.9999999999995 in floats, beside caps that
     * sum to 3920, and the site's over-budget alert fired on a site within its budget.  The
     * grace (a part in 10^12) only takes back such a rounding; the result is never a
     * milliwatt above the share. */
    double mw = b->value * reference_w * 1e3;
    /* under a milliwatt, kept as it is: 0 would be no budget at all, not a tiny one */
    *watts = mw >= 1 ? floor(mw * (1 + 1e-12) + 1e-6) / 1e3 : b->value * reference_w;
    return PFI_OK;
}

const char *pfi_budget_describe(const pfi_budget *b, double reference_w, const char *ref_name,
                                char *buf, size_t size)
{
    if (b->is_share)
        snprintf(buf, size, "%.4g%% of %.0f W (%s)", 100 * b->value, reference_w, ref_name);
    else
        snprintf(buf, size, "%.0f W", b->value);
    return buf;
}

int pfi_budget_parse_cuts(const char *s, double *cuts, int max_n, int *n, pfi_err *err)
{
    *n = 0;
    for (const char *p = s ? s : "";;) {
        size_t len = strcspn(p, ",");
        char item[64];
        if (len >= sizeof item)
            return pfi_err_set(err, PFI_EINVAL, "budget '%.*s...': %s", 20, p, expected);
        memcpy(item, p, len);
        item[len] = 0;
        if (*n >= max_n)
            return pfi_err_set(err, PFI_EINVAL, "list '%s' has more than %d cuts", s, max_n);
        pfi_budget b;
        int rc = pfi_budget_parse(item, &b, err);
        if (rc != PFI_OK)
            return rc;
        const char *t = item + strspn(item, " \t");
        if (b.is_share && strncasecmp(t, "cut=", 4) && *t != '-') {
            /* "--cuts 30%" meant a 30% cut before this list took budgets; as a budget it is a
             * 70% cut.  Neither reading is taken silently. */
            double x = 100 * b.value;
            return pfi_err_set(err, PFI_EINVAL,
                               "budget '%s': in a list of cuts a bare share is ambiguous: write "
                               "cut=%.10g%% (or %.10g) for a cut of %.10g%%, or cut=%.10g%% (or "
                               "%.10g) for a budget of %.10g%%",
                               item, x, b.value, x, 100 - x, 1 - b.value, x);
        } else if (b.is_share) {
            cuts[(*n)++] = 1 - b.value;
        } else if (!strpbrk(item, "wW") && b.value < 1) {
            cuts[(*n)++] = b.value; /* 0.3: the bare fraction of a cut */
        } else {
            return pfi_err_set(err, PFI_EINVAL, "budget '%s': a cut here is a share of the jobs' "
                                                "baseline draw (cut=30%%, -30%% or 0.3), not watts",
                               item);
        }
        for (int k = 0; k + 1 < *n; k++)
            if (fabs(cuts[k] - cuts[*n - 1]) < 1e-9) /* one list row twice, or worse */
                return pfi_err_set(err, PFI_EINVAL, "budget '%s': the cut of %.10g%% is given "
                                                    "twice in '%s'",
                                   item, 100 * cuts[*n - 1], s);
        if (!p[len])
            return PFI_OK;
        p += len + 1;
    }
}
