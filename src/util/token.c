/* SPDX-License-Identifier: Apache-2.0 */
/* token.c: the bearer token that every mutating request to pfi serve and pfi cluster serve
 * must carry.  The token lives in a file only its owner (root, or the user the daemon runs
 * as) can read, so any process able to change caps through the API could have changed them
 * through NVML anyway. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/token.h"

int pfi_token_load(const char *path, char *token, size_t size, pfi_err *err)
{
    /* A symlink (how Kubernetes mounts a secret) is followed when it belongs to root or to
     * us; the file it leads to then passes the same checks as a plain one.  O_NONBLOCK: a FIFO
     * must be refused below, not block the start-up in open(). */
    struct stat ln;
    if (lstat(path, &ln) == 0 && S_ISLNK(ln.st_mode) && ln.st_uid != 0 &&
        ln.st_uid != geteuid())
        return pfi_err_set(err, PFI_EPERM, "token file %s is a symlink owned by uid %u, not by "
                                           "root or uid %u",
                           path, (unsigned)ln.st_uid, (unsigned)geteuid());
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return pfi_err_set(err, errno == ENOENT ? PFI_ENOENT : PFI_EPERM,
                           "cannot open token file %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) { /* as any file named that cannot be read */
        close(fd);
        return pfi_err_set(err, PFI_EIO, "cannot read token file %s: %s", path, strerror(EISDIR));
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return pfi_err_set(err, PFI_EINVAL, "token file %s is not a regular file", path);
    }
    if (st.st_mode & 077) {
        close(fd);
        return pfi_err_set(err, PFI_EPERM,
                           "token file %s is accessible by group or others (mode %03o); "
                           "run: chmod 600 %s",
                           path, (unsigned)(st.st_mode & 0777), path);
    }
    if (st.st_uid != 0 && st.st_uid != geteuid()) {
        close(fd);
        return pfi_err_set(err, PFI_EPERM, "token file %s must be owned by root or by uid %u",
                           path, (unsigned)geteuid());
    }
    char buf[PFI_TOKEN_MAX + 2];
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got < 0)
        return pfi_err_set(err, PFI_EIO, "reading token file %s: %s", path, strerror(errno));
    buf[got] = '\0';
    size_t len = strcspn(buf, "\r\n");
    while (len > 0 && isspace((unsigned char)buf[len - 1]))
        len--;
    size_t start = 0;
    while (start < len && isspace((unsigned char)buf[start]))
        start++;
    len -= start;
    if (len < 16)
        return pfi_err_set(err, PFI_EINVAL,
                           "token in %s is too short (%zu characters; use at least 16, e.g. "
                           "`head -c 32 /dev/urandom | base64`)",
                           path, len);
    if (len >= size || len > PFI_TOKEN_MAX)
        return pfi_err_set(err, PFI_EINVAL, "token in %s is longer than %d characters", path,
                           PFI_TOKEN_MAX);
    for (size_t i = 0; i < len; i++)
        if (!isgraph((unsigned char)buf[start + i]))
            return pfi_err_set(err, PFI_EINVAL, "token in %s contains a space or control byte",
                               path);
    memcpy(token, buf + start, len);
    token[len] = '\0';
    return PFI_OK;
}

int pfi_token_ok(const char *token, const char *authorization)
{
    if (!token || !token[0] || !authorization)
        return 0;
    /* The scheme is case-insensitive (RFC 9110 11.1); the token is not.  The scheme and the
     * token are parted by one or more spaces (11.4: 1*SP), and a field value's trailing
     * whitespace is not part of it (5.5): "Bearer  TOKEN" and "Bearer TOKEN " were 401. */
    if (strncasecmp(authorization, "Bearer ", 7) != 0)
        return 0;
    const char *given = authorization + 7;
    while (*given == ' ')
        given++;
    size_t lt = strlen(token), lg = strlen(given);
    while (lg > 0 && (given[lg - 1] == ' ' || given[lg - 1] == '\t'))
        lg--;
    /* Compare over the expected token's whole length whatever the input, so timing tells an
     * attacker nothing about how many leading bytes were right. */
    unsigned char diff = (unsigned char)(lt != lg);
    for (size_t i = 0; i < lt; i++) {
        unsigned char g = i < lg ? (unsigned char)given[i] : 0;
        diff |= (unsigned char)(g ^ (unsigned char)token[i]);
    }
    return diff == 0;
}
