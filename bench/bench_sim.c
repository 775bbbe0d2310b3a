/* SPDX-License-Identifier: Apache-2.0 */
/* bench_sim: how fast the simulator answers.  Prints figures, asserts nothing.
 *   - steady-state curve points per second (pfi_sim_job_steady);
 *   - a virtual-time characterization of the whole paper fleet (189 runs, 7 limits, every GPU
 *     sampled at 10 Hz for 30 simulated seconds per limit, cumulative tokens read at the end);
 *   - shared-state limit changes and re-reads per second. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "hw/hw.h"
#include "sim/sim.h"
#include "util/clock.h"

int main(void)
{
    pfi_err e = {0};
    pfi_node_config cfg;
    pfi_sim_node *n;
    if (pfi_sim_preset("h200x8-dense", &cfg, &e) || pfi_sim_node_new(&cfg, &n, &e)) {
        fprintf(stderr, "bench_sim: %s\n", e.msg);
        return 1;
    }
    double t0 = pfi_clock_mono();
    int points = 0;
    pfi_sim_steady s;
    while (pfi_clock_mono() - t0 < 0.5)
        for (double cap = 700; cap >= 200; cap -= 1, points++)
            pfi_sim_job_steady(n, 0, cap, &s, NULL);
    printf("steady curve points (8 GPUs):       %10.0f /s\n", points / (pfi_clock_mono() - t0));
    pfi_sim_node_free(n);

    pfi_fleet_entry *f;
    int nf;
    if (pfi_sim_fleet("paper", 1, &f, &nf, &e)) {
        fprintf(stderr, "bench_sim: %s\n", e.msg);
        return 1;
    }
    t0 = pfi_clock_mono();
    long samples = 0;
    double sim_s = 0;
    for (int i = 0; i < nf; i++) {
        if (pfi_sim_node_new(&f[i].node, &n, &e))
            return 1;
        double t = 0, top = f[i].node.gpu.max_limit_w;
        for (int lv = 0; lv < 7; lv++) {
            double cap = top * (1.0 - 0.1 * lv);
            if (cap < f[i].node.gpu.min_limit_w)
                cap = f[i].node.gpu.min_limit_w;
            for (int g = 0; g < f[i].node.n_gpus; g++)
                pfi_sim_set_limit(n, g, t, cap, NULL);
            for (int k = 0; k < 300; k++, t += 0.1)
                for (int g = 0; g < f[i].node.n_gpus; g++, samples++) {
                    pfi_sample smp;
                    pfi_sample_clear(&smp);
                    pfi_sim_sample(n, g, t, &smp, NULL);
                }
            pfi_sim_job_status st;
            pfi_sim_job_status_at(n, 0, t, &st, NULL);
        }
        sim_s += t;
        pfi_sim_node_free(n);
    }
    double dt = pfi_clock_mono() - t0;
    printf("paper fleet in virtual time:        %10.2f s wall for %.0f simulated GPU-node hours\n",
           dt, sim_s / 3600);
    printf("  telemetry samples:                %10.0f /s (%ld samples)\n", samples / dt, samples);
    free(f);

    char path[] = "/tmp/bench_sim.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    unlink(path);
    pfi_sim_state *st;
    if (pfi_sim_state_create(path, &cfg, 1000, 0, &e) || pfi_sim_state_open(path, NULL, 1, &st, &e)) {
        fprintf(stderr, "bench_sim: %s\n", e.msg);
        return 1;
    }
    t0 = pfi_clock_mono();
    int sets = 0;
    while (pfi_clock_mono() - t0 < 0.5 && sets < 60000) {
        pfi_sim_state_set_limit(st, sets % 8, 700 - (sets % 50), NULL);
        pfi_sim_node *node;
        pfi_sim_state_node(st, &node, NULL, NULL);
        sets++;
    }
    printf("shared-state set + re-read:         %10.0f /s\n", sets / (pfi_clock_mono() - t0));
    pfi_sim_state_close(st);
    unlink(path);
    return 0;
}
