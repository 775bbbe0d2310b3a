/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of a pipeline's pace when its stages' times vary from microbatch to microbatch (the
 * node's "pace": "expected"): the expected slowest stage by Clark's formula against exact
 * values for equal normal stages, the part of a stage's time that varies on its own, and a
 * node that uses them, against the slowest-stage pace it leaves as the default. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/physics.h"
#include "sim/sim.h"

/* No spread: the slowest stage's pace, the very value of pfi_sim_pipeline_step. */
static void test_no_spread_is_the_max(void **state)
{
    (void)state;
    double zero[4] = {0, 0, 0, 0};
    double eq[4] = {2, 2, 2, 2}, un[4] = {2, 2.5, 2, 3};
    assert_true(pfi_sim_pipeline_step_spread(eq, zero, 4, 16, 0.5) ==
                pfi_sim_pipeline_step(eq, 4, 16, 0.5));
    assert_true(pfi_sim_pipeline_step_spread(un, zero, 4, 16, 0) ==
                pfi_sim_pipeline_step(un, 4, 16, 0));
    /* One stage waits for nobody, whatever its spread. */
    double sd[1] = {0.3};
    assert_true(pfi_sim_pipeline_step_spread(eq, sd, 1, 8, 0) == pfi_sim_pipeline_step(eq, 1, 8, 0));
}

/* Equal stages: the expected maximum of two iid normals is mu + sigma / sqrt(pi) exactly
 * (Clark's formula is exact for two); of three, mu + 3 sigma / (2 sqrt(pi)) = mu + 0.8463
 * sigma, which Clark's formula taken stage after stage approaches (0.8476). */
static void test_equal_stages(void **state)
{
    (void)state;
    double pipe[3] = {2, 2, 2}, sd[3] = {0.2, 0.2, 0.2};
    double m = 16;
    double two = pfi_sim_pipeline_step_spread(pipe, sd, 2, m, 0.25);
    double want2 = (m - 1) / m * (2 + 0.2 / sqrt(M_PI)) + 4 / m + 0.25;
    assert_true(fabs(two - want2) < 1e-12);
    double three = pfi_sim_pipeline_step_spread(pipe, sd, 3, m, 0);
    double emax3 = (three - 6 / m) * m / (m - 1); /* E[max] back out of the step */
    assert_true(fabs(emax3 - (2 + 0.2 * 3 / (2 * sqrt(M_PI)))) < 0.005 * 0.2);
    /* More stages within a spread of each other cost more. */
    assert_true(three > two - 0.25 - 2 / m);
}

/* A stage far above the others sets the pace alone; a spread only matters near the top. */
static void test_far_stage(void **state)
{
    (void)state;
    double pipe[3] = {1, 1.05, 5}, sd[3] = {0.1, 0.105, 0.5};
    double zero[3] = {0, 0, 0};
    double a = pfi_sim_pipeline_step_spread(pipe, sd, 3, 32, 0);
    double b = pfi_sim_pipeline_step_spread(pipe, zero, 3, 32, 0);
    assert_true(fabs(a - b) < 1e-9 * b);
    /* Order does not move it either. */
    double pr[3] = {5, 1.05, 1}, sr[3] = {0.5, 0.105, 0.1};
    assert_true(fabs(pfi_sim_pipeline_step_spread(pr, sr, 3, 32, 0) - a) < 1e-9 * a);
}

/* The part of a stage's time that varies on its own: its kernels' 10% when nothing runs
 * concurrently, half of it when the concurrent work is as long with the same spread (the
 * kernels set the time half the time), none of it under a much longer concurrent link. */
static void test_pipe_spread(void **state)
{
    (void)state;
    pfi_sim_work w;
    memset(&w, 0, sizeof w);
    double busy = 4;
    assert_true(fabs(pfi_sim_pipe_spread(&w, busy) - PFI_SIM_KERNEL_JITTER * busy) < 1e-15);
    w.t_overlap = busy;
    w.sd_overlap = PFI_SIM_KERNEL_JITTER * busy;
    assert_true(fabs(pfi_sim_pipe_spread(&w, busy) - 0.5 * PFI_SIM_KERNEL_JITTER * busy) <
                1e-12);
    w.t_overlap = 3 * busy;
    assert_true(pfi_sim_pipe_spread(&w, busy) < 1e-9 * busy);
    w.t_overlap = busy / 10; /* kernels far above: all of their spread */
    w.sd_overlap = 0.01;
    assert_true(fabs(pfi_sim_pipe_spread(&w, busy) - PFI_SIM_KERNEL_JITTER * busy) < 1e-12);
}

/* BLOOM-3B on 8 A40s, PP8, its head stage heaviest; no chip spread, so the stages' GPUs are
 * alike. */
static const char *const bloom_json =
    "{\"gpu\": \"A40\", \"gpus\": 8, \"gpus_per_host\": 4, \"net_gbs\": 3, \"variation\": 0,"
    " \"noise_w\": 0%s, \"jobs\": [{\"model\": \"bloom-3b\", \"pp\": %d, \"seq_len\": 1024,"
    " \"global_batch\": 512, \"micro_batch\": 4, \"dp\": %d}]}";

static void parse(const char *pace, int pp, pfi_node_config *c)
{
    char text[1024];
    snprintf(text, sizeof text, bloom_json, pace, pp, 8 / pp);
    pfi_err e = {0};
    assert_int_equal(pfi_sim_config_parse(text, c, &e), PFI_OK);
}

static double step_at(const pfi_node_config *c, double cap)
{
    pfi_sim_node *n;
    pfi_err e = {0};
    assert_int_equal(pfi_sim_node_new(c, &n, &e), PFI_OK);
    pfi_sim_steady st;
    assert_int_equal(pfi_sim_job_steady(n, 0, cap, &st, &e), PFI_OK);
    pfi_sim_node_free(n);
    return st.step_time_s;
}

/* A node with "pace": "expected" steps at the expected slowest of its stages, each with its
 * own spread; the default stays the slowest stage's pace. */
static void test_node_pace(void **state)
{
    (void)state;
    pfi_node_config cmax, cexp;
    parse("", 8, &cmax);
    parse(", \"pace\": \"expected\"", 8, &cexp);
    assert_int_equal(cmax.pace, PFI_SIM_PACE_MAX);
    assert_int_equal(cexp.pace, PFI_SIM_PACE_EXPECTED);
    pfi_err e = {0};
    pfi_sim_work w[8];
    double pipe[8], sd[8];
    for (int s = 0; s < 8; s++) {
        assert_int_equal(pfi_sim_job_work(&cexp, &cexp.jobs[0], s, &w[s], &e), PFI_OK);
        pfi_sim_op op;
        pfi_sim_gpu_step gs;
        pfi_sim_operating_point(&cexp.gpu, &w[s], 175, 1.0, &op);
        pfi_sim_gpu_step_at(&cexp.gpu, &w[s], &op, &gs);
        pipe[s] = gs.pipe;
        sd[s] = pfi_sim_pipe_spread(&w[s], gs.busy);
    }
    double m = w[0].microbatches;
    double want = pfi_sim_pipeline_step_spread(pipe, sd, 8, m, w[0].t_host);
    double got = step_at(&cexp, 175), base = step_at(&cmax, 175);
    assert_true(fabs(got - want) < 1e-9 * want);
    assert_true(fabs(base - pfi_sim_pipeline_step(pipe, 8, m, w[0].t_host)) < 1e-9 * base);
    assert_true(got > base);
    /* Without stages (pp 1, dp 8) there is nothing to wait for: the same step, bit for bit. */
    parse("", 1, &cmax);
    parse(", \"pace\": \"expected\"", 1, &cexp);
    assert_true(step_at(&cexp, 175) == step_at(&cmax, 175));
}

/* The setting travels in the configuration's JSON (only when not the default) and a wrong
 * value is refused. */
static void test_pace_config(void **state)
{
    (void)state;
    pfi_node_config c, back;
    parse(", \"pace\": \"expected\"", 8, &c);
    char *s = pfi_sim_config_dump(&c);
    assert_non_null(s);
    assert_non_null(strstr(s, "\"pace\": \"expected\""));
    pfi_err e = {0};
    assert_int_equal(pfi_sim_config_parse(s, &back, &e), PFI_OK);
    assert_int_equal(back.pace, PFI_SIM_PACE_EXPECTED);
    free(s);
    parse("", 8, &c);
    s = pfi_sim_config_dump(&c);
    assert_null(strstr(s, "pace"));
    free(s);
    char text[1024];
    snprintf(text, sizeof text, bloom_json, ", \"pace\": \"mean\"", 8, 1);
    assert_int_equal(pfi_sim_config_parse(text, &c, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "pace"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_spread_is_the_max),
        cmocka_unit_test(test_equal_stages),
        cmocka_unit_test(test_far_stage),
        cmocka_unit_test(test_pipe_spread),
        cmocka_unit_test(test_node_pace),
        cmocka_unit_test(test_pace_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
