/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_digest: one line per case with a digest of every field of the allocator's result (one
 * shot, and in a workspace: fresh, at other budgets, rebuilt by set_jobs, after a job's new
 * curve) or its error, for comparing two builds of the allocator bit for bit: build this file
 * against each library and diff the outputs.  Fleets: the synthetic one (core/alloc_synth.h)
 * at sizes around the root's histogram threshold up to a million jobs, and random fleets of its
 * own (all-distinct curves of 2-24 points on and off the grid, concave, with flat tails and
 * flat stretches, non-concave, decreasing parts; shared curves; weights, SLAs, cap ranges
 * inside and beyond the curves), on 1 W and 5 W grids (and 0.5 W, 3 W), at cuts of 5-90%; and
 * bad inputs (their error codes and texts).
 * Not built by make (it compares builds, so it is built against each one's library):
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Isrc bench/alloc_digest.c TREE/build/libpfi.a \
 *      -lsqlite3 -lgsl -lgslcblas -ljansson -lmicrohttpd -lcurl -ldl -lpthread -lm -o digest
 *   digest [big] > out.txt     (big: also fleets of 1,000,000 jobs, ~1.5 min; DIGEST_WHY=1
 *                               prints each one-shot error on stderr)
 * and the two outputs compared with cmp.  Without big: ~7 s of CPU (2 cores shared, load ~7). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/alloc_synth.h"

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

static uint64_t digest(int rc, const pfi_err *e, const pfi_alloc_result *r)
{
    uint64_t h = 1469598103934665603ull;
    h = mix(h, &rc, sizeof rc);
    if (rc)
        return mix(h, e->msg, strlen(e->msg));
    size_t n = (size_t)r->n;
    h = mix(h, &r->n, sizeof r->n);
    h = mix(h, r->cap_w, n * sizeof *r->cap_w);
    h = mix(h, r->tput, n * sizeof *r->tput);
    h = mix(h, r->floor_w, n * sizeof *r->floor_w);
    h = mix(h, r->sla, n * sizeof *r->sla);
    h = mix(h, r->flags, n * sizeof *r->flags);
    double d[] = {r->budget_w, r->power_w, r->value, r->upper_bound, r->min_budget_w,
                  r->min_budget_nosla_w, r->sla_extra};
    int i[] = {r->optimal, r->budget_binds, r->n_sla_dropped};
    h = mix(h, d, sizeof d);
    h = mix(h, i, sizeof i);
    return mix(h, &r->nodes, sizeof r->nodes);
}

static unsigned long long rs = 88172645463325252ull;
static double U(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (double)(rs >> 11) / 9007199254740992.0;
}

/* One case: one shot at each cut, then a workspace: fresh at the first, re-solved at the
 * others, rebuilt by set_jobs, and one job's curve scaled (through update_job). */
static void run(const char *name, pfi_alloc_job *jobs, int n, double step, int on_inf,
                const double *cuts, int ncuts, double *scale_tput)
{
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    o.step_w = step;
    o.on_infeasible = on_inf;
    pfi_alloc_result r;
    pfi_err e;
    for (int c = 0; c < ncuts; c++) {
        double b = pfi_alloc_budget_from_cut(jobs, n, cuts[c]);
        memset(&e, 0, sizeof e);
        int rc = pfi_alloc_solve(jobs, n, b, &o, &r, &e);
        if (rc && getenv("DIGEST_WHY"))
            fprintf(stderr, "%s: %s\n", name, e.msg);
        printf("%s step %g inf %d cut %.2f one-shot nodes %lld %016llx\n", name, step, on_inf,
               cuts[c], rc ? 0 : r.nodes, (unsigned long long)digest(rc, &e, &r));
        if (!rc)
            pfi_alloc_result_free(&r);
    }
    double b0 = pfi_alloc_budget_from_cut(jobs, n, cuts[0]);
    pfi_alloc_ws *w;
    memset(&e, 0, sizeof e);
    int rc = pfi_alloc_ws_new(jobs, n, b0, &o, &w, &e);
    if (rc) {
        printf("%s step %g inf %d ws_new %016llx\n", name, step, on_inf,
               (unsigned long long)digest(rc, &e, NULL));
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int c = 0; c < ncuts; c++) {
            double b = pfi_alloc_budget_from_cut(jobs, n, cuts[c]);
            memset(&e, 0, sizeof e);
            rc = pfi_alloc_ws_solve(w, b, &r, &e);
            printf("%s step %g inf %d cut %.2f ws pass %d %016llx\n", name, step, on_inf,
                   cuts[c], pass, (unsigned long long)digest(rc, &e, &r));
            if (!rc)
                pfi_alloc_result_free(&r);
        }
        double b = pfi_alloc_budget_from_cut(jobs, n, cuts[ncuts - 1]);
        memset(&e, 0, sizeof e);
        rc = pfi_alloc_ws_set_jobs(w, jobs, n, b, &e);
        if (!rc)
            rc = pfi_alloc_ws_solve(w, b, &r, &e);
        printf("%s step %g inf %d set_jobs pass %d %016llx\n", name, step, on_inf, pass,
               (unsigned long long)digest(rc, &e, &r));
        if (!rc)
            pfi_alloc_result_free(&r);
    }
    if (scale_tput) { /* the middle job's curve up 3%: update_job, then solve */
        int j = n / 2;
        double *t = scale_tput;
        for (int k = 0; k < jobs[j].n_points; k++)
            t[k] *= 1.03;
        memset(&e, 0, sizeof e);
        rc = pfi_alloc_ws_update_job(w, j, &e);
        if (!rc)
            rc = pfi_alloc_ws_solve(w, b0, &r, &e);
        printf("%s step %g inf %d update %016llx\n", name, step, on_inf,
               (unsigned long long)digest(rc, &e, &r));
        if (!rc)
            pfi_alloc_result_free(&r);
        for (int k = 0; k < jobs[j].n_points; k++)
            t[k] /= 1.03;
    }
    pfi_alloc_ws_free(w);
}

#define MAXP 24

/* A random curve of np points into c, t (shape by kind). */
static void curve(int kind, int np, double step, double *c, double *t)
{
    double x = 100 + 200 * U();
    int on_grid = U() < 0.6;
    double d = on_grid ? step * (1 + (int)(60 * U() / step)) : 5 + 60 * U();
    for (int i = 0; i < np; i++) {
        c[i] = on_grid ? round(x / step) * step : x;
        x += on_grid ? d : 5 + 60 * U();
    }
    double t0 = 100 + 5000 * U(), p = c[0] + (c[np - 1] - c[0]) * U();
    double a = 0.2 + 0.7 * U(), b = 1 + 2 * U();
    for (int i = 0; i < np; i++) {
        double r = c[i] < p ? 1 - c[i] / p : 0;
        double v = t0 * (1 - fmin(0.95, a * pow(r, b)));
        switch (kind) {
        case 0: /* concave, flat tail */
            t[i] = v;
            break;
        case 1: /* S-shaped: not concave */
            t[i] = t0 / (1 + exp(-(c[i] - p) / 30));
            break;
        case 2: /* noisy: dips */
            t[i] = v * (1 + 0.05 * (U() - 0.5));
            break;
        case 3: /* flat stretches inside: values repeated */
            t[i] = i > 0 && U() < 0.4 ? t[i - 1] : v;
            break;
        case 4: /* linear: collinear points */
            t[i] = t0 * (0.3 + 0.7 * (c[i] - c[0]) / (c[np - 1] - c[0] + 1));
            break;
        case 5: /* rising, then falling past its peak */
            t[i] = t0 * fmax(0.01, 1 - pow((c[i] - p) / 400, 2));
            break;
        default: /* constant */
            t[i] = t0;
            break;
        }
    }
}

static void random_fleet(int n, double step, int shared, int extras, const char *tag)
{
    int pool = shared ? 37 : n;
    size_t nc = (size_t)(pool > n ? pool : n);
    pfi_alloc_job *jobs = calloc((size_t)n, sizeof *jobs);
    double *cs = malloc(nc * MAXP * sizeof *cs), *ts = malloc(nc * MAXP * sizeof *ts);
    char *ids = malloc((size_t)n * 16);
    int *np = malloc((size_t)pool * sizeof *np);
    for (int q = 0; q < pool; q++) {
        np[q] = 2 + (int)(U() * (MAXP - 1));
        int kind = (int)(U() * 7.99);
        if (U() < 0.5)
            kind = 0;
        curve(kind, np[q], step, cs + (size_t)q * MAXP, ts + (size_t)q * MAXP);
    }
    for (int j = 0; j < n; j++) {
        int q = shared ? (int)(U() * pool) : j;
        snprintf(ids + (size_t)j * 16, 16, "r%d", j);
        const double *c = cs + (size_t)q * MAXP;
        double lo = U() < 0.3 ? c[0] + 40 * U() : (U() < 0.5 ? 50 : c[0]);
        double hi = U() < 0.3 ? c[np[q] - 1] - 40 * U() : c[np[q] - 1] + 100 * U();
        if (hi < c[0] + 10)
            hi = c[0] + 10;
        if (hi < lo + 10)
            hi = lo + 10;
        jobs[j] = (pfi_alloc_job){ids + (size_t)j * 16, 1 + (int)(U() * 16), lo, hi, c,
                                  ts + (size_t)q * MAXP, np[q],
                                  c[0] + (c[np[q] - 1] - c[0]) * (0.6 + 0.6 * U()), NAN, NAN, NAN};
        if (extras) {
            if (U() < 0.3)
                jobs[j].weight = 0.5 + 2 * U();
            if (U() < 0.2) {
                jobs[j].sla = 0.05 + 0.3 * U();
                if (U() < 0.5)
                    jobs[j].t0 = ts[(size_t)q * MAXP + np[q] - 1] * (0.9 + 0.2 * U());
            }
        }
    }
    char name[96];
    snprintf(name, sizeof name, "rand-%s-n%d-%s", tag, n, shared ? "shared" : "distinct");
    const double cuts[] = {0.05, 0.3, 0.6, 0.9};
    for (int inf = 0; inf <= (extras ? 2 : 0); inf++)
        run(name, jobs, n, step, inf, cuts, 4, shared ? NULL : ts + (size_t)(n / 2) * MAXP);
    free(np);
    free(jobs);
    free(cs);
    free(ts);
    free(ids);
}

static void synth(int n, int lo, int hi, double step)
{
    pfi_alloc_synth s;
    pfi_err e = {0};
    if (pfi_alloc_synth_make(n, lo, hi, 42, &s, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    char name[64];
    snprintf(name, sizeof name, "synth-n%d-g%d-%d", n, lo, hi);
    const double cuts[] = {0.3, 0.05, 0.1, 0.6, 0.9};
    run(name, s.jobs, n, step, 0, cuts, 5, s.tput + (size_t)(n / 2) * PFI_SYNTH_POINTS);
    pfi_alloc_synth_free(&s);
}

/* Bad inputs: each one breaks one job of a small valid fleet. */
static void bad(void)
{
    static double c[4] = {200, 300, 400, 500}, t[4] = {1, 2, 3, 3.5};
    static double cd[4] = {200, 300, 300, 500}, tn[4] = {1, NAN, 3, 4};
    for (int k = 0; k < 12; k++) {
        pfi_alloc_job jobs[6];
        char ids[6][8];
        for (int j = 0; j < 6; j++) {
            snprintf(ids[j], 8, "b%d", j);
            jobs[j] = (pfi_alloc_job){ids[j], 2, 200, 500, c, t, 4, 400, NAN, NAN, NAN};
        }
        pfi_alloc_job *J = &jobs[3];
        switch (k) {
        case 0: J->id = "b1"; break;
        case 1: J->cap_w = cd; break;
        case 2: J->tput = tn; break;
        case 3: J->n_points = 1; break;
        case 4: J->n_gpus = 0; break;
        case 5: J->min_cap_w = 600; break;
        case 6: J->p0_w = 0; break;
        case 7: J->sla = 1.5; break;
        case 8: J->weight = -1; break;
        case 9: J->id = ""; break;
        case 10: J->sla = 0.01; J->t0 = 100; break;
        default: J->max_cap_w = 201; J->min_cap_w = 200.5; break;
        }
        char name[32];
        snprintf(name, sizeof name, "bad-%d", k);
        const double cuts[] = {0.3, 0.95};
        run(name, jobs, 6, 1, 0, cuts, 2, NULL);
        run(name, jobs, 6, 7, 0, cuts, 2, NULL);
    }
}

int main(int argc, char **argv)
{
    int big = argc > 1 && !strcmp(argv[1], "big");
    bad();
    const int sizes[] = {1, 2, 7, 100, 1000, 4095, 4096, 5000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (int shared = 0; shared < 2; shared++) {
            random_fleet(sizes[i], 1, shared, 0, "s1");
            random_fleet(sizes[i], 5, shared, 0, "s5");
            random_fleet(sizes[i], 1, shared, 1, "s1x");
            random_fleet(sizes[i], 5, shared, 1, "s5x");
            random_fleet(sizes[i], 0.5, shared, 1, "s05x");
            random_fleet(sizes[i], 3, shared, 1, "s3x");
        }
    random_fleet(100000, 1, 0, 0, "s1");
    random_fleet(100000, 5, 1, 1, "s5x");
    const int sn[] = {4095, 4096, 5000, 100000};
    for (size_t i = 0; i < sizeof sn / sizeof *sn; i++) {
        synth(sn[i], 1, 32, 1);
        synth(sn[i], 1, 1, 5);
        synth(sn[i], 8, 8, 1);
    }
    if (big) {
        synth(1000000, 1, 32, 1);
        synth(1000000, 8, 8, 5);
        random_fleet(1000000, 1, 0, 0, "s1");
    }
    return 0;
}
