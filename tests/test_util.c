/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the argument parser, unit parsers, error type, clock, JSON, text and
 * file system helpers. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include <cmocka.h>
#include <microhttpd.h>

#include "core/err.h"
#include "util/args.h"
#include "util/budget.h"
#include "util/clock.h"
#include "util/cmd.h"
#include "util/fs.h"
#include "util/http_frame.h"
#include "util/http_origin.h"
#include "util/json.h"
#include "util/num.h"
#include "util/prom.h"
#include "util/series.h"
#include "util/text.h"
#include "util/token.h"
#include "util/unescape.h"
#include "util/units.h"

static void test_duration(void **state)
{
    double s;
    pfi_err e = {0};
    assert_int_equal(pfi_parse_duration("100ms", &s, &e), PFI_OK);
    assert_true(fabs(s - 0.1) < 1e-12);
    assert_int_equal(pfi_parse_duration("2", &s, &e), PFI_OK);
    assert_true(fabs(s - 2) < 1e-12);
    assert_int_equal(pfi_parse_duration("5m", &s, &e), PFI_OK);
    assert_true(fabs(s - 300) < 1e-12);
    assert_int_equal(pfi_parse_duration("5 parsecs", &s, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "5 parsecs"));
    assert_int_equal(pfi_parse_duration("-1s", &s, &e), PFI_EINVAL);
    /* decimal only: strtod alone read "0x10s" as 16 s */
    const char *bad[] = {"0x10s", "0X10", "0x1p4m", " 0x5s", "+0x5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (pfi_parse_duration(bad[i], &s, &e) != PFI_EINVAL)
            fail_msg("duration '%s' taken as %g s", bad[i], s);
    assert_int_equal(pfi_parse_duration(".5s", &s, &e), PFI_OK);
    assert_true(s == 0.5);
}

/* pfi_num_ll: digits only, a '-' only for ranges with negatives; every refusal names the value
 * and leaves *out as it was. */
static void test_num_ll(void **state)
{
    (void)state;
    long long v = 42;
    pfi_err e = {0};
    assert_int_equal(pfi_num_ll("17", 0, 100, "since", &v, &e), PFI_OK);
    assert_int_equal(v, 17);
    assert_int_equal(pfi_num_ll("017", 0, 100, "since", &v, &e), PFI_OK); /* decimal, not octal */
    assert_int_equal(v, 17);
    assert_int_equal(pfi_num_ll("-5", -10, 10, "x", &v, &e), PFI_OK);
    assert_int_equal(v, -5);
    assert_int_equal(pfi_num_ll("-0", -10, 10, "x", &v, &e), PFI_OK);
    assert_int_equal(v, 0);
    const char *bad[] = {"+5", "-0", "-5", " 5", "5 ", "", "0x10", "1e3", "5.0", "+", "-",
                         "99999999999999999999", "101", NULL};
    for (int i = 0; bad[i]; i++) {
        v = 42;
        assert_int_equal(pfi_num_ll(bad[i], 0, 100, "since", &v, &e), PFI_EINVAL);
        assert_int_equal(v, 42);
        assert_non_null(strstr(e.msg, "since: expected an integer from 0 to 100"));
    }
    assert_int_equal(pfi_num_ll("+5", -10, 10, "x", &v, &e), PFI_EINVAL);
    assert_int_equal(pfi_num_ll("--5", -10, 10, "x", &v, &e), PFI_EINVAL);
    assert_int_equal(pfi_num_ll(NULL, 0, 10, "x", &v, &e), PFI_EINVAL);
    assert_int_equal(v, 42);
}

/* One reader of a finite decimal number serves the option reader, `pfi ctl job throughput` and
 * the quantities: each refused what the others refused but by its own strtod, and the copy in
 * `pfi ctl` had no ERANGE check ("1e-400" went out as 0 tokens/s). */
static void test_decimal(void **state)
{
    const char *good[] = {"0", "-0", "1.5e3", "-2", " 7", ".5", "1e308", "+3"};
    const double want[] = {0, 0, 1500, -2, 7, 0.5, 1e308, 3};
    double v;
    const char *rest;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        if (pfi_parse_decimal(good[i], &v, NULL) != 0 || v != want[i])
            fail_msg("'%s' not read as %g", good[i], want[i]);
    }
    const char *bad[] = {"", " ", "x", "nan", "-nan", "inf", "-Infinity", "1e400", "1e-400",
                         "0x10", " -0X1p3", "5 ", "5x", "1.5e3W", "--1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 42;
        if (pfi_parse_decimal(bad[i], &v, NULL) == 0 || v != 42)
            fail_msg("'%s' read as %g", bad[i], v);
    }
    /* With a unit after it: the number, and where the unit starts. */
    assert_int_equal(pfi_parse_decimal("5.6kW", &v, &rest), 0);
    assert_true(v == 5.6);
    assert_string_equal(rest, "kW");
    assert_int_equal(pfi_parse_decimal("70%", &v, &rest), 0);
    assert_string_equal(rest, "%");
    const char *badu[] = {"kW", "nanW", "infs", "0x10W", "1e-400s", "1e400%"};
    for (size_t i = 0; i < sizeof badu / sizeof badu[0]; i++)
        if (pfi_parse_decimal(badu[i], &v, &rest) == 0)
            fail_msg("'%s' read as %g then '%s'", badu[i], v, rest);
    /* The option reader takes exactly these. */
    double w = NAN;
    const pfi_opt o[] = {{"w", PFI_OPT_DOUBLE, &w, "W", "w"}, {0}};
    pfi_cmd_spec spec = {"pfi x", NULL, o, NULL};
    char **pos;
    int npos;
    pfi_err e = {0};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char *av[] = {"x", "--w", (char *)good[i]};
        assert_int_equal(pfi_args_parse(&spec, 3, av, &pos, &npos, NULL, &e), PFI_OK);
        assert_true(w == want[i]);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *av[] = {"x", "--w", (char *)bad[i]};
        if (pfi_args_parse(&spec, 3, av, &pos, &npos, NULL, &e) != PFI_EINVAL)
            fail_msg("--w '%s' taken as %g", bad[i], w);
        assert_non_null(strstr(e.msg, "--w expects a number, got '"));
    }
}

static void test_power(void **state)
{
    double v;
    int pct;
    pfi_err e = {0};
    assert_int_equal(pfi_parse_power("70%", &v, &pct, &e), PFI_OK);
    assert_true(pct && fabs(v - 0.7) < 1e-12);
    assert_int_equal(pfi_parse_power("5.6kW", &v, &pct, &e), PFI_OK);
    assert_true(!pct && fabs(v - 5600) < 1e-9);
    assert_int_equal(pfi_parse_power("5600W", &v, &pct, &e), PFI_OK);
    assert_int_equal(pfi_parse_power("0W", &v, &pct, &e), PFI_ERANGE);
    assert_int_equal(pfi_parse_power("150%", &v, &pct, &e), PFI_ERANGE);
    assert_int_equal(pfi_parse_power("lots", &v, &pct, &e), PFI_EINVAL);
    assert_int_equal(pfi_parse_power("0x10W", &v, &pct, &e), PFI_EINVAL); /* was 16 W */
    assert_int_equal(pfi_parse_power("0x32%", &v, &pct, &e), PFI_EINVAL); /* was 50% */
    /* the units' case: k or K, w or W; M only upper case ("mW" is the milliwatt: 0.5 mW was
     * read as 500 kW, a budget that caps nothing) */
    const struct { const char *s; double w; } ok[] = {
        {"4kw", 4e3}, {"4KW", 4e3}, {"4Kw", 4e3}, {"4w", 4}, {"0.5MW", 5e5}, {"0.5Mw", 5e5}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        assert_int_equal(pfi_parse_power(ok[i].s, &v, &pct, &e), PFI_OK);
        assert_float_equal(v, ok[i].w, 1e-9);
        pfi_budget b;
        assert_int_equal(pfi_budget_parse(ok[i].s, &b, &e), PFI_OK);
        assert_float_equal(b.value, ok[i].w, 1e-9);
    }
    const char *milli[] = {"0.5mW", "0.5mw", "4000mW", "1kWh", "1GW", "1 W"};
    for (size_t i = 0; i < sizeof milli / sizeof *milli; i++) {
        pfi_budget b = {.value = -1};
        assert_int_equal(pfi_parse_power(milli[i], &v, &pct, &e), PFI_EINVAL);
        assert_int_equal(pfi_budget_parse(milli[i], &b, &e), PFI_EINVAL);
        assert_float_equal(b.value, -1, 0);
    }
    double l[4];
    int n;
    assert_int_equal(pfi_parse_double_list("0.1,0x0.8p0", l, 4, &n, &e), PFI_EINVAL);
}

/* One slowdown grammar (an SLA): a fraction or a percentage in [0, 1), the same in every command;
 * nothing written on error. */
static void test_slowdown(void **state)
{
    (void)state;
    const struct {
        const char *s;
        double v;
    } ok[] = {{"0.1", 0.1}, {"10%", 0.1}, {"0", 0}, {"0%", 0}, {"2.5%", 0.025}, {"0.999", 0.999}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        pfi_err e = {0};
        double v = -1;
        assert_int_equal(pfi_parse_slowdown(ok[i].s, &v, &e), PFI_OK);
        assert_true(fabs(v - ok[i].v) < 1e-12);
    }
    const char *bad[] = {"",    "x",      "1",   "100%", "-5%",     "-0.1",   "nan",
                         "inf", "1e308",  "1e400", "1e-400", "5%x",  "0.1 ",   "%",
                         "10%%", "0x1p-3z", "0x1p-3", "0X.8p-1", "-0",   "-0%"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pfi_err e = {0};
        double v = 42;
        assert_int_not_equal(pfi_parse_slowdown(bad[i], &v, &e), PFI_OK);
        assert_true(v == 42);
        assert_non_null(strstr(e.msg, "slowdown"));
    }
}

/* A list of cuts reads each item as a budget of the jobs' baseline draw: 70% is a 0.3 cut, as
 * a budget of 70% is everywhere; a bare fraction is the cut itself; watts are refused. */
static void test_budget_cuts(void **state)
{
    (void)state;
    double c[8];
    int n = -1;
    pfi_err e = {0};
    assert_int_equal(pfi_budget_parse_cuts("cut=30%,cut=20%,-10%,0.4,CUT=50%", c, 8, &n, &e),
                     PFI_OK);
    assert_int_equal(n, 5);
    const double want[] = {0.3, 0.2, 0.1, 0.4, 0.5};
    for (int i = 0; i < 5; i++)
        assert_true(fabs(c[i] - want[i]) < 1e-12);
    /* The same message as any budget, naming the item; watts named as not a cut. */
    static const struct {
        const char *s, *msg;
        int code;
    } bad[] = {{"", "budget '': expected", PFI_EINVAL},
               {"0.3,", "budget '': expected", PFI_EINVAL},
               {"0.3,70 %", "budget '70 %': expected", PFI_EINVAL},
               {"nan", "budget 'nan': expected", PFI_EINVAL},
               {"70%%", "budget '70%%': expected", PFI_EINVAL},
               {"1e400", "budget '1e400': out of range", PFI_ERANGE},
               {"150%", "budget '150%': a share", PFI_ERANGE},
               {"4kW", "budget '4kW': a cut here is a share", PFI_EINVAL},
               {"0.3W", "budget '0.3W': a cut here is a share", PFI_EINVAL},
               {"30", "budget '30': a cut here is a share", PFI_EINVAL},
               {"-5kW", "budget '-5kW': watts must be", PFI_ERANGE},
               /* "30%" was a 30% cut before, a 70% one as a budget: neither silently */
               {"0.2,30%", "budget '30%': in a list of cuts a bare share is ambiguous: write "
                           "cut=30% (or 0.3) for a cut of 30%, or cut=70% (or 0.7) for a budget "
                           "of 30%", PFI_EINVAL},
               {"70%", "budget '70%': in a list of cuts a bare share", PFI_EINVAL},
               /* the same cut twice, in any spelling: a study kept one of the two in its
                * summary.json and printed the row twice */
               {"0.3,0.2,cut=30%", "budget 'cut=30%': the cut of 30% is given twice in "
                                   "'0.3,0.2,cut=30%'", PFI_EINVAL},
               {"-10%,0.1", "budget '0.1': the cut of 10% is given twice", PFI_EINVAL}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = pfi_budget_parse_cuts(bad[i].s, c, 8, &n, &e);
        if (rc != bad[i].code || strncmp(e.msg, bad[i].msg, strlen(bad[i].msg)))
            fail_msg("'%s': %d (%s), expected %d (%s...)", bad[i].s, rc, e.msg, bad[i].code,
                     bad[i].msg);
    }
    assert_int_equal(pfi_budget_parse_cuts("0.1,0.2,0.3", c, 2, &n, &e), PFI_EINVAL);
}

/* One budget grammar: watts, a share of a reference, a cut; everything else refused with a
 * message naming the text, and nothing written on error. */
static void test_budget(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int share;
        double v;
    } ok[] = {{"4000W", 0, 4000},    {"4000", 0, 4000},     {"4kW", 0, 4000},
              {"4KW", 0, 4000},      {"0.004MW", 0, 4000},  {"70%", 1, 0.7},
              {"cut=30%", 1, 0.7},   {"-30%", 1, 0.7},      {"CUT=30%", 1, 0.7},
              {"100%", 1, 1},        {"cut=0%", 1, 1},      {"1e9", 0, 1e9},
              {"12.5%", 1, 0.125},  {"-0%", 1, 1}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        pfi_budget b = {-1, -1};
        pfi_err e = {0};
        assert_int_equal(pfi_budget_parse(ok[i].s, &b, &e), PFI_OK);
        assert_int_equal(b.is_share, ok[i].share);
        assert_true(fabs(b.value - ok[i].v) < 1e-9 * ok[i].v);
    }
    static const struct {
        const char *s;
        int code;
    } bad[] = {{"", PFI_EINVAL},          {"abc", PFI_EINVAL},      {"nan", PFI_EINVAL},
               {"NaN%", PFI_EINVAL},      {"inf", PFI_ERANGE},      {"-5", PFI_ERANGE},
               {"-5W", PFI_ERANGE},       {"0", PFI_ERANGE},        {"0W", PFI_ERANGE},
               {"0%", PFI_ERANGE},        {"150%", PFI_ERANGE},     {"-100%", PFI_ERANGE},
               {"cut=100%", PFI_ERANGE},  {"cut=130%", PFI_ERANGE}, {"cut=-5%", PFI_EINVAL},
               {"cut=30W", PFI_EINVAL},   {"cut=", PFI_EINVAL},     {"70%x", PFI_EINVAL},
               {"70% ", PFI_EINVAL},      {" 70%", PFI_EINVAL},     {"4000 W", PFI_EINVAL},
               {"4000WW", PFI_EINVAL},    {"1e308", PFI_ERANGE},    {"1e999", PFI_ERANGE},
               {"1e308kW", PFI_ERANGE},   {"--30%", PFI_EINVAL},    {"+70%", PFI_EINVAL},
               {"4 kW", PFI_EINVAL},      {"70%%", PFI_EINVAL},
               /* decimal only: strtod alone read these as 16 W, 4096 W, a 16% cut */
               {"0x10W", PFI_EINVAL},     {"0x1p12", PFI_EINVAL},   {"cut=0x10%", PFI_EINVAL},
               {"-0X10%", PFI_EINVAL},    {"0x0.8MW", PFI_EINVAL}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pfi_budget b = {7, 7};
        pfi_err e = {0};
        int rc = pfi_budget_parse(bad[i].s, &b, &e);
        if (rc != bad[i].code)
            fail_msg("'%s': %d (%s), expected %d", bad[i].s, rc, e.msg, bad[i].code);
        assert_int_equal(b.is_share, 7);
        char want[64];
        snprintf(want, sizeof want, "budget '%s': ", bad[i].s);
        assert_true(!strncmp(e.msg, want, strlen(want)));
    }
    /* A share needs a reference; watts do not. */
    pfi_budget b;
    pfi_err e = {0};
    double w = 0;
    assert_int_equal(pfi_budget_parse("cut=30%", &b, &e), PFI_OK);
    assert_int_equal(pfi_budget_watts(&b, "cut=30%", 5600, "ref", &w, &e), PFI_OK);
    assert_true(w == 3920); /* 0.7 * 5600 is 3919.9999999999995: caps of 3920 were "over" it */
    assert_int_equal(pfi_budget_parse("70%", &b, &e), PFI_OK);
    assert_int_equal(pfi_budget_watts(&b, "70%", 5600, "ref", &w, &e), PFI_OK);
    assert_true(w == 3920);
    assert_int_equal(pfi_budget_parse("33.3333%", &b, &e), PFI_OK); /* down, to the milliwatt */
    assert_int_equal(pfi_budget_watts(&b, "33.3333%", 1001, "ref", &w, &e), PFI_OK);
    assert_true(w == 333.666 && w <= 0.333333 * 1001);
    assert_int_equal(pfi_budget_parse("0.00001%", &b, &e), PFI_OK); /* under a milliwatt: kept */
    assert_int_equal(pfi_budget_watts(&b, "0.00001%", 5600, "ref", &w, &e), PFI_OK);
    assert_true(w > 0 && w < 0.001);
    assert_int_equal(pfi_budget_parse("cut=30%", &b, &e), PFI_OK);
    assert_int_equal(pfi_budget_watts(&b, "cut=30%", 0, "GPU", &w, &e), PFI_ESTATE);
    assert_string_equal(e.msg, "budget 'cut=30%': no GPU known to take a share of");
    char buf[96];
    assert_string_equal(pfi_budget_describe(&b, 5600, "the sum of the GPUs' default limits", buf,
                                            sizeof buf),
                        "70% of 5600 W (the sum of the GPUs' default limits)");
    assert_int_equal(pfi_budget_parse("4kW", &b, &e), PFI_OK);
    assert_int_equal(pfi_budget_watts(&b, "4kW", NAN, "GPU", &w, &e), PFI_OK);
    assert_true(w == 4000);
    assert_string_equal(pfi_budget_describe(&b, 0, "x", buf, sizeof buf), "4000 W");
}

static void test_index_list(void **state)
{
    int out[16], n;
    pfi_err e = {0};
    assert_int_equal(pfi_parse_index_list("6,0-2", 8, out, &n, &e), PFI_OK);
    assert_int_equal(n, 4);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[3], 6);
    assert_int_equal(pfi_parse_index_list("0-8", 8, out, &n, &e), PFI_ERANGE);
    assert_int_equal(pfi_parse_index_list("1,1", 8, out, &n, &e), PFI_EINVAL);
    assert_int_equal(pfi_parse_index_list("x", 8, out, &n, &e), PFI_EINVAL);
    assert_int_equal(pfi_parse_index_list("all", 4, out, &n, &e), PFI_OK);
    assert_int_equal(n, 4);
    /* A full node's list and one GPU more: refused before a write past out (64 GPUs: "0-63,5"
     * wrote a 65th entry, which was the sweep's GPU count). */
    int full[65];
    full[64] = -7;
    const char *twice[] = {"0-63,5", "0-63,63", "0-63,0", "5,0-63"};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(pfi_parse_index_list(twice[k], 64, full, &n, &e), PFI_EINVAL);
        assert_non_null(strstr(e.msg, "twice"));
        assert_int_equal(full[64], -7);
    }
    assert_int_equal(pfi_parse_index_list("0-63", 64, full, &n, &e), PFI_OK);
    assert_int_equal(n, 64);
    assert_int_equal(full[64], -7);
    /* digits only, nothing after a last comma */
    const char *loose[] = {"0,", " 1", "+1", "0- 3", "0-+3", ",0", "0,,1", "1 ", "-1", "0-"};
    for (int k = 0; k < 10; k++)
        if (pfi_parse_index_list(loose[k], 8, out, &n, &e) != PFI_EINVAL)
            fail_msg("GPU list '%s' taken", loose[k]);
    assert_int_equal(pfi_parse_index_list("99999999999999999999", 8, out, &n, &e), PFI_ERANGE);
}

static void test_lists(void **state)
{
    double v[16];
    int n;
    pfi_err e = {0};
    assert_int_equal(pfi_parse_double_list("100,90,80%", v, 16, &n, &e), PFI_OK);
    assert_int_equal(n, 3);
    assert_true(fabs(v[2] - 0.8) < 1e-12 && fabs(v[0] - 1.0) < 1e-12);
    assert_int_equal(pfi_parse_double_list("50%,", v, 16, &n, &e), PFI_EINVAL); /* was [0.5] */
    assert_int_equal(pfi_parse_double_list("50,", v, 16, &n, &e), PFI_EINVAL);
    assert_int_equal(pfi_parse_cap_range("700:300:50", v, 16, &n, &e), PFI_OK);
    assert_int_equal(n, 9);
    assert_true(v[0] == 700 && v[8] == 300);
    assert_int_equal(pfi_parse_cap_range("700:300:0", v, 16, &n, &e), PFI_EINVAL);
    /* Watts as every other power input takes them; not a number, none. */
    assert_int_equal(pfi_parse_cap_range("700W:300W:100W", v, 16, &n, &e), PFI_OK);
    assert_int_equal(n, 5);
    assert_true(v[0] == 700 && v[4] == 300);
    assert_int_equal(pfi_parse_cap_range("700Wx:300:100", v, 16, &n, &e), PFI_EINVAL);
    assert_int_equal(pfi_parse_cap_range("inf:300:100", v, 16, &n, &e), PFI_EINVAL);
    assert_int_equal(pfi_parse_cap_range("700:nan:100", v, 16, &n, &e), PFI_EINVAL);
    assert_int_equal(pfi_parse_cap_range("W:300:100", v, 16, &n, &e), PFI_EINVAL);
}

/* --help and the manual page come from one spec: the examples close the text; in roff every
 * '-' is \-, a line may not start with '.', and the options become .TP entries. */
static void test_args_help_formats(void **state)
{
    int n = 0;
    const pfi_opt opts[] = {{"dry-run", PFI_OPT_FLAG, &n, NULL, "change nothing"}, {0}};
    pfi_cmd_spec spec = {"pfi x [--dry-run]", "Do x.", opts, "pfi x --dry-run\n.hidden line"};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    pfi_args_usage(&spec, f);
    fclose(f);
    const char *ex = strstr(buf, "\nexamples:\n  pfi x --dry-run\n  .hidden line\n");
    assert_non_null(ex);
    assert_null(strstr(ex + 1, "\n\n")); /* nothing after the examples */
    assert_non_null(strstr(buf, "  --dry-run"));
    free(buf);

    pfi_args_set_help_format(PFI_HELP_MAN);
    f = open_memstream(&buf, &len);
    pfi_args_usage(&spec, f);
    fclose(f);
    pfi_args_set_help_format(PFI_HELP_TEXT);
    assert_non_null(strstr(buf, ".SH SYNOPSIS\n.nf\npfi x [\\-\\-dry\\-run]\n.fi\n"));
    assert_non_null(strstr(buf, ".SH OPTIONS\n.TP\n.B \\-\\-dry\\-run\nchange nothing\n"));
    assert_non_null(strstr(buf, ".SH EXAMPLES\n"));
    assert_non_null(strstr(buf, "pfi x \\-\\-dry\\-run\n\\&.hidden line\n"));
    assert_null(strstr(buf, "\n.hidden"));
    free(buf);
}

static void test_args(void **state)
{
    const char *db = NULL;
    int json = 0, level = 3;
    pfi_strlist tags = {0};
    const pfi_opt opts[] = {
        {"db", PFI_OPT_STR, &db, "FILE", "store"},
        {"json", PFI_OPT_FLAG, &json, NULL, "json"},
        {"level", PFI_OPT_INT, &level, "N", "level"},
        {"tag", PFI_OPT_MULTI, &tags, "K=V", "tag"},
        {0},
    };
    pfi_cmd_spec spec = {"pfi x", NULL, opts, NULL};
    char *argv[] = {"x", "--db=a.db", "run1", "--json", "--tag", "a=1", "--tag=b=2",
                    "--level", "7", "--", "cmd", "--json"};
    char **pos;
    int npos, dd;
    pfi_err e = {0};
    assert_int_equal(pfi_args_parse(&spec, 12, argv, &pos, &npos, &dd, &e), PFI_OK);
    assert_string_equal(db, "a.db");
    assert_int_equal(json, 1);
    assert_int_equal(level, 7);
    assert_int_equal(tags.n, 2);
    assert_string_equal(tags.v[1], "b=2");
    assert_int_equal(npos, 3);
    assert_int_equal(dd, 1);
    assert_string_equal(pos[0], "run1");
    assert_string_equal(pos[2], "--json");

    char *bad[] = {"x", "--nope"};
    assert_int_equal(pfi_args_parse(&spec, 2, bad, &pos, &npos, NULL, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "--nope"));
    /* A short option is named as an unknown option, not an unexpected argument; "-", a
     * negative number and anything after -- stay positionals. */
    char *shortopt[] = {"x", "-c"};
    assert_int_equal(pfi_args_parse(&spec, 2, shortopt, &pos, &npos, NULL, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "unknown option '-c'"));
    char *dashes[] = {"x", "-", "-5", "-10%", "--", "-c"};
    assert_int_equal(pfi_args_parse(&spec, 6, dashes, &pos, &npos, NULL, &e), PFI_OK);
    assert_int_equal(npos, 4);
    assert_string_equal(pos[3], "-c");
    char *badint[] = {"x", "--level", "seven"};
    assert_int_equal(pfi_args_parse(&spec, 3, badint, &pos, &npos, NULL, &e), PFI_EINVAL);
    char *missing[] = {"x", "--db"};
    assert_int_equal(pfi_args_parse(&spec, 2, missing, &pos, &npos, NULL, &e), PFI_EINVAL);
    /* An empty value is refused by name, in either spelling and for a repeated option too
     * (pfi runs --db "" read the default store, pfi index --db "" a store named ""); an option
     * declared with PFI_OPT_EMPTY takes it. */
    char *empties[][3] = {{"x", "--db", ""}, {"x", "--db=", NULL}, {"x", "--tag", ""}};
    for (size_t i = 0; i < sizeof empties / sizeof empties[0]; i++) {
        db = "kept";
        e = (pfi_err){0};
        assert_int_equal(pfi_args_parse(&spec, empties[i][2] ? 3 : 2, empties[i], &pos, &npos,
                                        NULL, &e),
                         PFI_EINVAL);
        assert_string_equal(e.msg, i == 2 ? "--tag is empty" : "--db is empty");
        assert_string_equal(db, "kept");
    }
    const char *re = NULL;
    const pfi_opt eopts[] = {{"re", PFI_OPT_STR | PFI_OPT_EMPTY, &re, "RE", "re"}, {0}};
    pfi_cmd_spec espec = {"pfi x", NULL, eopts, NULL};
    char *ev[] = {"x", "--re", ""};
    assert_int_equal(pfi_args_parse(&espec, 3, ev, &pos, &npos, NULL, &e), PFI_OK);
    assert_non_null(re);
    assert_string_equal(re, "");

    /* A number option is a finite decimal number: NaN is what commands take for "not given",
     * so "--weight nan" was dropped without a word (pfi ctl job add registered weight 1), and
     * "--weight 0x10" was 16. */
    double w = NAN;
    const pfi_opt nopts[] = {{"weight", PFI_OPT_DOUBLE, &w, "W", "weight"}, {0}};
    pfi_cmd_spec nspec = {"pfi x", NULL, nopts, NULL};
    const char *nonfinite[] = {"nan", "NaN", "-nan", "inf", "-Infinity", "1e999", "0x10", "-0X1p3"};
    for (size_t i = 0; i < sizeof nonfinite / sizeof nonfinite[0]; i++) {
        char *nv[] = {"x", "--weight", (char *)nonfinite[i]};
        assert_int_equal(pfi_args_parse(&nspec, 3, nv, &pos, &npos, NULL, &e), PFI_EINVAL);
        assert_non_null(strstr(e.msg, "--weight expects a number"));
        assert_true(isnan(w));
    }
    char *ok[] = {"x", "--weight", "2.5e3"};
    assert_int_equal(pfi_args_parse(&nspec, 3, ok, &pos, &npos, NULL, &e), PFI_OK);
    assert_true(w == 2500);
}

static void test_err(void **state)
{
    pfi_err e = {0};
    assert_int_equal(pfi_err_set(&e, PFI_ERANGE, "cap %d W", 90), PFI_ERANGE);
    pfi_err_prefix(&e, "GPU %d: ", 3);
    assert_string_equal(e.msg, "GPU 3: cap 90 W");
    assert_string_equal(pfi_code_name(PFI_ELOST), "GPU lost");
    assert_int_equal(pfi_err_set(NULL, PFI_EIO, "x"), PFI_EIO);
}

/* No timed assertions: the clocks agree with the C library's and never run backwards, and a
 * sleep of nothing (or of NaN) returns. */
static void test_clock(void **state)
{
    double m0 = pfi_clock_mono();
    pfi_clock_sleep(0);
    pfi_clock_sleep(-1);
    pfi_clock_sleep(NAN);
    pfi_clock_sleep(1e-6);
    assert_true(pfi_clock_mono() >= m0);
    double w = pfi_clock_wall();
    assert_true(fabs(w - (double)time(NULL)) < 2);
}

static void test_json(void **state)
{
    json_t *a = pfi_json_num(1.5), *b = pfi_json_num(NAN), *c = pfi_json_num(-INFINITY);
    assert_true(json_is_real(a) && json_real_value(a) == 1.5);
    assert_true(json_is_null(b) && json_is_null(c));
    json_t *o = json_pack("{s:f, s:i, s:s, s:n}", "x", 2.5, "n", 3, "s", "4", "z");
    assert_true(pfi_json_num_or_nan(json_object_get(o, "x")) == 2.5);
    assert_true(pfi_json_num_or_nan(json_object_get(o, "n")) == 3);
    assert_true(isnan(pfi_json_num_or_nan(json_object_get(o, "s"))));
    assert_true(isnan(pfi_json_num_or_nan(json_object_get(o, "z"))));
    assert_true(isnan(pfi_json_num_or_nan(json_object_get(o, "absent"))));
    assert_true(isnan(pfi_json_num_or_nan(NULL)));
    json_t *s = pfi_json_str("h200"), *none = pfi_json_str("");
    assert_true(json_is_string(s) && strcmp(json_string_value(s), "h200") == 0);
    assert_true(json_is_null(none));
    json_decref(a), json_decref(b), json_decref(c), json_decref(o), json_decref(s);
}

/* Table cells of UTF-8 text: counted in characters, cut between characters, padded so that
 * the columns after them line up (an id of 40 "é" was cut inside a character: the table was no
 * longer UTF-8). */
static char *wrapped(const char *s, int col, int indent, int width, int flags)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    pfi_text_wrap(f, s, col, indent, width, flags);
    fclose(f);
    return buf;
}

/* Help text wrapped to a terminal: words whole, lines within width - 1 columns (UTF-8 counted
 * by characters), a hanging indent, newlines kept, spaces at a break dropped. */
static void test_text_wrap(void **state)
{
    (void)state;
    char *o = wrapped("aaa bbb ccc ddd", 0, 2, 10, 0);
    assert_string_equal(o, "aaa bbb\n  ccc ddd");
    free(o);
    o = wrapped("one.  two", 0, 0, 40, 0); /* two spaces kept inside a line */
    assert_string_equal(o, "one.  two");
    free(o);
    o = wrapped("x averyveryverylongword y", 0, 0, 8, 0); /* too long: alone, uncut */
    assert_string_equal(o, "x\naveryveryverylongword\ny");
    free(o);
    o = wrapped("first\n\n  - item  ", 0, 4, 80, 0); /* blank line unindented, trail dropped */
    assert_string_equal(o, "first\n\n      - item");
    free(o);
    o = wrapped("d\xc3\xa9j\xc3\xa0 vu", 0, 0, 7, 0); /* 4 columns + 1 + 2 = 7 > 6 */
    assert_string_equal(o, "d\xc3\xa9j\xc3\xa0\nvu");
    free(o);
    o = wrapped("d\xc3\xa9j\xc3\xa0 vu", 0, 0, 8, 0); /* by bytes (9) it would break */
    assert_string_equal(o, "d\xc3\xa9j\xc3\xa0 vu");
    free(o);
    o = wrapped("help", 27, 27, 30, 0); /* the first word goes on the first line whatever */
    assert_string_equal(o, "help");
    free(o);
    o = wrapped("pfi x [--a B | --c D] [--e]", 7, 13, 30, PFI_WRAP_GROUPS);
    assert_string_equal(o, "pfi x [--a B | --c D]\n             [--e]");
    free(o);
    o = wrapped("pfi x [--a B | --c D] [--e]", 7, 13, 30, 0);
    assert_string_equal(o, "pfi x [--a B | --c D]\n             [--e]");
    free(o);
    o = wrapped("pfi x [--a B | --c D]", 7, 13, 20, 0);
    assert_string_equal(o, "pfi x [--a B\n             | --c\n             D]");
    free(o);
    o = wrapped("pfi x [--a B | --c D]", 7, 13, 20, PFI_WRAP_GROUPS);
    assert_string_equal(o, "pfi x\n             [--a B | --c D]");
    free(o);
}

static void test_text_fit(void **state)
{
    (void)state;
    assert_int_equal(pfi_text_cols("abc"), 3);
    assert_int_equal(pfi_text_cols("x\xc3\xa9\xc3\xa9"), 3); /* "xéé" */
    char buf[256], id[128] = "x";
    for (int i = 0; i < 40; i++)
        strcat(id, "\xc3\xa9");
    const char *c = pfi_text_fit(id, 20, buf, sizeof buf);
    assert_int_equal(pfi_text_cols(c), 20);
    assert_true(pfi_text_printable(c, NULL, 0)); /* valid UTF-8 */
    assert_non_null(strstr(c, "..."));
    assert_int_equal(strncmp(c, "x\xc3\xa9", 3), 0);
    assert_string_equal(pfi_text_fit("short", 20, buf, sizeof buf), "short");
    assert_string_equal(pfi_text_fit("abcdefghijkl", 9, buf, sizeof buf), "abc...jkl");
    char small[20]; /* under 4 x 9 + 1 bytes: no cut that could split a character */
    assert_string_equal(pfi_text_fit("abcdefghijkl", 9, small, sizeof small), "abcdefghijkl");
    char row[64];
    snprintf(row, sizeof row, "%-*s|", pfi_text_pad("x\xc3\xa9", 5), "x\xc3\xa9");
    assert_int_equal(pfi_text_cols(row), 6); /* five columns, then the bar */
    /* Wide characters take two columns on a terminal, combining marks none: "日本語" is six,
     * "e" + U+0301 one; a cut never takes half a wide character. */
    assert_int_equal(pfi_text_cols("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"), 6);
    assert_int_equal(pfi_text_cols("e\xcc\x81"), 1);
    /* emoji shown wide: a rocket U+1F680, a check mark U+2705, a star U+2B50 */
    assert_int_equal(pfi_text_cols("\xf0\x9f\x9a\x80\xe2\x9c\x85\xe2\xad\x90"), 6);
    /* a tail is never begun by an accent: "x" + 12 x ("e" + U+0301), cut to 9 columns */
    char acc[128] = "xyz";
    for (int i = 0; i < 12; i++)
        strcat(acc, "e\xcc\x81");
    c = pfi_text_fit(acc, 9, buf, sizeof buf);
    assert_int_equal(pfi_text_cols(c), 9);
    assert_true(strstr(c, "...") && strstr(c, "...")[3] == 'e');
    char cjk[128] = "";
    for (int i = 0; i < 12; i++)
        strcat(cjk, "\xe6\x97\xa5"); /* 24 columns */
    c = pfi_text_fit(cjk, 10, buf, sizeof buf);
    assert_true(pfi_text_cols(c) <= 10 && pfi_text_cols(c) >= 9);
    assert_true(pfi_text_printable(c, NULL, 0));
    /* 2 + 3 + 4 columns: a second one would cross the head's 3 */
    assert_string_equal(c, "\xe6\x97\xa5...\xe6\x97\xa5\xe6\x97\xa5");
    snprintf(row, sizeof row, "%-*s|", pfi_text_pad("\xe6\x97\xa5x", 5), "\xe6\x97\xa5x");
    assert_int_equal(pfi_text_cols(row), 6);
}

static void test_text(void **state)
{
    char a[] = "  key = value \t\n", b[] = " \n ", c[] = "x";
    assert_string_equal(pfi_trim(a), "key = value");
    assert_string_equal(pfi_trim(b), "");
    assert_string_equal(pfi_trim(c), "x");

    /* Larger than the first buffer, so it grows; then the same with a limit below its size. */
    FILE *f = tmpfile();
    assert_non_null(f);
    size_t n = 200000;
    for (size_t i = 0; i < n; i++)
        fputc('a' + (int)(i % 26), f);
    rewind(f);
    size_t len = 0;
    char *all = pfi_read_all(f, 0, &len);
    assert_non_null(all);
    assert_int_equal(len, n);
    assert_int_equal(strlen(all), n);
    assert_true(all[0] == 'a' && all[n - 1] == 'a' + (int)((n - 1) % 26));
    free(all);
    rewind(f);
    assert_null(pfi_read_all(f, 1 << 17, &len));
    fclose(f);

    /* Printable text: UTF-8 without control characters; the first offender is named. */
    char why[64];
    assert_true(pfi_text_printable("", NULL, 0));
    assert_true(pfi_text_printable("r\xc3\xa9seau \xf0\x9f\x9a\x80 \xc2\xa0x", why, sizeof why));
    const char *bad[][2] = {
        {"net\xff", "invalid UTF-8 byte 0xff at byte 3"},
        {"a\033[2J", "control character 0x1b at byte 1"},
        {"a\nb", "control character 0x0a at byte 1"},
        {"tab\t", "control character 0x09 at byte 3"},
        {"x\x7f", "control character 0x7f at byte 1"},
        {"\xc2\x9b" "2J", "control character 0x9b at byte 0"},      /* C1 CSI */
        {"\xc0\xaf", "invalid UTF-8 byte 0xc0 at byte 0"},          /* overlong '/' */
        {"\xed\xa0\x80", "invalid UTF-8 byte 0xed at byte 0"},      /* a surrogate */
        {"ab\xe2\x82", "invalid UTF-8 byte 0xe2 at byte 2"},         /* cut short */
        {"4000000\xe2\x80\xae", "bidi control U+202E at byte 7"},   /* RLO */
        {"x\xe2\x80\xaa", "bidi control U+202A at byte 1"},          /* LRE */
        {"\xe2\x81\xa6y", "bidi control U+2066 at byte 0"},          /* LRI */
        {"y\xe2\x81\xa9", "bidi control U+2069 at byte 1"},          /* PDI */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = 0;
        if (pfi_text_printable(bad[i][0], why, sizeof why) || strcmp(why, bad[i][1]) != 0)
            fail_msg("bad text %zu: '%s', want '%s'", i, why, bad[i][1]);
    }
    /* Made printable: every refused byte becomes '?', the rest stays. */
    const char *shown[][2] = {
        {"net\xff", "net?"},
        {"a\033[2J", "a?[2J"},
        {"\xc2\x9b" "2J", "??2J"},
        {"ab\xe2\x82", "ab??"},
        {"r\xc3\xa9seau\n", "r\xc3\xa9seau?"},
        {"a\xe2\x80\xae" "b", "a?" "??b"},
        {"a\xe2\x80\xa9" "b", "a\xe2\x80\xa9" "b"}, /* U+2029, a separator, not a bidi control */
        {"plain", "plain"},
    };
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
        char t[32];
        snprintf(t, sizeof t, "%s", shown[i][0]);
        int changed = pfi_text_make_printable(t);
        if (strcmp(t, shown[i][1]) != 0 || changed != (strcmp(shown[i][0], shown[i][1]) != 0))
            fail_msg("made printable %zu: '%s' (changed %d), want '%s'", i, t, changed,
                     shown[i][1]);
        assert_true(pfi_text_printable(t, NULL, 0));
    }
    assert_int_equal(pfi_utf8_len("\xf0\x9f\x9a\x80"), 4);
    assert_int_equal(pfi_utf8_len("\xf4\x90\x80\x80"), 0); /* above U+10FFFF */
}

/* Label values escape backslash, quote and newline, and are cut without splitting an escape;
 * the buffer grows past its first size. */
static void test_prom(void **state)
{
    (void)state;
    char out[64];
    pfi_prom_escape("a\\b\"c\nd", out, sizeof out);
    assert_string_equal(out, "a\\\\b\\\"c\\nd");
    pfi_prom_escape("ab\"", out, 5);
    assert_string_equal(out, "ab");
    pfi_prom b;
    pfi_prom_init(&b);
    pfi_prom_head(&b, "x_total", "counter", "Things.");
    for (int i = 0; i < 4000; i++)
        pfi_prom_put(&b, "x_total{i=\"%d\"} %d\n", i, i);
    size_t len = 0;
    char *t = pfi_prom_take(&b, &len);
    assert_non_null(t);
    assert_int_equal(len, strlen(t));
    assert_true(len > 16384);
    assert_non_null(strstr(t, "# HELP x_total Things.\n# TYPE x_total counter\nx_total{i=\"0\"} 0\n"));
    assert_non_null(strstr(t, "\nx_total{i=\"3999\"} 3999\n"));
    free(t);
}

/* A histogram's buckets are cumulative in the text, bounds on a bucket's edge fall in it,
 * values above every bound count only in +Inf, NaN is no observation, and the bounds print
 * as short as they read back (le="0.1"). */
static void test_prom_hist(void **state)
{
    (void)state;
    static const double le[] = {0.1, 2, 1e300};
    pfi_prom_hist h;
    pfi_prom_hist_init(&h, le, 3);
    const double v[] = {0.05, 0.1, 0.5, 2, 3, 1e301, NAN};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        pfi_prom_hist_observe(&h, v[i]);
    assert_true(h.count == 6);
    pfi_prom b;
    pfi_prom_init(&b);
    pfi_prom_hist_put(&b, "x_seconds", "How long.", &h);
    char *t = pfi_prom_take(&b, NULL);
    assert_non_null(t);
    char want[512];
    snprintf(want, sizeof want,
             "# HELP x_seconds How long.\n# TYPE x_seconds histogram\n"
             "x_seconds_bucket{le=\"0.1\"} 2\nx_seconds_bucket{le=\"2\"} 4\n"
             "x_seconds_bucket{le=\"1e+300\"} 5\nx_seconds_bucket{le=\"+Inf\"} 6\n"
             "x_seconds_sum %.17g\nx_seconds_count 6\n",
             0.05 + 0.1 + 0.5 + 2 + 3 + 1e301);
    assert_string_equal(t, want);
    free(t);
    /* a bound that 15 digits do not carry is printed with 17 */
    static const double odd[] = {0.1 + 0.2};
    pfi_prom_hist_init(&h, odd, 1);
    pfi_prom_init(&b);
    pfi_prom_hist_put(&b, "y", "Y.", &h);
    t = pfi_prom_take(&b, NULL);
    assert_non_null(strstr(t, "y_bucket{le=\"0.30000000000000004\"} 0\n"));
    free(t);
    /* more bounds than it holds: clamped, never written past */
    double many[PFI_PROM_HIST_MAX + 4];
    for (int i = 0; i < PFI_PROM_HIST_MAX + 4; i++)
        many[i] = i + 1;
    pfi_prom_hist_init(&h, many, PFI_PROM_HIST_MAX + 4);
    assert_int_equal(h.nb, PFI_PROM_HIST_MAX);
    pfi_prom_hist_observe(&h, PFI_PROM_HIST_MAX + 2);
    assert_true(h.count == 1);
    for (int i = 0; i < PFI_PROM_HIST_MAX; i++)
        assert_true(h.in[i] == 0);
}

/* The ring keeps one sample per min_dt, drops the oldest past PFI_SERIES_MAX, and its JSON
 * takes since < t <= until, oldest first, NaN as null. */
static void test_series(void **state)
{
    (void)state;
    pfi_series *s = malloc(sizeof *s);
    assert_non_null(s);
    pfi_series_init(s, 1.0);
    double v[PFI_SERIES_COLS] = {NAN, 2, 3};
    assert_int_equal(pfi_series_add(s, 10, v), 1);
    assert_int_equal(pfi_series_add(s, 10.5, v), 0);
    assert_int_equal(pfi_series_add(s, 9, v), 0);
    assert_int_equal(pfi_series_add(s, NAN, v), 0);
    for (int i = 1; i < PFI_SERIES_MAX + 400; i++) {
        v[1] = i;
        assert_int_equal(pfi_series_add(s, 10 + i, v), 1);
    }
    assert_int_equal(s->n, PFI_SERIES_MAX);
    static const char *const names[PFI_SERIES_COLS] = {"a", "b", "c"};
    json_t *o = pfi_series_json(s, 0, 1e9, names);
    json_t *t = json_object_get(o, "t"), *b = json_object_get(o, "b");
    assert_int_equal(json_array_size(t), PFI_SERIES_MAX);
    assert_true(fabs(json_real_value(json_array_get(t, 0)) - 410) < 1e-9);
    assert_true(fabs(json_real_value(json_array_get(b, 0)) - 400) < 1e-9);
    assert_true(json_is_null(json_array_get(json_object_get(o, "a"), 5)));
    json_decref(o);
    o = pfi_series_json(s, 4000, 4005, names);
    assert_int_equal(json_array_size(json_object_get(o, "t")), 5);
    assert_true(fabs(json_real_value(json_array_get(json_object_get(o, "t"), 0)) - 4001) < 1e-9);
    json_decref(o);
    free(s);
}

/* A small file written whole: never through a link planted where its temporary file goes
 * (the port file's fixed "PATH.tmp" in /tmp, a link to a file of root's, was written through),
 * the link's target left as it was, and a link at the path itself replaced, not followed. */
static void test_write_new(void **state)
{
    (void)state;
    char dir[512], path[600], tmp[700], victim[600], got[64] = "";
    snprintf(dir, sizeof dir, "%s/write-new-XXXXXX",
             getenv("PFI_TEST_TMP") ? getenv("PFI_TEST_TMP") : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/port", dir);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    fclose(f);
    assert_int_equal(symlink(victim, tmp), 0);
    assert_int_equal(symlink(victim, path), 0);
    pfi_err e = {0};
    assert_int_equal(pfi_write_new(path, "127.0.0.1:9455\n", &e), PFI_OK);
    f = fopen(victim, "r");
    assert_non_null(f);
    assert_non_null(fgets(got, sizeof got, f));
    fclose(f);
    assert_string_equal(got, "precious\n");
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    f = fopen(path, "r");
    assert_non_null(fgets(got, sizeof got, f));
    fclose(f);
    assert_string_equal(got, "127.0.0.1:9455\n");
    assert_int_equal(lstat(tmp, &st), -1);
    snprintf(tmp, sizeof tmp, "%s/nodir/port", dir);
    assert_int_equal(pfi_write_new(tmp, "x", &e), PFI_EIO);
    assert_non_null(strstr(e.msg, "cannot write"));
    unlink(path);
    unlink(victim);
    assert_int_equal(rmdir(dir), 0);
}

/* Where a named output goes: a regular file or a new path is replaced through a rename, a
 * link's target gets the content (the link stays), a FIFO or a device is written into
 * (renamed over as root, /dev/null became a regular file for the whole machine). */
static void test_out_target(void **state)
{
    (void)state;
    char dir[256], p[400], t[4096], want[4096];
    const char *base = getenv("PFI_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/outtarget-XXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(dir));
    pfi_err e = {0};
    int direct = -1;
    snprintf(p, sizeof p, "%s/new.json", dir); /* a new path */
    assert_int_equal(pfi_out_target(p, t, sizeof t, &direct, &e), PFI_OK);
    assert_string_equal(t, p);
    assert_int_equal(direct, 0);
    FILE *f = fopen(p, "w"); /* a regular file */
    assert_non_null(f);
    fclose(f);
    assert_int_equal(pfi_out_target(p, t, sizeof t, &direct, &e), PFI_OK);
    assert_true(!direct && !strcmp(t, p));
    char link[420];
    snprintf(link, sizeof link, "%s/link.json", dir); /* a link to it: its target */
    assert_int_equal(symlink("new.json", link), 0);
    assert_int_equal(pfi_out_target(link, t, sizeof t, &direct, &e), PFI_OK);
    assert_non_null(realpath(p, want));
    assert_true(!direct && !strcmp(t, want));
    char fifo[420];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir); /* a FIFO, and a link to it: written into */
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(pfi_out_target(fifo, t, sizeof t, &direct, &e), PFI_OK);
    assert_true(direct == 1 && !strcmp(t, fifo));
    char lf[420];
    snprintf(lf, sizeof lf, "%s/lf", dir);
    assert_int_equal(symlink("fifo", lf), 0);
    assert_int_equal(pfi_out_target(lf, t, sizeof t, &direct, &e), PFI_OK);
    assert_true(direct == 1 && !strcmp(t, lf));
    assert_int_equal(pfi_out_target("/dev/null", t, sizeof t, &direct, &e), PFI_OK);
    assert_int_equal(direct, 1);
    char dang[420];
    snprintf(dang, sizeof dang, "%s/dang", dir); /* a dangling link, a directory: refused */
    assert_int_equal(symlink("nowhere", dang), 0);
    assert_int_equal(pfi_out_target(dang, t, sizeof t, &direct, &e), PFI_EIO);
    assert_non_null(strstr(e.msg, "a link to a missing file"));
    assert_int_equal(pfi_out_target(dir, t, sizeof t, &direct, &e), PFI_EINVAL);
    char rm[400];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    assert_int_equal(system(rm), 0);
}

static void test_mkdir_p(void **state)
{
    char base[] = "/tmp/pfi-test-util.XXXXXX", dir[128], file[128];
    assert_non_null(mkdtemp(base));
    pfi_err e = {0};
    snprintf(dir, sizeof dir, "%s/a/b/c", base);
    assert_int_equal(pfi_mkdir_p(dir, &e), PFI_OK);
    assert_int_equal(pfi_mkdir_p(dir, &e), PFI_OK); /* existing: fine */
    struct stat st;
    assert_true(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    snprintf(file, sizeof file, "%s/f", base);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(dir, sizeof dir, "%s/f/x", base);
    assert_int_equal(pfi_mkdir_p(dir, &e), PFI_EIO);
    assert_non_null(strstr(e.msg, "cannot create"));
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    assert_int_equal(system(cmd), 0);
}

/* Both daemons check a request's token here: the scheme in any case, the token exactly. */
static void test_token_ok(void **state)
{
    (void)state;
    const char *tok = "0123456789abcdefXYZ";
    assert_int_equal(pfi_token_ok(tok, "Bearer 0123456789abcdefXYZ"), 1);
    assert_int_equal(pfi_token_ok(tok, "bearer 0123456789abcdefXYZ"), 1);
    assert_int_equal(pfi_token_ok(tok, "BEARER 0123456789abcdefXYZ"), 1);
    assert_int_equal(pfi_token_ok(tok, "Bearer 0123456789abcdefxyz"), 0);
    assert_int_equal(pfi_token_ok(tok, "Bearer 0123456789abcdefXY"), 0);
    assert_int_equal(pfi_token_ok(tok, "Bearer 0123456789abcdefXYZ0"), 0);
    assert_int_equal(pfi_token_ok(tok, "Basic 0123456789abcdefXYZ"), 0);
    assert_int_equal(pfi_token_ok(tok, "Bearer"), 0);
    assert_int_equal(pfi_token_ok(tok, NULL), 0);
    assert_int_equal(pfi_token_ok("", "Bearer "), 0);
}

/* The %-decoding both HTTP servers use: a %00 leaves the string as sent (decoded, its NUL cut
 * "/v1/budget%00" to "/v1/budget"), anything else decodes exactly as libmicrohttpd's own
 * MHD_http_unescape (which both servers used before), on fixed cases and on 20000 random
 * strings over '%', '+', hex digits and others. */
static void test_url_unescape(void **state)
{
    (void)state;
    char a[] = "/v1/budget%00", b[] = "/metrics%00.txt", c[] = "/v1/%67pus?x=%2F%2f",
         d[] = "%", e[] = "%4", f[] = "%zz%4g100%+a", g[] = "%2500";
    assert_int_equal(pfi_url_unescape(a), strlen("/v1/budget%00"));
    assert_string_equal(a, "/v1/budget%00");
    assert_int_equal(pfi_url_unescape(b), strlen("/metrics%00.txt"));
    assert_string_equal(b, "/metrics%00.txt");
    assert_int_equal(pfi_url_unescape(c), strlen("/v1/gpus?x=//"));
    assert_string_equal(c, "/v1/gpus?x=//");
    assert_int_equal(pfi_url_unescape(d), 1);
    assert_string_equal(d, "%");
    assert_int_equal(pfi_url_unescape(e), 2);
    assert_string_equal(e, "%4");
    pfi_url_unescape(f);
    assert_string_equal(f, "%zz%4g100%+a");
    pfi_url_unescape(g); /* "%25" is '%': the "00" after it is text, not a NUL */
    assert_string_equal(g, "%00");
    static const char alpha[] = "%%%+0a9fFgG/ .";
    unsigned seed = 7;
    for (int k = 0; k < 20000; k++) {
        char x[16], y[16];
        seed = seed * 1103515245u + 12345u;
        int n = (int)((seed >> 16) % 15);
        for (int i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            x[i] = alpha[(seed >> 16) % (sizeof alpha - 1)];
        }
        x[n] = '\0';
        memcpy(y, x, sizeof x);
        size_t got = pfi_url_unescape(x);
        if (strstr(y, "%00")) {
            assert_int_equal(got, (size_t)n);
            assert_memory_equal(x, y, (size_t)n + 1);
            continue;
        }
        size_t want = MHD_http_unescape(y);
        if (got != want || memcmp(x, y, want + 1))
            fail_msg("case %d: %zu bytes, libmicrohttpd %zu", k, got, want);
    }
}

/* Header fields as a server lists them, in order; NULL ends them.  1: refused as cross-site. */
static int origin_check(const char *method, const char *const *fields)
{
    pfi_http_origin o = {0};
    for (; *fields; fields += 2)
        pfi_http_origin_note(&o, fields[0], fields[1]);
    const char *why;
    int cross = pfi_http_origin_cross(&o, method, &why);
    assert_int_equal(cross, why != NULL);
    return cross;
}

/* A change a web page of another origin sent (a browser says so) is refused; one from a client
 * that is no browser (no Origin, no Sec-Fetch-Site), or from the daemon's own page, is not;
 * reads never are. */
static void test_http_origin(void **state)
{
    (void)state;
    const char *const plain[] = {"Host", "127.0.0.1:8080", "Content-Type", "text/plain", NULL};
    const char *const same[] = {"Host", "127.0.0.1:8080", "Origin", "http://127.0.0.1:8080", NULL};
    const char *const same_case[] = {"host", "Node1.Example:8080", "origin",
                                     "HTTP://node1.example:8080", NULL};
    const char *const dflt[] = {"Host", "node1:80", "Origin", "http://node1", NULL};
    const char *const dflt_s[] = {"Host", "node1", "Origin", "https://node1:443", NULL};
    const char *const v6[] = {"Host", "[::1]:8080", "Origin", "http://[::1]:8080", NULL};
    const char *const fs_same[] = {"Host", "a", "Sec-Fetch-Site", "same-origin", "Origin",
                                   "http://b", NULL}; /* a proxy's Host: the browser knows */
    const char *const fs_none[] = {"Host", "a", "Sec-Fetch-Site", "none", NULL};
    const char *const *ok[] = {plain, same, same_case, dflt, dflt_s, v6, fs_same, fs_none};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (origin_check("POST", ok[i]))
            fail_msg("case %zu refused", i);
    const char *const other[] = {"Host", "127.0.0.1:8080", "Origin", "http://localhost:18005",
                                 NULL};
    const char *const port[] = {"Host", "127.0.0.1:8080", "Origin", "http://127.0.0.1:8081", NULL};
    const char *const scheme[] = {"Host", "node1:80", "Origin", "https://node1", NULL};
    const char *const null_o[] = {"Host", "a", "Origin", "null", NULL};
    const char *const no_host[] = {"Origin", "http://a", NULL};
    const char *const two[] = {"Host", "a", "Origin", "http://a", "Origin", "http://b", NULL};
    const char *const path[] = {"Host", "a", "Origin", "http://a/x", NULL};
    const char *const prefix[] = {"Host", "a.example", "Origin", "http://a.example.evil", NULL};
    const char *const fs_cross[] = {"Host", "a", "Sec-Fetch-Site", "cross-site", NULL};
    const char *const fs_site[] = {"Host", "a", "Origin", "http://a", "Sec-Fetch-Site",
                                   "same-site", NULL};
    const char *const *bad[] = {other, port, scheme, null_o, no_host, two, path, prefix,
                                fs_cross, fs_site};
    const char *const methods[] = {"POST", "PUT", "DELETE", "PATCH"};
    for (size_t m = 0; m < 4; m++)
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
            if (!origin_check(methods[m], bad[i]))
                fail_msg("%s case %zu taken", methods[m], i);
    const char *const reads[] = {"GET", "HEAD", "OPTIONS"};
    for (size_t m = 0; m < 3; m++)
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
            assert_int_equal(origin_check(reads[m], bad[i]), 0);
}

/* A bounded command run: its stdout, a failure, a command that does not finish in time (killed),
 * one that does not exist, and output past the cap kept to the cap. */
/* Header fields as a server lists them, in order; NULL ends them.  The status to answer. */
static int frame_check(const char *const *fields, const char **why)
{
    pfi_http_frame f = {0};
    for (; *fields; fields += 2)
        pfi_http_frame_note(&f, fields[0], fields[1]);
    return pfi_http_frame_check(&f, why);
}

static void test_http_frame(void **state)
{
    (void)state;
    const char *why;
    const char *const one[] = {"Host", "x", "content-length", "17", NULL};
    const char *const none[] = {"Host", "x", NULL};
    const char *const chunked[] = {"Transfer-Encoding", " Chunked ", NULL};
    const char *const same[] = {"Content-Length", "17", "CONTENT-LENGTH", "017", NULL};
    const char *const *good[] = {one, none, chunked, same};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        assert_int_equal(frame_check(good[i], &why), 0);
        assert_null(why);
    }
    const char *const differ[] = {"Content-Length", "17", "Content-Length", "200", NULL};
    const char *const differ2[] = {"Content-Length", "200", "content-length", "17", NULL};
    const char *const bad2[] = {"Content-Length", "17", "Content-Length", "17abc", NULL};
    const char *const bad1[] = {"Content-Length", "x", "Content-Length", "x", NULL};
    const char *const three[] = {"Content-Length", "5", "Content-Length", "5",
                                 "Content-Length", "6", NULL};
    const char *const both[] = {"Content-Length", "17", "Transfer-Encoding", "chunked", NULL};
    const char *const both2[] = {"transfer-encoding", "gzip", "Content-Length", "17", NULL};
    const char *const plus[] = {"Content-Length", "17", "Content-Length", "+17", NULL};
    const char *const minus0[] = {"Content-Length", "0", "Content-Length", "-0", NULL};
    const char *const *twice[] = {differ, differ2, bad2, bad1, three, both, both2, plus, minus0};
    for (size_t i = 0; i < sizeof twice / sizeof *twice; i++) {
        assert_int_equal(frame_check(twice[i], &why), 400);
        assert_non_null(strstr(why, "Content-Length"));
    }
    const char *const gzip[] = {"Transfer-Encoding", "gzip, chunked", NULL};
    const char *const identity[] = {"Transfer-Encoding", "identity", NULL};
    const char *const chunked2[] = {"Transfer-Encoding", "chunked, chunked", NULL};
    const char *const split[] = {"Transfer-Encoding", "gzip", "Transfer-Encoding", "chunked",
                                 NULL};
    const char *const *coded[] = {gzip, identity, chunked2, split};
    for (size_t i = 0; i < sizeof coded / sizeof *coded; i++) {
        assert_int_equal(frame_check(coded[i], &why), 501);
        assert_non_null(strstr(why, "Transfer-Encoding"));
    }
}

static void test_cmd_capture(void **state)
{
    char *out = NULL;
    pfi_err e = {0};
    char *ok[] = {"sh", "-c", "printf 'StdOut=/a b\\n'; echo err >&2", NULL};
    assert_int_equal(pfi_cmd_capture(ok, 10, 4096, &out, &e), PFI_OK);
    assert_string_equal(out, "StdOut=/a b\n");
    free(out);
    char *bad[] = {"sh", "-c", "echo partial; exit 3", NULL};
    assert_int_equal(pfi_cmd_capture(bad, 10, 4096, &out, &e), PFI_ECHILD);
    assert_null(out);
    assert_non_null(strstr(e.msg, "exit 3"));
    char *slow[] = {"sleep", "30", NULL};
    assert_int_equal(pfi_cmd_capture(slow, 0.2, 4096, &out, &e), PFI_ETIMEOUT);
    assert_null(out);
    char *none[] = {"pfi-no-such-command-xyz", NULL};
    assert_int_equal(pfi_cmd_capture(none, 10, 4096, &out, &e), PFI_ECHILD);
    assert_non_null(strstr(e.msg, "could not be run"));
    char *big[] = {"sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo 0123456789; i=$((i+1)); done",
                   NULL};
    assert_int_equal(pfi_cmd_capture(big, 10, 100, &out, &e), PFI_OK);
    assert_int_equal(strlen(out), 100);
    free(out);
    /* The buffer grows with the answer (22,000 bytes, past its first 4 KiB): all kept, in order,
     * and cut at max when the answer is longer. */
    assert_int_equal(pfi_cmd_capture(big, 10, 1 << 20, &out, &e), PFI_OK);
    assert_int_equal(strlen(out), 22000);
    for (size_t i = 0; i < 22000; i += 11)
        assert_memory_equal(out + i, "0123456789\n", 11);
    free(out);
    assert_int_equal(pfi_cmd_capture(big, 10, 9000, &out, &e), PFI_OK);
    assert_int_equal(strlen(out), 9000);
    assert_memory_equal(out + 8998, "01", 2); /* 818 lines of 11 bytes, then the next one begun */
    free(out);
}

/* pfi_num_json: whole numbers as integers, the rest as %.17g; every one reads back as the same
 * double through jansson. */
static void test_num_json(void **state)
{
    static const double v[] = {0,     450,    -3,      612.5,  1.0 / 3, 1e-7,  -0.0,
                                1e15,  9007199254740991.0, 9007199254740992.0, 1e300, 437.25,
                                -1e-300};
    static const char *const want[] = {"0", "450", "-3", "612.5", NULL, NULL, NULL,
                                       "1000000000000000", "9007199254740991", NULL, NULL,
                                       "437.25", NULL};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char out[40];
        int n = pfi_num_json(out, sizeof out, v[i]);
        assert_int_equal(n, (int)strlen(out));
        if (want[i])
            assert_string_equal(out, want[i]);
        json_t *d = json_loads(out, JSON_DECODE_ANY, NULL);
        assert_non_null(d);
        assert_true(json_is_number(d));
        assert_true(json_number_value(d) == v[i]);
        json_decref(d);
    }
}

/* A JSON string from any bytes: UTF-8 kept as it is, anything else with its high bytes as '?'
 * (jansson alone gives NULL, and an error answer built on it was no answer). */
static void test_json_text(void **state)
{
    (void)state;
    json_t *j = pfi_json_text("caf\xc3\xa9 ok");
    assert_string_equal(json_string_value(j), "caf\xc3\xa9 ok");
    json_decref(j);
    assert_null(json_string("got '1\xff\xfe'"));
    j = pfi_json_text("got '1\xff\xfe'");
    assert_string_equal(json_string_value(j), "got '1?" "?'");
    json_decref(j);
    j = pfi_json_text("\xc3");
    assert_string_equal(json_string_value(j), "?");
    json_decref(j);
    assert_null(pfi_json_text(NULL));
}

/* The error document of both HTTP APIs, byte for byte as they sent it before it was built in
 * one place: the node daemon's {"error": {"code", "message"}}, the controller's {"error": "..."}
 * with any other fields before it; a message that is not UTF-8 is still answered. */
static void test_json_error(void **state)
{
    (void)state;
    struct {
        const char *code, *msg, *want;
    } c[] = {
        {"EINVAL", "got '1\xff'", "{\"error\":{\"code\":\"EINVAL\",\"message\":\"got '1?'\"}}"},
        {"ENOENT", "no such job", "{\"error\":{\"code\":\"ENOENT\",\"message\":\"no such job\"}}"},
        {NULL, "no such route", "{\"error\":\"no such route\"}"},
        {NULL, "caf\xc3\xa9 \"q\"", "{\"error\":\"caf\xc3\xa9 \\\"q\\\"\"}"},
        {NULL, "caf\xc3\xa9 \xfe", "{\"error\":\"caf?? ?\"}"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        json_t *d = pfi_json_error(NULL, c[i].code, c[i].msg);
        char *t = json_dumps(d, JSON_COMPACT);
        assert_non_null(t);
        assert_string_equal(t, c[i].want);
        free(t);
        json_decref(d);
    }
    json_t *d = pfi_json_error(json_pack("{s:i}", "achievable_w", 500), NULL, "infeasible");
    char *t = json_dumps(d, JSON_COMPACT);
    assert_string_equal(t, "{\"achievable_w\":500,\"error\":\"infeasible\"}");
    free(t);
    json_decref(d);
    /* no message (as out of memory): no document, and the fields given are freed (ASan) */
    assert_null(pfi_json_error(json_pack("{s:i}", "achievable_w", 500), NULL, NULL));
    assert_null(pfi_json_error(NULL, "EINVAL", NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_text), cmocka_unit_test(test_json_error),
        cmocka_unit_test(test_decimal),
        cmocka_unit_test(test_duration), cmocka_unit_test(test_power),
        cmocka_unit_test(test_budget), cmocka_unit_test(test_budget_cuts),
        cmocka_unit_test(test_http_frame),
        cmocka_unit_test(test_http_origin),
        cmocka_unit_test(test_num_json), cmocka_unit_test(test_num_ll),
        cmocka_unit_test(test_slowdown),
        cmocka_unit_test(test_index_list), cmocka_unit_test(test_lists),
        cmocka_unit_test(test_args), cmocka_unit_test(test_args_help_formats),
        cmocka_unit_test(test_err),
        cmocka_unit_test(test_clock), cmocka_unit_test(test_json),
        cmocka_unit_test(test_text), cmocka_unit_test(test_text_fit),
        cmocka_unit_test(test_text_wrap),
        cmocka_unit_test(test_mkdir_p),
        cmocka_unit_test(test_out_target),
        cmocka_unit_test(test_write_new),
        cmocka_unit_test(test_prom), cmocka_unit_test(test_prom_hist),
        cmocka_unit_test(test_series),
        cmocka_unit_test(test_token_ok), cmocka_unit_test(test_url_unescape),
        cmocka_unit_test(test_cmd_capture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
