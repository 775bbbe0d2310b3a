/* SPDX-License-Identifier: Apache-2.0 */
/* Skips that cannot pass silently.  cmocka's skip() alone leaves the binary's exit status at 0,
 * so tests/run.sh would print PASS for a test that never ran.  A test that cannot run (its
 * public data or an external tool is absent) calls PFI_TEST_SKIP with the reason instead, and
 * main returns pfi_test_exit(cmocka_run_group_tests(...)): the failures when any test failed,
 * else 77 when any was skipped (counted as SKIP by tests/run.sh, and a failure under
 * `make check`), else 0. */
#ifndef PFI_TESTS_SKIP_H
#define PFI_TESTS_SKIP_H

static int pfi_test_skips;

#define PFI_TEST_SKIP(...)                                                                     \
    do {                                                                                       \
        print_message("skipped: " __VA_ARGS__);                                                \
        pfi_test_skips++;                                                                      \
        skip();                                                                                \
    } while (0)

static inline int pfi_test_exit(int failed)
{
    return failed ? failed : pfi_test_skips ? 77 : 0;
}

#endif
