/* SPDX-License-Identifier: Apache-2.0 */
#include "util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

int pfi_input_not_dir(const char *path, pfi_err *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return pfi_err_set(err, PFI_EIO, "cannot read %s: %s", path, strerror(EISDIR));
    return PFI_OK;
}

int pfi_parent_dir_check(const char *path, const char *what, pfi_err *err)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return PFI_OK; /* the working directory */
    char dir[1024];
    size_t len = slash == path ? 1 : (size_t)(slash - path);
    if (len >= sizeof dir)
        return PFI_OK;
    memcpy(dir, path, len);
    dir[len] = '\0';
    struct stat st;
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return pfi_err_set(err, PFI_EIO, "cannot create %s %s: %s is not a folder", what, path,
                           dir);
    if (stat(dir, &st) == 0 || (errno != ENOENT && errno != ENOTDIR))
        return PFI_OK;
    if (errno == ENOTDIR)
        return pfi_err_set(err, PFI_EIO, "cannot create %s %s: a part of %s is not a folder",
                           what, path, dir);
    return pfi_err_set(err, PFI_EIO,
                       "cannot create %s %s: the folder %s does not exist (create it first: "
                       "mkdir -p %s)",
                       what, path, dir, dir);
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

int pfi_out_target(const char *path, char *target, size_t n, int *direct, pfi_err *err)
{
    struct stat st;
    *direct = 0;
    if (lstat(path, &st) != 0 || S_ISREG(st.st_mode)) { /* new, or a plain file */
        if ((size_t)snprintf(target, n, "%s", path) >= n)
            return pfi_err_set(err, PFI_EINVAL, "path too long: %s", path);
        return PFI_OK;
    }
    if (S_ISLNK(st.st_mode)) {
        struct stat rt;
        if (stat(path, &rt) != 0)
            return pfi_err_set(err, PFI_EIO, "%s: a link to a missing file (%s)", path,
                               strerror(errno));
        if (S_ISDIR(rt.st_mode))
            return pfi_err_set(err, PFI_EINVAL, "%s: a link to a directory", path);
        if (!S_ISREG(rt.st_mode)) { /* /dev/stdout to a pipe, a link to a FIFO: written through */
            *direct = 1;
            snprintf(target, n, "%s", path);
            return PFI_OK;
        }
        char *real = realpath(path, NULL);
        if (!real)
            return pfi_err_set(err, PFI_EIO, "%s: a link whose target cannot be resolved (%s)",
                               path, strerror(errno));
        int rc = (size_t)snprintf(target, n, "%s", real) >= n
                     ? pfi_err_set(err, PFI_EINVAL, "path too long: %s", real)
                     : PFI_OK;
        free(real);
        return rc;
    }
    if (S_ISDIR(st.st_mode))
        return pfi_err_set(err, PFI_EINVAL, "%s: Is a directory", path);
    *direct = 1;
    snprintf(target, n, "%s", path);
    return PFI_OK;
}

int pfi_write_new(const char *path, const char *text, pfi_err *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return pfi_err_set(err, PFI_EIO, "cannot write %s: the path is too long", path);
    unlink(tmp); /* one of ours left by a crash; a link someone made goes too, untouched */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return pfi_err_set(err, PFI_EIO, "cannot write %s: %s", tmp, strerror(errno));
    size_t n = strlen(text);
    ssize_t w = write(fd, text, n);
    int e = w == (ssize_t)n ? 0 : w < 0 ? errno : EIO;
    if (close(fd) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, path) != 0)
        e = errno;
    if (e) {
        unlink(tmp);
        return pfi_err_set(err, PFI_EIO, "cannot write %s: %s", path, strerror(e));
    }
    return PFI_OK;
}
