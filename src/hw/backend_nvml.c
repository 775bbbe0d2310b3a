/* backend_nvml.c: PLACEHOLDER until the nvmlulator lands (issue 4); replaced, not kept. */
#include "hw/hw.h"

static int nvml_open(pfi_backend *b, const char *arg, pfi_err *err)
{
    return pfi_err_set(err, PFI_ENOTSUP, "the nvmlulator backend is not built yet");
}
static void nvml_close(pfi_backend *b) {}
const pfi_backend_ops pfi_backend_nvml_ops = {.name = "nvml", .open = nvml_open, .close = nvml_close};
