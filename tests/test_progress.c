/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of util/progress.h on a clock the test moves: the terminal line is rewritten at most
 * 5 times a second with the step, count, elapsed time and estimate; plain lines wait 10 s and
 * come at most every 10 s; off writes nothing; the end clears an open line. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* A count shared by worker threads: the report is made outside the count's lock.  The first
 * report blocks until every other worker has ended all its steps (which it cannot while that
 * report holds the lock; the wait is bounded so such a failure does not hang); reports never
 * overlap, their counts grow, and the last is the total. */
enum { CW_THREADS = 4, CW_STEPS = 3 };
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int workers_done, inside, overlap, calls, last, decreasing, waited, timed_out;
} cw = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, 0, 0, 0};

static void cw_report(void *ctx, const char *step, int done, int total)
{
    (void)ctx;
    assert_string_equal(step, "fitting");
    assert_int_equal(total, CW_THREADS * CW_STEPS);
    pthread_mutex_lock(&cw.mu);
    if (cw.inside++)
        cw.overlap = 1;
    if (done <= cw.last)
        cw.decreasing = 1;
    cw.last = done;
    if (cw.calls++ == 0) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 30;
        while (cw.workers_done < CW_THREADS - 1 && !cw.timed_out)
            cw.timed_out = pthread_cond_timedwait(&cw.cv, &cw.mu, &until) == ETIMEDOUT;
        cw.waited = 1;
    }
    cw.inside--;
    pthread_mutex_unlock(&cw.mu);
}

static void *cw_worker(void *arg)
{
    for (int i = 0; i < CW_STEPS; i++)
        pfi_progress_count_step(arg);
    pthread_mutex_lock(&cw.mu);
    cw.workers_done++;
    pthread_cond_broadcast(&cw.cv);
    pthread_mutex_unlock(&cw.mu);
    return NULL;
}

static void test_count_reports_outside_lock(void **state)
{
    (void)state;
    pfi_progress_count c;
    pfi_progress_count_init(&c, cw_report, NULL, "fitting", CW_THREADS * CW_STEPS);
    pthread_t th[CW_THREADS];
    for (int i = 0; i < CW_THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, cw_worker, &c), 0);
    for (int i = 0; i < CW_THREADS; i++)
        pthread_join(th[i], NULL);
    pfi_progress_count_destroy(&c);
    assert_true(cw.waited);
    assert_false(cw.timed_out); /* the other workers went on while one reported */
    assert_false(cw.overlap);
    assert_false(cw.decreasing);
    assert_int_equal(cw.last, CW_THREADS * CW_STEPS);
    assert_int_equal(c.done, CW_THREADS * CW_STEPS);
    assert_true(cw.calls >= 2 && cw.calls <= CW_THREADS * CW_STEPS);

    /* Without a report function: only counted. */
    pfi_progress_count_init(&c, NULL, NULL, "fitting", 2);
    pfi_progress_count_step(&c);
    pfi_progress_count_step(&c);
    assert_int_equal(c.done, 2);
    pfi_progress_count_destroy(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tty_rate_and_estimate),
        cmocka_unit_test(test_lines_bounded),
        cmocka_unit_test(test_off_silent),
        cmocka_unit_test(test_env_mode),
        cmocka_unit_test(test_count_reports_outside_lock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
