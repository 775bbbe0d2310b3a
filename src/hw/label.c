/* SPDX-License-Identifier: Apache-2.0 */
/* label.c: whether a backend's GPUs are simulated, the name a stored run records, and the
 * processes on a GPU. */
#include <string.h>

#include "hw/backend_impl.h"

int pfi_hw_simulated(pfi_backend *b)
{
    return b && b->ops->simulated && b->ops->simulated(b);
}

const char *pfi_hw_label(pfi_backend *b)
{
    if (strcmp(b->ops->name, "nvml") == 0 && pfi_hw_simulated(b))
        return "nvml-sim";
    return b->ops->name;
}

int pfi_hw_processes(pfi_backend *b, int idx, pfi_gpu_proc *out, int cap, int *n, pfi_err *err)
{
    *n = 0;
    if (!b->ops->processes)
        return pfi_err_set(err, PFI_ENOTSUP, "the %s backend cannot list GPU processes",
                           b->ops->name);
    return b->ops->processes(b, idx, out, cap, n, err);
}
