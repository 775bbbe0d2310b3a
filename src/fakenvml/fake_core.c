/* SPDX-License-Identifier: Apache-2.0 */
/* fake_core.c: initialization, locking, the clock and the simulator samples behind every
 * call of the fake libnvidia-ml. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fakenvml/fake.h"
#include "hw/backend_impl.h"
#include "hw/backend_sim.h"
#include "hw/nvml/nvml_errors.h"
#include "util/clock.h"

fake_lib pfi_fake;
static pthread_mutex_t lib_mu = PTHREAD_MUTEX_INITIALIZER;

/* Calls closer together than this read the same simulator sample, as NVML itself caches. */
#define FAKE_CACHE_S 0.005

nvmlReturn_t fake_code(int code)
{
    switch (code) {
    case PFI_OK: return NVML_SUCCESS;
    case PFI_ELOST: return NVML_ERROR_GPU_IS_LOST;
    case PFI_EPERM: return NVML_ERROR_NO_PERMISSION;
    case PFI_EINVAL:
    case PFI_ERANGE: return NVML_ERROR_INVALID_ARGUMENT;
    case PFI_ENOTSUP: return NVML_ERROR_NOT_SUPPORTED;
    case PFI_ENOENT: return NVML_ERROR_NOT_FOUND;
    case PFI_ENOMEM: return NVML_ERROR_MEMORY;
    case PFI_ETIMEOUT: return NVML_ERROR_TIMEOUT;
    case PFI_EBUSY: return NVML_ERROR_IN_USE;
    default: return NVML_ERROR_UNKNOWN;
    }
}

nvmlReturn_t fake_begin(const char *fn, int gpu_hint)
{
    pthread_mutex_lock(&lib_mu);
    if (pfi_fake.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    return fake_fault(fn, gpu_hint);
}

nvmlReturn_t fake_begin_dev(const char *fn, nvmlDevice_t dev, fake_gpu **g)
{
    *g = NULL;
    pthread_mutex_lock(&lib_mu);
    if (pfi_fake.refs <= 0)
        return NVML_ERROR_UNINITIALIZED;
    fake_gpu *found = NULL;
    for (int i = 0; i < pfi_fake.n; i++)
        if (dev == &pfi_fake.gpu[i].dev)
            found = &pfi_fake.gpu[i];
    if (!found)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = fake_fault(fn, found->dev.index);
    if (r == NVML_SUCCESS)
        *g = found;
    return r;
}

nvmlReturn_t fake_end(nvmlReturn_t r)
{
    pthread_mutex_unlock(&lib_mu);
    return r;
}

/* Without a shared state the simulator runs in virtual time; the fake moves that clock with
 * real time, so a process sees its GPUs live as real ones would. */
static void sync_clock(void)
{
    if (!pfi_backend_sim_virtual(pfi_fake.sim))
        return;
    double lag = (pfi_clock_mono() - pfi_fake.t0_real) - pfi_hw_now(pfi_fake.sim);
    if (lag > 0)
        pfi_hw_sleep(pfi_fake.sim, lag);
}

static unsigned rates_of(const pfi_sample *s, double v[FAKE_NRATES])
{
    unsigned have = 0;
    const struct {
        uint32_t bit;
        double val;
        int k;
    } m[] = {
        {PFI_F_SM_ACTIVE, s->sm_active, FAKE_SM},
        {PFI_F_SM_OCCUPANCY, s->sm_occupancy, FAKE_OCC},
        {PFI_F_TENSOR, s->tensor_active, FAKE_TENSOR},
        {PFI_F_DRAM, s->dram_active, FAKE_DRAM},
        {PFI_F_PCIE, s->pcie_tx_mibs, FAKE_PCIE_TX},
        {PFI_F_PCIE, s->pcie_rx_mibs, FAKE_PCIE_RX},
        {PFI_F_NVLINK, s->nvlink_tx_mibs, FAKE_NVL_TX},
        {PFI_F_NVLINK, s->nvlink_rx_mibs, FAKE_NVL_RX},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if ((s->have & m[i].bit) && isfinite(m[i].val)) {
            v[m[i].k] = m[i].val;
            have |= 1u << m[i].k;
        }
    return have;
}

const pfi_sample *fake_now(fake_gpu *g, nvmlReturn_t *r)
{
    double real = pfi_clock_mono();
    if (g->have_cur && real - g->cur_real < FAKE_CACHE_S)
        return &g->cur;
    sync_clock();
    pfi_sample s;
    pfi_err e = {0};
    int rc = pfi_hw_sample(pfi_fake.sim, g->dev.index, &s, &e);
    if (rc != PFI_OK) {
        *r = fake_code(rc);
        return NULL;
    }
    double t = isfinite(s.t_s) ? s.t_s : pfi_hw_now(pfi_fake.sim);
    double v[FAKE_NRATES] = {0};
    unsigned have = rates_of(&s, v);
    if (!g->have_cur) {
        g->acc_have = have;
    } else if (t > g->int_t) {
        /* Trapezoids between successive samples: the GPM metrics and NVLink counters of the
         * fake are these integrals' differences. */
        double prev[FAKE_NRATES] = {0};
        unsigned phave = rates_of(&g->cur, prev);
        g->acc_have &= have & phave;
        for (int k = 0; k < FAKE_NRATES; k++)
            if (g->acc_have & (1u << k))
                g->acc[k] += 0.5 * (prev[k] + v[k]) * (t - g->int_t);
    }
    g->int_t = t > g->int_t || !g->have_cur ? t : g->int_t;
    g->cur = s;
    g->cur_real = real;
    g->have_cur = 1;
    return &g->cur;
}

nvmlReturn_t fake_device(fake_gpu *g, pfi_device *d)
{
    pfi_err e = {0};
    int rc = pfi_hw_info(pfi_fake.sim, g->dev.index, d, &e);
    return fake_code(rc);
}

static int hopper_or_newer(const char *model)
{
    return model[0] == 'H' || model[0] == 'h' || model[0] == 'B' || model[0] == 'b' ||
           model[0] == 'G' || model[0] == 'g';
}

/* Applies the oob-cap rules: the simulated firmware enforces min(in-band, cap).  The in-band
 * limit is the one asked earlier (by this or another process) while the simulator still runs
 * at what it was given for it, else the simulator's own. */
static void apply_caps(void)
{
    for (int i = 0; i < pfi_fake.n; i++) {
        fake_gpu *g = &pfi_fake.gpu[i];
        for (int c = 0; c < pfi_fake.n_caps; c++)
            if (pfi_fake.caps[c].gpu < 0 || pfi_fake.caps[c].gpu == i)
                if (!(g->oob_cap_w <= pfi_fake.caps[c].watts))
                    g->oob_cap_w = pfi_fake.caps[c].watts;
        if (isnan(g->oob_cap_w))
            continue;
        pfi_device d;
        pfi_err e = {0};
        if (pfi_hw_info(pfi_fake.sim, i, &d, &e) != PFI_OK) {
            fprintf(stderr, "fake libnvidia-ml: GPU %d: %s\n", i, e.msg);
            continue;
        }
        double inband = fake_inband_get(g, d.limit_w);
        if (isnan(inband))
            inband = d.limit_w;
        double w = inband > g->oob_cap_w ? g->oob_cap_w : inband;
        if (w < d.min_limit_w)
            w = d.min_limit_w;
        if (lround(w * 1000.0) != lround(d.limit_w * 1000.0) &&
            pfi_hw_set_limit(pfi_fake.sim, i, w, NULL, &e) != PFI_OK) {
            fprintf(stderr, "fake libnvidia-ml: GPU %d: cannot apply oob-cap: %s\n", i, e.msg);
            continue;
        }
        fake_inband_put(g, inband, w);
    }
}

static nvmlReturn_t start(void)
{
    memset(&pfi_fake, 0, sizeof pfi_fake);
    pfi_fake.t0_real = pfi_clock_mono();
    if (fake_faults_load() != 0)
        return NVML_ERROR_UNKNOWN;
    nvmlReturn_t r = fake_fault("nvmlInit_v2", -1);
    if (r != NVML_SUCCESS)
        return r;
    pfi_err e = {0};
    if (pfi_hw_open("sim", getenv("PFI_FAKENVML_SIM"), 0, &pfi_fake.sim, &e) != PFI_OK) {
        fprintf(stderr, "fake libnvidia-ml: cannot start the simulator: %s\n", e.msg);
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    /* The fake plays the driver, which knows nothing of pfi's read-only mode: PFI_READ_ONLY
     * is enforced by the pfi process on its own backend, before NVML is reached. */
    pfi_fake.sim->read_only = 0;
    int n = 0;
    if (pfi_hw_count(pfi_fake.sim, &n, &e) != PFI_OK) {
        fprintf(stderr, "fake libnvidia-ml: %s\n", e.msg);
        pfi_hw_close(pfi_fake.sim);
        pfi_fake.sim = NULL;
        return NVML_ERROR_UNKNOWN;
    }
    pfi_fake.n = n > PFI_MAX_GPUS ? PFI_MAX_GPUS : n;
    for (int i = 0; i < pfi_fake.n; i++) {
        pfi_fake.gpu[i].dev.index = i;
        pfi_fake.gpu[i].oob_cap_w = NAN;
        pfi_fake.gpu[i].inband_w = NAN;
        pfi_fake.gpu[i].run_at_w = NAN;
    }
    /* The node's config never changes after creation, so it is read without the lock
     * (pfi_backend_sim_node takes it itself). */
    pfi_sim_node *node = pfi_backend_sim_node(pfi_fake.sim);
    const pfi_node_config *cfg = node ? pfi_sim_node_config(node) : NULL;
    pfi_fake.mem_total_b = cfg ? cfg->gpu.mem_gib * 1073741824.0 : NAN;
    pfi_fake.gpm = cfg ? hopper_or_newer(cfg->gpu.name) : 0;
    const char *gpm = getenv("PFI_FAKENVML_GPM");
    if (gpm && *gpm)
        pfi_fake.gpm = strcmp(gpm, "0") != 0;
    apply_caps();
    pfi_fake.refs = 1;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void)
{
    pthread_mutex_lock(&lib_mu);
    nvmlReturn_t r;
    if (pfi_fake.refs > 0) {
        r = fake_fault("nvmlInit_v2", -1);
        if (r == NVML_SUCCESS)
            pfi_fake.refs++; /* NVML counts nested inits */
    } else {
        r = start();
    }
    pthread_mutex_unlock(&lib_mu);
    return r;
}

nvmlReturn_t nvmlShutdown(void)
{
    nvmlReturn_t r = fake_begin("nvmlShutdown", -1);
    if (r == NVML_SUCCESS && --pfi_fake.refs == 0) {
        pfi_hw_close(pfi_fake.sim);
        pfi_fake.sim = NULL;
    }
    return fake_end(r);
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    /* Worded as the driver words them, so pfi's messages read the same on real hardware. */
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires reset";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_NO_DATA: return "No data";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient Resources";
    case NVML_ERROR_NOT_READY: return "Not Ready";
    case NVML_ERROR_UNKNOWN: return "Unknown Error";
    default: return pfi_nvml_return_text(result);
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    nvmlReturn_t r = fake_begin("nvmlDeviceGetCount_v2", -1);
    if (r == NVML_SUCCESS) {
        if (!deviceCount)
            r = NVML_ERROR_INVALID_ARGUMENT;
        else
            *deviceCount = (unsigned)pfi_fake.n;
    }
    return fake_end(r);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    int hint = index < PFI_MAX_GPUS ? (int)index : -1;
    nvmlReturn_t r = fake_begin("nvmlDeviceGetHandleByIndex_v2", hint);
    if (r == NVML_SUCCESS) {
        if (!device || index >= (unsigned)pfi_fake.n)
            r = NVML_ERROR_INVALID_ARGUMENT;
        else
            *device = &pfi_fake.gpu[index].dev;
    }
    return fake_end(r);
}

/* Says to whoever loads this library that its GPUs are simulated (hw/backend_nvml.c looks the
 * symbol up; the real libnvidia-ml has no such name). */
extern const int pfi_fakenvml_simulated;
__attribute__((visibility("default"))) const int pfi_fakenvml_simulated = 1;
