/* SPDX-License-Identifier: Apache-2.0 */
/* nvml_errors.c: the table behind nvml_errors.h. */
#include "hw/nvml/nvml_errors.h"

#include <stddef.h>

#include "core/err.h"

typedef struct nvml_code_info {
    nvmlReturn_t r;
    int code;
    const char *name;
    const char *text;
    const char *hint;
} nvml_code_info;

static const nvml_code_info table[] = {
    {NVML_SUCCESS, PFI_OK, "NVML_SUCCESS", "success", ""},
    {NVML_ERROR_UNINITIALIZED, PFI_ESTATE, "NVML_ERROR_UNINITIALIZED",
     "NVML was not initialized", "this is a bug in pfi: please report it"},
    {NVML_ERROR_INVALID_ARGUMENT, PFI_EINVAL, "NVML_ERROR_INVALID_ARGUMENT",
     "the driver rejected an argument (a value out of range or a stale device handle)", ""},
    {NVML_ERROR_NOT_SUPPORTED, PFI_ENOTSUP, "NVML_ERROR_NOT_SUPPORTED",
     "this device or driver does not support it", ""},
    {NVML_ERROR_NO_PERMISSION, PFI_EPERM, "NVML_ERROR_NO_PERMISSION", "permission denied",
     "changing GPU power limits needs root (or CAP_SYS_ADMIN)"},
    {NVML_ERROR_ALREADY_INITIALIZED, PFI_ESTATE, "NVML_ERROR_ALREADY_INITIALIZED",
     "NVML was already initialized", ""},
    {NVML_ERROR_NOT_FOUND, PFI_ENOENT, "NVML_ERROR_NOT_FOUND", "the object was not found", ""},
    {NVML_ERROR_INSUFFICIENT_SIZE, PFI_EINTERNAL, "NVML_ERROR_INSUFFICIENT_SIZE",
     "a buffer was too small", "this is a bug in pfi: please report it"},
    {NVML_ERROR_INSUFFICIENT_POWER, PFI_EIO, "NVML_ERROR_INSUFFICIENT_POWER",
     "the board's external power cables are not properly attached", "check the power cables"},
    {NVML_ERROR_DRIVER_NOT_LOADED, PFI_ENODRIVER, "NVML_ERROR_DRIVER_NOT_LOADED",
     "the NVIDIA kernel driver is not loaded", "load it (modprobe nvidia) or check nvidia-smi"},
    {NVML_ERROR_TIMEOUT, PFI_ETIMEOUT, "NVML_ERROR_TIMEOUT", "the driver timed out", ""},
    {NVML_ERROR_IRQ_ISSUE, PFI_EIO, "NVML_ERROR_IRQ_ISSUE",
     "the kernel detected an interrupt problem with the GPU", "check dmesg"},
    {NVML_ERROR_LIBRARY_NOT_FOUND, PFI_ENODRIVER, "NVML_ERROR_LIBRARY_NOT_FOUND",
     "a library NVML needs was not found", "reinstall the NVIDIA driver"},
    {NVML_ERROR_FUNCTION_NOT_FOUND, PFI_ENOTSUP, "NVML_ERROR_FUNCTION_NOT_FOUND",
     "the installed driver does not have this function", "a newer driver may have it"},
    {NVML_ERROR_CORRUPTED_INFOROM, PFI_EIO, "NVML_ERROR_CORRUPTED_INFOROM",
     "the GPU's infoROM is corrupted", "contact the hardware vendor"},
    {NVML_ERROR_GPU_IS_LOST, PFI_ELOST, "NVML_ERROR_GPU_IS_LOST",
     "the GPU is lost (it fell off the bus or stopped responding)",
     "check dmesg (Xid errors); the GPU needs a reset or the node a reboot"},
    {NVML_ERROR_RESET_REQUIRED, PFI_ESTATE, "NVML_ERROR_RESET_REQUIRED",
     "the GPU needs a reset before it can be used again", "reset it (nvidia-smi -r) or reboot"},
    {NVML_ERROR_OPERATING_SYSTEM, PFI_EIO, "NVML_ERROR_OPERATING_SYSTEM",
     "the operating system blocked the call", ""},
    {NVML_ERROR_LIB_RM_VERSION_MISMATCH, PFI_ENODRIVER, "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
     "libnvidia-ml and the kernel driver are different versions",
     "reboot after a driver upgrade, or reinstall the driver"},
    {NVML_ERROR_IN_USE, PFI_EBUSY, "NVML_ERROR_IN_USE", "the GPU is in use", ""},
    {NVML_ERROR_MEMORY, PFI_ENOMEM, "NVML_ERROR_MEMORY", "the driver ran out of memory", ""},
    {NVML_ERROR_NO_DATA, PFI_ENOENT, "NVML_ERROR_NO_DATA", "no data is available yet", ""},
    {NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, PFI_ENOTSUP, "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED",
     "ECC is enabled, which this vGPU configuration does not support", ""},
    {NVML_ERROR_INSUFFICIENT_RESOURCES, PFI_EBUSY, "NVML_ERROR_INSUFFICIENT_RESOURCES",
     "the driver lacks the resources (e.g. too many GPM samplers)", ""},
    {NVML_ERROR_FREQ_NOT_SUPPORTED, PFI_ENOTSUP, "NVML_ERROR_FREQ_NOT_SUPPORTED",
     "this clock frequency is not supported", ""},
    {NVML_ERROR_ARGUMENT_VERSION_MISMATCH, PFI_ENOTSUP, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
     "the driver expects a different version of a structure", "the driver is too old or too new for pfi"},
    {NVML_ERROR_DEPRECATED, PFI_ENOTSUP, "NVML_ERROR_DEPRECATED",
     "the driver no longer supports this call", ""},
    {NVML_ERROR_NOT_READY, PFI_EBUSY, "NVML_ERROR_NOT_READY", "the GPU is not ready yet", ""},
    {NVML_ERROR_GPU_NOT_FOUND, PFI_ENOENT, "NVML_ERROR_GPU_NOT_FOUND", "no such GPU", ""},
    {NVML_ERROR_INVALID_STATE, PFI_ESTATE, "NVML_ERROR_INVALID_STATE",
     "the GPU is in a state that does not allow this", ""},
    {NVML_ERROR_UNKNOWN, PFI_EIO, "NVML_ERROR_UNKNOWN", "unknown error inside the driver", ""},
};

static const nvml_code_info *find(nvmlReturn_t r)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].r == r)
            return &table[i];
    return NULL;
}

int pfi_nvml_code(nvmlReturn_t r)
{
    const nvml_code_info *c = find(r);
    return c ? c->code : PFI_EIO;
}

const char *pfi_nvml_return_name(nvmlReturn_t r)
{
    const nvml_code_info *c = find(r);
    return c ? c->name : "unknown NVML return code";
}

const char *pfi_nvml_return_text(nvmlReturn_t r)
{
    const nvml_code_info *c = find(r);
    return c ? c->text : "an error this version of pfi does not know";
}

const char *pfi_nvml_return_hint(nvmlReturn_t r)
{
    const nvml_code_info *c = find(r);
    return c ? c->hint : "";
}

int pfi_nvml_is_unavailable(nvmlReturn_t r)
{
    switch (r) {
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_NO_PERMISSION: /* some readings are root-only on some drivers */
    case NVML_ERROR_NO_DATA:
    case NVML_ERROR_NOT_READY:
    case NVML_ERROR_DEPRECATED:
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
        return 1;
    default:
        return 0;
    }
}
