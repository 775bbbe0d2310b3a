/* SPDX-License-Identifier: Apache-2.0 */
/* A Slurm job's output file as Slurm states it (serve/slurmlog.c), on output Slurm 22.05.8
 * printed for real jobs (tests/fixtures/slurm/, SOURCES.md): scontrol's StdOut= in both of its
 * layouts, and squeue --json's standard_output expanded to the same paths scontrol gave and
 * the files Slurm wrote. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "serve/serve.h"

#define FIXTURES "tests/fixtures/slurm/"

static char *slurp(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, FIXTURES "%s", name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static void test_scontrol(void **state)
{
    char out[512];
    /* the multi-line layout: StdOut on a line of its own */
    assert_int_equal(pfi_slurm_stdout_scontrol(slurp("scontrol-22.05.txt"), out, sizeof out), 1);
    assert_string_equal(out, "/tmp/zt-slurm/out/train-llama-5.out");
    /* -o: one line; the path holds spaces, the next key (Power=) ends it */
    assert_int_equal(
        pfi_slurm_stdout_scontrol(slurp("scontrol-o-array-22.05.txt"), out, sizeof out), 1);
    assert_string_equal(out, "/tmp/zt-slurm/out/my job 3_3-root.log");
    /* none, a relative one, or one that does not fit: not found */
    assert_int_equal(pfi_slurm_stdout_scontrol("JobId=5 JobName=x StdErr=/a StdIn=/dev/null",
                                               out, sizeof out),
                     0);
    assert_int_equal(pfi_slurm_stdout_scontrol("JobId=5 StdOut=rel.out Power=", out, sizeof out),
                     0);
    assert_int_equal(pfi_slurm_stdout_scontrol("StdOut=/a/long/path", out, 8), 0);
    /* a key that only ends in StdOut= is not it */
    assert_int_equal(pfi_slurm_stdout_scontrol("XStdOut=/x", out, sizeof out), 0);
}

static void test_squeue(void **state)
{
    char out[512];
    pfi_err e = {0};
    const char *j = slurp("squeue-22.05.json");
    /* --output=/tmp/zt-slurm/out/%x-%j.out: scontrol's StdOut for the same job */
    assert_int_equal(pfi_slurm_stdout_squeue(j, "5", out, sizeof out, &e), PFI_OK);
    assert_string_equal(out, "/tmp/zt-slurm/out/train-llama-5.out");
    /* an array task (job 4 = 3_3): "%x %A_%a-%u.log", as scontrol expanded it */
    assert_int_equal(pfi_slurm_stdout_squeue(j, "4", out, sizeof out, &e), PFI_OK);
    assert_string_equal(out, "/tmp/zt-slurm/out/my job 3_3-root.log");
    /* no --output: slurm-%j.out in the working directory (the file Slurm wrote for job 2) */
    assert_int_equal(pfi_slurm_stdout_squeue(j, "2", out, sizeof out, &e), PFI_OK);
    assert_string_equal(out, "/tmp/zt-slurm/out/slurm-2.out");
    assert_int_equal(pfi_slurm_stdout_squeue(j, "99", out, sizeof out, &e), PFI_ENOENT);
    assert_int_equal(pfi_slurm_stdout_squeue("{}", "5", out, sizeof out, &e), PFI_EINVAL);
}

/* Patterns on a job of the shape squeue prints (a later release's {"set", "number"} too). */
static void test_patterns(void **state)
{
    char out[512];
    pfi_err e = {0};
    const char *j = "{\"jobs\": [{\"job_id\": 77, \"array_job_id\": 0, \"array_task_id\": null,"
                    " \"name\": \"n\", \"user_name\": \"u\", \"current_working_directory\": "
                    "\"/w\", \"standard_output\": \"o/%6j-%%-%u.txt\"},"
                    " {\"job_id\": 78, \"standard_output\": \"/x/%N.out\"},"
                    " {\"job_id\": 79, \"standard_output\": \"/x/%A.out\"},"
                    " {\"job_id\": {\"set\": true, \"number\": 80}, \"array_job_id\": "
                    "{\"set\": true, \"number\": 70}, \"array_task_id\": {\"set\": true, "
                    "\"number\": 2}, \"current_working_directory\": \"/w\","
                    " \"standard_output\": \"\"},"
                    " {\"job_id\": 81, \"standard_output\": \"rel.out\"}]}";
    assert_int_equal(pfi_slurm_stdout_squeue(j, "77", out, sizeof out, &e), PFI_OK);
    assert_string_equal(out, "/w/o/000077-%-u.txt");
    assert_int_equal(pfi_slurm_stdout_squeue(j, "78", out, sizeof out, &e), PFI_ENOTSUP);
    assert_non_null(strstr(e.msg, "%N"));
    assert_int_equal(pfi_slurm_stdout_squeue(j, "79", out, sizeof out, &e), PFI_ENOTSUP);
    assert_int_equal(pfi_slurm_stdout_squeue(j, "80", out, sizeof out, &e), PFI_OK);
    assert_string_equal(out, "/w/slurm-70_2.out");
    assert_int_equal(pfi_slurm_stdout_squeue(j, "81", out, sizeof out, &e), PFI_EINVAL);
    assert_int_equal(pfi_slurm_stdout_squeue(j, "77", out, 10, &e), PFI_ERANGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scontrol),
        cmocka_unit_test(test_squeue),
        cmocka_unit_test(test_patterns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
