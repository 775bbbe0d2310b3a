/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of pfi_proc_job_of (serve/procjob.c) on a made-up /proc tree: Slurm from a cgroup v1
 * and v2 path or from SLURM_JOB_ID, a Kubernetes pod (cgroupfs and systemd drivers), the
 * process group otherwise, stdout as the log only when it is a regular file, else stderr. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "serve/serve.h"

static char root[256];

static void put(long pid, const char *name, const char *data, size_t n)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%ld", root, pid);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/%ld/%s", root, pid, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fwrite(data, 1, n, f);
    fclose(f);
}

static void proc(long pid, const char *cgroup, const char *env, size_t env_n)
{
    char st[128];
    snprintf(st, sizeof st, "%ld (py thon) S 1 %ld %ld 0 -1\n", pid, pid + 1000, pid + 2000);
    put(pid, "stat", st, strlen(st));
    put(pid, "cmdline", "python\0train.py\0", 16);
    put(pid, "cgroup", cgroup, strlen(cgroup));
    put(pid, "environ", env, env_n);
}

static int setup(void **state)
{
    snprintf(root, sizeof root, "%s/pfi-procjob-XXXXXX", getenv("PFI_TEST_TMP") ? getenv("PFI_TEST_TMP") : "/tmp");
    assert_non_null(mkdtemp(root));
    return 0;
}

static int teardown(void **state)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_kinds(void **state)
{
    pfi_proc_job j;
    pfi_err e = {0};
    proc(10, "4:memory:/slurm/uid_1000/job_123/step_0\n1:cpu:/\n", "", 0);
    assert_int_equal(pfi_proc_job_of(root, 10, &j, &e), PFI_OK);
    assert_string_equal(j.id, "slurm-123");
    assert_string_equal(j.kind, "slurm");
    assert_string_equal(j.cmdline, "python train.py");
    proc(11, "0::/system.slice/slurmstepd.scope/job_98765/step_batch/user/task_0\n", "", 0);
    assert_int_equal(pfi_proc_job_of(root, 11, &j, &e), PFI_OK);
    assert_string_equal(j.id, "slurm-98765");
    /* "job_" inside a name is not a job id; the environment then says it. */
    const char env[] = "HOME=/root\0SLURM_JOB_ID=4242\0PATH=/bin";
    proc(12, "0::/user.slice/my_job_1x/\n", env, sizeof env);
    assert_int_equal(pfi_proc_job_of(root, 12, &j, &e), PFI_OK);
    assert_string_equal(j.id, "slurm-4242");
    proc(13, "0::/kubepods/burstable/pod0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9/abc123\n", "", 0);
    assert_int_equal(pfi_proc_job_of(root, 13, &j, &e), PFI_OK);
    assert_string_equal(j.id, "k8s-0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9");
    assert_string_equal(j.kind, "kubernetes");
    proc(14, "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0f1e2d3c_4b5a_6978_8695_a4b3c2d1e0f9.slice/cri-containerd-1.scope\n", "", 0);
    assert_int_equal(pfi_proc_job_of(root, 14, &j, &e), PFI_OK);
    assert_string_equal(j.id, "k8s-0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9");
    /* Nothing else: its process group (the fields after the last ')' of stat). */
    proc(15, "0::/user.slice\n", "", 0);
    assert_int_equal(pfi_proc_job_of(root, 15, &j, &e), PFI_OK);
    assert_string_equal(j.id, "pg-1015");
    assert_string_equal(j.kind, "process");
    /* Gone. */
    assert_int_equal(pfi_proc_job_of(root, 99, &j, &e), PFI_ENOENT);
}

static void test_log(void **state)
{
    pfi_proc_job j;
    pfi_err e = {0};
    proc(20, "0::/\n", "", 0);
    char p[512], log[512];
    snprintf(p, sizeof p, "%s/20/fd", root);
    mkdir(p, 0700);
    snprintf(log, sizeof log, "%s/train.log", root);
    put(20, "../train.log", "x\n", 2);
    snprintf(p, sizeof p, "%s/20/fd/1", root);
    assert_int_equal(symlink(log, p), 0);
    assert_int_equal(pfi_proc_job_of(root, 20, &j, &e), PFI_OK);
    assert_string_equal(j.log, log);
    /* A terminal or a pipe is no log. */
    proc(21, "0::/\n", "", 0);
    snprintf(p, sizeof p, "%s/21/fd", root);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/21/fd/1", root);
    assert_int_equal(symlink("/dev/null", p), 0);
    assert_int_equal(pfi_proc_job_of(root, 21, &j, &e), PFI_OK);
    assert_string_equal(j.log, "");
    /* Stdout not a file, stderr one ("2>train.err | tee"): stderr is the log (it was none). */
    proc(22, "0::/\n", "", 0);
    snprintf(p, sizeof p, "%s/22/fd", root);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/22/fd/1", root);
    assert_int_equal(symlink("/dev/null", p), 0);
    snprintf(log, sizeof log, "%s/train.err", root);
    put(22, "../train.err", "x\n", 2);
    snprintf(p, sizeof p, "%s/22/fd/2", root);
    assert_int_equal(symlink(log, p), 0);
    assert_int_equal(pfi_proc_job_of(root, 22, &j, &e), PFI_OK);
    assert_string_equal(j.log, log);
    /* Both files: stdout wins. */
    snprintf(p, sizeof p, "%s/20/fd/2", root);
    assert_int_equal(symlink(log, p), 0);
    assert_int_equal(pfi_proc_job_of(root, 20, &j, &e), PFI_OK);
    snprintf(log, sizeof log, "%s/train.log", root);
    assert_string_equal(j.log, log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_kinds), cmocka_unit_test(test_log)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
