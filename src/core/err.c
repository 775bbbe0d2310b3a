/* SPDX-License-Identifier: Apache-2.0 */
#include "core/err.h"

#include <stdio.h>
#include <string.h>

int pfi_err_vset(pfi_err *e, int code, const char *fmt, va_list ap)
{
    if (e) {
        e->code = code;
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    }
    return code;
}

int pfi_err_set(pfi_err *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pfi_err_vset(e, code, fmt, ap);
    va_end(ap);
    return code;
}

int pfi_err_prefix(pfi_err *e, const char *fmt, ...)
{
    if (!e)
        return PFI_EINTERNAL;
    char head[PFI_ERR_MSG_MAX], old[PFI_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    snprintf(e->msg, sizeof e->msg, "%s%s", head, old);
    return e->code;
}

void pfi_err_clear(pfi_err *e)
{
    if (e) {
        e->code = PFI_OK;
        e->msg[0] = '\0';
    }
}

const char *pfi_code_name(int code)
{
    static const char *const names[] = {
        [PFI_OK] = "ok", [PFI_EINVAL] = "invalid argument", [PFI_ERANGE] = "out of range",
        [PFI_ENOENT] = "not found", [PFI_EIO] = "I/O error", [PFI_ENOTSUP] = "not supported",
        [PFI_EPERM] = "not permitted", [PFI_ELOST] = "GPU lost", [PFI_ENOMEM] = "out of memory",
        [PFI_EBUSY] = "busy", [PFI_EINFEASIBLE] = "infeasible", [PFI_ESTATE] = "wrong state",
        [PFI_ETIMEOUT] = "timed out", [PFI_ENODRIVER] = "no NVIDIA driver",
        [PFI_ECHILD] = "command failed", [PFI_EINTERNAL] = "internal error",
    };
    if (code < 0 || code >= (int)(sizeof names / sizeof names[0]) || !names[code])
        return "unknown error";
    return names[code];
}
