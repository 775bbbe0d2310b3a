/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of util/isotime.h: ISO 8601 with zones, Unix seconds, relative times, and refusals. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "util/isotime.h"

static double parse_ok(const char *s, double now)
{
    double t = NAN;
    pfi_err e = {0};
    if (pfi_time_parse(s, now, &t, &e) != PFI_OK)
        fail_msg("'%s' refused: %s", s, e.msg);
    return t;
}

static void test_parse(void **state)
{
    (void)state;
    assert_true(parse_ok("1970-01-01T00:00:00Z", 0) == 0);
    assert_true(parse_ok("2026-12-01T18:00:00Z", 0) == 1796148000.0);
    assert_true(parse_ok("2026-12-01T19:30:00+01:30", 0) == 1796148000.0);
    assert_true(parse_ok("2026-12-01T16:00-02:00", 0) == 1796148000.0);
    assert_true(fabs(parse_ok("2026-12-01T18:00:00.25Z", 0) - 1796148000.25) < 1e-6);
    assert_true(parse_ok("2024-02-29T00:00:00Z", 0) == 1709164800.0);
    assert_true(parse_ok("1796148000", 0) == 1796148000.0);
    assert_true(parse_ok("now", 500) == 500);
    assert_true(parse_ok("now+10m", 500) == 1100);
    assert_true(parse_ok("+2h", 0) == 7200);
    const char *bad[] = {"", "2026-12-01T18:00:00", "2026-13-01T00:00:00Z",
                         "2025-02-29T00:00:00Z", "2026-12-01T24:00:00Z", "yesterday",
                         "now+soon", "12abc", "-5", "2026-12-01T18:00:00Zjunk",
                         /* The fraction of a second is digits only: strtod read ".5e3" as
                          * 500 s and ".0x10" as 16 s, moving the time by minutes. */
                         "2026-12-01T18:00:00.5e3Z", "2026-12-01T18:00:00.0x10Z",
                         "2026-12-01T18:00:00. 5Z"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double t;
        pfi_err e = {0};
        if (pfi_time_parse(bad[i], 0, &t, &e) == PFI_OK)
            fail_msg("'%s' accepted", bad[i]);
        assert_true(e.msg[0] != 0);
    }
    char buf[32];
    pfi_time_format(1796148000.7, buf, sizeof buf);
    assert_string_equal(buf, "2026-12-01T18:00:00Z");
    pfi_time_format(NAN, buf, sizeof buf);
    assert_string_equal(buf, "");
    /* A time no date can be written for is "" too, not a cast of 1e300 to time_t (undefined
     * behaviour: "-219246529-12-02T08:29:52Z" in an event's answer). */
    pfi_time_format(1e300, buf, sizeof buf);
    assert_string_equal(buf, "");
    pfi_time_format(-1e300, buf, sizeof buf);
    assert_string_equal(buf, "");
    pfi_time_format(PFI_TIME_MAX_S, buf, sizeof buf);
    assert_string_equal(buf, "9999-12-31T23:59:59Z");
    pfi_time_format(PFI_TIME_MAX_S + 1, buf, sizeof buf);
    assert_string_equal(buf, "");
    /* Parsed times beyond the year 9999 are refused: Unix seconds and now+DURATION alike. */
    const char *far[] = {"1e300", "253402300800", "now+1e20m"};
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++) {
        double t;
        pfi_err e = {0};
        if (pfi_time_parse(far[i], 1796148000, &t, &e) == PFI_OK)
            fail_msg("'%s' accepted as %g", far[i], t);
        if (!strstr(e.msg, "9999"))
            fail_msg("'%s': message '%s' does not name the year 9999", far[i], e.msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_parse)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
