/* SPDX-License-Identifier: Apache-2.0 */
/* bench_nvml: what a telemetry sample costs in pfi's NVML layer: the backend's ~15 dlsym'd
 * calls per GPU, its GPM and field-value bookkeeping, and the fake's locking, measured against
 * the fake libnvidia-ml, whose simulator readings are cached for 5 ms (so back-to-back samples
 * measure the layers, not the physics).  The simulator backend alone is printed beside it.  A
 * real driver adds its own time per call (not measured here).  Prints figures, asserts
 * nothing.  The fake is $PFI_FAKENVML, else BUILD/lib/libnvidia-ml.so.1 beside this binary. */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "hw/hw.h"
#include "util/clock.h"

/* CPU seconds of this process so far (user + system), which a loaded machine inflates less
 * than wall time. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* Samples every GPU for about half a second; returns microseconds per GPU sample (wall), and
 * the CPU microseconds in *cpu_us. */
static double per_sample_us(pfi_backend *b, int *n_out, double *cpu_us)
{
    pfi_err e = {0};
    int n = 0;
    if (pfi_hw_count(b, &n, &e) != PFI_OK || n == 0)
        return -1;
    long k = 0;
    double t0 = pfi_clock_mono(), c0 = cpu_s();
    while (pfi_clock_mono() - t0 < 0.5)
        for (int i = 0; i < n; i++, k++) {
            pfi_sample s;
            if (pfi_hw_sample(b, i, &s, &e) != PFI_OK) {
                fprintf(stderr, "bench_nvml: GPU %d: %s\n", i, e.msg);
                return -1;
            }
        }
    *n_out = n;
    *cpu_us = (cpu_s() - c0) / k * 1e6;
    return (pfi_clock_mono() - t0) / k * 1e6;
}

int main(void)
{
    char path[PATH_MAX];
    const char *env = getenv("PFI_FAKENVML");
    if (env && *env) {
        snprintf(path, sizeof path, "%s", env);
    } else {
        char exe[PATH_MAX];
        ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (len <= 0)
            return 1;
        exe[len] = '\0';
        snprintf(path, sizeof path, "%s/lib/libnvidia-ml.so.1", dirname(dirname(exe)));
    }
    /* Real time and a private node in both, as pfi monitor would run them. */
    unsetenv("PFI_SIM_STATE");
    pfi_err e = {0};
    pfi_backend *nv = NULL, *sim = NULL;
    if (pfi_hw_open("nvml", path, 1, &nv, &e) != PFI_OK) {
        fprintf(stderr, "bench_nvml: %s\n", e.msg);
        return 1;
    }
    int n = 0;
    double cpu_nvml, cpu_sim;
    double us_nvml = per_sample_us(nv, &n, &cpu_nvml);
    pfi_hw_close(nv);
    if (pfi_hw_open("sim", NULL, 1, &sim, &e) != PFI_OK) {
        fprintf(stderr, "bench_nvml: %s\n", e.msg);
        return 1;
    }
    double us_sim = per_sample_us(sim, &n, &cpu_sim);
    pfi_hw_close(sim);
    if (us_nvml < 0 || us_sim < 0)
        return 1;
    printf("one GPU sample, NVML backend over the fake:  %8.1f us wall, %8.1f us CPU  (%d GPUs)\n",
           us_nvml, cpu_nvml, n);
    printf("one GPU sample, simulator backend:          %8.1f us wall, %8.1f us CPU\n", us_sim,
           cpu_sim);
    printf("a 10 Hz round of %d GPUs through the NVML layer: %.3f%% of a core (CPU), driver "
           "time excluded\n",
           n, cpu_nvml * n * 10 / 1e6 * 100);
    return 0;
}
