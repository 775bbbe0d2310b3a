/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the report layer: tables in three renderings and gnuplot figures; a figure without
 * data is refused and a series or panel without data drawn without gnuplot's warnings; a grid
 * event's report before its start or without samples says so, without a figure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>

#include "report/grid_report.h"
#include "report/report.h"
#include "study/study.h"
#include "support/skip.h"

static char *render(const pfi_table *t, void (*fn)(const pfi_table *, FILE *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fn(t, f);
    fclose(f);
    return buf;
}

static void test_fmt_fixed(void **state)
{
    (void)state;
    char b[32];
    /* Never scientific notation: a fleet's total is read digit by digit, not as 2.36e+06. */
    assert_string_equal(pfi_fmt_fixed(b, sizeof b, 2364594.4, 6), "2364594");
    assert_string_equal(pfi_fmt_fixed(b, sizeof b, 15000, 4), "15000");
    assert_string_equal(pfi_fmt_fixed(b, sizeof b, 1234.56, 4), "1235");
    assert_string_equal(pfi_fmt_fixed(b, sizeof b, 123.456, 4), "123.5");
    assert_string_equal(pfi_fmt_fixed(b, sizeof b, 0.0123456, 4), "0.01235");
    assert_string_equal(pfi_fmt_fixed(b, sizeof b, -42.25, 3), "-42.2");
    assert_string_equal(pfi_fmt_fixed(b, sizeof b, 0, 4), "0");
    assert_string_equal(pfi_fmt_fixed(b, sizeof b, 1e-12, 4), "0.000000000"); /* 9 decimals at most */
    assert_string_equal(pfi_fmt_fixed(b, sizeof b, 1e15, 4), "1000000000000000");
    assert_string_equal(pfi_fmt_fixed(b, sizeof b, NAN, 4), "-");
}

static void test_fmt_sep(void **state)
{
    (void)state;
    char b[48];
    /* Large numbers in the report read with thousands separators. */
    assert_string_equal(pfi_fmt_sep(b, sizeof b, 20649419.44, 1, 0), "20,649,419.4");
    assert_string_equal(pfi_fmt_sep(b, sizeof b, 4827.04, 1, 1), "+4,827.0");
    assert_string_equal(pfi_fmt_sep(b, sizeof b, -1746.5, 1, 1), "-1,746.5");
    assert_string_equal(pfi_fmt_sep(b, sizeof b, 999.96, 1, 0), "1,000.0");
    assert_string_equal(pfi_fmt_sep(b, sizeof b, 100000, 0, 0), "100,000");
    assert_string_equal(pfi_fmt_sep(b, sizeof b, 123, 0, 0), "123");
    assert_string_equal(pfi_fmt_sep(b, sizeof b, -0.04, 1, 1), "+0.0"); /* no minus zero */
    assert_string_equal(pfi_fmt_sep(b, sizeof b, -828.4, 0, 0), "-828");
    assert_string_equal(pfi_fmt_sep(b, sizeof b, NAN, 1, 0), "-");
}

static void test_table(void **state)
{
    const char *h[] = {"policy", "tokens/s"};
    pfi_table *t = pfi_table_new(2, h);
    assert_non_null(t);
    pfi_table_cell(t, "%s", "equal");
    pfi_table_cell(t, "%.1f", 1234.5);
    const char *row[] = {"<pfi>", "2000.0"};
    assert_int_equal(pfi_table_row(t, row), PFI_OK);

    char *md = render(t, pfi_table_markdown);
    assert_non_null(strstr(md, "| policy | tokens/s |"));
    assert_non_null(strstr(md, "| equal | 1234.5 |"));
    char *html = render(t, pfi_table_html);
    assert_non_null(strstr(html, "<td>&lt;pfi&gt;</td>"));
    assert_null(strstr(html, "<pfi>"));
    char *txt = render(t, pfi_table_text);
    assert_non_null(strstr(txt, "equal     1234.5"));
    free(md), free(html), free(txt);
    pfi_table_free(t);
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void test_plot(void **state)
{
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        PFI_TEST_SKIP("gnuplot not installed: figure rendering not tested\n");
    }
    const char *base = getenv("PFI_TEST_TMP");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/pfi-plot-XXXXXX", base ? base : "/tmp");
    assert_non_null(mkdtemp(dir));
    double x[] = {0.1, 0.2, 0.3}, y[] = {0.02, 0.06, 0.12}, lo[] = {0.01, 0.05, 0.1},
           hi[] = {0.03, 0.07, 0.14};
    pfi_plot *p = pfi_plot_new("s(r) of job_1", "power shed r", "slowdown s");
    assert_int_equal(pfi_plot_series(p, "fit \"a\"", PFI_PLOT_LINES, NULL, x, y, NULL, NULL, 3, 0),
                     PFI_OK);
    assert_int_equal(pfi_plot_series(p, "levels", PFI_PLOT_ERRORBARS, "black", x, y, lo, hi, 3, 0),
                     PFI_OK);
    assert_int_equal(pfi_plot_series(p, "bad", PFI_PLOT_ERRORBARS, NULL, x, y, NULL, NULL, 3, 0),
                     PFI_EINVAL);
    pfi_err e = {0};
    int rc = pfi_plot_render(p, dir, "curve", &e);
    assert_int_equal(rc, PFI_OK);
    char path[600];
    snprintf(path, sizeof path, "%s/curve.png", dir);
    assert_true(file_size(path) > 1000);
    FILE *f = fopen(path, "rb");
    unsigned char magic[4] = {0};
    assert_int_equal(fread(magic, 1, 4, f), 4);
    fclose(f);
    assert_memory_equal(magic, "\x89PNG", 4);
    snprintf(path, sizeof path, "%s/curve.svg", dir);
    assert_true(file_size(path) > 500);
    pfi_plot_free(p);

    /* Small multiples: two panels in one figure, each axis over its data plus 3%. */
    pfi_plot *m = pfi_plot_new("two", "x", "y");
    assert_int_equal(pfi_plot_panel(m, "left", "x", "y"), PFI_OK);
    pfi_plot_series(m, "a", PFI_PLOT_LINES, NULL, x, y, NULL, NULL, 3, 0);
    assert_int_equal(pfi_plot_panel(m, "right", "x", "y"), PFI_OK);
    pfi_plot_series(m, "b", PFI_PLOT_MARKS, NULL, x, lo, NULL, NULL, 3, 0);
    pfi_plot_layout(m, 1, 2);
    assert_int_equal(pfi_plot_render(m, dir, "multi", &e), PFI_OK);
    pfi_plot_free(m);
    snprintf(path, sizeof path, "%s/multi.gp", dir);
    f = fopen(path, "r");
    assert_non_null(f);
    char gp[8192];
    size_t len = fread(gp, 1, sizeof gp - 1, f);
    gp[len] = 0;
    fclose(f);
    assert_non_null(strstr(gp, "set multiplot layout 1,2"));
    assert_non_null(strstr(gp, "set title \"left\""));
    assert_non_null(strstr(gp, "set title \"right\""));
    assert_non_null(strstr(gp, "set xrange [0.094:0.306]")); /* 0.1..0.3 +- 3% */
    assert_non_null(strstr(gp, "set yrange [0.017:")); /* 0.02..0.12 less 3% of 0.10 */
    assert_non_null(strstr(gp, "set yrange [0.0073:"));  /* 0.01..0.10 less 3% of 0.09 */
    snprintf(path, sizeof path, "%s/multi.png", dir);
    assert_true(file_size(path) > 1000);

    /* A directory that does not exist: a clear error, not a crash. */
    pfi_plot *q = pfi_plot_new("t", "x", "y");
    pfi_plot_series(q, "a", PFI_PLOT_LINES, NULL, x, y, NULL, NULL, 3, 0);
    assert_int_equal(pfi_plot_render(q, "/nonexistent/dir", "c", &e), PFI_EIO);
    assert_non_null(strstr(e.msg, "/nonexistent/dir"));
    pfi_plot_free(q);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void tmpdir(char *dir, size_t n, const char *what)
{
    const char *base = getenv("PFI_TEST_TMP");
    snprintf(dir, n, "%s/pfi-%s-XXXXXX", base && *base ? base : "/tmp", what);
    assert_non_null(mkdtemp(dir));
}

static void rm_rf(const char *dir)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* A figure without a point is not drawn (gnuplot used to be run on it: an empty frame, or
 * warnings on the terminal); a series or a panel without a point among others with data is
 * drawn without a word from gnuplot. */
static void test_plot_empty(void **state)
{
    char dir[512], path[600];
    tmpdir(dir, sizeof dir, "plot-empty");
    double x[] = {0, 1, 2}, y[] = {5, 6, 7}, nan3[] = {NAN, NAN, NAN};
    pfi_plot *p = pfi_plot_new("nothing", "x", "y");
    pfi_plot_series(p, "unknown", PFI_PLOT_LINES, NULL, x, nan3, NULL, NULL, 3, 0);
    pfi_plot_series(p, "none", PFI_PLOT_LINES, NULL, x, y, NULL, NULL, 0, 0);
    pfi_err e = {0};
    assert_int_equal(pfi_plot_render(p, dir, "empty", &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "no data to draw"));
    pfi_plot_free(p);
    const char *ext[] = {"gp", "dat", "png", "svg"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/empty.%s", dir, ext[i]);
        assert_int_equal(access(path, F_OK), -1);
    }
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        rm_rf(dir);
        PFI_TEST_SKIP("gnuplot not installed: figure rendering not tested\n");
    }
    /* Two panels: the left has a series of unknown points beside one with data, the right
     * only unknown points.  gnuplot's stderr (ours) goes to a file for the test to read. */
    p = pfi_plot_new("some", "x", "y");
    pfi_plot_panel(p, "left", "x", "y");
    pfi_plot_series(p, "unknown", PFI_PLOT_LINES, NULL, x, nan3, NULL, NULL, 3, 0);
    pfi_plot_series(p, "known", PFI_PLOT_LINES, NULL, x, y, NULL, NULL, 3, 0);
    pfi_plot_panel(p, "right", "x", "y");
    pfi_plot_series(p, "unknown too", PFI_PLOT_LINES, NULL, x, nan3, NULL, NULL, 3, 0);
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    int rc = pfi_plot_render(p, dir, "some", &e);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    pfi_plot_free(p);
    char *said = slurp(path);
    assert_non_null(said);
    if (rc != PFI_OK || said[0])
        fail_msg("render: %d (%s); gnuplot said: %s", rc, e.msg, said);
    free(said);
    snprintf(path, sizeof path, "%s/some.png", dir);
    assert_true(file_size(path) > 1000);
    rm_rf(dir);
}

/* A grid event's report document in a state without draw (docs/api.md "state"). */
static json_t *grid_doc(const char *state, const char *msg)
{
    json_t *iv = json_array();
    for (int i = 0; i < 3; i++)
        json_array_append_new(iv, json_pack("{s:f, s:f, s:n, s:n, s:f, s:f, s:f}", "t0",
                                            1000.0 + 60 * i, "t1", 1060.0 + 60 * i, "mean_w",
                                            "max_w", "budget_w", 3000.0, "target_w", 3000.0,
                                            "covered_s", 0.0));
    return json_pack("{s:{s:s, s:s, s:s, s:f, s:f, s:s, s:s, s:s}, s:{s:f, s:n, s:s, s:f, "
                     "s:f, s:f, s:f, s:{s:b}, s:o}, s:s, s:s, s:{s:s, s:f}, s:[]}",
                     "event", "id", "e1", "start", "1970-01-01T00:16:40Z", "end",
                     "1970-01-01T00:19:40Z", "start_s", 1000.0, "duration_s", 180.0, "source",
                     "cli", "kind", "limit", "phase", "scheduled", "compliance", "target_w",
                     3000.0, "baseline_w", "baseline_method", "none", "window_s", 180.0,
                     "covered_s", 0.0, "max_excess_w", 0.0, "seconds_over_target", 0.0, "ramp",
                     "ok", 0, "intervals", iv, "state", state, "state_message", msg, "cost",
                     "method", "m", "budget_w", 3000.0, "jobs");
}

/* Before its start, or over without a recorded second: the report says so, states no excess
 * or ramp (zeros would read as met), and draws no figure (one left there before is removed). */
static void test_grid_report_nothing_yet(void **state)
{
    const char *cases[][3] = {
        {"not_started", "event e1 starts at 1970-01-01T00:16:40Z: nothing to report yet"},
        {"no_samples", "event e1 ended at 1970-01-01T00:19:40Z but no site power was recorded "
                       "in its window (was the daemon running?): nothing to judge"}};
    for (int k = 0; k < 2; k++) {
        char dir[512], path[600], written[2048];
        tmpdir(dir, sizeof dir, "grid-report");
        snprintf(path, sizeof path, "%s/power.png", dir);
        FILE *f = fopen(path, "w"); /* from an earlier report in the same directory */
        assert_non_null(f);
        fclose(f);
        json_t *doc = grid_doc(cases[k][0], cases[k][1]);
        assert_non_null(doc);
        pfi_err e = {0};
        if (pfi_grid_report_write(doc, dir, written, sizeof written, &e) != PFI_OK)
            fail_msg("%s", e.msg);
        json_decref(doc);
        assert_non_null(strstr(written, cases[k][1]));
        assert_null(strstr(written, "figure not drawn"));
        const char *ext[] = {"png", "svg", "gp", "dat"};
        for (int i = 0; i < 4; i++) {
            snprintf(path, sizeof path, "%s/power.%s", dir, ext[i]);
            if (access(path, F_OK) == 0)
                fail_msg("%s: %s is there", cases[k][0], path);
        }
        snprintf(path, sizeof path, "%s/report.md", dir);
        char *md = slurp(path);
        assert_non_null(md);
        assert_non_null(strstr(md, cases[k][1]));
        assert_null(strstr(md, "complied"));
        assert_null(strstr(md, "Largest excess"));
        assert_null(strstr(md, "power.png"));
        free(md);
        rm_rf(dir);
    }
}

/* An event changed while under way: report.md lists each definition, from when, with its own
 * window figures. */
static void test_grid_report_revisions(void **state)
{
    (void)state;
    char dir[512], path[600], written[2048];
    tmpdir(dir, sizeof dir, "grid-report");
    json_t *doc = grid_doc("no_samples", "event e1 ended");
    json_t *revs = json_pack("[{s:n, s:n, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}, "
                             "{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}]",
                             "from", "from_s", "target_w", 4500.0, "start_s", 1000.0, "end_s",
                             1180.0, "window_s", 90.0, "covered_s", 90.0, "mean_w", 4400.0,
                             "max_excess_w", 0.0, "seconds_over_target", 0.0, "from",
                             "1970-01-01T00:18:10Z", "from_s", 1090.0, "target_w", 3000.0,
                             "start_s", 1000.0, "end_s", 1180.0, "window_s", 90.0, "covered_s",
                             90.0, "mean_w", 2990.0, "max_excess_w", 950.0,
                             "seconds_over_target", 2.0);
    json_object_set_new(json_object_get(doc, "compliance"), "revisions", revs);
    pfi_err e = {0};
    if (pfi_grid_report_write(doc, dir, written, sizeof written, &e) != PFI_OK)
        fail_msg("%s", e.msg);
    json_decref(doc);
    snprintf(path, sizeof path, "%s/report.md", dir);
    char *md = slurp(path);
    assert_non_null(md);
    if (!strstr(md, "Modified while under way") || !strstr(md, "| the first") ||
        !strstr(md, "| 1970-01-01T00:18:10Z | 3000") || !strstr(md, "950"))
        fail_msg("report.md of a changed event:\n%s", md);
    free(md);
    rm_rf(dir);
}

/* A study figure with nothing to draw (here a study of no runs: no curve, no PFI30) is said in
 * the report where it would be, and the rest of the report is written: one empty figure does
 * not cost the reader every other table and figure. */
static void test_study_figure_without_data(void **state)
{
    char dir[512], path[600];
    tmpdir(dir, sizeof dir, "study-empty");
    static pfi_study s; /* large; no runs, no step done */
    memset(&s, 0, sizeof s);
    s.opts.figures = 1;
    snprintf(s.source, sizeof s.source, "no runs");
    int no_gnuplot = 0;
    pfi_err e = {0};
    if (pfi_study_write_report(&s, dir, &no_gnuplot, &e) != PFI_OK)
        fail_msg("%s", e.msg);
    snprintf(path, sizeof path, "%s/report.md", dir);
    char *md = slurp(path);
    assert_non_null(md);
    if (!no_gnuplot && !strstr(md, "*Figure not drawn (no data to draw"))
        fail_msg("no word on the empty figure in:\n%s", md);
    assert_null(strstr(md, "fig_curves.png"));
    free(md);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/fig_curves.gp", dir);
    assert_int_equal(access(path, F_OK), -1);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fmt_fixed), cmocka_unit_test(test_fmt_sep),
                                       cmocka_unit_test(test_table),
                                       cmocka_unit_test(test_plot),
                                       cmocka_unit_test(test_plot_empty),
                                       cmocka_unit_test(test_grid_report_nothing_yet),
                                       cmocka_unit_test(test_grid_report_revisions),
                                       cmocka_unit_test(test_study_figure_without_data)};
    return pfi_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
