/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the CSV reader the importers use: quoting as the Perseus files use it, line
 * endings, and errors that name the file, the line and the column. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/csv.h"

static pfi_csv *open_text(const char *text, FILE **fp)
{
    *fp = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(*fp);
    pfi_csv *c;
    pfi_err e = {0};
    int rc = pfi_csv_open_stream(*fp, "t.csv", &c, &e);
    if (rc != PFI_OK)
        print_error("open: %s\n", e.msg);
    assert_int_equal(rc, PFI_OK);
    return c;
}

static void test_quoted_fields(void **state)
{
    /* A real Perseus row shape: a quoted partition list holding commas. */
    const char *text = "model_name,partition_method,batch_size\r\n"
                       "bert-huge-uncased,\"custom:0,8,14,20,26\",256\r\n"
                       "\"say \"\"hi\"\"\",\"two\nlines\",\"\"\r\n"
                       "\n"
                       "last,x,1"; /* no final newline */
    FILE *fp;
    pfi_csv *c = open_text(text, &fp);
    pfi_err e = {0};
    assert_int_equal(pfi_csv_ncols(c), 3);
    assert_int_equal(pfi_csv_col(c, "batch_size"), 2);
    assert_int_equal(pfi_csv_col(c, "nope"), -1);
    assert_int_equal(pfi_csv_next(c, &e), PFI_OK);
    assert_int_equal(pfi_csv_line(c), 2);
    assert_string_equal(pfi_csv_field(c, 0), "bert-huge-uncased");
    assert_string_equal(pfi_csv_field(c, 1), "custom:0,8,14,20,26");
    int v;
    assert_int_equal(pfi_csv_int(c, 2, &v, &e), PFI_OK);
    assert_int_equal(v, 256);
    assert_int_equal(pfi_csv_next(c, &e), PFI_OK);
    assert_int_equal(pfi_csv_line(c), 3);
    assert_string_equal(pfi_csv_field(c, 0), "say \"hi\"");
    assert_string_equal(pfi_csv_field(c, 1), "two\nlines");
    assert_string_equal(pfi_csv_field(c, 2), "");
    assert_int_equal(pfi_csv_next(c, &e), PFI_OK);
    assert_int_equal(pfi_csv_line(c), 6); /* the quoted line break and the blank line count */
    assert_string_equal(pfi_csv_field(c, 0), "last");
    assert_string_equal(pfi_csv_field(c, 2), "1");
    assert_int_equal(pfi_csv_next(c, &e), PFI_CSV_END);
    pfi_csv_close(c);
    fclose(fp);
}

/* The line a file ends inside of (a copy cut mid-line: "81.689" read as "81."), and 0 for every
 * way a file may end whole: LF, CRLF, a CR cut from its LF, blank lines after the last row. */
static void test_unterminated(void **state)
{
    /* The record the input ends inside of is left out when asked (pfi import's readers of
     * machine-written files: its last number may be cut): rows is what is read. */
    static const struct {
        const char *text;
        int line, rows;
    } cases[] = {
        {"a,b\n1,2\n3,81.", 3, 1},       {"a,b\n1,\"2\"", 2, 0},    {"a,b\r\n1,2\r\n3,4", 3, 1},
        {"a,b\n1,\"two\nlines\"", 3, 0}, {"a,b\n1,2\n", 0, 1},       {"a,b\r\n1,2\r\n", 0, 1},
        {"a,b\r\n1,2\r", 0, 1},           {"a,b\n1,\"2\"\r", 0, 1}, {"a,b\n1,2\n\n\n", 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *fp;
        pfi_csv *c = open_text(cases[i].text, &fp);
        pfi_csv_drop_unterminated(c);
        pfi_err e = {0};
        int rc, rows = 0;
        while ((rc = pfi_csv_next(c, &e)) == PFI_OK)
            rows++;
        assert_int_equal(rc, PFI_CSV_END);
        if (rows != cases[i].rows)
            fail_msg("case %zu: %d rows read, not %d", i, rows, cases[i].rows);
        if (pfi_csv_unterminated(c) != cases[i].line)
            fail_msg("case %zu: %d, not %d", i, pfi_csv_unterminated(c), cases[i].line);
        pfi_csv_close(c);
        fclose(fp);
    }
}

static void test_bom_and_numbers(void **state)
{
    const char *text = "\xEF\xBB\xBFtime,energy\n6.354814670704029,6819.0174444439235\n"
                       "abc,1\n1.5x,2\n,3\n";
    FILE *fp;
    pfi_csv *c = open_text(text, &fp);
    pfi_err e = {0};
    double d;
    assert_int_equal(pfi_csv_col(c, "time"), 0);
    assert_int_equal(pfi_csv_next(c, &e), PFI_OK);
    assert_int_equal(pfi_csv_double(c, 0, &d, &e), PFI_OK);
    assert_true(fabs(d - 6.354814670704029) < 1e-15);
    assert_int_equal(pfi_csv_next(c, &e), PFI_OK);
    assert_int_equal(pfi_csv_double(c, 0, &d, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "t.csv line 3"));
    assert_non_null(strstr(e.msg, "'time'"));
    assert_non_null(strstr(e.msg, "'abc'"));
    assert_int_equal(pfi_csv_next(c, &e), PFI_OK);
    assert_int_equal(pfi_csv_double(c, 0, &d, &e), PFI_EINVAL);
    assert_int_equal(pfi_csv_next(c, &e), PFI_OK);
    assert_int_equal(pfi_csv_double(c, 0, &d, &e), PFI_EINVAL);
    int i;
    assert_int_equal(pfi_csv_int(c, 1, &i, &e), PFI_OK);
    assert_int_equal(i, 3);
    pfi_csv_close(c);
    fclose(fp);
}

/* Hexadecimal is not a number here, as everywhere a number is read (util/units.h): strtod took
 * "0x10" as 16.  Decimal with a sign and white space around it is still read. */
static void test_hex(void **state)
{
    const char *text = "a,b\n0x10,1\n-0X1p3,2\n\" 0x1A\",3\n+8 ,-2.5e1\n";
    FILE *fp;
    pfi_csv *c = open_text(text, &fp);
    pfi_err e = {0};
    double d = 7;
    int i = 7;
    for (int row = 2; row <= 4; row++) {
        assert_int_equal(pfi_csv_next(c, &e), PFI_OK);
        assert_int_equal(pfi_csv_double(c, 0, &d, &e), PFI_EINVAL);
        assert_true(d == 7); /* untouched */
        char want[32];
        snprintf(want, sizeof want, "t.csv line %d, column 'a'", row);
        assert_non_null(strstr(e.msg, want));
        assert_non_null(strstr(e.msg, "hexadecimal"));
        i = 7;
        assert_int_equal(pfi_csv_int(c, 0, &i, &e), PFI_EINVAL);
        assert_int_equal(i, 7);
        assert_int_equal(pfi_csv_int(c, 1, &i, &e), PFI_OK);
        assert_int_equal(i, row - 1);
    }
    assert_int_equal(pfi_csv_next(c, &e), PFI_OK);
    assert_int_equal(pfi_csv_double(c, 0, &d, &e), PFI_OK);
    assert_true(d == 8);
    assert_int_equal(pfi_csv_double(c, 1, &d, &e), PFI_OK);
    assert_true(d == -25);
    pfi_csv_close(c);
    fclose(fp);
}

/* A field of white space alone is not a number: the reader skipped the blanks after a failed
 * read and answered PFI_OK with the value unset (before pfi_parse_decimal: 0).  A number with
 * text after it leaves the value untouched too. */
static void test_blank_number(void **state)
{
    const char *text = "a,b\n\" \",1\n\"\t \",2\n5abc,3\n";
    FILE *fp;
    pfi_csv *c = open_text(text, &fp);
    pfi_err e = {0};
    for (int row = 2; row <= 4; row++) {
        double d = 7;
        int i = 7;
        assert_int_equal(pfi_csv_next(c, &e), PFI_OK);
        if (pfi_csv_double(c, 0, &d, &e) != PFI_EINVAL)
            fail_msg("line %d: '%s' read as %g", row, pfi_csv_field(c, 0), d);
        assert_true(d == 7);
        assert_non_null(strstr(e.msg, "is not a number"));
        assert_int_equal(pfi_csv_int(c, 0, &i, &e), PFI_EINVAL);
        assert_int_equal(i, 7);
    }
    pfi_csv_close(c);
    fclose(fp);
}

/* An integer column is written in digits: "1e1" was read as 10 (a batch size imported as bs10)
 * and "8.0" as 8, through the double reader. */
static void test_integer_digits(void **state)
{
    const char *text = "a\n1e1\n8.0\n1.5\n 12 \n-3\n+4\n";
    FILE *fp;
    pfi_csv *c = open_text(text, &fp);
    pfi_err e = {0};
    for (int row = 2; row <= 4; row++) {
        int i = 7;
        assert_int_equal(pfi_csv_next(c, &e), PFI_OK);
        if (pfi_csv_int(c, 0, &i, &e) != PFI_EINVAL || i != 7)
            fail_msg("line %d: '%s' read as the integer %d", row, pfi_csv_field(c, 0), i);
        char want[64];
        snprintf(want, sizeof want, "line %d, column 'a': '%s' is not an integer", row,
                 pfi_csv_field(c, 0));
        if (!strstr(e.msg, want))
            fail_msg("line %d: '%s'", row, e.msg);
    }
    const int want[] = {12, -3, 4};
    for (int k = 0; k < 3; k++) {
        int i = 0;
        assert_int_equal(pfi_csv_next(c, &e), PFI_OK);
        assert_int_equal(pfi_csv_int(c, 0, &i, &e), PFI_OK);
        assert_int_equal(i, want[k]);
    }
    pfi_csv_close(c);
    fclose(fp);
}

static void expect_error(const char *text, const char *want1, const char *want2)
{
    FILE *fp = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(fp);
    pfi_csv *c;
    pfi_err e = {0};
    int rc = pfi_csv_open_stream(fp, "bad.csv", &c, &e);
    while (rc == PFI_OK)
        rc = pfi_csv_next(c, &e);
    if (rc != PFI_CSV_END || c)
        pfi_csv_close(c);
    fclose(fp);
    assert_int_equal(rc, PFI_EINVAL);
    if (!strstr(e.msg, want1) || (want2 && !strstr(e.msg, want2)))
        fail_msg("message '%s' lacks '%s' / '%s'", e.msg, want1, want2 ? want2 : "");
}

static void test_malformed(void **state)
{
    expect_error("a,b\n1,2\n1,2,3\n", "bad.csv line 3", "3 fields");
    expect_error("a,b\n1\n", "bad.csv line 2", "1 fields");
    expect_error("a,b\n1,\"open\n2,3\n", "never closes", "line 2");
    expect_error("a,b\n\"x\"y,2\n", "bad.csv line 2", "after its closing quote");
    /* A quote left open on line 2 takes lines 3 and 4 into its field, to the next quote: the
     * line named is 2, where it opened (it was 4, where that quote closed). */
    expect_error("a,b\n1,\"open\n2,3\n4,\"5\n", "bad.csv line 2: field 2 opens a quote that "
                 "closes only on line 4, with text after it (a quote left open on line 2?)", NULL);
    /* CR-only line ends (classic Mac OS) read as one header line, then "no data rows". */
    expect_error("a,b\r1,2\r3,4\r", "bad.csv line 1: a carriage return (CR) without a line feed "
                 "after it: the file has CR-only line ends", NULL);
    /* ... but a quoted header cell holding CRLF (RFC 4180) is no such file: read (it was
     * refused as one). */
    const char *crlf_cell = "\"a\r\nb\",c\r\n1,2\r\n";
    FILE *fp = fmemopen((void *)crlf_cell, strlen(crlf_cell), "r");
    assert_non_null(fp);
    pfi_csv *c;
    pfi_err e = {0};
    int rc = pfi_csv_open_stream(fp, "ok.csv", &c, &e);
    if (rc != PFI_OK)
        fail_msg("a quoted header cell with CRLF: %s", e.msg);
    while ((rc = pfi_csv_next(c, &e)) == PFI_OK) {
    }
    assert_int_equal(rc, PFI_CSV_END);
    pfi_csv_close(c);
    fclose(fp);
    expect_error("a,b\nx\"y,2\n", "bad.csv line 2", "quote");
    expect_error("", "empty file", NULL);
    expect_error("a,,c\n", "no name", NULL);
}

static void test_missing_file(void **state)
{
    pfi_csv *c;
    pfi_err e = {0};
    assert_int_equal(pfi_csv_open("/nonexistent/dir/x.csv", &c, &e), PFI_ENOENT);
    assert_non_null(strstr(e.msg, "/nonexistent/dir/x.csv"));
}

static void test_write_field(void **state)
{
    char buf[256] = {0};
    FILE *fp = fmemopen(buf, sizeof buf, "w");
    pfi_csv_write_field(fp, "plain");
    fputc(',', fp);
    pfi_csv_write_field(fp, "zeus-plo/A40/resnet18 gpu0,1");
    fputc(',', fp);
    pfi_csv_write_field(fp, "q\"uote");
    fclose(fp);
    assert_string_equal(buf, "plain,\"zeus-plo/A40/resnet18 gpu0,1\",\"q\"\"uote\"");
    /* And it reads back. */
    FILE *in;
    char text[300];
    snprintf(text, sizeof text, "a,b,c\n%s\n", buf);
    pfi_csv *c = open_text(text, &in);
    pfi_err e = {0};
    assert_int_equal(pfi_csv_next(c, &e), PFI_OK);
    assert_string_equal(pfi_csv_field(c, 1), "zeus-plo/A40/resnet18 gpu0,1");
    assert_string_equal(pfi_csv_field(c, 2), "q\"uote");
    pfi_csv_close(c);
    fclose(in);
}

/* A header naming a column twice is refused with the column, both places and the file: the
 * first copy was read, the second ignored (a power_limit column put before the real one, with
 * two limits swapped, stored two levels at each other's cap). */
static void test_duplicate_header(void **state)
{
    static const char *const cases[][2] = {
        {"power_limit,dataset,power_limit\n1,x,2\n",
         "t.csv line 1: column 'power_limit' appears twice in the header (columns 1 and 3)"},
        {"a,b,c,b,a\n1,2,3,4,5\n", "column 'b' appears twice in the header (columns 2 and 4)"},
        {"\xef\xbb\xbfz,y,z,z\r\n1,2,3,4\r\n", "column 'z' appears twice in the header (columns 1 and 3)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *fp = fmemopen((void *)cases[i][0], strlen(cases[i][0]), "r");
        assert_non_null(fp);
        pfi_csv *c = NULL;
        pfi_err e = {0};
        int rc = pfi_csv_open_stream(fp, "t.csv", &c, &e);
        if (rc != PFI_EINVAL || !strstr(e.msg, cases[i][1]))
            fail_msg("header %zu: rc %d, '%s'", i, rc, e.msg);
        assert_null(c);
        fclose(fp);
    }
    /* names that differ only in case or by a blank are other columns */
    FILE *fp;
    pfi_csv *c = open_text("a,A,a ,b\n1,2,3,4\n", &fp);
    assert_int_equal(pfi_csv_col(c, "a "), 2);
    pfi_csv_close(c);
    fclose(fp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quoted_fields), cmocka_unit_test(test_bom_and_numbers),
        cmocka_unit_test(test_malformed),     cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_write_field),   cmocka_unit_test(test_hex),
        cmocka_unit_test(test_blank_number),  cmocka_unit_test(test_integer_digits),
        cmocka_unit_test(test_unterminated),  cmocka_unit_test(test_duplicate_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
