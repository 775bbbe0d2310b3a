/* SPDX-License-Identifier: Apache-2.0 */
#include "hw/backend_impl.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"

extern const pfi_backend_ops pfi_backend_sim_ops;
extern const pfi_backend_ops pfi_backend_nvml_ops;

static const pfi_backend_ops *const backends[] = {
    &pfi_backend_sim_ops,
    &pfi_backend_nvml_ops,
};

static const pfi_backend_ops *find(const char *name)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}

static int env_read_only(void)
{
    const char *v = getenv("PFI_READ_ONLY");
    return v && *v && strcmp(v, "0") != 0;
}

#define SIM_HINT "; pfi runs on NVIDIA GPUs through NVML: use --backend sim for the simulator"

/* The default backend: the node's NVIDIA GPUs through NVML, or a clear error.  The simulator
 * is never chosen silently: a machine without a driver is told how to ask for it. */
int pfi_hw_open_auto(const char *nvml_lib, int read_only, pfi_backend **out, pfi_err *err)
{
    pfi_backend *b = NULL;
    pfi_err e = {0};
    *out = NULL;
    int rc = pfi_hw_open("nvml", nvml_lib, read_only, &b, &e);
    if (rc != PFI_OK) {
        if (rc == PFI_ENODRIVER && (strncmp(e.msg, "no ", 3) == 0 ||
                                    strncmp(e.msg, "the NVIDIA driver lists", 23) == 0))
            return pfi_err_set(err, rc, "%s" SIM_HINT, e.msg);
        return pfi_err_set(err, rc, "no NVIDIA driver usable: %s" SIM_HINT, e.msg);
    }
    int n = 0;
    if ((rc = pfi_hw_count(b, &n, &e)) != PFI_OK || n < 1) {
        pfi_hw_close(b);
        if (rc != PFI_OK)
            return pfi_err_set(err, rc, "the NVIDIA driver lists no GPU: %s" SIM_HINT, e.msg);
        return pfi_err_set(err, PFI_ENODRIVER, "the NVIDIA driver lists no GPU" SIM_HINT);
    }
    *out = b;
    return PFI_OK;
}

int pfi_hw_open(const char *name, const char *arg, int read_only, pfi_backend **out, pfi_err *err)
{
    *out = NULL;
    if (name && strcmp(name, "auto") == 0)
        return pfi_hw_open_auto(arg, read_only, out, err);
    const pfi_backend_ops *ops = find(name ? name : "sim");
    if (!ops)
        return pfi_err_set(err, PFI_EINVAL, "unknown backend '%s' (known: auto, nvml, sim)",
                           name);
    pfi_backend *b = calloc(1, sizeof *b);
    if (!b)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    b->ops = ops;
    b->read_only = read_only || env_read_only();
    int rc = ops->open(b, arg, err);
    if (rc != PFI_OK) {
        free(b);
        return rc;
    }
    /* A driver that lists no GPU (a container without its devices): every command has nothing
     * to read or set; `pfi gpus` printed an empty table with status 0, `pfi monitor` streamed
     * nothing for ever.  As nvidia-smi's "No devices were found". */
    int n = 0;
    if (strcmp(ops->name, "nvml") == 0 && (rc = pfi_hw_count(b, &n, err)) == PFI_OK && n < 1)
        rc = pfi_err_set(err, PFI_ENODRIVER, "the NVIDIA driver lists no GPU");
    if (rc != PFI_OK) {
        pfi_hw_close(b);
        return rc;
    }
    *out = b;
    return PFI_OK;
}

void pfi_hw_close(pfi_backend *b)
{
    if (!b)
        return;
    b->ops->close(b);
    free(b);
}

const char *pfi_backend_name(const pfi_backend *b)
{
    return b->ops->name;
}

int pfi_backend_read_only(const pfi_backend *b)
{
    return b->read_only;
}

int pfi_hw_count(pfi_backend *b, int *count, pfi_err *err)
{
    return b->ops->device_count(b, count, err);
}

static int check_index(pfi_backend *b, int idx, pfi_err *err)
{
    int n = 0;
    int rc = b->ops->device_count(b, &n, err);
    if (rc != PFI_OK)
        return rc;
    if (idx < 0 || idx >= n)
        return pfi_err_set(err, PFI_ENOENT, "no GPU %d (this node has %d)", idx, n);
    return PFI_OK;
}

int pfi_hw_info(pfi_backend *b, int idx, pfi_device *out, pfi_err *err)
{
    int rc = check_index(b, idx, err);
    if (rc != PFI_OK)
        return rc;
    memset(out, 0, sizeof *out);
    return b->ops->device_info(b, idx, out, err);
}

void pfi_sample_clear(pfi_sample *s)
{
    memset(s, 0, sizeof *s);
    double *nanfields[] = {
        &s->t_s, &s->power_w, &s->power_inst_w, &s->mem_power_w, &s->energy_j, &s->sm_clock_mhz,
        &s->mem_clock_mhz, &s->gpu_util, &s->sm_active, &s->sm_occupancy, &s->tensor_active,
        &s->dram_active, &s->nvlink_tx_mibs, &s->nvlink_rx_mibs, &s->pcie_tx_mibs,
        &s->pcie_rx_mibs, &s->temp_c, &s->mem_used_mib, &s->limit_w, &s->enforced_w,
    };
    for (size_t i = 0; i < sizeof nanfields / sizeof nanfields[0]; i++)
        *nanfields[i] = NAN;
}

int pfi_hw_sample(pfi_backend *b, int idx, pfi_sample *out, pfi_err *err)
{
    int rc = check_index(b, idx, err);
    if (rc != PFI_OK)
        return rc;
    pfi_sample_clear(out);
    return b->ops->sample(b, idx, out, err);
}

static long long mw_saturated(double mw)
{
    if (isnan(mw) || mw > 1e18)
        return LLONG_MAX;
    if (mw < -1e18)
        return LLONG_MIN;
    return (long long)mw;
}

long long pfi_hw_cap_mw(double watts)
{
    return mw_saturated(floor(watts * 1000.0 + 1e-6));
}

long long pfi_hw_held_mw(double watts)
{
    return mw_saturated(ceil(watts * 1000.0 - 1e-6));
}

int pfi_hw_set_limit(pfi_backend *b, int idx, double watts, double *enforced_w, pfi_err *err)
{
    if (b->read_only)
        return pfi_err_set(err, PFI_EPERM,
                           "read-only mode: refusing to set GPU %d's power limit to %.0f W", idx,
                           watts);
    pfi_device d;
    int rc = pfi_hw_info(b, idx, &d, err);
    if (rc != PFI_OK)
        return rc;
    if (!isfinite(watts) || watts < d.min_limit_w - 0.5 || watts > d.max_limit_w + 0.5)
        return pfi_err_set(err, PFI_ERANGE,
                           "power limit %.0f W is outside GPU %d's range %.0f-%.0f W", watts, idx,
                           d.min_limit_w, d.max_limit_w);
    /* What the device accepts: whole milliwatts, rounded down, within its range.  A bound the
     * device does not give (NAN) clamps nothing: read as a bound it saturated to LLONG_MAX and
     * every set on that GPU, its restore included, was sent as 9.2e15 W. */
    long long mw = pfi_hw_cap_mw(watts);
    if (isfinite(d.max_limit_w) && mw > pfi_hw_cap_mw(d.max_limit_w))
        mw = pfi_hw_cap_mw(d.max_limit_w);
    if (isfinite(d.min_limit_w) && mw < pfi_hw_held_mw(d.min_limit_w))
        mw = pfi_hw_held_mw(d.min_limit_w);
    rc = b->ops->set_limit(b, idx, (double)mw / 1000.0, err);
    if (rc != PFI_OK)
        return rc;
    if (enforced_w) {
        rc = b->ops->device_info(b, idx, &d, err);
        if (rc != PFI_OK)
            return rc;
        *enforced_w = d.enforced_w;
    }
    return PFI_OK;
}

double pfi_hw_now(pfi_backend *b)
{
    if (b && b->ops->now)
        return b->ops->now(b);
    return pfi_clock_mono();
}

void pfi_hw_sleep(pfi_backend *b, double seconds)
{
    if (b && b->ops->sleep) {
        b->ops->sleep(b, seconds);
        return;
    }
    /* A signal cuts the sleep short on purpose: the caller checks why it was woken. */
    pfi_clock_sleep(seconds);
}
