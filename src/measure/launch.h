/* SPDX-License-Identifier: Apache-2.0 */
/* launch.h: the job's output, from a command pfi launches or from a log file it follows.
 *
 * pfi_launch runs COMMAND in its own process group (so a signal reaches every process of the
 * job, and Ctrl-C at the terminal reaches only pfi, which then stops the job in order), passes
 * its stdout and stderr through unchanged, copies both to a log file, and hands every line to
 * a callback.  PYTHONUNBUFFERED=1 is set for the child: Python block-buffers a pipe, which
 * would deliver progress lines minutes late.
 *
 * pfi_follow reads a growing log file like `tail -F`: from its end, across truncation and
 * rotation (a new file at the same path), waiting while it does not exist. */
#ifndef PFI_MEASURE_LAUNCH_H
#define PFI_MEASURE_LAUNCH_H

#include <stdio.h>
#include <sys/types.h>

#include "core/err.h"
#include "measure/parse.h"

typedef void (*pfi_line_fn)(void *ctx, const char *line);

typedef struct pfi_launch {
    pid_t pid;           /* also the process group id; 0 when none */
    int out_fd, err_fd;  /* read ends; -1 once at end of file */
    int running;
    int status;          /* waitpid status once !running */
    int passthrough;     /* copy the output to out_to / our stderr (default 1) */
    int out_to;          /* where the job's stdout goes (default our stdout) */
    FILE *log;           /* copy of both streams (NULL: none) */
    pfi_linebuf out_lb, err_lb;
} pfi_launch;

/* argv[0] is looked up in PATH.  A command that cannot be executed is PFI_ENOENT (or
 * PFI_EPERM) here, not a mysterious exit status later. */
int pfi_launch_start(pfi_launch *l, char *const argv[], const char *log_path, pfi_err *err);
/* Waits up to timeout_s (real seconds) for output, delivers whole lines, reaps the child.
 * Returns PFI_OK; l->running drops to 0 once the child exited and its output was drained. */
int pfi_launch_poll(pfi_launch *l, double timeout_s, pfi_line_fn fn, void *ctx, pfi_err *err);
/* SIGTERM to the process group, SIGKILL after grace_s; reaps it. */
void pfi_launch_stop(pfi_launch *l, double grace_s);
/* Closes the pipes and the log (after stop or exit). */
void pfi_launch_close(pfi_launch *l);
/* "exited with status 3" / "killed by signal 9" */
void pfi_launch_describe(const pfi_launch *l, char *buf, size_t n);

typedef struct pfi_follow {
    char path[1024];
    int fd;
    dev_t dev;
    ino_t ino;
    off_t off;
    pfi_linebuf lb;
} pfi_follow;

/* from_end: start at the current end of the file (an already running job's history is not
 * this sweep's).  A missing file is not an error: it is waited for. */
int pfi_follow_open(pfi_follow *f, const char *path, int from_end, pfi_err *err);
/* Reads what was appended; handles truncation and rotation.  Never blocks. */
int pfi_follow_poll(pfi_follow *f, pfi_line_fn fn, void *ctx, pfi_err *err);
void pfi_follow_close(pfi_follow *f);

#endif
