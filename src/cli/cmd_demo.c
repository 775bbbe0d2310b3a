/* SPDX-License-Identifier: Apache-2.0 */
/* pfi sim demo: a simulated 8x H200 node running a training job while its power cap steps down,
 * shown live.  It runs in virtual time (each step is held for --hold simulated seconds) and is
 * paced for the eye on a terminal; the study (later) replaces this with the full pipeline. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "hw/backend_sim.h"
#include "util/clock.h"
#include "util/units.h"

/* A step's caps not applied: the first GPU's error, naming it and the cap (NVML names only
 * its call), else the apply's own. */
static int apply_failed(const pfi_apply_report *rep, pfi_err *e, double cap_w)
{
    if (rep->first_gpu >= 0) {
        *e = rep->first;
        pfi_err_prefix(e, "setting GPU %d to %.0f W: ", rep->first_gpu, cap_w);
    }
    return pfi_cli_fail("sim demo", e);
}

/* One cap held for `hold` simulated seconds: two lines, just after the change (the firmware
 * still settling) and at the end of the hold (steady).  PFI_EXIT_OK, else the failure said. */
static int demo_step(pfi_backend *b, const pfi_node_config *cfg, double cap, double hold,
                     int live, double *t0_rate)
{
    pfi_err e = {0};
    int n = cfg->n_gpus;
    double t[PFI_MAX_GPUS];
    for (int g = 0; g < n; g++)
        t[g] = cap;
    pfi_apply_report rep;
    if (pfi_hw_apply(b, n, t, INFINITY, NULL, &rep, &e) != PFI_OK || rep.first_gpu >= 0)
        return apply_failed(&rep, &e, cap);
    for (int k = 0; k < 2; k++) {
        pfi_hw_sleep(b, k == 0 ? 1.0 : hold - 1.0);
        double clk = 0;
        printf("%7.1f %6.0f  ", pfi_hw_now(b), cap);
        for (int g = 0; g < n; g++) {
            pfi_sample s;
            if (pfi_hw_sample(b, g, &s, &e) != PFI_OK)
                return pfi_cli_fail("sim demo", &e);
            clk += s.sm_clock_mhz / n;
            if (g < 8)
                printf("%5.0f ", s.power_w);
        }
        pfi_sim_job_status st = {0};
        double rate = 0;
        for (int j = 0; j < cfg->n_jobs; j++)
            if (pfi_backend_sim_job(b, j, &st, &e) == PFI_OK)
                rate += st.tokens_per_s;
        if (isnan(*t0_rate))
            *t0_rate = rate;
        printf("%7.0f %12.0f %6.0f%%%s\n", clk, rate, 100 * rate / *t0_rate,
               k == 0 ? "  (settling)" : "");
        fflush(stdout);
        if (live)
            pfi_clock_sleep(0.4);
    }
    return PFI_EXIT_OK;
}

int pfi_cmd_sim_demo(int argc, char **argv)
{
    const char *sim = NULL, *steps_s = "700:300:100", *hold_s = "20s";
    int no_pace = 0;
    const pfi_opt opts[] = {
        {"sim", PFI_OPT_STR, &sim, "FILE|PRESET", "node (default: 8x H200, Llama-3 8B)"},
        {"caps", PFI_OPT_STR, &steps_s, "FROM:TO:STEP", "cap steps in watts (default 700:300:100)"},
        {"hold", PFI_OPT_STR, &hold_s, "D", "simulated time at each cap (default 20s)"},
        {"no-pace", PFI_OPT_FLAG, &no_pace, NULL, "print at once, even on a terminal"},
        {0},
    };
    const pfi_cmd_spec spec = {"pfi sim demo [--sim FILE|PRESET] [--caps FROM:TO:STEP] [--hold D]",
                               "A simulated node running a training job while its power cap "
                               "steps down: per step the cap, each GPU's power, the SM clock and "
                               "the job's tokens/s.", opts,
        "pfi sim demo                                       # 8x H200, the cap from 700 W down to 300 W\n"
        "pfi sim demo --sim h200x8-moe --caps 700:400:50 --no-pace"};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    pfi_err e = {0};
    double caps[PFI_MAX_LEVELS], hold;
    int ncaps = 0;
    if (pfi_parse_cap_range(steps_s, caps, PFI_MAX_LEVELS, &ncaps, &e) != PFI_OK ||
        pfi_parse_duration(hold_s, &hold, &e) != PFI_OK)
        return pfi_cli_fail("sim demo", &e);
    /* A day at most: past ~1e14 s the simulated power drifted and 1e16 s printed -1 W. */
    if (!(hold >= 2 && hold <= 86400)) {
        fprintf(stderr, "pfi sim demo: --hold must be 2s to 86400s, a day (%s)\n", hold_s);
        return PFI_EXIT_USAGE;
    }
    /* Virtual time whatever the environment: the demo must not touch a shared state.  Its
     * simulated node is its own, in memory, so read-only mode (which guards the GPUs of the
     * node and a shared simulated state) has nothing to guard here: with PFI_READ_ONLY=1 set
     * for a whole session, the demo stopped half-way, refused its own first cap change. */
    unsetenv("PFI_SIM_STATE");
    unsetenv("PFI_READ_ONLY");
    pfi_backend *b;
    if (pfi_hw_open("sim", sim, 0, &b, &e) != PFI_OK)
        return pfi_cli_fail("sim demo", &e);
    pfi_sim_node *node = pfi_backend_sim_node(b);
    const pfi_node_config *cfg = pfi_sim_node_config(node);
    int n = cfg->n_gpus;
    for (int i = 0; i < ncaps; i++)
        if (caps[i] < cfg->gpu.min_limit_w || caps[i] > cfg->gpu.max_limit_w) {
            fprintf(stderr, "pfi sim demo: cap %.0f W is outside the %s's range %.0f-%.0f W\n",
                    caps[i], cfg->gpu.name, cfg->gpu.min_limit_w, cfg->gpu.max_limit_w);
            pfi_hw_close(b);
            return PFI_EXIT_USAGE;
        }
    int live = !no_pace && isatty(STDOUT_FILENO);
    printf("pfi sim demo: %d x %s running", n, cfg->gpu.name);
    for (int j = 0; j < cfg->n_jobs; j++)
        printf("%s %s (%s, %d GPUs, dp%d tp%d pp%d)", j ? "," : "", cfg->jobs[j].name,
               cfg->jobs[j].model, cfg->jobs[j].n_gpus, cfg->jobs[j].dp, cfg->jobs[j].tp,
               cfg->jobs[j].pp);
    int down = 1;
    for (int i = 1; i < ncaps; i++)
        down &= caps[i] < caps[i - 1];
    printf("\nthe power cap steps%s every %.0f simulated seconds; power is NVML's 1 s average; "
           "rel: tokens/s against the first cap's\n\n",
           down ? " down" : "", hold);
    printf("%7s %6s  %-*s %7s %12s %7s\n", "t_s", "cap_W", 6 * (n < 8 ? n : 8), "power per GPU (W)",
           "SM_MHz", "tokens/s", "rel");
    double t0_rate = NAN;
    for (int i = 0; i < ncaps; i++) {
        if ((rc = demo_step(b, cfg, caps[i], hold, live, &t0_rate)) != PFI_EXIT_OK) {
            pfi_hw_close(b);
            return rc;
        }
    }
    pfi_hw_close(b);
    return PFI_EXIT_OK;
}
