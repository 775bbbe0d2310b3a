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
                         "now+soon", "12abc", "-5", "2026-12-01T18:00:00Zjunk"};
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
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_parse)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
