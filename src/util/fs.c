/* SPDX-License-Identifier: Apache-2.0 */
#include "util/fs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

int pfi_input_not_dir(const char *path, pfi_err *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return pfi_err_set(err, PFI_EIO, "cannot read %s: %s", path, strerror(EISDIR));
    return PFI_OK;
}

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

long pfi_fd_limit_raise(long need)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0)
        return -1;
    if (r.rlim_cur != RLIM_INFINITY && (long)r.rlim_cur < need) {
        rlim_t want = (rlim_t)need;
        if (r.rlim_max != RLIM_INFINITY && r.rlim_max < want)
            want = r.rlim_max;
        if (want > r.rlim_cur) {
            r.rlim_cur = want;
            setrlimit(RLIMIT_NOFILE, &r);
            if (getrlimit(RLIMIT_NOFILE, &r) != 0)
                return -1;
        }
    }
    return r.rlim_cur == RLIM_INFINITY || r.rlim_cur > (rlim_t)LONG_MAX ? LONG_MAX
                                                                         : (long)r.rlim_cur;
}

long pfi_fd_limit_fit(long want, long reserve, long *limit)
{
    long need = want + reserve, have = pfi_fd_limit_raise(need);
    *limit = have;
    return have < 0 || have >= need ? want : have - reserve;
}
