/* SPDX-License-Identifier: Apache-2.0 */
/* fake_device.c: the per-device NVML queries and the power-limit setter of the fake
 * libnvidia-ml, each answered from the simulator (see fake.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fakenvml/fake.h"

static unsigned int to_mw(double w)
{
    return (unsigned int)lround(w * 1000.0);
}

/* The current sample of g, or NULL with *r set: not supported when the simulator's model
 * lacks the field. */
static const pfi_sample *reading(fake_gpu *g, uint32_t field, nvmlReturn_t *r)
{
    const pfi_sample *s = fake_now(g, r);
    if (s && !(s->have & field)) {
        *r = NVML_ERROR_NOT_SUPPORTED;
        return NULL;
    }
    return s;
}

static nvmlReturn_t copy_text(char *dst, unsigned int length, const char *src)
{
    if (!dst)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (length <= strlen(src))
        return NVML_ERROR_INSUFFICIENT_SIZE;
    snprintf(dst, length, "%s", src);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    fake_gpu *g;
    pfi_device d;
    nvmlReturn_t r = fake_begin_dev("nvmlDeviceGetName", device, &g);
    if (r == NVML_SUCCESS && (r = fake_device(g, &d)) == NVML_SUCCESS)
        r = copy_text(name, length, d.name);
    return fake_end(r);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    fake_gpu *g;
    pfi_device d;
    nvmlReturn_t r = fake_begin_dev("nvmlDeviceGetUUID", device, &g);
    if (r == NVML_SUCCESS && (r = fake_device(g, &d)) == NVML_SUCCESS)
        r = copy_text(uuid, length, d.uuid);
    return fake_end(r);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    fake_gpu *g;
    nvmlReturn_t r = fake_begin_dev("nvmlDeviceGetPowerUsage", device, &g);
    const pfi_sample *s;
    if (r == NVML_SUCCESS && !power)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS && (s = reading(g, PFI_F_POWER, &r)))
        *power = to_mw(s->power_w);
    return fake_end(r);
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy)
{
    fake_gpu *g;
    nvmlReturn_t r = fake_begin_dev("nvmlDeviceGetTotalEnergyConsumption", device, &g);
    const pfi_sample *s;
    if (r == NVML_SUCCESS && !energy)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS && (s = reading(g, PFI_F_ENERGY, &r)))
        *energy = (unsigned long long)llround(s->energy_j * 1000.0);
    return fake_end(r);
}

/* Which limit a getter returns. */
enum { LIM_CURRENT, LIM_DEFAULT, LIM_ENFORCED };

static nvmlReturn_t get_limit(const char *fn, nvmlDevice_t device, int which, unsigned int *out)
{
    fake_gpu *g;
    pfi_device d;
    nvmlReturn_t r = fake_begin_dev(fn, device, &g);
    if (r == NVML_SUCCESS && !out)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS && (r = fake_device(g, &d)) == NVML_SUCCESS) {
        double w = which == LIM_DEFAULT ? d.default_limit_w
                   : which == LIM_ENFORCED ? d.enforced_w
                                           : d.limit_w;
        /* Under an out-of-band cap the in-band limit is what was asked, and the simulator
         * runs at (and enforces) the capped one. */
        double inband = which == LIM_CURRENT ? fake_inband_get(g, d.limit_w) : NAN;
        if (!isnan(inband))
            w = inband;
        if (which == LIM_ENFORCED && !isnan(g->oob_cap_w) && g->oob_cap_w < w)
            w = g->oob_cap_w;
        if (isfinite(w))
            *out = to_mw(w);
        else
            r = NVML_ERROR_NOT_SUPPORTED;
    }
    return fake_end(r);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit)
{
    return get_limit("nvmlDeviceGetPowerManagementLimit", device, LIM_CURRENT, limit);
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                      unsigned int *defaultLimit)
{
    return get_limit("nvmlDeviceGetPowerManagementDefaultLimit", device, LIM_DEFAULT,
                     defaultLimit);
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit)
{
    return get_limit("nvmlDeviceGetEnforcedPowerLimit", device, LIM_ENFORCED, limit);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                          unsigned int *minLimit,
                                                          unsigned int *maxLimit)
{
    fake_gpu *g;
    pfi_device d;
    nvmlReturn_t r = fake_begin_dev("nvmlDeviceGetPowerManagementLimitConstraints", device, &g);
    if (r == NVML_SUCCESS && (!minLimit || !maxLimit))
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS && (r = fake_device(g, &d)) == NVML_SUCCESS) {
        *minLimit = to_mw(d.min_limit_w);
        *maxLimit = to_mw(d.max_limit_w);
    }
    return fake_end(r);
}

nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned int limit)
{
    fake_gpu *g;
    pfi_device d;
    nvmlReturn_t r = fake_begin_dev("nvmlDeviceSetPowerManagementLimit", device, &g);
    if (r == NVML_SUCCESS && (r = fake_device(g, &d)) == NVML_SUCCESS) {
        double w = limit / 1000.0;
        /* The driver's own range check, in mW as it does it. */
        if (limit < to_mw(d.min_limit_w) || limit > to_mw(d.max_limit_w)) {
            r = NVML_ERROR_INVALID_ARGUMENT;
        } else {
            double run_at = !isnan(g->oob_cap_w) && g->oob_cap_w < w ? g->oob_cap_w : w;
            if (run_at < d.min_limit_w)
                run_at = d.min_limit_w;
            pfi_err e = {0};
            r = fake_code(pfi_hw_set_limit(pfi_fake.sim, g->dev.index, run_at, NULL, &e));
            if (r == NVML_SUCCESS)
                fake_inband_put(g, w, run_at);
            g->cur_real = -INFINITY; /* the next reading must see the new limit */
        }
    }
    return fake_end(r);
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                    unsigned int *clock)
{
    fake_gpu *g;
    nvmlReturn_t r = fake_begin_dev("nvmlDeviceGetClockInfo", device, &g);
    const pfi_sample *s;
    if (r == NVML_SUCCESS && !clock)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS) {
        switch (type) {
        case NVML_CLOCK_GRAPHICS:
        case NVML_CLOCK_SM:
            if ((s = reading(g, PFI_F_SM_CLOCK, &r)))
                *clock = (unsigned int)lround(s->sm_clock_mhz);
            break;
        case NVML_CLOCK_MEM:
            if ((s = reading(g, PFI_F_MEM_CLOCK, &r)))
                *clock = (unsigned int)lround(s->mem_clock_mhz);
            break;
        case NVML_CLOCK_VIDEO:
            r = NVML_ERROR_NOT_SUPPORTED;
            break;
        default:
            r = NVML_ERROR_INVALID_ARGUMENT;
        }
    }
    return fake_end(r);
}

static nvmlReturn_t reasons(const char *fn, nvmlDevice_t device, unsigned long long *out)
{
    fake_gpu *g;
    nvmlReturn_t r = fake_begin_dev(fn, device, &g);
    const pfi_sample *s;
    if (r == NVML_SUCCESS && !out)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS && (s = reading(g, PFI_F_REASONS, &r)))
        *out = s->clock_reasons;
    return fake_end(r);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long *clocksEventReasons)
{
    return reasons("nvmlDeviceGetCurrentClocksEventReasons", device, clocksEventReasons);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                       unsigned long long *clocksThrottleReasons)
{
    return reasons("nvmlDeviceGetCurrentClocksThrottleReasons", device, clocksThrottleReasons);
}

static unsigned int pct(double frac)
{
    double p = frac * 100.0;
    return (unsigned int)lround(p < 0 ? 0 : p > 100 ? 100 : p);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    fake_gpu *g;
    nvmlReturn_t r = fake_begin_dev("nvmlDeviceGetUtilizationRates", device, &g);
    const pfi_sample *s;
    if (r == NVML_SUCCESS && !utilization)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS && (s = reading(g, PFI_F_GPU_UTIL, &r))) {
        utilization->gpu = pct(s->gpu_util);
        /* NVML's memory figure is the share of time memory was busy: DRAM activity here. */
        utilization->memory = (s->have & PFI_F_DRAM) ? pct(s->dram_active) : 0;
    }
    return fake_end(r);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int *temp)
{
    fake_gpu *g;
    nvmlReturn_t r = fake_begin_dev("nvmlDeviceGetTemperature", device, &g);
    const pfi_sample *s;
    if (r == NVML_SUCCESS && (!temp || sensorType != NVML_TEMPERATURE_GPU))
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS && (s = reading(g, PFI_F_TEMP, &r)))
        *temp = (unsigned int)lround(s->temp_c);
    return fake_end(r);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    fake_gpu *g;
    nvmlReturn_t r = fake_begin_dev("nvmlDeviceGetMemoryInfo", device, &g);
    const pfi_sample *s;
    if (r == NVML_SUCCESS && !memory)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS && !isfinite(pfi_fake.mem_total_b))
        r = NVML_ERROR_NOT_SUPPORTED;
    if (r == NVML_SUCCESS && (s = reading(g, PFI_F_MEM_USED, &r))) {
        double used = s->mem_used_mib * 1048576.0;
        if (used > pfi_fake.mem_total_b)
            used = pfi_fake.mem_total_b;
        memory->total = (unsigned long long)pfi_fake.mem_total_b;
        memory->used = (unsigned long long)used;
        memory->free = memory->total - memory->used;
    }
    return fake_end(r);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos)
{
    fake_gpu *g;
    nvmlReturn_t r = fake_begin_dev("nvmlDeviceGetComputeRunningProcesses_v3", device, &g);
    if (r == NVML_SUCCESS && !infoCount)
        r = NVML_ERROR_INVALID_ARGUMENT;
    pfi_gpu_proc p[PFI_MAX_GPU_PROCS];
    int n = 0;
    pfi_err e = {0};
    if (r == NVML_SUCCESS &&
        pfi_hw_processes(pfi_fake.sim, g->dev.index, p, PFI_MAX_GPU_PROCS, &n, &e) != PFI_OK)
        r = NVML_ERROR_UNKNOWN;
    if (r == NVML_SUCCESS) {
        if ((unsigned)n > *infoCount || (n > 0 && !infos)) {
            r = NVML_ERROR_INSUFFICIENT_SIZE;
        } else {
            for (int i = 0; i < n; i++)
                infos[i] = (nvmlProcessInfo_t){
                    (unsigned)p[i].pid,
                    isfinite(p[i].used_mib) ? (unsigned long long)(p[i].used_mib * 1048576.0)
                                            : NVML_VALUE_NOT_AVAILABLE,
                    0xFFFFFFFFu, 0xFFFFFFFFu};
        }
        *infoCount = (unsigned)n;
    }
    return fake_end(r);
}
