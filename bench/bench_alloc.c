/* SPDX-License-Identifier: Apache-2.0 */
/* bench_alloc: time and memory of one allocation of a campus-sized synthetic fleet (100,000 jobs
 * of 1-32 GPUs, about 1.6M GPUs) at a 30% cut, for the solver's modes and the equal policy.
 * Target (issue 6): <= 100 ms on one core, memory linear in the number of jobs.  Prints CPU
 * times, each with its ratio to one read of the same curves in the same run; asserts nothing
 * about time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "core/alloc.h"
#include "core/alloc_synth.h"
#include "core/policy.h"
#include "util/clock.h"

static long max_rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* One pass over every curve point (CPU s, best of reps): the same-run reference each time is
 * divided by (the least any solver must spend reading its input). */
static double read_pass(const pfi_alloc_synth *s, int reps)
{
    double best = INFINITY, sum = 0;
    for (int rep = 0; rep < reps; rep++) {
        double t = pfi_clock_cpu();
        for (int j = 0; j < s->n; j++)
            for (int i = 0; i < s->jobs[j].n_points; i++)
                sum += s->jobs[j].cap_w[i] * s->jobs[j].tput[i];
        best = fmin(best, pfi_clock_cpu() - t);
    }
    return sum > 0 ? best : INFINITY; /* uses the sum, so the pass is not optimized away */
}

static int one(int n, const char *label, int policy, double max_work)
{
    pfi_alloc_synth s;
    pfi_err e = {0};
    if (pfi_alloc_synth_make(n, 1, 32, 42, &s, &e)) {
        fprintf(stderr, "bench_alloc: %s\n", e.msg);
        return 1;
    }
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.max_work = max_work;
    double b = pfi_alloc_budget_from_cut(s.jobs, n, 0.3);
    long gpus = 0;
    for (int j = 0; j < n; j++)
        gpus += s.jobs[j].n_gpus;
    pfi_alloc_result r;
    double best = INFINITY;
    int reps = n >= 100000 ? 5 : 20;
    for (int rep = 0; rep < reps; rep++) {
        double t = pfi_clock_cpu(); /* CPU time: the machine is shared */
        int rc = pfi_alloc_policy(policy, s.jobs, n, NULL, b, &o, &r, &e);
        t = pfi_clock_cpu() - t;
        if (rc) {
            fprintf(stderr, "bench_alloc: %s\n", e.msg);
            pfi_alloc_synth_free(&s);
            return 1;
        }
        if (t < best)
            best = t;
        if (rep + 1 < reps)
            pfi_alloc_result_free(&r);
    }
    double read = read_pass(&s, reps);
    char vb[32] = "n/a";
    if (!isnan(r.upper_bound))
        snprintf(vb, sizeof vb, "%.9f", r.value / r.upper_bound);
    printf("%-22s jobs %6d  GPUs %8ld  best of %2d: %8.2f ms CPU (%6.1f x one read of the "
           "curves, %.3f ms)  power/budget %.6f  value/bound %s  nodes %lld\n",
           label, n, gpus, reps, 1e3 * best, best / read, 1e3 * read, r.power_w / b, vb,
           r.nodes);
    pfi_alloc_result_free(&r);
    pfi_alloc_synth_free(&s);
    return 0;
}

int main(void)
{
    int sizes[] = {1000, 10000, 100000};
    for (int i = 0; i < 3; i++) {
        long rss0 = max_rss_kib();
        if (one(sizes[i], "solve (relaxation)", PFI_POLICY_ORACLE, -1) ||
            one(sizes[i], "solve (default B&B)", PFI_POLICY_ORACLE, 1e8) ||
            one(sizes[i], "equal", PFI_POLICY_EQUAL, 1e8))
            return 1;
        printf("peak RSS %ld KiB (grew %ld KiB); synthetic fleet itself %zu B/job\n",
               max_rss_kib(), max_rss_kib() - rss0, pfi_alloc_synth_bytes_per_job());
    }
    return 0;
}
