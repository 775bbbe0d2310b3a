/* label.c: whether a backend's GPUs are simulated, and the name a stored run records. */
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
