/* hw.h: the one interface to GPUs.  Read this first if you touch hardware.
 *
 * Everything that reads or changes a GPU goes through a pfi_backend: a table of function
 * pointers (pfi_backend_ops) plus the implementation's private state.  Three implementations:
 *   "sim"   the embedded simulator (src/hw/backend_sim.c over src/sim/)
 *   "nvml"  real NVIDIA GPUs through libnvidia-ml.so.1 loaded with dlopen (src/hw/backend_nvml.c);
 *           pointed at the project's own fake libnvidia-ml (src/fakenvml/) in CI.
 * Callers never call ops directly: they use the pfi_hw_* wrappers below, which hold the rules
 * that must not depend on the backend (read-only mode, limit constraints, read-back). */
#ifndef PFI_HW_HW_H
#define PFI_HW_HW_H

#include <stdint.h>

#include "core/err.h"

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
} pfi_device;

typedef struct pfi_backend pfi_backend;

typedef struct pfi_backend_ops {
    const char *name;
    /* arg: backend-specific (sim: a config file or preset name; nvml: library path). NULL=default */
    int (*open)(pfi_backend *b, const char *arg, pfi_err *err);
    void (*close)(pfi_backend *b);
    int (*device_count)(pfi_backend *b, int *count, pfi_err *err);
    int (*device_info)(pfi_backend *b, int idx, pfi_device *out, pfi_err *err);
    int (*sample)(pfi_backend *b, int idx, pfi_sample *out, pfi_err *err);
    int (*set_limit)(pfi_backend *b, int idx, double watts, pfi_err *err);
    /* Seconds on the backend's clock.  Real backends: CLOCK_MONOTONIC; the simulator in virtual
     * mode: its virtual time.  May be NULL (then CLOCK_MONOTONIC). */
    double (*now)(pfi_backend *b);
    /* Let time pass: real backends sleep; the virtual simulator advances.  May be NULL. */
    void (*sleep)(pfi_backend *b, double seconds);
} pfi_backend_ops;

struct pfi_backend {
    const pfi_backend_ops *ops;
    void *impl;
    int read_only;          /* every set is refused before it reaches the implementation */
};

/* Registry: "sim", "nvml".  read_only is also forced on by env PFI_READ_ONLY=1. */
int pfi_hw_open(const char *name, const char *arg, int read_only, pfi_backend **out, pfi_err *err);
void pfi_hw_close(pfi_backend *b);
const pfi_backend_ops *pfi_hw_find(const char *name);

int pfi_hw_count(pfi_backend *b, int *count, pfi_err *err);
int pfi_hw_info(pfi_backend *b, int idx, pfi_device *out, pfi_err *err);
int pfi_hw_sample(pfi_backend *b, int idx, pfi_sample *out, pfi_err *err);
/* Checks read-only mode and [min,max] before calling the backend, then reads the limit back.
 * *enforced_w (may be NULL) receives what the device enforces after the change; when it
 * differs from what was asked by more than 1 W, the call still succeeds and the caller is told
 * through *enforced_w so it can report it. */
int pfi_hw_set_limit(pfi_backend *b, int idx, double watts, double *enforced_w, pfi_err *err);
double pfi_hw_now(pfi_backend *b);
void pfi_hw_sleep(pfi_backend *b, double seconds);

/* Sets every double field to NAN and have to 0. */
void pfi_sample_clear(pfi_sample *s);

#endif
