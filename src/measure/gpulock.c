/* SPDX-License-Identifier: Apache-2.0 */
/* gpulock.c: one flock per GPU (see gpulock.h). */
#include "measure/gpulock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int pfi_gpu_lock_dir(const char *sim_state, int simulated, char *buf, size_t n)
{
    const char *env = getenv("PFI_LOCK_DIR");
    struct stat st;
    if (env && *env)
        snprintf(buf, n, "%s", env);
    else if (sim_state && *sim_state)
        snprintf(buf, n, "%s.locks", sim_state);
    else if (simulated)
        return 0;
    else
        snprintf(buf, n, "%s", stat("/run/lock", &st) == 0 && S_ISDIR(st.st_mode) ? "/run/lock"
                                                                                  : "/tmp");
    return 1;
}

const char *pfi_lock_holder(long pid, char *buf, size_t n)
{
    int at = snprintf(buf, n, "pid %ld", pid);
    char path[64], cmd[256];
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    if (!f)
        return buf;
    size_t got = fread(cmd, 1, sizeof cmd - 1, f);
    fclose(f);
    while (got > 0 && cmd[got - 1] == '\0')
        got--;
    for (size_t i = 0; i < got; i++)
        if (cmd[i] == '\0' || cmd[i] == '\n')
            cmd[i] = ' ';
    cmd[got] = '\0';
    if (got > 0 && at > 0 && (size_t)at < n)
        snprintf(buf + at, n - (size_t)at, ": %s", cmd);
    return buf;
}

long pfi_lock_file_pid(int fd)
{
    char b[32];
    ssize_t got = pread(fd, b, sizeof b - 1, 0);
    if (got <= 0)
        return 0;
    b[got] = '\0';
    char *end;
    long pid = strtol(b, &end, 10);
    return end != b && pid > 0 ? pid : 0;
}

/* The lock file at path, opened (-1 with errno).  0644: another user's sweep opens it
 * read-only, which is all flock needs; the pid in it names the holder in a refusal.  As root, a
 * file another user owns is no lock: /run/lock is anyone's to write in, a user cannot change a
 * GPU's power limit, and one who planted and held the file of a GPU (its UUID is public) kept
 * root's pfi serve from starting, named by a pid of their choosing.  It is replaced (root owns
 * /run/lock, so it may remove the file under the sticky bit). */
static int open_lock(const char *path)
{
    for (int tries = 0; tries < 3; tries++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0 && (errno == EACCES || errno == EPERM))
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        if (fd < 0 || geteuid() != 0 || fstat(fd, &st) != 0 || st.st_uid == 0)
            return fd;
        close(fd);
        if (unlink(path) != 0 && errno != ENOENT)
            return -1;
    }
    errno = EAGAIN; /* replaced three times over: someone races to plant it */
    return -1;
}

int pfi_gpu_lock(pfi_gpu_locks *l, const char *dir, int gpu, const char *uuid, pfi_err *err)
{
    if (l->n >= PFI_MAX_GPUS)
        return pfi_err_set(err, PFI_ENOTSUP, "more than %d GPU locks", PFI_MAX_GPUS);
    char path[1200], name[128];
    if (uuid && *uuid && strcmp(uuid, "-") != 0 && !strchr(uuid, '/'))
        snprintf(name, sizeof name, "%s", uuid);
    else
        snprintf(name, sizeof name, "index-%d", gpu);
    /* A simulated node's own folder is made here; /run/lock and /tmp are there already. */
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return pfi_err_set(err, PFI_EIO, "cannot make the GPU lock folder %s: %s (set "
                           "PFI_LOCK_DIR to a folder every writer of the limits shares)",
                           dir, strerror(errno));
    snprintf(path, sizeof path, "%s/pfi-gpu-%s.lock", dir, name);
    int fd = open_lock(path);
    if (fd < 0)
        return pfi_err_set(err, PFI_EIO, "cannot open the lock of GPU %d, %s: %s (set "
                           "PFI_LOCK_DIR to a folder every writer of the limits shares)",
                           gpu, path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char who[320] = "another process";
        long pid = pfi_lock_file_pid(fd);
        if (pid > 0)
            pfi_lock_holder(pid, who, sizeof who);
        close(fd);
        if (e == EWOULDBLOCK)
            return pfi_err_set(err, PFI_EBUSY, "GPU %d's power limit is being changed by %s (a "
                               "sweep or pfi serve with another journal): wait for it to end",
                               gpu, who);
        return pfi_err_set(err, PFI_EIO, "cannot lock %s: %s", path, strerror(e));
    }
    char me[32];
    int len = snprintf(me, sizeof me, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) == 0 && pwrite(fd, me, (size_t)len, 0) != len) {
        /* best effort (a file of another user's, read-only here): the refusal names no pid */
    }
    l->fd[l->n++] = fd;
    return PFI_OK;
}

void pfi_gpu_locks_release(pfi_gpu_locks *l)
{
    for (int i = 0; i < l->n; i++)
        close(l->fd[i]);
    l->n = 0;
}
