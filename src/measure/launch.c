/* SPDX-License-Identifier: Apache-2.0 */
/* launch.c: process-group launcher with pass-through and log tee; tail -F follower. */
#include "measure/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/clock.h"

int pfi_launch_start(pfi_launch *l, char *const argv[], const char *log_path, pfi_err *err)
{
    memset(l, 0, sizeof *l);
    l->out_fd = l->err_fd = -1;
    l->passthrough = 1;
    l->out_to = STDOUT_FILENO;
    if (!argv || !argv[0])
        return pfi_err_set(err, PFI_EINVAL, "no command to run (put it after --)");
    if (log_path) {
        l->log = fopen(log_path, "a");
        if (!l->log)
            return pfi_err_set(err, PFI_EIO, "cannot open log file %s: %s", log_path,
                               strerror(errno));
    }
    int po[2], pe[2], ps[2];
    if (pipe2(po, O_CLOEXEC) != 0)
        goto pipe_fail;
    if (pipe2(pe, O_CLOEXEC) != 0) {
        close(po[0]);
        close(po[1]);
        goto pipe_fail;
    }
    /* The exec-status pipe: closed by a successful exec, carries errno otherwise. */
    if (pipe2(ps, O_CLOEXEC) != 0) {
        close(po[0]);
        close(po[1]);
        close(pe[0]);
        close(pe[1]);
        goto pipe_fail;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(po[0]); close(po[1]); close(pe[0]); close(pe[1]); close(ps[0]); close(ps[1]);
        if (l->log)
            fclose(l->log);
        l->log = NULL;
        return pfi_err_set(err, PFI_EIO, "cannot fork: %s", strerror(e));
    }
    if (pid == 0) {
        setpgid(0, 0);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        dup2(po[1], STDOUT_FILENO);
        dup2(pe[1], STDERR_FILENO);
        setenv("PYTHONUNBUFFERED", "1", 1);
        execvp(argv[0], argv);
        int e = errno;
        ssize_t w = write(ps[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    setpgid(pid, pid); /* both sides, so the group exists before either acts on it */
    close(po[1]);
    close(pe[1]);
    close(ps[1]);
    int child_errno = 0;
    ssize_t r;
    do {
        r = read(ps[0], &child_errno, sizeof child_errno);
    } while (r < 0 && errno == EINTR);
    close(ps[0]);
    l->pid = pid;
    l->out_fd = po[0];
    l->err_fd = pe[0];
    l->running = 1;
    if (r == (ssize_t)sizeof child_errno) {
        int st;
        waitpid(pid, &st, 0);
        l->running = 0;
        l->pid = 0;
        pfi_launch_close(l);
        return pfi_err_set(err, child_errno == ENOENT ? PFI_ENOENT : PFI_EPERM,
                           "cannot run '%s': %s", argv[0], strerror(child_errno));
    }
    fcntl(l->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(l->err_fd, F_SETFL, O_NONBLOCK);
    return PFI_OK;
pipe_fail:
    if (l->log)
        fclose(l->log);
    l->log = NULL;
    return pfi_err_set(err, PFI_EIO, "cannot create a pipe: %s", strerror(errno));
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return; /* our own stdout is gone: keep measuring regardless */
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Reads what is available on *fd; closes it at end of file. */
static void drain(pfi_launch *l, int *fd, int out_fd, pfi_linebuf *lb, pfi_line_fn fn, void *ctx)
{
    char buf[8192];
    for (;;) {
        ssize_t r = read(*fd, buf, sizeof buf);
        if (r > 0) {
            if (l->passthrough)
                write_all(out_fd, buf, (size_t)r);
            if (l->log)
                fwrite(buf, 1, (size_t)r, l->log);
            pfi_linebuf_push(lb, buf, (size_t)r, fn, ctx);
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0) {
            pfi_linebuf_flush(lb, fn, ctx);
            close(*fd);
            *fd = -1;
        }
        return;
    }
}

int pfi_launch_poll(pfi_launch *l, double timeout_s, pfi_line_fn fn, void *ctx, pfi_err *err)
{
    struct pollfd p[2];
    int n = 0;
    if (l->out_fd >= 0)
        p[n++] = (struct pollfd){.fd = l->out_fd, .events = POLLIN};
    if (l->err_fd >= 0)
        p[n++] = (struct pollfd){.fd = l->err_fd, .events = POLLIN};
    if (n > 0) {
        int ms = timeout_s <= 0 ? 0 : (int)(timeout_s * 1000 + 0.5);
        if (ms == 0 && timeout_s > 0)
            ms = 1;
        int rc = poll(p, (nfds_t)n, ms);
        if (rc < 0 && errno != EINTR)
            return pfi_err_set(err, PFI_EIO, "poll: %s", strerror(errno));
        if (rc > 0) {
            if (l->out_fd >= 0)
                drain(l, &l->out_fd, l->out_to, &l->out_lb, fn, ctx);
            if (l->err_fd >= 0)
                drain(l, &l->err_fd, STDERR_FILENO, &l->err_lb, fn, ctx);
            if (l->log)
                fflush(l->log);
        }
    } else if (timeout_s > 0) {
        pfi_clock_sleep(timeout_s < 0.05 ? timeout_s : 0.05);
    }
    if (l->running && l->pid > 0) {
        int st;
        if (waitpid(l->pid, &st, WNOHANG) == l->pid) {
            /* Its main process is gone: take what is left in the pipes (not waiting for a
             * stray grandchild that may hold them) and call the job ended. */
            l->status = st;
            if (l->out_fd >= 0)
                drain(l, &l->out_fd, l->out_to, &l->out_lb, fn, ctx);
            if (l->err_fd >= 0)
                drain(l, &l->err_fd, STDERR_FILENO, &l->err_lb, fn, ctx);
            pfi_linebuf_flush(&l->out_lb, fn, ctx);
            pfi_linebuf_flush(&l->err_lb, fn, ctx);
            if (l->log)
                fflush(l->log);
            l->running = 0;
        }
    }
    return PFI_OK;
}

void pfi_launch_stop(pfi_launch *l, double grace_s)
{
    if (l->pid <= 0)
        return;
    /* The group may outlive its leader (workers of a launcher): signal it either way. */
    kill(-l->pid, SIGTERM);
    int reaped = !l->running;
    for (double waited = 0; waited < grace_s; waited += 0.02) {
        int st;
        if (!reaped && waitpid(l->pid, &st, WNOHANG) == l->pid) {
            l->status = st;
            reaped = 1;
        }
        if (reaped && kill(-l->pid, 0) != 0)
            break;
        pfi_clock_sleep(0.02);
    }
    kill(-l->pid, SIGKILL);
    if (!reaped) {
        int st;
        if (waitpid(l->pid, &st, 0) == l->pid)
            l->status = st;
    }
    l->running = 0;
    l->pid = 0;
}

void pfi_launch_close(pfi_launch *l)
{
    if (l->out_fd >= 0)
        close(l->out_fd);
    if (l->err_fd >= 0)
        close(l->err_fd);
    l->out_fd = l->err_fd = -1;
    if (l->log)
        fclose(l->log);
    l->log = NULL;
}

void pfi_launch_describe(const pfi_launch *l, char *buf, size_t n)
{
    if (WIFEXITED(l->status))
        snprintf(buf, n, "exited with status %d", WEXITSTATUS(l->status));
    else if (WIFSIGNALED(l->status))
        snprintf(buf, n, "was killed by signal %d", WTERMSIG(l->status));
    else
        snprintf(buf, n, "stopped");
}

/* ---- follower ---- */

static void follow_reopen(pfi_follow *f, int from_end)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
    f->off = 0;
    pfi_linebuf_reset(&f->lb);
    if (f->fd < 0)
        return;
    struct stat st;
    if (fstat(f->fd, &st) == 0) {
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        if (from_end)
            f->off = lseek(f->fd, 0, SEEK_END);
    }
}

int pfi_follow_open(pfi_follow *f, const char *path, int from_end, pfi_err *err)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    if (!path || !*path)
        return pfi_err_set(err, PFI_EINVAL, "--attach needs --log FILE");
    snprintf(f->path, sizeof f->path, "%s", path);
    follow_reopen(f, from_end);
    return PFI_OK;
}

static void follow_read(pfi_follow *f, pfi_line_fn fn, void *ctx)
{
    char buf[8192];
    for (;;) {
        ssize_t r = pread(f->fd, buf, sizeof buf, f->off);
        if (r > 0) {
            f->off += r;
            pfi_linebuf_push(&f->lb, buf, (size_t)r, fn, ctx);
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        return;
    }
}

int pfi_follow_poll(pfi_follow *f, pfi_line_fn fn, void *ctx, pfi_err *err)
{
    if (f->fd < 0) {
        follow_reopen(f, 0); /* it appeared: a new file is read from its start */
        if (f->fd < 0)
            return PFI_OK;
    }
    struct stat st;
    if (fstat(f->fd, &st) == 0 && st.st_size < f->off) {
        f->off = 0; /* truncated in place (copytruncate) */
        pfi_linebuf_reset(&f->lb); /* a cut line of the old file is not the new one's first */
    }
    long long off0 = f->off;
    follow_read(f, fn, ctx);
    struct stat ps;
    /* Rotated by rename (the path names another file): the old one is read while it grows, and
     * left once a poll found nothing in it and the new one has lines, as tail -F and pfi serve
     * do.  A job that writes through the descriptor it opened once (python train.py > log)
     * goes on writing to the renamed file: the sweep switched at once, read an empty file and
     * failed the level with "is the job hung?".  A cut last line of the old file is dropped, not
     * read as whole (tps: 7,3 read as 7). */
    if (f->off == off0 && stat(f->path, &ps) == 0 && ps.st_size > 0 &&
        (ps.st_ino != f->ino || ps.st_dev != f->dev)) {
        follow_reopen(f, 0);
        if (f->fd >= 0)
            follow_read(f, fn, ctx);
    }
    return PFI_OK;
}

void pfi_follow_close(pfi_follow *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}
