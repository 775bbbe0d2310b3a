/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the NVML backend through the project's fake libnvidia-ml (over the simulator):
 * driver discovery, listing, every field, GPM, set / read back / restore, read-only mode,
 * and every fault class the backend must survive.  The fake comes from $PFI_FAKENVML (set by
 * tests/run.sh) or, when run by hand, from the build tree next to this binary. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "hw/backend_impl.h"
#include "measure/journal.h"

static char fake_path[PATH_MAX];

static void find_fake(void)
{
    const char *env = getenv("PFI_FAKENVML");
    if (env && *env) {
        snprintf(fake_path, sizeof fake_path, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    /* BUILD/tests/test_nvml -> BUILD/lib/libnvidia-ml.so.1 */
    char *dir = dirname(dirname(exe));
    snprintf(fake_path, sizeof fake_path, "%s/lib/libnvidia-ml.so.1", dir);
}

static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Backends a test opened; teardown closes what a failed assertion left open, so the fake is
 * never left initialized with one test's faults. */
static pfi_backend *opened[8];

static void track(pfi_backend *b)
{
    for (size_t i = 0; i < sizeof opened / sizeof opened[0]; i++)
        if (!opened[i]) {
            opened[i] = b;
            return;
        }
    fail_msg("too many backends open in one test");
}

static void close_b(pfi_backend *b)
{
    for (size_t i = 0; i < sizeof opened / sizeof opened[0]; i++)
        if (opened[i] == b)
            opened[i] = NULL;
    pfi_hw_close(b);
}

static int teardown(void **state)
{
    for (size_t i = 0; i < sizeof opened / sizeof opened[0]; i++)
        if (opened[i]) {
            pfi_hw_close(opened[i]);
            opened[i] = NULL;
        }
    return 0;
}

/* Each test names its faults; nothing leaks into the next one. */
static int setup(void **state)
{
    unsetenv("PFI_FAKENVML_FAULTS");
    unsetenv("PFI_FAKENVML_FAULTS_FILE");
    unsetenv("PFI_FAKENVML_GPM");
    unsetenv("PFI_SIM_STATE");
    unsetenv("PFI_SIM_SPEED");
    unsetenv("PFI_READ_ONLY");
    unsetenv("PFI_NVML_LIBRARY");
    unsetenv("PFI_FAKENVML_SIM");
    return 0;
}

static pfi_backend *open_fake(const char *faults, int read_only)
{
    if (faults)
        setenv("PFI_FAKENVML_FAULTS", faults, 1);
    else
        unsetenv("PFI_FAKENVML_FAULTS");
    pfi_backend *b = NULL;
    pfi_err e = {0};
    int rc = pfi_hw_open("nvml", fake_path, read_only, &b, &e);
    if (rc != PFI_OK)
        fail_msg("opening the fake NVML (%s) failed: %s", fake_path, e.msg);
    track(b);
    return b;
}

/* A fresh directory under $PFI_TEST_TMP (tests run in parallel with others). */
static void tmpdir(char *out, size_t n)
{
    const char *dir = getenv("PFI_TEST_TMP");
    snprintf(out, n, "%s/pfi-nvml-XXXXXX", dir && *dir ? dir : "/tmp");
    assert_non_null(mkdtemp(out));
}

static void test_no_driver(void **state)
{
    pfi_backend *b = NULL;
    pfi_err e = {0};
    assert_int_equal(pfi_hw_open("nvml", "/nonexistent/libnvidia-ml.so.1", 0, &b, &e),
                     PFI_ENODRIVER);
    assert_null(b);
    assert_non_null(strstr(e.msg, "no NVIDIA driver found"));
    assert_non_null(strstr(e.msg, "/nonexistent/libnvidia-ml.so.1"));
    /* The environment names the library when no path is given. */
    setenv("PFI_NVML_LIBRARY", "/nonexistent/other/libnvidia-ml.so.1", 1);
    assert_int_equal(pfi_hw_open("nvml", NULL, 0, &b, &e), PFI_ENODRIVER);
    assert_non_null(strstr(e.msg, "/nonexistent/other/libnvidia-ml.so.1"));
    setenv("PFI_NVML_LIBRARY", fake_path, 1);
    assert_int_equal(pfi_hw_open("nvml", NULL, 0, &b, &e), PFI_OK);
    pfi_hw_close(b);
}

static void test_not_nvml(void **state)
{
    pfi_backend *b = NULL;
    pfi_err e = {0};
    assert_int_equal(pfi_hw_open("nvml", "libm.so.6", 0, &b, &e), PFI_ENODRIVER);
    assert_non_null(strstr(e.msg, "nvmlInit_v2"));
}

static void test_init_fails(void **state)
{
    setenv("PFI_FAKENVML_FAULTS", "nvmlInit_v2=DRIVER_NOT_LOADED", 1);
    pfi_backend *b = NULL;
    pfi_err e = {0};
    assert_int_equal(pfi_hw_open("nvml", fake_path, 0, &b, &e), PFI_ENODRIVER);
    assert_non_null(strstr(e.msg, "no NVIDIA driver found"));
    assert_non_null(strstr(e.msg, "Driver Not Loaded"));
    /* A malformed fault rule must stop the fake, not be ignored. */
    setenv("PFI_FAKENVML_FAULTS", "nvmlDeviceGetPowerUsage=NOT_A_CODE", 1);
    assert_int_not_equal(pfi_hw_open("nvml", fake_path, 0, &b, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "nvmlInit_v2"));
}

static void test_list(void **state)
{
    pfi_backend *b = open_fake(NULL, 0);
    pfi_backend *sim = NULL;
    pfi_err e = {0};
    assert_int_equal(pfi_hw_open("sim", NULL, 1, &sim, &e), PFI_OK);
    track(sim);
    int n = 0, ns = 0;
    assert_int_equal(pfi_hw_count(b, &n, &e), PFI_OK);
    assert_int_equal(pfi_hw_count(sim, &ns, &e), PFI_OK);
    assert_true(n >= 2);
    assert_int_equal(n, ns);
    for (int i = 0; i < n; i++) {
        pfi_device d, ds;
        assert_int_equal(pfi_hw_info(b, i, &d, &e), PFI_OK);
        assert_int_equal(pfi_hw_info(sim, i, &ds, &e), PFI_OK);
        /* The backend passes through what the driver says, in watts. */
        assert_int_equal(d.index, i);
        assert_string_equal(d.name, ds.name);
        assert_string_equal(d.uuid, ds.uuid);
        assert_true(fabs(d.min_limit_w - ds.min_limit_w) < 0.001);
        assert_true(fabs(d.max_limit_w - ds.max_limit_w) < 0.001);
        assert_true(fabs(d.default_limit_w - ds.default_limit_w) < 0.001);
        assert_true(fabs(d.limit_w - ds.limit_w) < 0.001);
        assert_true(fabs(d.enforced_w - ds.enforced_w) < 0.001);
        if (i > 0) {
            pfi_device p;
            assert_int_equal(pfi_hw_info(b, i - 1, &p, &e), PFI_OK);
            assert_string_not_equal(p.uuid, d.uuid);
        }
    }
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, n, &d, &e), PFI_ENOENT);
    close_b(sim);
    close_b(b);
}

static const uint32_t every_field =
    PFI_F_POWER | PFI_F_POWER_INST | PFI_F_ENERGY | PFI_F_SM_CLOCK | PFI_F_MEM_CLOCK |
    PFI_F_REASONS | PFI_F_GPU_UTIL | PFI_F_SM_ACTIVE | PFI_F_SM_OCCUPANCY | PFI_F_TENSOR |
    PFI_F_DRAM | PFI_F_NVLINK | PFI_F_PCIE | PFI_F_TEMP | PFI_F_MEM_USED | PFI_F_LIMIT |
    PFI_F_MEM_POWER;
static const uint32_t windowed = PFI_F_SM_ACTIVE | PFI_F_SM_OCCUPANCY | PFI_F_TENSOR |
                                 PFI_F_DRAM | PFI_F_NVLINK | PFI_F_PCIE;

static void check_ranges(const pfi_sample *s)
{
    double fr[] = {s->gpu_util, s->sm_active, s->sm_occupancy, s->tensor_active, s->dram_active};
    for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++)
        assert_true(fr[i] >= 0 && fr[i] <= 1.0001);
    assert_true(s->power_w > 10 && s->power_w < 1000);
    assert_true(s->power_inst_w > 10 && s->power_inst_w < 1200);
    assert_true(s->mem_power_w > 0 && s->mem_power_w < s->power_w);
    assert_true(s->sm_clock_mhz > 100 && s->sm_clock_mhz < 3000);
    assert_true(s->mem_clock_mhz > 100);
    assert_true(s->temp_c > 10 && s->temp_c < 120);
    assert_true(s->mem_used_mib >= 0);
    assert_true(s->nvlink_tx_mibs >= 0 && s->nvlink_rx_mibs >= 0);
    assert_true(s->pcie_tx_mibs >= 0 && s->pcie_rx_mibs >= 0);
    assert_true(s->limit_w > 0 && s->enforced_w > 0);
}

/* Every field, GPM's two-sample protocol, and agreement with the simulator behind it. */
static void test_every_field(void **state)
{
    pfi_backend *b = open_fake(NULL, 0);
    pfi_err e = {0};
    pfi_sample s1, s2, s3;
    assert_int_equal(pfi_hw_sample(b, 0, &s1, &e), PFI_OK);
    /* One reading cannot give a rate: windowed fields are missing, not zero. */
    assert_int_equal(s1.have & windowed, 0);
    assert_true(isnan(s1.sm_active) && isnan(s1.nvlink_tx_mibs));
    assert_int_equal(s1.have & ~windowed, every_field & ~windowed);
    nap(0.15);
    assert_int_equal(pfi_hw_sample(b, 0, &s2, &e), PFI_OK);
    assert_int_equal(s2.have & every_field, every_field);
    check_ranges(&s2);
    assert_true(s2.t_s > s1.t_s);
    assert_true(s2.energy_j > s1.energy_j);
    /* A window shorter than GPM's 100 ms repeats the last one instead of a noisy value. */
    assert_int_equal(pfi_hw_sample(b, 0, &s3, &e), PFI_OK);
    assert_int_equal(s3.have & windowed, windowed);
    assert_true(fabs(s3.sm_active - s2.sm_active) < 1e-12);

    /* The simulated job is in steady state after warm-up: GPM means equal the simulator's
     * instantaneous activities. */
    pfi_backend *sim = NULL;
    assert_int_equal(pfi_hw_open("sim", NULL, 1, &sim, &e), PFI_OK);
    track(sim);
    pfi_hw_sleep(sim, s2.t_s);
    pfi_sample ss;
    assert_int_equal(pfi_hw_sample(sim, 0, &ss, &e), PFI_OK);
    assert_true(fabs(ss.sm_active - s2.sm_active) < 0.05);
    assert_true(fabs(ss.tensor_active - s2.tensor_active) < 0.05);
    assert_true(fabs(ss.dram_active - s2.dram_active) < 0.05);
    assert_true(fabs(ss.sm_clock_mhz - s2.sm_clock_mhz) < 30);
    close_b(sim);
    close_b(b);
}

static void test_set_readback_restore(void **state)
{
    pfi_backend *b = open_fake(NULL, 0);
    pfi_err e = {0};
    pfi_device d0, d1;
    assert_int_equal(pfi_hw_info(b, 1, &d1, &e), PFI_OK);
    assert_int_equal(pfi_hw_info(b, 0, &d0, &e), PFI_OK);
    double want = d1.min_limit_w + 0.5 * (d1.max_limit_w - d1.min_limit_w);
    double enf = 0;
    assert_int_equal(pfi_hw_set_limit(b, 1, want, &enf, &e), PFI_OK);
    assert_true(fabs(enf - want) < 0.5);
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, 1, &d, &e), PFI_OK);
    assert_true(fabs(d.limit_w - want) < 0.5);
    pfi_sample s;
    assert_int_equal(pfi_hw_sample(b, 1, &s, &e), PFI_OK);
    assert_true(fabs(s.limit_w - want) < 0.5 && fabs(s.enforced_w - want) < 0.5);
    /* Only that GPU changed. */
    assert_int_equal(pfi_hw_info(b, 0, &d, &e), PFI_OK);
    assert_true(fabs(d.limit_w - d0.limit_w) < 0.001);
    /* Restore. */
    assert_int_equal(pfi_hw_set_limit(b, 1, d1.default_limit_w, &enf, &e), PFI_OK);
    assert_true(fabs(enf - d1.default_limit_w) < 0.5);
    /* Out of range: refused by pfi before NVML, and by NVML (INVALID_ARGUMENT) when the
     * backend is called directly. */
    assert_int_equal(pfi_hw_set_limit(b, 1, d1.min_limit_w - 50, NULL, &e), PFI_ERANGE);
    assert_int_equal(b->ops->set_limit(b, 1, d1.min_limit_w - 50, &e), PFI_ERANGE);
    assert_non_null(strstr(e.msg, "NVML_ERROR_INVALID_ARGUMENT"));
    /* The caller names the GPU (a sweep's "setting GPU 1 to 150 W: ..."), not the backend. */
    assert_null(strstr(e.msg, "GPU 1"));
    close_b(b);
}

static void test_read_only(void **state)
{
    pfi_backend *b = open_fake(NULL, 1);
    pfi_err e = {0};
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, 0, &d, &e), PFI_OK);
    assert_int_equal(pfi_hw_set_limit(b, 0, d.min_limit_w, NULL, &e), PFI_EPERM);
    assert_non_null(strstr(e.msg, "read-only"));
    /* Even a caller that skips the pfi_hw_* wrapper cannot reach NVML. */
    assert_int_equal(b->ops->set_limit(b, 0, d.min_limit_w, &e), PFI_EPERM);
    pfi_device after;
    assert_int_equal(pfi_hw_info(b, 0, &after, &e), PFI_OK);
    assert_true(fabs(after.limit_w - d.limit_w) < 0.001);
    close_b(b);
    /* The environment variable forces it too, and the out-of-band cap (which the simulated
     * firmware applies, not pfi) still works under it. */
    char dir[PATH_MAX], statef[PATH_MAX + 16];
    tmpdir(dir, sizeof dir);
    snprintf(statef, sizeof statef, "%s/node.state", dir);
    setenv("PFI_SIM_STATE", statef, 1);
    setenv("PFI_READ_ONLY", "1", 1);
    b = open_fake("oob-cap@1=450", 0);
    assert_int_equal(pfi_hw_set_limit(b, 0, d.min_limit_w, NULL, &e), PFI_EPERM);
    assert_int_equal(pfi_hw_info(b, 1, &after, &e), PFI_OK);
    assert_true(fabs(after.enforced_w - 450) < 0.5);
    /* The simulated GPU itself runs at the capped limit. */
    pfi_backend *sim = NULL;
    assert_int_equal(pfi_hw_open("sim", NULL, 1, &sim, &e), PFI_OK);
    track(sim);
    assert_int_equal(pfi_hw_info(sim, 1, &after, &e), PFI_OK);
    assert_true(fabs(after.limit_w - 450) < 0.5);
    close_b(sim);
    close_b(b);
    char side[PATH_MAX + 32];
    snprintf(side, sizeof side, "%s.inband", statef);
    unlink(side);
    unlink(statef);
    rmdir(dir);
}

static void test_not_root(void **state)
{
    pfi_backend *b = open_fake("not-root", 0);
    pfi_err e = {0};
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, 2, &d, &e), PFI_OK);
    assert_int_equal(pfi_hw_set_limit(b, 2, d.min_limit_w + 100, NULL, &e), PFI_EPERM);
    assert_non_null(strstr(e.msg, "nvmlDeviceSetPowerManagementLimit"));
    assert_non_null(strstr(e.msg, "Insufficient Permissions"));
    assert_non_null(strstr(e.msg, "root"));
    pfi_device after;
    assert_int_equal(pfi_hw_info(b, 2, &after, &e), PFI_OK);
    assert_true(fabs(after.limit_w - d.limit_w) < 0.001);
    /* Reading still works for an unprivileged user. */
    pfi_sample s;
    assert_int_equal(pfi_hw_sample(b, 2, &s, &e), PFI_OK);
    assert_true(s.have & PFI_F_POWER);
    close_b(b);
}

static void test_oob_cap(void **state)
{
    pfi_backend *b = open_fake("oob-cap@3=450", 0);
    pfi_err e = {0};
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, 3, &d, &e), PFI_OK);
    assert_true(d.limit_w > 450);
    assert_true(fabs(d.enforced_w - 450) < 0.5);
    double enf = 0;
    assert_int_equal(pfi_hw_set_limit(b, 3, 600, &enf, &e), PFI_OK);
    /* The call succeeds; the read-back tells the caller the device enforces less. */
    assert_true(fabs(enf - 450) < 0.5);
    assert_int_equal(pfi_hw_info(b, 3, &d, &e), PFI_OK);
    assert_true(fabs(d.limit_w - 600) < 0.5);
    assert_int_equal(pfi_hw_set_limit(b, 3, 400, &enf, &e), PFI_OK);
    assert_true(fabs(enf - 400) < 0.5);
    /* Other GPUs are not capped. */
    assert_int_equal(pfi_hw_set_limit(b, 4, 600, &enf, &e), PFI_OK);
    assert_true(fabs(enf - 600) < 0.5);
    assert_int_equal(pfi_hw_set_limit(b, 4, d.default_limit_w, &enf, &e), PFI_OK);
    close_b(b);
}

/* On a shared node (PFI_SIM_STATE) the in-band limit under an out-of-band cap is what was
 * asked, for every process: each open after the last close starts the fake afresh, as a new
 * process does.  The second read the simulator's capped limit (450 W) as the in-band one, and
 * a sweep started then journaled it as the original. */
static void test_oob_cap_shared(void **state)
{
    char dir[PATH_MAX], statef[PATH_MAX + 16], side[PATH_MAX + 32];
    tmpdir(dir, sizeof dir);
    snprintf(statef, sizeof statef, "%s/node.state", dir);
    snprintf(side, sizeof side, "%s.inband", statef);
    setenv("PFI_SIM_STATE", statef, 1);
    pfi_err e = {0};
    pfi_device d;
    for (int k = 0; k < 2; k++) {
        pfi_backend *b = open_fake("oob-cap@3=450", 0);
        assert_int_equal(pfi_hw_info(b, 3, &d, &e), PFI_OK);
        if (!(fabs(d.limit_w - 700) < 0.5 && fabs(d.enforced_w - 450) < 0.5))
            fail_msg("open %d: GPU 3 reads limit %.0f W, enforced %.0f W; expected 700, 450",
                     k + 1, d.limit_w, d.enforced_w);
        close_b(b);
    }
    /* A limit asked by one process is what the next one reads, the cap still enforced. */
    pfi_backend *b = open_fake("oob-cap@3=450", 0);
    assert_int_equal(pfi_hw_set_limit(b, 3, 600, NULL, &e), PFI_OK);
    close_b(b);
    b = open_fake(NULL, 0);
    assert_int_equal(pfi_hw_info(b, 3, &d, &e), PFI_OK);
    if (!(fabs(d.limit_w - 600) < 0.5 && fabs(d.enforced_w - 450) < 0.5))
        fail_msg("after a set to 600 W: limit %.0f W, enforced %.0f W", d.limit_w, d.enforced_w);
    close_b(b);
    /* A limit set behind NVML's back (the simulator itself) ends what was asked in band. */
    pfi_backend *sim = NULL;
    assert_int_equal(pfi_hw_open("sim", NULL, 0, &sim, &e), PFI_OK);
    track(sim);
    assert_int_equal(pfi_hw_set_limit(sim, 3, 500, NULL, &e), PFI_OK);
    close_b(sim);
    b = open_fake(NULL, 0);
    assert_int_equal(pfi_hw_info(b, 3, &d, &e), PFI_OK);
    assert_true(fabs(d.limit_w - 500) < 0.5);
    close_b(b);
    unlink(side);
    unlink(statef);
    rmdir(dir);
}

static void test_lost_gpu(void **state)
{
    pfi_backend *b = open_fake("nvmlDeviceGetPowerUsage@2=GPU_IS_LOST;after=1,"
                               "*@5=GPU_IS_LOST;after=4",
                               0);
    pfi_err e = {0};
    pfi_sample s;
    int n = 0;
    assert_int_equal(pfi_hw_count(b, &n, &e), PFI_OK);
    assert_true(n >= 6);
    assert_int_equal(pfi_hw_sample(b, 2, &s, &e), PFI_OK); /* the first call passes */
    assert_int_equal(pfi_hw_sample(b, 2, &s, &e), PFI_ELOST);
    /* The caller names the GPU ("GPU 2: ..."); the backend names the call and the code. */
    assert_null(strstr(e.msg, "GPU 2"));
    assert_non_null(strstr(e.msg, "nvmlDeviceGetPowerUsage"));
    assert_non_null(strstr(e.msg, "GPU is lost"));
    assert_non_null(strstr(e.msg, "NVML_ERROR_GPU_IS_LOST"));
    /* GPU 5 is lost for every call from its fifth on: info dies mid-way. */
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, 5, &d, &e), PFI_ELOST);
    assert_int_equal(pfi_hw_set_limit(b, 5, 500, NULL, &e), PFI_ELOST);
    /* The others are still monitored and restored. */
    for (int i = 0; i < n; i++) {
        if (i == 2 || i == 5)
            continue;
        assert_int_equal(pfi_hw_sample(b, i, &s, &e), PFI_OK);
        assert_true(s.have & PFI_F_POWER);
    }
    double enf;
    assert_int_equal(pfi_hw_set_limit(b, 3, 500, &enf, &e), PFI_OK);
    assert_int_equal(pfi_hw_set_limit(b, 3, 700, &enf, &e), PFI_OK);
    assert_true(fabs(enf - 700) < 0.5);
    close_b(b);
}

/* A journaled GPU that is lost (off the bus) is reported as lost by the restore, with the
 * driver's error: it was "not on this node", which it is. */
static void test_restore_lost(void **state)
{
    pfi_backend *b = open_fake(NULL, 0);
    pfi_err e = {0};
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, 5, &d, &e), PFI_OK);
    close_b(b);
    pfi_journal j;
    memset(&j, 0, sizeof j);
    j.lock_fd = -1;
    j.n = 1;
    j.e[0].gpu = 5;
    snprintf(j.e[0].uuid, sizeof j.e[0].uuid, "%s", d.uuid);
    j.e[0].limit_w = 650;
    char dir[PATH_MAX];
    tmpdir(dir, sizeof dir);
    snprintf(j.path, sizeof j.path, "%s/journal", dir);
    b = open_fake("*@5=GPU_IS_LOST", 0);
    int done = -1;
    assert_int_equal(pfi_journal_restore(&j, b, &done, &e), PFI_ELOST);
    assert_int_equal(done, 0);
    if (!strstr(e.msg, "could not be looked up: GPU 5: nvmlDeviceGetHandleByIndex_v2: GPU is lost") ||
        strstr(e.msg, "not on this node"))
        fail_msg("restore of a lost GPU: %s", e.msg);
    close_b(b);
    rmdir(dir);
}

static void test_lost_at_open(void **state)
{
    pfi_backend *b = open_fake("nvmlDeviceGetHandleByIndex_v2@4=GPU_IS_LOST", 0);
    pfi_err e = {0};
    int n = 0;
    assert_int_equal(pfi_hw_count(b, &n, &e), PFI_OK);
    assert_true(n >= 6); /* still counted, so indices match nvidia-smi */
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, 4, &d, &e), PFI_ELOST);
    assert_non_null(strstr(e.msg, "nvmlDeviceGetHandleByIndex_v2"));
    assert_int_equal(pfi_hw_info(b, 5, &d, &e), PFI_OK);
    close_b(b);
}

static void test_unsupported_fields(void **state)
{
    pfi_backend *b = open_fake("nvmlDeviceGetTotalEnergyConsumption=NOT_SUPPORTED,"
                               "nvmlDeviceGetFieldValues=NOT_SUPPORTED,"
                               "nvmlGpmQueryDeviceSupport=NOT_SUPPORTED,"
                               "nvmlDeviceGetTemperature@0=NO_PERMISSION,"
                               "nvmlDeviceGetEnforcedPowerLimit=FUNCTION_NOT_FOUND",
                               0);
    pfi_err e = {0};
    pfi_sample s;
    assert_int_equal(pfi_hw_sample(b, 0, &s, &e), PFI_OK);
    nap(0.12);
    assert_int_equal(pfi_hw_sample(b, 0, &s, &e), PFI_OK);
    uint32_t gone = PFI_F_ENERGY | PFI_F_POWER_INST | PFI_F_MEM_POWER | windowed | PFI_F_TEMP;
    assert_int_equal(s.have & gone, 0);
    assert_true(isnan(s.energy_j) && isnan(s.power_inst_w) && isnan(s.mem_power_w));
    assert_true(isnan(s.sm_active) && isnan(s.temp_c) && isnan(s.enforced_w));
    assert_true(s.have & PFI_F_POWER);
    assert_true(s.have & PFI_F_LIMIT);
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, 0, &d, &e), PFI_OK);
    assert_true(isnan(d.enforced_w));
    assert_true(d.limit_w > 0);
    /* A GPU without GPM (pre-Hopper) reports the same way. */
    close_b(b);
    setenv("PFI_FAKENVML_GPM", "0", 1);
    b = open_fake(NULL, 0);
    assert_int_equal(pfi_hw_sample(b, 1, &s, &e), PFI_OK);
    nap(0.12);
    assert_int_equal(pfi_hw_sample(b, 1, &s, &e), PFI_OK);
    assert_int_equal(s.have & (PFI_F_SM_ACTIVE | PFI_F_TENSOR | PFI_F_PCIE), 0);
    /* NVLink then comes from the cumulative field counters. */
    assert_true(s.have & PFI_F_NVLINK);
    assert_true(s.nvlink_tx_mibs >= 0);
    close_b(b);
}

/* A GPU whose limit constraints cannot be read (NOT_SUPPORTED: NAN min and max) is still set
 * to what is asked, and the driver alone judges it: the unknown bounds were taken as clamps,
 * every set (a restore too) went out as 9.2e15 W and was refused. */
static void test_no_constraints(void **state)
{
    pfi_backend *b = open_fake("nvmlDeviceGetPowerManagementLimitConstraints@2=NOT_SUPPORTED", 0);
    pfi_err e = {0};
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, 2, &d, &e), PFI_OK);
    assert_true(isnan(d.min_limit_w) && isnan(d.max_limit_w));
    /* Why, for a caller that refuses the GPU for it (pfi sweep). */
    if (!strstr(d.unread, "nvmlDeviceGetPowerManagementLimitConstraints: Not Supported") ||
        !strstr(d.unread, "NVML_ERROR_NOT_SUPPORTED"))
        fail_msg("unread: '%s'", d.unread);
    double enf = 0;
    if (pfi_hw_set_limit(b, 2, 500, &enf, &e) != PFI_OK)
        fail_msg("set 500 W with unknown constraints: %s", e.msg);
    assert_int_equal(pfi_hw_info(b, 2, &d, &e), PFI_OK);
    assert_true(fabs(d.limit_w - 500) < 0.001 && fabs(enf - 500) < 0.5);
    assert_int_equal(pfi_hw_set_limit(b, 2, 700, NULL, &e), PFI_OK);
    assert_int_equal(pfi_hw_info(b, 2, &d, &e), PFI_OK);
    assert_true(fabs(d.limit_w - 700) < 0.001);
    /* The driver still refuses what is outside its own range. */
    assert_int_equal(pfi_hw_set_limit(b, 2, 5000, NULL, &e), PFI_ERANGE);
    assert_non_null(strstr(e.msg, "NVML_ERROR_INVALID_ARGUMENT"));
    close_b(b);
}

/* GPM and field values are secondary: their failures (other than a lost GPU) leave the
 * primary readings intact and those fields missing. */
static void test_secondary_errors(void **state)
{
    pfi_backend *b = open_fake("nvmlGpmSampleGet@0=INSUFFICIENT_RESOURCES,"
                               "nvmlDeviceGetFieldValues@0=UNKNOWN,"
                               "nvmlGpmSampleGet@1=GPU_IS_LOST;after=1",
                               0);
    pfi_err e = {0};
    pfi_sample s;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(pfi_hw_sample(b, 0, &s, &e), PFI_OK);
        nap(0.12);
    }
    assert_int_equal(s.have & (windowed | PFI_F_POWER_INST | PFI_F_MEM_POWER), 0);
    assert_true(s.have & PFI_F_POWER);
    assert_true(s.have & PFI_F_SM_CLOCK);
    assert_int_equal(pfi_hw_sample(b, 1, &s, &e), PFI_OK);
    nap(0.12); /* a shorter window would not take a new GPM sample */
    assert_int_equal(pfi_hw_sample(b, 1, &s, &e), PFI_ELOST);
    assert_non_null(strstr(e.msg, "nvmlGpmSampleGet"));
    close_b(b);
}

static void test_reasons_fallback(void **state)
{
    pfi_backend *b = open_fake("nvmlDeviceGetCurrentClocksEventReasons=FUNCTION_NOT_FOUND", 0);
    pfi_err e = {0};
    pfi_sample s;
    assert_int_equal(pfi_hw_sample(b, 0, &s, &e), PFI_OK);
    assert_true(s.have & PFI_F_REASONS);
    close_b(b);
    b = open_fake("nvmlDeviceGetCurrentClocks*=FUNCTION_NOT_FOUND", 0);
    assert_int_equal(pfi_hw_sample(b, 0, &s, &e), PFI_OK);
    assert_false(s.have & PFI_F_REASONS);
    close_b(b);
}

static void test_hard_errors(void **state)
{
    pfi_backend *b = open_fake("nvmlDeviceGetClockInfo@1=INVALID_ARGUMENT,"
                               "nvmlDeviceGetPowerUsage@0=UNKNOWN;count=1,"
                               "nvmlDeviceGetName@3=TIMEOUT",
                               0);
    pfi_err e = {0};
    pfi_sample s;
    assert_int_equal(pfi_hw_sample(b, 1, &s, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "nvmlDeviceGetClockInfo"));
    assert_non_null(strstr(e.msg, "Invalid Argument"));
    /* A transient error: the next call recovers. */
    assert_int_equal(pfi_hw_sample(b, 0, &s, &e), PFI_EIO);
    assert_non_null(strstr(e.msg, "Unknown Error"));
    assert_int_equal(pfi_hw_sample(b, 0, &s, &e), PFI_OK);
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, 3, &d, &e), PFI_ETIMEOUT);
    assert_non_null(strstr(e.msg, "nvmlDeviceGetName: Timeout"));
    close_b(b);
}

/* A transient driver error (UNKNOWN, then fine again) on the call that puts a journaled limit
 * back: the restore tries again and the GPU gets its original limit, journal removed.  Before,
 * one such error left the GPU at the swept cap (a sweep whose levels were all measured ended
 * "failed", limits not restored, until someone ran pfi restore). */
static void test_restore_transient(void **state)
{
    char dir[PATH_MAX], path[PATH_MAX + 16];
    tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/journal", dir);
    /* GPU 2's second limit call fails once: the first lowers it, the second restores it. */
    pfi_backend *b = open_fake("nvmlDeviceSetPowerManagementLimit@2=UNKNOWN;after=1;count=1", 0);
    pfi_err e = {0};
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, 2, &d, &e), PFI_OK);
    double orig = d.limit_w;
    int gpus[] = {1, 2};
    pfi_journal j;
    assert_int_equal(pfi_journal_begin(&j, path, b, gpus, 2, &e), PFI_OK);
    assert_int_equal(pfi_hw_set_limit(b, 2, d.min_limit_w, NULL, &e), PFI_OK);
    int restored = -1;
    int rc = pfi_journal_restore(&j, b, &restored, &e);
    pfi_journal_close(&j);
    if (rc != PFI_OK)
        fail_msg("restore: %s", e.msg);
    assert_int_equal(restored, 2);
    assert_int_equal(pfi_hw_info(b, 2, &d, &e), PFI_OK);
    assert_true(fabs(d.limit_w - orig) < 0.5);
    assert_int_equal(access(path, F_OK), -1);
    close_b(b);
    rmdir(dir);
}

static void test_fault_at_time(void **state)
{
    pfi_backend *b = open_fake("nvmlDeviceGetPowerUsage@0=GPU_IS_LOST;at=0.1,"
                               "nvmlDeviceGetPowerUsage@1=GPU_IS_LOST;at=3600",
                               0);
    pfi_err e = {0};
    pfi_sample s;
    nap(0.15);
    assert_int_equal(pfi_hw_sample(b, 0, &s, &e), PFI_ELOST);
    assert_int_equal(pfi_hw_sample(b, 1, &s, &e), PFI_OK);
    close_b(b);
}

static void test_faults_file(void **state)
{
    const char *dir = getenv("PFI_TEST_TMP");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/pfi-nvml-faults-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "# one rule per line\nnvmlDeviceGetPowerUsage@1=NVML_ERROR_GPU_IS_LOST\n\n"
               "nvmlDeviceGetPowerUsage@0=15;count=1 # as a number\n");
    fclose(f);
    setenv("PFI_FAKENVML_FAULTS_FILE", path, 1);
    pfi_backend *b = open_fake(NULL, 0);
    pfi_err e = {0};
    pfi_sample s;
    assert_int_equal(pfi_hw_sample(b, 1, &s, &e), PFI_ELOST);
    assert_int_equal(pfi_hw_sample(b, 0, &s, &e), PFI_ELOST);
    assert_int_equal(pfi_hw_sample(b, 0, &s, &e), PFI_OK);
    close_b(b);
    unlink(path);
}

typedef struct sampler_arg {
    pfi_backend *b;
    int n, errors;
} sampler_arg;

static void *sampler(void *p)
{
    sampler_arg *a = p;
    for (int k = 0; k < 40; k++)
        for (int i = 0; i < a->n; i++) {
            pfi_sample s;
            pfi_err e = {0};
            if (pfi_hw_sample(a->b, i, &s, &e) != PFI_OK || !(s.have & PFI_F_POWER))
                a->errors++;
        }
    return NULL;
}

/* A background sampler and a thread setting limits share one backend. */
static void test_threads(void **state)
{
    pfi_backend *b = open_fake(NULL, 0);
    sampler_arg a = {b, 0, 0};
    pfi_err e = {0};
    assert_int_equal(pfi_hw_count(b, &a.n, &e), PFI_OK);
    pthread_t th[2];
    sampler_arg a2 = a;
    assert_int_equal(pthread_create(&th[0], NULL, sampler, &a), 0);
    assert_int_equal(pthread_create(&th[1], NULL, sampler, &a2), 0);
    for (int k = 0; k < 20; k++) {
        double enf;
        assert_int_equal(pfi_hw_set_limit(b, 0, k % 2 ? 700 : 400, &enf, &e), PFI_OK);
    }
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
    assert_int_equal(a.errors + a2.errors, 0);
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, 0, &d, &e), PFI_OK);
    assert_true(fabs(d.limit_w - 700) < 0.5);
    close_b(b);
}

/* One process sets a limit through NVML; another, attached to the same simulated node, sees
 * the limit and the power drawn under it. */
static void test_cross_process(void **state)
{
    char tmpl[PATH_MAX];
    tmpdir(tmpl, sizeof tmpl);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/node.state", tmpl);
    setenv("PFI_SIM_STATE", path, 1);
    setenv("PFI_SIM_SPEED", "20", 1);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pfi_backend *b = NULL;
        pfi_err e = {0};
        double enf = 0;
        int ok = pfi_hw_open("nvml", fake_path, 0, &b, &e) == PFI_OK &&
                 pfi_hw_set_limit(b, 6, 400, &enf, &e) == PFI_OK && fabs(enf - 400) < 0.5;
        if (!ok)
            fprintf(stderr, "child: %s\n", e.msg);
        close_b(b);
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    pfi_backend *b = open_fake(NULL, 0);
    pfi_err e = {0};
    pfi_device d;
    assert_int_equal(pfi_hw_info(b, 6, &d, &e), PFI_OK);
    assert_true(fabs(d.limit_w - 400) < 0.5);
    assert_int_equal(pfi_hw_info(b, 5, &d, &e), PFI_OK);
    assert_true(d.limit_w > 400);
    nap(0.2); /* 4 simulated seconds: the 1-s average settles under the cap */
    pfi_sample s;
    assert_int_equal(pfi_hw_sample(b, 6, &s, &e), PFI_OK);
    assert_true(s.power_w <= 400 * 1.03);
    close_b(b);
    unlink(path);
    rmdir(tmpl);
}

int main(void)
{
    find_fake();
    if (access(fake_path, R_OK) != 0) {
        fprintf(stderr, "test_nvml: fake libnvidia-ml not found at %s (build it: make)\n",
                fake_path);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_driver, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_nvml, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_readback_restore, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_root, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oob_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oob_cap_shared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_gpu, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_at_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_constraints, setup, teardown),
        cmocka_unit_test_setup_teardown(test_secondary_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reasons_fallback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hard_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_transient, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_at_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_faults_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cross_process, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
