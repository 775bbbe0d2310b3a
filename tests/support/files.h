/* SPDX-License-Identifier: Apache-2.0 */
/* files.h: the files a test writes for a reader under test (a log, a token, a made-up /proc
 * entry, a CSV): written whole, appended to, made fresh from a template, or cut from a
 * fixture's lines.  Every step is asserted, so a file that could not be written fails the test
 * there, not later as a puzzling answer of the reader.  Header only (static inline): it calls
 * cmocka, which the benchmarks that link tests/support do not. */
#ifndef PFI_TESTS_SUPPORT_FILES_H
#define PFI_TESTS_SUPPORT_FILES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

/* Writes the n bytes of data to path, replacing what it held. */
static inline void pfi_test_put(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        fail_msg("cannot write %s", path);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static inline void pfi_test_put_text(const char *path, const char *text)
{
    pfi_test_put(path, text, strlen(text));
}

/* pfi_test_put_text, then the file's mode set to mode (a token file's 0600, a script's 0755). */
static inline void pfi_test_put_mode(const char *path, const char *text, mode_t mode)
{
    pfi_test_put_text(path, text);
    assert_int_equal(chmod(path, mode), 0);
}

static inline void pfi_test_append(const char *path, const char *text)
{
    FILE *f = fopen(path, "ab");
    if (!f)
        fail_msg("cannot append to %s", path);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* A new empty file named from the template path (its trailing XXXXXX replaced, as mkstemp
 * does), open for writing. */
static inline FILE *pfi_test_mkstemp(char *path)
{
    int fd = mkstemp(path);
    if (fd < 0)
        fail_msg("cannot make a file from %s", path);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    return f;
}

/* Copies to `to` the first max lines of the file from (max < 0: all of them), leaving out any
 * that contain except (NULL: none).  The lines read (those left out included). */
static inline int pfi_test_copy_lines(FILE *to, const char *from, int max, const char *except)
{
    FILE *in = fopen(from, "rb");
    if (!in)
        fail_msg("cannot read %s", from);
    char line[4096];
    int n = 0;
    for (; n != max && fgets(line, sizeof line, in); n++)
        if (!except || !strstr(line, except))
            assert_true(fputs(line, to) >= 0);
    fclose(in);
    return n;
}

#endif
