/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the simulator's calibration (study/sim_validate.c) on the public Perseus sweeps read
 * in place from $PFI_DATA_DIR: what only saves time leaves its results as they are; how the
 * per-stage rows (zeus_local.csv) are checked (each with its own partition) and, with
 * --stage-rows fit, what they enter. */
#include <setjmp.h>
#include <stdarg.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "study/sim_validate.h"
#include "support/skip.h"
#include "util/units.h"

static int have_sweeps(void)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/perseus-sosp24/zeus_baseline/A40/zeus_global.csv",
             pfi_data_dir());
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* The fits' memo of costs by the exact point changes nothing: every cost computed afresh
 * (PFI_SIM_VAL_NO_MEMO) gives the same report bit for bit (fitted constants, every run's
 * simulated values and errors), on split 0 with a family constant (more parameters than the
 * GPU types' alone), from one starting point (its restarts still ask again for points seen;
 * one case: under the sanitizers a fit takes ~100 times its CPU). */
static void test_cost_memo_changes_nothing(void **state)
{
    (void)state;
    if (!have_sweeps())
        PFI_TEST_SKIP("public data not found under %s\n", pfi_data_dir());
    const int cases[] = {PFI_SIM_VAL_SPLIT(0) | PFI_SIM_VAL_FAM_ACT | PFI_SIM_VAL_STARTS(1)};
    static pfi_sim_validation a, b; /* large: not on the stack */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pfi_err e = {0};
        assert_int_equal(pfi_sim_validate(pfi_data_dir(), cases[i], NULL, NULL, &a, &e), PFI_OK);
        assert_int_equal(pfi_sim_validate(pfi_data_dir(), cases[i] | PFI_SIM_VAL_NO_MEMO, NULL,
                                          NULL, &b, &e),
                         PFI_OK);
        assert_true(a.n_runs >= 8);
        assert_memory_equal(&a, &b, sizeof a);
    }
}

/* A new data directory, its name written to dir, under $PFI_TEST_TMP (else /tmp), whose
 * sweeps and stage profiles are the public data's (links) and whose A100 zeus_local.csv holds
 * the header and the first public row that contains each of the strings in models (a model,
 * or a partition and limits), its first `from` (or NULL) written as `to`; the A40 has no
 * per-stage rows (the file absent, as in an older copy of the data). */
static void rows_data(char dir[600], const char *const *models, int n, const char *from,
                      const char *to)
{
    const char *base = getenv("PFI_TEST_TMP");
    snprintf(dir, 600, "%s/stagerows.XXXXXX", base ? base : "/tmp");
    assert_non_null(mkdtemp(dir));
    char a[1400], b[1400], data[PATH_MAX];
    /* absolute: the links are read from dir, not from here */
    assert_non_null(realpath(pfi_data_dir(), data));
    snprintf(a, sizeof a, "%s/perseus-sosp24", dir);
    assert_int_equal(mkdir(a, 0755), 0);
    snprintf(a, sizeof a, "%s/perseus-sosp24/zeus_baseline", dir);
    assert_int_equal(mkdir(a, 0755), 0);
    for (int t = 0; t < 2; t++) {
        const char *g = t ? "A40" : "A100";
        snprintf(a, sizeof a, "%s/perseus-sosp24/zeus_baseline/%s", dir, g);
        assert_int_equal(mkdir(a, 0755), 0);
        snprintf(a, sizeof a, "%s/perseus-sosp24/zeus_baseline/%s/zeus_global.csv", data, g);
        snprintf(b, sizeof b, "%s/perseus-sosp24/zeus_baseline/%s/zeus_global.csv", dir, g);
        assert_int_equal(symlink(a, b), 0);
    }
    snprintf(a, sizeof a, "%s/perseus-sosp24/stage_profile", data);
    snprintf(b, sizeof b, "%s/perseus-sosp24/stage_profile", dir);
    assert_int_equal(symlink(a, b), 0);
    snprintf(a, sizeof a, "%s/perseus-sosp24/zeus_baseline/A100/zeus_local.csv", data);
    snprintf(b, sizeof b, "%s/perseus-sosp24/zeus_baseline/A100/zeus_local.csv", dir);
    FILE *in = fopen(a, "r"), *out = fopen(b, "w");
    assert_non_null(in);
    assert_non_null(out);
    char line[4096];
    int first = 1, found[8] = {0};
    assert_true(n <= 8);
    while (fgets(line, sizeof line, in)) {
        int keep = first;
        for (int m = 0; m < n; m++)
            if (!found[m] && strstr(line, models[m]))
                keep = found[m] = 1;
        char *at = keep && from ? strstr(line, from) : NULL;
        if (at) /* the kept line with its first `from` written as `to` */
            fprintf(out, "%.*s%s%s", (int)(at - line), line, to, at + strlen(from));
        else if (keep)
            fputs(line, out);
        first = 0;
    }
    fclose(in);
    assert_int_equal(fclose(out), 0);
    for (int m = 0; m < n; m++)
        assert_true(found[m]);
}

static void rows_data_remove(const char *dir)
{
    static const char *const leaf[] = {
        "zeus_baseline/A100/zeus_local.csv", "zeus_baseline/A100/zeus_global.csv",
        "zeus_baseline/A40/zeus_global.csv", "stage_profile", "zeus_baseline/A100",
        "zeus_baseline/A40", "zeus_baseline", ""};
    char p[1400];
    for (size_t i = 0; i < sizeof leaf / sizeof leaf[0]; i++) {
        snprintf(p, sizeof p, "%s/perseus-sosp24/%s", dir, leaf[i]);
        remove(p);
    }
    rmdir(dir);
}

static const pfi_sim_val_run *run_named(const pfi_sim_validation *v, const char *model)
{
    for (int i = 0; i < v->n_runs; i++)
        if (strstr(v->runs[i].run, model) && strncmp(v->runs[i].run, "perseus/A100/", 13) == 0)
            return &v->runs[i];
    fail_msg("no A100 run of %s", model);
    return NULL;
}

/* The per-stage rows on split 0 (A100 fit runs BERT and BLOOM; GPT-3 XL held out, its
 * sweep's partition custom, some of its rows uniform_transformer), on data with one BERT row
 * and one GPT-3 XL uniform row (then the same rows, the XL row said to be custom; then
 * another XL row): the check simulates the XL row with its own partition (the custom one
 * checks otherwise, as the check did when it took every row's run's partition) and changes
 * no fitted constant; --stage-rows fit moves the A100's constants (the BERT row enters its
 * cost), not the A40's (no rows), and not at all when the held-out run's row is another. */
static void test_stage_rows(void **state)
{
    (void)state;
    if (!have_sweeps())
        PFI_TEST_SKIP("public data not found under %s\n", pfi_data_dir());
    char da[600], dc[600], db[600];
    const char *const ma[] = {"bert-huge-uncased,",
                              "gpt3-xl,uniform_transformer,1024,1,1,4,8,128,200,200,200,300,"};
    const char *const mb[] = {"bert-huge-uncased,",
                              "gpt3-xl,uniform_transformer,1024,1,1,4,8,128,200,175,175,225,"};
    rows_data(da, ma, 2, NULL, NULL);
    rows_data(dc, ma, 2, "gpt3-xl,uniform_transformer,", "gpt3-xl,\"custom:0,8,14,21,27\",");
    rows_data(db, mb, 2, NULL, NULL);
    static pfi_sim_validation v0, vc, v1, v2; /* large: not on the stack */
    const int f = PFI_SIM_VAL_SPLIT(0) | PFI_SIM_VAL_STARTS(1);
    pfi_err e = {0};
    assert_int_equal(pfi_sim_validate(da, f, NULL, NULL, &v0, &e), PFI_OK);
    assert_int_equal(pfi_sim_validate(dc, f, NULL, NULL, &vc, &e), PFI_OK);
    assert_int_equal(pfi_sim_validate(da, f | PFI_SIM_VAL_STAGE_ROWS, NULL, NULL, &v1, &e),
                     PFI_OK);
    assert_int_equal(pfi_sim_validate(db, f | PFI_SIM_VAL_STAGE_ROWS, NULL, NULL, &v2, &e),
                     PFI_OK);
    rows_data_remove(da);
    rows_data_remove(dc);
    rows_data_remove(db);
    const pfi_sim_val_run *bert0 = run_named(&v0, "bert-huge"), *xl0 = run_named(&v0, "gpt3-xl");
    const pfi_sim_val_run *bertc = run_named(&vc, "bert-huge"), *xlc = run_named(&vc, "gpt3-xl");
    assert_false(bert0->held_out);
    assert_true(xl0->held_out);
    assert_int_equal(bert0->n_per_stage, 1);
    assert_int_equal(xl0->n_per_stage, 1);
    assert_int_equal(xlc->n_per_stage, 1);
    /* the XL row's partition said otherwise: the same fit, the BERT row the same, the XL row
     * not (it would be if each row took its run's partition) */
    assert_memory_equal(vc.fitted, v0.fitted, sizeof v0.fitted);
    assert_memory_equal(vc.fitted_host_ms, v0.fitted_host_ms, sizeof v0.fitted_host_ms);
    assert_true(bertc->per_stage_err_tput == bert0->per_stage_err_tput);
    assert_true(bertc->per_stage_err_power == bert0->per_stage_err_power);
    assert_true(xlc->max_abs_err_tput == xl0->max_abs_err_tput);
    assert_true(xlc->per_stage_err_tput != xl0->per_stage_err_tput);
    /* fit: the A100's constants move, the A40's (no rows) do not */
    assert_memory_not_equal(&v1.fitted[0], &v0.fitted[0], sizeof v0.fitted[0]);
    assert_memory_equal(&v1.fitted[1], &v0.fitted[1], sizeof v0.fitted[1]);
    /* ... and a held-out run's row is no part of it: another XL row, the same fit */
    assert_memory_equal(v2.fitted, v1.fitted, sizeof v1.fitted);
    assert_memory_equal(v2.fitted_host_ms, v1.fitted_host_ms, sizeof v1.fitted_host_ms);
    assert_true(run_named(&v2, "gpt3-xl")->per_stage_err_tput !=
                run_named(&v1, "gpt3-xl")->per_stage_err_tput);
}

/* --stage-rows fit simulates a fit run's row with the row's own partition: on split 1 (GPT-3
 * XL a fit run), its uniform_transformer row and the same row said to have the sweep's custom
 * partition give different fits. */
static void test_stage_rows_own_partition(void **state)
{
    (void)state;
    if (!have_sweeps())
        PFI_TEST_SKIP("public data not found under %s\n", pfi_data_dir());
    char da[600], db[600];
    const char *const m[] = {"gpt3-xl,uniform_transformer,1024,1,1,4,8,128,200,200,200,300,"};
    rows_data(da, m, 1, NULL, NULL);
    rows_data(db, m, 1, "uniform_transformer", "\"custom:0,8,14,21,27\"");
    static pfi_sim_validation va, vb;
    const int f = PFI_SIM_VAL_SPLIT(1) | PFI_SIM_VAL_STARTS(1) | PFI_SIM_VAL_STAGE_ROWS;
    pfi_err e = {0};
    assert_int_equal(pfi_sim_validate(da, f, NULL, NULL, &va, &e), PFI_OK);
    assert_int_equal(pfi_sim_validate(db, f, NULL, NULL, &vb, &e), PFI_OK);
    rows_data_remove(da);
    rows_data_remove(db);
    assert_false(run_named(&va, "gpt3-xl")->held_out);
    assert_int_equal(run_named(&va, "gpt3-xl")->n_per_stage, 1);
    assert_int_equal(run_named(&vb, "gpt3-xl")->n_per_stage, 1);
    assert_memory_not_equal(&va.fitted[0], &vb.fitted[0], sizeof va.fitted[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cost_memo_changes_nothing),
        cmocka_unit_test(test_stage_rows),
        cmocka_unit_test(test_stage_rows_own_partition),
    };
    return pfi_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
