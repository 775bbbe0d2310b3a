/* SPDX-License-Identifier: Apache-2.0 */
/* fake_gpm.c: field values and GPU performance monitoring (GPM) in the fake libnvidia-ml.
 *
 * GPM metrics and the cumulative NVLink counters are derived from the same integrals of the
 * simulator's activities (fake_now integrates them between successive readings), so a metric
 * is the mean over the window between two nvmlGpmSampleGet calls, as on real hardware. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fakenvml/fake.h"
#include "util/clock.h"

#define SAMPLE_MAGIC 0x67706d73u /* "gpms" */

static long long wall_us(void)
{
    return (long long)(pfi_clock_wall() * 1e6);
}

static void set_uint(nvmlFieldValue_t *f, double v)
{
    f->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    f->value.uiVal = (unsigned int)lround(v);
    f->nvmlReturn = NVML_SUCCESS;
}

static void set_ull(nvmlFieldValue_t *f, double v)
{
    f->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    f->value.ullVal = (unsigned long long)llround(v);
    f->nvmlReturn = NVML_SUCCESS;
}

static void one_field(fake_gpu *g, const pfi_sample *s, nvmlFieldValue_t *f)
{
    f->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    f->timestamp = wall_us();
    f->latencyUsec = 0;
    switch (f->fieldId) {
    case NVML_FI_DEV_POWER_AVERAGE:
        if (f->scopeId == NVML_POWER_SCOPE_GPU && (s->have & PFI_F_POWER))
            set_uint(f, s->power_w * 1000.0);
        else if (f->scopeId == NVML_POWER_SCOPE_MEMORY && (s->have & PFI_F_MEM_POWER))
            set_uint(f, s->mem_power_w * 1000.0);
        break;
    case NVML_FI_DEV_POWER_INSTANT:
        if (f->scopeId == NVML_POWER_SCOPE_GPU && (s->have & PFI_F_POWER_INST))
            set_uint(f, s->power_inst_w * 1000.0);
        break;
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: {
        int k = f->fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX ? FAKE_NVL_TX : FAKE_NVL_RX;
        /* Only the all-links total is simulated; MiB integrals -> KiB counters. */
        if (f->scopeId == UINT_MAX && (g->acc_have & (1u << k)))
            set_ull(f, g->acc[k] * 1024.0);
        break;
    }
    default:
        break;
    }
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                      nvmlFieldValue_t *values)
{
    fake_gpu *g;
    nvmlReturn_t r = fake_begin_dev("nvmlDeviceGetFieldValues", device, &g);
    const pfi_sample *s = NULL;
    if (r == NVML_SUCCESS && (valuesCount <= 0 || !values))
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS)
        s = fake_now(g, &r);
    if (s)
        for (int i = 0; i < valuesCount; i++)
            one_field(g, s, &values[i]);
    return fake_end(r);
}

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport)
{
    fake_gpu *g;
    nvmlReturn_t r = fake_begin_dev("nvmlGpmQueryDeviceSupport", device, &g);
    if (r == NVML_SUCCESS && !gpmSupport)
        r = NVML_ERROR_INVALID_ARGUMENT;
    else if (r == NVML_SUCCESS && gpmSupport->version != NVML_GPM_SUPPORT_VERSION)
        r = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (r == NVML_SUCCESS)
        gpmSupport->isSupportedDevice = pfi_fake.gpm ? 1 : 0;
    return fake_end(r);
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *gpmSample)
{
    nvmlReturn_t r = fake_begin("nvmlGpmSampleAlloc", -1);
    if (r == NVML_SUCCESS && !gpmSample)
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS) {
        struct nvmlGpmSample_st *s = calloc(1, sizeof *s);
        if (!s) {
            r = NVML_ERROR_MEMORY;
        } else {
            s->magic = SAMPLE_MAGIC;
            s->gpu = -1;
            *gpmSample = s;
        }
    }
    return fake_end(r);
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample)
{
    nvmlReturn_t r = fake_begin("nvmlGpmSampleFree", -1);
    if (r == NVML_SUCCESS && (!gpmSample || gpmSample->magic != SAMPLE_MAGIC))
        r = NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS) {
        gpmSample->magic = 0;
        free(gpmSample);
    }
    return fake_end(r);
}

nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample)
{
    fake_gpu *g;
    nvmlReturn_t r = fake_begin_dev("nvmlGpmSampleGet", device, &g);
    if (r == NVML_SUCCESS && (!gpmSample || gpmSample->magic != SAMPLE_MAGIC))
        r = NVML_ERROR_INVALID_ARGUMENT;
    else if (r == NVML_SUCCESS && !pfi_fake.gpm)
        r = NVML_ERROR_NOT_SUPPORTED;
    if (r == NVML_SUCCESS && fake_now(g, &r)) {
        gpmSample->gpu = g->dev.index;
        gpmSample->t = g->int_t;
        memcpy(gpmSample->acc, g->acc, sizeof g->acc);
        gpmSample->have = g->acc_have;
    }
    return fake_end(r);
}

/* The metric ids served, the integral each is the mean of, and its scale. */
static const struct {
    unsigned int id;
    int k;
    double scale;
    char *name, *unit;
} metric_map[] = {
    {NVML_GPM_METRIC_SM_UTIL, FAKE_SM, 100.0, "SM_UTIL", "%"},
    {NVML_GPM_METRIC_SM_OCCUPANCY, FAKE_OCC, 100.0, "SM_OCCUPANCY", "%"},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, FAKE_TENSOR, 100.0, "ANY_TENSOR_UTIL", "%"},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, FAKE_DRAM, 100.0, "DRAM_BW_UTIL", "%"},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, FAKE_PCIE_TX, 1.0, "PCIE_TX", "MiB/sec"},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, FAKE_PCIE_RX, 1.0, "PCIE_RX", "MiB/sec"},
    {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, FAKE_NVL_TX, 1.0, "NVLINK_TOTAL_TX", "MiB/sec"},
    {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, FAKE_NVL_RX, 1.0, "NVLINK_TOTAL_RX", "MiB/sec"},
};

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *mg)
{
    int gpu = -1;
    if (mg && mg->sample1 && mg->sample1->magic == SAMPLE_MAGIC)
        gpu = mg->sample1->gpu;
    nvmlReturn_t r = fake_begin("nvmlGpmMetricsGet", gpu);
    const struct nvmlGpmSample_st *a = mg ? mg->sample1 : NULL, *b = mg ? mg->sample2 : NULL;
    if (r == NVML_SUCCESS && !mg)
        r = NVML_ERROR_INVALID_ARGUMENT;
    else if (r == NVML_SUCCESS && mg->version != NVML_GPM_METRICS_GET_VERSION)
        r = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    else if (r == NVML_SUCCESS && (mg->numMetrics == 0 || mg->numMetrics > PFI_NVML_GPM_METRICS_CAP))
        r = NVML_ERROR_INVALID_ARGUMENT;
    else if (r == NVML_SUCCESS &&
             (!a || !b || a->magic != SAMPLE_MAGIC || b->magic != SAMPLE_MAGIC || a->gpu < 0 ||
              a->gpu != b->gpu || !(b->t > a->t)))
        r = NVML_ERROR_INVALID_ARGUMENT; /* two samples of one GPU, in time order */
    for (unsigned i = 0; r == NVML_SUCCESS && i < mg->numMetrics; i++) {
        nvmlGpmMetric_t *m = &mg->metrics[i];
        m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        m->value = 0;
        memset(&m->metricInfo, 0, sizeof m->metricInfo);
        for (size_t j = 0; j < sizeof metric_map / sizeof metric_map[0]; j++) {
            if (metric_map[j].id != m->metricId)
                continue;
            int k = metric_map[j].k;
            m->metricInfo.shortName = metric_map[j].name;
            m->metricInfo.unit = metric_map[j].unit;
            if ((a->have & b->have) & (1u << k)) {
                m->value = (b->acc[k] - a->acc[k]) / (b->t - a->t) * metric_map[j].scale;
                m->nvmlReturn = NVML_SUCCESS;
            }
        }
    }
    return fake_end(r);
}
