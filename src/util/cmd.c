/* SPDX-License-Identifier: Apache-2.0 */
/* cmd.c: a bounded command run (cmd.h). */
#include "util/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/clock.h"

extern char **environ;

int pfi_cmd_capture(char *const argv[], double timeout_s, size_t max, char **out, pfi_err *err)
{
    *out = NULL;
    if (!argv || !argv[0] || max == 0)
        return pfi_err_set(err, PFI_EINVAL, "cmd: no command");
    /* Grown as the answer comes: max may be large (a site's squeue) and most answers are not. */
    size_t cap = max < 4096 ? max : 4096;
    char *buf = malloc(cap + 1);
    int fd[2];
    if (!buf)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    if (pipe2(fd, O_CLOEXEC) != 0) {
        free(buf);
        return pfi_err_set(err, PFI_ECHILD, "cannot run %s: %s", argv[0], strerror(errno));
    }
    /* posix_spawnp, not fork: the caller is a threaded daemon. */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int src = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (src != 0) {
        close(fd[0]);
        close(fd[1]);
        free(buf);
        return pfi_err_set(err, PFI_ECHILD, "%s could not be run: %s", argv[0], strerror(src));
    }
    close(fd[1]);
    size_t n = 0;
    int timed_out = 0;
    double end = pfi_clock_mono() + timeout_s;
    for (;;) {
        int left_ms = (int)((end - pfi_clock_mono()) * 1000);
        if (left_ms <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd p = {.fd = fd[0], .events = POLLIN};
        int r = poll(&p, 1, left_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            timed_out = r == 0;
            break;
        }
        char tmp[4096];
        ssize_t k = read(fd[0], tmp, sizeof tmp);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break; /* EOF: the command closed its stdout */
        size_t keep = (size_t)k < max - n ? (size_t)k : max - n;
        if (n + keep > cap) {
            size_t ncap = cap * 2 > max ? max : cap * 2;
            while (ncap < n + keep)
                ncap = ncap * 2 > max ? max : ncap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                kill(pid, SIGKILL);
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                    ;
                close(fd[0]);
                free(buf);
                return pfi_err_set(err, PFI_ENOMEM, "out of memory reading %s", argv[0]);
            }
            buf = nb;
            cap = ncap;
        }
        memcpy(buf + n, tmp, keep);
        n += keep;
    }
    close(fd[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    buf[n] = '\0';
    if (timed_out) {
        free(buf);
        return pfi_err_set(err, PFI_ETIMEOUT, "%s did not answer within %g s", argv[0],
                           timeout_s);
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        free(buf);
        return pfi_err_set(err, PFI_ECHILD, "%s %s (exit %d)", argv[0],
                           WIFEXITED(st) && WEXITSTATUS(st) == 127 ? "could not be run" : "failed",
                           WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    *out = buf;
    return PFI_OK;
}
