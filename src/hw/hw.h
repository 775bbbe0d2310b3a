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

/* Registry: "sim", "nvml".  read_only is also forced on by env PFI_READ_ONLY=1. */
int pfi_hw_open(const char *name, const char *arg, int read_only, pfi_backend **out, pfi_err *err);
void pfi_hw_close(pfi_backend *b);
/* "sim" or "nvml": for messages, journals and records of where a run came from. */
const char *pfi_backend_name(const pfi_backend *b);
/* 1 when every set is refused (asked at open, or forced by PFI_READ_ONLY=1). */
int pfi_backend_read_only(const pfi_backend *b);

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
