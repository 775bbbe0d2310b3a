/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of util/progress.h on a clock the test moves: the terminal line is rewritten at most
 * 5 times a second with the step, count, elapsed time and estimate; plain lines wait 10 s and
 * come at most every 10 s; off writes nothing; the end clears an open line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/progress.h"

static double fake_now;
static double fake_clock(void) { return fake_now; }

static char buf[8192];

static FILE *open_out(void)
{
    memset(buf, 0, sizeof buf);
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    assert_non_null(f);
    return f;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void start(pfi_progress *p, pfi_progress_mode mode, FILE *f)
{
    fake_now = 100;
    pfi_progress_init(p, "pfi x", mode, f);
    p->now = fake_clock;
    p->t0 = p->step_t0 = p->last = fake_now;
}

static void test_tty_rate_and_estimate(void **state)
{
    (void)state;
    FILE *f = open_out();
    pfi_progress p;
    start(&p, PFI_PROGRESS_TTY, f);
    pfi_progress_update(&p, "training", 0, 10); /* a new step: shown at once */
    for (int i = 1; i <= 50; i++) {             /* 50 updates within 0.5 s: at most 3 more */
        fake_now += 0.01;
        pfi_progress_update(&p, "training", i / 10, 10);
    }
    fflush(f);
    int shown = count(buf, "\r\033[K");
    assert_true(shown >= 2 && shown <= 4);
    fake_now = 110; /* 10 s in, 5 of 10 done: about 10 s left */
    pfi_progress_update(&p, "training", 5, 10);
    fflush(f);
    assert_non_null(strstr(buf, "pfi x: training 5/10 (10 s elapsed, ~10 s left)"));
    fake_now = 120;
    pfi_progress_update(&p, "training", 10, 10); /* the end keeps its line */
    pfi_progress_update(&p, "training", 10, 10); /* ... once */
    fflush(f);
    assert_non_null(strstr(buf, "training 10/10 (20 s elapsed)\n"));
    assert_int_equal(count(buf, "10/10"), 1);
    pfi_progress_update(&p, "writing", 0, 1);
    pfi_progress_end(&p);
    fflush(f);
    size_t n = strlen(buf);
    assert_true(n > 4 && strcmp(buf + n - 4, "\r\033[K") == 0);
    fclose(f);
}

static void test_lines_bounded(void **state)
{
    (void)state;
    FILE *f = open_out();
    pfi_progress p;
    start(&p, PFI_PROGRESS_LINES, f);
    for (int i = 0; i < 5; i++) { /* 5 s of work: nothing */
        fake_now += 1;
        pfi_progress_update(&p, "step a", i, 100);
    }
    fflush(f);
    assert_string_equal(buf, "");
    for (int i = 5; i < 100; i++) { /* 95 more seconds: one line per 10 s at most */
        fake_now += 1;
        pfi_progress_update(&p, i < 50 ? "step a" : "step b", i, 100);
    }
    fflush(f);
    int lines = count(buf, "\n");
    assert_true(lines >= 8 && lines <= 10);
    assert_int_equal(count(buf, "\r"), 0);
    assert_non_null(strstr(buf, "pfi x: step a "));
    assert_non_null(strstr(buf, "pfi x: step b "));
    fclose(f);
}

static void test_off_silent(void **state)
{
    (void)state;
    FILE *f = open_out();
    pfi_progress p;
    start(&p, PFI_PROGRESS_OFF, f);
    for (int i = 0; i <= 100; i++) {
        fake_now += 1;
        pfi_progress_update(&p, "step", i, 100);
    }
    pfi_progress_end(&p);
    fflush(f);
    assert_string_equal(buf, "");
    fclose(f);
}

static void test_env_mode(void **state)
{
    (void)state;
    setenv("PFI_PROGRESS", "0", 1);
    assert_int_equal(pfi_progress_auto(), PFI_PROGRESS_OFF);
    setenv("PFI_PROGRESS", "lines", 1);
    assert_int_equal(pfi_progress_auto(), PFI_PROGRESS_LINES);
    setenv("PFI_PROGRESS", "tty", 1);
    assert_int_equal(pfi_progress_auto(), PFI_PROGRESS_TTY);
    unsetenv("PFI_PROGRESS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tty_rate_and_estimate),
        cmocka_unit_test(test_lines_bounded),
        cmocka_unit_test(test_off_silent),
        cmocka_unit_test(test_env_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
