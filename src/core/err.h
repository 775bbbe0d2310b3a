/* SPDX-License-Identifier: Apache-2.0 */
/* err.h: the one error type of pfi.
 *
 * Every fallible function returns an int code (PFI_OK == 0) and, when the caller passes a
 * pfi_err, fills in a human message naming the problem.  Messages are written for the person
 * at the terminal ("cap 150 W is below the minimum 200 W of GPU 3"), not for a debugger.
 * Pure: no I/O, no globals. */
#ifndef PFI_CORE_ERR_H
#define PFI_CORE_ERR_H

#include <stdarg.h>

enum pfi_code {
    PFI_OK = 0,
    PFI_EINVAL,      /* bad argument or malformed input */
    PFI_ERANGE,      /* a value outside what the device or model allows */
    PFI_ENOENT,      /* a file, device, run or job that does not exist */
    PFI_EIO,         /* reading or writing failed */
    PFI_ENOTSUP,     /* the backend or device cannot do this */
    PFI_EPERM,       /* not allowed: not root, or read-only mode */
    PFI_ELOST,       /* the GPU fell off the bus */
    PFI_ENOMEM,
    PFI_EBUSY,       /* locked or already running */
    PFI_EINFEASIBLE, /* no allocation satisfies the constraints */
    PFI_ESTATE,      /* wrong state: not initialised, already open, newer schema... */
    PFI_ETIMEOUT,
    PFI_ENODRIVER,   /* no NVIDIA driver / NVML library found */
    PFI_ECHILD,      /* a launched command failed */
    PFI_EINTERNAL
};

#define PFI_ERR_MSG_MAX 512

typedef struct pfi_err {
    int code;
    char msg[PFI_ERR_MSG_MAX];
} pfi_err;

/* Sets *e (if non-NULL) and returns code, so callers write `return pfi_err_set(e, ...)`. */
int pfi_err_set(pfi_err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int pfi_err_vset(pfi_err *e, int code, const char *fmt, va_list ap);
/* Prefixes context to an existing message: "GPU 2: " + "power limit ...". Returns e->code. */
int pfi_err_prefix(pfi_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pfi_err_clear(pfi_err *e);
const char *pfi_code_name(int code);

#endif
