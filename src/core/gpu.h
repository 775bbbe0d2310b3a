/* SPDX-License-Identifier: Apache-2.0 */
/* gpu.h: the GPU catalogue, the one place where what pfi knows of a GPU model is written down:
 * the facts of reference/hardware.md (limits, clocks, memory, links) and the power constants
 * the simulator models for it.  The simulator runs on it, the predictor's features read the
 * top SM clock from it and the study sorts runs by it, so a model added here is known to all.
 * Pure: a constant table and lookups, no I/O. */
#ifndef PFI_CORE_GPU_H
#define PFI_CORE_GPU_H

/* Facts from reference/hardware.md plus the modelled power constants.  Plain data (no
 * pointers) so a whole node config can live in a shared file. */
typedef struct pfi_gpu_model {
    char name[32];              /* canonical: "H200-SXM", "H100-SXM", "A100-SXM", ... */
    char nvml_name[64];         /* as NVML names the device: "NVIDIA H200" */
    double min_limit_w, max_limit_w, default_limit_w;
    double idle_w;              /* board power at idle clocks, no work */
    double hbm_idle_w;          /* memory share of idle_w (reported as mem_power_w) */
    double hbm_w;               /* extra memory power at 100% DRAM bandwidth */
    double busy_static_w;       /* extra board power while kernels run, besides SM dynamic */
    double dyn_w;               /* SM dynamic power at f_max, V_max, activity 1 */
    double sm_clock_idle_mhz, sm_clock_min_mhz, sm_clock_max_mhz, mem_clock_mhz;
    double v_floor;             /* V/V(f_max) at and below the knee (the voltage floor) */
    double f_knee;              /* fraction of f_max below which V stays at the floor */
    double v_gamma;             /* curvature of V above the knee (1 = linear, >1 convex) */
    double hbm_tbs;             /* memory bandwidth, TB/s */
    double mem_gib;
    int sms;
    double bf16_tflops;         /* dense BF16 peak at sm_clock_max_mhz */
    double gemm_eff;            /* achievable fraction of that peak on large GEMMs */
    double mem_eff;             /* fraction of the memory bandwidth elementwise kernels reach */
    double sat_frac;            /* below this fraction of f_max, memory and copy kernels slow
                                 * with the SM clock too (they need SM cycles to issue) */
    double nvlink_gbs;          /* NVLink per GPU per direction, GB/s (0: none) */
    double pcie_gbs;            /* PCIe per direction, GB/s */
    double tau_s;               /* firmware power-control time constant */
    double temp_c_per_w;        /* steady temperature rise per watt */
} pfi_gpu_model;

/* Case-insensitive; accepts common spellings: "h200", "H200 SXM", "NVIDIA H200", "a100-pcie",
 * "A100 PCIe 80GB", "a40".  NULL when unknown. */
const pfi_gpu_model *pfi_gpu_model_find(const char *name);
int pfi_gpu_model_count(void);
const pfi_gpu_model *pfi_gpu_model_at(int i);

/* The model whose family (its canonical name up to the first '-': "h200", "a100", "a40")
 * appears anywhere in a free-form GPU type, case-insensitive, the first in the catalogue when
 * several do: "NVIDIA A100-SXM4-40GB" is an A100-SXM.  Looser than pfi_gpu_model_find, for
 * facts a whole family shares, on types recorded by other tools.  NULL when none. */
const pfi_gpu_model *pfi_gpu_model_family(const char *gpu_type);

/* Max SM clock of a GPU type's family (the features' clock ratio).  NAN when unknown. */
double pfi_gpu_max_sm_clock(const char *gpu_type);

/* 0 H200, 1 H100, 2 any other GPU: the classes the study's transfer tests split on. */
int pfi_gpu_class(const char *gpu_type);

#endif
