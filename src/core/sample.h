/* SPDX-License-Identifier: Apache-2.0 */
/* sample.h: what a GPU reports (pfi_sample) and what it is (pfi_device): plain data shared by
 * the simulator (src/sim/), which produces it, and the hardware layer (src/hw/), which hands it to
 * everyone else.  It lives in core/ so that sim/ depends on core/ alone. */
#ifndef PFI_CORE_SAMPLE_H
#define PFI_CORE_SAMPLE_H

#include <stdint.h>

#define PFI_MAX_GPUS 64

/* Which fields of a pfi_sample were read.  A field a backend cannot read is left NAN (or 0 for
 * clock_reasons) and its bit is clear: missing, never a fake zero. */
enum pfi_field {
    PFI_F_POWER        = 1u << 0,  /* power_w: NVML's 1-second average board power */
    PFI_F_POWER_INST   = 1u << 1,
    PFI_F_ENERGY       = 1u << 2,
    PFI_F_SM_CLOCK     = 1u << 3,
    PFI_F_MEM_CLOCK    = 1u << 4,
    PFI_F_REASONS      = 1u << 5,
    PFI_F_GPU_UTIL     = 1u << 6,
    PFI_F_SM_ACTIVE    = 1u << 7,
    PFI_F_SM_OCCUPANCY = 1u << 8,
    PFI_F_TENSOR       = 1u << 9,
    PFI_F_DRAM         = 1u << 10,
    PFI_F_NVLINK       = 1u << 11, /* nvlink_tx_mibs and nvlink_rx_mibs */
    PFI_F_PCIE         = 1u << 12, /* pcie_tx_mibs and pcie_rx_mibs */
    PFI_F_TEMP         = 1u << 13,
    PFI_F_MEM_USED     = 1u << 14,
    PFI_F_LIMIT        = 1u << 15, /* limit_w and enforced_w */
    PFI_F_MEM_POWER    = 1u << 16,
};

/* Clock-event reason bits, as NVML defines them. */
#define PFI_REASON_IDLE        0x1ull
#define PFI_REASON_SW_POWERCAP 0x4ull
#define PFI_REASON_HW_SLOWDOWN 0x8ull
#define PFI_REASON_SW_THERMAL  0x20ull
#define PFI_REASON_HW_THERMAL  0x40ull
#define PFI_REASON_HW_BRAKE    0x80ull

typedef struct pfi_sample {
    uint32_t have;          /* PFI_F_* bits of the fields below that were read */
    double t_s;             /* backend clock, seconds (virtual time on the simulator) */
    double power_w;         /* 1-second averaged board power */
    double power_inst_w;    /* instantaneous board power */
    double mem_power_w;     /* HBM power, where the device reports it */
    double energy_j;        /* cumulative energy since driver load */
    double sm_clock_mhz;
    double mem_clock_mhz;
    uint64_t clock_reasons; /* PFI_REASON_* bits */
    double gpu_util;        /* fractions 0..1 */
    double sm_active;
    double sm_occupancy;
    double tensor_active;
    double dram_active;
    double nvlink_tx_mibs, nvlink_rx_mibs; /* MiB/s */
    double pcie_tx_mibs, pcie_rx_mibs;     /* MiB/s */
    double temp_c;
    double mem_used_mib;
    double limit_w;         /* power limit as set in band */
    double enforced_w;      /* the limit actually enforced (BMC/VBIOS may lower it) */
} pfi_sample;

typedef struct pfi_device {
    int index;
    char name[96];
    char uuid[96];
    double min_limit_w, max_limit_w, default_limit_w;
    double limit_w, enforced_w;
    /* Why the first of the limits above that is NAN could not be read ("nvmlDevice...: Not
     * Supported (NVML_ERROR_NOT_SUPPORTED = 3)"); "" when all were, or the backend does not
     * say. */
    char unread[160];
} pfi_device;

#endif
