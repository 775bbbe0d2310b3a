/* SPDX-License-Identifier: Apache-2.0 */
/* A program outside the source tree using the installed API (tests/it_install.sh builds it with
 * `pkg-config --cflags --libs pfi`): the PFI of a run whose curve is known exactly, then caps
 * for two jobs under a budget.  Exit 0 only when both answers are right. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <pfi/pfi.h>

int main(void)
{
    /* s = 0.8 r^2 measured at 8 levels: PFI(r) = 0.8 r, so PFI30 = 0.24. */
    static pfi_run run;
    memset(&run, 0, sizeof run);
    snprintf(run.name, sizeof run.name, "installed-api");
    run.n_gpus = 8;
    run.min_limit_w = 200, run.max_limit_w = 700, run.default_limit_w = 700;
    for (int i = 0; i < 8; i++) {
        double r = 0.06 * i;
        pfi_level *l = &run.levels[run.n_levels++];
        l->cap_w = 700 * (1 - r);
        l->enforced_w = l->cap_w;
        l->power_w = 700 * (1 - r);
        l->tput = 1000 * (1 - 0.8 * r * r);
        l->tput_lo = l->tput_hi = NAN;
    }
    pfi_index_opts o = pfi_index_defaults();
    o.n_boot = 0;
    pfi_index ix;
    pfi_err err = {0};
    if (pfi_index_run(&run, &o, &ix, &err) != PFI_OK) {
        fprintf(stderr, "pfi_index_run: %s\n", err.msg);
        return 1;
    }
    printf("PFI30 %.4f (fit %s)\n", ix.pfi, pfi_family_name(ix.fit.family));
    if (!(fabs(ix.pfi - 0.24) < 1e-3))
        return 1;

    /* Two 1-GPU jobs: "flat" loses nothing down to 300 W, "steep" loses in proportion. */
    const double caps[] = {300, 500, 700};
    const double flat[] = {99, 100, 100}, steep[] = {43, 71, 100};
    pfi_alloc_job jobs[2] = {
        {"flat", 1, 300, 700, caps, flat, 3, 700, NAN, NAN, 1},
        {"steep", 1, 300, 700, caps, steep, 3, 700, NAN, NAN, 1},
    };
    pfi_alloc_opts ao;
    pfi_alloc_opts_default(&ao);
    pfi_alloc_result res;
    if (pfi_alloc_solve(jobs, 2, 1000, &ao, &res, &err) != PFI_OK) {
        fprintf(stderr, "pfi_alloc_solve: %s\n", err.msg);
        return 1;
    }
    printf("caps flat %.0f W, steep %.0f W, power %.0f W of 1000\n", res.cap_w[0], res.cap_w[1],
           res.power_w);
    int ok = res.power_w <= 1000 + 1e-9 && res.cap_w[0] == 300 && res.cap_w[1] == 700;
    pfi_alloc_result_free(&res);
    return ok ? 0 : 1;
}
