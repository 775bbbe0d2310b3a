/* SPDX-License-Identifier: Apache-2.0 */
#include "util/fs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int pfi_mkdir_p(const char *dir, pfi_err *err)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return pfi_err_set(err, PFI_EIO, "cannot create %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return pfi_err_set(err, PFI_EIO, "cannot create %s: %s", buf, strerror(errno));
    return PFI_OK;
}
