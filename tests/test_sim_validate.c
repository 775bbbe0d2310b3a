/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the simulator's calibration (study/sim_validate.c) on the public Perseus sweeps read
 * in place from $PFI_DATA_DIR: what only saves time leaves its results as they are. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "study/sim_validate.h"
#include "support/skip.h"
#include "util/units.h"

static int have_sweeps(void)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/perseus-sosp24/zeus_baseline/A40/zeus_global.csv",
             pfi_data_dir());
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* The fits' memo of costs by the exact point changes nothing: every cost computed afresh
 * (PFI_SIM_VAL_NO_MEMO) gives the same report bit for bit (fitted constants, every run's
 * simulated values and errors), on split 0 with a family constant (more parameters than the
 * GPU types' alone), from one starting point (its restarts still ask again for points seen;
 * one case: under the sanitizers a fit takes ~100 times its CPU). */
static void test_cost_memo_changes_nothing(void **state)
{
    (void)state;
    if (!have_sweeps())
        PFI_TEST_SKIP("public data not found under %s\n", pfi_data_dir());
    const int cases[] = {PFI_SIM_VAL_SPLIT(0) | PFI_SIM_VAL_FAM_ACT | PFI_SIM_VAL_STARTS(1)};
    static pfi_sim_validation a, b; /* large: not on the stack */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pfi_err e = {0};
        assert_int_equal(pfi_sim_validate(pfi_data_dir(), cases[i], NULL, NULL, &a, &e), PFI_OK);
        assert_int_equal(pfi_sim_validate(pfi_data_dir(), cases[i] | PFI_SIM_VAL_NO_MEMO, NULL,
                                          NULL, &b, &e),
                         PFI_OK);
        assert_true(a.n_runs >= 8);
        assert_memory_equal(&a, &b, sizeof a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cost_memo_changes_nothing),
    };
    return pfi_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
