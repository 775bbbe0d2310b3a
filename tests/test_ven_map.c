/* SPDX-License-Identifier: Apache-2.0 */
/* OpenADR 3.0 event intervals -> grid events (serve/ven.c, pfi_ven_map_interval), on payloads
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

#include "serve/ven.h"
#include "util/isotime.h"

/* The body interval k of the event (JSON text) maps to; NULL with why. */
static json_t *map(const char *event_json, int k, char *why, size_t wn)
{
    pfi_ven_config c;
    pfi_ven_config_defaults(&c, "node");
    snprintf(c.program, sizeof c.program, "dr");
    json_error_t je;
    json_t *ev = json_loads(event_json, 0, &je);
    if (!ev)
        fail_msg("test payload is not JSON: %s: %s", je.text, event_json);
    json_t *iv = json_array_get(json_object_get(ev, "intervals"), (size_t)k);
    why[0] = 0;
    json_t *b = pfi_ven_map_interval(&c, ev, iv, k, 0, why, wn);
    json_decref(ev);
    return b;
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
        json_t *b = map(text, 0, why, sizeof why);
        if (!b)
            fail_msg("units %s refused: %s", ok[i].units, why);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units_of_the_descriptor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
