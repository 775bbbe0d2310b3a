/* SPDX-License-Identifier: Apache-2.0 */
/* backend_impl.h: the inside of a pfi_backend, for what implements one: hw.c, backend_sim.c,
 * nvml/backend_nvml.c, and the tests and the fake NVML that stand one up or reach past the
 * wrappers on purpose.  Everything else holds an opaque pfi_backend * and goes through hw/hw.h,
 * so the rules held there (read-only mode, limit range, read-back) cannot be stepped around. */
#ifndef PFI_HW_BACKEND_IMPL_H
#define PFI_HW_BACKEND_IMPL_H

#include "hw/hw.h"

typedef struct pfi_backend_ops {
    const char *name;
    /* arg: backend-specific (sim: a config file or preset name; nvml: library path). NULL=default */
    int (*open)(pfi_backend *b, const char *arg, pfi_err *err);
    void (*close)(pfi_backend *b);
    int (*device_count)(pfi_backend *b, int *count, pfi_err *err);
    int (*device_info)(pfi_backend *b, int idx, pfi_device *out, pfi_err *err);
    int (*sample)(pfi_backend *b, int idx, pfi_sample *out, pfi_err *err);
    int (*set_limit)(pfi_backend *b, int idx, double watts, pfi_err *err);
    /* Seconds on the backend's clock.  Real backends: the monotonic clock (util/clock.h); the
     * simulator in virtual mode: its virtual time.  May be NULL (then the monotonic clock). */
    double (*now)(pfi_backend *b);
    /* Let time pass: real backends sleep; the virtual simulator advances.  May be NULL. */
    void (*sleep)(pfi_backend *b, double seconds);
    /* 1 when the GPUs are simulated (the simulator, or NVML served by the project's fake
     * libnvidia-ml over it).  May be NULL (then 0). */
    int (*simulated)(pfi_backend *b);
    /* The compute processes on GPU idx: up to cap into out, *n how many there are.  May be
     * NULL (then PFI_ENOTSUP). */
    int (*processes)(pfi_backend *b, int idx, pfi_gpu_proc *out, int cap, int *n, pfi_err *err);
} pfi_backend_ops;

struct pfi_backend {
    const pfi_backend_ops *ops;
    void *impl;
    int read_only;          /* every set is refused before it reaches the implementation */
};

#endif
