/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the launcher (process group, pass-through, log tee, exit status, stopping a whole
 * group) and of the tail -F follower (append, truncation, rotation, a file that appears late). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "measure/launch.h"

typedef struct lines {
    int n;
    char v[32][128];
} lines;

static void collect(void *ctx, const char *line)
{
    lines *l = ctx;
    if (l->n < 32)
        snprintf(l->v[l->n++], sizeof l->v[0], "%s", line);
}

static int has(const lines *l, const char *s)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return 1;
    return 0;
}

static void tmpname(char *buf, size_t n, const char *what)
{
    const char *d = getenv("PFI_TEST_TMP");
    snprintf(buf, n, "%s/%s.%ld", d && *d ? d : "/tmp", what, (long)getpid());
}

static void run_to_end(pfi_launch *l, lines *got)
{
    pfi_err e = {0};
    for (int i = 0; i < 2000 && l->running; i++)
        assert_int_equal(pfi_launch_poll(l, 0.01, collect, got, &e), PFI_OK);
    assert_false(l->running);
}

static void test_launch_output_and_status(void **state)
{
    char log[512];
    tmpname(log, sizeof log, "launch.log");
    unlink(log);
    char *argv[] = {"sh", "-c", "echo out1; echo err1 >&2; printf 'bar1\\rbar2\\r'; echo "
                                "\"$PYTHONUNBUFFERED\"; exit 3",
                    NULL};
    pfi_launch l;
    pfi_err e = {0};
    assert_int_equal(pfi_launch_start(&l, argv, log, &e), PFI_OK);
    l.passthrough = 0;
    lines got = {0};
    run_to_end(&l, &got);
    assert_true(has(&got, "out1"));
    assert_true(has(&got, "err1"));
    assert_true(has(&got, "bar1")); /* '\r' ends a line: progress bars */
    assert_true(has(&got, "bar2"));
    assert_true(has(&got, "1"));    /* PYTHONUNBUFFERED=1 for the child */
    char how[64];
    pfi_launch_describe(&l, how, sizeof how);
    assert_string_equal(how, "exited with status 3");
    pfi_launch_close(&l);
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char buf[256] = {0};
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    assert_true(k > 0);
    assert_non_null(strstr(buf, "out1"));
    assert_non_null(strstr(buf, "err1"));
    unlink(log);
}

static void test_launch_missing(void **state)
{
    char *argv[] = {"/nonexistent/trainer", "--x", NULL};
    pfi_launch l;
    pfi_err e = {0};
    assert_int_equal(pfi_launch_start(&l, argv, NULL, &e), PFI_ENOENT);
    assert_non_null(strstr(e.msg, "/nonexistent/trainer"));
    char *none[] = {NULL};
    assert_int_equal(pfi_launch_start(&l, none, NULL, &e), PFI_EINVAL);
}

static void test_launch_stop_group(void **state)
{
    /* A launcher with a worker: both must go, the worker too (it is in the group). */
    char *argv[] = {"sh", "-c", "sleep 60 & echo started; wait", NULL};
    pfi_launch l;
    pfi_err e = {0};
    assert_int_equal(pfi_launch_start(&l, argv, NULL, &e), PFI_OK);
    l.passthrough = 0;
    lines got = {0};
    for (int i = 0; i < 500 && !has(&got, "started"); i++)
        assert_int_equal(pfi_launch_poll(&l, 0.01, collect, &got, &e), PFI_OK);
    assert_true(has(&got, "started"));
    pid_t pg = l.pid;
    assert_int_equal(getpgid(pg), pg); /* its own process group */
    pfi_launch_stop(&l, 0.5);
    assert_false(l.running);
    int gone = 0;
    for (int i = 0; i < 200 && !gone; i++) {
        gone = kill(-pg, 0) != 0 && errno == ESRCH;
        if (!gone)
            usleep(10000);
    }
    assert_true(gone);
    pfi_launch_close(&l);
}

static void append(const char *path, const char *mode, const char *text)
{
    FILE *f = fopen(path, mode);
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_follow(void **state)
{
    char path[512], old[600];
    tmpname(path, sizeof path, "follow.log");
    snprintf(old, sizeof old, "%s.1", path);
    unlink(path);
    unlink(old);
    pfi_follow f;
    pfi_err e = {0};
    /* The file does not exist yet: waited for, then read from its start. */
    assert_int_equal(pfi_follow_open(&f, path, 1, &e), PFI_OK);
    lines got = {0};
    assert_int_equal(pfi_follow_poll(&f, collect, &got, &e), PFI_OK);
    assert_int_equal(got.n, 0);
    append(path, "w", "a1\na2\n");
    assert_int_equal(pfi_follow_poll(&f, collect, &got, &e), PFI_OK);
    assert_int_equal(got.n, 2);
    /* A partial line waits for its end. */
    append(path, "a", "a3");
    assert_int_equal(pfi_follow_poll(&f, collect, &got, &e), PFI_OK);
    assert_int_equal(got.n, 2);
    append(path, "a", "-end\n");
    assert_int_equal(pfi_follow_poll(&f, collect, &got, &e), PFI_OK);
    assert_true(has(&got, "a3-end"));
    /* Truncated in place (copytruncate): read again from the start. */
    append(path, "w", "t1\n");
    assert_int_equal(pfi_follow_poll(&f, collect, &got, &e), PFI_OK);
    assert_true(has(&got, "t1"));
    /* Rotated by rename while the job writes through its old descriptor (python train.py >
     * log): the renamed file is read while it grows, the new, empty one waits. */
    append(path, "a", "t2\n");
    assert_int_equal(rename(path, old), 0);
    append(path, "w", "");
    assert_int_equal(pfi_follow_poll(&f, collect, &got, &e), PFI_OK);
    assert_true(has(&got, "t2"));
    append(old, "a", "t3\n");
    assert_int_equal(pfi_follow_poll(&f, collect, &got, &e), PFI_OK);
    assert_true(has(&got, "t3"));
    assert_int_equal(pfi_follow_poll(&f, collect, &got, &e), PFI_OK); /* nothing new anywhere */
    append(old, "a", "t4\ntps: 7,3"); /* the job moves to the new file, its last line cut */
    append(path, "a", "n1\n");
    assert_int_equal(pfi_follow_poll(&f, collect, &got, &e), PFI_OK);
    assert_true(has(&got, "t4"));
    assert_false(has(&got, "n1")); /* the old one grew this poll: not left yet */
    int before = got.n;
    assert_int_equal(pfi_follow_poll(&f, collect, &got, &e), PFI_OK);
    assert_true(has(&got, "n1"));
    assert_false(has(&got, "tps: 7,3")); /* a cut line is not read as whole */
    assert_int_equal(got.n, before + 1);
    pfi_follow_close(&f);
    /* Opened on an existing file: its history is not this sweep's. */
    lines got2 = {0};
    assert_int_equal(pfi_follow_open(&f, path, 1, &e), PFI_OK);
    append(path, "a", "n2\n");
    assert_int_equal(pfi_follow_poll(&f, collect, &got2, &e), PFI_OK);
    assert_int_equal(got2.n, 1);
    assert_string_equal(got2.v[0], "n2");
    pfi_follow_close(&f);
    assert_int_equal(pfi_follow_open(&f, "", 1, &e), PFI_EINVAL);
    unlink(path);
    unlink(old);
}

/* A log truncated in place while its last line ran past the line splitter's 4 KiB: the cut
 * state of that line was kept (only its length was reset), so the first line of the new log
 * was dropped as the old line's tail. */
static void test_follow_truncated_after_long_line(void **state)
{
    (void)state;
    char path[512], longline[5001];
    tmpname(path, sizeof path, "follow-cut.log");
    memset(longline, 'x', sizeof longline - 1);
    longline[sizeof longline - 1] = '\0';
    append(path, "w", "");
    pfi_follow f;
    pfi_err e = {0};
    assert_int_equal(pfi_follow_open(&f, path, 0, &e), PFI_OK);
    lines got = {0};
    append(path, "a", longline); /* no newline yet: cut at 4 KiB, the rest to drop */
    assert_int_equal(pfi_follow_poll(&f, collect, &got, &e), PFI_OK);
    append(path, "w", "t3\n"); /* truncated: a new log begins */
    assert_int_equal(pfi_follow_poll(&f, collect, &got, &e), PFI_OK);
    if (!has(&got, "t3"))
        fail_msg("the new log's first line was dropped (%d lines read)", got.n);
    pfi_follow_close(&f);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launch_output_and_status),
        cmocka_unit_test(test_launch_missing),
        cmocka_unit_test(test_launch_stop_group),
        cmocka_unit_test(test_follow),
        cmocka_unit_test(test_follow_truncated_after_long_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
