/* SPDX-License-Identifier: Apache-2.0 */
/* util/clock: the scaled clock (PFI_CLOCK_SCALE, PFI_CLOCK_ORIGIN).  main() sets both before
 * anything reads the clock (the settings are read once per process).  No assertion on how long
 * anything took: each scaled reading is bracketed by real readings taken around it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "util/clock.h"

#define SCALE 50.0
static double origin;

static double real_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_settings_read(void **state)
{
    (void)state;
    assert_null(pfi_clock_env_error());
    assert_true(pfi_clock_scale() == SCALE);
}

/* Both clocks advance SCALE times as fast as the real ones over the same span. */
static void test_clocks_run_faster(void **state)
{
    (void)state;
    clockid_t ids[2] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
    for (int k = 0; k < 2; k++) {
        double (*clk)(void) = k == 0 ? pfi_clock_mono : pfi_clock_wall;
        double r0 = real_of(ids[k]), p0 = clk(), r1 = real_of(ids[k]);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        double r2 = real_of(ids[k]), p1 = clk(), r3 = real_of(ids[k]);
        double d = p1 - p0;
        assert_true(d >= SCALE * (r2 - r1) - 1e-6);
        assert_true(d <= SCALE * (r3 - r0) + 1e-6);
        if (k == 1) { /* the wall clock reads origin + (real - origin) * SCALE */
            assert_true(p0 >= origin + (r0 - origin) * SCALE - 1e-3);
            assert_true(p0 <= origin + (r1 - origin) * SCALE + 1e-3);
        }
    }
}

/* A sleep of d on this clock lasts at least d / SCALE of real time and d on this clock. */
static void test_sleep_scaled(void **state)
{
    (void)state;
    double r0 = real_of(CLOCK_MONOTONIC), p0 = pfi_clock_mono();
    pfi_clock_sleep(1.0);
    double p1 = pfi_clock_mono(), r1 = real_of(CLOCK_MONOTONIC);
    assert_true(r1 - r0 >= 1.0 / SCALE - 1e-4);
    assert_true(p1 - p0 >= 1.0 - 1e-3);
}

int main(void)
{
    origin = floor(real_of(CLOCK_REALTIME)) - 5;
    char o[32];
    snprintf(o, sizeof o, "%.0f", origin);
    setenv("PFI_CLOCK_SCALE", "50", 1);
    setenv("PFI_CLOCK_ORIGIN", o, 1);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_settings_read),
                                       cmocka_unit_test(test_clocks_run_faster),
                                       cmocka_unit_test(test_sleep_scaled)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
