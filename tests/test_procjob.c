/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of pfi_proc_job_of (serve/procjob.c) on a made-up /proc tree: Slurm from a cgroup v1
 * and v2 path or from SLURM_JOB_ID, a Kubernetes pod (cgroupfs and systemd drivers), the
 * process group otherwise, stdout as the log only when it is a regular file, else stderr; both
 * named when both are different files; the file a pipe's reader writes when its output is
 * piped; which of two files shows throughput (its tail, what it gained since a look) and which
 * is followed (serve/logpick.c). */
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
#include "serve/serve_int.h"
#include "support/files.h"

static char root[256];

static void put(long pid, const char *name, const char *data, size_t n)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%ld", root, pid);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/%ld/%s", root, pid, name);
    pfi_test_put(p, data, n);
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
    /* A job_N cgroup a user made in their own systemd tree is no Slurm job (any user may make
     * one there and have their process taken for another's job): the process group. */
    proc(16, "0::/user.slice/user-1001.slice/user@1001.service/app.slice/job_4242\n", "", 0);
    assert_int_equal(pfi_proc_job_of(root, 16, &j, &e), PFI_OK);
    assert_string_equal(j.id, "pg-1016");
    proc(17, "0::/user.slice/user-1001.slice/user@1001.service/slurm/job_4242\n", "", 0);
    assert_int_equal(pfi_proc_job_of(root, 17, &j, &e), PFI_OK);
    assert_string_equal(j.id, "pg-1017");
    /* Its user, from status; an id from the environment is marked as such. */
    const char status[] = "Name:\tpython\nUmask:\t0022\nUid:\t1001\t1001\t1001\t1001\n";
    put(12, "status", status, strlen(status));
    assert_int_equal(pfi_proc_job_of(root, 12, &j, &e), PFI_OK);
    assert_int_equal(j.uid, 1001);
    assert_int_equal(j.from_env, 1);
    assert_int_equal(pfi_proc_job_of(root, 11, &j, &e), PFI_OK);
    assert_int_equal(j.uid, -1);
    assert_int_equal(j.from_env, 0);
}

/* One job id, two users: never one job.  A forged SLURM_JOB_ID (a user's own word) is renamed,
 * whichever was listed first; between two the kernel vouches for, the later one. */
static void test_apart(void **state)
{
    pfi_proc_job a = {.uid = 1000, .kind = "slurm"};
    pfi_proc_job b = {.uid = 1001, .from_env = 1, .kind = "slurm"};
    snprintf(a.id, sizeof a.id, "slurm-4242");
    snprintf(b.id, sizeof b.id, "slurm-4242");
    assert_int_equal(pfi_proc_job_apart(&a, &b), 1);
    assert_string_equal(a.id, "slurm-4242");
    assert_string_equal(b.id, "slurm-4242-uid1001");
    snprintf(b.id, sizeof b.id, "slurm-4242"); /* the forger listed first */
    assert_int_equal(pfi_proc_job_apart(&b, &a), 1);
    assert_string_equal(a.id, "slurm-4242");
    assert_string_equal(b.id, "slurm-4242-uid1001");
    pfi_proc_job c = {.uid = 1002, .kind = "slurm"};
    snprintf(c.id, sizeof c.id, "slurm-4242");
    assert_int_equal(pfi_proc_job_apart(&a, &c), 1);
    assert_string_equal(a.id, "slurm-4242");
    assert_string_equal(c.id, "slurm-4242-uid1002");
    /* One user, or a user not known: one job. */
    pfi_proc_job d = {.uid = 1000, .from_env = 1, .kind = "slurm"};
    pfi_proc_job u = {.uid = -1, .kind = "slurm"};
    snprintf(d.id, sizeof d.id, "slurm-4242");
    snprintf(u.id, sizeof u.id, "slurm-4242");
    assert_int_equal(pfi_proc_job_apart(&a, &d), 0);
    assert_int_equal(pfi_proc_job_apart(&a, &u), 0);
    assert_string_equal(d.id, "slurm-4242");
    /* A pod's containers may run as several users: one job. */
    pfi_proc_job p1 = {.uid = 0, .kind = "kubernetes"}, p2 = {.uid = 1000, .kind = "kubernetes"};
    snprintf(p1.id, sizeof p1.id, "k8s-0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9");
    snprintf(p2.id, sizeof p2.id, "k8s-0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9");
    assert_int_equal(pfi_proc_job_apart(&p1, &p2), 0);
    assert_string_equal(p2.id, "k8s-0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9");
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
    /* Both files ("> train.log 2> train.err"): stdout is the log, stderr named beside it. */
    snprintf(p, sizeof p, "%s/20/fd/2", root);
    assert_int_equal(symlink(log, p), 0);
    assert_int_equal(pfi_proc_job_of(root, 20, &j, &e), PFI_OK);
    assert_string_equal(j.err_log, log);
    snprintf(log, sizeof log, "%s/train.log", root);
    assert_string_equal(j.log, log);
    /* One file for both ("> train.log 2>&1", through another path to it): no second one. */
    char alias[512];
    snprintf(alias, sizeof alias, "%s/alias.log", root);
    assert_int_equal(symlink(log, alias), 0);
    proc(23, "0::/\n", "", 0);
    snprintf(p, sizeof p, "%s/23/fd", root);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/23/fd/1", root);
    assert_int_equal(symlink(log, p), 0);
    snprintf(p, sizeof p, "%s/23/fd/2", root);
    assert_int_equal(symlink(alias, p), 0);
    assert_int_equal(pfi_proc_job_of(root, 23, &j, &e), PFI_OK);
    assert_string_equal(j.log, log);
    assert_string_equal(j.err_log, "");
    /* The job's stdout itself has no stderr file: stdout /dev/null, stderr a file. */
    assert_int_equal(pfi_proc_job_of(root, 22, &j, &e), PFI_OK);
    assert_string_equal(j.err_log, "");
}

/* fd N of pid pointing at target (a path, or "pipe:[N]" as Linux writes a pipe's), its fdinfo
 * with the flags (octal, as Linux writes them) when flags is not NULL. */
static void fd_to(long pid, int fd, const char *target, const char *flags)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%ld", root, pid);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/%ld/fd", root, pid);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/%ld/fd/%d", root, pid, fd);
    assert_int_equal(symlink(target, p), 0);
    if (!flags)
        return;
    snprintf(p, sizeof p, "%s/%ld/fdinfo", root, pid);
    mkdir(p, 0700);
    char info[128], name[32];
    snprintf(info, sizeof info, "pos:\t0\nflags:\t%s\nmnt_id:\t25\nino:\t42\n", flags);
    snprintf(name, sizeof name, "fdinfo/%d", fd);
    put(pid, name, info, strlen(info));
}

/* A process reading a pipe on its fd 0 (comm as named), writing nothing yet. */
static void reader(long pid, const char *comm, const char *pipe)
{
    put(pid, "comm", comm, strlen(comm));
    fd_to(pid, 0, pipe, NULL);
    fd_to(pid, 2, "/dev/pts/0", "02");
}

/* A job's output down a pipe ("train.py 2>&1 | tee train.log"): its log is the file the
 * pipe's reader writes (its first output file), found through the pipe's inode; a file the
 * reader only reads, a pipe nobody reads, or one three pipes away is no log. */
static void test_pipe_log(void **state)
{
    pfi_proc_job j;
    pfi_err e = {0};
    char log[512], other[512], got[512], via[256];
    snprintf(log, sizeof log, "%s/tee.log", root);
    snprintf(other, sizeof other, "%s/tee2.log", root);
    put(30, "../tee.log", "x\n", 2);
    put(30, "../tee2.log", "x\n", 2);
    /* stdout and stderr the one pipe; tee (pid 31) appends to two files: the first is the log. */
    proc(30, "0::/\n", "", 0);
    fd_to(30, 1, "pipe:[4711]", "01");
    fd_to(30, 2, "pipe:[4711]", "01");
    reader(31, "tee\n", "pipe:[4711]");
    fd_to(31, 1, "/dev/pts/0", "02");
    fd_to(31, 4, other, "0102001");
    fd_to(31, 3, log, "02102001"); /* O_WRONLY|O_APPEND|O_LARGEFILE|O_CLOEXEC (tee -a) */
    assert_int_equal(pfi_proc_job_of(root, 30, &j, &e), PFI_OK);
    assert_string_equal(j.log, "");
    assert_true(j.pipe_ino == 4711 && j.pipe_fd == 1);
    assert_int_equal(pfi_proc_pipe_log(root, &j, got, sizeof got, via, sizeof via), 1);
    assert_string_equal(got, log);
    assert_string_equal(via, "its stdout is a pipe to tee (pid 31)");
    /* The reader has a file open for reading only (a filter reading its patterns): no log. */
    proc(32, "0::/\n", "", 0);
    fd_to(32, 1, "pipe:[4712]", "01");
    reader(33, "grep\n", "pipe:[4712]");
    fd_to(33, 3, log, "0100000");
    assert_int_equal(pfi_proc_job_of(root, 32, &j, &e), PFI_OK);
    assert_int_equal(pfi_proc_pipe_log(root, &j, got, sizeof got, via, sizeof via), 0);
    assert_string_equal(via, "");
    /* No process reads the pipe. */
    proc(34, "0::/\n", "", 0);
    fd_to(34, 1, "pipe:[4713]", "01");
    assert_int_equal(pfi_proc_job_of(root, 34, &j, &e), PFI_OK);
    assert_int_equal(pfi_proc_pipe_log(root, &j, got, sizeof got, via, sizeof via), 0);
    /* stdout no file and no pipe, stderr a pipe ("2>&1 >/dev/null | tee"): stderr's reader;
     * O_RDWR counts as writing, its stdout (no file) does not. */
    proc(35, "0::/\n", "", 0);
    fd_to(35, 1, "/dev/null", "01");
    fd_to(35, 2, "pipe:[4714]", "01");
    reader(36, "tee\n", "pipe:[4714]");
    fd_to(36, 1, "/dev/null", "01");
    fd_to(36, 5, other, "0100002");
    assert_int_equal(pfi_proc_job_of(root, 35, &j, &e), PFI_OK);
    assert_true(j.pipe_ino == 4714 && j.pipe_fd == 2);
    assert_int_equal(pfi_proc_pipe_log(root, &j, got, sizeof got, via, sizeof via), 1);
    assert_string_equal(got, other);
    assert_string_equal(via, "its stderr is a pipe to tee (pid 36)");
    /* stdout a file: that is the log, no pipe looked at. */
    proc(37, "0::/\n", "", 0);
    fd_to(37, 1, log, "01");
    fd_to(37, 2, "pipe:[4711]", "01");
    assert_int_equal(pfi_proc_job_of(root, 37, &j, &e), PFI_OK);
    assert_string_equal(j.log, log);
    assert_true(j.pipe_ino == 0);
    /* "| grep step | tee train.log": one more pipe, to the file (tee's stdout this time). */
    proc(38, "0::/\n", "", 0);
    fd_to(38, 1, "pipe:[4715]", "01");
    reader(39, "grep\n", "pipe:[4715]");
    fd_to(39, 1, "pipe:[4716]", "01");
    reader(40, "tee\n", "pipe:[4716]");
    fd_to(40, 1, log, "01");
    assert_int_equal(pfi_proc_job_of(root, 38, &j, &e), PFI_OK);
    assert_int_equal(pfi_proc_pipe_log(root, &j, got, sizeof got, via, sizeof via), 1);
    assert_string_equal(got, log);
    assert_string_equal(via, "its stdout is a pipe to grep (pid 39), whose stdout is a pipe to tee "
                             "(pid 40)");
    /* Three pipes away: not followed. */
    proc(41, "0::/\n", "", 0);
    fd_to(41, 1, "pipe:[4717]", "01");
    reader(42, "grep\n", "pipe:[4717]");
    fd_to(42, 1, "pipe:[4718]", "01");
    reader(43, "sed\n", "pipe:[4718]");
    fd_to(43, 1, "pipe:[4719]", "01");
    reader(44, "tee\n", "pipe:[4719]");
    fd_to(44, 3, log, "01");
    assert_int_equal(pfi_proc_job_of(root, 41, &j, &e), PFI_OK);
    assert_int_equal(pfi_proc_pipe_log(root, &j, got, sizeof got, via, sizeof via), 0);
    assert_string_equal(via, "");
}

#define TT "[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss:  3.24405  " \
           "grad_norm:  0.8319  memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%"

/* Which of a job's two files shows throughput: torchtitan's metric lines do (stderr, Python's
 * logging), a stdout of plain print()s does not; only the tail is read, a line cut by the
 * window's start or still being written is not. */
static void test_log_shows_rate(void **state)
{
    char out[512], err[512];
    snprintf(out, sizeof out, "%s/shows.out", root);
    snprintf(err, sizeof err, "%s/shows.err", root);
    const char *plain = "loading checkpoint from step 0\nbuilding model with 8B parameters\n";
    pfi_test_put(out, plain, strlen(plain));
    assert_int_equal(pfi_proc_log_shows_rate(out), 0);
    pfi_test_put(err, TT "\n", strlen(TT) + 1);
    assert_int_equal(pfi_proc_log_shows_rate(err), 1);
    /* Empty, missing, a directory, a device: none. */
    pfi_test_put(out, "", 0);
    assert_int_equal(pfi_proc_log_shows_rate(out), 0);
    snprintf(out, sizeof out, "%s/missing.log", root);
    assert_int_equal(pfi_proc_log_shows_rate(out), 0);
    assert_int_equal(pfi_proc_log_shows_rate(root), 0);
    assert_int_equal(pfi_proc_log_shows_rate("/dev/zero"), 0);
    /* The metric line still being written (no newline yet) is not read. */
    pfi_test_put(err, TT, strlen(TT));
    assert_int_equal(pfi_proc_log_shows_rate(err), 0);
    /* Metric lines followed by more than the tail of plain lines: not in the tail. */
    size_t n = 2 * PFI_PROC_LOG_TAIL, k = 0;
    char *big = malloc(n + 2 * sizeof TT + 64);
    assert_non_null(big);
    k += (size_t)sprintf(big, "%s\n", TT);
    while (k < n)
        k += (size_t)sprintf(big + k, "warning: something %zu\n", k);
    pfi_test_put(err, big, k);
    assert_int_equal(pfi_proc_log_shows_rate(err), 0);
    /* A metric line at the end of a long file is: the whole window is read. */
    k += (size_t)sprintf(big + k - 1, "\n%s\n", TT) - 1;
    pfi_test_put(err, big, k);
    assert_int_equal(pfi_proc_log_shows_rate(err), 1);
    /* The window starts inside a metric line: its cut tail is not read as one. */
    memset(big, 'x', n);
    size_t at = n - PFI_PROC_LOG_TAIL - 20; /* the line runs 20 bytes... */
    big[at - 1] = '\n';
    memcpy(big + at, TT, strlen(TT)); /* ...past the window's start; "tps: 7,282" inside it */
    big[at + strlen(TT)] = '\n';
    pfi_test_put(err, big, n);
    assert_int_equal(pfi_proc_log_shows_rate(err), 0);
    free(big);
}

/* What a file gained since the last look: lines read once, a line still being written read
 * whole once it ends, a file written anew read from its start. */
static void test_log_rate_since(void **state)
{
    char path[512];
    snprintf(path, sizeof path, "%s/since.log", root);
    const char *plain = "loading checkpoint from step 0\n";
    pfi_test_put(path, plain, strlen(plain));
    long long from = 0;
    assert_int_equal(pfi_proc_log_rate_since(path, &from), 0);
    assert_int_equal(from, (long long)strlen(plain));
    pfi_test_append(path, TT "\n");
    assert_int_equal(pfi_proc_log_rate_since(path, &from), 1);
    pfi_test_append(path, "saving checkpoint\n");
    assert_int_equal(pfi_proc_log_rate_since(path, &from), 0); /* the metric line is behind */
    assert_int_equal(pfi_proc_log_rate_since(path, &from), 0); /* nothing new */
    pfi_test_append(path, "[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  ");
    assert_int_equal(pfi_proc_log_rate_since(path, &from), 0); /* still being written */
    pfi_test_append(path, "loss:  3.24405  tps: 7,282  tflops: 0.52  mfu: 0.17%\n");
    assert_int_equal(pfi_proc_log_rate_since(path, &from), 1); /* read whole */
    pfi_test_put(path, TT "\n", strlen(TT) + 1);             /* shorter: written anew */
    assert_int_equal(pfi_proc_log_rate_since(path, &from), 1);
    assert_int_equal(from, (long long)strlen(TT) + 1);
}

/* The rule of which file is followed (serve/logpick.c), round by round. */
static void test_logpick(void **state)
{
    srv_logpick lp;
    pfi_srv_logpick_init(&lp);
    const int none[2] = {0, 0}, out[2] = {1, 0}, err[2] = {0, 1}, both[2] = {1, 1};
    /* Neither shows throughput: stdout, unsettled; then the first that shows it. */
    assert_int_equal(pfi_srv_logpick_step(&lp, none, 0, 30), SRV_LOGPICK_SAME);
    assert_int_equal(lp.followed, 0);
    assert_int_equal(pfi_srv_logpick_step(&lp, err, 1, 30), SRV_LOGPICK_CHOSEN);
    assert_int_equal(lp.followed, 1);
    /* stdout shows throughput too: kept while stderr has shown some within 30 s. */
    assert_int_equal(pfi_srv_logpick_step(&lp, out, 2, 30), SRV_LOGPICK_SAME);
    assert_int_equal(pfi_srv_logpick_step(&lp, both, 40, 30), SRV_LOGPICK_SAME);
    assert_int_equal(pfi_srv_logpick_step(&lp, out, 69.9, 30), SRV_LOGPICK_SAME);
    assert_int_equal(lp.followed, 1);
    /* stderr silent for 30 s while stdout shows throughput: stdout. */
    assert_int_equal(pfi_srv_logpick_step(&lp, out, 70, 30), SRV_LOGPICK_SWITCHED);
    assert_int_equal(lp.followed, 0);
    assert_int_equal(pfi_srv_logpick_step(&lp, err, 71, 30), SRV_LOGPICK_SAME);
    /* Both silent: no switch, however long; the other showing it again: back. */
    assert_int_equal(pfi_srv_logpick_step(&lp, none, 500, 30), SRV_LOGPICK_SAME);
    assert_int_equal(lp.followed, 0);
    assert_int_equal(pfi_srv_logpick_step(&lp, err, 501, 30), SRV_LOGPICK_SWITCHED);
    assert_int_equal(lp.followed, 1);
    /* Both at the first choice: stdout. */
    pfi_srv_logpick_init(&lp);
    assert_int_equal(pfi_srv_logpick_step(&lp, both, 0, 30), SRV_LOGPICK_CHOSEN);
    assert_int_equal(lp.followed, 0);
}

/* The sequence length a command line states, so that a log in samples/s reads as tokens/s:
 * "--FLAG N" and "--FLAG=N" for the flags training scripts take it by, the last one given
 * winning (argparse's rule), anything that is not a whole number ignored; found past the
 * 256 bytes of cmdline that are kept. */
static void seq_cmd(long pid, const char *argv_nul, size_t n, double want)
{
    pfi_proc_job j;
    pfi_err e = {0};
    proc(pid, "0::/user.slice/x\n", "", 0);
    put(pid, "cmdline", argv_nul, n);
    assert_int_equal(pfi_proc_job_of(root, pid, &j, &e), PFI_OK);
    assert_true(j.seq_len == want);
}

static void test_seq_len(void **state)
{
    (void)state;
    static const char mega[] = "python\0pretrain_gpt.py\0--seq-length\0002048\0--micro-batch-size\0004";
    seq_cmd(40, mega, sizeof mega, 2048);
    static const char hf[] = "python\0run_clm.py\0--block_size=1024\0--do_train";
    seq_cmd(41, hf, sizeof hf, 1024);
    static const char trl[] = "accelerate\0launch\0sft.py\0--max_seq_length\0004096\0--max_seq_length=8192";
    seq_cmd(42, trl, sizeof trl, 8192);
    static const char unexpanded[] = "python\0train.py\0--seq-length\0$SEQ\0--block_size\0auto";
    seq_cmd(43, unexpanded, sizeof unexpanded, 0);
    static const char at_end[] = "python\0train.py\0--seq-length";
    seq_cmd(44, at_end, sizeof at_end, 0);
    static const char other[] = "python\0train.py\0--seq-length-warmup\00064\0-seq-length\00032\0--seq_len=0";
    seq_cmd(45, other, sizeof other, 0);
    /* Past the 256 bytes kept of the command line, as a Megatron launch's dozens of flags. */
    char longcmd[1024];
    size_t n = 0;
    n += (size_t)snprintf(longcmd + n, sizeof longcmd - n, "python") + 1;
    for (int k = 0; k < 40; k++)
        n += (size_t)snprintf(longcmd + n, sizeof longcmd - n, "--flag-number-%d", k) + 1;
    n += (size_t)snprintf(longcmd + n, sizeof longcmd - n, "--encoder-seq-length") + 1;
    n += (size_t)snprintf(longcmd + n, sizeof longcmd - n, "512") + 1;
    assert_true(n > 256 && n < sizeof longcmd);
    seq_cmd(46, longcmd, n, 512);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_kinds), cmocka_unit_test(test_apart),
                                       cmocka_unit_test(test_log),
                                       cmocka_unit_test(test_pipe_log),
                                       cmocka_unit_test(test_log_shows_rate),
                                       cmocka_unit_test(test_log_rate_since),
                                       cmocka_unit_test(test_logpick),
                                       cmocka_unit_test(test_seq_len)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
