/* SPDX-License-Identifier: Apache-2.0 */
/* backend_nvml.c: real NVIDIA GPUs through libnvidia-ml.so.1, loaded with dlopen at run time.
 *
 * pfi has no link-time dependency on the driver: every NVML function is looked up with dlsym
 * and typed from hw/nvml/nvml_api.h.  A function the library lacks reads as
 * NVML_ERROR_FUNCTION_NOT_FOUND, so an old driver simply reports those fields missing.
 *
 * Errors.  A reading the device cannot give (NOT_SUPPORTED, NO_PERMISSION on a read, ...) marks
 * that field missing and sampling goes on.  Any other failure of a primary reading (power,
 * clocks, limits, ...) ends the call with a message naming the NVML function and the code (the
 * caller names the GPU); GPU_IS_LOST becomes PFI_ELOST.  Secondary readings (GPM, field values)
 * degrade to missing fields instead, reported once.  Each GPU has its own handle and state, so
 * one lost GPU never stops the others from being read or restored.
 *
 * Rates.  GPM metrics (Hopper+) and the cumulative NVLink counters are differences between two
 * readings: each sample() takes a new reading and reports the window since the previous one.
 * GPM windows shorter than 100 ms are not computed (NVML's advice); the last window is reported
 * again instead.  The first sample of a GPU therefore has no GPM or NVLink fields.
 *
 * Threads: NVML is thread-safe; the per-GPU rate state is guarded by a per-GPU mutex, so a
 * background sampler and a thread setting limits may share one backend. */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/backend_impl.h"
#include "hw/nvml/nvml_api.h"
#include "hw/nvml/nvml_errors.h"
#include "util/clock.h"
#include "util/text.h"

#define NVML_DEFAULT_LIB "libnvidia-ml.so.1"
#define GPM_MIN_WINDOW_S 0.1
/* A GPM window older than this is not repeated: it no longer describes "now". */
#define GPM_REUSE_MAX_S 2.0

#define FN(name) __typeof__(name) *name
typedef struct nvml_fns {
    FN(nvmlInit_v2);
    FN(nvmlShutdown);
    FN(nvmlErrorString);
    FN(nvmlDeviceGetCount_v2);
    FN(nvmlDeviceGetHandleByIndex_v2);
    FN(nvmlDeviceGetName);
    FN(nvmlDeviceGetUUID);
    FN(nvmlDeviceGetPowerUsage);
    FN(nvmlDeviceGetTotalEnergyConsumption);
    FN(nvmlDeviceGetPowerManagementLimit);
    FN(nvmlDeviceGetPowerManagementLimitConstraints);
    FN(nvmlDeviceGetPowerManagementDefaultLimit);
    FN(nvmlDeviceGetEnforcedPowerLimit);
    FN(nvmlDeviceSetPowerManagementLimit);
    FN(nvmlDeviceGetClockInfo);
    FN(nvmlDeviceGetCurrentClocksEventReasons);
    FN(nvmlDeviceGetCurrentClocksThrottleReasons);
    FN(nvmlDeviceGetUtilizationRates);
    FN(nvmlDeviceGetTemperature);
    FN(nvmlDeviceGetMemoryInfo);
    FN(nvmlDeviceGetComputeRunningProcesses_v3);
    FN(nvmlDeviceGetFieldValues);
    FN(nvmlGpmQueryDeviceSupport);
    FN(nvmlGpmSampleAlloc);
    FN(nvmlGpmSampleFree);
    FN(nvmlGpmSampleGet);
    FN(nvmlGpmMetricsGet);
} nvml_fns;
#undef FN

/* Calls an optional function, or reports it missing from this library. */
#define CALL(m, name, ...) \
    ((m)->f.name ? (m)->f.name(__VA_ARGS__) : NVML_ERROR_FUNCTION_NOT_FOUND)

/* The GPM metrics pfi reads, in the order of gpm_vals[]. */
static const unsigned int gpm_ids[] = {
    NVML_GPM_METRIC_SM_UTIL,           NVML_GPM_METRIC_SM_OCCUPANCY,
    NVML_GPM_METRIC_ANY_TENSOR_UTIL,   NVML_GPM_METRIC_DRAM_BW_UTIL,
    NVML_GPM_METRIC_PCIE_TX_PER_SEC,   NVML_GPM_METRIC_PCIE_RX_PER_SEC,
    NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC,
};
#define N_GPM (sizeof gpm_ids / sizeof gpm_ids[0])

typedef struct nvml_gpu {
    nvmlDevice_t h;
    nvmlReturn_t handle_rc; /* why there is no handle; NVML_SUCCESS when there is */
    pthread_mutex_t mu;     /* guards everything below */
    int gpm;                /* -1 not asked yet, 0 unsupported, 1 supported */
    nvmlGpmSample_t gpm_prev, gpm_cur;
    double gpm_prev_t;      /* when gpm_prev was taken; NAN when it holds nothing */
    double gpm_vals[N_GPM];
    unsigned gpm_ok;        /* bit i: gpm_vals[i] is valid */
    double gpm_vals_t;      /* end of the window gpm_vals describe; NAN when none */
    unsigned warned;        /* WARN_* bits: secondary readings already reported failing */
    int nvl_prev_ok;
    double nvl_prev_t;
    unsigned long long nvl_prev_tx, nvl_prev_rx; /* KiB */
    nvmlGpmMetricsGet_t mg; /* large (NVML's layout); kept here rather than on the stack */
} nvml_gpu;

typedef struct nvml_impl {
    void *dl;
    char path[PATH_MAX];
    nvml_fns f;
    int n;
    nvml_gpu *gpu; /* n entries */
    int simulated; /* the library is the project's fake libnvidia-ml (it says so) */
} nvml_impl;

/* "nvmlDeviceGetPowerUsage: GPU is lost (NVML_ERROR_GPU_IS_LOST = 15); check dmesg...".
 * Callers put the GPU in front ("GPU 2: " in cmd_gpus and monitor, "setting GPU 2 to 500 W: "
 * in a sweep), so it is not here. */
static int nvml_fail(const nvml_impl *m, pfi_err *err, const char *call, nvmlReturn_t r)
{
    const char *text = NULL;
    if (m && m->f.nvmlErrorString)
        text = m->f.nvmlErrorString(r);
    if (!text || !*text)
        text = pfi_nvml_return_text(r);
    const char *hint = pfi_nvml_return_hint(r);
    /* The table's hint is a setter's ("needs root"); a read refused is the device files'
     * permissions (a container or cgroup without /dev/nvidia*), not a want of root. */
    if (r == NVML_ERROR_NO_PERMISSION && strncmp(call, "nvmlDeviceSet", 13) != 0)
        hint = "this user cannot read the GPUs: check the permissions of /dev/nvidiactl and "
               "/dev/nvidia*, or the container's access to them";
    return pfi_err_set(err, pfi_nvml_code(r), "%s: %s (%s = %d)%s%s", call, text,
                       pfi_nvml_return_name(r), (int)r, *hint ? "; " : "", hint);
}

/* ---- open / close ---- */

static int load_fns(nvml_impl *m)
{
    void *dl = m->dl;
#define LOAD(name) m->f.name = (__typeof__(m->f.name))dlsym(dl, #name)
    LOAD(nvmlInit_v2);
    LOAD(nvmlShutdown);
    LOAD(nvmlErrorString);
    LOAD(nvmlDeviceGetCount_v2);
    LOAD(nvmlDeviceGetHandleByIndex_v2);
    LOAD(nvmlDeviceGetName);
    LOAD(nvmlDeviceGetUUID);
    LOAD(nvmlDeviceGetPowerUsage);
    LOAD(nvmlDeviceGetTotalEnergyConsumption);
    LOAD(nvmlDeviceGetPowerManagementLimit);
    LOAD(nvmlDeviceGetPowerManagementLimitConstraints);
    LOAD(nvmlDeviceGetPowerManagementDefaultLimit);
    LOAD(nvmlDeviceGetEnforcedPowerLimit);
    LOAD(nvmlDeviceSetPowerManagementLimit);
    LOAD(nvmlDeviceGetClockInfo);
    LOAD(nvmlDeviceGetCurrentClocksEventReasons);
    LOAD(nvmlDeviceGetCurrentClocksThrottleReasons);
    LOAD(nvmlDeviceGetUtilizationRates);
    LOAD(nvmlDeviceGetTemperature);
    LOAD(nvmlDeviceGetMemoryInfo);
    LOAD(nvmlDeviceGetComputeRunningProcesses_v3);
    LOAD(nvmlDeviceGetFieldValues);
    LOAD(nvmlGpmQueryDeviceSupport);
    LOAD(nvmlGpmSampleAlloc);
    LOAD(nvmlGpmSampleFree);
    LOAD(nvmlGpmSampleGet);
    LOAD(nvmlGpmMetricsGet);
#undef LOAD
    /* Without these four nothing else works; the versioned names exist since 2013 drivers. */
    if (!m->f.nvmlInit_v2)
        return 0;
    if (!m->f.nvmlShutdown)
        return 0;
    if (!m->f.nvmlDeviceGetCount_v2)
        return 0;
    return m->f.nvmlDeviceGetHandleByIndex_v2 != NULL;
}

static void free_impl(nvml_impl *m, int inited)
{
    for (int i = 0; m->gpu && i < m->n; i++) {
        nvml_gpu *g = &m->gpu[i];
        if (m->f.nvmlGpmSampleFree) {
            if (g->gpm_prev)
                m->f.nvmlGpmSampleFree(g->gpm_prev);
            if (g->gpm_cur)
                m->f.nvmlGpmSampleFree(g->gpm_cur);
        }
        pthread_mutex_destroy(&g->mu);
    }
    free(m->gpu);
    if (inited)
        m->f.nvmlShutdown();
    if (m->dl)
        dlclose(m->dl);
    free(m);
}

static int nvml_open(pfi_backend *b, const char *arg, pfi_err *err)
{
    const char *path = arg && *arg ? arg : getenv("PFI_NVML_LIBRARY");
    if (!path || !*path)
        path = NVML_DEFAULT_LIB;
    nvml_impl *m = calloc(1, sizeof *m);
    if (!m)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    snprintf(m->path, sizeof m->path, "%s", path);
    dlerror();
    m->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!m->dl) {
        const char *why = dlerror();
        if (!why)
            why = "unknown dlopen error";
        /* dlerror usually starts with the path already; do not say it twice. */
        int named = strncmp(why, path, strlen(path)) == 0;
        pfi_err_set(err, PFI_ENODRIVER, "no NVIDIA driver found (%s%s%s)", named ? "" : path,
                    named ? "" : ": ", why);
        free_impl(m, 0);
        return PFI_ENODRIVER;
    }
    if (!load_fns(m)) {
        pfi_err_set(err, PFI_ENODRIVER,
                    "no usable NVIDIA driver: %s lacks nvmlInit_v2, nvmlShutdown, "
                    "nvmlDeviceGetCount_v2 or nvmlDeviceGetHandleByIndex_v2 (not NVML, or a "
                    "driver older than 2013)",
                    path);
        free_impl(m, 0);
        return PFI_ENODRIVER;
    }
    /* The fake libnvidia-ml (src/fakenvml/) serves the simulator and exports this marker;
     * no NVIDIA library does. */
    m->simulated = dlsym(m->dl, "pfi_fakenvml_simulated") != NULL;
    nvmlReturn_t r = m->f.nvmlInit_v2();
    if (r != NVML_SUCCESS) {
        nvml_fail(m, err, "nvmlInit_v2", r);
        if (err && err->code == PFI_ENODRIVER)
            pfi_err_prefix(err, "no NVIDIA driver found (%s): ", path);
        int rc = pfi_nvml_code(r);
        free_impl(m, 0);
        return rc;
    }
    unsigned int count = 0;
    r = m->f.nvmlDeviceGetCount_v2(&count);
    if (r != NVML_SUCCESS) {
        int rc = nvml_fail(m, err, "nvmlDeviceGetCount_v2", r);
        free_impl(m, 1);
        return rc;
    }
    m->n = count > PFI_MAX_GPUS ? PFI_MAX_GPUS : (int)count;
    m->gpu = calloc(m->n > 0 ? (size_t)m->n : 1, sizeof *m->gpu);
    if (!m->gpu) {
        m->n = 0;
        free_impl(m, 1);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    for (int i = 0; i < m->n; i++) {
        nvml_gpu *g = &m->gpu[i];
        pthread_mutex_init(&g->mu, NULL);
        g->gpm = -1;
        g->gpm_prev_t = NAN;
        g->gpm_vals_t = NAN;
        /* A GPU whose handle cannot be had (lost, or hidden by a cgroup) stays in the count so
         * indices match nvidia-smi; calls on it report why. */
        g->handle_rc = m->f.nvmlDeviceGetHandleByIndex_v2((unsigned)i, &g->h);
    }
    b->impl = m;
    return PFI_OK;
}

static void nvml_close(pfi_backend *b)
{
    if (b->impl)
        free_impl(b->impl, 1);
    b->impl = NULL;
}

static int nvml_count(pfi_backend *b, int *count, pfi_err *err)
{
    *count = ((nvml_impl *)b->impl)->n;
    return PFI_OK;
}

static nvml_gpu *gpu_of(nvml_impl *m, int idx, pfi_err *err)
{
    if (idx < 0 || idx >= m->n) {
        pfi_err_set(err, PFI_ENOENT, "no GPU %d (this node has %d)", idx, m->n);
        return NULL;
    }
    nvml_gpu *g = &m->gpu[idx];
    if (g->handle_rc != NVML_SUCCESS) {
        nvml_fail(m, err, "nvmlDeviceGetHandleByIndex_v2", g->handle_rc);
        return NULL;
    }
    return g;
}

/* ---- reading ----
 * A reading either succeeds (1), is unavailable (0, field stays missing), or fails: then the
 * first failure is kept in *err and every later reading is skipped. */
typedef struct rd {
    const nvml_impl *m;
    int idx;
    pfi_err *err;
    int rc;
} rd;

/* CALL, skipped once the sample or info has failed: a lost GPU can make every call slow. */
#define RCALL(c, name, ...) \
    ((c)->rc != PFI_OK ? NVML_ERROR_UNKNOWN : CALL((c)->m, name, __VA_ARGS__))

static int got(rd *c, const char *call, nvmlReturn_t r)
{
    if (c->rc != PFI_OK)
        return 0;
    if (r == NVML_SUCCESS)
        return 1;
    if (!pfi_nvml_is_unavailable(r))
        c->rc = nvml_fail(c->m, c->err, call, r);
    return 0;
}

/* GPM and field values are secondary readings: another GPM client (DCGM, say) or a driver
 * quirk must not cost the power and clock readings of the sample.  Their failures other than
 * a lost GPU mark the fields missing and are reported once per GPU on stderr. */
enum { WARN_GPM = 1u << 0, WARN_FIELDS = 1u << 1, WARN_NVLINK = 1u << 2 };

static int got_secondary(rd *c, nvml_gpu *g, unsigned what, const char *call, nvmlReturn_t r)
{
    if (c->rc != PFI_OK)
        return 0;
    if (r == NVML_SUCCESS)
        return 1;
    if (r == NVML_ERROR_GPU_IS_LOST || pfi_nvml_is_unavailable(r))
        return got(c, call, r);
    if (!(g->warned & what)) {
        pfi_err e = {0};
        nvml_fail(c->m, &e, call, r);
        fprintf(stderr, "pfi: GPU %d: %s; those readings are reported missing\n", c->idx,
                e.msg);
        g->warned |= what;
    }
    return 0;
}

static double mw_to_w(unsigned int mw)
{
    return mw / 1000.0;
}

/* got() for a limit of pfi_device: the first one the device cannot give is noted with the
 * call and the code, so that a caller refusing the GPU for it can say why. */
static int got_limit(rd *c, pfi_device *d, const char *call, nvmlReturn_t r)
{
    if (got(c, call, r))
        return 1;
    if (c->rc == PFI_OK && !d->unread[0]) {
        const char *text = c->m->f.nvmlErrorString ? c->m->f.nvmlErrorString(r) : NULL;
        snprintf(d->unread, sizeof d->unread, "%s: %s (%s = %d)", call,
                 text && *text ? text : pfi_nvml_return_text(r), pfi_nvml_return_name(r),
                 (int)r);
    }
    return 0;
}

static int nvml_info(pfi_backend *b, int idx, pfi_device *d, pfi_err *err)
{
    nvml_impl *m = b->impl;
    nvml_gpu *g = gpu_of(m, idx, err);
    if (!g)
        return err ? err->code : PFI_ENOENT;
    rd c = {m, idx, err, PFI_OK};
    d->index = idx;
    d->min_limit_w = d->max_limit_w = d->default_limit_w = NAN;
    d->limit_w = d->enforced_w = NAN;
    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    /* Text the driver gives is made printable UTF-8 ('?' for what is not): a name with a bad
     * byte was dropped whole from `pfi gpus --json` (exit 0), one with a newline broke the
     * table's one line per GPU. */
    if (got(&c, "nvmlDeviceGetName", RCALL(&c, nvmlDeviceGetName, g->h, buf, sizeof buf))) {
        snprintf(d->name, sizeof d->name, "%s", buf);
        pfi_text_make_printable(d->name);
    }
    char ubuf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    if (got(&c, "nvmlDeviceGetUUID", RCALL(&c, nvmlDeviceGetUUID, g->h, ubuf, sizeof ubuf))) {
        snprintf(d->uuid, sizeof d->uuid, "%s", ubuf);
        pfi_text_make_printable(d->uuid);
    }
    unsigned int lo, hi, v;
    if (got_limit(&c, d, "nvmlDeviceGetPowerManagementLimitConstraints",
                  RCALL(&c, nvmlDeviceGetPowerManagementLimitConstraints, g->h, &lo, &hi))) {
        d->min_limit_w = mw_to_w(lo);
        d->max_limit_w = mw_to_w(hi);
    }
    if (got_limit(&c, d, "nvmlDeviceGetPowerManagementDefaultLimit",
                  RCALL(&c, nvmlDeviceGetPowerManagementDefaultLimit, g->h, &v)))
        d->default_limit_w = mw_to_w(v);
    if (got_limit(&c, d, "nvmlDeviceGetPowerManagementLimit",
                  RCALL(&c, nvmlDeviceGetPowerManagementLimit, g->h, &v)))
        d->limit_w = mw_to_w(v);
    if (got_limit(&c, d, "nvmlDeviceGetEnforcedPowerLimit",
                  RCALL(&c, nvmlDeviceGetEnforcedPowerLimit, g->h, &v)))
        d->enforced_w = mw_to_w(v);
    return c.rc;
}

static void read_reasons(rd *c, nvml_gpu *g, pfi_sample *s)
{
    unsigned long long bits = 0;
    nvmlReturn_t r = RCALL(c, nvmlDeviceGetCurrentClocksEventReasons, g->h, &bits);
    const char *call = "nvmlDeviceGetCurrentClocksEventReasons";
    /* Drivers before 535 only have the older name of the same call. */
    if (r == NVML_ERROR_FUNCTION_NOT_FOUND || r == NVML_ERROR_NOT_SUPPORTED) {
        r = RCALL(c, nvmlDeviceGetCurrentClocksThrottleReasons, g->h, &bits);
        call = "nvmlDeviceGetCurrentClocksThrottleReasons";
    }
    if (got(c, call, r)) {
        s->clock_reasons = bits;
        s->have |= PFI_F_REASONS;
    }
}

static int gpm_usable(const nvml_impl *m)
{
    return m->f.nvmlGpmQueryDeviceSupport && m->f.nvmlGpmSampleAlloc && m->f.nvmlGpmSampleFree &&
           m->f.nvmlGpmSampleGet && m->f.nvmlGpmMetricsGet;
}

static void gpm_store(nvml_gpu *g, pfi_sample *s)
{
    double *v = g->gpm_vals;
    unsigned ok = g->gpm_ok;
    double *frac[] = {&s->sm_active, &s->sm_occupancy, &s->tensor_active, &s->dram_active};
    const uint32_t fbit[] = {PFI_F_SM_ACTIVE, PFI_F_SM_OCCUPANCY, PFI_F_TENSOR, PFI_F_DRAM};
    for (int i = 0; i < 4; i++)
        if (ok & (1u << i)) {
            *frac[i] = v[i] / 100.0;
            s->have |= fbit[i];
        }
    if ((ok & 0x30u) == 0x30u) {
        s->pcie_tx_mibs = v[4];
        s->pcie_rx_mibs = v[5];
        s->have |= PFI_F_PCIE;
    }
    if ((ok & 0xC0u) == 0xC0u) {
        s->nvlink_tx_mibs = v[6];
        s->nvlink_rx_mibs = v[7];
        s->have |= PFI_F_NVLINK;
    }
}

/* GPM: a new device sample each call; metrics over the window since the previous one. */
static void read_gpm(rd *c, nvml_gpu *g, pfi_sample *s)
{
    const nvml_impl *m = c->m;
    if (c->rc != PFI_OK)
        return;
    if (g->gpm < 0) {
        if (!gpm_usable(m)) {
            g->gpm = 0;
            return;
        }
        nvmlGpmSupport_t sup = {.version = NVML_GPM_SUPPORT_VERSION};
        if (!got_secondary(c, g, WARN_GPM, "nvmlGpmQueryDeviceSupport",
                           m->f.nvmlGpmQueryDeviceSupport(g->h, &sup))) {
            if (c->rc == PFI_OK)
                g->gpm = 0;
            return;
        }
        g->gpm = sup.isSupportedDevice ? 1 : 0;
    }
    if (g->gpm != 1)
        return;
    if (!g->gpm_prev && !got_secondary(c, g, WARN_GPM, "nvmlGpmSampleAlloc",
                                       m->f.nvmlGpmSampleAlloc(&g->gpm_prev)))
        return;
    if (!g->gpm_cur && !got_secondary(c, g, WARN_GPM, "nvmlGpmSampleAlloc",
                                      m->f.nvmlGpmSampleAlloc(&g->gpm_cur)))
        return;
    double now = pfi_clock_mono();
    if (!isnan(g->gpm_prev_t) && now - g->gpm_prev_t < GPM_MIN_WINDOW_S) {
        if (!isnan(g->gpm_vals_t) && now - g->gpm_vals_t < GPM_REUSE_MAX_S)
            gpm_store(g, s);
        return;
    }
    if (!got_secondary(c, g, WARN_GPM, "nvmlGpmSampleGet",
                       m->f.nvmlGpmSampleGet(g->h, g->gpm_cur))) {
        g->gpm_prev_t = NAN; /* the next window must start from a fresh sample */
        return;
    }
    if (!isnan(g->gpm_prev_t)) {
        nvmlGpmMetricsGet_t *mg = &g->mg;
        memset(mg, 0, sizeof *mg);
        mg->version = NVML_GPM_METRICS_GET_VERSION;
        mg->numMetrics = N_GPM;
        mg->sample1 = g->gpm_prev;
        mg->sample2 = g->gpm_cur;
        for (size_t i = 0; i < N_GPM; i++)
            mg->metrics[i].metricId = gpm_ids[i];
        if (got_secondary(c, g, WARN_GPM, "nvmlGpmMetricsGet", m->f.nvmlGpmMetricsGet(mg))) {
            g->gpm_ok = 0;
            for (size_t i = 0; i < N_GPM; i++) {
                const nvmlGpmMetric_t *mt = &mg->metrics[i];
                /* The driver answers each metric on its own; a metric it cannot give is
                 * missing, not a failure of the sample. */
                if (mt->nvmlReturn == NVML_SUCCESS && mt->metricId == gpm_ids[i] &&
                    isfinite(mt->value)) {
                    g->gpm_vals[i] = mt->value;
                    g->gpm_ok |= 1u << i;
                }
            }
            g->gpm_vals_t = now;
            gpm_store(g, s);
        }
    }
    nvmlGpmSample_t t = g->gpm_prev;
    g->gpm_prev = g->gpm_cur;
    g->gpm_cur = t;
    g->gpm_prev_t = now;
}

static int field_value(const nvmlFieldValue_t *f, double *out)
{
    if (f->nvmlReturn != NVML_SUCCESS)
        return 0;
    switch (f->valueType) {
    case NVML_VALUE_TYPE_DOUBLE: *out = f->value.dVal; break;
    case NVML_VALUE_TYPE_UNSIGNED_INT: *out = f->value.uiVal; break;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: *out = (double)f->value.ulVal; break;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: *out = (double)f->value.ullVal; break;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: *out = (double)f->value.sllVal; break;
    case NVML_VALUE_TYPE_SIGNED_INT: *out = f->value.siVal; break;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: *out = f->value.usVal; break;
    default: return 0;
    }
    return isfinite(*out);
}

/* Instant power and memory power, in one driver call. */
static void read_power_fields(rd *c, nvml_gpu *g, pfi_sample *s)
{
    nvmlFieldValue_t fv[2];
    memset(fv, 0, sizeof fv);
    fv[0].fieldId = NVML_FI_DEV_POWER_INSTANT;
    fv[0].scopeId = NVML_POWER_SCOPE_GPU;
    fv[1].fieldId = NVML_FI_DEV_POWER_AVERAGE;
    fv[1].scopeId = NVML_POWER_SCOPE_MEMORY;
    if (!got_secondary(c, g, WARN_FIELDS, "nvmlDeviceGetFieldValues (power fields)",
                       RCALL(c, nvmlDeviceGetFieldValues, g->h, 2, fv)))
        return;
    double v;
    if (field_value(&fv[0], &v)) {
        s->power_inst_w = v / 1000.0;
        s->have |= PFI_F_POWER_INST;
    }
    if (field_value(&fv[1], &v)) {
        s->mem_power_w = v / 1000.0;
        s->have |= PFI_F_MEM_POWER;
    }
}

/* NVLink rates from the cumulative counters, where GPM gave none.  A call of its own, so a
 * driver that rejects the NVLink fields (no NVLink, another scope convention) costs only them. */
static void read_nvlink_counters(rd *c, nvml_gpu *g, pfi_sample *s)
{
    if (s->have & PFI_F_NVLINK)
        return;
    nvmlFieldValue_t fv[2];
    memset(fv, 0, sizeof fv);
    fv[0].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
    fv[0].scopeId = UINT_MAX; /* all links together */
    fv[1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
    fv[1].scopeId = UINT_MAX;
    double tx, rx;
    if (!got_secondary(c, g, WARN_NVLINK, "nvmlDeviceGetFieldValues (NVLink counters)",
                       RCALL(c, nvmlDeviceGetFieldValues, g->h, 2, fv)) ||
        !field_value(&fv[0], &tx) || !field_value(&fv[1], &rx)) {
        g->nvl_prev_ok = 0;
        return;
    }
    double now = pfi_clock_mono();
    unsigned long long ctx = (unsigned long long)tx, crx = (unsigned long long)rx;
    double dt = now - g->nvl_prev_t;
    /* A counter that went backwards (driver reload) starts a new window. */
    if (g->nvl_prev_ok && dt > 0 && ctx >= g->nvl_prev_tx && crx >= g->nvl_prev_rx) {
        s->nvlink_tx_mibs = (double)(ctx - g->nvl_prev_tx) / 1024.0 / dt;
        s->nvlink_rx_mibs = (double)(crx - g->nvl_prev_rx) / 1024.0 / dt;
        s->have |= PFI_F_NVLINK;
    }
    g->nvl_prev_ok = 1;
    g->nvl_prev_t = now;
    g->nvl_prev_tx = ctx;
    g->nvl_prev_rx = crx;
}

static int nvml_sample(pfi_backend *b, int idx, pfi_sample *s, pfi_err *err)
{
    nvml_impl *m = b->impl;
    nvml_gpu *g = gpu_of(m, idx, err);
    if (!g)
        return err ? err->code : PFI_ENOENT;
    rd c = {m, idx, err, PFI_OK};
    pthread_mutex_lock(&g->mu);
    s->t_s = pfi_clock_mono();
    unsigned int u, u2;
    unsigned long long ull;
    if (got(&c, "nvmlDeviceGetPowerUsage", RCALL(&c, nvmlDeviceGetPowerUsage, g->h, &u))) {
        s->power_w = mw_to_w(u);
        s->have |= PFI_F_POWER;
    }
    if (got(&c, "nvmlDeviceGetTotalEnergyConsumption",
            RCALL(&c, nvmlDeviceGetTotalEnergyConsumption, g->h, &ull))) {
        s->energy_j = ull / 1000.0;
        s->have |= PFI_F_ENERGY;
    }
    if (got(&c, "nvmlDeviceGetClockInfo",
            RCALL(&c, nvmlDeviceGetClockInfo, g->h, NVML_CLOCK_SM, &u))) {
        s->sm_clock_mhz = u;
        s->have |= PFI_F_SM_CLOCK;
    }
    if (got(&c, "nvmlDeviceGetClockInfo",
            RCALL(&c, nvmlDeviceGetClockInfo, g->h, NVML_CLOCK_MEM, &u))) {
        s->mem_clock_mhz = u;
        s->have |= PFI_F_MEM_CLOCK;
    }
    read_reasons(&c, g, s);
    nvmlUtilization_t ut;
    if (got(&c, "nvmlDeviceGetUtilizationRates",
            RCALL(&c, nvmlDeviceGetUtilizationRates, g->h, &ut))) {
        s->gpu_util = ut.gpu / 100.0;
        s->have |= PFI_F_GPU_UTIL;
    }
    if (got(&c, "nvmlDeviceGetTemperature",
            RCALL(&c, nvmlDeviceGetTemperature, g->h, NVML_TEMPERATURE_GPU, &u))) {
        s->temp_c = u;
        s->have |= PFI_F_TEMP;
    }
    nvmlMemory_t mem;
    if (got(&c, "nvmlDeviceGetMemoryInfo", RCALL(&c, nvmlDeviceGetMemoryInfo, g->h, &mem))) {
        s->mem_used_mib = mem.used / (1024.0 * 1024.0);
        s->have |= PFI_F_MEM_USED;
    }
    if (got(&c, "nvmlDeviceGetPowerManagementLimit",
            RCALL(&c, nvmlDeviceGetPowerManagementLimit, g->h, &u))) {
        s->limit_w = mw_to_w(u);
        s->have |= PFI_F_LIMIT;
        /* enforced_w stays NAN (missing) when only the in-band limit can be read. */
        if (got(&c, "nvmlDeviceGetEnforcedPowerLimit",
                RCALL(&c, nvmlDeviceGetEnforcedPowerLimit, g->h, &u2)))
            s->enforced_w = mw_to_w(u2);
    }
    read_gpm(&c, g, s);
    read_power_fields(&c, g, s);
    read_nvlink_counters(&c, g, s);
    pthread_mutex_unlock(&g->mu);
    return c.rc;
}

static int nvml_set_limit(pfi_backend *b, int idx, double watts, pfi_err *err)
{
    /* hw.c refuses first; this guards any path that reaches the ops table directly. */
    if (b->read_only)
        return pfi_err_set(err, PFI_EPERM,
                           "read-only mode: refusing to set GPU %d's power limit to %.0f W", idx,
                           watts);
    nvml_impl *m = b->impl;
    nvml_gpu *g = gpu_of(m, idx, err);
    if (!g)
        return err ? err->code : PFI_ENOENT;
    if (!isfinite(watts) || watts <= 0 || watts > 100000)
        return pfi_err_set(err, PFI_ERANGE, "power limit %g W is not a valid limit", watts);
    /* Down, as pfi_hw_cap_mw rounds (hw.c passes whole milliwatts): never above what was asked. */
    unsigned int mw = (unsigned int)floor(watts * 1000.0 + 1e-6);
    nvmlReturn_t r = CALL(m, nvmlDeviceSetPowerManagementLimit, g->h, mw);
    if (r == NVML_SUCCESS)
        return PFI_OK;
    /* INVALID_ARGUMENT is NVML's answer for a limit outside the device's constraints. */
    int rc = r == NVML_ERROR_INVALID_ARGUMENT ? PFI_ERANGE : pfi_nvml_code(r);
    /* The caller names the GPU and the limit, as for every other call here: said here too, a
     * sweep's message read "setting GPU 5 to 560 W: setting GPU 5's power limit to 560 W". */
    nvml_fail(m, err, "nvmlDeviceSetPowerManagementLimit", r);
    if (err)
        err->code = rc;
    return rc;
}

static int nvml_processes(pfi_backend *b, int idx, pfi_gpu_proc *out, int cap, int *n,
                          pfi_err *err)
{
    nvml_impl *m = b->impl;
    if (idx < 0 || idx >= m->n)
        return pfi_err_set(err, PFI_ENOENT, "no GPU %d (this node has %d)", idx, m->n);
    nvml_gpu *g = &m->gpu[idx];
    if (g->handle_rc != NVML_SUCCESS)
        return nvml_fail(m, err, "nvmlDeviceGetHandleByIndex_v2", g->handle_rc);
    nvmlProcessInfo_t info[PFI_MAX_GPU_PROCS];
    unsigned int count = PFI_MAX_GPU_PROCS;
    nvmlReturn_t r = CALL(m, nvmlDeviceGetComputeRunningProcesses_v3, g->h, &count, info);
    if (r != NVML_SUCCESS) /* more than PFI_MAX_GPU_PROCS processes included */
        return nvml_fail(m, err, "nvmlDeviceGetComputeRunningProcesses_v3", r);
    for (unsigned int i = 0; i < count && i < PFI_MAX_GPU_PROCS; i++) {
        if ((int)i < cap)
            out[i] = (pfi_gpu_proc){(long)info[i].pid,
                                    info[i].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE
                                        ? NAN
                                        : (double)info[i].usedGpuMemory / 1048576.0};
        (*n)++;
    }
    return PFI_OK;
}

static int nvml_simulated(pfi_backend *b)
{
    const nvml_impl *m = b->impl;
    return m && m->simulated;
}

const pfi_backend_ops pfi_backend_nvml_ops = {
    .name = "nvml",
    .open = nvml_open,
    .close = nvml_close,
    .device_count = nvml_count,
    .device_info = nvml_info,
    .sample = nvml_sample,
    .set_limit = nvml_set_limit,
    .now = NULL,
    .sleep = NULL,
    .simulated = nvml_simulated,
    .processes = nvml_processes,
};
