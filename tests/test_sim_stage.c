/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the simulator's pipeline stages: the 1F1B step over unequal stages, the work of
 * each stage (layers from the partition, the embedding on the first, the head and the loss
 * on the last), eager attention, the partition in the configuration, per-stage telemetry
 * of a node, and the inter-host network's spread. */
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

/* BLOOM-3B on 8 A40s, PP8, as Perseus ran it (the partition in layers per stage). */
static const char *const bloom_json =
    "{\"gpu\": \"A40\", \"gpus\": 8, \"gpus_per_host\": 4, \"net_gbs\": 3, \"variation\": 0,"
    " \"noise_w\": 0, \"jobs\": [{\"model\": \"bloom-3b\", \"pp\": 8, \"seq_len\": 1024,"
    " \"global_batch\": 512, \"micro_batch\": 4%s}]}";

static void parse(const char *extra, pfi_node_config *c)
{
    char text[1024];
    snprintf(text, sizeof text, bloom_json, extra);
    pfi_err e = {0};
    assert_int_equal(pfi_sim_config_parse(text, c, &e), PFI_OK);
}

static void test_pipeline_step(void **state)
{
    (void)state;
    /* Equal stages: the familiar pipe * (1 + (pp - 1) / m) plus the host time. */
    double eq[4] = {2, 2, 2, 2};
    assert_true(fabs(pfi_sim_pipeline_step(eq, 4, 16, 0.5) - (2 * (1 + 3.0 / 16) + 0.5)) < 1e-12);
    /* One slow stage sets the pace: (m-1)/m of it, plus one microbatch of every stage. */
    double un[4] = {2, 2, 2, 3};
    double st = pfi_sim_pipeline_step(un, 4, 16, 0);
    assert_true(fabs(st - (15.0 / 16 * 3 + 9.0 / 16)) < 1e-12);
    assert_true(st > pfi_sim_pipeline_step(eq, 4, 16, 0));
    /* One stage: no bubble; fewer than one microbatch counts as one. */
    assert_true(fabs(pfi_sim_pipeline_step(eq, 1, 8, 0) - 2) < 1e-12);
    assert_true(fabs(pfi_sim_pipeline_step(un, 4, 0.5, 0) - 9) < 1e-12);
}

static void test_stage_work(void **state)
{
    (void)state;
    pfi_node_config c;
    parse("", &c);
    const pfi_job_config *j = &c.jobs[0];
    double lay[PFI_SIM_MAX_STAGES];
    pfi_sim_job_stage_layers(j, lay);
    double sum = 0;
    for (int s = 0; s < 8; s++)
        sum += lay[s];
    assert_true(fabs(sum - 30) < 1e-9); /* an even split of 30 layers: 3 or 4 each */
    pfi_sim_work w[8];
    pfi_err e = {0};
    for (int s = 0; s < 8; s++)
        assert_int_equal(pfi_sim_job_work(&c, j, s, &w[s], &e), PFI_OK);
    pfi_sim_work none;
    assert_int_equal(pfi_sim_job_work(&c, j, 8, &none, &e), PFI_EINVAL);
    /* The head (250,880 x 2,560) makes the last stage the heaviest in compute and the loss in
     * memory traffic; the first stage's embedding gradient adds memory traffic only. */
    for (int s = 1; s < 7; s++) {
        double per_layer = w[s].t_comp / lay[s];
        assert_true(w[7].t_comp > w[s].t_comp + 3 * per_layer);
        assert_true(fabs(w[0].t_comp / lay[0] - per_layer) < 1e-9 * per_layer);
        assert_true(w[0].t_mem / lay[0] > w[s].t_mem / lay[s]);
        assert_true(w[7].t_mem / lay[7] > w[s].t_mem / lay[s]);
    }
    /* The wide head GEMM keeps more tensor cores busy than the layers' GEMMs. */
    assert_true(w[7].act_comp > w[3].act_comp && w[7].tensor_comp > w[3].tensor_comp);
    /* Every stage does the same number of microbatches and tokens. */
    assert_true(w[0].microbatches == 128 && w[7].tokens_per_step == w[0].tokens_per_step);

    /* The total compute over the stages does not depend on the partition. */
    pfi_node_config p;
    parse(", \"stage_layers\": [5, 4, 4, 4, 4, 4, 4, 1]", &p);
    double t_even = 0, t_part = 0;
    for (int s = 0; s < 8; s++) {
        pfi_sim_work a;
        assert_int_equal(pfi_sim_job_work(&p, &p.jobs[0], s, &a, &e), PFI_OK);
        t_part += a.t_comp;
        t_even += w[s].t_comp;
    }
    assert_true(fabs(t_part - t_even) < 1e-9 * t_even);

    /* Eager attention adds memory traffic that grows with the sequence length. */
    pfi_node_config a;
    parse(", \"attention\": \"eager\"", &a);
    pfi_sim_work we;
    assert_int_equal(pfi_sim_job_work(&a, &a.jobs[0], 3, &we, &e), PFI_OK);
    assert_true(we.t_mem > 2 * w[3].t_mem && we.t_comp == w[3].t_comp);
}

static void test_stage_config(void **state)
{
    (void)state;
    pfi_node_config c;
    pfi_err e = {0};
    char text[1024];
    snprintf(text, sizeof text, bloom_json, ", \"stage_layers\": [5, 4, 4, 4, 4, 4, 4, 2]");
    assert_int_equal(pfi_sim_config_parse(text, &c, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "add up to 31"));
    snprintf(text, sizeof text, bloom_json, ", \"stage_layers\": [4, 4, 4, 3, 3, 3, 3, 3, 3]");
    assert_int_equal(pfi_sim_config_parse(text, &c, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "9 stages but pp=8"));
    snprintf(text, sizeof text, bloom_json, ", \"stage_layers\": [5, -4]");
    assert_int_equal(pfi_sim_config_parse(text, &c, &e), PFI_EINVAL);
    snprintf(text, sizeof text, bloom_json, ", \"attention\": \"flash\"");
    assert_int_equal(pfi_sim_config_parse(text, &c, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "fused or eager"));
    /* The dump keeps the partition and the attention. */
    parse(", \"stage_layers\": [5, 4, 4, 4, 4, 4, 4, 1], \"attention\": \"eager\"", &c);
    char *dump = pfi_sim_config_dump(&c);
    assert_non_null(dump);
    pfi_node_config back;
    assert_int_equal(pfi_sim_config_parse(dump, &back, &e), PFI_OK);
    free(dump);
    assert_int_equal(back.jobs[0].attn_eager, 1);
    for (int s = 0; s < 8; s++)
        assert_true(back.jobs[0].stage_layers[s] == c.jobs[0].stage_layers[s]);
}

/* Merak's partitions (the Perseus CSVs) as layers per stage. */
static void test_merak_partition(void **state)
{
    (void)state;
    pfi_job_config j;
    memset(&j, 0, sizeof j);
    pfi_err e = {0};
    assert_int_equal(pfi_sim_job_from_model(&j, "bloom-3b", &e), PFI_OK);
    j.pp = 8;
    double out[PFI_SIM_MAX_STAGES];
    /* Units: the embedding, 30 layers, the head (32). */
    assert_int_equal(pfi_sim_merak_stage_layers("custom:0,6,10,14,18,22,26,30,32", &j, out, &e),
                     PFI_OK);
    static const double bloom[8] = {5, 4, 4, 4, 4, 4, 4, 1};
    for (int s = 0; s < 8; s++)
        assert_true(fabs(out[s] - bloom[s]) < 1e-9);
    assert_int_equal(pfi_sim_merak_stage_layers("custom:0,6,10,32", &j, out, &e), PFI_EINVAL);
    assert_int_equal(pfi_sim_merak_stage_layers("custom:0,6,10,14,18,22,26,30,31", &j, out, &e),
                     PFI_EINVAL);
    assert_int_equal(pfi_sim_merak_stage_layers("balanced", &j, out, &e), PFI_EINVAL);
    /* GPT-2 style models have two embedding units: GPT-3 XL "custom:0,8,14,21,27" on 4. */
    memset(&j, 0, sizeof j); /* a fresh job: the catalogue keeps a family already set */
    assert_int_equal(pfi_sim_job_from_model(&j, "gpt3-xl", &e), PFI_OK);
    j.pp = 4;
    assert_int_equal(pfi_sim_merak_stage_layers("custom:0,8,14,21,27", &j, out, &e), PFI_OK);
    static const double gpt[4] = {6, 6, 7, 5};
    for (int s = 0; s < 4; s++)
        assert_true(fabs(out[s] - gpt[s]) < 1e-9);
    memset(&j, 0, sizeof j);
    assert_int_equal(pfi_sim_job_from_model(&j, "gpt3-2.7b", &e), PFI_OK);
    j.pp = 8;
    assert_int_equal(pfi_sim_merak_stage_layers("uniform_transformer", &j, out, &e), PFI_OK);
    for (int s = 0; s < 8; s++)
        assert_true(fabs(out[s] - 4) < 1e-9);
    /* T5: encoder blocks one unit, decoder blocks two; a decoder block is the heavier. */
    memset(&j, 0, sizeof j);
    assert_int_equal(pfi_sim_job_from_model(&j, "t5-3b", &e), PFI_OK);
    j.pp = 4;
    assert_int_equal(pfi_sim_merak_stage_layers("custom:0,16,33,53,74", &j, out, &e), PFI_OK);
    double sum = out[0] + out[1] + out[2] + out[3];
    assert_true(fabs(sum - 48) < 1e-9);
    assert_true(fabs(out[0] - 15 * 6.0 / 7) < 1e-9 && fabs(out[2] - 10 * 8.0 / 7) < 1e-9);
}

/* A pipeline paced by its heaviest stage: the others wait, at lower power, and a cap slows
 * the job no more than it slows that stage. */
static void test_node_stages(void **state)
{
    (void)state;
    pfi_node_config c;
    parse(", \"stage_layers\": [5, 4, 4, 4, 4, 4, 4, 1]", &c);
    pfi_sim_node *n;
    pfi_err e = {0};
    assert_int_equal(pfi_sim_node_new(&c, &n, &e), PFI_OK);
    pfi_sim_work w[8];
    double pipe[8];
    pfi_sim_op op;
    for (int s = 0; s < 8; s++) {
        assert_int_equal(pfi_sim_job_work(&c, &c.jobs[0], s, &w[s], &e), PFI_OK);
        pfi_sim_operating_point(&c.gpu, &w[s], 300, 1.0, &op);
        pipe[s] = pfi_sim_pipe_time(&c.gpu, &w[s], &op);
    }
    pfi_sim_steady st;
    assert_int_equal(pfi_sim_job_steady(n, 0, 300, &st, &e), PFI_OK);
    assert_true(fabs(st.step_time_s - pfi_sim_pipeline_step(pipe, 8, 128, w[0].t_host)) <
                1e-9 * st.step_time_s);
    pfi_sample s0, s3, s7;
    assert_int_equal(pfi_sim_sample(n, 0, 30, &s0, &e), PFI_OK);
    assert_int_equal(pfi_sim_sample(n, 3, 30, &s3, &e), PFI_OK);
    assert_int_equal(pfi_sim_sample(n, 7, 30, &s7, &e), PFI_OK);
    /* The head's stage is the busiest; a middle stage waits most and draws least. */
    assert_true(s7.sm_active > s3.sm_active && s0.sm_active > s3.sm_active);
    assert_true(s7.power_w > s3.power_w);
    assert_true(s7.tensor_active > s3.tensor_active);
    pfi_sim_node_free(n);
}

/* T5-3B on 8 A40s over two 4-GPU hosts, paced by the inter-host link (Perseus's setup). */
static void t5_config(const char *jitter, int gpus_per_host, pfi_node_config *c)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"gpu\": \"A40\", \"gpus\": 8, \"gpus_per_host\": %d, \"net_gbs\": 0.5,"
             " \"variation\": 0, \"noise_w\": 0%s, \"jobs\": [{\"model\": \"t5-3b\", \"pp\": 8,"
             " \"seq_len\": 512, \"global_batch\": 128, \"micro_batch\": 4}]}",
             gpus_per_host, jitter);
    pfi_err e = {0};
    assert_int_equal(pfi_sim_config_parse(text, c, &e), PFI_OK);
}

/* The inter-host network's spread per transfer (net_jitter) widens the overlapped work's
 * spread only when the pipeline crosses hosts, and softens the turn from link-bound to
 * compute-bound: near the crossing the expected step is longer, far from it the same. */
static void test_net_jitter(void **state)
{
    (void)state;
    pfi_node_config lo, hi, one;
    t5_config("", 4, &lo);
    t5_config(", \"net_jitter\": 0.4", 4, &hi);
    t5_config(", \"net_jitter\": 0.4", 8, &one);
    assert_true(fabs(lo.net_jitter - PFI_SIM_KERNEL_JITTER) < 1e-12); /* the default */
    char *dump = pfi_sim_config_dump(&hi);
    assert_non_null(dump);
    assert_non_null(strstr(dump, "\"net_jitter\": 0.4"));
    free(dump);
    pfi_err e = {0};
    pfi_sim_work wl, wh, wo, wlo;
    assert_int_equal(pfi_sim_job_work(&lo, &lo.jobs[0], 3, &wl, &e), PFI_OK);
    assert_int_equal(pfi_sim_job_work(&hi, &hi.jobs[0], 3, &wh, &e), PFI_OK);
    assert_int_equal(pfi_sim_job_work(&one, &one.jobs[0], 3, &wo, &e), PFI_OK);
    t5_config("", 8, &lo);
    assert_int_equal(pfi_sim_job_work(&lo, &lo.jobs[0], 3, &wlo, &e), PFI_OK);
    assert_true(fabs(wl.t_overlap - wh.t_overlap) < 1e-12 * wl.t_overlap);
    assert_true(wh.sd_overlap > 2 * wl.sd_overlap);
    /* One host: no inter-host transfer, the network's spread changes nothing. */
    assert_true(fabs(wo.sd_overlap - wlo.sd_overlap) < 1e-12 * wlo.sd_overlap);
    /* Kernels as long as the link: the wider spread waits longer; kernels a tenth of it:
     * both wait for the link. */
    pfi_sim_op op;
    pfi_sim_operating_point(&lo.gpu, &wl, 300, 1.0, &op);
    double busy = pfi_sim_work_busy(&lo.gpu, &wl, &op);
    pfi_sim_work a = wl, b = wh;
    a.t_comp *= wl.t_overlap / busy;
    a.t_mem *= wl.t_overlap / busy;
    a.t_comm *= wl.t_overlap / busy;
    b.t_comp = a.t_comp, b.t_mem = a.t_mem, b.t_comm = a.t_comm;
    double pa = pfi_sim_pipe_time(&lo.gpu, &a, &op), pb = pfi_sim_pipe_time(&hi.gpu, &b, &op);
    assert_true(pb > pa * 1.05 && pa > wl.t_overlap);
    a.t_comp *= 0.1, a.t_mem *= 0.1, a.t_comm *= 0.1;
    b.t_comp = a.t_comp, b.t_mem = a.t_mem, b.t_comm = a.t_comm;
    pa = pfi_sim_pipe_time(&lo.gpu, &a, &op);
    pb = pfi_sim_pipe_time(&hi.gpu, &b, &op);
    assert_true(fabs(pa - wl.t_overlap) < 1e-3 * pa && fabs(pb - wl.t_overlap) < 0.02 * pb);
    /* Out of range: refused. */
    char text[512];
    snprintf(text, sizeof text, "{\"gpu\": \"A40\", \"gpus\": 8, \"net_jitter\": 2}");
    pfi_node_config bad;
    assert_int_equal(pfi_sim_config_parse(text, &bad, &e), PFI_EINVAL);
}

/* ---------------------------------------------------------------- every stage at once */

/* Every stage's work from pfi_sim_job_works (the job's common part computed once) is
 * pfi_sim_job_work's for that stage (computed anew per call), bit for bit: on every preset
 * (dense, MoE, LoRA, TP, pipelines of 4 hosts), BLOOM on 8 A40s with and without a
 * partition and with eager attention, T5's encoder-decoder pipeline, FP8 and FP32 jobs, a job
 * with an input stall, and chips whose efficiencies a fit moved.  (The old per-stage code that
 * these replaced was shown equal to them, output for output, when they landed.) */
static void works_match(const pfi_node_config *c)
{
    pfi_err e = {0};
    for (int j = 0; j < c->n_jobs; j++) {
        const pfi_job_config *job = &c->jobs[j];
        pfi_sim_work all[PFI_SIM_MAX_STAGES];
        memset(all, 0xa5, sizeof all);
        assert_int_equal(pfi_sim_job_works(c, job, all, &e), PFI_OK);
        for (int s = 0; s < job->pp; s++) {
            pfi_sim_work one;
            memset(&one, 0x5a, sizeof one);
            assert_int_equal(pfi_sim_job_work(c, job, s, &one, &e), PFI_OK);
            assert_memory_equal(&all[s], &one, sizeof one);
        }
    }
}

static void test_job_works_are_each_stages(void **state)
{
    (void)state;
    pfi_err e = {0};
    int checked = 0;
    for (int i = 0; i < pfi_sim_preset_count(); i++) {
        pfi_node_config c;
        assert_int_equal(pfi_sim_preset(pfi_sim_preset_name(i), &c, &e), PFI_OK);
        works_match(&c);
        for (int j = 0; j < c.n_jobs; j++) {
            c.jobs[j].precision = j % 2 ? PFI_PREC_FP8 : PFI_PREC_FP32;
            c.jobs[j].input_stall = 0.1;
        }
        c.gpu.gemm_eff *= 0.77;
        c.gpu.mem_eff *= 1.13;
        c.net_gbs = 7.5;
        works_match(&c);
        checked += c.n_jobs;
    }
    assert_true(checked >= 8);
    const char *extra[] = {"", ", \"stage_layers\": [5, 4, 4, 4, 4, 4, 4, 1]",
                           ", \"attention\": \"eager\""};
    for (int k = 0; k < 3; k++) {
        pfi_node_config c;
        parse(extra[k], &c);
        works_match(&c);
    }
    const char *t5 = "{\"gpu\": \"A40\", \"gpus\": 8, \"gpus_per_host\": 4, \"jobs\": [{\"model\":"
                     " \"t5-3b\", \"pp\": 8, \"seq_len\": 512, \"global_batch\": 128,"
                     " \"micro_batch\": 4, \"attention\": \"eager\"}]}";
    pfi_node_config c;
    assert_int_equal(pfi_sim_config_parse(t5, &c, &e), PFI_OK);
    works_match(&c);
    /* An incomplete job is refused as pfi_sim_job_work refuses it. */
    c.jobs[0].hidden = 0;
    pfi_sim_work w[PFI_SIM_MAX_STAGES];
    assert_int_equal(pfi_sim_job_works(&c, &c.jobs[0], w, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "incomplete"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_step),
        cmocka_unit_test(test_stage_work),
        cmocka_unit_test(test_stage_config),
        cmocka_unit_test(test_merak_partition),
        cmocka_unit_test(test_node_stages),
        cmocka_unit_test(test_net_jitter),
        cmocka_unit_test(test_job_works_are_each_stages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
