/* SPDX-License-Identifier: Apache-2.0 */
/* hw.h: the one interface to GPUs.  Read this first if you touch hardware.
 *
 * Everything that reads or changes a GPU goes through a pfi_backend: a table of function
 * pointers plus the implementation's private state (hw/backend_impl.h, seen only by the
 * implementations and by tests that stand one up).  Two implementations:
 *   "sim"   the embedded simulator (src/hw/backend_sim.c over src/sim/)
 *   "nvml"  real NVIDIA GPUs through libnvidia-ml.so.1 loaded with dlopen
 *           (src/hw/nvml/backend_nvml.c); pointed at the project's own fake libnvidia-ml
 *           (src/fakenvml/) in CI.
 * Callers never call ops directly: they use the pfi_hw_* wrappers below, which hold the rules
 * that must not depend on the backend (read-only mode, limit constraints, read-back). */
#ifndef PFI_HW_HW_H
#define PFI_HW_HW_H

#include <stdint.h>

#include "core/err.h"
#include "core/sample.h"

typedef struct pfi_backend pfi_backend;

/* A compute process on a GPU (NVML's nvmlProcessInfo_t). */
typedef struct pfi_gpu_proc {
    long pid;
    double used_mib; /* NAN when the driver does not say */
} pfi_gpu_proc;
#define PFI_MAX_GPU_PROCS 64

/* Registry: "sim", "nvml", and "auto": NVML when the library loads and lists at least one
 * GPU, else PFI_ENODRIVER saying no NVIDIA driver was found and that --backend sim runs the
 * simulator (hw.c); arg is then the NVML library path.  read_only is also forced on by
 * env PFI_READ_ONLY=1. */
int pfi_hw_open(const char *name, const char *arg, int read_only, pfi_backend **out, pfi_err *err);
int pfi_hw_open_auto(const char *nvml_lib, int read_only, pfi_backend **out, pfi_err *err);
/* 1 when the backend's GPUs are simulated (see pfi_backend_ops.simulated). */
int pfi_hw_simulated(pfi_backend *b);
/* What a stored run records as its backend: "nvml", "sim", or "nvml-sim" (the NVML API served
 * by the fake libnvidia-ml over the simulator). */
const char *pfi_hw_label(pfi_backend *b);
void pfi_hw_close(pfi_backend *b);
/* "sim" or "nvml": for messages, journals and records of where a run came from. */
const char *pfi_backend_name(const pfi_backend *b);
/* 1 when every set is refused (asked at open, or forced by PFI_READ_ONLY=1). */
int pfi_backend_read_only(const pfi_backend *b);

int pfi_hw_count(pfi_backend *b, int *count, pfi_err *err);
int pfi_hw_info(pfi_backend *b, int idx, pfi_device *out, pfi_err *err);
int pfi_hw_sample(pfi_backend *b, int idx, pfi_sample *out, pfi_err *err);
/* Power limits in whole milliwatts, the unit NVML takes.  A cap is rounded DOWN to one
 * (pfi_hw_cap_mw), so a set of caps that fits a budget still fits after rounding; a limit read
 * back is counted rounded UP (pfi_hw_held_mw), so a sum of them is never less than what the
 * devices hold.  The budget itself is rounded down like a cap.  Sums of these are compared as
 * integers: never over, not by a fraction of a watt.  (A small tolerance, 1e-6 mW, absorbs the
 * binary representation of decimal watts such as 3999.6.)  Both saturate: NAN or beyond
 * +-1e15 W gives LLONG_MAX (+) or LLONG_MIN (-), never undefined behaviour. */
long long pfi_hw_cap_mw(double watts);
long long pfi_hw_held_mw(double watts);
/* Checks read-only mode and [min,max] before calling the backend, then reads the limit back.
 * The limit asked is pfi_hw_cap_mw(watts) (rounded down to a milliwatt), brought into
 * [min, max] when it is within 0.5 W outside them.  A bound the device does not give (NAN) is
 * neither checked nor clamped to: the driver validates the value itself.
 * *enforced_w (may be NULL) receives what the device enforces after the change; when it
 * differs from what was asked by more than 1 W, the call still succeeds and the caller is told
 * through *enforced_w so it can report it. */
int pfi_hw_set_limit(pfi_backend *b, int idx, double watts, double *enforced_w, pfi_err *err);
/* The compute processes running on GPU idx (see pfi_backend_ops.processes); *n is how many
 * there are, at most cap are copied.  PFI_ENOTSUP when the backend or driver cannot say. */
int pfi_hw_processes(pfi_backend *b, int idx, pfi_gpu_proc *out, int cap, int *n, pfi_err *err);
double pfi_hw_now(pfi_backend *b);
void pfi_hw_sleep(pfi_backend *b, double seconds);

/* ---- applying a set of caps safely (apply.c): the node daemon, sweeps, the demo ---- */

typedef struct pfi_cap_change {
    int gpu;
    double before_w;    /* limit before (NAN: unreadable) */
    double target_w;    /* asked (NAN: left alone) */
    double limit_w;     /* limit read back after (NAN: unreadable) */
    double enforced_w;  /* enforced limit read back after (NAN: unreadable) */
    int held;           /* a raise not applied because it would have exceeded the budget */
    int code;           /* PFI_OK or why this GPU failed */
    char msg[160];
} pfi_cap_change;

typedef struct pfi_apply_report {
    int n;
    pfi_cap_change gpu[PFI_MAX_GPUS];
    int n_changed, n_failed, n_held, n_mismatch; /* mismatch: enforced differs from asked > 1 W */
    double sum_before_w, sum_after_w; /* sums of the limits as counted for the budget */
    double peak_w;                    /* the largest sum at any instant of the change */
    /* The first GPU to fail and its error in full (gpu[].msg is cut to fit): for callers that
     * stop at a failure and say why.  first_gpu -1 when none failed. */
    int first_gpu;
    pfi_err first;
} pfi_apply_report;

/* Moves GPUs 0..n-1 to target_w[i] (NAN: leave that GPU alone) so that the sum of the power
 * limits never exceeds budget_w at any instant beyond where it already was (INFINITY: no
 * budget; the order still keeps the sum between where it was and where it goes): all lowerings
 * first, each read back, then only the raises that still fit; a GPU already at its target
 * (in whole milliwatts) is not set.  Targets, limits and the budget are counted in whole
 * milliwatts (pfi_hw_cap_mw above).  A GPU whose limit cannot be read counts at known[i] (the
 * caller's last reading; may be NULL, then at its maximum limit, or INFINITY when that is unknown too).
 * Failures of single GPUs are in the report, not in the return code: returns PFI_OK unless
 * nothing could be done at all. */
int pfi_hw_apply(pfi_backend *b, int n, const double *target_w, double budget_w,
                 const pfi_device *known, pfi_apply_report *rep, pfi_err *err);

/* Sets every double field to NAN and have to 0. */
void pfi_sample_clear(pfi_sample *s);

#endif
