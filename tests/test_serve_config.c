/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's table of settings (serve/config.c) is the one its manual page is written from:
 * every key listed there is accepted with its example value, every key is listed once and
 * documented, and a key that is not listed is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "serve/serve.h"
#include "util/text.h"

static void test_every_listed_key_is_accepted(void **state)
{
    int n;
    const pfi_serve_key *k = pfi_serve_config_keys(&n);
    assert_true(n >= 20);
    for (int i = 0; i < n; i++) {
        pfi_serve_config c;
        pfi_err e = {0};
        pfi_serve_config_defaults(&c);
        assert_non_null(k[i].value);
        assert_non_null(k[i].dflt);
        assert_true(k[i].help && strlen(k[i].help) > 10);
        int rc = pfi_serve_config_set(&c, k[i].name, k[i].example, &e);
        if (rc != PFI_OK)
            fail_msg("%s = %s refused: %s", k[i].name, k[i].example, e.msg);
        for (int j = 0; j < i; j++)
            if (!strcmp(k[i].name, k[j].name))
                fail_msg("%s is listed twice", k[i].name);
    }
}

/* An empty value is refused by name for every key, and the settings stay as they were: a
 * `model =` or `journal =` left by a template whose variable was unset ran without a predictor
 * or at the default journal without a word (token_file, model, probe_library, journal,
 * proc_root, port_file, control_listen, sim, nvml_lib, backend_arg and the openadr_ strings
 * took it).  default_sla = (empty) is none, as documented since it was added. */
static void test_empty_value_is_refused(void **state)
{
    int n;
    const pfi_serve_key *k = pfi_serve_config_keys(&n);
    for (int i = 0; i < n; i++) {
        pfi_serve_config c, before;
        pfi_err e = {0};
        pfi_serve_config_defaults(&c);
        if (!strcmp(k[i].name, "default_sla")) {
            assert_int_equal(pfi_serve_config_set(&c, k[i].name, "", &e), PFI_OK);
            continue;
        }
        assert_int_equal(pfi_serve_config_set(&c, k[i].name, k[i].example, &e), PFI_OK);
        memcpy(&before, &c, sizeof c);
        if (pfi_serve_config_set(&c, k[i].name, "", &e) == PFI_OK)
            fail_msg("%s = (empty) accepted", k[i].name);
        if (strncmp(e.msg, k[i].name, strlen(k[i].name)))
            fail_msg("%s = (empty): the message does not name it: %s", k[i].name, e.msg);
        if (memcmp(&before, &c, sizeof c))
            fail_msg("%s = (empty) refused but changed the settings", k[i].name);
    }
}

static void test_unlisted_key_is_refused(void **state)
{
    pfi_serve_config c;
    pfi_err e = {0};
    pfi_serve_config_defaults(&c);
    assert_int_equal(pfi_serve_config_set(&c, "sample_intervall", "1s", &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "sample_intervall"));
    assert_non_null(strstr(e.msg, "pfi-serve.conf(5)"));
}

/* budget and safe_budget read the one budget grammar: empty text is refused with its message
 * (it was taken as no budget), and nothing changes; budget = none is the default, no budget. */
static void test_budget_settings(void **state)
{
    pfi_serve_config c;
    pfi_err e = {0};
    pfi_serve_config_defaults(&c);
    assert_int_equal(pfi_serve_config_set(&c, "budget", "70%", &e), PFI_OK);
    const char *keys[] = {"budget", "safe_budget"};
    for (int i = 0; i < 2; i++) {
        char want[96];
        snprintf(want, sizeof want, "%s: budget '': expected watts", keys[i]);
        assert_int_equal(pfi_serve_config_set(&c, keys[i], "", &e), PFI_EINVAL);
        if (strncmp(e.msg, want, strlen(want)))
            fail_msg("%s = '': %s", keys[i], e.msg);
    }
    assert_string_equal(c.budget, "70%");
    assert_string_equal(c.safe_budget, "min");
    assert_int_equal(pfi_serve_config_set(&c, "budget", "none", &e), PFI_OK);
    assert_string_equal(c.budget, "");
    assert_int_equal(pfi_serve_config_set(&c, "safe_budget", "none", &e), PFI_EINVAL);
    assert_string_equal(c.safe_budget, "min");
}

/* The OpenADR client's settings: good values kept, bad ones refused with the key named and
 * nothing changed; incomplete settings fail the check the daemon makes at start. */
static void test_openadr_settings(void **state)
{
    pfi_serve_config c;
    pfi_err e = {0};
    pfi_serve_config_defaults(&c);
    assert_string_equal(c.openadr.resource, "node");
    assert_true(c.openadr.simple_cut[2] == 0.20 && c.openadr.poll_s == 10);
    assert_int_equal(pfi_serve_config_set(&c, "openadr_simple_cut_2", "25%", &e), PFI_OK);
    assert_true(c.openadr.simple_cut[2] == 0.25);
    assert_int_equal(pfi_serve_config_set(&c, "openadr_poll", "30s", &e), PFI_OK);
    assert_true(c.openadr.poll_s == 30);
    const char *bad[][2] = {{"openadr_simple_cut_2", "150%"}, {"openadr_simple_cut_2", "0%"},
                            {"openadr_simple_cut_2", "300W"}, {"openadr_poll", "0s"},
                            {"openadr_poll", "fast"}, {"openadr_ramp", "2d"},
                            {"openadr_timeout", "20m"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pfi_serve_config before = c;
        e = (pfi_err){0};
        assert_int_not_equal(pfi_serve_config_set(&c, bad[i][0], bad[i][1], &e), PFI_OK);
        if (!strstr(e.msg, bad[i][0]))
            fail_msg("%s = %s: the message does not name it: %s", bad[i][0], bad[i][1], e.msg);
        assert_memory_equal(&before, &c, sizeof c);
    }
    e = (pfi_err){0};
    assert_int_equal(pfi_serve_config_set(&c, "openadr_programme", "x", &e), PFI_EINVAL);
    /* A VTN without a program or a client: refused before anything starts. */
    assert_int_equal(pfi_serve_config_set(&c, "openadr_vtn_url", "http://127.0.0.1:1", &e),
                     PFI_OK);
    assert_int_equal(pfi_ven_config_check(&c.openadr, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "program"));
    assert_int_equal(pfi_serve_config_set(&c, "openadr_client_id", "n7", &e), PFI_OK);
    assert_int_equal(pfi_serve_config_set(&c, "openadr_secret_file", "/etc/pfi/s", &e), PFI_OK);
    assert_int_equal(pfi_serve_config_set(&c, "openadr_program", "dr", &e), PFI_OK);
    assert_int_equal(pfi_ven_config_check(&c.openadr, &e), PFI_OK);
}

/* The OpenADR settings file as docs/cluster.md shows it, a comment after each value: loaded as
 * a serve.conf is (it stopped at "bad duration unit in '10s   # default 10 s'", and a string's
 * comment became part of it: program "site-dr   # programName" was never found at the VTN). */
static void test_openadr_file_comments(void **state)
{
    char path[] = "/tmp/test_ven_config.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("# the site's VEN\n"
          "vtn_url = https://vtn.example/openadr3   # the VTN's API base\n"
          "client_id = pfi-site\n"
          "secret_file = /etc/pfi/openadr.secret    # first line, chmod 600\n"
          "program = site-dr                        # programName\n"
          "poll = 10s                               # default 10 s\n"
          "ven_name = \"pfi site #2\"                # quoted, its '#' kept\n"
          "simple_cut_1 = 10%                       # SIMPLE levels 1..3\n"
          "   \n",
          f);
    fclose(f);
    pfi_ven_config c;
    pfi_ven_config_defaults(&c, "site");
    pfi_err e = {0};
    int rc = pfi_ven_config_load(&c, path, &e);
    if (rc != PFI_OK)
        fail_msg("%s", e.msg);
    assert_string_equal(c.vtn_url, "https://vtn.example/openadr3");
    assert_string_equal(c.program, "site-dr");
    assert_string_equal(c.secret_file, "/etc/pfi/openadr.secret");
    assert_string_equal(c.ven_name, "pfi site #2");
    assert_true(c.poll_s == 10 && c.simple_cut[1] == 0.10);
    /* A line with no '=' is still refused, naming its line. */
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("program = dr\nprogram dr2   # no equals sign\n", f);
    fclose(f);
    assert_int_equal(pfi_ven_config_load(&c, path, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, ":2: expected 'key = value'"));
    /* A line longer than the reader holds is refused, not read as two. */
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("program = ", f);
    for (int i = 0; i < 1500; i++)
        fputc('x', f);
    fputs("\nclient_id = a\n", f);
    fclose(f);
    assert_int_equal(pfi_ven_config_load(&c, path, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, ":1: line too long"));
    unlink(path);
}

/* contrib/pfi-serve.conf.example (installed as DOCDIR/examples/serve.conf): every setting it
 * shows commented out is valid as it stands once uncommented, its value one word (or quoted)
 * and accepted.  The journal line carried a note in parentheses after its path: uncommented,
 * the note became part of the path, a journal that `pfi restore` never found. */
static void test_example_uncommented(void **state)
{
    FILE *f = fopen("contrib/pfi-serve.conf.example", "r");
    if (!f)
        fail_msg("contrib/pfi-serve.conf.example: cannot read it (run from the source tree)");
    char line[1024];
    int no = 0, n = 0;
    while (fgets(line, sizeof line, f)) {
        no++;
        char key_s[64], *key, *val;
        int off = 0;
        if (sscanf(line, "# %63[a-z_] =%n", key_s, &off) != 1 || off == 0)
            continue;
        char *setting = strchr(line, '#') + 1;
        int quoted = strchr(setting, '"') != NULL;
        if (pfi_conf_line(setting, &key, &val) != 1)
            fail_msg("example line %d: not 'key = value' once uncommented", no);
        if (!quoted && strpbrk(val, " \t"))
            fail_msg("example line %d: %s = '%s', text after the value (a note belongs on a "
                     "comment line of its own)", no, key, val);
        pfi_serve_config c;
        pfi_err e = {0};
        pfi_serve_config_defaults(&c);
        if (pfi_serve_config_set(&c, key, val, &e) != PFI_OK)
            fail_msg("example line %d: %s = %s refused once uncommented: %s", no, key, val, e.msg);
        n++;
    }
    fclose(f);
    assert_true(n >= 10); /* the pattern still finds the commented settings */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_listed_key_is_accepted),
        cmocka_unit_test(test_empty_value_is_refused),
        cmocka_unit_test(test_unlisted_key_is_refused),
        cmocka_unit_test(test_budget_settings),
        cmocka_unit_test(test_openadr_settings),
        cmocka_unit_test(test_openadr_file_comments),
        cmocka_unit_test(test_example_uncommented),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
