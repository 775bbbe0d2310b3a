/* SPDX-License-Identifier: Apache-2.0 */
/* nvml_errors.h: what each NVML return code means, for people and for pfi's error codes.
 * Used by the NVML backend; the table is pfi's own, so messages stay clear even when the
 * loaded library has no nvmlErrorString or an old one that does not know a newer code. */
#ifndef PFI_HW_NVML_ERRORS_H
#define PFI_HW_NVML_ERRORS_H

#include "hw/nvml/nvml_api.h"

/* The pfi_code a caller should see for r (PFI_OK for NVML_SUCCESS). */
int pfi_nvml_code(nvmlReturn_t r);
/* "NVML_ERROR_GPU_IS_LOST"; "NVML_ERROR_<n>" style text is never returned: unknown codes
 * give "unknown NVML return code". */
const char *pfi_nvml_return_name(nvmlReturn_t r);
/* A sentence: "the GPU is lost (fell off the bus)". */
const char *pfi_nvml_return_text(nvmlReturn_t r);
/* What the person can do about it, or "" when there is nothing useful to add. */
const char *pfi_nvml_return_hint(nvmlReturn_t r);
/* Codes that mean "this reading is not available here", not a fault: the field is reported
 * missing and sampling goes on. */
int pfi_nvml_is_unavailable(nvmlReturn_t r);

#endif
