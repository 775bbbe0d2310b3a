/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's table of settings (serve/config.c) is the one its manual page is written from:
 * every key listed there is accepted with its example value, every key is listed once and
 * documented, and a key that is not listed is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "serve/serve.h"

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

static void test_unlisted_key_is_refused(void **state)
{
    pfi_serve_config c;
    pfi_err e = {0};
    pfi_serve_config_defaults(&c);
    assert_int_equal(pfi_serve_config_set(&c, "sample_intervall", "1s", &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "sample_intervall"));
    assert_non_null(strstr(e.msg, "pfi-serve.conf(5)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_listed_key_is_accepted),
        cmocka_unit_test(test_unlisted_key_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
