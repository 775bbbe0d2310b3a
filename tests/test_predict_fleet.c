/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the simulated fleet's characterization (study/fleet.h), the training data of the
 * predictor: reproducible, grouped by job, telemetry present, and the direct virtual-time path
 * agreeing with the measurement library's sweep. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/features.h"
#include "core/pfi.h"
#include "study/fleet.h"

static void test_small_fleet(void **state)
{
    pfi_fleet_opts o = pfi_fleet_defaults();
    pfi_fleet_run *a, *b;
    int na, nb;
    pfi_err e = {0};
    assert_int_equal(pfi_fleet_build("small", 3, &o, &a, &na, &e), PFI_OK);
    assert_int_equal(pfi_fleet_build("small", 3, &o, &b, &nb, &e), PFI_OK);
    assert_int_equal(na, 12);
    assert_int_equal(nb, na);
    int h100 = 0;
    for (int i = 0; i < na; i++) {
        const pfi_run *r = &a[i].run;
        /* Same seed, same runs, level for level. */
        assert_string_equal(r->name, b[i].run.name);
        assert_int_equal(r->n_levels, b[i].run.n_levels);
        for (int k = 0; k < r->n_levels; k++)
            assert_true(r->levels[k].tput == b[i].run.levels[k].tput);
        /* The baseline first, at the default limit, with the telemetry prediction needs. */
        assert_true(r->n_levels >= 5);
        assert_true(r->levels[0].cap_w == r->default_limit_w);
        double x[PFI_N_FEATURES];
        assert_int_equal(pfi_features_from_run(r, x, &e), PFI_OK);
        assert_true(isfinite(x[PFI_FT_CLOCK_RATIO]) && isfinite(x[PFI_FT_SM_ACTIVE]));
        assert_true(isfinite(x[PFI_FT_DRAM_ACTIVE]) && isfinite(x[PFI_FT_POWERCAP_FRAC]));
        assert_true(r->levels[0].tput_lo <= r->levels[0].tput &&
                    r->levels[0].tput <= r->levels[0].tput_hi);
        pfi_index ix;
        pfi_index_opts io = pfi_index_defaults();
        io.n_boot = 0;
        assert_int_equal(pfi_index_run(r, &io, &ix, &e), PFI_OK);
        assert_true(ix.pfi > 0.05 && ix.pfi < 1.5);
        /* A matched H100 run is left out with its H200 job. */
        if (strcmp(a[i].set, "h100") == 0) {
            h100++;
            assert_true(a[i].match >= 0 && a[i].match < na);
            assert_int_equal(a[i].group, a[a[i].match].group);
            assert_non_null(strstr(r->gpu_type, "H100"));
        }
    }
    assert_true(h100 >= 1);
    free(a);
    free(b);
}

static void test_direct_agrees_with_sweep(void **state)
{
    pfi_fleet_entry *ent;
    int n;
    pfi_err e = {0};
    assert_int_equal(pfi_sim_fleet("small", 3, &ent, &n, &e), PFI_OK);
    /* The entry with the fewest GPUs keeps the sweep quick. */
    int pick = 0;
    for (int i = 1; i < n; i++)
        if (ent[i].node.jobs[0].n_gpus < ent[pick].node.jobs[0].n_gpus)
            pick = i;
    pfi_fleet_opts o = pfi_fleet_defaults();
    pfi_run *direct = malloc(sizeof *direct), *swept = malloc(sizeof *swept);
    assert_non_null(direct);
    assert_non_null(swept);
    assert_int_equal(pfi_fleet_characterize(&ent[pick], &o, direct, &e), PFI_OK);
    o.use_sweep = 1;
    int rc = pfi_fleet_characterize(&ent[pick], &o, swept, &e);
    if (rc != PFI_OK)
        print_message("sweep: %s\n", e.msg);
    assert_int_equal(rc, PFI_OK);
    assert_int_equal(swept->n_levels, direct->n_levels);
    for (int k = 0; k < direct->n_levels; k++) {
        assert_true(fabs(swept->levels[k].cap_w - direct->levels[k].cap_w) < 0.5);
        assert_true(fabs(swept->levels[k].power_w / direct->levels[k].power_w - 1) < 0.01);
        assert_true(fabs(swept->levels[k].tput / direct->levels[k].tput - 1) < 0.01);
    }
    pfi_index a, b;
    pfi_index_opts io = pfi_index_defaults();
    io.n_boot = 0;
    assert_int_equal(pfi_index_run(direct, &io, &a, &e), PFI_OK);
    assert_int_equal(pfi_index_run(swept, &io, &b, &e), PFI_OK);
    assert_true(fabs(a.pfi - b.pfi) < 0.005);
    free(direct);
    free(swept);
    free(ent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_fleet),
        cmocka_unit_test(test_direct_agrees_with_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
