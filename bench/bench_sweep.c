/* SPDX-License-Identifier: Apache-2.0 */
/* bench_sweep: how fast a sweep runs in virtual time on the simulator (what the study pays per
 * characterized run), and how much of that is the simulator.  Prints figures; asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "hw/backend_sim.h"
#include "measure/measure.h"
#include "util/clock.h"

/* CPU seconds of this process so far (user + system). */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static int bench(const char *preset)
{
    pfi_backend *b;
    pfi_err e = {0};
    unsetenv("PFI_SIM_STATE");
    if (pfi_hw_open("sim", preset, 0, &b, &e) != PFI_OK) {
        fprintf(stderr, "bench_sweep: %s\n", e.msg);
        return 1;
    }
    const pfi_node_config *nc = pfi_sim_node_config(pfi_backend_sim_node(b));
    pfi_sweep_cfg c;
    pfi_sweep_defaults(&c);
    c.n_gpus = nc->jobs[0].n_gpus;
    for (int i = 0; i < c.n_gpus; i++)
        c.gpus[i] = nc->jobs[0].first_gpu + i;
    double lv[] = {1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4};
    for (int i = 0; i < 7; i++)
        c.levels[i] = lv[i];
    c.n_levels = 7;
    c.levels_frac = 1;
    c.threaded_sampler = 0;
    pfi_tput_source *src;
    pfi_source_sim(0, &src, &e);
    pfi_sweep_result *r = malloc(sizeof *r);
    double t0 = pfi_clock_mono(), c0 = cpu_s();
    int rc = pfi_sweep_run(b, src, &c, r, &e);
    double wall = pfi_clock_mono() - t0, cpu = cpu_s() - c0;
    double virt = pfi_hw_now(b);
    int steady = 0;
    for (int i = 0; i < r->run.n_levels; i++)
        steady += r->steady[i];
    /* The simulator's share: the same number of ticks of sampling alone. */
    pfi_backend *b2;
    pfi_hw_open("sim", preset, 0, &b2, &e);
    long ticks = (long)(virt / c.tick_s);
    double t1 = pfi_clock_mono(), c1 = cpu_s();
    pfi_sample s;
    pfi_sim_job_status st;
    for (long k = 0; k < ticks; k++) {
        if (k % 80 == 0)
            for (int i = 0; i < c.n_gpus; i++)
                pfi_hw_set_limit(b2, c.gpus[i], 700 - 50 * ((k / 80) % 7), NULL, &e);
        pfi_hw_sleep(b2, c.tick_s);
        for (int i = 0; i < c.n_gpus; i++)
            pfi_hw_sample(b2, c.gpus[i], &s, &e);
        pfi_backend_sim_job(b2, 0, &st, &e);
    }
    double simonly = pfi_clock_mono() - t1, simcpu = cpu_s() - c1;
    printf("%-14s %d GPUs: %d levels (%d steady) in %.1f s virtual, %.3f s wall, %.3f s CPU "
           "(rc %d); the simulator alone for the same %ld ticks: %.3f s wall, %.3f s CPU\n",
           preset, c.n_gpus, r->run.n_levels, steady, virt, wall, cpu, rc, ticks, simonly,
           simcpu);
    free(r);
    pfi_source_free(src);
    pfi_hw_close(b);
    pfi_hw_close(b2);
    return rc != PFI_OK;
}

int main(void)
{
    int bad = bench("h200x1-small");
    bad |= bench("h200x8-dense");
    return bad;
}
