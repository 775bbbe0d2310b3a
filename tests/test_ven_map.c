/* SPDX-License-Identifier: Apache-2.0 */
/* OpenADR 3.0 event intervals -> grid events (serve/ven_map.c, pfi_ven_map), on payloads
 * written for this test from the OpenADR 3.0 schema: the limit in the units the event's
 * payload descriptor names, an interval carrying several payloads, an open-ended duration,
 * times with offsets, intervals inheriting the event's period; and what must be refused with a
 * reason (unknown units, unknown payload types, malformed values) or ignored (SIMPLE 0). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "serve/ven_map.h"
#include "util/isotime.h"

/* The time the mapping is made at: 2026-06-01T00:00:00Z. */
#define NOW_S 1780272000.0

/* The configuration the mappings are made with: the VEN's name is the client id's. */
static pfi_ven_config config(void)
{
    pfi_ven_config c;
    pfi_ven_config_defaults(&c, "node");
    snprintf(c.program, sizeof c.program, "dr");
    snprintf(c.client_id, sizeof c.client_id, "pfi-site");
    return c;
}

/* The body interval k of the event (JSON text) maps to under c; NULL with why. */
static json_t *map_with(const pfi_ven_config *c, const char *event_json, int k, char *why,
                        size_t wn)
{
    json_error_t je;
    json_t *ev = json_loads(event_json, 0, &je);
    if (!ev)
        fail_msg("test payload is not JSON: %s: %s", je.text, event_json);
    json_t *iv = json_array_get(json_object_get(ev, "intervals"), (size_t)k);
    why[0] = 0;
    pfi_ven_map_note nt;
    json_t *b = pfi_ven_map(c, ev, iv, k, NOW_S, 0, &nt, why, wn);
    json_decref(ev);
    return b;
}

static json_t *map(const char *event_json, int k, char *why, size_t wn)
{
    pfi_ven_config c = config();
    return map_with(&c, event_json, k, why, wn);
}

/* The body interval k of the event maps to under c; refused, the test fails naming what and
 * why. */
static json_t *map_taken_with(const pfi_ven_config *c, const char *event_json, int k,
                              const char *what)
{
    char why[300];
    json_t *b = map_with(c, event_json, k, why, sizeof why);
    if (!b)
        fail_msg("%s refused: %s", what, why);
    return b;
}

static json_t *map_taken(const char *event_json, int k, const char *what)
{
    pfi_ven_config c = config();
    return map_taken_with(&c, event_json, k, what);
}

static double num(json_t *b, const char *key)
{
    json_t *x = json_object_get(b, key);
    if (!json_is_number(x))
        fail_msg("no number %s", key);
    return json_number_value(x);
}

#define EV(DESC, PERIOD, IVS)                                                                    \
    "{\"id\": \"e1\", \"objectType\": \"EVENT\", \"programID\": \"p1\", \"priority\": 2, "       \
    "\"payloadDescriptors\": " DESC ", \"intervalPeriod\": " PERIOD ", \"intervals\": " IVS "}"
#define KW_DESC "[{\"objectType\": \"EVENT_PAYLOAD_DESCRIPTOR\", " \
                "\"payloadType\": \"IMPORT_CAPACITY_LIMIT\", \"units\": \"KW\"}]"
#define PERIOD_1H "{\"start\": \"2026-07-01T12:00:00Z\", \"duration\": \"PT1H\"}"
#define LIMIT(V) "[{\"id\": 0, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", " \
                 "\"values\": [" V "]}]}]"

static void test_units_of_the_descriptor(void **state)
{
    (void)state;
    char why[300];
    struct {
        const char *units;
        double w;
    } ok[] = {{"KW", 500e3}, {"kW", 500e3}, {"W", 500}, {"MW", 500e6}, {"mw", 500e6}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 EV("[{\"objectType\": \"EVENT_PAYLOAD_DESCRIPTOR\", \"payloadType\": "
                    "\"IMPORT_CAPACITY_LIMIT\", \"units\": \"%s\"}]", PERIOD_1H, LIMIT("500")),
                 ok[i].units);
        char what[64];
        snprintf(what, sizeof what, "units %s", ok[i].units);
        json_t *b = map_taken(text, 0, what);
        if (num(b, "limit_w") != ok[i].w)
            fail_msg("units %s: %g W, not %g W", ok[i].units, num(b, "limit_w"), ok[i].w);
        json_decref(b);
    }
    /* No descriptor, or one without units: kW, as documented. */
    json_t *b = map(EV("null", PERIOD_1H, LIMIT("500")), 0, why, sizeof why);
    assert_non_null(b);
    assert_true(num(b, "limit_w") == 500e3);
    json_decref(b);
    /* Units that are not power (or not real power) are no limit pfi can apply: refused, with
     * the units named, rather than read as kW. */
    const char *bad[] = {"KVA", "KWH", "PERCENT", "A"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 EV("[{\"objectType\": \"EVENT_PAYLOAD_DESCRIPTOR\", \"payloadType\": "
                    "\"IMPORT_CAPACITY_LIMIT\", \"units\": \"%s\"}]", PERIOD_1H, LIMIT("500")),
                 bad[i]);
        b = map(text, 0, why, sizeof why);
        if (b)
            fail_msg("units %s taken as %g W", bad[i], num(b, "limit_w"));
        if (!strstr(why, bad[i]) || !strstr(why, "units"))
            fail_msg("units %s: the reason does not name them: %s", bad[i], why);
    }
}

static double at(const char *iso)
{
    double t;
    pfi_err e = {0};
    if (pfi_time_parse(iso, 0, &t, &e) != PFI_OK)
        fail_msg("%s", e.msg);
    return t;
}

/* Windows: offsets and fractions in the start, the event's period inherited by intervals
 * without their own (the k-th k durations later), an interval's own period kept. */
static void test_windows(void **state)
{
    (void)state;
    char why[300];
    json_t *b = map(EV(KW_DESC, "{\"start\": \"2026-03-29T03:30:00.250+02:00\", "
                                "\"duration\": \"PT15M\"}", LIMIT("500")), 0, why, sizeof why);
    assert_non_null(b);
    assert_true(num(b, "start") == at("2026-03-29T01:30:00.25Z"));
    assert_true(num(b, "end") == at("2026-03-29T01:45:00.25Z"));
    assert_true(num(b, "limit_w") == 500e3 && num(b, "priority") == -2);
    json_decref(b);
    const char *three = EV(KW_DESC, PERIOD_1H,
        "[{\"id\": 7, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [300]}]},"
        " {\"id\": 3, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [200]}]},"
        " {\"id\": 9, \"intervalPeriod\": {\"start\": \"2026-07-01T06:00:00-05:00\", "
        "\"duration\": \"P1DT30M\"}, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", "
        "\"values\": [100.5]}]}]");
    b = map(three, 1, why, sizeof why);
    assert_non_null(b);
    assert_true(num(b, "start") == at("2026-07-01T13:00:00Z") &&
                num(b, "end") == at("2026-07-01T14:00:00Z") && num(b, "limit_w") == 200e3);
    assert_string_equal(json_string_value(json_object_get(b, "id")), "oadr-e1-1");
    json_decref(b);
    b = map(three, 2, why, sizeof why);
    assert_non_null(b);
    assert_true(num(b, "start") == at("2026-07-01T11:00:00Z") &&
                num(b, "end") == at("2026-07-02T11:30:00Z") && num(b, "limit_w") == 100.5e3);
    json_decref(b);
}

/* An interval may carry several payloads (a list of valuesMap objects): the one pfi acts on
 * is taken wherever it is in the list, and the others (a price, a GHG estimate) are left. */
static void test_several_payloads(void **state)
{
    (void)state;
    char why[300];
    json_t *b = map_taken(EV(KW_DESC, PERIOD_1H,
                             "[{\"id\": 0, \"payloads\": [{\"type\": \"PRICE\", "
                             "\"values\": [0.31]}, {\"type\": \"GHG\", \"values\": [412]}, "
                             "{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [250]}]}]"),
                          0, "a limit after a PRICE payload");
    assert_true(num(b, "limit_w") == 250e3);
    json_decref(b);
    b = map_taken(EV("null", PERIOD_1H,
                     "[{\"id\": 0, \"payloads\": [{\"type\": \"PRICE\", \"values\": [0.31]}, "
                     "{\"type\": \"SIMPLE\", \"values\": [2]}]}]"),
                  0, "SIMPLE after a PRICE payload");
    assert_true(num(b, "cut") == 0.20);
    json_decref(b);
    /* Nothing pfi acts on, of types OpenADR 3.0 defines (a price, an export limit, an alert
     * whose value is text): nothing to do and no error (a price counted one at every poll). */
    strcpy(why, "x");
    b = map(EV("null", PERIOD_1H,
               "[{\"id\": 0, \"payloads\": [{\"type\": \"PRICE\", \"values\": [0.31]}, "
               "{\"type\": \"EXPORT_CAPACITY_LIMIT\", \"values\": [50]}]}]"), 0, why, sizeof why);
    assert_null(b);
    assert_string_equal(why, "");
    strcpy(why, "x");
    b = map(EV("null", PERIOD_1H,
               "[{\"id\": 0, \"payloads\": [{\"type\": \"ALERT_FLEX_ALERT\", "
               "\"values\": [\"shift load\"]}]}]"), 0, why, sizeof why);
    assert_null(b);
    assert_string_equal(why, "");
    /* A type no one defines (a misspelt limit) is an error naming it. */
    b = map(EV("null", PERIOD_1H,
               "[{\"id\": 0, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMT\", "
               "\"values\": [50]}]}]"), 0, why, sizeof why);
    assert_null(b);
    assert_non_null(strstr(why, "unknown payload type IMPORT_CAPACITY_LIMT"));
}

/* A limit too large for a double once in watts (1e306 kW) is a limit above any site's maximum,
 * as 1e300 kW is (the host does not take it, and says no error): it had no limit_w at all. */
static void test_limit_overflow(void **state)
{
    (void)state;
    json_t *b = map_taken(EV(KW_DESC, PERIOD_1H,
                             "[{\"id\": 0, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", "
                             "\"values\": [1e306]}]}]"),
                          0, "a limit of 1e306 kW");
    assert_true(isfinite(num(b, "limit_w")) && num(b, "limit_w") > 1e300);
    json_decref(b);
}

/* A duration of P9999Y is infinity (OpenADR 3.0): the event holds until the VTN withdraws
 * it, to the last second a date is written for. */
static void test_open_ended(void **state)
{
    (void)state;
    json_t *b = map_taken(EV(KW_DESC,
                             "{\"start\": \"2026-12-03T18:00:00Z\", \"duration\": \"P9999Y\"}",
                             LIMIT("400")),
                          0, "P9999Y");
    assert_true(num(b, "start") == at("2026-12-03T18:00:00Z"));
    assert_true(num(b, "end") == PFI_TIME_MAX_S);
    json_decref(b);
}

#define AT_1200 "\"start\": \"2026-07-01T12:00:00Z\""

/* OpenADR 3.0.1's intervalPeriod: "A duration of default PT0S indicates instantaneous or
 * infinity, depending on payloadType".  For a limit and a SIMPLE level it is infinity: PT0S,
 * no duration and a null one hold until the VTN changes or withdraws the event, as P9999Y does
 * (they were refused, and the limit ignored).  The spec's pattern writes years and months
 * first: 0 of them is a length like any other; other numbers of them have none, and are
 * refused saying so.  An interval's own intervalPeriod with only a start takes the event's
 * duration. */
static void test_open_durations(void **state)
{
    (void)state;
    char why[300];
    const char *open[] = {"{" AT_1200 ", \"duration\": \"PT0S\"}", "{" AT_1200 "}",
                          "{" AT_1200 ", \"duration\": null}",
                          "{" AT_1200 ", \"duration\": \"P0Y0M0DT0H0M0S\"}"};
    for (size_t i = 0; i < sizeof open / sizeof open[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, EV(KW_DESC, "%s", LIMIT("5")), open[i]);
        json_t *b = map_taken(text, 0, open[i]);
        if (num(b, "start") != at("2026-07-01T12:00:00Z") || num(b, "end") != PFI_TIME_MAX_S)
            fail_msg("%s: a limit from %g to %g, not until further notice", open[i],
                     num(b, "start"), num(b, "end"));
        json_decref(b);
        snprintf(text, sizeof text, EV("null", "%s",
                                       "[{\"id\": 0, \"payloads\": [{\"type\": \"SIMPLE\", "
                                       "\"values\": [2]}]}]"), open[i]);
        b = map_taken(text, 0, open[i]);
        if (num(b, "end") != PFI_TIME_MAX_S || num(b, "cut") != 0.20)
            fail_msg("%s: SIMPLE 2 to %g, not until further notice", open[i], num(b, "end"));
        json_decref(b);
    }
    /* Zero years and months, as the spec's pattern allows them. */
    json_t *b = map_taken(EV(KW_DESC, "{" AT_1200 ", \"duration\": \"P0Y0M0DT1H0M0S\"}",
                             LIMIT("5")), 0, "P0Y0M0DT1H0M0S");
    assert_true(num(b, "end") - num(b, "start") == 3600);
    json_decref(b);
    b = map_taken(EV(KW_DESC, "{" AT_1200 ", \"duration\": \"P0Y0M1DT0.5S\"}", LIMIT("5")), 0,
                  "P0Y0M1DT0.5S");
    assert_true(num(b, "end") - num(b, "start") == 86400.5);
    json_decref(b);
    /* Months and years have no length: refused, and the reason says so. */
    const char *cal[] = {"P1M", "P1Y", "P0Y1M", "P1Y0M0DT1H"};
    for (size_t i = 0; i < sizeof cal / sizeof cal[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, EV(KW_DESC, "{" AT_1200 ", \"duration\": \"%s\"}",
                                       LIMIT("5")), cal[i]);
        b = map(text, 0, why, sizeof why);
        if (b)
            fail_msg("%s taken: to %g", cal[i], num(b, "end"));
        if (!strstr(why, cal[i]) || !strstr(why, "years and months other than 0"))
            fail_msg("%s refused without saying why: %s", cal[i], why);
    }
    /* An interval's own period with a start alone: the event's duration (the review's e7). */
    const char *own = EV(KW_DESC, PERIOD_1H,
        "[{\"id\": 0, \"intervalPeriod\": {\"start\": \"2026-07-02T08:00:00Z\"}, "
        "\"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [5]}]}]");
    b = map_taken(own, 0, "an own period with a start alone");
    assert_true(num(b, "start") == at("2026-07-02T08:00:00Z") &&
                num(b, "end") == at("2026-07-02T09:00:00Z"));
    json_decref(b);
    /* ... and with no event duration either: until further notice. */
    b = map_taken(EV(KW_DESC, "null",
                     "[{\"id\": 0, \"intervalPeriod\": {\"start\": \"2026-07-02T08:00:00Z\"}, "
                     "\"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [5]}]}]"),
                  0, "an own start, no duration anywhere");
    assert_true(num(b, "end") == PFI_TIME_MAX_S);
    json_decref(b);
    /* An interval inheriting the period after one until further notice never starts. */
    const char *two = EV(KW_DESC, "{" AT_1200 ", \"duration\": \"PT0S\"}",
        "[{\"id\": 0, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [5]}]},"
        " {\"id\": 1, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [4]}]}]");
    b = map(two, 1, why, sizeof why);
    assert_null(b);
    assert_non_null(strstr(why, "until further notice"));
}

/* An import limit of 0 is the strictest a VTN can send: taken (it was refused, a target of 0 W
 * being no event, and the site went on at full power), as the least target there is, 1 W,
 * which the host holds at the least the site can hold.  A negative limit is no limit at all:
 * refused, saying so. */
static void test_zero_limit(void **state)
{
    (void)state;
    char why[300];
    const char *zero[] = {"0", "0.0", "-0", "0.0000001"};
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, EV(KW_DESC, PERIOD_1H, LIMIT("%s")), zero[i]);
        json_t *b = map_taken(text, 0, zero[i]);
        if (num(b, "limit_w") != 1)
            fail_msg("a limit of %s kW taken as %g W", zero[i], num(b, "limit_w"));
        json_decref(b);
    }
    json_t *b = map(EV(KW_DESC, PERIOD_1H, LIMIT("-5")), 0, why, sizeof why);
    assert_null(b);
    assert_non_null(strstr(why, "negative"));
}

/* non_gpu_power: what the site draws besides its GPUs, taken off each import limit for the
 * GPUs' budget (pfi caps the GPUs alone, and the VTN's limit covers the meter); a limit at or
 * below it is held at the least.  The setting takes a power, not a share; a bad one changes
 * nothing. */
static void test_non_gpu_power(void **state)
{
    (void)state;
    pfi_ven_config c = config();
    assert_true(c.non_gpu_w == 0);
    pfi_err e = {0};
    assert_int_equal(pfi_ven_config_set(&c, "non_gpu_power", "6kW", &e), PFI_OK);
    assert_true(c.non_gpu_w == 6000);
    const char *bad[] = {"20%", "-1W", "abc", "2 GW", "1e12"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (pfi_ven_config_set(&c, "non_gpu_power", bad[i], &e) == PFI_OK)
            fail_msg("non_gpu_power %s taken as %g W", bad[i], c.non_gpu_w);
        assert_non_null(strstr(e.msg, "non_gpu_power"));
        assert_true(c.non_gpu_w == 6000);
    }
    json_t *b = map_taken_with(&c, EV(KW_DESC, PERIOD_1H, LIMIT("40")), 0, "40 kW");
    assert_true(num(b, "limit_w") == 34000);
    json_decref(b);
    b = map_taken_with(&c, EV(KW_DESC, PERIOD_1H, LIMIT("5")), 0, "5 kW, below 6 kW");
    assert_true(num(b, "limit_w") == 1);
    json_decref(b);
    /* A SIMPLE level stays a share of the GPUs' baseline. */
    b = map_taken_with(&c, EV("null", PERIOD_1H, "[{\"id\": 0, \"payloads\": [{\"type\": "
                                                "\"SIMPLE\", \"values\": [1]}]}]"),
                       0, "SIMPLE 1");
    assert_true(num(b, "cut") == 0.10);
    json_decref(b);
}

/* Malformed intervals are refused with a reason; SIMPLE level 0 asks for nothing. */
static void test_refused(void **state)
{
    (void)state;
    char why[300];
    const char *bad[] = {
        EV(KW_DESC, PERIOD_1H, LIMIT("\"500\"")),
        EV(KW_DESC, PERIOD_1H, LIMIT("")),
        EV(KW_DESC, "{\"start\": \"2026-07-01T12:00:00\", \"duration\": \"PT1H\"}", LIMIT("5")),
        EV(KW_DESC, "{\"start\": \"2026-07-01T12:00:00Z\", \"duration\": \"-PT1H\"}", LIMIT("5")),
        EV(KW_DESC, "{\"start\": \"2026-07-01T12:00:00Z\", \"duration\": \"P1M\"}", LIMIT("5")),
        EV(KW_DESC, "{\"start\": \"2026-07-01T12:00:00Z\", \"duration\": 3600}", LIMIT("5")),
        EV(KW_DESC, "null", LIMIT("5")),
        EV("null", PERIOD_1H, "[{\"id\": 0, \"payloads\": [{\"type\": \"SIMPLE\", "
                              "\"values\": [1.5]}]}]"),
        EV("null", PERIOD_1H, "[{\"id\": 0, \"payloads\": []}]"),
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *b = map(bad[i], 0, why, sizeof why);
        if (b || !why[0])
            fail_msg("taken or no reason (%s): %s", why, bad[i]);
    }
    json_t *b = map(EV("null", PERIOD_1H, "[{\"id\": 0, \"payloads\": [{\"type\": \"SIMPLE\", "
                                          "\"values\": [0]}]}]"), 0, why, sizeof why);
    assert_null(b);
    assert_string_equal(why, "");
}

/* Durations: ISO 8601's components in its order, each once, a fraction on the last only; any
 * other text is refused with a reason, not read as some length (PT1S1H was 3601 s). */
static void test_duration_syntax(void **state)
{
    (void)state;
    char why[300];
    const struct {
        const char *d;
        double s; /* < 0: refused */
    } cases[] = {
        {"PT1H", 3600}, {"PT1H30M", 5400}, {"P1DT2H", 93600}, {"PT45.5S", 45.5},
        {"P0Y0M0DT1H0M0S", 3600}, {"P1W", 604800}, {"PT1H0.5M", 3630}, {"P1D", 86400},
        {"PT1S1H", -1}, {"PT1H1H", -1}, {"PT30M1H", -1}, {"P1DT", -1}, {"PT", -1},
        {"P1D1Y", -1}, {"PT1.5H30M", -1}, {"P1DT1HT1M", -1}, {"PT1M1D", -1}, {"P1H", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 EV(KW_DESC, "{\"start\": \"2026-07-01T12:00:00Z\", \"duration\": \"%s\"}",
                    LIMIT("5")),
                 cases[i].d);
        json_t *b = map(text, 0, why, sizeof why);
        if (cases[i].s < 0) {
            if (b || !strstr(why, cases[i].d))
                fail_msg("%s taken or no reason naming it (%s)", cases[i].d, why);
        } else if (!b || num(b, "end") - num(b, "start") != cases[i].s) {
            fail_msg("%s: not %.1f s (%s)", cases[i].d, cases[i].s, why);
        }
        json_decref(b);
    }
}

/* A SIMPLE level below 0 is refused: -1, the marker of a level out of range, passed the check
 * and the cut was read from before the table of levels (found by tests/fuzz/fuzz_ven.c). */
static void test_simple_negative(void **state)
{
    (void)state;
    char why[300];
    const char *lv[] = {"-1", "-2", "-0.5", "4", "-1e300"};
    for (size_t i = 0; i < sizeof lv / sizeof lv[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 EV("null", PERIOD_1H, "[{\"id\": 0, \"payloads\": [{\"type\": \"SIMPLE\", "
                                       "\"values\": [%s]}]}]"),
                 lv[i]);
        json_t *b = map(text, 0, why, sizeof why);
        if (b || !strstr(why, "is not 0-3"))
            fail_msg("SIMPLE %s taken or no reason (%s)", lv[i], why);
    }
}

/* Targets: an event for another VEN or resource (VEN_NAME, RESOURCE_NAME) is nothing to do
 * here; one naming this VEN (client id pfi-site, resource node), or targeted by what cannot be
 * judged here (a GROUP, OpenADR 3.1's plain strings), is taken. */
static void test_targets(void **state)
{
    (void)state;
    struct {
        const char *targets;
        int taken;
    } cases[] = {
        {"[{\"type\": \"VEN_NAME\", \"values\": [\"other-ven\"]}]", 0},
        {"[{\"type\": \"RESOURCE_NAME\", \"values\": [\"meter-7\", \"meter-8\"]}]", 0},
        {"[{\"type\": \"VEN_NAME\", \"values\": [\"pfi-site\"]}, "
         "{\"type\": \"RESOURCE_NAME\", \"values\": [\"meter-7\"]}]", 0},
        {"[{\"type\": \"VEN_NAME\", \"values\": [\"other-ven\", \"pfi-site\"]}]", 1},
        {"[{\"type\": \"RESOURCE_NAME\", \"values\": [\"node\"]}, "
         "{\"type\": \"GROUP\", \"values\": [\"west\"]}]", 1},
        {"[{\"type\": \"GROUP\", \"values\": [\"west\"]}]", 1},
        {"[\"group-west\"]", 1},
        /* values not a list cannot be judged: taken (one naming this VEN was dropped) */
        {"[{\"type\": \"VEN_NAME\", \"values\": \"pfi-site\"}]", 1},
        {"[{\"type\": \"RESOURCE_NAME\", \"values\": 7}]", 1},
        {"null", 1},
        {"[]", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024], why[300];
        snprintf(text, sizeof text,
                 "{\"id\": \"e1\", \"programID\": \"p1\", \"targets\": %s, \"intervalPeriod\": "
                 PERIOD_1H ", \"intervals\": " LIMIT("500") "}", cases[i].targets);
        json_t *b = map(text, 0, why, sizeof why);
        if (!!b != cases[i].taken || (!b && why[0]))
            fail_msg("targets %s: %s (%s)", cases[i].targets, b ? "taken" : "not taken", why);
        json_decref(b);
    }
}

/* A priority that is not a whole number is taken as none, and the note says so (the VEN logs
 * it); a whole one, or none, or null, is no note. */
static void test_priority_note(void **state)
{
    (void)state;
    const struct {
        const char *prio;
        int ignored, pfi_prio;
    } cases[] = {
        {"2", 0, -2}, {"null", 0, 0}, {"-3.0", 0, 3}, {"1.5", 1, 0}, {"\"high\"", 1, 0},
        {"true", 1, 0}, {"[1]", 1, 0},
    };
    pfi_ven_config c = config();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024], why[300] = "";
        snprintf(text, sizeof text,
                 "{\"id\": \"e1\", \"programID\": \"p1\", \"priority\": %s, "
                 "\"payloadDescriptors\": " KW_DESC ", \"intervalPeriod\": " PERIOD_1H
                 ", \"intervals\": " LIMIT("5") "}", cases[i].prio);
        json_error_t je;
        json_t *ev = json_loads(text, JSON_DECODE_INT_AS_REAL, &je);
        assert_non_null(ev);
        pfi_ven_map_note nt;
        json_t *b = pfi_ven_map(&c, ev, json_array_get(json_object_get(ev, "intervals"), 0), 0,
                                NOW_S, 0, &nt, why, sizeof why);
        if (!b || nt.priority_ignored != cases[i].ignored || num(b, "priority") != cases[i].pfi_prio)
            fail_msg("priority %s: %s, note %d, priority %g", cases[i].prio, b ? "taken" : why,
                     nt.priority_ignored, b ? num(b, "priority") : NAN);
        json_decref(b);
        json_decref(ev);
    }
}

/* A start of "0001-01-01" (OpenADR 3.0: now), alone or with a time, is the time of the
 * mapping; with P9999Y it holds from now until the VTN withdraws it. */
static void test_starts_now(void **state)
{
    (void)state;
    char why[300];
    const char *starts[] = {"0001-01-01", "0001-01-01T00:00:00", "0001-01-01T00:00:00Z"};
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
        char period[200], text[1024];
        snprintf(period, sizeof period, "{\"start\": \"%s\", \"duration\": \"PT30M\"}", starts[i]);
        snprintf(text, sizeof text,
                 "{\"id\": \"now1\", \"intervalPeriod\": %s, \"intervals\": " LIMIT("300") "}",
                 period);
        char what[64];
        snprintf(what, sizeof what, "start %s", starts[i]);
        json_t *b = map_taken(text, 0, what);
        assert_true(num(b, "start") == NOW_S && num(b, "end") == NOW_S + 1800);
        json_decref(b);
    }
    json_t *b = map("{\"id\": \"now2\", \"intervalPeriod\": {\"start\": \"0001-01-01\", "
                    "\"duration\": \"P9999Y\"}, \"intervals\": " LIMIT("300") "}",
                    0, why, sizeof why);
    assert_non_null(b);
    assert_true(num(b, "start") == NOW_S && num(b, "end") == PFI_TIME_MAX_S);
    json_decref(b);
    /* Another date of year 1 is no "now": refused as before (it ended long ago, or is not
     * a date pfi takes). */
    b = map("{\"id\": \"now3\", \"intervalPeriod\": {\"start\": \"0001-01-02T00:00:00Z\", "
            "\"duration\": \"PT30M\"}, \"intervals\": " LIMIT("300") "}", 0, why, sizeof why);
    assert_true(!b || num(b, "end") < NOW_S);
    json_decref(b);
}

/* 2026-07-01T12:00:00Z, PERIOD_1H's start. */
#define T12_S 1782907200.0
#define SIMPLE3 "[{\"id\": 0, \"payloads\": [{\"type\": \"SIMPLE\", \"values\": [1]}]}, " \
                "{\"id\": 1, \"payloads\": [{\"type\": \"SIMPLE\", \"values\": [2]}]}, " \
                "{\"id\": 2, \"payloads\": [{\"type\": \"SIMPLE\", \"values\": [3]}]}]"
#define PERIOD_RAND(R) "{\"start\": \"2026-07-01T12:00:00Z\", \"duration\": \"PT1H\", " \
                       "\"randomizeStart\": " R "}"

/* How late interval k of the event starts under c (its window keeps its duration); fails
 * when it is refused. */
static double late_by(const pfi_ven_config *c, const char *event_json, int k)
{
    json_t *b = map_taken_with(c, event_json, k, "the randomized interval");
    double late = num(b, "start") - (T12_S + 3600 * k);
    if (num(b, "end") - num(b, "start") != 3600)
        fail_msg("interval %d: window %g s, not the hour", k, num(b, "end") - num(b, "start"));
    /* kept beside the start, for an audit against the VTN: its start and the offset */
    json_t *o = json_object_get(b, "openadr");
    if (num(o, "vtn_start") != T12_S + 3600 * k || num(o, "randomized_s") != late ||
        !(late <= num(o, "randomize_start_s")) || num(o, "interval") != k)
        fail_msg("interval %d, %g s late: openadr vtn_start %.0f, randomized_s %g, "
                 "randomize_start_s %g, interval %g", k, late, num(o, "vtn_start"),
                 num(o, "randomized_s"), num(o, "randomize_start_s"), num(o, "interval"));
    json_decref(b);
    return late;
}

/* SIMPLE with a randomizeStart of 10 minutes on the event: each interval starts a whole number
 * of seconds in [0, 600] late, the same for the event's three intervals (their spacing kept)
 * and at every mapping (a poll does not draw again); the seed and the VEN's name draw others,
 * spread over the range.  An interval's own randomizeStart (here none: PT0S) wins. */
static void test_randomize_shed(void **state)
{
    (void)state;
    const char *ev = EV("null", PERIOD_RAND("\"PT10M\""), SIMPLE3);
    pfi_ven_config c = config();
    double sum = 0, lo = 600, hi = 0;
    int distinct = 0;
    static double seen[200];
    for (int seed = 0; seed < 200; seed++) {
        c.randomize_seed = seed;
        double late = late_by(&c, ev, 0);
        if (!(late >= 0 && late <= 600) || late != floor(late))
            fail_msg("seed %d: %g s late, not a whole second in [0, 600]", seed, late);
        for (int k = 1; k < 3; k++)
            if (late_by(&c, ev, k) != late)
                fail_msg("seed %d: interval %d %g s late, interval 0 %g s", seed, k,
                         late_by(&c, ev, k), late);
        if (late_by(&c, ev, 0) != late)
            fail_msg("seed %d: drawn again: %g then %g", seed, late, late_by(&c, ev, 0));
        int again = 0;
        for (int i = 0; i < distinct; i++)
            again |= seen[i] == late;
        if (!again)
            seen[distinct++] = late;
        sum += late;
        lo = fmin(lo, late);
        hi = fmax(hi, late);
    }
    /* 200 draws of 601 values: spread, not stuck (a fixed draw, or one of 0 or 600). */
    if (distinct < 120 || sum / 200 < 240 || sum / 200 > 360 || lo > 30 || hi < 570)
        fail_msg("200 seeds: %d distinct offsets, mean %g s, range %g-%g s", distinct, sum / 200,
                 lo, hi);
    /* Two VENs of the program, the same seed: mostly different offsets. */
    int differ = 0;
    for (int i = 0; i < 20; i++) {
        pfi_ven_config a = config(), b2 = config();
        snprintf(a.ven_name, sizeof a.ven_name, "site-%d", i);
        snprintf(b2.ven_name, sizeof b2.ven_name, "site-%d", i + 100);
        differ += late_by(&a, ev, 0) != late_by(&b2, ev, 0);
    }
    assert_true(differ >= 18);
    /* The interval's own intervalPeriod with randomizeStart PT0S: on time, the event's PT10M
     * notwithstanding; null on the event: none. */
    c.randomize_seed = 3;
    assert_true(late_by(&c, EV("null", PERIOD_RAND("\"PT10M\""),
                               "[{\"id\": 0, \"intervalPeriod\": " PERIOD_RAND("\"PT0S\"") ", "
                               "\"payloads\": [{\"type\": \"SIMPLE\", \"values\": [1]}]}]"),
                            0) == 0);
    assert_true(late_by(&c, EV("null", PERIOD_RAND("null"), SIMPLE3), 0) == 0);
}

/* IMPORT_CAPACITY_LIMIT with a randomizeStart: the limit holds from the VTN's start, for any
 * seed (started late, the site is over the limit for up to randomizeStart). */
static void test_randomize_limit_on_time(void **state)
{
    (void)state;
    pfi_ven_config c = config();
    for (int seed = 0; seed < 50; seed++) {
        c.randomize_seed = seed;
        double late = late_by(&c, EV(KW_DESC, PERIOD_RAND("\"PT30M\""), LIMIT("500")), 0);
        if (late != 0)
            fail_msg("seed %d: the limit starts %g s late", seed, late);
    }
}

/* A randomizeStart that is no finite ISO 8601 duration: the interval is refused, the reason
 * naming the event, the interval and the value (for a limit too, which would not apply it). */
static void test_randomize_refused(void **state)
{
    (void)state;
    const char *bad[] = {"\"PT10Q\"", "\"10M\"", "600", "\"P9999Y\"", "\"\"", "\"PT1e1M\""};
    const char *events[] = {EV(KW_DESC, PERIOD_RAND("REPL"), LIMIT("500")),
                            EV("null", PERIOD_RAND("REPL"), SIMPLE3)};
    char why[300], text[1024];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        for (int k = 0; k < 2; k++) {
            const char *at = strstr(events[k], "REPL");
            snprintf(text, sizeof text, "%.*s%s%s", (int)(at - events[k]), events[k],
                     bad[i], at + 4);
            json_t *b = map(text, 0, why, sizeof why);
            if (b)
                fail_msg("randomizeStart %s taken (%s)", bad[i], k ? "SIMPLE" : "limit");
            if (!strstr(why, "event e1 interval 0: randomizeStart"))
                fail_msg("randomizeStart %s refused as: %s", bad[i], why);
        }
}

/* The VTN's events keep the jobs' SLAs by default and let them yield with sla = yield; the
 * setting takes keep or yield alone. */
static void test_sla_setting(void **state)
{
    (void)state;
    pfi_ven_config c = config();
    json_t *b = map_taken_with(&c, EV(KW_DESC, PERIOD_1H, LIMIT("500")), 0, "a limit");
    assert_string_equal(json_string_value(json_object_get(b, "sla")), "keep");
    json_decref(b);
    pfi_err e = {0};
    assert_int_equal(pfi_ven_config_set(&c, "sla", "yield", &e), PFI_OK);
    b = map_taken_with(&c, EV(KW_DESC, PERIOD_1H, LIMIT("500")), 0, "a limit");
    assert_string_equal(json_string_value(json_object_get(b, "sla")), "yield");
    json_decref(b);
    assert_int_equal(pfi_ven_config_set(&c, "sla", "maybe", &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "sla: expected keep or yield"));
    assert_int_equal(c.sla_yield, 1); /* a bad value changes nothing */
    assert_int_equal(pfi_ven_config_set(&c, "sla", "keep", &e), PFI_OK);
    assert_int_equal(c.sla_yield, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units_of_the_descriptor),
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_several_payloads),
        cmocka_unit_test(test_limit_overflow),
        cmocka_unit_test(test_open_ended),
        cmocka_unit_test(test_open_durations),
        cmocka_unit_test(test_zero_limit),
        cmocka_unit_test(test_non_gpu_power),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_duration_syntax),
        cmocka_unit_test(test_simple_negative),
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_priority_note),
        cmocka_unit_test(test_starts_now),
        cmocka_unit_test(test_randomize_shed),
        cmocka_unit_test(test_randomize_limit_on_time),
        cmocka_unit_test(test_randomize_refused),
        cmocka_unit_test(test_sla_setting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
