/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the simulator's operating point: the regula falsi root finder against the power it
 * inverts, and the budget grid (sim/optable.c) against the direct solver at budgets between its
 * nodes, on them, and outside the settable range, for every GPU model and the paper fleet's
 * stage work; the powers the solvers keep with the clocks, and one GPU's step computed once. */
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core/pfi.h"
#include "sim/physics.h"
#include "sim/sim.h"

/* Every clock strictly inside the range is within PFI_SIM_CLOCK_TOL below the root: its power
 * fits, and the power a tolerance higher does not. */
static void test_root_brackets_the_limit(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_node_config c;
    assert_int_equal(pfi_sim_preset("h200x8-mixed", &c, &e), PFI_OK);
    for (int m = 0; m < pfi_gpu_model_count(); m++) {
        const pfi_gpu_model *g = pfi_gpu_model_at(m);
        c.gpu = *g;
        pfi_sim_work w;
        assert_int_equal(pfi_sim_job_work(&c, &c.jobs[0], 0, &w, &e), PFI_OK);
        int inside = 0;
        for (double L = g->min_limit_w - 20; L <= g->max_limit_w + 20; L += 0.731) {
            pfi_sim_op op;
            pfi_sim_operating_point(g, &w, L, 1.02, &op);
            int binds = 0;
            for (int p = 0; p < PFI_PH_N; p++) {
                double f = op.f[p];
                assert_true(f >= g->sm_clock_min_mhz && f <= g->sm_clock_max_mhz);
                /* the power the solver keeps is the phase's power at its clock, bit for bit */
                assert_true(op.p[p] == pfi_sim_phase_power(g, &w, p, f, 1.02));
                if (f < g->sm_clock_max_mhz && pfi_sim_phase_duration(&w, p) > 0)
                    binds = 1;
                if (f <= g->sm_clock_min_mhz || f >= g->sm_clock_max_mhz)
                    continue;
                inside++;
                assert_true(pfi_sim_phase_power(g, &w, p, f, 1.02) <= L);
                assert_true(pfi_sim_phase_power(g, &w, p, f + PFI_SIM_CLOCK_TOL, 1.02) > L);
            }
            assert_int_equal(op.binds, binds);
        }
        assert_true(inside > 100);
    }
}

/* One GPU's step at op (pfi_sim_gpu_step_at) is, bit for bit, what its definitions give with
 * every power computed again at the op's clocks. */
static void step_is_its_definition(const pfi_gpu_model *g, const pfi_sim_work *w,
                                   const pfi_sim_op *op, double eff)
{
    pfi_sim_gpu_step st;
    pfi_sim_gpu_step_at(g, w, op, &st);
    double busy = 0, sum = 0, energy = 0;
    for (int p = 0; p < PFI_PH_KERNELS; p++) {
        double t = pfi_sim_phase_time(g, w, op, p);
        assert_true(st.t[p] == t);
        busy += t;
        sum += t * op->f[p];
        energy += t * pfi_sim_phase_power(g, w, p, op->f[p], eff);
    }
    assert_true(busy > 0);
    assert_true(st.busy == busy && st.busy == pfi_sim_work_busy(g, w, op));
    assert_true(st.fbusy == sum / busy);
    assert_true(st.pbusy == energy / busy);
    assert_true(st.pipe == pfi_sim_pipe_time(g, w, op));
}

/* The grid's answer equals the direct solver's to the solver's own tolerance everywhere, and
 * exactly on its nodes; the same GPU asked in any order gives the same answers; each phase's
 * power comes with its clock. */
static void test_optable_matches_direct(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_fleet_entry *f;
    int nf;
    assert_int_equal(pfi_sim_fleet("paper", 1, &f, &nf, &e), PFI_OK);
    unsigned long long rng = 7;
    long between = 0, on_node = 0;
    for (int i = 0; i < nf; i += 7) {
        const pfi_node_config *c = &f[i].node;
        const pfi_gpu_model *g = &c->gpu;
        for (int st = 0; st < c->jobs[0].pp; st++) {
            pfi_sim_work w;
            assert_int_equal(pfi_sim_job_work(c, &c->jobs[0], st, &w, &e), PFI_OK);
            double eff = 0.96 + 0.01 * st;
            pfi_sim_optable t;
            pfi_sim_optable_init(&t, g, &w, eff);
            for (int q = 0; q < 400; q++) {
                double u = pfi_rand_uniform(&rng);
                /* a quarter on whole watts (nodes), the rest anywhere, some outside the range */
                double L = g->min_limit_w - 10 + u * (g->max_limit_w - g->min_limit_w + 20);
                if (q % 4 == 0)
                    L = floor(L);
                pfi_sim_op a, b;
                pfi_sim_optable_op(&t, L, &a);
                pfi_sim_operating_point(g, &w, L, eff, &b);
                assert_int_equal(a.binds, b.binds);
                step_is_its_definition(g, &w, &a, eff);
                step_is_its_definition(g, &w, &b, eff);
                for (int p = 0; p < PFI_PH_N; p++) {
                    assert_true(a.p[p] == pfi_sim_phase_power(g, &w, p, a.f[p], eff));
                    assert_true(b.p[p] == pfi_sim_phase_power(g, &w, p, b.f[p], eff));
                    if (q % 4 == 0)
                        assert_true(a.f[p] == b.f[p]);
                    else
                        assert_true(fabs(a.f[p] - b.f[p]) <= PFI_SIM_CLOCK_TOL);
                    if (a.f[p] > g->sm_clock_min_mhz && a.f[p] < g->sm_clock_max_mhz)
                        assert_true(pfi_sim_phase_power(g, &w, p, a.f[p], eff) <= L);
                }
                if (q % 4 == 0)
                    on_node++;
                else
                    between++;
            }
            pfi_sim_optable_free(&t);
        }
    }
    free(f);
    assert_true(between > 1000 && on_node > 300);
}

/* A table's clocks at every whole-watt budget of g's settable range, each equal bit for bit to
 * the direct solver's (the budgets are nodes); returns the memo's hits meanwhile. */
static long nodes_match_direct(const pfi_gpu_model *g, const pfi_sim_work *w, double eff)
{
    long h0 = pfi_sim_optable_memo_hits();
    pfi_sim_optable t;
    pfi_sim_optable_init(&t, g, w, eff);
    for (double L = ceil(g->min_limit_w); L <= g->max_limit_w; L += 1) {
        pfi_sim_op a, b;
        pfi_sim_optable_op(&t, L, &a);
        pfi_sim_operating_point(g, w, L, eff, &b);
        assert_int_equal(a.binds, b.binds);
        for (int p = 0; p < PFI_PH_N; p++) {
            assert_true(a.f[p] == b.f[p]);
            assert_true(a.p[p] == b.p[p]);
        }
    }
    pfi_sim_optable_free(&t);
    return pfi_sim_optable_memo_hits() - h0;
}

/* The memo of solved nodes changes no clock: two jobs on equal chips share their memory-bound
 * phases' nodes (the second table takes them from the memo), and a chip, job or variation that
 * differs in any input of a phase's power is solved for itself, bit for bit as the direct
 * solver does, right after the memo was filled with its neighbour's nodes. */
static void test_optable_memo_changes_nothing(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_node_config c;
    assert_int_equal(pfi_sim_preset("h200x8-mixed", &c, &e), PFI_OK);
    assert_true(c.n_jobs >= 2);
    for (int m = 0; m < pfi_gpu_model_count(); m++) {
        pfi_gpu_model g = *pfi_gpu_model_at(m);
        c.gpu = g;
        pfi_sim_work w1, w2;
        assert_int_equal(pfi_sim_job_work(&c, &c.jobs[0], 0, &w1, &e), PFI_OK);
        assert_int_equal(pfi_sim_job_work(&c, &c.jobs[1], 0, &w2, &e), PFI_OK);
        nodes_match_direct(&g, &w1, 1.01);
        /* the other job's memory-bound phase is the first's: from the memo */
        assert_true(nodes_match_direct(&g, &w2, 1.01) > 0);
        for (int k = 0; k < 12; k++) {
            nodes_match_direct(&g, &w1, 1.01); /* the memo holds the unchanged nodes */
            pfi_gpu_model h = g;
            pfi_sim_work v = w1;
            double eff = 1.01;
            switch (k) {
            case 0: h.sm_clock_min_mhz *= 1.05; break;
            case 1: h.sm_clock_max_mhz *= 1.01; break;
            case 2: h.v_floor *= 0.97; break;
            case 3: h.f_knee *= 0.9; break;
            case 4: h.v_gamma *= 1.1; break;
            case 5: h.idle_w += 3; break;
            case 6: h.busy_static_w += 3; break;
            case 7: h.hbm_w += 3; break;
            case 8: h.dyn_w *= 1.02; break;
            case 9: eff = 1.02; break;
            case 10: v.act_mem *= 1.1; break;
            default: v.dram_mem *= 1.1; break;
            }
            nodes_match_direct(&h, &v, eff);
        }
    }
}

/* The bytes of thread-local storage the executable (libpfi linked in) gives every thread of
 * the process, whether it simulates or not. */
static int exe_tls(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_TLS)
            *(size_t *)arg += info->dlpi_phdr[i].p_memsz;
    return 1; /* the first object is the executable */
}

typedef struct memo_run {
    pfi_gpu_model g;
    pfi_sim_work w1, w2;
    long hits, differ;
} memo_run;

/* A fresh thread's memo: empty at its start, filled by the first job's nodes, and the second
 * job's memory-bound nodes found in it, every clock and power the direct solver's. */
static void *memo_thread(void *arg)
{
    memo_run *r = arg;
    long h0 = pfi_sim_optable_memo_hits();
    for (int j = 0; j < 2; j++) {
        const pfi_sim_work *w = j ? &r->w2 : &r->w1;
        pfi_sim_optable t;
        pfi_sim_optable_init(&t, &r->g, w, 1.01);
        for (double L = ceil(r->g.min_limit_w); L <= r->g.max_limit_w; L += 1) {
            pfi_sim_op a, b;
            pfi_sim_optable_op(&t, L, &a);
            pfi_sim_operating_point(&r->g, w, L, 1.01, &b);
            for (int p = 0; p < PFI_PH_N; p++)
                r->differ += a.f[p] != b.f[p] || a.p[p] != b.p[p];
        }
        pfi_sim_optable_free(&t);
        if (j == 0 && pfi_sim_optable_memo_hits() != h0)
            r->differ++; /* the first job of a fresh thread finds nothing */
    }
    r->hits = pfi_sim_optable_memo_hits() - h0;
    return NULL;
}

/* The memo is the simulating thread's own, allocated when it first solves a node and freed when
 * it ends (a leak under the sanitizers otherwise): the process's static thread-local storage,
 * which every thread of it carries (a server's, a client library's), stays small. */
static void test_optable_memo_per_thread(void **state)
{
    (void)state;
    size_t tls = 0;
    dl_iterate_phdr(exe_tls, &tls);
    assert_true(tls <= 1024);
    pfi_err e = {0};
    pfi_node_config c;
    assert_int_equal(pfi_sim_preset("h200x8-mixed", &c, &e), PFI_OK);
    memo_run r = {.g = c.gpu};
    assert_int_equal(pfi_sim_job_work(&c, &c.jobs[0], 0, &r.w1, &e), PFI_OK);
    assert_int_equal(pfi_sim_job_work(&c, &c.jobs[1], 0, &r.w2, &e), PFI_OK);
    for (int k = 0; k < 3; k++) {
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, memo_thread, &r), 0);
        pthread_join(th, NULL);
        assert_int_equal(r.differ, 0);
        assert_true(r.hits > 0);
    }
}

/* The catalogue's GPU of a test's round, its V-f curve moved as a fit moves it on two rounds of
 * three (the exponent, the knee and the floor drawn from their fit bounds). */
static pfi_gpu_model moved_gpu(int round, unsigned long long *rng)
{
    pfi_gpu_model g = *pfi_gpu_model_at(round % pfi_gpu_model_count());
    if (round % 3) {
        g.v_gamma = 0.7 + 2.3 * pfi_rand_uniform(rng);
        g.f_knee = 0.9 * pfi_rand_uniform(rng);
        g.v_floor = 0.5 + 0.45 * pfi_rand_uniform(rng);
    }
    return g;
}

/* Roots solved together (pfi_sim_phase_roots) are pfi_sim_phase_root's, bit for bit: from the
 * whole clock range and from narrow brackets, on every GPU model with V-f curves as a fit moves
 * them (any exponent, knee and floor), batches of every size around the lanes' count, and
 * brackets already closed (no step). */
static void test_roots_together_are_single_roots(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_node_config c;
    assert_int_equal(pfi_sim_preset("h200x8-mixed", &c, &e), PFI_OK);
    unsigned long long rng = 11;
    enum { N = 300 };
    static pfi_sim_power_law law[N];
    static pfi_sim_root a[N], b[N];
    long steps = 0;
    for (int round = 0; round < 40; round++) {
        pfi_gpu_model g = moved_gpu(round, &rng);
        c.gpu = g;
        pfi_sim_work w;
        assert_int_equal(pfi_sim_job_work(&c, &c.jobs[round % c.n_jobs], 0, &w, &e), PFI_OK);
        int n = round < 12 ? round : N - round; /* 0..11 and large batches */
        for (int i = 0; i < n; i++) {
            pfi_sim_power_law_of(&g, &w, i % PFI_PH_N, 0.95 + 0.1 * pfi_rand_uniform(&rng),
                                 &law[i]);
            double lo = g.sm_clock_min_mhz, hi = g.sm_clock_max_mhz;
            double plo = pfi_sim_law_power(&law[i], lo), phi = pfi_sim_law_power(&law[i], hi);
            double L = plo + (phi - plo) * (0.001 + 0.998 * pfi_rand_uniform(&rng));
            a[i] = (pfi_sim_root){&law[i], L, {lo, hi, plo, phi}};
            if (i % 5 == 1) /* a bracket from a direct solve at a lower and a higher limit */
                pfi_sim_phase_root(&law[i], L - 0.5, &a[i].b);
            if (i % 7 == 3) { /* already closed: no step */
                pfi_sim_phase_root(&law[i], L, &a[i].b);
                a[i].b.hi = a[i].b.lo + PFI_SIM_CLOCK_TOL / 2;
            }
            b[i] = a[i];
        }
        for (int i = 0; i < n; i++) {
            pfi_sim_bracket before = a[i].b;
            pfi_sim_phase_root(a[i].law, a[i].limit_w, &a[i].b);
            steps += a[i].b.lo != before.lo || a[i].b.hi != before.hi;
        }
        pfi_sim_phase_roots(b, n);
        for (int i = 0; i < n; i++) {
            assert_true(b[i].law == a[i].law && b[i].limit_w == a[i].limit_w);
            assert_memory_equal(&b[i].b, &a[i].b, sizeof a[i].b);
        }
    }
    assert_true(steps > 4000);
}

/* A job's steady states at many caps at once (pfi_sim_job_steady_n, its roots solved together)
 * are pfi_sim_job_steady's at each cap, bit for bit: whole watts (the grid's nodes, the direct
 * solver's answers), the top of the range, caps outside it and between nodes (the grid's own
 * answers), on the presets and the paper fleet (pipelines, variation), with chips whose V-f
 * curve a fit moved, and more caps than one batch holds. */
static void steady_n_matches(const pfi_node_config *cfg, unsigned long long *rng)
{
    pfi_err e = {0};
    pfi_sim_node *a, *b;
    assert_int_equal(pfi_sim_node_new(cfg, &a, &e), PFI_OK);
    assert_int_equal(pfi_sim_node_new(cfg, &b, &e), PFI_OK);
    const pfi_gpu_model *g = &cfg->gpu;
    enum { NC = 90 };
    double caps[NC];
    for (int i = 0; i < NC; i++) {
        double u = pfi_rand_uniform(rng);
        caps[i] = g->min_limit_w - 15 + u * (g->max_limit_w - g->min_limit_w + 30);
        if (i % 3 != 2)
            caps[i] = floor(caps[i]);
    }
    caps[0] = g->max_limit_w;
    caps[1] = g->min_limit_w;
    caps[2] = caps[3]; /* the same cap twice */
    for (int j = 0; j < cfg->n_jobs; j++) {
        pfi_sim_steady many[NC];
        assert_int_equal(pfi_sim_job_steady_n(b, j, caps, NC, many, &e), PFI_OK);
        for (int i = 0; i < NC; i++) {
            pfi_sim_steady one;
            assert_int_equal(pfi_sim_job_steady(a, j, caps[i], &one, &e), PFI_OK);
            assert_true(many[i].tokens_per_s == one.tokens_per_s);
            assert_true(many[i].step_time_s == one.step_time_s);
            assert_true(many[i].power_w == one.power_w);
            assert_true(many[i].sm_clock_mhz == one.sm_clock_mhz);
            assert_true(many[i].busy_frac == one.busy_frac);
            assert_true(many[i].compute_frac == one.compute_frac);
            assert_true(many[i].mem_frac == one.mem_frac);
            assert_true(many[i].comm_frac == one.comm_frac);
            assert_int_equal(many[i].cap_binds, one.cap_binds);
        }
    }
    pfi_sim_steady s;
    assert_int_equal(pfi_sim_job_steady_n(b, cfg->n_jobs, caps, 1, &s, &e), PFI_ENOENT);
    pfi_sim_node_free(a);
    pfi_sim_node_free(b);
}

static void test_steady_n_is_steady(void **state)
{
    (void)state;
    pfi_err e = {0};
    unsigned long long rng = 5;
    static const char *const presets[] = {"h200x8-dense", "h200x8-mixed", "h200x32-llama70b",
                                          "a100x4-gpt3xl", "a40x8-gpt3-2.7b"};
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        pfi_node_config c;
        assert_int_equal(pfi_sim_preset(presets[i], &c, &e), PFI_OK);
        steady_n_matches(&c, &rng);
        /* a V-f curve as a fit moves it: pow, not x*sqrt(x), in every step */
        c.gpu.v_gamma = 1.23;
        c.gpu.f_knee = 0.31;
        c.variation = 0.03;
        steady_n_matches(&c, &rng);
    }
    pfi_fleet_entry *f;
    int nf;
    assert_int_equal(pfi_sim_fleet("paper", 1, &f, &nf, &e), PFI_OK);
    for (int i = 0; i < nf; i += 11)
        steady_n_matches(&f[i].node, &rng);
    free(f);
}

/* The pipeline's time with the concurrent work is Clark's formula, bit for bit, computed here
 * with erfc and exp at every point: also where the kernels are so far above the overlap that
 * the simulator returns the kernels' time without them (x > 8.5), and on both sides of that. */
static void test_pipe_is_clarks_formula(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_node_config c;
    assert_int_equal(pfi_sim_preset("h200x8-dense", &c, &e), PFI_OK);
    const pfi_gpu_model *g = &c.gpu;
    pfi_sim_work w;
    assert_int_equal(pfi_sim_job_work(&c, &c.jobs[0], 0, &w, &e), PFI_OK);
    unsigned long long rng = 3;
    int far = 0, near = 0;
    for (int i = 0; i < 200000; i++) {
        pfi_sim_op op;
        pfi_sim_operating_point(g, &w, g->min_limit_w + pfi_rand_uniform(&rng) * 500, 1.0, &op);
        pfi_sim_gpu_step st;
        w.t_overlap = st.busy = 0;
        pfi_sim_gpu_step_at(g, &w, &op, &st);
        double a = st.busy, sa = PFI_SIM_KERNEL_JITTER * a;
        /* overlaps from 0.01 to 1.5 of the kernels, spreads from none to 30% */
        w.t_overlap = a * (0.01 + 1.49 * pow(pfi_rand_uniform(&rng), 3));
        w.sd_overlap = w.t_overlap * 0.3 * pfi_rand_uniform(&rng);
        pfi_sim_gpu_step_at(g, &w, &op, &st);
        double b = w.t_overlap, sb = w.sd_overlap;
        double theta = sqrt(sa * sa + sb * sb), x = (a - b) / theta;
        double cdf = 0.5 * erfc(-x / sqrt(2.0));
        double pdf = exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
        assert_true(st.pipe == a * cdf + b * (1 - cdf) + theta * pdf);
        far += x > 8.5;
        near += x > 6 && x <= 8.5;
    }
    assert_true(far > 10000 && near > 1000);
}

/* The phases' powers at one clock (pfi_sim_laws_power) are pfi_sim_law_power's, bit for bit:
 * every GPU model, V-f curves as a fit moves them (clocks below and above the knee, the
 * catalogue's exponent and others), at the ends of the clock range and between, with the
 * variation and each phase's activity and DRAM use. */
static void test_laws_power_is_law_power(void **state)
{
    (void)state;
    pfi_err e = {0};
    pfi_node_config c;
    assert_int_equal(pfi_sim_preset("h200x8-mixed", &c, &e), PFI_OK);
    unsigned long long rng = 5;
    int above = 0, below = 0;
    for (int round = 0; round < 60; round++) {
        pfi_gpu_model g = moved_gpu(round, &rng);
        c.gpu = g;
        pfi_sim_work w;
        assert_int_equal(pfi_sim_job_work(&c, &c.jobs[round % c.n_jobs], 0, &w, &e), PFI_OK);
        pfi_sim_power_law law[PFI_PH_N];
        double eff = 0.95 + 0.1 * pfi_rand_uniform(&rng);
        for (int p = 0; p < PFI_PH_N; p++)
            pfi_sim_power_law_of(&g, &w, p, eff, &law[p]);
        for (int k = 0; k < 8; k++) {
            double f = k == 0   ? g.sm_clock_min_mhz
                       : k == 1 ? g.sm_clock_max_mhz
                                : g.sm_clock_min_mhz + pfi_rand_uniform(&rng) *
                                                           (g.sm_clock_max_mhz - g.sm_clock_min_mhz);
            double p[PFI_PH_N];
            pfi_sim_laws_power(law, PFI_PH_N, f, p);
            for (int q = 0; q < PFI_PH_N; q++) {
                double want = pfi_sim_law_power(&law[q], f);
                assert_memory_equal(&p[q], &want, sizeof want);
            }
            if (f / g.sm_clock_max_mhz > g.f_knee)
                above++;
            else
                below++;
        }
    }
    assert_true(above > 50 && below > 50);
}

/* The voltage at a fraction of f_max (pfi_sim_volt_phi) is pfi_sim_volt's at that clock, bit
 * for bit: every GPU model, V-f curves as a fit moves them, clocks across the whole range
 * (below and above the knee, the ends) and the Perseus profiles' whole-MHz clocks. */
static void test_volt_phi_is_volt(void **state)
{
    (void)state;
    unsigned long long rng = 9;
    int above = 0, below = 0;
    for (int round = 0; round < 60; round++) {
        pfi_gpu_model g = moved_gpu(round, &rng);
        for (int k = 0; k < 40; k++) {
            double f = k == 0   ? g.sm_clock_min_mhz
                       : k == 1 ? g.sm_clock_max_mhz
                       : k < 20 ? floor(g.sm_clock_min_mhz + pfi_rand_uniform(&rng) *
                                                               (g.sm_clock_max_mhz - g.sm_clock_min_mhz))
                                : g.sm_clock_min_mhz + pfi_rand_uniform(&rng) *
                                                           (g.sm_clock_max_mhz - g.sm_clock_min_mhz);
            double want = pfi_sim_volt(&g, f), got = pfi_sim_volt_phi(&g, f / g.sm_clock_max_mhz);
            assert_memory_equal(&got, &want, sizeof want);
            if (f / g.sm_clock_max_mhz > g.f_knee)
                above++;
            else
                below++;
        }
    }
    assert_true(above > 200 && below > 200);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_root_brackets_the_limit),
        cmocka_unit_test(test_optable_matches_direct),
        cmocka_unit_test(test_optable_memo_changes_nothing),
        cmocka_unit_test(test_roots_together_are_single_roots),
        cmocka_unit_test(test_steady_n_is_steady),
        cmocka_unit_test(test_pipe_is_clarks_formula),
        cmocka_unit_test(test_optable_memo_per_thread),
        cmocka_unit_test(test_laws_power_is_law_power),
        cmocka_unit_test(test_volt_phi_is_volt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
