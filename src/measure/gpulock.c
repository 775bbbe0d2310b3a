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
#include <sys/sysmacros.h>
#include <unistd.h>

/* 1 when st is a folder only root may change. */
static int root_only(const struct stat *st)
{
    return S_ISDIR(st->st_mode) && st->st_uid == 0 && !(st->st_mode & 022);
}

int pfi_gpu_lock_root_dir(const char *base, char *buf, size_t n)
{
    snprintf(buf, n, "%s/pfi", base);
    struct stat st;
    for (int tries = 0; tries < 3; tries++) {
        if (lstat(buf, &st) == 0) {
            if (root_only(&st))
                return 0;
            /* A user's, made first in the shared folder: moved aside (root may, under the
             * sticky bit), never used. */
            char aside[1100];
            snprintf(aside, sizeof aside, "%s.untrusted.%ld.%d", buf, (long)getpid(), tries);
            if (rename(buf, aside) != 0 && errno != ENOENT)
                return -1;
        } else if (errno != ENOENT) {
            return -1;
        }
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
    }
    errno = EAGAIN;
    return -1;
}

/* The shared folder locks go in by default: /run/lock, /tmp where there is none. */
static const char *shared_base(void)
{
    struct stat st;
    return stat("/run/lock", &st) == 0 && S_ISDIR(st.st_mode) ? "/run/lock" : "/tmp";
}

/* 1 when dir is root's default folder of locks (pfi_gpu_lock_dir as root). */
static int root_default(const char *dir)
{
    char want[64];
    snprintf(want, sizeof want, "%s/pfi", shared_base());
    return strcmp(dir, want) == 0;
}

int pfi_gpu_lock_dir(const char *sim_state, int simulated, char *buf, size_t n)
{
    const char *env = getenv("PFI_LOCK_DIR");
    if (env && *env)
        snprintf(buf, n, "%s", env);
    else if (sim_state && *sim_state)
        snprintf(buf, n, "%s.locks", sim_state);
    else if (simulated)
        return 0;
    else if (geteuid() == 0) {
        /* root's, where no user can open or plant a lock file; one it cannot make so is
         * refused when a lock is taken (pfi_gpu_lock), never traded for the shared folder,
         * where another root process would lock apart from this one */
        for (int tries = 0; tries < 8 && pfi_gpu_lock_root_dir(shared_base(), buf, n) != 0;
             tries++) {
        }
        snprintf(buf, n, "%s/pfi", shared_base());
    } else {
        snprintf(buf, n, "%s", shared_base());
    }
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

/* The FLOCK entries of /proc/locks on fd's file: whether there is one (-1 when /proc/locks
 * cannot be read), and in *pid the first that names a pid this namespace sees (0: none). */
static int scan_locks(int fd, long *pid)
{
    *pid = 0;
    struct stat st;
    FILE *f = fstat(fd, &st) == 0 ? fopen("/proc/locks", "r") : NULL;
    if (!f)
        return -1;
    /* "1: FLOCK  ADVISORY  WRITE 4242 fe:00:11166545 0 EOF": the device in hex */
    char want[64], line[256];
    snprintf(want, sizeof want, "%02x:%02x:%llu", major(st.st_dev), minor(st.st_dev),
             (unsigned long long)st.st_ino);
    int held = 0;
    while (!*pid && fgets(line, sizeof line, f)) {
        char kind[16], dev[64];
        long p;
        if (sscanf(line, "%*s %15s %*s %*s %ld %63s", kind, &p, dev) == 3 &&
            !strcmp(kind, "FLOCK") && !strcmp(dev, want)) {
            held = 1;
            *pid = p > 0 ? p : 0;
        }
    }
    fclose(f);
    return held;
}

long pfi_lock_holder_pid(int fd, long written)
{
    long pid;
    scan_locks(fd, &pid);
    return pid ? pid : written;
}

int pfi_lock_is_held(int fd)
{
    long pid;
    return scan_locks(fd, &pid);
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

/* The lock file at path, opened (-1 with errno).  0644 between users who are not root: another
 * user's sweep (of simulated GPUs) opens it read-only, which is all flock needs; the pid in it
 * names the holder in a refusal.  As root, a file another user owns is no lock: /run/lock is
 * anyone's to write in, a user cannot change a GPU's power limit, and one who planted and held
 * the file of a GPU (its UUID is public) kept root's pfi serve from starting, named by a pid of
 * their choosing.  It is replaced (root owns /run/lock, so it may remove the file under the
 * sticky bit).  Root's own is 0600, in a folder of root's (pfi_gpu_lock_root_dir): a user who
 * opened root's 0644 file in /run/lock read-only and held its flock kept root's pfi serve from
 * starting at every restart. */
static int open_lock(const char *path)
{
    int root = geteuid() == 0;
    for (int tries = 0; tries < 3; tries++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, root ? 0600 : 0644);
        if (fd < 0 && (errno == EACCES || errno == EPERM))
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 && root && (errno == ELOOP || errno == EISDIR || errno == ENXIO)) {
            /* A link, a folder or a socket of that name: a user's, left in a folder that
             * became root's (systemd-tmpfiles run after a user made it takes it over, its
             * entries kept), and every root start failed on it until a reboot.  Moved aside
             * (rename(2): a link planted at the new name is replaced, never followed). */
            char aside[1100];
            snprintf(aside, sizeof aside, "%s.untrusted.%ld.%d", path, (long)getpid(), tries);
            if (rename(path, aside) != 0 && errno != ENOENT)
                return -1;
            continue;
        }
        struct stat st;
        if (fd < 0 || !root || fstat(fd, &st) != 0)
            return fd;
        if (st.st_uid == 0 && S_ISREG(st.st_mode)) {
            if ((st.st_mode & 077) && fchmod(fd, 0600) != 0) {
                close(fd); /* left readable, anyone could hold it */
                return -1;
            }
            return fd;
        }
        close(fd);
        if (unlink(path) != 0 && errno != ENOENT)
            return -1;
    }
    errno = EAGAIN; /* replaced three times over: someone races to plant it */
    return -1;
}

/* path made absolute against the working folder (the lock file outlives the process, and
 * another process compares it with its own journal's path). */
static void abs_path(const char *path, char *out, size_t n)
{
    char cwd[1024];
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd))
        snprintf(out, n, "%s", path);
    else
        snprintf(out, n, "%s/%s", cwd, path);
}

/* The journal the lock file's last holder named (its second line), "" when none. */
static void lock_file_journal(int fd, char *out, size_t n)
{
    char b[PFI_GPU_LOCK_JOURNAL_MAX + 40];
    ssize_t got = pread(fd, b, sizeof b - 1, 0);
    out[0] = '\0';
    if (got <= 0)
        return;
    b[got] = '\0';
    char *nl = strchr(b, '\n');
    if (!nl)
        return;
    size_t len = strcspn(nl + 1, "\n");
    if (len > 0 && len < n && nl[1] == '/')
        snprintf(out, n, "%.*s", (int)len, nl + 1);
}

/* A journal the last holder of a GPU left behind (killed, or a pfi serve that held its caps at
 * stop): the GPU's limits are not its originals, and a journal of our own would take the caps
 * for them and "restore" them at the end.  0 when there is none but ours. */
static int left_journal(int fd, const char *ours, char *left, size_t n)
{
    lock_file_journal(fd, left, n);
    if (!left[0] || (ours && !strcmp(left, ours)))
        return 0;
    struct stat a, b;
    if (stat(left, &a) != 0)
        return 0; /* restored: a restore removes its journal */
    return !(ours && stat(ours, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}

/* 1 when path names the file fd is open on. */
static int names_fd(const char *path, int fd)
{
    struct stat a, b;
    return stat(path, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

int pfi_gpu_lock(pfi_gpu_locks *l, const char *dir, int gpu, const char *uuid,
                 const char *journal, pfi_gpu_left *left_out, pfi_err *err)
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
    struct stat ds;
    if (geteuid() == 0 && root_default(dir) && (lstat(dir, &ds) != 0 || !root_only(&ds)))
        return pfi_err_set(err, PFI_EPERM, "the GPU lock folder %s is not root's alone (made "
                           "by another user, and it could not be replaced): remove it and run "
                           "again", dir);
    snprintf(path, sizeof path, "%s/pfi-gpu-%s.lock", dir, name);
    int fd = -1, locked = 0, fe = 0;
    for (int tries = 0; tries < 4 && !locked; tries++) {
        if ((fd = open_lock(path)) < 0)
            return pfi_err_set(err, PFI_EIO, "cannot open the lock of GPU %d, %s: %s (set "
                               "PFI_LOCK_DIR to a folder every writer of the limits shares)",
                               gpu, path, strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            /* Still the file the path names: a file open_lock replaced while this one was
             * opened is no lock (two processes each held their own file of one name). */
            if (!(locked = names_fd(path, fd))) {
                close(fd);
                fd = -1;
            }
            continue;
        }
        fe = errno;
        break;
    }
    if (fd < 0)
        return pfi_err_set(err, PFI_EBUSY, "the lock of GPU %d, %s, was replaced four times "
                           "over while it was taken: something else replaces it", gpu, path);
    if (!locked) {
        int e = fe;
        char who[320] = "another process";
        long pid = pfi_lock_holder_pid(fd, pfi_lock_file_pid(fd));
        if (pid > 0)
            pfi_lock_holder(pid, who, sizeof who);
        close(fd);
        if (e == EWOULDBLOCK)
            return pfi_err_set(err, PFI_EBUSY, "GPU %d's power limit is being changed by %s (a "
                               "sweep or pfi serve with another journal): wait for it to end",
                               gpu, who);
        return pfi_err_set(err, PFI_EIO, "cannot lock %s: %s", path, strerror(e));
    }
    char ours[PFI_GPU_LOCK_JOURNAL_MAX], left[PFI_GPU_LOCK_JOURNAL_MAX];
    ours[0] = '\0';
    if (journal && *journal)
        abs_path(journal, ours, sizeof ours);
    if (!left_journal(fd, ours[0] ? ours : NULL, left, sizeof left))
        left[0] = '\0';
    if (left_out) {
        left_out->pid = pfi_lock_file_pid(fd);
        snprintf(left_out->journal, sizeof left_out->journal, "%s", left);
    }
    l->fd[l->n++] = fd;
    return PFI_OK;
}

void pfi_gpu_lock_claim(const pfi_gpu_locks *l, const char *journal)
{
    if (l->n < 1)
        return;
    char ours[PFI_GPU_LOCK_JOURNAL_MAX], me[PFI_GPU_LOCK_JOURNAL_MAX + 40];
    abs_path(journal, ours, sizeof ours);
    int fd = l->fd[l->n - 1];
    int len = snprintf(me, sizeof me, "%ld\n%s\n", (long)getpid(), ours);
    if (ftruncate(fd, 0) == 0 && pwrite(fd, me, (size_t)len, 0) != len) {
        /* best effort (a file of another user's, read-only here): the refusal names no pid */
    }
}

void pfi_gpu_locks_release(pfi_gpu_locks *l)
{
    for (int i = 0; i < l->n; i++)
        close(l->fd[i]);
    l->n = 0;
}
