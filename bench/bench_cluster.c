/* SPDX-License-Identifier: Apache-2.0 */
/* bench_cluster: the cluster controller's reaction time at site scale.
 *
 * 1,000 stand-in node daemons x 8 GPUs (200-700 W) behind one loopback HTTP server, jobs of 1 to
 * 32 GPUs (multi-node from 16 up) filling ~90% of the GPUs, each with its own convex curve, a
 * third with an SLA.  For each budget change it prints the time from the change to every node
 * having acknowledged its caps (allocation + lowerings everywhere + raises), the allocation's
 * share, the requests sent, and the largest site cap sum seen at any instant against the budget
 * (which must never be exceeded: the bench fails if it is).
 *   bench_cluster [NODES] [GPUS_PER_NODE] [REPEATS] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <jansson.h>

#include "cluster/cluster.h"
#include "core/pfi.h"
#include "support/standin.h"
#include "util/clock.h"

static unsigned long long rng = 2463534242u;
static double urand(void)
{
    return pfi_rand_uniform(&rng);
}

/* CPU seconds of the whole process so far: the controller's threads and the stand-ins'. */
static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

/* Nodes the controller holds silent now (a request to them failed or timed out). */
static int silent_nodes(pfi_cl *c)
{
    json_t *d = pfi_cl_json_nodes(c), *n;
    size_t i;
    int silent = 0;
    json_array_foreach(json_object_get(d, "nodes"), i, n)
        silent += !json_is_true(json_object_get(n, "up"));
    json_decref(d);
    return silent;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int nodes = argc > 1 ? atoi(argv[1]) : 1000;
    int gpn = argc > 2 ? atoi(argv[2]) : 8;
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    if (nodes < 1 || gpn < 1 || gpn > 32 || reps < 1) {
        fprintf(stderr, "usage: bench_cluster [NODES] [GPUS_PER_NODE 1-32] [REPEATS]\n");
        return 2;
    }
    char **names = calloc((size_t)nodes, sizeof *names);
    for (int i = 0; i < nodes; i++) {
        names[i] = malloc(16);
        snprintf(names[i], 16, "node%05d", i);
    }
    pfi_err e = {0};
    pfi_standin *s;
    int port;
    if (pfi_standin_start(nodes, (const char *const *)names, gpn, 200, 700, &s, &port, &e)) {
        fprintf(stderr, "bench_cluster: %s\n", e.msg);
        return 1;
    }

    /* Jobs packed node by node; a job of >= 2 nodes' worth of GPUs spans whole nodes. */
    char dir[] = "/tmp/pfi-bench-cluster.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char topo[300];
    snprintf(topo, sizeof topo, "%s/topo.json", dir);
    FILE *f = fopen(topo, "w");
    fprintf(f, "{\"nodes\": [");
    for (int i = 0; i < nodes; i++)
        fprintf(f, "%s{\"name\": \"%s\", \"gpus\": %d}", i ? ", " : "", names[i], gpn);
    fprintf(f, "], \"jobs\": [");
    static const int sizes[] = {1, 2, 4, 8, 16, 32};
    int node = 0, gpu = 0, njobs = 0, ngpus_busy = 0, multi = 0;
    static const double caps[] = {200, 300, 400, 500, 600, 700};
    while (node < nodes) {
        int size = sizes[(int)(urand() * 6) % 6];
        if (size > gpn && gpu != 0) {
            node++; /* whole nodes for big jobs */
            gpu = 0;
            continue;
        }
        if (size <= gpn && gpu + size > gpn) {
            node++;
            gpu = 0;
            continue;
        }
        int span = size > gpn ? (size + gpn - 1) / gpn : 1;
        if (node + span > nodes)
            break;
        if (urand() < 0.1) { /* ~10% of the room stays idle */
            gpu += size <= gpn ? size : 0;
            if (size > gpn || gpu >= gpn) {
                node += span > 1 ? span : (gpu >= gpn);
                gpu = gpu >= gpn ? 0 : gpu;
            }
            continue;
        }
        char id[32];
        snprintf(id, sizeof id, "%d", 1000 + njobs);
        double a = 0.5 + 0.7 * urand(), b = 1.2 + 1.3 * urand();
        double tput[6];
        for (int k = 0; k < 6; k++) {
            double r = 1 - caps[k] / 700.0, v = 1 - a * pow(r, b);
            tput[k] = v < 0.05 ? 0.05 : v;
        }
        double sla = urand() < 0.33 ? 0.10 + 0.10 * urand() : NAN;
        fprintf(f, "%s{\"id\": \"%s\", \"parts\": [", njobs ? ", " : "", id);
        for (int p = 0; p < span; p++) {
            int here = size > gpn ? gpn : size, gl[PFI_MAX_GPUS];
            fprintf(f, "%s{\"node\": \"%s\", \"gpus\": [", p ? ", " : "", names[node + p]);
            for (int q = 0; q < here; q++) {
                gl[q] = (size > gpn ? 0 : gpu) + q;
                fprintf(f, "%s%d", q ? ", " : "", gl[q]);
            }
            fprintf(f, "]}");
            pfi_standin_job j = {id, names[node + p], here, gl, sla, 1.0, 6, caps, tput, 650, 1.0};
            if (pfi_standin_add_job(s, &j, &e)) {
                fprintf(stderr, "bench_cluster: %s\n", e.msg);
                return 1;
            }
        }
        fprintf(f, "]}");
        njobs++;
        ngpus_busy += size;
        multi += span > 1;
        if (size > gpn) {
            node += span;
            gpu = 0;
        } else {
            gpu += size;
            if (gpu >= gpn) {
                node++;
                gpu = 0;
            }
        }
    }
    fprintf(f, "]}\n");
    fclose(f);

    pfi_cl_config cfg;
    pfi_cl_config_defaults(&cfg);
    snprintf(cfg.node_url, sizeof cfg.node_url, "http://127.0.0.1:%d/n/%%n", port);
    snprintf(cfg.topo_file, sizeof cfg.topo_file, "%s", topo);
    cfg.heartbeat_s = 0;
    cfg.timeout_s = 10;
    pfi_cl *c;
    if (pfi_cl_open(&cfg, &c, &e)) {
        fprintf(stderr, "bench_cluster: %s\n", e.msg);
        return 1;
    }
    double t = pfi_clock_mono();
    if (pfi_cl_refresh(c, &e)) {
        fprintf(stderr, "bench_cluster: refresh: %s\n", e.msg);
        return 1;
    }
    double t_refresh = pfi_clock_mono() - t;
    double full = pfi_cl_site_default_w(c);
    printf("cluster: %d nodes x %d GPUs = %d GPUs, %d jobs (%d multi-node) on %d GPUs\n", nodes,
           gpn, nodes * gpn, njobs, multi, ngpus_busy);
    printf("refresh (topology + GET /v1/gpus + GET /v1/jobs on every node): %.1f ms, "
           "%d nodes silent after it\n",
           t_refresh * 1e3, silent_nodes(c));

    static const double cuts[] = {0.30, 0.20, 0.35, 0.0};
    static const char *what[] = {"100% -> cut 30%", "cut 30% -> cut 20% (raise)",
                                 "cut 20% -> cut 35%", "cut 35% -> 100%"};
    int bad = 0;
    double *all = calloc((size_t)(4 * reps), sizeof *all); /* every change's time, pooled */
    double *all_cpu = calloc((size_t)(4 * reps), sizeof *all_cpu); /* and its CPU */
    int nall = 0;
    for (int k = 0; k < 4; k++) {
        double *tt = calloc((size_t)reps, sizeof *tt), *ta = calloc((size_t)reps, sizeof *ta);
        double peak_over = -INFINITY;
        long long req = 0;
        for (int r = 0; r < reps; r++) {
            /* From the previous budget each time, so every repeat makes the same change. */
            double prev = k == 0 ? full : (1 - cuts[k - 1]) * full;
            pfi_cl_budget pb = {.set = 1, .watts = prev, .ramp_s = 0};
            if (pfi_cl_set_budget(c, &pb, &e)) {
                fprintf(stderr, "bench_cluster: %s\n", e.msg);
                return 1;
            }
            double w = (1 - cuts[k]) * full;
            pfi_cl_budget b = {.set = 1, .watts = w, .ramp_s = 0};
            pfi_standin_reset_peak(s);
            long long r0 = pfi_standin_requests(s);
            double c0 = cpu_s();
            t = pfi_clock_mono();
            if (pfi_cl_set_budget(c, &b, &e)) {
                fprintf(stderr, "bench_cluster: %s\n", e.msg);
                return 1;
            }
            tt[r] = pfi_clock_mono() - t;
            if (all && all_cpu) {
                all_cpu[nall] = cpu_s() - c0;
                all[nall++] = tt[r];
            }
            pfi_cl_stats st;
            pfi_cl_get_stats(c, &st);
            ta[r] = st.last_alloc_s;
            req = pfi_standin_requests(s) - r0;
            double bound = w > prev ? w : prev, over = pfi_standin_peak(s) - bound;
            if (over > peak_over)
                peak_over = over;
            if (over > 1e-6 || pfi_standin_cap_sum(s) > w + 1e-6)
                bad = 1;
        }
        qsort(tt, (size_t)reps, sizeof *tt, cmp_d);
        qsort(ta, (size_t)reps, sizeof *ta, cmp_d);
        printf("%-28s budget change -> all %d nodes acknowledged: median %.1f ms (min %.1f, max "
               "%.1f; allocation %.1f ms), %lld requests, peak - max(old, new budget) = %.0f W\n",
               what[k], nodes, tt[reps / 2] * 1e3, tt[0] * 1e3, tt[reps - 1] * 1e3,
               ta[reps / 2] * 1e3, req, peak_over);
        free(tt);
        free(ta);
    }
    if (all && all_cpu && nall > 0) {
        qsort(all, (size_t)nall, sizeof *all, cmp_d);
        qsort(all_cpu, (size_t)nall, sizeof *all_cpu, cmp_d);
        /* Wall time on a shared machine is mostly waiting for a core; the CPU a change takes
         * (both sides here, as the stand-ins run in this process) is what the code costs. */
        printf("every change (%d): CPU of this process (controller and stand-ins, all threads) "
               "median %.1f ms\n",
               nall, all_cpu[(nall - 1) / 2] * 1e3);
        int p95 = (int)ceil(0.95 * nall) - 1;
        printf("every change (%d): acknowledged by all %d nodes in median %.1f ms, p95 %.1f ms; "
               "refresh %.1f ms\n",
               nall, nodes, all[(nall - 1) / 2] * 1e3, all[p95 < 0 ? 0 : p95] * 1e3,
               t_refresh * 1e3);
    }
    pfi_cl_stats fin;
    pfi_cl_get_stats(c, &fin);
    printf("node requests that failed during the changes: %lld; nodes silent at the end: %d\n",
           fin.n_node_fail, silent_nodes(c));
    free(all);
    free(all_cpu);
    pfi_cl_close(c);
    pfi_standin_stop(s);
    unlink(topo);
    rmdir(dir);
    for (int i = 0; i < nodes; i++)
        free(names[i]);
    free(names);
    if (bad) {
        fprintf(stderr, "bench_cluster: the site went over budget\n");
        return 1;
    }
    return 0;
}
