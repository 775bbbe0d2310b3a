/* SPDX-License-Identifier: Apache-2.0 */
/* cmd.h: running a short command and reading what it prints, bounded in time and size, for a
 * daemon that must not wait on another program for long (e.g. asking Slurm a job's output
 * path).  No shell: argv[0] is looked up on PATH. */
#ifndef PFI_UTIL_CMD_H
#define PFI_UTIL_CMD_H

#include <stddef.h>

#include "core/err.h"

/* Runs argv (NULL-terminated) with stdin from /dev/null and stderr discarded; *out (malloc'd,
 * NUL-terminated, at most max bytes kept) gets its stdout.  A command still running after
 * timeout_s is killed: PFI_ETIMEOUT.  PFI_ECHILD when it cannot be started or exits non-zero
 * (*out is then NULL). */
int pfi_cmd_capture(char *const argv[], double timeout_s, size_t max, char **out, pfi_err *err);

#endif
