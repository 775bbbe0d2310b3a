/* SPDX-License-Identifier: Apache-2.0 */
/* gpu.c: the GPU catalogue (gpu.h): one table of models and the lookups by name. */
#include "core/gpu.h"

#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>

/* Power constants (idle/busy_static/hbm/dyn, V-f floor and knee) are modelled: NVIDIA does not
 * publish them.  They are set so that the facts hold: H200 under a full GEMM load at 700 W
 * holds ~1500 MHz (hardware.md), idle ~75 W of which HBM ~42 W, and even a full load fits
 * under the 200 W minimum limit at the lowest clock (so every settable limit can be enforced);
 * an A100 SXM stage at 1410 MHz draws ~470 W (Perseus stage profile: a 500 W-class part, so a
 * 400 W limit binds); A100-PCIE draws ~93% of 300 W
 * on pipeline jobs; an A40 at 1740 MHz on compute draws ~295 W (Perseus stage profile).
 * `pfi sim validate` refits the A100-PCIE-80GB and A40 constants from measured sweeps.
 * The A40's NVLink is the 2-way bridge (112.5 GB/s both directions) that pairs cards. */
static const pfi_gpu_model models[] = {
    {.name = "H200-SXM", .nvml_name = "NVIDIA H200",
     .min_limit_w = 200, .max_limit_w = 700, .default_limit_w = 700,
     .idle_w = 75, .hbm_idle_w = 42, .hbm_w = 70, .busy_static_w = 20, .dyn_w = 1460,
     .sm_clock_idle_mhz = 345, .sm_clock_min_mhz = 345, .sm_clock_max_mhz = 1980,
     .mem_clock_mhz = 3201, .v_floor = 0.58, .f_knee = 0.45, .v_gamma = 1.5, .hbm_tbs = 4.8, .mem_gib = 141,
     .sms = 132, .bf16_tflops = 989.0 * 1980 / 1830, .gemm_eff = 0.80, .mem_eff = 0.6, .sat_frac = 0.3, .nvlink_gbs = 450,
     .pcie_gbs = 55, .tau_s = 0.25, .temp_c_per_w = 0.060},
    {.name = "H100-SXM", .nvml_name = "NVIDIA H100 80GB HBM3",
     .min_limit_w = 200, .max_limit_w = 700, .default_limit_w = 700,
     .idle_w = 72, .hbm_idle_w = 35, .hbm_w = 60, .busy_static_w = 20, .dyn_w = 1460,
     .sm_clock_idle_mhz = 345, .sm_clock_min_mhz = 345, .sm_clock_max_mhz = 1980,
     .mem_clock_mhz = 2619, .v_floor = 0.58, .f_knee = 0.45, .v_gamma = 1.5, .hbm_tbs = 3.35, .mem_gib = 80,
     .sms = 132, .bf16_tflops = 989.0 * 1980 / 1830, .gemm_eff = 0.78, .mem_eff = 0.6, .sat_frac = 0.3, .nvlink_gbs = 450,
     .pcie_gbs = 55, .tau_s = 0.25, .temp_c_per_w = 0.062},
    {.name = "A100-SXM", .nvml_name = "NVIDIA A100-SXM4-80GB",
     .min_limit_w = 100, .max_limit_w = 400, .default_limit_w = 400,
     .idle_w = 50, .hbm_idle_w = 22, .hbm_w = 40, .busy_static_w = 10, .dyn_w = 400,
     .sm_clock_idle_mhz = 210, .sm_clock_min_mhz = 210, .sm_clock_max_mhz = 1410,
     .mem_clock_mhz = 1593, .v_floor = 0.65, .f_knee = 0.50, .v_gamma = 1.5, .hbm_tbs = 2.04, .mem_gib = 80,
     .sms = 108, .bf16_tflops = 312, .gemm_eff = 0.75, .mem_eff = 0.6, .sat_frac = 0.3, .nvlink_gbs = 300, .pcie_gbs = 25,
     .tau_s = 0.25, .temp_c_per_w = 0.09},
    {.name = "A100-PCIE-80GB", .nvml_name = "NVIDIA A100 80GB PCIe",
     .min_limit_w = 150, .max_limit_w = 300, .default_limit_w = 300,
     .idle_w = 50, .hbm_idle_w = 22, .hbm_w = 45, .busy_static_w = 40, .dyn_w = 300,
     .sm_clock_idle_mhz = 210, .sm_clock_min_mhz = 210, .sm_clock_max_mhz = 1410,
     .mem_clock_mhz = 1512, .v_floor = 0.70, .f_knee = 0.50, .v_gamma = 1.5, .hbm_tbs = 1.94, .mem_gib = 80,
     .sms = 108, .bf16_tflops = 312, .gemm_eff = 0.75, .mem_eff = 0.6, .sat_frac = 0.3, .nvlink_gbs = 0, .pcie_gbs = 25,
     .tau_s = 0.25, .temp_c_per_w = 0.12},
    {.name = "A40", .nvml_name = "NVIDIA A40",
     .min_limit_w = 100, .max_limit_w = 300, .default_limit_w = 300,
     .idle_w = 30, .hbm_idle_w = 12, .hbm_w = 35, .busy_static_w = 40, .dyn_w = 230,
     .sm_clock_idle_mhz = 210, .sm_clock_min_mhz = 210, .sm_clock_max_mhz = 1740,
     .mem_clock_mhz = 7251, .v_floor = 0.70, .f_knee = 0.50, .v_gamma = 1.5, .hbm_tbs = 0.696, .mem_gib = 48,
     .sms = 84, .bf16_tflops = 149.7, .gemm_eff = 0.70, .mem_eff = 0.6, .sat_frac = 0.3, .nvlink_gbs = 56, .pcie_gbs = 25,
     .tau_s = 0.25, .temp_c_per_w = 0.15},
};
#define NMODELS ((int)(sizeof models / sizeof models[0]))

int pfi_gpu_model_count(void) { return NMODELS; }

const pfi_gpu_model *pfi_gpu_model_at(int i)
{
    return i >= 0 && i < NMODELS ? &models[i] : NULL;
}

/* "NVIDIA H200 SXM 141GB" -> "h200sxm141gb": people and tools spell the same part many ways. */
static void squash(const char *in, char *out, size_t cap)
{
    size_t n = 0;
    if (strncasecmp(in, "nvidia", 6) == 0)
        in += 6;
    for (; *in && n + 1 < cap; in++)
        if (isalnum((unsigned char)*in))
            out[n++] = (char)tolower((unsigned char)*in);
    out[n] = '\0';
}

const pfi_gpu_model *pfi_gpu_model_find(const char *name)
{
    if (!name)
        return NULL;
    char s[96];
    squash(name, s, sizeof s);
    static const struct { const char *alias; int model; } aliases[] = {
        {"h200", 0}, {"h200sxm", 0}, {"h200sxm141gb", 0}, {"h200141gb", 0}, {"gh200", 0},
        {"h100", 1}, {"h100sxm", 1}, {"h100sxm5", 1}, {"h10080gbhbm3", 1}, {"h100sxm580gb", 1},
        {"a100sxm", 2}, {"a100sxm4", 2}, {"a100sxm480gb", 2}, {"a100sxm440gb", 2}, {"a100", 2},
        {"a100pcie", 3}, {"a100pcie80gb", 3}, {"a10080gbpcie", 3}, {"a100pcie80g", 3},
        {"a40", 4},
    };
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(s, aliases[i].alias) == 0)
            return &models[aliases[i].model];
    for (int i = 0; i < NMODELS; i++) {
        char c[96];
        squash(models[i].name, c, sizeof c);
        if (strcmp(s, c) == 0)
            return &models[i];
        squash(models[i].nvml_name, c, sizeof c);
        if (strcmp(s, c) == 0)
            return &models[i];
    }
    return NULL;
}

/* Case-insensitive substring test, so "NVIDIA H200", "H200-SXM" and "h200" all match. */
static int has(const char *s, const char *needle, size_t n)
{
    for (; *s; s++) {
        size_t i = 0;
        while (i < n && s[i] && tolower((unsigned char)s[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

const pfi_gpu_model *pfi_gpu_model_family(const char *gpu_type)
{
    if (!gpu_type)
        return NULL;
    for (int i = 0; i < NMODELS; i++)
        if (has(gpu_type, models[i].name, strcspn(models[i].name, "-")))
            return &models[i];
    return NULL;
}

double pfi_gpu_max_sm_clock(const char *gpu_type)
{
    const pfi_gpu_model *m = pfi_gpu_model_family(gpu_type);
    return m ? m->sm_clock_max_mhz : NAN;
}

int pfi_gpu_class(const char *gpu_type)
{
    const pfi_gpu_model *m = pfi_gpu_model_family(gpu_type);
    return m == &models[0] ? 0 : m == &models[1] ? 1 : 2; /* H200-SXM, H100-SXM */
}
