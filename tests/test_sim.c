/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the simulator: GPU models, physics invariants, transients, cumulative counters,
 * configuration errors, presets, the sim backend and the fleet generator. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hw/backend_sim.h"
#include "sim/physics.h"
#include "sim/sim.h"

static pfi_sim_node *make_node(const char *preset, double noise, double variation)
{
    pfi_node_config c;
    pfi_err e = {0};
    assert_int_equal(pfi_sim_preset(preset, &c, &e), PFI_OK);
    c.noise_w = noise;
    c.variation = variation;
    pfi_sim_node *n;
    assert_int_equal(pfi_sim_node_new(&c, &n, &e), PFI_OK);
    return n;
}

static void test_models(void **state)
{
    assert_string_equal(pfi_gpu_model_find("h200")->name, "H200-SXM");
    assert_string_equal(pfi_gpu_model_find("H200 SXM")->name, "H200-SXM");
    assert_string_equal(pfi_gpu_model_find("NVIDIA H200")->name, "H200-SXM");
    assert_string_equal(pfi_gpu_model_find("h100-sxm")->name, "H100-SXM");
    assert_string_equal(pfi_gpu_model_find("A100 PCIe 80GB")->name, "A100-PCIE-80GB");
    assert_string_equal(pfi_gpu_model_find("a100-sxm4")->name, "A100-SXM");
    assert_string_equal(pfi_gpu_model_find("a40")->name, "A40");
    assert_null(pfi_gpu_model_find("v100"));
    assert_null(pfi_gpu_model_find(""));
    /* hardware.md facts */
    const pfi_gpu_model *h = pfi_gpu_model_find("h200");
    assert_true(h->max_limit_w == 700 && h->min_limit_w == 200 && h->sms == 132);
    assert_true(pfi_gpu_model_find("a100-pcie")->max_limit_w == 300);
    /* Every settable limit can be enforced, even under a full GEMM load at the lowest clock;
     * and an H200 at 700 W holds ~1500 MHz on it (hardware.md). */
    pfi_sim_work w = {0};
    w.t_comp = 1;
    w.act_comp = 0.95;
    w.dram_comp = 0.3;
    for (int i = 0; i < pfi_gpu_model_count(); i++) {
        const pfi_gpu_model *g = pfi_gpu_model_at(i);
        pfi_sim_op op;
        pfi_sim_operating_point(g, &w, g->min_limit_w, 1.0, &op);
        assert_true(pfi_sim_phase_power(g, &w, PFI_PH_COMPUTE, op.f[0], 1.0) <=
                    g->min_limit_w + 1e-6);
        assert_true(op.f[0] > g->sm_clock_min_mhz);
    }
    pfi_sim_op op;
    pfi_sim_operating_point(h, &w, 700, 1.0, &op);
    assert_true(op.f[0] > 1400 && op.f[0] < 1600 && op.binds);
}

/* Lower cap: never more throughput, never more power; the clock the firmware holds at 700 W
 * on a dense job is well below 1980 MHz (hardware.md: ~1500 MHz holdable on a full GEMM). */
static void test_monotone_curves(void **state)
{
    static const char *const presets[] = {"h200x8-dense", "h200x8-moe", "h200x8-tp",
                                          "h200x8-mixed", "h100x8-dense", "a100x4-gpt3xl",
                                          "a40x8-gpt3-2.7b"};
    for (size_t p = 0; p < sizeof presets / sizeof presets[0]; p++) {
        pfi_sim_node *n = make_node(presets[p], 0, 0.02);
        const pfi_node_config *c = pfi_sim_node_config(n);
        for (int j = 0; j < c->n_jobs; j++) {
            pfi_sim_steady prev, s;
            pfi_err e = {0};
            assert_int_equal(pfi_sim_job_steady(n, j, c->gpu.max_limit_w, &prev, &e), PFI_OK);
            assert_true(prev.tokens_per_s > 0 && prev.power_w <= c->gpu.max_limit_w + 1e-6);
            for (double cap = c->gpu.max_limit_w - 10; cap >= c->gpu.min_limit_w; cap -= 10) {
                assert_int_equal(pfi_sim_job_steady(n, j, cap, &s, &e), PFI_OK);
                assert_true(s.tokens_per_s <= prev.tokens_per_s * (1 + 1e-9));
                assert_true(s.power_w <= prev.power_w + 1e-9);
                prev = s;
            }
        }
        pfi_sim_node_free(n);
    }
    pfi_sim_node *n = make_node("h200x8-dense", 0, 0);
    pfi_sim_steady s;
    assert_int_equal(pfi_sim_job_steady(n, 0, 700, &s, NULL), PFI_OK);
    assert_true(s.sm_clock_mhz > 1300 && s.sm_clock_mhz < 1980);
    assert_true(s.cap_binds);
    assert_int_equal(pfi_sim_job_steady(n, 0, 350, &s, NULL), PFI_OK);
    assert_true(s.sm_clock_mhz < 1300);
    pfi_sim_node_free(n);
}

/* A job whose peaks stay under the cap is not slowed at all (the A40 GPT job of the Perseus
 * setup draws well under 300 W). */
static void test_below_cap_unaffected(void **state)
{
    pfi_sim_node *n = make_node("a40x8-gpt3-2.7b", 0, 0);
    pfi_sim_steady top, s;
    pfi_err e = {0};
    assert_int_equal(pfi_sim_job_steady(n, 0, 300, &top, &e), PFI_OK);
    assert_false(top.cap_binds);
    /* Walk down to where it starts to bind; everything above is untouched. */
    double cap = 300;
    for (;;) {
        assert_int_equal(pfi_sim_job_steady(n, 0, cap - 1, &s, &e), PFI_OK);
        if (s.cap_binds)
            break;
        assert_true(s.tokens_per_s == top.tokens_per_s && s.power_w == top.power_w);
        cap -= 1;
        assert_true(cap > 100);
    }
    assert_true(cap < 300 && s.tokens_per_s < top.tokens_per_s);
    pfi_sim_node_free(n);
}

/* First-order firmware response: after one time constant the clock has moved most of the way
 * to the new steady state; after 10 it is there, and the 1 s average equals the steady power. */
static void test_transient(void **state)
{
    pfi_sim_node *n = make_node("h200x8-dense", 0, 0);
    double tau = pfi_sim_node_config(n)->gpu.tau_s;
    assert_true(tau > 0.05 && tau < 2);
    pfi_err e = {0};
    pfi_sim_steady hi, lo;
    pfi_sim_job_steady(n, 0, 700, &hi, NULL);
    pfi_sim_job_steady(n, 0, 400, &lo, NULL);
    for (int g = 0; g < 8; g++)
        assert_int_equal(pfi_sim_set_limit(n, g, 30, 400, &e), PFI_OK);
    pfi_sample s;
    pfi_sample_clear(&s);
    assert_int_equal(pfi_sim_sample(n, 0, 30.0 + tau, &s, &e), PFI_OK);
    assert_true(s.power_inst_w < hi.power_w - 0.5 * (hi.power_w - lo.power_w));
    assert_true(s.power_inst_w > lo.power_w + 0.2 * (hi.power_w - lo.power_w));
    assert_true(s.clock_reasons & PFI_REASON_SW_POWERCAP);
    assert_int_equal(pfi_sim_sample(n, 0, 30.0 + 12 * tau + 1, &s, &e), PFI_OK);
    assert_true(fabs(s.power_w - lo.power_w) < 0.01);
    assert_true(fabs(s.power_inst_w - lo.power_w) < 0.01);
    assert_true(s.limit_w == 400 && s.enforced_w == 400);
    /* Out of order and out of range are refused, and refused changes leave no trace. */
    assert_int_equal(pfi_sim_set_limit(n, 0, 10, 500, &e), PFI_EINVAL);
    assert_int_equal(pfi_sim_set_limit(n, 0, 40, 150, &e), PFI_ERANGE);
    assert_non_null(strstr(e.msg, "150"));
    assert_int_equal(pfi_sim_set_limit(n, 9, 40, 500, &e), PFI_ENOENT);
    assert_true(pfi_sim_limit(n, 0, 100) == 400);
    pfi_sim_node_free(n);
}

/* Cumulative tokens and energy are the integrals of rate and power, through a cap change. */
static void test_cumulative(void **state)
{
    pfi_sim_node *n = make_node("h200x8-dense", 0, 0.02);
    pfi_err e = {0};
    for (int g = 0; g < 8; g++)
        assert_int_equal(pfi_sim_set_limit(n, g, 20, 450, &e), PFI_OK);
    assert_int_equal(pfi_sim_set_limit(n, 3, 20.1, 500, &e), PFI_OK);
    double integral = 0, energy = 0, dt = 0.001;
    pfi_sim_job_status a, b;
    pfi_sample s;
    for (double t = 18; t < 24 - 1e-12; t += dt) {
        pfi_sim_job_status_at(n, 0, t + dt / 2, &a, NULL);
        integral += a.tokens_per_s * dt;
        pfi_sim_job_status_at(n, 0, t + dt / 2, &a, NULL);
        energy += a.power_w * dt;
    }
    assert_int_equal(pfi_sim_job_status_at(n, 0, 18, &a, &e), PFI_OK);
    assert_int_equal(pfi_sim_job_status_at(n, 0, 24, &b, &e), PFI_OK);
    assert_true(fabs((b.tokens - a.tokens) - integral) < 1e-5 * integral);
    assert_true(b.iterations > a.iterations && b.tokens_per_step > 0);
    assert_true(fabs(b.iterations - b.tokens / b.tokens_per_step) < 1e-9 * b.iterations);
    /* Energy of all GPUs against the mean power integral. */
    double e_a = 0, e_b = 0;
    for (int g = 0; g < 8; g++) {
        pfi_sample_clear(&s);
        pfi_sim_sample(n, g, 18, &s, NULL);
        e_a += s.energy_j;
        pfi_sim_sample(n, g, 24, &s, NULL);
        e_b += s.energy_j;
    }
    assert_true(fabs((e_b - e_a) / 8 - energy) < 1e-4 * energy);
    /* Steady state: rate times time, exactly. */
    pfi_sim_job_status_at(n, 0, 100, &a, NULL);
    pfi_sim_job_status_at(n, 0, 160, &b, NULL);
    assert_true(fabs((b.tokens - a.tokens) - 60 * a.tokens_per_s) < 1e-6 * b.tokens);
    pfi_sim_node_free(n);
}

/* Manufacturing variation: the same cap gives different clocks; the job runs at the slowest. */
static void test_variation(void **state)
{
    pfi_sim_node *n = make_node("h200x8-dense", 0, 0.04);
    double fmin = 1e9, fmax = 0;
    pfi_err e = {0};
    for (int g = 0; g < 8; g++)
        assert_int_equal(pfi_sim_set_limit(n, g, 1, 400, &e), PFI_OK);
    for (int g = 0; g < 8; g++) {
        pfi_sample s;
        pfi_sample_clear(&s);
        pfi_sim_sample(n, g, 60, &s, NULL);
        fmin = fmin < s.sm_clock_mhz ? fmin : s.sm_clock_mhz;
        fmax = fmax > s.sm_clock_mhz ? fmax : s.sm_clock_mhz;
    }
    assert_true(fmax - fmin >= 15);
    pfi_sim_job_status st;
    pfi_sim_job_status_at(n, 0, 60, &st, NULL);
    assert_true(st.sm_clock_mhz <= fmin + 15);
    pfi_sim_node_free(n);
}

static void test_sample_fields(void **state)
{
    pfi_sim_node *n = make_node("h200x8-mixed", 4, 0.02);
    pfi_sample s;
    pfi_sample_clear(&s);
    assert_int_equal(pfi_sim_sample(n, 5, 12.5, &s, NULL), PFI_OK);
    uint32_t want = PFI_F_POWER | PFI_F_POWER_INST | PFI_F_ENERGY | PFI_F_SM_CLOCK |
                    PFI_F_MEM_CLOCK | PFI_F_REASONS | PFI_F_GPU_UTIL | PFI_F_SM_ACTIVE |
                    PFI_F_TENSOR | PFI_F_DRAM | PFI_F_NVLINK | PFI_F_PCIE | PFI_F_TEMP |
                    PFI_F_MEM_USED | PFI_F_LIMIT | PFI_F_MEM_POWER;
    assert_true((s.have & want) == want);
    assert_true(s.gpu_util > 0 && s.gpu_util <= 1 && s.sm_active > 0 && s.sm_active <= 1);
    assert_true(s.tensor_active > 0 && s.tensor_active < s.sm_active);
    assert_true(s.dram_active > 0 && s.dram_active < 1);
    assert_true(s.temp_c > 30 && s.temp_c < 95 && s.mem_used_mib > 1000);
    assert_true(s.mem_clock_mhz > 3000);
    pfi_sim_node_free(n);
    /* No NVLink on the A100 PCIe: missing, not zero. */
    n = make_node("a100x4-gpt3xl", 2, 0.02);
    pfi_sample_clear(&s);
    assert_int_equal(pfi_sim_sample(n, 0, 5, &s, NULL), PFI_OK);
    assert_false(s.have & PFI_F_NVLINK);
    assert_true(isnan(s.nvlink_tx_mibs));
    assert_false(s.have & PFI_F_MEM_POWER);
    pfi_sim_node_free(n);
    /* An idle node says so. */
    n = make_node("h200x8-idle", 2, 0.02);
    pfi_sample_clear(&s);
    assert_int_equal(pfi_sim_sample(n, 0, 5, &s, NULL), PFI_OK);
    assert_true(s.clock_reasons & PFI_REASON_IDLE);
    assert_true(s.gpu_util == 0 && s.power_inst_w < 100);
    pfi_sim_node_free(n);
}

static void test_config_errors(void **state)
{
    pfi_node_config c;
    pfi_err e = {0};
    assert_int_equal(pfi_sim_config_parse("{\"gpu\": \"V100\", \"gpus\": 8}", &c, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "V100"));
    assert_int_equal(pfi_sim_config_parse("{\"gpu\": \"H200\", \"gpus\": 8,", &c, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "malformed JSON"));
    assert_int_equal(pfi_sim_config_parse("{\"gpu\": \"H200\", \"gpus\": 8, \"colour\": 1}", &c,
                                          &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "colour"));
    assert_int_equal(pfi_sim_config_parse("{\"gpu\": \"H200\", \"gpus\": 8, \"limits_w\": 150}",
                                          &c, &e), PFI_ERANGE);
    assert_int_equal(pfi_sim_config_parse("{\"gpu\": \"H200\", \"gpus\": 4, \"jobs\": [{\"model\":"
                                          " \"llama3-8b\", \"dp\": 8, \"seq_len\": 4096, "
                                          "\"global_batch\": 64}]}", &c, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "node has 4"));
    assert_int_equal(pfi_sim_config_parse("{\"gpu\": \"H200\", \"gpus\": 4, \"jobs\": [{\"model\":"
                                          " \"gpt-17\", \"seq_len\": 4096, \"global_batch\": 4}]}",
                                          &c, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "gpt-17"));
    assert_int_equal(pfi_sim_config_parse("{\"gpu\": \"H200\", \"gpus\": 4, \"jobs\": ["
                                          "{\"model\": \"llama3-8b\", \"dp\": 4, \"seq_len\": 4096,"
                                          " \"global_batch\": 16}, {\"model\": \"llama3-8b\", "
                                          "\"name\": \"b\", \"first_gpu\": 2, \"seq_len\": 4096, "
                                          "\"global_batch\": 16}]}", &c, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "share GPUs"));
    assert_int_equal(pfi_sim_config_load("no-such-preset", &c, &e), PFI_EINVAL); /* exit 2 */
    assert_non_null(strstr(e.msg, "h200x8-dense"));
}

static void test_presets_roundtrip(void **state)
{
    assert_true(pfi_sim_preset_count() >= 5);
    for (int i = 0; i < pfi_sim_preset_count(); i++) {
        pfi_node_config c, back;
        pfi_err e = {0};
        assert_int_equal(pfi_sim_preset(pfi_sim_preset_name(i), &c, &e), PFI_OK);
        pfi_sim_node *n;
        assert_int_equal(pfi_sim_node_new(&c, &n, &e), PFI_OK);
        pfi_sim_node_free(n);
        char *text = pfi_sim_config_dump(&c);
        assert_non_null(text);
        assert_int_equal(pfi_sim_config_parse(text, &back, &e), PFI_OK);
        free(text);
        assert_int_equal(back.n_gpus, c.n_gpus);
        assert_int_equal(back.n_jobs, c.n_jobs);
        assert_true(back.gpu.dyn_w == c.gpu.dyn_w && back.seed == c.seed);
        for (int j = 0; j < c.n_jobs; j++) {
            assert_string_equal(back.jobs[j].model, c.jobs[j].model);
            assert_int_equal(back.jobs[j].global_batch, c.jobs[j].global_batch);
            assert_true(back.jobs[j].params_b == c.jobs[j].params_b);
        }
    }
}

/* The memory kernels' saturation clock (the constant `pfi sim validate` fits on the A100) is
 * a GPU key: it applies, survives a dump, and is refused outside 0..1.  0.7 is not the
 * catalogue's 0.3, so a dump that dropped it would read back as 0.3. */
static void test_config_sat_frac(void **state)
{
    pfi_node_config c, back;
    pfi_err e = {0};
    const char *text = "{\"gpu\": {\"type\": \"A100-PCIE-80GB\", \"sat_frac\": 0.7}, "
                       "\"gpus\": 4, \"jobs\": [{\"model\": \"gpt3-xl\", \"pp\": 4, "
                       "\"seq_len\": 1024, \"global_batch\": 64, \"micro_batch\": 8}]}";
    assert_int_equal(pfi_sim_config_parse(text, &c, &e), PFI_OK);
    assert_true(c.gpu.sat_frac == 0.7);
    char *dump = pfi_sim_config_dump(&c);
    assert_non_null(dump);
    assert_int_equal(pfi_sim_config_parse(dump, &back, &e), PFI_OK);
    free(dump);
    assert_true(back.gpu.sat_frac == 0.7);
    /* It acts: below 0.7 of f_max the memory phase slows as 0.7 f_max / f. */
    pfi_sim_work w = {.t_mem = 1.0};
    pfi_sim_op op = {.f = {0, 0.35 * c.gpu.sm_clock_max_mhz}};
    assert_true(fabs(pfi_sim_phase_time(&c.gpu, &w, &op, PFI_PH_MEMORY) - 2.0) < 1e-12);
    assert_int_equal(pfi_sim_config_parse("{\"gpu\": {\"type\": \"A40\", \"sat_frac\": 1.5}, "
                                          "\"gpus\": 1}", &c, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "sat_frac"));
}

static void test_backend(void **state)
{
    unsetenv("PFI_SIM_STATE");
    pfi_backend *b;
    pfi_err e = {0};
    assert_int_equal(pfi_hw_open("sim", NULL, 0, &b, &e), PFI_OK);
    assert_true(pfi_backend_sim_virtual(b));
    assert_non_null(pfi_backend_sim_node(b));
    int n;
    assert_int_equal(pfi_hw_count(b, &n, &e), PFI_OK);
    assert_int_equal(n, 8);
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, 2, &d, &e), PFI_OK);
    assert_string_equal(d.name, "NVIDIA H200");
    assert_true(strncmp(d.uuid, "GPU-", 4) == 0 && d.default_limit_w == 700);
    assert_true(pfi_hw_now(b) == 0);
    pfi_hw_sleep(b, 30);
    assert_true(pfi_hw_now(b) == 30);
    pfi_sim_job_status st0, st1;
    assert_int_equal(pfi_backend_sim_job(b, 0, &st0, &e), PFI_OK);
    double enforced = 0;
    for (int g = 0; g < n; g++)
        assert_int_equal(pfi_hw_set_limit(b, g, 350, &enforced, &e), PFI_OK);
    assert_true(enforced == 350);
    assert_int_equal(pfi_hw_set_limit(b, 0, 900, NULL, &e), PFI_ERANGE);
    pfi_hw_sleep(b, 10);
    assert_int_equal(pfi_backend_sim_job(b, 0, &st1, &e), PFI_OK);
    assert_true(st1.tokens_per_s < 0.8 * st0.tokens_per_s && st1.tokens > st0.tokens);
    pfi_sample s;
    assert_int_equal(pfi_hw_sample(b, 0, &s, &e), PFI_OK);
    assert_true(s.t_s == 40 && s.power_w < 360);
    pfi_hw_close(b);
    assert_int_equal(pfi_hw_open("sim", "no-such-preset", 0, &b, &e), PFI_EINVAL);
    assert_null(b);
}

/* Two processes share a state file: a child sets caps through its own handle; the parent sees
 * them, and both compute identical telemetry and tokens for the same instant. */
static void test_shared_state(void **state)
{
    const char *base = getenv("PFI_TEST_TMP");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/test_sim.XXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(dir));
    char path[600];
    snprintf(path, sizeof path, "%s/state", dir);
    pfi_node_config c;
    pfi_err e = {0};
    assert_int_equal(pfi_sim_preset("h200x8-dense", &c, &e), PFI_OK);
    assert_int_equal(pfi_sim_state_create(path, &c, 1000, 0, &e), PFI_OK);
    assert_int_equal(pfi_sim_state_create(path, &c, 1000, 0, &e), PFI_EBUSY);
    pfi_sim_state *a, *b;
    assert_int_equal(pfi_sim_state_open(path, NULL, 1, &a, &e), PFI_OK);
    assert_true(pfi_sim_state_speed(a) == 1000);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pfi_sim_state *cs;
        int ok = pfi_sim_state_open(path, NULL, 1, &cs, NULL) == PFI_OK;
        for (int g = 0; ok && g < 4; g++)
            ok = pfi_sim_state_set_limit(cs, g, 350, NULL) == PFI_OK;
        ok = ok && pfi_sim_state_set_limit(cs, 0, 100, NULL) == PFI_ERANGE;
        if (ok)
            pfi_sim_state_close(cs);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(pfi_sim_state_open(path, NULL, 1, &b, &e), PFI_OK);
    pfi_sim_node *na, *nb;
    double ta, tb;
    assert_int_equal(pfi_sim_state_node(a, &na, &ta, &e), PFI_OK);
    assert_int_equal(pfi_sim_state_node(b, &nb, &tb, &e), PFI_OK);
    double t = ta > tb ? ta : tb;
    for (int g = 0; g < 8; g++) {
        assert_true(pfi_sim_limit(na, g, t) == (g < 4 ? 350 : 700));
        pfi_sample sa, sb;
        pfi_sample_clear(&sa);
        pfi_sample_clear(&sb);
        pfi_sim_sample(na, g, t + 5, &sa, NULL);
        pfi_sim_sample(nb, g, t + 5, &sb, NULL);
        assert_memory_equal(&sa, &sb, sizeof sa);
    }
    pfi_sim_job_status ja, jb;
    pfi_sim_job_status_at(na, 0, t + 5, &ja, NULL);
    pfi_sim_job_status_at(nb, 0, t + 5, &jb, NULL);
    assert_true(ja.tokens == jb.tokens && ja.tokens > 0);
    /* Through the backend too: PFI_SIM_STATE attaches, the limit set by the child shows. */
    setenv("PFI_SIM_STATE", path, 1);
    pfi_backend *be;
    assert_int_equal(pfi_hw_open("sim", "no-such-preset", 0, &be, &e), PFI_OK); /* exists */
    assert_false(pfi_backend_sim_virtual(be));
    pfi_device d;
    assert_int_equal(pfi_hw_info(be, 2, &d, &e), PFI_OK);
    assert_true(d.limit_w == 350);
    assert_int_equal(pfi_hw_set_limit(be, 7, 500, NULL, &e), PFI_OK);
    assert_int_equal(pfi_sim_state_node(a, &na, &ta, &e), PFI_OK);
    assert_true(pfi_sim_limit(na, 7, ta + 1) == 500);
    pfi_hw_close(be);
    unsetenv("PFI_SIM_STATE");
    /* The lock-free sum: b has replayed 4 changes, the backend made a 5th; a fresh handle has
     * replayed none.  Both sum the limits after all 5 changes, and then see a 6th. */
    double sum;
    uint64_t nch;
    assert_int_equal(pfi_sim_state_limit_sum(b, &sum, &nch, &e), PFI_OK);
    assert_true(sum == 4 * 350 + 3 * 700 + 500 && nch == 5);
    pfi_sim_state *fresh;
    assert_int_equal(pfi_sim_state_open(path, NULL, 1, &fresh, &e), PFI_OK);
    assert_int_equal(pfi_sim_state_limit_sum(fresh, &sum, &nch, &e), PFI_OK);
    assert_true(sum == 4 * 350 + 3 * 700 + 500 && nch == 5);
    assert_int_equal(pfi_sim_state_set_limit(a, 7, 300, &e), PFI_OK);
    assert_int_equal(pfi_sim_state_limit_sum(fresh, &sum, &nch, &e), PFI_OK);
    assert_true(sum == 4 * 350 + 3 * 700 + 300 && nch == 6);
    assert_int_equal(pfi_sim_state_limit_sum(b, &sum, NULL, &e), PFI_OK);
    assert_true(sum == 4 * 350 + 3 * 700 + 300);
    pfi_sim_state_close(fresh);
    pfi_sim_state_close(a);
    pfi_sim_state_close(b);
    /* A file that is not a state is refused. */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("not a state", f);
    fclose(f);
    assert_int_equal(pfi_sim_state_open(path, NULL, 1, &a, &e), PFI_EINVAL);
    unlink(path);
    rmdir(dir);
}

static void test_fleet(void **state)
{
    pfi_fleet_entry *f, *g;
    int n, m;
    pfi_err e = {0};
    assert_int_equal(pfi_sim_fleet("paper", 7, &f, &n, &e), PFI_OK);
    assert_int_equal(n, 131 + 24 + 34);
    assert_int_equal(pfi_sim_fleet("paper", 7, &g, &m, &e), PFI_OK);
    assert_memory_equal(f, g, sizeof *f * (size_t)n);
    free(g);
    assert_int_equal(pfi_sim_fleet("paper", 8, &g, &m, &e), PFI_OK);
    assert_memory_not_equal(f, g, sizeof *f * 131);
    free(g);
    int sets[3] = {0}, moe = 0, dense = 0, kinds[3] = {0}, big = 0, one = 0;
    for (int i = 0; i < n; i++) {
        const pfi_job_config *j = &f[i].node.jobs[0];
        int set = strcmp(f[i].set, "main") == 0 ? 0 : strcmp(f[i].set, "validation") == 0 ? 1 : 2;
        sets[set]++;
        assert_string_equal(f[i].node.gpu.name, set == 2 ? "H100-SXM" : "H200-SXM");
        assert_true(j->n_gpus >= 1 && j->n_gpus <= 32 && j->n_gpus == f[i].node.n_gpus);
        moe += j->moe;
        dense += !j->moe;
        kinds[j->kind]++;
        big += j->n_gpus >= 16;
        one += j->n_gpus == 1;
        assert_string_equal(f[i].meta.model, j->model);
        assert_int_equal(f[i].meta.dp, j->dp);
        assert_true(f[i].run[0] != '\0');
        if (set == 2) {
            assert_true(f[i].match >= 0 && f[i].match < 131);
            assert_string_equal(f[f[i].match].node.jobs[0].model, j->model);
            assert_int_equal(f[f[i].match].node.jobs[0].global_batch, j->global_batch);
        } else {
            assert_int_equal(f[i].match, -1);
        }
        pfi_sim_node *node;
        assert_int_equal(pfi_sim_node_new(&f[i].node, &node, &e), PFI_OK);
        pfi_sim_node_free(node);
    }
    assert_int_equal(sets[0], 131);
    assert_int_equal(sets[1], 24);
    assert_int_equal(sets[2], 34);
    assert_true(moe >= 20 && dense >= 60 && kinds[0] > 0 && kinds[1] > 0 && kinds[2] > 0);
    assert_true(big > 0 && one > 0);
    free(f);
    assert_int_equal(pfi_sim_fleet("small", 1, &f, &n, &e), PFI_OK);
    assert_int_equal(n, 12);
    free(f);
    assert_int_equal(pfi_sim_fleet("huge", 1, &f, &n, &e), PFI_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models),        cmocka_unit_test(test_monotone_curves),
        cmocka_unit_test(test_below_cap_unaffected), cmocka_unit_test(test_transient),
        cmocka_unit_test(test_cumulative),    cmocka_unit_test(test_variation),
        cmocka_unit_test(test_sample_fields), cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_presets_roundtrip), cmocka_unit_test(test_config_sat_frac),
        cmocka_unit_test(test_backend),
        cmocka_unit_test(test_shared_state),  cmocka_unit_test(test_fleet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
